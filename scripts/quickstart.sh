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
if "$ferry" help | grep -q '^  run '; then
	"$ferry" run "$plan"
else
	# the runner is not there yet: show what it would run
	echo "quickstart: 'ferry run' is not implemented yet; the cells of $plan are:"
	"$ferry" expand "$plan"
fi
