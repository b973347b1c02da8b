/* SPDX-License-Identifier: MIT */
/*
 * The results file as untrusted input and its one writer: results_parse() limits (size, depth),
 * values quoted with their control characters escaped, results_dump() byte-identical to
 * jansson's dump of the whole tree, and results_check_resume() naming what differs.
 */
#include <glib.h>
#include <string.h>

#include "results.h"
#include "util.h"

static struct results *two_cells(const char *sha)
{
	struct results *r = results_new();
	r->plan.sha256 = xstrdup(sha);
	struct result_cell *c = results_add_cell(r, "dataset=a");
	result_cell_add_axis(c, "dataset", "a");
	c->params = json_pack("{s:{s:s, s:{s:s}}, s:i}", "dataset", "name", "a", "size", "min",
			      "16KiB", "repeat", 3);
	c = results_add_cell(r, "dataset=b");
	result_cell_add_axis(c, "dataset", "b");
	c->params = json_pack("{s:{s:s}}", "dataset", "name", "b");
	return r;
}

/* A version 1 file (tests/golden/results-v1.json, written by the first format) still reads: boot
 * ids unknown, the built-in metric descriptions; written back it is version 2 with the same
 * numbers. */
static void test_version_1(void)
{
	const char *src = g_getenv("FERRY_SOURCE_DIR");
	g_assert_nonnull(src);
	_cleanup_free_ char *path = xasprintf("%s/tests/golden/results-v1.json", src);
	_cleanup_free_ char *err = NULL;
	_cleanup_(results_freep) struct results *r = results_read(path, &err);
	g_assert_null(err);
	g_assert_nonnull(r);
	g_assert_cmpint(r->version, ==, 1);
	g_assert_cmpuint(r->n_cells, ==, 8);
	g_assert_cmpuint(r->cells[0].n_runs, ==, 6);
	for (size_t i = 0; i < r->n_cells; i++)
		for (size_t j = 0; j < r->cells[i].n_runs; j++) {
			g_assert_cmpint(r->cells[i].runs[j].boot, ==, -1);
			g_assert_null(r->cells[i].runs[j].metrics);
		}
	const struct result_metric *m = results_find_metric(r, "total");
	g_assert_nonnull(m);
	g_assert_cmpstr(m->unit, ==, "s");
	g_assert_false(m->higher_better);
	m = results_find_metric(r, "throughput");
	g_assert_nonnull(m);
	g_assert_true(m->higher_better);
	g_assert_nonnull(results_find_metric(r, "phase.transfer"));
	g_assert_cmpfloat(r->cells[0].runs[1].total, ==, 2.85);

	/* written back: the current version, and it reads again */
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	g_assert_cmpint(results_dump(r, f, &err), ==, 0);
	fclose(f);
	g_assert_nonnull(strstr(text, "\"ferry_results\": 2"));
	_cleanup_(results_freep) struct results *back = results_parse(text, len, &err);
	free(text);
	g_assert_null(err);
	g_assert_cmpint(back->version, ==, 2);
	g_assert_cmpuint(back->n_cells, ==, 8);
}

/* A run's verify_hash (issue 29): absent in older files (NULL), written and read back, and a value
 * other than sha256 or xxh128 refused, naming the key. */
static void test_verify_hash(void)
{
	const char *src = g_getenv("FERRY_SOURCE_DIR");
	g_assert_nonnull(src);
	_cleanup_free_ char *path = xasprintf("%s/tests/golden/results-v1.json", src);
	_cleanup_free_ char *err = NULL;
	_cleanup_(results_freep) struct results *r = results_read(path, &err);
	g_assert_nonnull(r);
	for (size_t i = 0; i < r->n_cells; i++)
		for (size_t j = 0; j < r->cells[i].n_runs; j++)
			g_assert_null(r->cells[i].runs[j].verify_hash);
	r->cells[0].runs[0].verify_hash = "xxh128";
	r->cells[0].runs[1].verify_hash = "sha256";
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	g_assert_cmpint(results_dump(r, f, &err), ==, 0);
	fclose(f);
	_cleanup_(results_freep) struct results *back = results_parse(text, len, &err);
	g_assert_null(err);
	g_assert_cmpstr(back->cells[0].runs[0].verify_hash, ==, "xxh128");
	g_assert_cmpstr(back->cells[0].runs[1].verify_hash, ==, "sha256");
	g_assert_null(back->cells[0].runs[2].verify_hash);
	char *at = strstr(text, "\"verify_hash\": \"xxh128\"");
	g_assert_nonnull(at);
	memcpy(at + strlen("\"verify_hash\": \""), "md5sum", 6);
	g_assert_null(results_parse(text, len, &err));
	g_assert_nonnull(strstr(err, "'verify_hash' must be \"sha256\" or \"xxh128\""));
	free(text);
}

