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
