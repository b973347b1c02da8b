#!/usr/bin/env bash
# `ferry compare` from the command line on synthetic results (tests/unit/test-compare.c
# --write-files): exit status 0 / 1 / 2, the Markdown table as a reader parses it, JUnit valid
# against both schemas (xmllint) with a <failure type="regression"> per regressed metric, the
# JSON, a refused comparison that names the difference, --allow-different, too few runs, an older
# results file, a baseline directory, and the GitHub annotations and step summary (a regular
# file only, never through a symbolic link).
set -euo pipefail

src="${FERRY_SOURCE_DIR:?}"
build="${FERRY_BUILD_DIR:?}"
ferry="${FERRY:?}"
py=/usr/bin/python3
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

if ! command -v xmllint >/dev/null; then
	echo "SKIP: xmllint is not installed (apt-get install libxml2-utils)"
	exit 77
fi

"$build/tests/test-compare" --write-files "$tmp"

# expect STATUS ARGS...: ferry compare ARGS exits with STATUS; stdout in out, stderr in err
expect() {
	local want="$1" st=0
	shift
	env -u GITHUB_ACTIONS -u GITHUB_STEP_SUMMARY "$ferry" compare "$@" >out 2>err || st=$?
	[ "$st" = "$want" ] || { cat out err >&2; fail "ferry compare $* exited $st, expected $want"; }
	echo "ok: ferry compare $* -> $st"
}

expect 0 base.json same.json
grep -q '| dataset=d0,method=m | total | ' out || fail "no total row for d0"
expect 1 base.json slow.json --junit slow.xml --json slow-cmp.json --markdown slow.md
[ ! -s out ] || fail "stdout used although every report has a file"

# the Markdown table as a reader sees it: header, alignment, one row per cell total
"$py" - slow.md <<'PY'
import sys
lines = open(sys.argv[1]).read().split("\n")
i = lines.index("### Cells") + 2
head = [c.strip() for c in lines[i].strip("|").split("|")]
assert head == ["cell", "metric", "baseline median", "new median", "change [90% CI]", "boots", "verdict"], head
rows = []
for l in lines[i + 2:]:
    if not l.startswith("|"):
        break
    cells = [c.strip() for c in l.strip("|").split("|")]
    assert len(cells) == len(head), l
    rows.append(dict(zip(head, cells)))
v = {(r["cell"], r["metric"]): r["verdict"] for r in rows}
assert v[("dataset=d0,method=m", "total")].endswith("regressed"), v
assert v[("dataset=d0,method=m", "throughput")].endswith("regressed"), v
assert not v[("dataset=d1,method=m", "total")].endswith("regressed"), v
assert not v[("dataset=d2,method=m", "total")].endswith("regressed"), v
assert rows[0]["change [90% CI]"].startswith("+3"), rows[0]
print("ok: Markdown table parses, d0 regressed, d1 and d2 not")
PY

# the terminal's summary (standard error) says what the Markdown says, in its words: the
# counts, then per row of the Cells table its cell, metric, change with its interval and verdict
"$py" - slow.md err <<'PY'
import re, sys
md = open(sys.argv[1]).read()
err = [l[len("ferry: "):] for l in open(sys.argv[2]).read().splitlines() if l.startswith("ferry: ")]
unmd = lambda t: re.sub(r"\\(.)", r"\1", t)
counts = re.search(r"\*\*(\d+ regressed)\*\*(, [^.]*\))\.", md)
assert counts and err[0] == counts.group(1) + counts.group(2), (err[:1], counts)
lines = md.split("\n")
i = lines.index("### Cells") + 4
want = []
for l in lines[i:]:
    if not l.startswith("|"):
        break
    c = [unmd(x.strip()) for x in l.strip("|").split("|")]
    want.append(f"{c[0]} {c[1]}: {c[4]} (90% CI): {c[6].split(' ', 1)[1]}")
