/* SPDX-License-Identifier: MIT */
/*
 * The fake machine's own work inside a guest over a local directory (fake-guest.h), and its look
 * at what the guest holds, without a guest process: a thread of this process enters the guest (a
 * filesystem context of its own by unshare(CLONE_FS), which lets one thread of a process join
 * another mount namespace, then the guest's namespace and root) and makes the system calls that the
 * guest's mkdir, mount, umount, rm, cat and dd would make. An exec costs about 7 ms of CPU on the
 * paravirtualized hosts this runs on; a thread, a small part of that. What a method runs in the
 * guest still runs there as a guest process (fake_root_start()).
 */
#include "fake-guest.h"
#include "fake-guest-int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"
#include "util.h"

struct inside {
	const struct fake_root *r;
	int (*fn)(void *ud);
	void *ud;
	int rc, err;
};

static void *inside_main(void *arg)
{
	struct inside *in = arg;
	if (unshare(CLONE_FS) < 0 || setns(in->r->ns_fd, CLONE_NEWNS) < 0 ||
	    chroot(in->r->dir) < 0 || chdir("/") < 0) {
		in->rc = -1;
		in->err = errno;
		return NULL;
	}
	errno = 0;
	in->rc = in->fn(in->ud);
	in->err = errno;
	return NULL;
}

int fake_root_inside(const struct fake_root *r, int (*fn)(void *ud), void *ud)
{
	struct inside in = { .r = r, .fn = fn, .ud = ud };
	pthread_t t;
	int e = pthread_create(&t, NULL, inside_main, &in);
	if (e != 0) {
		errno = e;
		return -1;
	}
	pthread_join(t, NULL);
	errno = in.err;
	return in.rc;
}

/* ---- mounts ---- */

struct mount_args {
	const char *src, *mnt, *type, *opts, *then;
	const char *what; /* the failed step, for the message */
};

static int mount_inside(void *ud)
{
	struct mount_args *a = ud;
	a->what = "mkdir";
	if (mkdir_p(a->mnt, 0755, NULL) < 0)
		return -1;
	a->what = "mount";
	if (mount(a->src, a->mnt, a->type, 0, a->opts) < 0)
		return -1;
	a->what = "mkdir";
	return a->then ? mkdir_p(a->then, 0755, NULL) : 0;
}

int fake_root_mount(const struct fake_root *r, const char *src, const char *mnt, const char *type,
		    const char *opts, const char *then, char **err)
{
	struct mount_args a = { src, mnt, type, opts, then, "enter" };
	if (fake_root_inside(r, mount_inside, &a) == 0)
		return 0;
	*err = xasprintf("fake guest: %s (mount -t %s %s %s%s%s): %s", a.what, type, src, mnt,
			 then ? ", then mkdir -p " : "", then ? then : "", strerror(errno));
	return -1;
}

static int umount_inside(void *ud)
{
	return umount2(ud, 0);
}

int fake_root_umount(const struct fake_root *r, const char *mnt, char **err)
{
	if (fake_root_inside(r, umount_inside, (void *)mnt) == 0)
		return 0;
	*err = xasprintf("fake guest: umount %s: %s", mnt, strerror(errno));
	return -1;
}

/* ---- files ---- */

static int empty_inside(void *ud)
{
	if (rm_tree(ud, NULL) < 0)
		return -1;
	return mkdir_p(ud, 0755, NULL);
}

int fake_root_empty(const struct fake_root *r, const char *dir, char **err)
{
	if (fake_root_inside(r, empty_inside, (void *)dir) == 0)
		return 0;
	*err = xasprintf("fake guest: rm -rf %s && mkdir -p %s: %s", dir, dir, strerror(errno));
	return -1;
}

struct open_args {
	const char *path;
	int flags;
	int fd;
};

static int open_inside(void *ud)
{
	struct open_args *a = ud;
	a->fd = open(a->path, a->flags | O_CLOEXEC | O_NOCTTY, 0666);
	return a->fd < 0 ? -1 : 0;
}

int fake_root_open(const struct fake_root *r, const char *path, int flags, int *fd, char **err)
{
	struct open_args a = { path, flags, -1 };
	if (fake_root_inside(r, open_inside, &a) < 0) {
		*err = xasprintf("%s", strerror(errno));
		return -1;
	}
	*fd = a.fd;
	return 0;
}

/* ---- a flipped byte ---- */

/* Every regular file below the directory fd dfd (named path), as `find path -type f` lists
 * them: links not followed. */
