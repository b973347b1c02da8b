/* SPDX-License-Identifier: MIT */
/*
 * The built guest in the cache: the key over every input, the build into a fresh directory, the
 * manifest, the `current` link, pruning, and finding what was built. See guest.h for the layout.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "cleanup.h"
#include "fs.h"
#include "guest-build.h"
#include "hash.h"

int guest_err(char **err, int code, const char *fmt, ...)
{
	va_list ap;
	if (err) {
		/* format first: callers may pass the previous *err as an argument */
		va_start(ap, fmt);
		char *m = xvasprintf(fmt, ap);
		va_end(ap);
		free(*err);
		*err = m;
	}
	return code;
}

int guest_write_file(const char *path, const void *data, size_t len, unsigned mode, char **err)
{
	if (write_file_atomic(path, data, len, (mode_t)mode, err) < 0)
		return -errno;
	return 0;
}

void guest_append(char **s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *m = xvasprintf(fmt, ap);
	va_end(ap);
	char *t = xasprintf("%s%s", *s ? *s : "", m);
	free(*s);
	*s = t;
}

static void build_clear(struct build *b)
{
	free(b->kver);
	free(b->kernel_pkg);
	pkg_list_clear(&b->pkgs);
	guest_tree_clear(&b->tree);
	free(b->vmlinuz);
	for (size_t i = 0; i < b->nmods; i++)
		guest_module_clear(&b->mods[i]);
	free(b->mods);
	strv_free(b->need, b->nneed);
	for (size_t i = 0; i < b->nlibs; i++) {
		free(b->libs[i].path);
		free(b->libs[i].data);
		free(b->libs[i].target);
	}
	free(b->libs);
	json_decref(b->modules);
	json_decref(b->modules_boot);
	json_decref(b->libraries);
}

void build_progress(struct build *b, const char *fmt, ...)
{
	va_list ap;
	if (!b->opts->progress)
		return;
	va_start(ap, fmt);
	_cleanup_free_ char *m = xvasprintf(fmt, ap);
	va_end(ap);
	b->opts->progress(b->opts->userdata, m);
}

struct fixture {
	char *data;
	size_t len;
};

/* The guest's init files: the source tree's when this binary runs from the build tree it was
 * built in (build/ferry, the tests' executables), else the installed copy under the data
 * directory. An installed ferry never reads a source or build tree that still exists. */
static char *default_fixtures_dir(void)
{
	_cleanup_free_ char *exe = realpath("/proc/self/exe", NULL);
	_cleanup_free_ char *root = realpath(FERRY_BUILD_DIR, NULL);
	size_t n = root ? strlen(root) : 0;
	if (exe && root && strncmp(exe, root, n) == 0 && exe[n] == '/')
		return xasprintf("%s/fixtures/guest", FERRY_SOURCE_DIR);
	return xasprintf("%s/guest", FERRY_DATADIR);
}

/* ferry-sum, the verify lister the guest carries (runner/guest/ferry-sum.c): the build tree's
 * when this binary runs from the build tree it was built in, else the installed one. */
static char *default_sum_path(void)
{
	_cleanup_free_ char *exe = realpath("/proc/self/exe", NULL);
	_cleanup_free_ char *root = realpath(FERRY_BUILD_DIR, NULL);
	size_t n = root ? strlen(root) : 0;
	if (exe && root && strncmp(exe, root, n) == 0 && exe[n] == '/')
		return xasprintf("%s/ferry-sum", root);
	return xstrdup(FERRY_LIBEXECDIR "/ferry-sum");
}