got = [re.sub(r": the interval .*", "", l) for l in err[1:1 + len(want)]]
assert len(want) == 6 and got == want, (got, want)
note = [l for l in lines if l.startswith("- dataset=d1")][0]
assert err[5].endswith(note.split(": ", 1)[1]), (err[5], note)
print(f"ok: the terminal summary's {len(want)} rows and counts are the Markdown's")
PY

for xsd in junit-10.xsd ant-junit.xsd; do
	xmllint --noout --schema "$src/fixtures/xsd/$xsd" slow.xml
done
# only the gate's metrics (total by default) are failures; the other regressions are reported
[ "$(grep -c '<failure type="regression"' slow.xml)" = 1 ] || fail "expected 1 regression failure"
grep -q 'failures="1" errors="0"' slow.xml || fail "testsuite counts"
# the interval in a message is labelled with its level, as the Markdown header is (one-sided
# 95% bounds: a 90% interval)
grep -q '<failure type="regression" message="[^"]* regressed +[0-9.]*% \[90% CI +' slow.xml ||
	fail "JUnit regression message without its labelled 90% CI: $(grep -m1 '<failure' slow.xml)"
echo "ok: JUnit valid against both schemas, 1 failure (the gated total) of 4 regressions"

"$py" - slow-cmp.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ferry_compare"] == 1 and d["refused"] is False
assert d["counts"]["regressed"] == 4 and d["regressed_cells"] == 1, d["counts"]
assert d["failed_cells"] == 1, d["failed_cells"]
gated = {x["metric"] for x in d["rows"] if x["gated"]}
assert gated == {"total"}, gated
r = [x for x in d["rows"] if x["cell"] == "dataset=d0,method=m" and x["metric"] == "total"][0]
assert r["verdict"] == "regressed" and r["bound_low"] > 0.05 and r["boots_baseline"] == 5
assert r["between_boot_known"] is True
print("ok: JSON comparison")
PY

# the gate: regressions of metrics it does not name are reported, never fatal
expect 0 base.json slow.json --gate phase.prepare --junit gate.xml --markdown -
grep -q '| dataset=d0,method=m | total | .* regressed |' out || fail "the total's regression not reported"
grep -q '\*\*Gate: passed\*\*' out || fail "gate summary: $(grep Gate out)"
grep -q 'failures="0"' gate.xml || fail "a metric outside the gate failed the JUnit report"
expect 1 base.json slow.json --gate total,phase.transfer --junit gate.xml
grep -q 'failures="2"' gate.xml || fail "two gated metrics: $(grep -m1 testsuite gate.xml)"
expect 2 base.json slow.json --gate bogus
grep -q "invalid --gate metric 'bogus'" err || fail "unknown gate metric accepted"
# the drift canary: a host 10% slower does not explain a regression of 30% (it stands, with a
# note), a host twice as slow does (withheld)
"$py" - base.json slow.json <<'PY'
import json, sys
def canary(src, dst, level):
    r = json.load(open(src))
    for c in r["cells"]:
        for x in c["runs"]:
            x["metrics"] = dict(x.get("metrics") or {}, canary_host=level * (1 + 0.01 * (x["boot"] % 3)))
    json.dump(r, open(dst, "w"))
canary(sys.argv[1], "base-canary.json", 0.020)
canary(sys.argv[2], "slow-canary10.json", 0.022)
canary(sys.argv[2], "slow-canary100.json", 0.040)
PY
expect 1 base-canary.json slow-canary10.json --markdown -
grep -q 'less than this change: not withheld' out || fail "a regression beyond the host's drift was not kept with its note"
expect 0 base-canary.json slow-canary100.json --markdown -
grep -q 'verdict withheld' out || fail "a regression the host's drift explains was not withheld"
# a rerun that does not confirm the regression: no failure; one that does: the failure stands
expect 0 base.json slow.json --confirm-with same.json --markdown -
grep -q 'the rerun did not confirm it' out || fail "unconfirmed regression not explained"
expect 1 base.json slow.json --confirm-with slow.json --markdown -
grep -q 'confirmed by the rerun' out || fail "confirmed regression not explained"
grep -q "suspected at the screen's 80% (a rerun decides)" out || fail "the screen is not named"
expect 1 base.json slow.json --confirm-with slow.json --screen 90% --markdown -
grep -q "suspected at the screen's 90%" out || fail "--screen 90% not applied"
# without a rerun there is no screen: every row at the confidence
expect 1 base.json slow.json --screen 60 --markdown -
! grep -q 'suspected at the screen' out || fail "a screen applied without a rerun"
expect 2 base.json slow.json --screen 40%
grep -q "invalid --screen '40%': expected a percentage above 50% and below 100%" err ||
	fail "a bad --screen: $(cat err)"
