/* SPDX-License-Identifier: MIT */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double *sorted_copy(const double *x, size_t n)
{
	double *s = xmalloc(n * sizeof(*s));
	if (n)
		memcpy(s, x, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	return s;
}

double stats_percentile(const double *sorted, size_t n, double p)
{
	if (n == 0 || !(p >= 0 && p <= 1))
		return NAN;
	double h = (double)(n - 1) * p;
	size_t lo = (size_t)floor(h);
	if (lo >= n - 1)
		return sorted[n - 1];
	return sorted[lo] + (h - (double)lo) * (sorted[lo + 1] - sorted[lo]);
}

void stats_summarize(const double *x, size_t n, struct stats_summary *out)
{
	*out = (struct stats_summary){
		.n = n,
		.mean = NAN,
		.median = NAN,
		.stddev = NAN,
		.cv = NAN,
		.min = NAN,
		.max = NAN,
		.p90 = NAN,
		.ci_low = NAN,
		.ci_high = NAN,
	};
	if (n == 0)
		return;

	_cleanup_free_ double *s = sorted_copy(x, n);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += s[i];
	double mean = sum / (double)n;
	out->mean = mean;
	out->min = s[0];
	out->max = s[n - 1];
	out->median = stats_percentile(s, n, 0.5);
	out->p90 = stats_percentile(s, n, 0.9);
	if (n < 2)
		return;

	/* two-pass variance: no cancellation for samples far from 0 with a small spread */
	double ss = 0;
	for (size_t i = 0; i < n; i++)
		ss += (s[i] - mean) * (s[i] - mean);
	out->stddev = sqrt(ss / (double)(n - 1));
	if (mean != 0)
		out->cv = out->stddev / mean;
	double half = stats_t_quantile(0.975, (double)(n - 1)) * out->stddev / sqrt((double)n);
	out->ci_low = mean - half;
	out->ci_high = mean + half;
}

/*
 * Continued fraction for the regularized incomplete beta function, evaluated with the modified
 * Lentz method (Numerical Recipes 6.4, betacf; DLMF 8.17.22). Converges quickly for
 * x < (a + 1) / (a + b + 2); the caller uses the symmetry I_x(a,b) = 1 - I_{1-x}(b,a) otherwise.
 */
static double beta_cf(double a, double b, double x)
{
	const double tiny = 1e-300, eps = 1e-16;
	double qab = a + b, qap = a + 1, qam = a - 1;
	double c = 1, d = 1 - qab * x / qap;

	if (fabs(d) < tiny)
		d = tiny;
	d = 1 / d;
	double h = d;
	for (int m = 1; m <= 10000; m++) {
		int m2 = 2 * m;
		double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
		d = 1 + aa * d;
		if (fabs(d) < tiny)
			d = tiny;
		c = 1 + aa / c;
		if (fabs(c) < tiny)
			c = tiny;
		d = 1 / d;
		h *= d * c;
		aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
		d = 1 + aa * d;
		if (fabs(d) < tiny)
			d = tiny;
		c = 1 + aa / c;
		if (fabs(c) < tiny)
			c = tiny;
		d = 1 / d;
		double del = d * c;
		h *= del;
		if (fabs(del - 1) < eps)
			break;
	}
	return h;
}

/* Regularized incomplete beta function I_x(a, b). */
static double beta_inc(double a, double b, double x)
{
	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
	double bt = exp(lbt);
	if (x < (a + 1) / (a + b + 2))
		return bt * beta_cf(a, b, x) / a;
	return 1 - bt * beta_cf(b, a, 1 - x) / b;
}

/* Beyond this many degrees of freedom t is the normal distribution to better than 1e-7, and the
 * continued fraction would need thousands of terms. */
#define DF_NORMAL 1e7

/* P(T > t) for t >= 0, computed directly (not as 1 - cdf) so that small p-values keep their
 * precision. */
static double t_upper(double t, double df)
{
	if (df > DF_NORMAL)
		return 0.5 * erfc(t / M_SQRT2);
	/* P(|T| > t) = I_{df/(df+t^2)}(df/2, 1/2) */
	return 0.5 * beta_inc(df / 2, 0.5, df / (df + t * t));
}

double stats_t_cdf(double t, double df)
{
	if (isnan(t) || !(df > 0))
		return NAN;
	if (isinf(t))
		return t > 0 ? 1 : 0;
	return t >= 0 ? 1 - t_upper(t, df) : t_upper(-t, df);
}

double stats_t_quantile(double p, double df)
{
	if (!(p > 0 && p < 1) || !(df > 0))
		return NAN;
	if (p == 0.5)
		return 0;
	if (p < 0.5)
		return -stats_t_quantile(1 - p, df);

	/* find t > 0 with P(T > t) = q: the upper tail falls monotonically, so bracket and bisect
	 * (robust for every df, including df = 1 where the tail is heavy) */
	double q = 1 - p, lo = 0, hi = 1;
	while (t_upper(hi, df) > q) {
		lo = hi;
		hi *= 2;
		if (hi > 1e300)
			return INFINITY;
	}
	for (int i = 0; i < 200 && hi - lo > 1e-14 * hi; i++) {
		double mid = lo + (hi - lo) / 2;
		if (t_upper(mid, df) > q)
			lo = mid;
		else
			hi = mid;
	}
	return lo + (hi - lo) / 2;
}

size_t stats_outliers(const double *x, size_t n, bool *flags)
{
	size_t count = 0;

	for (size_t i = 0; i < n; i++)
		flags[i] = false;
	if (n < 3)
		return 0;

	_cleanup_free_ double *s = sorted_copy(x, n);
	double med = stats_percentile(s, n, 0.5);
	_cleanup_free_ double *dev = xmalloc(n * sizeof(*dev));
	double sum_dev = 0;
	for (size_t i = 0; i < n; i++) {
		dev[i] = fabs(x[i] - med);
		sum_dev += dev[i];
	}
	qsort(dev, n, sizeof(*dev), cmp_double);
	double mad = stats_percentile(dev, n, 0.5);

	/* 0.6745 * MAD estimates one standard deviation of normal data; when MAD is 0 (over half
	 * the samples equal the median) fall back to the mean absolute deviation, of which
	 * 1.253314 (sqrt(pi/2)) times estimates it (the usual fallback, e.g. IBM SPSS) */
	double scale;
	if (mad > 0)
		scale = mad / 0.6745;
	else
		scale = 1.253314 * (sum_dev / (double)n);
	if (!(scale > 0))
		return 0; /* every sample is equal */
	for (size_t i = 0; i < n; i++) {
		if (fabs(x[i] - med) / scale > 3.5) {
			flags[i] = true;
			count++;
		}
	}
	return count;
}

double stats_throughput(double amount, double seconds)
{
	if (!(seconds > 0))
		return NAN;
	return amount / seconds;
}

void stats_mean_var(const double *x, size_t n, double *mean, double *var)
{
	double sum = 0, ss = 0;
	for (size_t i = 0; i < n; i++)
		sum += x[i];
	*mean = n ? sum / (double)n : NAN;
	for (size_t i = 0; i < n; i++)
		ss += (x[i] - *mean) * (x[i] - *mean);
	*var = n > 1 ? ss / (double)(n - 1) : NAN;
}

int stats_welch(const double *a, size_t na, const double *b, size_t nb, double level,
		struct stats_compare *out)
{
	double ma, va, mb, vb;

	if (na < 2 || nb < 2 || !(level > 0 && level < 1))
		return -1;
	stats_mean_var(a, na, &ma, &va);
	stats_mean_var(b, nb, &mb, &vb);
	double sa = va / (double)na, sb = vb / (double)nb; /* squared standard errors */
	double se2 = sa + sb;

	struct stats_compare c = { .mean_a = ma, .mean_b = mb };
	if (se2 > 0) {
		c.t = (mb - ma) / sqrt(se2);
		c.df = se2 * se2 / (sa * sa / (double)(na - 1) + sb * sb / (double)(nb - 1));
		c.p_value = 2 * t_upper(fabs(c.t), c.df);
	} else {
		c.df = (double)(na + nb - 2);
		c.t = mb == ma ? 0 : (mb > ma ? INFINITY : -INFINITY);
		c.p_value = mb == ma ? 1 : 0;
	}
	c.rel_change = ma != 0 ? (mb - ma) / ma : NAN;

	/*
	 * Fieller's interval for R = mean_b / mean_a (independent samples): the R with
	 * (mb - R ma)^2 <= t^2 (sb + R^2 sa), i.e. the roots of
	 *   (ma^2 - t^2 sa) R^2 - 2 ma mb R + (mb^2 - t^2 sb) = 0.
	 * Bounded only when ma^2 > t^2 sa (g < 1): mean_a is clearly distinct from 0.
	 */
	double tq = stats_t_quantile((1 + level) / 2, c.df);
	double A = ma * ma - tq * tq * sa;
	c.rel_ci_low = c.rel_ci_high = NAN;
	if (A > 0) {
		double disc = tq * tq * (ma * ma * sb + mb * mb * sa - tq * tq * sa * sb);
		double r = sqrt(disc > 0 ? disc : 0);
		c.rel_ci_low = (ma * mb - r) / A - 1;
		c.rel_ci_high = (ma * mb + r) / A - 1;
	}
	*out = c;
	return 0;
}

struct pidx {
	double p;
	size_t i;
};

static int cmp_pidx(const void *a, const void *b)
{
	const struct pidx *x = a, *y = b;
	if (x->p != y->p)
		return (x->p > y->p) - (x->p < y->p);
	return (x->i > y->i) - (x->i < y->i);
}

size_t stats_bh(const double *p, size_t n, double q, bool *reject)
{
	_cleanup_free_ struct pidx *s = xcalloc(n ? n : 1, sizeof(*s));
	size_t m = 0, k = 0;
	for (size_t i = 0; i < n; i++) {
		reject[i] = false;
		if (!isnan(p[i]))
			s[m++] = (struct pidx){ p[i], i };
	}
	qsort(s, m, sizeof(*s), cmp_pidx);
	for (size_t j = m; j > 0; j--)
		if (s[j - 1].p <= (double)j * q / (double)m) {
			k = j;
			break;
		}
	for (size_t j = 0; j < k; j++)
		reject[s[j].i] = true;
	return k;
}

static const char *const stop_names[] = {
	[STATS_CONTINUE] = "continue",
	[STATS_STOP_CV] = "cv-reached",
	[STATS_STOP_MAX] = "max-reached",
	[STATS_STOP_BUDGET] = "budget-exhausted",
	[STATS_STOP_HALFWIDTH] = "halfwidth-reached",
};

const char *stats_stop_name(enum stats_stop s)
{
	if ((size_t)s < ELEMENTSOF(stop_names))
		return stop_names[s];
	return "unknown";
}

int stats_stop_from_name(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(stop_names); i++)
		if (STREQ(stop_names[i], name))
			return (int)i;
	return -1;
}

enum stats_stop stats_repeat_next(const double *samples, size_t n,
				  const struct stats_repeat_rule *rule, double elapsed)
{
	size_t min = rule->min ? rule->min : 1;

	if (n < min)
		return STATS_CONTINUE;
	if (rule->until_cv > 0 && n >= 2) {
		struct stats_summary s;
		stats_summarize(samples, n, &s);
		if (s.cv <= rule->until_cv)
			return STATS_STOP_CV;
	}
	if (n >= rule->max)
		return STATS_STOP_MAX;
	if (rule->budget > 0 && elapsed >= rule->budget)
		return STATS_STOP_BUDGET;
	return STATS_CONTINUE;
}
