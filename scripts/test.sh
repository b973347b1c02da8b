#!/usr/bin/env bash
# The whole test suite, from nothing: host setup (packages, libvirtd, built-in guest), a -Werror
# build with every test (unit, script, end-to-end under real QEMU), the unit and fuzz-corpus tests
# again under ASan+UBSan and under valgrind, and the format check.
# Usage: scripts/test.sh            (as root on Debian 12; CI runs exactly this through .ci/run)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

log() { printf '\n=== %s [%s]\n' "$*" "$(date -u +%T)"; }

log "setup and build (-Werror)"
# setup builds ferry where the tests want it, with -Werror: one build, not a second one in build/
FERRY_BUILDDIR="$here/build-ci" FERRY_MESON_ARGS=--werror bash scripts/setup.sh

passed=0 failed=0 skipped=0
# the background checks' log and tally, the format check's log, and the names of failed tests
bg_log="$(mktemp /tmp/ferry-test-bg.XXXXXX)"
bg_tally="$(mktemp /tmp/ferry-test-tally.XXXXXX)"
fmt_log="$(mktemp /tmp/ferry-test-format.XXXXXX)"
failed_log="$(mktemp /tmp/ferry-test-failed.XXXXXX)"
e2e_out="$(mktemp -d /tmp/ferry-test-e2e.XXXXXX)" # each e2e test's output, shown when it ends
debian_log="$(mktemp /tmp/ferry-test-debian.XXXXXX)" # the Debian guest's build, shown at the end
debian_pid="" # the Debian guest's build while it runs: stopped if this script ends first
trap '[ -z "$debian_pid" ] || kill "$debian_pid" 2>/dev/null
	rm -rf "$bg_log" "$bg_tally" "$fmt_log" "$failed_log" "$e2e_out" "$debian_log"' EXIT
