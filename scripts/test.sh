#!/usr/bin/env bash
# The whole test suite, from nothing: host setup (packages, libvirtd, built-in guest), a -Werror
# build with every test (unit, script, end-to-end under real QEMU), the unit and fuzz-corpus tests
# again under ASan+UBSan and under valgrind, and the format check.
# Usage: scripts/test.sh            (as root on Debian 12; CI runs exactly this through .ci/run)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

log() { printf '\n=== %s\n' "$*"; }

log "setup"
bash scripts/setup.sh

passed=0 failed=0 skipped=0
# the background checks' log and tally, the format check's log, and the names of failed tests
bg_log="$(mktemp /tmp/ferry-test-bg.XXXXXX)"
bg_tally="$(mktemp /tmp/ferry-test-tally.XXXXXX)"
fmt_log="$(mktemp /tmp/ferry-test-format.XXXXXX)"
failed_log="$(mktemp /tmp/ferry-test-failed.XXXXXX)"
trap 'rm -f "$bg_log" "$bg_tally" "$fmt_log" "$failed_log"' EXIT
tally() { # builddir [setup]: add the counts of its last meson test run (a --setup run logs to
	# testlog-SETUP.json; reading testlog.json there would count the previous run twice)
	local j="$1/meson-logs/testlog${2:+-$2}.json"
	[ -f "$j" ] || return 0
	local p f s
	# the names of the tests that failed go to $failed_log, printed last: CI keeps only the tail
	read -r p f s < <(/usr/bin/python3 - "$j" "$1${2:+ --setup $2}" "$failed_log" <<'PY'
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
	rm -f "$b/meson-logs/testlog${setup:+-$setup}.json"
	meson test -C "$b" --print-errorlogs "$@" || status=1
	tally "$b" "$setup"
}

log "build (-Werror)"
[ -f build-ci/build.ninja ] || meson setup build-ci --werror >/dev/null
ninja -C build-ci
log "tests: unit, script"
run_suite build-ci --no-suite e2e

# The sanitizer, valgrind and fuzz runs need no guest. They run in the background beside the
# end-to-end tests (one at a time: tests/meson.build says why), whose TCG guests keep about one
# of the two cores busy, with their own log (shown after the e2e tests) and their own tally. No
# test has a timing threshold, and the e2e checks for leftovers look only at their own run's pid
# and run directory.
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
		ninja -C build-fuzz
		# each harness fuzzes this long (tests/fuzz/meson.build); three harnesses: 1.5 minutes
		FERRY_FUZZ_SECONDS="${FERRY_FUZZ_SECONDS:-30}" run_suite build-fuzz --suite fuzz
	fi
	echo "$passed $failed $skipped $status" >"$bg_tally"
}
(without_guests) >"$bg_log" 2>&1 &
bg_pid=$!

log "tests: e2e (ASan, valgrind and fuzz run beside them)"
run_suite build-ci --suite e2e

bg_st=0
wait "$bg_pid" || bg_st=$?
cat "$bg_log"
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
