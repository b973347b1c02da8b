#!/usr/bin/env bash
# Quick start on a fresh Debian 12 machine (as root): set up the host, build ferry and its
# built-in guest, and take plans/quickstart.yaml through ferry.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
bash scripts/setup.sh

plan=plans/quickstart.yaml
ferry=build/ferry
"$ferry" validate "$plan"
status=0
"$ferry" run "$plan" || status=$?
echo
echo "quickstart: reports of $plan (exit status $status):"
for f in out/quickstart.junit.xml out/quickstart.md out/quickstart.json; do
	[ -e "$f" ] && echo "  $here/$f"
done
exit "$status"
