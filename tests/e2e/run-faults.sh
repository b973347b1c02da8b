#!/usr/bin/env bash
# Faults under `ferry run`: the domain destroyed mid-run, qemu-ga killed (and kept from
# respawning), the guest's landing filesystem full: each fails only its own cell, with its
# diagnostics, while the next cell runs (on a re-booted guest where the old one broke); a byte
# flipped in the guest before verification is an integrity failure naming the file, whether
# verify hashes with XXH3-128 (ferry-sum) or SHA-256; nothing is left behind.
source "$(dirname "$0")/run-lib.sh"

plan="$src/tests/e2e/plans/run-faults.yaml"
res="$work/faults.json"
cell() { echo "vm=tiny,disk=ram,dataset=$1,method=agent"; }

FERRY_TEST_FAULT="destroy@$(cell a);killga@$(cell b);fill@$(cell c)" \
	run_ferry 3 "$plan" --results "$res"
validate "$res"
for d in a b c; do
	st="$(query "$res" "cells['$(cell $d)']['status']")"
	[ "$st" = error ] || fail "cell $d: status $st, expected error"
done
[ "$(query "$res" "cells['$(cell d)']['status']")" = passed ] || fail "cell d did not pass"
# diagnostics: the libvirt/agent message of the failure, the console tail of the guest
msg="$(query "$res" "cells['$(cell a)']['errors'][0]")"
case "$msg" in *domain*|*agent*) ;; *) fail "destroyed domain: no libvirt/agent message: $msg" ;; esac
msg="$(query "$res" "cells['$(cell c)']['errors'][0]")"
case "$msg" in *"No space left"*|*"no space"*) ;; *) fail "full disk: message $msg" ;; esac
tail_b="$(query "$res" "bool(cells['$(cell b)']['errors'][0].get('serial_tail'))")"
[ "$tail_b" = True ] || fail "killed agent: no serial console tail"
# three guests broke or were replaced: a, b re-boot; c's guest stays usable
boots="$(sed -n 's/.* \([0-9]*\) boots*;.*/\1/p' "$work/log")"
[ "$boots" = 3 ] || fail "expected 3 boots (initial + after destroy + after killed agent), got $boots"

# --resume with --rerun-failed runs the three failed cells again (now without faults), not d
run_ferry 0 "$plan" --resume "$res" --rerun-failed
ran="$(grep -c '^ferry: \[[0-9]*/3\]' "$work/log")"
[ "$ran" = 3 ] || fail "--rerun-failed ran $ran cells, expected 3"
states="$(query "$res" '[c["status"] for c in r["cells"]]')"
[ "$states" = "['passed', 'passed', 'passed', 'passed']" ] || fail "after --rerun-failed: $states"

# a corrupted byte is caught by verification and named
res2="$work/corrupt.json"
FERRY_TEST_CORRUPT=f0002 run_ferry 1 "$plan" --results "$res2" --shard 1/4
st="$(query "$res2" "cells['$(cell a)']['status']")"
[ "$st" = failed ] || fail "corrupted cell: status $st, expected failed"
msg="$(query "$res2" "cells['$(cell a)']['errors'][0]['message']")"
case "$msg" in *"1 different (f0002)"*) ;; *) fail "integrity message does not name f0002: $msg" ;; esac
kind="$(query "$res2" "cells['$(cell a)']['errors'][0]['kind']")"
[ "$kind" = integrity ] || fail "error kind $kind, expected integrity"
# by XXH3-128 where the built-in guest carries ferry-sum (a guest built before it: SHA-256), and
# by SHA-256 when FERRY_VERIFY_HASH says so: the flipped byte is caught and named either way
if "$ferry" guest info --json | grep -q '"ferry_sum"'; then fast=xxh128; else fast=sha256; fi
h="$(query "$res2" "cells['$(cell a)']['runs'][-1].get('verify_hash')")"
[ "$h" = "$fast" ] || fail "corrupted run verified by $h, expected $fast"
h="$(query "$res" "cells['$(cell d)']['runs'][-1].get('verify_hash')")"
[ "$h" = "$fast" ] || fail "clean run verified by $h, expected $fast"
res5="$work/corrupt-sha256.json"
FERRY_VERIFY_HASH=sha256 FERRY_TEST_CORRUPT=f0002 run_ferry 1 "$plan" --results "$res5" --shard 1/4
msg="$(query "$res5" "cells['$(cell a)']['errors'][0]['message']")"
case "$msg" in *"1 different (f0002)"*) ;; *) fail "SHA-256: message does not name f0002: $msg" ;; esac
h="$(query "$res5" "cells['$(cell a)']['runs'][-1].get('verify_hash')")"
[ "$h" = sha256 ] || fail "FERRY_VERIFY_HASH=sha256: run verified by $h"

# --fail-fast stops at the first failing cell: the rest stay pending (a later --resume runs them)
res4="$work/failfast.json"
FERRY_TEST_FAULT="destroy@$(cell b)" run_ferry 3 "$plan" --results "$res4" --fail-fast
states="$(query "$res4" '[c["status"] for c in r["cells"]]')"
[ "$states" = "['passed', 'error', 'pending', 'pending']" ] || fail "--fail-fast: $states"

# a criterion the cell cannot meet fails it as a criterion failure (exit 1)
{ cat "$plan"; echo "criteria: [{metric: throughput, min: 1TB/s}, {metric: total, max: 1h}]"; } \
	>"$work/criteria.yaml"
res3="$work/criteria.json"
run_ferry 1 "$work/criteria.yaml" --results "$res3" --shard 1/4
errs="$(query "$res3" "[(e['kind'], 'throughput' in e['message']) for e in cells['$(cell a)']['errors']]")"
[ "$errs" = "[('criterion', True)]" ] || fail "criteria: $errs"
[ "$(query "$res3" "cells['$(cell a)']['status']")" = failed ] || fail "criterion cell not failed"

echo "ok: faults isolated per cell, corruption named, nothing left behind"
