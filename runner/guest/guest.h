/* SPDX-License-Identifier: MIT */
/*
 * The built-in guest: a Debian generic kernel plus an uncompressed newc initramfs holding
 * busybox-static, qemu-guest-agent (+ its shared libraries) and the kernel modules for virtio,
 * 9p, virtiofs, ata_piix/ahci, ext4, vfat and iso9660. Everything comes from Debian packages that
 * are downloaded (`apt-get download`), never installed into the host, and unpacked with libarchive.
 *
 * Layout of the cache (every directory 0755, every file 0644, because QEMU runs as libvirt-qemu):
 *   CACHE/guest/debs/                    downloaded .deb files
 *   CACHE/guest/<key>/kernel             vmlinux (ELF, PVH entry) or the bzImage as a fallback
 *   CACHE/guest/<key>/initramfs.cpio     uncompressed newc cpio
 *   CACHE/guest/<key>/manifest.json      what went in (packages, versions, modules, sizes, hashes)
 *   CACHE/guest/current                  symlink to the newest complete <key>
 *   CACHE/guest/.build-XXXXXX            a build in progress (mkdtemp: a name nobody can
 *                                        predict), renamed to <key> when complete
 * <key> is the SHA-256 of the inputs (first 32 hex digits): package names, versions and .deb
 * SHA-256s, the content of fixtures/guest/ and of ferry-sum, the module lists, the kernel command
 * line, SOURCE_DATE_EPOCH (the initramfs mtimes, 0 when unset) and GUEST_FORMAT_VERSION; the same
 * inputs give the same bytes.
 *
 * CACHE/guest/.lock serialises builds; a new build removes unused .debs, build directories that
 * interrupted builds left, and older builds (all but the new one and the one `current` named
 * before), with rm_tree() (no symlink followed). Every file is written through the one atomic
 * writer (write_file_atomic(): exclusive temporary file, fsync, rename); the source is split by
 * job, see guest-build.h.
 *
 * What a domain booting this guest gets (the contract with vm.c/agent.c):
 * - /init mounts proc, sysfs, devtmpfs, devpts, tmpfs on /tmp and /run, loads the device driver
 *   modules: virtio_pci and virtio_console, plus those named by ferry.modules=a,b,... on the
 *   command line (vm_guest_modules(): the drivers of the VM's disk buses and NIC), or without that
 *   parameter all of virtio blk/net/scsi, e1000, sd_mod, sr_mod, ata_piix, ahci; a disk given at
 *   boot is visible once the agent answers. It links every virtio-serial port to
 *   /dev/virtio-ports/NAME (there is no udev; `mdev -d`, started behind the agent, keeps the
 *   links current for channels hot-plugged or unplugged later), brings up lo and, when a NIC
 *   exists, eth0 as 10.0.2.15/24 with a default route via 10.0.2.2 (QEMU user networking), then
 *   busybox init respawns `qemu-ga -m virtio-serial -p /dev/virtio-ports/org.qemu.guest_agent.0`
 *   (/etc/inittab; `qgadebug` on the command line adds `-v -l /tmp/qga.log`).
 * - mdev, then the filesystem modules (ext4, vfat, isofs, 9p + 9pnet_virtio, virtiofs + fuse,
 *   crc32c, cifs and the crypto it uses) start behind the agent at nice 19, in that order;
 *   /run/ferry-modules/NAME appears when module NAME (file name without .ko) is in,
 *   /run/ferry-modules-loaded when they all are. A mount before that works too: the kernel
 *   loads what it needs through /sbin/modprobe
 *   (busybox, with modules.dep and modules.alias in /lib/modules/KVER). `mount -t 9p -o
 *   trans=virtio TAG DIR`, `mount -t virtiofs TAG DIR` and `mount -t cifs //ADDR/SHARE DIR -o
 *   ip=ADDR,...` (busybox passes the options to the kernel as they are) likewise.
 * - The domain needs the agent channel (target name GUEST_AGENT_CHANNEL), a serial console on
 *   ttyS0 (the command line sends the console there) and 256 MiB of memory or more.
 * - Busybox applets are at their usual paths (/bin/sh, /bin/mount, /sbin/ip, wget, nc, ...),
 *   coreutils' dd at /usr/bin/dd (busybox's shell runs its own applet for a bare `dd`: call
 *   it by its path), /usr/bin/ferry-sum lists a directory with XXH3-128 for verify
 *   (runner/guest/ferry-sum.c, built with ferry, linked statically), /mnt exists, / is the
 *   initramfs (tmpfs-backed, in guest RAM).
 * - Finding a disk by its <serial>: virtio-blk in /sys/block/vdX/serial; SCSI (virtio-scsi, sata)
 *   in /sys/block/sdX/device/vpd_pg80 after a 4-byte header (ATA pads it with spaces to 20).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Bump when the layout or content rules of the built guest change: it is part of the cache key. */
