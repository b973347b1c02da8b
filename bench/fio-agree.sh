#!/usr/bin/env bash
# Does ferry's guest-timed block figure agree with fio's? (issue 26: a peer's figure.) On the
# Debian guest (`ferry guest build debian`, which carries fio), the same kind of device (a raw,
# fully allocated virtio-blk image, host cache none, io threads, machine pc, 2 vCPUs, 1 GiB),
# direct I/O and 1 MiB requests one at a time:
#   ferry: `ferry run` of a one-cell plan, the block method (dd oflag=direct, then iflag=direct
#          after the host's and guest's caches are dropped); its guest_write_throughput and
#          guest_read_throughput (dd's own figure: the bytes and seconds dd reports);
#   fio:   the same guest booted by this script as a transient libvirt domain (no NIC) with the
#          same target disk and what ferry's domain has besides (ACPI and APIC, no USB, no balloon);
#          fio --direct=1 --bs=1M --ioengine=psync --rw=write --end_fsync=1, then the guest's
#          caches dropped, --rw=read; its bw_bytes. In the same boot, ferry's
#          own dd commands (a tmpfs staging file, conv=fsync; iflag=direct), timed by dd itself
#          as ferry reports them, and three more, so that a gap shows where it comes from: study
#          004's write, dd from /dev/zero (no source file: no copy of every block out of the
#          staging file), that copy alone, dd from the staging file to /dev/null, and the
#          staging file written without that copy: its pages mapped (mmap) and written from the
#          mapping with O_DIRECT, 1 MiB a write, then fsync, timed by python3's clock around the
#          writes (the Debian guest has python3 for samba).
# Each round boots one guest for ferry and one for fio, alternately (interleaved, so the host's
# drift hits both alike); the script prints each round's figures, then per direction the median
# of each and their ratio, the ratio ferry/fio paired by round with its 95% interval and whether
# that interval is within 15% (and dd's own against fio in the same boot), and the load average
# before and after. Nothing here is a test: no threshold decides an exit status.
#
# Usage: bench/fio-agree.sh [--n N] [--size SIZE] [--attach boot|hotplug]
#   N rounds (default 5), SIZE of the stream (default 64MiB; the target disk is twice that);
#   --attach: the fio guest's target attached in its domain XML at boot (default), or hot-plugged
#   once its agent answers, as ferry attaches its targets.
#   FERRY (default build/ferry) is the binary, FERRY_CACHE_DIR the cache with the Debian guest.
# Hold /work/e2e.lock (or the like) around it on a shared machine: other guests skew it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prog=fio-agree.sh
. "$here/bench/lib-boot.sh"
bin="${FERRY:-$here/build/ferry}"
n=5
size=64MiB
attach=boot
while [ $# -gt 0 ]; do
	case "$1" in
	--n) n="$2"; shift 2 ;;
	--size) size="$2"; shift 2 ;;
	--attach) attach="$2"; shift 2 ;;
	-h|--help) sed -n '2,30p' "$0"; exit 0 ;;
	*) echo "$prog: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
[[ "$n" =~ ^[1-9][0-9]?$ ]] || { echo "$prog: --n wants 1 to 99" >&2; exit 2; }
[[ "$size" =~ ^[1-9][0-9]{0,4}MiB$ ]] || { echo "$prog: --size wants NMiB" >&2; exit 2; }
case "$attach" in boot|hotplug) ;; *) echo "$prog: --attach wants boot or hotplug" >&2; exit 2 ;; esac
[ -x "$bin" ] || { echo "$prog: no ferry at '$bin'" >&2; exit 2; }
mib="${size%MiB}"
bytes=$((mib * 1048576))
mapfile -t deb < <("$bin" guest path debian) || exit 2
[ "${#deb[@]}" = 3 ] || { echo "$prog: no Debian guest (ferry guest build debian)" >&2; exit 2; }
cmdline="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["cmdline"])' \
	"$(dirname "${deb[2]}")/manifest.json")"

boot_workdir
dom="ferry-fio-agree-$$"
# the fio guest dies with the script, whatever ends it (boot_workdir's trap removes $work)
trap 'virsh -q -c qemu:///system destroy "$dom" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cat >"$work/ferry.yaml" <<PLAN
ferry: 1
name: bench-fio-agree
vms:
  d: {guest: debian, machine: pc, vcpus: 2, memory: 1GiB, accel: tcg, boot_timeout: 5m}
disks:
  raw: {format: raw, allocation: full, size: $((mib * 2))MiB, bus: virtio, cache: none, io: threads}
datasets:
  stream: {files: 1, size: $size, content: random, seed: 33}
