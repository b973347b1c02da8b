/* SPDX-License-Identifier: MIT */
/*
 * The Markdown report's per-cell detail in two tables that fit GitHub's page width (about 1000
 * pixels): Phases (the mean time of each phase) and Runs (how many, the mean total with its 95%
 * CI, CV, throughput, why the repeat loop stopped). A cell is named by its axis values joined
 * with " · ", in one column. The HTML report has everything in one wide table.
 */
#include <math.h>
#include <string.h>

#include "md-layout.h"
#include "reporters.h"

static void cell_name(FILE *f, const struct result_cell *c)
{
	if (!c->n_axes) {
		md_text(f, c->id);
		return;
	}
	for (size_t a = 0; a < c->n_axes; a++) {
		fputs(a ? " \xc2\xb7 " : "", f);
		md_text(f, c->axes[a].value);
	}
}

static void phases_table(FILE *f, const struct results *r)
{
	fputs("### Phases\n\nMean time per phase of the measured runs (prepare + transfer + "
	      "finalize is the total; verify is timed but is not part of it).\n\n| cell |",
	      f);
	for (int p = 0; p < PHASE_COUNT; p++)
		fprintf(f, " %s |", result_phase_name((enum result_phase)p));
	fputs("\n| :--- |", f);
	for (int p = 0; p < PHASE_COUNT; p++)
		fputs(" ---: |", f);
	fputc('\n', f);
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct result_cell *c = &r->cells[i];
		if (!md_has_stats(c))
			continue;
		fputs("| ", f);
		cell_name(f, c);
		fputs(" |", f);
		for (int p = 0; p < PHASE_COUNT; p++) {
			fputc(' ', f);
			md_cell_seconds(f, c->stats.phase[p].n ? c->stats.phase[p].mean : NAN);
			fputs(" |", f);
		}
		fputc('\n', f);
	}
	fputc('\n', f);
}

static void runs_table(FILE *f, const struct results *r, const char *const *status_badge)
{
	fputs("| cell | runs | mean total | 95% CI | CV | throughput | stopped |\n"
	      "| :--- | ---: | ---: | ---: | ---: | ---: | :--- |\n",
	      f);
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct result_cell *c = &r->cells[i];
		if (!md_has_stats(c))
			continue;
		const struct stats_summary *t = &c->stats.total;
		fputs("| ", f);
		cell_name(f, c);
		fprintf(f, " | %zu", t->n);
		if (c->stats.outliers)
			fprintf(f, " (%zu outlier%s)", c->stats.outliers,
				c->stats.outliers == 1 ? "" : "s");
		fputs(" | ", f);
		md_cell_seconds(f, t->mean);
		fputs(" | ", f);
		if (isfinite(t->ci_low) && isfinite(t->ci_high)) {
			md_cell_seconds(f, t->ci_low);
			fputs(" \xe2\x80\x93 ", f);
			md_cell_seconds(f, t->ci_high);
		} else {
			fputs("\xe2\x80\x94", f);
		}
		if (isfinite(t->cv))
			fprintf(f, " | %.1f%% | ", t->cv * 100);
		else
			fputs(" | \xe2\x80\x94 | ", f);
		md_human_rate(f, c->stats.bytes_per_s);
		fputs(" | ", f);
		fputs(c->stop_reason != STATS_CONTINUE
			  ? stats_stop_name((enum stats_stop)c->stop_reason)
			  : "\xe2\x80\x94",
		      f);
		if (c->status != STATUS_PASSED)
			fprintf(f, ", %s", status_badge[c->status]);
		fputs(" |\n", f);
	}
	fputc('\n', f);
}

void md_write_phases(FILE *f, const struct results *r, const char *const *status_badge)
{
	bool any = false;
	for (size_t i = 0; i < r->n_cells; i++)
		any |= md_has_stats(&r->cells[i]);
	if (!any)
		return;
	phases_table(f, r);
	runs_table(f, r, status_badge);
}
