/* SPDX-License-Identifier: MIT */
/* The verdict rule of `ferry compare` for one cell and metric (compare.h): samples per boot,
 * Welch's t on log values, the lkp rule, the threshold, and what an inconclusive row lacks. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "compare-impl.h"
#include "stats.h"

/* ---- samples ----------------------------------------------------------------------------- */

bool cmp_measured(const struct result_run *run)
{
	return !run->warmup && run->integrity_ok && isfinite(run->total);
}

int cmp_metric_ref(const char *name, struct metric_ref *m)
{
	int id = metric_find(name);
	*m = (struct metric_ref){ -1, -1, name };
	if (id < 0)
		return strncmp(name, "phase.", 6) == 0 ? -1 : 0;
	switch (metric_defs[id].kind) {
	case METRIC_CELL: m->metric = id; break;
	case METRIC_PHASE:
		m->metric = id;
		m->phase = result_phase_from_name(name + strlen("phase."));
		break;
	case METRIC_SPREAD: /* no per-run value: read as a reported one, like any other name */
	case METRIC_RUN: break;
	}
	return 0;
}

double cmp_run_value(const struct result_run *run, const struct metric_ref *m)
{
	if (m->metric < 0) {
		json_t *v = run->metrics ? json_object_get(run->metrics, m->name) : NULL;
		return json_is_number(v) ? json_number_value(v) : NAN;
	}
	if (m->phase >= 0)
		return run->phase[m->phase];
	switch ((enum metric)m->metric) {
	case METRIC_TOTAL: return run->total;
	case METRIC_THROUGHPUT:
		return run->bytes && run->total > 0 ? (double)run->bytes / run->total : NAN;
	case METRIC_FILES_PER_S:
		return run->files && run->total > 0 ? (double)run->files / run->total : NAN;
	default: return NAN;
	}
}

void cmp_samples_push(struct samples *s, uint64_t key, double logv, double raw)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
		s->raw = xrealloc(s->raw, s->cap * sizeof(*s->raw));
		s->boot = xrealloc(s->boot, s->cap * sizeof(*s->boot));
	}
	s->v[s->n] = logv;
	s->raw[s->n] = raw;
	s->boot[s->n] = key;
	s->n++;
}

static void samples_add(struct samples *s, const struct result_cell *c, size_t file,
			const struct metric_ref *m, bool by_block)
{
	for (size_t i = 0; i < c->n_runs; i++) {
		const struct result_run *run = &c->runs[i];
		double x = cmp_measured(run) ? cmp_run_value(run, m) : NAN;
		if (!(x > 0) || !isfinite(x))
			continue;
		int64_t key = run->boot > 0 ? run->boot : 0;
		if (by_block && run->block > 0)
			key = run->block;
		cmp_samples_push(s, ((uint64_t)file << 40) | (uint64_t)key, log(x), x);
	}
}

void cmp_samples_add(struct samples *s, const struct result_cell *c, size_t file,
		     const struct metric_ref *m)
{
	samples_add(s, c, file, m, false);
}

void cmp_samples_add_blocks(struct samples *s, const struct result_cell *c, size_t file,
			    const struct metric_ref *m)
{
	samples_add(s, c, file, m, true);
}

void cmp_samples_free(struct samples *s)
{
	free(s->v);
	free(s->raw);
	free(s->boot);
}

struct vb {
	uint64_t boot;
	double v;
};

static int cmp_vb(const void *a, const void *b)
{
	const struct vb *x = a, *y = b;
	return (x->boot > y->boot) - (x->boot < y->boot);
}

size_t cmp_key_means(const struct samples *s, double **means, uint64_t **keys)
{
	_cleanup_free_ struct vb *a = xcalloc(s->n + 1, sizeof(*a));
	for (size_t i = 0; i < s->n; i++)
		a[i] = (struct vb){ s->boot[i], s->v[i] };
	qsort(a, s->n, sizeof(*a), cmp_vb);
	double *m = xcalloc(s->n + 1, sizeof(*m));
	uint64_t *key = keys ? xcalloc(s->n + 1, sizeof(*key)) : NULL;
	size_t k = 0;
	for (size_t i = 0; i < s->n;) {
		size_t j = i;
		double sum = 0;
		for (; j < s->n && a[j].boot == a[i].boot; j++)
			sum += a[j].v;
		if (key)
			key[k] = a[i].boot;
		m[k++] = sum / (double)(j - i);
		i = j;
	}
	*means = m;
	if (keys)
		*keys = key;
	return k;
}

double cmp_median(const double *x, size_t n)
{
	struct stats_summary s;
	stats_summarize(x, n, &s);
	return s.median;
}

