/* SPDX-License-Identifier: MIT */
/*
 * `ferry compare` on synthetic results of known distributions (seeded, so every number below is
 * the same on every machine): the false alarm rate on noise with between-boot variance, the
 * detection rate of a 10% slowdown, too few runs, pseudo-replication capped, pairing by
 * parameters, refused comparisons that explain themselves, the lkp rule, the baseline window,
 * and Benjamini-Hochberg itself. The measured rates are printed in the test log.
 */
#include <glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "results.h"
#include "stats.h"
#include "util.h"

#define SEED 20261130u

/* xorshift64* and Box-Muller: a deterministic normal generator */
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

struct shape {
	size_t cells, boots, runs; /* per side: boots, runs per boot */
	double between, within;    /* SD of log time between boots and between runs of a boot */
	double factor;             /* new / baseline true time of cell 0 (1: no change) */
	bool all_cells;            /* factor applies to every cell */
	bool boot_ids;             /* record boot ids (a version 2 file) */
};

static struct results *synth(struct rng *g, const struct shape *s, double factor, int64_t t0)
{
	struct results *r = results_new();
	r->provenance.started_ms = t0;
	r->provenance.qemu_version = xstrdup("7.2.0");
	r->provenance.accelerator = xstrdup("tcg");
	for (size_t c = 0; c < s->cells; c++) {
		_cleanup_free_ char *ds = xasprintf("d%zu", c);
		_cleanup_free_ char *id = xasprintf("dataset=%s,method=m", ds);
		struct result_cell *cell = results_add_cell(r, id);
		result_cell_add_axis(cell, "dataset", ds);
		result_cell_add_axis(cell, "method", "m");
		cell->params = json_pack("{s:{s:s, s:i}, s:{s:s}, s:{s:i}}", "dataset", "name", ds,
					 "files", 10, "method", "name", "m", "run", "repeat", 5);
		cell->status = STATUS_PASSED;
		double f = (c == 0 || s->all_cells) ? factor : 1.0;
		double base = log(10.0 * (double)(c + 1));
		for (size_t b = 0; b < s->boots; b++) {
			double boot = s->between * normal(g);
			for (size_t k = 0; k < s->runs; k++) {
				struct result_run *run = result_cell_add_run(cell, false);
				double t = exp(base + log(f) + boot + s->within * normal(g));
				run->phase[PHASE_TRANSFER] = t;
				run->total = t;
				run->bytes = 1000000;
				run->files = 10;
				run->integrity_ok = true;
				run->boot = s->boot_ids ? (int64_t)b + 1 : -1;
			}
		}
		results_cell_compute_stats(cell);
	}
	return r;
}

static const struct cmp_row *row_of(const struct comparison *c, const char *cell,
				    const char *metric)
{
	for (size_t i = 0; i < c->n_rows; i++)
		if (STREQ(c->rows[i].cell, cell) && STREQ(c->rows[i].metric, metric))
			return &c->rows[i];
	return NULL;
}

static struct comparison *run_compare(const struct results *a, const struct results *b,
				      const struct compare_opts *o)
{
	const struct results *base[] = { a };
	_cleanup_free_ char *err = NULL;
	struct comparison *c = compare_results(base, 1, b, o, &err);
	g_assert_null(err);
	g_assert_nonnull(c);
	return c;
}

/* Noise only, with between-boot SD 8% and within-boot SD 3%: a false regression in any cell of
 * a comparison (what would fail a CI job) at most at the nominal 5%. */
