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
prog=boot-debian.sh
. "$here/bench/lib-boot.sh"
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

boot_workdir
for g in builtin debian; do
	boot_plan "$work/$g.yaml" "$g" "$vcpus" "$memory" ", boot_timeout: 5m"
done

load0="$(boot_load)"
# one boot each first (not counted): page cache warm for both kernels, initrds and the root image
boot_once "$bin" "" "$work/builtin.yaml" >/dev/null
boot_once "$bin" "" "$work/debian.yaml" >/dev/null
: >"$work/builtin"; : >"$work/debian"
for ((i = 1; i <= n; i++)); do
	boot_once "$bin" "" "$work/builtin.yaml" >>"$work/builtin"
	boot_once "$bin" "" "$work/debian.yaml" >>"$work/debian"
	printf 'boot %d/%d: built-in %s s, Debian %s s (load %s)\n' "$i" "$n" \
		"$(tail -1 "$work/builtin")" "$(tail -1 "$work/debian")" \
		"$(cut -d' ' -f1 /proc/loadavg)" >&2
done
read -r bm bmin bmax < <(boot_stats <"$work/builtin")
read -r dm dmin dmax < <(boot_stats <"$work/debian")
echo "boot to agent ready, $vcpus vCPU, $memory, TCG, n=$n (interleaved), seconds:"
printf '  built-in  median %s  range %s-%s  (%s)\n' "$bm" "$bmin" "$bmax" "$(paste -sd' ' "$work/builtin")"
printf '  Debian    median %s  range %s-%s  (%s)\n' "$dm" "$dmin" "$dmax" "$(paste -sd' ' "$work/debian")"
echo "  Debian / built-in (medians): $(awk -v a="$dm" -v b="$bm" 'BEGIN {printf "%.1f", a / b}')x"
echo "  load average (1, 5, 15 min): before $load0, after $(boot_load)"
