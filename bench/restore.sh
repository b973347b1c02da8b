#!/usr/bin/env bash
# A fresh guest from a saved state vs a boot (issue 29), to agent ready: round i runs a one-cell
# plan (null method, guest RAM, 1 vCPU, 256 MiB, accel tcg) once with run.fresh boot (ferry
# prints "booted NAME in X s": virDomainCreateXML to the first answered guest-ping) and once
# with run.fresh restore (the run boots and saves a guest first, then "restored NAME in X s":
# virDomainCreateXML of the incoming domain, the state loaded, resumed, to the first answered
# guest-ping). Prints each kind's median and range, restore/boot, and the load before and after.
# Usage: bench/restore.sh [--n N] [--ferry BIN]. Hold /work/e2e.lock around it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prog=restore.sh
. "$here/bench/lib-boot.sh"
n=9
bin="${FERRY:-$here/build/ferry}"
while [ $# -gt 0 ]; do
	case "$1" in
	--n) n="$2"; shift 2 ;;
	--ferry) bin="$2"; shift 2 ;;
	-h|--help) sed -n '2,9p' "$0"; exit 0 ;;
	*) echo "restore.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
boot_workdir
boot_plan "$work/boot.yaml" builtin 1 256MiB
sed 's/^run: {/run: {fresh: restore, /' "$work/boot.yaml" >"$work/restore.yaml"
# restore_once: the seconds of "restored NAME in X s"
restore_once() {
	local out
	out="$(env FERRY_RUN_DIR="$work/runs" "$bin" run --verbose --results "$work/r.json" \
		"$work/restore.yaml" 2>&1 >/dev/null)" || { echo "$out" >&2; return 1; }
	rm -f "$work/r.json"
	sed -n 's/.*restored .* in \([0-9.]*\) s.*/\1/p' <<<"$out" | head -1
}
load0="$(boot_load)"
boot_once "$bin" "" "$work/boot.yaml" >/dev/null
restore_once >/dev/null
: >"$work/boot"
: >"$work/restore"
for ((i = 1; i <= n; i++)); do
	boot_once "$bin" "" "$work/boot.yaml" >>"$work/boot"
	restore_once >>"$work/restore"
	printf 'round %d/%d: boot %s s, restore %s s (load %s)\n' "$i" "$n" "$(tail -1 "$work/boot")" \
		"$(tail -1 "$work/restore")" "$(cut -d' ' -f1 /proc/loadavg)" >&2
done
echo "fresh guest to agent ready, 1 vCPU, 256MiB, TCG, n=$n (interleaved), seconds:"
printf '%-8s %7s %7s %7s\n' "" median min max
read -r bm blo bhi < <(boot_stats <"$work/boot")
read -r rm rlo rhi < <(boot_stats <"$work/restore")
printf '%-8s %7s %7s %7s\n' boot "$bm" "$blo" "$bhi" restore "$rm" "$rlo" "$rhi"
awk -v r="$rm" -v b="$bm" 'BEGIN { printf "restore/boot median: %.2f\n", r/b }'
echo "load average (1, 5, 15 min): before $load0, after $(boot_load)"