static void test_false_positive_rate(void)
{
	struct rng g = { SEED };
	const size_t trials = 4000;
	struct shape s = { .cells = 4,
			   .boots = 5,
			   .runs = 2,
			   .between = 0.08,
			   .within = 0.03,
			   .factor = 1,
			   .boot_ids = true };
	struct compare_opts o = { 0 };
	size_t alarm = 0, improved = 0, unchanged = 0, rows = 0, rows_regressed = 0;
	for (size_t t = 0; t < trials; t++) {
		_cleanup_(results_freep) struct results *a = synth(&g, &s, 1, 1000);
		_cleanup_(results_freep) struct results *b = synth(&g, &s, 1, 2000);
		_cleanup_(comparison_freep) struct comparison *c = run_compare(a, b, &o);
		g_assert_false(c->refused);
		alarm += c->regressed_cells > 0;
		bool imp = false;
		for (size_t i = 0; i < c->n_rows; i++) {
			if (!STREQ(c->rows[i].metric, "total"))
				continue;
			rows++;
			rows_regressed += c->rows[i].verdict == CMP_REGRESSED;
			imp |= c->rows[i].verdict == CMP_IMPROVED;
			unchanged += c->rows[i].verdict == CMP_UNCHANGED;
		}
		improved += imp;
	}
	double fpr = (double)alarm / (double)trials;
	/* the binomial standard error of the measured rate at the nominal level */
	double se = sqrt(0.05 * 0.95 / (double)trials);
	g_test_message("false positive rate (noise only, between-boot SD 8%%, within 3%%, 4 cells, "
		       "5 boots x 2 runs per side, seed %u, %zu trials): comparisons with a "
		       "regression %.2f%% (nominal 5%%, binomial SE %.2f%%), with an improvement "
		       "%.2f%%; per cell: regressed %.2f%%, unchanged %.2f%%",
		       SEED, trials, 100 * fpr, 100 * se, 100 * (double)improved / (double)trials,
		       100 * (double)rows_regressed / (double)rows,
		       100 * (double)unchanged / (double)rows);
	printf("# FPR %.4f over %zu trials (seed %u)\n", fpr, trials, SEED);
	g_assert_cmpfloat(fpr, <=, 0.05);
	g_assert_cmpfloat((double)improved / (double)trials, <=, 0.05);
}

/* One boot per side with 6 runs each: what a plain t-test on the runs would call changed, and
 * that ferry caps it (the between-boot term is unknown). */
static void test_pseudo_replication(void)
{
	struct rng g = { SEED + 1 };
	const size_t trials = 2000;
	struct shape s = { .cells = 1,
			   .boots = 1,
			   .runs = 6,
			   .between = 0.08,
			   .within = 0.03,
			   .factor = 1,
			   .boot_ids = true };
	struct compare_opts o = { 0 };
	size_t naive = 0, verdicts = 0;
	for (size_t t = 0; t < trials; t++) {
		_cleanup_(results_freep) struct results *a = synth(&g, &s, 1, 1000);
		_cleanup_(results_freep) struct results *b = synth(&g, &s, 1, 2000);
		struct stats_compare sc;
		g_assert_cmpint(results_compare_cells(&a->cells[0], &b->cells[0], -1, 0.95, &sc),
				==, 0);
		naive += sc.p_value < 0.05;
		_cleanup_(comparison_freep) struct comparison *c = run_compare(a, b, &o);
		const struct cmp_row *r = row_of(c, "dataset=d0,method=m", "total");
		g_assert_nonnull(r);
		g_assert_false(r->between_known);
		verdicts += r->verdict != CMP_INCONCLUSIVE;
		if (t == 0)
			g_assert_nonnull(strstr(r->note ? r->note : "", "between-boot variance"));
	}
	g_test_message("pseudo-replication (1 boot x 6 runs per side, identical code, seed %u, %zu "
		       "trials): a plain Welch t on the runs calls %.1f%% changed; ferry gives a "
		       "verdict in %.1f%% (capped at inconclusive)",
		       SEED + 1, trials, 100 * (double)naive / (double)trials,
		       100 * (double)verdicts / (double)trials);
	g_assert_cmpuint(verdicts, ==, 0);
	g_assert_cmpfloat((double)naive / (double)trials, >, 0.2);
}

