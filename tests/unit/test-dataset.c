/* SPDX-License-Identifier: MIT */
/*
 * Datasets (runner/data/): generation (deterministic, sizes, directories, content), scans of a
 * path dataset, the cache, eviction, capacity and sizes. Verification, listings and manifests:
 * test-dataset-verify.c.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <string.h>
#include <sys/stat.h>

#include "capacity.h"
#include "dataset-files.h"
#include "dataset.h"
#include "fs.h"
#include "util.h"

static void test_determinism(void)
{
	char *base = tmpdir();
	char *a = xasprintf("%s/a", base), *b = xasprintf("%s/b", base),
	     *c = xasprintf("%s/c", base);
	struct dataset_spec spec = { .files = 7,
				     .size_min = 1,
				     .size_max = 300000,
				     .dist = DATASET_DIST_UNIFORM,
				     .depth = 1,
				     .fanout = 2,
				     .seed = 42 };
	struct manifest *ma = gen(&spec, a), *mb = gen(&spec, b);
	g_assert_cmpmem(ma->digest, 32, mb->digest, 32);
	g_assert_cmpuint(ma->n, ==, mb->n);
	/* the bytes, not only the digests */
	for (size_t i = 0; i < ma->n; i++) {
		if (ma->entries[i].type != MANIFEST_FILE)
			continue;
		char *pa = xasprintf("%s/%s", a, ma->entries[i].path);
		char *pb = xasprintf("%s/%s", b, ma->entries[i].path);
		size_t la, lb;
		char *da = slurp(pa, &la), *db = slurp(pb, &lb);
		g_assert_cmpmem(da, la, db, lb);
		g_assert_cmpuint(la, ==, ma->entries[i].size);
		free(da), free(db), free(pa), free(pb);
	}
	spec.seed = 43;
	struct manifest *mc = gen(&spec, c);
	g_assert_cmpint(memcmp(ma->digest, mc->digest, 32), !=, 0);
	manifest_free(ma), manifest_free(mb), manifest_free(mc);
	free(a), free(b), free(c);
	rmtree(base);
}

/* Any range of a file comes out the same whatever order it is produced in. */
static void test_fill_ranges(void)
{
	for (int content = 0; content < 4; content++) {
		struct dataset_spec spec = {
			.files = 3, .size_min = 20000, .content = content, .seed = 9
		};
		unsigned char whole[20000], part[20000];
		dataset_fill(&spec, 1, 0, whole, sizeof(whole));
		/* odd offsets and lengths, produced backwards */
		static const size_t cuts[] = { 0, 3, 8, 4095, 4096, 4099, 9000, 13333, 20000 };
		for (size_t i = ELEMENTSOF(cuts) - 1; i > 0; i--)
			dataset_fill(&spec, 1, cuts[i - 1], part + cuts[i - 1],
				     cuts[i] - cuts[i - 1]);
		g_assert_cmpmem(whole, sizeof(whole), part, sizeof(part));
		/* another file of the same spec differs */
		dataset_fill(&spec, 2, 0, part, sizeof(part));
		if (content != DATASET_CONTENT_ZEROS)
			g_assert_cmpint(memcmp(whole, part, sizeof(part)), !=, 0);
	}
}

/* Pinned output: a change here changes every cached dataset, so GENERATOR_VERSION must move. */
static void test_golden(void)
{
	struct dataset_spec spec = { .files = 2, .size_min = 4096, .seed = 1 };
	char *c = dataset_spec_canonical(&spec);
	g_assert_cmpstr(c, ==,
			"ferry-dataset/2 files=2 size=4096..4096 dist=fixed depth=0 fanout=0 "
			"content=random seed=1");
	free(c);
	unsigned char buf[16];
	dataset_fill(&spec, 0, 0, buf, sizeof(buf));
	char *hex = g_strdup_printf("%02x%02x%02x%02x%02x%02x%02x%02x", buf[0], buf[1], buf[2],
				    buf[3], buf[4], buf[5], buf[6], buf[7]);
	/* the same 8 bytes as `openssl enc -aes-128-ctr -K <key> -iv 0` over zeros, with the key
	 * derived as dataset.c does (checked once with a Python re-implementation of key()) */
	g_assert_cmpstr(hex, ==, "16d2db5171d6e120");
	g_free(hex);
	char *h = dataset_spec_hash(&spec);
	g_assert_cmpuint(strlen(h), ==, 16);
	free(h);
}

