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

struct trend_acc;
static void acc_free(struct trend_acc *acc);

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
	free(t->env_cells);
	acc_free(t->acc);
	free(t);
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

/* Building: files are added one at a time in any order (trend_add()), and only what the trend
 * needs of each is kept, so that memory grows with the points, not with the files' raw runs;
 * trend_end() orders them by start time. */
struct trend_acc {
	struct strmap keys;
	char **key_text;
	size_t n_keys, key_cap, cell_cap;
	struct order *in;   /* per input: its start and name, for the order */
	size_t *newest;     /* per cell: the input it was last seen newest in */
	size_t *newest_pos; /* per cell: its position in that input */
	size_t *points_cap; /* per cell */
	size_t n_in, in_cap;
};

/* Whether input a is newer than input b (the order trend_end() puts them in). */
static bool newer(const struct trend_acc *acc, size_t a, size_t b)
{
	return order_cmp(&acc->in[a], &acc->in[b]) > 0;
}

struct trend *trend_begin(void)
{
	struct trend *t = xcalloc(1, sizeof(*t));
	t->acc = xcalloc(1, sizeof(*t->acc));
	strmap_init(&t->acc->keys, 64);
	return t;
}

void trend_add(struct trend *t, const struct results *r, const char *name)
{
	struct trend_acc *acc = t->acc;
	size_t f = acc->n_in;
	acc->in = xgrow(acc->in, &acc->in_cap, f + 1, sizeof(*acc->in));
	t->files = xrealloc(t->files, (f + 1) * sizeof(*t->files));
	t->files[f] = (struct trend_file){
		.name = xstrdup(name),
		.started_ms = r->provenance.started_ms,
		.hostname = dup_or_null(r->provenance.hostname),
		.ferry_version = dup_or_null(r->provenance.ferry_version),
	};
	acc->in[f] = (struct order){ f, r->provenance.started_ms, t->files[f].name };
	acc->n_in = t->n_files = f + 1;
	for (size_t c = 0; c < r->n_cells; c++) {
		const struct result_cell *rc = &r->cells[c];
		char *key = cell_key(rc);
		uint32_t k = strmap_get(&acc->keys, key, 0);
		if (k == STRMAP_NONE) {
			acc->key_text =
			    xgrow(acc->key_text, &acc->key_cap, acc->n_keys + 1, sizeof(char *));
			acc->key_text[acc->n_keys++] = key;
			k = (uint32_t)t->n_cells;
			strmap_put(&acc->keys, key, 0, k);
			size_t n1 = t->n_cells + 1;
			t->cells = xgrow(t->cells, &acc->cell_cap, n1, sizeof(*t->cells));
			acc->newest = xrealloc(acc->newest, acc->cell_cap * sizeof(size_t));
			acc->newest_pos = xrealloc(acc->newest_pos, acc->cell_cap * sizeof(size_t));
			acc->points_cap = xrealloc(acc->points_cap, acc->cell_cap * sizeof(size_t));
			t->cells[k] = (struct trend_cell){ .id = xstrdup(rc->id) };
			acc->newest[k] = f;
			acc->newest_pos[k] = c;
			acc->points_cap[k] = 0;
			t->n_cells = n1;
		} else {
			free(key);
			if (newer(acc, f, acc->newest[k])) {
				/* the newest file names the cell and places it */
				free(t->cells[k].id);
				t->cells[k].id = xstrdup(rc->id);
				acc->newest[k] = f;
				acc->newest_pos[k] = c;
			}
		}
		struct trend_cell *tc = &t->cells[k];
		const struct stats_summary *s = &rc->stats.total;
		/* a file holding the same cell twice (it cannot: the reader refuses) or a cell
		 * without a measured run gives no point */
		if (!rc->has_stats || s->n == 0 || !(s->median > 0) ||
		    (tc->n_points && tc->points[tc->n_points - 1].file == f))
			continue;
		tc->points =
		    xgrow(tc->points, &acc->points_cap[k], tc->n_points + 1, sizeof(*tc->points));
		tc->points[tc->n_points++] = (struct trend_point){
			.file = f,
			.median = s->median,
			.ci_low = s->ci_low,
			.ci_high = s->ci_high,
			.n = s->n,
		};
	}
}

static const struct trend_acc *sort_acc;

/* cells in the order the newest file holding each has them: newest file first */
static int cell_order(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	const struct trend_acc *acc = sort_acc;
	if (acc->newest[x] != acc->newest[y])
		return newer(acc, acc->newest[x], acc->newest[y]) ? -1 : 1;
	return acc->newest_pos[x] < acc->newest_pos[y] ? -1
						       : acc->newest_pos[x] > acc->newest_pos[y];
}

static int point_order(const void *a, const void *b)
{
	const struct trend_point *x = a, *y = b;
	return x->file < y->file ? -1 : x->file > y->file;
}

/* The most important cells first (a kept change, the largest first; then a pending one), for
 * the TREND_SHOW_CELLS the reports show. */
static double importance(const struct trend_cell *tc)
{
	double best = 0;
	for (size_t i = 0; i < tc->n_changes; i++) {
		double v = fabs(tc->changes[i].rel) + (tc->changes[i].pending ? 0 : 1e6);
		if (v > best)
			best = v;
	}
	return best;
}

