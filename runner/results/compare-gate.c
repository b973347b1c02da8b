/* SPDX-License-Identifier: MIT */
/*
 * The gate of `ferry compare` (compare.h, docs/gate.md): which metrics may fail a comparison
 * (compare_opts.gate, `total` by default), the absolute noise floor under which nothing is a
 * regression or an improvement, the drift canary (the host's change of speed between the two
 * sides, from the canary_host metric every run of a block records), and the confirmation of a
 * suspected regression by a rerun (compare_opts.confirm).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare-impl.h"
#include "metrics.h"
#include "stats.h"

/* The host's clock is nanoseconds, but a phase of a process that the scheduler preempts jitters
 * by about a millisecond on a loaded host: a time below that is no evidence of anything. */
#define FLOOR_TIME_S 0.001

bool cmp_gated(const struct compare_opts *o, const char *metric)
{
	if (!o->n_gate)
		return STREQ(metric, "total");
	for (size_t i = 0; i < o->n_gate; i++)
		if (STREQ(o->gate[i], metric))
			return true;
	return false;
}

double cmp_floor(const struct samples *t)
{
	if (t->n == 0)
		return 0;
	/* the jitter of the metric's level: the baseline's run-to-run deviation (MAD, scaled to
	 * a standard deviation) over the square root of its runs, never below the clock's floor */
	_cleanup_free_ double *dev = xcalloc(t->n, sizeof(*dev));
	double med = cmp_median(t->raw, t->n);
	for (size_t i = 0; i < t->n; i++)
		dev[i] = fabs(t->raw[i] - med);
	double jitter = 1.4826 * cmp_median(dev, t->n) / sqrt((double)t->n);
	return jitter > FLOOR_TIME_S ? jitter : FLOOR_TIME_S;
}

void cmp_floor_apply(struct cmp_row *row)
{
	if (!(row->floor > 0) || !(row->floor_time > 0) || !isfinite(row->change) ||
	    (row->verdict != CMP_REGRESSED && row->verdict != CMP_IMPROVED))
		return;
	/* a rate moves as its time does: both are judged in the time's terms */
	double rel = row->floor / row->floor_time;
	if (fabs(log1p(row->change)) >= log1p(rel))
		return;
	cmp_row_note(row,
		     "would be %s, but a %.3g%% change of a %.3g s median is under the noise "
		     "floor of %.3g s (the clock's, or the jitter of the baseline's level)",
		     cmp_verdict_name(row->verdict), 100 * fabs(row->change), row->floor_time,
		     row->floor);
	row->verdict = CMP_UNCHANGED;
}

/* The canary_host values of every measured run of every paired cell, one sample per boot. */
void cmp_canary(struct comparison *cmp, const struct samples *a, const struct samples *b)
{
	cmp->canary_change = cmp->canary_low = cmp->canary_high = NAN;
	cmp->canary_moved = false;
	if (a->n < 2 || b->n < 2)
		return;
	struct cmp_row row = { .unit = (char *)"s", .threshold = cmp->threshold };
	struct row_work w = { 0 };
	cmp_row_test(&row, &w, a, b, cmp->confidence);
	free(w.sa);
	free(w.sb);
	free(row.note);
	cmp->canary_change = row.change;
	cmp->canary_low = row.ci_low;
	cmp->canary_high = row.ci_high;
	cmp->canary_boots_base = row.boots_base;
	cmp->canary_boots_cand = row.boots_cand;
	/* beyond its own noise: its interval excludes no change, and the change is at least the
	 * comparison's threshold (a canary that moved 1% says nothing about a 5% gate) */
	cmp->canary_moved = row.between_known && (row.ci_low > 0 || row.ci_high < 0) &&
			    fabs(log1p(row.change)) >= log1p(cmp->threshold);
}

void cmp_canary_apply(const struct comparison *cmp, struct cmp_row *row)
{
	/* a row judged relative to the control cell has the host's moment cancelled already */
	if (!cmp->canary_moved || !row->gated || row->verdict != CMP_REGRESSED || row->controlled)
		return;
	/* the least slowdown the row shows, in time's terms (a rate falls as its time grows): when
	 * it is beyond the most the host slowed down, the host does not explain it */
	double slower = row->higher_better ? 1 / (1 + row->ci_high) - 1 : row->ci_low;
	if (isfinite(slower) && isfinite(cmp->canary_high) && slower > cmp->canary_high) {
		cmp_row_note(row,
			     "the host was %.0f%% %s than in the baseline (canary %+.1f%% "
			     "[%+.1f%%, %+.1f%%]), less than this change: not withheld",
			     100 * fabs(cmp->canary_change),
			     cmp->canary_change > 0 ? "slower" : "faster", 100 * cmp->canary_change,
			     100 * cmp->canary_low, 100 * cmp->canary_high);
		return;
	}
	cmp_row_note(row,
		     "would be regressed, but the host was %.0f%% %s than in the baseline "
		     "(canary %+.1f%% [%+.1f%%, %+.1f%%]): verdict withheld",
		     100 * fabs(cmp->canary_change), cmp->canary_change > 0 ? "slower" : "faster",
		     100 * cmp->canary_change, 100 * cmp->canary_low, 100 * cmp->canary_high);
	row->withheld = true;
	row->verdict = CMP_INCONCLUSIVE;
}

