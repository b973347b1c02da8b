#!/usr/bin/env bash
# docs/ci.md's recipe as six successive pipelines of the default branch on this machine: each
# runs the plan gated against the history of the earlier ones (--baseline history
# --baseline-window 5, the plan's gate and confirmation), renders the trend from the history, and
# adds its results to the history, keeping the last 5. Pipelines 1 to 5 run identical code and
# must pass (the first has no history yet); pipeline 6 runs with cell a's transfer slowed by
# 300 ms (FERRY_TEST_FAULT=slow=300@CELL, doubling its total) and must fail with exit 1, its
# JUnit report and results naming cell a (and not b), after a rerun that confirmed it.
source "$(dirname "$0")/run-lib.sh"

plan="$src/tests/e2e/plans/run-gate-ci.yaml"
cell() { echo "vm=tiny,disk=ram,dataset=one,method=$1"; }
cd "$work"
mkdir history out

# pipeline N [ENV...]: the recipe's steps; the run's exit status in $st
pipeline() {
	local i="$1" baseline=()
	shift
	if ls history/*.json >/dev/null 2>&1; then
		baseline=(--baseline history --baseline-window 5)
	fi
	st=0
	env "$@" "$ferry" run "${baseline[@]}" --results "out/results-$i.json" \
		--junit "out/results-$i.xml" "$plan" 2>"out/log-$i" &
	local pid=$!
	wait "$pid" || st=$?
	cat "out/log-$i" >&2
	check_clean "$pid"
	echo "--- pipeline $i: exit $st"
}

# the default branch keeps its results: the history, the last 5
keep() {
	cp "out/results-$1.json" "history/results-$1.json"
	ls -t history/*.json | tail -n +6 | xargs -r rm -f
	"$ferry" trend -o out/trend.md history/*.json
	grep -q "$(cell a)" out/trend.md || fail "the trend does not show cell a"
}

for i in 1 2 3 4 5; do
	pipeline "$i"
	[ "$st" = 0 ] || fail "pipeline $i (identical code) exited $st: $(grep -i 'regress\|error' "out/log-$i")"
	keep "$i"
done
[ "$(ls history | wc -l)" = 5 ] || fail "the history does not hold 5 results"
grep -q 'compared with 4 baselines' out/log-5 || fail "pipeline 5 did not pool 4 baselines: $(cat out/log-5)"

pipeline 6 FERRY_TEST_FAULT="slow=300@$(cell a)"
[ "$st" = 1 ] || fail "pipeline 6 (cell a slowed by 300 ms) exited $st, expected 1"
# the first stage screens at 80%: cell b, unchanged, may be suspected beside a now and then;
# only the rerun's test decides, and only a fails (below)
grep -Eq "suspected regression in [12] cells?: rerunning (it|them) in 3 new blocks" out/log-6 ||
	fail "pipeline 6 did not rerun the suspected cell: $(cat out/log-6)"
[ -f out/results-6.confirm.json ] || fail "the rerun's results are missing"
"$py" - out/results-6.json out/results-6.xml "$(cell a)" "$(cell b)" <<'PY'
import json, sys, xml.etree.ElementTree as ET
r = json.load(open(sys.argv[1]))
a, b = sys.argv[3], sys.argv[4]
cells = {c["id"]: c for c in r["cells"]}
errs = [e for e in cells[a].get("errors", []) if e["kind"] == "regression"]
assert cells[a]["status"] == "failed" and errs, cells[a]["status"]
assert "regression of total" in errs[0]["message"], errs[0]["message"]
assert not [e for e in cells[b].get("errors", []) if e["kind"] == "regression"], cells[b]
failed = [s.get("name") for s in ET.parse(sys.argv[2]).getroot().iter("testsuite")
          if s.find(".//failure") is not None]
assert failed and all(a in n for n in failed), failed
print("ok: pipeline 6 failed on %s: %s" % (a, errs[0]["message"]))
PY
echo "ok: five identical pipelines passed, the sixth failed and named $(cell a)"
