#!/usr/bin/env bash
# `ferry doctor --reap` touches only what ferry can prove it made: a domain with ferry's marker in
# its <metadata> whose ferry process is gone. A user's domain merely named like ferry's
# (ferry-<run id>-<n>) is left alone, and so is a marked domain of a running ferry. Runs against
# libvirt's test driver with a private node file, so no real domain is involved.
set -euo pipefail

ferry="${FERRY:?}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export FERRY_RUN_DIR="$tmp/runs"
mkdir "$FERRY_RUN_DIR"

dead="$(sh -c 'echo $$')" # a pid that has just exited
live=$$
ns=https://github.com/ferry/ferry/xmlns/run/1
domain() { # name [pid]: a test-driver domain, with ferry's marker when a pid is given
	echo "<domain type='test'><name>$1</name><memory>65536</memory><os><type>hvm</type></os>"
	[ -z "${2:-}" ] || echo "<metadata><ferry:run xmlns:ferry='$ns' id='20200101T000000-$2' pid='$2'/></metadata>"
	echo "</domain>"
}
{
	echo "<node>"
	domain "ferry-20200101T000000-$dead-0"        # the user's, named like ferry's
	domain "ferry-20200101T000000-$dead-1" "$dead" # ferry's, of a dead ferry
	domain "mine-$dead" "$dead"                    # ferry's (marked), whatever its name
	domain "ferry-20200101T000000-$live-0" "$live" # ferry's, of a running ferry
	echo "</node>"
} >"$tmp/node.xml"
uri="test://$tmp/node.xml"

"$ferry" doctor --connect "$uri" >"$tmp/out" 2>&1 || true
line="$(grep '^warn  leftovers' "$tmp/out")" || { echo "FAIL: no leftovers warning"; cat "$tmp/out"; exit 1; }
case "$line" in
*"2 stale ferry domains ("*"ferry-20200101T000000-$dead-1"*) ;;
*) echo "FAIL: stale domains: $line"; exit 1 ;;
esac
case "$line" in
*"mine-$dead"*) ;;
*) echo "FAIL: the marked domain mine-$dead is not listed: $line"; exit 1 ;;
esac
case "$line" in
*"ferry-20200101T000000-$dead-0"*) echo "FAIL: the user's domain is listed: $line"; exit 1 ;;
esac
echo "ok: doctor lists only the marked domains of the dead ferry"

"$ferry" doctor --reap --connect "$uri" >"$tmp/out" 2>&1 || true
line="$(grep 'leftovers' "$tmp/out")"
case "$line" in
*"reaped 2 stale domains and 0 run directories; 1 in use by running ferry"*) ;;
*) echo "FAIL: reap: $line"; exit 1 ;;
esac
echo "ok: --reap destroys the 2 marked domains of the dead ferry, not the user's look-alike"

# ferry's private networks (nic backend private): a namespace counts only with ferry's marked
# bridge inside and a dead owner; a tap only with ferry's alias and name. Root only; no address is
# put anywhere, the links stay down.
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || [ ! -c /dev/net/tun ]; then
	echo "ok: # SKIP private networks: needs root, ip and /dev/net/tun"
	exit 0
fi
stale_ns="ferry-20200101T000000-$dead-net"
alike_ns="ferry-20200101T000001-$dead-net" # named like ferry's, no marker
live_ns="ferry-20200101T000002-$live-net"
tap="fy${dead}n9"
alike_tap="fy${dead}n8" # ferry's name, no alias
net_cleanup() {
	kill "${stale_proc:-}" "${alike_proc:-}" 2>/dev/null || true
	for n in "$stale_ns" "$alike_ns" "$live_ns"; do ip netns del "$n" 2>/dev/null || true; done
	for t in "$tap" "$alike_tap"; do ip link del dev "$t" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap net_cleanup EXIT
bridge() { # namespace [alias]
	ip netns add "$1"
	ip -n "$1" link add ferrybr0 type bridge
	[ -z "${2:-}" ] || ip -n "$1" link set dev ferrybr0 alias "$2"
}
bridge "$stale_ns" "ferry-run 20200101T000000-$dead $dead"
bridge "$alike_ns"
bridge "$live_ns" "ferry-run 20200101T000002-$live $live"
ip tuntap add dev "$tap" mode tap
ip link set dev "$tap" alias "ferry-run 20200101T000000-$dead $dead"
ip tuntap add dev "$alike_tap" mode tap
# a process a dead run left in its namespace (share driver smb's smbd), and one in the unmarked
# namespace that is not ferry's to end
ip netns exec "$stale_ns" sleep 1000 &
stale_proc=$!
ip netns exec "$alike_ns" sleep 1000 &
alike_proc=$!

"$ferry" doctor --connect "$uri" >"$tmp/out" 2>&1 || true
line="$(grep '^warn  networks' "$tmp/out")" || { echo "FAIL: no networks warning"; cat "$tmp/out"; exit 1; }
echo "ok: doctor warns about the stale private network: $line"
"$ferry" doctor --reap --connect "$uri" >"$tmp/out" 2>&1 || true
grep -q 'networks.*reaped [1-9][0-9]* stale network namespace.* and [1-9][0-9]* tap' "$tmp/out" ||
	{ echo "FAIL: reap networks:"; cat "$tmp/out"; exit 1; }
[ ! -e "/run/netns/$stale_ns" ] || { echo "FAIL: $stale_ns is still there"; exit 1; }
! ip link show dev "$tap" >/dev/null 2>&1 || { echo "FAIL: tap $tap is still there"; exit 1; }
[ -e "/run/netns/$alike_ns" ] || { echo "FAIL: the unmarked $alike_ns was removed"; exit 1; }
[ -e "/run/netns/$live_ns" ] || { echo "FAIL: $live_ns of a running ferry was removed"; exit 1; }
ip link show dev "$alike_tap" >/dev/null 2>&1 || { echo "FAIL: the unmarked tap was removed"; exit 1; }
for _ in $(seq 1 50); do kill -0 "$stale_proc" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$stale_proc" 2>/dev/null || { echo "FAIL: the process in $stale_ns still runs"; exit 1; }
kill -0 "$alike_proc" 2>/dev/null || { echo "FAIL: the process in the unmarked namespace was killed"; exit 1; }
echo "ok: --reap removes the marked namespace and tap of the dead ferry only, and ends what ran in it"
