#!/usr/bin/env bash
# Prepare a Debian 12 host for building, testing and running ferry, then build it.
# Idempotent: safe to run again; does only what is missing. Needs root.
# See ../shared/GUEST.md "Host preparation" for why each step exists.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
builddir="${FERRY_BUILDDIR:-$here/build}"

log() { printf 'setup: %s\n' "$*" >&2; }

packages=(
	# build
	build-essential pkg-config meson ninja-build clang libclang-rt-14-dev
	libyaml-dev libvirt-dev libxml2-dev libarchive-dev libjansson-dev libssl-dev libxxhash-dev
	libglib2.0-dev zlib1g-dev
	# run guests (libvirtd without systemd, QEMU under TCG, disk images)
	libvirt-daemon-system libvirt-clients qemu-system-x86 qemu-utils e2fsprogs
	dnsmasq-base busybox-static
	# libvirtd's child reaper where PID 1 is not an init (below)
	tini
	# disk-image vfat images without root (mkfs.vfat -C, mcopy)
	dosfstools mtools
	# the Debian guest (ferry guest build debian; tests/e2e/run-debian.sh builds it)
	debootstrap
	# share driver smb: smbd in the run's private network (testparm checks its configuration);
	# with served_by guest the host copies onto the guest's smbd with smbclient
	samba samba-common-bin smbclient
	# the ssh method's clients (ssh, scp, ssh-keygen; rsync); the fake guest's ssh server in the
	# unit tests is the host's dropbear
	openssh-client rsync dropbear-bin
	# tests: report consumers and tools
	libxml2-utils valgrind cmark-gfm python3 python3-junitparser python3-jsonschema
	clang-format iproute2 locales
	# tests: the remote host tests reach libvirtd through TCP forwarders on 127.0.0.1
	socat
	# the package test (tests/e2e/package-chroot.sh): dpkg-buildpackage, lintian, debootstrap
	debhelper lintian
	# tests: the HTML reports are loaded by a real browser (headless, offline) and validated
	chromium python3-html5lib
	# docs tests: groff renders ferry.1 (tests/docs-sync.sh checks it renders without warnings)
	groff-base
	python3-yaml
	# completion tests: zsh and fish read the scripts 'ferry completion' prints (tests/completion.sh)
	zsh fish
	# the terminal test: tmux shows ferry run's status line at 60 and 200 columns (run-tmux)
	tmux
)

if [ "$(id -u)" -ne 0 ]; then
	log "must run as root (installs packages and starts libvirtd)"
	exit 1
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	log "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# --force-confnew: a pre-existing /etc/libvirt/qemu.conf would otherwise stop dpkg at a prompt
	apt-get install -y -qq -o Dpkg::Options::=--force-confnew --no-install-recommends \
		"${missing[@]}" >/dev/null
fi

# The CI examples' validators (tests/ci-examples.sh), from npm, pinned, into a directory setup
# owns: @action-validator/cli (GitHub workflow schema) and gitlab-ci-local (GitLab's own CI JSON
# schema, --json-schema-validation).
tools="${FERRY_TOOLS_DIR:-/var/cache/ferry/ci-tools}"
ci_tools=(@action-validator/cli@0.6.0 @action-validator/core@0.6.0 gitlab-ci-local@4.75.1)
if ! command -v npm >/dev/null; then
	log "installing nodejs and npm"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
if [ ! -x "$tools/node_modules/.bin/action-validator" ] ||
	[ ! -x "$tools/node_modules/.bin/gitlab-ci-local" ]; then
	log "installing ${ci_tools[*]} into $tools"
	mkdir -p "$tools"
	npm install --prefix "$tools" --no-audit --no-fund --silent "${ci_tools[@]}" >/dev/null
fi

# /dev/kvm's group, then virtlogd and libvirtd without systemd: the same steps as a user's setup
bash "$here/scripts/install-ferry.sh" --services

if [ ! -f "$builddir/build.ninja" ]; then
	meson setup "$builddir" "$here" ${FERRY_MESON_ARGS:-} >/dev/null
fi
# quiet when it builds; a failed build shows what the compiler said
if ! out="$(ninja -C "$builddir" 2>&1)"; then
	printf '%s\n' "$out" >&2
	log "the build failed"
	exit 1
fi
log "built $builddir/ferry"

# The built-in guest is made from Debian packages that `ferry guest build` downloads with
# apt-get: apt needs package lists, which a fresh container may not have.
if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; then
	log "apt has no package lists: apt-get update"
	apt-get update -qq
fi
# cached: a second run only checks the package versions (a few seconds)
"$builddir/ferry" guest build >/dev/null
log "built-in guest: $("$builddir/ferry" guest path | head -1)"
