/* SPDX-License-Identifier: MIT */
/*
 * The HTML report of a comparison (report_compare_html() in compare-report.h): every cell's
 * change of the total (and every other metric with a verdict of regressed or improved, as the
 * Markdown shows them) as a point with its interval on one axis around 0, the minimum change
 * (threshold) marked as a band, coloured by verdict, with the numbers beside it and in each
 * mark's <title>; the provenance differences; the cells not compared.
 */
#include <math.h>
#include <string.h>

#include "compare-report.h"
#include "html-common.h"
#include "html-int.h"
#include "reporters.h"

#define FP_W     620.0
#define FP_LEFT  200.0
#define FP_RIGHT 20.0
#define FP_ROW   26.0
#define FP_TOP   8.0
#define FP_BOT   32.0

static bool shown(const struct cmp_row *r)
{
	return STREQ(r->metric, "total") || r->verdict == CMP_REGRESSED ||
	       r->verdict == CMP_IMPROVED;
}

static void row_title(FILE *f, const struct comparison *c, const struct cmp_row *r)
{
	html_text(f, r->cell);
	fputc(' ', f);
	html_text(f, r->metric);
	fputs(": ", f);
	html_pct(f, r->change);
	if (isfinite(r->ci_low) && isfinite(r->ci_high)) {
		fprintf(f, " [%.0f%% CI ", comparison_interval_pct(c));
		html_pct(f, r->ci_low);
		fputs(", ", f);
		html_pct(f, r->ci_high);
		fputc(']', f);
	}
	fprintf(f, ", threshold \xc2\xb1%.3g%%, %s", 100 * r->threshold,
		cmp_verdict_name(r->verdict));
}

static void forest_row(FILE *f, const struct comparison *c, const struct cmp_row *r,
		       const struct html_axis *ax, double y)
{
	const char *v = cmp_verdict_name(r->verdict);
	fputs("<g class=\"change\" data-cell=\"", f);
	html_text(f, r->cell);
	fputs("\" data-metric=\"", f);
	html_text(f, r->metric);
	fprintf(f,
		"\" data-change=\"%.9g\" data-ci-low=\"%.9g\" data-ci-high=\"%.9g\" "
		"data-threshold=\"%.9g\" data-verdict=\"%s\"><title>",
		r->change, r->ci_low, r->ci_high, r->threshold, v);
	row_title(f, c, r);
	fputs("</title>\n", f);
	double t0 = html_axis_px(ax, -r->threshold), t1 = html_axis_px(ax, r->threshold);
	fprintf(f,
		"<rect class=\"thr\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>"
		"<line class=\"thrl\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
		"<line class=\"thrl\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
		t0, y - FP_ROW / 2, t1 - t0, FP_ROW, t0, y - FP_ROW / 2, t0, y + FP_ROW / 2, t1,
		y - FP_ROW / 2, t1, y + FP_ROW / 2);
	_cleanup_free_ char *label =
	    STREQ(r->metric, "total") ? xstrdup(r->cell) : xasprintf("%s %s", r->cell, r->metric);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", FP_LEFT - 6, y + 4);
	html_label(f, label, 26);
	fputs("</text>\n", f);
	if (isfinite(r->ci_low) && isfinite(r->ci_high))
		fprintf(f,
			"<line class=\"v-%s\" stroke-width=\"3\" x1=\"%.1f\" y1=\"%.1f\" "
			"x2=\"%.1f\" y2=\"%.1f\"/>",
			v, html_axis_px(ax, r->ci_low), y, html_axis_px(ax, r->ci_high), y);
	if (isfinite(r->change))
		fprintf(f, "<circle class=\"v-%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\"/>", v,
			html_axis_px(ax, r->change), y);
	fputs("</g>\n", f);
}

