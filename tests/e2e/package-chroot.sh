#!/usr/bin/env bash
# The Debian package, end to end: `dpkg-buildpackage -us -uc -b` builds ferry_*.deb from this
# tree, lintian (-EI --pedantic) finds no error or warning in it, scripts/install-ferry.sh --deb (apt-get install
# ./ferry_*.deb) installs it, from an http URL on the loopback and from a relative path, into a fresh
# Debian 12 minbase chroot (debootstrap; the chroot's only network is the Debian mirror of the
# host's apt sources), and there, from the installed files only, `ferry validate` accepts the
# installed quickstart plan, `ferry guest build` builds the built-in guest from the installed
# init files, and `ferry run --shard 1/8` runs one cell of it.
#
# The run uses the host's libvirtd through its socket, bound into the chroot. libvirtd and QEMU
# open the files ferry names (kernel, initramfs, images, console logs) in the host's mount
# namespace, so ferry's cache and run directories inside the chroot are a host directory bound
# at the same absolute path (FERRY_CACHE_DIR, FERRY_RUN_DIR). The guest's .debs are seeded
# from the host's guest cache when there is one; ferry checks them against the chroot's apt
# index, so they only save the download.
#
# The chroot with the runtime dependencies installed is cached as a tarball under
# /var/cache/ferry/pkgtest, keyed by the package's Depends, the suite and the apt sources; a
# run extracts a temporary copy and removes it at exit, after unmounting every bind, even on
# failure.
set -euo pipefail

src="${FERRY_SOURCE_DIR:?}"
cache="${FERRY_PKGTEST_CACHE:-/var/cache/ferry/pkgtest}"
suite=bookworm
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { printf '[%4ds] %s\n' "$((SECONDS - t0))" "$*"; }
t0=$SECONDS

[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, chroot, bind mounts)"
for t in dpkg-buildpackage dh lintian debootstrap git; do
	command -v "$t" >/dev/null || skip "$t is not installed (bash scripts/setup.sh)"
done
virsh -c qemu:///system version >/dev/null 2>&1 || skip "libvirtd does not answer"
[ -S /run/libvirt/libvirt-sock ] || skip "no libvirt socket at /run/libvirt/libvirt-sock"
sources=/etc/apt/sources.list.d/debian.sources
[ -f "$sources" ] || skip "no $sources (the Debian mirror of the host's apt sources)"
mirror="$(sed -n 's/^URIs: *//p' "$sources" | head -1)"
[ -n "$mirror" ] || skip "no URIs in $sources"

mkdir -p /var/tmp /var/lib/ferry "$cache"
work="$(mktemp -d /var/tmp/ferry-pkgtest.XXXXXX)"
# the same absolute path on the host and in the chroot; QEMU (libvirt-qemu) must traverse it
shared="$(mktemp -d /var/lib/ferry/pkgtest.XXXXXX)"
chmod 0755 "$work" "$shared"
root="$work/root"
mounts=()
srv_pid=
cleanup() {
	local st=$? i
	[ -z "$srv_pid" ] || { kill "$srv_pid" 2>/dev/null; wait "$srv_pid" 2>/dev/null; }
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
		umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" || st=1
	done
	# never remove a tree something is still mounted in
	if grep -qE " ($work|$shared)[/ ]" /proc/self/mounts; then
		echo "FAIL: still mounted under $work or $shared; left in place" >&2
		exit 1
	fi
	rm -rf --one-file-system "$work" "$shared"
	exit "$st"
}
trap cleanup EXIT
# meson's timeout and Ctrl-C: exit through cleanup, which unmounts proc and dev
trap 'exit 143' TERM
trap 'exit 130' INT
bind() { # SOURCE TARGET: bind a directory or a file (a socket) over one made for it
	if [ -d "$1" ]; then mkdir -p "$2"; else mkdir -p "$(dirname "$2")" && : >"$2"; fi
	mount --bind "$1" "$2"
	mounts+=("$2")
}
mount_proc() { mkdir -p "$1/proc" && mount -t proc proc "$1/proc" && mounts+=("$1/proc"); }
unmount_last() { umount "${mounts[-1]}" && unset 'mounts[-1]'; }
in_root() { # a clean environment: nothing of the host's (or the test's) but what is given
	chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 \
		DEBIAN_FRONTEND=noninteractive "$@"
}

# ---- 1. the package -------------------------------------------------------------------------
mkdir -p "$work/src/ferry"
(cd "$src" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) |
	tar -xf - -C "$work/src/ferry"
