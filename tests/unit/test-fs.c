/* SPDX-License-Identifier: MIT */
/*
 * The filesystem helpers (runner/util/fs.c): mkdir -p, the one atomic writer and its output
 * rules (only regular files replaced, never through a symlink, no predictable temporary name),
 * rm_tree (never follows a symlink, never crosses into another mount) and dir_replace.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "fs.h"
#include "manifest.h"
#include "util.h"

static char *scratch(void)
{
	char *d = g_dir_make_tmp("ferry-test-fs-XXXXXX", NULL);
	g_assert_nonnull(d);
	return d;
}

static void cleanup_dir(const char *d)
{
	g_assert_cmpint(rm_tree(d, NULL), ==, 0);
	g_assert_false(g_file_test(d, G_FILE_TEST_EXISTS));
}

/* Names in dir other than the ones listed (NULL-terminated), as one string ("" when none). */
static char *extra_entries(const char *dir, const char *const *expected)
{
	GDir *d = g_dir_open(dir, 0, NULL);
	GString *s = g_string_new("");
	const char *n;
	while ((n = g_dir_read_name(d))) {
		bool known = false;
		for (size_t i = 0; expected[i] && !known; i++)
			known = STREQ(n, expected[i]);
		if (!known)
			g_string_append_printf(s, "%s ", n);
	}
	g_dir_close(d);
	return g_string_free(s, FALSE);
}

static void test_mkdir_p(void)
{
	_cleanup_free_ char *d = scratch();
	_cleanup_free_ char *deep = g_build_filename(d, "a", "b", "c", NULL);
	_cleanup_free_ char *err = NULL;
	mode_t old = umask(077);
	struct stat st;

	g_assert_cmpint(mkdir_p(deep, 0755, &err), ==, 0);
	g_assert_cmpint(stat(deep, &st), ==, 0);
	g_assert_true(S_ISDIR(st.st_mode));
	g_assert_cmpint(st.st_mode & 07777, ==, 0755); /* whatever the umask */
	/* existing: fine; trailing slash: fine */
	_cleanup_free_ char *slash = g_strconcat(deep, "/", NULL);
	g_assert_cmpint(mkdir_p(slash, 0755, &err), ==, 0);
	/* a file in the way */
	_cleanup_free_ char *file = g_build_filename(d, "a", "f", NULL);
	g_assert_true(g_file_set_contents(file, "x", 1, NULL));
	_cleanup_free_ char *below = g_build_filename(file, "g", NULL);
	g_assert_cmpint(mkdir_p(below, 0755, &err), ==, -1);
	g_assert_cmpint(errno, ==, ENOTDIR);
	g_assert_nonnull(strstr(err, "cannot create directory"));
	umask(old);
	cleanup_dir(d);
}

static void test_atomic_write(void)
{
	_cleanup_free_ char *d = scratch();
	_cleanup_free_ char *path = g_build_filename(d, "out.json", NULL);
	_cleanup_free_ char *err = NULL;
	mode_t old = umask(077);
	struct stat st;

	/* new file, exact mode whatever the umask */
	g_assert_cmpint(write_file_atomic(path, "one\n", 4, 0644, &err), ==, 0);
	g_assert_cmpint(lstat(path, &st), ==, 0);
	g_assert_true(S_ISREG(st.st_mode));
	g_assert_cmpint(st.st_mode & 07777, ==, 0644);
	/* a regular file is replaced (a new inode: the rename) */
	ino_t ino = st.st_ino;
	g_assert_cmpint(write_file_atomic(path, "two\n", 4, 0600, &err), ==, 0);
	_cleanup_free_ char *text = read_file(path, NULL);
	g_assert_cmpstr(text, ==, "two\n");
	g_assert_cmpint(lstat(path, &st), ==, 0);
	g_assert_cmpint(st.st_mode & 07777, ==, 0600);
	g_assert_cmpuint(st.st_ino, !=, ino);
	/* aborted: the target and the directory are as before */
	struct atomic_file af;
	g_assert_cmpint(atomic_file_open(&af, path, 0644, &err), ==, 0);
	g_assert_cmpint(write_all(af.fd, "half", 4), ==, 0);
	atomic_file_abort(&af);
	free(text);
	text = read_file(path, NULL);
	g_assert_cmpstr(text, ==, "two\n");
	const char *const only[] = { "out.json", NULL };
	_cleanup_free_ char *extra = extra_entries(d, only);
	g_assert_cmpstr(extra, ==, "");
	/* a missing directory is an error, not created */
	_cleanup_free_ char *missing = g_build_filename(d, "no", "such", "x.json", NULL);
	g_assert_cmpint(write_file_atomic(missing, "x", 1, 0644, &err), ==, -1);
	g_assert_nonnull(strstr(err, "cannot create a file in"));
	_cleanup_free_ char *no = g_build_filename(d, "no", NULL);
	g_assert_false(g_file_test(no, G_FILE_TEST_EXISTS));
	/* a zeroed, never-opened struct can be aborted (its 0 descriptors are not closed) */
	struct atomic_file zero = { 0 };
	atomic_file_abort(&zero);
	g_assert_cmpint(fcntl(0, F_GETFD), !=, -1);
	umask(old);
	cleanup_dir(d);
}

