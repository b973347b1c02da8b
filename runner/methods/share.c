/* SPDX-License-Identifier: MIT */
/*
 * share: a host folder exported into the guest over 9p (the SMB share of QEMU) or virtiofs,
 * defined at boot (neither can be hot-plugged). transfer mounts it (9p: msize, cache from the
 * plan), finalize copies or moves into the landing directory, syncs and unmounts.
 *
 * What is shared:
 * - mode copy: the datasets directory itself (the parent of the dataset's cache directory, so
 *   cells with other datasets can share the VM), read-only, accessmode passthrough: QEMU reads
 *   as libvirt-qemu, which the cache's 0755/0644 modes allow. Nothing is prepared per run.
 * - mode move, or any `archive:`: a writable staging directory of the run, owned by libvirt-qemu
 *   so the guest's unlinks work. Accessmode passthrough all the same: a move only reads and
 *   unlinks (what passthrough cannot do as a non-root QEMU is create files with their owner),
 *   and mapped mode would show the host's real symlinks as unreadable (it keeps symlink
 *   targets inside regular files). A move takes the files away, so every
 *   run needs its own copy on the host: prepare fills the staging directory with hard links to
 *   the dataset (the cache is never modified: unlinking a link leaves the original; a plain copy
 *   when the run directory is on another filesystem). With `archive:` prepare packs the dataset
 *   into one archive there instead (prepare = pack), the guest unpacks it from the share, and a
 *   move removes the archive from the share afterwards.
 * driver virtiofs: the same directories, exported by a virtiofsd that libvirt starts as root
 * (vm.c gives the domain the shared memory it needs). libvirt 9.0 refuses a read-only virtiofs
 * share, so mode copy exports the datasets directory writable and the guest mounts it -o ro:
 * the guest is ferry's own, which never writes there. The guest sees the host's owners and
 * modes as they are; a move unlinks as root.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset.h"
#include "fs.h"
#include "run.h"
#include "util.h"
#include "method.h"
#include "archive.h"
#include "stream.h"

#define SHARE_TAG   "ferryshare"
#define GUEST_MOUNT "/mnt/ferry-share"

struct share_state {
	char *staging;   /* host: the cell's staging directory (writable modes), or NULL */
	char *guest_src; /* guest: what to copy from (a directory, or the archive file) */
	bool mounted;
};

static bool writable_mode(const struct plan_method *m)
{
	return m->mode == PLAN_SHARE_MOVE || m->archive.format != PLAN_ARCHIVE_NONE;
}

static const char *archive_ext(const struct plan_archive *a)
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
	if (ctx->cell->vm->os == PLAN_OS_WINDOWS)
		return xstrdup(m->driver == PLAN_SHARE_VIRTIOFS
				   ? "share: virtiofs in Windows needs virtio-win's virtiofs "
				     "service (WinFsp), which ferry does not drive"
				   : "share: 9p needs a Linux guest");
	if (m->driver == PLAN_SHARE_VIRTIOFS && !vm_virtiofsd_path())
		return xstrdup("share: driver virtiofs needs virtiofsd on the host "
			       "(/usr/lib/qemu/virtiofsd or /usr/libexec/virtiofsd), and there "
			       "is none");
	if (m->archive.format != PLAN_ARCHIVE_NONE)
		return pack_guest_support(&m->archive, ctx->cell->vm->guest == PLAN_GUEST_BUILTIN);
	return NULL;
}

/* A staging directory per run directory: equal for every cell, so writable cells share a VM. */
static char *staging_root(struct method_ctx *ctx)
{
	return xasprintf("%s/share", run_dir(ctx->run));
}

static int chown_qemu(const char *path)
{
	struct passwd *pw = getpwnam("libvirt-qemu");
	if (!pw)
		return 0; /* not a Debian libvirt: QEMU may run as root */
	return lchown(path, pw->pw_uid, pw->pw_gid);
}

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
		if (chown_qemu(root) < 0)
			return method_fail(ctx, ERROR_INFRA, NULL, "share: chown '%s': %s", root,
					   strerror(errno));
		needs->share_dir = TAKE_PTR(root);
		needs->share_mode = SHARE_MODE_PASSTHROUGH;
		needs->share_readonly = false;
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
		/* virtiofs: read-only in the guest's mount (see the top) */
		needs->share_readonly = ctx->method->driver == PLAN_SHARE_9P;
	}
	needs->share_driver =
	    ctx->method->driver == PLAN_SHARE_VIRTIOFS ? SHARE_DRIVER_VIRTIOFS : SHARE_DRIVER_9P;
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

