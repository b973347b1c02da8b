#!/bin/bash
# e2e: ferry on a "remote" libvirt host. The test's own TCP forwarder (socat on 127.0.0.1 only,
# for this test alone) carries the libvirt remote protocol to this machine's libvirtd, so that
# ferry takes the remote path for qemu+tcp://127.0.0.1:PORT/system: every file a domain needs
# is a volume of the 'ferry' storage pool, uploaded through libvirt. Checks: while a domain runs,
# its XML names no path under ferry's run directory or cache; agent-file, channel, disk-image and
# block pass verified; share is skipped with the remote reason; nothing of the run is left (no
# domain, no run volume; the pool keeps only the cached guest volumes).
source "$(dirname "$0")/run-lib.sh"

command -v socat >/dev/null || { echo "SKIP: socat is not installed (scripts/setup.sh)"; exit 77; }
port="$(free_port)"
socat TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:/var/run/libvirt/libvirt-sock &
fwd=$!
trap 'kill $fwd 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 50); do virsh -c "qemu+tcp://127.0.0.1:$port/system" version >/dev/null 2>&1 && break; sleep 0.1; done
uri="qemu+tcp://127.0.0.1:$port/system"
cache="$("$ferry" guest info 2>/dev/null | sed -n 's/^dir: *//p' | head -1)"

# the domain XML of the run, while it runs
"$ferry" run --connect "$uri" --results "$work/r.json" "$src/tests/e2e/plans/run-remote.yaml" \
	2>"$work/log" &
pid=$!
seen=0
while kill -0 $pid 2>/dev/null; do
	for d in $(virsh -c qemu:///system list --name | grep -- "-$pid-" || true); do
		virsh -c qemu:///system dumpxml "$d" >"$work/dom.xml" 2>/dev/null || continue
		seen=1
		if grep -F -e "$FERRY_RUN_DIR" -e "${cache:-/nonexistent}" -e "$HOME/.cache/ferry" \
			-e /var/cache/ferry "$work/dom.xml"; then
			kill $pid
			fail "domain $d names a path of ferry's own filesystem"
		fi
		grep -q "/var/lib/libvirt/images/ferry/" "$work/dom.xml" ||
			fail "domain $d does not boot from the ferry pool"
	done
	sleep 0.5
done
st=0
wait $pid || st=$?
cat "$work/log" >&2
[ "$st" = 0 ] || fail "ferry run over $uri exited with $st"
[ "$seen" = 1 ] || fail "no domain of the run was seen"
check_clean "$pid"
validate "$work/r.json"
for m in agent channel image block; do
	id="vm=tiny,disk=raw,dataset=large,method=$m"
	[ "$(query "$work/r.json" "cells['$id']['status']")" = passed ] || fail "$id did not pass"
done
query "$work/r.json" "cells['vm=tiny,disk=raw,dataset=large,method=share']['skip_reason']" |
	grep -q "remote libvirt host" || fail "share was not skipped for the remote host"
query "$work/r.json" "r['provenance']['host_kernel']" | grep -q "remote libvirt host" ||
	fail "the provenance does not describe the remote host"
left="$(virsh -c qemu:///system vol-list ferry | grep -- "ferry-.*-$pid-" || true)"
[ -z "$left" ] || fail "run volumes left in pool 'ferry': $left"
echo "ok: remote run over $uri: 4 methods passed, share skipped, no path of ferry's in the domain XML, nothing left"
