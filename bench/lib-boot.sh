# Shared by bench/boot.sh and bench/boot-debian.sh (sourced, not run): a work directory, the
# one-cell plan, one boot through `ferry run --verbose`, median and range.
# The caller sets `prog` (its name, for messages) before sourcing.

# boot_workdir: $work, a fresh directory QEMU (libvirt-qemu) can traverse, removed on exit, with
# $work/runs as FERRY_RUN_DIR.
boot_workdir() {
	work="$(mktemp -d "/tmp/ferry-bench-$prog.XXXXXX")"
	chmod 0755 "$work"
	mkdir -m 0755 "$work/runs"
	trap 'rm -rf "$work"' EXIT
}

# boot_plan FILE GUEST VCPUS MEMORY [VM-KEYS]: a one-cell plan (null method, guest RAM, accel
# tcg: no KVM probe) that boots one guest; VM-KEYS are more keys of the vm entry (", k: v").
boot_plan() {
	cat >"$1" <<PLAN
ferry: 1
name: bench-boot-$2
vms:
  g: {guest: $2, vcpus: $3, memory: $4, accel: tcg${5:-}}
disks:
  ram: {kind: tmpfs, size: 16MiB}
datasets:
  one: {files: 1, size: 4KiB}
methods:
  idle: {type: null, duration: 1ms}
run: {repeat: 1, vm: per-cell, timeout: 2m}
PLAN
}

# boot_once BIN CACHE PLAN -> prints the seconds of "booted NAME in X s" (CACHE empty: the
# environment's FERRY_CACHE_DIR or ferry's default)
boot_once() {
	local bin="$1" cache="$2" plan="$3" out
	out="$(env FERRY_RUN_DIR="$work/runs" ${cache:+FERRY_CACHE_DIR="$cache"} "$bin" run --verbose \
		--results "$work/r.json" "$plan" 2>&1 >/dev/null)" || {
		echo "$prog: $bin failed on $plan:" >&2; echo "$out" >&2; return 1; }
	rm -f "$work/r.json"
	sed -n 's/.*booted .* in \([0-9.]*\) s.*/\1/p' <<<"$out" | head -1
}

# boot_stats: numbers on stdin -> "median min max"
boot_stats() {
	sort -g | awk '{v[NR]=$1} END {m = NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2;
		printf "%.2f %.2f %.2f\n", m, v[1], v[NR]}'
}

# boot_load: the load averages (1, 5, 15 min)
boot_load() {
	cut -d' ' -f1-3 /proc/loadavg
}

# quickstart_plan FILE RUN: the quickstart's vms, disks, datasets, methods and matrix, unchanged,
# with the run section RUN (a flow mapping, e.g. "{boots: {min: 3, max: 3}, fresh: boot}") and no
# report section; validated. $here is the checkout.
quickstart_plan() {
	{ sed '/^run:/,$d; /^report:/,$d' "$here/plans/quickstart.yaml"
	  printf 'run: %s\n' "$2"; } >"$1"
	"${bin:-$here/build/ferry}" validate "$1" >/dev/null
}
