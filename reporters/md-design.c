/* SPDX-License-Identifier: MIT */
/* The Markdown report's Design section (md-layout.h): how a run with blocks sampled its boots,
 * the variance components and the runs per boot they gave, and why it stopped. */
#include <math.h>

#include "design.h"
#include "md-layout.h"

static const char *stop_words(int stop)
{
	switch (stop) {
	case STATS_STOP_HALFWIDTH:
		return "every cell's and every comparison's 95% interval reached the target "
		       "half-width (run.until)";
	case STATS_STOP_MAX: return "the most blocks run.boots allows ran";
	case STATS_STOP_BUDGET: return "the time budget of blocks (run.budget) was used up";
	default: return "the run did not finish its blocks";
	}
}

void md_write_design(FILE *f, const struct results *r)
{
	const struct result_design *d = &r->design;
	if (!d->blocks)
		return;
	fprintf(f,
		"### Design\n\nA boot is the sample: %u block%s, each booting every VM "
		"configuration once in a seeded shuffled order, %u measured run%s of every cell "
		"per boot",
		d->blocks, d->blocks == 1 ? "" : "s", d->runs_per_boot,
		d->runs_per_boot == 1 ? "" : "s");
	if (!d->automatic) {
		fputs(" (set by the plan: run.runs_per_boot).", f);
		if (isfinite(d->within_var) && isfinite(d->between_var))
			fprintf(f,
				" The variance components of the log total at the end, pooled over "
				"the cells: within a boot %.3g, between boots %.3g.",
				d->within_var, d->between_var);
		else
			fputs(" Within- and between-boot variance are told apart only with 2 or "
			      "more runs per boot.",
			      f);
		fputs("\n\n", f);
	} else {
		fprintf(f,
			", chosen after a pilot of %u block%s at %u runs per boot (Kalibera and "
			"Jones: ceil(sqrt((c_boot / c_run) x (T_run^2 / T_boot^2))), bounded to "
			"1..%d).\n\n",
			d->pilot_blocks, d->pilot_blocks == 1 ? "" : "s", d->pilot_runs,
			DESIGN_AUTO_MAX);
		fputs("| within-boot variance T_run^2 | between-boot variance T_boot^2 | a boot "
		      "c_boot | a run c_run | runs per boot |\n|---:|---:|---:|---:|---:|\n",
		      f);
		fprintf(f, "| %.3g | %.3g | %.3g\xc2\xa0s | %.3g\xc2\xa0s | %u |\n\n",
			d->within_var, d->between_var, d->boot_s, d->run_s, d->runs_per_boot);
		fputs("(Variances of the log total, pooled over the cells; a variance that could "
		      "not be estimated is nan.)\n\n",
		      f);
	}
	fprintf(f, "Stopped after %u block%s: %s", d->blocks, d->blocks == 1 ? "" : "s",
		stop_words(d->stop));
	if (d->until > 0 && isfinite(d->halfwidth))
		fprintf(f, "; target half-width %.3g%%, the widest at the end %.3g%%",
			100 * d->until, 100 * d->halfwidth);
	else if (isfinite(d->halfwidth))
		fprintf(f, "; the widest half-width at the end %.3g%%", 100 * d->halfwidth);
	fputs(".\n\n", f);
}