static void min_max(const double *x, size_t n, double *lo, double *hi)
{
	*lo = INFINITY;
	*hi = -INFINITY;
	for (size_t i = 0; i < n; i++) {
		if (x[i] < *lo)
			*lo = x[i];
		if (x[i] > *hi)
			*hi = x[i];
	}
}

/* ---- one row ------------------------------------------------------------------------------ */

static void row_finish(struct cmp_row *row, struct row_work *w, double d, double se, double df,
		       double confidence);

void cmp_row_test(struct cmp_row *row, struct row_work *w, const struct samples *a,
		  const struct samples *b, double confidence)
{
	double *ma = NULL, *mb = NULL;
	size_t ka = cmp_key_means(a, &ma, NULL), kb = cmp_key_means(b, &mb, NULL);
	row->boots_base = ka;
	row->boots_cand = kb;
	double xa, va, xb, vb, se2, df;

	if (ka >= 2 && kb >= 2) {
		/* each boot mean carries between-boot + within/n: their spread estimates both */
		stats_mean_var(ma, ka, &xa, &va);
		stats_mean_var(mb, kb, &xb, &vb);
		double sa = va / (double)ka, sb = vb / (double)kb;
		se2 = sa + sb;
		df = se2 > 0 ? se2 * se2 / (sa * sa / (double)(ka - 1) + sb * sb / (double)(kb - 1))
			     : (double)(ka + kb - 2);
		row->between_known = true;
		w->s_boot = sqrt((va + vb) / 2);
		w->sa = ma, w->sb = mb, w->k_base = ka, w->k_cand = kb;
		ma = mb = NULL;
	} else if ((ka >= 2 && kb == 1) || (ka == 1 && kb >= 2)) {
		/* one side has a single boot: its mean has the variance of a boot mean of the
		 * other side (same cell, same host), so borrow it */
		const double *many = ka >= 2 ? ma : mb;
		size_t k = ka >= 2 ? ka : kb;
		double v;
		stats_mean_var(ma, ka, &xa, &v);
		stats_mean_var(mb, kb, &xb, &v);
		double xm;
		stats_mean_var(many, k, &xm, &v);
		se2 = v / (double)k + v;
		df = (double)(k - 1);
		row->between_known = true;
		w->s_boot = sqrt(v);
		w->sa = ma, w->sb = mb, w->k_base = ka, w->k_cand = kb;
		ma = mb = NULL;
	} else {
		/* one boot on each side: only the runs are left, and their spread misses the
		 * between-boot term; the interval is shown, the verdict is capped */
		stats_mean_var(a->v, a->n, &xa, &va);
		stats_mean_var(b->v, b->n, &xb, &vb);
		double sa = va / (double)a->n, sb = vb / (double)b->n;
		se2 = sa + sb;
		df = se2 > 0
			 ? se2 * se2 / (sa * sa / (double)(a->n - 1) + sb * sb / (double)(b->n - 1))
			 : (double)(a->n + b->n - 2);
		row->between_known = false;
		w->s_boot = sqrt((va + vb) / 2);
		w->sa = xmalloc(a->n * sizeof(double));
		w->sb = xmalloc(b->n * sizeof(double));
		memcpy(w->sa, a->v, a->n * sizeof(double));
		memcpy(w->sb, b->v, b->n * sizeof(double));
		w->k_base = a->n, w->k_cand = b->n;
	}
	free(ma);
	free(mb);
	row_finish(row, w, xb - xa, sqrt(se2), df, confidence);
}

void cmp_row_test_paired(struct cmp_row *row, struct row_work *w, const double *ma,
			 const double *mb, size_t k, double confidence)
{
	/* the difference within each block cancels what the block shared (the host's moment) */
	_cleanup_free_ double *d = xcalloc(k + 1, sizeof(*d));
	for (size_t i = 0; i < k; i++)
		d[i] = mb[i] - ma[i];
	double dm, dv;
	stats_mean_var(d, k, &dm, &dv);
	row->boots_base = row->boots_cand = k;
	row->between_known = true;
	/* more_boots() sizes two independent sides by s sqrt(2/k): a paired difference has the
	 * standard deviation s_d, so s = s_d / sqrt(2) gives the same count */
	w->s_boot = sqrt(dv / 2);
	w->sa = xmalloc(k * sizeof(double));
	w->sb = xmalloc(k * sizeof(double));
	memcpy(w->sa, ma, k * sizeof(double));
	memcpy(w->sb, mb, k * sizeof(double));
	w->k_base = w->k_cand = k;
	row_finish(row, w, dm, sqrt(dv / (double)k), (double)(k - 1), confidence);
}

/* The change, its interval, the one-sided p-values and the minimum detectable effect of a
 * difference d of log means with standard error se and df degrees of freedom. */