tally() { # testlog.json label: add the counts of the meson test run that wrote it (each run
	# logs to a file of its own: testlog-SETUP.json for a --setup run, LOGBASE.json for one with
	# --logbase; reading testlog.json there would count an earlier run twice)
	local j="$1"
	[ -f "$j" ] || return 0
	local p f s
	# the names of the tests that failed go to $failed_log, printed last: CI keeps only the tail
	read -r p f s < <(/usr/bin/python3 - "$j" "$2" "$failed_log" <<'PY'
import json, sys
p = f = s = 0
with open(sys.argv[3], "a") as out:
    for line in open(sys.argv[1]):
        t = json.loads(line)
        r = t["result"]
        if r in ("OK", "EXPECTEDFAIL"): p += 1
        elif r == "SKIP": s += 1
        else:
            f += 1
            out.write("  %s: %s (%s, %.0f s)\n" % (sys.argv[2], t["name"], r, t.get("duration", 0)))
print(p, f, s)
PY
)
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

status=0
run_suite() { # builddir, meson test args...
	local b="$1"; shift
	local setup="" a prev=""
	for a in "$@"; do
		[ "$prev" = --setup ] && setup="$a"
		prev="$a"
	done
	local j="$b/meson-logs/testlog${setup:+-$setup}.json"
	rm -f "$j"
	meson test -C "$b" --print-errorlogs "$@" || status=1
	tally "$j" "$b${setup:+ --setup $setup}"
}

# The Debian guest (debootstrap, about 2 minutes on a new machine, mostly waiting on apt and
# dpkg) is built beside the unit and script tests; the e2e tests that boot it wait for its
# cache lock and find it built. Up to date, it takes a second.
log "the Debian guest: built in the background (ferry guest build debian)"
build-ci/ferry guest build debian >"$debian_log" 2>&1 &
debian_pid=$!
log "tests: unit, script"
run_suite build-ci --no-suite e2e

# The sanitizer, valgrind and fuzz runs need no guest. They run in the background beside the
# end-to-end tests (e2e_suite below), whose TCG guests keep about one of the two cores busy, with
# their own log (shown after the e2e tests) and their own tally. No test has a timing threshold,
# and the e2e checks for leftovers look only at their own run's pid and run directory.
without_guests() {
	passed=0 failed=0 skipped=0 status=0
	log "build (ASan+UBSan)"
	[ -f build-asan/build.ninja ] || meson setup build-asan --werror \
		-Db_sanitize=address,undefined -Db_lundef=false -De2e=false >/dev/null
	ninja -C build-asan
	log "tests under ASan+UBSan: unit, script"
	# the watchdog timeouts scaled, as the valgrind setup scales them (tests/meson.build): ASan and the e2e
	# guests beside it make every test slower, and method-runs waits out hung guest programs
	run_suite build-asan --no-suite e2e --timeout-multiplier 3

	log "unit tests under valgrind"
	# --no-rebuild: the e2e tests use build-ci at the same time; it is built already
	run_suite build-ci --no-rebuild --setup valgrind --suite unit

	if [ -f tests/fuzz/meson.build ]; then
		log "fuzz harness (libFuzzer, clang): short run over the corpus"
		[ -f build-fuzz/build.ninja ] || CC=clang meson setup build-fuzz --werror -Dfuzzing=true \
			-De2e=false -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
		# the harnesses only: the rest of this build (ferry, the unit tests) is build-asan's
		ninja -C build-fuzz fuzz-harnesses
		# each harness fuzzes this long (tests/fuzz/meson.build); three harnesses: 1.5 minutes
		FERRY_FUZZ_SECONDS="${FERRY_FUZZ_SECONDS:-30}" run_suite build-fuzz --no-rebuild --suite fuzz
	fi
	echo "$passed $failed $skipped $status" >"$bg_tally"
}
(without_guests) >"$bg_log" 2>&1 &
bg_pid=$!

# e2e_suite: the end-to-end tests in meson's order (its priorities: longest first), each its own
# `meson test` with its own log, shown whole when it ends: one at a time while the background
# checks run (four ways on two cores made every test 2-3x slower: tests/meson.build), two at a
# time once they have ended (one test alone left about 45% of the 2-core host idle). The late
# ones wait for the end of the background checks and then go first; the alone ones run last and
# alone (tests/meson.build says why, with the figures). Sets bg_st, the background checks' exit.
e2e_late=" run-debian package-chroot "
e2e_alone=" run-gate-ci run-compare "
e2e_suite() {
	local t p st i idx width bg_on=1 started=$SECONDS
	local -a queue pids
	local -A running=()
	rm -f build-ci/meson-logs/e2e-*.json
	mapfile -t queue < <(meson test -C build-ci --no-rebuild --list --suite e2e | sed 's|.* / ||')
	while [ "${#queue[@]}" -gt 0 ] || [ "${#running[@]}" -gt 0 ]; do
		width=1
		[ -n "$bg_on" ] || width=2
		while [ "${#running[@]}" -lt "$width" ]; do
			# the next test to start: a late one first once the checks have ended; an alone
			# one only when it is all that is left and nothing runs
			idx=-1
			if [ -z "$bg_on" ]; then
				for i in "${!queue[@]}"; do
					[[ "$e2e_late" != *" ${queue[i]} "* ]] || { idx=$i; break; }
				done
			fi
			if [ "$idx" -lt 0 ]; then
				for i in "${!queue[@]}"; do
					t="${queue[i]}"
					if [[ "$e2e_alone" == *" $t "* ]]; then
						[ "$i" != 0 ] || [ "${#running[@]}" != 0 ] || [ -n "$bg_on" ] || idx=$i
						break
					fi
					[ -n "$bg_on" ] && [[ "$e2e_late" == *" $t "* ]] && continue
					idx=$i
					break
				done
			fi
			[ "$idx" -ge 0 ] || break
			t="${queue[idx]}"
			queue=("${queue[@]:0:idx}" "${queue[@]:idx+1}")
			meson test -C build-ci --no-rebuild --print-errorlogs --logbase "e2e-$t" "$t" \
				>"$e2e_out/$t" 2>&1 &
			running[$!]="$t"
			printf '[%s] %s started (%d running%s)\n' "$(date -u +%T)" "$t" "${#running[@]}" \
				"${bg_on:+, the background checks too}"
		done
		pids=("${!running[@]}")
		[ -z "$bg_on" ] || pids+=("$bg_pid")
		st=0
		wait -n -p p "${pids[@]}" || st=$?
		if [ "$p" = "$bg_pid" ]; then
			bg_on="" bg_st=$st
			printf '[%s] the background checks ended (exit %d)\n' "$(date -u +%T)" "$st"
			continue
		fi
		t="${running[$p]}"
		unset "running[$p]"
		printf '[%s] %s ended (exit %d)\n' "$(date -u +%T)" "$t" "$st"
		cat "$e2e_out/$t"
		[ "$st" = 0 ] || status=1
		tally "build-ci/meson-logs/e2e-$t.json" build-ci
	done
	# what took the time: each test's own duration, longest first
	echo "e2e: $((SECONDS - started)) s of wall time; per test, seconds:"
	cat build-ci/meson-logs/e2e-*.json 2>/dev/null | /usr/bin/python3 -c '
import json, sys
ts = sorted((json.loads(l) for l in sys.stdin), key=lambda t: -t.get("duration", 0))
print("\n".join("  %7.1f %s %s" % (t.get("duration", 0), t["name"], t["result"]) for t in ts))'
	if [ -n "$bg_on" ]; then
		st=0
		wait "$bg_pid" || st=$?
		bg_st=$st
	fi
}

log "tests: e2e (ASan, valgrind and fuzz run beside them)"
bg_st=0
e2e_suite
cat "$bg_log"
# the tests that boot the Debian guest judge its build: one that failed here they tried again
st=0
wait "$debian_pid" || st=$?
debian_pid=""
echo "the Debian guest's build beside the tests: exit $st"
if [ "$st" = 0 ]; then tail -3 "$debian_log"; else cat "$debian_log"; fi
read -r bp bf bs bst <"$bg_tally" || { bp=0 bf=1 bs=0 bst=1
	echo "the background checks stopped early (exit $bg_st)"
	echo "  the background checks (ASan, valgrind, fuzz): stopped early (exit $bg_st)" >>"$failed_log"; }
passed=$((passed + bp)) failed=$((failed + bf)) skipped=$((skipped + bs))
[ "$bst" = 0 ] && [ "$bg_st" = 0 ] || status=1

log "format (clang-format-14)"
if git ls-files '*.c' '*.h' | xargs clang-format --dry-run --Werror 2>"$fmt_log"; then
	echo "format: ok"; passed=$((passed + 1))
else
	head -40 "$fmt_log"; echo "format: files differ from .clang-format (run: git ls-files '*.[ch]' | xargs clang-format -i)"
	failed=$((failed + 1)); status=1
	echo "  format: clang-format differs" >>"$failed_log"
fi

echo
if [ -s "$failed_log" ]; then
	echo "failed:"; cat "$failed_log"
fi
echo "ferry-tests: $passed passed, $failed failed, $skipped skipped"
exit "$status"
