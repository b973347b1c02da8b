/* SPDX-License-Identifier: MIT */
#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <archive.h>
#include <archive_entry.h>
#include <openssl/evp.h>

#include "../run.h"
#include "../util.h"
#include "method.h"

#define READ_CHUNK (1024 * 1024)

char *stream_unpack_unsupported(const struct plan_archive *a, bool builtin)
{
	static const char *const cname[] = { "none", "gzip", "zstd", "lz4", "xz" };
	if (a->format == PLAN_ARCHIVE_ZIP) {
		if (a->compression != PLAN_COMPRESS_NONE && a->compression != PLAN_COMPRESS_GZIP)
			return xasprintf("zip with %s compression: the guest's unzip reads stored "
					 "and deflated entries only (use compression none or gzip)",
					 cname[a->compression]);
		return NULL;
	}
	if (builtin &&
	    (a->compression == PLAN_COMPRESS_ZSTD || a->compression == PLAN_COMPRESS_LZ4))
		return xasprintf("the built-in guest's busybox cannot decompress %s (it has gzip "
				 "and xz)",
				 cname[a->compression]);
	return NULL;
}

int stream_write_all(int fd, const void *buf, size_t len, unsigned timeout_ms, char **err)
{
	const char *p = buf;
	bool sock = true;
	while (len > 0) {
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
				if (now_ns() >= end) {
					*err = xasprintf("the reader took no data for %u ms",
							 timeout_ms);
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
	if (stream_write_all(s->fd, buf, len, s->timeout_ms, &s->err) < 0) {
		archive_set_error(a, EIO, "%s", s->err);
		return -1;
	}
	s->bytes += len;
	return (la_ssize_t)len;
}

static int set_format(struct archive *a, const struct plan_archive *pa, char **err)
{
	int r = ARCHIVE_OK;
	switch (pa->format) {
	case PLAN_ARCHIVE_NONE:
	case PLAN_ARCHIVE_TAR: r = archive_write_set_format_gnutar(a); break;
	case PLAN_ARCHIVE_PAX: r = archive_write_set_format_pax(a); break;
	case PLAN_ARCHIVE_CPIO:
		/* busybox cpio reads newc (and crc) only */
		r = archive_write_set_format_cpio_newc(a);
		break;
	case PLAN_ARCHIVE_ZIP:
		r = archive_write_set_format_zip(a);
		if (r == ARCHIVE_OK)
			r = archive_write_set_format_option(
			    a, "zip", "compression",
			    pa->compression == PLAN_COMPRESS_GZIP ? "deflate" : "store");
		if (r == ARCHIVE_OK && pa->level) {
			char lv[24];
			snprintf(lv, sizeof(lv), "%llu", (unsigned long long)pa->level);
			r = archive_write_set_format_option(a, "zip", "compression-level", lv);
		}
		break;
	}
	if (r != ARCHIVE_OK) {
		*err = xasprintf("archive format: %s", archive_error_string(a));
		return -1;
	}
	if (pa->format == PLAN_ARCHIVE_ZIP)
		return 0;
	switch (pa->compression) {
	case PLAN_COMPRESS_NONE: break;
	case PLAN_COMPRESS_GZIP: r = archive_write_add_filter_gzip(a); break;
	case PLAN_COMPRESS_ZSTD: r = archive_write_add_filter_zstd(a); break;
	case PLAN_COMPRESS_LZ4: r = archive_write_add_filter_lz4(a); break;
	case PLAN_COMPRESS_XZ: r = archive_write_add_filter_xz(a); break;
	}
	if (r == ARCHIVE_OK && pa->compression != PLAN_COMPRESS_NONE && pa->level) {
		char lv[24];
		snprintf(lv, sizeof(lv), "%llu", (unsigned long long)pa->level);
		r = archive_write_set_filter_option(a, NULL, "compression-level", lv);
	}
	if (r != ARCHIVE_OK) {
		*err = xasprintf("archive compression: %s", archive_error_string(a));
		return -1;
	}
	return 0;
}

static void archive_write_freep(struct archive **a)
{
	if (*a)
		archive_write_free(*a);
}

static void archive_entry_freep(struct archive_entry **e)
{
	if (*e)
		archive_entry_free(*e);
}

int stream_pack(const struct plan_archive *pa, const char *dir, const struct manifest *m, int fd,
		unsigned timeout_ms, uint64_t *bytes, char **err)
{
	struct sink s = { .fd = fd, .timeout_ms = timeout_ms };
	_cleanup_(archive_write_freep) struct archive *a = archive_write_new();
	if (set_format(a, pa, err) < 0)
		return -1;
	/* no padding after the end of the archive: the reader gets exactly what it needs */
	archive_write_set_bytes_in_last_block(a, 1);
	if (archive_write_open(a, &s, NULL, sink_write, NULL) != ARCHIVE_OK) {
		*err = xasprintf("archive: %s", archive_error_string(a));
		free(s.err);
		return -1;
	}
	_cleanup_free_ char *buf = xmalloc(READ_CHUNK);
	int rc = -1;
	for (size_t i = 0; i < m->n; i++) {
		const struct manifest_entry *me = &m->entries[i];
		_cleanup_free_ char *path = xasprintf("%s/%s", dir, me->path);
		struct stat st;
		if (lstat(path, &st) < 0) {
			*err = xasprintf("'%s': %s", path, strerror(errno));
			goto out;
		}
		_cleanup_(archive_entry_freep) struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, me->path);
		archive_entry_set_mtime(e, st.st_mtime, 0);
		archive_entry_set_uid(e, 0);
		archive_entry_set_gid(e, 0);
		archive_entry_set_perm(e, st.st_mode & 07777);
		_cleanup_close_ int in = -1;
		switch (me->type) {
		case MANIFEST_DIR:
			archive_entry_set_filetype(e, AE_IFDIR);
			archive_entry_set_size(e, 0); /* cpio wants every size set */
			break;
		case MANIFEST_SYMLINK:
			archive_entry_set_filetype(e, AE_IFLNK);
			archive_entry_set_symlink(e, me->target);
			archive_entry_set_size(e, 0); /* libarchive stores the target itself */
			break;
		case MANIFEST_FILE:
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_size(e, (la_int64_t)me->size);
			in = open(path, O_RDONLY | O_CLOEXEC);
			if (in < 0) {
				*err = xasprintf("'%s': %s", path, strerror(errno));
				goto out;
			}
			break;
		}
		if (archive_write_header(a, e) != ARCHIVE_OK) {
			*err = xasprintf("archive '%s': %s", me->path, archive_error_string(a));
			goto out;
		}
		uint64_t left = me->type == MANIFEST_FILE ? me->size : 0;
		while (left > 0) {
			ssize_t n = read(in, buf, READ_CHUNK);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				*err = xasprintf("'%s': %s", path,
						 n < 0 ? strerror(errno)
						       : "shorter than its manifest");
				goto out;
			}
			if (archive_write_data(a, buf, (size_t)n) < 0) {
				*err = xasprintf("archive '%s': %s", me->path,
						 archive_error_string(a));
				goto out;
			}
			left -= (uint64_t)n < left ? (uint64_t)n : left;
		}
	}
	if (archive_write_close(a) != ARCHIVE_OK) {
		*err = xasprintf("archive: %s", archive_error_string(a));
		goto out;
	}
	rc = 0;
out:
	free(s.err);
	*bytes = s.bytes;
	return rc;
}

