/* SPDX-License-Identifier: MIT */
/*
 * The initramfs: the tree of entries, its reproducible newc cpio writer, and what goes in from
 * the packages: busybox and its applet links, qemu-ga with its libraries and loader.
 */
#include <errno.h>
#include <sys/stat.h>

#include "cleanup.h"
#include "fs.h"
#include "guest-build.h"

/* ------------------------------------------------------------------------------------------ */
/* the initramfs tree and its cpio writer */

static struct guest_entry *tree_slot(struct guest_tree *t, const char *path)
{
	for (size_t i = 0; i < t->n; i++) {
		if (STREQ(t->items[i].path, path)) {
			struct guest_entry *e = &t->items[i];
			free(e->data);
			free(e->target);
			e->data = NULL;
			e->target = NULL;
			e->size = 0;
			return e;
		}
	}
	t->items = xgrow(t->items, &t->cap, t->n + 1, sizeof(*t->items));
	struct guest_entry *e = &t->items[t->n++];
	memset(e, 0, sizeof(*e));
	e->path = xstrdup(path);
	return e;
}

static void tree_parents(struct guest_tree *t, const char *path)
{
	_cleanup_free_ char *p = xstrdup(path);
	char *slash = strrchr(p, '/');

	if (!slash)
		return;
	*slash = '\0';
	for (size_t i = 0; i < t->n; i++)
		if (STREQ(t->items[i].path, p))
			return;
	tree_parents(t, p);
	struct guest_entry *e = tree_slot(t, p);
	e->type = GUEST_DIR;
	e->mode = 0755;
}

void guest_tree_add_dir(struct guest_tree *t, const char *path, unsigned mode)
{
	tree_parents(t, path);
	struct guest_entry *e = tree_slot(t, path);
	e->type = GUEST_DIR;
	e->mode = mode;
}

void guest_tree_add_file(struct guest_tree *t, const char *path, unsigned mode, const void *data,
			 size_t size)
{
	tree_parents(t, path);
	struct guest_entry *e = tree_slot(t, path);
	e->type = GUEST_FILE;
	e->mode = mode;
	e->data = xmalloc(size);
	if (size)
		memcpy(e->data, data, size);
	e->size = size;
}

void tree_add_file_take(struct guest_tree *t, const char *path, unsigned mode, unsigned char *data,
			size_t size)
{
	tree_parents(t, path);
	struct guest_entry *e = tree_slot(t, path);
	e->type = GUEST_FILE;
	e->mode = mode;
	e->data = data;
	e->size = size;
}

void guest_tree_add_symlink(struct guest_tree *t, const char *path, const char *target)
{
	tree_parents(t, path);
	struct guest_entry *e = tree_slot(t, path);
	e->type = GUEST_SYMLINK;
	e->mode = 0777;
	e->target = xstrdup(target);
}

void guest_tree_add_chardev(struct guest_tree *t, const char *path, unsigned mode, unsigned major,
			    unsigned minor)
{
	tree_parents(t, path);
	struct guest_entry *e = tree_slot(t, path);
	e->type = GUEST_CHARDEV;
	e->mode = mode;
	e->rdev_major = major;
	e->rdev_minor = minor;
}

void guest_tree_clear(struct guest_tree *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->items[i].path);
		free(t->items[i].data);
		free(t->items[i].target);
	}
	free(t->items);
	memset(t, 0, sizeof(*t));
}

static int entry_cmp(const void *a, const void *b)
{
	const struct guest_entry *const *x = a, *const *y = b;
	return strcmp((*x)->path, (*y)->path);
}

static int cpio_entries(struct archive *a, struct atomic_file *af,
			const struct guest_entry *const *sorted, size_t count, const char *path,
			int64_t mtime, char **err);

