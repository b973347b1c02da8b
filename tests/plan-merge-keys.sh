#!/usr/bin/env bash
# YAML merge keys in plans: tests/plans/merge/merged.yaml (anchors, `<<: *a`, `<<: [*a, {...}]`,
# explicit keys before and after the merge, a merged mapping that merges) validates and expands
# to exactly the cells of flat.yaml, which spells every entry out; a flat plan that differs in
# one merged value does not (so the comparison can fail). An anchored value with errors, used
# several times, reports each error once, at the line and column where it is written.
set -euo pipefail
src="${FERRY_SOURCE_DIR:?}"
ferry="${FERRY:?}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
dir="$src/tests/plans/merge"

"$ferry" validate "$dir/merged.yaml" >/dev/null || fail "merged.yaml does not validate"
grep -q '<<: \[\*' "$dir/merged.yaml" || fail "merged.yaml has no '<<: [*a, ...]' merge"
"$ferry" expand --format json "$dir/merged.yaml" >"$tmp/merged.json"
"$ferry" expand --format json "$dir/flat.yaml" >"$tmp/flat.json"
cmp -s "$tmp/merged.json" "$tmp/flat.json" ||
	{ diff "$tmp/flat.json" "$tmp/merged.json" | head -20; fail "merged.yaml and flat.yaml expand differently"; }
echo "ok: merged.yaml expands to the cells of flat.yaml ($(grep -c '"id":' "$tmp/merged.json") cells)"

sed 's/size: 1GiB, bus: scsi/size: 2GiB, bus: scsi/' "$dir/flat.yaml" >"$tmp/other.yaml"
! cmp -s "$tmp/other.yaml" "$dir/flat.yaml" || fail "the control edit did not change flat.yaml"
"$ferry" expand --format json "$tmp/other.yaml" >"$tmp/other.json"
! cmp -s "$tmp/merged.json" "$tmp/other.json" || fail "a different flat plan expands the same"
echo "ok: a flat plan with one value changed expands differently"

# an error inside an anchored value is one error, at the anchor's value, however often it is used
bad="$dir/anchored-errors.yaml"
st=0
"$ferry" validate "$bad" >"$tmp/out" 2>"$tmp/err" || st=$?
[ "$st" -eq 2 ] || { cat "$tmp/err"; fail "validate $bad exited $st, expected 2"; }
[ "$(grep -c '^ferry: ' "$tmp/err")" -eq 2 ] || { cat "$tmp/err"; fail "expected 2 errors, one per mistake"; }
grep -qx "ferry: $bad:8:37: 'size': invalid size '4XiB': unknown unit 'XiB' (did you mean 'KiB'?)" \
	"$tmp/err" || { cat "$tmp/err"; fail "the size error is not at the anchored value (8:37)"; }
grep -q "^ferry: $bad:8:43: unknown key 'colour'" "$tmp/err" ||
	{ cat "$tmp/err"; fail "the unknown key is not reported at the anchored mapping (8:43)"; }
echo "ok: each error of an anchored value used 4 times is reported once, where it is written"