# a rerun whose 3 boots alone cannot be told from the baseline (one is 30% faster, one 50%
# slower) but whose change is a slowdown past the threshold, with the new file's boots still
# regressed together with it: confirmed (tested alone, as the gate once did, it never was)
"$py" - base.json slow.json noisy-rerun.json <<'PY'
import json, sys
base, slow = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
f = {1: 1.08 * 0.7, 2: 1.08, 3: 1.08 * 1.5}
for cb, cs in zip(base["cells"], slow["cells"]):
    if cb["id"] == "dataset=d0,method=m":
        runs = [dict(x) for x in cb["runs"] if x["boot"] in f]
        for x in runs:
            x["total"] *= f[x["boot"]]
            x["phases"] = dict(x["phases"], transfer=x["total"])
        cs["runs"] = runs
json.dump(slow, open(sys.argv[3], "w"))
PY
expect 1 base.json slow.json --confirm-with noisy-rerun.json --markdown -
grep -q 'confirmed by the rerun: +[0-9.]*% .\[-[0-9.]*%, +[0-9.]*%.\] (3 boots); with the rerun' out ||
	fail "a noisy rerun past the threshold did not confirm: $(grep -m1 'rerun' out)"
# the gate's rows are their own false-discovery family: a 6% slower total (p about 0.006) is
# regressed beside 40 reported metrics that did not move (one family of 120 rows would need
# p < 0.0025)
"$py" - base.json bh-base.json bh-cand.json <<'PY'
import json, sys
def extra(r):
    for c in r["cells"]:
        for x in c["runs"]:
            x["metrics"] = {f"m{k}": 1.0 + 0.01 * ((x["boot"] * 7 + k) % 5) for k in range(40)}
    return r
base = extra(json.load(open(sys.argv[1])))
json.dump(base, open(sys.argv[2], "w"))
for c in base["cells"]:
    if c["id"] == "dataset=d0,method=m":
        for x in c["runs"]:
            x["total"] *= 1.06
            x["phases"] = dict(x["phases"], transfer=x["total"])
json.dump(base, open(sys.argv[3], "w"))
PY
expect 1 bh-base.json bh-cand.json --json bh.json
"$py" - bh.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["rows"]) > 120, len(d["rows"])
r = [x for x in d["rows"] if x["cell"] == "dataset=d0,method=m" and x["metric"] == "total"][0]
assert r["verdict"] == "regressed", r
print("ok: the gated total is its own family")
PY
# a control cell: the host's moment moves every cell of a run (here all 40% slower, one run of
# identical code): without a control the gate fails, judged by the ratio to the control cell in
# the same blocks it does not; and a cell 20% slower in a run made when the host was 25% faster
# (every cell faster, so its own time fell) fails only with the control
"$py" - base.json moment.json masked.json <<'PY'
import json, sys
def scaled(f, cell_factor):
    r = json.load(open(sys.argv[1]))
    for c in r["cells"]:
        k = cell_factor(c["id"])
        for x in c["runs"]:
            x["block"] = x["boot"]
            x["total"] *= k
            x["phases"] = dict(x["phases"], transfer=x["total"])
    json.dump(r, open(f, "w"))
    return r
b = json.load(open(sys.argv[1]))
for c in b["cells"]:
    for x in c["runs"]:
        x["block"] = x["boot"]
