/* SPDX-License-Identifier: MIT */
/*
 * disk-image: build an image holding the dataset on the host without root or mounting (ext4 with
 * `mke2fs -d`, ISO 9660 with libarchive's writer; raw, or converted to qcow2), hot-plug it
 * read-only, mount it in the guest, copy to the landing directory and sync, unplug.
 * `in_place: true` reads the data where it is on the mounted image instead of copying it, and
 * verifies it there.
 *
 *   prepare   build the image
 *   transfer  attach (hot-plug; the guest waits for the device in the command that mounts it),
 *             mount, copy (in_place: read everything)
 *   finalize  sync, unmount, detach (in_place: nothing; the image stays mounted for verify)
 *   cleanup   unmount and detach when still there, delete the image
 *
 * metrics: write_throughput (copy mode) = payload bytes / seconds of the copy (the guest's
 * clock, /proc/uptime in 10 ms steps, around the cp) plus the sync in finalize (as the host
 * times it) (hot-plug, mount and unplug not counted); read_throughput (in_place) = payload
 * bytes / seconds of reading every file of the mounted image (the guest's clock likewise).
 *
 * mke2fs -d and mcopy read the tree by path. A `path:` dataset's tree may be written by others
 * while ferry runs, so those tools read a private snapshot instead, made once per cell before
 * anything is timed (add_devices): hard links to the very inodes the scan hashed (a copy across
 * filesystems), in a directory only ferry writes. ISO 9660 reads through descriptors already.
 */
#include <archive.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>

#include "fs.h"
#include "machine.h"
#include "proc.h"
#include "util.h"
#include "archive.h"
#include "disk-image.h"
#include "method.h"
#include "rules.h"

#define SRC_MNT "/mnt/ferry-src"

static const struct key_def di_defs[] = {
	{ .name = "filesystem",
	  .type = KEY_ENUM,
	  .offset = offsetof(struct di_opts, filesystem),
	  .def = "ext4",
	  .values = (const char *const[]){ "ext4", "iso9660", "vfat", NULL },
	  .help = "filesystem of the image built on the host" },
	{ .name = "image_format",
	  .type = KEY_ENUM,
	  .offset = offsetof(struct di_opts, image_format),
	  .def = "raw",
	  .values = plan_format_values,
	  .help = "format of the image built on the host" },
	{ .name = "bus",
	  .type = KEY_ENUM,
	  .offset = offsetof(struct di_opts, image_bus),
	  .def = "virtio",
	  .values = plan_bus_values,
	  .help = "bus the image is hot-plugged on; only virtio and scsi can be hot-plugged" },
	{ .name = "in_place",
	  .type = KEY_BOOL,
	  .offset = offsetof(struct di_opts, in_place),
	  .def = "false",
	  .help = "read the data where it is on the attached image instead of copying it" },
};
METHOD_OPTIONS(di_keys, "disk-image", struct di_opts, di_defs);

#define OPTS(ctx) METHOD_OPTS((ctx)->method, struct di_opts)

/* ---- its rules ---- */

static void hotplug_bus(const struct rule_subject *s, struct rule_out *o)
{
	enum plan_bus b = METHOD_OPTS(s->method, struct di_opts)->image_bus;
	if (b != PLAN_BUS_SATA && b != PLAN_BUS_IDE)
		return;
	const char *bus = b == PLAN_BUS_SATA ? "sata" : "ide";
	if (plan_rule_at_run(o))
		plan_rule_fail(
		    o, "bus",
		    "%s disks cannot be hot-plugged (QEMU/libvirt): disk-image needs bus "
		    "virtio or scsi",
		    bus);
	else
		plan_rule_fail(
		    o, "bus",
		    "'bus: %s' cannot be used by a disk-image method: it hot-plugs its image, "
		    "and only virtio and scsi disks can be hot-plugged",
		    bus);
}

static void in_place_archive(const struct rule_subject *s, struct rule_out *o)
{
	if (METHOD_OPTS(s->method, struct di_opts)->in_place &&
	    s->method->archive.format != PLAN_ARCHIVE_NONE)
		plan_rule_fail(
		    o, "in_place",
		    "'in_place' reads the files where they are on the image, which an archive "
		    "hides: drop 'archive' or 'in_place'");
}