int guest_cpio_write(const struct guest_tree *t, const char *path, int64_t mtime, char **err)
{
	_cleanup_(archive_write_freep) struct archive *a = archive_write_new();
	_cleanup_free_ const struct guest_entry **sorted = xcalloc(t->n, sizeof(*sorted));

	for (size_t i = 0; i < t->n; i++)
		sorted[i] = &t->items[i];
	qsort(sorted, t->n, sizeof(*sorted), entry_cmp);

	if (archive_write_set_format_cpio_newc(a) != ARCHIVE_OK ||
	    archive_write_add_filter_none(a) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK)
		return guest_err(err, -EIO, "cannot create '%s': %s", path,
				 archive_error_string(a));
	/* through the one atomic writer: exclusive temporary file, renamed over path at the end */
	struct atomic_file af;
	if (atomic_file_open(&af, path, 0644, err) < 0)
		return -errno;
	int r = cpio_entries(a, &af, sorted, t->n, path, mtime, err);
	if (r < 0) {
		atomic_file_abort(&af);
		return r;
	}
	if (atomic_file_commit(&af, err) < 0)
		return -errno;
	return 0;
}

/* Write the sorted entries into the archive a, opened on af's descriptor, and close it. */
static int cpio_entries(struct archive *a, struct atomic_file *af,
			const struct guest_entry *const *sorted, size_t count, const char *path,
			int64_t mtime, char **err)
{
	if (archive_write_open_fd(a, af->fd) != ARCHIVE_OK)
		return guest_err(err, -EIO, "cannot create '%s': %s", path,
				 archive_error_string(a));

	for (size_t i = 0; i < count; i++) {
		const struct guest_entry *g = sorted[i];
		_cleanup_(archive_entry_freep) struct archive_entry *e = archive_entry_new();

		if (i > 0 && STREQ(sorted[i - 1]->path, g->path))
			return guest_err(err, -EEXIST, "duplicate initramfs entry '%s'", g->path);
		archive_entry_set_pathname(e, g->path);
		archive_entry_set_uid(e, 0);
		archive_entry_set_gid(e, 0);
		archive_entry_set_mtime(e, (time_t)mtime, 0);
		/* fixed inode numbers in entry order: the writer would otherwise take what it
		 * is given, and no two runs would agree */
		archive_entry_set_ino64(e, (la_int64_t)i + 1);
		archive_entry_set_dev(e, 0);
		switch (g->type) {
		case GUEST_DIR:
			archive_entry_set_filetype(e, AE_IFDIR);
			archive_entry_set_nlink(e, 2);
			archive_entry_set_size(e, 0);
			break;
		case GUEST_FILE:
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_nlink(e, 1);
			archive_entry_set_size(e, (la_int64_t)g->size);
			break;
		case GUEST_SYMLINK:
			archive_entry_set_filetype(e, AE_IFLNK);
			archive_entry_set_nlink(e, 1);
			archive_entry_set_symlink(e, g->target);
			archive_entry_set_size(e, 0);
			break;
		case GUEST_CHARDEV:
			archive_entry_set_filetype(e, AE_IFCHR);
			archive_entry_set_nlink(e, 1);
			archive_entry_set_rdevmajor(e, g->rdev_major);
			archive_entry_set_rdevminor(e, g->rdev_minor);
			archive_entry_set_size(e, 0);
			break;
		}
		archive_entry_set_perm(e, g->mode & 07777);
		if (archive_write_header(a, e) != ARCHIVE_OK)
			return guest_err(err, -EIO, "cannot write '%s' into '%s': %s", g->path,
					 path, archive_error_string(a));
		if (g->type == GUEST_FILE && g->size > 0) {
			la_ssize_t n = archive_write_data(a, g->data, g->size);
			if (n < 0 || (size_t)n != g->size)
				return guest_err(err, -EIO, "cannot write '%s' into '%s': %s",
						 g->path, path, archive_error_string(a));
		}
	}
	if (archive_write_close(a) != ARCHIVE_OK)
		return guest_err(err, -EIO, "cannot write '%s': %s", path, archive_error_string(a));
	return 0;
}

