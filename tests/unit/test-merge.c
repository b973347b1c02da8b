/* SPDX-License-Identifier: MIT */
/*
 * `ferry merge` (results/merge.h): shards of one plan joined in expansion order with their
 * provenance kept per shard; another plan, a cell twice and a shard twice are refused; the
 * merged file reads back with its origins.
 */
#include <glib.h>
#include <string.h>

#include "merge.h"
#include "results.h"
#include "util.h"

static const char plan_text[] = "ferry: 1\nname: m\nmatrix: {dataset: [a, b, c, d, e, f, g]}\n";
#define N_CELLS 7

/* The results file of shard k of n (0/0: every cell) as `ferry run` writes it: the cells i of
 * the expansion with i % n == k - 1, in order, run on host "host-K". */
static struct results *shard(unsigned k, unsigned n, const char *text)
{
	struct results *r = results_new();
	results_set_plan(r, "m", "m.yaml", text, strlen(text));
	r->shard_k = k;
	r->shard_n = n;
	r->provenance.hostname = g_strdup_printf("host-%u", k);
	r->provenance.qemu_version = g_strdup_printf("7.%u.0", k);
	r->provenance.started_ms = 1000000 + 10 * k;
	r->provenance.finished_ms = 2000000 - 10 * k;
	results_add_dataset(r, "a", NULL, json_pack("{s:i}", "files", 1));
	for (size_t i = 0; i < N_CELLS; i++) {
		if (n && i % n != k - 1)
			continue;
		char id[32];
		snprintf(id, sizeof(id), "dataset=%c", (char)('a' + i));
		struct result_cell *c = results_add_cell(r, id);
		result_cell_add_axis(c, "dataset", id + 8);
		c->params = json_pack("{s:s}", "dataset", id + 8);
		c->status = STATUS_PASSED;
		for (int j = 0; j < 3; j++) {
			struct result_run *run = result_cell_add_run(c, false);
			run->phase[PHASE_TRANSFER] = 1.0 + (double)i + 0.1 * j;
			run->total = result_run_total(run);
			run->integrity_ok = true;
			run->boot =
			    (int64_t)(r->n_cells); /* one boot per cell, from 1 in each file */
		}
		results_cell_compute_stats(c);
	}
	return r;
}

static void free_all(struct results **in, size_t n)
{
	for (size_t i = 0; i < n; i++)
		results_free(in[i]);
}

/* Three shards given out of order merge into the cells of the whole plan, in expansion order,
 * each knowing its shard and host. */
static void test_three_shards(void)
{
	struct results *in[3] = { shard(3, 3, plan_text), shard(1, 3, plan_text),
				  shard(2, 3, plan_text) };
	const char *names[3] = { "s3.json", "s1.json", "s2.json" };
	char *err = NULL, *warning = NULL;
	struct results *m = results_merge(in, names, 3, &warning, &err);
	g_assert_null(err);
	g_assert_nonnull(m);
	g_assert_null(warning);
	for (size_t i = 0; i < 3; i++)
		g_assert_cmpuint(in[i]->n_cells, ==, 0); /* moved out */
	free_all(in, 3);

	struct results *whole = shard(0, 0, plan_text);
	g_assert_cmpuint(m->n_cells, ==, whole->n_cells);
	g_assert_cmpstr(m->plan.sha256, ==, whole->plan.sha256);
	g_assert_cmpuint(m->shard_n, ==, 0);
	g_assert_cmpuint(m->n_origins, ==, 3);
	for (unsigned o = 0; o < 3; o++) {
		g_assert_cmpuint(m->origins[o].shard_k, ==, o + 1); /* in shard order */
		g_assert_cmpuint(m->origins[o].shard_n, ==, 3);
		g_autofree char *host = g_strdup_printf("host-%u", o + 1);
		g_assert_cmpstr(m->origins[o].provenance.hostname, ==, host);
	}
	for (size_t i = 0; i < m->n_cells; i++) {
		const struct result_cell *c = &m->cells[i];
		g_assert_cmpstr(c->id, ==, whole->cells[i].id);
		g_assert_true(json_equal(c->params, whole->cells[i].params));
		g_assert_cmpuint(c->n_runs, ==, 3);
		g_assert_cmpfloat(c->stats.total.median, ==, whole->cells[i].stats.total.median);
		g_assert_cmpint(c->origin, >=, 0);
		g_assert_cmpuint(m->origins[c->origin].shard_k, ==, i % 3 + 1);
	}
	/* boot ids stay unique in the file: no two cells of different shards share one */
	for (size_t i = 0; i < m->n_cells; i++)
		for (size_t j = i + 1; j < m->n_cells; j++)
			g_assert_cmpint(m->cells[i].runs[0].boot, !=, m->cells[j].runs[0].boot);
	g_assert_cmpint(results_max_boot(m), ==, N_CELLS);

	/* the top-level provenance: the first shard's, from the earliest start to the latest end */
	g_assert_cmpstr(m->provenance.hostname, ==, "host-1");
	g_assert_cmpint(m->provenance.started_ms, ==, 1000010);
	g_assert_cmpint(m->provenance.finished_ms, ==, 1999990);
	g_assert_cmpuint(m->provenance.n_datasets, ==, 1);

	/* the file reads back with its origins; dumped again it is the same bytes */
	char *text = NULL, *text2 = NULL;
	size_t len = 0, len2 = 0;
	FILE *f = open_memstream(&text, &len);
	g_assert_cmpint(results_dump(m, f, &err), ==, 0);
	fclose(f);
	struct results *back = results_parse(text, len, &err);
	g_assert_null(err);
	g_assert_nonnull(back);
	g_assert_cmpuint(back->n_origins, ==, 3);
	g_assert_cmpstr(back->origins[2].provenance.qemu_version, ==, "7.3.0");
	for (size_t i = 0; i < back->n_cells; i++)
		g_assert_cmpint(back->cells[i].origin, ==, m->cells[i].origin);
	f = open_memstream(&text2, &len2);
	g_assert_cmpint(results_dump(back, f, &err), ==, 0);
	fclose(f);
	g_assert_cmpstr(text, ==, text2);
	free(text);
	free(text2);
	results_free(back);
	results_free(whole);
	results_free(m);
}

