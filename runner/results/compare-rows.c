/* SPDX-License-Identifier: MIT */
/* The rows of a comparison (compare.h): one per paired cell and metric, with its test, then
 * false-discovery control over every tested row, the gate's floor, canary and confirmation, and
 * the counts. Pairing the cells is compare.c; the rule for one row is compare-rule.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare-impl.h"
#include "stats.h"

/* ---- thresholds -------------------------------------------------------------------------- */

bool cmp_where_valid(const char *where)
{
	_cleanup_free_ char *dup = xstrdup(where);
	size_t n = 0;
	for (char *sv = NULL, *t = strtok_r(dup, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
		char *eq = strchr(t, '=');
		if (!eq || eq == t || !eq[1])
			return false;
		n++;
	}
	return n > 0;
}

bool cmp_where_matches(const char *where, const struct result_cell *c)
{
	if (!where)
		return true;
	_cleanup_free_ char *dup = xstrdup(where);
	for (char *sv = NULL, *t = strtok_r(dup, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
		char *eq = strchr(t, '=');
		if (!eq)
			return false;
		*eq = '\0';
		bool found = false;
		for (size_t i = 0; i < c->n_axes && !found; i++)
			found = STREQ(c->axes[i].key, t) && STREQ(c->axes[i].value, eq + 1);
		if (!found)
			return false;
	}
	return true;
}

static double threshold_for(const struct compare_opts *o, double def, const struct result_cell *c,
			    const char *metric)
{
	double t = def;
	for (size_t i = 0; i < o->n_thresholds; i++) {
		const struct cmp_threshold *th = &o->thresholds[i];
		if ((!th->metric || STREQ(th->metric, metric)) && cmp_where_matches(th->where, c))
			t = th->value;
	}
	return t;
}

/* The metrics of a pair, in report order. */
static size_t pair_metrics(const struct pair *pr, size_t n_used, const struct results *cand,
			   struct metric_ref *out, size_t cap)
{
	size_t n = 0;
	cmp_metric_ref(metric_defs[METRIC_TOTAL].name, &out[n++]);
	bool bytes = false, files = false;
	/* the phases the table lists, where a side measured the phase */
	for (int id = 0; id < METRIC_COUNT; id++) {
		if (metric_defs[id].kind != METRIC_PHASE)
			continue;
		struct metric_ref ref;
		cmp_metric_ref(metric_defs[id].name, &ref);
		bool any = false;
		for (size_t f = 0; f <= n_used && !any && ref.phase >= 0; f++) {
			const struct result_cell *c = f < n_used ? pr->base[f] : pr->cand;
			for (size_t i = 0; c && i < c->n_runs && !any; i++)
				any = cmp_measured(&c->runs[i]) && c->runs[i].phase[ref.phase] > 0;
		}
		if (any)
			out[n++] = ref;
	}
	for (size_t f = 0; f <= n_used; f++) {
		const struct result_cell *c = f < n_used ? pr->base[f] : pr->cand;
		for (size_t i = 0; c && i < c->n_runs; i++) {
			bytes |= cmp_measured(&c->runs[i]) && c->runs[i].bytes;
			files |= cmp_measured(&c->runs[i]) && c->runs[i].files;
		}
	}
	if (bytes)
		cmp_metric_ref(metric_defs[METRIC_THROUGHPUT].name, &out[n++]);
	if (files)
		cmp_metric_ref(metric_defs[METRIC_FILES_PER_S].name, &out[n++]);
	/* method metrics of the new file's runs */
	_cleanup_free_ const char **names = NULL;
	size_t n_names = result_cell_metric_names(pr->cand, &names);
	for (size_t i = 0; i < n_names && n < cap; i++) {
		bool seen = false;
		for (size_t j = 0; j < n && !seen; j++)
			seen = STREQ(out[j].name, names[i]);
		if (!seen)
			out[n++] = (struct metric_ref){ -1, -1, names[i] }; /* as reported */
	}
	(void)cand;
	return n;
}

#define MAX_METRICS 64

/* The noise floor of a row: of its own time, or of the total for a rate (metrics of other
 * units have none). */
static void row_floor(struct cmp_row *row, const struct metric_ref *m,
		      const struct result_cell *const *base, size_t n_used)
{
	bool rate = m->metric == METRIC_THROUGHPUT || m->metric == METRIC_FILES_PER_S;
	if (!rate && !STREQ(row->unit, "s"))
		return;
	struct metric_ref t = *m;
	if (rate)
		cmp_metric_ref(metric_defs[METRIC_TOTAL].name, &t);
	struct samples a = { 0 };
	for (size_t f = 0; f < n_used; f++)
		if (base[f])
			cmp_samples_add(&a, base[f], f, &t);
	row->floor = cmp_floor(&a);
	row->floor_time = a.n ? cmp_median(a.raw, a.n) : NAN;
	cmp_samples_free(&a);
}

/* The drift canary over every pair: canary_host, one sample per boot of each side. */
static void canary(struct comparison *cmp, const struct pair *pairs, size_t n_pairs, size_t n_used)
{
	struct metric_ref m;
	cmp_metric_ref(metric_defs[METRIC_CANARY_HOST].name, &m);
	struct samples a = { 0 }, b = { 0 };
	for (size_t i = 0; i < n_pairs; i++) {
		for (size_t f = 0; f < n_used; f++)
			if (pairs[i].base[f])
				cmp_samples_add(&a, pairs[i].base[f], f, &m);
		cmp_samples_add(&b, pairs[i].cand, n_used, &m);
	}
	cmp_canary(cmp, &a, &b);
	cmp_samples_free(&a);
	cmp_samples_free(&b);
}

/* ---- the rows ---------------------------------------------------------------------------- */

/* What building the rows reads, and the rows' work space (one row_work per row). */
struct rows_ctx {
	struct comparison *cmp;
	const struct pair *control; /* the control cell's pair (compare_opts.control), or NULL */
	const struct pair *pairs;
	size_t n_pairs, n_used;
	const struct results *cand;
	const struct compare_opts *o;
	double def_thr, confidence;
	struct row_work *work;
	size_t cap;
};

/* ---- the control cell (compare_opts.control) ------------------------------------------- */

/* Adds to s, for each block in which both cell c and the control k ran, the log of the ratio of
 * their means in that block: what the block's moment did to both cancels. */
static void add_ratios(struct samples *s, const struct result_cell *c, const struct result_cell *k,
		       size_t file, const struct metric_ref *m)
{
	struct samples sc = { 0 }, sk = { 0 };
	cmp_samples_add_blocks(&sc, c, file, m);
	cmp_samples_add_blocks(&sk, k, file, m);
	_cleanup_free_ double *a = NULL;
	_cleanup_free_ double *b = NULL;
	_cleanup_free_ uint64_t *ka = NULL;
	_cleanup_free_ uint64_t *kb = NULL;
	size_t na = cmp_key_means(&sc, &a, &ka), nb = cmp_key_means(&sk, &b, &kb);
	cmp_samples_free(&sc);
	cmp_samples_free(&sk);
	for (size_t i = 0, j = 0; i < na && j < nb;) {
		if (ka[i] != kb[j]) {
			ka[i] < kb[j] ? i++ : j++;
			continue;
		}
		cmp_samples_push(s, ka[i], a[i] - b[j], exp(a[i] - b[j]));
		i++, j++;
	}
}

/* Whether a row of pair pr and metric m is judged relative to the control: a gated time (the
 * total or a phase) of another cell. */
static bool controls(const struct pair *ctl, const struct pair *pr, const struct cmp_row *row,
		     const struct metric_ref *m)
{
	return ctl && pr != ctl && row->gated && (m->metric == METRIC_TOTAL || m->phase >= 0);
}

/* The row's test redone on its ratio to the control cell, block by block, when each side has 3
 * blocks in which both ran; else the plain test stands, with a note. */
static void control_test(const struct rows_ctx *x, const struct pair *pr,
			 const struct metric_ref *m, struct cmp_row *row, struct row_work *w)
{
	const struct pair *k = x->control;
	struct samples ra = { 0 }, rb = { 0 };
	for (size_t f = 0; f < x->n_used; f++)
		if (pr->base[f] && k->base[f])
			add_ratios(&ra, pr->base[f], k->base[f], f, m);
	add_ratios(&rb, pr->cand, k->cand, x->n_used, m);
	if (ra.n >= 3 && rb.n >= 3) {
		free(w->sa);
		free(w->sb);
		*w = (struct row_work){ 0 };
		cmp_row_test(row, w, &ra, &rb, x->confidence);
		row->controlled = true;
		cmp_row_note(row,
			     "relative to the control cell %s in the same blocks (%zu and %zu "
			     "blocks)",
			     k->cand->id, ra.n, rb.n);
	} else
		cmp_row_note(row,
			     "not relative to the control cell %s: it ran beside this cell in %zu "
			     "and %zu blocks, and a test needs 3 a side",
			     k->cand->id, ra.n, rb.n);
	cmp_samples_free(&ra);
	cmp_samples_free(&rb);
}

/* The metrics that may fail the comparison: the options', or `total`. */
static void gate_init(struct comparison *cmp, const struct compare_opts *o)
{
	cmp->confirm_given = o->confirm != NULL;
	cmp->n_gate = o->n_gate ? o->n_gate : 1;
	cmp->gate = xcalloc(cmp->n_gate, sizeof(*cmp->gate));
	for (size_t i = 0; i < cmp->n_gate; i++)
		cmp->gate[i] = xstrdup(o->n_gate ? o->gate[i] : "total");
}

/* A new row for metric m of pair pr from the samples a (baseline) and b (new file): medians,
 * threshold and floor, and its test when each side has 3 measured runs. */
static void add_row(struct rows_ctx *x, const struct pair *pr, const struct metric_ref *m,
		    const struct samples *a, const struct samples *b)
{
	struct comparison *cmp = x->cmp;
	if (cmp->n_rows == x->cap) {
		x->cap = x->cap ? 2 * x->cap : 64;
		cmp->rows = xrealloc(cmp->rows, x->cap * sizeof(*cmp->rows));
		x->work = xrealloc(x->work, x->cap * sizeof(*x->work));
	}
	struct cmp_row *row = &cmp->rows[cmp->n_rows];
	struct row_work *w = &x->work[cmp->n_rows];
	cmp->n_rows++;
	const struct result_metric *desc = results_find_metric(x->cand, m->name);
	*row = (struct cmp_row){
		.cell = xstrdup(pr->cand->id),
		.metric = xstrdup(m->name),
		.unit = xstrdup(desc && desc->unit ? desc->unit : ""),
		.higher_better = desc ? desc->higher_better : false,
		.cand = pr->cand,
		.n_base = a->n,
		.n_cand = b->n,
		.median_base = a->n ? cmp_median(a->raw, a->n) : NAN,
		.median_cand = b->n ? cmp_median(b->raw, b->n) : NAN,
		.change = NAN,
		.ci_low = NAN,
		.ci_high = NAN,
		.df = NAN,
		.p_worse = NAN,
		.p_better = NAN,
		.threshold = threshold_for(x->o, x->def_thr, pr->cand, m->name),
		.mde = NAN,
		.more_boots = -1,
		.verdict = CMP_INCONCLUSIVE,
		/* the control measures the host's moment, not the change: reported, never fatal */
		.gated = cmp_gated(x->o, m->name) && pr != x->control,
		.confirm_change = NAN,
		.confirm_low = NAN,
		.confirm_high = NAN,
	};
	row_floor(row, m, (const struct result_cell *const *)pr->base, x->n_used);
	*w = (struct row_work){ 0 };
	if (pr == x->control && m->metric == METRIC_TOTAL)
		cmp_row_note(row, "the control cell: the host's moment, reported, never fatal");
	if (m->metric < 0 && !desc)
		cmp_row_note(row, "the new file does not describe this metric: taken as "
				  "lower is better");
	if (a->n < 3 || b->n < 3)
		cmp_row_note(row,
			     "fewer than 3 measured runs on a side (baseline %zu, new %zu): no "
			     "verdict",
			     a->n, b->n);
	else {
		cmp_row_test(row, w, a, b, x->confidence);
		if (controls(x->control, pr, row, m))
			control_test(x, pr, m, row, w);
	}
}

/* The rows of one pair: one per metric that either side measured (always the first, total). */
static void pair_rows(struct rows_ctx *x, const struct pair *pr)
{
	struct metric_ref m[MAX_METRICS];
	size_t nm = pair_metrics(pr, x->n_used, x->cand, m, MAX_METRICS);
	for (size_t k = 0; k < nm; k++) {
		struct samples a = { 0 }, b = { 0 };
		for (size_t f = 0; f < x->n_used; f++)
			if (pr->base[f])
				cmp_samples_add(&a, pr->base[f], f, &m[k]);
		cmp_samples_add(&b, pr->cand, x->n_used, &m[k]);
		if (a.n || b.n || k == 0)
			add_row(x, pr, &m[k], &a, &b);
		cmp_samples_free(&a);
		cmp_samples_free(&b);
	}
}

/* A regressed gated row against the rerun's cell of the same id (compare_opts.confirm); a row
 * judged relative to the control cell is confirmed on its ratios to the control in the rerun
 * too. */
static void confirm_row(const struct rows_ctx *x, struct cmp_row *row,
			const struct results *confirm)
{
	if (!row->gated || row->verdict != CMP_REGRESSED)
		return;
	const struct pair *pr = NULL;
	for (size_t i = 0; i < x->n_pairs && !pr; i++)
		if (x->pairs[i].cand == row->cand)
			pr = &x->pairs[i];
	const struct result_cell *rc = results_find_cell(confirm, row->cell);
	const struct pair *k = row->controlled ? x->control : NULL;
	const struct result_cell *rk = k ? results_find_cell(confirm, k->cand->id) : NULL;
	struct metric_ref m;
	cmp_metric_ref(row->metric, &m);
	struct samples a = { 0 }, b = { 0 }, both = { 0 };
	for (size_t f = 0; pr && f < x->n_used; f++) {
		if (!pr->base[f])
			continue;
		if (k && k->base[f])
			add_ratios(&a, pr->base[f], k->base[f], f, &m);
		else if (!k)
			cmp_samples_add(&a, pr->base[f], f, &m);
	}
	if (rc && k && rk) {
		add_ratios(&b, rc, rk, x->n_used + 1, &m);
		add_ratios(&both, row->cand, k->cand, x->n_used, &m);
		add_ratios(&both, rc, rk, x->n_used + 1, &m);
	} else if (rc && !k) {
		cmp_samples_add(&b, rc, x->n_used + 1, &m);
		cmp_samples_add(&both, row->cand, x->n_used, &m);
		cmp_samples_add(&both, rc, x->n_used + 1, &m);
	}
	if (rc && k && !rk)
		cmp_row_note(row, "the rerun has no runs of the control cell %s", k->cand->id);
	cmp_confirm_apply(row, &a, rc && (!k || rk) ? &b : NULL, &both, x->confidence);
	cmp_samples_free(&a);
	cmp_samples_free(&b);
	cmp_samples_free(&both);
}

/* Benjamini-Hochberg over the rows whose gated flag is `gated` (the others' p is left out), one
 * family per direction (at level q_worse and q_better); sets their sig_worse and sig_better. */
static void bh_family(struct comparison *cmp, bool gated, double q_worse, double q_better)
{
	_cleanup_free_ double *pw = xcalloc(cmp->n_rows + 1, sizeof(double));
	_cleanup_free_ double *pb = xcalloc(cmp->n_rows + 1, sizeof(double));
	_cleanup_free_ bool *rw = xcalloc(cmp->n_rows + 1, sizeof(bool));
	_cleanup_free_ bool *rb = xcalloc(cmp->n_rows + 1, sizeof(bool));
	for (size_t i = 0; i < cmp->n_rows; i++) {
		bool in = cmp->rows[i].gated == gated;
		pw[i] = in ? cmp->rows[i].p_worse : NAN;
		pb[i] = in ? cmp->rows[i].p_better : NAN;
	}
	stats_bh(pw, cmp->n_rows, q_worse, rw);
	stats_bh(pb, cmp->n_rows, q_better, rb);
	for (size_t i = 0; i < cmp->n_rows; i++)
		if (cmp->rows[i].gated == gated) {
			cmp->rows[i].sig_worse = rw[i];
			cmp->rows[i].sig_better = rb[i];
		}
}

/* The verdict of every row: Benjamini-Hochberg, then the rule, the floor, the canary and the
 * confirmation; counts the verdicts. The gated rows (the metrics that can fail the run) are one
 * family and the reported rows another: the gate's false alarms are controlled over the
 * hypotheses it acts on, and twenty reported phases and rates do not dilute the power of the
 * one total the user asked to gate on. */
static void decide_rows(struct rows_ctx *x)
{
	struct comparison *cmp = x->cmp;
	const struct compare_opts *o = x->o;
	double q = 1 - x->confidence;
	/* a two-stage gate screens its rows more loosely: the rerun's test decides */
	double screen = o->screen > 0 ? o->screen : 0.80;
	bool screening = (o->confirm || o->confirming) && screen < x->confidence;
	bh_family(cmp, true, screening ? 1 - screen : q, q);
	bh_family(cmp, false, q, q);
	for (size_t i = 0; i < cmp->n_rows; i++) {
		struct cmp_row *row = &cmp->rows[i];
		if (!isnan(row->p_worse))
			cmp_row_verdict(row, &x->work[i], o->rule, x->confidence);
		free(x->work[i].sa);
		free(x->work[i].sb);
		cmp_floor_apply(row);
		cmp_canary_apply(cmp, row);
		if (screening && row->gated && row->verdict == CMP_REGRESSED)
			cmp_row_note(row, "suspected at the screen's %.3g%% (a rerun decides)",
				     100 * screen);
		if (o->confirm)
			confirm_row(x, row, o->confirm);
		cmp->counts[row->verdict]++;
	}
}

/* The cells with a regressed row, and those with a regressed gated row (rows are by cell). */
static void count_regressed_cells(struct comparison *cmp)
{
	const char *last = NULL, *last_failed = NULL;
	for (size_t i = 0; i < cmp->n_rows; i++) {
		const struct cmp_row *row = &cmp->rows[i];
		if (row->verdict != CMP_REGRESSED)
			continue;
		if (!last || !STREQ(last, row->cell)) {
			cmp->regressed_cells++;
			last = row->cell;
		}
		if (row->gated && (!last_failed || !STREQ(last_failed, row->cell))) {
			cmp->failed_cells++;
			last_failed = row->cell;
		}
	}
}

void cmp_build_rows(struct comparison *cmp, const struct pair *pairs, size_t n_pairs, size_t n_used,
		    const struct results *cand, const struct compare_opts *o, double def_thr,
		    double confidence)
{
	struct rows_ctx x = {
		.cmp = cmp,
		.pairs = pairs,
		.n_pairs = n_pairs,
		.n_used = n_used,
		.cand = cand,
		.o = o,
		.def_thr = def_thr,
		.confidence = confidence,
	};
	for (size_t i = 0; i < n_pairs && cmp->control_cell; i++)
		if (STREQ(pairs[i].cand->id, cmp->control_cell))
			x.control = &pairs[i];
	gate_init(cmp, o);
	canary(cmp, pairs, n_pairs, n_used);
	for (size_t i = 0; i < n_pairs; i++)
		pair_rows(&x, &pairs[i]);
	decide_rows(&x);
	free(x.work);
	count_regressed_cells(cmp);
}
