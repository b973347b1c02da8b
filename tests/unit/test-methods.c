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
#include <sys/stat.h>
#include <unistd.h>

#include "dataset.h"
#include "dataset-plan.h"
#include "fs.h"
#include "methods/archive.h"
#include "keys.h"
#include "methods/method.h"
#include "rules.h"
#include "run.h"
#include "share-ids.h"
#include "util.h"

static void test_shell_quote(void)
{
	char *q = shell_quote("it's a /dir");
	g_assert_cmpstr(q, ==, "'it'\\''s a /dir'");
	free(q);
	q = shell_quote("");
	g_assert_cmpstr(q, ==, "''");
	free(q);
}

static void test_registry(void)
{
	const struct method_ops *a = method_find_name("agent-file");
	const struct method_ops *d = method_find_name("disk-image");
	g_assert_nonnull(a);
	g_assert_nonnull(d);
	g_assert_cmpstr(a->name, ==, "agent-file");
	g_assert_cmpstr(d->name, ==, "disk-image");
	g_assert_nonnull(a->transfer);
	g_assert_nonnull(d->verify); /* in_place verifies on the mounted image */
}

/* ---- what each method declares (its options, needs and rules) and what reads it ---- */

/* Every registry line names the method's own file's name; summaries, option tables and rules
 * are well-formed; a disk-kind need says why. */
static void test_declared(void)
{
	GHashTable *ids = g_hash_table_new(g_str_hash, g_str_equal);
	for (size_t r = 0; r < n_plan_rules; r++)
		g_assert_true(g_hash_table_add(ids, (gpointer)plan_rules[r].id));
	g_assert_cmpuint(method_registry_size, >, 0);
	for (size_t i = 0; i < method_registry_size; i++) {
		const struct method_ops *ops = method_registry[i];
		g_test_message("method %s", ops->name);
		g_assert_cmpstr(plan_method_types[i], ==, ops->name);
		g_assert_true(method_find((int)i) == ops);
		g_assert_true(method_find_name(ops->name) == ops);
		g_assert_true(ops->summary && *ops->summary);
		g_assert_nonnull(ops->transfer);
		if (ops->options) {
			char *err = NULL;
			if (key_table_check(ops->options, &err) < 0)
				g_error("%s: %s", ops->name, err);
			for (size_t k = 0; k < ops->options->n_keys; k++)
				g_assert_null(
				    key_find(&plan_method_keys, ops->options->keys[k].name));
		}
		g_assert_true(!ops->needs.disk_kinds == !ops->needs.disk_why);
		for (size_t r = 0; r < ops->n_rules; r++) {
			const struct plan_rule *rule = &ops->rules[r];
			g_assert_true(g_hash_table_add(ids, (gpointer)rule->id));
			g_assert_true(rule->scope == RULE_METHOD || rule->scope == RULE_CELL);
			g_assert_true(rule->checks && *rule->checks && rule->check);
			g_assert_true(!(rule->flags & RULE_AT_RUN) || rule->kind == RULE_ERROR);
		}
	}
	g_assert_null(plan_method_types[method_registry_size]);
	g_hash_table_destroy(ids);
}

/* The keys methods.NAME has in a schema: type, archive and every method's options, each with
 * its help and default from the method's own table. */
static void check_schema_methods(json_t *schema)
{
	json_t *props = json_object_get(
	    json_object_get(json_object_get(json_object_get(schema, "properties"), "methods"),
			    "additionalProperties"),
	    "properties");
	g_assert_nonnull(props);
	size_t want = plan_method_keys.n_keys;
	g_assert_nonnull(json_object_get(props, "type"));
	g_assert_nonnull(json_object_get(props, "archive"));
	GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);
	for (size_t i = 0; i < method_registry_size; i++) {
		const struct key_table *t = method_registry[i]->options;
		for (size_t k = 0; t && k < t->n_keys; k++) {
			const struct key_def *d = &t->keys[k];
			json_t *p = json_object_get(props, d->name);
			g_assert_nonnull(p);
			if (g_hash_table_add(seen, (gpointer)d->name))
				want++;
			/* one method's key: exactly its help and default */
			if (!json_object_get(p, "anyOf") || json_object_get(p, "description")) {
				g_assert_cmpstr(
				    json_string_value(json_object_get(p, "description")), ==,
				    d->help);
				json_t *def = json_object_get(p, "default");
				g_assert_true(!def == !d->def);
			}
		}
	}
	g_assert_cmpuint(json_object_size(props), ==, want);
	/* and the type's description names every method with its summary */
	const char *type_doc =
	    json_string_value(json_object_get(json_object_get(props, "type"), "description"));
	for (size_t i = 0; i < method_registry_size; i++) {
		char *one = g_strdup_printf("%s (%s)", method_registry[i]->name,
					    method_registry[i]->summary);
		g_assert_nonnull(strstr(type_doc, one));
		g_free(one);
	}
	g_hash_table_destroy(seen);
}