/* Hard-link (or copy) every entry of the manifest from src into dst (which must not exist). */
static int link_tree(struct method_ctx *ctx, const char *src, const char *dst)
{
	if (mkdir(dst, 0755) < 0 || chown_qemu(dst) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "share: mkdir '%s': %s", dst,
				   strerror(errno));
	const struct manifest *m = ctx->manifest;
	for (size_t i = 0; i < m->n; i++) {
		const struct manifest_entry *e = &m->entries[i];
		_cleanup_free_ char *from = xasprintf("%s/%s", src, e->path);
		_cleanup_free_ char *to = xasprintf("%s/%s", dst, e->path);
		int r = 0;
		switch (e->type) {
		case MANIFEST_DIR:
			r = mkdir(to, 0755);
			if (r == 0)
				r = chown_qemu(to);
			break;
		case MANIFEST_SYMLINK:
			r = symlink(e->target, to);
			if (r == 0)
				r = chown_qemu(to);
			break;
		case MANIFEST_FILE:
			r = link(from, to);
			if (r < 0 && (errno == EXDEV || errno == EPERM || errno == EMLINK)) {
				_cleanup_free_ char *err = NULL;
				_cleanup_close_ int out =
				    open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
				const struct manifest one = { .entries = (struct manifest_entry *)e,
							      .n = 1 };
				uint64_t n;
				if (out < 0 || stream_concat(src, &one, out, ctx->timeout_ms, &n,
							     NULL, &err) < 0)
					return method_fail(ctx, ERROR_INFRA, NULL,
							   "share: copy to '%s': %s", to,
							   err ? err : strerror(errno));
				r = chown_qemu(to);
			}
			break;
		}
		if (r < 0)
			return method_fail(ctx, ERROR_INFRA, NULL, "share: '%s': %s", to,
					   strerror(errno));
	}
	return 0;
}

static int share_prepare(struct method_ctx *ctx)
{
	struct share_state *s = state(ctx);
	const struct plan_method *m = ctx->method;
	free(s->guest_src);
	s->guest_src = NULL;
	if (!writable_mode(m)) {
		const char *base = ctx->pds->path ? "" : strrchr(ctx->dataset_dir, '/');
		s->guest_src = xasprintf("%s%s", GUEST_MOUNT, base ? base : "");
		return 0;
	}
	_cleanup_free_ char *root = staging_root(ctx);
	_cleanup_free_ char *name = cell_name(ctx);
	if (!s->staging)
		s->staging = xasprintf("%s/%s", root, name);
	/* a previous run's leftovers (a failed move leaves half the files) */
	if (rm_tree(s->staging, NULL) < 0 && errno != ENOENT)
		return method_fail(ctx, ERROR_INFRA, NULL, "share: cannot empty '%s': %s",
				   s->staging, strerror(errno));
	if (m->archive.format == PLAN_ARCHIVE_NONE) {
		_cleanup_free_ char *data = xasprintf("%s/data", s->staging);
		if (mkdir(s->staging, 0755) < 0 || chown_qemu(s->staging) < 0)
			return method_fail(ctx, ERROR_INFRA, NULL, "share: mkdir '%s': %s",
					   s->staging, strerror(errno));
		if (link_tree(ctx, ctx->dataset_dir, data) < 0)
			return -1;
		s->guest_src = xasprintf("%s/%s/data", GUEST_MOUNT, name);
		return 0;
	}
	if (mkdir(s->staging, 0755) < 0 || chown_qemu(s->staging) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "share: mkdir '%s': %s", s->staging,
				   strerror(errno));
	const char *ext = archive_ext(&m->archive);
	_cleanup_free_ char *file = xasprintf("%s/data.%s", s->staging, ext);
	_cleanup_close_ int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "share: create '%s': %s", file,
				   strerror(errno));
	uint64_t bytes;
	_cleanup_free_ char *err = NULL;
	if (stream_pack(&m->archive, ctx->dataset_dir, ctx->manifest, fd, ctx->timeout_ms, &bytes,
			&err) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "share: packing '%s': %s", file, err);
	if (fchown(fd, 0, 0) < 0 || chown_qemu(file) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "share: chown '%s': %s", file,
				   strerror(errno));
	ctx->bytes = bytes;
	s->guest_src = xasprintf("%s/%s/data.%s", GUEST_MOUNT, name, ext);
	return 0;
}

