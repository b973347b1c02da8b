/* SPDX-License-Identifier: MIT */
/*
 * The dataset cache: dataset_get() hands out a cached generated dataset after checking it is
 * intact, or (re)generates it under a per-dataset lock, sweeps dead temporary directories and
 * brings the cache under its limit (capacity.h) (see dataset.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capacity.h"
#include "cleanup.h"
#include "dataset-int.h"
#include "dataset.h"
#include "fs.h"
#include "hash.h"
#include "util.h"

char *dataset_cache_dir(void)
{
	return ferry_cache_dir();
}

void dataset_info_clear(struct dataset_info *info)
{
	free(info->dir);
	free(info->manifest_path);
	free(info->regen_reason);
	if (info->use_lock) {
		close(*info->use_lock);
		free(info->use_lock);
	}
	*info = (struct dataset_info){ 0 };
}

/* Entries under an open directory, recursively, symlinks not followed; -1 on error. */
static ssize_t count_entries(int dfd)
{
	int fd2 = dup(dfd);
	if (fd2 < 0)
		return -1;
	_cleanup_(closedirp) DIR *d = fdopendir(fd2);
	if (!d) {
		close(fd2);
		return -1;
	}
	ssize_t n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (STREQ(de->d_name, ".") || STREQ(de->d_name, ".."))
			continue;
		n++;
		struct stat st;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return -1;
		if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int sub = openat(
			    dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			ssize_t k = sub < 0 ? -1 : count_entries(sub);
			if (k < 0)
				return -1;
			n += k;
		}
	}
	return n;
}

/* a is at or after b: file timestamps come from a coarse clock, so a change made in the tick
   that sealed the manifest carries the seal's own time and must count as after it */
static bool ts_not_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec >= b->tv_nsec);
}

/*
 * Seal the manifest: give it an mtime strictly later than the ctime of every file written or
 * checked before this call, so that only a later change of a file counts as a change
 * (ts_not_before). Every such ctime is at most the time of a touch now; touching again until
 * the filesystem's clock has moved on takes at most one clock tick (~4 ms).
 */
static void seal_manifest(const char *mpath)
{
	struct stat st0, st;
	if (utimensat(AT_FDCWD, mpath, NULL, AT_SYMLINK_NOFOLLOW) < 0 || lstat(mpath, &st0) < 0)
		return;
	for (int i = 0; i < 1000; i++) {
		const struct timespec tick = { .tv_sec = 0, .tv_nsec = 1000000 };
		nanosleep(&tick, NULL);
		if (utimensat(AT_FDCWD, mpath, NULL, AT_SYMLINK_NOFOLLOW) < 0 ||
		    lstat(mpath, &st) < 0)
			return;
		if (!ts_not_before(&st0.st_mtim, &st.st_mtim))
			return;
	}
}

/*
 * dataset_intact() with two additions for the cache: a file whose inode changed (ctime) after
 * `sealed` (the manifest's mtime; NULL: never) is re-hashed even without `rehash`, since a write
 * that keeps the size is invisible otherwise (ctime cannot be set back from user space); and
 * `rec` (may be NULL; the same entries as m) receives each entry's device and inode, which
 * dataset_open_file() then insists on. *rehashed counts the files hashed.
 */