#define GUEST_FORMAT_VERSION 8

/* The virtio-serial channel name qemu-ga listens on inside the guest. */
#define GUEST_AGENT_CHANNEL "org.qemu.guest_agent.0"

/* What a VM boots. Every string is owned by the struct; free with guest_files_clear(). */
struct guest_files {
	char *dir;       /* the keyed build directory holding the files below */
	char *kernel;    /* absolute path of the kernel: an ELF vmlinux when pvh, else bzImage */
	char *initramfs; /* absolute path of the uncompressed newc initramfs */
	char *cmdline;   /* kernel command line to pass (<cmdline> in the domain XML) */
	char *kernel_version;   /* e.g. "6.1.0-57-amd64" */
	char *initramfs_sha256; /* 64 lower-case hex digits, as recorded when it was built */
	bool pvh;               /* kernel is the uncompressed vmlinux, booted through QEMU's PVH
				   entry (about 2.5 s faster under TCG than the bzImage) */
};

/* Free the strings of *g and zero it; NULL and an already cleared struct are fine. */
void guest_files_clear(struct guest_files *g);

/*
 * The default cache directory: $FERRY_CACHE_DIR, else /var/cache/ferry when running as root,
 * else $XDG_CACHE_HOME/ferry, else $HOME/.cache/ferry. Returns a malloc'ed string.
 */
char *guest_default_cache_dir(void);

/*
 * Find the built guest under cache_dir (NULL: guest_default_cache_dir()) without building or
 * downloading anything: follows CACHE/guest/current, reads its manifest.json and checks the
 * kernel and initramfs exist with the recorded sizes.
 * Returns 0 and fills *out (caller frees with guest_files_clear()), or on failure a negative
 * errno and a malloc'ed message in *err (caller frees): -ENOENT when no guest has been built
 * (the message says to run 'ferry guest build'), another value when it is damaged or unreadable.
 */
int guest_locate(const char *cache_dir, struct guest_files *out, char **err);

/*
 * Hold the built guest in directory dir (guest_files.dir, guest_image.dir) for as long as the
 * returned descriptor is open: a shared lock that a later build's prune respects, so that a
 * build for another ferry (another build tree's ferry-sum is another key) cannot remove the
 * files a run is booting from. Returns the descriptor, or -1 (the guest is not held).
 */
int guest_cache_hold(const char *dir);

/* Progress messages of guest_build() (e.g. "downloading 9 packages"); the library never prints. */
typedef void (*guest_progress_fn)(void *userdata, const char *msg);

struct guest_build_opts {
	const char *cache_dir; /* NULL: guest_default_cache_dir() */
	const char
	    *fixtures_dir; /* init, inittab, fstab, ...; NULL: the source tree's fixtures/guest */
	const char *sum_path; /* ferry-sum; NULL: the build tree's when this binary runs from it,
				 else the installed one (FERRY_LIBEXECDIR) */
	bool force;           /* rebuild even when the keyed output exists and is intact */
	guest_progress_fn progress; /* may be NULL */
	void *userdata;
};

/*
 * Resolve the package versions (apt-cache), download what is missing (apt-get download into
 * CACHE/guest/debs), and build the kernel and initramfs into CACHE/guest/<key> unless that output
 * already exists and is intact (and opts->force is false); then point CACHE/guest/current at it.
 * *rebuilt (may be NULL) tells whether anything was built. Returns 0 and fills *out, or a negative
 * errno with a malloc'ed message in *err.
 */
int guest_build(const struct guest_build_opts *opts, struct guest_files *out, bool *rebuilt,
		char **err);