static int share_transfer(struct method_ctx *ctx)
{
	struct share_state *s = state(ctx);
	const struct plan_method *m = ctx->method;
	static const char *const cache[] = { "none", "loose", "mmap" };
	_cleanup_free_ char *cmd = NULL;
	/* 9p and virtiofs load behind the agent after boot: a mount before that fails (no wait
	   later on) */
	if (m->driver == PLAN_SHARE_VIRTIOFS) {
		cmd = xasprintf(METHOD_GUEST_MODULES_WAIT "mkdir -p " GUEST_MOUNT
							  " && mount -t virtiofs%s " SHARE_TAG
							  " " GUEST_MOUNT,
				writable_mode(m) ? "" : " -o ro");
	} else {
		_cleanup_free_ char *msize =
		    m->msize ? xasprintf(",msize=%llu", (unsigned long long)m->msize) : xstrdup("");
		cmd = xasprintf(METHOD_GUEST_MODULES_WAIT
				"mkdir -p " GUEST_MOUNT
				" && mount -t 9p -o trans=virtio,version=9p2000.L%s,cache=%s%s "
				"" SHARE_TAG " " GUEST_MOUNT,
				msize, cache[m->cache], writable_mode(m) ? "" : ",ro");
	}
	if (method_guest_sh(ctx, "share: mount", cmd, NULL) < 0)
		return -1;
	s->mounted = true;
	return 0;
}

static int share_finalize(struct method_ctx *ctx)
{
	struct share_state *s = state(ctx);
	const struct plan_method *m = ctx->method;
	_cleanup_free_ char *src = method_shell_quote(s->guest_src);
	_cleanup_free_ char *dst = method_shell_quote(ctx->landing);
	_cleanup_free_ char *cmd = NULL;
	if (m->archive.format != PLAN_ARCHIVE_NONE) {
		_cleanup_free_ char *cat = xasprintf("cat %s", src);
		/* a zip on the share is a seekable file already: unzip reads it in place */
		_cleanup_free_ char *unpack =
		    m->archive.format == PLAN_ARCHIVE_ZIP
			? xasprintf("unzip -o -q %s -d %s", src, dst)
			: stream_unpack_command(&m->archive, cat, ctx->landing);
		_cleanup_free_ char *rm =
		    m->mode == PLAN_SHARE_MOVE ? xasprintf("rm -f %s && ", src) : xstrdup("");
		cmd = xasprintf("( %s ) && %ssync", unpack, rm);
	} else if (m->mode == PLAN_SHARE_MOVE) {
		/* mv across filesystems: copy, then unlink on the host through the share */
		cmd = xasprintf(
		    "cd %s && for f in * .[!.]* ..?*; do "
		    "if [ -e \"$f\" ] || [ -L \"$f\" ]; then mv \"$f\" %s/ || exit 1; fi; "
		    "done && sync",
		    src, dst);
	} else {
		cmd = xasprintf("cp -a %s/. %s/ && sync", src, dst);
	}
	if (method_guest_sh(ctx, m->mode == PLAN_SHARE_MOVE ? "share: move" : "share: copy", cmd,
			    NULL) < 0)
		return -1;
	if (method_guest_sh(ctx, "share: unmount", "cd / && umount " GUEST_MOUNT, NULL) < 0)
		return -1;
	s->mounted = false;
	return 0;
}

static int share_cleanup(struct method_ctx *ctx)
{
	struct share_state *s = state(ctx);
	if (s->mounted && ctx->dom && !run_interrupted()) {
		_cleanup_free_ char *out = NULL;
		/* best effort: a failed run may have left it mounted */
		if (method_guest_sh(ctx, "share: unmount", "cd / && umount " GUEST_MOUNT, &out) < 0)
			method_error_clear(&ctx->err);
	}
	s->mounted = false;
	if (s->staging)
		rm_tree(s->staging, NULL);
	return 0;
}

static void share_free_state(struct method_ctx *ctx)
{
	struct share_state *s = ctx->state;
	if (s) {
		free(s->staging);
		free(s->guest_src);
		free(s);
	}
	ctx->state = NULL;
}

const struct method_ops method_share = {
	.name = "share",
	.type = PLAN_METHOD_SHARE,
	.supports = share_supports,
	.add_devices = share_add_devices,
	.prepare = share_prepare,
	.transfer = share_transfer,
	.finalize = share_finalize,
	.cleanup = share_cleanup,
	.free_state = share_free_state,
};
