#!/usr/bin/env bash
# The quickstart plan on a real guest with every report: the HTML page is valid HTML5, refers to
# nothing outside itself, is under 1 MB, and Debian's chromium (headless, in a network namespace
# of its own) builds a DOM whose charts carry every cell's mean, CI, runs and phases
# (tests/html-check.py); every report agrees on each cell's mean and CI (tests/report-agree.py);
# the verdicts ferry run prints at its end are the Markdown's, word for word; a compare of the run
# against itself and a trend of it are checked in the browser too. The pages' screenshots are
# kept in the build directory (meson-logs/html/quickstart*).
source "$(dirname "$0")/run-lib.sh"
py=/usr/bin/python3
if ! "$py" -c 'import html5lib' 2>/dev/null || ! command -v chromium >/dev/null; then
	echo "SKIP: chromium or python3-html5lib is missing (scripts/setup.sh installs them)"
	exit 77
fi
build="${FERRY_BUILD_DIR:?}"
art="$build/meson-logs/html"
mkdir -p "$art"
cd "$work"
o="$work/out"
run_ferry 0 "$src/plans/quickstart.yaml" --results "$o/q.json" --markdown "$o/q.md" \
	--html "$o/q.html" --junit "$o/q.xml" --bmf "$o/q.bmf.json" --gab "$o/q.gab.json"
validate "$o/q.json"
size="$(stat -c %s "$o/q.html")"
[ "$size" -lt 1000000 ] || fail "the quickstart's HTML is $size bytes, over 1 MB"
echo "ok: quickstart HTML is $size bytes"
cp "$o/q.html" "$art/quickstart.html"
"$py" "$src/tests/html-check.py" valid "$o/q.html"
flags=(--headless --no-sandbox --disable-gpu --disable-background-networking
	--disable-component-update --disable-sync --no-first-run)
unshare -n chromium "${flags[@]}" "--user-data-dir=$(mktemp -d "$work/p.XXXXXX")" \
	--dump-dom "file://$o/q.html" >"$work/q.dom" 2>/dev/null || fail "chromium could not load the page"
unshare -n chromium "${flags[@]}" "--user-data-dir=$(mktemp -d "$work/p.XXXXXX")" \
	--window-size=1200,2200 "--screenshot=$art/quickstart.png" "file://$o/q.html" >/dev/null 2>&1 ||
	fail "chromium could not take a screenshot"
[ -s "$art/quickstart.png" ] || fail "no screenshot"
"$py" "$src/tests/html-check.py" run "$work/q.dom" "$o/q.json"
"$py" "$src/tests/report-agree.py" "$o/q.json" "$o/q.md" "$o/q.html" "$o/q.xml" \
	"$o/q.bmf.json" "$o/q.gab.json"
# a compare and a trend of the real run (tests/report-html.sh checks them on made-up results with
# regressions and changes of level): the run against itself, and the run as a trend of one point
# per cell; each page valid, loaded by chromium offline, its marks carrying the numbers
"$ferry" compare "$o/q.json" "$o/q.json" --html "$o/c.html" --json "$o/c.json" >/dev/null 2>&1 ||
	fail "ferry compare of the quickstart run against itself failed"
"$ferry" trend "$o/q.json" -o "$o/t.md" --html "$o/t.html" >/dev/null 2>&1 ||
	fail "ferry trend of the quickstart run failed"
for n in c t; do
	"$py" "$src/tests/html-check.py" valid "$o/$n.html"
	unshare -n chromium "${flags[@]}" "--user-data-dir=$(mktemp -d "$work/p.XXXXXX")" \
		--dump-dom "file://$o/$n.html" >"$work/$n.dom" 2>/dev/null || fail "chromium could not load $n.html"
	unshare -n chromium "${flags[@]}" "--user-data-dir=$(mktemp -d "$work/p.XXXXXX")" \
		--window-size=1200,1600 "--screenshot=$art/quickstart-$n.png" "file://$o/$n.html" >/dev/null 2>&1 ||
		fail "chromium could not take a screenshot of $n.html"
	[ -s "$art/quickstart-$n.png" ] || fail "no screenshot of $n.html"
done
"$py" "$src/tests/html-check.py" compare "$work/c.dom" "$o/c.json"
"$py" "$src/tests/html-check.py" trend "$work/t.dom" 0 "$o/q.json"
# the end-of-run verdicts are the Markdown's (its Verdicts section, Markdown escapes removed)
"$py" - "$o/q.md" "$work/log" <<'PY'
import re, sys
md = open(sys.argv[1]).read()
log = open(sys.argv[2]).read()
sec = md.split("### Verdicts\n", 1)[1].split("\n### ", 1)[0]
unesc = lambda s: re.sub(r"\\(.)", r"\1", s).replace("\u00a0", " ")
tables = re.findall(r"^- \*\*(.*)\*\*: (fastest mean .*)$", sec, re.M)
texts = [unesc(t) for t in re.findall(r"^  - (.*)$", sec, re.M)]
assert tables and texts, sec
lines = [l[len("ferry: "):] for l in log.splitlines() if "fastest mean" in l]
assert len(lines) == len(tables), (lines, tables)
for (title, head), line in zip(tables, lines):
    assert line.startswith(unesc(title) + ": " + unesc(head).split(" (")[0]), (line, title, head)
for t in texts:
    assert any(t in l for l in lines), (t, lines)
print("ok: the %d verdict lines of ferry run are the Markdown's %d verdicts" % (len(lines), len(texts)))
PY
echo "ok: quickstart HTML checked in a browser, every report agrees, the terminal says the verdicts"
