/* SPDX-License-Identifier: MIT */
/*
 * Reading a dataset's files for a transfer without trusting its paths: every file is opened
 * below a directory descriptor, one component at a time with O_NOFOLLOW, and must be the inode
 * the scan (or the generator) recorded, so swapping a file or a directory for a symbolic link
 * between the scan and the transfer cannot send another host file into the guest. And the
 * private copies built from such descriptors (share staging, disk-image sources).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "dataset.h"
#include "util.h"

int dataset_open_root(const char *dir, const struct manifest *m, char **err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		*err = xasprintf("cannot open dataset directory '%s': %s", dir, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 ||
	    (m && m->root_ino && (st.st_ino != m->root_ino || st.st_dev != m->root_dev))) {
		*err = xasprintf("dataset directory '%s' is not the directory that was scanned "
				 "(it was replaced since): refusing to read it",
				 dir);
		close(fd);
		return -1;
	}
	return fd;
}

/* One path component that may be opened: not empty, ".", ".." */
static bool plain_component(const char *s)
{
	return *s && !STREQ(s, ".") && !STREQ(s, "..");
}

/*
 * The directory holding `rel` below root, reached without following a symbolic link, and the
 * last component of rel (pointing into *copy, which the caller frees). Returns an fd (root itself
 * duplicated when rel has one component) or -1 with errno (ELOOP or ENOTDIR: a symlink on the
 * way; EINVAL: not a plain relative path).
 */