/* Every kind of file that is not regular is refused by name and left as it is. */
static void test_atomic_refuses(void)
{
	_cleanup_free_ char *d = scratch();
	_cleanup_free_ char *victim = g_build_filename(d, "victim", NULL);
	_cleanup_free_ char *link = g_build_filename(d, "link", NULL);
	_cleanup_free_ char *fifo = g_build_filename(d, "fifo", NULL);
	_cleanup_free_ char *dev = g_build_filename(d, "fake-null", NULL);
	_cleanup_free_ char *dir = g_build_filename(d, "dir", NULL);
	struct stat st;

	g_assert_true(g_file_set_contents(victim, "precious", -1, NULL));
	g_assert_cmpint(symlink(victim, link), ==, 0);
	g_assert_cmpint(mkfifo(fifo, 0644), ==, 0);
	g_assert_cmpint(mkdir(dir, 0755), ==, 0);
	bool have_dev = mknod(dev, S_IFCHR | 0666, makedev(1, 3)) == 0;

	const struct {
		const char *path, *kind;
	} cases[] = {
		{ link, "a symbolic link" },
		{ fifo, "a FIFO" },
		{ dir, "a directory" },
		{ dev, "a character device" },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		if (cases[i].path == dev && !have_dev) {
			g_test_message("mknod needs root: the character device case is skipped");
			continue;
		}
		_cleanup_free_ char *err = NULL;
		g_assert_cmpint(write_file_atomic(cases[i].path, "x", 1, 0644, &err), ==, -1);
		_cleanup_free_ char *want = g_strdup_printf(
		    "%s: is %s (ferry replaces only regular files)", cases[i].path, cases[i].kind);
		g_assert_cmpstr(err, ==, want);
	}
	g_assert_cmpint(lstat(link, &st), ==, 0);
	g_assert_true(S_ISLNK(st.st_mode));
	g_assert_cmpint(lstat(fifo, &st), ==, 0);
	g_assert_true(S_ISFIFO(st.st_mode));
	if (have_dev) {
		g_assert_cmpint(lstat(dev, &st), ==, 0);
		g_assert_true(S_ISCHR(st.st_mode));
	}
	_cleanup_free_ char *text = read_file(victim, NULL);
	g_assert_cmpstr(text, ==, "precious");
	/* nothing else was created */
	const char *const known[] = { "victim", "link", "fifo", "dir", "fake-null", NULL };
	_cleanup_free_ char *extra = extra_entries(d, known);
	g_assert_cmpstr(extra, ==, "");

	/* the target turned into a symlink between open and commit: refused at commit */
	_cleanup_free_ char *late = g_build_filename(d, "late", NULL);
	_cleanup_free_ char *err = NULL;
	struct atomic_file af;
	g_assert_cmpint(atomic_file_open(&af, late, 0644, &err), ==, 0);
	g_assert_cmpint(symlink(victim, late), ==, 0);
	g_assert_cmpint(atomic_file_commit(&af, &err), ==, -1);
	g_assert_nonnull(strstr(err, "is a symbolic link"));
	free(text);
	text = read_file(victim, NULL);
	g_assert_cmpstr(text, ==, "precious");
	cleanup_dir(d);
}

/*
 * The temporary names of older versions, "<target>.tmp.<pid>", planted as symlinks to a victim:
 * the writers (manifest_save() among them, which used exactly that name) neither follow nor
 * remove them.
 */
