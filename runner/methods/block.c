/* SPDX-License-Identifier: MIT */
/*
 * block: raw device throughput, for disk bus and cache comparisons. The dataset's file bytes,
 * concatenated in manifest order, are written to the raw target device with direct I/O and read
 * back with direct I/O (GNU dd, oflag/iflag=direct).
 *
 * Untimed (before_phase, in no phase and no total), so that the bus and cache are what is timed:
 *   before the write: unmount the target (the executor re-creates its filesystem before the
 *   next run) and stage the stream in guest RAM (a tmpfs) through ferry's virtio-serial port,
 *   so that the write measures the disk and not the pipe that feeds it; the host hashes the
 *   stream as it sends it.
 *   before the read-back: flush and evict the host's cached pages of the target image
 *   (fdatasync + POSIX_FADV_DONTNEED on the image file), so that the read-back of a
 *   cache=writeback or cache=unsafe disk comes from the host's disk and not from the host page
 *   cache that the write just filled; the pages still resident afterwards (mincore) are
 *   recorded in observed.read_back.host_cached_bytes. The guest reads with O_DIRECT, so its
 *   own page cache is bypassed. With cache=none and directsync QEMU opens the image with
 *   O_DIRECT and the host cache holds nothing of it anyway.
 * prepare: none (recorded as 0).
 * transfer: dd the staged bytes to the device, block_size per write, direct I/O, fsync at the
 *   end (so the host cache mode counts: writeback flushes to the host disk on the guest's
 *   flush, unsafe ignores flushes and leaves the bytes in host RAM); the last block is padded
 *   with zeros. queue_depth > 1 splits the device range into that many slices written by
 *   parallel dd processes: dd has one request in flight, so the queue depth is the number of
 *   writers.
 * finalize: read the written blocks back with direct I/O (the same slices).
 * metrics: write_throughput = stream bytes / seconds of the transfer's dd command (as the host
 *   sees the guest command: direct I/O and the final fsync included, the zero padding of the
 *   last block not counted); read_throughput = stream bytes / seconds of the read-back.
 *   guest_write_time / guest_read_time: the seconds dd itself reports for the same commands
 *   (GNU coreutils' dd, BLOCK_DD; its clock starts after its files are open and stops after the
 *   fsync, so neither the agent's round trip, the host's 2-64 ms polling, the shell nor dd's own
 *   process start and exit are in it; with queue_depth > 1, the slowest writer's); and
 *   guest_write_throughput / guest_read_throughput are the bytes dd reports (the padded last
 *   block included; all writers' summed) over those seconds: the study's "dd MB/s with direct
 *   I/O", dd's own figure. A dd whose report is missing or unparsable fails the run.
 * verify (the method's own): read back once more and compare the SHA-256 of the stream's bytes
 *   with the host's; the executor's file listing does not apply to a raw device.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run.h"
#include "util.h"
#include "channel.h"
#include "guestproc.h"
#include "machine.h"
#include "method.h"
#include "stream.h"
#include "rules.h"

struct block_opts {
	uint64_t set;
	uint64_t block_size;  /* bytes per direct I/O request */
	uint64_t queue_depth; /* requests in flight: parallel dd processes */
};

static const struct key_def block_defs[] = {
	{ .name = "block_size",
	  .type = KEY_SIZE,
	  .offset = offsetof(struct block_opts, block_size),
	  .def = "1MiB",
	  .min = 512,
	  .max = UINT64_C(64) << 20,
	  .help = "bytes per direct I/O request (a multiple of 512)" },
	{ .name = "queue_depth",
	  .type = KEY_UINT,
	  .offset = offsetof(struct block_opts, queue_depth),
	  .def = "1",
	  .min = 1,
	  .max = 1024,
	  .help = "requests in flight" },
};
METHOD_OPTIONS(block_keys, "block", struct block_opts, block_defs);

#define OPTS(ctx) METHOD_OPTS((ctx)->method, struct block_opts)