static void test_sizes(void)
{
	struct dataset_spec spec = { .files = 2000,
				     .size_min = 1000,
				     .size_max = 1000000,
				     .dist = DATASET_DIST_UNIFORM,
				     .seed = 3 };
	uint64_t lo = UINT64_MAX, hi = 0, below_mid = 0;
	for (uint64_t i = 0; i < spec.files; i++) {
		uint64_t s = dataset_file_size(&spec, i);
		g_assert_cmpuint(s, >=, spec.size_min);
		g_assert_cmpuint(s, <=, spec.size_max);
		lo = MIN(lo, s), hi = MAX(hi, s);
		below_mid += s < 500500;
	}
	/* spread over the range: ends reached closely, halves balanced */
	g_assert_cmpuint(lo, <, 1000 + 10000);
	g_assert_cmpuint(hi, >, 1000000 - 10000);
	g_assert_cmpuint(below_mid, >, 850);
	g_assert_cmpuint(below_mid, <, 1150);

	spec.dist = DATASET_DIST_LOGNORMAL;
	uint64_t below_median = 0, below_sigma = 0;
	for (uint64_t i = 0; i < spec.files; i++) {
		uint64_t s = dataset_file_size(&spec, i);
		g_assert_cmpuint(s, >=, spec.size_min);
		g_assert_cmpuint(s, <=, spec.size_max);
		below_median += s < 31623; /* sqrt(1000 * 1000000) */
		below_sigma +=
		    s < 10000; /* median e^-sigma = median / sqrt(10) (sigma = ln(1000)/6) */
	}
	g_assert_cmpuint(below_median, >, 900);
	g_assert_cmpuint(below_median, <, 1100);
	/* a lognormal, not a uniform: 15.9% of the files lie below -1 sigma (a uniform: 0.9%) */
	g_assert_cmpuint(below_sigma, >, 2000 * 159 / 1000 - 60);
	g_assert_cmpuint(below_sigma, <, 2000 * 159 / 1000 + 60);

	spec.dist = DATASET_DIST_FIXED;
	for (uint64_t i = 0; i < 10; i++)
		g_assert_cmpuint(dataset_file_size(&spec, i), ==, 1000);

	char *err = NULL;
	spec.dist = DATASET_DIST_UNIFORM;
	spec.size_max = 10;
	g_assert_cmpint(dataset_spec_check(&spec, &err), ==, -1);
	g_assert_nonnull(strstr(err, "below min"));
	free(err);
}

static void test_dirs(void)
{
	char *base = tmpdir(), *d = xasprintf("%s/t", base);
	struct dataset_spec spec = { .files = 20, .size_min = 10, .depth = 2, .fanout = 3 };
	struct manifest *m = gen(&spec, d);
	size_t dirs = 0, files = 0;
	GHashTable *per_leaf = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	for (size_t i = 0; i < m->n; i++) {
		const struct manifest_entry *e = &m->entries[i];
		char **parts = g_strsplit(e->path, "/", -1);
		if (e->type == MANIFEST_DIR) {
			dirs++;
			g_assert_true(g_str_has_prefix(parts[g_strv_length(parts) - 1], "dir"));
		} else {
			files++;
			g_assert_cmpuint(g_strv_length(parts), ==, 3);
			char *leaf = g_strdup_printf("%s/%s", parts[0], parts[1]);
			gpointer n = g_hash_table_lookup(per_leaf, leaf);
			g_hash_table_replace(per_leaf, leaf,
					     GSIZE_TO_POINTER(GPOINTER_TO_SIZE(n) + 1));
		}
		g_strfreev(parts);
		/* world-readable for libvirt-qemu and 9p */
		char *p = xasprintf("%s/%s", d, e->path);
		struct stat st;
		g_assert_cmpint(stat(p, &st), ==, 0);
		g_assert_cmpuint(st.st_mode & 0777, ==, e->type == MANIFEST_DIR ? 0755 : 0644);
		free(p);
	}
	g_assert_cmpuint(dirs, ==, 3 + 9);
	g_assert_cmpuint(files, ==, 20);
	/* round-robin: 20 files over 9 leaves is 2 or 3 each */
	g_assert_cmpuint(g_hash_table_size(per_leaf), ==, 9);
	GHashTableIter it;
	gpointer k, v;
	g_hash_table_iter_init(&it, per_leaf);
	while (g_hash_table_iter_next(&it, &k, &v))
		g_assert_true(GPOINTER_TO_SIZE(v) == 2 || GPOINTER_TO_SIZE(v) == 3);
	g_hash_table_destroy(per_leaf);
	char *p = dataset_file_path(&spec, 4);
	g_assert_cmpstr(p, ==, "dir1/dir1/f0004");
	free(p);
	manifest_free(m);
	free(d);
	rmtree(base);
}

