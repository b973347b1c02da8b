/* SPDX-License-Identifier: MIT */
/*
 * Change points over successive runs (results/trend.h) on synthetic series: a step is found at
 * the right index, noise alone gives none, a single spike is not a change point, a change seen
 * only at the newest point is pending; over results files: ordered by start time, cells
 * followed by their parameters, many cells shifting at one file reported as the environment.
 */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "results.h"
#include "trend.h"
#include "util.h"

/* A seeded normal generator (xorshift64* and Box-Muller): the same series on every host. */
static uint64_t rng_state;
static double uniform(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return ((rng_state * UINT64_C(2685821657736338717)) >> 11) * (1.0 / 9007199254740992.0);
}
static double normal(void)
{
	double u = uniform(), v = uniform();
	return sqrt(-2 * log(u > 0 ? u : 1e-300)) * cos(2 * M_PI * v);
}

/* n points around `level` with relative noise cv; from `at` on the level is multiplied by
 * step (1: no step). */
static void series(double *y, size_t n, double level, double cv, size_t at, double step)
{
	for (size_t i = 0; i < n; i++)
		y[i] = level * (i >= at ? step : 1) * exp(cv * normal());
}

static void test_step(void)
{
	double y[30];
	for (uint64_t seed = 1; seed <= 50; seed++) {
		rng_state = seed * UINT64_C(0x9E3779B97F4A7C15);
		series(y, 30, 10.0, 0.02, 17, 1.25); /* +25% at point 17, 2% noise */
		struct trend_change *ch;
		size_t n;
		trend_detect(y, 30, &ch, &n);
		g_assert_cmpuint(n, ==, 1);
		g_assert_cmpuint(ch[0].at, ==, 17);
		g_assert_false(ch[0].pending);
		g_assert_cmpfloat(ch[0].p, <=, 0.001);
		g_assert_cmpfloat(fabs(ch[0].rel - 0.25), <, 0.05);
		free(ch);
	}
	/* a step down, near the start (the minimum segment is 2 points) */
	rng_state = 7;
	series(y, 12, 10.0, 0.01, 2, 0.8);
	struct trend_change *ch;
	size_t n;
	trend_detect(y, 12, &ch, &n);
	g_assert_cmpuint(n, ==, 1);
	g_assert_cmpuint(ch[0].at, ==, 2);
	g_assert_cmpfloat(ch[0].rel, <, -0.15);
	free(ch);
}

/* Noise alone: change points in at most 1% of 500 seeded series of 20 points at 5% CV (2 of
 * 500 with these seeds, both series whose first or middle points happen to sit 8-10% apart
 * with little scatter); none at all in the first 100. */
static void test_noise(void)
{
	double y[20];
	size_t found = 0;
	for (uint64_t seed = 1; seed <= 500; seed++) {
		rng_state = seed * UINT64_C(0xD1B54A32D192ED03);
		series(y, 20, 3.0, 0.05, 0, 1);
		struct trend_change *ch;
		size_t n;
		trend_detect(y, 20, &ch, &n);
		for (size_t i = 0; i < n; i++)
			found += !ch[i].pending;
		free(ch);
		if (seed == 100)
			g_assert_cmpuint(found, ==, 0);
	}
	g_test_message("false change points in noise: %zu of 500 series", found);
	g_assert_cmpuint(found, <=, 5);
}

/* One spike (x3) in the middle of a flat noisy series is no change point; neither is a small
 * (3%) step, however significant: below the 5% minimum. */
static void test_spike_and_small_step(void)
{
	double y[20];
	for (uint64_t seed = 1; seed <= 50; seed++) {
		rng_state = seed * UINT64_C(0x2545F4914F6CDD1D);
		series(y, 20, 5.0, 0.02, 0, 1);
		y[9] *= 3;
		struct trend_change *ch;
		size_t n;
		trend_detect(y, 20, &ch, &n);
		g_assert_cmpuint(n, ==, 0);
		free(ch);
	}
	rng_state = 99;
	series(y, 20, 5.0, 0.002, 10, 1.03);
	struct trend_change *ch;
	size_t n;
	trend_detect(y, 20, &ch, &n);
	g_assert_cmpuint(n, ==, 0);
	free(ch);
}

/* A change only at the newest point is pending; a flat series with an ordinary last point is
 * not; identical values and short series are handled. */