(cd "$work/src/ferry" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" \
	dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1 ||
	{ tail -40 "$work/build.log"; fail "dpkg-buildpackage failed"; }
debs=("$work"/src/ferry_*_amd64.deb)
[ -f "${debs[0]}" ] || fail "dpkg-buildpackage made no ferry_*_amd64.deb"
deb="${debs[0]}"
step "dpkg-buildpackage -us -uc -b: ${deb##*/}"

# errors and warnings fail (debian/control's Maintainer is no placeholder lintian would flag:
# bogus-mail-host is an error); info and pedantic tags are listed
lintian -EI --pedantic --fail-on error,warning "$work"/src/ferry_*_amd64.changes \
	>"$work/lintian.log" 2>&1 || { cat "$work/lintian.log"; fail "lintian reports errors or warnings"; }
step "lintian -EI --pedantic: $(grep -c '^E: ' "$work/lintian.log" || true) errors, $(grep -c '^W: ' "$work/lintian.log" || true) warnings, $(grep -cE '^[IPX]: ' "$work/lintian.log" || true) other tags"
sed -n 's/^/  /; /^  [IPX]: /p' "$work/lintian.log"

# ---- 2. a fresh chroot with the package's dependencies (cached) --------------------------------
depends="$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/(.*)//; s/[[:space:]]//g' |
	sed '/^$/d' | sort -u | tr '\n' ' ')"
case "$depends" in *'|'*) fail "Depends has alternatives, which this test does not install: $depends" ;; esac
# what a user's job has before install-ferry.sh: curl to fetch a package by URL (docs/ci.md)
extra="curl ca-certificates"
key="$(printf '%s\n' "pkgtest 2" "$suite" "$mirror" "$depends" "$extra" | cat - "$sources" |
	sha256sum | cut -c1-16)"
tarball="$cache/chroot-$key.tar"
exec 9>"$cache/.lock"
flock 9
if [ ! -f "$tarball" ]; then
	step "building the chroot (debootstrap $suite minbase + $depends)"
	base="$work/base"
	debootstrap --variant=minbase "$suite" "$base" "$mirror" >"$work/debootstrap.log" 2>&1 ||
		{ tail -20 "$work/debootstrap.log"; fail "debootstrap failed"; }
	rm -f "$base/etc/apt/sources.list"
	cp "$sources" "$base/etc/apt/sources.list.d/debian.sources"
	cp /etc/resolv.conf "$base/etc/resolv.conf"
	# no service starts inside the chroot (libvirt-daemon-system's postinst)
	printf '#!/bin/sh\nexit 101\n' >"$base/usr/sbin/policy-rc.d"
	chmod 0755 "$base/usr/sbin/policy-rc.d"
	mount_proc "$base"
	bind /dev "$base/dev"
	root="$base" in_root apt-get update -qq >"$work/apt.log" 2>&1 &&
		root="$base" in_root apt-get install -y -qq --no-install-recommends $depends $extra \
			>>"$work/apt.log" 2>&1 ||
		{ tail -20 "$work/apt.log"; fail "installing the dependencies in the chroot failed"; }
	root="$base" in_root apt-get clean
	unmount_last
	unmount_last
	tar -C "$base" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
	rm -rf --one-file-system "$base"
	step "cached the chroot as $tarball"
fi
flock -u 9
mkdir "$root"
tar -C "$root" -xf "$tarball"
cp /etc/resolv.conf "$root/etc/resolv.conf"
step "fresh chroot from $tarball"

# ---- 3. install the .deb, as a user would ------------------------------------------------------
mount_proc "$root"
bind /dev "$root/dev"
cp "$src/scripts/install-ferry.sh" "$root/tmp/"
mkdir "$root/tmp/deb" "$work/srv"
cp "$deb" "$root/tmp/deb/"
cp "$deb" "$work/srv/"
installed() { in_root dpkg-query -W -f='${Status}\n' ferry 2>/dev/null | grep -q 'install ok installed'; }
# the user-side setup (docs/ci.md): apt-get install ./ferry_*.deb; the host's libvirtd serves
# the chroot, so no daemon starts here, and the guest is built below with the shared cache.
# First from a URL: an HTTP server on the loopback (the chroot shares the host's network).
python3 - "$work/srv" "$work/port" >"$work/http.log" 2>&1 <<'EOF' &
import functools, http.server, os, sys
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
server.serve_forever()
EOF
srv_pid=$!
for _ in $(seq 1 100); do [ -f "$work/port" ] || sleep 0.1; done
[ -f "$work/port" ] || { cat "$work/http.log"; fail "the loopback HTTP server did not start"; }
url="http://127.0.0.1:$(cat "$work/port")/${deb##*/}"
in_root bash /tmp/install-ferry.sh --no-services --no-guest --deb "$url" >"$work/apt.log" 2>&1 ||
	{ tail -20 "$work/apt.log"; fail "install-ferry.sh --deb $url failed in the chroot"; }