static void test_resume_check(void)
{
	_cleanup_(results_freep) struct results *was = two_cells("aaaa");
	_cleanup_(results_freep) struct results *now = two_cells("aaaa");
	_cleanup_free_ char *why = NULL;
	g_assert_cmpint(results_check_resume(was, now, &why), ==, 0);
	g_assert_null(why);

	/* a cell the earlier file has not run yet is fine: it is what --resume runs */
	results_add_cell(now, "dataset=c");
	g_assert_cmpint(results_check_resume(was, now, &why), ==, 0);

	/* same names, another size: the parameter is named, with both values */
	json_object_set_new(
	    json_object_get(json_object_get(now->cells[0].params, "dataset"), "size"), "min",
	    json_string("32KiB"));
	g_assert_cmpint(results_check_resume(was, now, &why), ==, -1);
	g_assert_nonnull(strstr(why, "cell \"dataset=a\": parameter 'dataset.size.min' was "
				     "\"16KiB\", now \"32KiB\""));
	g_assert_null(strstr(why, "plan differs"));
	free(why);
	why = NULL;

	/* another plan file, and a cell the current plan does not have */
	free(now->plan.sha256);
	now->plan.sha256 = xstrdup("bbbb");
	free(now->cells[1].id);
	now->cells[1].id = xstrdup("dataset=B");
	g_assert_cmpint(results_check_resume(was, now, &why), ==, -1);
	g_assert_nonnull(strstr(why, "the plan differs (sha256 aaaa..., now bbbb...)"));
	g_assert_nonnull(strstr(why, "cell \"dataset=b\": not a cell of the current plan"));
	free(why);
	why = NULL;

	/* a parameter only the current plan has */
	_cleanup_(results_freep) struct results *more = two_cells("aaaa");
	json_object_set_new(more->cells[1].params, "fresh", json_true());
	g_assert_cmpint(results_check_resume(was, more, &why), ==, -1);
	g_assert_nonnull(strstr(why, "parameter 'fresh' was absent, now true"));
}

static void test_limits(void)
{
	_cleanup_free_ char *err = NULL;
	/* too large: refused before a byte is looked at */
	g_assert_null(results_parse("{}", (size_t)RESULTS_MAX_BYTES + 1, &err));
	g_assert_nonnull(strstr(err, "too large"));
	free(err);
	err = NULL;

	/* nested deeper than any results file: refused before jansson recurses */
	GString *deep = g_string_new("{\"ferry_results\": 1, \"cells\": [], \"x\": ");
	for (int i = 0; i < 100000; i++)
		g_string_append_c(deep, '[');
	g_assert_null(results_parse(deep->str, deep->len, &err));
	g_assert_nonnull(strstr(err, "nested more than 32 levels"));
	g_string_free(deep, TRUE);
	free(err);
	err = NULL;

	/* brackets inside strings are not nesting */
	const char *ok = "{\"ferry_results\": 1, \"plan\": {\"name\": \"[[[[[[[[[[[[[[[[[[[[[[[[[["
			 "[[[[[[[[[[[[[[[[[[\\\"[[[[\"}, \"cells\": []}";
	struct results *r = results_parse(ok, strlen(ok), &err);
	g_assert_nonnull(r);
	results_free(r);

	/* values from the file are quoted with control characters escaped */
	const char *esc = "{\"ferry_results\": 1, \"cells\": [{\"id\": \"a\", \"status\": "
			  "\"p\\u001b[2J\\nx\"}]}";
	g_assert_null(results_parse(esc, strlen(esc), &err));
	g_assert_cmpstr(err, ==,
			"cells[0]: 'status' is 'p\\x1b[2J\\x0ax', expected one of: pending, "
			"passed, failed, error, skipped");
}

/* The streamed writer gives exactly jansson's dump of the whole tree. */
static void test_dump_matches_tree(void)
{
	for (int cells = 0; cells <= 2; cells++) {
		_cleanup_(results_freep) struct results *r = two_cells("aaaa");
		r->n_cells = (size_t)cells; /* the rest are freed with n_cells restored below */
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		_cleanup_free_ char *err = NULL;
		g_assert_cmpint(results_dump(r, f, &err), ==, 0);
		fclose(f);
		json_t *tree = results_to_json(r);
		char *want = json_dumps(tree, JSON_INDENT(2) | JSON_REAL_PRECISION(17) |
						  JSON_PRESERVE_ORDER);
		json_decref(tree);
		g_assert_cmpuint(len, ==, strlen(want) + 1);
		g_assert_cmpmem(text, len - 1, want, strlen(want));
		g_assert_cmpint(text[len - 1], ==, '\n');
		free(want);
		free(text);
		r->n_cells = 2;
	}
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/results-reader/resume-check", test_resume_check);
	g_test_add_func("/results-reader/version-1", test_version_1);
	g_test_add_func("/results-reader/verify-hash", test_verify_hash);
	g_test_add_func("/results-reader/limits", test_limits);
	g_test_add_func("/results-reader/dump-matches-tree", test_dump_matches_tree);
	return g_test_run();
}