static void test_schema_options(void)
{
	json_t *s = key_schema();
	check_schema_methods(s);
	json_decref(s);
	/* the committed schema (tests/docs-sync.sh checks it is what `ferry schema` prints) */
	const char *src = g_getenv("FERRY_SOURCE_DIR");
	if (!src) {
		g_test_skip("FERRY_SOURCE_DIR is not set");
		return;
	}
	char *path = g_build_filename(src, "schema", "ferry-plan.schema.json", NULL);
	json_error_t e;
	json_t *committed = json_load_file(path, 0, &e);
	if (!committed)
		g_error("%s: %s", path, e.text);
	check_schema_methods(committed);
	json_decref(committed);
	g_free(path);
}

/* roff as key_man() writes names: '-' is '\-' */
static char *roff(const char *s)
{
	GString *g = g_string_new(NULL);
	for (; *s; s++) {
		if (*s == '-')
			g_string_append(g, "\\-");
		else
			g_string_append_c(g, *s);
	}
	return g_string_free(g, FALSE);
}

/* The methods.NAME section of a man page's PLAN KEYS: type, archive, then each method's options
 * in the registry's order, each saying the one type it goes with. */
static void check_man_methods(const char *man)
{
	const char *sec = strstr(man, ".SS \"methods.NAME\"\n");
	g_assert_nonnull(sec);
	const char *end = strstr(sec + 1, ".SS ");
	g_assert_nonnull(end);
	char *text = g_strndup(sec, (gsize)(end - sec));
	const char *at = text;
	for (int pass = 0; pass < 2; pass++) {
		const char *name = pass ? "archive" : "type";
		char *b = g_strdup_printf(".B %s\n", name);
		at = strstr(at, b);
		g_assert_nonnull(at);
		g_free(b);
	}
	size_t n_b = 2;
	for (size_t i = 0; i < method_registry_size; i++) {
		const struct method_ops *ops = method_registry[i];
		char *type = roff(ops->name);
		for (size_t k = 0; ops->options && k < ops->options->n_keys; k++) {
			const struct key_def *d = &ops->options->keys[k];
			char *rn = roff(d->name), *rh = roff(d->help);
			char *b = g_strdup_printf(".B %s\n", rn);
			at = strstr(at, b);
			g_assert_nonnull(at);
			const char *eol = strchr(at + strlen(b), '\n');
			char *para = g_strndup(at, (gsize)(eol - at));
			g_assert_nonnull(strstr(para, rh));
			char *only = g_strdup_printf("Only with type \\fB%s\\fR.", type);
			g_assert_nonnull(strstr(para, only));
			n_b++;
			g_free(only);
			g_free(para);
			g_free(b);
			g_free(rn);
			g_free(rh);
		}
		g_free(type);
	}
	/* nothing else */
	size_t count = 0;
	for (const char *p = text; (p = strstr(p, "\n.B ")); p++)
		count++;
	g_assert_cmpuint(count, ==, n_b);
	g_free(text);
}