static void test_planted_temp_names(void)
{
	_cleanup_free_ char *d = scratch();
	_cleanup_free_ char *victim = g_build_filename(d, "victim", NULL);
	_cleanup_free_ char *target = g_build_filename(d, "m.manifest.json", NULL);
	_cleanup_free_ char *err = NULL;
	const char *suffixes[3];
	char pid[32];

	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	suffixes[0] = pid;
	suffixes[1] = "1";
	suffixes[2] = "12345";
	g_assert_true(g_file_set_contents(victim, "precious", -1, NULL));
	for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
		_cleanup_free_ char *p = xasprintf("%s.tmp.%s", target, suffixes[i]);
		g_assert_cmpint(symlink(victim, p), ==, 0);
	}

	struct manifest *m = manifest_new();
	g_assert_cmpint(manifest_finish(m, &err), ==, 0);
	g_assert_cmpint(manifest_save(m, target, &err), ==, 0);
	manifest_free(m);
	g_assert_cmpint(write_file_atomic(target, "again\n", 6, 0644, &err), ==, 0);

	_cleanup_free_ char *text = read_file(victim, NULL);
	g_assert_cmpstr(text, ==, "precious");
	for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
		_cleanup_free_ char *p = xasprintf("%s.tmp.%s", target, suffixes[i]);
		struct stat st;
		g_assert_cmpint(lstat(p, &st), ==, 0);
		g_assert_true(S_ISLNK(st.st_mode));
	}
	free(text);
	text = read_file(target, NULL);
	g_assert_cmpstr(text, ==, "again\n");
	cleanup_dir(d);
}

static void test_symlink_replace(void)
{
	_cleanup_free_ char *d = scratch();
	_cleanup_free_ char *cur = g_build_filename(d, "current", NULL);
	_cleanup_free_ char *err = NULL;
	char buf[64];

	g_assert_cmpint(symlink_replace("aaaa", cur, &err), ==, 0);
	g_assert_cmpint(symlink_replace("bbbb", cur, &err), ==, 0);
	ssize_t n = readlink(cur, buf, sizeof(buf) - 1);
	g_assert_cmpint(n, ==, 4);
	buf[n] = '\0';
	g_assert_cmpstr(buf, ==, "bbbb");
	const char *const only[] = { "current", NULL };
	_cleanup_free_ char *extra = extra_entries(d, only);
	g_assert_cmpstr(extra, ==, "");
	/* a regular file of that name is not ours to replace */
	g_assert_cmpint(unlink(cur), ==, 0);
	g_assert_true(g_file_set_contents(cur, "file", -1, NULL));
	g_assert_cmpint(symlink_replace("cccc", cur, &err), ==, -1);
	g_assert_nonnull(strstr(err, "is a regular file, not a symbolic link"));
	cleanup_dir(d);
}

static void test_rm_tree(void)
{
	_cleanup_free_ char *d = scratch();
	_cleanup_free_ char *outside = g_build_filename(d, "outside", NULL);
	_cleanup_free_ char *keep = g_build_filename(outside, "keep", NULL);
	_cleanup_free_ char *tree = g_build_filename(d, "tree", NULL);
	_cleanup_free_ char *deep = g_build_filename(tree, "a", "b", "c", NULL);
	_cleanup_free_ char *f = g_build_filename(deep, "f", NULL);
	_cleanup_free_ char *l1 = g_build_filename(tree, "a", "to-outside", NULL);
	_cleanup_free_ char *l2 = g_build_filename(tree, "a", "b", "to-keep", NULL);
	_cleanup_free_ char *err = NULL;

	g_assert_cmpint(mkdir_p(outside, 0755, NULL), ==, 0);
	g_assert_true(g_file_set_contents(keep, "keep", -1, NULL));
	g_assert_cmpint(mkdir_p(deep, 0755, NULL), ==, 0);
	g_assert_true(g_file_set_contents(f, "f", -1, NULL));
	g_assert_cmpint(symlink(outside, l1), ==, 0);
	g_assert_cmpint(symlink(keep, l2), ==, 0);
	/* as root, a directory without permissions inside is removed too */
	_cleanup_free_ char *locked = g_build_filename(tree, "locked", NULL);
	if (geteuid() == 0)
		g_assert_cmpint(mkdir(locked, 0), ==, 0);

	g_assert_cmpint(rm_tree(tree, &err), ==, 0);
	g_assert_false(g_file_test(tree, G_FILE_TEST_EXISTS));
	_cleanup_free_ char *text = read_file(keep, NULL);
	g_assert_cmpstr(text, ==, "keep");
	/* missing: success */
	g_assert_cmpint(rm_tree(tree, &err), ==, 0);
	/* path itself a symlink: the link goes, not what it points at */
	_cleanup_free_ char *top = g_build_filename(d, "top", NULL);
	g_assert_cmpint(symlink(outside, top), ==, 0);
	g_assert_cmpint(rm_tree(top, &err), ==, 0);
	g_assert_false(g_file_test(top, G_FILE_TEST_IS_SYMLINK));
	g_assert_true(g_file_test(keep, G_FILE_TEST_EXISTS));
	cleanup_dir(d);
}