/* Compressed size / original size with a libarchive filter ("gzip", "zstd", ...). */
static double compress_ratio(const void *data, size_t len, const char *filter)
{
	struct archive *a = archive_write_new();
	g_assert_cmpint(archive_write_add_filter_by_name(a, filter), ==, ARCHIVE_OK);
	g_assert_cmpint(archive_write_set_format_raw(a), ==, ARCHIVE_OK);
	size_t cap = len + len / 10 + 65536, used = 0;
	void *out = xmalloc(cap);
	g_assert_cmpint(archive_write_open_memory(a, out, cap, &used), ==, ARCHIVE_OK);
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, "x");
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_size(e, (la_int64_t)len);
	g_assert_cmpint(archive_write_header(a, e), ==, ARCHIVE_OK);
	g_assert_cmpint(archive_write_data(a, data, len), ==, (la_ssize_t)len);
	g_assert_cmpint(archive_write_close(a), ==, ARCHIVE_OK);
	archive_entry_free(e);
	archive_write_free(a);
	free(out);
	return (double)used / (double)len;
}

static void test_content(void)
{
	enum { N = 1 << 20 };
	unsigned char *buf = xmalloc(N);
	struct dataset_spec spec = { .files = 1, .size_min = N, .seed = 5 };

	spec.content = DATASET_CONTENT_ZEROS;
	memset(buf, 0xaa, N);
	dataset_fill(&spec, 0, 0, buf, N);
	for (size_t i = 0; i < N; i++)
		if (buf[i])
			g_error("zeros content has byte %zu = %u", i, buf[i]);

	spec.content = DATASET_CONTENT_RANDOM;
	dataset_fill(&spec, 0, 0, buf, N);
	g_assert_cmpfloat(compress_ratio(buf, N, "gzip"), >, 0.99);

	spec.content = DATASET_CONTENT_TEXT;
	dataset_fill(&spec, 0, 0, buf, N);
	size_t lines = 0;
	for (size_t i = 0; i < N; i++) {
		g_assert_true(buf[i] == '\n' || (buf[i] >= ' ' && buf[i] < 127));
		lines += buf[i] == '\n';
	}
	g_assert_cmpuint(lines, >, N / 200);
	g_assert_cmpfloat(compress_ratio(buf, N, "gzip"), <, 0.5);

	spec.content = DATASET_CONTENT_COMPRESSIBLE;
	static const double targets[] = { 0.25, 0.5, 0.8 };
	static const char *const filters[] = { "gzip", "zstd", "lz4", "xz" };
	for (size_t t = 0; t < ELEMENTSOF(targets); t++) {
		spec.ratio = targets[t];
		dataset_fill(&spec, 0, 0, buf, N);
		for (size_t f = 0; f < ELEMENTSOF(filters); f++) {
			struct archive *probe = archive_write_new();
			bool have =
			    archive_write_add_filter_by_name(probe, filters[f]) == ARCHIVE_OK;
			archive_write_free(probe);
			if (!have)
				continue;
			double r = compress_ratio(buf, N, filters[f]);
			if (g_test_verbose())
				g_test_message("%s target %.2f got %.3f", filters[f], targets[t],
					       r);
			g_assert_cmpfloat(r, >, targets[t] - 0.03);
			g_assert_cmpfloat(r, <, targets[t] + 0.03);
		}
	}
	free(buf);
}

/* Make d/name: 'f' a file holding arg, 'd' a directory, 'l' a symlink to arg, 'p' a fifo. */
static void at(const char *d, const char *name, char kind, const char *arg)
{
	char *p = xasprintf("%s/%s", d, name);
	switch (kind) {
	case 'f': write_text(p, arg); break;
	case 'd': g_assert_cmpint(mkdir(p, 0755), ==, 0); break;
	case 'l': g_assert_cmpint(symlink(arg, p), ==, 0); break;
	case 'p': g_assert_cmpint(mkfifo(p, 0644), ==, 0); break;
	}
	free(p);
}

