#!/usr/bin/env bash
# Plan warnings (a valid plan that asks for more than most hosts have) are printed escaped, one
# line each, and under GitHub Actions (GITHUB_ACTIONS=true) each also becomes a
# "::warning file=F,line=L,col=C::MSG" annotation, with GitHub's workflow-command escaping:
# '%', CR, LF in the message, and ',' ':' too in the properties; a name quoted from the plan
# cannot end the line and forge a command of its own.
set -euo pipefail

ferry="${FERRY:?}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fail() { echo "FAIL: $*"; exit 1; }

# a file name with what needs escaping: ',' ':' '%' (properties), a newline and ESC
plan=$'a,b:c%\n::error::x\e.yaml'
shown='a,b:c%\n::error::x\x1b.yaml'
cat >"$plan" <<'YAML'
ferry: 1
name: warned
vms:
  tiny: {guest: builtin, vcpus: 2, memory: 300GiB}
disks:
  ram: {kind: tmpfs, size: 256MiB}
datasets:
  large: {files: 8, size: 1MiB}
methods:
  agent: {type: agent-file}
matrix:
  disk: [ram]
  dataset: [large]
  method: [agent]
YAML

# outside GitHub Actions: the warning, escaped, and no annotation
env -u GITHUB_ACTIONS "$ferry" validate "$plan" >out 2>err || fail "validate exited $?: $(cat err)"
want="ferry: $shown:4:36: warning: vm 'tiny' asks for 300GiB of memory, more than 256GiB: few hosts have it"
[ "$(cat err)" = "$want" ] || fail "stderr is not the one escaped warning line: $(cat -A err)"
echo "ok: the warning is printed escaped, on one line"

# under GitHub Actions: the same line, then its annotation
GITHUB_ACTIONS=true "$ferry" validate "$plan" >out 2>err || fail "validate exited $?: $(cat err)"
[ "$(wc -l <err)" -eq 2 ] || fail "expected 2 lines on stderr: $(cat -A err)"
[ "$(sed -n 1p err)" = "$want" ] || fail "first line differs: $(sed -n 1p err | cat -A)"
ann='::warning file=a%2Cb%3Ac%25\n%3A%3Aerror%3A%3Ax\x1b.yaml,line=4,col=36::vm '"'"'tiny'"'"' asks for 300GiB of memory, more than 256GiB: few hosts have it'
[ "$(sed -n 2p err)" = "$ann" ] || fail "annotation differs:
 got: $(sed -n 2p err | cat -A)
want: $ann"
if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' err; then
	fail "raw control characters on stderr"
fi
echo "ok: under GITHUB_ACTIONS=true the warning is a ::warning annotation at its file, line and column"

# GITHUB_ACTIONS set to anything but "true" is not GitHub Actions
GITHUB_ACTIONS=false "$ferry" validate "$plan" >out 2>err
grep -q '^::warning' err && fail "annotation with GITHUB_ACTIONS=false"
echo "ok: no annotation unless GITHUB_ACTIONS=true"
