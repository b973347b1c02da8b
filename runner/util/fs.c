/* SPDX-License-Identifier: MIT */
#include "fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util.h"

static int fail(char **err, int e, const char *fmt, ...) _printf_(3, 4);
static int fail(char **err, int e, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		char *m = xvasprintf(fmt, ap);
		va_end(ap);
		free(*err);
		*err = m;
	}
	errno = e;
	return -1;
}

char *path_component(const char *name)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = xmalloc(3 * strlen(name) + 4);
	size_t n = 0;
	if (!*name)
		return strcpy(out, "%00");
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		if (*p == '/' || *p == '%' || (p == (const unsigned char *)name && *p == '.')) {
			out[n++] = '%';
			out[n++] = hex[*p >> 4];
			out[n++] = hex[*p & 15];
		} else {
			out[n++] = (char)*p;
		}
	}
	out[n] = '\0';
	return out;
}

int file_create_new(const char *path, mode_t mode, char **err)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 07777);
	if (fd < 0) {
		int e = errno;
		struct stat st;
		if (e == EEXIST && lstat(path, &st) == 0)
			return fail(err, e,
				    "%s: exists as %s (ferry creates its outputs as new files)",
				    path, file_kind(st.st_mode));
		return fail(err, e, "%s: %s", path, strerror(e));
	}
	if (fchmod(fd, mode & 07777) < 0) {
		int e = errno;
		close(fd);
		unlink(path);
		return fail(err, e, "%s: chmod: %s", path, strerror(e));
	}
	return fd;
}

/* Whether real is dir (a path made absolute and resolved) or below it. */
static bool below_dir(const char *real, const char *dir)
{
	_cleanup_free_ char *rd = dir && *dir ? realpath(dir, NULL) : NULL;
	if (!rd)
		return false;
	size_t n = strlen(rd);
	return STREQ(rd, "/") || (!strncmp(real, rd, n) && (real[n] == '/' || !real[n]));
}

bool input_allowed(const char *real, const char *extra)
{
	_cleanup_free_ char *cache = ferry_cache_dir();
	if (below_dir(real, ".") || below_dir(real, extra) || below_dir(real, cache) ||
	    below_dir(real, "/var/lib/libvirt/images"))
		return true;
	const char *env = getenv("FERRY_ALLOW_INPUT");
	_cleanup_free_ char *list = xstrdup(env ? env : "");
	for (char *save = NULL, *d = strtok_r(list, ":", &save); d; d = strtok_r(NULL, ":", &save))
		if (below_dir(real, d))
			return true;
	return false;
}

int input_check(const char *what, const char *path, const char *extra, char **err)
{
	_cleanup_free_ char *real = realpath(path, NULL);
	if (!real)
		return fail(err, errno, "cannot find %s '%s': %s", what, path, strerror(errno));
	struct stat st;
	if (stat(real, &st) < 0)
		return fail(err, errno, "cannot find %s '%s': %s", what, path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return fail(err, EINVAL, "%s '%s' is %s, not a regular file", what, path,
			    file_kind(st.st_mode));
	if (!input_allowed(real, extra))
		return fail(err, EACCES,
			    "%s '%s' is outside the allowed tree (the working directory, ferry's "
			    "cache, /var/lib/libvirt/images; add a directory with "
			    "FERRY_ALLOW_INPUT=DIR)",
			    what, path);
	return 0;
}

/* mkdir with exactly `mode` (mkdir applies the umask); EEXIST is passed through. */
static int mkdir_mode(const char *path, mode_t mode)
{
	if (mkdir(path, mode) < 0)
		return -1;
	if (chmod(path, mode) < 0)
		return -1;
	return 0;
}

int mkdir_p(const char *path, mode_t mode, char **err)
{
	_cleanup_free_ char *p = xstrdup(path);
	size_t n = strlen(p);

	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0';
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		struct stat st;
		if (mkdir_mode(p, mode) < 0 && errno != EEXIST)
			return fail(err, errno, "cannot create directory '%s': %s", p,
				    strerror(errno));
		/* an existing name must be a directory (or a link to one) to go on */
		if (stat(p, &st) < 0)
			return fail(err, errno, "cannot create directory '%s': %s", p,
				    strerror(errno));
		if (!S_ISDIR(st.st_mode))
			return fail(err, ENOTDIR, "cannot create directory '%s': %s", p,
				    strerror(ENOTDIR));
		*s = c;
		if (!c)
			return 0;
	}
}

