/* SPDX-License-Identifier: MIT */
/*
 * network: over the VM's NIC on QEMU user networking, which maps the guest's 10.0.2.2 to the
 * host's 127.0.0.1: only loopback traffic on the host, never another address.
 *
 * direction pull: ferry runs a small HTTP server on 127.0.0.1 (a thread of this process) and
 *   the guest fetches with busybox wget: with `archive:` one stream that it unpacks as it
 *   arrives (`wget -O - | tar -x`); without, file by file (a NUL-separated list walked with
 *   xargs -0, then one wget per file).
 * direction push: ferry forwards a host port on 127.0.0.1 into the guest (QEMU HMP hostfwd_add
 *   through libvirt), the guest listens with `nc -l` and unpacks, the host connects and streams
 *   the archive (without `archive:` a plain tar: a push is one stream).
 * 127.0.0.1 is open to every local user: the pull server answers only under a per-run random
 * token, and a push starts with a token line the guest checks before it unpacks (netserve.h).
 * prepare starts the server (pull) or sets up the forward (push, once per cell); transfer moves
 * and unpacks; finalize syncs. The NIC model and queues are the cell's vm entry (nic:), which
 * the results carry as the vm axis.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "run.h"
#include "util.h"
#include "vm.h"
#include "guestproc.h"
#include "method.h"
#include "archive.h"
#include "stream.h"
#include "netserve.h"
#include "rules.h"

#define HOST_FROM_GUEST "10.0.2.2"
#define PUSH_GUEST_PORT 18090

struct network_state {
	struct server srv;
	int fwd_port; /* push: the host end of the forward, 0 until set up */
	char *fwd_vm; /* the domain the forward was added to (a cell may get a new VM per run) */
};

static char *network_supports(const struct method_ctx *ctx)
{
	/* Windows guests, tap NICs, queues, archives: the plan's rules table (rules.c) */
	return plan_rules_skip(ctx->plan, ctx->cell);
}

static int network_add_devices(struct method_ctx *ctx, struct method_boot_needs *needs)
{
	needs->nic = true;
	return 0;
}

static struct network_state *state(struct method_ctx *ctx)
{
	if (!ctx->state) {
		struct network_state *s = xcalloc(1, sizeof(*s));
		server_init(&s->srv);
		ctx->state = s;
	}
	return ctx->state;
}

/* ---- the phases ---- */

static int network_prepare(struct method_ctx *ctx)
{
	struct network_state *s = state(ctx);
	if (ctx->method->direction == PLAN_DIRECTION_PULL) {
		_cleanup_free_ char *err = NULL;
		const struct plan_archive *a =
		    ctx->method->archive.format != PLAN_ARCHIVE_NONE ? &ctx->method->archive : NULL;
		if (server_start(&s->srv, a, ctx->dataset_dir, ctx->manifest, ctx->timeout_ms,
				 &err) < 0)
			return method_fail(ctx, ERROR_INFRA, NULL, "network: %s", err);
		return 0;
	}
	if (s->fwd_port && s->fwd_vm && STREQ(s->fwd_vm, vm_name(ctx->vm)))
		return 0;
	/* a free port on 127.0.0.1, handed to QEMU's forward (QEMU binds it itself) */
	_cleanup_free_ char *err = NULL;
	int port = 0;
	int fd = loopback_socket(false, &port, &err);
	if (fd < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "network: %s", err);
	close(fd);
	if (vm_hostfwd_add(ctx->vm, port, PUSH_GUEST_PORT, &err) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "network: %s", err);
	s->fwd_port = port;
	free(s->fwd_vm);
	s->fwd_vm = xstrdup(vm_name(ctx->vm));
	return 0;
}

static int pull(struct method_ctx *ctx, struct network_state *s)
{
	_cleanup_free_ char *cmd = NULL;
	_cleanup_free_ char *base =
	    xasprintf("http://" HOST_FROM_GUEST ":%d/%s", s->srv.port, s->srv.token);
	if (s->srv.archive) {
		_cleanup_free_ char *src = xasprintf("wget -q -O - %s/stream", base);
		cmd = stream_unpack_command(s->srv.archive, src, ctx->landing);
	} else {
		cmd = netserve_pull_files_command(base, ctx->landing);
	}
	int rc = method_guest_sh(ctx, "network: pull", cmd, NULL);
	server_stop(&s->srv);
	if (rc < 0)
		return -1;
	if (s->srv.err)
		return method_fail(ctx, ERROR_INFRA, NULL, "network: sender: %s", s->srv.err);
	ctx->bytes = s->srv.bytes;
	return 0;
}

