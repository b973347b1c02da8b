#!/usr/bin/env bash
# run.order interleaved across VM configurations on real guests: two cells under vm: per-cell
# take turns (their runs' start times alternate), each cell's runs share its one boot (its guest
# was kept while the other measured), a guest of the run was seen paused (virDomainSuspend)
# while the other ran, the results file is valid, and nothing is left behind.
source "$(dirname "$0")/run-lib.sh"

res="$work/results.json"
"$ferry" run "$src/tests/e2e/plans/run-interleave.yaml" --results "$res" 2>"$work/log" &
pid=$!
paused=0
while kill -0 "$pid" 2>/dev/null; do
	if virsh -c qemu:///system list --state-paused --name 2>/dev/null | grep -q -- "-$pid-"; then
		paused=1
	fi
	sleep 0.2
done
st=0
wait "$pid" || st=$?
cat "$work/log" >&2
[ "$st" = 0 ] || fail "ferry run exited with $st, expected 0"
check_clean "$pid"
validate "$res"

passed="$(query "$res" 'sum(c["status"] == "passed" for c in r["cells"])')"
[ "$passed" = 2 ] || fail "expected 2 passed cells, got $passed"
# the runs of both cells by start time: the cells alternate
order="$(query "$res" '"".join("AB"[i] for _, i in sorted((x["started"], i) for i, c in enumerate(r["cells"]) for x in c["runs"]))')"
[ "$order" = "ABAB" ] || fail "runs by start time: $order, expected ABAB (interleaved)"
# one boot per cell, kept across the other cell's turn
boots="$(query "$res" '[sorted({x["boot"] for x in c["runs"]}) for c in r["cells"]]')"
[ "$boots" = "[[1], [2]]" ] || fail "boots per cell: $boots, expected [[1], [2]]"
grep -q "2 boots;" "$work/log" || fail "expected one guest per cell (2 boots)"
[ "$paused" = 1 ] || fail "no guest of the run was ever seen paused"
echo "ok: runs alternate ($order), one boot per cell, a guest paused while the other measured"
