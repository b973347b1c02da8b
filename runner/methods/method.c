/* SPDX-License-Identifier: MIT */
/* The method registry and the helpers every method uses. */
#include "method.h"

#include <stdarg.h>
#include <string.h>

#include "../agent.h"
#include "../util.h"

/*
 * Methods are linked in as their files land (channel, share, network and block are written on
 * another branch): a weak reference is NULL until its file is built in, and method_find() then
 * reports the type as not built in rather than failing the link.
 */
extern const struct method_ops method_agent_file __attribute__((weak));
extern const struct method_ops method_disk_image __attribute__((weak));
extern const struct method_ops method_channel __attribute__((weak));
extern const struct method_ops method_share __attribute__((weak));
extern const struct method_ops method_network __attribute__((weak));
extern const struct method_ops method_block __attribute__((weak));

const struct method_ops *method_find(enum plan_method_type type)
{
	const struct method_ops *all[] = {
		&method_agent_file, &method_disk_image, &method_channel,
		&method_share,      &method_network,    &method_block,
	};
	for (size_t i = 0; i < ELEMENTSOF(all); i++)
		if (all[i] && all[i]->type == type)
			return all[i];
	return NULL;
}

void method_error_clear(struct method_error *e)
{
	free(e->message);
	free(e->agent_message);
	free(e->libvirt_message);
	memset(e, 0, sizeof(*e));
	e->kind = ERROR_INFRA;
}

int method_fail(struct method_ctx *ctx, enum result_error_kind kind, const char *agent_message,
		const char *fmt, ...)
{
	va_list ap;
	method_error_clear(&ctx->err);
	ctx->err.kind = kind;
	va_start(ap, fmt);
	ctx->err.message = xvasprintf(fmt, ap);
	va_end(ap);
	if (agent_message && *agent_message)
		ctx->err.agent_message = xstrdup(agent_message);
	const char *lv = virGetLastErrorMessage();
	if (lv && *lv && strcmp(lv, "no error") != 0)
		ctx->err.libvirt_message = xstrdup(lv);
	return -1;
}

char *method_shell_quote(const char *s)
{
	size_t n = 3;
	for (const char *p = s; *p; p++)
		n += *p == '\'' ? 4 : 1;
	char *out = xmalloc(n), *o = out;
	*o++ = '\'';
	for (const char *p = s; *p; p++) {
		if (*p == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else {
			*o++ = *p;
		}
	}
	*o++ = '\'';
	*o = '\0';
	return out;
}

int method_guest_sh(struct method_ctx *ctx, const char *what, const char *cmd, char **out)
{
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct agent_exec_result r = { 0 };
	_cleanup_free_ char *err = NULL;
	if (agent_exec(ctx->dom, argv, NULL, 0, ctx->timeout_ms, &r, &err) < 0) {
		int kind =
		    err && strstr(err, "did not finish within") ? ERROR_TIMEOUT : ERROR_INFRA;
		return method_fail(ctx, kind, err, "%s: guest agent failed", what);
	}
	if (r.exit_code != 0) {
		int rc = method_fail(ctx, ERROR_INFRA, r.err,
				     "%s: guest command exited with status %d", what, r.exit_code);
		agent_exec_result_clear(&r);
		return rc;
	}
	if (out)
		*out = TAKE_PTR(r.out);
	agent_exec_result_clear(&r);
	return 0;
}