static void test_man_options(void)
{
	char *man = key_man();
	check_man_methods(man);
	free(man);
	const char *src = g_getenv("FERRY_SOURCE_DIR");
	if (!src) {
		g_test_skip("FERRY_SOURCE_DIR is not set");
		return;
	}
	char *path = g_build_filename(src, "ferry.1", NULL), *page = NULL;
	g_assert_true(g_file_get_contents(path, &page, NULL, NULL));
	check_man_methods(page);
	g_free(page);
	g_free(path);
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

/*
 * Issue 24 class 2, what share.c asks of the machine: a 9p share the guest may write (mode move,
 * an archive) is in accessmode mapped, a read-only one passthrough; a virtiofs move's staged
 * copy belongs to SHARE_IDS_BASE (ferry-virtiofsd's namespace root), never to root.
 */
static void test_share_modes(void)
{
	char *base = g_dir_make_tmp("ferry-test-share-XXXXXX", NULL);
	g_chmod(base, 0755);
	char *src = g_build_filename(base, "ds", NULL),
	     *runs = g_build_filename(base, "runs", NULL);
	struct dataset_spec spec = { .files = 2, .size_min = 10, .size_max = 10, .seed = 3 };
	struct dataset_gen_opts go = { .no_sync = true };
	struct manifest *m = NULL;
	char *err = NULL;
	if (dataset_generate(&spec, src, &go, &m, &err) < 0)
		g_error("%s", err);
	g_mkdir(runs, 0755);
	g_setenv("FERRY_RUN_DIR", runs, TRUE);
	struct run *run = run_open(&err);
	g_assert_nonnull(run);
	static const struct {
		const char *driver, *mode, *archive;
		enum share_mode want;
		bool readonly;
	} cases[] = {
		{ "9p", "copy", NULL, SHARE_MODE_PASSTHROUGH, true },
		{ "9p", "move", NULL, SHARE_MODE_MAPPED, false },
		{ "9p", "copy", "tar", SHARE_MODE_MAPPED, false },
		{ "virtiofs", "move", NULL, SHARE_MODE_PASSTHROUGH, false },
	};
	struct plan_dataset pds = { 0 };
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct plan_method pm;
		g_assert_cmpint(plan_method_init(&pm, "s", "share"), ==, 0);
		g_assert_cmpint(plan_method_set(&pm, "driver", cases[i].driver, &err), ==, 0);
		g_assert_cmpint(plan_method_set(&pm, "mode", cases[i].mode, &err), ==, 0);
		if (cases[i].archive)
			pm.archive.format = PLAN_ARCHIVE_TAR;
		struct plan_cell cell = { .id = (char *)"cell", .method = &pm, .dataset = &pds };
		struct method_ctx ctx = { .cell = &cell,
					  .method = &pm,
					  .pds = &pds,
					  .run = run,
					  .dataset_dir = src,
					  .manifest = m };
		struct method_boot_needs n = { 0 };
		const struct method_ops *ops = method_find_name("share");
		g_assert_cmpint(ops->add_devices(&ctx, &n), ==, 0);
		g_assert_cmpint(n.share_mode, ==, cases[i].want);
		g_assert_cmpint(n.share_readonly, ==, cases[i].readonly);
		if (!strcmp(cases[i].driver, "virtiofs") && geteuid() == 0) {
			/* the staged copy for the first run: the one cell directory of the root */
			GDir *gd = g_dir_open(n.share_dir, 0, NULL);
			const char *cell_dir = gd ? g_dir_read_name(gd) : NULL;
			g_assert_nonnull(cell_dir);
			struct stat sb;
			char *data = g_build_filename(n.share_dir, cell_dir, "data", NULL);
			g_dir_close(gd);
			g_assert_cmpint(lstat(data, &sb), ==, 0);
			g_assert_cmpuint(sb.st_uid, ==, SHARE_IDS_BASE);
			g_assert_cmpint(lstat(n.share_dir, &sb), ==, 0);
			g_assert_cmpuint(sb.st_uid, ==, SHARE_IDS_BASE);
			g_free(data);
		}
		if (ops->free_state)
			ops->free_state(&ctx);
		free(n.share_dir), free(n.share_tag);
		plan_method_clear(&pm);
	}
	run_close(run, NULL);
	manifest_free(m);
	rm_tree(base, NULL);
	g_free(src), g_free(runs), g_free(base);
}

/* dd's own report (method_dd_report()): GNU coreutils' and busybox's formats as they print them,
 * and no figure from anything else */