/* A 10% slowdown at CV 5% with 5 boots (one run each) per side: detected in at least 80%. */
static void test_detection_rate(void)
{
	struct rng g = { SEED + 2 };
	const size_t trials = 2000;
	struct shape s = { .cells = 1,
			   .boots = 5,
			   .runs = 1,
			   .between = 0.05,
			   .within = 0,
			   .factor = 1.10,
			   .boot_ids = true };
	struct compare_opts o = { 0 };
	size_t hit = 0, wrong = 0, lkp = 0;
	for (size_t t = 0; t < trials; t++) {
		_cleanup_(results_freep) struct results *a = synth(&g, &s, 1, 1000);
		_cleanup_(results_freep) struct results *b = synth(&g, &s, 1.10, 2000);
		_cleanup_(comparison_freep) struct comparison *c = run_compare(a, b, &o);
		const struct cmp_row *r = row_of(c, "dataset=d0,method=m", "total");
		g_assert_nonnull(r);
		hit += r->verdict == CMP_REGRESSED;
		wrong += r->verdict == CMP_IMPROVED || r->verdict == CMP_UNCHANGED;
		/* throughput is the same slowdown seen from the other side */
		const struct cmp_row *tp = row_of(c, "dataset=d0,method=m", "throughput");
		g_assert_nonnull(tp);
		g_assert_true(tp->higher_better);
		g_assert_cmpint(tp->verdict, ==, r->verdict);
		struct compare_opts ol = { .rule = CMP_RULE_LKP };
		_cleanup_(comparison_freep) struct comparison *cl = run_compare(a, b, &ol);
		lkp += row_of(cl, "dataset=d0,method=m", "total")->verdict == CMP_REGRESSED;
	}
	double rate = (double)hit / (double)trials;
	g_test_message("detection rate (10%% slowdown, CV 5%%, 5 boots x 1 run per side, seed %u, "
		       "%zu trials): welch %.2f%%, lkp %.2f%%; called improved or unchanged %.2f%%",
		       SEED + 2, trials, 100 * rate, 100 * (double)lkp / (double)trials,
		       100 * (double)wrong / (double)trials);
	printf("# detection %.4f over %zu trials (seed %u)\n", rate, trials, SEED + 2);
	g_assert_cmpfloat(rate, >=, 0.80);
	/* "unchanged" (two one-sided tests) and "improved" are claims at the 5% level too */
	g_assert_cmpfloat((double)wrong / (double)trials, <=, 0.05);
	/* lkp is the stricter rule */
	g_assert_cmpuint(lkp, <, hit);
}

/* The two-stage gate (compare_opts.screen): a gated row suspected at 80% and decided by a
 * 3-boot rerun's test at 95% is still quiet on noise, and finds more of a 15% slowdown than the
 * same rerun behind a 95% screen. */
static void test_two_stage(void)
{
	struct rng g = { SEED + 9 };
	const size_t trials = 2000;
	struct shape s = { .cells = 1, .boots = 5, .runs = 2, .between = 0.08, .within = 0.03 };
	s.boot_ids = true;
	struct shape sr = s;
	sr.boots = 3;
	size_t alarm[2] = { 0 }, hit[2] = { 0 };
	for (size_t t = 0; t < trials; t++) {
		double f = t % 2 ? 1.15 : 1.0;
		_cleanup_(results_freep) struct results *a = synth(&g, &s, 1, 1000);
		_cleanup_(results_freep) struct results *b = synth(&g, &s, f, 2000);
		_cleanup_(results_freep) struct results *rerun = synth(&g, &sr, f, 3000);
		for (int k = 0; k < 2; k++) {
			struct compare_opts o = { .confirm = rerun, .screen = k ? 0.95 : 0.80 };
			_cleanup_(comparison_freep) struct comparison *c = run_compare(a, b, &o);
			bool failed = c->failed_cells > 0;
			if (t % 2)
				hit[k] += failed;
			else
				alarm[k] += failed;
		}
	}
	double n = (double)trials / 2;
	g_test_message("two-stage gate (between-boot SD 8%%, within 3%%, 5 boots x 2 runs a side, "
		       "a 3-boot rerun, seed %u, %zu trials each): noise failed %.2f%% (screen "
		       "80%%) and %.2f%% (screen 95%%); a 15%% slowdown failed %.2f%% and %.2f%%",
		       SEED + 9, trials / 2, 100 * (double)alarm[0] / n, 100 * (double)alarm[1] / n,
		       100 * (double)hit[0] / n, 100 * (double)hit[1] / n);
	printf("# two-stage: noise %.4f / %.4f, slowdown %.4f / %.4f (screen 80%% / 95%%)\n",
	       (double)alarm[0] / n, (double)alarm[1] / n, (double)hit[0] / n, (double)hit[1] / n);
	g_assert_cmpfloat((double)alarm[0] / n, <=, 0.05);
	g_assert_cmpuint(hit[0], >, hit[1]);
	/* the screen never makes a regression without the rerun's agreement */
	g_assert_cmpuint(alarm[0], >=, alarm[1]);
}

