#!/usr/bin/env bash
# Sharding on real guests: the three shards of a small plan, each run by its own `ferry run
# --shard K/3`, merged with `ferry merge`, equal the unsharded run cell for cell (same cells in
# the same order, same resolved parameters, measured runs present; timings differ), and each
# cell names its shard; a shard with no cell exits 4 (nothing measured) unless --allow-empty.
source "$(dirname "$0")/run-lib.sh"

plan="$src/tests/e2e/plans/run-merge.yaml"
run_ferry 0 "$plan" --results "$work/all.json"
for k in 1 2 3; do
	run_ferry 0 "$plan" --shard "$k/3" --results "$work/s$k.json"
	validate "$work/s$k.json"
done
"$ferry" merge -o "$work/merged.json" "$work/s2.json" "$work/s3.json" "$work/s1.json"
validate "$work/merged.json"
"$py" - "$work/all.json" "$work/merged.json" <<'PY'
import json, sys
whole, merged = (json.load(open(p)) for p in sys.argv[1:3])
ids = [c["id"] for c in whole["cells"]]
assert ids == [c["id"] for c in merged["cells"]], (ids, [c["id"] for c in merged["cells"]])
assert merged["plan"]["sha256"] == whole["plan"]["sha256"]
for i, (a, b) in enumerate(zip(whole["cells"], merged["cells"])):
    assert a["params"] == b["params"], a["id"]
    assert a["axes"] == b["axes"], a["id"]
    assert b["status"] == a["status"] == "passed", (a["id"], a["status"], b["status"])
    assert b["stats"]["total"]["n"] == a["stats"]["total"]["n"] == 2, a["id"]
    o = merged["origins"][b["origin"]]
    assert o["shard"] == {"k": i % 3 + 1, "n": 3}, (a["id"], o["shard"])
    assert o["provenance"]["hostname"] == whole["provenance"]["hostname"]
print("ok: 3 shards merged equal the unsharded run cell for cell:", ", ".join(ids))
PY
# reports of the merged file have the unsharded run's shape: same suites and test cases
for f in all merged; do
	"$ferry" report "$work/$f.json" --junit "$work/$f.xml"
	grep -o '<testcase name="[^"]*"' "$work/$f.xml" >"$work/$f.cases"
done
cmp "$work/all.cases" "$work/merged.cases" || fail "JUnit test cases of the merged file differ"
echo "ok: the merged JUnit report has the unsharded run's test cases"

# a shard without cells measured nothing: exit 4, unless --allow-empty
run_ferry 4 "$plan" --shard 4/4 --results "$work/empty.json"
grep -q "no cell produced a measured run" "$work/log" || fail "exit 4 without its message"
run_ferry 0 "$plan" --shard 4/4 --results "$work/empty2.json" --allow-empty
echo "ok: an empty shard exits 4, 0 with --allow-empty"
