#!/usr/bin/env bash
# Are restored guests as independent as booted ones? (issue 29). The quickstart's eight cells
# (its vms, disks, datasets, methods and matrix, unchanged) run in blocks of one run per cell per
# guest, M guests an invocation, once with run.fresh boot and once with run.fresh restore per
# round, the two kinds alternating which goes first, R rounds. Each restore invocation saves its
# own state (one boot + save) and restores every one of its M guests from it, so the guests of a
# restore invocation share one saved state the way a real run's do.
# Prints, per kind: time to agent ready of every fresh guest (ferry's "booted/restored NAME in
# X s"), restore/boot, and bench/restore-variance.py's variance comparison of the runs' totals
# (log scale, cells pooled): within an invocation, between invocations, and restore/boot with a
# bootstrap interval. Each round takes /work/e2e.lock itself (--lock), so long series do not
# hold the machine for more than one round.
# Usage: bench/restore-variance.sh [--rounds R] [--boots M] [--ferry BIN] [--keep DIR] [--lock]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prog=restore-variance.sh
. "$here/bench/lib-boot.sh"
rounds=4
boots=5
keep=""
lock=""
bin="${FERRY:-$here/build/ferry}"
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds="$2"; shift 2 ;;
	--boots) boots="$2"; shift 2 ;;
	--ferry) bin="$2"; shift 2 ;;
	--keep) keep="$2"; shift 2 ;;
	--lock) lock=1; shift ;;
	-h|--help) sed -n '2,14p' "$0"; exit 0 ;;
	*) echo "$prog: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
case "$rounds$boots" in *[!0-9]*) echo "$prog: --rounds and --boots take numbers" >&2; exit 2 ;; esac
[ "$boots" -ge 2 ] || { echo "$prog: --boots must be at least 2" >&2; exit 2; }
boot_workdir
[ -z "$keep" ] || mkdir -p "$keep"
out="${keep:-$work/out}"
mkdir -p "$out"
for kind in boot restore; do
	quickstart_plan "$work/$kind.yaml" \
		"{boots: {min: $boots, max: $boots}, runs_per_boot: 1, timeout: 5m, fresh: $kind}"
done
# one KIND ROUND: one invocation; its results and the guests' start times (KIND seconds) kept
one() {
	local kind="$1" i="$2" log="$out/$1-$2.log"
	local cmd=(env FERRY_RUN_DIR="$work/runs" "$bin" run --verbose --results "$out/$kind-$i.json"
		"$work/$kind.yaml")
	if [ -n "$lock" ]; then cmd=(flock /work/e2e.lock "${cmd[@]}"); fi
	"${cmd[@]}" >/dev/null 2>"$log" || { echo "$prog: $kind round $i failed:" >&2; tail -20 "$log" >&2; return 1; }
	sed -n 's/.*\(booted\|restored\) .* in \([0-9.]*\) s.*/\1 \2/p' "$log" >>"$out/start-times"
}
load0="$(boot_load)"
: >"$out/start-times"
for ((i = 1; i <= rounds; i++)); do
	if ((i % 2)); then one boot "$i"; one restore "$i"; else one restore "$i"; one boot "$i"; fi
	printf 'round %d/%d done (load %s)\n' "$i" "$rounds" "$(cut -d' ' -f1 /proc/loadavg)" >&2
done
echo "fresh guests of the quickstart's VM (2 vCPUs, 512 MiB, TCG) to agent ready, seconds:"
printf '%-8s %4s %7s %7s %7s\n' "" n median min max
for k in booted restored; do
	read -r m lo hi < <(awk -v k="$k" '$1 == k { print $2 }' "$out/start-times" | boot_stats)
	printf '%-8s %4s %7s %7s %7s\n' "$k" "$(grep -c "^$k " "$out/start-times")" "$m" "$lo" "$hi"
	eval "med_$k=$m"
done
awk -v r="$med_restored" -v b="$med_booted" 'BEGIN { printf "restore/boot median: %.2f\n", r/b }'
python3 "$here/bench/restore-variance.py" "$out"
echo "load average (1, 5, 15 min): before $load0, after $(boot_load)"
