#!/usr/bin/env bash
# The JUnit report, as `ferry report` writes it from the sample results (tests/unit/test-reporters.c),
# re-read by real consumers: xmllint against both vendored schemas (Jenkins xunit-plugin's
# junit-10.xsd and the strict Ant JUnit.xsd), and python3-junitparser (what
# mikepenz/action-junit-report and friends build on), which must count what the sample holds.
set -euo pipefail

src="${FERRY_SOURCE_DIR:?}"
build="${FERRY_BUILD_DIR:?}"
ferry="${FERRY:?}"
py=/usr/bin/python3
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if ! command -v xmllint >/dev/null; then
	echo "SKIP: xmllint is missing (Debian package libxml2-utils)"
	exit 77
fi
if ! "$py" -c 'import junitparser' 2>/dev/null; then
	echo "SKIP: python3-junitparser is not installed"
	exit 77
fi

"$build/tests/test-reporters" --write-sample-results "$tmp/results.json"
"$ferry" report "$tmp/results.json" --junit "$tmp/report.xml"

for xsd in junit-10 ant-junit; do
	xmllint --noout --schema "$src/fixtures/xsd/$xsd.xsd" "$tmp/report.xml"
done
echo "ok: valid against junit-10.xsd and ant-junit.xsd"

# a results file with nothing in it (no cells, no host, no plan name) is still valid JUnit
"$build/tests/test-reporters" --write-empty-results "$tmp/empty.json"
"$ferry" report "$tmp/empty.json" --junit "$tmp/empty.xml" --markdown "$tmp/empty.md"
for xsd in junit-10 ant-junit; do
	xmllint --noout --schema "$src/fixtures/xsd/$xsd.xsd" "$tmp/empty.xml"
done
grep -q '^No cells\.$' "$tmp/empty.md"
echo "ok: an empty results file gives valid JUnit and a Markdown report"

# the schemas are not blank cheques: what real producers get wrong is rejected
bad() { # what, sed expression
	sed -e "$2" "$tmp/report.xml" >"$tmp/bad.xml"
	if xmllint --noout --schema "$src/fixtures/xsd/ant-junit.xsd" "$tmp/bad.xml" 2>/dev/null; then
		echo "FAIL: ant-junit.xsd accepted $1"
		exit 1
	fi
	echo "ok: ant-junit.xsd rejects $1"
}
bad "a decimal comma" '0,/time="\([0-9]*\)\.\([0-9]*\)"/s//time="\1,\2"/'
bad "a zoned timestamp" '0,/timestamp="\([^"]*\)"/s//timestamp="\1Z"/'
bad "an attribute on testsuites" 's/<testsuites>/<testsuites tests="1">/'

# no raw control characters (ESC from colour codes) anywhere in the file
if LC_ALL=C grep -q $'[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]' "$tmp/report.xml"; then
	echo "FAIL: control characters in the JUnit report"
	exit 1
fi
echo "ok: no control characters"

"$py" - "$tmp/report.xml" <<'PY'
import sys
from junitparser import JUnitXml, Failure, Error, Skipped

xml = JUnitXml.fromfile(sys.argv[1])
tests = failures = errors = skipped = 0
names = []
kinds = {}
for suite in xml:
    for case in suite:
        tests += 1
        names.append(case.name)
        for r in case.result:
            if isinstance(r, Failure):
                failures += 1
                kinds.setdefault("failure", set()).add(r.type)
            elif isinstance(r, Error):
                errors += 1
                kinds.setdefault("error", set()).add(r.type)
            elif isinstance(r, Skipped):
                skipped += 1
    # the suite's counts agree with its testcases
    assert suite.tests == len(list(suite)), (suite.name, suite.tests)

# 8 cells: 5+3+4 (3 runs, cell criterion)+1+1+3 (2 runs, regression)+1+1 (not run)
assert (tests, failures, errors, skipped) == (19, 3, 1, 2), (tests, failures, errors, skipped)
assert kinds == {"failure": {"integrity", "criterion", "regression"}, "error": {"infra"}}, kinds
assert len(set(names)) == len(names), "testcase names are not unique"
props = {p.name: p.value for p in next(iter(xml)).properties()}
assert props["axis.method"] == "agent" and props["stats.total.median"] == "2.875", props
assert props["param.vm"] == '{"memory":"1GiB","vcpus":2}', props["param.vm"]
hostile = [n for n in names if "alert(1)" in n]
assert hostile and all("<script>" in n and "\x1b" not in n for n in hostile), hostile
print("ok: junitparser reads %d tests, %d failures, %d errors, %d skipped" %
      (tests, failures, errors, skipped))
PY
