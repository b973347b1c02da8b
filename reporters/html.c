/* SPDX-License-Identifier: MIT */
/*
 * The HTML report of a run (report_html() in reporters.h): one static page, inline SVG and CSS.
 * Per pivot table of the Markdown report (the same layout, md-layout.h), a strip plot per
 * column: every measured run and every boot's mean as points, the cell's mean with its 95%
 * confidence interval (the one central value and interval of every report, ferry(1) REPORTS),
 * with the numbers in a table beside it and in each mark's <title>; stacked phase bars; the
 * full phase table; failures; provenance (html-prov.c). Every string from the results is
 * untrusted and escaped (html_text()).
 */
#include <math.h>
#include <string.h>

#include "html-common.h"
#include "html-int.h"
#include "md-layout.h"
#include "reporters.h"

/* A strip plot's geometry. */
#define SP_W     600.0
#define SP_LEFT  150.0
#define SP_RIGHT 20.0
#define SP_ROW   36.0
#define SP_TOP   8.0
#define SP_BOT   30.0

bool html_measured(const struct result_run *run)
{
	return !run->warmup && run->integrity_ok && isfinite(run->total);
}

void html_label(FILE *f, const char *s, size_t max_chars)
{
	_cleanup_free_ char *clean = report_clean_text(s);
	size_t chars = 0, cut = 0;
	for (size_t i = 0; clean[i]; i++) {
		if (((unsigned char)clean[i] & 0xc0) != 0x80 && chars++ == max_chars) {
			cut = i;
			break;
		}
	}
	if (cut) {
		clean[cut] = '\0';
		html_text(f, clean);
		fputs("\xe2\x80\xa6", f); /* ellipsis */
	} else {
		html_text(f, clean);
	}
}

void html_cell_value(FILE *f, const struct result_cell *c)
{
	const struct stats_summary *t = &c->stats.total;
	html_seconds(f, t->mean);
	if (isfinite(t->ci_low) && isfinite(t->ci_high)) {
		fputs(" [", f);
		html_seconds(f, t->ci_low);
		fputs(" \xe2\x80\x93 ", f);
		html_seconds(f, t->ci_high);
		fputc(']', f);
	}
}

/* The boots of a cell's measured runs: id and geometric mean of its runs' totals (the value a
 * comparison takes per boot). Returns how many; *out is the caller's. */
size_t html_boot_means(const struct result_cell *c, int64_t **ids, double **means, size_t **n)
{
	size_t k = 0;
	*ids = xcalloc(c->n_runs + 1, sizeof(**ids));
	*means = xcalloc(c->n_runs + 1, sizeof(**means));
	*n = xcalloc(c->n_runs + 1, sizeof(**n));
	for (size_t i = 0; i < c->n_runs; i++) {
		const struct result_run *run = &c->runs[i];
		if (!html_measured(run) || run->boot < 0 || run->total <= 0)
			continue;
		size_t b = 0;
		while (b < k && (*ids)[b] != run->boot)
			b++;
		if (b == k)
			(*ids)[k++] = run->boot;
		(*means)[b] += log(run->total);
		(*n)[b]++;
	}
	for (size_t b = 0; b < k; b++)
		(*means)[b] = exp((*means)[b] / (double)(*n)[b]);
	return k;
}

