/* SPDX-License-Identifier: MIT */
/*
 * The guest builder's own declarations, shared by its files (not for the rest of ferry: guest.h
 * is the interface). Who does what:
 *   packages.c   resolve the packages with apt-cache, download them with apt-get
 *   deb.c        read the data.tar member of a .deb with libarchive
 *   kernel.c     the kernel: XZ payload of the bzImage, ELF checks (PVH note, DT_NEEDED)
 *   modules.c    kernel modules: .modinfo, load order, modules.dep/alias, extraction
 *   initramfs.c  the initramfs tree, its newc cpio writer, busybox, qemu-ga and its libraries
 *   cache.c      the cache: key, build directory, manifest, `current`, pruning, locating
 */
#pragma once

#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>
#include <stdarg.h>
#include <string.h>

#include "guest.h"
#include "util.h"

/*
 * The kernel command line: serial console for logs, no reboot loop on panic, quiet boot (every
 * console line costs time under TCG). The crypto self-tests (cryptomgr, and the SP800-108 KDF
 * test that runs on its own as an initcall; the KDF functions stay available) took 1-1.5 s of a
 * TCG boot measured with initcall_debug, and rodata=off skips write-protecting the kernel image
 * and the page-table walk that checks it (~0.2 s of QEMU CPU per boot): none of that serves a
 * throwaway test guest. Three initcalls nothing in the guest uses (initcall_debug, TCG):
 * inet6_init 0.12 s (ipv6.disable=1: ferry's guest networks are IPv4 only), init_kprobe_trace
 * 0.07 s, and init_encrypted (the "encrypted" key type), whose cbc(aes) lookup ran /sbin/modprobe
 * twice as a usermode helper (crypto-cbc(aes), crypto-cbc(aes)-all; ~0.1 s) and held the init
 * thread until the initramfs was unpacked. (ferry adds acpi=noirq on machine pc, and
 * noreplace-smp and noapictimer under TCG: vm_domain_xml())
 */
#define GUEST_CMDLINE                                                                              \
	"console=ttyS0 panic=-1 quiet cryptomgr.notests "                                          \
	"initcall_blacklist=crypto_kdf108_init,init_kprobe_trace,init_encrypted rodata=off "       \
	"ipv6.disable=1"

/*
 * Modules the guest loads before the agent starts, in this order (dependencies are put in front
 * as needed): the device drivers, because nothing would load them later (there is no udev) and
 * a disk given at boot must be visible once the agent answers.
 */
static const char *const guest_modules_boot[] = {
	"virtio_pci", "virtio_console", "virtio_blk", "virtio_net", "virtio_scsi",
	"e1000",      "sd_mod",         "sr_mod",     "ata_piix",   "ahci",
};

/*
 * Modules loaded in the background (nice 19) once the agent runs: the filesystems. Loading them
 * costs about a second of boot under TCG; the kernel also loads them on demand through
 * /sbin/modprobe (busybox, reading the modules.dep and modules.alias written here) when a mount
 * comes first. crc32c_generic is a soft dependency of ext4/jbd2 (metadata checksums) that
 * depends= does not list; nls_cp437 and nls_ascii are vfat's default codepage and iocharset in
 * Debian's config. virtiofs (share driver virtiofs) pulls in fuse, a module in Debian's 6.1
 * kernel (CONFIG_FUSE_FS=m, CONFIG_VIRTIO_FS=m). cifs (share driver smb) depends on netfs,
 * fscache, dns_resolver, cifs_md4 and cifs_arc4; what its softdep= lines name and Debian builds
 * as modules (cmac for SMB 3 signing keys, ecb, sha512_generic for 3.1.1's preauth hash, gcm and
 * ccm for encryption, and ctr and ghash_generic, which ccm(aes) and gcm(aes) are made of) come
 * first, since depends= does not list them. Without ctr, ghash_generic and des_generic the guest's
 * cifs gave up after the SMB 3.0 negotiate and mount said ENOENT (the crypto API's "no such
 * algorithm").
 */
static const char *const guest_modules_later[] = {
	"crc32c_generic",
	"ext4",
	"nls_cp437",
	"nls_ascii",
	"nls_utf8",
	"vfat",
	"isofs",
	"9pnet_virtio",
	"9p",
	"virtiofs",
	"cmac",
	"ecb",
	"ctr",
	"ghash_generic",
	"des_generic",
	"sha512_generic",
	"gcm",
	"ccm",
	"cifs",
};

