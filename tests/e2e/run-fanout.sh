#!/bin/bash
# e2e: one run fanned out over two libvirt "hosts": two TCP forwarders of the test's own (socat on
# 127.0.0.1 only) to this machine's libvirtd, so that ferry takes the remote path for each.
#  1. Both hosts run cells, at the same time (the cells' run intervals overlap across hosts); one
#     results file, valid against the schema, every cell passed and naming its host; nothing left
#     (no domain, no run volume, no run directory).
#  2. A plan of two cells; the forwarder of host 2 is killed while its guest boots: host 2 is
#     reported with why, its cell goes to host 1 and passes there; the results name the lost
#     host; nothing is left of host 1's units and no domain of host 2's (auto-destroy); the run
#     volumes host 2's unit could not delete over its dead connection are deleted by
#     `ferry doctor --reap --connect URI`, as a user would once the host is back.
source "$(dirname "$0")/run-lib.sh"

command -v socat >/dev/null || { echo "SKIP: socat is not installed (scripts/setup.sh)"; exit 77; }
command -v setsid >/dev/null || { echo "SKIP: setsid is not installed"; exit 77; }
plan="$src/tests/e2e/plans/run-fanout.yaml"
fwds=()
cleanup() {
	for f in "${fwds[@]}"; do kill -- "-$f" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

# forwarder PORT: a socat of its own process group (killed as a whole: one process per connection)
forwarder() {
	setsid socat TCP-LISTEN:"$1",bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:/var/run/libvirt/libvirt-sock &
	fwds+=($!)
	for _ in $(seq 1 50); do virsh -c "qemu+tcp://127.0.0.1:$1/system" version >/dev/null 2>&1 && return; sleep 0.1; done
	fail "forwarder on port $1 does not answer"
}
p1="$(free_port)"
forwarder "$p1"
p2="$(free_port)"
forwarder "$p2"
u1="qemu+tcp://127.0.0.1:$p1/system"
u2="qemu+tcp://127.0.0.1:$p2/system"

# run_fanout RESULTS LOG PLAN (hook=FUNCTION: called while it runs): runs the plan over both hosts in the background, records the
# run ids of its units (their run directories) in $work/runids while it runs
run_fanout() {
	"$ferry" run --verbose --connect "$u1" --connect "$u2" --results "$1" "$3" 2>"$2" &
	pid=$!
	: >"$work/runids"
	while kill -0 "$pid" 2>/dev/null; do
		ls "$FERRY_RUN_DIR" >>"$work/runids" 2>/dev/null || true
		[ -n "${hook:-}" ] && "$hook"
		sleep 0.2
	done
	st=0
	wait "$pid" || st=$?
	sort -u -o "$work/runids" "$work/runids"
}

# left RUNID...: domains and pool volumes of those runs still on the host
left() {
	local r out=""
	for r in "$@"; do
		out+="$(virsh -c qemu:///system list --all --name | grep -F -- "ferry-$r-" || true)"
		out+="$(virsh -c qemu:///system vol-list ferry 2>/dev/null | awk '{print $1}' | grep -F -- "ferry-$r-" || true)"
	done
	echo "$out"
}

# ---- 1. two hosts at once ----
t0=$(date +%s.%N)
run_fanout "$work/r1.json" "$work/log1" "$plan"
t1=$(date +%s.%N)
cat "$work/log1" >&2
[ "$st" = 0 ] || fail "the fan-out exited with $st"
validate "$work/r1.json"
[ -z "$(ls -A "$FERRY_RUN_DIR")" ] || fail "run directories left: $(ls -A "$FERRY_RUN_DIR")"
[ -s "$work/runids" ] || fail "no run directory of a unit was seen"
l="$(left $(cat "$work/runids"))"
[ -z "$l" ] || fail "left behind by the fan-out: $l"
grep -q "host 1 ($u1) runs " "$work/log1" || fail "progress does not show host 1 running a cell"
grep -q "host 2 ($u2) runs " "$work/log1" || fail "progress does not show host 2 running a cell"
"$py" - "$work/r1.json" "$u1" "$u2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
hosts = [o["host"] for o in r["origins"]]
assert sorted(hosts) == sorted(sys.argv[2:4]), hosts
by_host = {}
for c in r["cells"]:
    assert c["status"] == "passed", (c["id"], c["status"])
    o = r["origins"][c["origin"]]
    assert o["provenance"]["qemu_version"] and o["provenance"]["libvirt_version"], o
    assert o["provenance"]["accelerator"] == "tcg", o["provenance"]["accelerator"]
    assert "remote libvirt host" in o["provenance"]["host_kernel"], o["provenance"]["host_kernel"]
    by_host.setdefault(o["host"], []).append(c)
assert len(by_host) == 2, {h: [c["id"] for c in cs] for h, cs in by_host.items()}
# concurrency: a cell of one host ran while a cell of the other ran
a, b = by_host.values()
overlap = any(x["started"] < y["finished"] and y["started"] < x["finished"] for x in a for y in b)
assert overlap, [(c["id"], c["started"], c["finished"]) for c in r["cells"]]
boots = [run["boot"] for c in r["cells"] for run in c["runs"]]
assert len(set(boots)) == len(boots) == 4, boots
print("ok: 4 cells over 2 hosts, overlapping; hosts:",
      {h: [c["id"].split("method=")[1] for c in cs] for h, cs in by_host.items()})
PY
echo "fan-out wall: $(echo "$t1 - $t0" | bc) s"

# ---- 2. host 2's connection dies mid-run ----
kill_host2() {
	# once host 2's unit has a domain (its guest boots: seconds under TCG, before the cell can
	# end), its forwarder dies
	[ -z "${killed:-}" ] || return 0
	local p
	p="$(sed -n "s/^ferry: host 2 (.*) runs .*(process \([0-9]*\))$/\1/p" "$work/log2" | head -1)"
	[ -n "$p" ] || return 0
	if virsh -c qemu:///system list --name | grep -q -- "-$p-"; then
		kill -- "-${fwds[1]}"
		killed=1
	fi
}
killed=
hook=kill_host2 run_fanout "$work/r2.json" "$work/log2" "$src/tests/e2e/plans/run-fanout-lost.yaml"
cat "$work/log2" >&2
[ -n "$killed" ] || fail "host 2 never started a guest: nothing was killed"
[ "$st" = 0 ] || fail "the fan-out with a lost host exited with $st (every cell could run on host 1)"
validate "$work/r2.json"
grep -q "host 2 ($u2) failed: " "$work/log2" || fail "the lost host is not reported"
[ -z "$(ls -A "$FERRY_RUN_DIR")" ] || fail "run directories left: $(ls -A "$FERRY_RUN_DIR")"
"$py" - "$work/r2.json" "$u1" "$u2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
o = {x["host"]: x for x in r["origins"]}
assert len(r["cells"]) == 2, [c["id"] for c in r["cells"]]
for c in r["cells"]:
    assert c["status"] == "passed", (c["id"], c["status"], c.get("errors"))
    assert not c.get("errors"), (c["id"], c["errors"])
    # host 2 died during its first cell: that cell ran again on host 1
    assert r["origins"][c["origin"]]["host"] == sys.argv[2], (c["id"], c["origin"])
lost = [x for x in r["origins"] if x.get("lost")]
assert [x["host"] for x in lost] == [sys.argv[3]], r["origins"]
assert "connection" in lost[0]["lost"], lost[0]["lost"]
print("ok: host 2 lost (%s); both cells passed on host 1: %s" % (
    lost[0]["lost"],
    {c["id"].split("method=")[1]: r["origins"][c["origin"]]["host"] for c in r["cells"]}))
PY
# the units of host 1 left nothing; host 2's unit could not clean up over its dead connection
h1=() h2=()
for r in $(cat "$work/runids"); do
	p="${r##*-}"
	if grep -q "host 2 ($u2) runs .*(process $p)" "$work/log2"; then h2+=("$r"); else h1+=("$r"); fi
done
[ "${#h1[@]}" -gt 0 ] || fail "no unit of host 1 was seen"
l="$(left "${h1[@]}")"
[ -z "$l" ] || fail "left behind by host 1's units: $l"
for r in "${h2[@]}"; do
	[ -z "$(virsh -c qemu:///system list --all --name | grep -F -- "ferry-$r-")" ] ||
		fail "a domain of the lost host's unit $r is still there (auto-destroy)"
done
# what the lost host's unit left (its run volumes) is what `ferry doctor --reap --connect URI`
# deletes once the host is reachable again: its process is gone and no domain uses them. Host
# 2 is the same libvirtd as host 1, so host 1's connection reaches them.
"$ferry" doctor --reap --connect "$u1" >"$work/doctor" 2>&1 || true
l="$(left "${h2[@]}")"
[ -z "$l" ] || fail "ferry doctor --reap --connect left the lost host's $l: $(cat "$work/doctor")"
grep -q "reaped [1-9][0-9]* stale run volume" "$work/doctor" ||
	fail "doctor --reap reaped no run volume of the lost host: $(cat "$work/doctor")"
echo "ok: fan-out over two hosts, then host 2 lost mid-run; nothing of host 1's left"