static void test_too_few_runs(void)
{
	struct rng g = { SEED + 3 };
	/* an enormous change, but 2 runs per side */
	struct shape s = { .cells = 1, .boots = 2, .runs = 1, .between = 0.01, .boot_ids = true };
	_cleanup_(results_freep) struct results *a = synth(&g, &s, 1, 1000);
	_cleanup_(results_freep) struct results *b = synth(&g, &s, 3, 2000);
	struct compare_opts o = { 0 };
	_cleanup_(comparison_freep) struct comparison *c = run_compare(a, b, &o);
	for (size_t i = 0; i < c->n_rows; i++) {
		g_assert_cmpint(c->rows[i].verdict, ==, CMP_INCONCLUSIVE);
		g_assert_nonnull(strstr(c->rows[i].note, "fewer than 3 measured runs"));
	}
	g_assert_cmpuint(c->counts[CMP_INCONCLUSIVE], ==, c->n_rows);
	g_assert_cmpuint(c->regressed_cells, ==, 0);
}

/* A clear change with enough boots: regressed (and the reverse is improved), and an identical
 * file is unchanged, with the minimum detectable effect known. */
static void test_verdicts(void)
{
	struct rng g = { SEED + 4 };
	struct shape s = { .cells = 2,
			   .boots = 6,
			   .runs = 2,
			   .between = 0.01,
			   .within = 0.005,
			   .boot_ids = true };
	_cleanup_(results_freep) struct results *a = synth(&g, &s, 1, 1000);
	_cleanup_(results_freep) struct results *b = synth(&g, &s, 1.3, 2000);
	_cleanup_(results_freep) struct results *a2 = synth(&g, &s, 1, 3000);
	struct compare_opts o = { 0 };
	_cleanup_(comparison_freep) struct comparison *c = run_compare(a, b, &o);
	const struct cmp_row *r = row_of(c, "dataset=d0,method=m", "total");
	g_assert_cmpint(r->verdict, ==, CMP_REGRESSED);
	g_assert_cmpfloat(r->change, >, 0.25);
	g_assert_cmpfloat(r->ci_low, >, 0.05);
	g_assert_cmpint(row_of(c, "dataset=d0,method=m", "throughput")->verdict, ==, CMP_REGRESSED);
	g_assert_cmpint(row_of(c, "dataset=d1,method=m", "total")->verdict, ==, CMP_UNCHANGED);
	g_assert_cmpuint(c->regressed_cells, ==, 1);

	_cleanup_(comparison_freep) struct comparison *back = run_compare(b, a, &o);
	g_assert_cmpint(row_of(back, "dataset=d0,method=m", "total")->verdict, ==, CMP_IMPROVED);
	g_assert_cmpuint(back->regressed_cells, ==, 0);

	_cleanup_(comparison_freep) struct comparison *same = run_compare(a, a2, &o);
	r = row_of(same, "dataset=d0,method=m", "total");
	g_assert_cmpint(r->verdict, ==, CMP_UNCHANGED);
	g_assert_true(isfinite(r->mde));
	g_assert_cmpfloat(r->mde, <, 0.05);

	/* a per-metric threshold of 50%: 30% is within it (the interval lies inside +-50%) */
	struct cmp_threshold th;
	_cleanup_free_ char *err = NULL;
	g_assert_cmpint(cmp_threshold_parse("dataset=d0:total=50%", &th, &err), ==, 0);
	g_assert_cmpstr(th.where, ==, "dataset=d0");
	g_assert_cmpstr(th.metric, ==, "total");
	g_assert_cmpfloat(th.value, ==, 0.5);
	struct compare_opts o2 = { .thresholds = &th, .n_thresholds = 1 };
	_cleanup_(comparison_freep) struct comparison *c2 = run_compare(a, b, &o2);
	r = row_of(c2, "dataset=d0,method=m", "total");
	g_assert_cmpint(r->verdict, ==, CMP_UNCHANGED);
	g_assert_cmpfloat(r->threshold, ==, 0.5);
	g_assert_cmpint(row_of(c2, "dataset=d0,method=m", "throughput")->verdict, ==,
			CMP_REGRESSED);
	cmp_threshold_clear(&th);
	g_assert_cmpint(cmp_threshold_parse("five", &th, &err), ==, -1);
	g_assert_nonnull(strstr(err, "invalid threshold 'five'"));
}