methods:
  dd: {type: block, block_size: 1MiB, queue_depth: 1}
run: {repeat: 1, vm: per-cell, caches: drop, timeout: 10m}
PLAN

# ferry_once -> "WRITE READ" in bytes/s, the guest-timed figures of one run in one boot
ferry_once() {
	env FERRY_RUN_DIR="$work/runs" "$bin" run --quiet --results "$work/r.json" \
		"$work/ferry.yaml" >/dev/null 2>"$work/ferry.err" || {
		echo "$prog: ferry run failed:" >&2; cat "$work/ferry.err" >&2; return 1; }
	python3 - "$work/r.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
runs = [x for x in r["cells"][0]["runs"] if not x["warmup"] and x["integrity_ok"]]
m = runs[-1]["metrics"]
print(m["guest_write_throughput"], m["guest_read_throughput"])
PY
	rm -f "$work/r.json"
}

qga() { virsh -q -c qemu:///system qemu-agent-command "$dom" "$1" --timeout 600; }

# gexec PROGRAM ARGS... -> the program's standard output in the fio guest; fails on a non-zero exit
gexec() {
	local req pid st
	req="$(python3 -c 'import json, sys; print(json.dumps({"execute": "guest-exec",
		"arguments": {"path": sys.argv[1], "arg": sys.argv[2:], "capture-output": True}}))' "$@")"
	pid="$(qga "$req" | python3 -c 'import json, sys; print(json.load(sys.stdin)["return"]["pid"])')"
	for ((t = 0; t < 600; t++)); do
		st="$(qga "{\"execute\": \"guest-exec-status\", \"arguments\": {\"pid\": $pid}}")"
		python3 - "$st" <<'PY' && return 0
import base64, json, sys
r = json.loads(sys.argv[1])["return"]
if not r["exited"]:
    sys.exit(2)
sys.stdout.write(base64.b64decode(r.get("out-data", "")).decode())
if r.get("exitcode") != 0:
    sys.stderr.write(base64.b64decode(r.get("err-data", "")).decode())
    sys.exit(1)
PY
		[ $? = 2 ] || return 1
		# once a second: each poll is a virsh and a python3 on the host (about 0.1 s of CPU
		# here) and a wakeup of the guest's agent; every 0.1 s that took about half a core
		# from the 2-core host while fio ran in the guest (sixth run and before)
		sleep 1
	done
	echo "$prog: guest command $1 did not end" >&2
	return 1
}

# fio_once -> "WRITE READ" in bytes/s: fio in a fresh boot of the Debian guest, same disk kind
fio_once() {
	rm -f "$work/root.qcow2" "$work/target.raw"
	qemu-img create -q -f qcow2 -b "${deb[2]}" -F qcow2 "$work/root.qcow2"
	fallocate -l $((bytes * 2)) "$work/target.raw"
	chmod 0666 "$work/root.qcow2" "$work/target.raw"
	cat >"$work/disk.xml" <<XML
    <disk type='file' device='disk'><driver name='qemu' type='raw' cache='none' io='threads'/>
      <source file='$work/target.raw'/><target dev='vdb' bus='virtio'/></disk>
XML
	local target=""
	[ "$attach" = hotplug ] || target="$(cat "$work/disk.xml")"
	cat >"$work/dom.xml" <<XML
<domain type='qemu'>
  <name>$dom</name>
  <memory unit='MiB'>1024</memory>
  <vcpu>2</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type><kernel>${deb[0]}</kernel>
    <initrd>${deb[1]}</initrd><cmdline>$cmdline</cmdline></os>
  <features><acpi/><apic/></features>
  <clock offset='utc'/>
  <devices>
    <controller type='usb' model='none'/>
    <disk type='file' device='disk'><driver name='qemu' type='qcow2'/>
      <source file='$work/root.qcow2'/><target dev='vda' bus='virtio'/></disk>
$target
    <channel type='unix'><target type='virtio' name='org.qemu.guest_agent.0'/></channel>
    <console type='pty'/>
    <memballoon model='none'/>
  </devices>
</domain>
XML
	virsh -q -c qemu:///system create "$work/dom.xml" >/dev/null
	local ok=0
	for ((t = 0; t < 300; t++)); do
		qga '{"execute": "guest-ping"}' >/dev/null 2>&1 && { ok=1; break; }
		sleep 1
	done
	[ "$ok" = 1 ] || { echo "$prog: the fio guest's agent did not answer in 300 s" >&2; return 1; }
	# the device the target is: the disk of the size we made (vda is the root)
	dev=/dev/vdb
	if [ "$attach" = hotplug ]; then
		virsh -q -c qemu:///system attach-device "$dom" "$work/disk.xml" --live >/dev/null
		ok=0
		for ((t = 0; t < 60; t++)); do
			gexec /bin/sh -c "{ true < $dev; } 2>/dev/null" >/dev/null 2>&1 && { ok=1; break; }
			sleep 1
		done
		[ "$ok" = 1 ] || { echo "$prog: the hot-plugged $dev did not open in 60 s" >&2; return 1; }
	fi
	local common w r
	common=(--filename="$dev" --bs=1M --ioengine=psync --iodepth=1 --direct=1 --size="$bytes"
		--output-format=json)
	sync; echo 3 >/proc/sys/vm/drop_caches
	gexec /bin/sh -c 'sync; echo 3 > /proc/sys/vm/drop_caches' >/dev/null
	w="$(gexec /usr/bin/fio --name=w --rw=write --end_fsync=1 "${common[@]}" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["jobs"][0]["write"]["bw_bytes"])')"
	sync; echo 3 >/proc/sys/vm/drop_caches
	gexec /bin/sh -c 'sync; echo 3 > /proc/sys/vm/drop_caches' >/dev/null
	r="$(gexec /usr/bin/fio --name=r --rw=read "${common[@]}" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["jobs"][0]["read"]["bw_bytes"])')"
	# in the same boot, ferry's own dd commands (block.c, queue depth 1) from a tmpfs staging
	# file, timed twice: by dd itself (its "copied, S s") and by ferry's guest clock around
	# them (method.c: /proc/timer_list read by the shell's read before and after): which part of a gap to
	# fio is dd, and which is the clock
	local dd
	dd="$(gexec /bin/sh -c "$(guest_dd_script)")"
	virsh -q -c qemu:///system destroy "$dom" >/dev/null
	echo "$w $r $dd"
}

