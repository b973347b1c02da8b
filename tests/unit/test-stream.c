/* SPDX-License-Identifier: MIT */
/*
 * methods/stream.c without a guest: every archive format and compression the built-in guest can
 * unpack is packed by libarchive and unpacked by the exact guest command line, run by the host's
 * busybox (the same busybox-static the built-in guest carries) with only busybox applets on PATH;
 * the result must hold exactly the dataset (types, sizes, hashes, a symlink). Also the skip
 * reasons for what the guest cannot unpack, and the concatenated stream's SHA-256 (block).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "dataset.h"
#include "fs.h"
#include "manifest.h"
#include "methods/archive.h"
#include "methods/stream.h"
#include "stream-busybox.h"
#include "util.h"

static void fixture(char **base, struct manifest **m)
{
	*base = g_dir_make_tmp("ferry-test-stream-XXXXXX", NULL);
	char *src = g_build_filename(*base, "src", NULL);
	struct dataset_spec spec = {
		.files = 12,
		.size_min = 1,
		.size_max = 200000,
		.dist = DATASET_DIST_UNIFORM,
		.depth = 1,
		.fanout = 3,
		.seed = 5,
	};
	struct dataset_gen_opts o = { .no_sync = true };
	struct manifest *gm = NULL;
	char *err = NULL;
	if (dataset_generate(&spec, src, &o, &gm, &err) < 0)
		g_error("%s", err);
	manifest_free(gm);
	char *link = g_build_filename(src, "link", NULL);
	g_assert_cmpint(symlink("dir0", link), ==, 0);
	if (dataset_scan(src, m, &err) < 0)
		g_error("%s", err);
	g_free(link);
	g_free(src);
}

static void test_roundtrip(void)
{
	if (!busybox) {
		g_test_skip("no busybox on this host to play the guest");
		return;
	}
	char *base = NULL;
	struct manifest *m = NULL;
	fixture(&base, &m);
	char *src = g_build_filename(base, "src", NULL);
	char *bin = applets(base);
	static const struct plan_archive cases[] = {
		{ 0, PLAN_ARCHIVE_TAR, PLAN_COMPRESS_NONE, 0 },
		{ 0, PLAN_ARCHIVE_NONE, PLAN_COMPRESS_NONE, 0 }, /* a plain tar */
		{ 0, PLAN_ARCHIVE_TAR, PLAN_COMPRESS_GZIP, 1 },
		{ 0, PLAN_ARCHIVE_TAR, PLAN_COMPRESS_XZ, 0 },
		{ 0, PLAN_ARCHIVE_PAX, PLAN_COMPRESS_NONE, 0 },
		{ 0, PLAN_ARCHIVE_PAX, PLAN_COMPRESS_GZIP, 9 },
		{ 0, PLAN_ARCHIVE_CPIO, PLAN_COMPRESS_NONE, 0 },
		{ 0, PLAN_ARCHIVE_CPIO, PLAN_COMPRESS_GZIP, 0 },
		{ 0, PLAN_ARCHIVE_CPIO, PLAN_COMPRESS_XZ, 1 },
		{ 0, PLAN_ARCHIVE_ZIP, PLAN_COMPRESS_NONE, 0 },
		{ 0, PLAN_ARCHIVE_ZIP, PLAN_COMPRESS_GZIP, 6 },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		char *stream = g_strdup_printf("%s/stream-%zu", base, i);
		char *out = g_strdup_printf("%s/out-%zu", base, i);
		g_mkdir(out, 0755);
		int fd = open(stream, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		g_assert_cmpint(fd, >=, 0);
		uint64_t bytes = 0;
		char *err = NULL;
		if (stream_pack(&cases[i], src, m, fd, 10000, &bytes, &err) < 0)
			g_error("case %zu: %s", i, err);
		close(fd);
		struct stat st;
		g_assert_cmpint(stat(stream, &st), ==, 0);
		g_assert_cmpuint(bytes, ==, (uint64_t)st.st_size);
		char *source = g_strdup_printf("cat '%s'", stream);
		char *cmd = stream_unpack_command(&cases[i], source, out);
		char *path = g_strdup_printf("PATH=%s", bin);
		const char *argv[] = { busybox, "sh", "-c", cmd, NULL };
		const char *envp[] = { path, NULL };
		int status = 0;
		char *serr = NULL;
		GError *gerr = NULL;
		if (!g_spawn_sync(NULL, (char **)argv, (char **)envp, G_SPAWN_DEFAULT, NULL, NULL,
				  NULL, &serr, &status, &gerr))
			g_error("spawn: %s", gerr->message);
		if (!g_spawn_check_wait_status(status, NULL))
			g_error("case %zu: '%s' failed: %s", i, cmd, serr);
		char *why = NULL;
		if (!dataset_intact(m, out, true, &why))
			g_error("case %zu (%s): %s", i, cmd, why);
		g_free(serr);
		g_free(path);
		free(cmd);
		g_free(source);
		g_free(out);
		g_free(stream);
	}
	rm_tree(base, NULL);
	g_free(bin);
	g_free(src);
	g_free(base);
	manifest_free(m);
}

