#!/usr/bin/env bash
# Verify at the speed of the transfer (issue 29): is verify at most half of the transfer it checks
# on the quickstart's image cells? plans/quickstart.yaml with method image only (disk-image, ext4;
# tmpfs and virtio qcow2 landing disks; 8 x 1 MiB and 200 x 4 KiB), run --rounds times, each round
# twice in alternating order: with FERRY_VERIFY_HASH=sha256 (sha256sum in the guest, the verify of
# before) and as ferry runs by default (ferry-sum, XXH3-128, in the built-in guest). Prints per
# cell and hash: measured runs, median verify and transfer, and the median and range of the
# per-run ratio verify/transfer, with the host's load.
# Then where verify's time goes (--probe-reps R, 0: skip): one idle built-in guest (the
# quickstart's VM) with the same two datasets written to its /tmp, and R times each of: an empty
# command (`true`: guest-exec and the polling of guest-exec-status), reading the files (cat), the
# SHA-256 listing and the ferry-sum listing, timed from the host as ferry times a phase
# (bench-guest-time: guest-exec to its exit) and inside the guest (/proc/timer_list).
# Usage: bench/verify.sh [--rounds N] [--probe-reps R] [--ferry BIN]. Hold /work/e2e.lock
# around it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rounds=3
reps=5
bin="${FERRY:-$here/build/ferry}"
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds="$2"; shift 2 ;;
	--probe-reps) reps="$2"; shift 2 ;;
	--ferry) bin="$2"; shift 2 ;;
	-h|--help) sed -n '2,15p' "$0"; exit 0 ;;
	*) echo "verify.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
for v in "$rounds" "$reps"; do
	case "$v" in '' | *[!0-9]*) echo "verify.sh: --rounds and --probe-reps take numbers" >&2; exit 2 ;; esac
done
gt="$(dirname "$bin")/bench/bench-guest-time"
[ -x "$gt" ] || { echo "verify.sh: $gt is not built (ninja -C build)" >&2; exit 1; }
"$bin" guest info --json | grep -q '"ferry_sum"' ||
	{ echo "verify.sh: the built-in guest has no ferry-sum: run 'ferry guest build'" >&2; exit 1; }
work="$(mktemp -d /tmp/ferry-bench-verify.XXXXXX)"
chmod 0755 "$work"
mkdir -m 0755 "$work/runs"
export FERRY_RUN_DIR="$work/runs"
: >"$work/pids"
cleanup() {
	local p
	for p in $(cat "$work/pids"); do kill -INT "$p" 2>/dev/null || true; done
	for p in $(cat "$work/pids"); do
		while kill -0 "$p" 2>/dev/null; do sleep 0.2; done
	done
	rm -rf "$work"
}
trap cleanup EXIT

# the quickstart with its image cells only
python3 - "$here/plans/quickstart.yaml" "$work/plan.yaml" <<'PY'
import sys
text = open(sys.argv[1]).read()
old = "  method: [agent, image]\n"
if old not in text:
    sys.exit("verify.sh: plans/quickstart.yaml has no '%s' line any more" % old.strip())
open(sys.argv[2], "w").write(text.replace(old, "  method: [image]\n"))
PY

load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "bench/verify.sh: $rounds rounds, $(nproc) host CPUs, load at start $(load)"
for r in $(seq 1 "$rounds"); do
	order="sha256 xxh128"
	[ $((r % 2)) = 0 ] && order="xxh128 sha256"
	for h in $order; do
		env=()
		[ "$h" = sha256 ] && env=(FERRY_VERIFY_HASH=sha256)
		(cd "$work" && env "${env[@]}" "$bin" run --quiet --results "$work/$h-$r.json" \
			plan.yaml >/dev/null 2>"$work/$h-$r.log") ||
			{ cat "$work/$h-$r.log" >&2; echo "verify.sh: the $h run of round $r failed" >&2; exit 1; }
		echo "round $r: $h done, load $(load)"
	done
done
python3 - "$work" "$rounds" <<'PY'
import json, statistics as st, sys
work, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for h in ("sha256", "xxh128"):
    for r in range(1, rounds + 1):
        for c in json.load(open("%s/%s-%d.json" % (work, h, r)))["cells"]:
            for run in c["runs"]:
                if run["warmup"]:
                    continue
                got = run.get("verify_hash")
                if got != h:
                    sys.exit("verify.sh: a %s run of %s verified by %s" % (h, c["id"], got))
                ph = run["phases"]
                rows.setdefault((c["id"], h), []).append((ph["verify"], ph["transfer"]))
print()
print("%-44s %-6s %3s %8s %9s %7s %13s" % ("cell", "hash", "n", "verify", "transfer", "ratio", "ratio range"))
for (cid, h), runs in sorted(rows.items()):
    v = [a for a, _ in runs]
    t = [b for _, b in runs]
    q = [a / b for a, b in runs]
    print("%-44s %-6s %3d %7.3fs %8.3fs %7.2f %6.2f..%-5.2f" % (
        cid.replace("vm=tiny,", "").replace(",method=image", ""), h, len(runs),
        st.median(v), st.median(t), st.median(q), min(q), max(q)))