const char *file_kind(mode_t m)
{
	if (S_ISLNK(m))
		return "a symbolic link";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISREG(m))
		return "a regular file";
	return "not a regular file";
}

int write_all(int fd, const void *data, size_t len)
{
	const unsigned char *p = data;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

char *fd_read_all(int fd, size_t max, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = xmalloc(cap + 1);
	for (;;) {
		if (n == cap)
			buf = xrealloc(buf, (cap *= 2) + 1);
		ssize_t got = read(fd, buf + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got > 0 && (n += (size_t)got) <= max)
			continue;
		if (got != 0) {
			int e = got < 0 ? errno : EFBIG;
			free(buf);
			errno = e;
			return NULL;
		}
		break;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

int fd_copy_all(int in, int out, uint64_t *n)
{
	char buf[65536];
	*n = 0;
	for (;;) {
		ssize_t got = read(in, buf, sizeof(buf));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return got < 0 ? -1 : 0;
		if (write_all(out, buf, (size_t)got) < 0)
			return -1;
		*n += (uint64_t)got;
	}
}

/* 0 when `base` in dirfd is absent or a regular file; else -1 with *err. */
static int target_replaceable(int dirfd, const char *base, const char *path, char **err)
{
	struct stat st;
	if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return 0;
		return fail(err, errno, "%s: %s", path, strerror(errno));
	}
	if (S_ISREG(st.st_mode))
		return 0;
	return fail(err, S_ISDIR(st.st_mode) ? EISDIR : EEXIST,
		    "%s: is %s (ferry replaces only regular files)", path, file_kind(st.st_mode));
}

/* A temporary name nobody can guess: ".BASE.XXXXXXXXXXXX" (BASE cut to stay under NAME_MAX). */
static char *temp_name(const char *base)
{
	static const char chars[] =
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	unsigned char rnd[12];
	char suffix[sizeof(rnd) + 1];

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		/* getrandom() cannot fail for 12 bytes once the pool is ready; mix what we have */
		uint64_t t = now_ns() ^ ((uint64_t)getpid() << 32);
		for (size_t i = 0; i < sizeof(rnd); i++, t = t * 6364136223846793005u + 1)
			rnd[i] = (unsigned char)(t >> 56);
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		suffix[i] = chars[rnd[i] % (sizeof(chars) - 1)];
	suffix[sizeof(rnd)] = '\0';
	return xasprintf(".%.200s.%s", base, suffix);
}

int atomic_file_open(struct atomic_file *af, const char *path, mode_t mode, char **err)
{
	_cleanup_free_ char *dcopy = xstrdup(path), *bcopy = xstrdup(path);
	const char *dir = dirname(dcopy), *base = basename(bcopy);

	*af = (struct atomic_file){ .dirfd = -1, .fd = -1 };
	if (!*path || STREQ(base, "/") || STREQ(base, ".") || STREQ(base, ".."))
		return fail(err, EISDIR, "%s: is a directory", path);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return fail(err, errno, "%s: cannot create a file in '%s': %s", path, dir,
			    strerror(errno));
	if (target_replaceable(dfd, base, path, err) < 0) {
		int e = errno;
		close(dfd);
		errno = e;
		return -1;
	}
	for (int tries = 0;; tries++) {
		char *tmp = temp_name(base);
		int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				mode & 07777);
		if (fd >= 0) {
			*af = (struct atomic_file){ .path = xstrdup(path),
						    .dirfd = dfd,
						    .base = xstrdup(base),
						    .tmp = tmp,
						    .fd = fd };
			break;
		}
		int e = errno;
		free(tmp);
		if (e != EEXIST || tries >= 100) {
			close(dfd);
			return fail(err, e, "%s: cannot create a file in '%s': %s", path, dir,
				    strerror(e));
		}
	}
	if (fchmod(af->fd, mode & 07777) < 0) {
		int e = errno;
		atomic_file_abort(af);
		return fail(err, e, "%s: chmod: %s", path, strerror(e));
	}
	return 0;
}

static void atomic_file_free(struct atomic_file *af)
{
	/* a zeroed struct was never opened: its 0 descriptors are not ours */
	if (!af->path) {
		*af = (struct atomic_file){ .dirfd = -1, .fd = -1 };
		return;
	}
	if (af->fd >= 0)
		close(af->fd);
	if (af->dirfd >= 0)
		close(af->dirfd);
	free(af->path);
	free(af->base);
	free(af->tmp);
	*af = (struct atomic_file){ .dirfd = -1, .fd = -1 };
}

void atomic_file_abort(struct atomic_file *af)
{
	if (af->path && af->tmp && af->dirfd >= 0)
		(void)unlinkat(af->dirfd, af->tmp, 0);
	atomic_file_free(af);
}

int atomic_file_commit(struct atomic_file *af, char **err)
{
	const char *what = NULL;
	int e = 0;

	if (fsync(af->fd) < 0)
		what = "fsync", e = errno;
	if (close(af->fd) < 0 && !what)
		what = "close", e = errno;
	af->fd = -1;
	if (what) {
		fail(err, e, "%s: %s: %s", af->path, what, strerror(e));
		atomic_file_abort(af);
		errno = e;
		return -1;
	}
	/* checked again: the target may have been replaced since the open */
	if (target_replaceable(af->dirfd, af->base, af->path, err) < 0) {
		e = errno;
		atomic_file_abort(af);
		errno = e;
		return -1;
	}
	if (renameat(af->dirfd, af->tmp, af->dirfd, af->base) < 0) {
		e = errno;
		fail(err, e, "%s: rename: %s", af->path, strerror(e));
		atomic_file_abort(af);
		errno = e;
		return -1;
	}
	free(af->tmp);
	af->tmp = NULL;
	/* make the rename itself durable */
	if (fsync(af->dirfd) < 0 && errno != EINVAL) {
		e = errno;
		fail(err, e, "%s: fsync of its directory: %s", af->path, strerror(e));
		atomic_file_free(af);
		errno = e;
		return -1;
	}
	atomic_file_free(af);
	return 0;
}

int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode, char **err)
{
	struct atomic_file af;
	if (atomic_file_open(&af, path, mode, err) < 0)
		return -1;
	if (write_all(af.fd, data, len) < 0) {
		int e = errno;
		fail(err, e, "%s: write: %s", path, strerror(e));
		atomic_file_abort(&af);
		errno = e;
		return -1;
	}
	return atomic_file_commit(&af, err);
}

