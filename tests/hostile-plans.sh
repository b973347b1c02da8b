#!/usr/bin/env bash
# Issue 24: what a plan from a pull request names cannot reach the host (ferry(1) SECURITY,
# docs/security.md). Each check plants the attack in a throwaway working tree and asserts the
# refusal, its message, and that nothing outside the tree was written or quoted.
# - class 4: a committed symlink `out -> DIR` outside the tree: report paths through it (an
#   existing file or a directory still to be made) and a baseline through it are refused at
#   validate; a baseline directory whose x.json links out is refused, the target never quoted;
# - class 5: includes outside the allowed tree (absolute, ../, a link, /proc) and connect URIs
#   that name a file (test:///PATH) are refused, the file never quoted (docs/security.md);
# - class 11: 5,000 files on a filesystem with 2,000 free inodes (a tmpfs with nr_inodes, in a
#   mount namespace of the test's own) are refused before anything is written, by `dataset gen`
#   and by `run`'s capacity check, instead of failing mid-run with ENOSPC.
set -euo pipefail

ferry="${FERRY:?}"
build="${FERRY_BUILD_DIR:?}"
tmp="$(mktemp -d /tmp/ferry-test-hostile-plans.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
unset GITHUB_STEP_SUMMARY GITHUB_ACTIONS
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
fail() { n=$((n + 1)); echo "not ok $n - $*"; exit 1; }

mkdir -p "$tmp/work" "$tmp/outside"
echo "secret-line-do-not-print" >"$tmp/outside/secret"
cd "$tmp/work"
base='ferry: 1
name: t
vms: {v: {guest: builtin}}
disks: {d: {kind: tmpfs, size: 64MiB}}
datasets: {s: {files: 1, size: 1KiB}}
methods: {a: {type: null}}
'
refused() { # plan text, what the message must say
	printf '%s%s\n' "$base" "$1" >plan.yaml
	local rc=0
	"$ferry" validate plan.yaml >"$tmp/o" 2>"$tmp/e" || rc=$?
	[ "$rc" = 2 ] || { cat "$tmp/e"; fail "'$1': exit $rc, expected 2"; }
	grep -qF -- "$2" "$tmp/e" || { cat "$tmp/e"; fail "'$1': the message does not say '$2'"; }
	if grep -q secret-line-do-not-print "$tmp/o" "$tmp/e"; then fail "'$1': a file outside was quoted"; fi
	ok "'$1' is refused: $(head -c 300 "$tmp/e")"
}

# ---- class 4: report and baseline paths through a committed symlink ----
ln -s "$tmp/outside" out
refused 'report: {json: out/x.json}' "symbolic link that leads out of the working directory"
refused 'report: {markdown: out/sub/deeper/x.md}' "symbolic link that leads out of the working directory"
refused 'report: {junit: out/x.xml, gab: out/g.json}' "symbolic link that leads out of the working directory"
refused 'baseline: out/secret' "symbolic link that leads out of the working directory"
ln -s "$tmp/outside/secret" secret-link.json
refused 'baseline: secret-link.json' "symbolic link that leads out of the working directory"
[ "$(ls "$tmp/outside")" = secret ] || fail "something was made outside the tree"
ok "nothing was made outside the tree"
# a symlink that stays inside is fine
mkdir real && ln -s real inside
printf '%s%s\n' "$base" 'report: {json: inside/x.json}' >plan.yaml
"$ferry" validate plan.yaml >/dev/null 2>"$tmp/e" || { cat "$tmp/e"; fail "a link inside the tree was refused"; }
ok "a report path through a link that stays inside the tree is fine"

# a baseline directory whose results file is a link out of it
"$build/tests/test-reporters" --write-sample-results "$tmp/work/new.json"
mkdir bdir && ln -s "$tmp/outside/secret" bdir/x.json
rc=0
"$ferry" compare bdir new.json >"$tmp/o" 2>"$tmp/e" || rc=$?
[ "$rc" = 2 ] || { cat "$tmp/o" "$tmp/e"; fail "compare with a linked baseline file: exit $rc, expected 2"; }
grep -q "bdir/x.json: is a symbolic link" "$tmp/e" || { cat "$tmp/e"; fail "the message does not name the link"; }
if grep -q secret-line-do-not-print "$tmp/o" "$tmp/e"; then fail "the linked file was quoted"; fi
ok "a baseline directory's link out is refused: $(cat "$tmp/e")"

