#!/usr/bin/env bash
# The generated documents match the key tables: the committed JSON Schema is exactly what
# `ferry schema` prints, and ferry.1 contains `ferry schema --man` (PLAN KEYS) and
# `ferry schema --man-synopsis` (SYNOPSIS, from the command tables) verbatim. Fix with
# scripts/update-docs.sh. The schema also accepts every example plan (as yaml-language-server
# would check them) and is itself a valid draft-07 schema.
set -uo pipefail
src="${FERRY_SOURCE_DIR:?}"
ferry="${FERRY:?}"
cd "$src"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
failed=0

"$ferry" schema > "$scratch/schema.json"
if cmp -s "$scratch/schema.json" schema/ferry-plan.schema.json; then
	echo "ok 1 - schema/ferry-plan.schema.json matches the key tables"
else
	echo "not ok 1 - schema/ferry-plan.schema.json differs from 'ferry schema' (run scripts/update-docs.sh)"
	diff schema/ferry-plan.schema.json "$scratch/schema.json" | head -20 | sed 's/^/# /'
	failed=1
fi

"$ferry" schema --man > "$scratch/keys.man"
if /usr/bin/python3 -c 'import sys; sys.exit(0 if open(sys.argv[1]).read() in open(sys.argv[2]).read() else 1)' \
	"$scratch/keys.man" ferry.1; then
	echo "ok 2 - ferry.1 contains the generated PLAN KEYS section"
else
	echo "not ok 2 - ferry.1 PLAN KEYS differs from 'ferry schema --man' (run scripts/update-docs.sh)"
	failed=1
fi

"$ferry" schema --man-synopsis > "$scratch/synopsis.man"
if /usr/bin/python3 -c 'import sys; sys.exit(0 if open(sys.argv[1]).read() in open(sys.argv[2]).read() else 1)' \
	"$scratch/synopsis.man" ferry.1; then
	echo "ok 6 - ferry.1 contains the SYNOPSIS generated from the command tables"
else
	echo "not ok 6 - ferry.1 SYNOPSIS differs from 'ferry schema --man-synopsis' (run scripts/update-docs.sh)"
	failed=1
fi

"$ferry" schema --man-metrics > "$scratch/metrics.man"
if /usr/bin/python3 -c 'import sys; sys.exit(0 if open(sys.argv[1]).read() in open(sys.argv[2]).read() else 1)' \
	"$scratch/metrics.man" ferry.1; then
	echo "ok 7 - ferry.1 contains the METRICS list generated from the metric table"
else
	echo "not ok 7 - ferry.1 METRICS differs from 'ferry schema --man-metrics' (run scripts/update-docs.sh)"
	failed=1
fi

if /usr/bin/python3 - schema/ferry-plan.schema.json plans/*.yaml <<'PY'
import json, sys, yaml, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft7Validator.check_schema(schema)
v = jsonschema.Draft7Validator(schema)
bad = 0
for path in sys.argv[2:]:
    errors = list(v.iter_errors(yaml.safe_load(open(path))))
    for e in errors[:5]:
        print("# %s: %s: %s" % (path, "/".join(map(str, e.path)), e.message[:200]))
    bad += bool(errors)
sys.exit(1 if bad else 0)
PY
then
	echo "ok 3 - the schema is valid draft-07 and accepts every plan in plans/"
else
	echo "not ok 3 - schema check failed"
	failed=1
fi

if groff -man -ww -z ferry.1 2>"$scratch/groff"; [ ! -s "$scratch/groff" ]; then
	echo "ok 4 - ferry.1 renders without groff warnings"
else
	echo "not ok 4 - groff warnings:"; sed 's/^/# /' "$scratch/groff" | head
	failed=1
fi
# a plain `type: null` is YAML's null value, which ferry reads as the method name "null": the
# schema accepts it as editors see it, and ferry validates the same plan
cat >"$scratch/null-method.yaml" <<'YAML'
ferry: 1
name: null-method
vms:
  tiny: {guest: builtin, vcpus: 2, memory: 512MiB}
disks:
  ram: {kind: tmpfs, size: 256MiB}
datasets:
  one: {files: 1, size: 4KiB}
methods:
  idle: {type: null, duration: 1s}
  quoted: {type: "null", duration: 1s}
matrix:
  disk: [ram]
  dataset: [one]
  method: [idle, quoted]
YAML
if /usr/bin/python3 - schema/ferry-plan.schema.json "$scratch/null-method.yaml" <<'PY' &&
import json, sys, yaml, jsonschema
plan = yaml.safe_load(open(sys.argv[2]))
assert plan["methods"]["idle"]["type"] is None
errors = list(jsonschema.Draft7Validator(json.load(open(sys.argv[1]))).iter_errors(plan))
for e in errors[:5]:
    print("# %s: %s" % ("/".join(map(str, e.path)), e.message[:200]))
sys.exit(1 if errors else 0)
PY
	"$ferry" validate "$scratch/null-method.yaml" >/dev/null; then
	echo "ok 5 - the schema and ferry both accept a plain 'type: null'"
else
	echo "not ok 5 - a plain 'type: null' is refused"
	failed=1
fi
echo "1..7"
exit "$failed"
