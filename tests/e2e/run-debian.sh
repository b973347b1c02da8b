#!/usr/bin/env bash
# The Debian guest end to end under TCG: `ferry guest build debian` (debootstrap from the host's
# apt mirror; cached in ferry's cache, so only the first run of the suite on a machine builds),
# then one `ferry run` of tests/e2e/plans/debian.yaml: agent-file, disk-image, network push
# (plain and packed), channel and ssh (scp, rsync, tar over ssh into Debian's OpenSSH sshd) on
# the Debian guest, and the same root image booted as a user's
# image by direct kernel boot with a NoCloud seed attached. Every cell passes with its run
# verified in the guest and records which guest ran it (Debian, GNU userland, systemd, dash),
# but the network pull, which is skipped with the reason (on QEMU user networking the guest
# reaches nothing of the host); the provenance of this Debian-only plan names no built-in guest;
# every ssh cell ran sshd (not dropbear) and its cleanup checked in the guest that the server's
# process, its listener and every key file it pushed are gone (observed.ssh), and the host keeps
# no ssh client or key of the run; nothing is left behind. Then the same image with
# its agent masked: the boot fails within boot_timeout saying that nothing opened the agent's
# port, with the console's tail. Then run.fresh restore on the Debian guest (a guest per run,
# restored from one saved state onto an overlay of its own). Then vm2vm tool smb: a built-in
# sender copies per file onto the Debian receiver's own smbd share on ferry's private network
# (tests/e2e/plans/debian-v2v.yaml). Then share driver smb served_by guest: the host's smbclient
# copies onto the Debian guest's own smbd share, per file and as one tar (study 000's
# Copy-Item-Smb and -Compress; tests/e2e/plans/debian-smb-push.yaml), and a run interrupted with
# SIGINT mid-copy leaves nothing. FERRY_E2E_DEBIAN_EVERY=1 also runs
# tests/e2e/plans/debian-every.yaml (every method, 30 cells, 10 more boots).
source "$(dirname "$0")/run-lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: building the Debian guest needs root (debootstrap, chroot)"
	exit 77
fi
if ! command -v debootstrap >/dev/null; then
	echo "SKIP: debootstrap is not installed (scripts/setup.sh installs it)"
	exit 77
fi
for p in ssh scp ssh-keygen rsync; do
	command -v "$p" >/dev/null || { echo "SKIP: the host has no $p (scripts/setup.sh installs it)"; exit 77; }
done
"$ferry" guest build debian >"$work/build.out" 2>"$work/build.log" || {
	cat "$work/build.log" >&2
	fail "ferry guest build debian failed"
}
cat "$work/build.log" >&2
paths="$("$ferry" guest path debian)"
export FERRY_DEBIAN_KERNEL="$(sed -n 1p <<<"$paths")"
export FERRY_DEBIAN_INITRD="$(sed -n 2p <<<"$paths")"
export FERRY_DEBIAN_ROOT="$(sed -n 3p <<<"$paths")"
# the Debian guest has no cloud-init: the seed only has to be attached without harm
export FERRY_DEBIAN_SEED="$work/user-data"
printf '#cloud-config\nruncmd:\n  - [systemctl, start, qemu-guest-agent]\n' >"$FERRY_DEBIAN_SEED"

res="$work/results.json"
run_ferry 0 "$src/tests/e2e/plans/debian.yaml" --results "$res" --junit "$work/junit.xml" --verbose
validate "$res"

# all 10 cells but the pull passed, each with its one measured run verified
pull="vm=deb,disk=ram,dataset=mixed,method=net-pull"
bad="$(query "$res" '[i for i, c in cells.items() if i != "'"$pull"'" and (c["status"] != "passed" or not (
	len([x for x in c["runs"] if not x["warmup"] and x["integrity_ok"]]) == 1))]')"
[ "$bad" = "[]" ] || fail "cells not passed with a verified run: $bad"
n="$(query "$res" 'len(r["cells"])')"
[ "$n" = 10 ] || fail "expected 10 cells, got $n"
# the pull did not run: the Debian guest on user networking reaches nothing of the host
got="$(query "$res" '(cells["'"$pull"'"]["status"], len(cells["'"$pull"'"]["runs"]))')"
[ "$got" = "('skipped', 0)" ] || fail "network pull on user networking: $got"
reason="$(query "$res" 'cells["'"$pull"'"]["skip_reason"]')"
case "$reason" in
*"reaches nothing of the host"*"use 'direction: push'"*"put vm 'deb' on ferry's private network"*) ;;
*) fail "network pull skip reason: $reason" ;;
esac
# the bytes are the dataset's (40 x 32 KiB) and the tar's headers for the plain push
bytes="$(query "$res" 'cells["vm=deb,disk=ram,dataset=mixed,method=net-push"]["runs"][0]["bytes"]')"
[ "$bytes" -ge 1310720 ] || fail "network push bytes: $bytes"
# ssh into OpenSSH: every tool moved the dataset's 40 files and their bytes into the guest, where
# they were verified; the server was sshd, and the cleanup found it and its keys gone
for m in ssh-scp ssh-rsync ssh-tar; do
	id="vm=deb,disk=ram,dataset=mixed,method=$m"
	got="$(query "$res" "(lambda x, o: (x['files'], x['bytes'] >= 1310720, x['integrity_ok'], o.get('server'), o.get('cleanup_checked')))(cells['$id']['runs'][0], (cells['$id'].get('observed') or {}).get('ssh') or {})")"
	[ "$got" = "(40, True, True, 'sshd', True)" ] || fail "$m: (files, bytes, verified, server, cleanup checked) = $got"
