/* SPDX-License-Identifier: MIT */
/* Change points over successive runs (trend.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "strmap.h"
#include "trend.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median_of(double *tmp, const double *y, size_t n)
{
	memcpy(tmp, y, n * sizeof(*y));
	qsort(tmp, n, sizeof(*tmp), cmp_double);
	return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

/* sum |y_i - median| over y[0..n) */
static double l1_cost(double *tmp, const double *y, size_t n)
{
	double m = median_of(tmp, y, n), c = 0;
	for (size_t i = 0; i < n; i++)
		c += fabs(y[i] - m);
	return c;
}

/* Robust spread of the series' noise: the MAD of successive differences (a step moves one
 * difference only), scaled to a standard deviation. */
static double robust_sigma(const double *y, size_t n, double *tmp)
{
	if (n < 3)
		return 0;
	double *d = xcalloc(n, sizeof(*d));
	for (size_t i = 1; i < n; i++)
		d[i - 1] = y[i] - y[i - 1];
	double m = median_of(tmp, d, n - 1);
	for (size_t i = 0; i < n - 1; i++)
		d[i] = fabs(d[i] - m);
	double mad = median_of(tmp, d, n - 1);
	free(d);
	return 1.4826 * mad / sqrt(2.0);
}

/* Optimal partitioning: the segment starts (cuts[0] = 0 excluded) minimizing cost + penalty. */
static size_t segment(const double *y, size_t n, double beta, size_t *cuts, double *tmp)
{
	double *F = xcalloc(n + 1, sizeof(*F));
	size_t *last = xcalloc(n + 1, sizeof(*last));
	F[0] = -beta;
	for (size_t t = 1; t <= n; t++) {
		F[t] = INFINITY;
		for (size_t s = 0; s + TREND_MIN_SEGMENT <= t; s++) {
			if (s > 0 && s < TREND_MIN_SEGMENT)
				continue;
			if (!isfinite(F[s]))
				continue;
			double c = F[s] + l1_cost(tmp, y + s, t - s) + beta;
			if (c < F[t] - 1e-12) { /* strict: the earliest optimum, deterministic */
				F[t] = c;
				last[t] = s;
			}
		}
	}
	size_t k = 0;
	for (size_t t = n; t > 0 && isfinite(F[t]); t = last[t])
		if (last[t] > 0)
			cuts[k++] = last[t];
	/* reverse into increasing order */
	for (size_t i = 0; i < k / 2; i++) {
		size_t x = cuts[i];
		cuts[i] = cuts[k - 1 - i];
		cuts[k - 1 - i] = x;
	}
	free(F);
	free(last);
	return k;
}

static double mean_of(const double *y, size_t a, size_t b)
{
	double s = 0;
	for (size_t i = a; i < b; i++)
		s += y[i];
	return s / (double)(b - a);
}

/* Pooled residual variance of y around the means of the segments [bounds[i], bounds[i+1]). */
static double pooled_var(const double *y, const size_t *bounds, size_t nseg, double *df)
{
	double ss = 0;
	size_t n = bounds[nseg];
	for (size_t i = 0; i < nseg; i++) {
		double m = mean_of(y, bounds[i], bounds[i + 1]);
		for (size_t j = bounds[i]; j < bounds[i + 1]; j++)
			ss += (y[j] - m) * (y[j] - m);
	}
	*df = (double)(n - nseg);
	return *df > 0 ? ss / *df : NAN;
}

/* two-sided p of a difference d of means of na and nb points, pooled variance v with df */
static double t_p(double d, size_t na, size_t nb, double v, double df)
{
	if (!(df > 0))
		return NAN;
	double se = sqrt(v * (1.0 / (double)na + 1.0 / (double)nb));
	if (se == 0)
		return d == 0 ? 1.0 : 0.0;
	double t = fabs(d) / se;
	return 2 * (1 - stats_t_cdf(t, df));
}

