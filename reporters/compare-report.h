/* SPDX-License-Identifier: MIT */
/*
 * Reports of a comparison (runner/results/compare.h): pure functions over the comparison and the
 * new results file, in the C locale, never printing. Markdown for people and the step summary,
 * JUnit (one testcase per cell and metric, a regression is <failure type="regression">, a refused
 * comparison an <error type="refused">; valid against junit-10.xsd and the Ant schema, streamed
 * with libxml2's xmlTextWriter), JSON (jansson), and GitHub workflow commands.
 */
#pragma once

#include <stdio.h>

#include "compare.h"
#include "results.h"

/* Names of the files compared, for the reports' headers (borrowed). */
struct compare_report_ctx {
	const char *const *baselines; /* every baseline given, in the caller's order */
	size_t n_baselines;
	const char *cand;
};

/*
 * Markdown: the verdict counts, refused and shown provenance differences first, then a table of
 * every cell's total and every metric with a verdict other than unchanged or inconclusive
 * (baseline median, new median, change with its bounds, boots, verdict), notes for inconclusive
 * rows (minimum detectable effect, boots that would resolve it), and every metric in <details>.
 */
int report_compare_markdown(const struct comparison *c, const struct results *cand,
			    const struct compare_report_ctx *x, FILE *out, char **err);

/*
 * The end of `ferry compare` on the terminal, in the Markdown's words: the counts of the
 * verdicts, then a line per row of its Cells table, "CELL METRIC: CHANGE [LOW, HIGH] (90% CI):
 * VERDICT" (an inconclusive total, or a gated metric with a note, with why), then the gate's
 * line (passed or failed, the drift canary). Raw text from the results (the caller escapes
 * control characters when it prints). Caller frees; "" for a refused comparison.
 */
char *report_compare_summary(const struct comparison *c);

/* One static HTML page (html-compare.c): every cell's change with its interval on one axis
 * around 0, the threshold marked, coloured by verdict, the numbers beside it and on hover. */
int report_compare_html(const struct comparison *c, const struct results *cand,
			const struct compare_report_ctx *x, FILE *out, char **err);

/* JUnit XML, streamed with xmlTextWriter. */
int report_compare_junit(const struct comparison *c, const struct results *cand,
			 const struct compare_report_ctx *x, FILE *out, char **err);

/* The comparison as JSON ("ferry_compare": 1). */
int report_compare_json(const struct comparison *c, const struct compare_report_ctx *x, FILE *out,
			char **err);

/*
 * GitHub workflow commands: "::error title=...::message" per regressed cell and metric,
 * "::warning ...::" per refused difference and per improved one (as a notice), escaped as GitHub
 * requires (%, CR, LF; and ':' ',' in properties). Caller frees; "" when there is nothing.
 */
char *report_compare_annotations(const struct comparison *c);
