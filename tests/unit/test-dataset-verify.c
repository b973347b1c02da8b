/* SPDX-License-Identifier: MIT */
/*
 * Datasets (runner/data/) verified: a guest's listing checked against the manifest (sizes,
 * hashes, links), listings parsed, ferry-sum's XXH3-128 lists, and manifests written and read
 * back.
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

static char *listing_of(const struct manifest *m)
{
	GString *s = g_string_new(NULL);
	for (size_t i = 0; i < m->n; i++) {
		char hex[65];
		if (m->entries[i].type != MANIFEST_FILE)
			continue;
		sha256_hex(m->entries[i].sha256, hex);
		g_string_append_printf(s, "%s  ./%s\n", hex, m->entries[i].path);
	}
	char *r = xstrdup(s->str);
	g_string_free(s, TRUE);
	return r;
}

static void verify_text(const struct manifest *m, const char *text, bool symlinks,
			struct verify_result *res)
{
	struct listing l = { 0 };
	char *err = NULL;
	if (listing_parse(text, strlen(text), &l, &err) < 0)
		g_error("listing: %s", err);
	struct verify_opts o = { .symlinks = symlinks };
	manifest_verify(m, &l, &o, res);
	listing_clear(&l);
}

static void test_verify(void)
{
	char *base = tmpdir(), *d = xasprintf("%s/v", base);
	struct dataset_spec spec = { .files = 8, .size_min = 100, .depth = 1, .fanout = 2 };
	struct manifest *m = gen(&spec, d);
	char *ok = listing_of(m);
	struct verify_result r;

	verify_text(m, ok, false, &r);
	g_assert_true(r.ok);
	g_assert_cmpstr(r.message, ==, "integrity: ok (8 files)");
	verify_result_clear(&r);

	/* one different: flip a hash digit of dir1/f0003 */
	char *bad = xstrdup(ok);
	char *line = strstr(bad, "  ./dir1/f0003");
	g_assert_nonnull(line);
	line -= 64;
	line[0] = line[0] == '0' ? '1' : '0';
	verify_text(m, bad, false, &r);
	g_assert_false(r.ok);
	g_assert_cmpuint(r.different, ==, 1);
	g_assert_cmpstr(r.first_different[0], ==, "dir1/f0003");
	g_assert_cmpstr(r.message, ==, "integrity: 1 different (dir1/f0003), 0 missing, 0 extra");
	verify_result_clear(&r);
	free(bad);

	/* missing (first two lines dropped) and extra (one added, with spaces in its name) */
	const char *third = strchr(strchr(ok, '\n') + 1, '\n') + 1;
	char *text =
	    g_strdup_printf("%s%s  ./dir0/new file\n", third,
			    "0000000000000000000000000000000000000000000000000000000000000000");
	verify_text(m, text, false, &r);
	g_assert_false(r.ok);
	g_assert_cmpuint(r.missing, ==, 2);
	g_assert_cmpuint(r.extra, ==, 1);
	g_assert_cmpstr(r.message, ==,
			"integrity: 0 different, 2 missing (dir0/f0000, dir0/f0002), 1 extra "
			"(dir0/new file)");
	verify_result_clear(&r);
	g_free(text);

	/* nothing landed: all missing, the first VERIFY_FIRST named, then "..." */
	verify_text(m, "", false, &r);
	g_assert_cmpuint(r.missing, ==, 8);
	g_assert_cmpuint(r.n_first_missing, ==, VERIFY_FIRST);
	g_assert_nonnull(strstr(r.message, "8 missing (dir0/f0000, "));
	g_assert_nonnull(strstr(r.message, ", ...)"));
	verify_result_clear(&r);

	/* listing order does not matter */
	char **lines = g_strsplit(ok, "\n", -1);
	GString *rev = g_string_new(NULL);
	for (int i = (int)g_strv_length(lines) - 1; i >= 0; i--)
		g_string_append_printf(rev, "%s\n", lines[i]);
	verify_text(m, rev->str, false, &r);
	g_assert_true(r.ok);
	verify_result_clear(&r);
	g_string_free(rev, TRUE);
	g_strfreev(lines);

	free(ok);
	manifest_free(m);
	free(d);
	rmtree(base);
}

