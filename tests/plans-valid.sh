#!/usr/bin/env bash
# Docs as tests: every plan in plans/ validates without a warning, runs in at least 3 blocks of
# boots (a boot is the sample), expands (table and JSON), and carries a comment header saying what
# it answers.
set -uo pipefail
src="${FERRY_SOURCE_DIR:?}"
ferry="${FERRY:?}"
cd "$src"
n=0 failed=0
check() { # description, command...
	local d="$1"; shift
	n=$((n + 1))
	if out="$("$@" 2>&1)"; then
		echo "ok $n - $d"
	else
		echo "not ok $n - $d"; printf '%s\n' "$out" | head -20 | sed 's/^/# /'
		failed=$((failed + 1))
	fi
}
plans=(plans/*.yaml)
[ "${#plans[@]}" -ge 6 ] || { echo "Bail out! expected at least 6 example plans"; exit 1; }
for p in "${plans[@]}"; do
	check "$p validates" "$ferry" validate "$p"
	check "$p expands (table)" "$ferry" expand "$p"
	check "$p expands (json)" bash -c '"$1" expand --format json "$2" | /usr/bin/python3 -c "
import json, sys
d = json.load(sys.stdin)
assert d[\"count\"] == len(d[\"cells\"]) > 0
for c in d[\"cells\"]:
    assert c[\"vm\"][\"name\"] and c[\"disk\"][\"name\"] and c[\"dataset\"][\"name\"] and c[\"method\"][\"name\"]
"' _ "$ferry" "$p"
	check "$p says what it answers" grep -q '^# .*[a-z]' "$p"
	# a shipped plan gives answers: no warning (validate warns when a plan compares cells
	# that can never get 3 boots), and a boot is its sample (run.boots of at least 3)
	check "$p validates without a warning" bash -c '! "$1" validate "$2" 2>&1 >/dev/null | grep .' _ "$ferry" "$p"
	check "$p runs in at least 3 blocks of boots" bash -c '"$1" expand --format json "$2" | /usr/bin/python3 -c "
import json, sys
for c in json.load(sys.stdin)[\"cells\"]:
    assert c[\"run\"][\"boots\"][\"min\"] >= 3, (c[\"id\"], c[\"run\"][\"boots\"])
"' _ "$ferry" "$p"
	# the table says so too, not the repeat loop that blocks replace
	check "$p expands (table) to blocks of boots" bash -c '"$1" expand "$2" | grep -E "^ +[0-9]+  " | grep -qvE "  boots [0-9]+(\.\.[0-9]+)?, " && exit 1 || exit 0' _ "$ferry" "$p"
done
# the shards of every plan partition its cells
for p in "${plans[@]}"; do
	check "$p: 3 shards partition the cells" bash -c '
		all=$("$1" expand --format json "$2" | /usr/bin/python3 -c "import json,sys; print(sorted(c[\"id\"] for c in json.load(sys.stdin)[\"cells\"]))")
		parts=$(for k in 1 2 3; do "$1" expand --format json --shard $k/3 "$2"; done | /usr/bin/python3 -c "
import json, sys
dec = json.JSONDecoder(); s = sys.stdin.read().strip(); ids = []
while s:
    d, i = dec.raw_decode(s); ids += [c[\"id\"] for c in d[\"cells\"]]; s = s[i:].strip()
print(sorted(ids))")
		[ "$all" = "$parts" ]' _ "$ferry" "$p"
done
echo "1..$n"
[ "$failed" -eq 0 ]