/*
 * The manifest of the current guest as JSON text (what `ferry guest info --json` prints): kernel
 * version, packages and versions, modules in load order, file sizes, initramfs SHA-256, pvh.
 * Returns 0 and a malloc'ed string in *json, or a negative errno and *err like guest_locate().
 */
int guest_manifest(const char *cache_dir, char **json, char **err);

/* ---- building blocks, exposed for the unit tests ---- */

/* One initramfs entry. Paths are relative ("bin/busybox"), without a leading "/" or "./". */
enum guest_entry_type { GUEST_DIR, GUEST_FILE, GUEST_SYMLINK, GUEST_CHARDEV };
struct guest_entry {
	char *path;
	enum guest_entry_type type;
	unsigned mode;                   /* permission bits only (0755, 0644) */
	unsigned char *data;             /* GUEST_FILE: content (owned) */
	size_t size;                     /* GUEST_FILE: content length */
	char *target;                    /* GUEST_SYMLINK: link target (owned) */
	unsigned rdev_major, rdev_minor; /* GUEST_CHARDEV: device number */
};

struct guest_tree {
	struct guest_entry *items;
	size_t n, cap;
};

/* Add entries; a later entry with the same path replaces the earlier one. Parent directories are
 * added (0755) as needed. add_file copies data. */
void guest_tree_add_dir(struct guest_tree *t, const char *path, unsigned mode);
void guest_tree_add_file(struct guest_tree *t, const char *path, unsigned mode, const void *data,
			 size_t size);
void guest_tree_add_symlink(struct guest_tree *t, const char *path, const char *target);
void guest_tree_add_chardev(struct guest_tree *t, const char *path, unsigned mode, unsigned major,
			    unsigned minor);
void guest_tree_clear(struct guest_tree *t);

/*
 * Write the tree as an uncompressed newc cpio to path: entries sorted by path (bytewise), uid/gid
 * 0, mtime `mtime` (0 or SOURCE_DATE_EPOCH), inode numbers assigned in that order, so the same
 * tree always gives the same bytes. Returns 0 or a negative errno with *err.
 */
int guest_cpio_write(const struct guest_tree *t, const char *path, int64_t mtime, char **err);

/* Offset of the first XZ stream magic (fd 37 7a 58 5a 00) in buf, or -1 when there is none. */
ssize_t guest_find_xz(const unsigned char *buf, size_t len);

/*
 * Decompress the XZ stream starting at buf (through libarchive: raw format + xz filter), stopping
 * at the end of that stream: bytes after it are ignored. Returns 0 with a malloc'ed *out of *outlen
 * bytes, or a negative errno with *err.
 */
int guest_xz_decompress(const unsigned char *buf, size_t len, unsigned char **out, size_t *outlen,
			char **err);

/* True when buf is a 64-bit ELF with a Xen ELF note of type XEN_ELFNOTE_PHYS32_ENTRY (18). */
bool guest_elf_has_pvh(const unsigned char *buf, size_t len);

/* A kernel module known to the resolver: its name (underscores) and the names it depends on. */
struct guest_module {
	char *name;      /* "virtio_net" (dashes turned into underscores) */
	char *path;      /* path inside the module tree, e.g. "kernel/drivers/net/virtio_net.ko" */
	char **deps;     /* NULL-terminated names from .modinfo depends= */
	char **aliases;  /* NULL-terminated .modinfo alias= values ("fs-ext4"), or NULL */
	bool compressed; /* the package ships it as .ko.xz (path names the .ko) */
};

/*
 * Order `wanted` (module names) and everything they depend on so that every module comes after
 * its dependencies; the wanted order is kept where dependencies allow. *order receives indexes
 * into mods (malloc'ed, *norder entries). Returns 0, or -ENOENT with *err naming a module that is
 * not in mods, or -ELOOP for a dependency cycle.
 */
int guest_module_order(const struct guest_module *mods, size_t nmods, const char *const *wanted,
		       size_t nwanted, size_t **order, size_t *norder, char **err);

/*
 * Parse the .modinfo section of a kernel module (an ELF .ko) into *m (name, deps; path is left
 * NULL). Returns 0 or a negative errno with *err.
 */
int guest_modinfo_parse(const unsigned char *ko, size_t len, struct guest_module *m, char **err);
void guest_module_clear(struct guest_module *m);