static void test_verify_symlinks(void)
{
	char *d = tmpdir();
	char *p = xasprintf("%s/with space", d);
	write_text(p, "hello\n");
	free(p);
	p = xasprintf("%s/ln", d);
	g_assert_cmpint(symlink("with space", p), ==, 0);
	free(p);
	struct manifest *m = NULL;
	char *err = NULL;
	if (dataset_scan(d, &m, &err) < 0)
		g_error("scan: %s", err);
	const char *h = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";
	struct verify_result r;

	char *files = g_strdup_printf("%s  ./with space\n", h);
	verify_text(m, files, false, &r);
	g_assert_true(r.ok);
	verify_result_clear(&r);
	/* asked to compare links, a listing without them misses one */
	verify_text(m, files, true, &r);
	g_assert_cmpstr(r.message, ==, "integrity: 0 different, 1 missing (ln), 0 extra");
	verify_result_clear(&r);

	char *both = g_strdup_printf("%ssymlink with space\t./ln\n", files);
	verify_text(m, both, true, &r);
	g_assert_true(r.ok);
	verify_result_clear(&r);
	char *wrong = g_strdup_printf("%ssymlink elsewhere\t./ln\n", files);
	verify_text(m, wrong, true, &r);
	g_assert_cmpstr(r.message, ==, "integrity: 1 different (ln), 0 missing, 0 extra");
	verify_result_clear(&r);
	/* a vehicle that dereferenced the link (vfat): accepted when links are not compared */
	char *deref = g_strdup_printf("%s%s  ./ln\n", files, h);
	verify_text(m, deref, false, &r);
	g_assert_true(r.ok);
	verify_result_clear(&r);

	g_free(files), g_free(both), g_free(wrong), g_free(deref);
	manifest_free(m);
	rmtree(d);
}

static void test_listing_parse(void)
{
	const char *h = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";
	char *text = g_strdup_printf("%s  ./a b\n"
				     "%s *./star\r\n"
				     "\n"
				     "\\%s  ./back\\\\slash\\nnl\n"
				     "symlink ../t a\t./d/l\n",
				     h, h, h);
	struct listing l = { 0 };
	char *err = NULL;
	g_assert_cmpint(listing_parse(text, strlen(text), &l, &err), ==, 0);
	g_assert_cmpuint(l.n, ==, 4);
	g_assert_cmpstr(l.entries[0].path, ==, "a b");
	/* a CR before the newline in an LF listing ends the name, which may hold one */
	g_assert_cmpstr(l.entries[1].path, ==, "star\r");
	g_assert_cmpstr(l.entries[2].path, ==, "back\\slash\nnl");
	g_assert_true(l.entries[3].symlink);
	g_assert_cmpstr(l.entries[3].path, ==, "d/l");
	g_assert_cmpstr(l.entries[3].target, ==, "../t a");
	char hex[65];
	sha256_hex(l.entries[2].sha256, hex);
	g_assert_cmpstr(hex, ==, h);
	listing_clear(&l);
	g_free(text);
	/* a listing whose every line ends in CRLF (a Windows guest's): the CRs are line ends */
	text = g_strdup_printf("%s  ./a\r\n%s  ./b\r\n", h, h);
	g_assert_cmpint(listing_parse(text, strlen(text), &l, &err), ==, 0);
	g_assert_cmpuint(l.n, ==, 2);
	g_assert_cmpstr(l.entries[0].path, ==, "a");
	g_assert_cmpstr(l.entries[1].path, ==, "b");
	listing_clear(&l);
	g_free(text);

	const char *bad = "ok\nnot a hash line\n";
	g_assert_cmpint(listing_parse(bad, strlen(bad), &l, &err), ==, -1);
	g_assert_nonnull(strstr(err, "line 1"));
	free(err);
	listing_clear(&l);

	char *cmd = manifest_guest_command("/mnt/it's", true, false);
	g_assert_true(g_str_has_prefix(cmd, "cd -- '/mnt/it'\\''s' && find . -type f -exec "
					    "sha256sum {} + && find . -type l"));
	free(cmd);
}

/* ferry-sum's listing of dir (the build tree's ferry-sum, run with dir as its working directory).
 */
static char *ferry_sum_of(const char *dir)
{
	char *sum = g_build_filename(
	    g_getenv("FERRY_BUILD_DIR") ? g_getenv("FERRY_BUILD_DIR") : ".", "ferry-sum", NULL);
	char *argv[] = { sum, (char *)"-l", NULL };
	char *out = NULL, *errout = NULL;
	int status = -1;
	GError *e = NULL;
	g_assert_true(
	    g_spawn_sync(dir, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &errout, &status, &e));
	g_assert_no_error(e);
	g_assert_cmpint(status, ==, 0);
	g_free(errout);
	g_free(sum);
	return out;
}

