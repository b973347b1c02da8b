#!/usr/bin/env bash
# The metrics of a run (ferry(1) METRICS) on a real guest under TCG, tests/e2e/plans/run-metrics.yaml:
# block and disk-image report non-zero write/read throughput, block also timed by the guest's clock; the sparse qcow2 target holds at
# least the 8 MiB written and shrinks again after delete + trim (discard: true); QEMU's CPU time
# over the transfer is positive; every metric is described in the file and summarized per cell;
# the results file is valid against its schema; the reports carry the metrics.
source "$(dirname "$0")/run-lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (qemu:///system)"; exit 77; }

res="$work/results.json"
run_ferry 0 "$src/tests/e2e/plans/run-metrics.yaml" --results "$res" --quiet
validate "$res"

"$py" - "$res" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
names = ["write_throughput", "read_throughput", "guest_write_throughput", "guest_read_throughput",
         "alloc_before", "alloc_after", "alloc_growth",
         "alloc_deleted", "cpu_guest", "cpu_qemu"]
print("| cell | " + " | ".join(names) + " |")
for c in r["cells"]:
    m = c["stats"].get("metrics", {})
    print("| %s | %s |" % (c["id"].split("method=")[1], " | ".join(
        "%.4g" % m[k]["median"] if k in m else "-" for k in names)))
PY

bad="$(query "$res" '[i for i, c in cells.items() if not (c["status"] == "passed" and
	len([x for x in c["runs"] if not x["warmup"] and x["integrity_ok"]]) == 2)]')"
[ "$bad" = "[]" ] || fail "cells not passed with 2 verified runs: $bad"

# check METRIC CELL CONDITION: every run of the cell has the metric and x (its value) meets it
check() {
	local got
	got="$(query "$res" "[x['metrics'].get('$1') for x in cells['vm=tiny,disk=qcow,dataset=large,method=$2']['runs'] if not (x['metrics'] and '$1' in x['metrics'] and (lambda x, m: $3)(x['metrics']['$1'], x['metrics']))]")"
	[ "$got" = "[]" ] || fail "$2: $1 is not $3 in every run: $got"
}
mib8=8388608
for m in block-1m image-ext4 image-inplace; do
	check cpu_qemu "$m" "x > 0"
	check cpu_guest "$m" "x >= 0"
	check alloc_before "$m" "x > 0"
	check alloc_after "$m" "x >= m['alloc_before']"
	check alloc_growth "$m" "x == m['alloc_after'] - m['alloc_before']"
	check alloc_deleted "$m" "x <= m['alloc_after']"
done
check write_throughput block-1m "x > 0"
check read_throughput block-1m "x > 0"
check write_throughput image-ext4 "x > 0"
check read_throughput image-inplace "x > 0"
# block's dd commands timed by the guest's own clock: there, and inside the host's view of the
# same commands (the host's time adds the agent's round trip and its polling)
check guest_write_time block-1m "x > 0"
check guest_read_time block-1m "x > 0"
check guest_write_throughput block-1m "x >= m['write_throughput']"
check guest_read_throughput block-1m "x >= m['read_throughput']"
# the sparse target holds the data written to it (block overwrites some blocks the empty ext4
# had allocated, so its growth can be a little less than 8 MiB), and gives it back after delete
# + trim
check alloc_after block-1m "x >= $mib8"
check alloc_after image-ext4 "x >= $mib8"
check alloc_growth block-1m "x >= $mib8 - m['alloc_before']"
check alloc_growth image-ext4 "x >= $mib8 - m['alloc_before']"
check alloc_deleted block-1m "x < m['alloc_after'] - $mib8 / 2"
check alloc_deleted image-ext4 "x < m['alloc_after'] - $mib8 / 2"
# reading in place writes nothing; copying reads nothing it reports
none="$(query "$res" "[k for k, m in [('image-inplace', 'write_throughput'), ('image-ext4', 'read_throughput')] if any(x['metrics'] and m in x['metrics'] for x in cells['vm=tiny,disk=qcow,dataset=large,method=' + k]['runs'])]")"
[ "$none" = "[]" ] || fail "metrics reported where nothing was measured: $none"
# described with unit and direction, summarized over the measured runs
desc="$(query "$res" '[(k, r["metrics"][k]["unit"], r["metrics"][k]["better"]) for k in ["write_throughput", "alloc_after", "cpu_qemu"]]')"
[ "$desc" = "[('write_throughput', 'B/s', 'higher'), ('alloc_after', 'B', 'lower'), ('cpu_qemu', 's', 'lower')]" ] ||
	fail "metric descriptions: $desc"
n="$(query "$res" 'cells["vm=tiny,disk=qcow,dataset=large,method=block-1m"]["stats"]["metrics"]["write_throughput"]["n"]')"
[ "$n" = 2 ] || fail "write_throughput summarized over $n runs, expected 2"
echo "ok: 3 cells passed; throughput, allocation and CPU metrics recorded and plausible"
