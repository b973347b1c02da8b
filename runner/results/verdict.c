/* SPDX-License-Identifier: MIT */
/* The verdict between two cells of one results file (verdict.h), by compare-rule.c's test. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "compare-impl.h"
#include "stats.h"
#include "verdict.h"

const char *verdict_kind_name(enum verdict_kind k)
{
	static const char *const names[] = { "a-better", "b-better", "indistinguishable",
					     "inconclusive" };
	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

static int metric_parse(const char *name, struct metric_ref *m)
{
	return cmp_metric_ref(name ? name : "total", m);
}

/* The mean log value of a cell's measured runs per sample unit (block or boot). */
struct unit_means {
	int64_t *key;
	double *mean;
	size_t n;         /* units */
	size_t runs;      /* runs with a value */
	struct samples s; /* the runs, keyed by unit, for the unpaired test */
};

static void unit_means_free(struct unit_means *u)
{
	free(u->key);
	free(u->mean);
	cmp_samples_free(&u->s);
}

static bool all_blocked(const struct result_cell *c)
{
	for (size_t i = 0; i < c->n_runs; i++)
		if (cmp_measured(&c->runs[i]) && c->runs[i].block <= 0)
			return false;
	return true;
}

static void unit_add(struct unit_means *u, int64_t key, double v)
{
	struct samples *s = &u->s;
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
		s->raw = xrealloc(s->raw, s->cap * sizeof(*s->raw));
		s->boot = xrealloc(s->boot, s->cap * sizeof(*s->boot));
	}
	s->v[s->n] = log(v);
	s->raw[s->n] = v;
	s->boot[s->n] = (uint64_t)key;
	s->n++;
	size_t i = 0;
	while (i < u->n && u->key[i] != key)
		i++;
	if (i == u->n) {
		u->key = xrealloc(u->key, (u->n + 1) * sizeof(*u->key));
		u->key[u->n++] = key;
	}
}

static int cmp_key(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;
	return (*x > *y) - (*x < *y);
}

static void unit_collect(struct unit_means *u, const struct result_cell *c,
			 const struct metric_ref *m, bool by_block)
{
	for (size_t i = 0; i < c->n_runs; i++) {
		const struct result_run *run = &c->runs[i];
		double v = cmp_measured(run) ? cmp_run_value(run, m) : NAN;
		if (!(v > 0) || !isfinite(v))
			continue;
		int64_t key = by_block ? run->block : run->boot > 0 ? run->boot : 0;
		unit_add(u, key, v);
	}
	u->runs = u->s.n;
	/* sort the units by key, their means with them */
	_cleanup_free_ int64_t *keys = xcalloc(u->n + 1, sizeof(*keys));
	if (u->n) /* u->key is NULL when no run counted */
		memcpy(keys, u->key, u->n * sizeof(*keys));
	qsort(keys, u->n, sizeof(*keys), cmp_key);
	_cleanup_free_ double *sums = xcalloc(u->n + 1, sizeof(*sums));
	_cleanup_free_ size_t *count = xcalloc(u->n + 1, sizeof(*count));
	for (size_t i = 0; i < u->s.n; i++) {
		int64_t *k = bsearch(&(int64_t){ (int64_t)u->s.boot[i] }, keys, u->n, sizeof(*keys),
				     cmp_key);
		sums[k - keys] += u->s.v[i];
		count[k - keys]++;
	}
	u->mean = xcalloc(u->n + 1, sizeof(*u->mean));
	for (size_t i = 0; i < u->n; i++) {
		u->key[i] = keys[i];
		u->mean[i] = sums[i] / (double)count[i];
	}
}

static bool same_units(const struct unit_means *a, const struct unit_means *b)
{
	if (a->n != b->n || a->n < 2)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (a->key[i] != b->key[i])
			return false;
	return true;
}

/* The test of one pair into row and w; whether it ran. */
static bool pair_test(const struct verdict_pair *p, const struct metric_ref *m, double confidence,
		      struct cmp_row *row, struct row_work *w, struct verdict *v)
{
	bool by_block = all_blocked(p->a) && all_blocked(p->b);
	struct unit_means a = { 0 }, b = { 0 };
	unit_collect(&a, p->a, m, by_block);
	unit_collect(&b, p->b, m, by_block);
	v->runs_a = a.runs;
	v->runs_b = b.runs;
	bool tested = true;
	if (same_units(&a, &b)) {
		v->paired = true;
		cmp_row_test_paired(row, w, a.mean, b.mean, a.n, confidence);
	} else if (a.runs >= 3 && b.runs >= 3) {
		cmp_row_test(row, w, &a.s, &b.s, confidence);
	} else {
		cmp_row_note(row, "fewer than 3 measured runs on a side (%zu and %zu): no verdict",
			     a.runs, b.runs);
		tested = false;
	}
	v->boots_a = a.n;
	v->boots_b = b.n;
	unit_means_free(&a);
	unit_means_free(&b);
	return tested;
}

/* A's advantage from B's change relative to A (a ratio - 1), by the metric's direction. */
static double gain_of(double change, bool higher_better)
{
	return higher_better ? 1 / (1 + change) - 1 : change;
}

