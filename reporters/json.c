/* SPDX-License-Identifier: MIT */
/*
 * JSON for dashboards: the results file itself, Bencher Metric Format and github-action-benchmark's
 * customSmallerIsBetter. jansson formats reals around the locale itself; the small strings built
 * here with snprintf run under report_locale_enter().
 */
#include <math.h>
#include <string.h>

#include "pivot-verdicts.h"
#include "reporters.h"

static int dump(json_t *root, FILE *out, size_t flags, const char *what, char **err)
{
	int rc = json_dumpf(root, out, flags);
	if (rc == 0 && fputc('\n', out) == EOF)
		rc = -1;
	if (rc == 0 && fflush(out) != 0)
		rc = -1;
	json_decref(root);
	if (rc < 0 || ferror(out)) {
		*err = xasprintf("cannot write the %s", what);
		return -1;
	}
	return 0;
}

int report_json(const struct results *r, FILE *out, char **err)
{
	return report_json_layout(r, NULL, out, err);
}

int report_json_layout(const struct results *r, const struct report_markdown_opts *opts, FILE *out,
		       char **err)
{
	/* the one writer of the results JSON, so the export is the results file byte for byte,
	 * with the verdicts of the pivot computed anew from the runs */
	json_t *v = report_verdicts_json(r, opts, err);
	if (!v)
		return -1;
	int rc = results_dump_with(r, v, out, err);
	json_decref(v);
	return rc;
}

/* A cell that has something to export: measured runs with a finite mean total. */
static bool exportable(const struct result_cell *c)
{
	return c->has_stats && c->stats.total.n > 0 && isfinite(c->stats.total.mean);
}

/* Object keys must be valid UTF-8 for jansson; cell ids are, but do not trust that here. */
static char *clean_key(const char *s)
{
	return report_clean_text(s);
}

static json_t *bmf_metric(double value, double lower, double upper)
{
	json_t *m = json_object();
	json_object_set_new(m, "value", json_real(value));
	if (isfinite(lower) && isfinite(upper)) {
		json_object_set_new(m, "lower_value", json_real(lower));
		json_object_set_new(m, "upper_value", json_real(upper));
	}
	return m;
}

/* The per-run metrics a cell's runs reported (results.h result_metric_defs, and any other the
 * file describes): one measure each, named as the metric, the mean with its 95% CI. */
static void bmf_run_metrics(const struct results *r, const struct result_cell *c, json_t *b)
{
	for (size_t k = 0; k < r->n_metrics; k++) {
		const char *name = r->metrics[k].name;
		if (!result_cell_has_metric(c, name))
			continue;
		struct stats_summary s;
		result_cell_metric_summary(c, name, &s);
		if (s.n == 0 || !isfinite(s.mean))
			continue;
		_cleanup_free_ char *key = clean_key(name);
		json_object_set_new(b, key, bmf_metric(s.mean, s.ci_low, s.ci_high));
	}
}

/* The per-run metrics as lines of github-action-benchmark's "extra": "NAME: mean UNIT". */
static char *gab_run_metrics(const struct results *r, const struct result_cell *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	for (size_t k = 0; k < r->n_metrics; k++) {
		const struct result_metric *m = &r->metrics[k];
		if (!result_cell_has_metric(c, m->name))
			continue;
		struct stats_summary s;
		result_cell_metric_summary(c, m->name, &s);
		if (s.n == 0 || !isfinite(s.mean))
			continue;
		_cleanup_free_ char *name = clean_key(m->name);
		_cleanup_free_ char *unit = clean_key(m->unit);
		fprintf(f, "\n%s: %.6g %s", name, s.mean, unit);
	}
	fclose(f);
	return buf;
}

int report_bmf(const struct results *r, FILE *out, char **err)
{
	json_t *root = json_object();
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct result_cell *c = &r->cells[i];
		if (!exportable(c))
			continue;
		const struct stats_summary *t = &c->stats.total;
		json_t *b = json_object();
		/* Bencher's built-in latency measure is in nanoseconds; a time is never negative,
		 * so the interval of a noisy small sample is cut at 0 rather than exported below it
		 */
		json_object_set_new(
		    b, "latency",
		    bmf_metric(t->mean * 1e9, fmax(t->ci_low, 0) * 1e9, t->ci_high * 1e9));
		if (isfinite(c->stats.bytes_per_s))
			json_object_set_new(b, "bytes-per-second",
					    bmf_metric(c->stats.bytes_per_s, NAN, NAN));
		bmf_run_metrics(r, c, b);
		_cleanup_free_ char *key = clean_key(c->id);
		json_object_set_new(root, key, b);
	}
	return dump(root, out, JSON_INDENT(2) | JSON_REAL_PRECISION(12) | JSON_PRESERVE_ORDER,
		    "Bencher BMF report", err);
}

int report_gab(const struct results *r, FILE *out, char **err)
{
	struct report_locale loc;
	report_locale_enter(&loc);
	json_t *root = json_array();
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct result_cell *c = &r->cells[i];
		if (!exportable(c))
			continue;
		const struct stats_summary *t = &c->stats.total;
		_cleanup_free_ char *name = clean_key(c->id);
		json_t *b =
		    json_pack("{s:s, s:s, s:f}", "name", name, "unit", "s", "value", t->mean);
		if (isfinite(t->ci_low) && isfinite(t->ci_high)) {
			_cleanup_free_ char *range =
			    xasprintf("\xc2\xb1 %.6f", (t->ci_high - t->ci_low) / 2);
			json_object_set_new(b, "range", json_string(range));
		}
		_cleanup_free_ char *tput =
		    isfinite(c->stats.bytes_per_s)
			? xasprintf("\nthroughput: %.3f MB/s", c->stats.bytes_per_s / 1e6)
			: xstrdup("");
		_cleanup_free_ char *cv =
		    isfinite(t->cv) ? xasprintf(", cv %.2f%%", t->cv * 100) : xstrdup("");
		_cleanup_free_ char *extra =
		    xasprintf("median: %.6f s\nruns: %zu%s, outliers %zu\nstatus: %s%s", t->median,
			      t->n, cv, c->stats.outliers, result_status_name(c->status), tput);
		_cleanup_free_ char *ms = gab_run_metrics(r, c);
		if (*ms) {
			char *more = xasprintf("%s%s", extra, ms);
			free(extra);
			extra = more;
		}
		if (c->stop_reason != STATS_CONTINUE) {
			char *more = xasprintf("%s\nstopped: %s", extra,
					       stats_stop_name((enum stats_stop)c->stop_reason));
			free(extra);
			extra = more;
		}
		json_object_set_new(b, "extra", json_string(extra));
		json_array_append_new(root, b);
	}
	report_locale_leave(&loc);
	return dump(root, out, JSON_INDENT(2) | JSON_REAL_PRECISION(12) | JSON_PRESERVE_ORDER,
		    "github-action-benchmark report", err);
}
