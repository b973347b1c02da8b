#!/usr/bin/env bash
# `ferry run` end to end under TCG: agent-file (per file; tar.gz, cpio.xz and zip streamed into
# the guest and unpacked there) and disk-image (ext4 raw, ISO 9660 qcow2 on scsi, ext4 read in
# place, vfat when dosfstools and mtools are there) on 8 x 1 MiB and 500 x 4 KiB, each run verified against the manifest in the guest;
# unsupported combinations (zstd, vfat without dosfstools) are skips with their reason; the
# results file is valid against its schema; nothing is left behind.
source "$(dirname "$0")/run-lib.sh"

res="$work/results.json"
run_ferry 0 "$src/tests/e2e/plans/run-methods.yaml" --results "$res" --junit "$work/junit.xml" \
	--markdown "$work/report.md"
validate "$res"

# every cell either passed with 2 measured, verified runs, or is a skip with its reason
bad="$(query "$res" '[i for i, c in cells.items() if c["status"] == "passed" and not (
	len([x for x in c["runs"] if not x["warmup"] and x["integrity_ok"]]) == 2
	and c["stats"]["total"]["n"] == 2)]')"
[ "$bad" = "[]" ] || fail "passed cells without 2 verified runs: $bad"
# vfat images need dosfstools and mtools (scripts/setup.sh installs them); without, a skip
if command -v mkfs.vfat >/dev/null && command -v mcopy >/dev/null; then
	want_passed=15 want_skipped=1
else
	want_passed=14 want_skipped=2
fi
passed="$(query "$res" 'sum(c["status"] == "passed" for c in r["cells"])')"
[ "$passed" = "$want_passed" ] || fail "expected $want_passed passed cells, got $passed"

zstd="$(query "$res" 'cells["vm=tiny,disk=ram,dataset=large,method=agent-zstd"]["skip_reason"]')"
case "$zstd" in *"cannot decompress zstd"*) ;; *) fail "zstd skip reason: $zstd" ;; esac
vfat="$(query "$res" 'cells["vm=tiny,disk=ram,dataset=large,method=image-vfat"]["status"]')"
if command -v mkfs.vfat >/dev/null && command -v mcopy >/dev/null; then
	[ "$vfat" = passed ] || fail "vfat cell: $vfat"
else
	reason="$(query "$res" 'cells["vm=tiny,disk=ram,dataset=large,method=image-vfat"]["skip_reason"]')"
	case "$reason" in *mkfs.vfat*) ;; *) fail "vfat skip reason: $reason" ;; esac
fi

# the payload counted per run is the dataset (bytes of 8 x 1 MiB for the per-file agent)
bytes="$(query "$res" 'cells["vm=tiny,disk=ram,dataset=large,method=agent"]["runs"][0]["bytes"]')"
[ "$bytes" = 8388608 ] || fail "agent-file bytes: $bytes"
# the disk: fresh target was re-created and still held every file
grep -q "$want_skipped skipped" "$work/log" || fail "summary line does not say $want_skipped skipped"
grep -q "<testsuites" "$work/junit.xml" || fail "no JUnit written"
echo "ok: $want_passed cells passed, $want_skipped skipped with reasons, schema valid, nothing left behind"