/* The text the cache key hashes: every input that changes the output bytes. */
static char *key_text(const struct build *b, const struct fixture *fx, const struct fixture *sum,
		      int64_t mtime)
{
	char *t = xasprintf("ferry-guest format=%d\ncmdline=%s\nmtime=%lld\n", GUEST_FORMAT_VERSION,
			    GUEST_CMDLINE, (long long)mtime);
	for (size_t i = 0; i < b->pkgs.n; i++) {
		const struct pkg *p = &b->pkgs.items[i];
		char *n = xasprintf("%spackage %s %s %s %s\n", t, p->name, p->version, p->arch,
				    p->sha256);
		free(t);
		t = n;
	}
	for (size_t i = 0; i < ELEMENTSOF(guest_fixtures); i++) {
		char hex[SHA256_HEX];
		sha256_buf_hex(fx[i].data, fx[i].len, hex);
		char *n = xasprintf("%sfixture %s %s\n", t, guest_fixtures[i].name, hex);
		free(t);
		t = n;
	}
	char sumhex[SHA256_HEX];
	sha256_buf_hex(sum->data, sum->len, sumhex);
	guest_append(&t, "program ferry-sum %s\n", sumhex);
	for (size_t i = 0; i < ELEMENTSOF(guest_modules_boot); i++)
		guest_append(&t, "module boot %s\n", guest_modules_boot[i]);
	for (size_t i = 0; i < ELEMENTSOF(guest_modules_later); i++)
		guest_append(&t, "module later %s\n", guest_modules_later[i]);
	return t;
}

static int64_t source_date_epoch(void)
{
	const char *s = getenv("SOURCE_DATE_EPOCH");
	char *end;
	if (!s || !*s)
		return 0;
	long long v = strtoll(s, &end, 10);
	return (*end || v < 0) ? 0 : (int64_t)v;
}

/* Is the keyed output there with the sizes and hashes its manifest records? */
static bool output_intact(const char *dir)
{
	_cleanup_free_ char *mpath = xasprintf("%s/manifest.json", dir);
	_cleanup_(json_decrefp) json_t *m = json_load_file(mpath, 0, NULL);
	static const char *const files[] = { "kernel", "initramfs" };

	if (!m)
		return false;
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		json_t *f = json_object_get(m, files[i]);
		const char *name = json_string_value(json_object_get(f, "file"));
		const char *sum = json_string_value(json_object_get(f, "sha256"));
		json_int_t size = json_integer_value(json_object_get(f, "size"));
		char hex[65];
		uint64_t got;
		if (!name || !sum || strchr(name, '/'))
			return false;
		_cleanup_free_ char *p = xasprintf("%s/%s", dir, name);
		if (sha256_file_hex(p, hex, &got) < 0 || !STREQ(hex, sum) || got != (uint64_t)size)
			return false;
	}
	return true;
}

/* A keyed build directory, or a build directory left by an interrupted build: ferry's own, in a
 * cache only ferry writes; removed without following links or leaving the filesystem. */
static void remove_dir(const char *dir)
{
	(void)rm_tree(dir, NULL);
}