/* A finished directory replaces what stands in its place; a failed rename leaves no temporary. */
static void test_dir_replace(void)
{
	_cleanup_free_ char *d = scratch();
	_cleanup_free_ char *dir = g_build_filename(d, "entry", NULL);
	_cleanup_free_ char *old = g_build_filename(dir, "old", NULL);
	_cleanup_free_ char *tmp = g_build_filename(d, ".build-1", NULL);
	_cleanup_free_ char *f = g_build_filename(tmp, "f", NULL);
	_cleanup_free_ char *moved = g_build_filename(dir, "f", NULL);
	_cleanup_free_ char *err = NULL;

	/* into an empty place, then over an earlier entry */
	for (int i = 0; i < 2; i++) {
		g_assert_cmpint(mkdir_p(tmp, 0755, NULL), ==, 0);
		g_assert_true(g_file_set_contents(f, i ? "new" : "first", -1, NULL));
		if (i)
			g_assert_true(g_file_set_contents(old, "old", -1, NULL));
		g_assert_cmpint(dir_replace(tmp, dir, &err), ==, 0);
		g_assert_null(err);
		_cleanup_free_ char *text = read_file(moved, NULL);
		g_assert_cmpstr(text, ==, i ? "new" : "first");
		g_assert_false(g_file_test(old, G_FILE_TEST_EXISTS));
		g_assert_false(g_file_test(tmp, G_FILE_TEST_EXISTS));
	}
	/* a place whose directory is missing: the rename fails, the temporary goes */
	_cleanup_free_ char *nowhere = g_build_filename(d, "missing", "entry", NULL);
	g_assert_cmpint(mkdir_p(tmp, 0755, NULL), ==, 0);
	g_assert_cmpint(dir_replace(tmp, nowhere, &err), ==, -1);
	g_assert_cmpint(errno, ==, ENOENT);
	g_assert_true(g_str_has_prefix(err, "cannot rename '"));
	g_assert_nonnull(strstr(err, "/missing/entry': "));
	g_assert_false(g_file_test(tmp, G_FILE_TEST_EXISTS));
	cleanup_dir(d);
}

/* The host's cache of an image is flushed and evicted; what is not a regular file is refused. */
static void test_file_cache_evict(void)
{
	_cleanup_free_ char *d = scratch();
	_cleanup_free_ char *img = g_build_filename(d, "disk.img", NULL);
	_cleanup_free_ char *link = g_build_filename(d, "link.img", NULL);
	_cleanup_free_ char *missing = g_build_filename(d, "missing.img", NULL);
	_cleanup_free_ char *data = g_malloc0(1 << 20);
	uint64_t resident = UINT64_MAX;

	g_assert_true(g_file_set_contents(img, data, 1 << 20, NULL));
	_cleanup_free_ char *err = NULL;
	g_assert_cmpint(file_cache_evict(img, &resident, &err), ==, 0);
	g_assert_null(err);
	g_assert_cmpuint(resident, <=, 1 << 20); /* a tmpfs keeps its pages: not zero there */
	g_assert_cmpint(file_cache_evict(missing, &resident, &err), ==, -1);
	g_assert_nonnull(strstr(err, "cannot open the target image"));
	g_clear_pointer(&err, free);
	g_assert_cmpint(symlink(img, link), ==, 0);
	g_assert_cmpint(file_cache_evict(link, &resident, &err), ==, -1); /* never followed */
	g_assert_nonnull(strstr(err, "link.img"));
	cleanup_dir(d);
}