/* One row of a strip plot: the interval, the runs, the boot means, the mean. */
static void strip_row(FILE *f, const struct result_cell *c, const char *label,
		      const struct html_axis *ax, double y)
{
	const struct stats_summary *t = &c->stats.total;
	fputs("<g class=\"cell\" data-cell=\"", f);
	html_text(f, c->id);
	fprintf(f,
		"\" data-mean=\"%.9g\" data-ci-low=\"%.9g\" data-ci-high=\"%.9g\" data-n=\"%zu\">",
		t->mean, t->ci_low, t->ci_high, t->n);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\"><title>", SP_LEFT - 6, y + 4);
	html_text(f, c->id);
	fputs("</title>", f);
	html_label(f, label, 22);
	fputs("</text>\n", f);
	if (isfinite(t->ci_low) && isfinite(t->ci_high)) {
		fprintf(f,
			"<line class=\"ci\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
			"y2=\"%.1f\"><title>95%% "
			"CI of the mean: ",
			html_axis_px(ax, t->ci_low), y, html_axis_px(ax, t->ci_high), y);
		html_seconds(f, t->ci_low);
		fputs(" \xe2\x80\x93 ", f);
		html_seconds(f, t->ci_high);
		fputs("</title></line>\n", f);
	}
	size_t k = 0;
	for (size_t i = 0; i < c->n_runs; i++) {
		const struct result_run *run = &c->runs[i];
		if (!html_measured(run))
			continue;
		double dy = (double)((k++ % 5)) * 3 - 6; /* spread, so equal runs stay visible */
		fprintf(f,
			"<circle class=\"run\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" "
			"data-total=\"%.9g\"><title>run %u",
			html_axis_px(ax, run->total), y + dy, run->total, run->index);
		if (run->boot >= 0)
			fprintf(f, " (boot %lld)", (long long)run->boot);
		fputs(": ", f);
		html_seconds(f, run->total);
		fputs(run->outlier ? ", outlier" : "", f);
		fputs("</title></circle>\n", f);
	}
	_cleanup_free_ int64_t *ids = NULL;
	_cleanup_free_ double *means = NULL;
	_cleanup_free_ size_t *n = NULL;
	size_t boots = html_boot_means(c, &ids, &means, &n);
	for (size_t b = 0; b < boots; b++) {
		fprintf(f,
			"<circle class=\"boot\" cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" "
			"data-boot-mean=\"%.9g\"><title>boot %lld: geometric mean of %zu run%s ",
			html_axis_px(ax, means[b]), y, means[b], (long long)ids[b], n[b],
			n[b] == 1 ? "" : "s");
		html_seconds(f, means[b]);
		fputs("</title></circle>\n", f);
	}
	double mx = html_axis_px(ax, t->mean);
	fprintf(f,
		"<line class=\"mean\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"><title>mean ",
		mx, y - 11, mx, y + 11);
	html_cell_value(f, c);
	fprintf(f, ", %zu runs</title></line></g>\n", t->n);
}

/* The table beside a strip plot. */
static void strip_table(FILE *f, const struct results *r, const size_t *cells, size_t n,
			const struct layout *l)
{
	fputs("<table><tr><th class=\"l\">", f);
	html_text(f, l->rows ? l->rows : "cell");
	fputs("</th><th>mean total</th><th>95% CI</th><th>median</th><th>runs</th><th>boots</th>"
	      "<th class=\"l\">status</th></tr>\n",
	      f);
	for (size_t k = 0; k < n; k++) {
		const struct result_cell *c = &r->cells[cells[k]];
		const struct stats_summary *t = &c->stats.total;
		_cleanup_free_ int64_t *ids = NULL;
		_cleanup_free_ double *means = NULL;
		_cleanup_free_ size_t *nb = NULL;
		size_t boots = html_boot_means(c, &ids, &means, &nb);
		fputs("<tr><td class=\"l\">", f);
		html_text(f, l->row[cells[k]]);
		fputs("</td><td>", f);
		html_seconds(f, t->mean);
		fputs("</td><td>", f);
		if (isfinite(t->ci_low) && isfinite(t->ci_high)) {
			html_seconds(f, t->ci_low);
			fputs(" \xe2\x80\x93 ", f);
			html_seconds(f, t->ci_high);
		} else {
			fputs("\xe2\x80\x94", f);
		}
		fputs("</td><td>", f);
		html_seconds(f, t->median);
		fprintf(f, "</td><td>%zu</td><td>%zu</td><td class=\"l\">%s</td></tr>\n", t->n,
			boots, result_status_name(c->status));
	}
	fputs("</table>\n", f);
}

