/* SPDX-License-Identifier: MIT */
/*
 * share: a host folder exported into the guest over virtio-9p (QEMU's own 9P2000.L file server
 * on a virtio transport, libvirt <filesystem type='mount'>, the guest's 9p/9pnet_virtio client)
 * or virtiofs (FUSE over virtio, served by the host's virtiofsd), defined at boot (neither can
 * be hot-plugged). Neither is SMB: QEMU's smb= option is a Samba export on user networking
 * (slirp), which ferry does not use. The studies' SMB copies compare best with 9p and virtiofs
 * as the host-folder-in-the-guest way here, not as the same protocol. transfer mounts it (9p:
 * msize, cache from the plan), copies or moves into the landing directory, syncs and unmounts,
 * in one guest command; no finalize.
 *
 * What is shared:
 * - mode copy: the datasets directory itself (the parent of the dataset's cache directory, so
 *   cells with other datasets can share the VM), read-only, accessmode passthrough: QEMU reads
 *   as libvirt-qemu, which the cache's 0755/0644 modes allow. Nothing is prepared per run.
 * - mode move, or any `archive:`: a writable staging directory of the run, owned by libvirt-qemu
 *   so the guest's unlinks work, in accessmode mapped (QEMU security_model=mapped-xattr): what
 *   the guest makes there is a plain file 0600 (a directory 0700) of libvirt-qemu on the host
 *   whatever its chmod, chown or mknod asked for, which QEMU keeps in user.virtfs.* xattrs, so
 *   no setuid file, device or file of another owner appears on the host (passthrough let the
 *   guest set the setuid bit on libvirt-qemu's files). Mapped mode cannot read a host symlink:
 *   the links of a `path:` dataset are staged in its form (dataset_copy_opts.mapped_links)
 *   where the machine serves it (machine_share_maps_links()). A move takes the files away, so every
 *   run needs its own copy on the host: prepare fills the staging directory with hard links to
 *   the dataset (the cache is never modified: unlinking a link leaves the original; a plain copy
 *   when the run directory is on another filesystem). With `archive:` prepare packs the dataset
 *   into one archive there instead (prepare = pack), the guest unpacks it from the share, and a
 *   move removes the archive from the share afterwards.
 *   A hard link shares the inode: it is made only when QEMU's user cannot write the file
 *   (9p runs QEMU as libvirt-qemu; a file it could write is copied instead).
 * driver virtiofs: exported by ferry-virtiofsd (vm.c gives the domain the shared memory it
 * needs): virtiofsd in a user namespace whose root is the host's SHARE_IDS_BASE, with setuid and
 * setgid bits and devices refused (runner/machine/libvirt/virtiofsd-wrap.c), so what the guest
 * makes belongs to an id no account owns; what ferry stages for it is owned by that id (the
 * namespace's root) so that the guest's unlinks work. libvirt 9.0 refuses a
 * read-only virtiofs share ("virtiofs does not yet support read-only mode") and QEMU 7.2's
 * virtiofsd has no read-only option, so the guest never gets the cache or the user's `path:`
 * tree itself: mode copy exports a private copy of the dataset per run (<run>/share-ro/<name>,
 * made in add_devices, outside every timed phase), and a move copies (never links) into the
 * staging directory: for the first run in add_devices, for every later run in the previous
 * run's cleanup, so that the copy is not part of any run's total. The guest mounts mode copy
 * -o ro all the same; what it could write there is its own copy, which verification checks.
 * Every copy and link is made from descriptors (dataset_copy()): a file of a `path:` tree
 * swapped for a symlink after the scan is refused, not followed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset.h"
#include "fs.h"
#include "machine.h"
#include "run.h"
#include "util.h"
#include "method.h"
#include "archive.h"
#include "stream.h"
#include "rules.h"
#include "share.h"
#include "share-ids.h"

#define SHARE_TAG   "ferryshare"
#define GUEST_MOUNT "/mnt/ferry-share"

static const char *const share_to_names[] = { "guest", "same-share", "other-share", "other-server",
					      NULL };

static const struct key_def share_defs[] = {
	{ .name = "driver",
	  .type = KEY_ENUM,
	  .offset = offsetof(struct share_opts, driver),
	  .def = "9p",
	  .values = (const char *const[]){ "9p", "virtiofs", "smb", NULL },
	  .help = "share driver; virtiofs needs virtiofsd on the host; smb is Samba's smbd in the "
		  "run's private network (nic backend private), mounted with the guest's cifs" },
	{ .name = "msize",
	  .type = KEY_SIZE,
	  .offset = offsetof(struct share_opts, msize),
	  .def = "512000",
	  .min = 4096,
	  .max = 1 << 20,
	  .help = "9p message size" },
	{ .name = "cache",
	  .type = KEY_ENUM,
	  .offset = offsetof(struct share_opts, cache),
	  .def = "none",
	  .values = (const char *const[]){ "none", "loose", "mmap", NULL },
	  .help = "9p cache mode in the guest" },
	{ .name = "mode",
	  .type = KEY_ENUM,
	  .offset = offsetof(struct share_opts, mode),
	  .def = "copy",
	  .values = (const char *const[]){ "copy", "move", NULL },
	  .help = "copy out of the share, or move (the share is refilled before each run)" },
	{ .name = "to",
	  .type = KEY_ENUM,
	  .offset = offsetof(struct share_opts, to),
	  .def = "guest",
	  .values = share_to_names,
	  .help = "smb: where the files go: the guest's target disk, another folder of the same "
		  "share, a second share of the same server, or a share of a second server" },
	{ .name = "served_by",
	  .type = KEY_ENUM,
	  .offset = offsetof(struct share_opts, served_by),
	  .def = "host",
	  .values = (const char *const[]){ "host", "guest", NULL },
	  .help = "smb: host: smbd on the host, the guest copies from it; guest: smbd in the "
		  "guest (a Debian guest) serves its landing directory and the host copies onto "
		  "it with smbclient (study 000's Copy-Item-Smb)" },
};
METHOD_OPTIONS_TABLE(, share_keys, "share", struct share_opts, share_defs);

#define SO(m) SHARE_OPTS(m)

static void virtiofs_9p(const struct rule_subject *s, struct rule_out *o)
{
	const struct share_opts *so = SO(s->method);
	if (so->driver == SHARE_9P)
		return;
	for (size_t i = 0; i < 2; i++) {
		const char *nine = i ? "cache" : "msize";
		if (key_is_set(&share_keys, so, nine))
			plan_rule_fail(o, nine,
				       "'%s' is a 9p option: it does not apply to 'driver: %s'",
				       nine, so->driver == SHARE_SMB ? "smb" : "virtiofs");
	}
}

/* `to` other than guest: the guest copies between two SMB shares, which only smb serves; the
 * files land on a share, so there is nothing for an archive to be unpacked into */
