/* SPDX-License-Identifier: MIT */
/*
 * The verdicts of the report's pivot (results/verdict.h), computed once and worded once for every
 * place that shows them: the Markdown and HTML reports and the end-of-run summary on the terminal
 * say the same words. A table is one column of one pivot table (the cells that differ only in
 * the rows axis: "method" for the quickstart); its winner is the cell with the best mean, and
 * every other cell gets the verdict of the winner against it, with false-discovery control over
 * the table (one verdict_pairs() call).
 */
#pragma once

#include "md-layout.h"
#include "results.h"
#include "verdict.h"

struct pivot_table {
	char *title;       /* "dataset=large (disk=ram)" (owned; raw text from the results) */
	size_t winner;     /* cell index of the best mean */
	size_t n;          /* the other cells with measured runs */
	size_t *cells;     /* their indexes */
	struct verdict *v; /* v[k]: winner (A) against cells[k] (B) */
	char **text;       /* verdict_text() of each, with the rows' labels (owned) */
};

struct pivot_verdicts {
	struct pivot_table *t;
	size_t n;
};

/* The verdicts of every table of layout l of r with two or more measured cells. Returns 0, or -1
 * with *err. Free with pivot_verdicts_free() either way. */
int pivot_verdicts_build(const struct results *r, const struct layout *l,
			 struct pivot_verdicts *out, char **err);
void pivot_verdicts_free(struct pivot_verdicts *pv);

/* The verdicts of every table (layout by o, as the Markdown's) as the results JSON's "verdicts"
 * array (schema/ferry-results.schema.json): per pair the table, the two cells' ids (a: the
 * column's fastest mean), the kind, A's gain over B with its interval and p-values, and the same
 * words as the Markdown. NULL with *err for a bad layout. */
json_t *report_verdicts_json(const struct results *r, const struct report_markdown_opts *o,
			     char **err);

/* The Markdown report's Verdicts section: per table its title, the fastest mean and each
 * verdict in the same words as report_pivot_summary(). Nothing when no table compares. */
void md_write_verdicts(FILE *f, const struct results *r, const struct pivot_verdicts *pv,
		       const struct layout *l);

/* The summary for the terminal (what report_markdown()'s Verdicts section says): per table
 * "TITLE: fastest mean ROW (MEAN [CI]); VERDICT; VERDICT", one a line, into a string the caller
 * frees;
 * "" when no table compares anything. NULL with *err for a bad layout (opts as the Markdown's). */
char *report_pivot_summary(const struct results *r, const struct report_markdown_opts *o,
			   char **err);