static void regular_files(int dfd, const char *path, char ***list, size_t *n, unsigned depth)
{
	DIR *d = depth < 64 ? fdopendir(dfd) : NULL;
	if (!d) {
		close(dfd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (STREQ(e->d_name, ".") || STREQ(e->d_name, ".."))
			continue;
		struct stat sb;
		if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		char *p = xasprintf("%s/%s", path, e->d_name);
		if (S_ISREG(sb.st_mode)) {
			*list = xrealloc(*list, (*n + 1) * sizeof(**list));
			(*list)[(*n)++] = p;
			continue;
		}
		int sub = S_ISDIR(sb.st_mode)
			      ? openat(dirfd(d), e->d_name,
				       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
			      : -1;
		if (sub >= 0)
			regular_files(sub, p, list, n, depth + 1);
		free(p);
	}
	closedir(d);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct flip_args {
	const char *path;
	bool first; /* path is a directory: its first regular file in name order */
	char *flipped;
};

static int flip_inside(void *ud)
{
	struct flip_args *a = ud;
	if (a->first) {
		/* `find DIR -type f | sort | head -n 1`, sorted bytewise as LC_ALL=C sorts */
		char **list = NULL;
		size_t n = 0;
		int dfd = open(a->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			return -1;
		regular_files(dfd, STREQ(a->path, "/") ? "" : a->path, &list, &n, 0);
		qsort(list, n, sizeof(*list), cmp_str);
		a->flipped = n ? TAKE_PTR(list[0]) : NULL;
		for (size_t i = 1; i < n; i++)
			free(list[i]);
		free(list);
		if (!a->flipped) {
			errno = ENOENT;
			return -1;
		}
	} else {
		a->flipped = xstrdup(a->path);
	}
	/* read the byte, write its complement in place, synced (a device: past the page cache) */
	_cleanup_close_ int fd = open(a->flipped, O_RDWR | O_CLOEXEC | O_NOCTTY);
	unsigned char b;
	ssize_t got = fd < 0 ? -1 : pread(fd, &b, 1, 0);
	if (got == 0)
		errno = ENODATA;
	if (got != 1)
		return -1;
	b = (unsigned char)~b;
	return pwrite(fd, &b, 1, 0) == 1 && fsync(fd) == 0 ? 0 : -1;
}

int fake_root_flip(const struct fake_root *r, const char *path, bool first, char **flipped,
		   char **err)
{
	struct flip_args a = { path, first, NULL };
	int rc = fake_root_inside(r, flip_inside, &a);
	if (rc < 0)
		*err = xasprintf("%s", first && !a.flipped && errno == ENOENT ? "no file"
									      : strerror(errno));
	*flipped = a.flipped;
	return rc;
}

/* ---- what the guest holds, read from the host ---- */

int fake_root_mounts(const struct fake_root *r)
{
	_cleanup_free_ char *path = xasprintf("/proc/%d/mounts", (int)r->holder);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	int n = 0;
	while (getline(&text, &len, f) > 0)
		n++;
	fclose(f);
	return n - r->boot_mounts;
}

int fake_root_mounted(const struct fake_root *r, const char *mnt, char **err)
{
	_cleanup_free_ char *path = xasprintf("/proc/%d/mounts", (int)r->holder);
	FILE *f = fopen(path, "re");
	if (!f) {
		*err = xasprintf("fake guest: %s: %s", path, strerror(errno));
		return -1;
	}
	_cleanup_free_ char *line = NULL;
	size_t cap = 0, n = strlen(mnt);
	int found = 0;
	while (!found && getline(&line, &cap, f) > 0) {
		const char *sp = strchr(line, ' ');
		found = sp && strncmp(sp + 1, mnt, n) == 0 && sp[1 + n] == ' ';
	}
	fclose(f);
	return found;
}

/* Appends "GUEST_PATH," for every entry under dirfd that is not a directory, depth first. */
static void files_under(int dirfd, const char *guest, const char *prune, char **list,
			unsigned depth)
{
	DIR *d = depth < 64 ? fdopendir(dirfd) : NULL;
	if (!d) {
		close(dirfd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		_cleanup_free_ char *p = xasprintf("%s/%s", guest, e->d_name);
		struct stat sb;
		if (fstatat(dirfd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (!S_ISDIR(sb.st_mode)) {
			char *more = xasprintf("%s%s,", *list ? *list : "", p);
			free(*list);
			*list = more;
		} else if (!prune || strcmp(p, prune) != 0) {
			int sub = openat(dirfd, e->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				files_under(sub, p, prune, list, depth + 1);
		}
	}
	closedir(d);
}

char *fake_root_files(const struct fake_root *r, const char *const *dirs, const char *prune)
{
	char *list = NULL;
	for (size_t i = 0; dirs[i]; i++) {
		_cleanup_free_ char *host = fake_host_path(r, dirs[i]);
		int fd = open(host, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			files_under(fd, dirs[i], prune, &list, 0);
	}
	return list ? list : xstrdup("");
}