static void share_to(const struct rule_subject *s, struct rule_out *o)
{
	const struct share_opts *so = SO(s->method);
	if (so->to == SHARE_TO_GUEST)
		return;
	if (so->driver != SHARE_SMB)
		plan_rule_fail(o, "to",
			       "'to: %s' copies between SMB shares: it needs 'driver: smb'",
			       share_to_names[so->to]);
	else if (s->method->archive.format != PLAN_ARCHIVE_NONE)
		plan_rule_fail(o, "archive",
			       "'to: %s' copies the files from share to share as they are: archive "
			       "does not apply (use 'to: guest')",
			       share_to_names[so->to]);
}

/* smb: smbd listens in the run's private network only (never on the host's own network) */
static void smb_private(const struct rule_subject *s, struct rule_out *o)
{
	if (SO(s->method)->driver != SHARE_SMB || s->vm->nic.backend == PLAN_NIC_PRIVATE)
		return;
	plan_rule_fail(o, "method",
		       "method '%s' (driver smb) needs vm '%s' on ferry's private network: %s "
		       "(set 'nic: {backend: private}')",
		       s->method->e.name, s->vm->e.name,
		       SO(s->method)->served_by == SHARE_BY_GUEST
			   ? "the host reaches the guest's smbd only there"
			   : "Samba listens only there");
}