static void test_unsupported(void)
{
	struct plan_archive a = { 0, PLAN_ARCHIVE_TAR, PLAN_COMPRESS_ZSTD, 0 };
	char *why = pack_guest_support(&a, true);
	g_assert_nonnull(why);
	g_assert_nonnull(strstr(why, "zstd"));
	free(why);
	/* an image guest is assumed to have zstd */
	g_assert_null(pack_guest_support(&a, false));
	a.compression = PLAN_COMPRESS_LZ4;
	why = pack_guest_support(&a, true);
	g_assert_nonnull(strstr(why, "lz4"));
	free(why);
	a = (struct plan_archive){ 0, PLAN_ARCHIVE_ZIP, PLAN_COMPRESS_XZ, 0 };
	why = pack_guest_support(&a, false);
	g_assert_nonnull(strstr(why, "stored and deflated"));
	free(why);
	a.compression = PLAN_COMPRESS_GZIP;
	g_assert_null(pack_guest_support(&a, true));
}

static void test_concat(void)
{
	char *base = NULL;
	struct manifest *m = NULL;
	fixture(&base, &m);
	char *src = g_build_filename(base, "src", NULL);
	/* the expected hash, file by file in manifest order */
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	EVP_DigestInit_ex(md, EVP_sha256(), NULL);
	uint64_t want_bytes = 0;
	for (size_t i = 0; i < m->n; i++) {
		if (m->entries[i].type != MANIFEST_FILE)
			continue;
		char *p = g_build_filename(src, m->entries[i].path, NULL);
		gchar *data = NULL;
		gsize len = 0;
		g_assert_true(g_file_get_contents(p, &data, &len, NULL));
		EVP_DigestUpdate(md, data, len);
		want_bytes += len;
		g_free(data);
		g_free(p);
	}
	unsigned char want[32], got[32];
	EVP_DigestFinal_ex(md, want, NULL);
	EVP_MD_CTX_free(md);
	char *out = g_build_filename(base, "concat", NULL);
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	uint64_t bytes = 0;
	char *err = NULL;
	g_assert_cmpint(stream_concat(src, m, fd, 1000, &bytes, got, &err), ==, 0);
	close(fd);
	g_assert_cmpuint(bytes, ==, want_bytes);
	g_assert_cmpuint(bytes, ==, m->bytes);
	g_assert_cmpmem(got, 32, want, 32);
	struct stat st;
	g_assert_cmpint(stat(out, &st), ==, 0);
	g_assert_cmpuint((uint64_t)st.st_size, ==, bytes);
	/* hashing only (fd < 0) gives the same digest */
	g_assert_cmpint(stream_concat(src, m, -1, 1000, &bytes, got, &err), ==, 0);
	g_assert_cmpmem(got, 32, want, 32);
	rm_tree(base, NULL);
	g_free(out);
	g_free(src);
	g_free(base);
	manifest_free(m);
}

/*
 * A reader that takes nothing (a hung guest): stream_pack stops with the stall error once, and
 * does not leak what libarchive's closing flush writes after it (valgrind and ASan see a leak
 * of the second error message otherwise).
 */
static void test_reader_stalls(void)
{
	char *base = NULL;
	struct manifest *m = NULL;
	fixture(&base, &m);
	char *src = g_build_filename(base, "src", NULL);
	int sv[2];
	g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
	g_assert_cmpint(fcntl(sv[0], F_SETFL, O_NONBLOCK), ==, 0);
	static const struct plan_archive tar = { 0, PLAN_ARCHIVE_TAR, PLAN_COMPRESS_NONE, 0 };
	uint64_t bytes = 0;
	char *err = NULL;
	g_assert_cmpint(stream_pack(&tar, src, m, sv[0], 100, &bytes, &err), ==, -1);
	g_assert_nonnull(err);
	g_assert_nonnull(strstr(err, STREAM_STALLED " 100 ms"));
	g_assert_cmpuint(bytes, <, m->bytes);
	free(err);
	close(sv[0]);
	close(sv[1]);
	rm_tree(base, NULL);
	g_free(src);
	g_free(base);
	manifest_free(m);
}

