/* SPDX-License-Identifier: MIT */
/* The run report's parts (html.c, html-parts.c). Internal to the reporters. */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "md-layout.h"
#include "results.h"

/* A run counted in the cell's statistics (not a warmup, verified, a finite total). */
bool html_measured(const struct result_run *run);
/* Untrusted text escaped, cut to max_chars characters (then an ellipsis). */
void html_label(FILE *f, const char *s, size_t max_chars);
/* The cell's mean total and its 95% CI: "1.23 s [1.10 s – 1.36 s]". */
void html_cell_value(FILE *f, const struct result_cell *c);
/* The boots of the cell's measured runs: ids, geometric means of their totals and run counts
 * (three arrays the caller frees). Returns how many boots. */
size_t html_boot_means(const struct result_cell *c, int64_t **ids, double **means, size_t **n);

/* The summary paragraph: cells per status, wall time, host, accelerator. */
void html_run_summary(FILE *f, const struct results *r);
/* Stacked phase bars and the full phase table. */
void html_phases(FILE *f, const struct results *r, const struct layout *l);
/* Failures, errors (with serial console tails) and skipped cells. */
void html_problems(FILE *f, const struct results *r);
/* The provenance table. */
void html_provenance(FILE *f, const struct results *r);