static void md_freep(EVP_MD_CTX **c)
{
	if (*c)
		EVP_MD_CTX_free(*c);
}

int stream_concat(const char *dir, const struct manifest *m, int fd, unsigned timeout_ms,
		  uint64_t *bytes, unsigned char sha[32], char **err)
{
	_cleanup_(md_freep) EVP_MD_CTX *md = EVP_MD_CTX_new();
	EVP_DigestInit_ex(md, EVP_sha256(), NULL);
	_cleanup_free_ char *buf = xmalloc(READ_CHUNK);
	*bytes = 0;
	for (size_t i = 0; i < m->n; i++) {
		const struct manifest_entry *me = &m->entries[i];
		if (me->type != MANIFEST_FILE)
			continue;
		_cleanup_free_ char *path = xasprintf("%s/%s", dir, me->path);
		_cleanup_close_ int in = open(path, O_RDONLY | O_CLOEXEC);
		if (in < 0) {
			*err = xasprintf("'%s': %s", path, strerror(errno));
			return -1;
		}
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
			EVP_DigestUpdate(md, buf, (size_t)n);
			if (fd >= 0 && stream_write_all(fd, buf, (size_t)n, timeout_ms, err) < 0)
				return -1;
			left -= (uint64_t)n;
			*bytes += (uint64_t)n;
		}
	}
	unsigned char tmp[32];
	EVP_DigestFinal_ex(md, sha ? sha : tmp, NULL);
	return 0;
}

char *stream_unpack_command(const struct plan_archive *a, const char *source, const char *dir)
{
	_cleanup_free_ char *q = method_shell_quote(dir);
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
		/* busybox tar reads on to the end of its input after the end-of-archive blocks */
		return xasprintf("set -o pipefail; %s | %star -x -f - -C %s", source, dec, q);
	case PLAN_ARCHIVE_CPIO:
		/* cpio stops at its trailer: drain the rest so the writer never sees a broken
		 * pipe */
		return xasprintf(
		    "set -o pipefail; cd %s && %s | %s{ cpio -i -d -m -u 2>/dev/null || "
		    "exit 1; cat >/dev/null; }",
		    q, source, dec);
	case PLAN_ARCHIVE_ZIP:
		/* unzip needs a seekable file (the central directory is at the end) */
		return xasprintf(
		    "set -o pipefail; %s > %s/.ferry-stream.zip && "
		    "unzip -o -q %s/.ferry-stream.zip -d %s && rm -f %s/.ferry-stream.zip",
		    source, q, q, q, q);
	}
	return NULL;
}