done
# (every ssh client of the run names its key inside the run directory: this test's own, so that
# another run's ssh on the host does not count)
left="$(pgrep -af -- "$FERRY_RUN_DIR/" || true)"
[ -z "$left" ] || fail "ssh processes of the run are left: $left"
grep -q "<testsuites" "$work/junit.xml" || fail "no JUnit written"
grep -q "4 boots" "$work/log" || fail "expected 4 boots (one per boot configuration)"
# every cell says which guest ran it: Debian's os-release, GNU userland, systemd, dash
for id in "vm=deb,disk=ram,dataset=mixed,method=agent-tgz" "vm=user,disk=ram,dataset=mixed,method=agent-tgz"; do
	g="$(query "$res" "(lambda g: (g['os'].startswith('Debian GNU/Linux 12'), g['userland'], g['init'], g['sh']))(cells['$id']['observed']['guest'])")"
	[ "$g" = "(True, 'gnu', 'systemd', '/usr/bin/dash')" ] || fail "$id: observed guest $g"
done
# a Debian-only plan names no built-in guest in its provenance
prov="$(query "$res" '(r["provenance"]["guest_kernel_sha256"], r["provenance"]["guest_initramfs_sha256"])')"
[ "$prov" = "(None, None)" ] || fail "provenance names the built-in guest: $prov"

# a user image whose agent never starts: the boot fails within boot_timeout saying what to check
res2="$work/noagent.json"
run_ferry 3 "$src/tests/e2e/plans/debian-noagent.yaml" --results "$res2"
msg="$(query "$res2" 'cells["vm=noagent,disk=ram,dataset=one,method=agent"]["errors"][0]["message"]')"
case "$msg" in
*"did not answer within 30000 ms"*"nothing in the guest opened the agent's virtio port org.qemu.guest_agent.0"*"serial console"*) ;;
*) fail "no-agent boot error does not say what to check: $msg" ;;
esac

# run.fresh restore on an image-booted guest: both runs in guests restored from one saved state
# (each on an overlay of its own over the saved root), verified, still Debian with systemd
res4="$work/restore.json"
run_ferry 0 "$src/tests/e2e/plans/debian-restore.yaml" --results "$res4" --verbose
validate "$res4"
id="vm=deb,disk=ram,dataset=mixed,method=agent-tgz"
got="$(query "$res4" "[(x['fresh'], x['integrity_ok']) for x in cells['$id']['runs']]")"
[ "$got" = "[('restore', True), ('restore', True)]" ] || fail "Debian restore runs: $got"
[ "$(query "$res4" "len({x['boot'] for x in cells['$id']['runs']})")" = 2 ] ||
	fail "Debian restore: expected a guest per run"
g="$(query "$res4" "(lambda g: (g['os'].startswith('Debian GNU/Linux 12'), g['init']))(cells['$id']['observed']['guest'])")"
[ "$g" = "(True, 'systemd')" ] || fail "Debian restore: observed guest $g"
[ "$(grep -c "restored ferry-" "$work/log")" = 2 ] || fail "Debian restore: expected 2 'restored' lines"
! grep -q "boots instead of restoring" "$work/log" || fail "the Debian guest was not restored"

# vm2vm tool smb (study 003 per file over SMB): the built-in sender copies onto the Debian
# receiver's share, served by its own smbd, on ferry's private network; two runs in one boot of
# the pair, each verified in the receiver; the built-in receiver is skipped with the reason
res5="$work/v2v.json"
run_ferry 0 "$src/tests/e2e/plans/debian-v2v.yaml" --results "$res5" --verbose
validate "$res5"
id="vm=deb-recv,disk=ram,dataset=small,method=smb"
got="$(query "$res5" "(cells['$id']['status'], [(x['files'], x['bytes'], x['integrity_ok']) for x in cells['$id']['runs']])")"
[ "$got" = "('passed', [(100, 102400, True), (100, 102400, True)])" ] || fail "vm2vm smb into Debian: $got"
got="$(query "$res5" "(lambda c: (c['status'], c['skip_reason']))(cells['vm=tiny-recv,disk=ram,dataset=small,method=smb'])")"
case "$got" in
"('skipped', "*"needs Samba's smbd in the receiver, which only ferry's Debian guest carries"*) ;;
*) fail "vm2vm smb into the built-in guest: $got" ;;
esac
# the pair is one boot of the cell's guest: the receiver booted with its sender as its peer
grep -q "booted .*(vm=deb-recv.*peer=sender)" "$work/log" ||
	fail "vm2vm smb: the Debian receiver was not booted with its sender"

