/* SPDX-License-Identifier: MIT */
/*
 * null: moves nothing and takes a set time (like fio's null ioengine), to measure what ferry
 * itself costs around a run and to drive the executor without data. transfer waits `duration`
 * on the host (interrupted by a signal; a duration beyond the run timeout fails with a timeout
 * when the timeout is reached); every run reports 0 bytes and 0 files moved, and verify checks
 * nothing, because nothing was moved. No boot-time devices, any guest and disk.
 */
#include <errno.h>
#include <poll.h>

#include "method.h"
#include "units.h"
#include "util.h"

struct null_opts {
	uint64_t set;
	uint64_t duration; /* ns the transfer phase of every run takes */
};

static const struct key_def null_defs[] = {
	{ .name = "duration",
	  .type = KEY_DURATION,
	  .offset = offsetof(struct null_opts, duration),
	  .def = "0s",
	  .max = 3600 * NSEC_PER_SEC,
	  .help = "how long the transfer phase of every run takes (null moves no data)" },
};
METHOD_OPTIONS(null_keys, "null", struct null_opts, null_defs);

/* Wait ns, or until a signal arrives. Returns 0, or -1 when interrupted. */
static int wait_ns(uint64_t ns)
{
	uint64_t end = now_ns() + ns;
	for (;;) {
		if (run_interrupted())
			return -1;
		uint64_t now = now_ns();
		if (now >= end)
			return 0;
		uint64_t left_ms = (end - now + 999999u) / 1000000u;
		struct pollfd pfd = { .fd = run_signal_fd(), .events = POLLIN };
		int n = poll(&pfd, pfd.fd >= 0 ? 1 : 0, left_ms > 60000 ? 60000 : (int)left_ms);
		if (n < 0 && errno != EINTR)
			return 0;
	}
}

static int null_prepare(struct method_ctx *ctx)
{
	ctx->bytes = 0;
	ctx->files = 0;
	return 0;
}

static int null_transfer(struct method_ctx *ctx)
{
	uint64_t want = METHOD_OPTS(ctx->method, struct null_opts)->duration;
	uint64_t limit = (uint64_t)ctx->timeout_ms * 1000000u;
	if (wait_ns(want < limit ? want : limit) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "interrupted");
	if (want > limit) {
		_cleanup_free_ char *d = format_duration(want);
		return method_fail(ctx, ERROR_TIMEOUT, NULL,
				   "duration %s is longer than the run timeout", d);
	}
	return 0;
}

/* Nothing moved, so there is nothing to compare with the manifest. */
static int null_verify(struct method_ctx *ctx)
{
	(void)ctx;
	return 0;
}

const struct method_ops method_null = {
	.name = "null",
	.summary = "moves nothing, takes duration",
	.options = &null_keys,
	.prepare = null_prepare,
	.transfer = null_transfer,
	.verify = null_verify,
};
