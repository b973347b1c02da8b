#!/usr/bin/env bash
# Expansion time of a 10,000-cell and a 1,000,000-cell plan, as `ferry validate` sees it (parse,
# names, matrix expansion with exclude/include, per-cell checks), and of `ferry expand` writing
# every cell (table and JSON) to /dev/null. Goals: under 0.1 s and under 2 s for validate.
# Not a test: timings depend on the machine. Usage: bench/expand.sh [BUILDDIR]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ferry="${1:-$here/build}/ferry"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# plan NAME VMS DISKS DATASETS METHODS [checked]: a plan with that many entries of each kind,
# every axis listing all of them, and an include entry with run overrides for one vm's cells.
# "checked" makes vm1 a q35 machine and disk1 an ide disk, excluded together, so that every
# cell goes through the per-cell compatibility check (1% fewer cells).
plan() {
	local f="$tmp/$1.yaml"
	{
		echo "ferry: 1"
		echo "vms:"; for i in $(seq "$2"); do echo "  vm$i: {vcpus: 2}"; done
		echo "disks:"; for i in $(seq "$3"); do echo "  disk$i: {size: 1GiB}"; done
		echo "datasets:"; for i in $(seq "$4"); do echo "  ds$i: {files: $i, size: 4KiB}"; done
		echo "methods:"; for i in $(seq "$5"); do echo "  m$i: {type: agent-file}"; done
		echo "matrix:"
		printf '  vm: [%s]\n' "$(seq -s, -f 'vm%g' "$2")"
		printf '  disk: [%s]\n' "$(seq -s, -f 'disk%g' "$3")"
		printf '  dataset: [%s]\n' "$(seq -s, -f 'ds%g' "$4")"
		printf '  method: [%s]\n' "$(seq -s, -f 'm%g' "$5")"
		[ "${6:-}" = checked ] && echo "  exclude: [{vm: vm1, disk: disk1}]"
		echo "  include: [{vm: vm2, run: {repeat: 5}}]"
	} > "$f"
	if [ "${6:-}" = checked ]; then
		sed -i 's/^  vm1: {vcpus: 2}$/  vm1: {machine: q35}/; s/^  disk1: {size: 1GiB}$/  disk1: {bus: ide}/' "$f"
	fi
	echo "$f"
}

best_of() { # N command...: the fastest of N wall-clock runs, in seconds
	local n="$1"; shift
	local best=""
	for _ in $(seq "$n"); do
		local t0 t1
		t0=$(date +%s.%N)
		"$@" >/dev/null
		t1=$(date +%s.%N)
		best=$(echo "$t0 $t1 $best" | awk '{d = $2 - $1; if ($3 == "" || d < $3) print d; else print $3}')
	done
	printf '%.3f' "$best"
}

p10k="$(plan p10k 10 10 10 10)"
p1m="$(plan p1m 10 10 100 100)"
c10k="$(plan c10k 10 10 10 10 checked)"
c1m="$(plan c1m 10 10 100 100 checked)"
for p in "$p10k" "$c10k"; do "$ferry" validate "$p"; done
for p in "$p1m" "$c1m"; do "$ferry" validate --max-cells 1000000 "$p"; done

echo "plan                  validate   expand(table)  expand(json)   (best of 3, seconds)"
printf '%-21s %-10s %-14s %s\n' "10,000 cells" "$(best_of 3 "$ferry" validate "$p10k")" \
	"$(best_of 3 "$ferry" expand "$p10k")" "$(best_of 3 "$ferry" expand --format json "$p10k")"
printf '%-21s %-10s\n' "9,900 (checked)" "$(best_of 3 "$ferry" validate "$c10k")"
printf '%-21s %-10s %-14s %s\n' "1,000,000 cells" \
	"$(best_of 3 "$ferry" validate --max-cells 1000000 "$p1m")" \
	"$(best_of 1 "$ferry" expand --max-cells 1000000 "$p1m")" "(not run: ~1 GB of JSON)"
printf '%-21s %-10s\n' "990,000 (checked)" \
	"$(best_of 3 "$ferry" validate --max-cells 1000000 "$c1m")"
