#!/usr/bin/env bash
# The five study plans answer their question without the confounds issue 13 found in them: the
# bus comparison at one host I/O mode, shapes compared at equal bytes (at the default size and
# at the study's), every method on every shape, one way of formatting per allocation study,
# and ordering only where it can act. Read from `ferry expand --format json`, so the checks see
# the plans as ferry runs them (variables substituted, includes applied).
set -uo pipefail
src="${FERRY_SOURCE_DIR:?}"
ferry="${FERRY:?}"
cd "$src"
n=0 failed=0
check() { # description, python program over the expansion, plan, ferry options...
	local d="$1" prog="$2" plan="$3"; shift 3
	n=$((n + 1))
	if out="$("$ferry" expand --format json "$@" "$plan" 2>&1 | /usr/bin/python3 -c "
import json, sys
cells = json.load(sys.stdin)['cells']
def size(v):
    units = {'B': 1, 'KiB': 1 << 10, 'MiB': 1 << 20, 'GiB': 1 << 30, 'TiB': 1 << 40,
             'KB': 10**3, 'MB': 10**6, 'GB': 10**9, 'TB': 10**12}
    for u in sorted(units, key=len, reverse=True):
        if v.endswith(u):
            return float(v[: -len(u)]) * units[u]
    return float(v)
def ds_bytes(c):
    d = c['dataset']
    assert d['size']['min'] == d['size']['max'], d
    return d['files'] * size(d['size']['max'])
$prog
" 2>&1)"; then
		echo "ok $n - $d"
	else
		echo "not ok $n - $d"; printf '%s\n' "$out" | tail -5 | sed 's/^/# /'
		failed=$((failed + 1))
	fi
}

# disk-bus-cache: the buses differ only in their bus (issue 13: ide/sata ran with io=threads,
# virtio/scsi with io=native), and each bus runs at every host cache mode with both methods
bus='
host = set()
combos = {}
for c in cells:
    d = c["disk"]
    host.add(json.dumps({k: v for k, v in d.items() if k not in ("bus", "cache")}, sort_keys=True))
    combos.setdefault((d["bus"], d["cache"]), set()).add(c["method"]["name"])
assert len(host) == 1, host
buses = {b for b, _ in combos}
caches = {k for _, k in combos}
assert buses == {"ide", "sata", "virtio", "scsi"}, buses
assert "none" in caches and len(caches) >= 2, caches
methods = {m for ms in combos.values() for m in ms}
for b in buses:
    for k in caches:
        assert combos.get((b, k)) == methods, (b, k, combos.get((b, k)))
'
check "disk-bus-cache: ide, sata, virtio, scsi share one host side (io, format, size), every cache mode" \
	"$bus" plans/disk-bus-cache.yaml
check "disk-bus-cache: at the study's size too" "$bus" plans/disk-bus-cache.yaml \
	--var FERRY_BUS_SIZE=1GiB --var FERRY_BUS_SMALL=256MiB --var FERRY_BUS_DISK=2GiB

# copy-methods and shares: the shapes hold the same bytes, at the default and the study's size
shapes='
by = {}
for c in cells:
    by.setdefault(c["dataset"]["name"], ds_bytes(c))
vals = set(by.values())
assert len(by) == 2 and len(vals) == 1, by
'
copy_study=(--var FERRY_COPY_LARGE=1GB --var FERRY_COPY_FILES=10000 --var FERRY_COPY_SMALL=1MB)
check "copy-methods: few-large and many-small hold equal bytes" "$shapes" plans/copy-methods.yaml
check "copy-methods: equal bytes at the study's shapes too" "$shapes" plans/copy-methods.yaml \
	"${copy_study[@]}"
