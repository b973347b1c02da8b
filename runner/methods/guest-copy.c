/* SPDX-License-Identifier: MIT */
/*
 * guest-copy: a copy inside the guest from one of its disks to another, as a user copies from
 * /home onto a second disk and back (study 001). The guest has a source disk besides the target:
 * an ext4 image the host builds with the dataset in its folder `data` (mke2fs -d, untimed,
 * sized for the dataset, and for a second copy of it in the read direction), hot-plugged
 * read-write on virtio. The timed copy runs in the guest, disk to disk; nothing crosses the
 * host's channels while it runs.
 *
 *   direction write: source disk -> target disk (the target's landing directory)
 *   direction read:  the data is put on the target first (untimed), then target -> the source
 *                    disk's folder `back`
 *   tool cp: `cp -a FROM/. TO/`; tool tar: `tar -C FROM -cf - . | tar -C TO -xf -`
 *
 * Untimed, before prepare (in no phase and no total): build the source image (once per run:
 * every run starts from the same image), hot-plug it, mount it; for read, copy the data onto the
 * target and sync; then, when the plan drops caches (run.caches drop, not for warmups), drop
 * the guest's page cache and the host's (machine_drop_caches()), since the staging refilled them.
 * prepare: none. transfer: the copy and a sync, as one guest command timed by the guest's own
 *   clock (method_guest_timed_sh): guest_write_time or guest_read_time, and bytes over it as
 *   guest_write_throughput or guest_read_throughput; the transfer phase is the host's time of
 *   the same command. finalize: none.
 * verify: every byte where the copy landed (write: the landing directory; read: the source
 *   disk's `back`), as the executor's default verify does.
 * cleanup: unmount and unplug the source disk, delete its image (after an interrupt the image
 *   only: the domain goes with the run).
 *
 * mke2fs -d reads the tree by path: it reads a private snapshot under the cell's directory, hard
 * links to the dataset's inodes (a copy across filesystems), made once per cell (add_devices),
 * as disk-image does for `path:` datasets.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"
#include "machine.h"
#include "proc.h"
#include "util.h"
#include "method.h"
#include "rules.h"

#define SRC_MNT  "/mnt/ferry-gc-src"
#define SRC_DATA SRC_MNT "/data"
#define SRC_BACK SRC_MNT "/back"

enum gc_direction { GC_WRITE, GC_READ };
enum gc_tool { GC_CP, GC_TAR };

struct gc_opts {
	uint64_t set;
	enum gc_direction direction;
	enum gc_tool tool;
};

static const struct key_def gc_defs[] = {
	{ .name = "direction",
	  .type = KEY_ENUM,
	  .offset = offsetof(struct gc_opts, direction),
	  .def = "write",
	  .values = (const char *const[]){ "write", "read", NULL },
	  .help = "write: from the source disk onto the target disk; read: the data is put on the "
		  "target first (untimed), then copied from it back onto the source disk" },
	{ .name = "tool",
	  .type = KEY_ENUM,
	  .offset = offsetof(struct gc_opts, tool),
	  .def = "cp",
	  .values = (const char *const[]){ "cp", "tar", NULL },
	  .help = "what copies in the guest: cp -a, or tar piped into tar" },
};
METHOD_OPTIONS(gc_keys, "guest-copy", struct gc_opts, gc_defs);

#define OPTS(ctx) METHOD_OPTS((ctx)->method, struct gc_opts)

/* The ext4 image it builds in the run directory: the data (twice for read, whose copy lands on
 * it), an eighth for metadata, 16 MiB slack (image_size() below, without the per-file rounding
 * a manifest gives). */
static uint64_t gc_run_dir_bytes(const struct plan_method *m, uint64_t data)
{
	uint64_t k = METHOD_OPTS(m, struct gc_opts)->direction == GC_READ ? 2 : 1;
	return k * (data + data / 8) + (UINT64_C(16) << 20);
}

struct gc_state {
	unsigned n;  /* images built so far */
	char *tree;  /* cell_dir/gc-source: holds `data`, the snapshot mke2fs -d reads */
	char *image; /* the current image, or NULL */
	char serial[DISK_SERIAL_MAX + 1];
	bool attached, mounted;
	struct disk_config d;
};

static struct gc_state *state(struct method_ctx *ctx)
{
	if (!ctx->state)
		ctx->state = xcalloc(1, sizeof(struct gc_state));
	return ctx->state;
}

static char *gc_supports(const struct method_ctx *ctx)
{
	char *why = plan_rules_skip(ctx->plan, ctx->cell);
	if (why)
		return why;
	if (!have_program("mke2fs"))
		return xstrdup("guest-copy builds its source disk with mke2fs (e2fsprogs), which "
			       "this host lacks");
	return NULL;
}

