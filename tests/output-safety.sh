#!/usr/bin/env bash
# Outputs cannot destroy what they point at, and messages cannot forge CI log lines:
# - `ferry report --json X` refuses X when it is a character device, a FIFO, a symbolic link or a
#   directory, and leaves it (and what a link points at) untouched;
# - a planted `<target>.tmp.*` symlink (the predictable name older versions used) cannot redirect
#   the write: it and its victim are left alone, and the report is written;
# - a regular file is replaced, no temporary file is left next to it;
# - a plan key holding a newline and "::warning ..." makes `ferry validate` print no line that
#   starts with "::" but ferry's own annotation, with or without GITHUB_ACTIONS.
set -euo pipefail

build="${FERRY_BUILD_DIR:?}"
ferry="${FERRY:?}"
tmp="$(mktemp -d /tmp/ferry-test-output-safety.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
unset GITHUB_STEP_SUMMARY GITHUB_ACTIONS

"$build/tests/test-reporters" --write-sample-results "$tmp/results.json"
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
fail() { n=$((n + 1)); echo "not ok $n - $*"; exit 1; }

refused() { # target, what it is (in the message)
	local target="$1" kind="$2" rc=0
	"$ferry" report "$tmp/results.json" --json "$target" >"$tmp/out" 2>"$tmp/err" || rc=$?
	[ "$rc" = 2 ] || { cat "$tmp/err"; fail "--json on $kind: exit $rc, expected 2"; }
	grep -q "is $kind (ferry replaces only regular files)" "$tmp/err" ||
		{ cat "$tmp/err"; fail "--json on $kind: message does not say what it is"; }
	ok "--json on $kind is refused: $(cat "$tmp/err")"
}

# a character device with /dev/null's numbers, in our own directory
if mknod "$tmp/fake-null" c 1 3 2>/dev/null; then
	refused "$tmp/fake-null" "a character device"
	[ -c "$tmp/fake-null" ] || fail "the character device was replaced"
	ok "the character device is still a character device"
else
	ok "# SKIP mknod needs root"
fi

mkfifo "$tmp/fifo"
refused "$tmp/fifo" "a FIFO"
[ -p "$tmp/fifo" ] || fail "the FIFO was replaced"
ok "the FIFO is still a FIFO"

echo "precious" >"$tmp/victim"
ln -s "$tmp/victim" "$tmp/link.json"
refused "$tmp/link.json" "a symbolic link"
[ -L "$tmp/link.json" ] && [ "$(cat "$tmp/victim")" = precious ] ||
	fail "the symlink or its target changed"
ok "the symlink and what it points at are untouched"

mkdir "$tmp/adir"
refused "$tmp/adir" "a directory"

# planted temporary names of the old scheme: never used, never followed
echo "precious" >"$tmp/victim2"
for suffix in 1 $$ 12345; do ln -s "$tmp/victim2" "$tmp/r.json.tmp.$suffix"; done
"$ferry" report "$tmp/results.json" --json "$tmp/r.json" 2>"$tmp/err" || { cat "$tmp/err"; fail "report"; }
[ "$(cat "$tmp/victim2")" = precious ] || fail "a planted <target>.tmp.* symlink redirected the write"
for suffix in 1 $$ 12345; do
	[ -L "$tmp/r.json.tmp.$suffix" ] || fail "planted symlink r.json.tmp.$suffix was removed"
done
[ -f "$tmp/r.json" ] && [ ! -L "$tmp/r.json" ] || fail "r.json was not written as a regular file"
ok "planted <target>.tmp.* symlinks are left alone, their victim untouched, the report written"

# a regular file is replaced; nothing else is left in the directory
echo old >"$tmp/r.json"
"$ferry" report "$tmp/results.json" --json "$tmp/r.json" 2>"$tmp/err" || { cat "$tmp/err"; fail "report"; }
grep -q '"ferry_results"' "$tmp/r.json" || fail "the regular file was not replaced"
left="$(find "$tmp" -maxdepth 1 -name '.r.json.*')"
[ -z "$left" ] || fail "temporary files left: $left"
ok "a regular file is replaced, no temporary file left"

# messages: a quoted key with a newline and a workflow command
printf 'ferry: 1\nname: forge\nvms:\n  "x\\n::warning file=a.c::forged\\r\\u001b[31mred": {guest: builtin}\n' \
	>"$tmp/forge.yaml"
for gha in "" true; do
	rc=0
	GITHUB_ACTIONS="$gha" "$ferry" validate "$tmp/forge.yaml" >"$tmp/out" 2>"$tmp/err" || rc=$?
	[ "$rc" = 2 ] || { cat "$tmp/err"; fail "validate (GITHUB_ACTIONS='$gha'): exit $rc, expected 2"; }
	cat "$tmp/out" "$tmp/err" >"$tmp/all"
	grep -q 'forged' "$tmp/all" || { cat "$tmp/all"; fail "the message does not quote the key"; }
	if grep -n '^::' "$tmp/all" | grep -v '^[0-9]*:::error ' >/dev/null; then
		cat "$tmp/all"; fail "a line starts with '::' that ferry did not mean (GITHUB_ACTIONS='$gha')"
	fi
	if grep -q $'\x1b\|\r' "$tmp/all"; then
		cat -A "$tmp/all"; fail "raw ESC or CR printed (GITHUB_ACTIONS='$gha')"
	fi
	grep -q 'x\\n::warning' "$tmp/all" || { cat "$tmp/all"; fail "newline not shown as \\n"; }
	ok "validate (GITHUB_ACTIONS='$gha'): the newline is shown as \\n, no forged line: $(head -1 "$tmp/err")"
done
echo "1..$n"