static int open_parent(int root, const char *rel, char **copy, const char **leaf)
{
	char *p = *copy = xstrdup(rel);
	int dfd = fcntl(root, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0)
		return -1;
	for (;;) {
		char *slash = strchr(p, '/');
		if (!slash)
			break;
		*slash = '\0';
		if (!plain_component(p)) {
			close(dfd);
			errno = EINVAL;
			return -1;
		}
		int n = openat(dfd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		close(dfd);
		if (n < 0) {
			errno = e;
			return -1;
		}
		dfd = n;
		p = slash + 1;
	}
	if (!plain_component(p)) {
		close(dfd);
		errno = EINVAL;
		return -1;
	}
	*leaf = p;
	return dfd;
}

static int changed(char **err, const char *path, const char *what)
{
	*err = xasprintf("dataset file '%s' changed since it was scanned: %s; refusing to read it",
			 path, what);
	return -1;
}

int dataset_open_file(int root, const struct manifest_entry *e, char **err)
{
	if (e->type != MANIFEST_FILE) {
		*err = xasprintf("dataset entry '%s' is not a regular file", e->path);
		return -1;
	}
	_cleanup_free_ char *copy = NULL;
	const char *leaf = NULL;
	_cleanup_close_ int dfd = open_parent(root, e->path, &copy, &leaf);
	if (dfd < 0)
		return changed(
		    err, e->path,
		    errno == ELOOP || errno == ENOTDIR
			? "a directory on its path is a symbolic link or not a directory now"
		    : errno == EINVAL ? "its path is not a plain relative path"
				      : strerror(errno));
	/* O_NONBLOCK: a fifo put in its place must not block the open */
	int fd = openat(dfd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return changed(err, e->path,
			       errno == ELOOP ? "it is a symbolic link now" : strerror(errno));
	struct stat st;
	const char *why = NULL;
	char size_why[96];
	if (fstat(fd, &st) < 0)
		why = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		why = "it is not a regular file now";
	else if (e->ino && (st.st_ino != e->ino || st.st_dev != e->dev))
		why = "it is another file now (replaced)";
	else if ((uint64_t)st.st_size != e->size) {
		snprintf(size_why, sizeof(size_why), "it is %lld bytes now, %llu when scanned",
			 (long long)st.st_size, (unsigned long long)e->size);
		why = size_why;
	}
	if (why) {
		close(fd);
		return changed(err, e->path, why);
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		(void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

/* Copy exactly `size` bytes of in to out (copy_file_range, read/write where it cannot). */
static int copy_bytes(int in, int out, uint64_t size)
{
	uint64_t left = size;
	while (left > 0) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, left, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 &&
		    (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
			char buf[1 << 16];
			ssize_t r = read(in, buf, left < sizeof(buf) ? (size_t)left : sizeof(buf));
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				if (r == 0)
					errno = EIO;
				return -1;
			}
			for (ssize_t o = 0; o < r;) {
				ssize_t w = write(out, buf + o, (size_t)(r - o));
				if (w < 0 && errno == EINTR)
					continue;
				if (w < 0)
					return -1;
				o += w;
			}
			left -= (uint64_t)r;
			continue;
		}
		if (n <= 0) {
			if (n == 0)
				errno = EIO; /* shorter than the manifest says */
			return -1;
		}
		left -= (uint64_t)n;
	}
	return 0;
}

/* Hard-link the open file fd as leaf in dfd: the exact inode that was checked, never a path. */
static int link_fd(int fd, int dfd, const char *leaf)
{
	if (linkat(fd, "", dfd, leaf, AT_EMPTY_PATH) == 0)
		return 0;
	if (errno != EPERM && errno != ENOENT && errno != EINVAL)
		return -1;
	/* without CAP_DAC_READ_SEARCH: through the descriptor's magic link */
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, proc, dfd, leaf, AT_SYMLINK_FOLLOW);
}

/* A symbolic link as 9p's mapped-xattr model stores it (dataset_copy_opts.mapped_links). */
static int mapped_link(int dfd, const char *leaf, const char *target)
{
	_cleanup_close_ int fd =
	    openat(dfd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	size_t n = strlen(target);
	for (size_t off = 0; off < n;) {
		ssize_t w = write(fd, target + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		off += (size_t)w;
	}
	uint32_t mode = htole32(S_IFLNK | 0777);
	return fsetxattr(fd, "user.virtfs.mode", &mode, sizeof(mode), 0);
}

int dataset_copy(const char *dir, const struct manifest *m, const char *dst,
		 const struct dataset_copy_opts *o, uint64_t *copied, char **err)
{
	_cleanup_free_ char *dcopy = xstrdup(dst);
	char *slash = strrchr(dcopy, '/');
	const char *parent = slash ? (slash == dcopy ? "/" : dcopy) : ".";
	const char *name = slash ? slash + 1 : dst;
	if (slash)
		*slash = '\0';
	_cleanup_close_ int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0) {
		*err = xasprintf("cannot open '%s': %s", parent, strerror(errno));
		return -1;
	}
	return dataset_copy_at(dir, m, pfd, name, dst, o, copied, err);
}

int dataset_copy_at(const char *dir, const struct manifest *m, int dst_dirfd, const char *name,
		    const char *shown, const struct dataset_copy_opts *o, uint64_t *copied,
		    char **err)
{
	static const struct dataset_copy_opts none = { 0 };
	if (!o)
		o = &none;
	if (copied)
		*copied = 0;
	_cleanup_close_ int src = dataset_open_root(dir, m, err);
	if (src < 0)
		return -1;
	const char *dst = shown;
	/* created, then opened without following anything: dst's directory may be one a guest
	   can write to, which could put a symlink in its place */
	_cleanup_close_ int out = -1;
	if (mkdirat(dst_dirfd, name, 0755) < 0 ||
	    (out = openat(dst_dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    fchmod(out, 0755) < 0 || (o->chown && fchown(out, o->uid, o->gid) < 0)) {
		*err = xasprintf("cannot create directory '%s': %s", dst, strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < m->n; i++) {
		const struct manifest_entry *e = &m->entries[i];
		if (o->cancelled && o->cancelled(o->userdata)) {
			*err = xstrdup("interrupted");
			return -1;
		}
		_cleanup_free_ char *copy = NULL;
		const char *leaf = NULL;
		_cleanup_close_ int pd = open_parent(out, e->path, &copy, &leaf);
		int r = pd < 0 ? -1 : 0;
		if (r == 0 && e->type == MANIFEST_DIR) {
			r = mkdirat(pd, leaf, 0755);
			if (r == 0) {
				int d = openat(pd, leaf,
					       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				r = d < 0 || fchmod(d, 0755) < 0 ? -1 : 0;
				if (d >= 0)
					close(d);
			}
		} else if (r == 0 && e->type == MANIFEST_SYMLINK) {
			r = o->mapped_links ? mapped_link(pd, leaf, e->target)
					    : symlinkat(e->target, pd, leaf);
		} else if (r == 0) {
			_cleanup_close_ int in = dataset_open_file(src, e, err);
			if (in < 0)
				return -1;
			struct stat st;
			if (o->may_link && fstat(in, &st) == 0 && o->may_link(&st, o->userdata) &&
			    link_fd(in, pd, leaf) == 0)
				continue;
			_cleanup_close_ int f = openat(
			    pd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
			r = f < 0 || fchmod(f, 0644) < 0 || copy_bytes(in, f, e->size) < 0 ? -1 : 0;
			if (r == 0 && o->chown && fchown(f, o->uid, o->gid) < 0)
				r = -1;
			if (r == 0 && copied)
				*copied += e->size;
			if (r == 0)
				continue;
		}
		if (r == 0 && o->chown &&
		    fchownat(pd, leaf, o->uid, o->gid, AT_SYMLINK_NOFOLLOW) < 0)
			r = -1;
		if (r < 0) {
			*err = xasprintf("cannot copy '%s' to '%s/%s': %s", e->path, dst, e->path,
					 strerror(errno));
			return -1;
		}
	}
	return 0;
}

int dataset_add_xxh128(const char *dir, struct manifest *m, char **err)
{
	_cleanup_close_ int root = dataset_open_root(dir, m, err);
	if (root < 0)
		return -1;
	for (size_t i = 0; i < m->n; i++) {
		struct manifest_entry *e = &m->entries[i];
		if (e->type != MANIFEST_FILE || e->has_xxh128)
			continue;
		_cleanup_close_ int fd = dataset_open_file(root, e, err);
		if (fd < 0)
			return -1;
		unsigned char sha[SHA256_BYTES];
		uint64_t size;
		if (sha256_xxh128_fd(fd, sha, e->xxh128, &size) < 0) {
			*err = xasprintf("cannot read dataset file '%s': %s", e->path,
					 strerror(errno));
			return -1;
		}
		if (size != e->size || memcmp(sha, e->sha256, SHA256_BYTES) != 0) {
			*err = xasprintf("dataset file '%s' changed since its manifest was made "
					 "(its SHA-256 differs): refusing to verify against it",
					 e->path);
			return -1;
		}
		e->has_xxh128 = true;
	}
	return 0;
}