static void test_pending(void)
{
	double y[15];
	rng_state = 5;
	series(y, 15, 8.0, 0.02, 14, 1.4);
	struct trend_change *ch;
	size_t n;
	trend_detect(y, 15, &ch, &n);
	g_assert_cmpuint(n, ==, 1);
	g_assert_true(ch[0].pending);
	g_assert_cmpuint(ch[0].at, ==, 14);
	g_assert_true(isnan(ch[0].p));
	free(ch);

	double flat[6] = { 2, 2, 2, 2, 2, 2 };
	trend_detect(flat, 6, &ch, &n);
	g_assert_cmpuint(n, ==, 0);
	double stepped[6] = { 2, 2, 2, 3, 3, 3 };
	trend_detect(stepped, 6, &ch, &n);
	g_assert_cmpuint(n, ==, 1);
	g_assert_cmpuint(ch[0].at, ==, 3);
	free(ch);
	trend_detect(flat, 1, &ch, &n);
	g_assert_cmpuint(n, ==, 0);
	trend_detect(flat, 0, &ch, &n);
	g_assert_cmpuint(n, ==, 0);
}

/* A results file of one run at time `t`: cells c0..c4, each cell's median `base * factor`. */
static struct results *run_file(int64_t t, const double *factor)
{
	struct results *r = results_new();
	r->provenance.started_ms = t;
	for (size_t c = 0; c < 5; c++) {
		char id[16];
		snprintf(id, sizeof(id), "cell=%zu", c);
		struct result_cell *rc = results_add_cell(r, id);
		rc->params = json_pack("{s:i}", "cell", (int)c);
		rc->status = STATUS_PASSED;
		for (int j = 0; j < 3; j++) {
			struct result_run *run = result_cell_add_run(rc, false);
			run->phase[PHASE_TRANSFER] =
			    (1.0 + (double)c) * factor[c] * (1 + 0.002 * j) * exp(0.01 * normal());
			run->total = result_run_total(run);
			run->integrity_ok = true;
		}
		results_cell_compute_stats(rc);
	}
	return r;
}

/* 12 runs given out of order; from run 8 on every cell is 30% slower (the host changed):
 * one environment shift at that file, every cell's change marked as part of it; cell 4 alone
 * is also slower from run 4 on. */
static void test_build(void)
{
	enum { RUNS = 12 };
	struct results *in[RUNS];
	const char *names[RUNS];
	rng_state = 11;
	for (size_t k = 0; k < RUNS; k++) {
		size_t i = (k * 5) % RUNS; /* out of order */
		double f[5];
		for (size_t c = 0; c < 5; c++)
			f[c] = (i >= 8 ? 1.3 : 1.0) * (c == 4 && i >= 4 ? 1.5 : 1.0);
		in[k] = run_file(1000 * (int64_t)(i + 1), f);
		names[k] = g_strdup_printf("run-%02zu.json", i);
	}
	char *err = NULL;
	struct trend *t = trend_build(in, names, RUNS, &err);
	g_assert_nonnull(t);
	g_assert_cmpuint(t->n_files, ==, RUNS);
	for (size_t f = 0; f < RUNS; f++) {
		g_autofree char *want = g_strdup_printf("run-%02zu.json", f);
		g_assert_cmpstr(t->files[f].name, ==, want);
	}
	g_assert_cmpuint(t->n_cells, ==, 5);
	g_assert_cmpuint(t->n_env, ==, 1);
	g_assert_cmpuint(t->env[0], ==, 8);
	for (size_t c = 0; c < 5; c++) {
		struct trend_cell *tc = &t->cells[c];
		g_assert_cmpuint(tc->n_points, ==, RUNS);
		size_t want = c == 4 ? 2 : 1;
		g_assert_cmpuint(tc->n_changes, ==, want);
		struct trend_change *last = &tc->changes[tc->n_changes - 1];
		g_assert_cmpuint(last->at, ==, 8);
		g_assert_true(last->environment);
		if (c == 4) {
			g_assert_cmpuint(tc->changes[0].at, ==, 4);
			g_assert_false(tc->changes[0].environment);
		}
	}
	trend_free(t);
	for (size_t k = 0; k < RUNS; k++) {
		results_free(in[k]);
		g_free((char *)names[k]);
	}
	g_assert_null(trend_build(in, names, 0, &err));
	g_assert_cmpstr(err, ==, "no results files");
	free(err);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/trend/step", test_step);
	g_test_add_func("/trend/noise", test_noise);
	g_test_add_func("/trend/spike-and-small-step", test_spike_and_small_step);
	g_test_add_func("/trend/pending", test_pending);
	g_test_add_func("/trend/build", test_build);
	return g_test_run();
}
