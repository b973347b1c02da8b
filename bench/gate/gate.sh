#!/bin/bash
# SPDX-License-Identifier: MIT
# The CI gate's experiment (docs/gate.md): the same plan run K times (A/A), then S runs with one
# cell's transfer slowed by MS milliseconds (FERRY_TEST_FAULT=slow=MS@CELL, a test-only fault of
# the libvirt driver) or, with MS written P%, by P% of each transfer's own time (slow=P%@CELL); each run is followed at once by its confirmation material (the plan again,
# BOOTS=3 blocks), as `ferry run --confirm 3` would rerun flagged cells. Every run takes the e2e
# lock for itself (the machine is shared). Then every ordered pair is gated with `ferry compare`
# and the figures are printed.
#   bash bench/gate/gate.sh run OUTDIR K [MS CELL]    measure K runs (clean, or slowed)
#   bash bench/gate/gate.sh alt OUTDIR K S MS CELL    K clean and S slowed runs, interleaved
#                                                     (the slowed ones spread evenly among them)
#   bash bench/gate/gate.sh eval OUTDIR [COMPARE-OPTIONS...]
#   bash bench/gate/gate.sh window OUTDIR W [COMPARE-OPTIONS...]   W clean runs as the baseline
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ferry=${FERRY:-$here/../../build/ferry}
plan=${FERRY_GATE_PLAN:-$here/gate.yaml}
lock=${FERRY_LOCK:-/work/e2e.lock}
cmd=$1 out=$2
shift 2
mkdir -p "$out"
one() { # kind ms cell: one run and its confirmation material, numbered after those in $out
	local kind=$1 ms=$2 cell=$3 n
	n=$(ls "$out" | grep -c "^$kind-[0-9]*\.json$" || true)
	n=$((n + 1))
	(
		[ -n "$ms" ] && export FERRY_TEST_FAULT="slow=$ms@$cell"
		flock "$lock" bash -c '
			"$0" run -q "$1" --results "$2/$3-$4.json" 2>>"$2/log" || true
			"$0" run -q "$1" --var FERRY_GATE_BOOTS=3 --results "$2/$3-$4.confirm.json" 2>>"$2/log" || true
		' "$ferry" "$plan" "$out" "$kind" "$n"
	)
	echo "$(date -u +%T) $kind-$n done (load $(cut -d' ' -f1-3 /proc/loadavg))"
	# let whoever waits for the lock have it before the next run takes it again
	sleep "${FERRY_GATE_PAUSE:-0}"
}
case $cmd in
alt)
	k=$1 s=$2 ms=$3 cell=$4
	# run i (0-based) of K+S is slowed when it is the first to pass the next multiple of
	# (K+S)/S: with K=6, S=3 the order is c s c c s c c s c
	t=$((k + s)) done_s=0
	for i in $(seq 0 $((t - 1))); do
		if [ $(((i + 1) * s)) -ge $(((done_s + 1) * t - t / 2)) ] && [ "$done_s" -lt "$s" ]; then
			one slow "$ms" "$cell"
			done_s=$((done_s + 1))
		else
			one clean "" ""
		fi
	done
	;;
run)
	k=$1 ms=${2:-} cell=${3:-}
	kind=clean
	[ -n "$ms" ] && kind=slow
	for i in $(seq 1 "$k"); do
		one "$kind" "$ms" "$cell"
	done
	;;
eval)
	fa=0 np=0 det=0 ns=0
	for b in "$out"/clean-[0-9]*.json; do
		[ "${b%.confirm.json}" = "$b" ] || continue
		for c in "$out"/clean-[0-9]*.json "$out"/slow-[0-9]*.json; do
			[ -e "$c" ] && [ "${c%.confirm.json}" = "$c" ] && [ "$b" != "$c" ] || continue
			conf=()
			[ -e "${c%.json}.confirm.json" ] && conf=(--confirm-with "${c%.json}.confirm.json")
			rc=0
			"$ferry" compare "$@" "${conf[@]}" --json "$out/cmp.json" --markdown "$out/cmp.md" "$b" "$c" || rc=$?
			case $(basename "$c") in
			clean-*) np=$((np + 1)); [ $rc = 1 ] && fa=$((fa + 1)) ;;
			slow-*) ns=$((ns + 1)); [ $rc = 1 ] && det=$((det + 1)) ;;
			esac
			echo "$(basename "$b") $(basename "$c") exit $rc"
		done
	done
	echo "A/A: $fa of $np ordered pairs failed the gate"
	echo "slowed: $det of $ns ordered pairs failed the gate"
	;;
window)
	# a history of W clean runs as the baseline (--baseline-window W, as docs/ci.md keeps it):
	# every run against every W of the other clean runs (the comparisons share runs, so they are
	# not independent trials)
	w=$1
	shift
	/usr/bin/python3 - "$ferry" "$out" "$w" "$@" <<'PY'
import glob, itertools, os, subprocess, sys
ferry, out, w, opts = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
runs = lambda kind: sorted(f for f in glob.glob(f"{out}/{kind}-*.json") if not f.endswith(".confirm.json"))
clean, slow = runs("clean"), runs("slow")
tally = {"clean": [0, 0], "slow": [0, 0]}
for kind, cands in (("clean", clean), ("slow", slow)):
    for c in cands:
        conf = c[:-5] + ".confirm.json"
        for b in itertools.combinations([x for x in clean if x != c], w):
            args = [ferry, "compare", *opts, "--baseline-window", str(w), "--json", f"{out}/cmp.json"]
            if os.path.exists(conf):
                args += ["--confirm-with", conf]
            rc = subprocess.run(args + list(b) + [c], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
            if rc not in (0, 1):
                sys.exit(f"ferry compare exited {rc}: {' '.join(args + list(b) + [c])}")
            tally[kind][0] += rc == 1
            tally[kind][1] += 1
            print(" ".join(os.path.basename(x) for x in b), "->", os.path.basename(c), "exit", rc)
print(f"A/A: {tally['clean'][0]} of {tally['clean'][1]} comparisons (window {w}) failed the gate")
print(f"slowed: {tally['slow'][0]} of {tally['slow'][1]} comparisons (window {w}) failed the gate")
PY
	;;
esac
