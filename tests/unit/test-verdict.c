/* SPDX-License-Identifier: MIT */
/*
 * The verdict between two cells of one run (verdict.h) on synthetic results of known
 * distributions (seeded): pairing by block cancels the drift shared by a block, the A/A false
 * "different" rate over 1,000 trials, the detection rate of a 10% difference at a between-boot
 * CV of 5% with 5 blocks, one boot a side capped at inconclusive, Benjamini-Hochberg across a
 * table, throughput's direction, and the words. The measured rates are printed in the log.
 */
#include <glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "results.h"
#include "util.h"
#include "verdict.h"

#define SEED 20261201u

struct rng {
	uint64_t s;
};

static double uniform(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return (double)((r->s * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static double normal(struct rng *r)
{
	double u = uniform(r), v = uniform(r);
	if (u < 1e-300)
		u = 1e-300;
	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

struct design {
	size_t blocks, runs;    /* blocks, runs per boot */
	double drift;           /* SD of log time of a block (shared by both cells) */
	double between, within; /* SD of log time between boots and between runs of a boot */
	double factor;          /* B's true time / A's */
	bool blocks_known;      /* record block ids */
};

/* Cells "a" and "b" in one results file: in block k each boots once (boot ids 2k-1 and 2k). */
static struct results *synth(struct rng *g, const struct design *d)
{
	struct results *r = results_new();
	struct result_cell *cell[2] = { results_add_cell(r, "vm=a"), results_add_cell(r, "vm=b") };
	for (size_t k = 0; k < d->blocks; k++) {
		double block = d->drift * normal(g);
		for (int c = 0; c < 2; c++) {
			double boot = d->between * normal(g);
			for (size_t i = 0; i < d->runs; i++) {
				struct result_run *run = result_cell_add_run(cell[c], false);
				double t = 2.0 * (c ? d->factor : 1.0) *
					   exp(block + boot + d->within * normal(g));
				run->total = t;
				run->phase[PHASE_TRANSFER] = t;
				run->bytes = 1 << 20;
				run->integrity_ok = true;
				run->boot = (int64_t)(2 * k + (size_t)c + 1);
				run->block = d->blocks_known ? (int64_t)k + 1 : -1;
			}
		}
	}
	return r;
}

static struct verdict judge(const struct results *r, const char *metric)
{
	struct verdict_pair p = { &r->cells[0], &r->cells[1] };
	struct verdict_opts o = { .metric = metric };
	struct verdict v;
	char *err = NULL;
	g_assert_cmpint(verdict_pairs(r, &p, 1, &o, &v, &err), ==, 0);
	g_assert_null(err);
	return v;
}

static bool different(const struct verdict *v)
{
	return v->kind == VERDICT_A_BETTER || v->kind == VERDICT_B_BETTER;
}

/* Over `trials` seeded runs of design d, how many verdicts are of kind k. */
static size_t count_kind(const struct design *d, size_t trials,
			 bool (*pred)(const struct verdict *))
{
	struct rng g = { SEED };
	size_t hits = 0;
	for (size_t t = 0; t < trials; t++) {
		struct results *r = synth(&g, d);
		struct verdict v = judge(r, NULL);
		hits += pred(&v);
		verdict_clear(&v);
		results_free(r);
	}
	return hits;
}

static bool a_better(const struct verdict *v)
{
	return v->kind == VERDICT_A_BETTER;
}

/* A/A: identical configurations are called different in at most 5% of 1,000 trials. */
static void test_aa_rate(void)
{
	struct design d = { .blocks = 5,
			    .runs = 3,
			    .drift = 0.10,
			    .between = 0.05,
			    .within = 0.03,
			    .factor = 1.0,
			    .blocks_known = true };
	size_t n = count_kind(&d, 1000, different);
	g_test_message("A/A, 5 blocks x 3 runs, between-boot 5%%, drift 10%%: %zu of 1000 called "
		       "different",
		       n);
	g_assert_cmpuint(n, <=, 50);
}

/* A 10% difference at a between-boot CV of 5%: how often it is found by the number of blocks.
 * A two-sided 5% test on k paired boot means has k - 1 degrees of freedom: at 5 blocks it finds
 * the difference in about 3 of 5 trials (printed), and in at least 80% from 8 blocks on.
 * 80% at 5 blocks is out of reach of any test that keeps the A/A rate at 5% on this design: with
 * the variance of the paired difference known exactly (a z test, infinite degrees of freedom)
 * the power is 81%, and with it pooled over m independent pairs of 4 degrees of freedom each it
 * is 57% (m = 1), 71% (2), 76% (4), 79% (8), 80% (16) (20,000 seeded trials of this design in a
 * simulation, issue 23's note). Pooling needs the pairs' variances equal, which the quickstart's
 * cells are not (their variance of the log total across boots went from 0.016 to 0.17 in one
 * run on a loaded host), so it is not built. */
static void test_power(void)
{
	size_t found[11] = { 0 };
	for (size_t k = 5; k <= 10; k++) {
		struct design d = { .blocks = k,
				    .runs = 3,
				    .drift = 0.10,
				    .between = 0.05,
				    .within = 0.03,
				    .factor = 1.10,
				    .blocks_known = true };
		found[k] = count_kind(&d, 1000, a_better);
		g_test_message("10%% slower B, %zu blocks x 3 runs, between-boot 5%%, drift 10%%: "
			       "found in %zu of 1000",
			       k, found[k]);
	}
	for (size_t k = 6; k <= 10; k++)
		g_assert_cmpuint(found[k], >=, found[k - 1]);
	g_assert_cmpuint(found[8], >=, 800);
}

/* Without block ids the same data is unpaired: the drift of the blocks is noise again, and the
 * paired design finds more of the same difference. */
static void test_pairing_cancels_drift(void)
{
	struct design d = { .blocks = 5,
			    .runs = 3,
			    .drift = 0.10,
			    .between = 0.05,
			    .within = 0.03,
			    .factor = 1.10,
			    .blocks_known = false };
	size_t unpaired = count_kind(&d, 300, a_better);
	d.blocks_known = true;
	size_t paired = count_kind(&d, 300, a_better);
	g_test_message("10%% slower B found: paired %zu, unpaired %zu of 300", paired, unpaired);
	g_assert_cmpuint(paired, >, unpaired + 60);

	struct rng g = { SEED };
	struct results *r = synth(&g, &d);
	struct verdict v = judge(r, NULL);
	g_assert_true(v.paired);
	g_assert_cmpuint(v.boots_a, ==, 5);
	g_assert_cmpuint(v.runs_b, ==, 15);
	verdict_clear(&v);
	results_free(r);
	d.blocks_known = false;
	g = (struct rng){ SEED };
	r = synth(&g, &d);
	v = judge(r, NULL);
	g_assert_false(v.paired);
	g_assert_cmpuint(v.boots_a, ==, 5);
	verdict_clear(&v);
	results_free(r);
}

/* One boot each: the runs share their boot's luck, so the verdict is never "different". */
static void test_one_boot_inconclusive(void)
{
	struct design d = { .blocks = 1,
			    .runs = 6,
			    .between = 0.05,
			    .within = 0.001,
			    .factor = 1.5,
			    .blocks_known = true };
	struct rng g = { SEED };
	struct results *r = synth(&g, &d);
	struct verdict v = judge(r, NULL);
	g_assert_cmpint(v.kind, ==, VERDICT_INCONCLUSIVE);
	g_assert_false(v.paired);
	g_assert_nonnull(v.note);
	g_assert_nonnull(strstr(v.note, "between-boot variance is unknown"));
	_cleanup_free_ char *text = verdict_text(&v, "a", "b");
	g_assert_nonnull(strstr(text, "a vs b: inconclusive (need ~"));
	verdict_clear(&v);
	results_free(r);
}

/* Many blocks of quiet identical cells: indistinguishable, and said so. */
static void test_indistinguishable(void)
{
	struct design d = { .blocks = 10,
			    .runs = 2,
			    .drift = 0.2,
			    .between = 0.01,
			    .within = 0.01,
			    .factor = 1.0,
			    .blocks_known = true };
	struct rng g = { SEED };
	struct results *r = synth(&g, &d);
	struct verdict v = judge(r, NULL);
	g_assert_cmpint(v.kind, ==, VERDICT_SAME);
	g_assert_cmpfloat(v.gain_low, >, -0.05);
	g_assert_cmpfloat(v.gain_high, <, 0.05);
	_cleanup_free_ char *text = verdict_text(&v, "a", "b");
	g_assert_nonnull(strstr(text, "a and b are indistinguishable (|change| < 5%) [a faster "
				      "than b by "));
	g_assert_nonnull(strstr(text, ", 95% CI]"));
	verdict_clear(&v);
	results_free(r);
}

/* The winner comes first; for a throughput, higher is better. */
static void test_words_and_direction(void)
{
	struct design d = { .blocks = 8,
			    .runs = 2,
			    .drift = 0.05,
			    .between = 0.01,
			    .within = 0.01,
			    .factor = 1.25,
			    .blocks_known = true };
	struct rng g = { SEED };
	struct results *r = synth(&g, &d);
	struct verdict v = judge(r, NULL);
	g_assert_cmpint(v.kind, ==, VERDICT_A_BETTER);
	g_assert_cmpfloat(fabs(v.gain - 0.25), <, 0.03);
	g_assert_cmpfloat(v.gain_low, <, v.gain);
	g_assert_cmpfloat(v.gain_high, >, v.gain);
	_cleanup_free_ char *text = verdict_text(&v, "a", "b");
	g_assert_nonnull(strstr(text, "a is 2"));
	g_assert_nonnull(strstr(text, "% faster than b [95% CI "));
	_cleanup_free_ char *swapped = NULL;
	{
		struct verdict_pair p = { &r->cells[1], &r->cells[0] };
		struct verdict w;
		char *err = NULL;
		g_assert_cmpint(verdict_pairs(r, &p, 1, &(struct verdict_opts){ 0 }, &w, &err), ==,
				0);
		g_assert_cmpint(w.kind, ==, VERDICT_B_BETTER);
		swapped = verdict_text(&w, "b", "a");
		g_assert_nonnull(strstr(swapped, "a is 2"));
		/* the same interval seen from either side */
		g_assert_cmpfloat(fabs((1 + w.gain) * (1 + v.gain) - 1), <, 1e-9);
		verdict_clear(&w);
	}
	g_assert_cmpstr(text, ==, swapped);
	verdict_clear(&v);

	/* throughput: B takes 25% longer, so A's throughput is 25% higher */
	v = judge(r, "throughput");
	g_assert_true(v.higher_better);
	g_assert_cmpint(v.kind, ==, VERDICT_A_BETTER);
	g_assert_cmpfloat(fabs(v.gain - 0.25), <, 0.03);
	_cleanup_free_ char *tt = verdict_text(&v, "a", "b");
	g_assert_nonnull(strstr(tt, "% better than b"));
	verdict_clear(&v);
	results_free(r);
}

/* Benjamini-Hochberg across a table: with 20 A/A pairs and one real difference, no more
 * than the real one is called (seeded), and the real one still is. */
static void test_table_bh(void)
{
	struct rng g = { SEED };
	struct results *rs[21];
	struct verdict_pair p[21];
	for (size_t i = 0; i < 21; i++) {
		struct design d = { .blocks = 5,
				    .runs = 3,
				    .drift = 0.1,
				    .between = 0.05,
				    .within = 0.03,
				    .factor = i == 20 ? 1.5 : 1.0,
				    .blocks_known = true };
		rs[i] = synth(&g, &d);
		p[i] = (struct verdict_pair){ &rs[i]->cells[0], &rs[i]->cells[1] };
	}
	struct verdict v[21];
	char *err = NULL;
	g_assert_cmpint(verdict_pairs(rs[0], p, 21, &(struct verdict_opts){ 0 }, v, &err), ==, 0);
	size_t called = 0;
	for (size_t i = 0; i < 20; i++)
		called += different(&v[i]);
	g_assert_cmpint(v[20].kind, ==, VERDICT_A_BETTER);
	g_test_message("table of 20 A/A pairs and one 50%% difference: %zu A/A called", called);
	g_assert_cmpuint(called, <=, 1);
	for (size_t i = 0; i < 21; i++) {
		verdict_clear(&v[i]);
		results_free(rs[i]);
	}
}

static void test_bad_options(void)
{
	struct results *r = results_new();
	char *err = NULL;
	struct verdict v;
	g_assert_cmpint(
	    verdict_pairs(r, NULL, 0, &(struct verdict_opts){ .confidence = 1.5 }, &v, &err), ==,
	    -1);
	g_assert_nonnull(strstr(err, "confidence"));
	free(err);
	err = NULL;
	g_assert_cmpint(
	    verdict_pairs(r, NULL, 0, &(struct verdict_opts){ .metric = "phase.nope" }, &v, &err),
	    ==, -1);
	g_assert_cmpstr(err, ==, "unknown metric 'phase.nope'");
	free(err);
	results_free(r);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/verdict/aa-rate", test_aa_rate);
	g_test_add_func("/verdict/power", test_power);
	g_test_add_func("/verdict/pairing-cancels-drift", test_pairing_cancels_drift);
	g_test_add_func("/verdict/one-boot-inconclusive", test_one_boot_inconclusive);
	g_test_add_func("/verdict/indistinguishable", test_indistinguishable);
	g_test_add_func("/verdict/words-and-direction", test_words_and_direction);
	g_test_add_func("/verdict/table-bh", test_table_bh);
	g_test_add_func("/verdict/bad-options", test_bad_options);
	return g_test_run();
}
