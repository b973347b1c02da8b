#!/usr/bin/env bash
# Every transfer method next to the ceiling of its transport, on the same built-in guest (same
# kernel, initramfs, 1 vCPU, same memory, TCG), for one large file and for many small ones.
#
# ferry:   `ferry run` of one plan holding every method (landing on guest RAM; block on a raw
#          virtio disk), --repeat runs per cell after one warmup; MB/s = bytes / median time of
#          the phases that move the bytes (see "phases" below).
# ceiling: the simplest hand-made equivalent, on a domain this script boots by hand (virsh) from
#          the same guest files, with the same devices, --repeat times after one warmup:
#   agent-file  guest-file-open, guest-file-write of CHUNK raw bytes (base64) in a loop, close:
#               bench/agent-write.c, virDomainQemuAgentCommand as virsh qemu-agent-command
#               uses it, in one process; every chunk size of --chunks, the best is the ceiling
#   channel     raw bytes written into the virtio-serial port's socket, the guest `head -c` into
#               a file in RAM, timed on the host from connect to the guest command's end
#   network     one `wget` in the guest of one file from a trivial host server on 127.0.0.1
#               (python http.server; the guest sees 10.0.2.2), timed in the guest
#   share       a 9p mount (msize 512000, cache none: ferry's defaults) and one `cp -r` in the
#               guest, timed in the guest (mount + cp, as ferry's transfer + finalize)
#   disk-image  a prebuilt ext4 image (mke2fs -d): `virsh attach-disk`, then in the guest wait
#               for the device, mount, `cp -r`, umount; timed on the host from attach to the end
#   block       `dd bs=1M oflag=direct` from guest RAM to a raw virtio disk, timed in the guest
# Small files: the same bytes per method, as --small-files files of 4 KiB; what the methods do
# per file (agent-file: open + write + close round trips per file) shows as the ratio falls.
#
# phases compared (ferry's time): agent-file transfer+finalize; channel prepare+transfer+finalize;
# network prepare+transfer+finalize; share transfer+finalize; disk-image transfer+finalize
# (prepare builds the image: the ceiling's image is prebuilt; the prepare median is printed
# apart); block transfer (the O_DIRECT write).
#
# Usage: bench/methods.sh [--ferry BIN] [--cache DIR] [--large-mib N] [--small-files N]
#                         [--repeat N] [--chunks "48 96 128"] [--only "agent-file channel ..."]
# Hold /work/e2e.lock (or the like) on a shared machine. Needs root (virsh, 9p), python3.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ferry="${FERRY:-$here/build/ferry}"
cache="${FERRY_CACHE_DIR:-/var/cache/ferry}"
large_mib=16
small_files=128
repeat=3
chunks="48 96 128"
only="agent-file channel network share disk-image block"
uri=qemu:///system
while [ $# -gt 0 ]; do
	case "$1" in
	--ferry) ferry="$2"; shift 2 ;;
	--cache) cache="$2"; shift 2 ;;
	--large-mib) large_mib="$2"; shift 2 ;;
	--small-files) small_files="$2"; shift 2 ;;
	--repeat) repeat="$2"; shift 2 ;;
	--chunks) chunks="$2"; shift 2 ;;
	--only) only="$2"; shift 2 ;;
	-h|--help) sed -n '2,34p' "$0"; exit 0 ;;
	*) echo "methods.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
[ -x "$ferry" ] || { echo "methods.sh: no ferry binary at '$ferry'" >&2; exit 2; }
aw="${BENCH_AGENT_WRITE:-$(dirname "$ferry")/bench/bench-agent-write}"
[ -x "$aw" ] || { echo "methods.sh: no bench-agent-write at '$aw' (build bench/)" >&2; exit 2; }
py=/usr/bin/python3
export FERRY_CACHE_DIR="$cache"

