/* SPDX-License-Identifier: MIT */
/* The statistics of a run with blocks (design.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "compare-impl.h"
#include "design.h"

struct kv {
	int64_t key;
	double v;
};

static int cmp_kv(const void *a, const void *b)
{
	const struct kv *x = a, *y = b;
	return (x->key > y->key) - (x->key < y->key);
}

/* The log totals of c's measured runs, sorted by boot (block, else boot id); returns how many. */
static size_t boot_runs(const struct result_cell *c, struct kv **out)
{
	bool blocks = true;
	for (size_t i = 0; i < c->n_runs; i++)
		if (cmp_measured(&c->runs[i]) && c->runs[i].block <= 0)
			blocks = false;
	struct kv *a = xcalloc(c->n_runs + 1, sizeof(*a));
	size_t n = 0;
	for (size_t i = 0; i < c->n_runs; i++) {
		const struct result_run *r = &c->runs[i];
		if (!cmp_measured(r) || !(r->total > 0))
			continue;
		a[n++] = (struct kv){ blocks ? r->block : r->boot, log(r->total) };
	}
	qsort(a, n, sizeof(*a), cmp_kv);
	*out = a;
	return n;
}

/* Boot means into *means (caller frees), and the pooled within-boot sum of squares and its
 * degrees of freedom, the mean runs per boot. Returns the boots. */
static size_t boot_means(const struct kv *a, size_t n, double **means, double *ss, size_t *df)
{
	double *m = xcalloc(n + 1, sizeof(*m));
	size_t k = 0;
	*ss = 0;
	*df = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		double sum = 0;
		for (; j < n && a[j].key == a[i].key; j++)
			sum += a[j].v;
		double mean = sum / (double)(j - i);
		for (size_t q = i; q < j; q++)
			*ss += (a[q].v - mean) * (a[q].v - mean);
		*df += j - i - 1;
		m[k++] = mean;
		i = j;
	}
	*means = m;
	return k;
}

size_t design_components(const struct result_cell *const *cells, size_t n, double *within,
			 double *between)
{
	double sw = 0, sb = 0;
	size_t used = 0;
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ struct kv *a = NULL;
		size_t nr = boot_runs(cells[i], &a);
		_cleanup_free_ double *m = NULL;
		double ss, mean, var;
		size_t df;
		size_t k = boot_means(a, nr, &m, &ss, &df);
		if (k < 2 || df == 0)
			continue;
		double w = ss / (double)df;
		stats_mean_var(m, k, &mean, &var);
		/* a boot mean of n runs varies by between + within / n */
		double b = var - w / ((double)nr / (double)k);
		sw += w;
		sb += b > 0 ? b : 0;
		used++;
	}
	*within = used ? sw / (double)used : NAN;
	*between = used ? sb / (double)used : NAN;
	return used;
}

unsigned design_runs_per_boot(double boot_s, double run_s, double within, double between,
			      unsigned max, unsigned fallback)
{
	if (!isfinite(boot_s) || !isfinite(run_s) || !(run_s > 0) || !isfinite(within) ||
	    !isfinite(between) || boot_s < 0)
		return fallback;
	if (!(within > 0))
		return 1;
	if (!(between > 0))
		return max;
	double r = ceil(sqrt((boot_s / run_s) * (within / between)));
	return r < 1 ? 1 : r > (double)max ? max : (unsigned)r;
}

double design_cell_halfwidth(const struct result_cell *c)
{
	_cleanup_free_ struct kv *a = NULL;
	size_t nr = boot_runs(c, &a);
	_cleanup_free_ double *m = NULL;
	double ss, mean, var;
	size_t df;
	size_t k = boot_means(a, nr, &m, &ss, &df);
	if (k < 2)
		return INFINITY;
	stats_mean_var(m, k, &mean, &var);
	return expm1(stats_t_quantile(0.975, (double)(k - 1)) * sqrt(var / (double)k));
}

static const char *axis_value(const struct result_cell *c, const char *key)
{
	for (size_t i = 0; i < c->n_axes; i++)
		if (STREQ(c->axes[i].key, key))
			return c->axes[i].value;
	return NULL;
}

/* Whether a and b have the same axes and differ in the value of exactly one. */
static bool one_apart(const struct result_cell *a, const struct result_cell *b)
{
	if (a->n_axes != b->n_axes)
		return false;
	size_t diff = 0;
	for (size_t i = 0; i < a->n_axes; i++) {
		const char *v = axis_value(b, a->axes[i].key);
		if (!v)
			return false;
		diff += !STREQ(v, a->axes[i].value);
	}
	return diff == 1;
}

size_t design_pairs(const struct result_cell *const *cells, size_t n, struct verdict_pair **pairs)
{
	size_t np = 0, cap = 0;
	struct verdict_pair *p = NULL;
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++) {
			if (!one_apart(cells[i], cells[j]))
				continue;
			p = xgrow(p, &cap, np + 1, sizeof(*p));
			p[np++] = (struct verdict_pair){ cells[i], cells[j] };
		}
	*pairs = p;
	return np;
}

double design_halfwidth(const struct results *r, const struct result_cell *const *cells, size_t n)
{
	double worst = 0;
	for (size_t i = 0; i < n; i++) {
		double h = design_cell_halfwidth(cells[i]);
		if (!(h <= worst))
			worst = h;
	}
	_cleanup_free_ struct verdict_pair *pairs = NULL;
	size_t np = design_pairs(cells, n, &pairs);
	if (np == 0)
		return worst;
	_cleanup_free_ struct verdict *v = xcalloc(np, sizeof(*v));
	_cleanup_free_ char *err = NULL;
	if (verdict_pairs(r, pairs, np, &(struct verdict_opts){ 0 }, v, &err) < 0)
		return INFINITY;
	for (size_t i = 0; i < np; i++) {
		double h = isfinite(v[i].gain_low) && isfinite(v[i].gain_high)
			       ? expm1((log1p(v[i].gain_high) - log1p(v[i].gain_low)) / 2)
			       : INFINITY;
		if (!(h <= worst))
			worst = h;
		verdict_clear(&v[i]);
	}
	return worst;
}

enum stats_stop design_stop(const struct design_rule *rule, unsigned blocks, double elapsed,
			    double halfwidth)
{
	if (blocks < rule->min)
		return STATS_CONTINUE;
	if (rule->until > 0 && halfwidth <= rule->until)
		return STATS_STOP_HALFWIDTH;
	if (blocks >= rule->max)
		return STATS_STOP_MAX;
	if (rule->budget > 0 && elapsed >= rule->budget)
		return STATS_STOP_BUDGET;
	return STATS_CONTINUE;
}
