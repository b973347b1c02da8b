/* SPDX-License-Identifier: MIT */
/*
 * The HTML trend report (report_trend_html() in reporters.h): per cell its median total over
 * the runs as a line with each run's 95% confidence interval, the changes of level as vertical
 * lines (dotted when pending) and each level (the geometric mean of its segment's medians, the
 * levels whose ratio a change is) as a horizontal line, with the numbers beside it and in each
 * mark's <title>; the runs and the environment shifts.
 */
#include <math.h>
#include <string.h>

#include "html-common.h"
#include "html-int.h"
#include "reporters.h"
#include "trend.h"

#define TR_W     640.0
#define TR_H     220.0
#define TR_LEFT  64.0
#define TR_RIGHT 20.0
#define TR_TOP   10.0
#define TR_BOT   34.0

static void when(FILE *f, const struct trend_file *tf)
{
	char buf[40];
	fputs(tf->started_ms ? report_format_timestamp(tf->started_ms, buf, sizeof(buf)) : "?", f);
}

static const struct trend_change *change_at(const struct trend_cell *tc, size_t point)
{
	for (size_t i = 0; i < tc->n_changes; i++)
		if (tc->changes[i].at == point)
			return &tc->changes[i];
	return NULL;
}

static double px_x(const struct trend_cell *tc, double i)
{
	double span = tc->n_points > 1 ? (double)(tc->n_points - 1) : 1;
	return TR_LEFT + 10 + i / span * (TR_W - TR_LEFT - TR_RIGHT - 20);
}

/* The levels: segments between the changes that are not pending, each at the geometric mean
 * of its medians. */
static void levels(FILE *f, const struct trend_cell *tc, const struct html_axis *ay)
{
	size_t start = 0;
	for (size_t k = 0; k <= tc->n_changes; k++) {
		if (k < tc->n_changes && tc->changes[k].pending)
			continue;
		size_t end = k < tc->n_changes ? tc->changes[k].at : tc->n_points;
		double sum = 0;
		size_t n = 0;
		for (size_t i = start; i < end; i++)
			if (tc->points[i].median > 0)
				sum += log(tc->points[i].median), n++;
		if (n) {
			double level = exp(sum / (double)n), y = html_axis_px(ay, level);
			fprintf(
			    f,
			    "<line class=\"level\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			    "data-level=\"%.9g\"><title>level ",
			    px_x(tc, (double)start), y, px_x(tc, (double)(end - 1)), y, level);
			html_seconds(f, level);
			fprintf(f, " (geometric mean of %zu run%s)</title></line>\n", n,
				n == 1 ? "" : "s");
		}
		start = end;
	}
	for (size_t k = 0; k < tc->n_changes; k++) {
		const struct trend_change *c = &tc->changes[k];
		double x = px_x(tc, (double)c->at - 0.5);
		fprintf(f,
			"<line class=\"%s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"data-at=\"%zu\" data-rel=\"%.9g\"><title>change of level ",
			c->pending ? "cpp" : "cp", x, TR_TOP, x, TR_H - TR_BOT, c->at, c->rel);
		html_pct(f, c->rel);
		if (c->pending)
			fputs(", pending (the next run confirms it or not)", f);
		else
			fprintf(f, " (p %.2g)", c->p);
		fputs(c->environment ? ", environment shift" : "", f);
		fputs("</title></line>\n", f);
	}
}

static void chart(FILE *f, const struct trend *t, const struct trend_cell *tc)
{
	double lo = INFINITY, hi = -INFINITY;
	for (size_t i = 0; i < tc->n_points; i++) {
		const struct trend_point *p = &tc->points[i];
		double v[] = { p->median, p->ci_low, p->ci_high };
		for (size_t k = 0; k < ELEMENTSOF(v); k++)
			if (isfinite(v[k]))
				lo = fmin(lo, v[k]), hi = fmax(hi, v[k]);
	}
	struct html_axis ay;
	html_axis_init(&ay, lo, hi, TR_H - TR_BOT, TR_TOP);
	fprintf(f,
		"<svg class=\"trend\" role=\"img\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 "
		"%.0f %.0f\"><title>median total over the runs</title>\n",
		TR_W, TR_H, TR_W, TR_H);
	html_axis_draw_y(f, &ay, TR_LEFT, TR_W - TR_RIGHT, "", 1);
	fprintf(f,
		"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">run (oldest to newest); "
		"median total (s)</text>\n",
		(TR_LEFT + TR_W - TR_RIGHT) / 2, TR_H - 4);
	levels(f, tc, &ay);
	fputs("<polyline class=\"series\" points=\"", f);
	for (size_t i = 0; i < tc->n_points; i++)
		fprintf(f, "%s%.1f,%.1f", i ? " " : "", px_x(tc, (double)i),
			html_axis_px(&ay, tc->points[i].median));
	fputs("\"/>\n", f);
	for (size_t i = 0; i < tc->n_points; i++) {
		const struct trend_point *p = &tc->points[i];
		double x = px_x(tc, (double)i);
		fprintf(
		    f,
		    "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%zu</text>",
		    x, TR_H - TR_BOT + 13, p->file + 1);
		fputs("<g class=\"point\"><title>", f);
		fprintf(f, "run %zu (", p->file + 1);
		html_text(f, t->files[p->file].name);
		fputs(", ", f);
		when(f, &t->files[p->file]);
		fputs("): median ", f);
		html_seconds(f, p->median);
		fputs(" [95% CI ", f);
		html_seconds(f, p->ci_low);
		fputs(" \xe2\x80\x93 ", f);
		html_seconds(f, p->ci_high);
		fprintf(f, "], %zu runs</title>", p->n);
		if (isfinite(p->ci_low) && isfinite(p->ci_high))
			fprintf(f,
				"<line class=\"ci\" stroke-width=\"1.5\" x1=\"%.1f\" y1=\"%.1f\" "
				"x2=\"%.1f\" y2=\"%.1f\"/>",
				x, html_axis_px(&ay, p->ci_low), x, html_axis_px(&ay, p->ci_high));
		fprintf(f,
			"<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" "
			"data-median=\"%.9g\"/></g>\n",
			x, html_axis_px(&ay, p->median), p->median);
	}
	fputs("</svg>\n", f);
}