static void test_scan(void)
{
	char *d = tmpdir();
	at(d, "a b.txt", 'f', "hello\n");
	at(d, "sub", 'd', NULL);
	at(d, "sub/empty", 'f', "");
	at(d, "link", 'l', "sub/../a b.txt");
	at(d, "dangling", 'l', "/nonexistent");
	at(d, "fifo", 'p', NULL);
	at(d, "new\nline", 'f', "x");
	struct stat before, after;
	g_assert_cmpint(stat(d, &before), ==, 0);

	struct manifest *m = NULL;
	char *err = NULL;
	if (dataset_scan(d, &m, &err) < 0)
		g_error("scan: %s", err);
	g_assert_cmpuint(m->n, ==, 5);
	const struct manifest_entry *e = manifest_find(m, "a b.txt");
	g_assert_nonnull(e);
	g_assert_cmpint(e->type, ==, MANIFEST_FILE);
	g_assert_cmpuint(e->size, ==, 6);
	char hex[65];
	sha256_hex(e->sha256, hex); /* sha256sum of "hello\n" */
	g_assert_cmpstr(hex, ==,
			"5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
	e = manifest_find(m, "link");
	g_assert_nonnull(e);
	g_assert_cmpint(e->type, ==, MANIFEST_SYMLINK);
	g_assert_cmpstr(e->target, ==, "sub/../a b.txt");
	e = manifest_find(m, "dangling");
	g_assert_nonnull(e);
	g_assert_cmpstr(e->target, ==, "/nonexistent");
	g_assert_nonnull(manifest_find(m, "sub"));
	g_assert_nonnull(manifest_find(m, "sub/empty"));
	g_assert_null(manifest_find(m, "fifo"));
	g_assert_cmpuint(m->files, ==, 2);
	g_assert_cmpuint(m->n_skipped, ==, 2);
	g_assert_cmpstr(m->skipped[0].path, ==, "fifo");
	g_assert_nonnull(strstr(m->skipped[0].reason, "fifo"));
	g_assert_cmpstr(m->skipped[1].path, ==, "new\nline");
	g_assert_nonnull(strstr(m->skipped[1].reason, "newline"));
	manifest_free(m);

	/* read-only: nothing was added, removed or touched */
	g_assert_cmpint(stat(d, &after), ==, 0);
	g_assert_cmpint(before.st_mtim.tv_sec, ==, after.st_mtim.tv_sec);
	g_assert_cmpint(before.st_mtim.tv_nsec, ==, after.st_mtim.tv_nsec);

	g_assert_cmpint(dataset_scan("/nonexistent/ferry", &m, &err), ==, -1);
	g_assert_nonnull(strstr(err, "'/nonexistent/ferry'"));
	free(err);
	rmtree(d);
}

static void test_scan_unreadable(void)
{
	if (geteuid() == 0) {
		g_test_skip("root reads files whatever their mode");
		return;
	}
	char *d = tmpdir();
	char *p = xasprintf("%s/secret", d);
	write_text(p, "x");
	g_assert_cmpint(chmod(p, 0), ==, 0);
	struct manifest *m = NULL;
	char *err = NULL;
	g_assert_cmpint(dataset_scan(d, &m, &err), ==, -1);
	g_assert_nonnull(strstr(err, p));
	free(err);
	free(p);
	rmtree(d);
}

static struct manifest *get(const struct dataset_spec *spec, const char *cache, bool rehash,
			    struct dataset_info *info)
{
	struct dataset_get_opts o = { .cache_dir = cache, .rehash = rehash, .gen.no_sync = true };
	struct manifest *m = NULL;
	char *err = NULL;
	if (dataset_get(spec, &o, info, &m, &err) < 0)
		g_error("dataset_get: %s", err);
	return m;
}

/* A cache made under umask 077 is still readable by QEMU (libvirt-qemu): directories 0755,
 * files 0644, down to the manifest. */
static void check_cache_modes(const char *cache, const struct dataset_spec *spec)
{
	struct dataset_info info;
	/* QEMU runs as libvirt-qemu: the cache must be readable whatever ferry's umask */
	mode_t old_umask = umask(077);
	char *sub = xasprintf("%s/deeper", cache);
	struct manifest *m = get(spec, sub, false, &info);
	umask(old_umask);
	g_assert_true(info.generated);
	g_assert_null(info.regen_reason);
	char *check[] = { sub, xasprintf("%s/datasets", sub), info.dir, info.manifest_path };
	for (size_t i = 0; i < ELEMENTSOF(check); i++) {
		struct stat st;
		g_assert_cmpint(stat(check[i], &st), ==, 0);
		g_assert_cmpuint(st.st_mode & 0777, ==, S_ISDIR(st.st_mode) ? 0755 : 0644);
	}
	free(check[1]);
	manifest_free(m);
	dataset_info_clear(&info);
	free(sub);
}

static void test_cache(void)
{
	char *cache = tmpdir();
	struct dataset_spec spec = { .files = 4, .size_min = 5000, .seed = 11 };
	struct dataset_info info;

	check_cache_modes(cache, &spec);

	struct manifest *m = get(&spec, cache, false, &info);
	g_assert_true(info.generated);
	g_assert_null(info.regen_reason);
	char *hash = dataset_spec_hash(&spec);
	char *want = xasprintf("%s/datasets/%s", cache, hash);
	g_assert_cmpstr(info.dir, ==, want);
	char *mpath = xasprintf("%s.manifest.json", want);
	g_assert_cmpstr(info.manifest_path, ==, mpath);
	char *f0 = xasprintf("%s/f0000", info.dir);
	struct stat st1, st2;
	g_assert_cmpint(stat(f0, &st1), ==, 0);
	unsigned char digest[32];
	memcpy(digest, m->digest, 32);
	manifest_free(m);
	dataset_info_clear(&info);

	/* reused: not regenerated, same file (inode and mtime), same manifest */
	m = get(&spec, cache, false, &info);
	g_assert_false(info.generated);
	g_assert_cmpint(stat(f0, &st2), ==, 0);
	g_assert_cmpuint(st1.st_ino, ==, st2.st_ino);
	g_assert_cmpint(st1.st_mtim.tv_nsec, ==, st2.st_mtim.tv_nsec);
	g_assert_cmpmem(m->digest, 32, digest, 32);
	manifest_free(m);
	dataset_info_clear(&info);

	/* truncated: not intact, regenerated */
	g_assert_cmpint(truncate(f0, 10), ==, 0);
	m = get(&spec, cache, false, &info);
	g_assert_true(info.generated);
	g_assert_nonnull(strstr(info.regen_reason, "f0000"));
	g_assert_cmpint(stat(f0, &st2), ==, 0);
	g_assert_cmpuint(st2.st_size, ==, 5000);
	g_assert_cmpmem(m->digest, 32, digest, 32);
	manifest_free(m);
	dataset_info_clear(&info);

	/* a flipped byte keeps the size, but it changes the inode's ctime after the manifest was
	   written: that file is re-hashed and the copy regenerated, never trusted on its size */
	int fd = open(f0, O_WRONLY);
	g_assert_cmpint(fd, >=, 0);
	g_assert_cmpint(pwrite(fd, "?", 1, 100), ==, 1);
	close(fd);
	m = get(&spec, cache, false, &info);
	g_assert_true(info.generated);
	g_assert_nonnull(strstr(info.regen_reason, "f0000"));
	g_assert_nonnull(strstr(info.regen_reason, "SHA-256"));
	g_assert_cmpmem(m->digest, 32, digest, 32);
	manifest_free(m);
	dataset_info_clear(&info);

	/* a change of the inode that keeps the bytes (chmod, a hard link): re-hashed once,
	   reused, and sealed again, so the next use hashes nothing */
	g_assert_cmpint(chmod(f0, 0644), ==, 0);
	m = get(&spec, cache, false, &info);
	g_assert_false(info.generated);
	g_assert_cmpuint(info.rehashed, ==, 1);
	manifest_free(m);
	dataset_info_clear(&info);
	m = get(&spec, cache, false, &info);
	g_assert_false(info.generated);
	g_assert_cmpuint(info.rehashed, ==, 0);
	manifest_free(m);
	dataset_info_clear(&info);

	/* --rehash hashes everything */
	m = get(&spec, cache, true, &info);
	g_assert_false(info.generated);
	g_assert_cmpuint(info.rehashed, ==, m->files);
	manifest_free(m);
	dataset_info_clear(&info);

	/* an extra file makes the copy not intact either */
	char *extra = xasprintf("%s/extra", want);
	write_text(extra, "x");
	m = get(&spec, cache, false, &info);
	g_assert_true(info.generated);
	g_assert_nonnull(strstr(info.regen_reason, "entries"));
	g_assert_false(g_file_test(extra, G_FILE_TEST_EXISTS));
	manifest_free(m);
	dataset_info_clear(&info);

	/* a crash between the rename and the manifest: no manifest, regenerated */
	g_assert_cmpint(unlink(mpath), ==, 0);
	m = get(&spec, cache, false, &info);
	g_assert_true(info.generated);
	manifest_free(m);
	dataset_info_clear(&info);

	free(extra), free(f0), free(mpath), free(want), free(hash);
	rmtree(cache);
}

static void test_parse_size(void)
{
	static const struct {
		const char *s;
		int rc;
		uint64_t v;
	} cases[] = {
		{ "4096", 0, 4096 },      { "64KiB", 0, 65536 },     { "64k", 0, 65536 },
		{ "1.5MiB", 0, 1572864 }, { "1GiB", 0, 1073741824 }, { "10MB", 0, 10000000 },
		{ "1 G", 0, 1073741824 }, { "16777216TiB", -1, 0 },  { "", -1, 0 },
		{ "-1", -1, 0 },          { "12 parsecs", -1, 0 },   { "MiB", -1, 0 },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		uint64_t v = 0;
		g_assert_cmpint(dataset_parse_size(cases[i].s, &v), ==, cases[i].rc);
		if (cases[i].rc == 0)
			g_assert_cmpuint(v, ==, cases[i].v);
	}
}

/* Eviction: least recently used first, never a dataset a process holds (dataset_info). */
static void test_evict(void)
{
	char *cache = tmpdir();
	struct dataset_spec a = { .files = 2, .size_min = 65536, .seed = 1 };
	struct dataset_spec b = a, c = a;
	b.seed = 2;
	c.seed = 3;
	struct dataset_info ia, ib, ic;
	setenv("FERRY_CACHE_MAX", "none", 1); /* no eviction inside dataset_get() here */
	struct manifest *ma = get(&a, cache, false, &ia);
	struct manifest *mb = get(&b, cache, false, &ib);
	struct manifest *mc = get(&c, cache, false, &ic);
	char *da = xstrdup(ia.dir), *db = xstrdup(ib.dir), *dc = xstrdup(ic.dir);
	/* b is still in use; a and c are not */
	dataset_info_clear(&ia);
	dataset_info_clear(&ic);
	struct evict_result r;
	char *err = NULL;
	g_assert_cmpint(dataset_cache_evict(cache, 0, &r, &err), ==, 0);
	g_assert_cmpuint(r.removed, ==, 2);
	g_assert_cmpuint(r.in_use, ==, 1);
	g_assert_false(g_file_test(da, G_FILE_TEST_EXISTS));
	g_assert_false(g_file_test(dc, G_FILE_TEST_EXISTS));
	g_assert_true(g_file_test(db, G_FILE_TEST_IS_DIR));
	g_assert_cmpuint(r.total, >=, 2 * 65536);
	/* released, it goes too */
	dataset_info_clear(&ib);
	g_assert_cmpint(dataset_cache_evict(cache, 0, &r, &err), ==, 0);
	g_assert_cmpuint(r.removed, ==, 1);
	g_assert_false(g_file_test(db, G_FILE_TEST_EXISTS));
	/* an evicted dataset is simply generated again */
	struct manifest *m2 = get(&a, cache, false, &ia);
	g_assert_true(ia.generated);
	g_assert_cmpmem(m2->digest, 32, ma->digest, 32);
	dataset_info_clear(&ia);
	unsetenv("FERRY_CACHE_MAX");
	manifest_free(ma), manifest_free(mb), manifest_free(mc), manifest_free(m2);
	free(da), free(db), free(dc);
	rmtree(cache);
}

/* capacity_check(): sums per filesystem, says which is short and for what; memory too. */
static void test_capacity(void)
{
	const struct capacity_need needs[] = {
		{ "datasets to generate", 7, UINT64_C(3) << 30 },
		{ "target disks", 7, UINT64_C(1) << 30 },
		{ "target disks", 9, UINT64_C(1) << 30 },
		{ "the largest VM", 0, UINT64_C(2) << 30 },
	};
	struct capacity_space space[] = {
		{ 7, "/cache", UINT64_C(4) << 30 },
		{ 9, "/runs", UINT64_C(1) << 30 },
		{ 0, "memory", UINT64_C(2) << 30 },
	};
	char *err = NULL;
	/* exactly full is enough */
	g_assert_cmpint(capacity_check(needs, 4, space, 3, &err), ==, 0);
	space[0].avail--;
	space[2].avail = UINT64_C(1) << 30;
	g_assert_cmpint(capacity_check(needs, 4, space, 3, &err), ==, -1);
	g_assert_nonnull(strstr(err,
				"not enough disk space on the filesystem of '/cache': needs 4GiB "
				"(datasets to generate 3GiB, target disks 1GiB), 4GiB are free"));
	g_assert_null(strstr(err, "/runs"));
	g_assert_nonnull(strstr(err,
				"not enough memory: needs 2GiB (the largest VM 2GiB), 1GiB are "
				"available"));
	free(err);
	/* a sum that overflows is still too much */
	const struct capacity_need huge[] = { { "a", 7, UINT64_MAX }, { "b", 7, 2 } };
	g_assert_cmpint(capacity_check(huge, 2, space, 3, &err), ==, -1);
	free(err);
}

/* Class 11 of issue 24: inodes count as well as bytes; memory and unknown counts do not. */
static void test_capacity_inodes(void)
{
	const struct capacity_need needs[] = {
		{ "datasets to generate", 7, UINT64_C(20) << 20, 5001 },
		{ "target disks", 7, UINT64_C(1) << 20, 64 },
		{ "the largest VM", 0, UINT64_C(1) << 20, 0 },
	};
	struct capacity_space space[] = {
		{ 7, "/small", UINT64_C(1) << 30, 2000, true },
		{ 0, "memory", UINT64_C(1) << 30, 0, true },
	};
	char *err = NULL;
	g_assert_cmpint(capacity_check(needs, 3, space, 2, &err), ==, -1);
	g_assert_cmpstr(err, ==,
			"not enough inodes (files and directories) on the filesystem of '/small': "
			"needs 5065 (datasets to generate 5001, target disks 64), 2000 are free");
	g_free(err);
	err = NULL;
	space[0].inodes = 5065; /* exactly enough */
	g_assert_cmpint(capacity_check(needs, 3, space, 2, &err), ==, 0);
	space[0].inodes = 0;
	space[0].inodes_known = false; /* btrfs: no fixed inode table */
	g_assert_cmpint(capacity_check(needs, 3, space, 2, &err), ==, 0);
	/* a generated dataset: its files, every directory of its tree and its top directory */
	struct dataset_spec s = { .files = 5000, .depth = 2, .fanout = 3 };
	g_assert_cmpuint(capacity_dataset_inodes(&s), ==, 5000 + 3 + 9 + 1);
	s.depth = 64;
	s.fanout = 1000000;
	g_assert_cmpuint(capacity_dataset_inodes(&s), ==, UINT64_MAX);
	/* the probe: this test's own directory has a number, or says it has none */
	uint64_t n = 0;
	if (capacity_fs_inodes(".", &n))
		g_assert_cmpuint(n, >, 0);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/dataset/evict", test_evict);
	g_test_add_func("/dataset/capacity", test_capacity);
	g_test_add_func("/dataset/capacity-inodes", test_capacity_inodes);
	g_test_add_func("/dataset/determinism", test_determinism);
	g_test_add_func("/dataset/fill-ranges", test_fill_ranges);
	g_test_add_func("/dataset/golden", test_golden);
	g_test_add_func("/dataset/sizes", test_sizes);
	g_test_add_func("/dataset/dirs", test_dirs);
	g_test_add_func("/dataset/content", test_content);
	g_test_add_func("/dataset/scan", test_scan);
	g_test_add_func("/dataset/scan-unreadable", test_scan_unreadable);
	g_test_add_func("/dataset/cache", test_cache);
	g_test_add_func("/dataset/parse-size", test_parse_size);
	return g_test_run();
}
