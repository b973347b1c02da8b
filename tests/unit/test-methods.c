/* SPDX-License-Identifier: MIT */
/*
 * What the methods build on, without a guest: the method registry, shell quoting, the dataset
 * specification a method receives (from the plan's dataset entry), what the built-in guest can
 * unpack, and the archive stream that agent-file sends in agent chunks (read back with
 * libarchive and compared with the manifest, byte for byte).
 */
#include <archive.h>
#include <archive_entry.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <openssl/evp.h>
#include <string.h>

#include "dataset.h"
#include "dataset-plan.h"
#include "fs.h"
#include "methods/archive.h"
#include "methods/method.h"
#include "util.h"

static void test_shell_quote(void)
{
	char *q = method_shell_quote("it's a /dir");
	g_assert_cmpstr(q, ==, "'it'\\''s a /dir'");
	free(q);
	q = method_shell_quote("");
	g_assert_cmpstr(q, ==, "''");
	free(q);
}

static void test_registry(void)
{
	const struct method_ops *a = method_find(PLAN_METHOD_AGENT_FILE);
	const struct method_ops *d = method_find(PLAN_METHOD_DISK_IMAGE);
	g_assert_nonnull(a);
	g_assert_nonnull(d);
	g_assert_cmpstr(a->name, ==, "agent-file");
	g_assert_cmpstr(d->name, ==, "disk-image");
	g_assert_nonnull(a->transfer);
	g_assert_nonnull(d->verify); /* in_place verifies on the mounted image */
}

static void test_dataset_mapping(void)
{
	struct plan_dataset p = {
		.files = 10,
		.size = { .min = 4096, .max = 4096 },
		.dirs = { .depth = 2, .fanout = 3 },
		.content = PLAN_CONTENT_TEXT,
		.seed = 9,
	};
	struct dataset_spec s;
	dataset_spec_from_plan(&p, &s);
	g_assert_cmpuint(s.files, ==, 10);
	g_assert_cmpint(s.dist, ==, DATASET_DIST_FIXED);
	g_assert_cmpuint(s.depth, ==, 2);
	g_assert_cmpuint(s.fanout, ==, 3);
	g_assert_cmpint(s.content, ==, DATASET_CONTENT_TEXT);
	g_assert_cmpuint(s.seed, ==, 9);
	p.size.max = 8192;
	p.size.distribution = PLAN_DIST_LOGNORMAL;
	dataset_spec_from_plan(&p, &s);
	g_assert_cmpint(s.dist, ==, DATASET_DIST_LOGNORMAL);
	char data[] = "/data";
	p.path = data;
	dataset_spec_from_plan(&p, &s);
	g_assert_cmpstr(s.path, ==, "/data");
	g_assert_cmpuint(s.files, ==, 0);
}

static void test_guest_support(void)
{
	struct plan_archive a = { .format = PLAN_ARCHIVE_TAR, .compression = PLAN_COMPRESS_ZSTD };
	char *why = pack_guest_support(&a, true);
	g_assert_nonnull(strstr(why, "zstd"));
	free(why);
	a.compression = PLAN_COMPRESS_LZ4;
	why = pack_guest_support(&a, true);
	g_assert_nonnull(strstr(why, "lz4"));
	free(why);
	a.format = PLAN_ARCHIVE_ZIP;
	a.compression = PLAN_COMPRESS_XZ;
	why = pack_guest_support(&a, true);
	g_assert_nonnull(why);
	free(why);
	a.format = PLAN_ARCHIVE_CPIO;
	g_assert_null(pack_guest_support(&a, true));
	char *cmd = pack_guest_unpack_cmd(&a, "/tmp/a b");
	g_assert_cmpstr(cmd, ==, "unxz -c '/tmp/a b' | cpio -i -d -m 2>/dev/null");
	free(cmd);
}

/* ---- the archive stream, read back ---- */

struct mem {
	GByteArray *bytes;
	size_t chunk;
	size_t n_calls, n_short;
};

static int mem_sink(void *ud, const void *buf, size_t len, char **err)
{
	(void)err;
	struct mem *m = ud;
	g_assert_cmpuint(len, <=, m->chunk);
	g_assert_cmpuint(len, >, 0);
	m->n_short += len < m->chunk;
	m->n_calls++;
	g_byte_array_append(m->bytes, buf, (guint)len);
	return 0;
}