/* Noise large enough that 4 boots per side cannot tell: inconclusive, with how many more boots
 * would. */
static void test_inconclusive_more_boots(void)
{
	struct rng g = { SEED + 5 };
	struct shape s = { .cells = 1, .boots = 3, .runs = 1, .between = 0.2, .boot_ids = true };
	_cleanup_(results_freep) struct results *a = synth(&g, &s, 1, 1000);
	_cleanup_(results_freep) struct results *b = synth(&g, &s, 1.02, 2000);
	struct compare_opts o = { 0 };
	_cleanup_(comparison_freep) struct comparison *c = run_compare(a, b, &o);
	const struct cmp_row *r = row_of(c, "dataset=d0,method=m", "total");
	g_assert_cmpint(r->verdict, ==, CMP_INCONCLUSIVE);
	g_assert_cmpint(r->more_boots, >, 0);
	g_assert_cmpfloat(r->mde, >, 0.1);
}

/* Cells pair by their parameters: new ids (axes in another order, another repeat count) still
 * pair; other parameters under the same names are a refused difference. */
static void test_pairing(void)
{
	struct rng g = { SEED + 6 };
	struct shape s = { .cells = 2, .boots = 3, .runs = 1, .between = 0.01, .boot_ids = true };
	_cleanup_(results_freep) struct results *a = synth(&g, &s, 1, 1000);
	_cleanup_(results_freep) struct results *b = synth(&g, &s, 1, 2000);
	for (size_t i = 0; i < b->n_cells; i++) {
		char *id = xasprintf("method=m,dataset=d%zu", i);
		free(b->cells[i].id);
		b->cells[i].id = id;
		json_object_set_new(json_object_get(b->cells[i].params, "run"), "repeat",
				    json_integer(9));
	}
	struct compare_opts o = { 0 };
	_cleanup_(comparison_freep) struct comparison *c = run_compare(a, b, &o);
	g_assert_false(c->refused);
	g_assert_cmpuint(c->n_only_base, ==, 0);
	g_assert_cmpuint(c->n_only_cand, ==, 0);
	g_assert_nonnull(row_of(c, "method=m,dataset=d1", "total"));

	json_object_set_new(json_object_get(b->cells[1].params, "dataset"), "files",
			    json_integer(20));
	_cleanup_(comparison_freep) struct comparison *c2 = run_compare(a, b, &o);
	g_assert_true(c2->refused);
	_cleanup_free_ char *why = comparison_refusal(c2);
	g_test_message("%s", why);
	g_assert_nonnull(
	    strstr(why, "params differ (cell method=m,dataset=d1: parameter 'dataset.files' was "
			"10, now 20)"));
	const char *allow[] = { "params" };
	struct compare_opts o2 = { .allow_different = allow, .n_allow_different = 1 };
	_cleanup_(comparison_freep) struct comparison *c3 = run_compare(a, b, &o2);
	g_assert_false(c3->refused);
	g_assert_nonnull(row_of(c3, "method=m,dataset=d1", "total"));
}

