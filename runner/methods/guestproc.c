/* SPDX-License-Identifier: MIT */
#include "guestproc.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "agent.h"
#include "run.h"
#include "util.h"

/* Seconds libvirt waits for one guest-exec or guest-exec-status answer. */
#define CMD_TIMEOUT_S 30

#define _cleanup_json_ _cleanup_(json_decrefp)

int guestproc_start(struct method_ctx *ctx, const char *what, const char *cmd, int64_t *pid)
{
	json_t *args = json_pack("{s:s, s:[s,s], s:b}", "path", "/bin/sh", "arg", "-c", cmd,
				 "capture-output", 1);
	_cleanup_json_ json_t *ret = NULL;
	_cleanup_free_ char *err = NULL;
	if (agent_command(ctx->dom, "guest-exec", args, CMD_TIMEOUT_S, &ret, &err) < 0)
		return method_fail(ctx, ERROR_INFRA, err, "%s: cannot start the guest command",
				   what);
	json_t *p = json_object_get(ret, "pid");
	if (!json_is_integer(p))
		return method_fail(ctx, ERROR_INFRA, NULL, "%s: guest-exec returned no pid", what);
	*pid = json_integer_value(p);
	return 0;
}

/* Decode the agent's base64 output member into a NUL-terminated string ("" when absent). */
static char *b64_member(json_t *st, const char *key)
{
	const char *s = json_string_value(json_object_get(st, key));
	char *out;
	size_t n;
	if (!s || !agent_b64_decode(s, &out, &n))
		return xstrdup("");
	return out;
}

void guestproc_kill(struct method_ctx *ctx, int64_t pid)
{
	/* children first (their parent pid is read from /proc), so a pipeline does not linger
	 * holding a channel port or a socket */
	_cleanup_free_ char *cmd = xasprintf(
	    "k() { for s in /proc/[0-9]*/status; do "
	    "grep -q \"^PPid:[[:space:]]*$1\\$\" \"$s\" 2>/dev/null && "
	    "c=${s#/proc/} && k \"${c%%/status}\"; done; kill -KILL \"$1\" 2>/dev/null; }; "
	    "k %lld; true",
	    (long long)pid);
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct agent_exec_result r = { 0 };
	_cleanup_free_ char *err = NULL;
	if (agent_exec(ctx->dom, argv, NULL, 0, 20000, &r, &err) == 0)
		agent_exec_result_clear(&r);
	/* collect the status so the agent forgets the process */
	for (int i = 0; i < 50; i++) {
		_cleanup_json_ json_t *st = NULL;
		_cleanup_free_ char *e = NULL;
		if (agent_command(ctx->dom, "guest-exec-status", json_pack("{s:I}", "pid", pid),
				  CMD_TIMEOUT_S, &st, &e) < 0 ||
		    json_is_true(json_object_get(st, "exited")))
			return;
		run_sleep_ms(20);
	}
}

int guestproc_wait(struct method_ctx *ctx, const char *what, int64_t pid, char **out)
{
	uint64_t deadline = now_ns() + (uint64_t)ctx->timeout_ms * 1000000u;
	unsigned wait = 2;
	for (;;) {
		_cleanup_json_ json_t *st = NULL;
		_cleanup_free_ char *e = NULL;
		if (agent_command(ctx->dom, "guest-exec-status", json_pack("{s:I}", "pid", pid),
				  CMD_TIMEOUT_S, &st, &e) < 0)
			return method_fail(ctx, ERROR_INFRA, e, "%s: guest agent failed", what);
		if (json_is_true(json_object_get(st, "exited"))) {
			json_t *code = json_object_get(st, "exitcode");
			int rc = code ? (int)json_integer_value(code) : -1;
			_cleanup_free_ char *o = b64_member(st, "out-data");
			_cleanup_free_ char *er = b64_member(st, "err-data");
			if (rc != 0) {
				json_t *sig = json_object_get(st, "signal");
				if (!code && sig)
					return method_fail(ctx, ERROR_INFRA, er,
							   "%s: guest command killed by signal %d",
							   what, (int)json_integer_value(sig));
				return method_fail(ctx, ERROR_INFRA, er,
						   "%s: guest command exited with status %d", what,
						   rc);
			}
			if (out)
				*out = TAKE_PTR(o);
			return 0;
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
