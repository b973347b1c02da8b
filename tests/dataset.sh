#!/usr/bin/env bash
# `ferry dataset` end to end on the host: a 1 GiB dataset generated with peak RSS under 64 MiB;
# the exact listing command the guest runs, executed with busybox applets only, verified against
# the manifest; a flipped byte and a removed file are caught and named.
set -euo pipefail

: "${FERRY:?FERRY must point at the ferry binary}"
tmp="$(mktemp -d /tmp/ferry-test-dataset-sh.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

echo "# peak RSS of a 1 GiB generation"
# ru_maxrss of the child, from wait4() via Python's resource module (KiB on Linux)
/usr/bin/python3 - "$FERRY" "$tmp/big" <<'PY'
import resource, subprocess, sys
ferry, out = sys.argv[1], sys.argv[2]
r = subprocess.run([ferry, "dataset", "gen", "--files", "1", "--size", "1GiB", "--seed", "3",
                    "--dir", out, "--no-sync"], capture_output=True, text=True)
if r.returncode != 0:
    sys.exit("ferry dataset gen failed: " + r.stderr)
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print("peak RSS %d KiB; %s" % (rss, r.stdout.replace("\n", "; ")))
if "bytes: 1073741824" not in r.stdout:
    sys.exit("wrong size: " + r.stdout)
if rss >= 64 * 1024:
    sys.exit("peak RSS %d KiB is not under 64 MiB" % rss)
PY
[ "$(stat -c %s "$tmp/big/f0000")" = 1073741824 ] || fail "1 GiB file has the wrong size"
rm -rf "$tmp/big"

echo "# an interrupted generation leaves no temp files; a killed one's are swept at the next use"
cache="$tmp/cache"
wait_tmp() { # wait until the generation has a temp directory in the cache
	for _ in $(seq 200); do
		compgen -G "$cache/datasets/.tmp-*" >/dev/null && return 0
		sleep 0.05
	done
	fail "no temp directory appeared in $cache/datasets"
}
FERRY_CACHE_DIR="$cache" "$FERRY" dataset gen --files 4 --size 4GiB --no-sync >/dev/null 2>"$tmp/err" &
pid=$!
wait_tmp
sleep 0.3
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 130 ] || fail "SIGINT during generation: exit $rc, not 130 ($(cat "$tmp/err"))"
grep -q "interrupted" "$tmp/err" || fail "no 'interrupted' message: $(cat "$tmp/err")"
left="$(find "$cache/datasets" -mindepth 1 -maxdepth 1 -name '.tmp-*' | wc -l)"
[ "$left" = 0 ] || fail "SIGINT left $left temp directories"
FERRY_CACHE_DIR="$cache" "$FERRY" dataset gen --files 4 --size 4GiB --no-sync >/dev/null 2>&1 &
pid=$!
wait_tmp
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
stale="$(find "$cache/datasets" -mindepth 1 -maxdepth 1 -name '.tmp-*')"
[ -n "$stale" ] || fail "SIGKILL left no temp directory to sweep (the test proves nothing)"
FERRY_CACHE_DIR="$cache" "$FERRY" dataset gen --files 2 --size 1KiB >/dev/null
[ ! -e "$stale" ] || fail "the stale temp directory $stale of a killed ferry is still there"
rm -rf "$cache"

echo "# limits: a typo cannot fill the disk"
rc=0
"$FERRY" dataset gen --files 100000000000 --size 1 --dir "$tmp/huge" 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] && grep -qF "above the limit of 10000000" "$tmp/err" ||
	fail "--files 100000000000: rc $rc: $(cat "$tmp/err")"
[ ! -e "$tmp/huge" ] || fail "--files 100000000000 created its directory"

echo "# capacity: a run that cannot fit is refused before anything is generated or booted"
cat >"$tmp/big.yaml" <<'YAML'
ferry: 1
name: too-big
vms:
  huge: {guest: builtin, vcpus: 1, memory: 4TiB, accel: tcg}
disks:
  big: {kind: image, size: 16TiB}
datasets:
  vast: {files: 8, size: 1TiB}
methods:
  ch: {type: channel, archive: tar}
matrix:
  vm: [huge]
  disk: [big]
  dataset: [vast]
  method: [ch]
YAML
mkdir -p "$tmp/runs" "$tmp/capcache"
rc=0
FERRY_CACHE_DIR="$tmp/capcache" FERRY_RUN_DIR="$tmp/runs" "$FERRY" run --connect test:///default \
	"$tmp/big.yaml" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 3 ] || fail "a run that cannot fit exited $rc, not 3: $(cat "$tmp/err")"
