#!/usr/bin/env bash
# Boot to agent ready: `ferry run --verbose` of a one-cell plan (null method, guest RAM, 1 vCPU,
# 256 MiB, accel tcg: no KVM probe) boots the built-in guest once; ferry prints "booted NAME in
# X s", the time from virDomainCreateXML to the first answered guest-ping. Contestants boot
# interleaved (A, B, A, B, ...) so that the load of the machine hits both alike; the script
# prints each contestant's median and range and the ratio of the medians.
#
# A contestant is a ferry binary and a cache directory (its built guest):
#   --a BIN:CACHE  --b BIN:CACHE   (default A: the previous build, B: this tree's build)
# Usage: bench/boot.sh [--n N] [--a BIN:CACHE] [--b BIN:CACHE] [--vcpus N] [--memory SIZE]
#                      [--plan-extra YAML-LINES]
# Hold /work/e2e.lock (or the like) around it on a shared machine: other guests skew it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
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
	-h|--help) sed -n '2,16p' "$0"; exit 0 ;;
	*) echo "boot.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done

work="$(mktemp -d /tmp/ferry-bench-boot.XXXXXX)"
chmod 0755 "$work"
mkdir -m 0755 "$work/runs"
trap 'rm -rf "$work"' EXIT

cat >"$work/plan.yaml" <<PLAN
ferry: 1
name: bench-boot
vms:
  tiny: {guest: builtin, vcpus: $vcpus, memory: $memory, accel: tcg}
disks:
  ram: {kind: tmpfs, size: 16MiB}
datasets:
  one: {files: 1, size: 4KiB}
methods:
  idle: {type: null, duration: 1ms}
run: {repeat: 1, vm: per-cell, timeout: 2m}
PLAN

boot_once() { # BIN CACHE -> prints seconds
	local bin="$1" cache="$2" out
	out="$(FERRY_RUN_DIR="$work/runs" FERRY_CACHE_DIR="$cache" "$bin" run --verbose \
		--results "$work/r.json" "$work/plan.yaml" 2>&1 >/dev/null)" || {
		echo "boot.sh: $bin failed:" >&2; echo "$out" >&2; return 1; }
	rm -f "$work/r.json"
	sed -n 's/.*booted .* in \([0-9.]*\) s.*/\1/p' <<<"$out" | head -1
}

stats() { # numbers on stdin -> "median min max"
	sort -g | awk '{v[NR]=$1} END {m = NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2;
		printf "%.2f %.2f %.2f\n", m, v[1], v[NR]}'
}

IFS=: read -r abin acache <<<"$a"
IFS=: read -r bbin bcache <<<"$b"
for x in "$abin" "$bbin"; do [ -x "$x" ] || { echo "boot.sh: no ferry at '$x'" >&2; exit 2; }; done
# one boot each first (not counted): page cache warm for both kernels and initramfs
boot_once "$abin" "$acache" >/dev/null
boot_once "$bbin" "$bcache" >/dev/null
: >"$work/a"; : >"$work/b"
for ((i = 1; i <= n; i++)); do
	boot_once "$abin" "$acache" >>"$work/a"
	boot_once "$bbin" "$bcache" >>"$work/b"
	printf 'boot %d/%d: A %s s, B %s s\n' "$i" "$n" "$(tail -1 "$work/a")" "$(tail -1 "$work/b")" >&2
done
read -r am amin amax < <(stats <"$work/a")
read -r bm bmin bmax < <(stats <"$work/b")
echo "boot to agent ready, $vcpus vCPU, $memory, TCG, n=$n (interleaved), seconds:"
printf '%-4s %-60s %7s %7s %7s\n' "" "ferry : cache" median min max
printf '%-4s %-60s %7s %7s %7s\n' A "$abin : $acache" "$am" "$amin" "$amax"
printf '%-4s %-60s %7s %7s %7s\n' B "$bbin : $bcache" "$bm" "$bmin" "$bmax"
awk -v a="$am" -v b="$bm" 'BEGIN {printf "B/A median: %.2f (B is %.2f s %s)\n", b/a, (a>b?a-b:b-a), (b<a?"faster":"slower")}'