static int build_into(struct build *b, const char *dir, const char *key, const struct fixture *fx,
		      const struct fixture *sum, int64_t mtime, char **err)
{
	static const char *const dirs[] = { "bin",  "dev",     "etc",      "lib64", "mnt",
					    "proc", "root",    "run",      "sbin",  "sys",
					    "tmp",  "usr/bin", "usr/sbin", "var" };
	const struct pkg *kpkg = pkg_find(&b->pkgs, b->kernel_pkg);
	const struct pkg *bb = pkg_find(&b->pkgs, "busybox-static");
	const struct pkg *qga = pkg_find(&b->pkgs, "qemu-guest-agent");
	int r;

	for (size_t i = 0; i < ELEMENTSOF(dirs); i++)
		guest_tree_add_dir(&b->tree, dirs[i], 0755);
	guest_tree_add_dir(&b->tree, "tmp", 01777);
	/* the kernel opens /dev/console for init's stdio before /init could mount devtmpfs */
	guest_tree_add_chardev(&b->tree, "dev/console", 0600, 5, 1);

	build_progress(b, "unpacking busybox-static %s", bb->version);
	r = add_busybox(b, bb, dir, err);
	if (r < 0)
		return r;
	build_progress(b, "unpacking qemu-guest-agent %s and its libraries", qga->version);
	r = add_agent(b, qga, err);
	if (r < 0)
		return r;
	build_progress(b, "unpacking dropbear, scp and rsync and their libraries");
	r = add_tools(b, err);
	if (r < 0)
		return r;
	r = add_kernel(b, kpkg, err);
	if (r < 0)
		return r;
	/* after busybox: a fixture replaces an applet link of the same path */
	for (size_t i = 0; i < ELEMENTSOF(guest_fixtures); i++)
		guest_tree_add_file(&b->tree, guest_fixtures[i].path, guest_fixtures[i].mode,
				    fx[i].data, fx[i].len);
	guest_tree_add_file(&b->tree, "usr/bin/ferry-sum", 0755, sum->data, sum->len);

	bool pvh;
	_cleanup_free_ char *why = NULL;
	build_progress(b, "extracting the kernel");
	r = write_kernel(b, dir, &pvh, &why, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *cpio = xasprintf("%s/initramfs.cpio", dir);
	build_progress(b, "writing the initramfs (%zu entries)", b->tree.n);
	r = guest_cpio_write(&b->tree, cpio, mtime, err);
	if (r < 0)
		return r;
	if (chmod(cpio, 0644) < 0)
		return guest_err(err, -errno, "cannot chmod '%s': %s", cpio, strerror(errno));

	char ksum[65], isum[65];
	uint64_t ksize, isize;
	_cleanup_free_ char *kpath = xasprintf("%s/kernel", dir);
	if (sha256_file_hex(kpath, ksum, &ksize) < 0)
		return guest_err(err, -errno, "cannot read '%s': %s", kpath, strerror(errno));
	if (sha256_file_hex(cpio, isum, &isize) < 0)
		return guest_err(err, -errno, "cannot read '%s': %s", cpio, strerror(errno));

	_cleanup_(json_decrefp) json_t *m = json_object();
	json_t *pkgs = json_array();
	for (size_t i = 0; i < b->pkgs.n; i++) {
		const struct pkg *p = &b->pkgs.items[i];
		json_array_append_new(pkgs, json_pack("{s:s, s:s, s:s}", "name", p->name, "version",
						      p->version, "sha256", p->sha256));
	}
	json_object_set_new(m, "format", json_integer(GUEST_FORMAT_VERSION));
	json_object_set_new(m, "key", json_string(key));
	json_object_set_new(m, "kernel_version", json_string(b->kver));
	json_object_set_new(m, "cmdline", json_string(GUEST_CMDLINE));
	json_object_set_new(m, "pvh", json_boolean(pvh));
	json_object_set_new(m, "kernel_source", json_string(why));
	json_object_set_new(m, "kernel",
			    json_pack("{s:s, s:I, s:s}", "file", "kernel", "size",
				      (json_int_t)ksize, "sha256", ksum));
	json_object_set_new(m, "initramfs",
			    json_pack("{s:s, s:I, s:s, s:I, s:I}", "file", "initramfs.cpio", "size",
				      (json_int_t)isize, "sha256", isum, "entries",
				      (json_int_t)b->tree.n, "mtime", (json_int_t)mtime));
	json_object_set_new(m, "packages", pkgs);
	char sumhex[SHA256_HEX];
	sha256_buf_hex(sum->data, sum->len, sumhex);
	json_object_set_new(m, "ferry_sum",
			    json_pack("{s:s, s:I, s:s}", "path", "usr/bin/ferry-sum", "size",
				      (json_int_t)sum->len, "sha256", sumhex));
	json_object_set_new(m, "modules", json_incref(b->modules));
	json_object_set_new(m, "modules_at_boot", json_incref(b->modules_boot));
	json_object_set_new(m, "libraries", json_incref(b->libraries));
	json_object_set_new(m, "applets", json_integer((json_int_t)b->applets));
	_cleanup_free_ char *text = json_dumps(m, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	_cleanup_free_ char *mpath = xasprintf("%s/manifest.json", dir);
	size_t tl = strlen(text);
	text = xrealloc(text, tl + 2);
	text[tl] = '\n';
	text[tl + 1] = '\0';
	return guest_write_file(mpath, text, tl + 1, 0644, err);
}

char *guest_default_cache_dir(void)
{
	return ferry_cache_dir();
}

/*
 * After a new build: remove downloaded packages it does not use (older kernels are ~70 MB each)
 * and built guests other than the new one and the one `current` named until now (a VM that
 * located it a moment ago may still be starting from it).
 */
static void prune_cache(const struct pkg_list *l, const char *guestdir, const char *debdir,
			const char *key)
{
	struct dirent *de;

	guest_cache_prune(guestdir, key);
	DIR *d = opendir(debdir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		bool keep = !has_suffix(de->d_name, ".deb");
		for (size_t i = 0; i < l->n && !keep; i++) {
			const char *base = strrchr(l->items[i].deb, '/');
			keep = base && STREQ(base + 1, de->d_name);
		}
		if (!keep)
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

/* ------------------------------------------------------------------------------------------ */
/* the directory of one kind of guest in the cache (CACHE/guest, CACHE/guest-debian): shared by
 * the built-in guest's build here and the Debian guest's (debian.c) */

int guest_make_dir(const char *path, char **err)
{
	if (mkdir_p(path, 0755, err) < 0)
		return -errno;
	if (chmod(path, 0755) < 0)
		return guest_err(err, -errno, "cannot chmod '%s': %s", path, strerror(errno));
	return 0;
}

int guest_cache_lock(const char *guestdir, const struct guest_build_opts *opts, const char *waiting,
		     char **err)
{
	_cleanup_free_ char *lockpath = xasprintf("%s/.lock", guestdir);
	int fd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return guest_err(err, -errno, "cannot open '%s': %s", lockpath, strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (opts->progress)
			opts->progress(opts->userdata, waiting);
		while (flock(fd, LOCK_EX) < 0 && errno == EINTR)
			;
	}
	return fd;
}

int guest_cache_point(const char *guestdir, const char *key, char **err)
{
	_cleanup_free_ char *cur = xasprintf("%s/current", guestdir);
	if (symlink_replace(key, cur, err) < 0)
		return -errno;
	return 0;
}

static bool is_key_name(const char *s)
{
	return strlen(s) == 32 && strspn(s, "0123456789abcdef") == 32;
}

int guest_cache_hold(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (flock(fd, LOCK_SH) < 0)
		if (errno != EINTR) {
			close(fd);
			return -1;
		}
	return fd;
}

void guest_cache_prune(const char *guestdir, const char *key)
{
	_cleanup_free_ char *cur = xasprintf("%s/current", guestdir);
	char prev[64] = "";
	ssize_t n = readlink(cur, prev, sizeof(prev) - 1);
	_cleanup_(closedirp) DIR *d = opendir(guestdir);
	struct dirent *de;

	prev[n > 0 ? n : 0] = '\0';
	while (d && (de = readdir(d))) {
		if (!is_key_name(de->d_name) || STREQ(de->d_name, key) || STREQ(de->d_name, prev))
			continue;
		/* a guest a run holds (guest_cache_hold()) stays: its VMs may still boot from it;
		 * the next build after that run removes it */
		_cleanup_close_ int fd =
		    openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
			continue;
		_cleanup_free_ char *dir = xasprintf("%s/%s", guestdir, de->d_name);
		remove_dir(dir);
	}
}

int guest_cache_build_dir(const char *guestdir, char **dirp, char **err)
{
	_cleanup_(closedirp) DIR *d = opendir(guestdir);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		/* ".build-*" now; "<key>.tmp.<pid>" from ferry before it */
		if (has_prefix(de->d_name, ".build-") ||
		    (strlen(de->d_name) > 37 && strncmp(de->d_name + 32, ".tmp.", 5) == 0))
			(void)rm_tree_at(dirfd(d), de->d_name, NULL);
	}
	_cleanup_free_ char *dir = xasprintf("%s/.build-XXXXXX", guestdir);
	if (!mkdtemp(dir))
		return guest_err(err, -errno, "cannot create a directory in '%s': %s", guestdir,
				 strerror(errno));
	if (chmod(dir, 0755) < 0) {
		int e = errno;
		rmdir(dir);
		return guest_err(err, -e, "cannot chmod '%s': %s", dir, strerror(e));
	}
	*dirp = TAKE_PTR(dir);
	return 0;
}

int guest_build(const struct guest_build_opts *opts, struct guest_files *out, bool *rebuilt,
		char **err)
{
	_cleanup_free_ char *cache =
	    opts->cache_dir ? xstrdup(opts->cache_dir) : guest_default_cache_dir();
	_cleanup_free_ char *fixdir =
	    opts->fixtures_dir ? xstrdup(opts->fixtures_dir) : default_fixtures_dir();
	_cleanup_free_ char *guestdir = xasprintf("%s/guest", cache);
	_cleanup_free_ char *debdir = xasprintf("%s/debs", guestdir);
	_cleanup_free_ char *sumpath =
	    opts->sum_path ? xstrdup(opts->sum_path) : default_sum_path();
	struct fixture fx[ELEMENTSOF(guest_fixtures)] = { { 0 } };
	struct fixture sum = { 0 };
	struct build b = { .opts = opts };
	int64_t mtime = source_date_epoch();
	int r;

	if (rebuilt)
		*rebuilt = false;
	r = guest_make_dir(cache, err);
	if (r >= 0)
		r = guest_make_dir(guestdir, err);
	if (r >= 0)
		r = guest_make_dir(debdir, err);
	/* one build at a time per cache: concurrent apt-get downloads into one directory would
	 * overwrite each other's files (the lock goes with the descriptor) */
	_cleanup_close_ int lock = -1;
	if (r >= 0) {
		lock = guest_cache_lock(
		    guestdir, opts, "waiting for another 'ferry guest build' on this cache", err);
		if (lock < 0)
			r = lock;
	}
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(guest_fixtures); i++) {
		_cleanup_free_ char *p = xasprintf("%s/%s", fixdir, guest_fixtures[i].name);
		fx[i].data = read_file(p, &fx[i].len);
		if (!fx[i].data)
			r = guest_err(err, -errno, "cannot read guest fixture '%s': %s", p,
				      strerror(errno));
	}
	if (r >= 0 && !(sum.data = read_file(sumpath, &sum.len)))
		r = guest_err(err, -errno, "cannot read the guest's verify lister '%s': %s",
			      sumpath, strerror(errno));
	if (r >= 0) {
		build_progress(&b, "resolving packages with apt-cache");
		r = resolve_packages(&b.pkgs, &b.kernel_pkg, err);
	}
	if (r >= 0) {
		b.kver = xstrdup(b.kernel_pkg + strlen("linux-image-"));
		_cleanup_free_ char *text = key_text(&b, fx, &sum, mtime);
		char key[65];
		sha256_buf_hex(text, strlen(text), key);
		key[32] = '\0'; /* 128 bits name a cache entry well enough */
		_cleanup_free_ char *dir = xasprintf("%s/%s", guestdir, key);

		if (opts->force || !output_intact(dir)) {
			_cleanup_free_ char *tmp = NULL;
			r = download_packages(&b.pkgs, debdir, opts->progress, opts->userdata, err);
			if (r >= 0)
				r = guest_cache_build_dir(guestdir, &tmp, err);
			if (r >= 0)
				r = build_into(&b, tmp, key, fx, &sum, mtime, err);
			if (r >= 0 && dir_replace(tmp, dir, err) < 0)
				r = -errno;
			if (r < 0 && tmp)
				remove_dir(tmp);
			else if (rebuilt)
				*rebuilt = true;
			if (r >= 0)
				prune_cache(&b.pkgs, guestdir, debdir, key);
		}
		if (r >= 0)
			r = guest_cache_point(guestdir, key, err);
	}
	for (size_t i = 0; i < ELEMENTSOF(guest_fixtures); i++)
		free(fx[i].data);
	free(sum.data);
	build_clear(&b);
	if (r < 0)
		return r;
	return guest_locate(cache, out, err);
}

/* ------------------------------------------------------------------------------------------ */
/* finding what was built */

void guest_files_clear(struct guest_files *g)
{
	if (!g)
		return;
	free(g->dir);
	free(g->kernel);
	free(g->initramfs);
	free(g->cmdline);
	free(g->kernel_version);
	free(g->initramfs_sha256);
	memset(g, 0, sizeof(*g));
}

int guest_cache_current(const char *cache_dir, const char *sub, const char *what, const char *build,
			const char *rebuild, char **dirp, json_t **mp, char **err)
{
	_cleanup_free_ char *cache = cache_dir ? xstrdup(cache_dir) : guest_default_cache_dir();
	_cleanup_free_ char *cur = xasprintf("%s/%s/current", cache, sub);
	_cleanup_free_ char *dir = realpath(cur, NULL);
	json_error_t je;

	if (!dir) {
		if (errno == ENOENT)
			return guest_err(err, -ENOENT, "no %s in '%s' (%s)", what, cache, build);
		return guest_err(err, -errno, "cannot resolve '%s': %s", cur, strerror(errno));
	}
	_cleanup_free_ char *mpath = xasprintf("%s/manifest.json", dir);
	json_t *m = json_load_file(mpath, 0, &je);
	if (!m)
		return guest_err(err, -EBADMSG, "cannot read '%s': %s (%s)", mpath, je.text,
				 rebuild);
	*dirp = TAKE_PTR(dir);
	*mp = m;
	return 0;
}

static int load_manifest(const char *cache_dir, char **dirp, json_t **mp, char **err)
{
	return guest_cache_current(cache_dir, "guest", "built-in guest", "run 'ferry guest build'",
				   "run 'ferry guest build --force'", dirp, mp, err);
}

int guest_locate(const char *cache_dir, struct guest_files *out, char **err)
{
	_cleanup_free_ char *dir = NULL;
	_cleanup_(json_decrefp) json_t *m = NULL;
	int r = load_manifest(cache_dir, &dir, &m, err);
	struct guest_files g = { 0 };

	memset(out, 0, sizeof(*out));
	if (r < 0)
		return r;
	const char *cmdline = json_string_value(json_object_get(m, "cmdline"));
	const char *kver = json_string_value(json_object_get(m, "kernel_version"));
	const char *kfile =
	    json_string_value(json_object_get(json_object_get(m, "kernel"), "file"));
	json_t *ini = json_object_get(m, "initramfs");
	const char *ifile = json_string_value(json_object_get(ini, "file"));
	const char *isum = json_string_value(json_object_get(ini, "sha256"));
	if (!cmdline || !kver || !kfile || !ifile || !isum)
		return guest_err(
		    err, -EBADMSG,
		    "'%s/manifest.json' lacks fields (run 'ferry guest build --force')", dir);
	g.dir = xstrdup(dir);
	g.kernel = xasprintf("%s/%s", dir, kfile);
	g.initramfs = xasprintf("%s/%s", dir, ifile);
	g.cmdline = xstrdup(cmdline);
	g.kernel_version = xstrdup(kver);
	g.initramfs_sha256 = xstrdup(isum);
	g.pvh = json_is_true(json_object_get(m, "pvh"));

	const char *paths[] = { g.kernel, g.initramfs };
	json_t *objs[] = { json_object_get(m, "kernel"), ini };
	for (size_t i = 0; i < 2; i++) {
		struct stat st;
		json_int_t want = json_integer_value(json_object_get(objs[i], "size"));
		if (stat(paths[i], &st) < 0) {
			r = guest_err(err, -errno, "cannot use '%s': %s (run 'ferry guest build')",
				      paths[i], strerror(errno));
			guest_files_clear(&g);
			return r;
		}
		if (st.st_size != (off_t)want) {
			r = guest_err(
			    err, -EBADMSG,
			    "'%s' has %lld bytes, the manifest says %lld (run 'ferry guest "
			    "build --force')",
			    paths[i], (long long)st.st_size, (long long)want);
			guest_files_clear(&g);
			return r;
		}
	}
	*out = g;
	return 0;
}

int guest_manifest(const char *cache_dir, char **json, char **err)
{
	_cleanup_free_ char *dir = NULL;
	_cleanup_(json_decrefp) json_t *m = NULL;
	struct guest_files g;
	int r = guest_locate(cache_dir, &g, err);

	if (r < 0)
		return r;
	r = load_manifest(cache_dir, &dir, &m, err);
	if (r < 0) {
		guest_files_clear(&g);
		return r;
	}
	json_object_set_new(m, "dir", json_string(g.dir));
	json_object_set_new(json_object_get(m, "kernel"), "path", json_string(g.kernel));
	json_object_set_new(json_object_get(m, "initramfs"), "path", json_string(g.initramfs));
	guest_files_clear(&g);
	*json = json_dumps(m, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	return 0;
}