static void block_size_rule(const struct rule_subject *s, struct rule_out *o)
{
	uint64_t bs = METHOD_OPTS(s->method, struct block_opts)->block_size;
	if (bs % 512 == 0 && bs)
		return;
	if (plan_rule_at_run(o))
		plan_rule_fail(o, "block_size",
			       "block: block_size %" PRIu64
			       " is not a multiple of 512 bytes (direct "
			       "I/O needs aligned requests)",
			       bs);
	else
		plan_rule_fail(o, "block_size",
			       "'block_size' must be a multiple of 512 for direct I/O");
}

static const struct plan_rule block_rules[] = {
	{ "method.block-size", RULE_METHOD, RULE_ERROR, RULE_AT_RUN,
	  "'block_size' a multiple of 512", block_size_rule },
};

#define STAGE_DIR  "/run/ferry-block"
#define STAGE_FILE STAGE_DIR "/stream"

struct block_state {
	int fd;
	uint64_t bytes;   /* stream length */
	uint64_t nblocks; /* blocks of block_size, the last one padded */
	unsigned char sha[32];
	bool staged;
};

static struct block_state *state(struct method_ctx *ctx)
{
	if (!ctx->state) {
		struct block_state *s = xcalloc(1, sizeof(*s));
		s->fd = -1;
		ctx->state = s;
	}
	return ctx->state;
}

static char *block_supports(const struct method_ctx *ctx)
{
	const struct block_opts *m = OPTS(ctx);
	if (!ctx->disk)
		return xstrdup("block: writes a raw device and needs an image disk, not tmpfs");
	/* Windows guests, tmpfs disks, block_size: the plan's rules table (rules.c) */
	char *why = plan_rules_skip(ctx->plan, ctx->cell);
	if (why)
		return why;
	if (ctx->manifest) {
		uint64_t need =
		    (ctx->manifest->bytes + m->block_size - 1) / m->block_size * m->block_size;
		if (need > ctx->disk->size)
			return xasprintf("block: the dataset needs %llu bytes of device, the disk "
					 "has %llu",
					 (unsigned long long)need,
					 (unsigned long long)ctx->disk->size);
	}
	return NULL;
}

/* The stream staged in the guest's tmpfs: the dataset's file bytes, concatenated. */
static uint64_t block_guest_ram_bytes(const struct plan_method *m, uint64_t data, uint64_t files)
{
	(void)m;
	(void)files;
	return data;
}

static int block_add_devices(struct method_ctx *ctx, struct method_boot_needs *needs)
{
	return channel_add_port(ctx, needs);
}

static int block_stage(struct method_ctx *ctx)
{
	struct block_state *s = state(ctx);
	if (!ctx->target_dev)
		return method_fail(ctx, ERROR_INFRA, NULL, "block: the cell has no target device");
	_cleanup_free_ char *dev = shell_quote(ctx->target_dev);
	/* the target is mounted on the landing directory: release it; a tmpfs big enough for
	 * the stream (the default /tmp is half the RAM) */
	_cleanup_free_ char *setup =
	    xasprintf("if grep -q \"^%s \" /proc/mounts; then umount %s || exit 1; fi; "
		      "mkdir -p " STAGE_DIR " && { grep -q ' " STAGE_DIR " ' /proc/mounts || "
		      "mount -t tmpfs -o size=%d%% tmpfs " STAGE_DIR "; } && rm -f " STAGE_FILE,
		      ctx->target_dev, dev, METHOD_GUEST_STAGE_PCT);
	if (method_guest_sh(ctx, "block: release the target", setup, NULL) < 0)
		return -1;
	if (channel_connect(ctx, &s->fd) < 0)
		return -1;
	int64_t pid = 0;
	if (guestproc_start(ctx, "block: stage", "{ " CHANNEL_GUEST_READ "; } > " STAGE_FILE,
			    &pid) < 0)
		return -1;
	_cleanup_free_ char *err = NULL;
	if (stream_concat(ctx->dataset_dir, ctx->manifest, s->fd, ctx->timeout_ms, &s->bytes,
			  s->sha, &err) < 0) {
		close(s->fd);
		s->fd = -1;
		guestproc_kill(ctx, pid);
		return method_fail(ctx, STREAM_ERROR_KIND(err), NULL, "block: staging: %s", err);
	}
	if (channel_drain_close(ctx, &s->fd) < 0) {
		/* the reader took nothing more: it must not outlive the run, holding the port and
		 * the staging tmpfs */
		guestproc_kill(ctx, pid);
		return -1;
	}
	if (guestproc_wait(ctx, "block: stage", pid, NULL) < 0)
		return -1;
	s->staged = true;
	_cleanup_free_ char *size = NULL;
	if (method_guest_sh(ctx, "block: stage", "stat -c %s " STAGE_FILE, &size) < 0)
		return -1;
	if (strtoull(size, NULL, 10) != s->bytes)
		return method_fail(ctx, ERROR_INFRA, NULL,
				   "block: the guest staged %llu bytes of %llu",
				   strtoull(size, NULL, 10), (unsigned long long)s->bytes);
	s->nblocks = (s->bytes + OPTS(ctx)->block_size - 1) / OPTS(ctx)->block_size;
	ctx->bytes = s->bytes;
	return 0;
}

