#!/usr/bin/env bash
# The JSON exports re-read against their schemas with python3-jsonschema: Bencher BMF
# (schema/bmf.schema.json), github-action-benchmark customSmallerIsBetter (schema/gab.schema.json),
# and the results file itself (schema/ferry-results.schema.json); and the schemas reject what
# those tools would reject.
set -euo pipefail

src="${FERRY_SOURCE_DIR:?}"
build="${FERRY_BUILD_DIR:?}"
ferry="${FERRY:?}"
py=/usr/bin/python3
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if ! "$py" -c 'import jsonschema' 2>/dev/null; then
	echo "SKIP: python3-jsonschema is not installed (apt-get install python3-jsonschema)"
	exit 77
fi

"$build/tests/test-reporters" --write-sample-results "$tmp/results.json"
"$ferry" report "$tmp/results.json" --bmf "$tmp/bmf.json" --gab "$tmp/gab.json" \
	--json "$tmp/copy.json"
cmp "$tmp/results.json" "$tmp/copy.json"
echo "ok: --json writes the results file byte for byte"
# the verdicts are derived: a file's own are never read, the export computes them anew
"$py" - "$tmp/results.json" "$tmp/forged.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["verdicts"], "the sample has no verdicts"
for v in r["verdicts"]:
    v["text"], v["verdict"] = "forged", "a-better"
json.dump(r, open(sys.argv[2], "w"), indent=2)
PY
"$ferry" report "$tmp/forged.json" --json "$tmp/unforged.json"
cmp "$tmp/results.json" "$tmp/unforged.json"
echo "ok: a results file's own verdicts are not read: --json computes them from the runs"

"$py" - "$src/schema" "$tmp" <<'PY'
import copy, json, sys
import jsonschema

sdir, tmp = sys.argv[1], sys.argv[2]
def validator(name):
    s = json.load(open("%s/%s" % (sdir, name)))
    jsonschema.Draft7Validator.check_schema(s)
    return jsonschema.Draft7Validator(s)

def check(v, path):
    doc = json.load(open(path))
    errs = list(v.iter_errors(doc))
    for e in errs:
        print("invalid: %s: %s: %s" % (path, "/".join(map(str, e.path)), e.message))
    if errs:
        sys.exit(1)
    return doc

bmf_v, gab_v, res_v = (validator(n) for n in
                       ("bmf.schema.json", "gab.schema.json", "ferry-results.schema.json"))
bmf = check(bmf_v, tmp + "/bmf.json")
gab = check(gab_v, tmp + "/gab.json")
check(res_v, tmp + "/results.json")

# five cells have measured runs; latency in ns brackets the mean
assert len(bmf) == 5 and len(gab) == 5, (len(bmf), len(gab))
image = bmf["vm=small,dataset=few-large,method=image"]["latency"]
assert image["lower_value"] < image["value"] < image["upper_value"], image
assert abs(image["value"] - 1.156666666667e9) < 1, image
one = [b for b in gab if "alert(1)" in b["name"]][0]
assert "range" not in one, "a single run has no interval"
assert gab[1]["unit"] == "s" and gab[1]["range"] == "\u00b1 0.075892", gab[1]
print("ok: bmf.json, gab.json and results.json are valid")

def must_fail(v, what, doc, mutate):
    bad = copy.deepcopy(doc)
    mutate(bad)
    if v.is_valid(bad):
        print("schema accepted a bad document: " + what)
        sys.exit(1)
    print("ok: rejected " + what)

k = next(iter(bmf))
must_fail(bmf_v, "a BMF metric without value", bmf, lambda d: d[k]["latency"].pop("value"))
must_fail(bmf_v, "a BMF value as a string", bmf,
          lambda d: d[k]["latency"].__setitem__("value", "1.0"))
must_fail(gab_v, "a GAB entry without unit", gab, lambda d: d[0].pop("unit"))
must_fail(gab_v, "a GAB object instead of an array", gab, lambda d: None or d.clear() or d.append(5))
PY