static void image_archive(const struct rule_subject *s, struct rule_out *o)
{
	if (s->method->archive.format != PLAN_ARCHIVE_NONE)
		plan_rule_fail(
		    o, "archive",
		    "disk-image carries files in its filesystem: archive does not apply");
}

static const struct plan_rule di_rules[] = {
	{ "method.hotplug-bus", RULE_METHOD, RULE_ERROR, RULE_AT_RUN,
	  "a disk-image method on bus sata or ide (no hot-plug)", hotplug_bus },
	{ "method.in-place-archive", RULE_METHOD, RULE_ERROR, 0, "'in_place' with an archive",
	  in_place_archive },
	{ "method.image-archive", RULE_METHOD, RULE_SKIP, 0, "a disk-image method with an archive",
	  image_archive },
};

/* The image it builds in the run directory: the data, an eighth for metadata, 16 MiB slack. */
static uint64_t di_run_dir_bytes(const struct plan_method *m, uint64_t data)
{
	(void)m;
	return data + data / 8 + (UINT64_C(16) << 20);
}

struct di_state {
	unsigned n;  /* images built so far: a new serial each time */
	char *image; /* host path of the current image */
	char serial[DISK_SERIAL_MAX + 1];
	bool attached, mounted;
	double copy_s; /* seconds of this run's copy command (write_throughput) */
	struct disk_config d;
	char *source; /* a private snapshot of a `path:` dataset, or NULL: ctx->dataset_dir */
};

static char *di_supports(const struct method_ctx *ctx)
{
	const struct di_opts *m = OPTS(ctx);
	/* what no host can do: the plan's rules table (runner/plan/rules.c) */
	char *why = plan_rules_skip(ctx->plan, ctx->cell);
	if (why)
		return why;
	if (m->filesystem == DI_FS_VFAT && (!have_program("mkfs.vfat") || !have_program("mcopy")))
		return xstrdup("vfat images need mkfs.vfat (dosfstools) and mcopy (mtools) on the "
			       "host");
	if (m->filesystem == DI_FS_EXT4 && !have_program("mke2fs"))
		return xstrdup("ext4 images need mke2fs (e2fsprogs) on the host");
	return NULL;
}

static struct di_state *state(struct method_ctx *ctx)
{
	if (!ctx->state)
		ctx->state = xcalloc(1, sizeof(struct di_state));
	return ctx->state;
}

/* Bytes an ext4 filesystem needs for the dataset, with room for metadata. */
static uint64_t ext4_size(const struct manifest *m)
{
	uint64_t blocks = 0;
	for (size_t i = 0; i < m->n; i++)
		blocks += (m->entries[i].size + 4095) / 4096 + 1;
	uint64_t s = blocks * 4096 + blocks * 4096 / 8 + (uint64_t)m->n * 512 + (16u << 20);
	return (s + (1u << 20) - 1) & ~(uint64_t)((1u << 20) - 1);
}

static bool link_always(const struct stat *st, void *userdata)
{
	(void)st, (void)userdata;
	return true;
}

/* vfat has no symbolic links and mcopy -s copies what a link points to: a dataset with links
 * is refused (method_refuse_links()); ext4 (mke2fs -d) and ISO 9660 (Rock Ridge) carry the
 * link as a link. */
static int vfat_refuse_links(struct method_ctx *ctx)
{
	return method_refuse_links(ctx, "disk-image: vfat cannot hold symbolic links",
				   "mcopy would copy what they point to, which may be outside the "
				   "dataset; use filesystem ext4 or iso9660, or a dataset without "
				   "links");
}

static int di_add_devices(struct method_ctx *ctx, struct method_boot_needs *needs)
{
	(void)needs;
	if (OPTS(ctx)->filesystem == DI_FS_VFAT && vfat_refuse_links(ctx) < 0)
		return -1;
	if (!ctx->pds->path || OPTS(ctx)->filesystem == DI_FS_ISO9660)
		return 0;
	struct di_state *s = state(ctx);
	if (s->source)
		return 0;
	_cleanup_free_ char *dst = xasprintf("%s/source", ctx->cell_dir);
	struct dataset_copy_opts o = { .may_link = link_always };
	_cleanup_free_ char *err = NULL;
	if (dataset_copy(ctx->dataset_dir, ctx->manifest, dst, &o, NULL, &err) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL,
				   "disk-image: snapshot of the dataset: %s", err);
	s->source = TAKE_PTR(dst);
	return 0;
}