static void roundtrip(const struct plan_archive *a)
{
	g_autofree char *tmp = g_dir_make_tmp("ferry-test-exec-XXXXXX", NULL);
	g_autofree char *dir = g_build_filename(tmp, "data", NULL);
	struct dataset_spec spec = {
		.files = 23,
		.size_min = 1,
		.size_max = 70000,
		.dist = DATASET_DIST_UNIFORM,
		.depth = 1,
		.fanout = 3,
		.content = DATASET_CONTENT_RANDOM,
		.seed = 5,
	};
	struct dataset_gen_opts go = { .no_sync = true };
	struct manifest *m = NULL;
	char *err = NULL;
	g_assert_cmpint(dataset_generate(&spec, dir, &go, &m, &err), ==, 0);

	struct mem mem = { .bytes = g_byte_array_new(), .chunk = 4000 };
	int prc = pack_stream(a, dir, m, mem.chunk, mem_sink, &mem, &err);
	if (prc < 0)
		g_test_message("pack_stream: %s", err);
	g_assert_cmpint(prc, ==, 0);
	g_assert_null(err);
	/* every piece is a full agent chunk but the last */
	g_assert_cmpuint(mem.n_short, <=, 1);
	g_assert_cmpuint(mem.n_calls, >, 1);

	struct archive *r = archive_read_new();
	archive_read_support_format_all(r);
	archive_read_support_filter_all(r);
	g_assert_cmpint(archive_read_open_memory(r, mem.bytes->data, mem.bytes->len), ==,
			ARCHIVE_OK);
	struct archive_entry *e;
	size_t files = 0;
	char buf[8192];
	while (archive_read_next_header(r, &e) == ARCHIVE_OK) {
		const char *path = archive_entry_pathname(e);
		g_autofree char *clean = g_strdup(path);
		size_t l = strlen(clean);
		if (l && clean[l - 1] == '/')
			clean[l - 1] = '\0'; /* zip writes directories with a slash */
		const struct manifest_entry *me = manifest_find(m, clean);
		g_assert_nonnull(me);
		if (archive_entry_filetype(e) != AE_IFREG) {
			g_assert_cmpint(me->type, ==, MANIFEST_DIR);
			continue;
		}
		EVP_MD_CTX *h = EVP_MD_CTX_new();
		EVP_DigestInit_ex(h, EVP_sha256(), NULL);
		la_ssize_t n;
		uint64_t size = 0;
		while ((n = archive_read_data(r, buf, sizeof(buf))) > 0) {
			EVP_DigestUpdate(h, buf, (size_t)n);
			size += (uint64_t)n;
		}
		g_assert_cmpint(n, ==, 0);
		unsigned char md[32];
		EVP_DigestFinal_ex(h, md, NULL);
		EVP_MD_CTX_free(h);
		g_assert_cmpuint(size, ==, me->size);
		g_assert_cmpmem(md, 32, me->sha256, 32);
		files++;
	}
	g_assert_cmpuint(files, ==, m->files);
	archive_read_free(r);
	g_byte_array_free(mem.bytes, TRUE);
	manifest_free(m);
	g_assert_cmpint(rm_tree(tmp, NULL), ==, 0);
}

static void test_stream_tar_gz(void)
{
	struct plan_archive a = { .format = PLAN_ARCHIVE_TAR, .compression = PLAN_COMPRESS_GZIP };
	roundtrip(&a);
}

static void test_stream_cpio_xz(void)
{
	struct plan_archive a = { .format = PLAN_ARCHIVE_CPIO,
				  .compression = PLAN_COMPRESS_XZ,
				  .level = 1 };
	roundtrip(&a);
}

static void test_stream_zip(void)
{
	struct plan_archive a = { .format = PLAN_ARCHIVE_ZIP, .compression = PLAN_COMPRESS_GZIP };
	roundtrip(&a);
}

static void test_stream_pax(void)
{
	struct plan_archive a = { .format = PLAN_ARCHIVE_PAX };
	roundtrip(&a);
}

/* method_metric() and method_rate() fill the run's metrics; every name a method reports is a
 * described metric (the metric table, metrics.h), and no rate comes out of a zero time or size. */
static void test_method_metrics(void)
{
	struct method_ctx ctx = { 0 };
	method_rate(&ctx, "write_throughput", 10 << 20, 0.0);
	method_rate(&ctx, "write_throughput", 0, 1.0);
	method_metric(&ctx, "read_throughput", 1.0 / 0.0);
	g_assert_null(ctx.metrics);
	method_rate(&ctx, "write_throughput", 10000000, 2.0);
	method_rate(&ctx, "read_throughput", 10000000, 0.5);
	method_metric(&ctx, "read_throughput", 4e6); /* replaces */
	g_assert_cmpuint(json_object_size(ctx.metrics), ==, 2);
	g_assert_cmpfloat(json_real_value(json_object_get(ctx.metrics, "write_throughput")), ==,
			  5e6);
	g_assert_cmpfloat(json_real_value(json_object_get(ctx.metrics, "read_throughput")), ==,
			  4e6);
	const char *k;
	json_t *v;
	json_object_foreach(ctx.metrics, k, v)
	{
		const struct metric_def *d = result_metric_def_find(k);
		g_assert_nonnull(d);
		g_assert_cmpstr(d->unit, ==, "B/s");
		g_assert_true(d->higher_better);
	}
	g_assert_null(result_metric_def_find("throughput")); /* built in, not per run */
	json_decref(ctx.metrics);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/methods/shell-quote", test_shell_quote);
	g_test_add_func("/methods/registry", test_registry);
	g_test_add_func("/methods/metrics", test_method_metrics);
	g_test_add_func("/methods/dataset-mapping", test_dataset_mapping);
	g_test_add_func("/methods/guest-support", test_guest_support);
	g_test_add_func("/methods/stream-tar-gz", test_stream_tar_gz);
	g_test_add_func("/methods/stream-cpio-xz", test_stream_cpio_xz);
	g_test_add_func("/methods/stream-zip", test_stream_zip);
	g_test_add_func("/methods/stream-pax", test_stream_pax);
	return g_test_run();
}