PY
echo "load at the end $(load)"

[ "$reps" -gt 0 ] || exit 0
# ---- where verify's time goes: one idle guest of the quickstart's VM ----
cat >"$work/idle.yaml" <<'PLAN'
ferry: 1
name: verify-probe
vms:
  tiny: {guest: builtin, vcpus: 2, memory: 512MiB}
disks:
  ram: {kind: tmpfs, size: 64MiB}
datasets:
  one: {files: 1, size: 4KiB}
methods:
  idle: {type: null, duration: 10m}
run: {repeat: 1, vm: per-cell, timeout: 15m}
PLAN
"$bin" run --verbose --results "$work/idle.json" "$work/idle.yaml" >/dev/null 2>"$work/idle.log" &
pid=$!
echo "$pid" >>"$work/pids"
for _ in $(seq 1 1200); do
	grep -q 'booted' "$work/idle.log" && break
	kill -0 "$pid" 2>/dev/null || { cat "$work/idle.log" >&2; exit 1; }
	sleep 0.5
done
dom="$(virsh -c qemu:///system list --name | grep -- "-$pid-" | head -1)"
[ -n "$dom" ] || { echo "verify.sh: the idle guest did not start" >&2; exit 1; }
# gexec CMD: CMD's standard output (guest-exec with capture, polled like ferry's agent_exec)
gexec() {
	local j p st
	j="$(python3 -c 'import json,sys;print(json.dumps({"execute":"guest-exec","arguments":{"path":"/bin/sh","arg":["-c",sys.argv[1]],"capture-output":True}}))' "$1")"
	p="$(virsh -c qemu:///system qemu-agent-command "$dom" "$j" |
		python3 -c 'import json,sys;print(json.load(sys.stdin)["return"]["pid"])')"
	while :; do
		st="$(virsh -c qemu:///system qemu-agent-command "$dom" \
			"{\"execute\":\"guest-exec-status\",\"arguments\":{\"pid\":$p}}")"
		case "$st" in *'"exited":true'*) break ;; esac
		sleep 0.05
	done
	python3 -c 'import json,sys,base64;r=json.loads(sys.argv[1])["return"];sys.stdout.write(base64.b64decode(r.get("out-data","")).decode())' "$st"
}
gexec 'mkdir -p /tmp/L /tmp/S /tmp/E && for i in 0 1 2 3 4 5 6 7; do
	dd if=/dev/urandom of=/tmp/L/f$i bs=1M count=1 2>/dev/null; done; i=0
	while [ $i -lt 200 ]; do dd if=/dev/urandom of=/tmp/S/s$i bs=4K count=1 2>/dev/null
	i=$((i+1)); done; sync' >/dev/null
probes=(
	'true'
	'cat /tmp/L/* >/dev/null'
	'cd /tmp/L && find . -type f -exec sha256sum {} + >/dev/null'
	'cd /tmp/L && ferry-sum >/dev/null'
	'cd /tmp/S && find . -type f -exec sha256sum {} + >/dev/null'
	'cd /tmp/S && ferry-sum >/dev/null'
	'cd /tmp/E && sha256sum /dev/null >/dev/null'
	'cd /tmp/E && ferry-sum >/dev/null'
)
echo
echo "where verify's time goes: $reps reps each, one idle guest (2 vCPUs, TCG), load $(load)"
# inside the guest: one command times every probe by the guest's clock
inner='ns() { awk "/^now at /{print \$3; exit}" /proc/timer_list; }'
for p in "${probes[@]}"; do
	q="$(printf '%s' "$p" | sed "s/'/'\\\\''/g")"
	inner="$inner; a=\$(ns); sh -c '$q'; b=\$(ns); echo \$(( (b - a) / 1000 ))"
done
declare -A host guest
for _ in $(seq 1 "$reps"); do
	i=0
	for p in "${probes[@]}"; do
		host[$i]="${host[$i]:-} $("$gt" qemu:///system "$dom" exec "$p")"
		i=$((i + 1))
	done
	i=0
	for us in $(gexec "$inner"); do
		guest[$i]="${guest[$i]:-} $us"
		i=$((i + 1))
	done
done
printf '%-62s %12s %12s\n' "guest command" "host median" "guest median"
i=0
for p in "${probes[@]}"; do
	python3 - "$p" "${host[$i]}" "${guest[$i]}" <<'PY'
import statistics as st, sys
h = [float(x) for x in sys.argv[2].split()]
g = [float(x) / 1e6 for x in sys.argv[3].split()]
print("%-62s %10.3f s %10.3f s  (n=%d)" % (sys.argv[1][:62], st.median(h), st.median(g), len(h)))
PY
	i=$((i + 1))
done
echo "load at the end $(load)"
