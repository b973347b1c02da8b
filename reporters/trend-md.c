/* SPDX-License-Identifier: MIT */
/*
 * The trend report (report_trend_markdown() in reporters.h): per cell a Markdown table of its
 * median total over the runs with the 95% confidence interval and the changes of level, and a
 * Mermaid xychart (which GitHub renders) of the median and the interval's bounds.
 */
#include <math.h>
#include <string.h>

#include "md-layout.h"
#include "reporters.h"
#include "trend.h"

/* A change of level as a table mark: "▲ +12.3% (p 0.0002)" slower, "▼" faster. */
static void change_mark(FILE *f, const struct trend_change *c)
{
	fprintf(f, "%s %+.1f%%", c->rel > 0 ? "\xe2\x96\xb2 slower" : "\xe2\x96\xbc faster",
		100 * c->rel);
	if (c->pending)
		fputs(", pending (the next run confirms it or not)", f);
	else
		fprintf(f, " (p %.2g)", c->p);
	if (c->environment)
		fputs(", environment shift", f);
}

static const struct trend_change *change_at(const struct trend_cell *tc, size_t point)
{
	for (size_t i = 0; i < tc->n_changes; i++)
		if (tc->changes[i].at == point)
			return &tc->changes[i];
	return NULL;
}

static void when(FILE *f, const struct trend_file *tf)
{
	char buf[40];
	if (tf->started_ms)
		fputs(report_format_timestamp(tf->started_ms, buf, sizeof(buf)), f);
	else
		fputs("?", f);
}

/* Mermaid numbers: plain decimals, 4 significant digits are plenty for a chart */
static void series(FILE *f, const char *name, const struct trend_cell *tc, int which)
{
	fprintf(f, "    line \"%s\" [", name);
	for (size_t i = 0; i < tc->n_points; i++) {
		const struct trend_point *p = &tc->points[i];
		double v = which == 0 ? p->median : which == 1 ? p->ci_low : p->ci_high;
		if (!isfinite(v))
			v = p->median;
		fprintf(f, "%s%.4g", i ? ", " : "", v);
	}
	fputs("]\n", f);
}

static void write_cell(FILE *f, const struct trend *t, const struct trend_cell *tc)
{
	fputs("\n### ", f);
	md_text(f, tc->id);
	fputs("\n\n", f);
	if (!tc->n_points) {
		fputs("No measured run in any file.\n", f);
		return;
	}
	size_t kept = 0, pending = 0;
	for (size_t i = 0; i < tc->n_changes; i++)
		tc->changes[i].pending ? pending++ : kept++;
	if (!tc->n_changes)
		fprintf(f, "Stable over %zu run%s: no change of level.\n\n", tc->n_points,
			tc->n_points == 1 ? "" : "s");
	else
		fprintf(f, "%zu change%s of level, %zu pending.\n\n", kept, kept == 1 ? "" : "s",
			pending);

	fputs("| # | run | started (UTC) | median total | 95% CI | n | change |\n"
	      "|--:|---|---|--:|---|--:|---|\n",
	      f);
	for (size_t i = 0; i < tc->n_points; i++) {
		const struct trend_point *p = &tc->points[i];
		const struct trend_file *tf = &t->files[p->file];
		fprintf(f, "| %zu | ", p->file + 1);
		md_text(f, tf->name);
		fputs(" | ", f);
		when(f, tf);
		fprintf(f, " | %.4g s | ", p->median);
		if (isfinite(p->ci_low) && isfinite(p->ci_high))
			fprintf(f, "%.4g \xe2\x80\x93 %.4g s", p->ci_low, p->ci_high);
		else
			fputs("\xe2\x80\x94", f);
		fprintf(f, " | %zu | ", p->n);
		const struct trend_change *c = change_at(tc, i);
		if (c)
			change_mark(f, c);
		fputs(" |\n", f);
	}

	if (tc->n_points < 2)
		return;
	fputs("\n```mermaid\nxychart-beta\n    title ", f);
	mermaid_label(f, tc->id);
	fputs("\n    x-axis [", f);
	for (size_t i = 0; i < tc->n_points; i++) {
		const struct trend_change *c = change_at(tc, i);
		/* a change of level is marked on the axis: "7*" (pending: "7?") */
		fprintf(f, "%s\"%zu%s\"", i ? ", " : "", tc->points[i].file + 1,
			c ? (c->pending ? "?" : "*") : "");
	}
	fputs("]\n    y-axis \"median total (s)\"\n", f);
	series(f, "median", tc, 0);
	series(f, "95% CI low", tc, 1);
	series(f, "95% CI high", tc, 2);
	fputs("```\n", f);
}

int report_trend_markdown(const struct trend *t, FILE *out, char **err)
{
	struct report_locale loc;
	report_locale_enter(&loc);
	fprintf(out, "## ferry trend: %zu run%s, %zu cell%s\n\n", t->n_files,
		t->n_files == 1 ? "" : "s", t->n_cells, t->n_cells == 1 ? "" : "s");
	fputs("Runs in the order they started. A change of level is kept when the levels before "
	      "and after differ by at least 5% at p \xe2\x89\xa4 0.001 (segments of at least 2 "
	      "runs); one seen at the newest run only is *pending*. `*` marks a change on the "
	      "chart's axis, `?` a pending one.\n\n",
	      out);
	fputs("| # | run | started (UTC) | host | ferry |\n|--:|---|---|---|---|\n", out);
	for (size_t i = 0; i < t->n_files; i++) {
		const struct trend_file *tf = &t->files[i];
		fprintf(out, "| %zu | ", i + 1);
		md_text(out, tf->name);
		fputs(" | ", out);
		when(out, tf);
		fputs(" | ", out);
		md_text(out, tf->hostname ? tf->hostname : "?");
		fputs(" | ", out);
		md_text(out, tf->ferry_version ? tf->ferry_version : "?");
		fputs(" |\n", out);
	}
	for (size_t e = 0; e < t->n_env; e++) {
		size_t f = t->env[e], cells = t->env_cells[e];
		fprintf(out, "\n> **Environment shift at run %zu** (", f + 1);
		md_text(out, t->files[f].name);
		fprintf(
		    out,
		    "): %zu cells changed level together. Look at what changed on the host (QEMU, "
		    "kernel, load) before at the code; the cells' changes below are marked.\n",
		    cells);
	}
	if (t->hidden.cells)
		fprintf(
		    out,
		    "\n%zu of the %zu cells are shown: those with the largest changes of level "
		    "first. Not shown: %zu cell%s, %zu with a change of level, %zu with a pending "
		    "one only, the rest stable.\n",
		    t->n_cells - t->hidden.cells, t->n_cells, t->hidden.cells,
		    t->hidden.cells == 1 ? "" : "s", t->hidden.with_change, t->hidden.pending);
	for (size_t c = 0; c < t->n_cells; c++)
		if (t->cells[c].shown)
			write_cell(out, t, &t->cells[c]);
	report_locale_leave(&loc);
	if (fflush(out) != 0 || ferror(out)) {
		*err = xstrdup("cannot write the trend report");
		return -1;
	}
	return 0;
}
