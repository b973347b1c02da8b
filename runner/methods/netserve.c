/* SPDX-License-Identifier: MIT */
/* The network method's host side: the pull server, the tokens, the guest command lines. */
#include "netserve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "hash.h"
#include "util.h"
#include "method.h"
#include "stream.h"

int netserve_token(char out[NETSERVE_TOKEN_LEN + 1])
{
	unsigned char r[NETSERVE_TOKEN_LEN / 2];
	size_t got = 0;
	while (got < sizeof(r)) {
		ssize_t n = getrandom(r + got, sizeof(r) - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		got += (size_t)n;
	}
	hex_encode(r, sizeof(r), out);
	return 0;
}

void server_init(struct server *srv)
{
	*srv = (struct server){ .lfd = -1, .stop = { -1, -1 } };
	pthread_mutex_init(&srv->lock, NULL);
}

void netserve_split(const struct manifest *m, unsigned n, struct manifest *parts, size_t **index)
{
	uint64_t load[NETSERVE_STREAMS_MAX] = { 0 };
	size_t cap[NETSERVE_STREAMS_MAX] = { 0 };
	size_t icap[NETSERVE_STREAMS_MAX] = { 0 };
	for (unsigned k = 0; k < n; k++) {
		parts[k] = (struct manifest){ .root_dev = m->root_dev, .root_ino = m->root_ino };
		if (index)
			index[k] = NULL;
	}
	for (size_t i = 0; i < m->n; i++) {
		const struct manifest_entry *e = &m->entries[i];
		unsigned lo = 0, hi = 0;
		if (e->type == MANIFEST_DIR) {
			lo = 0, hi = n; /* every part */
		} else {
			for (unsigned k = 1; k < n; k++)
				if (load[k] < load[lo])
					lo = k;
			hi = lo + 1;
			/* a file costs its bytes plus a header's worth, so empty files spread too
			 */
			load[lo] += e->size + 512;
		}
		for (unsigned k = lo; k < hi; k++) {
			struct manifest *p = &parts[k];
			p->entries = xgrow(p->entries, &cap[k], p->n + 1, sizeof(*p->entries));
			if (index)
				index[k] = xgrow(index[k], &icap[k], p->n + 1, sizeof(**index));
			if (index)
				index[k][p->n] = i;
			p->entries[p->n++] = *e;
			if (e->type == MANIFEST_FILE) {
				p->files++;
				p->bytes += e->size;
			}
		}
	}
}

void netserve_parts_clear(struct manifest *parts, size_t **index, unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		free(parts[k].entries);
		parts[k] = (struct manifest){ 0 };
		if (index) {
			free(index[k]);
			index[k] = NULL;
		}
	}
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

/* The file list the guest walks: NUL-terminated records "<d|f|l><index>/<path>" (index: in the
 * whole manifest, from index[] when m is a part). */
static char *file_list(const struct manifest *m, const size_t *index, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	for (size_t i = 0; i < m->n; i++) {
		const struct manifest_entry *e = &m->entries[i];
		fprintf(f, "%c%zu/%s",
			"dfl"[e->type == MANIFEST_DIR    ? 0
			      : e->type == MANIFEST_FILE ? 1
							 : 2],
			index ? index[i] : i, e->path);
		fputc('\0', f);
	}
	fclose(f);
	return buf;
}

/* The part a "" or "/K" suffix names, or -1. */
static int part_at(const struct server *srv, const char *s)
{
	if (!*s)
		return 0;
	if (*s != '/' || s[1] < '0' || s[1] > '9')
		return -1;
	char *end;
	errno = 0;
	unsigned long k = strtoul(s + 1, &end, 10);
	return errno || *end || k >= srv->n_parts ? -1 : (int)k;
}

/* The entry a "/f/<index>" or "/l/<index>" names, or NULL. */
static const struct manifest_entry *entry_at(const struct manifest *m, const char *s)
{
	if (!*s || *s < '0' || *s > '9')
		return NULL;
	char *end;
	errno = 0;
	unsigned long long i = strtoull(s, &end, 10);
	if (errno || *end || i >= m->n)
		return NULL;
	return &m->entries[i];
}

static void server_error(struct server *srv, char *msg)
{
	pthread_mutex_lock(&srv->lock);
	if (!srv->err)
		srv->err = TAKE_PTR(msg);
	pthread_mutex_unlock(&srv->lock);
	free(msg);
}

static void server_count(struct server *srv, uint64_t bytes, unsigned rejected)
{
	pthread_mutex_lock(&srv->lock);
	srv->bytes += bytes;
	srv->rejected += rejected;
	pthread_mutex_unlock(&srv->lock);
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
	_cleanup_free_ char *full = url_decode(path, plen);
	/* another local user without the token learns nothing, not even what exists */
	if (strncmp(full + 1, srv->token, NETSERVE_TOKEN_LEN) != 0 ||
	    full[1 + NETSERVE_TOKEN_LEN] != '/') {
		server_count(srv, 0, 1);
		send_header(srv, c, "404 Not Found", 0);
		return;
	}
	const char *p = full + 1 + NETSERVE_TOKEN_LEN;
	char *err = NULL;
	int k;
	if (srv->archive && strncmp(p, "/stream", 7) == 0 && (k = part_at(srv, p + 7)) >= 0) {
		if (send_header(srv, c, "200 OK", -1) < 0)
			return;
		uint64_t bytes = 0;
		if (stream_pack(srv->archive, srv->dir, &srv->parts[k], c, srv->timeout_ms, &bytes,
				&err) < 0)
			server_error(srv, xasprintf("streaming the archive: %s", err));
		free(err);
		server_count(srv, bytes, 0);
		return;
	}
	if (!srv->archive && strncmp(p, "/.ferry-list", 12) == 0 &&
	    (k = part_at(srv, p + 12)) >= 0) {
		size_t len = 0;
		_cleanup_free_ char *list = file_list(&srv->parts[k], srv->part_index[k], &len);
		if (send_header(srv, c, "200 OK", (long long)len) < 0)
			return;
		if (stream_write_all(c, list, len, srv->timeout_ms, &err) < 0)
			server_error(srv, err);
		return;
	}
	const struct manifest_entry *e = NULL;
	if (!srv->archive && (strncmp(p, "/f/", 3) == 0 || strncmp(p, "/l/", 3) == 0))
		e = entry_at(srv->m, p + 3);
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
		server_count(srv, bytes, 0);
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
void finish_connection(int c)
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
		/* the listening socket is non-blocking: another thread may take the connection */
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
int loopback_socket(bool listen_too, int *port, char **err)
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

void server_stop(struct server *srv)
{
	if (srv->running) {
		/* the pipe stays readable: every thread sees it */
		(void)!write(srv->stop[1], "x", 1);
		for (unsigned i = 0; i < srv->n_threads; i++)
			pthread_join(srv->threads[i], NULL);
		srv->n_threads = 0;
		srv->running = false;
	}
	netserve_parts_clear(srv->parts, srv->part_index, srv->n_parts);
	srv->n_parts = 0;
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

int server_start(struct server *srv, const struct plan_archive *archive, const char *dir,
		 const struct manifest *m, unsigned timeout_ms, char **err)
{
	return server_start_streams(srv, archive, dir, m, 1, -1, NULL, timeout_ms, err);
}

int server_start_streams(struct server *srv, const struct plan_archive *archive, const char *dir,
			 const struct manifest *m, unsigned streams, int lfd, const char *addr,
			 unsigned timeout_ms, char **err)
{
	server_stop(srv);
	if (streams < 1 || streams > NETSERVE_STREAMS_MAX) {
		if (lfd >= 0)
			close(lfd);
		*err = xasprintf("streams must be 1 to %d, not %u", NETSERVE_STREAMS_MAX, streams);
		return -1;
	}
	free(srv->err);
	srv->err = NULL;
	srv->bytes = 0;
	srv->rejected = 0;
	srv->archive = archive;
	srv->dir = dir;
	srv->m = m;
	srv->timeout_ms = timeout_ms;
	if (netserve_token(srv->token) < 0) {
		if (lfd >= 0)
			close(lfd);
		*err = xasprintf("random token: %s", strerror(errno));
		return -1;
	}
	if (lfd >= 0) {
		srv->lfd = lfd;
		struct sockaddr_in sa = { .sin_family = AF_INET };
		socklen_t sl = sizeof(sa);
		if (!addr || inet_pton(AF_INET, addr, &sa.sin_addr) != 1 ||
		    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 64) < 0 ||
		    getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0) {
			*err = xasprintf("listening on %s: %s", addr ? addr : "(none)",
					 strerror(errno));
			return -1;
		}
		srv->port = ntohs(sa.sin_port);
	} else {
		srv->lfd = loopback_socket(true, &srv->port, err);
		if (srv->lfd < 0)
			return -1;
	}
	/* several threads accept from it: whoever loses a connection must not block */
	fcntl(srv->lfd, F_SETFL, fcntl(srv->lfd, F_GETFL) | O_NONBLOCK);
	if (pipe2(srv->stop, O_CLOEXEC) < 0) {
		*err = xasprintf("pipe: %s", strerror(errno));
		return -1;
	}
	srv->n_parts = streams;
	netserve_split(m, streams, srv->parts, srv->part_index);
	srv->running = true;
	for (unsigned i = 0; i < streams; i++) {
		int r = pthread_create(&srv->threads[i], NULL, server_main, srv);
		if (r != 0) {
			*err = xasprintf("thread: %s", strerror(r));
			server_stop(srv);
			return -1;
		}
		srv->n_threads++;
	}
	return 0;
}

char *netserve_pull_files_command(const char *base, const char *dir)
{
	return netserve_pull_part_command(base, 0, dir);
}

char *netserve_pull_part_command(const char *base, unsigned part, const char *dir)
{
	_cleanup_free_ char *d = shell_quote(dir);
	_cleanup_free_ char *b = shell_quote(base);
	/* one record per argument (xargs -0): no read, no IFS, no name taken as an option ("./"
	   in front of every path); the server finds entries by index */
	return xasprintf(
	    METHOD_SH_PIPEFAIL
	    "cd %s && wget -q -O - %s/.ferry-list/%u | xargs -0 sh -c '"
	    "b=$1; shift; for r; do k=${r%%\"${r#?}\"}; r=${r#?}; i=${r%%%%/*}; p=./${r#*/}; "
	    "case $k in "
	    "d) mkdir -p -- \"$p\" || exit 1;; "
	    "f) wget -q -O \"$p\" \"$b/f/$i\" || exit 1;; "
	    "l) t=$(wget -q -O - \"$b/l/$i\") && ln -s -- \"$t\" \"$p\" || exit 1;; "
	    "*) exit 1;; esac; done' sh %s",
	    d, b, part, b);
}

char *netserve_parallel_command(char *const *cmds, unsigned n)
{
	if (n == 1)
		return xstrdup(cmds[0]);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	/* every command in its own subshell (each has its own `set -o pipefail`); wait for each
	   by pid, so that one failing fails the whole */
	for (unsigned i = 0; i < n; i++)
		fprintf(f, "( %s ) & p%u=$!; ", cmds[i], i);
	fputs("rc=0; ", f);
	for (unsigned i = 0; i < n; i++)
		fprintf(f, "wait $p%u || rc=1; ", i);
	fputs("exit $rc", f);
	fclose(f);
	return buf;
}

char *netserve_push_source(int port, const char *token)
{
	/* dd bs=1: exactly the token line is read, the stream after it is left to the unpacker.
	   `nc -l -p PORT` is busybox's and Debian's netcat-openbsd's spelling alike */
	return xasprintf("nc -l -p %d | { t=$(dd bs=1 count=%d 2>/dev/null); "
			 "if [ \"$t\" != '%s' ]; then echo 'network: push: wrong or no token' >&2; "
			 "exit 1; fi; cat; }",
			 port, NETSERVE_TOKEN_LEN + 1, token);
}
