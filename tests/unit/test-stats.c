/* SPDX-License-Identifier: MIT */
/*
 * Statistics against values computed by hand or from closed forms. Where a figure needed a
 * numerical method, it was computed independently of stats.c (Simpson integration of the t
 * density in Python, /usr/bin/python3 with math.lgamma only) and agrees with the published
 * tables quoted next to it.
 */
#include <glib.h>
#include <math.h>

#include "stats.h"
#include "util.h"

#define assert_near(a, b, eps) g_assert_cmpfloat_with_epsilon((a), (b), (eps))

static void test_summary_known(void)
{
	/*
	 * {2,4,4,4,5,5,7,9}: sum 40, n 8 -> mean 5.
	 * deviations -3,-1,-1,-1,0,0,2,4; squares 9+1+1+1+0+0+4+16 = 32;
	 * sample variance 32/7 = 4.571428...; stddev sqrt(32/7) = 2.138089935299395.
	 * median: sorted middle pair (4+5)/2 = 4.5. CV = 2.1380899/5 = 0.427617987059879.
	 * p90 (type 7): h = (8-1)*0.9 = 6.3 -> x[6] + 0.3*(x[7]-x[6]) = 7 + 0.3*2 = 7.6.
	 * 95% CI: t(0.975, 7) = 2.364624251593 (tables: 2.365);
	 *   half width 2.364624 * 2.138090 / sqrt(8) = 1.787487918236 -> [3.212512, 6.787488].
	 */
	const double x[] = { 4, 9, 2, 5, 4, 7, 4, 5 }; /* unsorted on purpose */
	struct stats_summary s;

	stats_summarize(x, ELEMENTSOF(x), &s);
	g_assert_cmpuint(s.n, ==, 8);
	assert_near(s.mean, 5.0, 1e-15);
	assert_near(s.median, 4.5, 1e-15);
	assert_near(s.stddev, 2.138089935299395, 1e-12);
	assert_near(s.cv, 0.427617987059879, 1e-12);
	g_assert_cmpfloat(s.min, ==, 2);
	g_assert_cmpfloat(s.max, ==, 9);
	assert_near(s.p90, 7.6, 1e-12);
	assert_near(s.ci_low, 5 - 1.787487918236, 1e-9);
	assert_near(s.ci_high, 5 + 1.787487918236, 1e-9);
	/* the input is not reordered */
	g_assert_cmpfloat(x[0], ==, 4);
	g_assert_cmpfloat(x[1], ==, 9);
}

static void test_summary_small(void)
{
	struct stats_summary s;
	const double one[] = { 3.25 };

	stats_summarize(NULL, 0, &s);
	g_assert_cmpuint(s.n, ==, 0);
	g_assert_true(isnan(s.mean) && isnan(s.median) && isnan(s.min) && isnan(s.ci_low));

	/* one sample: its own mean, median, min, max, p90; no spread, no interval */
	stats_summarize(one, 1, &s);
	g_assert_cmpuint(s.n, ==, 1);
	g_assert_cmpfloat(s.mean, ==, 3.25);
	g_assert_cmpfloat(s.median, ==, 3.25);
	g_assert_cmpfloat(s.p90, ==, 3.25);
	g_assert_true(isnan(s.stddev) && isnan(s.cv) && isnan(s.ci_low) && isnan(s.ci_high));

	/* two equal samples: sd 0, cv 0, a zero-width interval */
	const double two[] = { 7, 7 };
	stats_summarize(two, 2, &s);
	g_assert_cmpfloat(s.stddev, ==, 0);
	g_assert_cmpfloat(s.cv, ==, 0);
	g_assert_cmpfloat(s.ci_low, ==, 7);
	g_assert_cmpfloat(s.ci_high, ==, 7);

	/* large offset, tiny spread: the two-pass variance keeps it exact enough.
	 * {1e9+1, 1e9+2, 1e9+3}: variance ((-1)^2 + 0 + 1^2)/2 = 1 */
	const double off[] = { 1e9 + 1, 1e9 + 2, 1e9 + 3 };
	stats_summarize(off, 3, &s);
	assert_near(s.stddev, 1.0, 1e-9);
}

