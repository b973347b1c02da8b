#!/usr/bin/env bash
# share driver smb (issue 26): every cell of run-smb.yaml passes verified (into the guest, copy
# and move within one share, to a second share of the same server, to a share of a second
# server; two smbd at once); the files the guest wrote on a share are nobody's on the host; the
# host's own network is untouched; and nothing is left behind (namespace, smbd, domain, mount,
# run directory), after a normal end and after SIGINT in the middle of a copy.
source "$(dirname "$0")/run-lib.sh"

if [ "$(id -u)" != 0 ] || [ ! -c /dev/net/tun ] || ! command -v ip >/dev/null; then
	echo "SKIP: nic backend private needs root, /dev/net/tun and ip (iproute2)"
	exit 77
fi
if [ ! -x /usr/sbin/smbd ]; then
	echo "SKIP: share driver smb needs smbd (Debian package samba)"
	exit 77
fi

host_net >"$work/net.before"

# what a run of ferry pid $1 may leave: its namespace, smbd serving its run directory, a mount
smb_left() {
	local pid="$1"
	ip netns list | grep -E -- "-$pid(\.[0-9]+)?-net( |$)" || true
	pgrep -af smbd | grep -F -- "$FERRY_RUN_DIR/" || true
	grep -F -- "$FERRY_RUN_DIR/" /proc/mounts || true
}

res="$work/smb.json"
"$ferry" run "$src/tests/e2e/plans/run-smb.yaml" --results "$res" 2>"$work/log" &
pid=$!
st=0
wait "$pid" || st=$?
cat "$work/log" >&2
[ "$st" = 0 ] || fail "ferry run exited with $st"
check_clean "$pid"
[ -z "$(smb_left "$pid")" ] || fail "left behind: $(smb_left "$pid")"
validate "$res"
for m in guest-copy guest-move guest-tar same-copy same-move share-copy share-move server-copy \
	server-move; do
	c="vm=vm,disk=ram,dataset=files,method=$m"
	[ "$(query "$res" "cells['$c']['status']")" = passed ] ||
		fail "$m did not pass: $(query "$res" "cells['$c'].get('errors')")"
	[ "$(query "$res" "all(x['integrity_ok'] for x in cells['$c']['runs'])")" = True ] ||
		fail "$m: not verified"
	[ "$(query "$res" "cells['$c']['runs'][0]['files']")" = 40 ] || fail "$m: not 40 files"
done
echo "ok: 9 smb cells passed verified (guest, same share, other share, other server; copy and move)"
host_net >"$work/net.after"
diff -u "$work/net.before" "$work/net.after" || fail "the host's own network changed"

# SIGINT mid-copy: wait until both servers run and the guest has written files on the second
# server's share, check their owner on the host, then interrupt
"$ferry" run "$src/tests/e2e/plans/run-smb-sigint.yaml" --results "$work/sigint.json" \
	2>"$work/log" &
pid=$!
seen=""
for _ in $(seq 1 3000); do
	kill -0 "$pid" 2>/dev/null || break
	dst="$(find "$FERRY_RUN_DIR" -path '*/smb/s1/a/*/dst' -type d 2>/dev/null | head -1 || true)"
	if [ -n "$dst" ] && [ "$(find "$dst" -type f 2>/dev/null | head -5 | wc -l)" -ge 5 ]; then
		seen="$dst"
		break
	fi
	sleep 0.1
done
[ -n "$seen" ] || { cat "$work/log" >&2; fail "the interrupted run never wrote on the second server"; }
n_smbd="$(pgrep -af smbd | grep -cF -- "$FERRY_RUN_DIR/" || true)"
[ "$n_smbd" -ge 2 ] || fail "expected two smbd servers (and their children), saw $n_smbd"
bad="$(find "$seen" -mindepth 1 \( -not -user nobody -o -perm /7022 \) -print 2>/dev/null | head -3)"
[ -z "$bad" ] || fail "files the guest wrote are not nobody's 0644/0755: $(ls -ln $bad)"
echo "ok: mid-copy, $n_smbd smbd processes of the run; what the guest wrote is nobody's, no setuid"
interrupt "$pid"
[ -z "$(smb_left "$pid")" ] || fail "left behind after SIGINT: $(smb_left "$pid")"
host_net >"$work/net.after"
diff -u "$work/net.before" "$work/net.after" || fail "the host's own network changed"
echo "ok: SIGINT mid-copy: exit 130, no namespace, smbd, mount, domain or run directory left"
