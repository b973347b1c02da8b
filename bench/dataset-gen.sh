#!/usr/bin/env bash
# Dataset generation throughput: `ferry dataset gen` side by side with `dd if=/dev/urandom` and
# `dd if=/dev/zero` writing the same bytes, in the same number of files, to the same directory.
#
# Cases: 1 x 1 GiB and 10,000 x 64 KiB (dd once per file, as a shell loop would).
# Fairness: before every measured write the previous output is removed, `sync` runs, (as root)
# the page cache is dropped, and then 1.5 GiB of memory is touched and freed; none of that is
# timed. The last step matters on VMs with virtio-balloon free page reporting (this one): memory
# freed for a few seconds goes back to the host and the next writer pays a host page fault per
# page it gets, which made whichever contestant ran after an idle pause 3-8x slower. Contestants run interleaved (ferry, urandom,
# zero, ferry, ...) and each figure is the median of --repeat runs, because this machine's write
# speed swings by several times from one run to the next.
# Two figures per contestant:
#   cached: until the last write() returns (ferry with --no-sync): what the generator costs;
#   synced: the same plus a `sync` (timed): bytes on the disk, where the disk sets the pace.
# ferry computes the SHA-256 manifest in the same pass; dd computes nothing.
#
# Usage: bench/dataset-gen.sh [--repeat N] [--dir DIR] [--ferry PATH] [--only big|small]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repeat=3
dir="${FERRY_BENCH_DIR:-/tmp/ferry-bench-dataset}"
ferry="${FERRY:-$here/build/ferry}"
only=""
while [ $# -gt 0 ]; do
	case "$1" in
	--repeat) repeat="$2"; shift 2 ;;
	--dir) dir="$2"; shift 2 ;;
	--ferry) ferry="$2"; shift 2 ;;
	--only) only="$2"; shift 2 ;;
	-h|--help) sed -n '2,18p' "$0"; exit 0 ;;
	*) echo "dataset-gen.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
[ -x "$ferry" ] || { echo "dataset-gen.sh: no ferry binary at '$ferry' (build first)" >&2; exit 2; }

mkdir -p "$dir"
out="$dir/out"
trap 'rm -rf "$out"' EXIT

quiesce() {
	rm -rf "$out"
	sync
	if [ "$(id -u)" = 0 ]; then echo 3 >/proc/sys/vm/drop_caches; fi
	mkdir -p "$out"
	/usr/bin/python3 -c 'b = bytearray(b"\x01") * (1536 << 20)' 
}

# contestant files size_kib: write into $out
write_ferry() { rm -rf "$out"; "$ferry" dataset gen --files "$1" --size "$2KiB" --dir "$out" --no-sync >/dev/null; }
write_dd() { # source files size_kib
	local src="$1" n="$2" kib="$3" i
	if [ "$n" = 1 ]; then
		dd if="$src" of="$out/f0000" bs=1M count=$((kib / 1024)) status=none
	else
		for ((i = 0; i < n; i++)); do
			dd if="$src" of="$out/f$i" bs="${kib}K" count=1 status=none
		done
	fi
}

now() { date +%s%N; }

declare -A cached synced
run_case() { # name files size_kib
	local name="$1" n="$2" kib="$3" r c t0 t1 t2
	for ((r = 1; r <= repeat; r++)); do
		for c in ferry urandom zero; do
			quiesce
			t0=$(now)
			case "$c" in
			ferry) write_ferry "$n" "$kib" ;;
			urandom) write_dd /dev/urandom "$n" "$kib" ;;
			zero) write_dd /dev/zero "$n" "$kib" ;;
			esac
			t1=$(now)
			sync
			t2=$(now)
			cached[$name.$c]+="$((t1 - t0)) "
			synced[$name.$c]+="$((t2 - t0)) "
		done
	done
}

median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
mbs() { awk -v b="$1" -v ns="$2" 'BEGIN {printf "%.0f", b / 1e6 / (ns / 1e9)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

report() { # name files size_kib label
	local name="$1" kib="$3" bytes=$(($2 * $3 * 1024)) label="$4" kind c
	for kind in cached synced; do
		local -A v=()
		for c in ferry urandom zero; do
			local -n arr="$kind"
			v[$c]=$(mbs "$bytes" "$(echo "${arr[$name.$c]}" | median)")
		done
		printf '%-22s %-7s %9s %9s %9s %14s %11s\n' "$label" "$kind" "${v[ferry]}" \
			"${v[urandom]}" "${v[zero]}" "$(ratio "${v[ferry]}" "${v[urandom]}")" \
			"$(ratio "${v[ferry]}" "${v[zero]}")"
	done
}

echo "ferry: $("$ferry" --version); dir: $dir ($(df -T "$dir" | awk 'NR==2 {print $2}')); repeat: $repeat"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
# ferry hashes every byte (SHA-256) while it writes: that rate is its ceiling, whatever the disk
sha=$(openssl speed -evp sha256 -bytes 1048576 -seconds 1 2>/dev/null | awk '/^sha256/ {print $2}')
echo "SHA-256 ceiling (openssl speed, 1 MiB blocks): ${sha%k} kB/s"
[ -z "$only" ] || [ "$only" = big ] && run_case big 1 $((1024 * 1024))
[ -z "$only" ] || [ "$only" = small ] && run_case small 10000 64
printf '\n%-22s %-7s %9s %9s %9s %14s %11s\n' case timing "ferry" "urandom" "zero" \
	"ferry/urandom" "ferry/zero"
printf '%-22s %-7s %9s %9s %9s %14s %11s\n' "" "" "MB/s" "MB/s" "MB/s" "(goal >= 5)" "(>= 0.7)"
[ -z "$only" ] || [ "$only" = big ] && report big 1 $((1024 * 1024)) "1 x 1 GiB"
[ -z "$only" ] || [ "$only" = small ] && report small 10000 64 "10000 x 64 KiB"
exit 0
