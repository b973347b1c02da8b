#!/usr/bin/env bash
# run.fresh restore on a real guest: the agent-file cells run in guests restored from a saved
# state (results: fresh "restore" on every run, one boot id per run), each run's landed bytes
# verified; the 9p share cell boots instead and the log says why (fresh "boot"); the results
# file is valid; no domain, no saved state and no run directory is left behind, after a normal
# end and after a SIGINT while a restored guest runs and its saved state is on disk.
source "$(dirname "$0")/run-lib.sh"

res="$work/results.json"
run_ferry 0 "$src/tests/e2e/plans/run-restore.yaml" --verbose --results "$res"
validate "$res"

st="$(query "$res" 'sorted((c["id"], c["status"]) for c in r["cells"])')"
[ "$(query "$res" 'sum(c["status"] == "passed" for c in r["cells"])')" = 3 ] ||
	fail "expected 3 passed cells: $st"
ok="$(query "$res" 'sorted({x["integrity_ok"] for c in r["cells"] for x in c["runs"]})')"
[ "$ok" = "[True]" ] || fail "every run's landed bytes must verify: $ok"
fresh="$(query "$res" 'sorted((c["id"].split("method=")[1], sorted({x.get("fresh") for x in c["runs"]})) for c in r["cells"])')"
[ "$fresh" = "[('af', ['restore']), ('af', ['restore']), ('sh', ['boot'])]" ] ||
	fail "fresh per cell (agent-file restored, share booted): $fresh"
boots="$(query "$res" 'len({x["boot"] for c in r["cells"] for x in c["runs"]})')"
[ "$boots" = 6 ] || fail "expected a guest per run (6 boot ids), got $boots"
grep -q "restored ferry-" "$work/log" || fail "no 'restored' line in the log"
grep -q "boots instead of restoring a saved state: a shared folder" "$work/log" ||
	fail "the log does not say why the share cell boots"
[ "$(grep -c "boots instead of restoring" "$work/log")" = 1 ] ||
	fail "the reason should be said once per configuration"
echo "ok: restored guests for agent-file (bytes verified), the share cell booted and said why"

# SIGINT while a restored guest runs: exit 130, and the saved state goes with the run directory
"$ferry" run "$src/tests/e2e/plans/run-restore.yaml" --verbose --results "$work/sigint.json" \
	2>"$work/log" &
pid=$!
for _ in $(seq 1 900); do
	grep -q "restored ferry-" "$work/log" && break
	kill -0 "$pid" 2>/dev/null || { cat "$work/log" >&2; fail "ferry ended before a restore"; }
	sleep 0.2
done
grep -q "restored ferry-" "$work/log" || { kill -INT "$pid"; fail "no restored guest within 180 s"; }
saved="$(find "$FERRY_RUN_DIR" -name '*.save' | head -1)"
[ -n "$saved" ] || { kill -INT "$pid"; fail "no saved state on disk while a restored guest runs"; }
interrupt "$pid"
[ ! -e "$saved" ] || fail "the saved state $saved is left after SIGINT"
echo "ok: SIGINT with a restored guest running: exit 130, no domain, saved state or run directory left"
