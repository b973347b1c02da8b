#!/bin/bash
# SPDX-License-Identifier: MIT
# Other jobs that come and go on the host (docs/gate.md, exp6): periods of 20-90 s, each idle, one busy core,
# or a compile-like burst (two busy processes), chosen by a seeded sequence; until killed.
RANDOM=${1:-42}
busy() { timeout "$1" sh -c 'while :; do :; done' & }
while :; do
	p=$((20 + RANDOM % 71))
	case $((RANDOM % 3)) in
	0) echo "$(date -u +%T) idle $p s" ;;
	1) echo "$(date -u +%T) 1 busy $p s"; busy "$p" ;;
	2) echo "$(date -u +%T) 2 busy $p s"; busy "$p"; busy "$p" ;;
	esac
	sleep "$p"
done
