#!/usr/bin/env bash
# Precision per minute (issues 23 and 29): how much wall time the quickstart needs before every
# comparison its report makes, and every cell's mean, is known to a boot-level confidence
# interval of a given half-width. The quickstart's eight cells (its vms, disks, datasets,
# methods and matrix, unchanged) run in blocks of one run per cell per fresh guest, with the
# stop rule `until: 5%` and at most --max blocks, once with run.fresh boot and once with
# run.fresh restore per round, the two alternating which goes first, R rounds. After every
# block ferry prints (--verbose) the widest half-width by its own rule (the one `until` stops
# on) and the seconds of blocks so far; this script collects those lines.
# Prints, per round and kind: the half-width after each block against the time, the stop reason,
# the run's wall time, and the time at which 20%, 10% and 5% were first reached (or "not
# reached"); then the medians per kind and restore/boot.
# "Before" is one boot per configuration (the shipped plans before blocks): a single boot has no
# boot-level interval at all, so its half-width is undefined whatever its runs say.
# Usage: bench/precision.sh [--rounds R] [--max N] [--budget DURATION] [--ferry BIN]
#                           [--keep DIR] [--lock]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prog=precision.sh
. "$here/bench/lib-boot.sh"
rounds=2
max=12
budget=10m
keep=""
lock=""
bin="${FERRY:-$here/build/ferry}"
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds="$2"; shift 2 ;;
	--max) max="$2"; shift 2 ;;
	--budget) budget="$2"; shift 2 ;;
	--ferry) bin="$2"; shift 2 ;;
	--keep) keep="$2"; shift 2 ;;
	--lock) lock=1; shift ;;
	-h|--help) sed -n '2,16p' "$0"; exit 0 ;;
	*) echo "$prog: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
case "$rounds$max" in *[!0-9]*) echo "$prog: --rounds and --max take numbers" >&2; exit 2 ;; esac
[ "$max" -ge 3 ] || { echo "$prog: --max must be at least 3" >&2; exit 2; }
case "$budget" in *[!0-9smh]*|"") echo "$prog: --budget takes a duration such as 10m" >&2; exit 2 ;; esac
boot_workdir
[ -z "$keep" ] || mkdir -p "$keep"
out="${keep:-$work/out}"
mkdir -p "$out"
for kind in boot restore; do
	quickstart_plan "$work/$kind.yaml" \
		"{boots: {min: 3, max: $max}, runs_per_boot: 1, until: 5%, budget: $budget, timeout: 5m, fresh: $kind}"
done
# one KIND ROUND: one invocation, its results, its log, and its wall time as ferry reports it
# (the time spent waiting for the lock is not the run's)
one() {
	local kind="$1" i="$2" log="$out/$1-$2.log" wall
	local cmd=(env FERRY_RUN_DIR="$work/runs" "$bin" run --verbose --results "$out/$kind-$i.json"
		"$work/$kind.yaml")
	if [ -n "$lock" ]; then cmd=(flock /work/e2e.lock "${cmd[@]}"); fi
	"${cmd[@]}" >/dev/null 2>"$log" || { echo "$prog: $kind round $i failed:" >&2; tail -20 "$log" >&2; return 1; }
	wall="$(sed -n 's/.*; wall \([0-9.]*\) s,.*/\1/p' "$log" | tail -1)"
	printf '%s %s %s %s\n' "$kind" "$i" "${wall:-?}" "$(cut -d' ' -f1 /proc/loadavg)" >>"$out/walls"
}
load0="$(boot_load)"
: >"$out/walls"
for ((i = 1; i <= rounds; i++)); do
	if ((i % 2)); then one boot "$i"; one restore "$i"; else one restore "$i"; one boot "$i"; fi
	printf 'round %d/%d done (load %s)\n' "$i" "$rounds" "$(cut -d' ' -f1 /proc/loadavg)" >&2
done
python3 "$here/bench/precision.py" "$out"
echo "load average (1, 5, 15 min): before $load0, after $(boot_load)"