/* served_by guest: the host copies onto the guest's share, into the landing directory */
static void served_by_guest(const struct rule_subject *s, struct rule_out *o)
{
	const struct share_opts *so = SO(s->method);
	if (so->served_by != SHARE_BY_GUEST)
		return;
	if (so->driver != SHARE_SMB)
		plan_rule_fail(
		    o, "served_by",
		    "'served_by: guest' is a share served by smbd in the guest: it needs "
		    "'driver: smb'");
	else if (so->mode == SHARE_MOVE)
		plan_rule_fail(o, "mode",
			       "'served_by: guest' copies from the host's dataset onto the guest's "
			       "share: 'mode: move' does not apply (the host's dataset stays)");
	else if (so->to != SHARE_TO_GUEST)
		plan_rule_fail(o, "to",
			       "'served_by: guest' copies onto the guest's share, its landing "
			       "directory: 'to: %s' does not apply",
			       share_to_names[so->to]);
}

const struct plan_rule share_rules[] = {
	{ "method.virtiofs-9p-options", RULE_METHOD, RULE_ERROR, 0,
	  "9p options (msize, cache) with driver virtiofs or smb", virtiofs_9p },
	{ "method.share-to", RULE_METHOD, RULE_ERROR, 0,
	  "share 'to' other than guest without driver smb, or with an archive", share_to },
	{ "cell.smb-private", RULE_CELL, RULE_ERROR, 0,
	  "a share method with driver smb on a vm without nic backend private", smb_private },
	{ "method.share-served-by", RULE_METHOD, RULE_ERROR, 0,
	  "share 'served_by: guest' without driver smb, or with mode move or 'to'",
	  served_by_guest },
};
_Static_assert(ELEMENTSOF(share_rules) == SHARE_N_RULES, "SHARE_N_RULES counts share_rules");

/* What it copies into the run directory: the dataset, staged for a move or a virtiofs share
 * (counted for every share cell: the check stays on the safe side; smb stages the same). */
uint64_t share_run_dir_bytes(const struct plan_method *m, uint64_t data)
{
	(void)m;
	return data;
}

/* Share's driver smb runs as its own method (smb.c). */
static const struct method_ops *share_driver(const struct plan_method *m)
{
	if (SO(m)->driver != SHARE_SMB)
		return NULL;
	return SO(m)->served_by == SHARE_BY_GUEST ? &method_share_smb_guest : &method_share_smb;
}

struct share_state {
	char *staging;   /* host: the cell's staging directory (writable modes), or NULL */
	char *guest_src; /* guest: what to copy from (a directory, or the archive file) */
	bool mounted;
	bool staged; /* virtiofs move: the staging copy for the next run is ready */
};

static bool writable_mode(const struct plan_method *m)
{
	return SO(m)->mode == SHARE_MOVE || m->archive.format != PLAN_ARCHIVE_NONE;
}

const char *share_archive_ext(const struct plan_archive *a)
{
	static const char *const fmt[] = { "tar", "tar", "pax", "cpio", "zip" };
	static const char *const comp[] = { "", ".gz", ".zst", ".lz4", ".xz" };
	static char buf[32];
	snprintf(buf, sizeof(buf), "%s%s", fmt[a->format],
		 a->format == PLAN_ARCHIVE_ZIP ? "" : comp[a->compression]);
	return buf;
}

static char *share_supports(const struct method_ctx *ctx)
{
	const struct plan_method *m = ctx->method;
	/* what no host can do: the plan's rules table (runner/plan/rules.c) */
	char *why = plan_rules_skip(ctx->plan, ctx->cell);
	if (why)
		return why;
	if (SO(m)->driver == SHARE_VIRTIOFS && !machine_has_virtiofs(ctx->machine))
		return xstrdup("share: driver virtiofs needs virtiofsd on the host "
			       "(/usr/lib/qemu/virtiofsd or /usr/libexec/virtiofsd) and ferry's "
			       "ferry-virtiofsd, which confines it to unprivileged ids, and there "
			       "is none");
	return NULL;
}

/* A staging directory per run directory: equal for every cell, so writable cells share a VM. */
static char *staging_root(struct method_ctx *ctx)
{
	return xasprintf("%s/share", run_dir(ctx->run));
}

/* virtiofs mode copy: the run's private copies of the datasets, one directory per dataset. */
static char *private_root(struct method_ctx *ctx)
{
	return xasprintf("%s/share-ro", run_dir(ctx->run));
}

