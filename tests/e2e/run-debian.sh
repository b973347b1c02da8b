#!/usr/bin/env bash
# The Debian guest end to end under TCG: `ferry guest build debian` (debootstrap from the host's
# apt mirror; cached in ferry's cache, so only the first run of the suite on a machine builds),
# then one `ferry run` of tests/e2e/plans/debian.yaml: agent-file, disk-image, network pull and
# push and channel on the Debian guest, and the same root image booted as a user's image by
# direct kernel boot with a NoCloud seed attached. Every cell passes with its run verified in the
# guest; nothing is left behind.
source "$(dirname "$0")/run-lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: building the Debian guest needs root (debootstrap, chroot)"
	exit 77
fi
if ! command -v debootstrap >/dev/null; then
	echo "SKIP: debootstrap is not installed (scripts/setup.sh installs it)"
	exit 77
fi
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

# all 6 cells passed, each with its one measured run verified
bad="$(query "$res" '[i for i, c in cells.items() if c["status"] != "passed" or not (
	len([x for x in c["runs"] if not x["warmup"] and x["integrity_ok"]]) == 1)]')"
[ "$bad" = "[]" ] || fail "cells not passed with a verified run: $bad"
n="$(query "$res" 'len(r["cells"])')"
[ "$n" = 6 ] || fail "expected 6 cells, got $n"
# the bytes are the dataset's (40 x 32 KiB) for the per-file network pull
bytes="$(query "$res" 'cells["vm=deb,disk=ram,dataset=mixed,method=net-pull"]["runs"][0]["bytes"]')"
[ "$bytes" = 1310720 ] || fail "network pull bytes: $bytes"
grep -q "<testsuites" "$work/junit.xml" || fail "no JUnit written"
grep -q "4 boots" "$work/log" || fail "expected 4 boots (one per boot configuration)"
echo "ok: 6 cells passed on the Debian guest and a direct-kernel-boot image, every run verified"