/* What mke2fs and mcopy read. */
static const char *source_dir(struct method_ctx *ctx)
{
	struct di_state *s = state(ctx);
	return s->source ? s->source : ctx->dataset_dir;
}

static int build_iso(struct method_ctx *ctx, const char *path, char **err)
{
	struct archive *w = archive_write_new();
	int rc = 0;
	/* libarchive opens a file name with O_CREAT and follows links: hand it a new file */
	_cleanup_close_ int fd = file_create_new(path, 0644, err);
	if (fd < 0) {
		archive_write_free(w);
		return -1;
	}
	if (archive_write_set_format_iso9660(w) != ARCHIVE_OK ||
	    archive_write_set_format_option(w, "iso9660", "rockridge", "1") < ARCHIVE_WARN ||
	    archive_write_add_filter_none(w) != ARCHIVE_OK ||
	    archive_write_open_fd(w, fd) != ARCHIVE_OK) {
		*err = xasprintf("libarchive: %s", archive_error_string(w));
		rc = -1;
	}
	if (rc == 0)
		rc = pack_entries(w, ctx->dataset_dir, ctx->manifest, err);
	if (archive_write_close(w) != ARCHIVE_OK && rc == 0) {
		*err = xasprintf("libarchive: %s", archive_error_string(w));
		rc = -1;
	}
	archive_write_free(w);
	return rc;
}

/* vfat without root: mkfs.vfat -C makes the image file, mcopy -s copies the tree into it. */
static int build_vfat(struct method_ctx *ctx, const char *path, char **err)
{
	if (vfat_refuse_links(ctx) < 0) {
		*err = xstrdup(ctx->err.message);
		return -1;
	}
	_cleanup_free_ char *kib = xasprintf("%" PRIu64, ext4_size(ctx->manifest) / 1024);
	unlink(path);
	const char *mk[] = { "mkfs.vfat", "-C", path, kib, NULL };
	if (proc_run(mk, NULL, err) < 0)
		return -1;
	/* the top-level entries of the dataset, each copied recursively to the image's root */
	const struct manifest *m = ctx->manifest;
	const char **argv = xcalloc(m->n + 8, sizeof(char *));
	char **own = xcalloc(m->n, sizeof(char *));
	size_t k = 0, n_own = 0;
	argv[k++] = "mcopy";
	argv[k++] = "-s";
	argv[k++] = "-Q";
	argv[k++] = "-i";
	argv[k++] = path;
	for (size_t i = 0; i < m->n; i++) {
		if (strchr(m->entries[i].path, '/'))
			continue;
		own[n_own] = xasprintf("%s/%s", source_dir(ctx), m->entries[i].path);
		argv[k++] = own[n_own++];
	}
	argv[k++] = "::";
	setenv("MTOOLS_SKIP_CHECK", "1", 1);
	int rc = proc_run(argv, NULL, err);
	for (size_t i = 0; i < n_own; i++)
		free(own[i]);
	free(own);
	free(argv);
	return rc;
}

