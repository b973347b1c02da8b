#!/usr/bin/env bash
# Issue 24 class 10: `ferry trend` over many files of many distinct cells. 200 files of 2,000
# cells took 3.5 GB and wrote 94 MB of Markdown: every file was held in memory at once and every
# cell was written out. Now one file is read at a time and only the trend's points are kept, and
# the report shows at most 50 cells (the largest changes first) with the rest counted in one
# line. Checked here: 120 files of 250 cells, each file's cells its own (30,000 cells, 55 MB),
# under 150 MiB of address space, which holding every file at once exceeds (ferry before the
# fix failed under 200 MiB; after it runs in 80 MiB, 34 MB resident), and an output bounded
# in cells and size. Under ASan, which reserves terabytes, the address-space limit is left out,
# and with it the scale: 12 files (3,000 cells) are enough for the bounds on the output.
set -euo pipefail

ferry="${FERRY:?}"
src="${FERRY_SOURCE_DIR:?}"
tmp="$(mktemp -d /tmp/ferry-test-trend-scale.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
unset GITHUB_STEP_SUMMARY GITHUB_ACTIONS
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
fail() { n=$((n + 1)); echo "not ok $n - $*"; exit 1; }

files=120
limit="ulimit -v $((150 * 1024))"
if grep -q __asan_init "$ferry"; then
	limit=true files=12
	n=$((n + 1)); echo "ok $n # SKIP the address-space limit: this ferry is built with ASan"
fi
cells=$((files * 250))

python3 - "$src/tests/golden/report.json" "$tmp" "$files" <<'PY'
import copy, json, sys
doc = json.load(open(sys.argv[1]))
base = doc["cells"]
for f in range(int(sys.argv[3])):
    cells = []
    for i in range(250):
        c = copy.deepcopy(base[i % len(base)])
        c["id"] = "%s,file=%d,copy=%d" % (c["id"], f, i)
        c["params"] = dict(c.get("params") or {}, file=f, copy=i)
        cells.append(c)
    d = dict(doc, cells=cells)
    d["provenance"] = dict(doc["provenance"], started=doc["provenance"].get("started"))
    json.dump(d, open("%s/r%03d.json" % (sys.argv[2], f), "w"))
PY
in_kib=$(du -sk "$tmp" | cut -f1)
rc=0
(eval "$limit"; "$ferry" trend "$tmp"/r*.json -o "$tmp/trend.md" 2>"$tmp/err") || rc=$?
[ "$rc" = 0 ] || { cat "$tmp/err"; fail "trend of $files files x 250 cells ($limit): exit $rc"; }
ok "trend of $files files of 250 distinct cells (${in_kib} KiB) ran ($limit)"
shown=$(grep -c '^### ' "$tmp/trend.md")
[ "$shown" -le 50 ] || fail "the report shows $shown cells, more than 50"
grep -q "^50 of the $cells cells are shown: those with the largest changes of level first. Not shown: $((cells - 50)) cells" "$tmp/trend.md" ||
	{ grep -n "cells are shown" "$tmp/trend.md"; fail "no summary line of the cells not shown"; }
size=$(stat -c %s "$tmp/trend.md")
[ "$size" -lt $((1024 * 1024)) ] || fail "the report is $size bytes"
ok "the report shows 50 of $cells cells and counts the rest ($size bytes)"
"$ferry" trend "$src/tests/golden/report.json" -o "$tmp/small.md"
[ "$(grep -c '^### ' "$tmp/small.md")" = 8 ] || fail "a trend of 8 cells does not show all 8"
if grep -q "cells are shown" "$tmp/small.md"; then fail "a trend of 8 cells is summarized"; fi
ok "a trend of fewer cells than the bound shows every cell"
echo "1..$n"
