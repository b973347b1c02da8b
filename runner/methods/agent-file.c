/* SPDX-License-Identifier: MIT */
/*
 * agent-file: through qemu-guest-agent file writes. Without `archive:` every file goes on its
 * own (guest-file-open/write/close per file, directories made first in one guest command);
 * with `archive:` the dataset is packed by libarchive straight into guest-file-write calls of
 * the method's chunk_size (the plan's; MACHINE_FILE_CHUNK_MAX at most) (no archive on the host's
 * disk), landing in the guest's /tmp (RAM), and unpacked there by busybox in finalize.
 */
#include <string.h>

#include "util.h"
#include "archive.h"
#include "machine.h"
#include "method.h"
#include "rules.h"

#define GUEST_ARCHIVE "/tmp/ferry-agent-archive"

struct af_opts {
	uint64_t set;
	uint64_t chunk_size; /* bytes of file data per guest-file-write */
};

static const struct key_def af_defs[] = {
	{ .name = "chunk_size",
	  .type = KEY_SIZE,
	  .offset = offsetof(struct af_opts, chunk_size),
	  .def = "128KiB",
	  .min = 4096,
	  .max = 128 * 1024,
	  .help = "file data per guest-file-write (libvirt 9.0 corrupts agent commands over about "
		  "175 KB of JSON)" },
};
METHOD_OPTIONS(af_keys, "agent-file", struct af_opts, af_defs);

static char *af_supports(const struct method_ctx *ctx)
{
	/* archives the guest cannot unpack: the plan's rules table (rules.c) */
	return plan_rules_skip(ctx->plan, ctx->cell);
}

/*
 * Raw bytes per guest file write: the plan's chunk_size (af_defs bounds it to
 * MACHINE_FILE_CHUNK_MAX and defaults to it: each command costs a fixed round trip besides its
 * bytes, so the largest chunk libvirt carries safely is the fastest; bench/RESULTS-methods.md).
 */
static size_t chunk(const struct method_ctx *ctx)
{
	uint64_t c = METHOD_OPTS(ctx->method, struct af_opts)->chunk_size;
	return c == 0 || c > MACHINE_FILE_CHUNK_MAX ? MACHINE_FILE_CHUNK_MAX : (size_t)c;
}

static bool packed(const struct method_ctx *ctx)
{
	return ctx->method->archive.format != PLAN_ARCHIVE_NONE;
}

struct sink {
	struct method_ctx *ctx;
	int64_t handle;
	uint64_t bytes;
	struct machine_err e; /* of the failed write */
};

static int sink_write(void *ud, const void *buf, size_t len, char **err)
{
	struct sink *s = ud;
	if (run_interrupted()) {
		*err = xstrdup("interrupted");
		return -1;
	}
	s->bytes += len;
	if (machine_guest_file_write(s->ctx->machine, s->ctx->guest, s->handle, buf, len,
				     chunk(s->ctx), &s->e) < 0) {
		*err = xstrdup(s->e.msg);
		return -1;
	}
	return 0;
}

static char *archive_path(const struct method_ctx *ctx)
{
	return xasprintf(GUEST_ARCHIVE "%s", pack_suffix(&ctx->method->archive));
}

static int transfer_packed(struct method_ctx *ctx)
{
	_cleanup_free_ char *path = archive_path(ctx), *err = NULL;
	_cleanup_(machine_err_clear) struct machine_err oe = { 0 }, ce = { 0 };
	struct sink s = { .ctx = ctx };
	if (machine_guest_file_open(ctx->machine, ctx->guest, path, "w", &s.handle, &oe) < 0)
		return method_fail_op(ctx, ERROR_INFRA, &oe, oe.msg,
				      "cannot open '%s' in the guest", path);
	int rc = pack_stream(&ctx->method->archive, ctx->dataset_dir, ctx->manifest, chunk(ctx),
			     sink_write, &s, &err);
	int crc = machine_guest_file_close(ctx->machine, ctx->guest, s.handle, &ce);
	if (rc < 0) {
		rc = method_fail_op(ctx, ERROR_INFRA, &s.e, err,
				    "streaming the archive into the guest");
		machine_err_clear(&s.e);
		return rc;
	}
	if (crc < 0)
		return method_fail_op(ctx, ERROR_INFRA, &ce, ce.msg, "closing '%s' in the guest",
				      path);
	ctx->bytes = s.bytes;
	return 0;
}