static int block_before_phase(struct method_ctx *ctx, enum result_phase p)
{
	if (p == PHASE_PREPARE)
		return block_stage(ctx);
	if (p != PHASE_FINALIZE || !ctx->target_disk)
		return 0;
	uint64_t resident = 0;
	_cleanup_free_ char *err = NULL;
	if (machine_evict_target(ctx->machine, ctx->guest, &resident, &err) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "block: before the read-back: %s", err);
	json_t *rb = json_pack("{s:b,s:I}", "host_cache_evicted", 1, "host_cached_bytes",
			       (json_int_t)resident);
	if (!ctx->observed)
		ctx->observed = json_object();
	json_object_set_new(ctx->observed, "read_back", rb);
	return 0;
}

/*
 * dd as block runs it for a timed command: GNU coreutils' dd at BLOCK_DD, whose report on its
 * standard error says the bytes it copied and the seconds it took (method_dd_report()), in the C
 * locale (its decimal point). The Debian guest has it there as coreutils installs it; the built-in
 * guest carries coreutils' dd at that path beside busybox (whose shell would run its own dd
 * applet for a bare `dd`, and Debian's busybox dd reports no time).
 */
#define BLOCK_DD    "/usr/bin/dd"
#define REPORT_MARK "ferry-dd "

/* Blocks per slice: queue_depth slices (fewer when there are fewer blocks), the last shorter. */
static uint64_t slice_blocks(const struct method_ctx *ctx, uint64_t nblocks)
{
	uint64_t qd = OPTS(ctx)->queue_depth ? OPTS(ctx)->queue_depth : 1;
	if (qd > nblocks)
		qd = nblocks ? nblocks : 1;
	return (nblocks + qd - 1) / qd;
}

/*
 * The shell command running `queue_depth` dd processes over disjoint block ranges and failing
 * when any fails. fmt gets (skip/seek start, count) per slice and ends with its standard error
 * redirected to STAGE_DIR/dd.START (start is the slice's first block: unique). After the last
 * one ends, every slice's report follows on standard output (on failure: on standard error) as
 * "ferry-dd START" and the lines dd printed. *nslices gets the number of slices.
 */
static char *sliced(const struct method_ctx *ctx, uint64_t nblocks, const char *fmt,
		    uint64_t *nslices)
{
	uint64_t per = slice_blocks(ctx, nblocks);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	fputs("rm -f " STAGE_DIR "/dd.*; p=; ", f);
	*nslices = 0;
	for (uint64_t start = 0; start < nblocks; start += per) {
		uint64_t count = nblocks - start < per ? nblocks - start : per;
		fprintf(f, fmt, (unsigned long long)start, (unsigned long long)count);
		fputs(" & p=\"$p $!\"; ", f);
		(*nslices)++;
	}
	fputs("r=0; for x in $p; do wait $x || r=1; done; o=1; [ $r = 0 ] || o=2; "
	      "for f in " STAGE_DIR "/dd.*; do [ -e \"$f\" ] || continue; "
	      "echo \"" REPORT_MARK "${f##*.}\"; cat \"$f\"; rm -f \"$f\"; done >&$o; exit $r",
	      f);
	fclose(f);
	return buf;
}

