/* SPDX-License-Identifier: MIT */
#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <archive.h>
#include <openssl/evp.h>

#include "cleanup.h"
#include "dataset.h"
#include "run.h"
#include "util.h"
#include "archive.h"
#include "method.h"

#define READ_CHUNK (1024 * 1024)

int stream_write_all(int fd, const void *buf, size_t len, unsigned timeout_ms, char **err)
{
	const char *p = buf;
	bool sock = true;
	while (len > 0) {
		/* a reader that takes a byte at a time progresses forever: the run's deadline */
		if (run_deadline_passed()) {
			*err = xasprintf(STREAM_DEADLINE
					 " (%u ms) passed with %zu bytes still to send",
					 run_deadline_timeout_ms(), len);
			return -1;
		}
		/* a socket whose reader went away must give EPIPE, not kill ferry with SIGPIPE */
		ssize_t n = sock ? send(fd, p, len, MSG_NOSIGNAL) : write(fd, p, len);
		if (n < 0 && errno == ENOTSOCK) {
			sock = false;
			continue;
		}
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR && !run_interrupted())
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			/* non-blocking fd: wait until writable, a second at a time, so that an
			 * interrupt is seen */
			uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000u;
			for (;;) {
				struct pollfd pfd = { .fd = fd, .events = POLLOUT };
				int r = poll(&pfd, 1, 1000);
				if (r > 0)
					break;
				if (run_interrupted()) {
					*err = xstrdup("interrupted");
					return -1;
				}
				if (now_ns() >= end || run_deadline_passed()) {
					*err = xasprintf(STREAM_STALLED " %u ms", timeout_ms);
					return -1;
				}
			}
			continue;
		}
		*err = xasprintf("write: %s", n < 0 ? strerror(errno) : "no progress");
		return -1;
	}
	return 0;
}

struct sink {
	int fd;
	unsigned timeout_ms;
	uint64_t bytes;
	char *err;
};

static la_ssize_t sink_write(struct archive *a, void *ud, const void *buf, size_t len)
{
	struct sink *s = ud;
	/* after a failure libarchive may write again (closing flushes): the first error stands,
	   and a stalled reader is not waited for twice */
	if (s->err || stream_write_all(s->fd, buf, len, s->timeout_ms, &s->err) < 0) {
		archive_set_error(a, EIO, "%s", s->err);
		return -1;
	}
	s->bytes += len;
	return (la_ssize_t)len;
}

int stream_pack(const struct plan_archive *pa, const char *dir, const struct manifest *m, int fd,
		unsigned timeout_ms, uint64_t *bytes, char **err)
{
	struct sink s = { .fd = fd, .timeout_ms = timeout_ms };
	/* format and entries as agent-file packs them (archive.c): tar is pax-restricted (ustar
	   unless a name needs more), no padding after the end, so the reader gets exactly what
	   it needs */
	_cleanup_(archive_write_freep) struct archive *a = archive_write_new();
	int rc = pack_setup(a, pa, err);
	if (rc == 0 && archive_write_open(a, &s, NULL, sink_write, NULL) != ARCHIVE_OK) {
		*err = xasprintf("archive: %s", s.err ? s.err : archive_error_string(a));
		rc = -1;
	}
	if (rc == 0)
		rc = pack_entries(a, dir, m, err);
	if (rc == 0 && archive_write_close(a) != ARCHIVE_OK) {
		*err = xasprintf("archive: %s", s.err ? s.err : archive_error_string(a));
		rc = -1;
	}
	/* freed before s.err: archive_write_free closes and flushes through sink_write, which
	   reads s.err */
	archive_write_free(a);
	a = NULL;
	free(s.err);
	*bytes = s.bytes;
	return rc;
}

int stream_concat(const char *dir, const struct manifest *m, int fd, unsigned timeout_ms,
		  uint64_t *bytes, unsigned char sha[32], char **err)
{
	/* no digest when nobody asked for one (the network pull server): SHA-256 of every byte
	   sent is host CPU taken from the guest's vCPU thread on a busy host */
	_cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *md = sha ? EVP_MD_CTX_new() : NULL;
	if (md)
		EVP_DigestInit_ex(md, EVP_sha256(), NULL);
	_cleanup_free_ char *buf = xmalloc(READ_CHUNK);
	*bytes = 0;
	_cleanup_close_ int root = dataset_open_root(dir, m, err);
	if (root < 0)
		return -1;
	for (size_t i = 0; i < m->n; i++) {
		const struct manifest_entry *me = &m->entries[i];
		if (me->type != MANIFEST_FILE)
			continue;
		_cleanup_free_ char *path = xasprintf("%s/%s", dir, me->path);
		_cleanup_close_ int in = dataset_open_file(root, me, err);
		if (in < 0)
			return -1;
		uint64_t left = me->size;
		while (left > 0) {
			size_t want = left < READ_CHUNK ? (size_t)left : READ_CHUNK;
			ssize_t n = read(in, buf, want);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				*err = xasprintf("'%s': %s", path,
						 n < 0 ? strerror(errno)
						       : "shorter than its manifest");
				return -1;
			}
			if (md)
				EVP_DigestUpdate(md, buf, (size_t)n);
			if (fd >= 0 && stream_write_all(fd, buf, (size_t)n, timeout_ms, err) < 0)
				return -1;
			left -= (uint64_t)n;
			*bytes += (uint64_t)n;
		}
	}
	if (md)
		EVP_DigestFinal_ex(md, sha, NULL);
	return 0;
}

char *stream_unpack_command(const struct plan_archive *a, const char *source, const char *dir)
{
	_cleanup_free_ char *q = shell_quote(dir);
	/* without a source command the unpacker reads its own stdin: no pipe stage */
	_cleanup_free_ char *from = source ? xasprintf("%s | ", source) : xstrdup("");
	const char *dec = "";
	if (a->format != PLAN_ARCHIVE_ZIP) {
		switch (a->compression) {
		case PLAN_COMPRESS_NONE: break;
		case PLAN_COMPRESS_GZIP: dec = "gzip -dc | "; break;
		case PLAN_COMPRESS_ZSTD: dec = "zstd -dc | "; break;
		case PLAN_COMPRESS_LZ4: dec = "lz4 -dc | "; break;
		case PLAN_COMPRESS_XZ: dec = "xz -dc | "; break;
		}
	}
	switch (a->format) {
	case PLAN_ARCHIVE_NONE:
	case PLAN_ARCHIVE_TAR:
	case PLAN_ARCHIVE_PAX:
		/* busybox tar reads on to the end of its input after the end-of-archive blocks; GNU
		 * tar may stop there: drain the rest so the writer never sees a broken pipe */
		return xasprintf(METHOD_SH_PIPEFAIL "%s%s{ tar -x -f - -C %s && cat >/dev/null; }",
				 from, dec, q);
	case PLAN_ARCHIVE_CPIO:
		/* cpio stops at its trailer: drain the rest so the writer never sees a broken
		 * pipe */
		return xasprintf(METHOD_SH_PIPEFAIL
				 "cd %s && %s%s{ cpio -i -d -m -u 2>/dev/null || "
				 "exit 1; cat >/dev/null; }",
				 q, from, dec);
	case PLAN_ARCHIVE_ZIP:
		/* unzip needs a seekable file (the central directory is at the end) */
		return xasprintf(
		    METHOD_SH_PIPEFAIL
		    "%s > %s/.ferry-stream.zip && "
		    "unzip -o -q %s/.ferry-stream.zip -d %s && rm -f %s/.ferry-stream.zip",
		    source ? source : "cat", q, q, q, q);
	}
	return NULL;
}
