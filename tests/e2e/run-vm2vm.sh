#!/usr/bin/env bash
# The vm2vm method end to end under TCG (tests/e2e/plans/run-vm2vm.yaml): study 003 scaled down,
# a sender guest copies 50 files of 1 KiB into a receiver guest on ferry's private network, tar
# over ssh and scp, the receiver's NIC with 1 and 4 queue pairs. Every cell passes with its run
# verified in the receiver (all 50 files, all 51,200 bytes), each receiver configuration booted
# with its own sender (2 boots of a pair), and each guest's NIC enabled the queue pairs its own
# vm entry asked for (receiver 1 or 4, sender 1). Nothing is left behind: no domain, namespace,
# tap or QEMU, no run directory (the keys live in it), the host's own addresses and routes
# unchanged; and the same after SIGINT in the middle of a long scp between the guests.
source "$(dirname "$0")/run-lib.sh"
if [ "$(id -u)" != 0 ] || [ ! -c /dev/net/tun ] || ! command -v ip >/dev/null; then
	echo "SKIP: nic backend private needs root, /dev/net/tun and ip (iproute2)"
	exit 77
fi
command -v ssh-keygen >/dev/null || { echo "SKIP: the host has no ssh-keygen (openssh-client)"; exit 77; }

# the built-in guest of this binary's key (dbclient in it): `current` in a shared cache may name
# a guest an older ferry built
"$ferry" guest build >/dev/null 2>&1 || fail "ferry guest build failed"

host_net >"$work/net.before"
# leftovers of ferry pid $1: its namespace, its taps, QEMU processes of its run directory
net_left() {
	local pid="$1"
	ip netns list | grep -E -- "-$pid(\.[0-9]+)?-net( |$)" || true
	ip -o link show | grep -E -- "^[0-9]+: fy${pid}n[0-9]+[:@]" || true
	pgrep -af qemu-system | grep -F -- "$FERRY_RUN_DIR/" || true
}

res="$work/results.json"
"$ferry" run "$src/tests/e2e/plans/run-vm2vm.yaml" --results "$res" --verbose 2>"$work/log" &
pid=$!
st=0
wait "$pid" || st=$?
cat "$work/log" >&2
[ "$st" = 0 ] || fail "ferry run exited with $st"
check_clean "$pid"
[ -z "$(net_left "$pid")" ] || fail "left behind: $(net_left "$pid")"
host_net >"$work/net.after"
diff -u "$work/net.before" "$work/net.after" || fail "the host's own network changed"
validate "$res"

bad="$(query "$res" '[(i, c["status"], c.get("skip_reason"), c.get("errors")) for i, c in cells.items() if c["status"] != "passed" or not (
	len([x for x in c["runs"] if not x["warmup"] and x["integrity_ok"]]) == 1)]')"
[ "$bad" = "[]" ] || fail "cells not passed with a verified run: $bad"
[ "$(query "$res" 'len(r["cells"])')" = 4 ] || fail "expected 4 cells"
[ "$(query "$res" '{(c["runs"][0]["files"], c["runs"][0]["bytes"]) for c in r["cells"]} == {(50, 51200)}')" = True ] ||
	fail "not 50 files and 51200 bytes in every cell: $(query "$res" '[(c["runs"][0]["files"], c["runs"][0]["bytes"]) for c in r["cells"]]')"
# one pair per receiver configuration (vm: shared): the boot line names the sender
grep -q "2 boots" "$work/log" || fail "expected 2 boots (one pair per receiver)"
[ "$(grep -c 'booted .*|peer=sender)' "$work/log")" = 2 ] || fail "expected both boots with the sender"
# each guest's NIC as its own vm entry asked
for q in 1 4; do
	for m in tar scp; do
		c="vm=recv$q,disk=ram,dataset=small,method=$m"
		obs="$(query "$res" "cells['$c']['observed']")"
		[ "$(query "$res" "cells['$c']['observed']['receiver']['queues_enabled']")" = "$q" ] ||
			fail "$c: the receiver did not enable $q queue pairs: $obs"
		[ "$(query "$res" "cells['$c']['observed']['sender']['queues_enabled']")" = 1 ] ||
			fail "$c: the sender did not enable 1 queue pair: $obs"
	done
done
"$py" - "$res" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("| cell | transfer s | total s |")
for c in r["cells"]:
    x = [x for x in c["runs"] if not x["warmup"]][0]
    print("| %s | %.3f | %.3f |" % (c["id"], x["phases"]["transfer"], x["total"]))
PY
echo "ok: tar and scp from the sender into receivers with 1 and 4 queues, all verified; nothing left behind"

# SIGINT in the middle of a long scp between the guests: the transfer is under way once the
# taps in the run's namespace carried more than 100 KB (staging goes through the agent, not the
# network; the ssh handshake is a few KB)
"$ferry" run "$src/tests/e2e/plans/run-vm2vm-sigint.yaml" --results "$work/sigint.json" \
	2>"$work/log" &
pid=$!
moved=0
for _ in $(seq 1 1500); do
	kill -0 "$pid" 2>/dev/null || break
	ns="$(ip netns list | grep -oE -- "ferry-[^ ]*-$pid-net" | head -1 || true)"
	if [ -n "$ns" ]; then
		moved="$(ip -n "$ns" -j -s link show 2>/dev/null | "$py" -c '
import json, sys
print(sum(l["stats64"]["tx"]["bytes"] for l in json.load(sys.stdin) if l["ifname"].startswith("fy")))' 2>/dev/null || echo 0)"
		[ "$moved" -gt 100000 ] && break
	fi
	sleep 0.2
done
[ "$moved" -gt 100000 ] || { wait "$pid" || true; cat "$work/log" >&2; fail "the interrupted run never transferred"; }
interrupt "$pid"
[ -z "$(net_left "$pid")" ] || fail "left behind after SIGINT: $(net_left "$pid")"
host_net >"$work/net.after"
diff -u "$work/net.before" "$work/net.after" || fail "the host's own network changed"
echo "ok: SIGINT mid-transfer ($moved bytes through the taps): exit 130, no domain, namespace, tap, process or key left"
