#!/usr/bin/env bash
# The harness's share of the quickstart's wall time (issue 15): `ferry run --verbose` of
# plans/quickstart.yaml prints at its end where the wall time went (measured phases, boots,
# reset + cache drop, verify, guests destroyed, ...) and measured phases / wall less the KVM
# probe. Contestants run in turn (A, B, A, B, ...) so that the load of the machine hits both
# alike; the script prints each run's breakdown and the load average before and after it.
#
# A contestant is a ferry binary: --a BIN --b BIN (default A: /tmp/b-perf-old/ferry, B: this
# tree's build/ferry). Both use one cache directory (--cache, default $FERRY_CACHE_DIR or
# /var/cache/ferry: the built guest and the datasets), so that neither builds or generates
# anything while it is timed; the first run warms it when it is empty.
# Usage: bench/harness.sh [--rounds N] [--a BIN] [--b BIN] [--cache DIR] [--plan PLAN]
# Hold /work/e2e.lock (or the like) around it on a shared machine: other guests skew it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rounds=1
a="${FERRY_OLD:-/tmp/b-perf-old/ferry}"
b="${FERRY:-$here/build/ferry}"
cache="${FERRY_CACHE_DIR:-/var/cache/ferry}"
plan="$here/plans/quickstart.yaml"
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds="$2"; shift 2 ;;
	--a) a="$2"; shift 2 ;;
	--b) b="$2"; shift 2 ;;
	--cache) cache="$2"; shift 2 ;;
	--plan) plan="$2"; shift 2 ;;
	-h|--help) sed -n '2,13p' "$0"; exit 0 ;;
	*) echo "harness.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done

work="$(mktemp -d /tmp/ferry-bench-harness.XXXXXX)"
chmod 0755 "$work"
mkdir -m 0755 "$work/runs"
trap 'rm -rf "$work"' EXIT
# the plan's reports go to out/ under the working directory: the scratch folder's
cp "$plan" "$work/plan.yaml"

run_once() { # NAME BIN
	local name="$1" bin="$2" out
	echo "== $name: $bin"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M:%S) UTC"
	out="$(cd "$work" && FERRY_RUN_DIR="$work/runs" FERRY_CACHE_DIR="$cache" "$bin" run \
		--verbose --results "$work/r.json" "$work/plan.yaml" 2>&1 >/dev/null)" || {
		echo "harness.sh: $bin failed:" >&2; echo "$out" >&2; return 1; }
	rm -f "$work/r.json"
	echo "load after: $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M:%S) UTC"
	sed -n '/where the wall time/,$p' <<<"$out" | grep -v 'report:\|results:'
}

for ((i = 1; i <= rounds; i++)); do
	run_once "A (round $i)" "$a"
	run_once "B (round $i)" "$b"
done