static void test_refused(void)
{
	struct rng g = { SEED + 7 };
	struct shape s = { .cells = 1, .boots = 3, .runs = 1, .between = 0.01, .boot_ids = true };
	_cleanup_(results_freep) struct results *a = synth(&g, &s, 1, 1000);
	_cleanup_(results_freep) struct results *b = synth(&g, &s, 1, 2000);
	free(b->provenance.qemu_version);
	b->provenance.qemu_version = xstrdup("8.2.0");
	a->provenance.ferry_version = xstrdup("0.1.0");
	b->provenance.ferry_version = xstrdup("0.2.0");
	struct compare_opts o = { 0 };
	_cleanup_(comparison_freep) struct comparison *c = run_compare(a, b, &o);
	g_assert_true(c->refused);
	g_assert_cmpuint(c->n_rows, ==, 0);
	_cleanup_free_ char *why = comparison_refusal(c);
	g_test_message("%s", why);
	g_assert_cmpstr(why, ==,
			"refused to compare: qemu_version differs ('7.2.0' in the baseline, "
			"'8.2.0' now) (--allow-different KEY compares anyway)");

	const char *allow[] = { "qemu_version" };
	struct compare_opts o2 = { .allow_different = allow, .n_allow_different = 1 };
	_cleanup_(comparison_freep) struct comparison *c2 = run_compare(a, b, &o2);
	g_assert_false(c2->refused);
	g_assert_cmpuint(c2->n_rows, >, 0);
	/* both differences are shown: the allowed one and the ferry version */
	bool qemu = false, ferry = false;
	for (size_t i = 0; i < c2->n_diffs; i++) {
		if (STREQ(c2->diffs[i].key, "qemu_version"))
			qemu = c2->diffs[i].refusing && c2->diffs[i].allowed;
		if (STREQ(c2->diffs[i].key, "ferry_version"))
			ferry = !c2->diffs[i].refusing && STREQ(c2->diffs[i].cand, "0.2.0");
	}
	g_assert_true(qemu);
	g_assert_true(ferry);

	/* a value only one file knows proves nothing: shown, not refused */
	free(b->provenance.qemu_version);
	b->provenance.qemu_version = NULL;
	_cleanup_(comparison_freep) struct comparison *c3 = run_compare(a, b, &o);
	g_assert_false(c3->refused);
}

/* Version 1 files (no boot ids): each file is one boot, so one file per side is capped, and a
 * window of several baselines pools them, each file a boot. */
static void test_window(void)
{
	struct rng g = { SEED + 8 };
	struct shape s = { .cells = 1, .boots = 1, .runs = 3, .between = 0.01, .within = 0.002 };
	struct results *bases[4];
	for (size_t i = 0; i < 4; i++)
		bases[i] = synth(&g, &s, 1, 1000 + (int64_t)i);
	/* the oldest is of another QEMU: never pooled */
	free(bases[0]->provenance.qemu_version);
	bases[0]->provenance.qemu_version = xstrdup("6.0");
	_cleanup_(results_freep) struct results *b = synth(&g, &s, 1.5, 5000);
	_cleanup_free_ char *err = NULL;
	struct compare_opts one = { 0 };
	_cleanup_(comparison_freep) struct comparison *c1 =
	    compare_results((const struct results *const *)bases, 4, b, &one, &err);
	g_assert_cmpuint(c1->n_used, ==, 1);
	g_assert_cmpuint(c1->used[0], ==, 3);
	const struct cmp_row *r = row_of(c1, "dataset=d0,method=m", "total");
	g_assert_cmpint(r->verdict, ==, CMP_INCONCLUSIVE);
	g_assert_false(r->between_known);

	struct compare_opts win = { .window = 5 };
	_cleanup_(comparison_freep) struct comparison *c3 =
	    compare_results((const struct results *const *)bases, 4, b, &win, &err);
	g_assert_cmpuint(c3->n_used, ==, 3);
	r = row_of(c3, "dataset=d0,method=m", "total");
	g_assert_cmpuint(r->boots_base, ==, 3);
	g_assert_cmpuint(r->boots_cand, ==, 1);
	g_assert_true(r->between_known);
	g_assert_cmpint(r->verdict, ==, CMP_REGRESSED);
	for (size_t i = 0; i < 4; i++)
		results_free(bases[i]);
}

