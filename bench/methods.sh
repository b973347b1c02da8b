#!/usr/bin/env bash
# Every transfer method next to the ceiling of its transport, on the same built-in guest (same
# kernel, initramfs, 1 vCPU, 512 MiB, TCG), for one large file and for many small ones.
#
# Interleaved: for each method, round after round, one ferry measurement then one ceiling
# measurement of each case, so that what the machine does meanwhile hits both alike. Round 0 is
# a warmup on both sides and is not counted; the figures are the medians of rounds 1..--repeat.
# Both sides are timed on the host the same way: a monotonic clock around guest commands started
# with guest-exec and waited for by polling guest-exec-status (ferry's agent_exec(), which
# bench/guest-time.c uses too).
#
# ferry:   per round one `ferry run` of a plan with that method only (both datasets, landing on
#          guest RAM; block on a raw virtio disk), one warmup run then repeat 1, caches dropped;
#          its own figure per method (see FERRY_PHASES below): the phases that move the bytes.
#          The warmup: each `ferry run` boots a new VM, whose first run would still share the
#          vCPU with the end of the boot (modules the built-in guest loads behind the agent),
#          while the ceiling's domain has long settled (its modules are loaded untimed). block:
#          the raw disk `allocation: full` (its fresh image per run written out untimed), so
#          that the measured dd writes allocated blocks, as the ceiling's dd does after its
#          round 0 (a fresh sparse image, ferry's default, adds the host's first-write
#          allocation, which no ceiling here pays).
# ceiling: the simplest hand-made equivalent, on a domain this script boots by hand (virsh) from
#          the same guest files with the devices of every method, caches dropped before each:
#   agent-file  guest-file-open, guest-file-write of CHUNK raw bytes (base64) in a loop, close
#               (bench/agent-write.c); every chunk size of --chunks in round 0, the best then
#   channel     raw bytes written into the virtio-serial port's socket, the guest's `dd bs=64K`
#               (ferry's reader) into a file in RAM, to the end of the stream (the host closes once
#               QEMU took every byte, as ferry does), its size checked; from connect to the guest
#               command's end. (Until Dec 1 11:30 UTC the guest ran `head -c`: busybox's copies
#               byte by byte through getc/putchar, ~4x slower than the port under TCG.)
#   network     one `wget` in the guest of one file from a trivial host server on 127.0.0.1
#               (python http.server, already listening; the guest sees 10.0.2.2 on the
#               ceiling's own unrestricted user networking). ferry's pull runs on its private
#               network (nic backend private: a tap on a bridge in a namespace), since on its
#               restricted user networking the guest reaches nothing of the host and a pull is
#               skipped (issue 24 class 7): the ratio compares the transports too
#   share       a 9p mount (msize 512000, cache none: ferry's defaults), one `cp -r`, umount
#   disk-image  a prebuilt ext4 image: hot-plug, wait for the device, mount, `cp -r`
#   block       `dd bs=1M oflag=direct conv=fsync` from guest RAM to a raw virtio disk
# Small files: the same number of 4 KiB files per method (network: one tar of them, as one
# file); what the methods do per file shows as the ratio falls.
#
# Usage: bench/methods.sh [--ferry BIN] [--cache DIR] [--large-mib N] [--small-files N]
#                         [--repeat N] [--chunks "64 96 128"] [--only "agent-file channel ..."]
#                         [--ferry-chunk K] [--lock FILE] [--keep DIR]
# --ferry-chunk K: agent-file's chunk_size in ferry's plan, K KiB (default: ferry's default); a
# chunk-size sweep runs the script once per size with --chunks K --ferry-chunk K.
# --lock FILE: hold FILE (flock) for each method's rounds, not between methods (a shared
# machine: /work/e2e.lock keeps other guests from booting meanwhile). --keep DIR: keep the
# ferry results and the samples there. Needs root (virsh, 9p), python3.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ferry="${FERRY:-$here/build/ferry}"
cache="${FERRY_CACHE_DIR:-/var/cache/ferry}"
large_mib=16
small_files=128
repeat=3
chunks="64 96 128"
only="agent-file channel network share disk-image block"
lock=""
keep=""
fchunk=""
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
	--ferry-chunk) fchunk="$2"; shift 2 ;;
	--lock) lock="$2"; shift 2 ;;
	--keep) keep="$2"; shift 2 ;;
	-h|--help) sed -n '2,44p' "$0"; exit 0 ;;
	*) echo "methods.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
