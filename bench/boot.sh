#!/usr/bin/env bash
# Boot to agent ready: `ferry run --verbose` of a one-cell plan (null method, guest RAM, 1 vCPU,
# 256 MiB, accel tcg: no KVM probe) boots the built-in guest once; ferry prints "booted NAME in
# X s", the time from virDomainCreateXML to the first answered guest-ping. Contestants boot
# interleaved (A, B, [C,] A, B, ...) so that the load of the machine hits all alike; the script
# prints each contestant's median and range, the ratio of the medians to A's (and C's to B's),
# and the load average before and after.
#
# A contestant is a ferry binary and a cache directory (its built guest):
#   --a BIN:CACHE  --b BIN:CACHE  [--c BIN:CACHE]
#   (default A: the previous build, B: this tree's build; C, optional: e.g. the previous build
#   two steps back next to the previous one and the new one)
# Usage: bench/boot.sh [--n N] [--a BIN:CACHE] [--b BIN:CACHE] [--c BIN:CACHE] [--vcpus N]
#                      [--memory SIZE]
# Hold /work/e2e.lock (or the like) around it on a shared machine: other guests skew it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prog=boot.sh
. "$here/bench/lib-boot.sh"
n=9
a="${FERRY_OLD:-/tmp/b-perf-old/ferry}:${FERRY_OLD_CACHE:-/var/tmp/ferry-old}"
b="${FERRY:-$here/build/ferry}:${FERRY_CACHE_DIR:-/var/cache/ferry}"
c=""
vcpus=1
memory=256MiB
while [ $# -gt 0 ]; do
	case "$1" in
	--n) n="$2"; shift 2 ;;
	--a) a="$2"; shift 2 ;;
	--b) b="$2"; shift 2 ;;
	--c) c="$2"; shift 2 ;;
	--vcpus) vcpus="$2"; shift 2 ;;
	--memory) memory="$2"; shift 2 ;;
	-h|--help) sed -n '2,15p' "$0"; exit 0 ;;
	*) echo "boot.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done

labels=(A B)
specs=("$a" "$b")
[ -z "$c" ] || { labels+=(C); specs+=("$c"); }
bins=()
caches=()
for s in "${specs[@]}"; do
	IFS=: read -r x y <<<"$s"
	[ -x "$x" ] || { echo "boot.sh: no ferry at '$x'" >&2; exit 2; }
	bins+=("$x")
	caches+=("$y")
done
boot_workdir
boot_plan "$work/plan.yaml" builtin "$vcpus" "$memory"
load0="$(boot_load)"
# one boot each first (not counted): page cache warm for every kernel and initramfs
for k in "${!labels[@]}"; do
	boot_once "${bins[k]}" "${caches[k]}" "$work/plan.yaml" >/dev/null
	: >"$work/${labels[k]}"
done
for ((i = 1; i <= n; i++)); do
	line="boot $i/$n:"
	for k in "${!labels[@]}"; do
		boot_once "${bins[k]}" "${caches[k]}" "$work/plan.yaml" >>"$work/${labels[k]}"
		line+=" ${labels[k]} $(tail -1 "$work/${labels[k]}") s,"
	done
	printf '%s (load %s)\n' "${line%,}" "$(cut -d' ' -f1 /proc/loadavg)" >&2
done
echo "boot to agent ready, $vcpus vCPU, $memory, TCG, n=$n (interleaved), seconds:"
printf '%-4s %-60s %7s %7s %7s\n' "" "ferry : cache" median min max
declare -A med
for k in "${!labels[@]}"; do
	read -r m lo hi < <(boot_stats <"$work/${labels[k]}")
	med[${labels[k]}]="$m"
	printf '%-4s %-60s %7s %7s %7s\n' "${labels[k]}" "${bins[k]} : ${caches[k]}" "$m" "$lo" "$hi"
done
ratio() {
	awk -v x="${med[$1]}" -v y="${med[$2]}" -v l="$1/$2" -v s="$1" 'BEGIN {
		printf "%s median: %.2f (%s is %.2f s %s)\n", l, x/y, s, (x>y?x-y:y-x), (x<y?"faster":"slower")}'
}
ratio B A
[ -z "$c" ] || { ratio C A; ratio C B; }
echo "load average (1, 5, 15 min): before $load0, after $(boot_load)"