static int di_prepare(struct method_ctx *ctx)
{
	struct di_state *s = state(ctx);
	const struct di_opts *m = OPTS(ctx);
	bool qcow2 = m->image_format == PLAN_FORMAT_QCOW2;
	s->n++;
	free(s->image);
	s->image = xasprintf("%s/image-%u.%s", ctx->cell_dir, s->n, qcow2 ? "qcow2" : "raw");
	_cleanup_free_ char *raw = qcow2 ? xasprintf("%s.raw", s->image) : xstrdup(s->image);
	_cleanup_free_ char *err = NULL;
	if (m->filesystem == DI_FS_ISO9660) {
		if (build_iso(ctx, raw, &err) < 0)
			return method_fail(ctx, ERROR_INFRA, err, "building the ISO 9660 image");
	} else if (m->filesystem == DI_FS_EXT4) {
		_cleanup_free_ char *size =
		    xasprintf("%" PRIu64 "k", ext4_size(ctx->manifest) / 1024);
		_cleanup_free_ char *inodes = xasprintf("%zu", ctx->manifest->n + 64);
		/* mke2fs -F opens its output with O_CREAT, following links: it gets a new file */
		int fd = file_create_new(raw, 0644, &err);
		if (fd < 0)
			return method_fail(ctx, ERROR_INFRA, err, "building the ext4 image");
		close(fd);
		const char *argv[] = { "mke2fs", "-q", "-F",   "-t", "ext4",          "-m",
				       "0",      "-N", inodes, "-d", source_dir(ctx), raw,
				       size,     NULL };
		if (proc_run(argv, NULL, &err) < 0)
			return method_fail(ctx, ERROR_INFRA, err, "building the ext4 image");
	} else if (build_vfat(ctx, raw, &err) < 0) {
		return method_fail(ctx, ERROR_INFRA, err, "building the vfat image");
	}
	if (qcow2) {
		/* qemu-img creates its output with O_CREAT|O_TRUNC: a new file of ferry's first */
		int fd = file_create_new(s->image, 0644, &err);
		if (fd < 0) {
			unlink(raw);
			return method_fail(ctx, ERROR_INFRA, err, "converting the image to qcow2");
		}
		close(fd);
		const char *argv[] = { "qemu-img", "convert", "-q", "-f",     "raw",
				       "-O",       "qcow2",   raw,  s->image, NULL };
		int rc = proc_run(argv, NULL, &err);
		unlink(raw);
		if (rc < 0)
			return method_fail(ctx, ERROR_INFRA, err, "converting the image to qcow2");
	}
	return 0;
}

static const char *fs_type(const struct di_opts *m)
{
	return m->filesystem == DI_FS_ISO9660 ? "iso9660"
	       : m->filesystem == DI_FS_VFAT  ? "vfat"
					      : "ext4";
}

static int di_transfer(struct method_ctx *ctx)
{
	struct di_state *s = state(ctx);
	const struct di_opts *m = OPTS(ctx);
	/* unique in the process: cells share a guest, and a late unplug of another cell's image
	   must never be mistaken for this one */
	static unsigned serials;
	snprintf(s->serial, sizeof(s->serial), "ferry-src-%u", ++serials);
	s->d = (struct disk_config){
		.kind = DISK_KIND_IMAGE,
		.format =
		    m->image_format == PLAN_FORMAT_QCOW2 ? DISK_FORMAT_QCOW2 : DISK_FORMAT_RAW,
		.bus = m->image_bus == PLAN_BUS_SCSI ? DISK_BUS_SCSI : DISK_BUS_VIRTIO,
		.readonly = true,
		.serial = s->serial,
		.path = s->image,
	};
	_cleanup_(machine_err_clear) struct machine_err e = { 0 };
	if (machine_guest_disk_plug(ctx->machine, ctx->guest, &s->d, ctx->timeout_ms, &e) < 0)
		return method_fail_op(ctx, ERROR_INFRA, &e, NULL, "hot-plugging the image: %s",
				      e.msg);
	s->attached = true;
	/* one guest command waits for the device (no agent round trips polling for it from the
	   host), mounts it and copies (in_place: reads every file): each guest command is an agent
	   round trip, ~0.1 s under TCG. The copy's own seconds come from the guest's clock
	   (/proc/uptime, 10 ms steps, read by the shell without a process) around it. */
	_cleanup_free_ char *wait =
	    machine_guest_disk_wait_command(ctx->machine, s->serial, ctx->timeout_ms);
	if (!wait)
		return method_fail(ctx, ERROR_INFRA, NULL, "this machine cannot wait for a disk");
	_cleanup_free_ char *land = shell_quote(ctx->landing);
	_cleanup_free_ char *work =
	    m->in_place ? xstrdup("find " SRC_MNT " -type f -exec cat {} + > /dev/null")
			: xasprintf("cp -a " SRC_MNT "/. %s/ && rm -rf %s/lost+found", land, land);
	const char *mod = m->filesystem == DI_FS_ISO9660 ? "isofs" : fs_type(m);
	_cleanup_free_ char *cmd = xasprintf(
	    "%s" METHOD_GUEST_MODULE_WAIT("%s") "modprobe %s 2>/dev/null; mkdir -p " SRC_MNT
						" && mount -t %s -o ro%s \"/dev/$d\" " SRC_MNT
						" && read -r t0 r < /proc/uptime && %s && "
						"read -r t1 r < /proc/uptime && echo \"$t0 $t1\"",
	    wait, mod, mod, fs_type(m), m->filesystem == DI_FS_EXT4 ? ",noload" : "", work);
	s->mounted = true; /* or not yet, if the command fails early: cleanup tries all the same */
	_cleanup_free_ char *out = NULL;
	if (method_guest_sh(ctx,
			    m->in_place ? "mounting and reading the image in place"
					: "mounting and copying from the image",
			    cmd, &out) < 0)
		return -1;
	double t0 = 0, t1 = 0;
	if (sscanf(out, "%lf %lf", &t0, &t1) != 2 || t1 < t0)
		t0 = t1 = 0; /* no figure (or under the clock's 10 ms): no rate is recorded */
	if (m->in_place)
		method_rate(ctx, "read_throughput", ctx->bytes, t1 - t0);
	else
		s->copy_s = t1 - t0;
	return 0;
}

