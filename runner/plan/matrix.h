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
 *    placed where the group's first axis (in axis order) stands; keys inside a cell still follow
 *    the axis order;
 *  - every exclude entry removes the cells it matches; it matches partially (only its keys);
 *    every exclude key must name an axis; a value the axis lacks simply matches nothing;
 *    an empty exclude entry is an error (as in GitHub); an include entry without keys extends
 *    every product cell with nothing, which lets a plan attach a `run:` override to all cells
 *    (GitHub rejects empty include entries; the parser should reject entries carrying nothing);
 *  - values compare as exact strings (GitHub's expression `==` ignores case; ferry does not,
 *    since values name VMs, datasets and methods);
 *  - include entries are applied after exclude, in order: an entry extends every cell whose
 *    original axis values it does not contradict, adding its other keys (values added by an
 *    earlier include may be overwritten, original axis values never); an entry that extends no
 *    cell is added as a new cell of its own. Cells created by an include are never extended by
 *    later entries (GitHub's {fruit: banana} / {fruit: banana, animal: cat} example);
 *  - without axes, every include entry is a cell of its own (an include-only matrix); a def
 *    with no axes and no include entries expands to zero cells without an error (the caller
 *    decides what an absent matrix means).
 *
 * Order of cells: the product cells that survive exclude, in odometer order, then the cells
 * created by include entries, in entry order.
 *
 * Order of a cell's parameters (and of its id): the axis keys the cell has, in axis order, then
 * the keys that only include entries define, in the order of their first appearance across the
 * include list (one global order, so equal parameter sets always give equal ids).
 *
 * Cell ids: "key=value,key=value" in that order. ',', '=', '%' and control bytes inside keys and
 * values are written as %XX (percent-encoding), so an id parses back unambiguously and distinct
 * cells never share an id. Product cells differ in their axis values; an include-created cell
 * that repeats the parameters of another include-created cell is an error (positioned at the
 * later entry), never silently merged or renamed: a plan author wrote the same cell twice.
 *
 * Errors (all collected into the diag list in one pass where possible, positioned from the
 * def's line/col when non-zero; messages in tests/unit/test-matrix.c): duplicate or empty axis
 * names, an axis without values, a value twice in one axis, an empty exclude entry,
 * a key twice in one entry, an unknown axis in zip or exclude (with did-you-mean), an axis in
 * two zip groups or twice in one, zipped axes of unequal length, every cell excluded, a
 * duplicate include-created cell, a product that overflows 64 bits, more cells than the cap.
 *
 * The cap applies to the product of the axis (and zip group) lengths before exclude, which is
 * checked before anything is allocated for cells, and to the final count (product cells that
 * survive exclude plus include-created cells).
 *
 * Ownership: a struct matrix_def owns all its strings and arrays (malloc-family allocations,
 * e.g. xmalloc/xstrdup); matrix_def_clear() frees them. The expanded struct matrix copies what
 * it needs, so the def may be cleared right after matrix_expand(). Every string passed in must be
 * non-NULL. There is no global state and the accessors only read, so expansions and reads may
 * run on several threads at once.
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
 *   def:   read only; may be cleared as soon as this returns
 *   cap:   the most cells allowed (0: MATRIX_DEFAULT_CAP); the caller passes --max-cells
 *   file:  the plan file named in diagnostics (NULL: none)
 *   diags: where errors go (every error found, not only the first); NULL drops them
 * Returns the matrix (free with matrix_free()) or NULL after adding at least one diagnostic.
 */
struct matrix *matrix_expand(const struct matrix_def *def, size_t cap, const char *file,
			     struct diag_list *diags);
/* Attach data the caller derives from the cells (the plan's resolved sweep entries): `free_fn`
 * (may be NULL) frees it with the matrix; a second attach frees the first. */
void matrix_attach(struct matrix *m, void *data, void (*free_fn)(void *));
void *matrix_attached(const struct matrix *m);
/* Free an expanded matrix; NULL is fine. */
void matrix_free(struct matrix *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct matrix *, matrix_free)
/* Free everything `def` owns and zero it (safe to call twice, and on a zeroed def). */
void matrix_def_clear(struct matrix_def *def);

/*
 * Optional builders for a def (tests, benchmarks, code that does not parse YAML). Each copies its
 * strings and grows the arrays with xrealloc; line/col are the 1-based position, 0 if unknown.
 * The returned pointers stay valid until the next call that adds to the same array.
 */
struct matrix_axis *matrix_def_add_axis(struct matrix_def *def, const char *name, int line,
					int col);
void matrix_axis_add_value(struct matrix_axis *axis, const char *value);
struct matrix_entry *matrix_def_add_include(struct matrix_def *def, int line, int col);
struct matrix_entry *matrix_def_add_exclude(struct matrix_def *def, int line, int col);
void matrix_entry_add(struct matrix_entry *e, const char *key, const char *value, int line,
		      int col);
struct matrix_zip *matrix_def_add_zip(struct matrix_def *def, int line, int col);
void matrix_zip_add_axis(struct matrix_zip *zip, const char *axis);

/* Accessors: `cell` < matrix_n_cells(m), `param` < matrix_cell_n_params(m, cell). Returned
 * strings belong to `m` and live until matrix_free(). */
size_t matrix_n_cells(const struct matrix *m);
/* Every key any cell may have, in parameter order (the axes, then include-only keys): e.g. the
 * columns of a table. Cells may lack include-only keys and, if include-created, some axes. */
size_t matrix_n_keys(const struct matrix *m);
const char *matrix_key(const struct matrix *m, size_t key);
/* Stable, readable, unique id: "key=value,key=value" in axis order, then include-added keys
 * (percent-encoding as described above). A cell without parameters has the id "". */
const char *matrix_cell_id(const struct matrix *m, size_t cell);
/* The cell's parameters, axis keys first (in axis order), then keys added by include entries.
 * An include-created cell has only the axis keys its entry names. */
size_t matrix_cell_n_params(const struct matrix *m, size_t cell);
const char *matrix_cell_key(const struct matrix *m, size_t cell, size_t param);
const char *matrix_cell_value(const struct matrix *m, size_t cell, size_t param);
/* The value of `key` in the cell, or NULL. */
const char *matrix_cell_get(const struct matrix *m, size_t cell, const char *key);
/* Indexes into def->include of the entries that extended or created the cell, ascending (the
 * order they apply in, e.g. for per-cell `run:` overrides: later entries win); *n gets the
 * count (0: the pointer may not be dereferenced). */
const size_t *matrix_cell_includes(const struct matrix *m, size_t cell, size_t *n);
/* The index of the cell whose id is exactly `id`, or SIZE_MAX (e.g. to resume a run or merge
 * shard results). Needs no index: product cells are found by binary search in odometer order
 * (O(log n)), include-created cells by a scan of those few. */
size_t matrix_cell_find(const struct matrix *m, const char *id);

/* Parse "K/N" (decimal, 1 <= K <= N <= UINT_MAX, no signs or spaces) into *k and *n: returns 0,
 * or -1 with a message such as "invalid shard '4/3': K must be between 1 and 3" in *err (caller
 * frees; err may be NULL). */
int shard_parse(const char *s, unsigned *k, unsigned *n, char **err);
/* Whether cell `index` (0-based, in expansion order) belongs to shard K of N: deterministic,
 * balanced (shard sizes differ by at most one), every cell in exactly one shard. Round-robin
 * (index % N == K - 1) rather than contiguous blocks: the first axis varies slowest, so blocks
 * would hand one shard all cells of, say, the biggest VM while round-robin spreads every axis
 * value over the shards; and cells that include entries append at the end do not move earlier
 * cells to another shard. Returns false for K or N out of range. */
bool shard_contains(size_t index, unsigned k, unsigned n);