grep -qF "not enough disk space on the filesystem of '$tmp/capcache'" "$tmp/err" ||
	fail "no disk space message: $(cat "$tmp/err")"
grep -qF "datasets to generate 8TiB" "$tmp/err" || fail "no dataset figure: $(cat "$tmp/err")"
grep -qF "not enough memory" "$tmp/err" || fail "no memory message: $(cat "$tmp/err")"
grep -qF -- "--no-capacity-check" "$tmp/err" || fail "no override named: $(cat "$tmp/err")"
[ -z "$(ls -A "$tmp/runs")" ] || fail "a refused run left a run directory"
[ ! -e "$tmp/capcache/datasets" ] || [ -z "$(ls -A "$tmp/capcache/datasets")" ] ||
	fail "a refused run generated data"

# block stages its stream in a tmpfs of at most 90% of the guest's RAM: a dataset larger
# than that is a plan that cannot run (exit 2, as validate says), refused before anything runs,
# naming the cell, the VM and the key to raise
cat >"$tmp/stage.yaml" <<'YAML'
ferry: 1
name: stage-too-big
vms:
  small: {guest: builtin, vcpus: 1, memory: 256MiB, accel: tcg}
  roomy: {guest: builtin, vcpus: 1, memory: 1GiB, accel: tcg}
disks:
  img: {kind: image, size: 1GiB}
datasets:
  one: {files: 1, size: 300MiB}
methods:
  raw: {type: block}
matrix:
  vm: [roomy, small]
  disk: [img]
  dataset: [one]
  method: [raw]
YAML
rc=0
FERRY_CACHE_DIR="$tmp/capcache" FERRY_RUN_DIR="$tmp/runs" "$FERRY" run --connect test:///default \
	"$tmp/stage.yaml" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] || fail "a block cell the guest cannot stage exited $rc, not 2: $(cat "$tmp/err")"
grep -qF "cell 'vm=small,disk=img,dataset=one,method=raw': method 'raw' (type block) stages the dataset's 300MiB in the guest's RAM, and vm 'small' has 256MiB of memory" \
	"$tmp/err" || fail "no guest RAM message: $(cat "$tmp/err")"
grep -qF "raise vms.small.memory" "$tmp/err" || fail "no key to raise: $(cat "$tmp/err")"
grep -qF "roomy" "$tmp/err" && fail "the cell that fits was named: $(cat "$tmp/err")"
[ -z "$(ls -A "$tmp/runs")" ] || fail "a refused run left a run directory"
rc=0
"$FERRY" validate "$tmp/stage.yaml" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] && grep -qF "cell 'vm=small,disk=img,dataset=one,method=raw': method 'raw' (type block) stages" \
	"$tmp/err" || fail "validate of a block cell the guest cannot stage: rc $rc: $(cat "$tmp/err")"
grep -q '^ok:' "$tmp/out" && fail "validate printed ok for a plan that cannot fit"

# dataset gen checks the disk it writes to, before it writes
rc=0
"$FERRY" dataset gen --files 16 --size 1TiB --dir "$tmp/vast" 2>"$tmp/err" || rc=$?
[ "$rc" = 3 ] && grep -qF "not enough disk space on the filesystem of '$tmp/vast': needs 16TiB" \
	"$tmp/err" || fail "dataset gen of 16TiB: rc $rc: $(cat "$tmp/err")"
[ ! -e "$tmp/vast" ] || fail "a refused generation created its directory"

echo "# the cache limit: least recently used datasets are evicted, never one in use"
cache="$tmp/lru"
for seed in 1 2 3; do
	FERRY_CACHE_DIR="$cache" "$FERRY" dataset gen --files 4 --size 1MiB --seed "$seed" --no-sync \
		>"$tmp/gen-$seed"
	sleep 0.05
done
[ "$(find "$cache/datasets" -mindepth 1 -maxdepth 1 -type d ! -name '.*' | wc -l)" = 3 ] ||
	fail "three datasets expected in the cache"
first="$(sed -n 's/^dir: //p' "$tmp/gen-1")"
# seed 1 used again (most recent now); a limit of 9 MiB keeps two 4 MiB datasets
FERRY_CACHE_DIR="$cache" "$FERRY" dataset gen --files 4 --size 1MiB --seed 1 >/dev/null
FERRY_CACHE_DIR="$cache" FERRY_CACHE_MAX=9MiB "$FERRY" dataset gen --files 4 --size 1MiB \
	--seed 4 --no-sync >"$tmp/gen-4"