json.dump(b, open("base-blocks.json", "w"))
scaled(sys.argv[2], lambda cid: 1.4)
scaled(sys.argv[3], lambda cid: 0.75 * (1.2 if cid == "dataset=d1,method=m" else 1))
PY
expect 1 base-blocks.json moment.json
expect 0 base-blocks.json moment.json --control dataset=d2 --markdown -
grep -q 'relative to the control cell dataset=d2,method=m in the same blocks (5 and 5 blocks)' out ||
	fail "the control's note is missing: $(grep -m1 control out)"
expect 0 base-blocks.json masked.json
expect 1 base-blocks.json masked.json --control dataset=d2 --json masked-cmp.json
"$py" - masked-cmp.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
bad = {(x["cell"], x["metric"]) for x in d["rows"] if x["verdict"] == "regressed" and x["gated"]}
assert bad == {("dataset=d1,method=m", "total")}, bad
print("ok: the control finds a slowdown the host's moment hid")
PY
expect 2 base-blocks.json moment.json --control dataset=none
grep -q "the control 'dataset=none' matches 0 cells present in both files; it must name exactly one" err ||
	fail "an unmatched control: $(cat err)"
expect 2 base-blocks.json moment.json --control method=m
grep -q "matches 3 cells" err || fail "an ambiguous control: $(cat err)"
expect 2 base-blocks.json moment.json --control bogus
grep -q "invalid control 'bogus'" err || fail "a malformed control: $(cat err)"
# the new file's plan names the control (plan.control, from regression.control): compare uses it
# without --control, as ferry run --baseline does; --control none compares without one; a control
# in the file that is not AXIS=VALUE is refused as the file's defect
"$py" - moment.json moment-ctl.json moment-ctl-none.json moment-ctl-bad.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for f, ctl in zip(sys.argv[2:], ("dataset=d2", "dataset=none", "bogus\u001b")):
    r["plan"]["control"] = ctl
    json.dump(r, open(f, "w"))
PY
expect 0 base-blocks.json moment-ctl.json --markdown -
grep -q 'relative to the control cell dataset=d2,method=m in the same blocks' out ||
	fail "the plan's control was not used: $(grep -m1 control out)"
expect 1 base-blocks.json moment-ctl.json --control none
expect 0 base-blocks.json moment.json --control dataset=d2
expect 2 base-blocks.json moment-ctl-none.json
grep -q "matches 0 cells.*the new file's plan's regression.control; --control none compares without one" err ||
	fail "a plan's control that names no cell: $(cat err)"
expect 1 base-blocks.json moment-ctl-none.json --control none
expect 2 base-blocks.json moment-ctl-bad.json
grep -q "'control' must be AXIS=VALUE" err || fail "a malformed plan.control: $(cat err)"
# a rerun of 2 boots cannot be tested: the regression is not confirmed, and the report says why
"$py" - slow.json slow2.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for c in r["cells"]:
    boots = sorted({x["boot"] for x in c["runs"]})[:2]
    c["runs"] = [x for x in c["runs"] if x["boot"] in boots]
json.dump(r, open(sys.argv[2], "w"))
PY
expect 0 base.json slow.json --confirm-with slow2.json --markdown -
grep -q 'not confirmed: the rerun has 2 boots of this cell and the baseline 5; a test needs 3' out ||
	fail "a 2-boot rerun's verdict not explained: $(grep -m1 confirm out)"

# a refused comparison names the difference, in every output, and exits 2
expect 2 base.json qemu.json --junit refused.xml --markdown -
grep -q "refused to compare: qemu_version differs ('7.2.0' in the baseline, '8.2.0' now)" err ||
	fail "the refusal does not name qemu_version: $(cat err)"
grep -q 'qemu\\_version | 7.2.0 | 8.2.0 | \*\*refused\*\*' out || fail "Markdown refusal: $(cat out)"
for xsd in junit-10.xsd ant-junit.xsd; do
	xmllint --noout --schema "$src/fixtures/xsd/$xsd" refused.xml
done
grep -q '<error type="refused"' refused.xml || fail "JUnit refusal"
expect 0 base.json qemu.json --allow-different qemu_version
grep -q '| qemu\\_version | 7.2.0 | 8.2.0 | allowed |' out || fail "allowed difference not shown"
expect 2 base.json qemu.json --allow-different qemu
grep -q "invalid --allow-different 'qemu'" err || fail "unknown key accepted"

