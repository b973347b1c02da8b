#!/usr/bin/env bash
# A/A on this machine (issue 23): bench/aa-identical.yaml (two VM configurations that are the
# same entries under two names) run N times with seeds S, S+1, ...; counts how often the pivot's
# verdicts (the results JSON's "verdicts", the same words as the Markdown) call a and b
# different, and prints every verdict with its interval, the wall time and the load of each run.
# Usage: bench/aa-identical.sh [--n N] [--seed S] [--out DIR] [--ferry BIN]
#        bench/aa-identical.sh --count DIR      (only count the runs already in DIR)
# Each run boots guests: hold the machine's e2e lock around each call (--n 1 --seed K per call
# splits the experiment into pieces).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
n=5 seed=1 out="" count_only=false
bin="${FERRY:-$here/build/ferry}"
while [ $# -gt 0 ]; do
	case "$1" in
	--n) n="$2"; shift 2 ;;
	--seed) seed="$2"; shift 2 ;;
	--out) out="$2"; shift 2 ;;
	--ferry) bin="$2"; shift 2 ;;
	--count) out="$2"; count_only=true; shift 2 ;;
	-h|--help) sed -n '2,9p' "$0"; exit 0 ;;
	*) echo "aa-identical.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
[ -n "$out" ] || out="$(mktemp -d /tmp/ferry-aa.XXXXXX)"
mkdir -p "$out"
if ! $count_only; then
	for ((i = seed; i < seed + n; i++)); do
		d="$out/seed-$i"
		rm -rf "$d" && mkdir -p "$d"
		load="$(cut -d' ' -f1 /proc/loadavg)"
		t0=$(date +%s.%N)
		(cd "$d" && "$bin" run --quiet --var FERRY_AA_SEED="$i" "$here/bench/aa-identical.yaml" \
			--json r.json --markdown r.md 2>log) || echo "aa-identical.sh: seed $i exited $?" >&2
		t1=$(date +%s.%N)
		echo "$load $(cut -d' ' -f1 /proc/loadavg) $(echo "$t1 - $t0" | bc)" >"$d/time"
	done
fi
/usr/bin/python3 - "$out" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
pairs = different = 0
for d in sorted(glob.glob(os.path.join(out, "seed-*")), key=lambda p: int(p.rsplit("-", 1)[1])):
    f = os.path.join(d, "r.json")
    if not os.path.exists(f):
        print(f"{os.path.basename(d)}: no results")
        continue
    r = json.load(open(f))
    t = open(os.path.join(d, "time")).read().split() if os.path.exists(os.path.join(d, "time")) else ["?"] * 3
    passed = sum(c["status"] == "passed" for c in r["cells"])
    print(f"{os.path.basename(d)}: {passed}/{len(r['cells'])} cells passed, {r['design']['blocks']} blocks, "
          f"wall {float(t[2]):.0f} s, load {t[0]} -> {t[1]}")
    for v in r.get("verdicts", []):
        pairs += 1
        diff = v["verdict"] in ("a-better", "b-better")
        different += diff
        print(f"  {'DIFFERENT ' if diff else ''}{v['table']}: {v['text']}")
print(f"a and b called different in {different} of {pairs} pairs"
      + (f" ({100 * different / pairs:.1f}%)" if pairs else ""))
PY
