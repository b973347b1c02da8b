#!/usr/bin/env bash
# `ferry report` as a command: exit status 2 with a clear message for bad input, every output
# path checked before anything is written (nothing half-written), '-' for standard output.
set -euo pipefail

build="${FERRY_BUILD_DIR:?}"
ferry="${FERRY:?}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

"$build/tests/test-reporters" --write-sample-results "$tmp/results.json"
unset GITHUB_STEP_SUMMARY

expect() { # status, stderr pattern, args...
	local want="$1" pattern="$2"; shift 2
	local rc=0
	"$ferry" report "$@" >"$tmp/stdout" 2>"$tmp/stderr" || rc=$?
	if [ "$rc" != "$want" ]; then
		echo "FAIL: ferry report $* exited $rc, expected $want"; cat "$tmp/stderr"; exit 1
	fi
	if [ -n "$pattern" ] && ! grep -q -- "$pattern" "$tmp/stderr"; then
		echo "FAIL: ferry report $*: stderr lacks '$pattern':"; cat "$tmp/stderr"; exit 1
	fi
	echo "ok: ferry report $* -> $rc"
}

expect 2 "missing the results file"
expect 2 "nope.json" "$tmp/nope.json"
echo '{"ferry_results": 1' >"$tmp/broken.json"
expect 2 "broken.json:" "$tmp/broken.json"
echo '{"ferry_results": 2}' >"$tmp/v2.json"
expect 2 "v2.json" "$tmp/v2.json"
expect 2 "unrecognized option" "$tmp/results.json" --xml x
expect 2 "only one report can go to standard output" "$tmp/results.json" --junit - --markdown -

# a bad path among good ones: nothing is written, not even the good ones
expect 2 "no/such/dir/r.md" "$tmp/results.json" --junit "$tmp/r.xml" --markdown "$tmp/no/such/dir/r.md"
[ ! -e "$tmp/r.xml" ] || { echo "FAIL: r.xml written although another output failed"; exit 1; }
# a bad axis is found while rendering: still nothing written, no temporary files left
expect 2 "did you mean 'method'" "$tmp/results.json" --junit "$tmp/r.xml" --rows metod
[ ! -e "$tmp/r.xml" ] || { echo "FAIL: r.xml written although rendering failed"; exit 1; }
if ls -A "$tmp" | grep -q '^\.'; then echo "FAIL: temporary files left"; ls -A "$tmp"; exit 1; fi

# an existing report is replaced whole
echo "old" >"$tmp/r.md"
expect 0 "" "$tmp/results.json" --markdown "$tmp/r.md" --junit "$tmp/r.xml" --rows dataset --cols method
grep -q '^| dataset \\\\ method | agent | image | share |$' "$tmp/r.md"
head -c 5 "$tmp/r.xml" | grep -q '<?xml'

# default: Markdown on standard output; '-' works for any format
expect 0 "" "$tmp/results.json"
grep -q '^## ferry: sample' "$tmp/stdout"
expect 0 "" "$tmp/results.json" --bmf -
/usr/bin/python3 -c 'import json,sys; assert len(json.load(open(sys.argv[1]))) == 5' "$tmp/stdout"
