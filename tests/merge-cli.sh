#!/usr/bin/env bash
# `ferry merge` as a command: the shards of a run merged give the file the unsharded run wrote,
# cell for cell, and reports identical to the unsharded run's; each cell keeps the provenance of
# its shard; another plan, a cell twice and a shard twice are refused (exit 2, naming the files
# and the cell), and nothing is written then; the output replaces only a regular file.
set -euo pipefail

src="${FERRY_SOURCE_DIR:?}"
build="${FERRY_BUILD_DIR:?}"
ferry="${FERRY:?}"
py=/usr/bin/python3
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
unset GITHUB_STEP_SUMMARY GITHUB_ACTIONS

fail() { echo "FAIL: $*" >&2; exit 1; }

# the unsharded run (five cells, every status) and its three shards as `ferry run --shard K/3`
# writes them: cells i with i % 3 == K - 1, the shard named, each on its own host
"$build/tests/test-results-model" --write-sample "$tmp/all.json" >/dev/null
"$py" - "$tmp" <<'PY'
import copy, json, sys
d = sys.argv[1]
whole = json.load(open(d + "/all.json"))
for k in (1, 2, 3):
    s = copy.deepcopy(whole)
    s["shard"] = {"k": k, "n": 3}
    s["cells"] = [c for i, c in enumerate(whole["cells"]) if i % 3 == k - 1]
    if k > 1:
        s["provenance"]["hostname"] = "shard-host-%d" % k
    json.dump(s, open("%s/s%d.json" % (d, k), "w"), indent=2)
PY

expect() { # status, stderr pattern, args...
	local want="$1" pattern="$2"; shift 2
	local rc=0
	"$ferry" merge "$@" >"$tmp/stdout" 2>"$tmp/stderr" || rc=$?
	[ "$rc" = "$want" ] || { cat "$tmp/stderr"; fail "ferry merge $* exited $rc, expected $want"; }
	if [ -n "$pattern" ] && ! grep -qF -- "$pattern" "$tmp/stderr"; then
		cat "$tmp/stderr"; fail "ferry merge $*: stderr lacks '$pattern'"
	fi
	echo "ok: ferry merge $* -> $rc"
}

# given in any order, the shards merge into the unsharded run's cells, in its order
expect 0 "" -o "$tmp/merged.json" "$tmp/s3.json" "$tmp/s1.json" "$tmp/s2.json"
"$py" - "$tmp/all.json" "$tmp/merged.json" <<'PY'
import json, sys
whole, merged = (json.load(open(p)) for p in sys.argv[1:3])
assert "shard" not in merged, "a merged file claims to be a shard"
assert [c["id"] for c in merged["cells"]] == [c["id"] for c in whole["cells"]], "cell order"
for a, b in zip(whole["cells"], merged["cells"]):
    o = b.pop("origin")
    assert a == b, "cell %s changed in the merge" % a["id"]
    origin = merged["origins"][o]
    i = whole["cells"].index(a)
    assert origin["shard"] == {"k": i % 3 + 1, "n": 3}, (a["id"], origin["shard"])
    want = "builder-01" if i % 3 == 0 else "shard-host-%d" % (i % 3 + 1)
    assert origin["provenance"]["hostname"] == want, (a["id"], origin["provenance"]["hostname"])
assert [o["shard"]["k"] for o in merged["origins"]] == [1, 2, 3]
assert merged["provenance"] == whole["provenance"], "top-level provenance"
assert merged["plan"] == whole["plan"]
print("ok: merged cells equal the unsharded run's, each with its shard's host")
PY

# the merged file is valid against the published schema
if "$py" -c 'import jsonschema' 2>/dev/null; then
	"$py" - "$src/schema/ferry-results.schema.json" "$tmp/merged.json" "$tmp/s1.json" <<'PY'
import json, sys
import jsonschema
v = jsonschema.Draft7Validator(json.load(open(sys.argv[1])))
for p in sys.argv[2:]:
    v.validate(json.load(open(p)))
bad = json.load(open(sys.argv[2]))
bad["origins"][0]["stray"] = 1
assert not v.is_valid(bad), "the schema lets a stray key into an origin"
print("ok: merged and shard files valid against the schema")
PY
fi

# reports of the merged file are the unsharded run's reports (JUnit, Markdown, Bencher, gab)
for f in all merged; do
	"$ferry" report "$tmp/$f.json" --junit "$tmp/$f.xml" --markdown "$tmp/$f.md" \
		--bmf "$tmp/$f.bmf.json" --gab "$tmp/$f.gab.json"
done
for ext in xml md bmf.json gab.json; do
	cmp "$tmp/all.$ext" "$tmp/merged.$ext" || fail "the $ext report of the merged file differs"
done
echo "ok: every report of the merged file equals the unsharded run's"

# a merged file merges again; standard output works
expect 0 "shard 3/3 not merged" -o "$tmp/m12.json" "$tmp/s1.json" "$tmp/s2.json"
expect 0 "" -o - "$tmp/m12.json" "$tmp/s3.json"
cmp "$tmp/stdout" "$tmp/merged.json" || fail "merging a merged file with the last shard differs"

# refusals: nothing is written
printf 'ferry: 1\nname: other\n' >"$tmp/other.yaml"
"$py" - "$tmp/s2.json" "$tmp/other.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["plan"]["sha256"] = "0" * 64
json.dump(d, open(sys.argv[2], "w"))
PY
expect 2 "other.json: written by another plan than $tmp/s1.json" -o "$tmp/no.json" "$tmp/s1.json" "$tmp/other.json"
expect 2 "cell 'method=share,dataset=few-large' is in both $tmp/all.json and $tmp/s2.json" \
	-o "$tmp/no.json" "$tmp/all.json" "$tmp/s2.json"
cp "$tmp/s2.json" "$tmp/s2-again.json"
expect 2 "are both shard 2/3" -o "$tmp/no.json" "$tmp/s2.json" "$tmp/s2-again.json"
expect 2 "missing -o FILE" "$tmp/s1.json"
expect 2 "nope.json" -o "$tmp/no.json" "$tmp/s1.json" "$tmp/nope.json"
[ ! -e "$tmp/no.json" ] || fail "a refused merge wrote its output"

# the output replaces only a regular file, never through a symbolic link
echo keep >"$tmp/target"
ln -s "$tmp/target" "$tmp/link.json"
expect 2 "link.json" -o "$tmp/link.json" "$tmp/s1.json" "$tmp/s2.json"
[ "$(cat "$tmp/target")" = keep ] || fail "merge wrote through a symbolic link"
[ -z "$(find "$tmp" -name '*.tmp*' -o -name '.*' -type f)" ] || fail "temporary files left"
echo "ok: ferry merge refuses what it must, writes nothing then"
