/* SPDX-License-Identifier: MIT */
/*
 * network: over the VM's NIC on QEMU user networking, which maps the guest's 10.0.2.2 to the
 * host's 127.0.0.1: only loopback traffic on the host, never another address.
 *
 * direction pull: ferry runs a small HTTP server on 127.0.0.1 (a thread of this process) and
 *   the guest fetches with busybox wget: with `archive:` one stream that it unpacks as it
 *   arrives (`wget -O - | tar -x`); without, file by file (a list, then one wget per file).
 * direction push: ferry forwards a host port on 127.0.0.1 into the guest (QEMU HMP hostfwd_add
 *   through libvirt), the guest listens with `nc -l` and unpacks, the host connects and streams
 *   the archive (without `archive:` a plain tar: a push is one stream).
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

#define HOST_FROM_GUEST "10.0.2.2"
#define PUSH_GUEST_PORT 18090

struct server {
	int lfd;
	int stop[2];
	int port;
	pthread_t thread;
	bool running;
	/* what to serve (read-only while the thread runs) */
	const struct plan_archive *archive; /* NULL: files one by one */
	const char *dir;
	const struct manifest *m;
	unsigned timeout_ms;
	/* the thread's outcome */
	uint64_t bytes;
	char *err;
};

struct network_state {
	struct server srv;
	int fwd_port; /* push: the host end of the forward, 0 until set up */
	char *fwd_vm; /* the domain the forward was added to (a cell may get a new VM per run) */
};

static char *network_supports(const struct method_ctx *ctx)
{
	const struct plan_vm *vm = ctx->cell->vm;
	if (vm->os == PLAN_OS_WINDOWS)
		return xstrdup("network: the guest side uses busybox wget/nc and a POSIX shell "
			       "(Linux guests only)");
	if (vm->nic.network || vm->nic.bridge)
		return xasprintf("network: NICs on a %s ('%s') are not supported yet: ferry's "
				 "sender listens on the host's loopback, which only QEMU user "
				 "networking maps into the guest (10.0.2.2)",
				 vm->nic.network ? "libvirt network" : "bridge",
				 vm->nic.network ? vm->nic.network : vm->nic.bridge);
	if (vm->nic.queues > 1)
		return xstrdup("network: QEMU user networking has a single queue pair (queues > 1 "
			       "needs a tap)");
	return pack_guest_support(&ctx->method->archive, vm->guest == PLAN_GUEST_BUILTIN);
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
		s->srv.lfd = -1;
		s->srv.stop[0] = s->srv.stop[1] = -1;
		ctx->state = s;
	}
	return ctx->state;
}

/* ---- the pull server ---- */

static bool url_safe(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '~' || c == '-' || c == '/';
}

static void url_encode(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (url_safe(*p))
			fputc(*p, f);
		else
			fprintf(f, "%%%02X", *p);
}

static char *url_decode(const char *s, size_t n)
{
	char *out = xmalloc(n + 1), *o = out;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%' && i + 2 < n && hex_digit_value(s[i + 1]) >= 0 &&
		    hex_digit_value(s[i + 2]) >= 0) {
			*o++ = (char)(hex_digit_value(s[i + 1]) * 16 + hex_digit_value(s[i + 2]));
			i += 2;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
}

/* The file list the guest walks: "d - PATH", "f URLPATH PATH", "l URLPATH PATH". */
static char *file_list(const struct manifest *m, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	for (size_t i = 0; i < m->n; i++) {
		const struct manifest_entry *e = &m->entries[i];
		fputc("dfl"[e->type == MANIFEST_DIR ? 0 : e->type == MANIFEST_FILE ? 1 : 2], f);
		fputc(' ', f);
		if (e->type == MANIFEST_DIR)
			fputc('-', f);
		else
			url_encode(f, e->path);
		fprintf(f, " %s\n", e->path);
	}
	fclose(f);
	return buf;
}

static void server_error(struct server *srv, char *msg)
{
	if (!srv->err)
		srv->err = msg;
	else
		free(msg);
}