/* The fixture files installed into the initramfs: name in fixtures/guest, path, mode. */
/*
 * Programs of Debian packages the guest carries besides busybox and qemu-ga, each with the
 * shared libraries it needs: the ssh method's server (dropbear; dropbearconvert reads the
 * OpenSSH-format host key the host makes per run), vm2vm's client in the sender (dbclient), the
 * remote ends of `scp -O` (scp -t) and of rsync over ssh (rsync --server), and coreutils' dd at
 * /usr/bin/dd (dest; the block method's timed dd: it reports its bytes and seconds, which
 * Debian's busybox dd does not, and /bin/dd stays busybox's applet).
 */
static const struct guest_tool {
	const char *package, *path;
	const char *dest; /* where in the guest (NULL: path) */
} guest_tools[] = {
	{ "dropbear-bin", "usr/sbin/dropbear", NULL },
	{ "dropbear-bin", "usr/bin/dropbearconvert", NULL },
	{ "dropbear-bin", "usr/bin/dbclient", NULL },
	{ "openssh-client", "usr/bin/scp", NULL },
	{ "rsync", "usr/bin/rsync", NULL },
	{ "coreutils", "bin/dd", "usr/bin/dd" },
};

/* Whether a package holds shared libraries the guest's programs may need: Debian names them
 * lib*, and zlib1g (libz). */
static inline bool guest_lib_package(const char *name)
{
	return strncmp(name, "lib", 3) == 0 || STREQ(name, "zlib1g");
}

static const struct guest_fixture_file {
	const char *name, *path;
	unsigned mode;
} guest_fixtures[] = {
	{ "fstab", "etc/fstab", 0644 },
	{ "group", "etc/group", 0644 },
	{ "init", "init", 0755 },
	{ "inittab", "etc/inittab", 0644 },
	{ "link-ports.sh", "etc/link-ports.sh", 0644 },
	{ "mdev.conf", "etc/mdev.conf", 0644 },
	{ "passwd", "etc/passwd", 0644 },
	{ "shutdown", "sbin/shutdown", 0755 },
	{ "vport-link.sh", "etc/vport-link.sh", 0755 },
};

/* ---- small helpers (cache.c) ---- */

/* Set *err (when err is not NULL; the format may use the old *err) and return code. */
int guest_err(char **err, int code, const char *fmt, ...) _printf_(3, 4);
/* Append printf output to the malloc'ed string *s (NULL: empty). */
void guest_append(char **s, const char *fmt, ...) _printf_(2, 3);