int symlink_replace(const char *target, const char *path, char **err)
{
	_cleanup_free_ char *dcopy = xstrdup(path), *bcopy = xstrdup(path);
	const char *dir = dirname(dcopy), *base = basename(bcopy);
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;

	if (dfd < 0)
		return fail(err, errno, "cannot update '%s': %s", path, strerror(errno));
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISLNK(st.st_mode))
		return fail(err, EEXIST, "cannot update '%s': it is %s, not a symbolic link", path,
			    file_kind(st.st_mode));
	for (int tries = 0;; tries++) {
		_cleanup_free_ char *tmp = temp_name(base);
		/* symlinkat() never follows or reuses an existing name: exclusive like O_EXCL */
		if (symlinkat(target, dfd, tmp) < 0) {
			if (errno == EEXIST && tries < 100)
				continue;
			return fail(err, errno, "cannot update '%s': %s", path, strerror(errno));
		}
		if (renameat(dfd, tmp, dfd, base) < 0) {
			int e = errno;
			(void)unlinkat(dfd, tmp, 0);
			return fail(err, e, "cannot update '%s': %s", path, strerror(e));
		}
		(void)fsync(dfd);
		return 0;
	}
}

/* ---- rm_tree ------------------------------------------------------------------------------ */

/*
 * Which mount an entry is on: the device, and the mount id where the kernel tells it (a bind
 * mount of the same filesystem has the same device but its own mount id).
 */
