#!/usr/bin/env bash
# The results file ferry writes is valid against the schema it publishes
# (schema/ferry-results.schema.json, draft-07), checked by Debian's python3-jsonschema; and the
# schema is not a blank cheque: documents with a wrong version, a bad status or a stray key fail.
set -euo pipefail

src="${FERRY_SOURCE_DIR:?}"
build="${FERRY_BUILD_DIR:?}"
py=/usr/bin/python3

if ! "$py" -c 'import jsonschema' 2>/dev/null; then
	echo "SKIP: python3-jsonschema is not installed (apt-get install python3-jsonschema)"
	exit 77
fi

out="$build/tests/sample-results.json"
"$build/tests/test-results-model" --write-sample "$out"

"$py" - "$src/schema/ferry-results.schema.json" "$out" <<'PY'
import copy, json, sys
import jsonschema

schema = json.load(open(sys.argv[1]))
jsonschema.Draft7Validator.check_schema(schema)
v = jsonschema.Draft7Validator(schema)
doc = json.load(open(sys.argv[2]))

errors = sorted(v.iter_errors(doc), key=lambda e: list(e.path))
for e in errors:
    print("invalid: %s: %s" % ("/".join(map(str, e.path)), e.message))
if errors:
    sys.exit(1)
print("ok: %s is valid (%d cells)" % (sys.argv[2], len(doc["cells"])))

# the sample covers what the schema describes
statuses = {c["status"] for c in doc["cells"]}
assert statuses == {"pending", "passed", "failed", "error", "skipped"}, statuses
kinds = {e["kind"] for c in doc["cells"] for e in c["errors"]}
assert kinds == {"infra", "integrity", "criterion", "regression", "timeout"}, kinds

def must_fail(what, mutate):
    bad = copy.deepcopy(doc)
    mutate(bad)
    if v.is_valid(bad):
        print("schema accepted a bad document: " + what)
        sys.exit(1)
    print("ok: rejected " + what)

must_fail("version 3", lambda d: d.__setitem__("ferry_results", 3))
must_fail("a boot id 0", lambda d: d["cells"][0]["runs"][0].__setitem__("boot", 0))
must_fail("a metric direction 'up'", lambda d: d["metrics"]["total"].__setitem__("better", "up"))
must_fail("status 'great'", lambda d: d["cells"][0].__setitem__("status", "great"))
must_fail("a stray key in a run", lambda d: d["cells"][0]["runs"][0].__setitem__("totl", 1))
must_fail("a negative phase time",
          lambda d: d["cells"][0]["runs"][0]["phases"].__setitem__("transfer", -1))
must_fail("a summary without n", lambda d: d["cells"][0]["stats"]["total"].pop("n"))
must_fail("a local time", lambda d: d["provenance"].__setitem__("started", "2026-11-29 23:11"))
must_fail("a short hash", lambda d: d["plan"].__setitem__("sha256", "abc"))
PY