static int send_header(struct server *srv, int c, const char *status, long long len)
{
	char h[160];
	if (len >= 0)
		snprintf(h, sizeof(h),
			 "HTTP/1.0 %s\r\nContent-Length: %lld\r\nConnection: close\r\n\r\n", status,
			 len);
	else
		snprintf(h, sizeof(h), "HTTP/1.0 %s\r\nConnection: close\r\n\r\n", status);
	char *err = NULL;
	if (stream_write_all(c, h, strlen(h), srv->timeout_ms, &err) < 0) {
		server_error(srv, err);
		return -1;
	}
	return 0;
}

static void serve_one(struct server *srv, int c)
{
	char req[8192];
	size_t n = 0;
	while (n < sizeof(req) - 1) {
		struct pollfd p = { .fd = c, .events = POLLIN };
		if (poll(&p, 1, (int)srv->timeout_ms) <= 0)
			return;
		ssize_t r = read(c, req + n, sizeof(req) - 1 - n);
		if (r <= 0)
			return;
		n += (size_t)r;
		req[n] = '\0';
		if (strstr(req, "\r\n\r\n"))
			break;
	}
	if (strncmp(req, "GET /", 5) != 0)
		return;
	const char *path = req + 4;
	size_t plen = strcspn(path, " \r\n");
	_cleanup_free_ char *p = url_decode(path, plen);
	char *err = NULL;
	if (srv->archive && STREQ(p, "/stream")) {
		if (send_header(srv, c, "200 OK", -1) < 0)
			return;
		uint64_t bytes = 0;
		if (stream_pack(srv->archive, srv->dir, srv->m, c, srv->timeout_ms, &bytes, &err) <
		    0)
			server_error(srv, xasprintf("streaming the archive: %s", err));
		free(err);
		srv->bytes += bytes;
		return;
	}
	if (!srv->archive && STREQ(p, "/.ferry-list")) {
		size_t len = 0;
		_cleanup_free_ char *list = file_list(srv->m, &len);
		if (send_header(srv, c, "200 OK", (long long)len) < 0)
			return;
		if (stream_write_all(c, list, len, srv->timeout_ms, &err) < 0)
			server_error(srv, err);
		return;
	}
	const struct manifest_entry *e = NULL;
	if (!srv->archive && (strncmp(p, "/f/", 3) == 0 || strncmp(p, "/l/", 3) == 0))
		e = manifest_find(srv->m, p + 3);
	if (e && p[1] == 'f' && e->type == MANIFEST_FILE) {
		if (send_header(srv, c, "200 OK", (long long)e->size) < 0)
			return;
		const struct manifest one = { .entries = (struct manifest_entry *)e,
					      .n = 1,
					      .root_dev = srv->m->root_dev,
					      .root_ino = srv->m->root_ino };
		uint64_t bytes = 0;
		if (stream_concat(srv->dir, &one, c, srv->timeout_ms, &bytes, NULL, &err) < 0)
			server_error(srv, xasprintf("sending '%s': %s", e->path, err));
		free(err);
		srv->bytes += bytes;
		return;
	}
	if (e && p[1] == 'l' && e->type == MANIFEST_SYMLINK) {
		if (send_header(srv, c, "200 OK", (long long)strlen(e->target)) < 0)
			return;
		if (stream_write_all(c, e->target, strlen(e->target), srv->timeout_ms, &err) < 0)
			server_error(srv, err);
		return;
	}
	server_error(srv, xasprintf("the guest asked for '%s', which is not in the dataset", p));
	send_header(srv, c, "404 Not Found", 0);
}

/* End a connection so that every byte reaches the guest: half-close, wait for its close. */
static void finish_connection(int c)
{
	shutdown(c, SHUT_WR);
	char buf[512];
	for (int i = 0; i < 100; i++) {
		struct pollfd p = { .fd = c, .events = POLLIN };
		if (poll(&p, 1, 100) <= 0 || read(c, buf, sizeof(buf)) <= 0)
			break;
	}
	close(c);
}