/* The run's deadline passing while bytes are still to send is a timeout (ERROR_TIMEOUT, with the
 * run timeout in ms), as a stalled reader is: which of the two comes first is the host's luck
 * (method-runs' network push hang case failed on it under load). */
static void test_deadline_is_timeout(void)
{
	int sv[2];
	g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
	run_set_deadline(now_ns() - 1, 1000 * 1000000ull);
	char *err = NULL;
	g_assert_cmpint(stream_write_all(sv[0], "abc", 3, 100, &err), ==, -1);
	run_set_deadline(0, 0);
	g_assert_nonnull(err);
	g_assert_nonnull(strstr(err, "(1000 ms)"));
	g_assert_cmpint(STREAM_ERROR_KIND(err), ==, ERROR_TIMEOUT);
	free(err);
	g_assert_cmpint(STREAM_ERROR_KIND("write: Broken pipe"), ==, ERROR_INFRA);
	close(sv[0]);
	close(sv[1]);
}

/* A sink that keeps everything pack_stream() sends (agent-file's path). */
static int keep_sink(void *userdata, const void *buf, size_t len, char **err)
{
	(void)err;
	g_byte_array_append(userdata, buf, (guint)len);
	return 0;
}

static bool contains(const void *hay, size_t n, const char *needle)
{
	return memmem(hay, n, needle, strlen(needle)) != NULL;
}

static bool file_contains(const char *path, const char *needle)
{
	gchar *data = NULL;
	gsize len = 0;
	if (!g_file_get_contents(path, &data, &len, NULL))
		return false;
	bool r = contains(data, len, needle);
	g_free(data);
	return r;
}

/*
 * A `path:` dataset scanned, then a file (and, second round, a directory) swapped for a symlink
 * to a secret before the transfer: every reader (stream_pack: channel, network, share archive;
 * pack_stream: agent-file, ISO; stream_concat: block, network pull; dataset_copy: share staging,
 * disk-image snapshots) refuses with a message naming the file, and no byte of the secret is read.
 */
/* test_swap_refused's second round: dir2 becomes a symlink to a directory whose files are
 * all the secret, under the same names. */
static void swap_dir_for_secrets(const char *base, const char *src, const char *secret)
{
	char *d = g_build_filename(src, "dir2", NULL);
	char *evil = g_build_filename(base, "evil", NULL);
	g_assert_cmpint(rename(d, evil), ==, 0);
	GDir *gd = g_dir_open(evil, 0, NULL);
	const char *name;
	while ((name = g_dir_read_name(gd))) {
		char *f = g_build_filename(evil, name, NULL);
		g_assert_cmpint(unlink(f), ==, 0);
		g_assert_cmpint(link(secret, f), ==, 0);
		g_free(f);
	}
	g_dir_close(gd);
	g_assert_cmpint(symlink(evil, d), ==, 0);
	g_free(evil);
	g_free(d);
}

/* Every reader of a dataset (stream_pack, pack_stream, stream_concat, dataset_copy) refuses
 * the tree whose `vrel` was swapped after the scan, and none lets the marker through. */