/*
 * dd's own figures from the output of a sliced() command: every slice's report parsed, the
 * bytes summed and the slowest slice's seconds, as fio sums a group's bytes over its longest
 * job's run time. Each slice must have reported exactly count x block_size bytes (the last
 * block padded): a missing, unparsable or short report fails the run, naming it.
 */
static int dd_figures(struct method_ctx *ctx, const char *what, const char *out, uint64_t nslices,
		      uint64_t nblocks, uint64_t *bytes, double *seconds)
{
	uint64_t bs = OPTS(ctx)->block_size;
	uint64_t per = slice_blocks(ctx, nblocks);
	if (nslices == 0) { /* an empty stream: no dd ran, nothing to time */
		*bytes = 0;
		*seconds = NAN;
		return 0;
	}
	uint64_t seen = 0, total = 0;
	double slowest = 0;
	const char *p = out ? out : "";
	while ((p = strstr(p, REPORT_MARK))) {
		if (p != out && p[-1] != '\n') {
			p++;
			continue;
		}
		char *end = NULL;
		unsigned long long start = strtoull(p + strlen(REPORT_MARK), &end, 10);
		const char *body = end + strspn(end, "\n");
		const char *next = body;
		while ((next = strstr(next, REPORT_MARK)) && next[-1] != '\n')
			next++;
		_cleanup_free_ char *text =
		    xstrndup(body, next ? (size_t)(next - body) : strlen(body));
		uint64_t b = 0;
		double s = 0;
		_cleanup_free_ char *err = NULL;
		if (method_dd_report(text, &b, &s, &err) < 0)
			return method_fail(ctx, ERROR_INFRA, NULL,
					   "%s: the dd of blocks %llu on: %s", what, start, err);
		uint64_t count = nblocks - start < per ? nblocks - start : per;
		if (start >= nblocks || b != count * bs)
			return method_fail(
			    ctx, ERROR_INFRA, NULL,
			    "%s: the dd of blocks %llu on reported %llu bytes copied, "
			    "not the %llu of its %llu blocks",
			    what, start, (unsigned long long)b, (unsigned long long)(count * bs),
			    (unsigned long long)count);
		seen++;
		total += b;
		if (s > slowest)
			slowest = s;
		p = next ? next : body + strlen(body);
	}
	if (seen != nslices)
		return method_fail(ctx, ERROR_INFRA, NULL,
				   "%s: %llu of %llu dd processes left a report of their bytes and "
				   "seconds",
				   what, (unsigned long long)seen, (unsigned long long)nslices);
	*bytes = total;
	*seconds = slowest;
	return 0;
}

static int block_transfer(struct method_ctx *ctx)
{
	struct block_state *s = state(ctx);
	unsigned long long bs = (unsigned long long)OPTS(ctx)->block_size;
	_cleanup_free_ char *dev = shell_quote(ctx->target_dev);
	/* a slice's skip (staged file) and seek (device) are the same block number */
	_cleanup_free_ char *fmt =
	    xasprintf("LC_ALL=C " BLOCK_DD " if=" STAGE_FILE " of=%s bs=%llu skip=%%1$llu "
		      "seek=%%1$llu count=%%2$llu iflag=fullblock oflag=direct "
		      "conv=sync,notrunc,fsync 2>" STAGE_DIR "/dd.%%1$llu",
		      dev, bs);
	uint64_t nslices = 0;
	_cleanup_free_ char *cmd = sliced(ctx, s->nblocks, fmt, &nslices);
	uint64_t t0 = now_ns();
	_cleanup_free_ char *out = NULL;
	if (method_guest_sh(ctx, "block: write", cmd, &out) < 0)
		return -1;
	method_rate(ctx, "write_throughput", s->bytes, (double)(now_ns() - t0) / 1e9);
	uint64_t dd_bytes = 0;
	double dd_s = 0;
	if (dd_figures(ctx, "block: write", out, nslices, s->nblocks, &dd_bytes, &dd_s) < 0)
		return -1;
	method_metric(ctx, "guest_write_time", dd_s);
	method_rate(ctx, "guest_write_throughput", dd_bytes, dd_s);
	return 0;
}