static inline bool has_suffix(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

static inline bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static inline void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* ---- the directory of one kind of guest in the cache (cache.c): CACHE/guest, CACHE/guest-debian
 * ---- */

/* mkdir -p, then make the leaf world-readable and traversable whatever the umask. */
int guest_make_dir(const char *path, char **err);
/* Take guestdir/.lock (one build at a time per cache), saying `waiting` through opts->progress
 * when another build holds it. Returns the descriptor (the lock goes with it), or a negative
 * errno with *err. */
int guest_cache_lock(const char *guestdir, const struct guest_build_opts *opts, const char *waiting,
		     char **err);
/* A fresh build directory under guestdir with a name nobody can predict (mkdtemp), after removing
 * those that interrupted builds left (the caller holds the lock: no build is running). */
int guest_cache_build_dir(const char *guestdir, char **dirp, char **err);
/* Point guestdir/current at the keyed directory `key`. */
int guest_cache_point(const char *guestdir, const char *key, char **err);
/* Remove keyed directories other than `key`, the one `current` named until now (a VM that
 * located it a moment ago may still be starting from it) and those a run holds
 * (guest_cache_hold()). */
void guest_cache_prune(const char *guestdir, const char *key);
/* The directory `current` names in CACHE/sub and its manifest (*mp, the caller's). The errors
 * name `what` ("built-in guest") and end with `build` when there is none, `rebuild` when its
 * manifest cannot be read ("run 'ferry guest build --force'"). */
int guest_cache_current(const char *cache_dir, const char *sub, const char *what, const char *build,
			const char *rebuild, char **dirp, json_t **mp, char **err);

/* ---- packages (packages.c) ---- */

struct pkg {
	char *name, *version, *arch, *sha256, *depends;
	char *deb; /* path of the downloaded file */
};

struct pkg_list {
	struct pkg *items;
	size_t n, cap;
};

void pkg_list_clear(struct pkg_list *l);
struct pkg *pkg_find(struct pkg_list *l, const char *name);
/* The packages the guest is made of (kernel, busybox-static, qemu-guest-agent and its lib*
 * closure) with their candidate versions; *kernel_pkg names the kernel package. */
int resolve_packages(struct pkg_list *l, char **kernel_pkg, char **err);
/* Download what is missing from debdir (apt-get download), checking every .deb's SHA-256. */
int download_packages(struct pkg_list *l, const char *debdir, guest_progress_fn progress, void *ud,
		      char **err);
/*
 * Run a program that must succeed (argv, never a shell: proc_spawn()) in cwd (NULL: ours),
 * with LC_ALL=C; *out (may be NULL) gets its stdout. Returns 0, or a negative errno with *err
 * ("'PROG ARG' failed (exit N): <last line of stderr>").
 */
int guest_run(char *const argv[], const char *cwd, char **out, char **err);

/* ---- .deb files (deb.c) ---- */

/* Called for each member of data.tar: path without "./"; return 0 to go on, 1 to stop, < 0 to
 * fail (having set *err). */
typedef int (*deb_entry_fn)(void *ud, struct archive *a, struct archive_entry *e, const char *path,
			    char **err);
int deb_walk(const char *deb, deb_entry_fn fn, void *ud, char **err);
/* The whole content of the current member (malloc'ed, NUL-terminated past *len). */
int entry_read_all(struct archive *a, struct archive_entry *e, unsigned char **buf, size_t *len,
		   char **err);
/* The content of the regular file `path` in package p. */
int deb_file(const struct pkg *p, const char *path, unsigned char **data, size_t *len, char **err);

/* ---- one build (cache.c drives it) ---- */

struct libfile {
	char *path; /* inside the package, e.g. "usr/lib/x86_64-linux-gnu/libglib-2.0.so.0" */
	unsigned char *data;
	size_t size;
	char *target; /* symlink target, or NULL for a regular file */
};

struct build {
	const struct guest_build_opts *opts;
	char *kver;
	char *kernel_pkg;
	struct pkg_list pkgs;
	struct guest_tree tree;
	/* kernel pass 1 */
	unsigned char *vmlinuz;
	size_t vmlinuz_len;
	struct guest_module *mods;
	size_t nmods, capmods;
	/* kernel pass 2: modules still to extract (paths relative to lib/modules/KVER) */
	char **need;
	size_t nneed, found;
	/* shared libraries of the lib* packages */
	struct libfile *libs;
	size_t nlibs, caplibs;
	/* what went in, for the manifest */
	json_t *modules, *modules_boot, *libraries;
	size_t applets;
};

/* Report progress through opts->progress (the library never prints). */
void build_progress(struct build *b, const char *fmt, ...) _printf_(2, 3);

/* ---- the kernel (kernel.c) ---- */

/* The bytes of section `name` of an ELF64 (NULL when absent or out of range). */
const unsigned char *elf_section(const unsigned char *buf, size_t len, const char *name,
				 size_t *size);
/* DT_NEEDED names of a shared object or executable (through .dynamic and its string table). */
int elf_needed(const unsigned char *buf, size_t len, char ***names, size_t *n, char **err);
/* PT_INTERP of an executable ("/lib64/ld-linux-x86-64.so.2"), malloc'ed, or NULL. */
char *elf_interp(const unsigned char *buf, size_t len);
/* Write DIR/kernel: the uncompressed vmlinux when it has a PVH entry, else the bzImage. *why
 * says which and why. */
int write_kernel(struct build *b, const char *dir, bool *pvh, char **why, char **err);

/* ---- modules (modules.c) ---- */

/* Read the kernel package: vmlinuz, the modules wanted and their dependencies (into the tree),
 * modules.dep, modules.alias and the load lists. */
int add_kernel(struct build *b, const struct pkg *kpkg, char **err);

/* ---- the initramfs (initramfs.c) ---- */

/* Add a file taking ownership of data (malloc'ed) instead of copying: modules are large. */
void tree_add_file_take(struct guest_tree *t, const char *path, unsigned mode, unsigned char *data,
			size_t size);
/* busybox and a link for each of its applets; tmpdir holds the binary while it lists them. */
int add_busybox(struct build *b, const struct pkg *p, const char *tmpdir, char **err);
/* qemu-ga, the libraries it needs (DT_NEEDED, transitively) and the dynamic loader. */
int add_agent(struct build *b, const struct pkg *qga, char **err);
/* The same for every program of guest_tools. */
int add_tools(struct build *b, char **err);

/* Write data as the file path (mode exactly), atomically: write_file_atomic(). Returns 0 or a
 * negative errno with *err. */
int guest_write_file(const char *path, const void *data, size_t len, unsigned mode, char **err);