static void cell_table(FILE *f, const struct trend *t, const struct trend_cell *tc)
{
	fputs("<table><tr><th>#</th><th class=\"l\">started (UTC)</th><th>median total</th>"
	      "<th>95% CI</th><th>n</th><th class=\"l\">change</th></tr>\n",
	      f);
	for (size_t i = 0; i < tc->n_points; i++) {
		const struct trend_point *p = &tc->points[i];
		fprintf(f, "<tr><td>%zu</td><td class=\"l\">", p->file + 1);
		when(f, &t->files[p->file]);
		fputs("</td><td>", f);
		html_seconds(f, p->median);
		fputs("</td><td>", f);
		if (isfinite(p->ci_low) && isfinite(p->ci_high)) {
			html_seconds(f, p->ci_low);
			fputs(" \xe2\x80\x93 ", f);
		}
		html_seconds(f, p->ci_high);
		fprintf(f, "</td><td>%zu</td><td class=\"l\">", p->n);
		const struct trend_change *c = change_at(tc, i);
		if (c) {
			fputs(c->rel > 0 ? "\xe2\x96\xb2 slower " : "\xe2\x96\xbc faster ", f);
			html_pct(f, c->rel);
			fputs(c->pending ? ", pending" : "", f);
		}
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

static void files_table(FILE *f, const struct trend *t)
{
	fputs("<table><tr><th>#</th><th class=\"l\">run</th><th class=\"l\">started (UTC)</th>"
	      "<th class=\"l\">host</th><th class=\"l\">ferry</th></tr>\n",
	      f);
	for (size_t i = 0; i < t->n_files; i++) {
		const struct trend_file *tf = &t->files[i];
		fprintf(f, "<tr><td>%zu</td><td class=\"l\">", i + 1);
		html_text(f, tf->name);
		fputs("</td><td class=\"l\">", f);
		when(f, tf);
		fputs("</td><td class=\"l\">", f);
		html_text(f, tf->hostname ? tf->hostname : "?");
		fputs("</td><td class=\"l\">", f);
		html_text(f, tf->ferry_version ? tf->ferry_version : "?");
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
	for (size_t e = 0; e < t->n_env; e++) {
		fprintf(f, "<p class=\"bad\"><b>Environment shift at run %zu</b> (", t->env[e] + 1);
		html_text(f, t->files[t->env[e]].name);
		fputs("): many cells changed level together; look at what changed on the host "
		      "(QEMU, kernel, load) before at the code.</p>\n",
		      f);
	}
}

int report_trend_html(const struct trend *t, FILE *out, char **err)
{
	struct report_locale loc;
	report_locale_enter(&loc);
	_cleanup_free_ char *title =
	    xasprintf("ferry trend: %zu run%s, %zu cell%s", t->n_files, t->n_files == 1 ? "" : "s",
		      t->n_cells, t->n_cells == 1 ? "" : "s");
	html_page_begin(out, title);
	fputs("<p>Runs in the order they started. A change of level (red dashed line) is kept "
	      "when the levels before and after (purple) differ by at least 5% at p \xe2\x89\xa4 "
	      "0.001; one seen at the newest run only is pending (orange dotted). Each point is "
	      "a run's median total with its 95% confidence interval.</p>\n",
	      out);
	files_table(out, t);
	if (t->hidden.cells)
		fprintf(
		    out,
		    "<p>%zu of the %zu cells are shown: those with the largest changes of level "
		    "first. Not shown: %zu cell%s, %zu with a change of level, %zu with a pending "
		    "one only, the rest stable.</p>\n",
		    t->n_cells - t->hidden.cells, t->n_cells, t->hidden.cells,
		    t->hidden.cells == 1 ? "" : "s", t->hidden.with_change, t->hidden.pending);
	for (size_t c = 0; c < t->n_cells; c++) {
		const struct trend_cell *tc = &t->cells[c];
		if (!tc->shown)
			continue;
		fputs("<h2>", out);
		html_text(out, tc->id);
		fputs("</h2>\n", out);
		if (!tc->n_points) {
			fputs("<p>No measured run in any file.</p>\n", out);
			continue;
		}
		fputs("<div class=\"chart\" data-cell=\"", out);
		html_text(out, tc->id);
		fputs("\">\n", out);
		chart(out, t, tc);
		cell_table(out, t, tc);
		fputs("</div>\n", out);
	}
	html_page_end(out);
	report_locale_leave(&loc);
	if (fflush(out) != 0 || ferror(out)) {
		*err = xstrdup("cannot write the HTML trend report");
		return -1;
	}
	return 0;
}
