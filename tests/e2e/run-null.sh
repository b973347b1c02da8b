#!/usr/bin/env bash
# The null method on a real guest under TCG: every cell passes, every run records 0 bytes and
# 0 files (nothing moved, nothing pretended), its transfer phase takes the plan's duration, the
# warmup is not counted, one guest for all four disks (tmpfs targets and hot-plugged virtio
# images are no part of the boot: the guest switches its target, tmpfs -> qcow2 -> raw -> tmpfs),
# each cell sampling its own disk, the results file is valid, nothing is left behind.
source "$(dirname "$0")/run-lib.sh"

res="$work/results.json"
run_ferry 0 "$src/tests/e2e/plans/run-null.yaml" --verbose --results "$res"
validate "$res"

passed="$(query "$res" 'sum(c["status"] == "passed" for c in r["cells"])')"
[ "$passed" = 4 ] || fail "expected 4 passed cells, got $passed"
moved="$(query "$res" 'sorted({(x["bytes"], x["files"]) for c in r["cells"] for x in c["runs"]})')"
[ "$moved" = "[(0, 0)]" ] || fail "the null method claims to have moved data: $moved"
runs="$(query "$res" '[(len(c["runs"]), c["stats"]["total"]["n"]) for c in r["cells"]]')"
[ "$runs" = "[(3, 2), (3, 2), (3, 2), (3, 2)]" ] || fail "runs (all, measured) per cell: $runs"
short="$(query "$res" '[x["phases"]["transfer"] for c in r["cells"] for x in c["runs"] if x["phases"]["transfer"] < 0.3]')"
[ "$short" = "[]" ] || fail "transfer phases shorter than the 300ms duration: $short"
grep -q "1 boot;" "$work/log" || fail "expected one guest for the four disks (1 boot)"
for sw in "'ram' to 'qcow2'" "'qcow2' to 'raw'" "'raw' to 'ram2'"; do
	grep -q "switched .* from disk $sw" "$work/log" || fail "no switch from disk $sw"
done
boots="$(query "$res" 'sorted({x["boot"] for c in r["cells"] for x in c["runs"]})')"
[ "$boots" = "[1]" ] || fail "the runs of every cell should have boot 1: $boots"
# the host allocation of the target image is sampled on the image cells' targets, never on tmpfs
alloc="$(query "$res" '[(c["id"].split("disk=")[1].split(",")[0], sorted({"alloc_before" in (x.get("metrics") or {}) for x in c["runs"]})) for c in r["cells"]]')"
[ "$alloc" = "[('ram', [False]), ('qcow2', [True]), ('raw', [True]), ('ram2', [False])]" ] ||
	fail "alloc_before per cell (only qcow2 and raw are images): $alloc"
echo "ok: null moved nothing, took its duration, on tmpfs and fresh qcow2 and raw disks, one guest"