static void row_finish(struct cmp_row *row, struct row_work *w, double d, double se, double df,
		       double confidence)
{
	w->d = d;
	w->se = se;
	row->df = df;
	w->tq = stats_t_quantile(confidence, df);
	row->change = expm1(w->d);
	row->ci_low = expm1(w->d - w->tq * w->se);
	row->ci_high = expm1(w->d + w->tq * w->se);
	/* one-sided p-values of "larger" and "smaller" */
	double p_larger, p_smaller;
	if (w->se > 0) {
		double t = w->d / w->se;
		p_larger = 1 - stats_t_cdf(t, df);
		p_smaller = stats_t_cdf(t, df);
	} else {
		p_larger = w->d > 0 ? 0 : 1;
		p_smaller = w->d < 0 ? 0 : 1;
	}
	row->p_worse = row->higher_better ? p_smaller : p_larger;
	row->p_better = row->higher_better ? p_larger : p_smaller;
	if (w->se > 0 && isfinite(df))
		row->mde = expm1((w->tq + stats_t_quantile(0.8, df)) * w->se);
}

void cmp_row_note(struct cmp_row *row, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *n = xvasprintf(fmt, ap);
	va_end(ap);
	if (row->note) {
		char *both = xasprintf("%s; %s", row->note, n);
		free(n);
		n = both;
	}
	free(row->note);
	row->note = n;
}

/* Boots per side that would likely (80%) resolve an inconclusive row. */
static long more_boots(const struct cmp_row *row, const struct row_work *w, double confidence)
{
	double thr = log1p(row->threshold), ad = fabs(w->d);
	double dist = ad >= thr ? ad : thr - ad;
	if (!(w->s_boot > 0) || dist < 1e-4)
		return -1;
	/* normal approximation: k per side with (z_c + z_0.8) s sqrt(2/k) <= dist */
	double z = stats_t_quantile(confidence, INFINITY) + stats_t_quantile(0.8, INFINITY);
	double k = ceil(2 * (z * w->s_boot / dist) * (z * w->s_boot / dist));
	size_t have = row->boots_base < row->boots_cand ? row->boots_base : row->boots_cand;
	if (k > 1e6)
		return -1;
	return k > (double)have ? (long)k - (long)have : 1;
}

/* The verdict of a row whose test ran (BH already applied). */
void cmp_row_verdict(struct cmp_row *row, struct row_work *w, enum cmp_rule rule, double confidence)
{
	double thr = log1p(row->threshold);
	bool larger = w->d > 0;
	bool worse_dir = row->higher_better ? !larger : larger;
	double lo = w->d - w->tq * w->se, hi = w->d + w->tq * w->se;
	enum cmp_verdict v = CMP_INCONCLUSIVE;

	if (rule == CMP_RULE_WELCH) {
		bool big = fabs(w->d) >= thr;
		if (row->sig_worse && worse_dir && big)
			v = CMP_REGRESSED;
		else if (row->sig_better && !worse_dir && big)
			v = CMP_IMPROVED;
		else if (lo > -thr && hi < thr)
			v = CMP_UNCHANGED;
		else if ((row->sig_worse && worse_dir) || (row->sig_better && !worse_dir))
			cmp_row_note(row, "a significant change smaller than the %.3g%% threshold",
				     100 * row->threshold);
	} else {
		if (w->k_base < 3 || w->k_cand < 3) {
			cmp_row_note(row, "the lkp rule needs 3 samples (boots) per side");
		} else {
			double amin, amax, bmin, bmax;
			min_max(w->sa, w->k_base, &amin, &amax);
			min_max(w->sb, w->k_cand, &bmin, &bmax);
			double dmed =
			    fabs(cmp_median(w->sb, w->k_cand) - cmp_median(w->sa, w->k_base));
			bool apart = bmin > amax   ? bmin - amax > dmed / 2
				     : amin > bmax ? amin - bmax > dmed / 2
						   : false;
			if (apart && fabs(w->d) >= thr)
				v = worse_dir ? CMP_REGRESSED : CMP_IMPROVED;
			else if (lo > -thr && hi < thr)
				v = CMP_UNCHANGED;
		}
	}
	if (!row->between_known) {
		if (v != CMP_INCONCLUSIVE)
			cmp_row_note(row, "would be %s", cmp_verdict_name(v));
		cmp_row_note(row,
			     "with one boot per side the between-boot variance is unknown (runs "
			     "of one boot are not independent samples: use vm: per-run, more boots "
			     "or --baseline-window)");
		v = CMP_INCONCLUSIVE;
	}
	row->verdict = v;
	if (v == CMP_INCONCLUSIVE) {
		row->more_boots = more_boots(row, w, confidence);
		if (!row->note)
			cmp_row_note(row,
				     "the interval reaches past both 0 and the %.3g%% threshold",
				     100 * row->threshold);
	}
}
