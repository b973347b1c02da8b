#!/usr/bin/env bash
# Boot to agent ready of the Debian guest, with the built-in guest's on the same runs for
# comparison: `ferry run --verbose` of a one-cell plan (null method, guest RAM, accel tcg: no KVM
# probe) boots one guest; ferry prints "booted NAME in X s", the time from virDomainCreateXML to
# the first answered guest-ping (for the Debian guest: its kernel, initrd, systemd up to
# qemu-guest-agent.service). The two boot interleaved (built-in, Debian, built-in, ...) so that
# the load of the machine hits both alike; the script prints each one's median and range, and
# the load average before and after.
#
# Usage: bench/boot-debian.sh [--n N] [--vcpus N] [--memory SIZE]
#   FERRY (default build/ferry) is the binary; FERRY_CACHE_DIR the cache with both guests built
#   (`ferry guest build` and `ferry guest build debian`).
# Hold /work/e2e.lock (or the like) around it on a shared machine: other guests skew it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${FERRY:-$here/build/ferry}"
n=5
vcpus=2
memory=1GiB
while [ $# -gt 0 ]; do
	case "$1" in
	--n) n="$2"; shift 2 ;;
	--vcpus) vcpus="$2"; shift 2 ;;
	--memory) memory="$2"; shift 2 ;;
	-h|--help) sed -n '2,13p' "$0"; exit 0 ;;
	*) echo "boot-debian.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
[ -x "$bin" ] || { echo "boot-debian.sh: no ferry at '$bin'" >&2; exit 2; }
"$bin" guest path debian >/dev/null || exit 2

work="$(mktemp -d /tmp/ferry-bench-boot-debian.XXXXXX)"
chmod 0755 "$work"
mkdir -m 0755 "$work/runs"
trap 'rm -rf "$work"' EXIT

for g in builtin debian; do
	cat >"$work/$g.yaml" <<PLAN
ferry: 1
name: bench-boot-$g
vms:
  g: {guest: $g, vcpus: $vcpus, memory: $memory, accel: tcg, boot_timeout: 5m}
disks:
  ram: {kind: tmpfs, size: 16MiB}
datasets:
  one: {files: 1, size: 4KiB}
methods:
  idle: {type: null, duration: 1ms}
run: {repeat: 1, vm: per-cell, timeout: 2m}
PLAN
done

boot_once() { # GUEST -> prints seconds
	local out
	out="$(FERRY_RUN_DIR="$work/runs" "$bin" run --verbose --results "$work/r.json" \
		"$work/$1.yaml" 2>&1 >/dev/null)" || {
		echo "boot-debian.sh: the $1 boot failed:" >&2; echo "$out" >&2; return 1; }
	rm -f "$work/r.json"
	sed -n 's/.*booted .* in \([0-9.]*\) s.*/\1/p' <<<"$out" | head -1
}

stats() { # numbers on stdin -> "median min max"
	sort -g | awk '{v[NR]=$1} END {m = NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2;
		printf "%.2f %.2f %.2f\n", m, v[1], v[NR]}'
}

load0="$(cut -d' ' -f1-3 /proc/loadavg)"
# one boot each first (not counted): page cache warm for both kernels, initrds and the root image
boot_once builtin >/dev/null
boot_once debian >/dev/null
: >"$work/builtin"; : >"$work/debian"
for ((i = 1; i <= n; i++)); do
	boot_once builtin >>"$work/builtin"
	boot_once debian >>"$work/debian"
	printf 'boot %d/%d: built-in %s s, Debian %s s (load %s)\n' "$i" "$n" \
		"$(tail -1 "$work/builtin")" "$(tail -1 "$work/debian")" \
		"$(cut -d' ' -f1 /proc/loadavg)" >&2
done
read -r bm bmin bmax < <(stats <"$work/builtin")
read -r dm dmin dmax < <(stats <"$work/debian")
echo "boot to agent ready, $vcpus vCPU, $memory, TCG, n=$n (interleaved), seconds:"
printf '  built-in  median %s  range %s-%s  (%s)\n' "$bm" "$bmin" "$bmax" "$(paste -sd' ' "$work/builtin")"
printf '  Debian    median %s  range %s-%s  (%s)\n' "$dm" "$dmin" "$dmax" "$(paste -sd' ' "$work/debian")"
echo "  Debian / built-in (medians): $(awk -v a="$dm" -v b="$bm" 'BEGIN {printf "%.1f", a / b}')x"
echo "  load average (1, 5, 15 min): before $load0, after $(cut -d' ' -f1-3 /proc/loadavg)"
