#!/usr/bin/env bash
# The network method on ferry's private network (nic backend private): a cell with 4 queue pairs
# and 4 TCP streams passes verified, pull and push; the guest's per-queue counters show more than
# one queue carried traffic; the host's own network is untouched while the private network is up
# and in the middle of a transfer (no new address or route in the root namespace); and nothing is
# left behind: no namespace, tap, bridge, domain or process, after a normal end and after SIGINT in
# the middle of a transfer.
source "$(dirname "$0")/run-lib.sh"

if [ "$(id -u)" != 0 ] || [ ! -c /dev/net/tun ] || ! command -v ip >/dev/null; then
	echo "SKIP: nic backend private needs root, /dev/net/tun and ip (iproute2)"
	exit 77
fi

# what the host's own network looks like (addresses and routes in the root namespace)
host_net >"$work/net.before"

# leftovers of ferry pid $1: its namespace (ferry-<run id>-net, the run id ends in -PID), its taps
# (fyPIDnK, in the root namespace when a move failed), QEMU processes of its run directory
net_left() {
	local pid="$1"
	ip netns list | grep -E -- "-$pid(\.[0-9]+)?-net( |$)" || true
	ip -o link show | grep -E -- "^[0-9]+: fy${pid}n[0-9]+[:@]" || true
	pgrep -af qemu-system | grep -F -- "$FERRY_RUN_DIR/" || true
}

# wait_network PID: until ferry pid PID's private network is up (its namespace exists and holds
# an IPv4 address: the addresses are given before the guest boots and kept until the run ends, so
# the window is seconds wide; a connection of the small first plan lasts milliseconds)
wait_network() {
	local pid="$1" ns=""
	for _ in $(seq 1 3000); do
		kill -0 "$pid" 2>/dev/null || return 1
		ns="$(ip netns list | grep -oE -- "ferry-[^ ]*-$pid-net" | head -1 || true)"
		if [ -n "$ns" ] && ip -n "$ns" -o -4 addr show 2>/dev/null | grep -q inet; then
			echo "$ns"
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# wait_transfer PID: until a TCP connection of ferry pid PID's private network is established
# (the transfer is under way; the SIGINT plan moves 600 files one by one, so it lasts)
wait_transfer() {
	local pid="$1" ns=""
	for _ in $(seq 1 1500); do
		kill -0 "$pid" 2>/dev/null || return 1
		ns="$(ip netns list | grep -oE -- "ferry-[^ ]*-$pid-net" | head -1 || true)"
		if [ -n "$ns" ] && [ -n "$(ip netns exec "$ns" ss -Htn state established 2>/dev/null)" ]; then
			echo "$ns"
			return 0
		fi
		sleep 0.2
	done
	return 1
}

res="$work/network.json"
"$ferry" run "$src/tests/e2e/plans/run-network.yaml" --results "$res" 2>"$work/log" &
pid=$!
if ns="$(wait_network "$pid")"; then
	host_net >"$work/net.during"
	ip -n "$ns" -br addr show >&2 || true
	diff -u "$work/net.before" "$work/net.during" ||
		fail "the host's own network changed during the run (namespace $ns)"
	echo "ok: private network $ns is up; the root namespace's addresses and routes are unchanged"
else
	wait "$pid" || true
	cat "$work/log" >&2
	fail "ferry's private network was never seen up (namespace with an address)"
fi
st=0
wait "$pid" || st=$?
cat "$work/log" >&2
[ "$st" = 0 ] || fail "ferry run exited with $st"
check_clean "$pid"
[ -z "$(net_left "$pid")" ] || fail "left behind: $(net_left "$pid")"
validate "$res"
for m in pull-4 push-4; do
	c="vm=q4,disk=ram,dataset=files,method=$m"
	[ "$(query "$res" "cells['$c']['status']")" = passed ] || fail "$m did not pass"
	[ "$(query "$res" "all(x['integrity_ok'] for x in cells['$c']['runs'])")" = True ] ||
		fail "$m: not verified"
	nic="$(query "$res" "cells['$c']['observed']['nic']")"
	echo "ok: $m passed verified; the guest's NIC: $nic"
	[ "$(query "$res" "cells['$c']['observed']['nic']['queues_enabled']")" = 4 ] ||
		fail "$m: the guest did not enable 4 queue pairs: $nic"
	used="$(query "$res" "cells['$c']['observed']['nic']['queues_used']")"
	[ "$used" -gt 1 ] || fail "$m: only $used queue carried traffic: $nic"
done
echo "ok: more than one queue carried traffic in both directions' cells; nothing left behind"

# SIGINT in the middle of a transfer: ferry cleans up and exits 130, nothing is left
"$ferry" run "$src/tests/e2e/plans/run-network-sigint.yaml" --results "$work/sigint.json" \
	2>"$work/log" &
pid=$!
ns="$(wait_transfer "$pid")" || { cat "$work/log" >&2; fail "the interrupted run never transferred"; }
host_net >"$work/net.during"
diff -u "$work/net.before" "$work/net.during" ||
	fail "the host's own network changed in the middle of a transfer (namespace $ns)"
echo "ok: mid-transfer in namespace $ns, the root namespace's addresses and routes are unchanged"
interrupt "$pid"
[ -z "$(net_left "$pid")" ] || fail "left behind after SIGINT: $(net_left "$pid")"
host_net >"$work/net.after"
diff -u "$work/net.before" "$work/net.after" || fail "the host's own network changed"
echo "ok: SIGINT mid-transfer (namespace $ns): exit 130, no namespace, tap, domain or process left"
