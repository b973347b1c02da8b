/* SPDX-License-Identifier: MIT */
/*
 * The Debian guest: a minimal Debian 12 (bookworm) with systemd, udev, GNU coreutils, tar,
 * qemu-guest-agent and Debian's generic kernel, made by `debootstrap --variant=minbase` from the
 * Debian archive the host's own apt sources name, on an ext4 root image that `mke2fs -d` fills
 * without mounting anything. A VM boots it with its own kernel and initrd (direct kernel boot)
 * from a qcow2 overlay in the run directory: the cached root image is only ever read.
 *
 * Layout of the cache (directories 0755, files 0644: QEMU runs as libvirt-qemu):
 *   CACHE/guest-debian/debs/             packages debootstrap downloaded (--cache-dir)
 *   CACHE/guest-debian/<key>/root.qcow2  the root filesystem (ext4, label GUEST_DEBIAN_LABEL)
 *   CACHE/guest-debian/<key>/vmlinuz     the kernel of the image (/boot/vmlinuz-KVER)
 *   CACHE/guest-debian/<key>/initrd.img  its initramfs-tools initrd (virtio, ext4; MODULES=list)
 *   CACHE/guest-debian/<key>/manifest.json  mirror, suite, kernel version, packages, sizes
 *   CACHE/guest-debian/current           symlink to the newest complete <key>
 * <key> is the SHA-256 (first 32 hex digits) of the inputs: suite, mirror, the package list,
 * the candidate versions the host's apt lists give for them, the files written into the root
 * and the kernel command line, and GUEST_DEBIAN_FORMAT_VERSION.
 *
 * Building needs root (debootstrap, chroot) and the network path to the mirror; booting needs
 * neither. What the booted guest offers (the contract with the methods): systemd as pid 1, udev
 * (so /dev/virtio-ports/NAME links exist for every virtio-serial port, also hot-plugged ones),
 * qemu-guest-agent started by udev when its port appears, eth0 (net.ifnames=0) configured by
 * systemd-networkd as 10.0.2.15/24 via 10.0.2.2 (QEMU user networking), kmod loading modules on
 * demand, /bin/sh is dash (no pipefail), bash, GNU coreutils, tar, gzip, xz, zstd, lz4, cpio,
 * unzip, wget, netcat-openbsd, iproute2 (ss), e2fsprogs, rsync, fio, and OpenSSH's sshd (its
 * units masked and no host key in the image: the ssh method starts its own with per-run keys).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "guest.h"

/* Bump when what goes into the image changes without its inputs changing: part of the key. */
#define GUEST_DEBIAN_FORMAT_VERSION 2
/* The Debian release the guest is made of. */
#define GUEST_DEBIAN_SUITE "bookworm"
/* The label of the root filesystem; the kernel command line mounts root=LABEL=this. */
#define GUEST_DEBIAN_LABEL "ferry-root"

/* A disk image guest booted with its own kernel. Strings owned; free with guest_image_clear(). */
struct guest_image {
	char *dir;            /* the keyed build directory */
	char *root;           /* the root image (qcow2), booted through an overlay */
	char *kernel;         /* vmlinuz */
	char *initrd;         /* initrd.img */
	char *cmdline;        /* kernel command line */
	char *kernel_version; /* e.g. "6.1.0-41-amd64" */
};

void guest_image_clear(struct guest_image *g);

/*
 * Find the built Debian guest under cache_dir (NULL: guest_default_cache_dir()) without building
 * anything. Returns 0 and fills *out, or a negative errno with *err: -ENOENT when none was built
 * (the message says to run 'ferry guest build debian').
 */
int guest_debian_locate(const char *cache_dir, struct guest_image *out, char **err);

/*
 * Build the Debian guest into the cache unless the keyed output exists and is intact (and
 * opts->force is false), then point `current` at it. opts->fixtures_dir is not used. Needs root.
 * *rebuilt (may be NULL) tells whether anything was built. Returns 0 and fills *out, or a
 * negative errno with *err.
 */
int guest_debian_build(const struct guest_build_opts *opts, struct guest_image *out, bool *rebuilt,
		       char **err);

/* The manifest of the current Debian guest as JSON text (`ferry guest info debian --json`). */
int guest_debian_manifest(const char *cache_dir, char **json, char **err);

/*
 * The Debian archive URI of `suite` in the apt sources under etc_apt (normally "/etc/apt"):
 * sources.list and sources.list.d/ *.list (one-line form) and *.sources (deb822), the first
 * `deb` entry whose suites include `suite` exactly. Returns a malloc'ed URI, or NULL with *err.
 */
char *guest_debian_mirror(const char *etc_apt, const char *suite, char **err);

/*
 * Write a NoCloud seed for cloud-init: an ISO 9660 image (Rock Ridge and Joliet names, through
 * libarchive) with the volume id "cidata" holding `meta-data` (instance-id and local-hostname)
 * and `user-data` (the bytes given, e.g. a #cloud-config that installs or enables
 * qemu-guest-agent). path is written atomically. Returns 0 or a negative errno with *err.
 */
int guest_seed_write(const char *path, const char *instance_id, const void *user_data, size_t len,
		     char **err);
