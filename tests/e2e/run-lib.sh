# Shared by the `ferry run` e2e scripts (sourced). Each script gets a private run directory and
# results directory, and helpers to check that a run left nothing behind.
set -euo pipefail

src="${FERRY_SOURCE_DIR:?}"
ferry="${FERRY:?}"
py=/usr/bin/python3

if ! virsh -c qemu:///system version >/dev/null 2>&1; then
	echo "SKIP: libvirtd is not reachable"
	exit 77
fi
if ! "$ferry" guest info >/dev/null 2>&1; then
	echo "SKIP: the built-in guest is not built (ferry guest build)"
	exit 77
fi

work="$(mktemp -d /tmp/ferry-e2e-run.XXXXXX)"
chmod 0755 "$work"
mkdir -m 0755 "$work/runs"
export FERRY_RUN_DIR="$work/runs"
trap 'rm -rf "$work"' EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# run_ferry EXPECTED_STATUS ARGS...: runs ferry, keeps its stderr in $work/log, checks the exit
# status, and that the run left no domain, no virtiofsd and no run directory behind.
run_ferry() {
	local want="$1"
	shift
	local st=0
	"$ferry" run "$@" 2>"$work/log" &
	local pid=$!
	wait "$pid" || st=$?
	cat "$work/log" >&2
	[ "$st" = "$want" ] || fail "ferry run $* exited with $st, expected $want"
	check_clean "$pid"
}

check_clean() {
	local pid="$1"
	if virsh -c qemu:///system list --all --name | grep -q -- "-$pid-"; then
		fail "domains of ferry pid $pid are left: $(virsh -c qemu:///system list --all --name | grep -- "-$pid-")"
	fi
	# a virtiofsd that libvirt started for a domain of this run: it serves a directory inside the
	# run directory (libvirt's pid file names are cut to 20 characters, so they cannot be matched
	# to the run); libvirt stops it with the domain
	local fsd
	fsd="$(pgrep -af virtiofsd | grep -F -- "$FERRY_RUN_DIR/" || true)"
	[ -z "$fsd" ] || fail "virtiofsd of ferry pid $pid is left: $fsd"
	if [ -n "$(ls -A "$FERRY_RUN_DIR")" ]; then
		fail "run directories left behind: $(ls -A "$FERRY_RUN_DIR")"
	fi
}

# free_port: a TCP port of 127.0.0.1 that nothing listens on now (the kernel's choice, so that
# tests running side by side do not pick the same one)
# interrupt PID: SIGINT to the background `ferry run` PID (its stderr in $work/log), which must
# exit 130 and leave nothing behind (check_clean)
interrupt() {
	kill -INT "$1"
	local st=0
	wait "$1" || st=$?
	cat "$work/log" >&2
	[ "$st" = 130 ] || fail "ferry run interrupted with SIGINT exited with $st, expected 130"
	check_clean "$1"
}

# host_net: the host's own addresses and routes, compared before and after a run that must not
# touch them
host_net() { ip -o addr show | sed 's/ valid_lft.*//'; ip route show; ip -6 route show; }

free_port() {
	"$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# validate RESULTS: the results file is valid against the published schema.
validate() {
	"$py" - "$src/schema/ferry-results.schema.json" "$1" <<'PY'
import json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft7Validator(schema).validate(json.load(open(sys.argv[2])))
PY
}

# query RESULTS PYTHON-EXPR: evaluates the expression with r = the results document.
query() {
	"$py" - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
cells = {c["id"]: c for c in r["cells"]}
print(eval(sys.argv[2]))
PY
}