# guest_dd_script -> a guest shell script printing "DDW DDR ZW SR MW" in bytes/s: ferry's write and
# read, dd from /dev/zero onto the device, the staging file read to /dev/null; and MW, the
# staging file written from its mapping
guest_dd_script() {
	cat <<SH
secs() { sed -n 's/.* copied, \([0-9.]*\) s.*/\1/p'; }
head -c $bytes /dev/urandom >/dev/shm/stage
sync; echo 3 >/proc/sys/vm/drop_caches
dd if=/dev/shm/stage of=$dev bs=1M count=$mib iflag=fullblock oflag=direct conv=sync,notrunc,fsync 2>/dev/shm/w.err
sync; echo 3 >/proc/sys/vm/drop_caches
dd if=$dev of=/dev/null bs=1M count=$mib iflag=direct 2>/dev/shm/r.err
dd if=/dev/zero of=$dev bs=1M count=$mib oflag=direct conv=notrunc,fsync 2>/dev/shm/z.err
dd if=/dev/shm/stage of=/dev/null bs=1M count=$mib 2>/dev/shm/s.err
m=\$(python3 -c '
import mmap, os, sys, time
n, dev = int(sys.argv[1]), sys.argv[2]
src = os.open("/dev/shm/stage", os.O_RDONLY)
view = memoryview(mmap.mmap(src, n, prot=mmap.PROT_READ))
out = os.open(dev, os.O_WRONLY | os.O_DIRECT)
t = time.monotonic()
done = 0
while done < n:
    done += os.write(out, view[done:done + 1048576])
os.fsync(out)
print(n / (time.monotonic() - t))
' $bytes $dev)
w=\$(secs </dev/shm/w.err); r=\$(secs </dev/shm/r.err); z=\$(secs </dev/shm/z.err); s=\$(secs </dev/shm/s.err)
rm -f /dev/shm/stage /dev/shm/w.err /dev/shm/r.err /dev/shm/z.err /dev/shm/s.err
awk -v b=$bytes -v w="\$w" -v r="\$r" -v z="\$z" -v s="\$s" -v m="\$m" \
	'BEGIN { printf "%.0f %.0f %.0f %.0f %.0f\\n", b / w, b / r, b / z, b / s, m }'
SH
}

load0="$(boot_load)"
echo "$prog: $n rounds, $size stream, fio's target attached at $attach, ferry $bin, Debian guest ${deb[2]}" >&2
: >"$work/rows"
for ((i = 1; i <= n; i++)); do
	a="$(ferry_once)" || exit 1
	b="$(fio_once)" || exit 1
	read -r fw fr <<<"$a"
	read -r xw xr dw dr zw sr mw <<<"$b"
	echo "$fw $fr $xw $xr $dw $dr $zw $sr $mw" >>"$work/rows"
	awk -v i="$i" -v n="$n" -v l="$(cut -d' ' -f1 /proc/loadavg)" '{
		printf "round %d/%d: write ferry %.1f fio %.1f MB/s (x%.2f) [fio boot: dd %.1f, dd from zeros %.1f, staging read %.1f, mapped write %.1f], read ferry %.1f fio %.1f MB/s (x%.2f) [fio boot: dd %.1f], load %s\n",
			i, n, $1/1e6, $3/1e6, $1/$3, $5/1e6, $7/1e6, $8/1e6, $9/1e6, $2/1e6, $4/1e6, $2/$4, $6/1e6, l }' <<<"$fw $fr $xw $xr $dw $dr $zw $sr $mw"