static void test_dd_report(void)
{
	static const struct {
		const char *text;
		uint64_t bytes;
		double seconds;
	} good[] = {
		/* GNU coreutils 9.1, as this host's dd printed them */
		{ "4+0 records in\n4+0 records out\n4194304 bytes (4.2 MB, 4.0 MiB) copied, "
		  "0.00728117 s, 576 MB/s\n",
		  4194304, 0.00728117 },
		{ "1+0 records in\n1+0 records out\n1 byte copied, 0.000121941 s, 8.2 kB/s\n", 1,
		  0.000121941 },
		{ "1+0 records in\n1+0 records out\n512 bytes copied, 0.00014232 s, 3.6 MB/s\n",
		  512, 0.00014232 },
		{ "1+0 records in\n1+0 records out\n1000 bytes (1.0 kB) copied, 9.6283e-05 s, 10.4 "
		  "MB/s\n",
		  1000, 9.6283e-05 },
		{ "1100+0 records in\n1100+0 records out\n1153433600 bytes (1.2 GB, 1.1 GiB) "
		  "copied, "
		  "0.0511917 s, 22.5 GB/s",
		  1153433600, 0.0511917 },
		/* busybox with FEATURE_DD_THIRD_STATUS_LINE (dd_output_status(): "%f seconds") */
		{ "16+0 records in\n16+0 records out\n16777216 bytes (16.0MB) copied, 0.052300 "
		  "seconds, "
		  "320.8MB/s\n",
		  16777216, 0.0523 },
		/* a progress line before the last: the last counts */
		{ "1048576 bytes (1.0 MB, 1.0 MiB) copied, 1 s, 1.0 MB/s\n2097152 bytes (2.1 MB, "
		  "2.0 "
		  "MiB) copied, 2.5 s, 839 kB/s\n",
		  2097152, 2.5 },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(good); i++) {
		uint64_t b = 0;
		double s = 0;
		char *err = NULL;
		g_assert_cmpint(method_dd_report(good[i].text, &b, &s, &err), ==, 0);
		g_assert_cmpuint(b, ==, good[i].bytes);
		g_assert_cmpfloat(s, ==, good[i].seconds);
	}
	static const struct {
		const char *text, *want;
	} bad[] = {
		/* Debian's busybox dd: the records only */
		{ "4+0 records in\n4+0 records out\n", "busybox's dd, built without its third" },
		{ "", "dd printed no" },
		{ NULL, "dd printed no" },
		{ "garbage\n\x01\xff 12 bytes\n", "dd printed no" },
		{ "dd: error writing '/dev/vdb': No space left on device\n", "No space left" },
		{ "4194304 bytes (4,2 MB, 4,0 MiB) copied, 0,00728117 s, 576 MB/s\n",
		  "dd printed no" },
		{ "4194304 bytes copied, Infinity s, 0 B/s\n", "dd printed no" },
		{ "4194304 bytes copied, nan s, 0 B/s\n", "dd printed no" },
		{ "4194304 bytes copied, 0 s, Infinity B/s\n", "in 0 s: no time to divide by" },
		{ "4194304 bytes copied, -1 s, 1 B/s\n", "no time to divide by" },
		{ "4194304 bytes copied 0.5 s\n", "dd printed no" },
		{ "4194304 bytes (4.2 MB copied, 0.5 s, 8 MB/s\n", "dd printed no" },
		{ "99999999999999999999999 bytes copied, 0.5 s, 8 MB/s\n", "dd printed no" },
		{ " 4194304 bytes copied, 0.5 s, 8 MB/s\n", "dd printed no" },
		{ "4194304 bytes copied, 0.5 ms, 8 MB/s\n", "dd printed no" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		uint64_t b = 7;
		double s = 7;
		char *err = NULL;
		g_assert_cmpint(method_dd_report(bad[i].text, &b, &s, &err), ==, -1);
		g_test_message("%s", err);
		g_assert_nonnull(strstr(err, bad[i].want));
		g_assert_cmpuint(b, ==, 7);
		g_assert_cmpfloat(s, ==, 7);
		free(err);
	}
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/methods/shell-quote", test_shell_quote);
	g_test_add_func("/methods/registry", test_registry);
	g_test_add_func("/methods/declared", test_declared);
	g_test_add_func("/methods/schema-options", test_schema_options);
	g_test_add_func("/methods/man-options", test_man_options);
	g_test_add_func("/methods/metrics", test_method_metrics);
	g_test_add_func("/methods/dataset-mapping", test_dataset_mapping);
	g_test_add_func("/methods/guest-support", test_guest_support);
	g_test_add_func("/methods/stream-tar-gz", test_stream_tar_gz);
	g_test_add_func("/methods/stream-cpio-xz", test_stream_cpio_xz);
	g_test_add_func("/methods/stream-zip", test_stream_zip);
	g_test_add_func("/methods/stream-pax", test_stream_pax);
	g_test_add_func("/methods/share-modes", test_share_modes);
	g_test_add_func("/methods/dd-report", test_dd_report);
	return g_test_run();
}
