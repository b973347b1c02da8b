#!/bin/sh
# SPDX-License-Identifier: MIT
# How `ferry report` scales with the number of cells: seconds and peak RSS per format, side by
# side, for results files of 5k, 10k and 20k cells made from tests/golden/report.json.
# No thresholds: this prints figures for a person to read.
#   bench/report-scale.sh [FERRY] [SIZES...]     (default: build/ferry, 5000 10000 20000)
# Needs python3 and GNU time (/usr/bin/time, Debian package "time").
set -eu
here=$(cd "$(dirname "$0")" && pwd)
ferry=${1:-$here/../build/ferry}
[ $# -gt 0 ] && shift
sizes=${*:-5000 10000 20000}
dir=${RBENCH_DIR:-/tmp/rbench}
mkdir -p "$dir"
[ -x /usr/bin/time ] || { echo "report-scale: /usr/bin/time (GNU time) is needed" >&2; exit 1; }

# one measurement: "seconds maxrss_MB" of `ferry report FILE ARGS...`
measure() {
	log=$dir/time.log
	/usr/bin/time -v -o "$log" "$ferry" report "$@" >/dev/null
	awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0;
			for (i = 1; i <= n; i++) s = s * 60 + t[i]; }
		/Maximum resident set size/ { rss = $2 / 1024 }
		END { printf "%6.2f s %7.1f MB", s, rss }' "$log"
}

printf '%-7s %-10s %-19s %-19s %-19s %-19s\n' cells "file MB" "read (gab)" junit markdown json
for n in $sizes; do
	in=$dir/r$n.json
	[ -f "$in" ] || python3 "$here/gen-results.py" "$here/../tests/golden/report.json" "$n" "$in"
	mb=$(awk -v b="$(wc -c <"$in")" 'BEGIN { printf "%.1f", b / 1048576 }')
	printf '%-7s %-10s ' "$n" "$mb"
	printf '%-19s ' "$(measure "$in" --gab "$dir/out.gab.json")"
	printf '%-19s ' "$(measure "$in" --junit "$dir/out.xml")"
	printf '%-19s ' "$(measure "$in" --markdown "$dir/out.md")"
	printf '%-19s\n' "$(measure "$in" --json "$dir/out.json")"
done