void trend_detect(const double *yin, size_t n, struct trend_change **out, size_t *n_out)
{
	*out = NULL;
	*n_out = 0;
	if (n < 2 * TREND_MIN_SEGMENT && n < 3)
		return;
	double *y = xcalloc(n, sizeof(*y)), *tmp = xcalloc(n, sizeof(*tmp));
	for (size_t i = 0; i < n; i++)
		y[i] = log(yin[i]);

	/* a level can only be judged from TREND_MIN_SEGMENT points: the newest point alone is
	 * left out of the segmentation and judged against the last level afterwards */
	size_t m = n - 1;
	size_t *bounds = xcalloc(n + 2, sizeof(*bounds));
	size_t nseg = 1;
	if (m >= 2 * TREND_MIN_SEGMENT) {
		double sigma = robust_sigma(y, m, tmp);
		/* identical values: any real step is worth a cut, the tests below decide */
		double beta = TREND_PENALTY * (sigma > 0 ? sigma : 1e-9) * log((double)m);
		nseg = segment(y, m, beta, bounds + 1, tmp) + 1;
	}
	bounds[0] = 0;
	bounds[nseg] = m;

	/* keep only significant and large changes: drop the weakest failing one, test again */
	/* the noise: the residual spread around the segments, but never below the robust spread
	 * of successive differences, which the segmentation cannot shrink by fitting the noise */
	double floor_var = m >= 3 ? pow(robust_sigma(y, m, tmp), 2) : 0;
	double *p = xcalloc(n, sizeof(*p)), *rel = xcalloc(n, sizeof(*rel));
	for (;;) {
		double df, v = fmax(pooled_var(y, bounds, nseg, &df), floor_var);
		size_t worst = 0;
		double worst_p = -1;
		for (size_t i = 1; i < nseg; i++) {
			double a = mean_of(y, bounds[i - 1], bounds[i]);
			double b = mean_of(y, bounds[i], bounds[i + 1]);
			rel[i] = exp(b - a) - 1;
			/* the segmentation chose where to cut among the m - 2 * MIN + 1 places a
			 * cut could go: the test is corrected for that choice (Bonferroni), or
			 * noise would pass it after the search found its luckiest split */
			double places = (double)(m + 1 - 2 * TREND_MIN_SEGMENT);
			p[i] = fmin(1.0, (places > 1 ? places : 1) *
					     t_p(b - a, bounds[i] - bounds[i - 1],
						 bounds[i + 1] - bounds[i], v, df));
			bool keep = fabs(rel[i]) >= TREND_MIN_CHANGE && p[i] <= TREND_P;
			double score = isnan(p[i]) ? 2 : p[i];
			if (!keep && score > worst_p) {
				worst_p = score;
				worst = i;
			}
		}
		if (!worst)
			break;
		memmove(bounds + worst, bounds + worst + 1, (nseg - worst) * sizeof(*bounds));
		nseg--;
	}
	struct trend_change *ch = xcalloc(nseg + 1, sizeof(*ch));
	size_t k = 0;
	for (size_t i = 1; i < nseg; i++)
		ch[k++] = (struct trend_change){ .at = bounds[i], .rel = rel[i], .p = p[i] };

	/* the newest point against the last level: its 99.9% prediction interval */
	size_t a = bounds[nseg - 1], len = m - a;
	if (len >= TREND_MIN_SEGMENT) {
		double df, v = fmax(pooled_var(y, bounds, nseg, &df), floor_var);
		double lvl = mean_of(y, a, m), d = y[n - 1] - lvl;
		double r = exp(d) - 1;
		double half = df > 0 ? stats_t_quantile(1 - TREND_P / 2, df) *
					   sqrt(v * (1 + 1.0 / (double)len))
				     : INFINITY;
		if (fabs(r) >= TREND_MIN_CHANGE && fabs(d) > half)
			ch[k++] = (struct trend_change){
				.at = n - 1, .rel = r, .p = NAN, .pending = true
			};
	}
	free(p);
	free(rel);
	free(bounds);
	free(y);
	free(tmp);
	if (!k) {
		free(ch);
		return;
	}
	*out = ch;
	*n_out = k;
}

/* ---- over results files ------------------------------------------------------------------ */

struct order {
	size_t input;
	int64_t started;
	const char *name;
};

static int order_cmp(const void *a, const void *b)
{
	const struct order *x = a, *y = b;
	if (x->started != y->started)
		return x->started < y->started ? -1 : 1;
	int c = strcmp(x->name, y->name);
	return c ? c : (x->input < y->input ? -1 : x->input > y->input);
}

/* The key that makes a cell the same cell in another file: its resolved parameters in a
 * canonical form (keys sorted), else its id. */
