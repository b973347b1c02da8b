#!/usr/bin/env bash
# The CI recipes of docs/ci.md (docs/examples/github-workflow.yml, docs/examples/gitlab-ci.yml)
# are valid for the real validators, installed by scripts/setup.sh from npm: action-validator
# (the GitHub workflow JSON schema) and gitlab-ci-local with --json-schema-validation (GitLab's
# own CI schema). Each validator is shown to fail on a broken copy of the file, so this test
# can fail; and the docs quote the examples.
set -euo pipefail

src="${FERRY_SOURCE_DIR:?}"
tools="${FERRY_TOOLS_DIR:-/var/cache/ferry/ci-tools}"
av="$tools/node_modules/.bin/action-validator"
glci="$tools/node_modules/gitlab-ci-local/dist/index.js"
if [ ! -x "$av" ] || [ ! -f "$glci" ] || ! command -v node >/dev/null; then
	echo "SKIP: the CI validators are not installed in $tools (bash scripts/setup.sh)"
	exit 77
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

github_ok() { "$av" "$1" >"$tmp/out" 2>&1; }
gitlab_ok() { # gitlab-ci-local reads .gitlab-ci.yml of a git work tree
	rm -rf "$tmp/gl" && mkdir "$tmp/gl" && cp "$1" "$tmp/gl/.gitlab-ci.yml"
	(cd "$tmp/gl" && git init -q && HOME="$tmp" node --import "$src/tests/ci-node-shim.mjs" "$glci" \
		--list --json-schema-validation) >"$tmp/out" 2>&1
}

gh="$src/docs/examples/github-workflow.yml"
gl="$src/docs/examples/gitlab-ci.yml"
github_ok "$gh" || { cat "$tmp/out"; fail "$gh is not a valid GitHub workflow"; }
echo "ok: action-validator accepts $gh"
gitlab_ok "$gl" || { cat "$tmp/out"; fail "$gl is not valid GitLab CI"; }
grep -q "shard: \[3/3\]" "$tmp/out" || { cat "$tmp/out"; fail "gitlab-ci-local does not list 3 shard jobs"; }
echo "ok: gitlab-ci-local (GitLab's CI schema) accepts $gl"

# broken copies must fail: a misspelt key, a wrong type
sed 's/runs-on:/runs_on:/' "$gh" >"$tmp/bad1.yml"
sed 's/contents: read/contents: readd/' "$gh" >"$tmp/bad2.yml"
for b in bad1 bad2; do
	! github_ok "$tmp/$b.yml" || fail "action-validator accepts the broken workflow $b"
done
echo "ok: action-validator refuses a misspelt key and a value outside an enum"
sed "s/^    when: always$/    when: sometimes/" "$gl" >"$tmp/bad3.yml"
grep -q "when: sometimes" "$tmp/bad3.yml" || fail "the GitLab example lost its 'when: always'"
sed 's/^  parallel: 3$/  parallel: three/' "$gl" >"$tmp/bad4.yml"
for b in bad3 bad4; do
	! gitlab_ok "$tmp/$b.yml" || fail "gitlab-ci-local accepts the broken pipeline $b"
done
echo "ok: gitlab-ci-local refuses a bad value and a wrong type"

# docs/ci.md shows the files it describes
for f in github-workflow.yml gitlab-ci.yml; do
	grep -q "examples/$f" "$src/docs/ci.md" || fail "docs/ci.md does not name examples/$f"
done
echo "ok: docs/ci.md names both examples"

# the recipes gate a repository that is not ferry's: ferry's package built from its source, through
# install-ferry.sh, with options the script has; nothing of a ferry checkout
inst="$src/scripts/install-ferry.sh"
for f in "$gh" "$gl"; do
	grep -q 'bash deb/install-ferry.sh .*--deb deb/ferry_\*_amd64.deb' "$f" ||
		fail "$f does not install ferry with install-ferry.sh --deb from the package it built"
	# no release is published: the package is built from ferry's source, in the pipeline
	grep -q 'dpkg-buildpackage -us -uc -b' "$f" || fail "$f does not build ferry's package"
	! grep -n 'releases/download' "$f" || fail "$f downloads a release, and none is published"
	! grep -nE 'scripts/setup\.sh|build/ferry|plans/copy-methods' "$f" || fail "$f uses a ferry checkout"
	for o in $(grep -o 'install-ferry.sh [^"]*' "$f" | grep -oE -- '--[a-z-]+' | sort -u); do
		grep -qE "^[[:space:]]*$o[) |]" "$inst" || fail "$f passes $o, which install-ferry.sh does not take"
	done
done
# the options GitLab's jobs give install-ferry.sh through $FERRY_SETUP
for o in $(grep -E '^ *FERRY_SETUP: ' "$gl" | grep -oE -- '--[a-z-]+' | sort -u); do
	grep -qE "^[[:space:]]*$o[) |]" "$inst" || fail "$gl passes $o, which install-ferry.sh does not take"
done
echo "ok: both recipes install ferry with install-ferry.sh, with options it takes"