/* The extents of data of a sparse file, and the end bound clamping them. */
static void test_fd_next_data(void)
{
	_cleanup_free_ char *d = scratch();
	_cleanup_free_ char *path = g_build_filename(d, "sparse.img", NULL);
	const off_t K64 = 64 << 10, M1 = 1 << 20, size = 4 << 20;
	_cleanup_free_ char *buf = g_malloc(K64);
	memset(buf, 0x5a, K64);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	g_assert_cmpint(fd, >=, 0);
	g_assert_cmpint(pwrite(fd, buf, K64, 0), ==, K64);
	g_assert_cmpint(pwrite(fd, buf, K64, M1), ==, K64);
	g_assert_cmpint(ftruncate(fd, size), ==, 0);
	off_t data = -1, hole = -1;
	g_assert_cmpint(fd_next_data(fd, 0, size, &data, &hole), ==, 1);
	if (hole == size) {
		g_test_skip("the scratch filesystem reports no holes");
	} else {
		g_assert_cmpint(data, ==, 0);
		g_assert_cmpint(hole, ==, K64);
		g_assert_cmpint(fd_next_data(fd, K64, size, &data, &hole), ==, 1);
		g_assert_cmpint(data, ==, M1);
		g_assert_cmpint(hole, ==, M1 + K64);
		g_assert_cmpint(fd_next_data(fd, M1 + 4096, size, &data, &hole), ==, 1);
		g_assert_cmpint(data, ==, M1 + 4096); /* inside an extent: from there */
		g_assert_cmpint(fd_next_data(fd, M1 + K64, size, &data, &hole), ==, 0);
		/* end bounds both the hole and the search */
		g_assert_cmpint(fd_next_data(fd, 0, 4096, &data, &hole), ==, 1);
		g_assert_cmpint(hole, ==, 4096);
		g_assert_cmpint(fd_next_data(fd, K64, M1, &data, &hole), ==, 0);
	}
	g_assert_cmpint(fd_next_data(fd, size, size, &data, &hole), ==, 0);
	close(fd);
	cleanup_dir(d);
}

/* A mount inside the tree (what a guest-writable staging area could hold) is not entered. */
static void test_rm_tree_mount(void)
{
	_cleanup_free_ char *d = scratch();
	_cleanup_free_ char *src = g_build_filename(d, "src", NULL);
	_cleanup_free_ char *keep = g_build_filename(src, "keep", NULL);
	_cleanup_free_ char *tree = g_build_filename(d, "tree", NULL);
	_cleanup_free_ char *mnt = g_build_filename(tree, "mnt", NULL);
	_cleanup_free_ char *err = NULL;

	g_assert_cmpint(mkdir_p(src, 0755, NULL), ==, 0);
	g_assert_true(g_file_set_contents(keep, "keep", -1, NULL));
	g_assert_cmpint(mkdir_p(mnt, 0755, NULL), ==, 0);
	/* a bind mount: same filesystem, same st_dev, another mount */
	if (mount(src, mnt, "none", MS_BIND, NULL) < 0) {
		g_test_skip("bind mounts need root (CAP_SYS_ADMIN)");
		g_assert_cmpint(rm_tree(d, NULL), ==, 0);
		return;
	}
	g_assert_cmpint(rm_tree(tree, &err), ==, -1);
	g_assert_cmpint(errno, ==, EXDEV);
	g_assert_nonnull(strstr(err, "it is a mount point"));
	_cleanup_free_ char *text = read_file(keep, NULL);
	g_assert_cmpstr(text, ==, "keep");
	/* the mount point itself as the tree: refused too */
	free(err);
	err = NULL;
	g_assert_cmpint(rm_tree(mnt, &err), ==, -1);
	g_assert_true(g_file_test(keep, G_FILE_TEST_EXISTS));
	g_assert_cmpint(umount2(mnt, MNT_DETACH), ==, 0);
	cleanup_dir(d);
}

/*
 * Issue 24, classes 3 and 5: a kernel, initrd, image or include a plan names is read only as a
 * regular file inside the allowed tree, every link resolved: /etc/shadow, /proc/self/environ,
 * a device, a FIFO and a link from the tree to outside are refused; FERRY_ALLOW_INPUT extends.
 */