# share served_by guest (study 000's Copy-Item-Smb and -Compress): the host's smbclient, inside
# the run's namespace, copies onto the Debian guest's own smbd share, per file (a tree of
# subdirectories) and as one tar unpacked in the guest; two runs of each in one boot, each
# verified in the guest (every file, every byte; the generated tree is the same for its seed);
# the built-in guest is skipped with the reason; no smbclient, namespace or host network change
# is left. A second smbd could not listen while the first still did: four runs in one boot show
# each run's smbd stopped.
# this test's smbclients: ferry starts them in a directory of the run (FERRY_RUN_DIR), which tells
# them from another test's beside this one
smbclients() {
	local p c
	for p in $(pgrep -f "smbclient -s /dev/null" || true); do
		c="$(readlink "/proc/$p/cwd" 2>/dev/null)" || continue
		[[ "$c" != "$FERRY_RUN_DIR/"* ]] || echo "$p $c"
	done
}
push_left() {
	smbclients
	ip netns list | grep -E -- "-$1(\.[0-9]+)?-net( |$)" || true
}
host_net >"$work/net.before"
res6="$work/smb-push.json"
run_ferry 0 "$src/tests/e2e/plans/debian-smb-push.yaml" --results "$res6" --verbose
validate "$res6"
pid="$(grep -o "booted ferry-[0-9T]*-[0-9]*" "$work/log" | head -1 | sed 's/.*-//')"
[ -n "$pid" ] || fail "smb push: no boot line in the log"
[ -z "$(push_left "$pid")" ] || fail "smb push left behind: $(push_left "$pid")"
for m in "smb-push 60 2153362" "smb-push-tar 60 2207232"; do
	set -- $m
	id="vm=deb,disk=ram,dataset=tree,method=$1"
	got="$(query "$res6" "(cells['$id']['status'], [(x['files'], x['bytes'], x['integrity_ok']) for x in cells['$id']['runs']])")"
	[ "$got" = "('passed', [($2, $3, True), ($2, $3, True)])" ] || fail "$1 onto the Debian guest's smbd: $got"
	got="$(query "$res6" "(lambda c: (c['status'], c['skip_reason']))(cells['vm=tiny,disk=ram,dataset=tree,method=$1'])")"
	case "$got" in
	"('skipped', "*"needs Samba's smbd in the guest, which only ferry's Debian guest carries"*) ;;
	*) fail "$1 on the built-in guest: $got" ;;
	esac
done
[ "$(grep -c "booted ferry-" "$work/log")" = 1 ] || fail "smb push: expected the four runs in one boot"

# SIGINT while smbclient copies: exit 130, nothing left
"$ferry" run "$src/tests/e2e/plans/debian-smb-push-sigint.yaml" --results "$work/push-int.json" \
	2>"$work/log" &
pid=$!
seen=""
for _ in $(seq 1 3000); do
	kill -0 "$pid" 2>/dev/null || break
	if [ -n "$(smbclients)" ]; then
		seen=1
		break
	fi
	sleep 0.1
done
[ -n "$seen" ] || { cat "$work/log" >&2; fail "the interrupted run never started smbclient"; }
sleep 2
[ -n "$(smbclients)" ] || fail "smbclient ended within 2 s: not mid-copy"
interrupt "$pid"
[ -z "$(push_left "$pid")" ] || fail "left behind after SIGINT: $(push_left "$pid")"
host_net >"$work/net.after"
diff -u "$work/net.before" "$work/net.after" || fail "the host's own network changed"

# every method (share over 9p and virtiofs, block, every archive variant) on both: 10 boots
if [ "${FERRY_E2E_DEBIAN_EVERY:-0}" = 1 ]; then
	res3="$work/every.json"
	run_ferry 0 "$src/tests/e2e/plans/debian-every.yaml" --results "$res3" --verbose
	validate "$res3"
	bad="$(query "$res3" '[i for i, c in cells.items() if c["status"] != "passed" or not (
		len([x for x in c["runs"] if not x["warmup"] and x["integrity_ok"]]) == 1)]')"
	[ "$bad" = "[]" ] || fail "every-method plan: cells not passed with a verified run: $bad"
	[ "$(query "$res3" 'len(r["cells"])')" = 30 ] || fail "every-method plan: expected 30 cells"
fi
echo "ok: 9 cells passed (scp, rsync and tar into OpenSSH among them, its sshd and keys gone after each) and a pull skipped on the Debian guest and a direct-kernel-boot image, every run verified; a boot without an agent says what to check; runs in restored Debian guests verified; a per-file SMB copy from a built-in guest into the Debian guest's own smbd verified twice; the host's smbclient onto the Debian guest's smbd, per file and as a tar, verified twice each, and a SIGINT mid-copy left nothing"
