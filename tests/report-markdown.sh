#!/usr/bin/env bash
# The Markdown report rendered by cmark-gfm with the GitHub table extension: the tables are there
# (counted), and hostile strings from the results come out as text, never as HTML.
set -euo pipefail

build="${FERRY_BUILD_DIR:?}"
ferry="${FERRY:?}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if ! command -v cmark-gfm >/dev/null; then
	echo "SKIP: cmark-gfm is missing (Debian package cmark-gfm)"
	exit 77
fi

"$build/tests/test-reporters" --write-sample-results "$tmp/results.json"
"$ferry" report "$tmp/results.json" --markdown "$tmp/report.md"
# --unsafe keeps raw HTML (<details>, <br>) as GitHub does; escaping must hold regardless
cmark-gfm --unsafe -e table -e strikethrough -e autolink "$tmp/report.md" >"$tmp/report.html"

tables="$(grep -c '<table>' "$tmp/report.html" || true)"
# two main tables (vm=small and the hostile vm), phases, runs, raw runs, provenance
if [ "$tables" != 6 ]; then
	echo "FAIL: expected 6 tables, found $tables"
	exit 1
fi
echo "ok: $tables tables"

# every row of the main table has all its cells: a stray | would add one
/usr/bin/python3 - "$tmp/report.html" <<'PY'
import sys, re
from html.parser import HTMLParser

class P(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables = []; self.tags = []
    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "table": self.tables.append([])
        elif tag == "tr": self.tables[-1].append(0)
        elif tag in ("td", "th"): self.tables[-1][-1] += 1

html = open(sys.argv[1]).read()
p = P(); p.feed(html)
for i, t in enumerate(p.tables):
    assert len(set(t)) == 1, "table %d has rows of different widths: %s" % (i, t)
assert p.tables[0][0] == 3 and len(p.tables[0]) == 4, p.tables[0]
assert p.tables[1][0] == 2 and len(p.tables[1]) == 3, p.tables[1]
# the only HTML elements are the ones the report means to write
allowed = {"h2", "h3", "h4", "p", "strong", "em", "table", "thead", "tbody", "tr", "th", "td",
           "br", "ul", "li", "pre", "code", "details", "summary", "blockquote"}
assert set(p.tags) <= allowed, set(p.tags) - allowed
assert "<script" not in html and "<b>" not in html, "raw HTML from the results"
assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
assert "\x1b" not in html
assert "été" in html and "we&quot;ird" in html
# the fastest of a column is not bold when the verdicts cannot call it faster (one boot a side)
assert ">1.16\u00a0s ± 0.08<br>1.00x</td>" in html, "fastest shown without bold"
assert "3.8x, inconclusive" in html
assert "<strong>" not in html.split("Mean total time")[1].split("Mean of the measured")[0]
# the serial console with its own fence, its backticks kept as text
assert re.search(r"<pre><code class=\"language-text\">.*```\n&lt;script&gt;", html, re.S)
print("ok: %d tables with consistent rows, no raw HTML from the results" % len(p.tables))
PY

# the mermaid chart is a fenced block with the bars of the few-large column
grep -q '^```mermaid$' "$tmp/report.md"
grep -q '^    bar \[4.355, 1.157, 4.100\]$' "$tmp/report.md"
echo "ok: mermaid chart"

# GitHub Actions: the same Markdown is appended to the step summary
export GITHUB_STEP_SUMMARY="$tmp/summary.md"
echo "previous step" >"$GITHUB_STEP_SUMMARY"
"$ferry" report "$tmp/results.json" --junit "$tmp/again.xml"
{ echo "previous step"; cat "$tmp/report.md"; } | cmp - "$GITHUB_STEP_SUMMARY"
echo "ok: appended to GITHUB_STEP_SUMMARY"
