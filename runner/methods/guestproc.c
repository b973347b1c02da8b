/* SPDX-License-Identifier: MIT */
#include "guestproc.h"

#include <string.h>
#include <time.h>

#include "machine.h"
#include "run.h"
#include "util.h"

int guestproc_start(struct method_ctx *ctx, const char *what, const char *cmd, int64_t *pid)
{
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	_cleanup_(machine_err_clear) struct machine_err e = { 0 };
	if (machine_guest_spawn(ctx->machine, ctx->guest, argv, pid, &e) < 0)
		return method_fail_op(ctx, ERROR_INFRA, &e, e.msg,
				      "%s: cannot start the guest command", what);
	return 0;
}

void guestproc_kill(struct method_ctx *ctx, int64_t pid)
{
	machine_guest_proc_kill(ctx->machine, ctx->guest, pid);
}

/* The outcome of an exited pid: 0 (stdout into *out), or -1 with ctx->err filled. */
static int exited(struct method_ctx *ctx, const char *what, struct machine_proc_status *st,
		  char **out)
{
	if (st->exit_code != 0) {
		if (st->signal)
			return method_fail(ctx, ERROR_INFRA, st->err,
					   "%s: guest command killed by signal %d", what,
					   st->signal);
		return method_fail(ctx, ERROR_INFRA, st->err,
				   "%s: guest command exited with status %d", what, st->exit_code);
	}
	if (out)
		*out = TAKE_PTR(st->out);
	return 0;
}

int guestproc_wait(struct method_ctx *ctx, const char *what, int64_t pid, char **out)
{
	uint64_t deadline = now_ns() + (uint64_t)ctx->timeout_ms * 1000000u;
	unsigned wait = 2;
	for (;;) {
		struct machine_proc_status st;
		_cleanup_(machine_err_clear) struct machine_err e = { 0 };
		if (run_deadline_passed()) {
			guestproc_kill(ctx, pid);
			return method_fail(ctx, ERROR_TIMEOUT, NULL,
					   "%s: the run timeout (%u ms) passed", what,
					   run_deadline_timeout_ms());
		}
		if (machine_guest_proc_status(ctx->machine, ctx->guest, pid, &st, &e) < 0)
			return method_fail_op(ctx, ERROR_INFRA, &e, e.msg, "%s: guest agent failed",
					      what);
		if (st.exited) {
			int rc = exited(ctx, what, &st, out);
			machine_proc_status_clear(&st);
			return rc;
		}
		if (run_interrupted()) {
			guestproc_kill(ctx, pid);
			return method_fail(ctx, ERROR_INFRA, NULL, "%s: interrupted", what);
		}
		if (now_ns() >= deadline) {
			guestproc_kill(ctx, pid);
			return method_fail(ctx, ERROR_TIMEOUT, NULL,
					   "%s: guest command did not finish within %u ms", what,
					   ctx->timeout_ms);
		}
		run_sleep_ms(wait);
		if (wait < 50)
			wait *= 2;
	}
}