/*
 * Verify by XXH3-128 (issue 29): dataset_add_xxh128() gives every file its XXH3-128 from the same
 * read as a SHA-256 that must match; ferry-sum's listing of the tree verifies against it; a
 * flipped byte is "different", naming the file; a manifest without XXH3-128s never passes an
 * XXH3-128 listing; a listing mixing both hashes is refused; and a file whose bytes changed since
 * the manifest (same size) is refused before anything is compared.
 */
static void test_verify_xxh128(void)
{
	char *base = tmpdir(), *d = xasprintf("%s/x", base);
	struct dataset_spec spec = { .files = 6,
				     .size_min = 100,
				     .size_max = 70000,
				     .dist = DATASET_DIST_UNIFORM,
				     .depth = 1,
				     .fanout = 2,
				     .seed = 5 };
	struct manifest *m = gen(&spec, d);
	g_assert_false(manifest_has_xxh128(m));
	char *err = NULL;
	g_assert_cmpint(dataset_add_xxh128(d, m, &err), ==, 0);
	g_assert_true(manifest_has_xxh128(m));

	char *fast = ferry_sum_of(d);
	struct verify_result r;
	verify_text(m, fast, true, &r);
	g_assert_true(r.ok);
	g_assert_cmpint(r.hash, ==, VERIFY_HASH_XXH128);
	g_assert_cmpstr(verify_hash_name(r.hash), ==, "xxh128");
	verify_result_clear(&r);

	/* the SHA-256 listing of the same tree still verifies */
	char *slow = listing_of(m);
	verify_text(m, slow, true, &r);
	g_assert_true(r.ok);
	g_assert_cmpint(r.hash, ==, VERIFY_HASH_SHA256);
	verify_result_clear(&r);

	/* a flipped byte in the landed copy */
	const struct manifest_entry *victim = NULL;
	for (size_t i = 0; i < m->n && !victim; i++)
		if (m->entries[i].type == MANIFEST_FILE)
			victim = &m->entries[i];
	char *copy = xasprintf("%s/copy", base);
	char *cmd = g_strdup_printf("cp -a '%s' '%s'", d, copy);
	g_assert_cmpint(system(cmd), ==, 0);
	char *vp = xasprintf("%s/%s", copy, victim->path);
	int fd = open(vp, O_RDWR);
	unsigned char c;
	g_assert_cmpint(pread(fd, &c, 1, 0), ==, 1);
	c ^= 0x01;
	g_assert_cmpint(pwrite(fd, &c, 1, 0), ==, 1);
	close(fd);
	char *bad = ferry_sum_of(copy);
	verify_text(m, bad, true, &r);
	g_assert_false(r.ok);
	g_assert_cmpuint(r.different, ==, 1);
	g_assert_cmpstr(r.first_different[0], ==, victim->path);
	verify_result_clear(&r);

	/* a manifest without the XXH3-128s: every file of an XXH3-128 listing differs */
	char *yd = xasprintf("%s/y", base);
	struct manifest *plain = gen(&spec, yd);
	verify_text(plain, fast, true, &r);
	g_assert_false(r.ok);
	g_assert_cmpuint(r.different, ==, spec.files);
	verify_result_clear(&r);

	/* one listing, one hash */
	char *mixed = g_strconcat(fast, slow, NULL);
	struct listing l = { 0 };
	g_assert_cmpint(listing_parse(mixed, strlen(mixed), &l, &err), ==, -1);
	g_assert_nonnull(strstr(err, "a sha256 line in a xxh128 listing"));
	free(err);
	err = NULL;
	listing_clear(&l);

	/* the command: ferry-sum where the guest has it, else the SHA-256 finds */
	char *gc = manifest_guest_command("/mnt/l", true, true);
	g_assert_cmpstr(gc, ==,
			"cd -- '/mnt/l' && if command -v ferry-sum >/dev/null 2>&1; then "
			"ferry-sum -l; else find . -type f -exec sha256sum {} + && find . -type l "
			"-exec sh -c 'for l; do printf \"symlink %s\\t%s\\n\" \"$(readlink "
			"\"$l\")\" \"$l\"; done' sh {} +; fi");
	free(gc);

	/* the host's file changed since the manifest (same size): refused */
	char *zd = xasprintf("%s/z", base);
	struct manifest *m2 = gen(&spec, zd);
	char *zp = xasprintf("%s/%s", zd, victim->path);
	fd = open(zp, O_RDWR);
	g_assert_cmpint(pread(fd, &c, 1, 0), ==, 1);
	c ^= 0x01;
	g_assert_cmpint(pwrite(fd, &c, 1, 0), ==, 1);
	close(fd);
	g_assert_cmpint(dataset_add_xxh128(zd, m2, &err), ==, -1);
	g_assert_nonnull(strstr(err, "changed since its manifest"));
	g_assert_nonnull(strstr(err, victim->path));
	free(err);

	free(zd), free(zp), free(yd), free(vp), free(copy), free(d);
	g_free(cmd), g_free(mixed), g_free(fast), g_free(slow), g_free(bad);
	manifest_free(m), manifest_free(plain), manifest_free(m2);
	rmtree(base);
}

