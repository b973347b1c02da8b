/* SPDX-License-Identifier: MIT */
/* Reading a .deb (an ar archive) with libarchive: the members of its data.tar.*. */
#include <errno.h>

#include "cleanup.h"
#include "guest-build.h"

/* Reading the data.tar.* member of a .deb (an ar archive) as a nested libarchive stream. */
static la_ssize_t outer_read(struct archive *a, void *ud, const void **buf)
{
	struct archive *outer = ud;
	size_t size;
	la_int64_t off;
	int r = archive_read_data_block(outer, buf, &size, &off);

	if (r == ARCHIVE_EOF)
		return 0;
	if (r != ARCHIVE_OK) {
		archive_set_error(a, archive_errno(outer), "%s", archive_error_string(outer));
		return -1;
	}
	return (la_ssize_t)size;
}

int deb_walk(const char *deb, deb_entry_fn fn, void *ud, char **err)
{
	_cleanup_(archive_read_freep) struct archive *outer = archive_read_new();
	struct archive_entry *e;
	int r;

	archive_read_support_format_ar(outer);
	if (archive_read_open_filename(outer, deb, 1 << 16) != ARCHIVE_OK)
		return guest_err(err, -EIO, "cannot open '%s': %s", deb,
				 archive_error_string(outer));
	while ((r = archive_read_next_header(outer, &e)) == ARCHIVE_OK) {
		if (!has_prefix(archive_entry_pathname(e), "data.tar"))
			continue;
		_cleanup_(archive_read_freep) struct archive *in = archive_read_new();
		archive_read_support_filter_all(in);
		archive_read_support_format_tar(in);
		if (archive_read_open(in, outer, NULL, outer_read, NULL) != ARCHIVE_OK)
			return guest_err(err, -EIO, "cannot read '%s': %s", deb,
					 archive_error_string(in));
		while ((r = archive_read_next_header(in, &e)) == ARCHIVE_OK) {
			const char *path = archive_entry_pathname(e);
			while (path[0] == '.' && path[1] == '/')
				path += 2;
			while (path[0] == '/')
				path++;
			r = fn(ud, in, e, path, err);
			if (r < 0)
				return r;
			if (r > 0)
				return 0;
		}
		if (r != ARCHIVE_EOF)
			return guest_err(err, -EIO, "cannot read '%s': %s", deb,
					 archive_error_string(in));
		return 0;
	}
	return guest_err(err, -EINVAL, "'%s' has no data.tar member", deb);
}

int entry_read_all(struct archive *a, struct archive_entry *e, unsigned char **buf, size_t *len,
		   char **err)
{
	la_int64_t size = archive_entry_size(e);
	unsigned char *b;
	size_t got = 0;

	if (size < 0 || (uint64_t)size > SIZE_MAX - 1)
		return guest_err(err, -EFBIG, "member '%s' has a bad size",
				 archive_entry_pathname(e));
	b = xmalloc((size_t)size + 1);
	while (got < (size_t)size) {
		la_ssize_t n = archive_read_data(a, b + got, (size_t)size - got);
		if (n <= 0) {
			free(b);
			return guest_err(err, -EIO, "cannot read member '%s': %s",
					 archive_entry_pathname(e),
					 n < 0 ? archive_error_string(a) : "short");
		}
		got += (size_t)n;
	}
	b[got] = 0;
	*buf = b;
	*len = got;
	return 0;
}

struct find_file {
	const char *path;
	unsigned char *data;
	size_t len;
};

static int find_file_cb(void *ud, struct archive *a, struct archive_entry *e, const char *path,
			char **err)
{
	struct find_file *f = ud;
	if (!STREQ(path, f->path) || archive_entry_filetype(e) != AE_IFREG)
		return 0;
	int r = entry_read_all(a, e, &f->data, &f->len, err);
	return r < 0 ? r : 1;
}

int deb_file(const struct pkg *p, const char *path, unsigned char **data, size_t *len, char **err)
{
	struct find_file f = { path, NULL, 0 };
	int r = deb_walk(p->deb, find_file_cb, &f, err);
	if (r < 0)
		return r;
	if (!f.data)
		return guest_err(err, -ENOENT, "'%s' holds no '%s'", p->deb, path);
	*data = f.data;
	*len = f.len;
	return 0;
}