# study 000's shapes exactly: 10 files of 1 GB, and 10,000 of 1 MB (the plan's old study setting
# made 1,048,576 files of 10 KiB, a shape the study never had)
check "copy-methods: the study's shapes (10 x 1 GB, 10,000 x 1 MB)" '
shapes = {(c["dataset"]["name"], c["dataset"]["files"], ds_bytes(c)) for c in cells}
assert shapes == {("few-large", 10, 10**10), ("many-small", 10000, 10**10)}, shapes
' plans/copy-methods.yaml "${copy_study[@]}"
# study 000's remoting (Copy-Item -ToSession, and Copy-Item-Compress): ssh per file and one tar
# stream, on both shapes, in the same guest as the other methods (ferry's private network); its
# Copy-Item-Smb and Copy-Item-Smb-Compress: the host onto the guest's own SMB share, per file and
# packed, on both shapes, in the Debian guest (the one with smbd), the only cells there
check "copy-methods: ssh scp and tar beside the other methods, the guest's SMB share in a Debian vm" '
ssh = {(c["method"]["tool"], c["dataset"]["name"]) for c in cells if c["method"]["type"] == "ssh"}
assert ssh == {(t, d) for t in ("scp", "tar") for d in ("few-large", "many-small")}, ssh
smb = [c for c in cells if c["method"]["type"] == "share" and c["method"]["driver"] == "smb"]
got = {(c["method"]["served_by"], c["method"]["archive"]["format"], c["dataset"]["name"]) for c in smb}
assert got == {("guest", a, d) for a in ("none", "zip") for d in ("few-large", "many-small")}, got
assert {c["vm"]["guest"] for c in smb} == {"debian"}, smb
assert {c["vm"]["guest"] for c in cells if c not in smb} == {"builtin"}
assert len({c["vm"]["name"] for c in cells if c not in smb}) == 1
assert all(c["vm"]["nic"]["backend"] == "private" for c in cells)
' plans/copy-methods.yaml
for zeros in "" 00 000; do
	check "shares: one-big and many hold equal bytes${zeros:+ (FERRY_SHARES_ZEROS=$zeros)}" \
		"$shapes" plans/shares.yaml ${zeros:+--var FERRY_SHARES_ZEROS=$zeros}
done

# shares (study 002): at the study's setting, its shapes exactly (one file of 1,536,000,000
# bytes; 5,000 files of 307,200); SMB copies and moves within one share, to another share of
# the server and to another server, on both shapes, from a vm on ferry's private network (issue
# 26: the plan had 9p and virtiofs only, and shapes of a ratio the study never used)
check "shares: the study's shapes at FERRY_SHARES_ZEROS=000, SMB same-share/other-share/other-server x copy/move" '
shapes = {(c["dataset"]["name"], c["dataset"]["files"], ds_bytes(c)) for c in cells}
assert shapes == {("one-big", 1, 1536000000), ("many", 5000, 1536000000)}, shapes
smb = [c for c in cells if c["method"]["type"] == "share" and c["method"]["driver"] == "smb"]
got = {(c["dataset"]["name"], c["method"]["to"], c["method"]["mode"]) for c in smb}
for d in ("one-big", "many"):
    for to in ("same-share", "other-share", "other-server"):
        for mode in ("copy", "move"):
            assert (d, to, mode) in got, (d, to, mode, sorted(got))
assert all(c["vm"]["nic"]["backend"] == "private" for c in smb)
assert {c["method"]["driver"] for c in cells} >= {"smb", "9p", "virtiofs"}
' plans/shares.yaml --var FERRY_SHARES_ZEROS=000

# copy-methods: every method runs on both shapes (issue 13: agent x many-small was excluded,
# exactly where the study saw packing help)
check "copy-methods: every method on both datasets of the sparse disk" '
pairs = {(c["method"]["name"], c["dataset"]["name"]) for c in cells if c["disk"]["name"] == "sparse"}
methods = {m for m, _ in pairs}
assert ("agent", "many-small") in pairs
for m in methods:
    assert (m, "few-large") in pairs and (m, "many-small") in pairs, m
' plans/copy-methods.yaml

# disk-allocation: the disks differ only in format and allocation (issue 13: raw-full alone was
# left to ext4lazyinit); first write is a fresh image per run, rewrite reuses one and keeps its
# blocks (no discard: a trim between runs would make it a first write again)
check "disk-allocation: disks alike but for format and allocation; fresh vs reuse" '
host = set()
combos = {}
for c in cells:
    d = c["disk"]
    host.add(json.dumps({k: v for k, v in d.items() if k not in ("name", "format", "allocation", "discard")}, sort_keys=True))
    fresh = c["run"]["disk"] == "fresh"
    assert d.get("discard", False) == fresh, (c["id"], d.get("discard"))
    assert c["run"]["caches"] == "drop"
    combos.setdefault(c["run"]["disk"], set()).add((d["format"], d["allocation"]))
