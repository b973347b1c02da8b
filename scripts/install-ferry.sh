#!/usr/bin/env bash
# Install ferry and only what running it needs on a Debian 12 machine (a CI runner, a container,
# a workstation), start libvirt's daemons when nothing else does (no systemd in a container),
# and build the built-in guest. For users gating their own repository with ferry (docs/ci.md);
# ferry's own development setup is scripts/setup.sh. Needs root. Idempotent.
#
#   install-ferry.sh --deb ferry_0.1.0_amd64.deb      the package (a path or an https URL)
#   install-ferry.sh --source ferry-0.1.0.tar.xz      build a release tarball (or a source
#                                                      directory) and `meson install` it
#   install-ferry.sh --services                       only start virtlogd and libvirtd
# Options: --prefix DIR (with --source; default /usr/local), --no-guest (skip `ferry guest build`),
# --no-services (do not start libvirtd: a job that only merges, reports or compares results).
set -euo pipefail

log() { printf 'install-ferry: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# What `ferry run` needs on the host; debian/control's Depends lists the same packages
# (tests/package-files.sh checks that they agree).
runtime_packages=(
	libvirt-daemon-system libvirt-clients qemu-system-x86 qemu-utils e2fsprogs
	busybox-static tini dosfstools mtools dnsmasq-base iproute2 libxxhash0
)
# What building a release tarball needs besides the runtime
build_packages=(
	build-essential pkg-config meson ninja-build
	libyaml-dev libvirt-dev libxml2-dev libarchive-dev libjansson-dev libssl-dev libxxhash-dev zlib1g-dev
)

usage() {
	sed -n '7,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

mode= arg= prefix=/usr/local guest=1 services=1
while [ $# -gt 0 ]; do
	case "$1" in
	--deb | --source)
		[ $# -ge 2 ] || usage
		mode="${1#--}" arg="$2"
		shift 2
		;;
	--services) mode=services; shift ;;
	--prefix)
		[ $# -ge 2 ] || usage
		prefix="$2"
		shift 2
		;;
	--no-guest) guest=0; shift ;;
	--no-services) services=0; shift ;;
	-h | --help) usage ;;
	*) log "unknown argument '$1'"; usage ;;
	esac
done
[ -n "$mode" ] || usage
[ "$(id -u)" -eq 0 ] || die "must run as root (installs packages and starts libvirtd)"

export DEBIAN_FRONTEND=noninteractive
# one temporary directory (a download, a build), removed at exit: global, since the trap runs
# after the function that made it has returned
tmp=
trap '[ -z "$tmp" ] || rm -rf "$tmp"' EXIT
apt_updated=0
apt_install() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ "${#missing[@]}" -gt 0 ] || return 0
	if [ "$apt_updated" -eq 0 ]; then
		apt-get update -qq
		apt_updated=1
	fi
	log "installing ${missing[*]}"
	# --force-confnew: a pre-existing /etc/libvirt/qemu.conf would otherwise stop dpkg at a prompt
	apt-get install -y -qq -o Dpkg::Options::=--force-confnew --no-install-recommends \
		"${missing[@]}" >/dev/null
}

install_deb() {
	local deb="$1"
	case "$deb" in
	https://* | http://*)
		apt_install ca-certificates curl
		tmp="$(mktemp -d)"
		curl -fsSL -o "$tmp/ferry.deb" "$deb"
		deb="$tmp/ferry.deb"
		;;
	esac
	[ -f "$deb" ] || die "no such package file: $deb"
	[ "$apt_updated" -eq 1 ] || { apt-get update -qq; apt_updated=1; }
	log "installing $deb and its dependencies"
	# apt resolves the package's Depends from the mirror; a path needs a slash to be a file
	case "$deb" in /*) ;; *) deb="./$deb" ;; esac
	apt-get install -y -qq -o Dpkg::Options::=--force-confnew --no-install-recommends "$deb" \
		>/dev/null
}

install_source() {
	local src="$1"
	apt_install "${runtime_packages[@]}" "${build_packages[@]}"
	tmp="$(mktemp -d)"
	if [ -f "$src" ]; then
		mkdir "$tmp/src"
		tar -xf "$src" -C "$tmp/src" --strip-components=1
		src="$tmp/src"
	fi
	[ -f "$src/meson.build" ] || die "$1: not a ferry source tree or release tarball"
	log "building $src into $prefix"
	meson setup "$tmp/build" "$src" --prefix "$prefix" --buildtype release -Dtests=false \
		>/dev/null
	ninja -C "$tmp/build" >/dev/null
	meson install -C "$tmp/build" --quiet
}

# No systemd (containers, CI runners' job containers): start virtlogd and libvirtd ourselves.
start_services() {
	# /dev/kvm root:root 0600 makes libvirt re-probe QEMU on every domain start (~52 s each)
	if [ -e /dev/kvm ]; then
		getent group kvm >/dev/null || groupadd -r kvm
		chgrp kvm /dev/kvm && chmod 0660 /dev/kvm || log "warning: cannot fix /dev/kvm permissions"
	fi
	mkdir -p /var/log/libvirt /var/run/libvirt /var/lib/libvirt/images
	if ! pgrep -x virtlogd >/dev/null; then
		log "starting virtlogd"
		virtlogd -d
	fi
	if ! pgrep -x libvirtd >/dev/null; then
		log "starting libvirtd"
		# libvirtd daemonizes each QEMU, which then belongs to PID 1 once libvirtd lets go of
		# it; a container's PID 1 may not reap it (1.5-1.9 s per destroyed domain on CI
		# machines). tini -s is a child subreaper: it runs libvirtd in the foreground and
		# reaps the orphaned QEMUs. It returns before libvirtd is ready, and a killed libvirtd
		# leaves its socket behind: so wait until libvirtd answers, not for the socket.
		setsid -f tini -s -- libvirtd </dev/null >>/var/log/libvirt/libvirtd-stderr.log 2>&1
	fi
	for _ in $(seq 1 300); do
		virsh -c qemu:///system version >/dev/null 2>&1 && return 0
		pgrep -x libvirtd >/dev/null || break
		sleep 0.1
	done
	log "libvirtd does not answer on qemu:///system (its log: /var/log/libvirt/libvirtd-stderr.log)"
	tail -n 5 /var/log/libvirt/libvirtd-stderr.log >&2 2>/dev/null || true
	exit 1
}

case "$mode" in
deb) install_deb "$arg" ;;
source) install_source "$arg" ;;
services) ;;
esac
if [ "$mode" = services ]; then
	command -v libvirtd >/dev/null || die "libvirtd is not installed (install ferry first)"
fi
[ "$services" -eq 0 ] || start_services
[ "$mode" != services ] || exit 0

ferry="$(command -v ferry)" || die "ferry is not on PATH after installing it"
if [ "$guest" -eq 1 ]; then
	# The built-in guest is made from Debian packages that `ferry guest build` downloads with
	# apt-get: apt needs package lists, which a fresh container may not have. Cached: a second
	# run only checks the package versions.
	if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; then
		apt-get update -qq
	fi
	"$ferry" guest build >/dev/null
	log "built-in guest: $("$ferry" guest path | head -1)"
fi
log "$("$ferry" --version)"
