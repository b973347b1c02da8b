/* SPDX-License-Identifier: MIT */
/* Capacity checks before a run, and the dataset cache's size limit (see capacity.h). */
#include "capacity.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "dataset.h"
#include "fs.h"
#include "util.h"

static uint64_t need_of(const struct capacity_need *n, bool inodes)
{
	return inodes ? n->inodes : n->bytes;
}

static char *amount(uint64_t v, bool inodes)
{
	return inodes ? xasprintf("%llu", (unsigned long long)v) : human_size(v);
}

/* The message for one filesystem (or memory) short of bytes or inodes, or NULL when it is not. */
static char *short_of(const struct capacity_need *needs, size_t n_needs,
		      const struct capacity_space *sp, bool inodes)
{
	uint64_t total = 0, avail = inodes ? sp->inodes : sp->avail;
	bool any = false;
	if (inodes && (!sp->inodes_known || sp->fs == 0))
		return NULL;
	for (size_t i = 0; i < n_needs; i++)
		if (needs[i].fs == sp->fs && need_of(&needs[i], inodes)) {
			any = true;
			if (!add_u64(total, need_of(&needs[i], inodes), &total))
				total = UINT64_MAX;
		}
	if (!any || total <= avail)
		return NULL;
	/* what it is for, in the order given, each need once */
	char *parts = xstrdup("");
	for (size_t i = 0; i < n_needs; i++) {
		if (needs[i].fs != sp->fs || !need_of(&needs[i], inodes))
			continue;
		_cleanup_free_ char *b = amount(need_of(&needs[i], inodes), inodes);
		char *q = xasprintf("%s%s%s %s", parts, *parts ? ", " : "", needs[i].what, b);
		free(parts);
		parts = q;
	}
	_cleanup_free_ char *t = amount(total, inodes);
	_cleanup_free_ char *a = amount(avail, inodes);
	char *line;
	if (sp->fs == 0)
		line = xasprintf("not enough memory: needs %s (%s), %s are available", t, parts, a);
	else if (inodes)
		line = xasprintf("not enough inodes (files and directories) on the filesystem of "
				 "'%s': needs %s (%s), %s are free",
				 sp->where, t, parts, a);
	else
		line = xasprintf("not enough disk space on the filesystem of '%s': needs %s (%s), "
				 "%s are free",
				 sp->where, t, parts, a);
	free(parts);
	return line;
}

int capacity_check(const struct capacity_need *needs, size_t n_needs,
		   const struct capacity_space *space, size_t n_space, char **err)
{
	char *msg = NULL;
	for (size_t s = 0; s < n_space; s++)
		for (int inodes = 0; inodes <= 1; inodes++) {
			char *line = short_of(needs, n_needs, &space[s], inodes);
			if (!line)
				continue;
			char *q = msg ? xasprintf("%s; %s", msg, line) : line;
			if (msg) {
				free(msg);
				free(line);
			}
			msg = q;
		}
	if (!msg)
		return 0;
	*err = msg;
	return -1;
}

uint64_t capacity_fs_of(const char *path)
{
	_cleanup_free_ char *p = xstrdup(path);
	struct stat st;
	while (stat(p, &st) < 0) {
		char *slash = strrchr(p, '/');
		if (!slash)
			return 0;
		if (slash == p) {
			p[1] = '\0';
			if (stat(p, &st) < 0)
				return 0;
			break;
		}
		*slash = '\0';
	}
	return (uint64_t)st.st_dev + 1; /* never 0, which stands for memory */
}

uint64_t capacity_fs_avail(const char *path)
{
	_cleanup_free_ char *p = xstrdup(path);
	struct statvfs sv;
	while (statvfs(p, &sv) < 0) {
		char *slash = strrchr(p, '/');
		if (!slash || slash == p)
			return UINT64_MAX;
		*slash = '\0';
	}
	return (uint64_t)sv.f_bavail * sv.f_frsize;
}

bool capacity_fs_inodes(const char *path, uint64_t *inodes)
{
	_cleanup_free_ char *p = xstrdup(path);
	struct statvfs sv;
	while (statvfs(p, &sv) < 0) {
		char *slash = strrchr(p, '/');
		if (!slash || slash == p)
			return false;
		*slash = '\0';
	}
	if (sv.f_files == 0)
		return false; /* no fixed inode table (btrfs, some network filesystems) */
	*inodes = (uint64_t)sv.f_favail;
	return true;
}

uint64_t capacity_mem_available(void)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/meminfo", "re");
	char line[256];
	unsigned long long kib;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
			return (uint64_t)kib * 1024;
	return UINT64_MAX;
}

uint64_t capacity_dataset_bytes(const struct dataset_spec *s)
{
	uint64_t total = 0;
	for (uint64_t i = 0; i < s->files; i++) {
		uint64_t b = (dataset_file_size(s, i) + 4095) & ~UINT64_C(4095);
		if (!add_u64(total, b, &total))
			return UINT64_MAX;
	}
	return total;
}

uint64_t capacity_dataset_inodes(const struct dataset_spec *s)
{
	uint64_t total = 1, level = 1; /* the top directory */
	if (!add_u64(total, s->files, &total))
		return UINT64_MAX;
	for (unsigned d = 0; s->fanout > 0 && d < s->depth; d++) {
		if (!mul_u64(level, s->fanout, &level) || !add_u64(total, level, &total))
			return UINT64_MAX;
	}
	return total;
}

