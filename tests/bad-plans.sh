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
