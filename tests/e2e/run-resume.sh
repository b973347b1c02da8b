#!/usr/bin/env bash
# SIGINT during `ferry run`: it cleans up, writes the results (finished cells kept, the rest
# pending) and exits 130; `--resume` then runs exactly the cells that were not finished, and the
# merged results have the shape of an uninterrupted run (every cell passed with a warmup and 2
# measured runs).
source "$(dirname "$0")/run-lib.sh"

plan="$src/tests/e2e/plans/run-resume.yaml"
res="$work/resume.json"

"$ferry" run "$plan" --results "$res" 2>"$work/log" &
pid=$!
# interrupt once the first cell is finished (the results file is rewritten after every cell)
for _ in $(seq 1 600); do
	if [ -s "$res" ] && [ "$(query "$res" 'sum(c["status"] == "passed" for c in r["cells"])')" -ge 1 ]; then
		break
	fi
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.5
done
interrupt "$pid"
validate "$res"
done1="$(query "$res" 'sorted(i for i, c in cells.items() if c["status"] == "passed")')"
pending="$(query "$res" 'sum(c["status"] == "pending" for c in r["cells"])')"
[ "$pending" -ge 1 ] || fail "nothing pending after the interrupt: $done1"
npassed="$(query "$res" 'sum(c["status"] == "passed" for c in r["cells"])')"
start1="$(query "$res" '{i: c["started"] for i, c in cells.items() if c["status"] == "passed"}')"

run_ferry 0 "$plan" --resume "$res"
validate "$res"
# exactly the missing cells ran: one "[i/N]" line per pending cell, and the finished cells kept
# their start times
ran="$(grep -c '^ferry: \[[0-9]*/[0-9]*\]' "$work/log")"
[ "$ran" = "$pending" ] || fail "resume ran $ran cells, expected $pending"
grep -q "\[1/$pending\]" "$work/log" || fail "resume did not count $pending cells"
start2="$(query "$res" "{i: c['started'] for i, c in cells.items() if i in $done1}")"
[ "$start1" = "$start2" ] || fail "finished cells were run again: $start1 vs $start2"
# warmups are kept in the record but not counted in the statistics
shape="$(query "$res" '[ (c["status"], len(c["runs"]), sum(x["warmup"] for x in c["runs"]), c["stats"]["total"]["n"]) for c in r["cells"]]')"
[ "$shape" = "[('passed', 3, 1, 2), ('passed', 3, 1, 2), ('passed', 3, 1, 2), ('passed', 3, 1, 2)]" ] ||
	fail "merged results: $shape"
echo "ok: interrupted after $npassed cell(s), exit 130, resume ran the $pending missing cells"
