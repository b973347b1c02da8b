/* SPDX-License-Identifier: MIT */
/* `path:` datasets: an existing directory tree read in place into a manifest (see dataset.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "dataset-int.h"
#include "dataset.h"
#include "hash.h"
#include "utf8.h"
#include "util.h"

static const char *unlistable(const char *s)
{
	if (strpbrk(s, "\n\t"))
		return "contains a newline or tab, which the guest's listing cannot carry";
	if (!utf8_valid(s))
		return "is not valid UTF-8";
	return NULL;
}

static int scan_dir(int dfd, const char *root, const char *rel, struct manifest *m, char **err)
{
	int fd2 = dup(dfd);
	if (fd2 < 0)
		return dataset_err_errno(err, "read directory", root);
	_cleanup_(closedirp) DIR *d = fdopendir(fd2);
	if (!d) {
		close(fd2);
		return dataset_err_errno(err, "read directory", root);
	}
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d))) {
		if (STREQ(de->d_name, ".") || STREQ(de->d_name, ".."))
			continue;
		_cleanup_free_ char *r =
		    *rel ? xasprintf("%s/%s", rel, de->d_name) : xstrdup(de->d_name);
		_cleanup_free_ char *full = xasprintf("%s/%s", root, r);
		struct stat st;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return dataset_err_errno(err, "stat", full);
		const char *why = unlistable(de->d_name);
		if (why) {
			_cleanup_free_ char *reason = xasprintf("name %s", why);
			manifest_add_skip(m, r, reason);
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int sub = openat(
			    dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0)
				return dataset_err_errno(err, "read directory", full);
			struct stat sst;
			if (fstat(sub, &sst) < 0 || !S_ISDIR(sst.st_mode))
				return dataset_err_errno(err, "read directory", full);
			struct manifest_entry *me = manifest_add(m, r, MANIFEST_DIR, 0, NULL, NULL);
			me->dev = sst.st_dev;
			me->ino = sst.st_ino;
			if (scan_dir(sub, root, r, m, err) < 0)
				return -1;
		} else if (S_ISREG(st.st_mode)) {
			_cleanup_close_ int f =
			    openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			unsigned char sha[32];
			uint64_t size;
			struct stat fst;
			if (f < 0 || fstat(f, &fst) < 0 || sha256_fd(f, sha, &size) < 0)
				return dataset_err_errno(err, "read", full);
			struct manifest_entry *me =
			    manifest_add(m, r, MANIFEST_FILE, size, sha, NULL);
			/* the inode that was hashed: the transfer reads this one or refuses */
			me->dev = fst.st_dev;
			me->ino = fst.st_ino;
		} else if (S_ISLNK(st.st_mode)) {
			char target[4096];
			ssize_t n = readlinkat(dfd, de->d_name, target, sizeof(target) - 1);
			if (n < 0)
				return dataset_err_errno(err, "read symlink", full);
			target[n] = '\0';
			if ((why = unlistable(target))) {
				_cleanup_free_ char *reason = xasprintf("symlink target %s", why);
				manifest_add_skip(m, r, reason);
				continue;
			}
			manifest_add(m, r, MANIFEST_SYMLINK, (uint64_t)n, NULL, target);
		} else {
			const char *kind = S_ISFIFO(st.st_mode)   ? "fifo"
					   : S_ISSOCK(st.st_mode) ? "socket"
					   : S_ISCHR(st.st_mode)  ? "character device"
					   : S_ISBLK(st.st_mode)  ? "block device"
								  : "special file";
			_cleanup_free_ char *reason =
			    xasprintf("%s: not a regular file, directory or symlink", kind);
			manifest_add_skip(m, r, reason);
		}
		errno = 0;
	}
	if (errno)
		return dataset_err_errno(err, "read directory", root);
	return 0;
}

int dataset_scan(const char *dir, struct manifest **out, char **err)
{
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return dataset_err_errno(err, "read directory", dir);
	struct stat st;
	if (fstat(dfd, &st) < 0)
		return dataset_err_errno(err, "read directory", dir);
	struct manifest *m = manifest_new();
	m->root_dev = st.st_dev;
	m->root_ino = st.st_ino;
	int r = scan_dir(dfd, dir, "", m, err);
	if (r < 0 || manifest_finish(m, err) < 0) {
		manifest_free(m);
		return -1;
	}
	*out = m;
	return 0;
}