static const struct trend *sort_t;

static int by_importance(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	double ix = importance(&sort_t->cells[x]), iy = importance(&sort_t->cells[y]);
	if (ix != iy)
		return ix > iy ? -1 : 1;
	return x < y ? -1 : x > y;
}

static void order_files_and_cells(struct trend *t)
{
	struct trend_acc *acc = t->acc;
	size_t n = t->n_files;
	_cleanup_free_ struct order *ord = xcalloc(n, sizeof(*ord));
	memcpy(ord, acc->in, n * sizeof(*ord));
	qsort(ord, n, sizeof(*ord), order_cmp);
	_cleanup_free_ size_t *rank = xcalloc(n, sizeof(*rank));
	struct trend_file *files = xcalloc(n, sizeof(*files));
	for (size_t f = 0; f < n; f++) {
		rank[ord[f].input] = f;
		files[f] = t->files[ord[f].input];
	}
	/* cells: sorted while acc still speaks of inputs */
	_cleanup_free_ size_t *idx = xcalloc(t->n_cells ? t->n_cells : 1, sizeof(*idx));
	for (size_t c = 0; c < t->n_cells; c++)
		idx[c] = c;
	sort_acc = acc;
	qsort(idx, t->n_cells, sizeof(*idx), cell_order);
	struct trend_cell *cells = xcalloc(t->n_cells ? t->n_cells : 1, sizeof(*cells));
	for (size_t c = 0; c < t->n_cells; c++)
		cells[c] = t->cells[idx[c]];
	free(t->cells);
	t->cells = cells;
	free(t->files);
	t->files = files;
	for (size_t c = 0; c < t->n_cells; c++) {
		struct trend_cell *tc = &t->cells[c];
		for (size_t i = 0; i < tc->n_points; i++)
			tc->points[i].file = rank[tc->points[i].file];
		if (tc->n_points > 1)
			qsort(tc->points, tc->n_points, sizeof(*tc->points), point_order);
	}
}

static void acc_free(struct trend_acc *acc)
{
	if (!acc)
		return;
	strmap_free(&acc->keys);
	for (size_t i = 0; i < acc->n_keys; i++)
		free(acc->key_text[i]);
	free(acc->key_text);
	free(acc->in);
	free(acc->newest);
	free(acc->newest_pos);
	free(acc->points_cap);
	free(acc);
}

struct trend *trend_end(struct trend *t, char **err)
{
	if (t->n_files == 0) {
		*err = xstrdup("no results files");
		trend_free(t);
		return NULL;
	}
	size_t n = t->n_files;
	order_files_and_cells(t);
	acc_free(t->acc);
	t->acc = NULL;

	/* the changes of every cell */
	_cleanup_free_ size_t *changed_at = xcalloc(n, sizeof(*changed_at));
	_cleanup_free_ size_t *present = xcalloc(n, sizeof(*present));
	for (size_t c = 0; c < t->n_cells; c++) {
		struct trend_cell *tc = &t->cells[c];
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
	/* an environment shift: many cells changing level at the same file */
	t->env = xcalloc(n, sizeof(*t->env));
	t->env_cells = xcalloc(n, sizeof(*t->env_cells));
	for (size_t f = 0; f < n; f++)
		if (changed_at[f] >= TREND_ENV_MIN_CELLS && 2 * changed_at[f] >= present[f]) {
			t->env_cells[t->n_env] = changed_at[f];
			t->env[t->n_env++] = f;
		}
	for (size_t c = 0; c < t->n_cells; c++) {
		struct trend_cell *tc = &t->cells[c];
		for (size_t i = 0; i < tc->n_changes; i++)
			for (size_t e = 0; e < t->n_env; e++)
				if (tc->points[tc->changes[i].at].file == t->env[e])
					tc->changes[i].environment = true;
	}
	/* the cells the reports show: all when few, else the most important (the rest are
	   counted in a summary line) */
	_cleanup_free_ size_t *idx = xcalloc(t->n_cells ? t->n_cells : 1, sizeof(*idx));
	for (size_t c = 0; c < t->n_cells; c++)
		idx[c] = c;
	sort_t = t;
	if (t->n_cells > TREND_SHOW_CELLS)
		qsort(idx, t->n_cells, sizeof(*idx), by_importance);
	for (size_t c = 0; c < t->n_cells && c < TREND_SHOW_CELLS; c++)
		t->cells[idx[c]].shown = true;
	for (size_t c = 0; c < t->n_cells; c++) {
		const struct trend_cell *tc = &t->cells[c];
		if (tc->shown)
			continue;
		t->hidden.cells++;
		bool kept = false, pending = false;
		for (size_t i = 0; i < tc->n_changes; i++)
			*(tc->changes[i].pending ? &pending : &kept) = true;
		t->hidden.with_change += kept;
		t->hidden.pending += !kept && pending;
	}
	return t;
}

struct trend *trend_build(struct results *const *in, const char *const *names, size_t n, char **err)
{
	struct trend *t = trend_begin();
	for (size_t i = 0; i < n; i++)
		trend_add(t, in[i], names[i]);
	return trend_end(t, err);
}