# ---- class 5: files a plan names are read only inside the allowed tree, never quoted ----
printf 'secret-line-do-not-print: x\n' >"$tmp/outside/secret.yaml"
refused "include: [$tmp/outside/secret.yaml]" "is outside the allowed tree"
refused "include: [../outside/secret.yaml]" "is outside the allowed tree"
ln -s "$tmp/outside/secret.yaml" inc-link.yaml
refused "include: [inc-link.yaml]" "is outside the allowed tree"
refused "include: [/proc/self/status]" "is outside the allowed tree"
refused "connect: test://$tmp/outside/secret.yaml" "is refused in a plan"
refused "connect: 'test:///proc/self/environ'" "is refused in a plan"
# an include inside the tree still works
printf 'ferry: 1\nrun: {repeat: 1}\n' >inc-ok.yaml
printf '%s%s\n' "$base" 'include: [inc-ok.yaml]' >plan.yaml
"$ferry" validate plan.yaml >/dev/null 2>"$tmp/e" || { cat "$tmp/e"; fail "an include inside the tree was refused"; }
ok "an include inside the tree is read"

# ---- class 11: the capacity check counts inodes as well as bytes ----
if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
	n=$((n + 1)); echo "ok $n # SKIP class 11: needs root and unshare -m for a tmpfs of 2,000 inodes"
else
	# plenty of bytes (64 MiB for 5,000 files of 1 KiB), too few inodes; the namespace's
	# mount goes away with it
	cat >"$tmp/inodes.sh" <<EOS
set -u
mount -t tmpfs -o size=64m,nr_inodes=2000,mode=0755 ferry-test "$tmp/small" || exit 99
rc=0; "$ferry" dataset gen --files 5000 --size 1KiB --dir "$tmp/small/ds" >"$tmp/o1" 2>"$tmp/e1" || rc=\$?
echo "\$rc" >"$tmp/rc1"
ls -A "$tmp/small" >"$tmp/ls1"
printf '%s' '$base' | sed 's/files: 1, size: 1KiB/files: 5000, size: 1KiB/' >"$tmp/work/inodes.yaml"
echo 'matrix: {vm: [v], disk: [d], dataset: [s], method: [a]}' >>"$tmp/work/inodes.yaml"
rc=0; FERRY_CACHE_DIR="$tmp/small/cache" "$ferry" run "$tmp/work/inodes.yaml" >"$tmp/o2" 2>"$tmp/e2" || rc=\$?
echo "\$rc" >"$tmp/rc2"
ls -A "$tmp/small" >"$tmp/ls2"
EOS
	mkdir "$tmp/small"
	unshare -m --propagation private bash "$tmp/inodes.sh" || fail "the tmpfs of 2,000 inodes could not be made"
	[ "$(cat "$tmp/rc1")" = 3 ] || { cat "$tmp/e1"; fail "dataset gen into 2,000 inodes: exit $(cat "$tmp/rc1"), expected 3"; }
	grep -q "not enough inodes (files and directories) on the filesystem of '$tmp/small/ds': needs 5001" "$tmp/e1" ||
		{ cat "$tmp/e1"; fail "dataset gen: the message does not name the inodes"; }
	[ ! -s "$tmp/ls1" ] || fail "dataset gen wrote into the small filesystem: $(cat "$tmp/ls1")"
	ok "dataset gen of 5,000 files on 2,000 inodes is refused first: $(cat "$tmp/e1")"
	[ "$(cat "$tmp/rc2")" = 3 ] || { cat "$tmp/e2"; fail "run with 5,000 files on 2,000 inodes: exit $(cat "$tmp/rc2"), expected 3"; }
	grep -q "not enough inodes (files and directories) on the filesystem of '$tmp/small/cache': needs 5001 (datasets to generate 5001)" "$tmp/e2" ||
		{ cat "$tmp/e2"; fail "run: the message does not name the inodes"; }
	[ ! -s "$tmp/ls2" ] || fail "run wrote into the small filesystem: $(cat "$tmp/ls2")"
	ok "run of a 5,000-file dataset with its cache on 2,000 inodes is refused first: $(cat "$tmp/e2")"
	findmnt "$tmp/small" >/dev/null && fail "the tmpfs outlived its namespace"
	ok "the small filesystem is gone with the test's namespace"
fi

echo "1..$n"
