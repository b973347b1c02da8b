#!/usr/bin/env bash
# The HTML reports of a run (the golden results, hostile names included), a compare and a trend,
# checked as a reader gets them: each file parses as HTML5 with no error (html5lib, strict) and
# refers to nothing outside itself; Debian's chromium, headless, with no network (its own
# network namespace), loads each file, and the DOM it built (--dump-dom) has the charts' marks
# carrying the cells' numbers (tests/html-check.py); hostile strings stay text; a screenshot of
# each is kept in the build directory (meson-logs/html/) as a test artifact.
set -euo pipefail

src="${FERRY_SOURCE_DIR:?}"
build="${FERRY_BUILD_DIR:?}"
ferry="${FERRY:?}"
py=/usr/bin/python3
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
unset GITHUB_STEP_SUMMARY GITHUB_ACTIONS
check() { "$py" "$src/tests/html-check.py" "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

if ! "$py" -c 'import html5lib' 2>/dev/null; then
	echo "SKIP: html5lib is missing (Debian package python3-html5lib)"
	exit 77
fi
if ! command -v chromium >/dev/null; then
	echo "SKIP: chromium is missing (Debian package chromium)"
	exit 77
fi
artifacts="$build/meson-logs/html"
mkdir -p "$artifacts"

# browse NAME FILE: the DOM chromium builds from FILE into $tmp/NAME.dom, a screenshot into the
# artifacts. unshare -n: a network namespace of its own with nothing but a down loopback.
browse() {
	local name="$1" file="$2" profile
	profile="$(mktemp -d "$tmp/profile.XXXXXX")"
	local flags=(--headless --no-sandbox --disable-gpu --disable-background-networking
		--disable-component-update --disable-sync --no-first-run "--user-data-dir=$profile")
	unshare -n chromium "${flags[@]}" --dump-dom "file://$file" >"$tmp/$name.dom" 2>"$tmp/$name.log" ||
		{ cat "$tmp/$name.log" >&2; fail "chromium could not load $file"; }
	[ -s "$tmp/$name.dom" ] || fail "chromium dumped no DOM for $file"
	rm -f "$artifacts/$name.png"
	unshare -n chromium "${flags[@]}" --window-size=1200,1600 "--screenshot=$artifacts/$name.png" \
		"file://$file" >/dev/null 2>&1 || fail "chromium could not take a screenshot of $file"
	"$py" - "$artifacts/$name.png" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", b[16:24])
assert (w, h) == (1200, 1600), (w, h)
PY
	echo "ok: chromium loaded $name offline; screenshot $artifacts/$name.png"
}

# the run: the golden results (every status, hostile names)
"$ferry" report "$src/tests/golden/report.json" --html "$tmp/run.html"
check valid "$tmp/run.html"
browse run "$tmp/run.html"
check run "$tmp/run.dom" "$src/tests/golden/report.json"
# hostile strings are text, never markup: the DOM has no script (html-check), and the text is there
grep -q 'we"ird &lt;script&gt;alert(1)&lt;/script&gt;' "$tmp/run.dom" || fail "the hostile axis value is not shown as text"

# a compare: a 30% slowdown of one cell (tests/unit/test-compare.c --write-files)
mkdir "$tmp/cmp"
"$build/tests/test-compare" --write-files "$tmp/cmp"
st=0
"$ferry" compare "$tmp/cmp/base.json" "$tmp/cmp/slow.json" --html "$tmp/compare.html" \
	--json "$tmp/compare.json" || st=$?
[ "$st" = 1 ] || fail "ferry compare of a slowdown exited $st, expected 1"
check valid "$tmp/compare.html"
browse compare "$tmp/compare.html"
check compare "$tmp/compare.dom" "$tmp/compare.json"
grep -q 'data-verdict="regressed"' "$tmp/compare.dom" || fail "no regressed mark in the compare page"

# a trend: ten runs, 30% slower from the 7th on
"$build/tests/test-results-model" --write-sample "$tmp/base.json" >/dev/null
"$py" - "$tmp" <<'PY'
import copy, json, random, sys
d = sys.argv[1]
base = json.load(open(d + "/base.json"))
random.seed(3)
for i in range(10):
    r = copy.deepcopy(base)
    r["provenance"]["started"] = "2026-11-%02dT10:00:00.000Z" % (i + 1)
    for c in r["cells"]:
        if c["stats"]:
            f = (1.3 if i >= 6 else 1.0) * random.gauss(1, 0.01)
            for k in ("median", "mean", "ci95_low", "ci95_high"):
                if c["stats"]["total"][k] is not None:
                    c["stats"]["total"][k] *= f
    json.dump(r, open("%s/trend-%d.json" % (d, i), "w"))
PY
"$ferry" trend "$tmp"/trend-*.json -o "$tmp/trend.md" --html "$tmp/trend.html"
check valid "$tmp/trend.html"
browse trend "$tmp/trend.html"
check trend "$tmp/trend.dom" 7 "$tmp"/trend-*.json

# a bad --html path fails before anything is written, and leaves nothing behind
st=0
"$ferry" report "$src/tests/golden/report.json" --html "$tmp/no/such/dir/x.html" 2>"$tmp/err" || st=$?
[ "$st" = 2 ] || fail "a bad --html path exited $st, expected 2"
echo "ok: HTML reports of a run, a compare and a trend checked in a browser"