static int unplug(struct method_ctx *ctx, bool must)
{
	struct di_state *s = state(ctx);
	_cleanup_(machine_err_clear) struct machine_err e = { 0 };
	if (s->mounted) {
		if (ctx->guest) {
			const char *argv[] = { "umount", SRC_MNT, NULL };
			if (machine_guest_run(ctx->machine, ctx->guest, argv, ctx->timeout_ms, NULL,
					      &e) < 0 &&
			    must)
				return method_fail_op(ctx, ERROR_INFRA, &e, e.msg,
						      "unmounting the image");
		}
		s->mounted = false;
	}
	if (s->attached) {
		machine_err_clear(&e);
		s->attached = false;
		if (machine_guest_disk_unplug(ctx->machine, ctx->guest, s->serial, ctx->timeout_ms,
					      &e) < 0 &&
		    must)
			return method_fail_op(ctx, ERROR_INFRA, &e, NULL,
					      "unplugging the image: %s", e.msg);
	}
	return 0;
}

static int di_finalize(struct method_ctx *ctx)
{
	if (OPTS(ctx)->in_place)
		return 0;
	uint64_t t0 = now_ns();
	if (method_guest_sh(ctx, "sync", "sync", NULL) < 0)
		return -1;
	if (state(ctx)->copy_s > 0)
		method_rate(ctx, "write_throughput", ctx->bytes,
			    state(ctx)->copy_s + (double)(now_ns() - t0) / 1e9);
	return unplug(ctx, true);
}

static int di_verify(struct method_ctx *ctx)
{
	bool symlinks = OPTS(ctx)->filesystem != DI_FS_VFAT;
	return method_verify_dir(ctx, OPTS(ctx)->in_place ? SRC_MNT : ctx->landing, symlinks);
}

static int di_cleanup(struct method_ctx *ctx)
{
	struct di_state *s = state(ctx);
	if (ctx->guest && !run_interrupted())
		unplug(ctx, false);
	s->mounted = s->attached = false;
	if (s->image)
		unlink(s->image);
	return 0;
}

static void di_free(struct method_ctx *ctx)
{
	struct di_state *s = ctx->state;
	if (!s)
		return;
	free(s->image);
	if (s->source)
		rm_tree(s->source, NULL);
	free(s->source);
	free(s);
	ctx->state = NULL;
}

const struct method_ops method_disk_image = {
	.name = "disk-image",
	.summary = "attach an image holding it",
	.options = &di_keys,
	.archive = true,
	.needs = { .run_dir_bytes = di_run_dir_bytes },
	.rules = di_rules,
	.n_rules = ELEMENTSOF(di_rules),
	.supports = di_supports,
	.add_devices = di_add_devices,
	.prepare = di_prepare,
	.transfer = di_transfer,
	.finalize = di_finalize,
	.verify = di_verify,
	.cleanup = di_cleanup,
	.free_state = di_free,
};