static void *server_main(void *arg)
{
	struct server *srv = arg;
	for (;;) {
		struct pollfd p[2] = { { .fd = srv->lfd, .events = POLLIN },
				       { .fd = srv->stop[0], .events = POLLIN } };
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		int c = accept4(srv->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		/* blocking, with a send timeout so that a dead reader cannot hang the thread */
		struct timeval tv = { 1, 0 };
		setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		serve_one(srv, c);
		finish_connection(c);
	}
	return NULL;
}

/* A socket bound to 127.0.0.1 on a free port (listening when listen_too). */
static int loopback_socket(bool listen_too, int *port, char **err)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    (listen_too && listen(s, 16) < 0) || getsockname(s, (struct sockaddr *)&sa, &sl) < 0) {
		*err = xasprintf("127.0.0.1 socket: %s", strerror(errno));
		if (s >= 0)
			close(s);
		return -1;
	}
	*port = ntohs(sa.sin_port);
	return s;
}

static void server_stop(struct server *srv)
{
	if (srv->running) {
		(void)!write(srv->stop[1], "x", 1);
		pthread_join(srv->thread, NULL);
		srv->running = false;
	}
	for (int i = 0; i < 2; i++)
		if (srv->stop[i] >= 0) {
			close(srv->stop[i]);
			srv->stop[i] = -1;
		}
	if (srv->lfd >= 0) {
		close(srv->lfd);
		srv->lfd = -1;
	}
}

static int server_start(struct method_ctx *ctx, struct server *srv)
{
	server_stop(srv);
	free(srv->err);
	srv->err = NULL;
	srv->bytes = 0;
	srv->archive =
	    ctx->method->archive.format != PLAN_ARCHIVE_NONE ? &ctx->method->archive : NULL;
	srv->dir = ctx->dataset_dir;
	srv->m = ctx->manifest;
	srv->timeout_ms = ctx->timeout_ms;
	_cleanup_free_ char *err = NULL;
	srv->lfd = loopback_socket(true, &srv->port, &err);
	if (srv->lfd < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "network: %s", err);
	if (pipe2(srv->stop, O_CLOEXEC) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "network: pipe: %s", strerror(errno));
	int r = pthread_create(&srv->thread, NULL, server_main, srv);
	if (r != 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "network: thread: %s", strerror(r));
	srv->running = true;
	return 0;
}

/* ---- the phases ---- */

static int network_prepare(struct method_ctx *ctx)
{
	struct network_state *s = state(ctx);
	if (ctx->method->direction == PLAN_DIRECTION_PULL)
		return server_start(ctx, &s->srv);
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
	_cleanup_free_ char *base = xasprintf("http://" HOST_FROM_GUEST ":%d", s->srv.port);
	if (s->srv.archive) {
		_cleanup_free_ char *src = xasprintf("wget -q -O - %s/stream", base);
		cmd = stream_unpack_command(s->srv.archive, src, ctx->landing);
	} else {
		_cleanup_free_ char *dst = method_shell_quote(ctx->landing);
		cmd = xasprintf(
		    "set -o pipefail; cd %s && wget -q -O - %s/.ferry-list | "
		    "while read -r k u p; do case \"$k\" in "
		    "d) mkdir -p -- \"$p\" || exit 1;; "
		    "f) wget -q -O \"$p\" \"%s/f/$u\" || exit 1;; "
		    "l) t=$(wget -q -O - \"%s/l/$u\") && ln -s -- \"$t\" \"$p\" || exit 1;; "
		    "esac; done",
		    dst, base, base, base);
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
	    xasprintf("netstat -ltn 2>/dev/null | grep -q ':%d '", PUSH_GUEST_PORT);
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
	_cleanup_free_ char *src = xasprintf("nc -l -p %d", PUSH_GUEST_PORT);
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
	if (stream_pack(a, ctx->dataset_dir, ctx->manifest, c, ctx->timeout_ms, &bytes, &err) < 0) {
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