static char *cell_key(const struct result_cell *c)
{
	if (c->params) {
		char *s = json_dumps(c->params, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
		if (s) {
			char *k = xasprintf("p:%s", s);
			free(s);
			return k;
		}
	}
	return xasprintf("i:%s", c->id);
}

void trend_free(struct trend *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n_files; i++) {
		free(t->files[i].name);
		free(t->files[i].hostname);
		free(t->files[i].ferry_version);
	}
	free(t->files);
	for (size_t i = 0; i < t->n_cells; i++) {
		free(t->cells[i].id);
		free(t->cells[i].points);
		free(t->cells[i].changes);
	}
	free(t->cells);
	free(t->env);
	free(t);
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

/* The rows of a trend by cell: cell_key() -> index in trend.cells. */
struct cell_rows {
	struct strmap keys;
	char **key_text; /* the keys, freed at the end */
	size_t n_keys, key_cap;
	size_t cap; /* of trend.cells */
};

/* The points of file f's cells (r) into t; a cell seen first gets its row. */
static void trend_file_cells(struct trend *t, struct cell_rows *rows, const struct results *r,
			     size_t f, size_t n)
{
	for (size_t c = 0; c < r->n_cells; c++) {
		const struct result_cell *rc = &r->cells[c];
		char *key = cell_key(rc);
		uint32_t k = strmap_get(&rows->keys, key, 0);
		if (k == STRMAP_NONE) {
			rows->key_text = xgrow(rows->key_text, &rows->key_cap, rows->n_keys + 1,
					       sizeof(*rows->key_text));
			rows->key_text[rows->n_keys++] = key;
			k = (uint32_t)t->n_cells;
			strmap_put(&rows->keys, key, 0, k);
			t->cells = xgrow(t->cells, &rows->cap, t->n_cells + 1, sizeof(*t->cells));
			t->cells[t->n_cells++] = (struct trend_cell){
				.id = xstrdup(rc->id),
				.points = xcalloc(n, sizeof(struct trend_point)),
			};
		} else {
			free(key);
		}
		struct trend_cell *tc = &t->cells[k];
		const struct stats_summary *s = &rc->stats.total;
		/* a file holding the same cell twice (it cannot: the reader refuses) or a
		 * cell without a measured run gives no point */
		if (!rc->has_stats || s->n == 0 || !(s->median > 0) ||
		    (tc->n_points && tc->points[tc->n_points - 1].file == f))
			continue;
		tc->points[tc->n_points++] = (struct trend_point){
			.file = f,
			.median = s->median,
			.ci_low = s->ci_low,
			.ci_high = s->ci_high,
			.n = s->n,
		};
	}
}

/* The cells of every file (in time order: ord), newest file first so that their order and ids
 * are the newest run's; each cell's points newest first. */
static void trend_cells(struct trend *t, struct results *const *in, const struct order *ord,
			size_t n)
{
	struct cell_rows rows = { 0 };
	strmap_init(&rows.keys, 64);
	for (size_t f = n; f-- > 0;)
		trend_file_cells(t, &rows, in[ord[f].input], f, n);
	strmap_free(&rows.keys);
	for (size_t i = 0; i < rows.n_keys; i++)
		free(rows.key_text[i]);
	free(rows.key_text);
}

/* A cell's points in time order, and its level changes (counted per file in changed_at; the
 * files the cell has a point after its first in, in present). */
static void cell_changes(struct trend_cell *tc, size_t *changed_at, size_t *present)
{
	for (size_t i = 0; i < tc->n_points / 2; i++) {
		struct trend_point x = tc->points[i];
		tc->points[i] = tc->points[tc->n_points - 1 - i];
		tc->points[tc->n_points - 1 - i] = x;
	}
	size_t skip = tc->n_points > TREND_MAX_POINTS ? tc->n_points - TREND_MAX_POINTS : 0;
	size_t np = tc->n_points - skip;
	_cleanup_free_ double *y = xcalloc(np + 1, sizeof(*y));
	for (size_t i = 0; i < np; i++)
		y[i] = tc->points[skip + i].median;
	trend_detect(y, np, &tc->changes, &tc->n_changes);
	for (size_t i = 0; i < tc->n_changes; i++) {
		tc->changes[i].at += skip;
		changed_at[tc->points[tc->changes[i].at].file]++;
	}
	for (size_t i = 1; i < tc->n_points; i++)
		present[tc->points[i].file]++;
}

struct trend *trend_build(struct results *const *in, const char *const *names, size_t n, char **err)
{
	if (n == 0) {
		*err = xstrdup("no results files");
		return NULL;
	}
	struct trend *t = xcalloc(1, sizeof(*t));
	_cleanup_free_ struct order *ord = xcalloc(n, sizeof(*ord));
	for (size_t i = 0; i < n; i++)
		ord[i] = (struct order){ i, in[i]->provenance.started_ms, names[i] };
	qsort(ord, n, sizeof(*ord), order_cmp);
	t->files = xcalloc(n, sizeof(*t->files));
	t->n_files = n;
	for (size_t f = 0; f < n; f++) {
		const struct results *r = in[ord[f].input];
		t->files[f] = (struct trend_file){
			.name = xstrdup(names[ord[f].input]),
			.started_ms = r->provenance.started_ms,
			.hostname = dup_or_null(r->provenance.hostname),
			.ferry_version = dup_or_null(r->provenance.ferry_version),
		};
	}

	/* cells, newest file first so that their order and ids are the newest run's */
	trend_cells(t, in, ord, n);
	/* points were added newest first: put them in time order, then find the changes */
	_cleanup_free_ size_t *changed_at = xcalloc(n, sizeof(*changed_at));
	_cleanup_free_ size_t *present = xcalloc(n, sizeof(*present));
	for (size_t c = 0; c < t->n_cells; c++)
		cell_changes(&t->cells[c], changed_at, present);
	/* an environment shift: many cells changing level at the same file */
	t->env = xcalloc(n, sizeof(*t->env));
	for (size_t f = 0; f < n; f++)
		if (changed_at[f] >= TREND_ENV_MIN_CELLS && 2 * changed_at[f] >= present[f])
			t->env[t->n_env++] = f;
	for (size_t c = 0; c < t->n_cells; c++) {
		struct trend_cell *tc = &t->cells[c];
		for (size_t i = 0; i < tc->n_changes; i++)
			for (size_t e = 0; e < t->n_env; e++)
				if (tc->points[tc->changes[i].at].file == t->env[e])
					tc->changes[i].environment = true;
	}
	return t;
}