assert len(host) == 1, host
assert combos["fresh"] == combos["reuse"], combos
assert {a for _, a in combos["fresh"]} >= {"sparse", "full"}, combos
' plans/disk-allocation.yaml

# disk-allocation is study 001's procedure: the copies run inside the guest, disk to disk, in both
# directions (write onto the target, read back from it), of a dd-made file of zeros and one of
# random bytes (equal bytes) and of a real tree, onto dynamic and fixed disks, first write and
# rewrite (issue 26)
check "disk-allocation: guest-copy write and read, dd zeros vs random at equal bytes and a real tree" '
gc = [c for c in cells if c["method"]["type"] == "guest-copy"]
assert len(gc) == len(cells), [c["id"] for c in cells if c not in gc]
assert {c["method"]["direction"] for c in gc} == {"write", "read"}
ds = {c["dataset"]["name"]: c["dataset"] for c in gc}
files = [d for d in ds.values() if "path" not in d]
assert sorted(d["content"] for d in files) == ["random", "zeros"], files
assert len({(d["files"], d["size"]["max"]) for d in files}) == 1 and files[0]["files"] == 1, files
assert any("path" in d for d in ds.values()), ds
combos = {(c["method"]["direction"], c["dataset"]["name"], c["disk"]["allocation"], c["run"]["disk"]) for c in gc}
assert len(combos) == 2 * len(ds) * 2 * 2, sorted(combos)
' plans/disk-allocation.yaml

# network-queues: the queue counts on the private network, one dataset for the network cells;
# VM to VM (study 003's own copy): 1,000 files of 1 KB into receivers of 1 and 4 queues from a
# sender whose NIC is a separate axis (1 and 4 queues), per file over SMB (the study's protocol,
# into Debian receivers, which carry smbd) and over ssh (scp), and as one stream (tar)
check "network-queues: every vm on the private network, queues 1, 2, 4 and e1000; vm2vm into 1 and 4 queues" '
nics = {c["vm"]["name"]: c["vm"]["nic"] for c in cells}
assert all(n["backend"] == "private" for n in nics.values()), nics
net = [c for c in cells if c["method"]["type"] == "network"]
assert sorted(c["vm"]["nic"]["queues"] for c in net if c["vm"]["nic"]["model"] == "virtio" and c["method"]["name"] == "pull-1") == [1, 2, 4], nics
assert len({c["dataset"]["name"] for c in net}) == 1
assert net[0]["dataset"]["files"] == 1000
v2v = [c for c in cells if c["method"]["type"] == "vm2vm"]
assert {(c["dataset"]["files"], c["dataset"]["size"]["min"], c["dataset"]["size"]["max"]) for c in v2v} == {(1000, "1KB", "1KB")}, v2v
assert {c["method"]["tool"] for c in v2v} == {"scp", "tar", "smb"}
for tool, guest in (("scp", "builtin"), ("tar", "builtin"), ("smb", "debian")):
    rx = [c["vm"] for c in v2v if c["method"]["tool"] == tool]
    assert {v["guest"] for v in rx} == {guest}, (tool, rx)
    assert sorted({v["nic"]["queues"] for v in rx}) == [1, 4], (tool, rx)
senders = {c["method"]["from"] for c in v2v}
assert len(senders) == 2, senders
for c in v2v:
    assert sum(1 for d in v2v if d["method"]["name"] == c["method"]["name"]) == 2, c["id"]
' plans/network-queues.yaml

# ordering: a study plan that asks for interleaving gets it (vm shared: the cells sharing a VM
# take turns), never the no-op combination validate now refuses
for p in plans/copy-methods.yaml plans/disk-allocation.yaml plans/disk-bus-cache.yaml \
	plans/network-queues.yaml plans/shares.yaml; do
	check "$p: run order only where it acts (vm shared)" '
for c in cells:
    assert c["run"]["order"] == "sequential" or c["run"]["vm"] == "shared", c["id"]
' "$p"
done

