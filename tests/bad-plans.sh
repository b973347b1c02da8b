#!/usr/bin/env bash
# Every malformed plan in tests/plans/bad/ makes `ferry validate` exit 2 with exactly the
# messages in NAME.err (stderr), print nothing on stdout, and write nothing. NAME.env, when
# present, holds extra environment for that case (e.g. GITHUB_ACTIONS=true).
set -uo pipefail

src="${FERRY_SOURCE_DIR:?}"
ferry="${FERRY:?}"
cd "$src"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
marker="$scratch/marker"
touch "$marker"
sleep 0.01

n=0 failed=0
for plan in tests/plans/bad/*.yaml; do
	name="${plan%.yaml}"
	n=$((n + 1))
	if [ ! -f "$name.err" ]; then
		echo "not ok $n - $plan: no $name.err"
		failed=$((failed + 1))
		continue
	fi
	envs=()
	if [ -f "$name.env" ]; then
		mapfile -t envs < "$name.env"
	fi
	# a clean environment for the variables the corpus uses
	env -u GITHUB_ACTIONS -u FERRY_BAD_PLAN_UNSET "${envs[@]}" \
		"$ferry" validate "$plan" >"$scratch/out" 2>"$scratch/err"
	rc=$?
	problems=()
	[ "$rc" -eq 2 ] || problems+=("exit status $rc, expected 2")
	[ ! -s "$scratch/out" ] || problems+=("stdout not empty: $(head -c 200 "$scratch/out")")
	if ! cmp -s "$scratch/err" "$name.err"; then
		problems+=("stderr differs: $(diff "$name.err" "$scratch/err" | head -20)")
	fi
	if [ "${#problems[@]}" -eq 0 ]; then
		echo "ok $n - $plan"
	else
		echo "not ok $n - $plan"
		printf '# %s\n' "${problems[@]}"
		failed=$((failed + 1))
	fi
done

# Inputs too big to commit, made here: each must end with its limit's error, not hang (timeout
# is only a guard: a hang fails the case, no timing is asserted).
generated() { # name, expected stderr (with @ for the plan's path), command to write the plan
	local name="$1" want="$2"; shift 2
	n=$((n + 1))
	local plan="$scratch/$name.yaml"
	"$@" >"$plan"
	timeout 20 "$ferry" validate "$plan" >"$scratch/out" 2>"$scratch/err"
	local rc=$? problems=()
	[ "$rc" -eq 2 ] || problems+=("exit status $rc, expected 2")
	printf '%s\n' "${want//@/$plan}" >"$scratch/want"
	cmp -s "$scratch/err" "$scratch/want" ||
		problems+=("stderr differs: $(diff "$scratch/want" "$scratch/err" | head -5)")
	if [ "${#problems[@]}" -eq 0 ]; then
		echo "ok $n - generated: $name"
	else
		echo "not ok $n - generated: $name"
		printf '# %s\n' "${problems[@]}"
		failed=$((failed + 1))
	fi
}
py() { /usr/bin/python3 -c "$1"; }
generated larger-than-4mib "ferry: cannot read '@': larger than 4 MiB" \
	py 'import sys; sys.stdout.write("ferry: 1\n" + "#" * (4 << 20) + "\n")'
# 400k keys in under 4 MiB: the node limit ends it where the 100001st node starts
generated 400k-keys "ferry: @:2:352001: the plan is too large: more than 100000 YAML nodes (keys, values and list items, with what aliases repeat)" \
	py 'import sys
def k(i):
    s = ""
    while True:
        s = "abcdefghijklmnopqrstuvwxyz0123456789"[i % 36] + s; i //= 36
        if not i: return s
sys.stdout.write("ferry: 1\nrun: {" + ",".join(k(i) + ": 1" for i in range(400000)) + "}\n")'
generated 200k-nested-lists "ferry: @:2:77: mappings and lists nest deeper than 64 levels" \
	py 'print("ferry: 1\ndescription: " + "[" * 200000)'
# 40k keys under run: (within the limits): every one is an unknown key, found in linear time
generated 40k-keys-under-run "$(for i in $(seq 0 49); do
	printf "ferry: @:%d:3: unknown key 'k%05d' (expected one of: boots, runs_per_boot, until, budget, repeat, warmup, order, seed, caches, vm, disk, fresh, timeout, cell_timeout)\n" $((i + 3)) "$i"
done)
ferry: ... and 39950 more errors not shown" \
	py 'print("ferry: 1\nrun:\n" + "".join("  k%05d: 1\n" % i for i in range(40000)), end="")'
# a FIFO: refused before anything waits for a writer
n=$((n + 1))
mkfifo "$scratch/fifo.yaml"
timeout 20 "$ferry" validate "$scratch/fifo.yaml" >"$scratch/out" 2>"$scratch/err"
rc=$?
if [ "$rc" -eq 2 ] && [ "$(cat "$scratch/err")" = "ferry: cannot read '$scratch/fifo.yaml': not a regular file" ]; then
	echo "ok $n - a FIFO is refused without blocking"
else
	echo "not ok $n - a FIFO: exit $rc (124 is the hang guard), stderr: $(head -c 300 "$scratch/err")"
	failed=$((failed + 1))
fi
# a FIFO named by an include: refused the same way, at the include
n=$((n + 1))
printf 'ferry: 1\ninclude: [fifo.yaml]\n' >"$scratch/inc-fifo.yaml"
timeout 20 "$ferry" validate "$scratch/inc-fifo.yaml" >"$scratch/out" 2>"$scratch/err"
rc=$?
if [ "$rc" -eq 2 ] && [ "$(cat "$scratch/err")" = "ferry: $scratch/inc-fifo.yaml:2:11: cannot read '$scratch/fifo.yaml': not a regular file" ]; then
	echo "ok $n - an included FIFO is refused without blocking"
else
	echo "not ok $n - an included FIFO: exit $rc, stderr: $(head -c 300 "$scratch/err")"
	failed=$((failed + 1))
fi

# nothing written: no file or directory in the source tree (outside build directories) is newer
# than the marker; that covers report paths the plans name (a new out/ is newer too), while an out/
# left by an earlier quick start does not count
n=$((n + 1))
written="$(find . \( -path './build*' -o -path './.git' \) -prune -o -newer "$marker" -print | head)"
if [ -z "$written" ]; then
	echo "ok $n - validate wrote nothing"
else
	echo "not ok $n - validate wrote files: $written"
	failed=$((failed + 1))
fi

echo "1..$n"
[ "$n" -ge 46 ] || { echo "# the corpus needs at least 45 plans"; exit 1; }
[ "$failed" -eq 0 ]
