#!/bin/bash
# `ferry run` on tests/e2e/plans/methods.yaml: the channel, share, network and block methods end
# to end through the executor under TCG. Every cell must pass with every run verified (integrity
# ok), and the block cells must record their own read-back verification. Prints the median phase
# times per cell. Skips (77) with the reason when root, libvirtd or the built-in guest is missing.
set -euo pipefail
FERRY=${FERRY:?run through meson test}
SRC=${FERRY_SOURCE_DIR:?run through meson test}
skip() { echo "1..0 # SKIP $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (qemu:///system)"
"$FERRY" guest path >/dev/null 2>&1 || skip "the built-in guest is not built (ferry guest build)"
virsh -c qemu:///system version >/dev/null 2>&1 || skip "libvirtd is not reachable"

tmp=$(mktemp -d /tmp/ferry-e2e-methods-run-XXXXXX)
chmod 0755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
rc=0
"$FERRY" run --json res.json --quiet "$SRC/tests/e2e/plans/methods.yaml" >run.log 2>&1 || rc=$?
if [ "$rc" != 0 ]; then
	cat run.log
	echo "not ok: ferry run exited with $rc"
	exit 1
fi
/usr/bin/python3 - res.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
cells = r["cells"]
bad = 0
print("| cell | prepare | transfer | finalize | total | verify |")
for c in cells:
    ph = c["stats"]["phases"]
    med = lambda k: ph[k]["median"] if k in ph and ph[k] else float("nan")
    print("| %s | %.3f | %.3f | %.3f | %.3f | %.3f |" % (c["id"], med("prepare"), med("transfer"),
          med("finalize"), c["stats"]["total"]["median"], med("verify")))
    if c["status"] != "passed":
        print("not ok: %s is %s: %s" % (c["id"], c["status"], c["errors"] or c["skip_reason"]))
        bad += 1
        continue
    runs = [x for x in c["runs"] if not x["warmup"]]
    if len(runs) != 2 or not all(x["integrity_ok"] for x in runs):
        print("not ok: %s: %d measured runs, integrity %s" % (c["id"], len(runs),
              [x["integrity_ok"] for x in runs]))
        bad += 1
if len(cells) != 14:
    print("not ok: %d cells, expected 14" % len(cells))
    bad += 1
sys.exit(1 if bad else 0)
PY
echo "ok: every cell passed"