static bool check_intact(const struct manifest *m, struct manifest *rec, const char *dir,
			 bool rehash, const struct timespec *sealed, size_t *rehashed, char **why)
{
	bool ok = true;
	for (size_t i = 0; ok && i < m->n; i++) {
		const struct manifest_entry *e = &m->entries[i];
		_cleanup_free_ char *p = xasprintf("%s/%s", dir, e->path);
		struct stat st;
		if (lstat(p, &st) < 0) {
			*why = xasprintf("'%s' is missing", e->path);
			ok = false;
		} else if ((e->type == MANIFEST_FILE && !S_ISREG(st.st_mode)) ||
			   (e->type == MANIFEST_DIR && !S_ISDIR(st.st_mode)) ||
			   (e->type == MANIFEST_SYMLINK && !S_ISLNK(st.st_mode))) {
			*why = xasprintf("'%s' changed type", e->path);
			ok = false;
		} else if (e->type == MANIFEST_FILE && (uint64_t)st.st_size != e->size) {
			*why = xasprintf("'%s' is %lld bytes, the manifest says %llu", e->path,
					 (long long)st.st_size, (unsigned long long)e->size);
			ok = false;
		} else if (e->type == MANIFEST_FILE &&
			   (rehash || (sealed && ts_not_before(&st.st_ctim, sealed)))) {
			_cleanup_close_ int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			unsigned char sha[32];
			struct stat fst;
			if (rehashed)
				(*rehashed)++;
			if (fd < 0 || fstat(fd, &fst) < 0 || sha256_fd(fd, sha, NULL) < 0 ||
			    memcmp(sha, e->sha256, 32) != 0) {
				*why = xasprintf("'%s' does not match its SHA-256", e->path);
				ok = false;
			} else {
				st = fst;
			}
		} else if (e->type == MANIFEST_SYMLINK) {
			char target[4096];
			ssize_t n = readlink(p, target, sizeof(target) - 1);
			if (n < 0 || (target[n] = '\0', !STREQ(target, e->target))) {
				*why = xasprintf("symlink '%s' changed target", e->path);
				ok = false;
			}
		}
		if (ok && rec) {
			rec->entries[i].dev = st.st_dev;
			rec->entries[i].ino = st.st_ino;
		}
	}
	if (!ok)
		return false;
	/* an extra file would show up as "extra" in every verification */
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ssize_t seen = dfd < 0 ? -1 : count_entries(dfd);
	if (seen < 0) {
		*why = xasprintf("cannot walk '%s': %s", dir, strerror(errno));
		return false;
	}
	if ((size_t)seen != m->n) {
		*why = xasprintf("'%s' holds %zd entries, the manifest %zu", dir, seen, m->n);
		return false;
	}
	struct stat rst;
	if (rec && fstat(dfd, &rst) == 0) {
		rec->root_dev = rst.st_dev;
		rec->root_ino = rst.st_ino;
	}
	return true;
}

bool dataset_intact(const struct manifest *m, const char *dir, bool rehash, char **why)
{
	return check_intact(m, NULL, dir, rehash, NULL, NULL, why);
}

/*
 * Temporary generation directories ".tmp-<hash>-<pid>" whose process is gone (a ferry killed
 * while generating): removed at the next use of the cache. A live process's are left alone
 * (with `hash`, also those of this very dataset, which the caller holds the lock of).
 */
static void remove_dead_temps(const char *base, const char *hash)
{
	_cleanup_(closedirp) DIR *d = opendir(base);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, ".tmp-", 5) != 0)
			continue;
		const char *dash = strrchr(de->d_name, '-');
		char *end;
		errno = 0;
		long pid = strtol(dash + 1, &end, 10);
		bool mine = hash && strncmp(de->d_name + 5, hash, strlen(hash)) == 0;
		bool dead = dash > de->d_name + 4 && !*end && !errno && pid > 0 &&
			    kill((pid_t)pid, 0) < 0 && errno == ESRCH;
		if (dead || (mine && pid != (long)getpid())) {
			_cleanup_free_ char *p = xasprintf("%s/%s", base, de->d_name);
			rm_tree(p, NULL);
		}
	}
}

/* A shared flock on the entry's directory, held until dataset_info_clear(): "in use". */
static int hold_for_use(const char *dir, struct dataset_info *info, char **err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_SH) < 0) {
		if (fd >= 0)
			close(fd);
		return dataset_err_errno(err, "lock", dir);
	}
	info->use_lock = xmalloc(sizeof(int));
	*info->use_lock = fd;
	return 0;
}

/* flock(LOCK_EX) that gives up when the generation is cancelled. */
static int lock_cancellable(int fd, const struct dataset_gen_opts *o, char **err, const char *path)
{
	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return dataset_err_errno(err, "lock", path);
		if (dataset_gen_cancelled(o)) {
			*err = xstrdup("interrupted");
			return -1;
		}
		struct timespec ts = { 0, 50 * 1000000L };
		nanosleep(&ts, NULL);
	}
}

/*
 * The cached copy at dir, if its manifest (mpath) is complete, of this spec (canon) and the
 * files intact: then 1 with *m, held for use (info). 0 when it must be generated again (*why
 * says why, or NULL when there is none), -1 with *err.
 */
