/* SPDX-License-Identifier: MIT */
/*
 * Statistics over repeated measurements (seconds): summaries with a Student-t confidence
 * interval, percentiles, MAD outlier flags, throughput, Welch's t-test for `ferry compare`, and
 * the adaptive repeat stopping rule. Pure functions: no I/O, no global state.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * Summary of n samples. Undefined values are NAN: everything when n == 0; stddev, cv and the
 * confidence interval when n == 1; cv when the mean is 0.
 */
struct stats_summary {
	size_t n;
	double mean;
	double median;
	double stddev; /* sample standard deviation (divides by n - 1) */
	double cv;     /* coefficient of variation: stddev / mean (a fraction, 0.05 = 5%) */
	double min, max;
	double p90;    /* 90th percentile, stats_percentile() method */
	double ci_low; /* 95% confidence interval of the mean: mean -+ t(0.975, n-1) * sd/sqrt(n) */
	double ci_high;
};

/*
 * Summarize x[0..n). x is not modified (a sorted copy is made). n may be 0. The samples must be
 * finite (callers filter out what did not run).
 */
void stats_summarize(const double *x, size_t n, struct stats_summary *out);

/*
 * The p-quantile (0 <= p <= 1) of sorted[0..n) by linear interpolation between closest ranks:
 * Hyndman & Fan type 7, the default of R's quantile() and numpy.percentile(). With h = (n-1)p,
 * the result is sorted[floor h] + (h - floor h) * (sorted[floor h + 1] - sorted[floor h]).
 * NAN when n == 0.
 */
double stats_percentile(const double *sorted, size_t n, double p);

/* Cumulative distribution function of Student's t with df degrees of freedom (df > 0, may be
 * INFINITY for the standard normal). */
double stats_t_cdf(double t, double df);

/* Inverse of stats_t_cdf(): the p-quantile (0 < p < 1) of Student's t with df degrees of freedom
 * (df > 0, may be INFINITY). Accurate to about 1e-10 for the df of real samples (1e-9 near
 * df 1e7, where it switches to the normal distribution). NAN for arguments out of range. */
double stats_t_quantile(double p, double df);

/*
 * Flag outliers by the modified z-score of Iglewicz and Hoaglin (1993):
 *   M_i = 0.6745 * (x_i - median) / MAD,  MAD = median(|x_i - median|),
 * and x_i is an outlier when |M_i| > 3.5. When MAD is 0 (more than half the samples equal), the
 * score is undefined: then every sample that differs from the median is flagged, since the bulk
 * of the data has no spread at all. Fewer than 3 samples never have outliers.
 * flags[0..n) receives the verdicts; returns how many were flagged.
 */
size_t stats_outliers(const double *x, size_t n, bool *flags);

/* Mean and sample variance of x[0..n); NAN for the mean of nothing and the variance of fewer
 * than 2 values. */
void stats_mean_var(const double *x, size_t n, double *mean, double *var);

/* amount (bytes or files) per second; NAN when seconds is not positive. */
double stats_throughput(double amount, double seconds);

/*
 * Welch's unequal-variances t-test of two independent samples, a (baseline) and b (candidate),
 * and the relative change of the mean (mean_b - mean_a) / mean_a with its confidence interval by
 * Fieller's theorem for a ratio of independent means (using the Welch degrees of freedom).
 */
struct stats_compare {
	double mean_a, mean_b;
	double t;           /* (mean_b - mean_a) / sqrt(var_a/n_a + var_b/n_b) */
	double df;          /* Welch-Satterthwaite degrees of freedom */
	double p_value;     /* two-sided */
	double rel_change;  /* (mean_b - mean_a) / mean_a; +0.10 means b is 10% larger (slower) */
	double rel_ci_low;  /* confidence interval of rel_change; both NAN when the Fieller */
	double rel_ci_high; /* interval is unbounded (mean_a not clearly distinct from 0) */
};

/*
 * Compare a[0..na) with b[0..nb) at confidence level `level` (e.g. 0.95) for the interval.
 * Needs na >= 2 and nb >= 2; returns -1 otherwise (out is then untouched), 0 on success.
 * When both samples have zero variance, t is +-INFINITY and p is 0 if the means differ, or t is 0
 * and p is 1 if they are equal; df is then na + nb - 2.
 */
int stats_welch(const double *a, size_t na, const double *b, size_t nb, double level,
		struct stats_compare *out);

/*
 * Benjamini-Hochberg (1995) false discovery rate control at level q over p[0..n): with the
 * p-values sorted p(1) <= ... <= p(n), reject the hypotheses of p(1)..p(k) for the largest k with
 * p(k) <= k q / n. reject[i] receives the verdict of p[i]; a NAN p-value is never rejected and
 * does not count in n. Returns how many were rejected.
 */
size_t stats_bh(const double *p, size_t n, double q, bool *reject);

/* Why the repeat loop of a cell stopped (or that it should go on). */
enum stats_stop {
	STATS_CONTINUE = 0,
	STATS_STOP_CV,        /* "cv-reached": the CV of the samples is at or below the target */
	STATS_STOP_MAX,       /* "max-reached": max samples taken */
	STATS_STOP_BUDGET,    /* "budget-exhausted": the time budget is used up */
	STATS_STOP_HALFWIDTH, /* "halfwidth-reached": every boot-level interval is narrow enough
				 (run.until, with blocks) */
};

/* "continue", "cv-reached", "max-reached", "budget-exhausted", "halfwidth-reached". */
const char *stats_stop_name(enum stats_stop s);
/* Inverse of stats_stop_name(); returns -1 for an unknown name. */
int stats_stop_from_name(const char *name);

struct stats_repeat_rule {
	size_t min;      /* never stop before this many samples (>= 1) */
	size_t max;      /* never take more than this many (>= min) */
	double until_cv; /* target CV as a fraction (0.05 = 5%); 0 or NAN: no CV target */
	double budget;   /* seconds the measured runs of a cell may take; 0 or NAN: no budget */
};

/*
 * The adaptive stopping rule, given the n samples taken so far (the totals of measured runs)
 * and the seconds spent on them so far. Checked in this order:
 *   1. n < min                                  -> STATS_CONTINUE (min always wins, even over
 *                                                  the budget: a cell must have min samples)
 *   2. until_cv set, n >= 2 and CV <= until_cv  -> STATS_STOP_CV
 *   3. n >= max                                 -> STATS_STOP_MAX
 *   4. budget set and elapsed >= budget         -> STATS_STOP_BUDGET
 *   5. otherwise                                -> STATS_CONTINUE
 * A plain `repeat: N` is min = max = N and stops with STATS_STOP_MAX (or STATS_STOP_CV when a
 * target is also set and reached at N). With no CV target the loop runs to max or budget.
 */
enum stats_stop stats_repeat_next(const double *samples, size_t n,
				  const struct stats_repeat_rule *rule, double elapsed);
