#!/usr/bin/env bash
# The null method on a real guest under TCG: every cell passes, every run records 0 bytes and
# 0 files (nothing moved, nothing pretended), its transfer phase takes the plan's duration, the
# warmup is not counted, one guest per disk, the results file is valid, nothing is left
# behind.
source "$(dirname "$0")/run-lib.sh"

res="$work/results.json"
run_ferry 0 "$src/tests/e2e/plans/run-null.yaml" --results "$res"
validate "$res"

passed="$(query "$res" 'sum(c["status"] == "passed" for c in r["cells"])')"
[ "$passed" = 2 ] || fail "expected 2 passed cells, got $passed"
moved="$(query "$res" 'sorted({(x["bytes"], x["files"]) for c in r["cells"] for x in c["runs"]})')"
[ "$moved" = "[(0, 0)]" ] || fail "the null method claims to have moved data: $moved"
runs="$(query "$res" '[(len(c["runs"]), c["stats"]["total"]["n"]) for c in r["cells"]]')"
[ "$runs" = "[(3, 2), (3, 2)]" ] || fail "runs (all, measured) per cell: $runs"
short="$(query "$res" '[x["phases"]["transfer"] for c in r["cells"] for x in c["runs"] if x["phases"]["transfer"] < 0.3]')"
[ "$short" = "[]" ] || fail "transfer phases shorter than the 300ms duration: $short"
grep -q "2 boots;" "$work/log" || fail "expected one guest per disk (2 boots)"
echo "ok: null moved nothing, took its duration, on tmpfs and a fresh qcow2 disk"
