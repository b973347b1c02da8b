/* SPDX-License-Identifier: MIT */
/*
 * The Markdown report's layout: which axis goes down, which across, and how the cells fall into
 * tables (one per combination of the other axes). Computed once (md-layout.c), then rendered by
 * markdown.c. Internal to the reporters.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "reporters.h"
#include "strmap.h"
#include "verdict.h"

/* An ordered set of borrowed strings, indexed by a hash map: every lookup is O(1), so a results
 * file with tens of thousands of cells or axes renders in linear time. */
struct strset {
	const char **v;
	size_t n, cap;
	struct strmap idx;
};

/* Where each cell sits in the tables. */
struct layout {
	const char *rows, *cols; /* axis keys; cols may be NULL (one column) */
	struct strset keys;      /* every axis key, in order of first appearance */
	struct strset groups;    /* labels of the combinations of the other axes */
	size_t *group;           /* per cell: index into groups */
	char **group_label;      /* per cell: owned label ("" when there are no other axes) */
	const char **row, **col; /* per cell: row and column value (borrowed, "(none)" if unset) */
	size_t *order;           /* cell indices grouped by group, in cell order within each */
	size_t *group_start;     /* group g's cells are order[group_start[g] .. group_start[g+1]) */
};

/* The value of axis key in cell c, or NULL if the cell has no such axis ("" for a NULL key). */
const char *md_axis_value(const struct result_cell *c, const char *key);
/* Add x (borrowed) if new; its index either way. */
size_t md_strset_add(struct strset *s, const char *x);
/* The index of x, or -1. */
long md_strset_find(const struct strset *s, const char *x);
void md_strset_free(struct strset *s);
/* The cell has a usable total (measured runs and a finite median). */
bool md_has_stats(const struct result_cell *c);
/* Compute the pivot for r under the options; -1 with *err set for an unknown or clashing axis.
 * Free with md_layout_free(l, r->n_cells) either way. */
int md_layout_build(struct layout *l, const struct results *r, const struct report_markdown_opts *o,
		    char **err);
void md_layout_free(struct layout *l, size_t n);
/* The cells of group g: for (p = md_group_begin(l, g); p < md_group_end(l, g); p++) */
const size_t *md_group_begin(const struct layout *l, size_t g);
const size_t *md_group_end(const struct layout *l, size_t g);

/* Text from the results in Markdown: escaped (|, HTML, backticks, emphasis), newlines as <br>
 * (markdown.c; also the trend report). */
void md_text(FILE *f, const char *s);
/* A quoted label inside Mermaid: no quotes, line breaks or characters Mermaid interprets. */
void mermaid_label(FILE *f, const char *s);

/*
 * The verdicts of one pivot table (md-verdicts.c, verdict.h): the best mean of each column
 * against every other cell of that column, with Benjamini-Hochberg across the table. best[c]
 * is the cell index of column c's best mean (SIZE_MAX: none), col_of(cell) its column.
 */
struct md_verdicts {
	size_t *slot; /* per cell index: its verdict against its column's best (SIZE_MAX: none) */
	bool *winner; /* per cell index: best of its column and significantly better than all */
	struct verdict_pair *pairs;
	struct verdict *v;
	size_t n;
};
void md_verdicts_build(struct md_verdicts *mv, const struct results *r, const struct layout *l,
		       size_t g, const struct strset *cols, const size_t *best, const char *metric);
void md_verdicts_free(struct md_verdicts *mv);
/* A time in a table cell ("1.23 s", "456 ms") or a dash; a rate ("12.3 MB/s") or a dash. */
void md_cell_seconds(FILE *f, double s);
void md_human_rate(FILE *f, double bytes_per_s);
/* The Phases and Runs tables (md-phases.c): one a cell, narrow enough for GitHub's page. */
void md_write_phases(FILE *f, const struct results *r, const char *const *status_badge);
/* The Design section of a run with blocks (md-design.c): the blocks, the runs per boot and how
 * they were chosen (the pilot's variance components and costs), and why the blocks stopped. */
void md_write_design(FILE *f, const struct results *r);
/* md-provenance.c: the Provenance table of r (plan, host, versions, datasets, times). */
void md_write_provenance(FILE *f, const struct results *r);
/* A run fanned out over several hosts: what each host is, how many cells it ran and why it
 * failed; the raw runs name the host of each cell. Nothing when one host ran every cell. */
void md_write_hosts(FILE *f, const struct results *r);
/* The raw runs table; (*row_end)[i] is the offset just after row i (caller frees), so the
 * caller can keep the rows that fit; *header the offset after the header. Returns the rows. */
size_t md_write_raw_runs(FILE *f, const struct results *r, size_t **row_end, size_t *header);