grep -q "^evicted: 2$" "$tmp/gen-4" || fail "eviction: $(cat "$tmp/gen-4")"
[ -d "$first" ] || fail "the most recently used dataset was evicted"
[ ! -d "$(sed -n 's/^dir: //p' "$tmp/gen-2")" ] || fail "the least recently used dataset stayed"
[ -d "$(sed -n 's/^dir: //p' "$tmp/gen-4")" ] || fail "the dataset just generated was evicted"

echo "# the guest's listing command, busybox only"
if [ ! -x /bin/busybox ]; then
	echo "SKIP: /bin/busybox not installed (scripts/setup.sh installs busybox-static)"
	exit 77
fi
mkdir "$tmp/bb"
for a in sh find sha256sum readlink; do ln -s /bin/busybox "$tmp/bb/$a"; done
guest_list() { # dir, extra args of `ferry dataset command`
	local cmd
	cmd="$("$FERRY" dataset command "$@")"
	env -i PATH="$tmp/bb" sh -c "$cmd"
}

"$FERRY" dataset gen --files 30 --size 1:20000 --depth 2 --fanout 2 --content text --seed 7 \
	--dir "$tmp/gen" --manifest "$tmp/gen.json" >/dev/null
guest_list "$tmp/gen" >"$tmp/listing"
[ "$(wc -l <"$tmp/listing")" = 30 ] || fail "listing has $(wc -l <"$tmp/listing") lines, not 30"
"$FERRY" dataset verify --manifest "$tmp/gen.json" "$tmp/listing" >"$tmp/out"
grep -q '^integrity: ok (30 files)$' "$tmp/out" || fail "verify: $(cat "$tmp/out")"

# a byte flipped where it landed is caught and named
victim="$(cd "$tmp/gen" && find . -type f -size +1k | sort | head -1)"
victim="${victim#./}"
printf 'Z' | dd of="$tmp/gen/$victim" bs=1 seek=7 conv=notrunc status=none
rm "$tmp/gen/dir1/dir1/f0003"
rc=0
guest_list "$tmp/gen" | "$FERRY" dataset verify --manifest "$tmp/gen.json" - 2>"$tmp/err" || rc=$?
[ "$rc" = 1 ] || fail "verify of a damaged copy exited $rc"
grep -qF "ferry: integrity: 1 different ($victim), 1 missing (dir1/dir1/f0003), 0 extra" "$tmp/err" ||
	fail "message: $(cat "$tmp/err")"

echo "# a path dataset: spaces, symlinks, a fifo"
mkdir -p "$tmp/tree/sub dir"
printf 'hello\n' >"$tmp/tree/sub dir/a file"
ln -s "sub dir/a file" "$tmp/tree/link"
mkfifo "$tmp/tree/pipe"
"$FERRY" dataset scan "$tmp/tree" --manifest "$tmp/tree.json" >"$tmp/out" 2>"$tmp/err"
grep -q "skipped 'pipe': fifo" "$tmp/err" || fail "fifo not reported: $(cat "$tmp/err")"
rm "$tmp/tree/pipe"
"$FERRY" dataset verify --manifest "$tmp/tree.json" --symlinks --dir "$tmp/tree" >/dev/null
guest_list "$tmp/tree" --symlinks >"$tmp/listing"
"$FERRY" dataset verify --manifest "$tmp/tree.json" --symlinks "$tmp/listing" >/dev/null
ln -sf elsewhere "$tmp/tree/link"
rc=0
guest_list "$tmp/tree" --symlinks | "$FERRY" dataset verify --manifest "$tmp/tree.json" \
	--symlinks - 2>"$tmp/err" || rc=$?
[ "$rc" = 1 ] && grep -qF "1 different (link)" "$tmp/err" || fail "changed link: $(cat "$tmp/err")"

echo "# names the old listing broke: a trailing CR, a leading '-' or blank"
mkdir "$tmp/odd"
printf 'a' >"$tmp/odd/cr$(printf '\r')"
printf 'b' >"$tmp/odd/-dash"
printf 'c' >"$tmp/odd/ lead"
"$FERRY" dataset scan "$tmp/odd" --manifest "$tmp/odd.json" >/dev/null
guest_list "$tmp/odd" --symlinks >"$tmp/listing"
"$FERRY" dataset verify --manifest "$tmp/odd.json" --symlinks "$tmp/listing" >"$tmp/out" 2>&1 ||
	fail "odd names: $(cat "$tmp/out")"

echo "# usage errors"
rc=0
"$FERRY" dataset gen --size 1 --content rnadom 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] && grep -qF "unknown value 'rnadom' (did you mean 'random'?)" "$tmp/err" ||
	fail "typo: rc $rc: $(cat "$tmp/err")"
echo "ok"