/* One strip plot: the cells[0..n) of one column of one pivot table. */
static void strip_plot(FILE *f, const struct results *r, const struct layout *l,
		       const size_t *cells, size_t n, const char *title)
{
	double hi = 0;
	for (size_t k = 0; k < n; k++) {
		const struct result_cell *c = &r->cells[cells[k]];
		for (size_t i = 0; i < c->n_runs; i++)
			if (html_measured(&c->runs[i]) && c->runs[i].total > hi)
				hi = c->runs[i].total;
		if (isfinite(c->stats.total.ci_high) && c->stats.total.ci_high > hi)
			hi = c->stats.total.ci_high;
	}
	struct html_axis ax;
	html_axis_init(&ax, 0, hi, SP_LEFT, SP_W - SP_RIGHT);
	double h = SP_TOP + SP_ROW * (double)n + SP_BOT;
	fputs("<h3>", f);
	html_text(f, title);
	fputs("</h3>\n<div class=\"chart\">\n", f);
	fprintf(
	    f,
	    "<svg class=\"strip\" role=\"img\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f "
	    "%.0f\"><title>",
	    SP_W, h, SP_W, h);
	html_text(f, title);
	fputs(": total time per run (grey), per boot (blue), mean and 95% CI (red)</title>\n", f);
	html_axis_draw_x(f, &ax, SP_TOP, h - SP_BOT + 4, "", 1);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">total (s)</text>\n",
		(SP_LEFT + SP_W - SP_RIGHT) / 2, h - 3);
	for (size_t k = 0; k < n; k++)
		strip_row(f, &r->cells[cells[k]], l->row[cells[k]], &ax,
			  SP_TOP + SP_ROW * ((double)k + 0.5));
	fputs("</svg>\n", f);
	strip_table(f, r, cells, n, l);
	fputs("</div>\n", f);
}

/* Per pivot table (group of the other axes), one strip plot per column. */
static void write_strips(FILE *f, const struct results *r, const struct layout *l)
{
	fputs("<h2 id=\"totals\">Total time per cell</h2>\n<p>Each grey point is a measured run, "
	      "each blue point the geometric mean of one boot's runs (runs of one boot share its "
	      "luck; the boot is the sample of every comparison), the red tick the mean of the "
	      "runs and the red bar its 95% confidence interval. Hover a mark for its numbers.</p>"
	      "\n",
	      f);
	for (size_t g = 0; g < l->groups.n; g++) {
		struct strset cols = { 0 };
		size_t n = (size_t)(md_group_end(l, g) - md_group_begin(l, g));
		size_t *cells = xcalloc(n + 1, sizeof(*cells));
		for (const size_t *p = md_group_begin(l, g); p < md_group_end(l, g); p++)
			md_strset_add(&cols, l->col[*p]);
		for (size_t col = 0; col < cols.n; col++) {
			size_t k = 0;
			for (const size_t *p = md_group_begin(l, g); p < md_group_end(l, g); p++)
				if (STREQ(l->col[*p], cols.v[col]) && md_has_stats(&r->cells[*p]))
					cells[k++] = *p;
			if (!k)
				continue;
			_cleanup_free_ char *title = xasprintf(
			    "%s%s%s%s%s%s", l->cols ? l->cols : "", l->cols ? "=" : "",
			    l->cols ? cols.v[col] : "every cell", *l->groups.v[g] ? " (" : "",
			    l->groups.v[g], *l->groups.v[g] ? ")" : "");
			strip_plot(f, r, l, cells, k, title);
		}
		free(cells);
		md_strset_free(&cols);
	}
}

int report_html(const struct results *r, const struct report_markdown_opts *opts, FILE *out,
		char **err)
{
	static const struct report_markdown_opts defaults = { 0 };
	struct layout l = { 0 };
	if (md_layout_build(&l, r, opts ? opts : &defaults, err) < 0) {
		md_layout_free(&l, r->n_cells);
		return -1;
	}
	struct report_locale loc;
	report_locale_enter(&loc);
	_cleanup_free_ char *title =
	    xasprintf("ferry: %s", r->plan.name && *r->plan.name ? r->plan.name : "results");
	html_page_begin(out, title);
	html_run_summary(out, r);
	size_t measured = 0;
	for (size_t i = 0; i < r->n_cells; i++)
		measured += md_has_stats(&r->cells[i]);
	if (measured) {
		write_strips(out, r, &l);
		html_phases(out, r, &l);
	}
	html_problems(out, r);
	html_provenance(out, r);
	html_page_end(out);
	md_layout_free(&l, r->n_cells);
	report_locale_leave(&loc);
	if (fflush(out) != 0 || ferror(out)) {
		*err = xstrdup("cannot write the HTML report");
		return -1;
	}
	return 0;
}