static void check_readers_refuse(const char *base, const char *src, const struct manifest *m,
				 int round, const char *vrel, const char *marker)
{
	static const struct plan_archive tar = { 0, PLAN_ARCHIVE_TAR, PLAN_COMPRESS_NONE, 0 };
	char *stream = g_strdup_printf("%s/swap-%d", base, round);
	int fd = open(stream, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	uint64_t bytes = 0;
	char *err = NULL;
	g_assert_cmpint(stream_pack(&tar, src, m, fd, 1000, &bytes, &err), ==, -1);
	close(fd);
	g_assert_nonnull(strstr(err, "changed since it was scanned"));
	g_assert_nonnull(strstr(err, vrel));
	g_assert_false(file_contains(stream, marker));
	free(err), err = NULL;

	GByteArray *got = g_byte_array_new();
	g_assert_cmpint(pack_stream(&tar, src, m, 4096, keep_sink, got, &err), ==, -1);
	g_assert_nonnull(strstr(err, "changed since it was scanned"));
	g_assert_false(contains(got->data, got->len, marker));
	g_byte_array_free(got, TRUE);
	free(err), err = NULL;

	fd = open(stream, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	g_assert_cmpint(stream_concat(src, m, fd, 1000, &bytes, NULL, &err), ==, -1);
	close(fd);
	g_assert_nonnull(strstr(err, vrel));
	g_assert_false(file_contains(stream, marker));
	free(err), err = NULL;

	char *copy = g_strdup_printf("%s/copy-%d", base, round);
	g_assert_cmpint(dataset_copy(src, m, copy, NULL, NULL, &err), ==, -1);
	g_assert_nonnull(strstr(err, "changed since it was scanned"));
	char *cv = g_build_filename(copy, vrel, NULL);
	g_assert_false(file_contains(cv, marker));
	free(err), err = NULL;
	g_free(cv);
	g_free(copy);
	g_free(stream);
}

static void test_swap_refused(void)
{
	char *base = NULL;
	struct manifest *m = NULL;
	fixture(&base, &m);
	char *src = g_build_filename(base, "src", NULL);
	char *secret = g_build_filename(base, "secret", NULL);
	const char *marker = "TOP-SECRET-host-only-bytes";
	GString *sd = g_string_new(NULL);
	for (int i = 0; i < 2000; i++)
		g_string_append(sd, marker);
	g_assert_true(g_file_set_contents(secret, sd->str, (gssize)sd->len, NULL));
	g_string_free(sd, TRUE);

	for (int round = 0; round < 2; round++) {
		/* round 0: a file in dir1 becomes a symlink to the secret; round 1: dir2 becomes
		   a symlink to a directory whose files are all the secret under the same names */
		const struct manifest_entry *victim = NULL;
		for (size_t i = 0; i < m->n && !victim; i++)
			if (m->entries[i].type == MANIFEST_FILE &&
			    g_str_has_prefix(m->entries[i].path, round ? "dir2/" : "dir1/"))
				victim = &m->entries[i];
		g_assert_nonnull(victim);
		char *vrel = g_strdup(victim->path); /* m is rescanned below */
		char *vpath = g_build_filename(src, vrel, NULL);
		if (round == 0) {
			g_assert_cmpint(unlink(vpath), ==, 0);
			g_assert_cmpint(symlink(secret, vpath), ==, 0);
		} else {
			swap_dir_for_secrets(base, src, secret);
		}

		check_readers_refuse(base, src, m, round, vrel, marker);

		/* undo, for the next round: the manifest still describes the original inodes, so
		   put back exactly those is impossible; rescan instead */
		if (round == 0) {
			char *err = NULL;
			uint64_t bytes = 0;
			g_assert_cmpint(unlink(vpath), ==, 0);
			g_assert_true(g_file_set_contents(vpath, "x", 1, NULL));
			manifest_free(m);
			g_assert_cmpint(dataset_scan(src, &m, &err), ==, 0);
			/* the same content under the same name, but another inode: refused too */
			char *p2 = g_build_filename(src, vrel, NULL);
			/* written beside and renamed over: a new inode while the old one lives */
			g_assert_true(g_file_set_contents(p2, "y", 1, NULL));
			g_assert_cmpint(stream_concat(src, m, -1, 1000, &bytes, NULL, &err), ==,
					-1);
			g_assert_nonnull(strstr(err, "another file now"));
			free(err), err = NULL;
			manifest_free(m);
			g_assert_cmpint(dataset_scan(src, &m, &err), ==, 0);
			g_free(p2);
		}
		g_free(vpath);
		g_free(vrel);
	}
	/* the directory itself replaced after the scan */
	char *moved = g_build_filename(base, "moved", NULL);
	g_assert_cmpint(rename(src, moved), ==, 0);
	g_assert_cmpint(g_mkdir(src, 0755), ==, 0);
	char *err = NULL;
	uint64_t bytes = 0;
	g_assert_cmpint(stream_concat(src, m, -1, 1000, &bytes, NULL, &err), ==, -1);
	g_assert_nonnull(strstr(err, "not the directory that was scanned"));
	free(err);
	rm_tree(base, NULL);
	g_free(moved);
	g_free(secret);
	g_free(src);
	g_free(base);
	manifest_free(m);
}

/* dataset_copy() of an intact dataset: exact, and hard links only where may_link says so. */
static bool link_all(const struct stat *st, void *ud)
{
	(void)st, (void)ud;
	return true;
}

static void test_copy(void)
{
	char *base = NULL;
	struct manifest *m = NULL;
	fixture(&base, &m);
	char *src = g_build_filename(base, "src", NULL);
	char *a = g_build_filename(base, "copied", NULL),
	     *b = g_build_filename(base, "linked", NULL);
	char *err = NULL;
	uint64_t copied = 0;
	g_assert_cmpint(dataset_copy(src, m, a, NULL, &copied, &err), ==, 0);
	g_assert_cmpuint(copied, ==, m->bytes);
	char *why = NULL;
	if (!dataset_intact(m, a, true, &why))
		g_error("copy: %s", why);
	struct dataset_copy_opts o = { .may_link = link_all };
	g_assert_cmpint(dataset_copy(src, m, b, &o, &copied, &err), ==, 0);
	g_assert_cmpuint(copied, ==, 0);
	if (!dataset_intact(m, b, true, &why))
		g_error("links: %s", why);
	for (size_t i = 0; i < m->n; i++) {
		if (m->entries[i].type != MANIFEST_FILE)
			continue;
		char *pa = g_build_filename(a, m->entries[i].path, NULL);
		char *pb = g_build_filename(b, m->entries[i].path, NULL);
		struct stat sa, sb;
		g_assert_cmpint(stat(pa, &sa), ==, 0);
		g_assert_cmpint(stat(pb, &sb), ==, 0);
		g_assert_cmpuint(sa.st_ino, !=, m->entries[i].ino);
		g_assert_cmpuint(sb.st_ino, ==, m->entries[i].ino);
		g_free(pa), g_free(pb);
	}
	/* a destination a guest replaced with a symlink is refused, nothing lands behind it */
	char *elsewhere = g_build_filename(base, "elsewhere", NULL);
	g_assert_cmpint(g_mkdir(elsewhere, 0755), ==, 0);
	char *planted = g_build_filename(base, "planted", NULL);
	g_assert_cmpint(symlink(elsewhere, planted), ==, 0);
	int bfd = open(base, O_RDONLY | O_DIRECTORY);
	g_assert_cmpint(dataset_copy_at(src, m, bfd, "planted", planted, NULL, NULL, &err), ==, -1);
	g_assert_nonnull(strstr(err, "planted"));
	free(err);
	close(bfd);
	GDir *gd = g_dir_open(elsewhere, 0, NULL);
	g_assert_null(g_dir_read_name(gd));
	g_dir_close(gd);
	g_free(planted), g_free(elsewhere);
	rm_tree(base, NULL);
	g_free(a), g_free(b), g_free(src), g_free(base);
	manifest_free(m);
}

/* mapped_links: the link "link" -> "dir0" as 9p's mapped-xattr model keeps it (what QEMU reads
 * back as a link), every other entry as a plain copy; where the filesystem has no user xattrs
 * the copy fails rather than leave a link QEMU cannot read. */
static void test_copy_mapped_links(void)
{
	char *base = NULL;
	struct manifest *m = NULL;
	fixture(&base, &m);
	char *src = g_build_filename(base, "src", NULL),
	     *dst = g_build_filename(base, "mapped", NULL);
	char *err = NULL;
	struct dataset_copy_opts o = { .mapped_links = true };
	int rc = dataset_copy(src, m, dst, &o, NULL, &err);
	char *link = g_build_filename(dst, "link", NULL);
	uint32_t mode = 0;
	if (rc < 0 && strstr(err, "not supported")) {
		g_test_skip("the test directory's filesystem has no user xattrs");
	} else {
		g_assert_cmpint(rc, ==, 0);
		struct stat st;
		g_assert_cmpint(lstat(link, &st), ==, 0);
		g_assert_true(S_ISREG(st.st_mode));
		g_assert_cmpuint(st.st_mode & 07777, ==, 0600);
		gchar *text = NULL;
		g_assert_true(g_file_get_contents(link, &text, NULL, NULL));
		g_assert_cmpstr(text, ==, "dir0");
		g_assert_cmpint(getxattr(link, "user.virtfs.mode", &mode, sizeof(mode)), ==, 4);
		g_assert_cmpuint(le32toh(mode), ==, S_IFLNK | 0777);
		char *f = g_build_filename(dst, "dir0", NULL);
		g_assert_true(g_file_test(f, G_FILE_TEST_IS_DIR) &&
			      !g_file_test(f, G_FILE_TEST_IS_SYMLINK));
		g_free(f), g_free(text);
	}
	free(err);
	rm_tree(base, NULL);
	g_free(link), g_free(dst), g_free(src), g_free(base);
	manifest_free(m);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	busybox = g_find_program_in_path("busybox");
	g_test_add_func("/stream/unsupported", test_unsupported);
	g_test_add_func("/stream/concat", test_concat);
	g_test_add_func("/stream/reader-stalls", test_reader_stalls);
	g_test_add_func("/stream/deadline-is-timeout", test_deadline_is_timeout);
	g_test_add_func("/stream/roundtrip-busybox", test_roundtrip);
	g_test_add_func("/stream/swap-refused", test_swap_refused);
	g_test_add_func("/stream/copy", test_copy);
	g_test_add_func("/stream/copy-mapped-links", test_copy_mapped_links);
	int r = g_test_run();
	g_free(busybox);
	return r;
}
