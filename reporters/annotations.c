/* SPDX-License-Identifier: MIT */
/*
 * GitHub Actions annotations for what a run found (report_annotations() in reporters.h): every
 * error of a failed or errored cell becomes an "::error" workflow command that GitHub shows on
 * the run's page and, with a file and line, beside the plan in a pull request's diff.
 */
#include "diag.h"
#include "reporters.h"

static const char *error_title(const struct result_error *e, enum result_status s)
{
	if (!e)
		return result_status_name(s);
	switch (e->kind) {
	case ERROR_CRITERION: return "criterion failed";
	case ERROR_INTEGRITY: return "data not intact";
	case ERROR_REGRESSION: return "regression";
	case ERROR_TIMEOUT: return "timeout";
	case ERROR_INFRA:
	default: return "infrastructure error";
	}
}

size_t report_annotations(const struct results *r, report_locate_fn locate, void *ud, size_t max,
			  FILE *out)
{
	size_t shown = 0, more = 0;
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct result_cell *c = &r->cells[i];
		if (c->status != STATUS_FAILED && c->status != STATUS_ERROR)
			continue;
		/* a failed cell without a recorded error still gets one annotation */
		for (size_t j = 0; j < c->n_errors || (j == 0 && c->n_errors == 0); j++) {
			const struct result_error *e = c->n_errors ? &c->errors[j] : NULL;
			if (shown >= max) {
				more++;
				continue;
			}
			struct report_where w = { .file = r->plan.path };
			if (locate)
				locate(ud, c, e, &w);
			_cleanup_free_ char *title =
			    xasprintf("ferry: %s: %s", error_title(e, c->status), c->id);
			_cleanup_free_ char *msg =
			    xasprintf("cell %s: %s", c->id,
				      e && e->message ? e->message : result_status_name(c->status));
			gh_annotation(out, "error", w.file, w.line, w.col, title, msg);
			shown++;
		}
	}
	if (more)
		fprintf(out,
			"::warning title=ferry::%zu more failure%s not annotated (at most %zu)\n",
			more, more == 1 ? "" : "s", max);
	return shown;
}