# a different ferry version is shown, never refused
expect 0 same.json base.json
grep -q '| ferry\\_version | 0.2.0 | 0.1.0 | shown |' out || fail "ferry version not shown"

# too few runs: inconclusive, never a verdict, exit 0
expect 0 base.json few.json
grep -q 'fewer than 3 measured runs on a side (baseline 10, new 2): no verdict' out ||
	fail "too few runs not explained"
! grep -q 'regressed |$' out || fail "a verdict with 2 runs"

# an older results file (format version 1, no boot ids) still compares: each file is one boot,
# so one file per side is capped at inconclusive; against 5 boots the variance is borrowed
cp same.json v1same.json
for f in v1.json v1same.json; do
	"$py" - "$f" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["ferry_results"] = 1
del d["metrics"]
for c in d["cells"]:
    for r in c["runs"]:
        del r["boot"], r["metrics"]
json.dump(d, open(sys.argv[1], "w"))
PY
done
expect 0 v1.json v1same.json
grep -q 'between-boot variance is unknown' out || fail "one boot per side not capped"
! grep -Eq '(unchanged|regressed|improved) \|$' out || fail "a verdict with one boot per side"
expect 0 v1.json same.json
grep -q '| 1/5 |' out || fail "a version 1 file is not one boot"
expect 0 "$src/tests/golden/results-v1.json" "$src/tests/golden/results-v1.json"

# a directory of baselines with a window: the newest comparable ones are pooled
mkdir hist
cp base.json same.json qemu.json hist/
expect 1 --baseline-window 2 hist slow.json --json win.json
"$py" -c 'import json,sys; d=json.load(open("win.json")); assert len(d["baselines"]) == 2 and "hist/qemu.json" not in d["baselines"], d["baselines"]'

# options
expect 2 base.json
expect 2 --threshold x base.json same.json
expect 2 --rule t base.json same.json
expect 2 --confidence 40% base.json same.json
# a threshold for one cell's total: 30% is within 50% there; its other metrics still regress,
# reported but not fatal: the gate is the total
expect 0 --threshold 'dataset=d0:total=50%' --rule lkp --confidence 99% base.json slow.json
grep -q '^| dataset=d0,method=m | total | .* unchanged |$' out || fail "per-cell threshold"
grep -q '^| dataset=d0,method=m | throughput | .* regressed |$' out || fail "lkp throughput"
expect 2 base.json missing.json
grep -q 'missing.json' err || fail "missing file not named"

# GitHub Actions: annotations on stdout, the Markdown appended to the step summary
: >summary.md
st=0
GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY="$tmp/summary.md" "$ferry" compare base.json slow.json \
	--json gh.json >gh.out 2>gh.err || st=$?
[ "$st" = 1 ] || fail "exit $st under GitHub Actions"
grep -q '^::error title=ferry compare%3A dataset=d0%2Cmethod=m total regressed::dataset=d0,method=m total: regressed +' gh.out ||
	fail "no ::error annotation: $(cat gh.out)"
grep -q '| dataset=d0,method=m | total |' summary.md || fail "step summary not appended"
echo "ok: ::error annotation and step summary"
GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY="$tmp/summary.md" "$ferry" compare base.json qemu.json \
	--json gh.json >gh.out 2>gh.err || true
grep -q '^::error title=ferry compare%3A qemu_version differs::' gh.out || fail "refusal annotation"
# a symbolic link as step summary: not followed
echo keep >target.md
ln -s target.md link.md
GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY="$tmp/link.md" "$ferry" compare base.json same.json \
	--json gh.json >gh.out 2>gh.err || fail "exit status with a symlinked summary"
[ "$(cat target.md)" = keep ] || fail "the step summary was written through a symbolic link"
grep -q 'symbolic link' gh.err || fail "no warning about the symbolic link: $(cat gh.err)"
echo "ok: a symbolic link as step summary is refused with a warning"