static bool virtiofs(const struct method_ctx *ctx)
{
	return SO(ctx->method)->driver == SHARE_VIRTIOFS;
}

/*
 * Who owns what ferry stages where the guest may write: the id the guest's file server acts as
 * (9p: QEMU's user libvirt-qemu; virtiofs: SHARE_IDS_BASE, ferry-virtiofsd's namespace root).
 * false: no such id (not a Debian libvirt: QEMU may run as root), nothing is chowned.
 */
static bool share_owner(const struct method_ctx *ctx, uid_t *uid, gid_t *gid)
{
	if (virtiofs(ctx)) {
		*uid = SHARE_IDS_BASE;
		*gid = SHARE_IDS_BASE;
		return true;
	}
	struct passwd *pw = getpwnam("libvirt-qemu");
	if (!pw)
		return false;
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return true;
}

static int chown_owner(const struct method_ctx *ctx, const char *path)
{
	uid_t u;
	gid_t g;
	return share_owner(ctx, &u, &g) ? lchown(path, u, g) : 0;
}

/* 9p staging: a hard link only when QEMU's user (libvirt-qemu) cannot write the file. */
static bool qemu_cannot_write(const struct stat *st, void *userdata)
{
	(void)userdata;
	struct passwd *pw = getpwnam("libvirt-qemu");
	if (!pw || st->st_uid == pw->pw_uid)
		return false; /* QEMU may run as root, or owns the file */
	if (st->st_mode & S_IWOTH)
		return false;
	if ((st->st_mode & S_IWGRP) && st->st_gid == pw->pw_gid)
		return false;
	return true;
}

static char *cell_name(const struct method_ctx *ctx);