[ -x "$ferry" ] || { echo "methods.sh: no ferry binary at '$ferry'" >&2; exit 2; }
bdir="$(dirname "$ferry")/bench"
aw="${BENCH_AGENT_WRITE:-$bdir/bench-agent-write}"
gt="${BENCH_GUEST_TIME:-$bdir/bench-guest-time}"
for x in "$aw" "$gt"; do
	[ -x "$x" ] || { echo "methods.sh: no '$x' (build bench/)" >&2; exit 2; }
done
py=/usr/bin/python3
export FERRY_CACHE_DIR="$cache"

work="$(mktemp -d /var/tmp/ferry-bench-methods.XXXXXX)"
chmod 0755 "$work"
dom="ferry-bench-methods-$$"
srv_pid=""
cleanup() {
	virsh -c "$uri" destroy "$dom" >/dev/null 2>&1 || true
	[ -z "$srv_pid" ] || kill "$srv_pid" 2>/dev/null || true
	[ -z "$keep" ] || { mkdir -p "$keep"; cp "$work"/*.json "$work"/samples.tsv "$keep"/ 2>/dev/null || true; }
	rm -rf "$work"
}
trap cleanup EXIT
log() { echo "methods.sh: $*" >&2; }

# ---------------------------------------------------------------- data, images, the domain
eval "$("$ferry" guest info --json | "$py" -c '
import json, sys, shlex
m = json.load(sys.stdin)
print("gkernel=" + shlex.quote(m["kernel"]["path"]), "ginitrd=" + shlex.quote(m["initramfs"]["path"]),
      "gcmdline=" + shlex.quote(m["cmdline"]))')"
mkdir -m 0755 "$work/runs" "$work/share" "$work/www" "$work/img"
"$ferry" dataset gen --files 1 --size "${large_mib}MiB" --seed 1 --dir "$work/share/large" >/dev/null
"$ferry" dataset gen --files "$small_files" --size 4KiB --seed 2 --dir "$work/share/small" >/dev/null
rm -f "$work"/share/*/.ferry* 2>/dev/null || true
chmod -R a+rX "$work/share"
cp "$work"/share/large/* "$work/www/large"
tar -C "$work/share/small" -cf "$work/www/small" .
for c in large small; do
	mke2fs -q -t ext4 -m 0 -d "$work/share/$c" "$work/img/$c.raw" $((large_mib * 2 + 8))M >/dev/null
	printf "<disk type='file' device='disk'><driver name='qemu' type='raw'/><source file='%s'/><target dev='vdb' bus='virtio'/><readonly/><serial>benchimg</serial></disk>\n" \
		"$work/img/$c.raw" >"$work/img/$c.xml"
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
g() { "$gt" "$uri" "$dom" exec "$1" >/dev/null; } # untimed guest command
g "modprobe -a 9pnet_virtio 9p ext4; mkdir -p /land /mnt/img /mnt/share; mount -t tmpfs -o size=160m tmpfs /land"
port=$((20000 + RANDOM % 20000))
(cd "$work/www" && exec "$py" -m http.server -b 127.0.0.1 "$port" >/dev/null 2>&1) &
srv_pid=$!
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; g "sync; echo 3 > /proc/sys/vm/drop_caches"; }

# ---------------------------------------------------------------- one ceiling measurement
best_chunk=128
ceiling() { # METHOD CASE ROUND -> seconds on stdout
	local m="$1" c="$2" r="$3" src="$work/www/$2" t
	drop
	case "$m" in
	agent-file)
		if [ "$r" = 0 ] && [ "$c" = large ]; then # round 0: every chunk size, keep the best
			local k bt=""
			for k in $chunks; do
				t="$("$aw" "$uri" "$dom" $((k * 1024)) /land "$src")"
				g "rm -rf /land/*"
				log "agent-file ceiling, $k KiB chunks: $t s"
				if [ -z "$bt" ] || awk -v a="$t" -v b="$bt" 'BEGIN {exit !(a < b)}'; then
					bt="$t"; echo "$k" >"$work/best-chunk"
				fi
			done
			echo "$bt"
			return
		fi
		# (ceiling runs in a command substitution: the best chunk size comes back in a file)
		[ ! -s "$work/best-chunk" ] || best_chunk="$(cat "$work/best-chunk")"
		if [ "$c" = large ]; then
			"$aw" "$uri" "$dom" $((best_chunk * 1024)) /land "$src"
		else
			"$aw" "$uri" "$dom" $((best_chunk * 1024)) /land "$work"/share/small/*
		fi
		g "rm -rf /land/*" ;;
	channel)
		"$gt" "$uri" "$dom" channel "$work/port.sock" "$src" \
			"dd if=/dev/virtio-ports/bench.0 of=/land/chan.bin bs=65536 2>/dev/null && [ \$(stat -c %s /land/chan.bin) -eq $(stat -c %s "$src") ]"
		g "rm -f /land/chan.bin" ;;
	network)
		"$gt" "$uri" "$dom" exec "wget -q -O /land/net.bin http://10.0.2.2:$port/$c"
		g "rm -f /land/net.bin" ;;
	share)
		"$gt" "$uri" "$dom" exec "mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=none,ro benchshare /mnt/share && cp -r /mnt/share/$c/. /land/ && umount /mnt/share"
		g "rm -rf /land/*" ;;
	disk-image)
		"$gt" "$uri" "$dom" attach "$work/img/$c.xml" \
			"while [ ! -b /dev/vdb ]; do usleep 2000; done; mount -o ro,noload /dev/vdb /mnt/img && cp -r /mnt/img/. /land/"
		g "umount /mnt/img"
		"$gt" "$uri" "$dom" detach "$work/img/$c.xml" "while [ -b /dev/vdb ]; do usleep 2000; done" >/dev/null
		g "rm -rf /land/*" ;;
	block)
		"$gt" "$uri" "$dom" exec "dd if=/run/block.bin of=/dev/vda bs=1M oflag=direct conv=fsync 2>/dev/null" ;;
	esac
}

# ---------------------------------------------------------------- one ferry measurement
plan_for() { # METHOD -> plan file
	local m="$1" spec disk=ram nic=""
	case "$m" in
	agent-file) spec="{type: agent-file${fchunk:+, chunk_size: ${fchunk}KiB}}" ;;
	channel) spec="{type: channel}" ;;
	network) spec="{type: network}"; nic=", nic: {backend: private}" ;;
	share) spec="{type: share, driver: 9p}" ;;
	disk-image) spec="{type: disk-image, filesystem: ext4}" ;;
	block) spec="{type: block, block_size: 1MiB, queue_depth: 1}"; disk=raw ;;
	esac
	cat >"$work/plan-$m.yaml" <<PLAN
ferry: 1
name: bench-methods-$m
vms:
  tiny: {guest: builtin, vcpus: 1, memory: 512MiB, accel: tcg$nic}
disks:
  ram: {kind: tmpfs, size: 160MiB}
  raw: {format: raw, size: $((large_mib * 2))MiB, bus: virtio, cache: none, io: native, allocation: full}
datasets:
  large: {files: 1, size: ${large_mib}MiB, seed: 1}
  small: {files: $small_files, size: 4KiB, seed: 2}
methods:
  $m: $spec
matrix:
  vm: [tiny]
  disk: [$disk]
  dataset: [large, small]
  method: [$m]
run: {repeat: 1, warmup: 1, caches: drop, vm: shared, timeout: 10m}
PLAN
	echo "$work/plan-$m.yaml"
}
# ferry's figure per method: the phases that move the bytes (its own throughput is bytes over
# prepare+transfer+finalize; disk-image's prepare builds the image, which the ceiling has
# prebuilt, and its finalize unplugs it; block's prepare stages the bytes in guest RAM, as the
# ceiling does untimed, and its finalize reads them back)
ferry_once() { # METHOD ROUND -> "large-seconds small-seconds" on stdout
	local m="$1" r="$2" plan out="$work/ferry-$1-$2.json"
	plan="$(plan_for "$m")"
	FERRY_RUN_DIR="$work/runs" "$ferry" run --quiet --results "$out" "$plan" >/dev/null ||
		log "ferry run of $m exited with $? (round $r)"
	"$py" - "$out" "$m" <<'PY'
import json, sys
FERRY_PHASES = {"agent-file": ["prepare", "transfer", "finalize"],
                "channel": ["prepare", "transfer", "finalize"],
                "network": ["prepare", "transfer", "finalize"],
                "share": ["prepare", "transfer", "finalize"],
                "disk-image": ["transfer"], "block": ["transfer"]}
got = {}
try:
    for c in json.load(open(sys.argv[1]))["cells"]:
        runs = [x for x in c.get("runs", []) if not x["warmup"] and x.get("integrity_ok")]
        if runs:
            got[c["axes"]["dataset"]] = "%.3f" % sum(runs[0]["phases"][p] or 0 for p in FERRY_PHASES[sys.argv[2]])
except (OSError, ValueError, KeyError):
    pass
print(got.get("large", "nan"), got.get("small", "nan"))
PY
}

# ---------------------------------------------------------------- the rounds
: >"$work/samples.tsv"
for m in $only; do
	[ -z "$lock" ] || { exec 9>"$lock"; flock 9; }
	log "$m: $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
	if [ "$m" = block ]; then # the bytes staged in guest RAM first (untimed), as ferry's block does
		for c in large small; do "$aw" "$uri" "$dom" 131072 /run "$work/www/$c" >/dev/null; done
	fi
	for ((r = 0; r <= repeat; r++)); do
		read -r fl fs < <(ferry_once "$m" "$r")
		for c in large small; do
			[ "$m" != block ] || g "cp /run/$c /run/block.bin"
			t="$(ceiling "$m" "$c" "$r")" || t=nan
			f="$fl"; [ "$c" = large ] || f="$fs"
			printf '%s\t%s\t%s\t%s\t%s\n' "$m" "$c" "$r" "$f" "$t" >>"$work/samples.tsv"
			log "$m $c round $r: ferry $f s, ceiling $t s"
		done
	done
	[ "$m" != block ] || g "rm -f /run/large /run/small /run/block.bin"
	log "$m: done $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
	[ -z "$lock" ] || { flock -u 9; exec 9>&-; }
done

# ---------------------------------------------------------------- the table
[ ! -s "$work/best-chunk" ] || best_chunk="$(cat "$work/best-chunk")"
"$py" - "$work/samples.tsv" $((large_mib * 1048576)) $((small_files * 4096)) "$best_chunk" "${fchunk:-default}" <<'PY'
import math, statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
nbytes = {"large": int(sys.argv[2]), "small": int(sys.argv[3])}
note = {"agent-file": "guest-file-write loop, %s KiB chunks (ferry: %s)" % (sys.argv[4], sys.argv[5]),
        "channel": "raw bytes into the port, guest dd bs=64K",
        "network": "one wget of one file (small: a tar)",
        "share": "9p mount + cp -r + umount", "disk-image": "hot-plug + mount + cp -r (prebuilt)",
        "block": "dd bs=1M oflag=direct"}
def med(v):
    v = [x for x in v if not math.isnan(x)]
    return statistics.median(v) if v else float("nan")
print("%-11s %-6s %9s %9s %7s %7s %6s  %s" % ("method", "files", "ferry", "ceiling", "ferry", "ceiling", "ratio", "ceiling is"))
print("%-11s %-6s %9s %9s %7s %7s %6s" % ("", "", "MB/s", "MB/s", "s", "s", ""))
seen = []
for m, *_ in rows:
    if m not in seen:
        seen.append(m)
for m in seen:
    for c in ("large", "small"):
        s = [r for r in rows if r[0] == m and r[1] == c and r[2] != "0"]
        if not s:
            continue
        f = med([float(r[3]) for r in s]); t = med([float(r[4]) for r in s])
        # the ratio of the medians of the times, i.e. of throughputs of the same bytes
        print("%-11s %-6s %9.2f %9.2f %7.2f %7.2f %6.2f  %s" % (m, c, nbytes[c] / f / 1e6, nbytes[c] / t / 1e6, f, t, t / f, note[m]))
print("samples (round: ferry s / ceiling s), round 0 = warmup, not counted:")
for m in seen:
    for c in ("large", "small"):
        s = [r for r in rows if r[0] == m and r[1] == c]
        print("  %-11s %-6s %s" % (m, c, "  ".join("%s: %s/%s" % (r[2], r[3], r[4]) for r in s)))
PY