static void test_manifest_roundtrip(void)
{
	char *d = tmpdir();
	char *path = xasprintf("%s/m.json", d);
	struct manifest *m = manifest_new();
	unsigned char sha[32];
	for (int i = 0; i < 32; i++)
		sha[i] = (unsigned char)i;
	m->spec = xstrdup("ferry-dataset/1 test");
	manifest_add(m, "z", MANIFEST_FILE, 123, sha, NULL);
	manifest_add(m, "a dir", MANIFEST_DIR, 0, NULL, NULL);
	manifest_add(m, "a dir/l", MANIFEST_SYMLINK, 3, NULL, "../z");
	manifest_add(m, "tab\there", MANIFEST_FILE, 0, sha, NULL);
	manifest_add_skip(m, "fifo", "fifo: not a regular file");
	char *err = NULL;
	g_assert_cmpint(manifest_finish(m, &err), ==, 0);
	g_assert_cmpstr(m->entries[0].path, ==, "a dir");
	g_assert_cmpuint(m->files, ==, 2);
	g_assert_cmpuint(m->bytes, ==, 123);
	size_t len;
	char *canon = manifest_canonical(m, &len);
	g_assert_cmpstr(
	    canon, ==,
	    "dir\t0\t-\ta dir\n"
	    "symlink\t4\t../z\ta dir/l\n"
	    "file\t0\t000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\t"
	    "tab\\there\n"
	    "file\t123\t000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\t"
	    "z\n");
	free(canon);
	g_assert_cmpint(manifest_save(m, path, &err), ==, 0);

	struct manifest *r = NULL;
	if (manifest_load(path, &r, &err) < 0)
		g_error("load: %s", err);
	g_assert_true(r->complete);
	g_assert_cmpmem(r->digest, 32, m->digest, 32);
	g_assert_cmpstr(r->spec, ==, m->spec);
	g_assert_cmpuint(r->n, ==, 4);
	g_assert_cmpstr(manifest_find(r, "a dir/l")->target, ==, "../z");
	g_assert_cmpuint(r->n_skipped, ==, 1);
	g_assert_cmpstr(r->skipped[0].reason, ==, "fifo: not a regular file");
	manifest_free(r);

	/* an edited entry no longer matches the digest */
	size_t n;
	char *text = slurp(path, &n);
	char *at = strstr(text, "\"size\": 123");
	g_assert_nonnull(at);
	at[8] = '4';
	write_text(path, text);
	g_assert_cmpint(manifest_load(path, &r, &err), ==, -1);
	g_assert_nonnull(strstr(err, "digest"));
	free(err);
	free(text);

	/* a duplicate path is refused */
	manifest_add(m, "z", MANIFEST_DIR, 0, NULL, NULL);
	g_assert_cmpint(manifest_finish(m, &err), ==, -1);
	g_assert_nonnull(strstr(err, "'z'"));
	free(err);

	manifest_free(m);
	free(path);
	rmtree(d);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/dataset/verify", test_verify);
	g_test_add_func("/dataset/verify-symlinks", test_verify_symlinks);
	g_test_add_func("/dataset/listing-parse", test_listing_parse);
	g_test_add_func("/dataset/verify-xxh128", test_verify_xxh128);
	g_test_add_func("/dataset/manifest-roundtrip", test_manifest_roundtrip);
	return g_test_run();
}