/* How many boots the samples come from (a rerun's blocks: one boot each). */
static size_t distinct_boots(const struct samples *s)
{
	size_t k = 0;
	for (size_t i = 0; i < s->n; i++) {
		size_t j = 0;
		while (j < i && s->boot[j] != s->boot[i])
			j++;
		k += j == i;
	}
	return k;
}

/* The rerun's own test: change, interval and verdict of samples b against a, as one row tested
 * once (no false-discovery control over a family). */
static enum cmp_verdict confirm_test(const struct cmp_row *row, const struct samples *a,
				     const struct samples *b, double confidence, double *change,
				     double *low, double *high)
{
	struct cmp_row r = {
		.unit = row->unit,
		.higher_better = row->higher_better,
		.threshold = row->threshold,
		.median_base = row->median_base,
		.median_cand = cmp_median(b->raw, b->n),
		.floor = row->floor,
		.floor_time = row->floor_time,
	};
	struct row_work w = { 0 };
	cmp_row_test(&r, &w, a, b, confidence);
	r.sig_worse = r.p_worse <= 1 - confidence;
	r.sig_better = r.p_better <= 1 - confidence;
	cmp_row_verdict(&r, &w, CMP_RULE_WELCH, confidence);
	cmp_floor_apply(&r);
	free(w.sa);
	free(w.sb);
	free(r.note);
	*change = r.change;
	*low = r.ci_low;
	*high = r.ci_high;
	return r.verdict;
}

/* A regressed gated row stands when the rerun, made at another moment of the host, agrees: its
 * own change is a slowdown of at least the threshold, and the new side's boots and the rerun's
 * together are still regressed against the baseline. The first part is what a false alarm of
 * the original run's moment (its neighbours, its load) does not repeat; the pooled test keeps
 * the rerun's few boots from deciding alone (a 3-boot rerun by itself cannot see a 20% change on
 * a TCG host, docs/gate.md). */
void cmp_confirm_apply(struct cmp_row *row, const struct samples *a, const struct samples *b,
		       const struct samples *pooled, double confidence)
{
	if (!row->gated || row->verdict != CMP_REGRESSED)
		return;
	if (!b) {
		cmp_row_note(row, "not confirmed: the rerun has no runs of this cell");
		row->verdict = CMP_INCONCLUSIVE;
		return;
	}
	row->confirm_change = row->confirm_low = row->confirm_high = NAN;
	size_t ka = distinct_boots(a), kb = distinct_boots(b);
	row->confirm_boots = kb;
	if (ka < 3 || kb < 3) {
		cmp_row_note(
		    row,
		    "not confirmed: the rerun has %zu boot%s of this cell and the baseline "
		    "%zu; a test needs 3 on each side",
		    kb, kb == 1 ? "" : "s", ka);
		row->verdict = CMP_INCONCLUSIVE;
		return;
	}
	double lo, hi, pc, plo, phi;
	confirm_test(row, a, b, confidence, &row->confirm_change, &lo, &hi);
	row->confirm_low = lo;
	row->confirm_high = hi;
	enum cmp_verdict pv = confirm_test(row, a, pooled, confidence, &pc, &plo, &phi);
	double c = row->confirm_change;
	bool worse = row->higher_better ? c < 0 : c > 0;
	bool agrees = worse && fabs(log1p(c)) >= log1p(row->threshold);
	row->confirmed = agrees && pv == CMP_REGRESSED;
	if (row->confirmed)
		cmp_row_note(row,
			     "confirmed by the rerun: %+.1f%% [%+.1f%%, %+.1f%%] (%zu boots); with "
			     "the rerun's boots %+.1f%% [%+.1f%%, %+.1f%%]",
			     100 * c, 100 * lo, 100 * hi, kb, 100 * pc, 100 * plo, 100 * phi);
	else {
		cmp_row_note(row,
			     "would be regressed (%+.1f%%), but the rerun did not confirm it: "
			     "%+.1f%% [%+.1f%%, %+.1f%%] (%zu boots%s); with the rerun's boots "
			     "%+.1f%% [%+.1f%%, %+.1f%%] (%s)",
			     100 * row->change, 100 * c, 100 * lo, 100 * hi, kb,
			     agrees ? "" : ", less than the threshold", 100 * pc, 100 * plo,
			     100 * phi, cmp_verdict_name(pv));
		row->verdict = CMP_INCONCLUSIVE;
	}
}
