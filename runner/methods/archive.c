/* SPDX-License-Identifier: MIT */
#include "archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "rules.h"
#include "util.h"

char *pack_guest_support(const struct plan_archive *a, bool builtin)
{
	/* one place for the rule: the plan's rules table */
	return plan_rules_archive_skip(a, builtin);
}

const char *pack_suffix(const struct plan_archive *a)
{
	switch (a->format) {
	case PLAN_ARCHIVE_ZIP: return ".zip";
	case PLAN_ARCHIVE_CPIO:
		return a->compression == PLAN_COMPRESS_GZIP ? ".cpio.gz"
		       : a->compression == PLAN_COMPRESS_XZ ? ".cpio.xz"
							    : ".cpio";
	default:
		return a->compression == PLAN_COMPRESS_GZIP ? ".tar.gz"
		       : a->compression == PLAN_COMPRESS_XZ ? ".tar.xz"
							    : ".tar";
	}
}

char *pack_guest_unpack_cmd(const struct plan_archive *a, const char *file)
{
	_cleanup_free_ char *q = shell_quote(file);
	if (a->format == PLAN_ARCHIVE_ZIP)
		return xasprintf("unzip -q -o %s", q);
	const char *cat = a->compression == PLAN_COMPRESS_GZIP ? "gunzip -c"
			  : a->compression == PLAN_COMPRESS_XZ ? "unxz -c"
							       : "cat";
	if (a->format == PLAN_ARCHIVE_CPIO)
		return xasprintf("%s %s | cpio -i -d -m 2>/dev/null", cat, q);
	return xasprintf("%s %s | tar -xf -", cat, q);
}

int pack_setup(struct archive *w, const struct plan_archive *a, char **err)
{
	int r;
	switch (a->format) {
	case PLAN_ARCHIVE_PAX: r = archive_write_set_format_pax(w); break;
	case PLAN_ARCHIVE_CPIO: r = archive_write_set_format_cpio_newc(w); break;
	case PLAN_ARCHIVE_ZIP:
		r = archive_write_set_format_zip(w);
		if (r == ARCHIVE_OK)
			r = a->compression == PLAN_COMPRESS_NONE
				? archive_write_zip_set_compression_store(w)
				: archive_write_zip_set_compression_deflate(w);
		break;
	default: r = archive_write_set_format_pax_restricted(w); break;
	}
	if (r == ARCHIVE_OK && a->format != PLAN_ARCHIVE_ZIP) {
		switch (a->compression) {
		case PLAN_COMPRESS_GZIP: r = archive_write_add_filter_gzip(w); break;
		case PLAN_COMPRESS_XZ: r = archive_write_add_filter_xz(w); break;
		case PLAN_COMPRESS_ZSTD: r = archive_write_add_filter_zstd(w); break;
		case PLAN_COMPRESS_LZ4: r = archive_write_add_filter_lz4(w); break;
		default: r = archive_write_add_filter_none(w); break;
		}
	}
	if (r == ARCHIVE_OK && a->level > 0 && a->compression != PLAN_COMPRESS_NONE) {
		char lv[24];
		snprintf(lv, sizeof(lv), "%u", (unsigned)a->level);
		if (a->format == PLAN_ARCHIVE_ZIP)
			r = archive_write_set_format_option(w, "zip", "compression-level", lv);
		else
			r = archive_write_set_filter_option(w, NULL, "compression-level", lv);
	}
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
		*err = xasprintf("libarchive: %s", archive_error_string(w));
		return -1;
	}
	archive_write_set_bytes_in_last_block(w, 1);
	return 0;
}

