/* SPDX-License-Identifier: MIT */
/*
 * Guest processes that run while the host does something else: the channel, network and block
 * methods start the guest's reader first (guest-exec without waiting), feed it from the host,
 * then collect its exit status. machine_guest_exec() waits at once, which cannot work for a
 * reader the host must feed.
 */
#pragma once

#include <stdint.h>

#include "method.h"

/*
 * Start `sh -c CMD` in the guest with its output captured. Returns 0 with *pid set, or -1 with
 * ctx->err filled (what names the step in the message).
 */
int guestproc_start(struct method_ctx *ctx, const char *what, const char *cmd, int64_t *pid);

/*
 * Wait up to ctx->timeout_ms for pid to end. A non-zero exit is an error carrying its stderr;
 * on timeout or interrupt the process and its children are killed in the guest. out (may be
 * NULL) receives stdout (caller frees). Returns 0 or -1 with ctx->err filled.
 */
int guestproc_wait(struct method_ctx *ctx, const char *what, int64_t pid, char **out);

/* Kill pid and all its descendants in the guest (best effort; for cleanup paths). */
void guestproc_kill(struct method_ctx *ctx, int64_t pid);
