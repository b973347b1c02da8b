#!/usr/bin/env bash
# Boot to agent ready: `ferry run --verbose` of a one-cell plan (null method, guest RAM, 1 vCPU,
# 256 MiB, accel tcg: no KVM probe) boots the built-in guest once; ferry prints "booted NAME in
# X s", the time from virDomainCreateXML to the first answered guest-ping. Contestants boot
# interleaved (A, B, A, B, ...) so that the load of the machine hits both alike; the script
# prints each contestant's median and range, the ratio of the medians, and the load average
# before and after.
#
# A contestant is a ferry binary and a cache directory (its built guest):
#   --a BIN:CACHE  --b BIN:CACHE   (default A: the previous build, B: this tree's build)
# Usage: bench/boot.sh [--n N] [--a BIN:CACHE] [--b BIN:CACHE] [--vcpus N] [--memory SIZE]
# Hold /work/e2e.lock (or the like) around it on a shared machine: other guests skew it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prog=boot.sh
. "$here/bench/lib-boot.sh"
n=9
a="${FERRY_OLD:-/tmp/b-perf-old/ferry}:${FERRY_OLD_CACHE:-/var/tmp/ferry-old}"
b="${FERRY:-$here/build/ferry}:${FERRY_CACHE_DIR:-/var/cache/ferry}"
vcpus=1
memory=256MiB
while [ $# -gt 0 ]; do
	case "$1" in
	--n) n="$2"; shift 2 ;;
	--a) a="$2"; shift 2 ;;
	--b) b="$2"; shift 2 ;;
	--vcpus) vcpus="$2"; shift 2 ;;
	--memory) memory="$2"; shift 2 ;;
	-h|--help) sed -n '2,12p' "$0"; exit 0 ;;
	*) echo "boot.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done

IFS=: read -r abin acache <<<"$a"
IFS=: read -r bbin bcache <<<"$b"
for x in "$abin" "$bbin"; do [ -x "$x" ] || { echo "boot.sh: no ferry at '$x'" >&2; exit 2; }; done
boot_workdir
boot_plan "$work/plan.yaml" builtin "$vcpus" "$memory"
load0="$(boot_load)"
# one boot each first (not counted): page cache warm for both kernels and initramfs
boot_once "$abin" "$acache" "$work/plan.yaml" >/dev/null
boot_once "$bbin" "$bcache" "$work/plan.yaml" >/dev/null
: >"$work/a"; : >"$work/b"
for ((i = 1; i <= n; i++)); do
	boot_once "$abin" "$acache" "$work/plan.yaml" >>"$work/a"
	boot_once "$bbin" "$bcache" "$work/plan.yaml" >>"$work/b"
	printf 'boot %d/%d: A %s s, B %s s (load %s)\n' "$i" "$n" "$(tail -1 "$work/a")" \
		"$(tail -1 "$work/b")" "$(cut -d' ' -f1 /proc/loadavg)" >&2
done
read -r am amin amax < <(boot_stats <"$work/a")
read -r bm bmin bmax < <(boot_stats <"$work/b")
echo "boot to agent ready, $vcpus vCPU, $memory, TCG, n=$n (interleaved), seconds:"
printf '%-4s %-60s %7s %7s %7s\n' "" "ferry : cache" median min max
printf '%-4s %-60s %7s %7s %7s\n' A "$abin : $acache" "$am" "$amin" "$amax"
printf '%-4s %-60s %7s %7s %7s\n' B "$bbin : $bcache" "$bm" "$bmin" "$bmax"
awk -v a="$am" -v b="$bm" 'BEGIN {printf "B/A median: %.2f (B is %.2f s %s)\n", b/a, (a>b?a-b:b-a), (b<a?"faster":"slower")}'
echo "load average (1, 5, 15 min): before $load0, after $(boot_load)"
