/* SPDX-License-Identifier: MIT */
/*
 * channel: the dataset packed by libarchive on the host and streamed into a dedicated
 * virtio-serial port; the guest unpacks it as it arrives (`tar -x < PORT`).
 * prepare connects to the port (the archive is packed while it streams: no pack phase),
 * transfer streams, unpacks and syncs (in the unpacker's guest command: no finalize). Without
 * `archive:` the stream is a plain tar: a byte pipe carries one stream.
 */
#include "channel.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include "run.h"
#include "util.h"
#include "machine.h"
#include "guestproc.h"
#include "archive.h"
#include "stream.h"
#include "rules.h"

int channel_add_port(struct method_ctx *ctx, struct method_boot_needs *needs)
{
	for (size_t i = 0; i < needs->n_channels; i++)
		if (STREQ(needs->channels[i], CHANNEL_PORT))
			return 0;
	needs->channels =
	    xrealloc(needs->channels, (needs->n_channels + 1) * sizeof(*needs->channels));
	needs->channels[needs->n_channels++] = xstrdup(CHANNEL_PORT);
	return 0;
}

int channel_connect(struct method_ctx *ctx, int *fd)
{
	_cleanup_(machine_err_clear) struct machine_err e = { 0 };
	int s = -1;
	/* the port's host end: on libvirt its unix socket, or on a remote host libvirt's stream of
	 * it */
	if (machine_guest_channel_open(ctx->machine, ctx->guest, CHANNEL_PORT, &s, &e) < 0)
		return method_fail_op(ctx, ERROR_INFRA, &e, NULL, "channel: %s", e.msg);
	fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK);
	*fd = s;
	return 0;
}

int channel_drain_close(struct method_ctx *ctx, int *fd)
{
	uint64_t end = now_ns() + (uint64_t)ctx->timeout_ms * 1000000u;
	for (;;) {
		int q = 0;
		if (ioctl(*fd, SIOCOUTQ, &q) < 0)
			return method_fail(ctx, ERROR_INFRA, NULL, "channel: SIOCOUTQ: %s",
					   strerror(errno));
		if (q == 0)
			break;
		if (run_interrupted())
			return method_fail(ctx, ERROR_INFRA, NULL, "channel: interrupted");
		if (now_ns() >= end)
			return method_fail(ctx, ERROR_TIMEOUT, NULL,
					   "channel: the guest did not read the last %d bytes "
					   "within %u ms",
					   q, ctx->timeout_ms);
		struct timespec ts = { 0, 2 * 1000000L };
		nanosleep(&ts, NULL);
	}
	close(*fd);
	*fd = -1;
	return 0;
}

struct channel_state {
	int fd;
	int64_t pid; /* the guest's reader, 0 when none is running */
};

static struct channel_state *state(struct method_ctx *ctx)
{
	if (!ctx->state) {
		struct channel_state *s = xcalloc(1, sizeof(*s));
		s->fd = -1;
		ctx->state = s;
	}
	return ctx->state;
}

static char *channel_supports(const struct method_ctx *ctx)
{
	/* Windows guests, archives the guest cannot unpack: the plan's rules table (rules.c) */
	return plan_rules_skip(ctx->plan, ctx->cell);
}

static int channel_add_devices(struct method_ctx *ctx, struct method_boot_needs *needs)
{
	return channel_add_port(ctx, needs);
}

static int channel_prepare(struct method_ctx *ctx)
{
	struct channel_state *s = state(ctx);
	/* connect before the guest opens the port: a guest read while no host is connected
	 * returns end-of-file at once */
	return channel_connect(ctx, &s->fd);
}

static int channel_transfer(struct method_ctx *ctx)
{
	struct channel_state *s = state(ctx);
	/* the unpacker reads the port itself (no dd and pipe in between: every byte crosses one
	   process less, ~25% of the time at 64 MiB under TCG; bench/RESULTS-methods.md); the sync
	   ends the same guest command (timed here: one guest command less) */
	_cleanup_free_ char *unpack =
	    stream_unpack_command(&ctx->method->archive, NULL, ctx->landing);
	_cleanup_free_ char *cmd = xasprintf(
	    "( " CHANNEL_GUEST_WAIT "; { %s; } < " CHANNEL_GUEST_DEV " ) && sync", unpack);
	if (guestproc_start(ctx, "channel: unpack", cmd, &s->pid) < 0)
		return -1;
	uint64_t bytes = 0;
	_cleanup_free_ char *err = NULL;
	if (stream_pack(&ctx->method->archive, ctx->dataset_dir, ctx->manifest, s->fd,
			ctx->timeout_ms, &bytes, &err) < 0) {
		/* the reader may be stuck or gone: end it before saying why */
		close(s->fd);
		s->fd = -1;
		guestproc_kill(ctx, s->pid);
		s->pid = 0;
		return method_fail(ctx, STREAM_ERROR_KIND(err), NULL,
				   "channel: streaming into the port: %s", err);
	}
	if (channel_drain_close(ctx, &s->fd) < 0)
		return -1;
	int64_t pid = s->pid;
	s->pid = 0;
	if (guestproc_wait(ctx, "channel: unpack", pid, NULL) < 0)
		return -1;
	ctx->bytes = bytes;
	return 0;
}

static int channel_cleanup(struct method_ctx *ctx)
{
	struct channel_state *s = state(ctx);
	if (s->fd >= 0) {
		close(s->fd);
		s->fd = -1;
	}
	if (s->pid && ctx->guest && !run_interrupted())
		guestproc_kill(ctx, s->pid);
	s->pid = 0;
	return 0;
}

static void channel_free_state(struct method_ctx *ctx)
{
	struct channel_state *s = ctx->state;
	if (s && s->fd >= 0)
		close(s->fd);
	free(s);
	ctx->state = NULL;
}

const struct method_ops method_channel = {
	.name = "channel",
	.summary = "a virtio-serial pipe",
	.archive = true,
	.supports = channel_supports,
	.add_devices = channel_add_devices,
	.prepare = channel_prepare,
	.transfer = channel_transfer,
	.cleanup = channel_cleanup,
	.free_state = channel_free_state,
};