static bool link_always(const struct stat *st, void *userdata)
{
	(void)st, (void)userdata;
	return true;
}

/* The snapshot mke2fs -d reads, once per cell: TREE/data holds the dataset. */
static int gc_add_devices(struct method_ctx *ctx, struct method_boot_needs *needs)
{
	(void)needs;
	struct gc_state *s = state(ctx);
	if (s->tree)
		return 0;
	_cleanup_free_ char *tree = xasprintf("%s/gc-source", ctx->cell_dir);
	_cleanup_free_ char *dst = xasprintf("%s/data", tree);
	_cleanup_free_ char *err = NULL;
	if (mkdir(tree, 0755) < 0 && errno != EEXIST)
		return method_fail(ctx, ERROR_INFRA, NULL, "guest-copy: '%s': %s", tree,
				   strerror(errno));
	struct dataset_copy_opts o = { .may_link = link_always };
	if (dataset_copy(ctx->dataset_dir, ctx->manifest, dst, &o, NULL, &err) < 0) {
		rm_tree(tree, NULL);
		return method_fail(ctx, ERROR_INFRA, NULL,
				   "guest-copy: snapshot of the dataset: %s", err);
	}
	s->tree = TAKE_PTR(tree);
	return 0;
}

/* Bytes of the source filesystem: the dataset's 4 KiB blocks (k copies of them), an eighth for
 * metadata, 512 bytes per entry, 16 MiB slack; MiB-aligned. */
static uint64_t image_size(const struct manifest *m, uint64_t k)
{
	uint64_t blocks = 0;
	for (size_t i = 0; i < m->n; i++)
		blocks += (m->entries[i].size + 4095) / 4096 + 1;
	uint64_t s = k * (blocks * 4096 + blocks * 4096 / 8 + (uint64_t)m->n * 512) + (16u << 20);
	return (s + (1u << 20) - 1) & ~(uint64_t)((1u << 20) - 1);
}

static int build_image(struct method_ctx *ctx)
{
	struct gc_state *s = state(ctx);
	if (!s->tree && gc_add_devices(ctx, NULL) < 0)
		return -1;
	uint64_t k = OPTS(ctx)->direction == GC_READ ? 2 : 1;
	free(s->image);
	s->image = xasprintf("%s/gc-source-%u.raw", ctx->cell_dir, ++s->n);
	_cleanup_free_ char *err = NULL;
	/* mke2fs -F opens its output with O_CREAT, following links: it gets a new file */
	int fd = file_create_new(s->image, 0644, &err);
	if (fd < 0) {
		free(s->image);
		s->image = NULL;
		return method_fail(ctx, ERROR_INFRA, err, "guest-copy: building the source disk");
	}
	close(fd);
	_cleanup_free_ char *size = xasprintf("%" PRIu64 "k", image_size(ctx->manifest, k) / 1024);
	_cleanup_free_ char *inodes = xasprintf("%zu", k * ctx->manifest->n + 64);
	const char *argv[] = { "mke2fs", "-q",   "-F", "-t",    "ext4",   "-m", "0",
			       "-N",     inodes, "-d", s->tree, s->image, size, NULL };
	if (proc_run(argv, NULL, &err) < 0)
		return method_fail(ctx, ERROR_INFRA, err, "guest-copy: building the source disk");
	return 0;
}

/* Plug the image, mount it on SRC_MNT (and make SRC_BACK for read), in one guest command. */
static int plug_source(struct method_ctx *ctx)
{
	struct gc_state *s = state(ctx);
	/* unique in the process: a late unplug of another cell's disk is never this one */
	static unsigned serials;
	snprintf(s->serial, sizeof(s->serial), "ferry-gcsrc-%u", ++serials);
	s->d = (struct disk_config){
		.kind = DISK_KIND_IMAGE,
		.format = DISK_FORMAT_RAW,
		.bus = DISK_BUS_VIRTIO,
		.serial = s->serial,
		.path = s->image,
	};
	_cleanup_(machine_err_clear) struct machine_err e = { 0 };
	if (machine_guest_disk_plug(ctx->machine, ctx->guest, &s->d, ctx->timeout_ms, &e) < 0)
		return method_fail_op(ctx, ERROR_INFRA, &e, NULL,
				      "guest-copy: hot-plugging the source disk: %s", e.msg);
	s->attached = true;
	_cleanup_free_ char *wait =
	    machine_guest_disk_wait_command(ctx->machine, s->serial, ctx->timeout_ms);
	if (!wait)
		return method_fail(ctx, ERROR_INFRA, NULL, "this machine cannot wait for a disk");
	_cleanup_free_ char *cmd = xasprintf(
	    "%s" METHOD_GUEST_MODULE_WAIT("ext4") "modprobe ext4 2>/dev/null; mkdir -p " SRC_MNT
						  " && mount -t ext4 \"/dev/$d\" " SRC_MNT "%s",
	    wait, OPTS(ctx)->direction == GC_READ ? " && mkdir " SRC_BACK : "");
	s->mounted = true; /* or not yet, if the command fails early: cleanup tries all the same */
	return method_guest_sh(ctx, "guest-copy: mounting the source disk", cmd, NULL);
}

