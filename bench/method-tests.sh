#!/usr/bin/env bash
# CPU of the method unit tests on the fake machine (issue 22: every method's tests "under a few
# seconds of CPU for all of them, also under valgrind"): the test programs of two builds run in
# turn (A, B, A, B, ...), each timed by /usr/bin/time with its children (the fake guests' init,
# their shells and programs, the host's ssh and mke2fs): user + system seconds and wall seconds.
# The script prints each run, the medians per build and B/A of the medians.
#
# A build is a directory with the test programs and ferry-fake-init beside them (a build tree's
# tests/, or a copy of one): --a DIR --b DIR (default B: this tree's build-ci/tests). The fake
# guests' ferry-sum comes from FERRY_BUILD_DIR (default: this tree's build-ci) for both.
# Usage: bench/method-tests.sh --a DIR [--b DIR] [--rounds N] [--valgrind] [TEST...]
#   TEST: test program names (default: test-method-runs test-method-runs-edges test-vm2vm)
#   --valgrind: under valgrind as `meson test --setup valgrind` runs them (memcheck, leak check)
# Needs root (the fake guests' namespaces and loop devices). Hold /work/e2e.lock (or the like)
# around it on a shared machine: other work on the cores skews it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
a=""
b="$here/build-ci/tests"
rounds=3
vg=()
tests=()
while [ $# -gt 0 ]; do
	case "$1" in
	--a) a="$2"; shift 2 ;;
	--b) b="$2"; shift 2 ;;
	--rounds) rounds="$2"; shift 2 ;;
	--valgrind) vg=(valgrind --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect
		--errors-for-leak-kinds=definite,indirect --track-origins=yes -q); shift ;;
	-h|--help) sed -n '2,16p' "$0"; exit 0 ;;
	-*) echo "method-tests.sh: unknown option '$1'" >&2; exit 2 ;;
	*) tests+=("$1"); shift ;;
	esac
done
[ -n "$a" ] || { echo "method-tests.sh: --a DIR is required" >&2; exit 2; }
[ ${#tests[@]} -gt 0 ] || tests=(test-method-runs test-method-runs-edges test-vm2vm)
for d in "$a" "$b"; do
	for t in "${tests[@]}" ferry-fake-init; do
		[ -x "$d/$t" ] || { echo "method-tests.sh: no $d/$t" >&2; exit 2; }
	done
done
export FERRY_SOURCE_DIR="$here"
export FERRY_BUILD_DIR="${FERRY_BUILD_DIR:-$here/build-ci}"
[ ${#vg[@]} -eq 0 ] || export G_SLICE=always-malloc G_DEBUG=gc-friendly FERRY_UNDER_VALGRIND=1

work="$(mktemp -d /tmp/ferry-bench-mtests.XXXXXX)"
trap 'rm -rf "$work"' EXIT
: >"$work/A"
: >"$work/B"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= rounds; r++)); do
	for side in A B; do
		dir="$a"
		[ "$side" = A ] || dir="$b"
		cpu=0 wall=0
		for t in "${tests[@]}"; do
			/usr/bin/time -f "%U %S %e" -o "$work/t" "${vg[@]}" "$dir/$t" >"$work/out" 2>&1 || {
				tail -20 "$work/out" >&2
				echo "method-tests.sh: $side's $t failed" >&2
				exit 1
			}
			read -r u s w <"$work/t"
			cpu="$(awk -v c="$cpu" -v u="$u" -v s="$s" 'BEGIN {print c + u + s}')"
			wall="$(awk -v c="$wall" -v w="$w" 'BEGIN {print c + w}')"
		done
		echo "$cpu $wall" >>"$work/$side"
		printf 'round %d/%d %s: CPU %.2f s, wall %.2f s (load %s)\n' "$r" "$rounds" "$side" \
			"$cpu" "$wall" "$(cut -d' ' -f1 /proc/loadavg)"
	done
done
med() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
ca="$(cut -d' ' -f1 "$work/A" | med)"; cb="$(cut -d' ' -f1 "$work/B" | med)"
wa="$(cut -d' ' -f2 "$work/A" | med)"; wb="$(cut -d' ' -f2 "$work/B" | med)"
echo "${tests[*]}${vg:+ (under valgrind)}, $rounds rounds, medians:"
printf '  A %s: CPU %.2f s, wall %.2f s\n' "$a" "$ca" "$wa"
printf '  B %s: CPU %.2f s, wall %.2f s\n' "$b" "$cb" "$wb"
awk -v a="$ca" -v b="$cb" -v x="$wa" -v y="$wb" \
	'BEGIN {printf "  B/A: CPU x%.2f, wall x%.2f\n", b / a, y / x}'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