static int cached_copy(const char *dir, const char *mpath, const char *canon,
		       const struct dataset_get_opts *opts, struct dataset_info *info,
		       struct manifest **out, char **why, char **err)
{
	struct manifest *m = NULL;
	struct stat mst;
	if (lstat(mpath, &mst) != 0)
		return 0;
	size_t rehashed = 0;
	if (!S_ISREG(mst.st_mode)) {
		*why = xstrdup("manifest is not a regular file");
	} else if (manifest_load(mpath, &m, why) < 0) {
		m = NULL;
	} else if (!m->complete || !m->spec || !STREQ(m->spec, canon)) {
		*why =
		    xstrdup(!m->complete ? "manifest incomplete" : "manifest is for another spec");
	} else if (check_intact(m, m, dir, opts->rehash, &mst.st_mtim, &rehashed, why)) {
		/* files whose inode changed after the manifest was written were re-hashed and
		   are whole: seal them again, so the next use trusts them */
		if (rehashed && !opts->rehash)
			seal_manifest(mpath);
		info->rehashed = rehashed;
		if (hold_for_use(dir, info, err) < 0) {
			manifest_free(m);
			return -1;
		}
		*out = m;
		return 1;
	}
	manifest_free(m);
	return 0;
}

int dataset_get(const struct dataset_spec *spec, const struct dataset_get_opts *opts,
		struct dataset_info *info, struct manifest **out, char **err)
{
	static const struct dataset_get_opts none = { 0 };
	if (!opts)
		opts = &none;
	*info = (struct dataset_info){ 0 };
	if (spec->path) {
		if (dataset_scan(spec->path, out, err) < 0)
			return -1;
		info->dir = xstrdup(spec->path);
		return 0;
	}
	if (dataset_spec_check(spec, err) < 0)
		return -1;

	_cleanup_free_ char *cache =
	    opts->cache_dir ? xstrdup(opts->cache_dir) : dataset_cache_dir();
	_cleanup_free_ char *base = xasprintf("%s/datasets", cache);
	if (mkdir_p(base, 0755, NULL) < 0)
		return dataset_err_errno(err, "create cache directory", base);
	_cleanup_free_ char *hash = dataset_spec_hash(spec);
	_cleanup_free_ char *canon = dataset_spec_canonical(spec);
	_cleanup_free_ char *dir = xasprintf("%s/%s", base, hash);
	_cleanup_free_ char *mpath = xasprintf("%s/%s.manifest.json", base, hash);
	_cleanup_free_ char *lpath = xasprintf("%s/%s.lock", base, hash);
	remove_dead_temps(base, NULL);

	/* one generator per dataset across processes; the lock dies with the fd */
	_cleanup_close_ int lock = open(lpath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (lock < 0)
		return dataset_err_errno(err, "create", lpath);
	if (lock_cancellable(lock, &opts->gen, err, lpath) < 0)
		return -1;
	/* the use that eviction goes by (dataset_cache_evict()) */
	(void)futimens(lock, NULL);

	struct manifest *m = NULL;
	char *why = NULL;
	int cached = cached_copy(dir, mpath, canon, opts, info, &m, &why, err);
	if (cached < 0)
		return -1;
	if (cached) {
		info->dir = TAKE_PTR(dir);
		info->manifest_path = TAKE_PTR(mpath);
		*out = m;
		return 0;
	}
	info->regen_reason = why;

	if (unlink(mpath) < 0 && errno != ENOENT)
		return dataset_err_errno(err, "remove", mpath);
	if (rm_tree(dir, NULL) < 0)
		return dataset_err_errno(err, "remove", dir);
	remove_dead_temps(base, hash);
	_cleanup_free_ char *tmp = xasprintf("%s/.tmp-%s-%ld", base, hash, (long)getpid());
	if (dataset_generate(spec, tmp, &opts->gen, &m, err) < 0)
		return -1;
	if (dir_replace(tmp, dir, NULL) < 0) {
		dataset_err_errno(err, "rename into place", tmp);
		manifest_free(m);
		return -1;
	}
	/* the manifest last: its presence (with "complete") is what says the data is whole, and
	   its mtime seals the files' inodes (check_intact()) */
	if (manifest_save(m, mpath, err) < 0 || hold_for_use(dir, info, err) < 0) {
		manifest_free(m);
		return -1;
	}
	seal_manifest(mpath);
	/* the cache grew: bring it under its limit (this entry is held, so it stays) */
	struct evict_result ev;
	_cleanup_free_ char *everr = NULL;
	if (dataset_cache_evict(cache, dataset_cache_limit(cache), &ev, &everr) == 0)
		info->evicted = ev.removed;
	info->dir = TAKE_PTR(dir);
	info->manifest_path = TAKE_PTR(mpath);
	info->generated = true;
	*out = m;
	return 0;
}