/* The copy from `from` into `to` (guest directories, both existing), then a sync. */
static char *copy_command(const struct method_ctx *ctx, const char *from, const char *to)
{
	_cleanup_free_ char *f = shell_quote(from), *t = shell_quote(to);
	if (OPTS(ctx)->tool == GC_TAR)
		return xasprintf(METHOD_SH_PIPEFAIL "tar -C %s -cf - . | tar -C %s -xf - && sync",
				 f, t);
	return xasprintf("cp -a %s/. %s/ && sync", f, t);
}

static int gc_before_phase(struct method_ctx *ctx, enum result_phase p)
{
	if (p != PHASE_PREPARE)
		return 0;
	if (build_image(ctx) < 0 || plug_source(ctx) < 0)
		return -1;
	if (OPTS(ctx)->direction == GC_READ) {
		_cleanup_free_ char *cmd = copy_command(ctx, SRC_DATA, ctx->landing);
		if (method_guest_sh(ctx, "guest-copy: putting the data on the target", cmd, NULL) <
		    0)
			return -1;
	}
	if (ctx->warmup || ctx->cell->run.caches != PLAN_CACHES_DROP)
		return 0;
	_cleanup_free_ char *err = NULL;
	if (machine_drop_caches(ctx->machine, ctx->guest, &err) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "guest-copy: dropping the caches: %s",
				   err);
	return 0;
}

static int gc_transfer(struct method_ctx *ctx)
{
	bool rd = OPTS(ctx)->direction == GC_READ;
	_cleanup_free_ char *cmd = rd ? copy_command(ctx, ctx->landing, SRC_BACK)
				      : copy_command(ctx, SRC_DATA, ctx->landing);
	double guest_s = 0;
	if (method_guest_timed_sh(ctx,
				  rd ? "guest-copy: read (target to source disk)"
				     : "guest-copy: write (source to target disk)",
				  cmd, NULL, &guest_s) < 0)
		return -1;
	method_metric(ctx, rd ? "guest_read_time" : "guest_write_time", guest_s);
	method_rate(ctx, rd ? "guest_read_throughput" : "guest_write_throughput", ctx->bytes,
		    guest_s);
	return 0;
}

static int gc_verify(struct method_ctx *ctx)
{
	return method_verify_dir(ctx, OPTS(ctx)->direction == GC_READ ? SRC_BACK : ctx->landing,
				 true);
}

static int gc_cleanup(struct method_ctx *ctx)
{
	struct gc_state *s = state(ctx);
	_cleanup_(machine_err_clear) struct machine_err e = { 0 };
	if (ctx->guest && !run_interrupted()) {
		if (s->mounted) {
			const char *argv[] = { "/bin/sh", "-c",
					       "if grep -q ' " SRC_MNT " ' /proc/mounts; then "
					       "umount " SRC_MNT "; fi; rmdir " SRC_MNT
					       " 2>/dev/null; :",
					       NULL };
			machine_guest_run(ctx->machine, ctx->guest, argv, ctx->timeout_ms, NULL,
					  &e);
			machine_err_clear(&e);
		}
		if (s->attached)
			machine_guest_disk_unplug(ctx->machine, ctx->guest, s->serial,
						  ctx->timeout_ms, &e);
	}
	s->mounted = s->attached = false;
	if (s->image) {
		unlink(s->image);
		free(s->image);
		s->image = NULL;
	}
	return 0;
}

static void gc_free(struct method_ctx *ctx)
{
	struct gc_state *s = ctx->state;
	if (!s)
		return;
	free(s->image);
	if (s->tree)
		rm_tree(s->tree, NULL);
	free(s->tree);
	free(s);
	ctx->state = NULL;
}

const struct method_ops method_guest_copy = {
	.name = "guest-copy",
	.summary = "copy inside the guest, from a source disk to the target or back",
	.options = &gc_keys,
	.needs = { .disk_kinds = 1u << PLAN_DISK_IMAGE,
		   .disk_why = "copies from one disk of the guest to another",
		   .run_dir_bytes = gc_run_dir_bytes },
	.supports = gc_supports,
	.add_devices = gc_add_devices,
	.before_phase = gc_before_phase,
	.transfer = gc_transfer,
	.verify = gc_verify,
	.cleanup = gc_cleanup,
	.free_state = gc_free,
};
