#!/usr/bin/env bash
# `ferry guest info --json` and `ferry guest path` on the built guest (scripts/setup.sh builds
# it): the JSON parses, lists the modules the guest needs in a valid load order, and the files it
# names are there with the recorded SHA-256. Skips (77) when no guest has been built.
set -euo pipefail

ferry="${FERRY:-build/ferry}"
if ! out="$("$ferry" guest info --json 2>&1)"; then
	echo "SKIP: no built-in guest here ($out); run 'ferry guest build' or scripts/setup.sh"
	exit 77
fi

printf '%s\n' "$out" | /usr/bin/python3 -c '
import hashlib, json, os, sys
m = json.load(sys.stdin)
mods = m["modules"]
want = ["virtio_pci", "virtio_console", "virtio_blk", "virtio_net", "virtio_scsi", "sd_mod",
        "ata_piix", "ahci", "libata", "crc32c_generic", "ext4", "jbd2", "vfat", "fat", "isofs",
        "9pnet_virtio", "9p"]
missing = [w for w in want if w not in mods]
assert not missing, "modules missing: %s" % missing
assert len(set(mods)) == len(mods), "a module is listed twice"
# dependencies before their users
for before, after in [("virtio_ring", "virtio_pci"), ("scsi_mod", "sd_mod"), ("libata", "ahci"),
                      ("jbd2", "ext4"), ("crc32c_generic", "ext4"), ("fat", "vfat"),
                      ("9pnet", "9pnet_virtio"), ("9pnet", "9p")]:
    assert mods.index(before) < mods.index(after), "%s must load before %s" % (before, after)
names = [p["name"] for p in m["packages"]]
for p in ("busybox-static", "qemu-guest-agent", "libc6", "libglib2.0-0"):
    assert p in names, "package %s not listed" % p
assert any(n.startswith("linux-image-") and "cloud" not in n for n in names)
assert m["kernel_version"] and isinstance(m["pvh"], bool)
for lib in ("libc.so.6", "libglib-2.0.so.0", "ld-linux-x86-64.so.2"):
    assert lib in m["libraries"], "library %s not listed" % lib
ini = m["initramfs"]
h = hashlib.sha256(open(ini["path"], "rb").read()).hexdigest()
assert h == ini["sha256"], "initramfs sha256 %s != manifest %s" % (h, ini["sha256"])
assert os.path.getsize(m["kernel"]["path"]) == m["kernel"]["size"]
# QEMU runs as libvirt-qemu: the files must be world-readable
for p in (ini["path"], m["kernel"]["path"]):
    assert os.stat(p).st_mode & 0o004, "%s is not world-readable" % p
print("guest info: %d modules, initramfs %d bytes, pvh=%s" % (len(mods), ini["size"], m["pvh"]))
'

mapfile -t paths < <("$ferry" guest path)
[ "${#paths[@]}" -eq 2 ] || { echo "FAIL: 'ferry guest path' printed ${#paths[@]} lines"; exit 1; }
for p in "${paths[@]}"; do
	[ -r "$p" ] || { echo "FAIL: '$p' from 'ferry guest path' is not readable"; exit 1; }
done

# a second build with the same inputs is a cache hit that leaves the files as they are. In a
# cache of its own: this ferry may be another build tree's (the ASan build's, beside the e2e
# tests), whose ferry-sum is another key, and a build in the shared cache would repoint its
# `current` under the runs that use it. The packages are the shared cache's, linked (or copied).
shared="$("$ferry" guest info --json | /usr/bin/python3 -c 'import json,sys,os; print(os.path.dirname(os.path.dirname(json.load(sys.stdin)["initramfs"]["path"])))')"
own="$(mktemp -d)"
trap 'rm -rf "$own"' EXIT
mkdir -p "$own/guest"
if [ -d "$shared/debs" ]; then
	cp -al "$shared/debs" "$own/guest/debs" 2>/dev/null || cp -a "$shared/debs" "$own/guest/debs"
fi
cur_before="$(readlink "$shared/current")"
own_sha() { "$ferry" guest info --cache-dir "$own" --json |
	/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["initramfs"]["sha256"])'; }
msg="$("$ferry" guest build --cache-dir "$own" 2>&1 >/dev/null)" || { echo "FAIL: 'ferry guest build' failed: $msg"; exit 1; }
case "$msg" in
*"up to date (cached)"*) echo "FAIL: the first build in an empty cache was a cache hit: $msg"; exit 1 ;;
esac
before="$(own_sha)"
msg="$("$ferry" guest build --cache-dir "$own" 2>&1 >/dev/null)" || { echo "FAIL: 'ferry guest build' failed: $msg"; exit 1; }
case "$msg" in
*"up to date (cached)"*) ;;
*) echo "FAIL: a repeated build was not a cache hit: $msg"; exit 1 ;;
esac
after="$(own_sha)"
[ "$before" = "$after" ] || { echo "FAIL: a cache hit changed the initramfs: $before -> $after"; exit 1; }
[ "$(readlink "$shared/current")" = "$cur_before" ] || { echo "FAIL: the shared cache's guest changed"; exit 1; }

# a cache without a guest gives a clear error, not a crash
empty="$(mktemp -d)"
trap 'rm -rf "$own" "$empty"' EXIT
if err="$("$ferry" guest path --cache-dir "$empty" 2>&1)"; then
	echo "FAIL: 'ferry guest path' succeeded on an empty cache"; exit 1
fi
case "$err" in
*"ferry guest build"*) ;;
*) echo "FAIL: unexpected message: $err"; exit 1 ;;
esac
echo "ok"
