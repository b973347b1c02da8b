#!/usr/bin/env bash
# `ferry trend` as a command: results files given in any order are ordered by start time; a
# 30% slowdown from the 7th run on is one change of level at run 7 in each cell's table and on
# its Mermaid chart; a flat history has none; bad input exits 2; -o replaces the file
# atomically; under GitHub Actions the report is appended to the step summary.
set -euo pipefail

build="${FERRY_BUILD_DIR:?}"
ferry="${FERRY:?}"
py=/usr/bin/python3
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
unset GITHUB_STEP_SUMMARY GITHUB_ACTIONS

fail() { echo "FAIL: $*" >&2; exit 1; }

"$build/tests/test-results-model" --write-sample "$tmp/base.json" >/dev/null
"$py" - "$tmp" <<'PY'
import copy, json, random, sys
d = sys.argv[1]
base = json.load(open(d + "/base.json"))
random.seed(3)
for kind, step in (("slow", 1.3), ("flat", 1.0)):
    for i in range(10):
        r = copy.deepcopy(base)
        r["provenance"]["started"] = "2026-11-%02dT10:00:00.000Z" % (i + 1)
        for c in r["cells"]:
            if c["stats"]:
                f = (step if i >= 6 else 1.0) * random.gauss(1, 0.01)
                for k in ("median", "mean", "ci95_low", "ci95_high"):
                    if c["stats"]["total"][k] is not None:
                        c["stats"]["total"][k] *= f
        # file names do not sort in time order: the start time orders them
        json.dump(r, open("%s/%s-%d.json" % (d, kind, (i * 7) % 10), "w"))
PY

"$ferry" trend "$tmp"/slow-*.json >"$tmp/slow.md"
"$py" - "$tmp/slow.md" <<'PY'
import re, sys
md = open(sys.argv[1]).read()
cells = md.split("\n### ")[1:]
assert len(cells) == 5, len(cells)
measured = [c for c in cells if "| 1 |" in c]
assert len(measured) == 2, "two cells have measured runs"
for c in measured:
    rows = [l for l in c.splitlines() if re.match(r"\| \d+ \|", l)]
    assert len(rows) == 10, rows
    marked = [l.split("|")[1].strip() for l in rows if "slower" in l]
    assert marked == ["7"], (c.splitlines()[0], marked)
    assert "1 change of level, 0 pending" in c
    assert '"7*"' in c and "xychart-beta" in c and '```mermaid' in c
# runs listed by start time, not by name: run 1 started 2026-11-01
first = [l for l in md.splitlines() if l.startswith("| 1 |")][0]
assert "2026-11-01" in first, first
print("ok: the slowdown is one change at run 7 in both measured cells, charted")
PY

"$ferry" trend -o "$tmp/flat.md" "$tmp"/flat-*.json
grep -q "Stable over 10 runs: no change of level" "$tmp/flat.md" || fail "flat history shows a change"
! grep -q "slower\|faster" "$tmp/flat.md" || fail "flat history marks a change"
echo "ok: a flat history has no change"

# under GitHub Actions the report also goes to the step summary
: >"$tmp/summary.md"
GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY="$tmp/summary.md" "$ferry" trend "$tmp"/slow-*.json >/dev/null
cmp "$tmp/summary.md" "$tmp/slow.md" || fail "the step summary is not the report"
echo "ok: step summary"

rc=0; "$ferry" trend "$tmp/nope.json" 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] && grep -q "nope.json" "$tmp/err" || fail "a missing file: exit $rc"
rc=0; "$ferry" trend 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] || fail "no file: exit $rc"
echo keep >"$tmp/target"; ln -s "$tmp/target" "$tmp/link.md"
rc=0; "$ferry" trend -o "$tmp/link.md" "$tmp"/flat-*.json 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] && [ "$(cat "$tmp/target")" = keep ] || fail "trend wrote through a symbolic link"
echo "ok: bad input exits 2"
