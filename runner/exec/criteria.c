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

static const char *metric_name(enum plan_metric m)
{
	static const char *const n[] = {
		"throughput",       "files_per_s",     "total",
		"phase.prepare",    "phase.transfer",  "phase.finalize",
		"phase.verify",     "phase.cleanup",   "cv",
		"write_throughput", "read_throughput", "alloc_before",
		"alloc_after",      "alloc_growth",    "alloc_deleted",
		"cpu_guest",        "cpu_qemu",
	};
	return n[m];
}

static bool is_size(enum plan_metric m)
{
	return m >= PLAN_METRIC_ALLOC_BEFORE && m <= PLAN_METRIC_ALLOC_DELETED;
}

static bool is_rate(enum plan_metric m)
{
	return m == PLAN_METRIC_THROUGHPUT || m == PLAN_METRIC_WRITE_THROUGHPUT ||
	       m == PLAN_METRIC_READ_THROUGHPUT;
}

/* The metric's value in the plan's base units (bytes/s, files/s, ns, percent, bytes); a run
 * metric is its median over the cell's measured runs (rc). */
static double metric_value(enum plan_metric m, const struct result_stats *s,
			   const struct result_cell *rc)
{
	if (m >= PLAN_METRIC_WRITE_THROUGHPUT) {
		struct stats_summary sum;
		result_cell_metric_summary(rc, metric_name(m), &sum);
		return m >= PLAN_METRIC_CPU_GUEST ? sum.median * 1e9 : sum.median;
	}
	switch (m) {
	case PLAN_METRIC_THROUGHPUT: return s->bytes_per_s;
	case PLAN_METRIC_FILES_PER_S: return s->files_per_s;
	case PLAN_METRIC_TOTAL: return s->total.median * 1e9;
	case PLAN_METRIC_CV: return s->total.cv * 100.0;
	default: return s->phase[m - PLAN_METRIC_PREPARE].median * 1e9;
	}
}

/* The value in the units the plan wrote its bound in. Caller frees. */
static char *metric_text(enum plan_metric m, double v)
{
	if (!isfinite(v))
		return xstrdup("undefined");
	if (is_rate(m))
		return xasprintf("%.3g MB/s", v / 1e6);
	if (is_size(m))
		return xasprintf("%.3g MB", v / 1e6);
	if (m == PLAN_METRIC_FILES_PER_S)
		return xasprintf("%.3g files/s", v);
	if (m == PLAN_METRIC_CV)
		return xasprintf("%.3g%%", v);
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
		    cr->pos.file, cr->pos.line, metric_name(cr->metric), val,
		    cr->has_min ? "at least " : "", cr->has_min ? cr->min_text : "",
		    cr->has_min && cr->has_max ? " and " : "", cr->has_max ? "at most " : "",
		    cr->has_max ? cr->max_text : "");
		e->run = -1;
		e->phase = -1;
		failed++;
	}
	return failed;
}
