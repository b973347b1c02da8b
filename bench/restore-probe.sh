#!/usr/bin/env bash
# Where a restored guest is slower (issue 29): a booted and a restored guest of the quickstart's
# VM (2 vCPUs, 512 MiB, TCG) alive at once, each idling in a null method, and the same probes
# alternating between them, each timed from the host, so both see the same host load: 20
# guest-pings through virsh, and guest-exec of a 32 MiB sha256, a shell loop of 100k steps and
# a 64 MiB dd to tmpfs, each from guest-exec to its exit seen by guest-exec-status.
# Usage: bench/restore-probe.sh [--reps N] [--ferry BIN]. Hold /work/e2e.lock around it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
reps=4
bin="${FERRY:-$here/build/ferry}"
while [ $# -gt 0 ]; do
	case "$1" in
	--reps) reps="$2"; shift 2 ;;
	--ferry) bin="$2"; shift 2 ;;
	-h|--help) sed -n '2,7p' "$0"; exit 0 ;;
	*) echo "restore-probe.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
case "$reps" in '' | *[!0-9]*) echo "restore-probe.sh: --reps takes a number" >&2; exit 2 ;; esac
work="$(mktemp -d /tmp/ferry-bench-restore-probe.XXXXXX)"
chmod 0755 "$work"
mkdir -m 0755 "$work/runs"
# the ferry runs' pids, one a line (start runs in a command substitution: a file, not a variable)
: >"$work/pids"
cleanup() {
	local p
	for p in $(cat "$work/pids"); do kill -INT "$p" 2>/dev/null || true; done
	for p in $(cat "$work/pids"); do
		while kill -0 "$p" 2>/dev/null; do sleep 0.2; done
	done
	rm -rf "$work"
}
trap cleanup EXIT
for k in boot restore; do
	cat >"$work/$k.yaml" <<PLAN
ferry: 1
name: restore-probe-$k
vms:
  tiny: {guest: builtin, vcpus: 2, memory: 512MiB, accel: tcg}
disks:
  ram: {kind: tmpfs, size: 64MiB}
datasets:
  one: {files: 1, size: 4KiB}
methods:
  idle: {type: null, duration: 10m}
run: {repeat: 1, vm: per-cell, timeout: 15m, fresh: $k}
PLAN
done
virsh_q() { virsh -c qemu:///system qemu-agent-command "$@"; }
# start KIND: the domain of a ferry run of KIND's plan, once its guest answers
start() {
	env FERRY_RUN_DIR="$work/runs" "$bin" run --verbose --results "$work/$1.json" \
		"$work/$1.yaml" >/dev/null 2>"$work/$1.log" &
	local pid=$!
	echo "$pid" >>"$work/pids"
	for _ in $(seq 1 1200); do
		grep -q 'booted\|restored' "$work/$1.log" && break
		kill -0 "$pid" 2>/dev/null || { cat "$work/$1.log" >&2; return 1; }
		sleep 0.5
	done
	virsh -c qemu:///system list --name | grep -- "-$pid-" | head -1
}
# run DOM CMD: host seconds from guest-exec to its exit
run() {
	local t0 j p st n=0
	t0=$(date +%s.%N)
	j=$(python3 -c 'import json,sys;print(json.dumps({"execute":"guest-exec","arguments":{"path":"/bin/sh","arg":["-c",sys.argv[1]],"capture-output":True}}))' "$2")
	p=$(virsh_q "$1" "$j" | python3 -c 'import json,sys;print(json.load(sys.stdin)["return"]["pid"])')
	# the status once, into a variable: the agent forgets a process once it said it exited
	while :; do
		st="$(virsh_q "$1" "{\"execute\":\"guest-exec-status\",\"arguments\":{\"pid\":$p}}")"
		case "$st" in *'"exited":true'*) break ;; esac
		n=$((n + 1))
		[ "$n" -lt 3000 ] || { echo "restore-probe.sh: guest command never ended" >&2; exit 1; }
		sleep 0.02
	done
	echo "$(date +%s.%N) - $t0" | bc
}
pings() {
	local t0
	t0=$(date +%s.%N)
	for _ in $(seq 20); do virsh_q "$1" '{"execute":"guest-ping"}' >/dev/null; done
	echo "$(date +%s.%N) - $t0" | bc
}
R="$(start restore)"
B="$(start boot)"
[ -n "$R" ] && [ -n "$B" ] || { echo "restore-probe.sh: a guest did not come up" >&2; exit 1; }
echo "booted $B, restored $R; seconds, timed from the host:"
printf '%-4s %-8s %8s %8s %8s %8s %6s\n' rep guest 20pings sha32M spin100k dd64M load
for ((i = 1; i <= reps; i++)); do
	for d in "$B" "$R"; do
		k=boot
		[ "$d" = "$R" ] && k=restore
		printf '%-4s %-8s %8.2f %8.2f %8.2f %8.2f %6s\n' "$i" "$k" "$(pings "$d")" \
			"$(run "$d" 'head -c 33554432 /dev/zero | sha256sum >/dev/null')" \
			"$(run "$d" 'i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done')" \
			"$(run "$d" 'dd if=/dev/zero of=/dev/shm/x bs=1M count=64 2>/dev/null; rm /dev/shm/x')" \
			"$(cut -d' ' -f1 /proc/loadavg)"
	done
done
