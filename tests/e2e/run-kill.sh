#!/usr/bin/env bash
# A `ferry run` killed with SIGKILL (no handler, no atexit) leaves no running domain and no
# virtiofsd behind: its domains are started with libvirt's auto-destroy, so libvirt destroys them
# (and stops their virtiofsd) when ferry's connection goes away. What remains is the run
# directory, which `ferry doctor --reap` removes (here: the test's own directory).
source "$(dirname "$0")/run-lib.sh"

virsh_names() { virsh -c qemu:///system list --all --name; }

"$ferry" run "$src/tests/e2e/plans/run-kill.yaml" --quiet 2>"$work/log" &
pid=$!
# virtiofsd processes serving this test's run directory (libvirt passes them the shared dir)
virtiofsds() { pgrep -af virtiofsd | grep -F -- "$FERRY_RUN_DIR/" || true; }
# The guest's agent answers only once the guest booted, long after libvirt registered the
# domain's auto-destroy (that happens while the domain starts). A kill during the start itself
# would race libvirt: a connection closed before the registration leaves the domain to
# `ferry doctor --reap`, which is not what this test is about.
agent_up() {
	virsh -c qemu:///system qemu-agent-command "$1" '{"execute":"guest-ping"}' >/dev/null 2>&1
}
# wait until the domain runs with its virtiofsd and its agent answers, then kill ferry outright
for _ in $(seq 1 900); do
	d="$(virsh_names | grep -- "-$pid-" || true)"
	if [ -n "$d" ] && [ -n "$(virtiofsds)" ] &&
		[ "$(virsh -c qemu:///system domstate "$d" 2>/dev/null)" = running ] && agent_up "$d"; then
		break
	fi
	kill -0 "$pid" 2>/dev/null || { cat "$work/log" >&2; fail "ferry ended before it could be killed"; }
	sleep 0.2
done
dom="$(virsh_names | grep -- "-$pid-")" || fail "no domain of ferry pid $pid appeared"
[ -n "$(virtiofsds)" ] || fail "no virtiofsd for the run's share appeared"
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true

# libvirt notices the closed connection and destroys the domain: give it a few seconds
for _ in $(seq 1 50); do
	virsh_names | grep -q -- "-$pid-" || break
	sleep 0.2
done
if virsh_names | grep -q -- "-$pid-"; then
	left="$(virsh_names | grep -- "-$pid-")"
	for d in $left; do virsh -c qemu:///system destroy "$d" >/dev/null 2>&1 || true; done
	fail "domains of the killed ferry (pid $pid) are still there: $left"
fi
for _ in $(seq 1 50); do
	[ -n "$(virtiofsds)" ] || break
	sleep 0.2
done
[ -z "$(virtiofsds)" ] || fail "virtiofsd of the killed ferry is left: $(virtiofsds)"
rm -rf "${FERRY_RUN_DIR:?}"/* # the run directory a SIGKILL cannot remove
echo "ok: SIGKILL of ferry left no domain ($dom) and no virtiofsd behind"