/* A merged file merged again with the last shard keeps every shard's origin. */
static void test_merge_of_merged(void)
{
	struct results *a[2] = { shard(1, 3, plan_text), shard(2, 3, plan_text) };
	const char *an[2] = { "s1.json", "s2.json" };
	char *err = NULL, *warning = NULL;
	struct results *m12 = results_merge(a, an, 2, &warning, &err);
	g_assert_nonnull(m12);
	g_assert_nonnull(warning); /* shard 3/3 is missing */
	g_assert_nonnull(strstr(warning, "3/3 not merged"));
	g_clear_pointer(&warning, free);
	free_all(a, 2);

	struct results *b[2] = { m12, shard(3, 3, plan_text) };
	const char *bn[2] = { "s12.json", "s3.json" };
	struct results *m = results_merge(b, bn, 2, &warning, &err);
	g_assert_null(err);
	g_assert_nonnull(m);
	g_assert_cmpuint(m->n_origins, ==, 3);
	g_assert_cmpuint(m->n_cells, ==, N_CELLS);
	for (size_t i = 0; i < m->n_cells; i++) {
		g_autofree char *host = g_strdup_printf("host-%zu", i % 3 + 1);
		g_assert_cmpstr(m->origins[m->cells[i].origin].provenance.hostname, ==, host);
	}
	free(warning);
	free_all(b, 2);
	results_free(m);
}

static void expect_refused(struct results **in, const char **names, size_t n, const char *want)
{
	char *err = NULL;
	struct results *m = results_merge(in, names, n, NULL, &err);
	g_assert_null(m);
	g_assert_nonnull(err);
	if (!strstr(err, want))
		g_error("refusal '%s' does not say '%s'", err, want);
	free(err);
}

static void test_refused(void)
{
	/* another plan */
	struct results *p[2] = { shard(1, 2, plan_text), shard(2, 2, "ferry: 1\nname: other\n") };
	const char *pn[2] = { "a.json", "b.json" };
	expect_refused(p, pn, 2, "b.json: written by another plan than a.json");
	free_all(p, 2);

	/* a cell in two files: the unsharded run and shard 2/3 both hold dataset=b */
	struct results *d[2] = { shard(0, 0, plan_text), shard(2, 3, plan_text) };
	const char *dn[2] = { "all.json", "s2.json" };
	expect_refused(d, dn, 2, "cell 'dataset=b' is in both all.json and s2.json");
	g_assert_cmpuint(d[0]->n_cells, ==, N_CELLS); /* nothing moved */
	free_all(d, 2);

	/* the same shard twice */
	struct results *s[2] = { shard(2, 3, plan_text), shard(2, 3, plan_text) };
	const char *sn[2] = { "x.json", "y.json" };
	expect_refused(s, sn, 2, "x.json and y.json are both shard 2/3");
	free_all(s, 2);

	/* no plan hash */
	struct results *h[1] = { results_new() };
	const char *hn[1] = { "empty.json" };
	expect_refused(h, hn, 1, "empty.json: no plan hash");
	free_all(h, 1);
}

/* The reader: a file without shard and origins (every file before them) reads as 0/0 without
 * origins; a bad shard or an origin that indexes nothing is refused, naming the field. */
static void test_reader(void)
{
	struct results *r = shard(0, 0, plan_text);
	char *text = NULL, *err = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	g_assert_cmpint(results_dump(r, f, &err), ==, 0);
	fclose(f);
	g_assert_null(strstr(text, "\"shard\""));
	g_assert_null(strstr(text, "\"origins\""));
	g_assert_null(strstr(text, "\"origin\""));
	struct results *back = results_parse(text, len, &err);
	g_assert_nonnull(back);
	g_assert_cmpuint(back->shard_n, ==, 0);
	g_assert_cmpuint(back->n_origins, ==, 0);
	g_assert_cmpint(back->cells[0].origin, ==, -1);
	results_free(back);
	free(text);
	results_free(r);

	static const struct {
		const char *doc, *want;
	} bad[] = {
		{ "{\"ferry_results\":1,\"shard\":{\"k\":3,\"n\":2},\"cells\":[]}",
		  "shard: expected 1 <= k <= n" },
		{ "{\"ferry_results\":1,\"shard\":\"1/2\",\"cells\":[]}",
		  "shard: must be an object or null" },
		{ "{\"ferry_results\":1,\"origins\":[{\"shard\":null,\"provenance\":5}],\"cells\":["
		  "]}",
		  "'origins[0].provenance' must be an object" },
		{ "{\"ferry_results\":1,\"cells\":[{\"id\":\"x\",\"status\":\"passed\",\"origin\":"
		  "0}]}",
		  "cells[0]: 'origin' must index 'origins'" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		struct results *b = results_parse(bad[i].doc, strlen(bad[i].doc), &err);
		g_assert_null(b);
		if (!strstr(err, bad[i].want))
			g_error("'%s' gave '%s', expected '%s'", bad[i].doc, err, bad[i].want);
		g_clear_pointer(&err, free);
	}
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/merge/three-shards", test_three_shards);
	g_test_add_func("/merge/merge-of-merged", test_merge_of_merged);
	g_test_add_func("/merge/refused", test_refused);
	g_test_add_func("/merge/reader", test_reader);
	return g_test_run();
}
