#!/usr/bin/env bash
# `ferry run --resume` (and --rerun-failed) refuse a results file that another plan wrote: cell ids
# are built from names only, so a dataset whose size changed keeps its id. A results file crafted
# by hand for a plan, then the plan's dataset size changed: exit 2 before anything runs, the
# message names what differs (the plan hash, the cell and the parameter), the file is untouched.
# Also: a results file that is not a regular file (a FIFO) is refused without blocking.
set -euo pipefail

ferry="${FERRY:?}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
unset GITHUB_STEP_SUMMARY

cat >v1.yaml <<'PLAN'
ferry: 1
name: resume-check
vms:
  tiny: {guest: builtin, vcpus: 1, memory: 384MiB}
disks:
  ram: {kind: tmpfs, size: 32MiB}
datasets:
  d: {files: 2, size: 16KiB, seed: 1}
methods:
  agent: {type: agent-file}
matrix:
  dataset: [d]
PLAN
sed 's/size: 16KiB, seed/size: 32KiB, seed/' v1.yaml >v2.yaml
cmp -s v1.yaml v2.yaml && { echo "FAIL: the plan did not change"; exit 1; }

# what a run of v1 wrote: its hash and the cell with the old dataset size and a passed status
sha="$(sha256sum v1.yaml | cut -d' ' -f1)"
cat >r.json <<JSON
{
  "ferry_results": 1,
  "plan": {"name": "resume-check", "path": "v1.yaml", "sha256": "$sha", "text": null},
  "provenance": {"datasets": []},
  "cells": [
    {
      "id": "vm=tiny,disk=ram,dataset=d,method=agent",
      "axes": {"vm": "tiny", "disk": "ram", "dataset": "d", "method": "agent"},
      "params": {"dataset": {"name": "d", "files": 2, "size": "16KiB", "seed": 1}},
      "status": "passed",
      "runs": []
    }
  ]
}
JSON
cp r.json r.orig

expect() { # status, stderr pattern, args...
	local want="$1" pattern="$2"; shift 2
	local rc=0
	timeout 60 "$ferry" run "$@" >stdout 2>stderr || rc=$?
	if [ "$rc" != "$want" ]; then
		echo "FAIL: ferry run $* exited $rc, expected $want"; cat stderr; exit 1
	fi
	if ! grep -q -- "$pattern" stderr; then
		echo "FAIL: ferry run $*: stderr lacks '$pattern':"; cat stderr; exit 1
	fi
	echo "ok: ferry run $* -> $rc: $(head -c 300 stderr)"
}

for extra in "" "--rerun-failed"; do
	expect 2 "r.json: not a results file of this plan: the plan differs (sha256 ${sha:0:12}" \
		v2.yaml --resume r.json $extra
	grep -q "cell \"vm=tiny,disk=ram,dataset=d,method=agent\": parameter 'dataset.size' was \"16KiB\"" stderr ||
		{ echo "FAIL: the message does not name the cell and parameter"; cat stderr; exit 1; }
	cmp -s r.json r.orig || { echo "FAIL: the results file was changed"; exit 1; }
	[ "$(ls -A | sort | tr '\n' ' ')" = "r.json r.orig stderr stdout v1.yaml v2.yaml " ] ||
		{ echo "FAIL: files left: $(ls -A)"; exit 1; }
done

# the same plan, but the file holds a cell the plan does not have
sed 's/dataset=d,method=agent/dataset=gone,method=agent/' r.orig >r2.json
expect 2 "cell \"vm=tiny,disk=ram,dataset=gone,method=agent\": not a cell of the current plan" \
	v1.yaml --resume r2.json

# a FIFO is not read (it would block)
mkfifo fifo.json
expect 2 "fifo.json: not a regular file" v1.yaml --resume fifo.json