static void forest_table(FILE *f, const struct comparison *c)
{
	fprintf(f,
		"<table class=\"changes\"><tr><th class=\"l\">cell</th><th class=\"l\">metric</th>"
		"<th>baseline median</th><th>new median</th><th>change</th><th>%.0f%% CI</th>"
		"<th>threshold</th><th>boots</th><th class=\"l\">verdict</th></tr>\n",
		comparison_interval_pct(c));
	for (size_t i = 0; i < c->n_rows; i++) {
		const struct cmp_row *r = &c->rows[i];
		if (!shown(r))
			continue;
		fputs("<tr><td class=\"l\">", f);
		html_text(f, r->cell);
		fputs("</td><td class=\"l\">", f);
		html_text(f, r->metric);
		fprintf(f, "</td><td>%.4g ", r->median_base);
		html_text(f, r->unit);
		fprintf(f, "</td><td>%.4g ", r->median_cand);
		html_text(f, r->unit);
		fputs("</td><td>", f);
		html_pct(f, r->change);
		fputs("</td><td>", f);
		html_pct(f, r->ci_low);
		fputs(", ", f);
		html_pct(f, r->ci_high);
		fprintf(f,
			"</td><td>\xc2\xb1%.3g%%</td><td>%zu/%zu</td><td class=\"l "
			"verdict-%s\">%s",
			100 * r->threshold, r->boots_base, r->boots_cand,
			cmp_verdict_name(r->verdict), cmp_verdict_name(r->verdict));
		if (r->verdict == CMP_INCONCLUSIVE && r->more_boots > 0)
			fprintf(f, " (need ~%ld more boot%s per side)", r->more_boots,
				r->more_boots == 1 ? "" : "s");
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

static void forest(FILE *f, const struct comparison *c)
{
	size_t n = 0;
	double m = 0.1;
	for (size_t i = 0; i < c->n_rows; i++) {
		const struct cmp_row *r = &c->rows[i];
		if (!shown(r))
			continue;
		n++;
		double v[] = { r->change, r->ci_low, r->ci_high, r->threshold * 1.5 };
		for (size_t k = 0; k < ELEMENTSOF(v); k++)
			if (isfinite(v[k]) && fabs(v[k]) > m)
				m = fabs(v[k]);
	}
	if (!n)
		return;
	struct html_axis ax;
	html_axis_init(&ax, -m, m, FP_LEFT, FP_W - FP_RIGHT);
	double h = FP_TOP + FP_ROW * (double)n + FP_BOT;
	fprintf(f,
		"<h2 id=\"changes\">Changes</h2>\n<p>Each cell's change (new / baseline - 1) with "
		"its %.0f%% interval, whose ends are the one-sided bounds every verdict is read "
		"from; the green band is the minimum change (threshold). Colour: red regressed, "
		"green improved, grey unchanged, orange inconclusive.</p>\n<div class=\"chart\">\n",
		comparison_interval_pct(c));
	fprintf(f,
		"<svg class=\"forest\" role=\"img\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 "
		"%.0f %.0f\"><title>change of every cell with its interval</title>\n",
		FP_W, h, FP_W, h);
	html_axis_draw_x(f, &ax, FP_TOP, h - FP_BOT + 4, "%", 100);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">change</text>\n",
		(FP_LEFT + FP_W - FP_RIGHT) / 2, h - 3);
	size_t k = 0;
	for (size_t i = 0; i < c->n_rows; i++)
		if (shown(&c->rows[i]))
			forest_row(f, c, &c->rows[i], &ax, FP_TOP + FP_ROW * ((double)k++ + 0.5));
	fputs("</svg>\n", f);
	forest_table(f, c);
	fputs("</div>\n", f);
}

static void diffs(FILE *f, const struct comparison *c)
{
	if (!c->n_diffs)
		return;
	fputs("<h2 id=\"differences\">Provenance differences</h2>\n<table><tr><th "
	      "class=\"l\">key</th><th class=\"l\">baseline</th><th class=\"l\">new</th><th "
	      "class=\"l\"></th></tr>\n",
	      f);
	for (size_t i = 0; i < c->n_diffs; i++) {
		const struct cmp_diff *d = &c->diffs[i];
		const char *what[] = { d->key, d->base, d->cand };
		fputs("<tr>", f);
		for (size_t k = 0; k < ELEMENTSOF(what); k++) {
			fputs("<td class=\"l\">", f);
			html_text(f, what[k]);
			fputs("</td>", f);
		}
		fprintf(f, "<td class=\"l\">%s</td></tr>\n",
			d->refusing && !d->allowed ? "refused"
			: d->refusing              ? "allowed"
						   : "shown");
	}
	fputs("</table>\n", f);
}

static void header(FILE *f, const struct comparison *c, const struct compare_report_ctx *x)
{
	if (c->refused) {
		_cleanup_free_ char *why = comparison_refusal(c);
		fputs("<p class=\"bad\"><b>Refused:</b> ", f);
		html_text(f, why);
		fputs("</p>\n", f);
	} else {
		fprintf(f,
			"<p><b>%zu regressed</b>, %zu improved, %zu unchanged, %zu inconclusive "
			"(cell and metric pairs; %zu cell%s regressed). Rule %s; minimum change "
			"%.3g%%; baseline: %zu file%s pooled.</p>\n",
			c->counts[CMP_REGRESSED], c->counts[CMP_IMPROVED], c->counts[CMP_UNCHANGED],
			c->counts[CMP_INCONCLUSIVE], c->regressed_cells,
			c->regressed_cells == 1 ? "" : "s", cmp_rule_name(c->rule),
			100 * c->threshold, c->n_used, c->n_used == 1 ? "" : "s");
	}
	if (!x)
		return;
	fputs("<p>Baseline: ", f);
	for (size_t i = 0; i < c->n_used; i++) {
		fputs(i ? ", <code>" : "<code>", f);
		html_text(f, x->baselines[c->used[i]]);
		fputs("</code>", f);
	}
	if (!c->n_used)
		fputs("none comparable", f);
	fputs(". New: <code>", f);
	html_text(f, x->cand);
	fputs("</code>.</p>\n", f);
}

static void not_compared(FILE *f, const struct comparison *c)
{
	if (!c->n_only_base && !c->n_only_cand)
		return;
	fputs("<h2 id=\"not-compared\">Not compared</h2>\n<ul>\n", f);
	for (size_t i = 0; i < c->n_only_base; i++) {
		fputs("<li>", f);
		html_text(f, c->only_base[i]);
		fputs(" (baseline only)</li>\n", f);
	}
	for (size_t i = 0; i < c->n_only_cand; i++) {
		fputs("<li>", f);
		html_text(f, c->only_cand[i]);
		fputs(" (new only)</li>\n", f);
	}
	fputs("</ul>\n", f);
}

int report_compare_html(const struct comparison *c, const struct results *cand,
			const struct compare_report_ctx *x, FILE *out, char **err)
{
	struct report_locale loc;
	report_locale_enter(&loc);
	_cleanup_free_ char *title = xasprintf("ferry compare%s%s", cand->plan.name ? ": " : "",
					       cand->plan.name ? cand->plan.name : "");
	html_page_begin(out, title);
	header(out, c, x);
	diffs(out, c);
	if (!c->refused)
		forest(out, c);
	not_compared(out, c);
	html_provenance(out, cand);
	html_page_end(out);
	report_locale_leave(&loc);
	if (fflush(out) != 0 || ferror(out)) {
		*err = xstrdup("cannot write the HTML comparison");
		return -1;
	}
	return 0;
}