static void test_percentile(void)
{
	/* Hyndman-Fan type 7 (numpy.percentile default, R quantile type 7), h = (n-1)p */
	const double a[] = { 1, 2, 3, 4 };
	g_assert_cmpfloat(stats_percentile(a, 4, 0.0), ==, 1);
	g_assert_cmpfloat(stats_percentile(a, 4, 1.0), ==, 4);
	assert_near(stats_percentile(a, 4, 0.25), 1.75, 1e-15); /* h = 0.75 */
	assert_near(stats_percentile(a, 4, 0.5), 2.5, 1e-15);   /* h = 1.5 */
	assert_near(stats_percentile(a, 4, 0.9), 3.7, 1e-15);   /* h = 2.7 */
	/* numpy.percentile([15, 20, 35, 40, 50], 40) == 29.0: h = 1.6 -> 20 + 0.6*15 */
	const double b[] = { 15, 20, 35, 40, 50 };
	assert_near(stats_percentile(b, 5, 0.4), 29, 1e-12);
	const double c[] = { 10 };
	g_assert_cmpfloat(stats_percentile(c, 1, 0.9), ==, 10);
	g_assert_true(isnan(stats_percentile(c, 0, 0.5)));
	g_assert_true(isnan(stats_percentile(c, 1, 1.5)));
}

static void test_t_quantile(void)
{
	/* two-sided 95% critical values, t(0.975, df); tables give 12.706, 4.303, 2.776, 2.262,
	 * 2.045, 1.962, 1.960. df 1 is tan(0.475 pi) exactly; df 2 is
	 * (2p-1)/sqrt(2p(1-p)) = 0.95/sqrt(0.04875); the others by numerical integration. */
	static const struct {
		double df, t;
	} cases[] = {
		{ 1, 12.706204736174696 }, { 2, 4.302652729749464 },
		{ 4, 2.7764451052 },       { 7, 2.364624251593 },
		{ 9, 2.2621571628 },       { 29, 2.0452296421 },
		{ 1000, 1.9623390808 },    { INFINITY, 1.959963984540054 },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		double t = stats_t_quantile(0.975, cases[i].df);
		assert_near(t, cases[i].t, 1e-9 * cases[i].t);
		/* symmetric */
		assert_near(stats_t_quantile(0.025, cases[i].df), -cases[i].t, 1e-9 * cases[i].t);
		/* and the inverse of the cdf */
		assert_near(stats_t_cdf(cases[i].t, cases[i].df), 0.975, 1e-10);
	}
	/* tables, to their 3 decimals */
	assert_near(stats_t_quantile(0.975, 1), 12.706, 5e-4);
	assert_near(stats_t_quantile(0.975, 2), 4.303, 5e-4);
	assert_near(stats_t_quantile(0.975, 4), 2.776, 5e-4);
	assert_near(stats_t_quantile(0.975, 9), 2.262, 5e-4);
	assert_near(stats_t_quantile(0.975, 29), 2.045, 5e-4);
	assert_near(stats_t_quantile(0.975, 1000), 1.962, 5e-4);
	/* one-sided 99.5% for df 1: tan(0.495 pi) = 63.656741162871583 */
	assert_near(stats_t_quantile(0.995, 1), 63.656741162871583, 1e-8);
	g_assert_cmpfloat(stats_t_quantile(0.5, 3), ==, 0);
	g_assert_true(isnan(stats_t_quantile(0, 3)));
	g_assert_true(isnan(stats_t_quantile(1, 3)));
	g_assert_true(isnan(stats_t_quantile(0.9, 0)));
}

static void test_t_cdf(void)
{
	/* closed forms: df 1 is Cauchy, F = 1/2 + atan(t)/pi;
	 * df 2: F = 1/2 + t / (2 sqrt(2 + t^2)) */
	static const double ts[] = { -1.5, 0.5, 2.0, 10 };
	for (size_t i = 0; i < ELEMENTSOF(ts); i++) {
		double t = ts[i];
		assert_near(stats_t_cdf(t, 1), 0.5 + atan(t) / M_PI, 1e-13);
		assert_near(stats_t_cdf(t, 2), 0.5 + t / (2 * sqrt(2 + t * t)), 1e-13);
	}
	/* df 3 at t = 2: 1/2 + (1/pi)(t/(sqrt3 (1 + t^2/3)) + atan(t/sqrt3)) = 0.930337015721 */
	assert_near(stats_t_cdf(2, 3), 0.930337015721, 1e-11);
	g_assert_cmpfloat(stats_t_cdf(0, 5), ==, 0.5);
	g_assert_cmpfloat(stats_t_cdf(INFINITY, 5), ==, 1);
	g_assert_cmpfloat(stats_t_cdf(-INFINITY, 5), ==, 0);
	/* normal limit: Phi(1.959963984540054) = 0.975 */
	assert_near(stats_t_cdf(1.959963984540054, INFINITY), 0.975, 1e-14);
}