done
load1="$(boot_load)"
# per direction: the medians and ranges, and the ratio ferry/fio paired by round (the two boots of
# a round run back to back): its geometric mean with a 95% t interval over the rounds (n >= 2);
# "within 15%" only if the whole interval lies in [0.85, 1.15], "NOT within 15%" only if it lies
# wholly outside, else "cannot tell". The same for dd's own figure against fio in the same boot.
python3 - "$work/rows" <<'PY'
import math, statistics, sys
T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
       2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060,
       2.056, 2.052, 2.048, 2.045, 2.042]
rows = [[float(v) for v in l.split()] for l in open(sys.argv[1]) if l.strip()]
n = len(rows)
def ratio(num, den):
    logs = [math.log(r[num] / r[den]) for r in rows]
    g = math.exp(statistics.mean(logs))
    if n < 2:
        return g, None, None, "cannot tell (one round)"
    h = (T95[n - 2] if n - 2 < len(T95) else 1.96) * statistics.stdev(logs) / math.sqrt(n)
    lo, hi = math.exp(statistics.mean(logs) - h), math.exp(statistics.mean(logs) + h)
    v = ("within 15%" if lo >= 0.85 and hi <= 1.15 else
         "NOT within 15%" if hi < 0.85 or lo > 1.15 else "cannot tell")
    return g, lo, hi, v
def iv(lo, hi):
    return "" if lo is None else " [%.2f, %.2f]" % (lo, hi)
for k, d in ((0, "write"), (1, "read")):
    f, x = [r[k] for r in rows], [r[k + 2] for r in rows]
    dd = [r[k + 4] for r in rows]
    print("%s, in the fio boots: dd's own figure median %.1f MB/s" % (d, statistics.median(dd) / 1e6))
    q = statistics.median(f) / statistics.median(x)
    print("%s, n=%d each: ferry median %.1f MB/s (%.1f-%.1f), fio median %.1f MB/s (%.1f-%.1f): ratio of the medians x%.2f"
          % (d, n, statistics.median(f) / 1e6, min(f) / 1e6, max(f) / 1e6, statistics.median(x) / 1e6,
             min(x) / 1e6, max(x) / 1e6, q))
    g, lo, hi, v = ratio(k, k + 2)
    print("%s, ferry/fio paired by round: geometric mean x%.2f%s (95%% t interval), %s" % (d, g, iv(lo, hi), v))
    g, lo, hi, v = ratio(k + 4, k + 2)
    print("%s, dd's own/fio in the same boot: geometric mean x%.2f%s (95%% t interval), %s" % (d, g, iv(lo, hi), v))
# the write's parts in the fio boots: dd from /dev/zero against fio, and ferry's dd against what
# a write at fio's rate plus the staging read would take (1 / (1/fio + 1/staging read))
zw, sr = [r[6] for r in rows], [r[7] for r in rows]
print("write, in the fio boots: dd from /dev/zero median %.1f MB/s, the staging file read to /dev/null median %.1f MB/s"
      % (statistics.median(zw) / 1e6, statistics.median(sr) / 1e6))
g, lo, hi, v = ratio(6, 2)
print("write, dd from /dev/zero/fio in the same boot: geometric mean x%.2f%s (95%% t interval), %s" % (g, iv(lo, hi), v))
print("write, in the fio boots: the staging file's pages written from its mapping (mmap, O_DIRECT, fsync; python3's clock) median %.1f MB/s"
      % (statistics.median([r[8] for r in rows]) / 1e6))
g, lo, hi, v = ratio(8, 2)
print("write, mapped write/fio in the same boot: geometric mean x%.2f%s (95%% t interval), %s" % (g, iv(lo, hi), v))
for r in rows:
    r.append(1 / (1 / r[2] + 1 / r[7]))
g, lo, hi, v = ratio(4, 9)
print("write, dd's own/(fio's write plus the staging read) in the same boot: geometric mean x%.2f%s (95%% t interval), %s" % (g, iv(lo, hi), v))
PY
echo "load (1/5/15 min) before: $load0; after: $load1"