/* Whether the guest listens on PUSH_GUEST_PORT yet. */
static bool guest_listening(struct method_ctx *ctx)
{
	_cleanup_free_ char *cmd =
	    xasprintf("{ ss -ltn 2>/dev/null || netstat -ltn 2>/dev/null; } | grep -q ':%d '",
		      PUSH_GUEST_PORT);
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct agent_exec_result r = { 0 };
	_cleanup_free_ char *err = NULL;
	if (agent_exec(ctx->dom, argv, NULL, 0, 20000, &r, &err) < 0)
		return false;
	bool ok = r.exit_code == 0;
	agent_exec_result_clear(&r);
	return ok;
}

static int push(struct method_ctx *ctx, struct network_state *s)
{
	static const struct plan_archive tar = { .format = PLAN_ARCHIVE_TAR };
	const struct plan_archive *a =
	    ctx->method->archive.format != PLAN_ARCHIVE_NONE ? &ctx->method->archive : &tar;
	char token[NETSERVE_TOKEN_LEN + 1];
	if (netserve_token(token) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "network: random token: %s",
				   strerror(errno));
	_cleanup_free_ char *src = netserve_push_source(PUSH_GUEST_PORT, token);
	_cleanup_free_ char *cmd = stream_unpack_command(a, src, ctx->landing);
	int64_t pid = 0;
	if (guestproc_start(ctx, "network: push", cmd, &pid) < 0)
		return -1;
	uint64_t end = now_ns() + (uint64_t)ctx->timeout_ms * 1000000u;
	while (!guest_listening(ctx)) {
		if (run_interrupted() || now_ns() >= end) {
			guestproc_kill(ctx, pid);
			return method_fail(ctx, ERROR_TIMEOUT, NULL,
					   "network: the guest did not listen on port %d",
					   PUSH_GUEST_PORT);
		}
		struct timespec ts = { 0, 20 * 1000000L };
		nanosleep(&ts, NULL);
	}
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)s->fwd_port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (c < 0 || connect(c, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		if (c >= 0)
			close(c);
		guestproc_kill(ctx, pid);
		return method_fail(ctx, ERROR_INFRA, NULL, "network: connect 127.0.0.1:%d: %s",
				   s->fwd_port, strerror(e));
	}
	struct timeval tv = { 1, 0 };
	setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	uint64_t bytes = 0;
	_cleanup_free_ char *err = NULL;
	/* the token line first: the guest unpacks nothing from a connection without it */
	char line[NETSERVE_TOKEN_LEN + 2];
	snprintf(line, sizeof(line), "%s\n", token);
	if (stream_write_all(c, line, NETSERVE_TOKEN_LEN + 1, ctx->timeout_ms, &err) < 0 ||
	    stream_pack(a, ctx->dataset_dir, ctx->manifest, c, ctx->timeout_ms, &bytes, &err) < 0) {
		close(c);
		guestproc_kill(ctx, pid);
		return method_fail(ctx, ERROR_INFRA, NULL, "network: push: %s", err);
	}
	finish_connection(c);
	if (guestproc_wait(ctx, "network: push", pid, NULL) < 0)
		return -1;
	ctx->bytes = bytes;
	return 0;
}

static int network_transfer(struct method_ctx *ctx)
{
	struct network_state *s = state(ctx);
	return ctx->method->direction == PLAN_DIRECTION_PULL ? pull(ctx, s) : push(ctx, s);
}

static int network_finalize(struct method_ctx *ctx)
{
	return method_guest_sh(ctx, "network: sync", "sync", NULL);
}

static int network_cleanup(struct method_ctx *ctx)
{
	server_stop(&state(ctx)->srv);
	return 0;
}

static void network_free_state(struct method_ctx *ctx)
{
	struct network_state *s = ctx->state;
	if (s) {
		server_stop(&s->srv);
		free(s->srv.err);
		free(s->fwd_vm);
		free(s);
	}
	ctx->state = NULL;
}

const struct method_ops method_network = {
	.name = "network",
	.type = PLAN_METHOD_NETWORK,
	.supports = network_supports,
	.add_devices = network_add_devices,
	.prepare = network_prepare,
	.transfer = network_transfer,
	.finalize = network_finalize,
	.cleanup = network_cleanup,
	.free_state = network_free_state,
};