static void test_outliers(void)
{
	bool f[10];

	/*
	 * {10.0, 10.1, 9.9, 10.2, 9.8, 15.0}: median (10.0+10.1)/2 = 10.05;
	 * |x - median| = .05 .05 .15 .15 .25 4.95 -> MAD = (.15+.15)/2 = .15.
	 * M(15.0) = 0.6745 * 4.95 / .15 = 22.26 > 3.5: outlier; M(9.8) = 0.6745*.25/.15 = 1.12.
	 */
	const double a[] = { 10.0, 10.1, 9.9, 10.2, 9.8, 15.0 };
	g_assert_cmpuint(stats_outliers(a, 6, f), ==, 1);
	for (size_t i = 0; i < 5; i++)
		g_assert_false(f[i]);
	g_assert_true(f[5]);

	/*
	 * {1..9, v}: median 5.5; deviations .5 .5 1.5 1.5 2.5 2.5 3.5 3.5 4.5 |v-5.5| -> MAD 2.5.
	 * v = 18: M = 0.6745 * 12.5 / 2.5 = 3.3725 (kept); v = 19: 0.6745 * 13.5 / 2.5 = 3.6423
	 * (flagged). A sample on the wrong side of the threshold by a little must not flip.
	 */
	double b[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 18 };
	g_assert_cmpuint(stats_outliers(b, 10, f), ==, 0);
	b[9] = 19;
	g_assert_cmpuint(stats_outliers(b, 10, f), ==, 1);
	g_assert_true(f[9]);
	g_assert_false(f[0]);
	/* low outliers too: the score is two-sided */
	double c[] = { -8, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
	/* median 5.5; deviations 13.5 3.5 2.5 1.5 .5 .5 1.5 2.5 3.5 4.5 -> MAD 2.5; M(-8) = 3.64 */
	g_assert_cmpuint(stats_outliers(c, 10, f), ==, 1);
	g_assert_true(f[0]);

	/*
	 * MAD = 0 ({5,5,5,5,5,6}: over half equal the median): fall back to the mean absolute
	 * deviation 1/6; scale 1.253314/6 = 0.208886; |6-5|/0.208886 = 4.79 > 3.5: flagged.
	 */
	const double d[] = { 5, 5, 5, 5, 5, 6 };
	g_assert_cmpuint(stats_outliers(d, 6, f), ==, 1);
	g_assert_true(f[5]);
	/* all equal: nothing to flag, and no division by zero */
	const double e[] = { 3, 3, 3, 3 };
	g_assert_cmpuint(stats_outliers(e, 4, f), ==, 0);
	/* fewer than 3 samples: never */
	const double g2[] = { 1, 1000 };
	g_assert_cmpuint(stats_outliers(g2, 2, f), ==, 0);
	g_assert_false(f[0] || f[1]);
}

static void test_throughput(void)
{
	g_assert_cmpfloat(stats_throughput(1e9, 2), ==, 5e8);
	g_assert_cmpfloat(stats_throughput(2000, 0.5), ==, 4000);
	g_assert_true(isnan(stats_throughput(1, 0)));
	g_assert_true(isnan(stats_throughput(1, -1)));
}

static void test_welch(void)
{
	struct stats_compare c;

	/*
	 * a = {1,2,3} (mean 2, var 1), b = {4,5,6} (mean 5, var 1).
	 * se^2 = 1/3 + 1/3 = 2/3; t = 3 / sqrt(2/3) = 3.674234614174767.
	 * df = (2/3)^2 / ((1/3)^2/2 + (1/3)^2/2) = (4/9) / (1/9) = 4.
	 * p = 2 (1 - F_4(3.6742)) = 0.021311641129 (closed form for df 4 / integration).
	 * rel change (5-2)/2 = 1.5. Fieller with t(0.975,4) = 2.776445:
	 * g = t^2 (1/3) / 4 = 0.6424; roots of (4 - 2.5695) R^2 - 20 R + (25 - 2.5695) = 0
	 * -> R in [1.2296711455, 12.7519346331] -> relative [0.2296711455, 11.7519346331].
	 */
	const double a[] = { 1, 2, 3 }, b[] = { 4, 5, 6 };
	g_assert_cmpint(stats_welch(a, 3, b, 3, 0.95, &c), ==, 0);
	assert_near(c.mean_a, 2, 1e-15);
	assert_near(c.mean_b, 5, 1e-15);
	assert_near(c.t, 3.674234614174767, 1e-12);
	assert_near(c.df, 4, 1e-12);
	assert_near(c.p_value, 0.021311641129, 1e-9);
	assert_near(c.rel_change, 1.5, 1e-15);
	assert_near(c.rel_ci_low, 0.2296711455, 1e-8);
	assert_near(c.rel_ci_high, 11.7519346331, 1e-7);
	/* swapping the samples flips the sign of t, keeps p */
	g_assert_cmpint(stats_welch(b, 3, a, 3, 0.95, &c), ==, 0);
	assert_near(c.t, -3.674234614174767, 1e-12);
	assert_near(c.p_value, 0.021311641129, 1e-9);
	assert_near(c.rel_change, -0.6, 1e-15);

	/*
	 * Wikipedia "Welch's t-test", example 2 (unequal variances): published t = 2.46,
	 * df = 24.9885 (shown 25.0), p = 0.021. Figures to 10 digits from the same data by the
	 * independent Python integration: t 2.4553563983, df 24.9885292902, p 0.0213780015;
	 * Fieller 95% interval of the relative change 0.1040666026: [0.0158403497, 0.2036848628].
	 */
	const double w1[] = { 27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1,
			      21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4 };
	const double w2[] = { 27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0,
			      24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4 };
	g_assert_cmpint(stats_welch(w1, 15, w2, 15, 0.95, &c), ==, 0);
	assert_near(c.t, 2.4553563983, 1e-9);
	assert_near(c.df, 24.9885292902, 1e-9);
	assert_near(c.p_value, 0.0213780015, 1e-9);
	assert_near(c.rel_change, 0.1040666026, 1e-9);
	assert_near(c.rel_ci_low, 0.0158403497, 1e-8);
	assert_near(c.rel_ci_high, 0.2036848628, 1e-8);
	/* the interval holds the point estimate; p < 0.05 and an interval excluding 0 agree */
	g_assert_cmpfloat(c.rel_ci_low, <, c.rel_change);
	g_assert_cmpfloat(c.rel_ci_high, >, c.rel_change);

	/* no spread at all */
	const double same[] = { 1, 1 }, two[] = { 2, 2 };
	g_assert_cmpint(stats_welch(same, 2, same, 2, 0.95, &c), ==, 0);
	g_assert_cmpfloat(c.t, ==, 0);
	g_assert_cmpfloat(c.p_value, ==, 1);
	g_assert_cmpint(stats_welch(same, 2, two, 2, 0.95, &c), ==, 0);
	g_assert_true(isinf(c.t) && c.t > 0);
	g_assert_cmpfloat(c.p_value, ==, 0);
	assert_near(c.rel_ci_low, 1, 1e-15);
	assert_near(c.rel_ci_high, 1, 1e-15);

	/* a baseline mean not clearly above 0: Fieller's interval is unbounded */
	const double z[] = { -1, 1.2 }, y[] = { 1, 2 };
	g_assert_cmpint(stats_welch(z, 2, y, 2, 0.95, &c), ==, 0);
	g_assert_true(isnan(c.rel_ci_low) && isnan(c.rel_ci_high));

	/* too few samples */
	g_assert_cmpint(stats_welch(a, 1, b, 3, 0.95, &c), ==, -1);
	g_assert_cmpint(stats_welch(a, 3, b, 1, 0.95, &c), ==, -1);
}

static void test_stop_names(void)
{
	for (int s = STATS_CONTINUE; s <= STATS_STOP_BUDGET; s++)
		g_assert_cmpint(stats_stop_from_name(stats_stop_name(s)), ==, s);
	g_assert_cmpstr(stats_stop_name(STATS_STOP_CV), ==, "cv-reached");
	g_assert_cmpstr(stats_stop_name(STATS_STOP_MAX), ==, "max-reached");
	g_assert_cmpstr(stats_stop_name(STATS_STOP_BUDGET), ==, "budget-exhausted");
	g_assert_cmpint(stats_stop_from_name("nope"), ==, -1);
}

static void test_stop_min(void)
{
	/* below min nothing stops the loop: not a perfect CV, not max, not an exhausted budget */
	const struct stats_repeat_rule r = { .min = 3, .max = 3, .until_cv = 0.5, .budget = 10 };
	const double x[] = { 5, 5, 5 };
	g_assert_cmpint(stats_repeat_next(x, 0, &r, 0), ==, STATS_CONTINUE);
	g_assert_cmpint(stats_repeat_next(x, 2, &r, 1e6), ==, STATS_CONTINUE);
	/* at min with CV 0: the CV target is what stopped it */
	g_assert_cmpint(stats_repeat_next(x, 3, &r, 1e6), ==, STATS_STOP_CV);
}

static void test_stop_cv(void)
{
	/*
	 * Feed 10, 12, 10, 10, ... with target CV 10% and min 3:
	 *  n=3 {10,12,10}: mean 10.667, var ((.667^2)*2 + 1.333^2)/2 = 1.3333, sd 1.1547,
	 *      CV 0.10825 > 0.10 -> continue;
	 *  n=4 {10,12,10,10}: mean 10.5, var (.25*3 + 2.25)/3 = 1, sd 1, CV 0.095238 -> stop.
	 */
	const struct stats_repeat_rule r = { .min = 3, .max = 10, .until_cv = 0.10 };
	const double x[] = { 10, 12, 10, 10, 10, 10 };
	size_t n = 0;
	enum stats_stop s;
	while ((s = stats_repeat_next(x, n, &r, (double)n)) == STATS_CONTINUE)
		n++;
	g_assert_cmpint(s, ==, STATS_STOP_CV);
	g_assert_cmpuint(n, ==, 4);
	/* {10, 12}: CV 0.1286 would not have stopped even without min */
	g_assert_cmpint(
	    stats_repeat_next(
		x, 2, &(struct stats_repeat_rule){ .min = 1, .max = 10, .until_cv = 0.10 }, 0),
	    ==, STATS_CONTINUE);
}

static void test_stop_max(void)
{
	/* noisy data never reaches 1%: stops at max, not one later */
	const struct stats_repeat_rule r = { .min = 3, .max = 6, .until_cv = 0.01 };
	const double x[] = { 10, 20, 10, 20, 10, 20, 10, 20 };
	size_t n = 0;
	enum stats_stop s;
	while ((s = stats_repeat_next(x, n, &r, 0)) == STATS_CONTINUE)
		n++;
	g_assert_cmpint(s, ==, STATS_STOP_MAX);
	g_assert_cmpuint(n, ==, 6);

	/* `repeat: 5` is min = max = 5 without a CV target */
	const struct stats_repeat_rule fixed = { .min = 5, .max = 5 };
	g_assert_cmpint(stats_repeat_next(x, 4, &fixed, 0), ==, STATS_CONTINUE);
	g_assert_cmpint(stats_repeat_next(x, 5, &fixed, 0), ==, STATS_STOP_MAX);
	/* no CV target, no budget: runs on to max even when the data is perfectly stable */
	const double flat[] = { 1, 1, 1, 1 };
	const struct stats_repeat_rule nocv = { .min = 2, .max = 4 };
	g_assert_cmpint(stats_repeat_next(flat, 3, &nocv, 0), ==, STATS_CONTINUE);
	g_assert_cmpint(stats_repeat_next(flat, 4, &nocv, 0), ==, STATS_STOP_MAX);
}

static void test_stop_budget(void)
{
	/* runs of 10 s with a 35 s budget and noisy data: n=3 at 30 s continues, n=4 at 40 s
	 * stops for the budget, well before max */
	const struct stats_repeat_rule r = { .min = 2, .max = 100, .until_cv = 0.01, .budget = 35 };
	const double x[] = { 10, 12, 9, 11, 10, 13 };
	size_t n = 0;
	enum stats_stop s;
	while ((s = stats_repeat_next(x, n, &r, 10.0 * (double)n)) == STATS_CONTINUE)
		n++;
	g_assert_cmpint(s, ==, STATS_STOP_BUDGET);
	g_assert_cmpuint(n, ==, 4);
	/* exactly at the budget counts as used up; just under does not */
	g_assert_cmpint(stats_repeat_next(x, 3, &r, 35), ==, STATS_STOP_BUDGET);
	g_assert_cmpint(stats_repeat_next(x, 3, &r, 34.999), ==, STATS_CONTINUE);
	/* the budget never cuts a cell below min */
	const struct stats_repeat_rule m = { .min = 5, .max = 100, .budget = 1 };
	g_assert_cmpint(stats_repeat_next(x, 4, &m, 1000), ==, STATS_CONTINUE);
	g_assert_cmpint(stats_repeat_next(x, 5, &m, 1000), ==, STATS_STOP_BUDGET);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/stats/summary/known", test_summary_known);
	g_test_add_func("/stats/summary/small", test_summary_small);
	g_test_add_func("/stats/percentile", test_percentile);
	g_test_add_func("/stats/t/quantile", test_t_quantile);
	g_test_add_func("/stats/t/cdf", test_t_cdf);
	g_test_add_func("/stats/outliers", test_outliers);
	g_test_add_func("/stats/throughput", test_throughput);
	g_test_add_func("/stats/welch", test_welch);
	g_test_add_func("/stats/stop/names", test_stop_names);
	g_test_add_func("/stats/stop/min", test_stop_min);
	g_test_add_func("/stats/stop/cv", test_stop_cv);
	g_test_add_func("/stats/stop/max", test_stop_max);
	g_test_add_func("/stats/stop/budget", test_stop_budget);
	return g_test_run();
}