int add_busybox(struct build *b, const struct pkg *p, const char *tmpdir, char **err)
{
	unsigned char *data;
	size_t len;
	int r = deb_file(p, "bin/busybox", &data, &len, err);

	if (r < 0)
		return r;
	/* the applet list comes from the binary itself (it is static: it runs on the host);
	 * the package ships no list of links */
	_cleanup_free_ char *bb = xasprintf("%s/busybox", tmpdir);
	r = guest_write_file(bb, data, len, 0755, err);
	if (r < 0) {
		free(data);
		return r;
	}
	char *argv[] = { bb, (char *)"--list-full", NULL };
	_cleanup_free_ char *out = NULL;
	r = guest_run(argv, NULL, &out, err);
	unlink(bb);
	if (r < 0) {
		free(data);
		return r;
	}
	tree_add_file_take(&b->tree, "bin/busybox", 0755, data, len);
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		while (*line == '/')
			line++;
		if (!*line || STREQ(line, "bin/busybox") || strstr(line, ".."))
			continue;
		guest_tree_add_symlink(&b->tree, line, "/bin/busybox");
		b->applets++;
	}
	return 0;
}

static bool lib_dir(const char *path)
{
	static const char *const dirs[] = { "lib/x86_64-linux-gnu/", "usr/lib/x86_64-linux-gnu/",
					    "lib64/" };
	for (size_t i = 0; i < ELEMENTSOF(dirs); i++)
		if (has_prefix(path, dirs[i]) && !strchr(path + strlen(dirs[i]), '/'))
			return true;
	return false;
}

static int lib_collect(void *ud, struct archive *a, struct archive_entry *e, const char *path,
		       char **err)
{
	struct build *b = ud;
	mode_t type = archive_entry_filetype(e);

	if (!lib_dir(path) || !strstr(path, ".so") || (type != AE_IFREG && type != AE_IFLNK))
		return 0;
	struct libfile f = { xstrdup(path), NULL, 0, NULL };
	if (type == AE_IFLNK) {
		f.target = xstrdup(archive_entry_symlink(e));
	} else {
		int r = entry_read_all(a, e, &f.data, &f.size, err);
		if (r < 0) {
			free(f.path);
			return r;
		}
	}
	b->libs = xgrow(b->libs, &b->caplibs, b->nlibs + 1, sizeof(*b->libs));
	b->libs[b->nlibs++] = f;
	return 0;
}

/* The regular file a library name resolves to in the collected packages, following symlinks. */
static const struct libfile *lib_find(const struct build *b, const char *name)
{
	_cleanup_free_ char *want = xstrdup(name);

	for (int hops = 0; hops < 16; hops++) {
		const struct libfile *hit = NULL;
		if (strchr(want, '/')) {
			const char *w = want;
			while (*w == '/')
				w++;
			for (size_t i = 0; i < b->nlibs && !hit; i++) {
				const char *p = b->libs[i].path;
				/* packages not yet merged into /usr: /lib and /usr/lib are one */
				if (STREQ(p, w) || (has_prefix(p, "usr/") && STREQ(p + 4, w)) ||
				    (has_prefix(w, "usr/") && STREQ(p, w + 4)))
					hit = &b->libs[i];
			}
		} else {
			for (size_t i = 0; i < b->nlibs && !hit; i++) {
				const char *base = strrchr(b->libs[i].path, '/') + 1;
				if (STREQ(base, want) && !has_prefix(b->libs[i].path, "lib64/"))
					hit = &b->libs[i];
			}
		}
		if (!hit)
			return NULL;
		if (!hit->target)
			return hit;
		char *next;
		if (hit->target[0] == '/') {
			next = xstrdup(hit->target);
		} else {
			const char *slash = strrchr(hit->path, '/');
			next =
			    xasprintf("%.*s/%s", (int)(slash - hit->path), hit->path, hit->target);
		}
		free(want);
		want = next;
	}
	return NULL;
}

/* The shared libraries of every lib* package, once per build (lib_find() reads them). */
static int collect_libs(struct build *b, char **err)
{
	if (b->libraries)
		return 0;
	for (size_t i = 0; i < b->pkgs.n; i++) {
		const struct pkg *p = &b->pkgs.items[i];
		if (!guest_lib_package(p->name))
			continue;
		int r = deb_walk(p->deb, lib_collect, b, err);
		if (r < 0)
			return r;
	}
	b->libraries = json_array();
	return 0;
}

static bool listed(json_t *a, const char *name)
{
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v) if (STREQ(json_string_value(v), name)) return true;
	return false;
}