bool capacity_dataset_cached(const struct dataset_spec *s, const char *cache_dir)
{
	_cleanup_free_ char *hash = dataset_spec_hash(s);
	_cleanup_free_ char *mpath = xasprintf("%s/datasets/%s.manifest.json", cache_dir, hash);
	struct stat st;
	return lstat(mpath, &st) == 0 && S_ISREG(st.st_mode);
}

int capacity_dataset(const struct dataset_spec *spec, const char *dir, char **err)
{
	uint64_t fs = capacity_fs_of(dir);
	const struct capacity_need need = { "the dataset", fs, capacity_dataset_bytes(spec),
					    capacity_dataset_inodes(spec) };
	struct capacity_space space = { fs, dir, capacity_fs_avail(dir), 0, false };
	space.inodes_known = capacity_fs_inodes(dir, &space.inodes);
	return capacity_check(&need, 1, &space, 1, err);
}

/* ---- cache size limit ---- */

uint64_t dataset_cache_limit(const char *cache_dir)
{
	const char *e = getenv("FERRY_CACHE_MAX");
	uint64_t v;
	if (e && *e) {
		if (STREQ(e, "none") || STREQ(e, "0"))
			return UINT64_MAX;
		if (dataset_parse_size(e, &v) == 0)
			return v;
	}
	_cleanup_free_ char *p = xstrdup(cache_dir);
	struct statvfs sv;
	while (statvfs(p, &sv) < 0) {
		char *slash = strrchr(p, '/');
		if (!slash || slash == p)
			return UINT64_MAX;
		*slash = '\0';
	}
	return (uint64_t)sv.f_blocks * sv.f_frsize / 2;
}

struct entry {
	char *hash;
	uint64_t bytes;
	struct timespec used;
};

static int by_use(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	return x->used.tv_nsec < y->used.tv_nsec ? -1 : x->used.tv_nsec > y->used.tv_nsec;
}

/* Bytes of the files under dfd (allocated blocks), recursively, symlinks not followed. */
static uint64_t tree_bytes(int dfd)
{
	int fd2 = dup(dfd);
	if (fd2 < 0)
		return 0;
	_cleanup_(closedirp) DIR *d = fdopendir(fd2);
	if (!d) {
		close(fd2);
		return 0;
	}
	uint64_t n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (STREQ(de->d_name, ".") || STREQ(de->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		n += (uint64_t)st.st_blocks * 512;
		if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int sub = openat(
			    dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				n += tree_bytes(sub);
		}
	}
	return n;
}

int dataset_cache_evict(const char *cache_dir, uint64_t limit, struct evict_result *res, char **err)
{
	*res = (struct evict_result){ 0 };
	_cleanup_free_ char *base = xasprintf("%s/datasets", cache_dir);
	_cleanup_close_ int bfd = open(base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (bfd < 0) {
		if (errno == ENOENT)
			return 0;
		*err = xasprintf("cannot open '%s': %s", base, strerror(errno));
		return -1;
	}
	int fd2 = dup(bfd);
	_cleanup_(closedirp) DIR *d = fd2 < 0 ? NULL : fdopendir(fd2);
	if (!d) {
		if (fd2 >= 0)
			close(fd2);
		*err = xasprintf("cannot read '%s': %s", base, strerror(errno));
		return -1;
	}
	struct entry *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		/* a dataset entry: a directory named by its 16-hex-digit spec hash */
		if (strlen(de->d_name) != 16 || strspn(de->d_name, "0123456789abcdef") != 16)
			continue;
		_cleanup_close_ int dfd =
		    openat(bfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dfd < 0)
			continue;
		struct entry e = { .hash = xstrdup(de->d_name), .bytes = tree_bytes(dfd) };
		_cleanup_free_ char *lock = xasprintf("%s.lock", de->d_name);
		struct stat st;
		if (fstatat(bfd, lock, &st, AT_SYMLINK_NOFOLLOW) == 0)
			e.used = st.st_mtim;
		else if (fstat(dfd, &st) == 0)
			e.used = st.st_mtim;
		v = xgrow(v, &cap, n + 1, sizeof(*v));
		v[n++] = e;
		res->total += e.bytes;
	}
	qsort(v, n, sizeof(*v), by_use);
	for (size_t i = 0; i < n && res->total > limit; i++) {
		/* the generation lock, then the use lock on the directory: held by anyone, it stays
		 */
		_cleanup_free_ char *lock = xasprintf("%s.lock", v[i].hash);
		_cleanup_close_ int lfd = openat(bfd, lock, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		_cleanup_close_ int dfd =
		    openat(bfd, v[i].hash, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if ((lfd >= 0 && flock(lfd, LOCK_EX | LOCK_NB) < 0) || dfd < 0 ||
		    flock(dfd, LOCK_EX | LOCK_NB) < 0) {
			res->in_use++;
			continue;
		}
		/* the manifest first: without it the entry is never taken for whole */
		_cleanup_free_ char *mf = xasprintf("%s.manifest.json", v[i].hash);
		if (unlinkat(bfd, mf, 0) < 0 && errno != ENOENT)
			continue;
		if (rm_tree_at(bfd, v[i].hash, NULL) < 0)
			continue;
		res->removed++;
		res->freed += v[i].bytes;
		res->total -= v[i].bytes;
	}
	for (size_t i = 0; i < n; i++)
		free(v[i].hash);
	free(v);
	return 0;
}