static void test_input_check(void)
{
	char *base = g_dir_make_tmp("ferry-test-input-XXXXXX", NULL);
	char *tree = g_build_filename(base, "tree", NULL),
	     *out = g_build_filename(base, "out", NULL);
	g_assert_cmpint(g_mkdir(tree, 0755), ==, 0);
	g_assert_cmpint(g_mkdir(out, 0755), ==, 0);
	char *secret = g_build_filename(out, "secret", NULL);
	g_assert_true(g_file_set_contents(secret, "s", -1, NULL));
	char *cwd = g_get_current_dir();
	g_assert_cmpint(chdir(tree), ==, 0);
	g_assert_true(g_file_set_contents("kernel", "k", -1, NULL));
	g_assert_cmpint(symlink(secret, "link"), ==, 0);
	g_assert_cmpint(mkfifo("fifo", 0600), ==, 0);
	g_unsetenv("FERRY_ALLOW_INPUT");
	g_setenv("FERRY_CACHE_DIR", tree, TRUE);
	char *err = NULL;
	g_assert_cmpint(input_check("kernel", "kernel", NULL, &err), ==, 0);
	g_assert_null(err);
	static const struct {
		const char *path, *says;
	} bad[] = {
		{ "/etc/shadow", "outside the allowed tree" },
		{ "/proc/self/environ", "outside the allowed tree" },
		{ "link", "outside the allowed tree" },
		{ "../out/secret", "outside the allowed tree" },
		{ "/dev/null", "is a character device, not a regular file" },
		{ "fifo", "is a FIFO, not a regular file" },
		{ "missing", "cannot find kernel" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_assert_cmpint(input_check("kernel", bad[i].path, NULL, &err), ==, -1);
		g_assert_nonnull(strstr(err, bad[i].says));
		g_clear_pointer(&err, free);
	}
	/* the plan's directory, and FERRY_ALLOW_INPUT, extend the tree */
	g_assert_cmpint(input_check("include", "link", out, NULL), ==, 0);
	char *list = g_strdup_printf("/nonexistent:%s", out);
	g_setenv("FERRY_ALLOW_INPUT", list, TRUE);
	g_assert_cmpint(input_check("image", "link", NULL, NULL), ==, 0);
	g_unsetenv("FERRY_ALLOW_INPUT");
	g_unsetenv("FERRY_CACHE_DIR");
	g_assert_cmpint(chdir(cwd), ==, 0);
	g_assert_cmpint(rm_tree(base, NULL), ==, 0);
	g_free(list);
	g_free(cwd);
	g_free(secret);
	g_free(tree);
	g_free(out);
	g_free(base);
}

/* fd_read_all(): all of a file up to its cap (an empty one too), EFBIG past it; fd_copy_all():
 * every byte, counted. */
static void test_fd_read_copy(void)
{
	char *path = NULL;
	int fd = g_file_open_tmp("ferry-test-fs-XXXXXX", &path, NULL);
	g_assert_cmpint(fd, >=, 0);
	size_t len = 0;
	char *got = fd_read_all(fd, 0, &len);
	g_assert_nonnull(got);
	g_assert_cmpuint(len, ==, 0);
	g_assert_cmpstr(got, ==, "");
	free(got);
	char data[10000];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)('a' + i % 26);
	g_assert_cmpint(write_all(fd, data, sizeof(data)), ==, 0);
	g_assert_cmpint(lseek(fd, 0, SEEK_SET), ==, 0);
	got = fd_read_all(fd, sizeof(data), &len);
	g_assert_nonnull(got);
	g_assert_cmpuint(len, ==, sizeof(data));
	g_assert_cmpmem(got, len, data, sizeof(data));
	g_assert_cmpint(got[len], ==, '\0');
	free(got);
	g_assert_cmpint(lseek(fd, 0, SEEK_SET), ==, 0);
	errno = 0;
	g_assert_null(fd_read_all(fd, sizeof(data) - 1, &len));
	g_assert_cmpint(errno, ==, EFBIG);
	g_assert_cmpint(lseek(fd, 0, SEEK_SET), ==, 0);
	int p[2];
	g_assert_cmpint(pipe(p), ==, 0);
	uint64_t n = 0;
	g_assert_cmpint(fd_copy_all(fd, p[1], &n), ==, 0);
	g_assert_cmpuint(n, ==, sizeof(data));
	close(p[1]);
	got = fd_read_all(p[0], sizeof(data), &len);
	g_assert_cmpmem(got, len, data, sizeof(data));
	free(got);
	close(p[0]);
	close(fd);
	g_unlink(path);
	g_free(path);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/fs/mkdir-p", test_mkdir_p);
	g_test_add_func("/fs/input-check", test_input_check);
	g_test_add_func("/fs/atomic/write", test_atomic_write);
	g_test_add_func("/fs/atomic/refuses", test_atomic_refuses);
	g_test_add_func("/fs/atomic/planted-temp-names", test_planted_temp_names);
	g_test_add_func("/fs/symlink-replace", test_symlink_replace);
	g_test_add_func("/fs/rm-tree", test_rm_tree);
	g_test_add_func("/fs/rm-tree/mount", test_rm_tree_mount);
	g_test_add_func("/fs/dir-replace", test_dir_replace);
	g_test_add_func("/fs/file-cache-evict", test_file_cache_evict);
	g_test_add_func("/fs/fd-next-data", test_fd_next_data);
	g_test_add_func("/fs/fd-read-copy", test_fd_read_copy);
	return g_test_run();
}