/* path (of package p) into the tree at `at` (NULL: the same path), with the libraries it needs
 * (DT_NEEDED, transitively) and its dynamic loader. */
static int add_elf(struct build *b, const struct pkg *p, const char *path, const char *at,
		   char **err)
{
	unsigned char *data;
	size_t len;
	int r = deb_file(p, path, &data, &len, err);

	if (r < 0)
		return r;
	tree_add_file_take(&b->tree, at ? at : path, 0755, data, len);
	const char *name = strrchr(path, '/') + 1;
	_cleanup_free_ char *interp = elf_interp(data, len);
	if (!interp)
		return guest_err(err, -EINVAL, "%s has no program interpreter", name);
	r = collect_libs(b, err);
	if (r < 0)
		return r;

	/* worklist of sonames, starting with the binary's */
	char **queue = NULL;
	size_t nq = 0;
	r = elf_needed(data, len, &queue, &nq, err);
	if (r < 0)
		return guest_err(err, r, "%s: %s", name, *err);
	for (size_t qi = 0; qi < nq; qi++) {
		_cleanup_free_ char *dest = xasprintf("lib/x86_64-linux-gnu/%s", queue[qi]);
		bool seen = listed(b->libraries, queue[qi]);
		for (size_t k = 0; k < qi && !seen; k++)
			seen = STREQ(queue[k], queue[qi]);
		if (seen)
			continue;
		const struct libfile *f = lib_find(b, queue[qi]);
		if (!f) {
			r = guest_err(err, -ENOENT,
				      "library '%s' needed by %s is in none of the downloaded "
				      "packages",
				      queue[qi], name);
			strv_free(queue, nq);
			return r;
		}
		guest_tree_add_file(&b->tree, dest, 0755, f->data, f->size);
		json_array_append_new(b->libraries, json_string(queue[qi]));
		char **more;
		size_t nmore;
		r = elf_needed(f->data, f->size, &more, &nmore, err);
		if (r < 0) {
			r = guest_err(err, r, "'%s': %s", f->path, *err);
			strv_free(queue, nq);
			return r;
		}
		queue = xrealloc(queue, (nq + nmore) * sizeof(char *));
		if (nmore)
			memcpy(queue + nq, more, nmore * sizeof(char *));
		nq += nmore;
		free(more);
	}
	strv_free(queue, nq);

	/* the loader at the path the binary names, as a link to the real file */
	const struct libfile *ld = lib_find(b, interp);
	if (!ld)
		return guest_err(err, -ENOENT, "dynamic loader '%s' not found in libc6", interp);
	/* always the link at the interpreter's path: libc.so.6 names the loader too, so the
	 * worklist may have listed and copied it already, but only here does /lib64's link appear
	 * (a guest without it cannot exec any binary: the kernel finds no interpreter, ENOENT) */
	const char *base = strrchr(ld->path, '/') + 1;
	_cleanup_free_ char *lddest = xasprintf("lib/x86_64-linux-gnu/%s", base);
	_cleanup_free_ char *ldtarget = xasprintf("/%s", lddest);
	guest_tree_add_file(&b->tree, lddest, 0755, ld->data, ld->size);
	if (!STREQ(interp + 1, lddest))
		guest_tree_add_symlink(&b->tree, interp + 1, ldtarget);
	if (!listed(b->libraries, base))
		json_array_append_new(b->libraries, json_string(base));
	return 0;
}

int add_agent(struct build *b, const struct pkg *qga, char **err)
{
	return add_elf(b, qga, "usr/sbin/qemu-ga", NULL, err);
}

int add_tools(struct build *b, char **err)
{
	for (size_t i = 0; i < ELEMENTSOF(guest_tools); i++) {
		const struct pkg *p = pkg_find(&b->pkgs, guest_tools[i].package);
		if (!p)
			return guest_err(err, -ENOENT, "package '%s' was not resolved",
					 guest_tools[i].package);
		int r = add_elf(b, p, guest_tools[i].path, guest_tools[i].dest, err);
		if (r < 0)
			return r;
	}
	return 0;
}
