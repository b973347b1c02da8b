#!/usr/bin/env bash
# Reports as a side channel: names in a results file (plan name, cell ids, axis keys and values,
# host, dataset names, messages, serial tails) with ESC sequences, CR, LF, BEL and '::warning'
# must not carry a control character into JUnit, Markdown, BMF, GAB or the GitHub step summary,
# nor start a line with '::' (a forged workflow command). The file is tests/fuzz/corpus/results/
# hostile-names.json; its JSON export keeps the strings, escaped by JSON itself.
set -euo pipefail

src="${FERRY_SOURCE_DIR:?}"
ferry="${FERRY:?}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
in="$src/tests/fuzz/corpus/results/hostile-names.json"
grep -q 'u001b' "$in" && grep -q '::warning' "$in" || { echo "FAIL: $in is not hostile"; exit 1; }

export GITHUB_STEP_SUMMARY="$tmp/summary.md"
: >"$GITHUB_STEP_SUMMARY"
"$ferry" report "$in" --junit "$tmp/r.xml" --markdown "$tmp/r.md" --json "$tmp/r.json" \
	--bmf "$tmp/r.bmf.json" --gab "$tmp/r.gab.json" 2>"$tmp/stderr"
[ -s "$GITHUB_STEP_SUMMARY" ] || { echo "FAIL: no step summary written"; exit 1; }

for f in r.xml r.md r.json r.bmf.json r.gab.json summary.md stderr; do
	if LC_ALL=C grep -n -P '[\x00-\x08\x0b-\x1f\x7f]' "$tmp/$f" | head -3 | grep .; then
		echo "FAIL: $f carries a raw control character"; exit 1
	fi
	if grep -n '^::' "$tmp/$f" | head -3 | grep .; then
		echo "FAIL: $f has a line that starts a workflow command"; exit 1
	fi
	echo "ok: $f"
done
# the JSON export is the results file: the strings are kept, escaped by JSON
grep -qi '\\u001b\[31m' "$tmp/r.json" || { echo "FAIL: the JSON export lost the plan name"; exit 1; }
# and the other reports show what was there instead of dropping it: ESC as \x1b (Markdown
# escapes the backslash and the bracket), so a reader can see that a name carried controls
grep -qF '\x1b[31m' "$tmp/r.xml" || { echo "FAIL: JUnit dropped the ESC instead of showing it"; exit 1; }
grep -qF '\\x1b\[31m' "$tmp/r.md" || { echo "FAIL: Markdown dropped the ESC instead of showing it"; exit 1; }
grep -qF '\\x1b\[31m' "$tmp/summary.md" || { echo "FAIL: the step summary dropped the ESC"; exit 1; }
for x in "$src/fixtures/xsd/junit-10.xsd" "$src/fixtures/xsd/ant-junit.xsd"; do
	xmllint --noout --schema "$x" "$tmp/r.xml" 2>/dev/null || { echo "FAIL: r.xml not valid against $x"; exit 1; }
done
echo "ok: controls are shown escaped (\\x1b) in JUnit, Markdown and the step summary"