struct mount_key {
	dev_t dev;
	uint64_t mnt_id; /* 0 when unknown */
};

static int mount_key_at(int dirfd, const char *name, struct mount_key *k)
{
	struct statx sx;
	int flags = AT_SYMLINK_NOFOLLOW | (*name ? 0 : AT_EMPTY_PATH);
	if (statx(dirfd, name, flags, STATX_TYPE | STATX_MNT_ID, &sx) < 0)
		return -1;
	k->dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	k->mnt_id = (sx.stx_mask & STATX_MNT_ID) ? sx.stx_mnt_id : 0;
	return 0;
}

static bool same_mount(const struct mount_key *a, const struct mount_key *b)
{
	return a->dev == b->dev && (!a->mnt_id || !b->mnt_id || a->mnt_id == b->mnt_id);
}

struct rm_state {
	int err;        /* first errno */
	char *err_path; /* where it happened */
};

static void rm_note(struct rm_state *s, const char *parent, const char *name, int e)
{
	if (s->err)
		return;
	s->err = e;
	s->err_path = parent ? xasprintf("%s/%s", parent, name) : xstrdup(name);
}

/* Remove every entry of the open directory dfd (at device dev), then nothing else. */
static void rm_contents(int dfd, const struct mount_key *mk, const char *where, unsigned depth,
			struct rm_state *s)
{
	int fd2 = dup(dfd);
	DIR *d = fd2 < 0 ? NULL : fdopendir(fd2);
	struct dirent *de;

	if (!d) {
		if (fd2 >= 0)
			close(fd2);
		rm_note(s, NULL, where, errno);
		return;
	}
	while ((de = readdir(d))) {
		const char *n = de->d_name;
		if (STREQ(n, ".") || STREQ(n, ".."))
			continue;
		if (unlinkat(dfd, n, 0) == 0 || errno == ENOENT)
			continue;
		if (errno != EISDIR && errno != EPERM) {
			rm_note(s, where, n, errno);
			continue;
		}
		/* a directory (EISDIR on Linux; EPERM elsewhere): empty it, then remove it */
		int sub = openat(dfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct mount_key sk;
		if (sub < 0 || mount_key_at(sub, "", &sk) < 0) {
			rm_note(s, where, n, errno);
			if (sub >= 0)
				close(sub);
			continue;
		}
		if (!same_mount(&sk, mk)) {
			/* a mount point: never cross into another filesystem */
			rm_note(s, where, n, EXDEV);
			close(sub);
			continue;
		}
		if (depth >= 4096) {
			rm_note(s, where, n, ELOOP);
			close(sub);
			continue;
		}
		_cleanup_free_ char *child = xasprintf("%s/%s", where, n);
		rm_contents(sub, mk, child, depth + 1, s);
		close(sub);
		if (unlinkat(dfd, n, AT_REMOVEDIR) < 0 && errno != ENOENT)
			rm_note(s, where, n, errno);
	}
	closedir(d);
}

/* rm_tree_at() naming the tree `shown` in messages. */
static int rm_tree_named(int dirfd, const char *name, const char *shown, char **err)
{
	struct rm_state s = { 0 };
	struct stat st;
	struct mount_key parent, self;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return 0;
		return fail(err, errno, "cannot remove '%s': %s", shown, strerror(errno));
	}
	if (!S_ISDIR(st.st_mode)) {
		if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
			return fail(err, errno, "cannot remove '%s': %s", shown, strerror(errno));
		return 0;
	}
	int dfd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return fail(err, errno, "cannot remove '%s': %s", shown, strerror(errno));
	if (mount_key_at(dirfd, "", &parent) < 0 || mount_key_at(dfd, "", &self) < 0) {
		int e = errno;
		close(dfd);
		return fail(err, e, "cannot remove '%s': %s", shown, strerror(e));
	}
	if (!same_mount(&parent, &self)) {
		close(dfd);
		return fail(err, EXDEV, "cannot remove '%s': it is a mount point", shown);
	}
	rm_contents(dfd, &self, shown, 0, &s);
	close(dfd);
	if (!s.err && unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		rm_note(&s, NULL, shown, errno);
	if (s.err) {
		fail(err, s.err, "cannot remove '%s': %s", s.err_path,
		     s.err == EXDEV ? "it is a mount point" : strerror(s.err));
		free(s.err_path);
		errno = s.err;
		return -1;
	}
	return 0;
}

int rm_tree_at(int dirfd, const char *name, char **err)
{
	return rm_tree_named(dirfd, name, name, err);
}

int rm_tree(const char *path, char **err)
{
	_cleanup_free_ char *dcopy = xstrdup(path), *bcopy = xstrdup(path);
	const char *dir = dirname(dcopy), *base = basename(bcopy);

	if (STREQ(base, "/") || STREQ(base, ".") || STREQ(base, ".."))
		return fail(err, EINVAL, "cannot remove '%s': not a removable name", path);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		if (errno == ENOENT)
			return 0;
		return fail(err, errno, "cannot remove '%s': %s", path, strerror(errno));
	}
	int r = rm_tree_named(dfd, base, path, err);
	int e = errno;
	close(dfd);
	errno = e;
	return r;
}