static void test_bh(void)
{
	/* the textbook example: q 0.05 over 10 p-values rejects the first 2 */
	const double p[] = { 0.01, 0.001, 0.9, 0.2, 0.04, 0.03, 0.5, 0.6, 0.7, NAN };
	bool rej[ELEMENTSOF(p)];
	g_assert_cmpuint(stats_bh(p, ELEMENTSOF(p), 0.05, rej), ==, 2);
	g_assert_true(rej[0] && rej[1]);
	g_assert_false(rej[4] || rej[5] || rej[9]);
	/* all small: every one */
	const double q[] = { 0.04, 0.03, 0.045 };
	bool r2[3];
	g_assert_cmpuint(stats_bh(q, 3, 0.05, r2), ==, 3);
	g_assert_cmpuint(stats_bh(q, 0, 0.05, r2), ==, 0);
}

/* Results files for tests/compare-cli.sh: base.json and same.json (noise only), slow.json (cell
 * d0 30% slower), qemu.json (another QEMU), few.json (2 runs per cell), v1.json (no boot ids). */
static int write_files(const char *dir)
{
	struct rng g = { SEED + 9 };
	struct shape s = {
		.cells = 3, .boots = 5, .runs = 2, .between = 0.02, .within = 0.01, .boot_ids = true
	};
	struct shape few = s;
	few.boots = 2;
	few.runs = 1;
	struct {
		const char *name;
		const struct shape *s;
		double factor;
	} files[] = {
		{ "base.json", &s, 1 }, { "same.json", &s, 1 },  { "slow.json", &s, 1.3 },
		{ "qemu.json", &s, 1 }, { "few.json", &few, 1 }, { "v1.json", &s, 1 },
	};
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		_cleanup_(results_freep) struct results *r =
		    synth(&g, files[i].s, files[i].factor, 1000 * (int64_t)(i + 1));
		r->plan.name = xstrdup("synthetic | <plan>");
		r->provenance.hostname = xstrdup("host-1");
		r->provenance.ferry_version = xstrdup(i == 1 ? "0.2.0" : "0.1.0");
		if (STREQ(files[i].name, "qemu.json")) {
			free(r->provenance.qemu_version);
			r->provenance.qemu_version = xstrdup("8.2.0");
		}
		_cleanup_free_ char *path = xasprintf("%s/%s", dir, files[i].name);
		_cleanup_free_ char *err = NULL;
		if (results_write(r, path, &err) < 0) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && STREQ(argv[1], "--write-files"))
		return write_files(argv[2]);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/compare/bh", test_bh);
	/* The rate trials (thousands of simulated comparisons) run in the plain and ASan builds;
	 * under valgrind (tests/meson.build sets FERRY_UNDER_VALGRIND) they exceed the timeout and
	 * add no memory coverage beyond the cases below, which use the same code. */
	if (!getenv("FERRY_UNDER_VALGRIND")) {
		g_test_add_func("/compare/false-positive-rate", test_false_positive_rate);
		g_test_add_func("/compare/pseudo-replication", test_pseudo_replication);
		g_test_add_func("/compare/detection-rate", test_detection_rate);
		g_test_add_func("/compare/two-stage", test_two_stage);
	}
	g_test_add_func("/compare/too-few-runs", test_too_few_runs);
	g_test_add_func("/compare/verdicts", test_verdicts);
	g_test_add_func("/compare/inconclusive-more-boots", test_inconclusive_more_boots);
	g_test_add_func("/compare/pairing", test_pairing);
	g_test_add_func("/compare/refused", test_refused);
	g_test_add_func("/compare/window", test_window);
	return g_test_run();
}
