#!/usr/bin/env bash
# The ssh method end to end under TCG (tests/e2e/plans/run-ssh.yaml): scp, rsync and tar over ssh
# into the built-in guest's dropbear through user networking's forwarded port, and scp and tar
# with a named cipher, and scp, rsync and tar into a guest on ferry's private network, where the
# host's client runs inside the run's network namespace; every cell passes with its run verified in the guest (the landing
# directory hashed against the dataset's manifest), and every tool moved the dataset's bytes.
# Nothing is left behind: no domain, no run directory (the keys the run made live in it), no ssh
# client of the run on the host, no namespace of the run. In the guest, each cell's cleanup kills
# its server and removes its keys: the next cell, on the same boot, starts its own server on the
# same port with new keys, which fails while the previous one still listens, and its client
# trusts only the new host key.
source "$(dirname "$0")/run-lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (qemu:///system)"; exit 77; }
for p in ssh scp ssh-keygen rsync; do
	command -v "$p" >/dev/null || { echo "SKIP: the host has no $p (scripts/setup.sh installs it)"; exit 77; }
done

# the built-in guest of this binary's key (dropbear, scp and rsync in it): `current` in a shared
# cache may name a guest an older ferry built (a cache hit when this key's guest is there)
"$ferry" guest build >/dev/null 2>&1 || fail "ferry guest build failed"

res="$work/results.json"
"$ferry" run "$src/tests/e2e/plans/run-ssh.yaml" --results "$res" --verbose 2>"$work/log" &
pid=$!
st=0
wait "$pid" || st=$?
cat "$work/log" >&2
[ "$st" = 0 ] || fail "ferry run exited with $st"
check_clean "$pid"
validate "$res"

bad="$(query "$res" '[(i, c["status"], c.get("skip_reason"), c.get("errors")) for i, c in cells.items() if c["status"] != "passed" or not (
	len([x for x in c["runs"] if not x["warmup"] and x["integrity_ok"]]) == 1)]')"
[ "$bad" = "[]" ] || fail "cells not passed with a verified run: $bad"
[ "$(query "$res" 'len(r["cells"])')" = 9 ] || fail "expected 9 cells"
[ "$(query "$res" 'len([c for c in r["cells"] if "tiny-priv" in c["id"]])')" = 4 ] ||
	fail "expected 4 cells on the private network"
grep -q "2 boots" "$work/log" || fail "expected the cells of each vm to share one boot"
# every tool moved the tree's bytes and files (24 files of 1-256 KiB), and scp the 100 flat ones
bytes="$(query "$res" 'sorted({c["runs"][0]["bytes"] for c in r["cells"] if "dataset=tree" in c["id"]})')"
[ "$(query "$res" 'len({c["runs"][0]["bytes"] for c in r["cells"] if "dataset=tree" in c["id"]})')" = 1 ] || fail "tools moved different bytes: $bytes"
[ "$(query "$res" 'min(c["runs"][0]["bytes"] for c in r["cells"]) > 24 * 1024')" = True ] || fail "too few bytes: $bytes"
[ "$(query "$res" '{c["runs"][0]["files"] for c in r["cells"] if "dataset=tree" in c["id"]} == {24}')" = True ] || fail "not 24 files each"
[ "$(query "$res" '[c["runs"][0]["files"] for c in r["cells"] if "dataset=flat" in c["id"]]')" = "[100]" ] ||
	fail "scp of 100 top-level files on the private network did not move them"
# nothing of the run's ssh is left on the host: no client, no key, no namespace (every client
# ferry starts names its key under the run directory; other e2e tests may run ssh beside this one)
left="$(pgrep -af -- "$FERRY_RUN_DIR/" || true)"
[ -z "$left" ] || fail "ssh processes of the run are left: $left"
[ -z "$(find "$FERRY_RUN_DIR" -mindepth 1 2>/dev/null | head -1)" ] || fail "files of the run are left"
if ip netns list 2>/dev/null | grep -qE -- "-$pid(\.[0-9]+)?-net( |$)"; then
	fail "a namespace of the run is left"
fi
"$py" - "$res" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("| cell | transfer s | total s |")
for c in r["cells"]:
    x = [x for x in c["runs"] if not x["warmup"]][0]
    print("| %s | %.3f | %.3f |" % (c["id"].split("method=")[1], x["phases"]["transfer"], x["total"]))
PY
echo "ok: scp, rsync and tar over ssh, scp with aes128-ctr and tar with chacha20-poly1305 into dropbear, the three tools on the private network and scp of 100 top-level files there, every run verified; nothing left behind"