int dir_replace(const char *tmp, const char *dir, char **err)
{
	(void)rm_tree(dir, NULL);
	if (rename(tmp, dir) == 0)
		return 0;
	int e = errno;
	(void)rm_tree(tmp, NULL);
	return fail(err, e, "cannot rename '%s' to '%s': %s", tmp, dir, strerror(e));
}

int fd_next_data(int fd, off_t off, off_t end, off_t *data, off_t *hole)
{
	if (off >= end)
		return 0;
	off_t d = lseek(fd, off, SEEK_DATA);
	if (d < 0)
		return errno == ENXIO ? 0 : -1; /* ENXIO: only a hole is left */
	if (d >= end)
		return 0;
	off_t h = lseek(fd, d, SEEK_HOLE);
	if (h < 0)
		return -1;
	*data = d;
	*hole = h < end ? h : end;
	return 1;
}

int fd_copy_sparse(int in, int out, off_t size)
{
	char buf[1 << 16];
	off_t off = 0;
	for (;;) {
		off_t data, hole;
		int r = fd_next_data(in, off, size, &data, &hole);
		if (r <= 0)
			return r; /* 0: only a hole is left */
		for (off = data; off < hole;) {
			size_t want =
			    (size_t)(hole - off) < sizeof(buf) ? (size_t)(hole - off) : sizeof(buf);
			ssize_t n = pread(in, buf, want, off);
			if (n <= 0)
				return n == 0 ? (errno = EIO, -1) : -1;
			for (ssize_t w = 0; w < n;) {
				ssize_t k = pwrite(out, buf + w, (size_t)(n - w), off + w);
				if (k < 0)
					return -1;
				w += k;
			}
			off += n;
		}
	}
	return 0;
}

int file_cache_evict(const char *path, uint64_t *resident, char **err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		*err = xasprintf("cannot open the target image '%s': %s", path, strerror(errno));
		return -1;
	}
	/* fdatasync writes back what cache=unsafe left dirty; DONTNEED drops clean pages only */
	int rc = fdatasync(fd);
	if (rc == 0)
		rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) ? -1 : 0;
	if (rc < 0) {
		*err =
		    xasprintf("cannot evict the host's cache of '%s': %s", path, strerror(errno));
		return -1;
	}
	*resident = 0;
	if (st.st_size == 0)
		return 0;
	void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		*err = xasprintf("cannot map the target image '%s': %s", path, strerror(errno));
		return -1;
	}
	long page = sysconf(_SC_PAGESIZE);
	size_t pages = ((size_t)st.st_size + (size_t)page - 1) / (size_t)page;
	_cleanup_free_ unsigned char *vec = xmalloc(pages);
	rc = mincore(map, (size_t)st.st_size, vec);
	munmap(map, (size_t)st.st_size);
	if (rc < 0) {
		*err = xasprintf("cannot read the host cache state of '%s': %s", path,
				 strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < pages; i++)
		*resident += (vec[i] & 1) ? (uint64_t)page : 0;
	return 0;
}