static int block_finalize(struct method_ctx *ctx)
{
	struct block_state *s = state(ctx);
	unsigned long long bs = (unsigned long long)OPTS(ctx)->block_size;
	_cleanup_free_ char *dev = shell_quote(ctx->target_dev);
	_cleanup_free_ char *fmt =
	    xasprintf("LC_ALL=C " BLOCK_DD " if=%s of=/dev/null bs=%llu skip=%%1$llu "
		      "count=%%2$llu iflag=direct 2>" STAGE_DIR "/dd.%%1$llu",
		      dev, bs);
	uint64_t nslices = 0;
	_cleanup_free_ char *cmd = sliced(ctx, s->nblocks, fmt, &nslices);
	uint64_t t0 = now_ns();
	_cleanup_free_ char *out = NULL;
	if (method_guest_sh(ctx, "block: read back", cmd, &out) < 0)
		return -1;
	method_rate(ctx, "read_throughput", s->bytes, (double)(now_ns() - t0) / 1e9);
	uint64_t dd_bytes = 0;
	double dd_s = 0;
	if (dd_figures(ctx, "block: read back", out, nslices, s->nblocks, &dd_bytes, &dd_s) < 0)
		return -1;
	method_metric(ctx, "guest_read_time", dd_s);
	method_rate(ctx, "guest_read_throughput", dd_bytes, dd_s);
	return 0;
}

static int block_verify(struct method_ctx *ctx)
{
	struct block_state *s = state(ctx);
	_cleanup_free_ char *dev = shell_quote(ctx->target_dev);
	/* the padding of the last block is not part of the stream: hash exactly its bytes (dd
	 * may then see a closed pipe: its status does not matter, head's count does) */
	_cleanup_free_ char *cmd = xasprintf(
	    "dd if=%s bs=%llu count=%llu iflag=direct 2>/dev/null | head -c %llu | sha256sum", dev,
	    (unsigned long long)OPTS(ctx)->block_size, (unsigned long long)s->nblocks,
	    (unsigned long long)s->bytes);
	_cleanup_free_ char *out = NULL;
	if (method_guest_sh(ctx, "block: verify", cmd, &out) < 0)
		return -1;
	char want[65];
	sha256_hex(s->sha, want);
	if (strncmp(out, want, 64) != 0)
		return method_fail(ctx, ERROR_INTEGRITY, NULL,
				   "integrity: the %llu bytes read back from %s hash to %.64s, the "
				   "stream written hashes to %s",
				   (unsigned long long)s->bytes, ctx->target_dev, out, want);
	return 0;
}

static int block_cleanup(struct method_ctx *ctx)
{
	struct block_state *s = state(ctx);
	if (s->fd >= 0) {
		close(s->fd);
		s->fd = -1;
	}
	/* give the guest its RAM back, also after a staging that failed half-way (the next run
	 * stages again): the stream and its tmpfs */
	if (ctx->guest && !run_interrupted()) {
		if (method_guest_sh(ctx, "block: cleanup",
				    "rm -f " STAGE_FILE "; if grep -q ' " STAGE_DIR
				    " ' /proc/mounts; "
				    "then umount " STAGE_DIR "; fi",
				    NULL) < 0)
			method_error_clear(&ctx->err);
		s->staged = false;
	}
	return 0;
}

static void block_free_state(struct method_ctx *ctx)
{
	struct block_state *s = ctx->state;
	if (s && s->fd >= 0)
		close(s->fd);
	free(s);
	ctx->state = NULL;
	json_decref(ctx->observed);
	ctx->observed = NULL;
}

const struct method_ops method_block = {
	.name = "block",
	.summary = "raw device writes",
	.options = &block_keys,
	.needs = { .disk_kinds = 1u << PLAN_DISK_IMAGE,
		   .disk_why = "writes a raw device",
		   .guest_ram_bytes = block_guest_ram_bytes,
		   .target_raw = true },
	.rules = block_rules,
	.n_rules = ELEMENTSOF(block_rules),
	.supports = block_supports,
	.add_devices = block_add_devices,
	.before_phase = block_before_phase,
	.transfer = block_transfer,
	.finalize = block_finalize,
	.verify = block_verify,
	.cleanup = block_cleanup,
	.free_state = block_free_state,
};
