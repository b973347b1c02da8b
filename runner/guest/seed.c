/* SPDX-License-Identifier: MIT */
/*
 * The NoCloud seed (debian.h, guest_seed_write()): cloud-init's NoCloud data source reads
 * `meta-data` and `user-data` from a filesystem labelled "cidata"; an ISO 9660 image written by
 * libarchive carries them (Rock Ridge keeps the lower-case names with their dash).
 */
#include <errno.h>
#include <string.h>

#include <archive.h>
#include <archive_entry.h>

#include "cleanup.h"
#include "debian.h"
#include "fs.h"
#include "guest-build.h"

struct seed_buf {
	struct atomic_file *af;
	int err;
};

static la_ssize_t seed_write(struct archive *a, void *ud, const void *buf, size_t len)
{
	struct seed_buf *s = ud;
	(void)a;
	if (write_all(s->af->fd, buf, len) < 0) {
		s->err = errno;
		return -1;
	}
	return (la_ssize_t)len;
}

static int add_file(struct archive *w, const char *name, const void *data, size_t len)
{
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, name);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, (la_int64_t)len);
	archive_entry_set_mtime(e, 0, 0);
	int r = archive_write_header(w, e);
	if (r == ARCHIVE_OK && len && archive_write_data(w, data, len) != (la_ssize_t)len)
		r = ARCHIVE_FATAL;
	archive_entry_free(e);
	return r;
}

int guest_seed_write(const char *path, const char *instance_id, const void *user_data, size_t len,
		     char **err)
{
	struct atomic_file af;
	_cleanup_free_ char *e = NULL;
	if (atomic_file_open(&af, path, 0644, &e) < 0)
		return guest_err(err, -EIO, "cannot write the seed: %s", e);
	_cleanup_free_ char *meta =
	    xasprintf("instance-id: %s\nlocal-hostname: ferry-guest\n", instance_id);
	struct seed_buf sb = { .af = &af };
	struct archive *w = archive_write_new();
	int r = archive_write_set_format_iso9660(w);
	if (r == ARCHIVE_OK)
		r = archive_write_set_format_option(w, "iso9660", "volume-id", "cidata");
	if (r == ARCHIVE_OK)
		r = archive_write_set_format_option(w, "iso9660", "rockridge", "1");
	if (r == ARCHIVE_OK)
		r = archive_write_set_format_option(w, "iso9660", "joliet", "1");
	/* the ISO writer needs the whole image before it writes: no padding of its blocks */
	if (r == ARCHIVE_OK)
		r = archive_write_set_bytes_in_last_block(w, 1);
	if (r == ARCHIVE_OK)
		r = archive_write_open2(w, &sb, NULL, seed_write, NULL, NULL);
	if (r == ARCHIVE_OK)
		r = add_file(w, "meta-data", meta, strlen(meta));
	if (r == ARCHIVE_OK)
		r = add_file(w, "user-data", user_data, len);
	if (r == ARCHIVE_OK)
		r = archive_write_close(w);
	if (r != ARCHIVE_OK) {
		int code = guest_err(err, -EIO, "cannot write the seed '%s': %s", path,
				     sb.err ? strerror(sb.err) : archive_error_string(w));
		archive_write_free(w);
		atomic_file_abort(&af);
		return code;
	}
	archive_write_free(w);
	if (atomic_file_commit(&af, &e) < 0)
		return guest_err(err, -EIO, "cannot write the seed: %s", e);
	return 0;
}