int pack_entries(struct archive *w, const char *dir, const struct manifest *m, char **err)
{
	/* every file read below one directory descriptor, each the inode the scan saw */
	_cleanup_close_ int root = dataset_open_root(dir, m, err);
	if (root < 0)
		return -1;
	struct archive_entry *e = archive_entry_new();
	char *buf = xmalloc(1 << 20);
	int rc = 0;
	for (size_t i = 0; i < m->n && rc == 0; i++) {
		const struct manifest_entry *me = &m->entries[i];
		archive_entry_clear(e);
		archive_entry_set_pathname(e, me->path);
		archive_entry_set_mtime(e, 0, 0);
		archive_entry_set_size(e, 0); /* the cpio writer wants a size on every entry */
		switch (me->type) {
		case MANIFEST_DIR:
			archive_entry_set_filetype(e, AE_IFDIR);
			archive_entry_set_perm(e, 0755);
			archive_entry_set_size(e, 0); /* cpio refuses entries without a size */
			break;
		case MANIFEST_SYMLINK:
			archive_entry_set_filetype(e, AE_IFLNK);
			archive_entry_set_perm(e, 0777);
			archive_entry_set_symlink(e, me->target);
			archive_entry_set_size(e, 0); /* libarchive stores the target itself */
			break;
		default:
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_perm(e, 0644);
			archive_entry_set_size(e, (la_int64_t)me->size);
			break;
		}
		if (archive_write_header(w, e) < ARCHIVE_WARN) {
			*err = xasprintf("libarchive: '%s': %s", me->path, archive_error_string(w));
			rc = -1;
			break;
		}
		if (me->type != MANIFEST_FILE)
			continue;
		_cleanup_free_ char *p = xasprintf("%s/%s", dir, me->path);
		int fd = dataset_open_file(root, me, err);
		if (fd < 0) {
			rc = -1;
			break;
		}
		ssize_t n;
		uint64_t left = me->size;
		/* exactly the size in the header: a file that grew since is cut, one that shrank
		   fails below */
		while (left > 0 &&
		       (n = read(fd, buf, left < (1u << 20) ? (size_t)left : (1u << 20))) > 0) {
			left -= (uint64_t)n;
			if (archive_write_data(w, buf, (size_t)n) < 0) {
				*err = xasprintf("libarchive: '%s': %s", me->path,
						 archive_error_string(w));
				rc = -1;
				break;
			}
		}
		if (left > 0 && rc == 0) {
			*err = xasprintf("'%s': %s", p,
					 n < 0 ? strerror(errno) : "shorter than its manifest");
			rc = -1;
		}
		close(fd);
	}
	free(buf);
	archive_entry_free(e);
	return rc;
}

struct stream {
	pack_sink_fn sink;
	void *userdata;
	char *buf;
	size_t len, cap;
	char *err;
};

static la_ssize_t stream_write(struct archive *a, void *ud, const void *buf, size_t len)
{
	struct stream *s = ud;
	const char *p = buf;
	size_t left = len;
	while (left > 0) {
		size_t n = s->cap - s->len < left ? s->cap - s->len : left;
		memcpy(s->buf + s->len, p, n);
		s->len += n;
		p += n;
		left -= n;
		if (s->len == s->cap) {
			/* after a failure libarchive may write again (closing flushes): the
			   first error stands */
			if (s->err || s->sink(s->userdata, s->buf, s->len, &s->err) < 0) {
				archive_set_error(a, EIO, "%s", s->err);
				return -1;
			}
			s->len = 0;
		}
	}
	return (la_ssize_t)len;
}

int pack_stream(const struct plan_archive *a, const char *dir, const struct manifest *m,
		size_t chunk, pack_sink_fn sink, void *userdata, char **err)
{
	struct archive *w = archive_write_new();
	struct stream s = {
		.sink = sink, .userdata = userdata, .buf = xmalloc(chunk), .cap = chunk
	};
	int rc = pack_setup(w, a, err);
	if (rc == 0 && archive_write_open(w, &s, NULL, stream_write, NULL) != ARCHIVE_OK) {
		*err = xasprintf("libarchive: %s", archive_error_string(w));
		rc = -1;
	}
	if (rc == 0)
		rc = pack_entries(w, dir, m, err);
	if (archive_write_close(w) != ARCHIVE_OK && rc == 0) {
		*err = xasprintf("libarchive: %s", archive_error_string(w));
		rc = -1;
	}
	if (rc == 0 && s.len > 0 && sink(userdata, s.buf, s.len, &s.err) < 0) {
		*err = TAKE_PTR(s.err);
		rc = -1;
	}
	if (rc < 0 && s.err && !*err)
		*err = TAKE_PTR(s.err);
	free(s.err);
	archive_write_free(w);
	free(s.buf);
	return rc;
}
