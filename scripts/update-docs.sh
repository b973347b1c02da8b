#!/usr/bin/env bash
# Regenerate what the key tables (runner/plan/keys*.c, and each method's options in its file in
# runner/methods/) generate: schema/ferry-plan.schema.json and the PLAN KEYS section of ferry.1,
# and what the command tables (runner/cli/cli.h) generate: the
# SYNOPSIS section of ferry.1, and the metric table (runner/results/metrics.h): the list in
# METRICS (each between its generated-section markers).
# Usage: scripts/update-docs.sh [BUILDDIR]     (default: build)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ferry="${1:-$here/build}/ferry"
cd "$here"
"$ferry" schema > schema/ferry-plan.schema.json
"$ferry" schema --man > /tmp/ferry-keys.$$
/usr/bin/python3 - /tmp/ferry-keys.$$ ferry.1 <<'PY'
import sys
keys = open(sys.argv[1]).read()
page = open(sys.argv[2]).read()
start = page.index('.\\" PLAN KEYS: generated')
end_marker = '.\\" end of generated PLAN KEYS\n'
end = page.index(end_marker) + len(end_marker)
open(sys.argv[2], 'w').write(page[:start] + keys + page[end:])
PY
"$ferry" schema --man-synopsis > /tmp/ferry-keys.$$
/usr/bin/python3 - /tmp/ferry-keys.$$ ferry.1 <<'PY'
import sys
synopsis = open(sys.argv[1]).read()
page = open(sys.argv[2]).read()
start = page.index('.\\" SYNOPSIS: generated')
end_marker = '.\\" end of generated SYNOPSIS\n'
end = page.index(end_marker) + len(end_marker)
open(sys.argv[2], 'w').write(page[:start] + synopsis + page[end:])
PY
"$ferry" schema --man-metrics > /tmp/ferry-keys.$$
/usr/bin/python3 - /tmp/ferry-keys.$$ ferry.1 <<'PY'
import sys
metrics = open(sys.argv[1]).read()
page = open(sys.argv[2]).read()
start = page.index('.\\" METRICS: generated')
end_marker = '.\\" end of generated METRICS\n'
end = page.index(end_marker) + len(end_marker)
open(sys.argv[2], 'w').write(page[:start] + metrics + page[end:])
PY
rm -f /tmp/ferry-keys.$$
echo "updated schema/ferry-plan.schema.json and ferry.1 (PLAN KEYS, SYNOPSIS, METRICS)"
