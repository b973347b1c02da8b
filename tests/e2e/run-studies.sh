#!/usr/bin/env bash
# The five study plans (plans/copy-methods, disk-allocation, disk-bus-cache, network-queues,
# shares; issue 13) run end to end, scaled down through their own variables: every cell of every
# plan runs once (no warmup) on a tiny dataset, passes and verifies every byte, none is skipped
# (a skip here would be a plan that cannot run on the machine it was written for); the results
# file is valid against its schema, the JUnit against Jenkins' and Ant's XSDs, the Markdown has
# the plan's table (the metric pivot where the plan asks for one); nothing is left behind.
# Usage: run-studies.sh [PLAN...]: those plans only (the test suite runs one plan per test, so
# that the e2e tests run two at a time pack well); no argument: all five.
source "$(dirname "$0")/run-lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (qemu:///system, the private network)"; exit 77; }
command -v xmllint >/dev/null || { echo "SKIP: xmllint is not installed"; exit 77; }

# one block of one run per cell (the plans warn that one block answers nothing: expected here)
once=(--var FERRY_BOOTS_MIN=1 --var FERRY_BOOTS_MAX=1 --var FERRY_RUNS_PER_BOOT=1 --var FERRY_WARMUP=0)
# a small real directory tree every Debian has (base-files), for the allocation study's path:
tree=/usr/share/common-licenses
[ -d "$tree" ] || { echo "SKIP: $tree is missing"; exit 77; }

# study PLAN METRIC-HEADING VARS...: runs the plan scaled down, checks its results and reports
study() {
	local plan="$1" heading="$2"
	shift 2
	local out="$work/$plan"
	mkdir -p "$out"
	local t0=$SECONDS
	(cd "$work" && run_ferry 0 "$src/plans/$plan.yaml" --allow-output "$out" --quiet \
		--json "$out/r.json" --junit "$out/r.xml" --markdown "$out/r.md" "${once[@]}" "$@")
	validate "$out/r.json"
	for xsd in junit-10.xsd ant-junit.xsd; do
		xmllint --noout --schema "$src/fixtures/xsd/$xsd" "$out/r.xml" ||
			fail "$plan: JUnit not valid against $xsd"
	done
	local want
	want="$("$ferry" expand "$src/plans/$plan.yaml" "${once[@]}" "$@" | tail -1)"
	"$py" - "$out/r.json" "$plan" "$want" <<'PY' || fail "$plan: not every cell passed and verified"
import json, sys
r = json.load(open(sys.argv[1]))
plan, want = sys.argv[2], int(sys.argv[3].split()[0])
cells = r["cells"]
assert len(cells) == want, (plan, len(cells), want)
for c in cells:
    measured = [x for x in c["runs"] if not x["warmup"]]
    assert c["status"] == "passed", (c["id"], c["status"], c.get("skip_reason"), c.get("errors"))
    assert len(measured) == 1 and all(x["integrity_ok"] for x in measured), (c["id"], measured)
PY
	grep -q "^| " "$out/r.md" || fail "$plan: no table in the Markdown report"
	# the metric pivot's heading, as the report escapes it (read\_throughput)
	[ -z "$heading" ] || grep -qF -- "### Mean ${heading//_/\\_}" "$out/r.md" ||
		fail "$plan: the Markdown report has no $heading table"
	echo "ok: $plan: $want, all passed and verified ($((SECONDS - t0)) s)"
	[ ! -e "$work/out" ] || fail "$plan: the plan's own report paths were written besides the options'"
}

# debian_guest PLAN: the Debian guest, whose smbd the plan's SMB cells need, built at the first
# need (cached after; the suite's run-debian builds it too)
debian_guest() {
	"$ferry" guest build debian >"$work/debian.out" 2>"$work/debian.log" || {
		cat "$work/debian.log" >&2
		fail "$1: ferry guest build debian failed"
	}
}

# the study plans and their scaled-down settings
run_study() {
	case "$1" in
	disk-bus-cache)
		study disk-bus-cache guest_read_throughput --var FERRY_BUS_SIZE=2MiB \
			--var FERRY_BUS_SMALL=256KiB --var FERRY_BUS_DISK=16MiB ;;
	disk-allocation)
		study disk-allocation alloc_growth --var FERRY_ALLOC_TREE="$tree" \
			--var FERRY_ALLOC_DISK=64MiB --var FERRY_ALLOC_FILE=1MiB
		# study 001's copies inside the guest: write cells timed onto the target, read cells back
		# from it, each on the guest's clock; the dd files are 1 MiB each
		"$py" - "$work/disk-allocation/r.json" <<'PY' || fail "disk-allocation: a copy not timed in the guest or not of the dataset"
import json, sys
r = json.load(open(sys.argv[1]))
for c in r["cells"]:
    x = [x for x in c["runs"] if not x["warmup"]][0]
    m = "guest_write_time" if c["axes"]["method"] == "write" else "guest_read_time"
    assert x["metrics"].get(m, 0) > 0, (c["id"], x["metrics"])
    if c["axes"]["dataset"] in ("zeros", "random"):
        assert (x["files"], x["bytes"]) == (1, 1 << 20), (c["id"], x["files"], x["bytes"])
    print("# %s: transfer %.3f s, %s %.3f s" % (c["id"], x["phases"]["transfer"], m, x["metrics"][m]))
PY
		;;
	copy-methods)
		debian_guest copy-methods
		study copy-methods "" --var FERRY_COPY_LARGE=16KiB --var FERRY_COPY_FILES=16 \
			--var FERRY_COPY_DISK=64MiB ;;
	shares) study shares "" --var FERRY_SHARES_DISK=64MiB ;;
	network-queues)
		debian_guest network-queues
		study network-queues "" --var FERRY_NET_FILE_SIZE=1KiB --var FERRY_V2V_FILES=50 ;;
	*) fail "unknown study plan '$1'" ;;
	esac
}

[ $# -gt 0 ] || set -- disk-bus-cache disk-allocation copy-methods shares network-queues
for p in "$@"; do
	run_study "$p"
done
