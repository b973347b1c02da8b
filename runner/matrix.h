/* SPDX-License-Identifier: MIT */
/*
 * Matrix expansion with GitHub Actions semantics, generic over string keys and values.
 *
 * The plan parser fills a struct matrix_def from the plan's `matrix:` section; matrix_expand()
 * turns it into cells. Nothing here knows what "vm" or "dataset" mean.
 *
 * Semantics (https://docs.github.com/en/actions/using-jobs/using-a-matrix-for-your-jobs):
 *  - axes multiply in the order written ("odometer" order: the last axis varies fastest);
 *  - zip groups: the axes of one group advance together (equal lengths), as one composite axis
 *    placed where the group's first axis stands;
 *  - every exclude entry removes the cells it matches; it matches partially (only its keys);
 *  - include entries are applied after exclude, in order: an entry extends every cell whose
 *    original axis values it does not contradict, adding its other keys (values added by an
 *    earlier include may be overwritten, original axis values never); an entry that extends no
 *    cell is added as a new cell of its own.
 */
#pragma once

#include "diag.h"

struct matrix_kv {
	char *key;
	char *value;
	int line, col; /* 1-based position of the key in the plan, for messages; 0 if unknown */
};

struct matrix_axis {
	char *name;
	char **values;
	size_t n_values;
	int line, col;
};

struct matrix_entry { /* one include or exclude entry */
	struct matrix_kv *kv;
	size_t n_kv;
	int line, col;
};

struct matrix_zip { /* axes that advance together */
	char **axes;
	size_t n_axes;
	int line, col;
};

struct matrix_def {
	struct matrix_axis *axes;
	size_t n_axes;
	struct matrix_zip *zips;
	size_t n_zips;
	struct matrix_entry *exclude;
	size_t n_exclude;
	struct matrix_entry *include;
	size_t n_include;
};

#define MATRIX_DEFAULT_CAP 10000

struct matrix; /* opaque: the expanded cells */

/*
 * Expand `def`. More than `cap` cells (0: MATRIX_DEFAULT_CAP), a product that overflows,
 * duplicate axis names, unequal zip lengths and similar faults add diagnostics (positioned in
 * `file` when the def carries positions) and return NULL.
 */
struct matrix *matrix_expand(const struct matrix_def *def, size_t cap, const char *file,
			     struct diag_list *diags);
void matrix_free(struct matrix *m);
void matrix_def_clear(struct matrix_def *def);

size_t matrix_n_cells(const struct matrix *m);
/* Stable, readable, unique id: "key=value,key=value" in axis order, then include-added keys. */
const char *matrix_cell_id(const struct matrix *m, size_t cell);
/* The cell's parameters, axis keys first (in axis order), then keys added by include entries. */
size_t matrix_cell_n_params(const struct matrix *m, size_t cell);
const char *matrix_cell_key(const struct matrix *m, size_t cell, size_t param);
const char *matrix_cell_value(const struct matrix *m, size_t cell, size_t param);
/* The value of `key` in the cell, or NULL. */
const char *matrix_cell_get(const struct matrix *m, size_t cell, const char *key);
/* Indexes into def->include of the entries that extended or created the cell, in order. */
const size_t *matrix_cell_includes(const struct matrix *m, size_t cell, size_t *n);

/* Parse "K/N" (1 <= K <= N): returns 0, or -1 with a message in *err (caller frees). */
int shard_parse(const char *s, unsigned *k, unsigned *n, char **err);
/* Whether cell `index` (0-based, in expansion order) belongs to shard K of N: deterministic,
 * balanced (shard sizes differ by at most one), every cell in exactly one shard. */
bool shard_contains(size_t index, unsigned k, unsigned n);
