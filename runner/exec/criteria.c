/* SPDX-License-Identifier: MIT */
/* Criteria verdicts (criteria.h). */
#include "criteria.h"

#include <math.h>
#include <string.h>

#include "util.h"

bool criterion_applies(const struct plan_criterion *cr, const struct plan_cell *pc)
{
	const struct plan_where *w = &cr->where;
	return (!w->vm || STREQ(w->vm, pc->vm->e.name)) &&
	       (!w->disk || STREQ(w->disk, pc->disk->e.name)) &&
	       (!w->dataset || STREQ(w->dataset, pc->dataset->e.name)) &&
	       (!w->method || STREQ(w->method, pc->method->e.name));
}

/* The metric's value in the plan's base units (bytes/s, files/s, ns, percent, bytes): what
 * kind of metric it is says where it comes from (metrics.h); a run metric is its median over
 * the cell's measured runs (rc). */
static double metric_value(enum metric m, const struct result_stats *s,
			   const struct result_cell *rc)
{
	const struct metric_def *d = &metric_defs[m];
	double scale = d->unit_kind == METRIC_TIME ? 1e9 : 1; /* seconds -> ns */
	switch (d->kind) {
	case METRIC_RUN: {
		struct stats_summary sum;
		result_cell_metric_summary(rc, d->name, &sum);
		return sum.median * scale;
	}
	case METRIC_PHASE:
		return s->phase[result_phase_from_name(d->name + strlen("phase."))].median * scale;
	case METRIC_SPREAD: return s->total.cv * 100.0; /* cv, the one spread */
	case METRIC_CELL: break;
	}
	switch (m) {
	case METRIC_THROUGHPUT: return s->bytes_per_s;
	case METRIC_FILES_PER_S: return s->files_per_s;
	default: return s->total.median * scale;
	}
}

/* The value in the units the plan wrote its bound in. Caller frees. */
static char *metric_text(enum metric m, double v)
{
	if (!isfinite(v))
		return xstrdup("undefined");
	switch (metric_defs[m].unit_kind) {
	case METRIC_RATE: return xasprintf("%.3g MB/s", v / 1e6);
	case METRIC_SIZE: return xasprintf("%.3g MB", v / 1e6);
	case METRIC_FILES: return xasprintf("%.3g files/s", v);
	case METRIC_PERCENT: return xasprintf("%.3g%%", v);
	case METRIC_TIME: break;
	}
	return xasprintf("%.3f s", v / 1e9);
}

size_t criteria_check(const struct plan_criterion *crs, size_t n, const struct plan_cell *pc,
		      const struct result_stats *s, struct result_cell *rc)
{
	size_t failed = 0;
	for (size_t i = 0; i < n; i++) {
		const struct plan_criterion *cr = &crs[i];
		if (!criterion_applies(cr, pc))
			continue;
		double v = metric_value(cr->metric, s, rc);
		bool bad =
		    !isfinite(v) || (cr->has_min && v < cr->min) || (cr->has_max && v > cr->max);
		if (!bad)
			continue;
		_cleanup_free_ char *val = metric_text(cr->metric, v);
		struct result_error *e = result_cell_add_error(
		    rc, ERROR_CRITERION, "criterion %s:%d: %s is %s, expected %s%s%s%s%s",
		    cr->pos.file, cr->pos.line, metric_defs[cr->metric].name, val,
		    cr->has_min ? "at least " : "", cr->has_min ? cr->min_text : "",
		    cr->has_min && cr->has_max ? " and " : "", cr->has_max ? "at most " : "",
		    cr->has_max ? cr->max_text : "");
		e->run = -1;
		e->phase = -1;
		failed++;
	}
	return failed;
}
