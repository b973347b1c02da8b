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