static int transfer_files(struct method_ctx *ctx)
{
	const struct manifest *m = ctx->manifest;
	/* the directories in one guest command, then symlinks and files one by one */
	size_t n_dirs = 0;
	for (size_t i = 0; i < m->n; i++)
		n_dirs += m->entries[i].type == MANIFEST_DIR;
	if (n_dirs) {
		const char **argv = xcalloc(n_dirs + 3, sizeof(char *));
		char **own = xcalloc(n_dirs, sizeof(char *));
		size_t k = 0;
		argv[k++] = "mkdir";
		argv[k++] = "-p";
		for (size_t i = 0; i < m->n; i++)
			if (m->entries[i].type == MANIFEST_DIR) {
				own[k - 2] = xasprintf("%s/%s", ctx->landing, m->entries[i].path);
				argv[k] = own[k - 2];
				k++;
			}
		_cleanup_(machine_err_clear) struct machine_err e = { 0 };
		int rc =
		    machine_guest_run(ctx->machine, ctx->guest, argv, ctx->timeout_ms, NULL, &e);
		for (size_t i = 0; i < n_dirs; i++)
			free(own[i]);
		free(own);
		free(argv);
		if (rc < 0)
			return method_fail_op(ctx, ERROR_INFRA, &e, e.msg,
					      "making the directories");
	}
	_cleanup_free_ char *rerr = NULL;
	_cleanup_close_ int root = dataset_open_root(ctx->dataset_dir, m, &rerr);
	if (root < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "%s", rerr);
	for (size_t i = 0; i < m->n; i++) {
		const struct manifest_entry *e = &m->entries[i];
		if (run_interrupted())
			return method_fail(ctx, ERROR_INFRA, NULL, "interrupted");
		_cleanup_free_ char *dst = xasprintf("%s/%s", ctx->landing, e->path);
		_cleanup_free_ char *err = NULL;
		_cleanup_(machine_err_clear) struct machine_err me = { 0 };
		if (e->type == MANIFEST_SYMLINK) {
			const char *argv[] = { "ln", "-s", "--", e->target, dst, NULL };
			if (machine_guest_run(ctx->machine, ctx->guest, argv, ctx->timeout_ms, NULL,
					      &me) < 0)
				return method_fail_op(ctx, ERROR_INFRA, &me, me.msg, "linking '%s'",
						      e->path);
			continue;
		}
		if (e->type != MANIFEST_FILE)
			continue;
		/* the inode the scan saw, opened below the dataset's descriptor, handed to the
		   agent code through its descriptor (never the dataset path again) */
		_cleanup_close_ int fd = dataset_open_file(root, e, &err);
		if (fd < 0)
			return method_fail(ctx, ERROR_INFRA, NULL, "%s", err);
		char src[64];
		snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
		if (machine_guest_push_file(ctx->machine, ctx->guest, src, dst, chunk(ctx), NULL,
					    &me) < 0)
			return method_fail_op(ctx, ERROR_INFRA, &me, me.msg, "writing '%s'",
					      e->path);
	}
	return 0;
}

static int af_transfer(struct method_ctx *ctx)
{
	return packed(ctx) ? transfer_packed(ctx) : transfer_files(ctx);
}

static int af_finalize(struct method_ctx *ctx)
{
	if (!packed(ctx))
		return method_guest_sh(ctx, "sync", "sync", NULL);
	_cleanup_free_ char *path = archive_path(ctx);
	_cleanup_free_ char *un = pack_guest_unpack_cmd(&ctx->method->archive, path);
	_cleanup_free_ char *land = shell_quote(ctx->landing);
	_cleanup_free_ char *cmd = xasprintf("cd %s && %s && rm -f '%s' && sync", land, un, path);
	return method_guest_sh(ctx, "unpacking the archive", cmd, NULL);
}

static int af_cleanup(struct method_ctx *ctx)
{
	if (!packed(ctx) || !ctx->guest)
		return 0;
	_cleanup_free_ char *path = archive_path(ctx);
	_cleanup_free_ char *cmd = xasprintf("rm -f '%s'", path);
	/* the guest may be gone after a failure: that is not this phase's error */
	_cleanup_(machine_err_clear) struct machine_err e = { 0 };
	machine_guest_sh(ctx->machine, ctx->guest, cmd, 30000, NULL, &e);
	return 0;
}

/* With archive:, the archive in the guest's /tmp (RAM) until finalize unpacks it: at most the
 * files' bytes (each rounded up to 4 KiB in `data`, past tar's 512), a 512-byte header for each
 * and the archive's end (a compressed archive of incompressible data is not larger). */
static uint64_t af_guest_ram_bytes(const struct plan_method *m, uint64_t data, uint64_t files)
{
	uint64_t headers, need;
	if (m->archive.format == PLAN_ARCHIVE_NONE)
		return 0;
	if (!mul_u64(files, 512, &headers) || !add_u64(data, headers, &need) ||
	    !add_u64(need, 10240, &need))
		return UINT64_MAX;
	return need;
}

const struct method_ops method_agentfile = {
	.name = "agent-file",
	.summary = "guest agent file writes",
	.options = &af_keys,
	.archive = true,
	.needs = { .guest_ram_bytes = af_guest_ram_bytes },
	.supports = af_supports,
	.transfer = af_transfer,
	.finalize = af_finalize,
	.cleanup = af_cleanup,
};
