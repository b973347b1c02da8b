#!/usr/bin/env bash
# The guest-copy method end to end under TCG (tests/e2e/plans/run-guest-copy.yaml): study 001's
# copies inside the guest, scaled down. A 3 MiB file of random bytes and a real tree, written
# from the source disk onto the target (cp) and read back from the target onto the source disk
# (tar): every cell passes with every byte verified where the copy landed, the run moved the
# dataset's files and bytes, and the copy's time on the guest's own clock is recorded
# (guest_write_time for write, guest_read_time for read) and is not more than the host's time
# of the transfer phase. Nothing is left behind: no domain and no run directory (the source
# images live there); and the same after SIGINT while a long copy's source disk is plugged.
source "$(dirname "$0")/run-lib.sh"
tree=/usr/share/common-licenses
[ -d "$tree" ] || { echo "SKIP: $tree is missing"; exit 77; }

res="$work/results.json"
run_ferry 0 "$src/tests/e2e/plans/run-guest-copy.yaml" --var FERRY_GC_TREE="$tree" \
	--results "$res" --verbose
validate "$res"
"$py" - "$res" "$tree" <<'PY' || fail "not every cell passed with its copy verified and timed in the guest"
import json, os, sys
r = json.load(open(sys.argv[1]))
tree = sys.argv[2]
n = b = 0
for root, dirs, files in os.walk(tree):
    for f in files:
        p = os.path.join(root, f)
        if os.path.isfile(p) and not os.path.islink(p):
            n += 1
            b += os.path.getsize(p)
want = {"file": (1, 3 << 20), "tree": (n, b)}
assert len(r["cells"]) == 4, [c["id"] for c in r["cells"]]
print("| cell | files | bytes | transfer s | guest s |")
for c in r["cells"]:
    assert c["status"] == "passed", (c["id"], c.get("errors"), c.get("skip_reason"))
    runs = [x for x in c["runs"] if not x["warmup"]]
    assert len(runs) == 1 and runs[0]["integrity_ok"], (c["id"], runs)
    x = runs[0]
    ds, m = c["axes"]["dataset"], c["axes"]["method"]
    assert (x["files"], x["bytes"]) == want[ds], (c["id"], x["files"], x["bytes"], want[ds])
    metric = "guest_write_time" if m == "write" else "guest_read_time"
    other = "guest_read_time" if m == "write" else "guest_write_time"
    g = x["metrics"].get(metric)
    assert g is not None and 0 < g <= x["phases"]["transfer"], (c["id"], x["metrics"], x["phases"])
    assert other not in x["metrics"], (c["id"], x["metrics"])
    print("| %s | %d | %d | %.3f | %.3f |" % (c["id"], x["files"], x["bytes"], x["phases"]["transfer"], g))
PY
echo "ok: write (cp) and read back (tar) of a random file and a real tree, every byte verified, timed in the guest; nothing left behind"

# SIGINT while a long copy's source disk is plugged: 2 s after its image appears in the run
# directory (the host builds it, then the guest mounts it and puts 256 MiB on the target)
"$ferry" run "$src/tests/e2e/plans/run-guest-copy-sigint.yaml" --results "$work/sigint.json" \
	--verbose 2>"$work/log" &
pid=$!
seen=
for _ in $(seq 1 3000); do
	kill -0 "$pid" 2>/dev/null || break
	if find "$FERRY_RUN_DIR" -name 'gc-source-*.raw' 2>/dev/null | grep -q .; then
		seen=1
		break
	fi
	sleep 0.1
done
[ -n "$seen" ] || { wait "$pid" || true; cat "$work/log" >&2; fail "the interrupted run never built its source disk"; }
sleep 2
interrupt "$pid"
echo "ok: SIGINT with the source disk plugged: exit 130, no domain, image or run directory left"