installed || fail "ferry is not installed in the chroot after install-ferry.sh --deb URL"
grep -q "GET /${deb##*/} HTTP/1.1\" 200" "$work/http.log" ||
	{ cat "$work/http.log"; fail "install-ferry.sh did not download $url"; }
# (wait reports the server's SIGTERM as status 143, which set -e took for a failure)
kill "$srv_pid" 2>/dev/null || true
wait "$srv_pid" 2>/dev/null || true
srv_pid=
step "install-ferry.sh --deb $url: installed"
# Then from a relative path, as the CI recipes' jobs do with their artifact (deb/ferry_*.deb);
# and a path that names no file is refused with the reason, installing nothing.
in_root dpkg -r ferry >"$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "dpkg -r ferry failed"; }
! installed || fail "ferry is still installed after dpkg -r"
st=0
in_root sh -c 'cd /tmp && bash install-ferry.sh --no-services --no-guest --deb deb/ferry_0.0_amd64.deb' \
	>"$work/apt.log" 2>&1 || st=$?
[ "$st" -ne 0 ] && grep -q 'no such package file: deb/ferry_0.0_amd64.deb' "$work/apt.log" ||
	{ cat "$work/apt.log"; fail "install-ferry.sh --deb MISSING exited $st without the reason"; }
! installed || fail "a missing package file installed ferry"
in_root sh -c "cd /tmp && bash install-ferry.sh --no-services --no-guest --deb deb/${deb##*/}" \
	>"$work/apt.log" 2>&1 ||
	{ tail -20 "$work/apt.log"; fail "install-ferry.sh --deb deb/${deb##*/} failed in the chroot"; }
installed || fail "ferry is not installed in the chroot after install-ferry.sh --deb PATH"
step "install-ferry.sh --deb deb/${deb##*/} (a relative path): installed; a missing file refused"
[ ! -e "$root/$src" ] || fail "the source tree is visible in the chroot"
plan=/usr/share/ferry/plans/quickstart.yaml
in_root ferry validate "$plan" >"$work/validate.log" 2>&1 ||
	{ cat "$work/validate.log"; fail "ferry validate $plan failed in the chroot"; }
step "installed: $(in_root ferry --version); $(cat "$work/validate.log")"

# ---- 4. the built-in guest and one cell, on the host's libvirtd --------------------------------
bind /run/libvirt/libvirt-sock "$root/run/libvirt/libvirt-sock"
bind "$shared" "$root$shared"
mkdir -p "$shared/cache/guest/debs" "$shared/runs" "$shared/work"
if [ -d /var/cache/ferry/guest/debs ]; then
	cp /var/cache/ferry/guest/debs/*.deb "$shared/cache/guest/debs/" 2>/dev/null || true
fi
env=(FERRY_CACHE_DIR="$shared/cache" FERRY_RUN_DIR="$shared/runs")
in_root env "${env[@]}" ferry guest build >"$work/guest.log" 2>&1 ||
	{ tail -20 "$work/guest.log"; fail "ferry guest build failed in the chroot"; }
step "ferry guest build: $(in_root env "${env[@]}" ferry guest path | head -1)"
st=0
in_root env "${env[@]}" sh -c "cd '$shared/work' && exec ferry run --shard 1/8 '$plan'" \
	>"$work/run.log" 2>&1 || st=$?
[ "$st" -eq 0 ] || { tail -30 "$work/run.log"; fail "ferry run --shard 1/8 exited $st in the chroot"; }
python3 - "$shared/work/out/quickstart.json" <<'EOF' || fail "the one-cell run's results are wrong"
import json, sys
r = json.load(open(sys.argv[1]))
cells = r["cells"]
assert len(cells) == 1, f"{len(cells)} cells, expected 1"
c = cells[0]
runs = [x for x in c.get("runs", []) if not x.get("warmup")]
assert c.get("status") == "passed", c.get("status")
# the quickstart runs in blocks: one measured run per block, at least 3 blocks, each its own boot
blocks = r["design"]["blocks"]
assert blocks >= 3 and len(runs) == blocks, f"{len(runs)} measured runs in {blocks} blocks"
assert sorted(x["block"] for x in runs) == list(range(1, blocks + 1)), [x["block"] for x in runs]
assert len({x["boot"] for x in runs}) == blocks, "two blocks shared a boot"
assert all(x.get("integrity_ok") for x in runs), "a run's integrity check failed"
print(f"ok: {c['id']}: {c['status']}, {len(runs)} runs")
EOF
[ -z "$(ls -A "$shared/runs")" ] || fail "the run left files in its run directory: $(ls "$shared/runs")"
step "ferry run --shard 1/8 $plan in the chroot: passed"