work="$(mktemp -d /var/tmp/ferry-bench-methods.XXXXXX)"
chmod 0755 "$work"
dom="ferry-bench-methods-$$"
srv_pid=""
cleanup() {
	virsh -c "$uri" destroy "$dom" >/dev/null 2>&1 || true
	[ -z "$srv_pid" ] || kill "$srv_pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
want() { [[ " $only " == *" $1 "* ]]; }
log() { echo "methods.sh: $*" >&2; }

# ---------------------------------------------------------------- ferry's figures
mkdir -m 0755 "$work/runs" "$work/out"
cat >"$work/plan.yaml" <<PLAN
ferry: 1
name: bench-methods
vms:
  tiny: {guest: builtin, vcpus: 1, memory: 512MiB, accel: tcg}
disks:
  ram: {kind: tmpfs, size: 160MiB}
  raw: {format: raw, size: $((large_mib * 2))MiB, bus: virtio, cache: none, io: native}
datasets:
  large: {files: 1, size: ${large_mib}MiB, seed: 1}
  small: {files: $small_files, size: 4KiB, seed: 2}
methods:
  agent-file: {type: agent-file, chunk_size: 128KiB}
  channel: {type: channel}
  network: {type: network}
  share: {type: share, driver: 9p}
  disk-image: {type: disk-image, filesystem: ext4}
  block: {type: block, block_size: 1MiB, queue_depth: 1}
matrix:
  vm: [tiny]
  disk: [ram]
  dataset: [large, small]
  method: [$(for m in $only; do [ "$m" = block ] || printf '%s, ' "$m"; done | sed 's/, $//')]
$(want block && printf '  include:\n    - {vm: tiny, disk: raw, dataset: large, method: block}\n    - {vm: tiny, disk: raw, dataset: small, method: block}\n')
run: {repeat: $repeat, warmup: 1, caches: drop, vm: shared, timeout: 10m}
PLAN
log "ferry: $(grep -c . "$work/plan.yaml") plan lines, running"
FERRY_RUN_DIR="$work/runs" "$ferry" run --quiet --results "$work/ferry.json" "$work/plan.yaml" ||
	log "ferry run exited with $? (cells that failed are left out)"

# ---------------------------------------------------------------- the hand-made domain
eval "$("$ferry" guest info --json | "$py" -c '
import json, sys, shlex
m = json.load(sys.stdin)
def f(k):
    return m[k]["path"]
print("gkernel=" + shlex.quote(f("kernel")), "ginitrd=" + shlex.quote(f("initramfs")),
      "gcmdline=" + shlex.quote(m["cmdline"]))')"
mkdir -m 0755 "$work/share" "$work/www" "$work/img"
"$ferry" dataset gen --files 1 --size "${large_mib}MiB" --seed 1 --dir "$work/share/large" >/dev/null
"$ferry" dataset gen --files "$small_files" --size 4KiB --seed 2 --dir "$work/share/small" >/dev/null
rm -f "$work"/share/*/.ferry* 2>/dev/null || true
chmod -R a+rX "$work/share"
large_bytes=$((large_mib * 1048576))
small_bytes=$((small_files * 4096))
# one file for the wget of each case: the large file, and the small files as one tar
cp "$work"/share/large/* "$work/www/large"
tar -C "$work/share/small" -cf "$work/www/small" .
for c in large small; do
	mke2fs -q -t ext4 -m 0 -d "$work/share/$c" "$work/img/$c.raw" $((large_mib * 2 + 8))M >/dev/null
done
qemu-img create -q -f raw "$work/img/block.raw" $((large_mib * 2))M
chmod 0644 "$work"/img/* "$work"/www/*
cat >"$work/dom.xml" <<XML
<domain type='qemu'>
  <name>$dom</name>
  <memory unit='KiB'>524288</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type><kernel>$gkernel</kernel><initrd>$ginitrd</initrd>
    <cmdline>$gcmdline ferry.modules=virtio_blk,virtio_net</cmdline></os>
  <features><acpi/><apic/></features>
  <clock offset='utc'/>
  <on_poweroff>destroy</on_poweroff><on_reboot>destroy</on_reboot><on_crash>destroy</on_crash>
  <devices>
    <controller type='usb' model='none'/>
    <controller type='scsi' index='0' model='virtio-scsi'/>
    <disk type='file' device='disk'><driver name='qemu' type='raw' cache='none' io='native'/>
      <source file='$work/img/block.raw'/><target dev='vda' bus='virtio'/><serial>benchblock</serial></disk>
    <serial type='file'><source path='$work/console.log'/><target port='0'/></serial>
    <channel type='unix'><source mode='bind'/><target type='virtio' name='org.qemu.guest_agent.0'/></channel>
    <channel type='unix'><source mode='bind' path='$work/port.sock'/><target type='virtio' name='bench.0'/></channel>
    <interface type='user'><model type='virtio'/></interface>
    <filesystem type='mount' accessmode='mapped'><source dir='$work/share'/><target dir='benchshare'/><readonly/></filesystem>
    <memballoon model='none'/>
  </devices>
</domain>
XML
log "booting the hand-made domain"
virsh -c "$uri" create "$work/dom.xml" >/dev/null
for ((i = 0; i < 600; i++)); do
	virsh -c "$uri" qemu-agent-command "$dom" '{"execute":"guest-ping"}' >/dev/null 2>&1 && break
	sleep 0.1
done

agent() { virsh -c "$uri" qemu-agent-command "$dom" "$1"; }
# gsh CMD: run a shell command in the guest, wait for it, print its stdout; fails on non-zero exit
gsh() {
	local args pid st
	args="$("$py" -c 'import json,sys; print(json.dumps({"execute":"guest-exec","arguments":{"path":"/bin/sh","arg":["-c",sys.argv[1]],"capture-output":True}}))' "$1")"
	pid="$(agent "$args" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["return"]["pid"])')"
	while :; do
		st="$(agent "{\"execute\":\"guest-exec-status\",\"arguments\":{\"pid\":$pid}}")"
		"$py" -c 'import json,sys; sys.exit(0 if json.loads(sys.argv[1])["return"]["exited"] else 1)' "$st" && break
		sleep 0.02
	done
	"$py" -c '
import json, sys, base64
r = json.loads(sys.argv[1])["return"]
sys.stdout.write(base64.b64decode(r.get("out-data", "")).decode())
if r.get("exitcode", 1) != 0:
    sys.stderr.write(base64.b64decode(r.get("err-data", "")).decode()); sys.exit(1)' "$st"
}
# in-guest timing: prints seconds of CMD (guest clock, /proc/uptime, 10 ms resolution)
gtime() { gsh "s=\$(cut -d' ' -f1 /proc/uptime); $1 >/dev/null || exit 1; e=\$(cut -d' ' -f1 /proc/uptime); echo \"\$s \$e\"" | awk '{printf "%.3f\n", $2 - $1}'; }
now() { date +%s%N; }
gsh "modprobe -a 9pnet_virtio 9p ext4 2>/dev/null; mkdir -p /land /mnt/img /mnt/share; mount -t tmpfs -o size=160m tmpfs /land"

declare -A ceil_samples ceil_note
# agent-file: the raw guest-file-write loop (bench/agent-write.c: virDomainQemuAgentCommand, as
# virsh qemu-agent-command, in one process: virsh cannot take a 128 KiB chunk's JSON as one
# argument (MAX_ARG_STRLEN) and its shell mode is slow on such lines)
agent_loop() { # CHUNK_KIB FILE... -> seconds on the host
	local kib="$1"
	shift
	"$aw" "$uri" "$dom" $((kib * 1024)) /land "$@"
	gsh "rm -rf /land/*" >/dev/null
}
channel_once() { # SRCFILE BYTES -> seconds on the host (connect .. guest head ended)
	"$py" - "$work/port.sock" "$1" "$2" "$dom" "$uri" <<'PY'
import json, socket, subprocess, sys, time, base64
sock, src, nbytes, dom, uri = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
def agent(obj):
    return json.loads(subprocess.check_output(["virsh", "-c", uri, "qemu-agent-command", dom, json.dumps(obj)]))["return"]
# the host end first: a guest reading a port whose host end is closed gets end of file
s = socket.socket(socket.AF_UNIX); s.connect(sock); s.settimeout(120)
t0 = time.monotonic()
pid = agent({"execute": "guest-exec", "arguments": {"path": "/bin/sh", "arg": ["-c", "head -c %d /dev/virtio-ports/bench.0 > /land/chan.bin" % nbytes]}})["pid"]
with open(src, "rb") as f:
    while True:
        b = f.read(1 << 20)
        if not b: break
        s.sendall(b)
while not agent({"execute": "guest-exec-status", "arguments": {"pid": pid}})["exited"]:
    time.sleep(0.01)
t1 = time.monotonic()
s.close()
print("%.3f" % (t1 - t0))
PY
	gsh "rm -f /land/chan.bin" >/dev/null
}
diskimage_once() { # CASE -> seconds on the host
	local c="$1" t0 t1
	t0=$(now)
	virsh -c "$uri" attach-disk "$dom" "$work/img/$c.raw" vdb --targetbus virtio --mode readonly --serial benchimg >/dev/null
	gsh "while [ ! -b /dev/vdb ]; do usleep 5000; done; mount -o ro /dev/vdb /mnt/img && cp -r /mnt/img/. /land/ && umount /mnt/img" >/dev/null
	t1=$(now)
	virsh -c "$uri" detach-disk "$dom" vdb >/dev/null
	gsh "while [ -b /dev/vdb ]; do usleep 5000; done; rm -rf /land/*" >/dev/null
	awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f\n", (b - a) / 1e9}'
}
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; gsh "sync; echo 3 > /proc/sys/vm/drop_caches" >/dev/null; }

for c in large small; do
	if want agent-file; then
		if [ "$c" = large ]; then
			best=""
			for k in $chunks; do
				agent_loop "$k" "$work/www/large" >/dev/null # warmup
				s=""
				for ((r = 0; r < repeat; r++)); do drop; s+="$(agent_loop "$k" "$work/www/large") "; done
				med="$(tr ' ' '\n' <<<"$s" | grep . | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')"
				log "agent-file ceiling, ${k} KiB chunks: $s(median $med s)"
				if [ -z "$best" ] || awk -v a="$med" -v b="$bestmed" 'BEGIN {exit !(a < b)}'; then
					best="$k"; bestmed="$med"; ceil_samples[agent-file,$c]="$s"
				fi
			done
			ceil_note[agent-file,$c]="${best} KiB chunks"
		else
			agent_loop 128 "$work"/share/small/* >/dev/null
			s=""; for ((r = 0; r < repeat; r++)); do drop; s+="$(agent_loop 128 "$work"/share/small/*) "; done
			ceil_samples[agent-file,$c]="$s"; ceil_note[agent-file,$c]="open+write+close per file"
		fi
	fi
	src="$work/www/$c"
	bytes=$(stat -c %s "$src")
	if want channel; then
		channel_once "$src" "$bytes" >/dev/null
		s=""; for ((r = 0; r < repeat; r++)); do drop; s+="$(channel_once "$src" "$bytes") "; done
		ceil_samples[channel,$c]="$s"; ceil_note[channel,$c]="raw bytes, guest head -c"
	fi
	if want network; then
		if [ -z "$srv_pid" ]; then
			port=$(( 20000 + RANDOM % 20000 ))
			(cd "$work/www" && exec "$py" -m http.server -b 127.0.0.1 "$port" >/dev/null 2>&1) &
			srv_pid=$!
			sleep 1
		fi
		gtime "wget -q -O /land/net.bin http://10.0.2.2:$port/$c" >/dev/null
		s=""; for ((r = 0; r < repeat; r++)); do drop; gsh "rm -f /land/net.bin" >/dev/null
			s+="$(gtime "wget -q -O /land/net.bin http://10.0.2.2:$port/$c") "; done
		gsh "rm -f /land/net.bin" >/dev/null
		ceil_samples[network,$c]="$s"; ceil_note[network,$c]="one wget of one file (small: a tar)"
	fi
	if want share; then
		s=""; for ((r = 0; r <= repeat; r++)); do drop
			t="$(gtime "mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=none,ro benchshare /mnt/share && cp -r /mnt/share/$c/. /land/ && umount /mnt/share")"
			gsh "rm -rf /land/*" >/dev/null
			[ "$r" = 0 ] || s+="$t "; done
		ceil_samples[share,$c]="$s"; ceil_note[share,$c]="9p mount + one cp -r"
	fi
	if want disk-image; then
		diskimage_once "$c" >/dev/null
		s=""; for ((r = 0; r < repeat; r++)); do drop; s+="$(diskimage_once "$c") "; done
		ceil_samples[disk-image,$c]="$s"; ceil_note[disk-image,$c]="attach + mount + cp -r (prebuilt)"
	fi
	if want block; then
		# the bytes staged in guest RAM first (untimed), as ferry's block does
		"$aw" "$uri" "$dom" 131072 /run "$src" >/dev/null
		gsh "mv /run/$c /run/block.bin" >/dev/null
		s=""; for ((r = 0; r <= repeat; r++)); do drop
			t="$(gtime "dd if=/run/block.bin of=/dev/vda bs=1M oflag=direct conv=fsync 2>/dev/null")"
			[ "$r" = 0 ] || s+="$t "; done
		gsh "rm -f /run/block.bin" >/dev/null
		ceil_samples[block,$c]="$s"; ceil_note[block,$c]="dd bs=1M oflag=direct"
	fi
done

# ---------------------------------------------------------------- the table
for k in "${!ceil_samples[@]}"; do printf '%s\t%s\t%s\n' "$k" "${ceil_samples[$k]}" "${ceil_note[$k]}"; done >"$work/ceil.tsv"
"$py" - "$work/ferry.json" "$work/ceil.tsv" "$large_bytes" "$small_bytes" "$only" <<'PY'
import json, statistics, sys
res, ceil, lb, sb, only = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5].split()
phases = {"agent-file": ["transfer", "finalize"], "channel": ["prepare", "transfer", "finalize"],
          "network": ["prepare", "transfer", "finalize"], "share": ["transfer", "finalize"],
          "disk-image": ["transfer", "finalize"], "block": ["transfer"]}
ferry = {}
try:
    r = json.load(open(res))
except Exception:
    r = {"cells": []}
for c in r["cells"]:
    m, d = c["axes"]["method"], c["axes"]["dataset"]
    runs = [x for x in c.get("runs", []) if not x["warmup"] and x.get("integrity_ok")]
    if not runs:
        continue
    t = [sum(x["phases"][p] or 0 for p in phases[m]) for x in runs]
    prep = [x["phases"]["prepare"] or 0 for x in runs]
    ferry[m, d] = (runs[0]["bytes"], t, statistics.median(prep))
ceils = {}
for line in open(ceil):
    k, s, note = line.rstrip("\n").split("\t")
    m, d = k.split(",")
    ceils[m, d] = ([float(x) for x in s.split()], note)
def fmt(samples, nbytes):
    med = statistics.median(samples)
    mbs = lambda t: nbytes / t / 1e6
    return mbs(med), "%.2f-%.2f" % (mbs(max(samples)), mbs(min(samples)))
print("%-11s %-6s %9s %13s %9s %13s %6s  %s" % ("method", "files", "ferry", "(range)", "ceiling", "(range)", "ratio", "ceiling is"))
print("%-11s %-6s %9s %13s %9s %13s %6s" % ("", "", "MB/s", "MB/s", "MB/s", "MB/s", ""))
for m in only:
    for d in ("large", "small"):
        f = ferry.get((m, d)); c = ceils.get((m, d))
        fb = f[0] if f else (lb if d == "large" else sb)
        fm, fr = fmt(f[1], fb) if f else (float("nan"), "-")
        # the ceiling moves the same file bytes (network small: one tar of them, a bit more)
        cm, cr = fmt(c[0], lb if d == "large" else sb) if c else (float("nan"), "-")
        extra = " (ferry prepare %.2f s)" % f[2] if f and m == "disk-image" else ""
        print("%-11s %-6s %9.2f %13s %9.2f %13s %6.2f  %s%s" % (m, d, fm, fr, cm, cr, fm / cm if c and f else float("nan"), c[1] if c else "-", extra))
PY