static void verdict_fill(struct verdict *v, struct cmp_row *row)
{
	static const enum verdict_kind kind[CMP_VERDICT_COUNT] = {
		[CMP_UNCHANGED] = VERDICT_SAME,
		[CMP_IMPROVED] = VERDICT_B_BETTER,
		[CMP_REGRESSED] = VERDICT_A_BETTER,
		[CMP_INCONCLUSIVE] = VERDICT_INCONCLUSIVE,
	};
	v->kind = kind[row->verdict];
	v->gain = gain_of(row->change, v->higher_better);
	double lo = gain_of(row->ci_low, v->higher_better);
	double hi = gain_of(row->ci_high, v->higher_better);
	v->gain_low = lo < hi ? lo : hi;
	v->gain_high = lo < hi ? hi : lo;
	v->p_a_better = row->p_worse;
	v->p_b_better = row->p_better;
	v->mde = row->mde;
	v->more_boots = row->more_boots;
	v->note = row->note;
	row->note = NULL;
}

int verdict_pairs(const struct results *r, const struct verdict_pair *pairs, size_t n,
		  const struct verdict_opts *o, struct verdict *out, char **err)
{
	double confidence = o && o->confidence > 0 ? o->confidence : VERDICT_CONFIDENCE;
	double threshold = o && o->threshold > 0 ? o->threshold : 0.05;
	struct metric_ref m;
	if (!(confidence > 0.5 && confidence < 1)) {
		*err = xasprintf("confidence must be between 50%% and 100%%, not %g%%",
				 100 * confidence);
		return -1;
	}
	if (metric_parse(o ? o->metric : NULL, &m) < 0) {
		*err = xasprintf("unknown metric '%s'", o->metric);
		return -1;
	}
	const struct result_metric *desc = r ? results_find_metric(r, m.name) : NULL;
	bool higher_better = desc ? desc->higher_better : false;
	_cleanup_free_ struct cmp_row *rows = xcalloc(n + 1, sizeof(*rows));
	_cleanup_free_ struct row_work *work = xcalloc(n + 1, sizeof(*work));
	_cleanup_free_ bool *tested = xcalloc(n + 1, sizeof(*tested));
	_cleanup_free_ double *pw = xcalloc(n + 1, sizeof(double));
	_cleanup_free_ double *pb = xcalloc(n + 1, sizeof(double));
	_cleanup_free_ bool *rw = xcalloc(n + 1, sizeof(bool));
	_cleanup_free_ bool *rb = xcalloc(n + 1, sizeof(bool));
	for (size_t i = 0; i < n; i++) {
		out[i] = (struct verdict){ .higher_better = higher_better,
					   .threshold = threshold,
					   .confidence = confidence };
		rows[i] = (struct cmp_row){ .higher_better = higher_better,
					    .change = NAN,
					    .ci_low = NAN,
					    .ci_high = NAN,
					    .p_worse = NAN,
					    .p_better = NAN,
					    .threshold = threshold,
					    .mde = NAN,
					    .more_boots = -1,
					    .verdict = CMP_INCONCLUSIVE };
		tested[i] = pair_test(&pairs[i], &m, confidence, &rows[i], &work[i], &out[i]);
		pw[i] = rows[i].p_worse;
		pb[i] = rows[i].p_better;
	}
	/* Benjamini-Hochberg over the table, one family per direction, as compare does */
	stats_bh(pw, n, 1 - confidence, rw);
	stats_bh(pb, n, 1 - confidence, rb);
	for (size_t i = 0; i < n; i++) {
		rows[i].sig_worse = rw[i];
		rows[i].sig_better = rb[i];
		if (tested[i])
			cmp_row_verdict(&rows[i], &work[i], CMP_RULE_WELCH, confidence);
		verdict_fill(&out[i], &rows[i]);
		free(work[i].sa);
		free(work[i].sb);
	}
	return 0;
}

void verdict_clear(struct verdict *v)
{
	free(v->note);
	v->note = NULL;
}

/* "+3.1%" */
static char *pct(double f)
{
	return xasprintf("%+.1f%%", 100 * f);
}

char *verdict_text(const struct verdict *v, const char *a, const char *b)
{
	const char *word = v->higher_better ? "better" : "faster";
	double level = 100 * (2 * v->confidence - 1);
	if (v->kind == VERDICT_A_BETTER || v->kind == VERDICT_B_BETTER) {
		bool a_wins = v->kind == VERDICT_A_BETTER;
		/* the loser's side of the same interval: 1/(1+g) - 1 turns it around */
		double g = a_wins ? v->gain : 1 / (1 + v->gain) - 1;
		double lo = a_wins ? v->gain_low : 1 / (1 + v->gain_high) - 1;
		double hi = a_wins ? v->gain_high : 1 / (1 + v->gain_low) - 1;
		return xasprintf("%s is %.1f%% %s than %s [%.0f%% CI %.1f%% to %.1f%%]",
				 a_wins ? a : b, 100 * g, word, a_wins ? b : a, level, 100 * lo,
				 100 * hi);
	}
	_cleanup_free_ char *lo = pct(v->gain_low), *hi = pct(v->gain_high);
	_cleanup_free_ char *ci =
	    isfinite(v->gain_low) && isfinite(v->gain_high)
		? xasprintf(" [%s %s than %s by %s to %s, %.0f%% CI]", a, word, b, lo, hi, level)
		: xstrdup("");
	if (v->kind == VERDICT_SAME)
		return xasprintf("%s and %s are indistinguishable (|change| < %.3g%%)%s", a, b,
				 100 * v->threshold, ci);
	_cleanup_free_ char *need =
	    v->more_boots > 0
		? xasprintf("need ~%ld more boot%s", v->more_boots, v->more_boots == 1 ? "" : "s")
		: xstrdup(v->runs_a < 3 || v->runs_b < 3 ? "fewer than 3 runs a side"
							 : "more boots needed");
	return xasprintf("%s vs %s: inconclusive (%s)%s", a, b, need, ci);
}