# study scale: validate refuses a setting whose data cannot land in its guest, naming the cell,
# what it needs and the key to raise, and accepts the settings each plan documents (issue 26)
fits() { # description, expected status (0 or 2), text the error must hold, plan, options...
	local d="$1" want="$2" text="$3" plan="$4"; shift 4
	n=$((n + 1))
	local rc=0 err
	err="$("$ferry" validate "$@" "$plan" 2>&1 >/dev/null)" || rc=$?
	if [ "$rc" = "$want" ] && { [ -z "$text" ] || [[ "$err" == *"$text"* ]]; }; then
		echo "ok $n - $d"
	else
		echo "not ok $n - $d"; echo "# exit $rc, wanted $want: $err"
		failed=$((failed + 1))
	fi
}
copy_docs=(--var FERRY_COPY_DISK=16GiB --var FERRY_COPY_MEM=15GiB --var FERRY_COPY_RAM=13GiB)
fits "copy-methods at the study's size on a 1 GiB guest: refused" 2 \
	"stages the dataset's 9.3GiB in the guest's RAM, and vm 'small' has 1GiB of memory" \
	plans/copy-methods.yaml "${copy_study[@]}" --var FERRY_COPY_DISK=16GiB
fits "copy-methods at the study's size on 8 GiB of ext4: refused" 2 \
	"the dataset takes 9.3GiB, and the ext4 ferry makes on disk 'sparse' holds 7.7GiB" \
	plans/copy-methods.yaml "${copy_study[@]}" --var FERRY_COPY_DISK=8GiB \
	--var FERRY_COPY_MEM=15GiB --var FERRY_COPY_RAM=13GiB
fits "copy-methods at the study's size in a 512 MiB tmpfs: refused" 2 \
	"the dataset takes 9.3GiB, and disk 'ram' (a tmpfs) holds 512MiB" \
	plans/copy-methods.yaml "${copy_study[@]}" --var FERRY_COPY_DISK=16GiB --var FERRY_COPY_MEM=15GiB
fits "copy-methods at the study's documented settings: valid" 0 "" plans/copy-methods.yaml \
	"${copy_study[@]}" "${copy_docs[@]}"
bus_scale=(--var FERRY_BUS_SIZE=1GiB --var FERRY_BUS_SMALL=256MiB --var FERRY_BUS_DISK=2GiB)
fits "disk-bus-cache: block cannot stage 1 GiB in a 1 GiB guest" 2 \
	"(type block) stages the dataset's 1GiB in the guest's RAM" \
	plans/disk-bus-cache.yaml "${bus_scale[@]}"
fits "disk-bus-cache at the study's documented settings: valid" 0 "" plans/disk-bus-cache.yaml \
	"${bus_scale[@]}" --var FERRY_BUS_MEM=2GiB
fits "shares at the study's documented settings: valid" 0 "" plans/shares.yaml \
	--var FERRY_SHARES_ZEROS=000 --var FERRY_SHARES_DISK=4GiB
fits "network-queues: 1,000 files of 10 MiB do not fit its 4 GiB tmpfs" 2 \
	"the dataset takes 9.8GiB, and disk 'ram' (a tmpfs) holds 4GiB" \
	plans/network-queues.yaml --var FERRY_NET_FILE_SIZE=10MiB
fits "network-queues at the study's file size (about 1 KB): valid" 0 "" plans/network-queues.yaml \
	--var FERRY_NET_FILE_SIZE=1KB
alloc_scale=(--var FERRY_ALLOC_FILE=1GB --var FERRY_ALLOC_TREE=/usr/lib)
fits "disk-allocation: a 1 GB dd file does not fit the ext4 of a 512 MiB disk" 2 \
	"the dataset takes 953.7MiB, and the ext4 ferry makes on disk 'first' holds 480MiB" \
	plans/disk-allocation.yaml "${alloc_scale[@]}"
fits "disk-allocation at the study's documented settings: valid" 0 "" plans/disk-allocation.yaml \
	"${alloc_scale[@]}" --var FERRY_ALLOC_DISK=8GiB
for p in plans/*.yaml; do
	fits "$p at its default scale: valid" 0 "" "$p"
done

echo "1..$n"
[ "$failed" -eq 0 ]