/* The dataset's name inside the share: the cache entry's name, or "p<FNV-1a of the path>". */
static char *dataset_name(const struct method_ctx *ctx)
{
	if (!ctx->pds->path) {
		const char *slash = strrchr(ctx->dataset_dir, '/');
		return xstrdup(slash ? slash + 1 : ctx->dataset_dir);
	}
	uint64_t h = 1469598103934665603ull;
	for (const char *p = ctx->dataset_dir; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return xasprintf("p%016llx", (unsigned long long)h);
}

/* Copy (or, for 9p, link where safe) the dataset into the entry `name` of dirfd (shown: its
 * path), from descriptors, never through a symlink a guest put there; writable: for a share the
 * guest may write, owned by share_owner(). */
static int stage_tree(struct method_ctx *ctx, int dirfd, const char *name, const char *shown,
		      bool writable)
{
	struct dataset_copy_opts o = {
		.may_link = virtiofs(ctx) ? NULL : qemu_cannot_write,
		.cancelled = method_copy_cancelled,
		/* a writable 9p share is in accessmode mapped */
		.mapped_links =
		    writable && !virtiofs(ctx) && machine_share_maps_links(ctx->machine),
	};
	if (writable)
		o.chown = share_owner(ctx, &o.uid, &o.gid);
	_cleanup_free_ char *err = NULL;
	uint64_t copied = 0;
	if (dataset_copy_at(ctx->dataset_dir, ctx->manifest, dirfd, name, shown, &o, &copied,
			    &err) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "share: %s", err);
	return 0;
}

/*
 * The cell's staging directory <run>/share/<cell>, emptied and made again, opened: the guest can
 * write to <run>/share (and so put a symlink where <cell> was), so everything below is reached
 * through this descriptor only. Returns the fd or -1 (ctx->err).
 */
static int open_staging(struct method_ctx *ctx, struct share_state *s)
{
	_cleanup_free_ char *root = staging_root(ctx);
	_cleanup_free_ char *name = cell_name(ctx);
	if (!s->staging)
		s->staging = xasprintf("%s/%s", root, name);
	_cleanup_close_ int rfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_free_ char *err = NULL;
	/* a previous run's leftovers (a failed move leaves half the files) */
	if (rfd < 0 || rm_tree_at(rfd, name, &err) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "share: cannot empty '%s': %s",
				   s->staging, err ? err : strerror(errno));
	uid_t u;
	gid_t g;
	bool own = share_owner(ctx, &u, &g);
	int fd = -1;
	if (mkdirat(rfd, name, 0755) < 0 ||
	    (fd = openat(rfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    fchmod(fd, 0755) < 0 || (own && fchown(fd, u, g) < 0)) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return method_fail(ctx, ERROR_INFRA, NULL, "share: mkdir '%s': %s", s->staging,
				   strerror(e));
	}
	return fd;
}

/* virtiofs mode copy: <run>/share-ro/<name>, a private copy of the dataset, made once a run. */
static int private_copy(struct method_ctx *ctx)
{
	_cleanup_free_ char *root = private_root(ctx);
	if (mkdir(root, 0755) < 0 && errno != EEXIST)
		return method_fail(ctx, ERROR_INFRA, NULL, "share: mkdir '%s': %s", root,
				   strerror(errno));
	_cleanup_free_ char *name = dataset_name(ctx);
	_cleanup_free_ char *dst = xasprintf("%s/%s", root, name);
	_cleanup_free_ char *done = xasprintf("%s/.%s.done", root, name);
	if (access(done, F_OK) == 0)
		return 0;
	rm_tree(dst, NULL); /* a copy an earlier cell did not finish */
	_cleanup_close_ int rfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rfd < 0 || stage_tree(ctx, rfd, name, dst, false) < 0)
		return -1;
	_cleanup_close_ int fd =
	    open(done, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "share: create '%s': %s", done,
				   strerror(errno));
	return 0;
}

static struct share_state *state(struct method_ctx *ctx);
static int stage_data(struct method_ctx *ctx, struct share_state *s);
static bool prestaged_mode(const struct method_ctx *ctx);

static int share_add_devices(struct method_ctx *ctx, struct method_boot_needs *needs)
{
	if (needs->share_dir) /* another method of the VM asked first: one share per VM */
		return 0;
	if (writable_mode(ctx->method)) {
		_cleanup_free_ char *root = staging_root(ctx);
		if (mkdir(root, 0755) < 0 && errno != EEXIST)
			return method_fail(ctx, ERROR_INFRA, NULL, "share: mkdir '%s': %s", root,
					   strerror(errno));
		chmod(root, 0755);
		if (chown_owner(ctx, root) < 0)
			return method_fail(ctx, ERROR_INFRA, NULL, "share: chown '%s': %s", root,
					   strerror(errno));
		needs->share_dir = TAKE_PTR(root);
		/* 9p: the guest's modes and owners in xattrs, never on the host's files */
		needs->share_mode = virtiofs(ctx) ? SHARE_MODE_PASSTHROUGH : SHARE_MODE_MAPPED;
		needs->share_readonly = false;
		/* virtiofs move: the first run's private copy, before anything is timed */
		if (prestaged_mode(ctx)) {
			struct share_state *s = state(ctx);
			if (stage_data(ctx, s) < 0)
				return -1;
			s->staged = true;
		}
	} else if (virtiofs(ctx)) {
		/* a root virtiofsd could write what it exports: a private copy, never the cache */
		if (!ctx->dataset_dir)
			return method_fail(ctx, ERROR_INFRA, NULL, "share: no dataset directory");
		if (private_copy(ctx) < 0)
			return -1;
		needs->share_dir = private_root(ctx);
		needs->share_mode = SHARE_MODE_PASSTHROUGH;
		needs->share_readonly = false; /* libvirt 9.0; the guest mounts it -o ro */
	} else {
		if (!ctx->dataset_dir)
			return method_fail(ctx, ERROR_INFRA, NULL, "share: no dataset directory");
		if (ctx->pds->path) {
			needs->share_dir = xstrdup(ctx->dataset_dir);
		} else {
			/* the datasets directory, so that other datasets can share the VM */
			char *d = xstrdup(ctx->dataset_dir);
			char *slash = strrchr(d, '/');
			if (slash && slash != d)
				*slash = '\0';
			needs->share_dir = d;
		}
		needs->share_mode = SHARE_MODE_PASSTHROUGH;
		needs->share_readonly = true; /* 9p: QEMU's export itself is read-only */
	}
	needs->share_driver =
	    SO(ctx->method)->driver == SHARE_VIRTIOFS ? SHARE_DRIVER_VIRTIOFS : SHARE_DRIVER_9P;
	needs->share_tag = xstrdup(SHARE_TAG);
	return 0;
}

static struct share_state *state(struct method_ctx *ctx)
{
	if (!ctx->state)
		ctx->state = xcalloc(1, sizeof(struct share_state));
	return ctx->state;
}

/* The cell's directory name inside the staging root: FNV-1a of the cell id. */
static char *cell_name(const struct method_ctx *ctx)
{
	uint64_t h = 1469598103934665603ull;
	for (const char *p = ctx->cell->id ? ctx->cell->id : ""; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return xasprintf("c%016llx", (unsigned long long)h);
}

/* The staging directory of this cell, with the dataset linked or copied into <staging>/data. */
static int stage_data(struct method_ctx *ctx, struct share_state *s)
{
	_cleanup_close_ int sfd = open_staging(ctx, s);
	if (sfd < 0)
		return -1;
	_cleanup_free_ char *data = xasprintf("%s/data", s->staging);
	return stage_tree(ctx, sfd, "data", data, true);
}

/* virtiofs move: the next run's private copy, made outside its timed phases. */
static bool prestaged_mode(const struct method_ctx *ctx)
{
	return virtiofs(ctx) && ctx->method->archive.format == PLAN_ARCHIVE_NONE &&
	       SO(ctx->method)->mode == SHARE_MOVE;
}

static int share_prepare(struct method_ctx *ctx)
{
	struct share_state *s = state(ctx);
	const struct plan_method *m = ctx->method;
	free(s->guest_src);
	s->guest_src = NULL;
	if (!writable_mode(m)) {
		if (virtiofs(ctx)) {
			_cleanup_free_ char *name = dataset_name(ctx);
			s->guest_src = xasprintf("%s/%s", GUEST_MOUNT, name);
			return 0;
		}
		const char *base = ctx->pds->path ? "" : strrchr(ctx->dataset_dir, '/');
		s->guest_src = xasprintf("%s%s", GUEST_MOUNT, base ? base : "");
		return 0;
	}
	_cleanup_free_ char *name = cell_name(ctx);
	if (m->archive.format == PLAN_ARCHIVE_NONE) {
		if (!s->staged && stage_data(ctx, s) < 0)
			return -1;
		s->staged = false;
		s->guest_src = xasprintf("%s/%s/data", GUEST_MOUNT, name);
		return 0;
	}
	_cleanup_close_ int sfd = open_staging(ctx, s);
	if (sfd < 0)
		return -1;
	const char *ext = share_archive_ext(&m->archive);
	_cleanup_free_ char *leaf = xasprintf("data.%s", ext);
	_cleanup_free_ char *file = xasprintf("%s/%s", s->staging, leaf);
	_cleanup_close_ int fd =
	    openat(sfd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "share: create '%s': %s", file,
				   strerror(errno));
	uint64_t bytes;
	_cleanup_free_ char *err = NULL;
	if (stream_pack(&m->archive, ctx->dataset_dir, ctx->manifest, fd, ctx->timeout_ms, &bytes,
			&err) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "share: packing '%s': %s", file, err);
	uid_t u = 0;
	gid_t g = 0;
	share_owner(ctx, &u, &g);
	if (fchown(fd, u, g) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "share: chown '%s': %s", file,
				   strerror(errno));
	ctx->bytes = bytes;
	s->guest_src = xasprintf("%s/%s/data.%s", GUEST_MOUNT, name, ext);
	return 0;
}

char *share_copy_command(const struct plan_method *m, const char *from, const char *to)
{
	_cleanup_free_ char *src = shell_quote(from);
	_cleanup_free_ char *dst = shell_quote(to);
	if (m->archive.format != PLAN_ARCHIVE_NONE) {
		_cleanup_free_ char *cat = xasprintf("cat %s", src);
		/* a zip on the share is a seekable file already: unzip reads it in place */
		_cleanup_free_ char *unpack = m->archive.format == PLAN_ARCHIVE_ZIP
						  ? xasprintf("unzip -o -q %s -d %s", src, dst)
						  : stream_unpack_command(&m->archive, cat, to);
		_cleanup_free_ char *rm =
		    SO(m)->mode == SHARE_MOVE ? xasprintf("rm -f %s && ", src) : xstrdup("");
		return xasprintf("( %s ) && %ssync", unpack, rm);
	}
	if (SO(m)->mode == SHARE_MOVE)
		/* mv across filesystems: copy, then unlink on the host through the share */
		return xasprintf(
		    "cd %s && for f in * .[!.]* ..?*; do "
		    "if [ -e \"$f\" ] || [ -L \"$f\" ]; then mv -- \"$f\" %s/ || exit 1; fi; "
		    "done && sync",
		    src, dst);
	return xasprintf("cp -a %s/. %s/ && sync", src, dst);
}

/*
 * Mount, copy or move, sync and unmount in one guest command: each guest command costs an
 * agent round trip (guest-exec and its status polls, 20-36 ms for the mount alone under TCG,
 * about 5% of a 64 MiB copy), which the hand-made `mount && cp && umount` does not pay twice.
 * A failed command may leave the share mounted: s->mounted stays set and cleanup unmounts.
 */
static int share_transfer(struct method_ctx *ctx)
{
	struct share_state *s = state(ctx);
	const struct plan_method *m = ctx->method;
	static const char *const cache[] = { "none", "loose", "mmap" };
	_cleanup_free_ char *mount = NULL;
	/* 9p and virtiofs load behind the agent after boot: a mount before that fails */
	if (SO(m)->driver == SHARE_VIRTIOFS) {
		mount = xasprintf(
		    "%smkdir -p " GUEST_MOUNT " && mount -t virtiofs%s " SHARE_TAG " " GUEST_MOUNT,
		    METHOD_GUEST_MODULE_WAIT("virtiofs"), writable_mode(m) ? "" : " -o ro");
	} else {
		_cleanup_free_ char *msize =
		    SO(m)->msize ? xasprintf(",msize=%llu", (unsigned long long)SO(m)->msize)
				 : xstrdup("");
		mount = xasprintf("%smkdir -p " GUEST_MOUNT
				  " && mount -t 9p -o trans=virtio,version=9p2000.L%s,cache=%s%s "
				  "" SHARE_TAG " " GUEST_MOUNT,
				  METHOD_GUEST_MODULE_WAIT("9p"), msize, cache[SO(m)->cache],
				  writable_mode(m) ? "" : ",ro");
	}
	_cleanup_free_ char *copy = share_copy_command(m, s->guest_src, ctx->landing);
	_cleanup_free_ char *all =
	    xasprintf("%s && { %s; } && cd / && umount " GUEST_MOUNT, mount, copy);
	s->mounted = true;
	if (method_guest_sh(ctx, SO(m)->mode == SHARE_MOVE ? "share: move" : "share: copy", all,
			    NULL) < 0)
		return -1;
	s->mounted = false;
	return 0;
}

static int share_cleanup(struct method_ctx *ctx)
{
	struct share_state *s = state(ctx);
	if (s->mounted && ctx->guest && !run_interrupted()) {
		_cleanup_free_ char *out = NULL;
		/* best effort: a failed run may have left it mounted */
		if (method_guest_sh(ctx, "share: unmount", "cd / && umount " GUEST_MOUNT, &out) < 0)
			method_error_clear(&ctx->err);
	}
	s->mounted = false;
	if (s->staging)
		rm_tree(s->staging, NULL);
	/* the next run's private copy now, in this phase, which is not part of any total */
	if (prestaged_mode(ctx) && !run_interrupted()) {
		if (stage_data(ctx, s) == 0)
			s->staged = true;
		else
			method_error_clear(&ctx->err); /* prepare tries again, in its own time */
	}
	return 0;
}

static void share_free_state(struct method_ctx *ctx)
{
	struct share_state *s = ctx->state;
	if (s) {
		if (s->staging)
			rm_tree(s->staging, NULL);
		free(s->staging);
		free(s->guest_src);
		free(s);
	}
	ctx->state = NULL;
}

const struct method_ops method_share = {
	.name = "share",
	.summary = "a host folder",
	.options = &share_keys,
	.archive = true,
	.needs = SHARE_NEEDS,
	.rules = share_rules,
	.n_rules = SHARE_N_RULES,
	.driver = share_driver,
	.supports = share_supports,
	.add_devices = share_add_devices,
	.prepare = share_prepare,
	.transfer = share_transfer,
	.cleanup = share_cleanup,
	.free_state = share_free_state,
};
