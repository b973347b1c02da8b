#!/usr/bin/env bash
# One statistic everywhere (ferry(1) OUTPUT): every report of the golden results file agrees on
# each cell's mean total and 95% CI (tests/report-agree.py); tests/e2e/run-html.sh checks the
# same on a real quickstart run.
set -euo pipefail
src="${FERRY_SOURCE_DIR:?}"
ferry="${FERRY:?}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
unset GITHUB_STEP_SUMMARY GITHUB_ACTIONS
if ! /usr/bin/python3 -c 'import html5lib' 2>/dev/null; then
	echo "SKIP: html5lib is missing (Debian package python3-html5lib)"
	exit 77
fi
res="$src/tests/golden/report.json"
"$ferry" report "$res" --markdown "$tmp/r.md" --html "$tmp/r.html" --junit "$tmp/r.xml" \
	--bmf "$tmp/r.bmf.json" --gab "$tmp/r.gab.json"
/usr/bin/python3 "$src/tests/report-agree.py" "$res" "$tmp/r.md" "$tmp/r.html" "$tmp/r.xml" \
	"$tmp/r.bmf.json" "$tmp/r.gab.json"
# the GAB half-width is printed to 6 decimals: a value one unit of the last place off is refused
# (a half-width of 0.030624 for 0.0306244437 is right, and a relative bound of 1e-5 refused it)
/usr/bin/python3 - "$tmp/r.gab.json" "$tmp/bad.gab.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
e = next(x for x in g if "range" in x)
e["range"] = "\u00b1 %.6f" % (float(e["range"].split()[-1]) + 2e-6)
json.dump(g, open(sys.argv[2], "w"))
PY
if /usr/bin/python3 "$src/tests/report-agree.py" "$res" "$tmp/r.md" "$tmp/r.html" "$tmp/r.xml" \
	"$tmp/r.bmf.json" "$tmp/bad.gab.json" 2>"$tmp/err"; then
	echo "FAIL: a GAB half-width 2e-6 off was accepted"
	exit 1
fi
grep -q 'GAB range' "$tmp/err" || { echo "FAIL: not the GAB check: $(cat "$tmp/err")"; exit 1; }
echo "ok: a GAB half-width off by 2e-6 is refused"
