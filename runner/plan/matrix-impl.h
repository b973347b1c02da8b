/* SPDX-License-Identifier: MIT */
/* The expanded matrix's representation, shared by matrix.c (building) and matrix-cells.c
 * (reading); see matrix.c for the layout. Private to runner/plan. */
#pragma once

#include <stdint.h>

#include "matrix.h"
#include "strmap.h"

#define VNONE STRMAP_NONE

struct variant {
	size_t *includes; /* indexes into def->include, ascending */
	size_t n_includes;
	uint32_t *extra; /* value ids of include-only keys, ascending by key id */
	size_t n_extra;
};

struct matrix {
	size_t n_axes, n_keys; /* keys: the axes, then include-only keys in order of appearance */
	char **keys;
	size_t n_values;
	char **values;       /* by value id */
	uint32_t *value_key; /* key id of each value id */
	struct strmap key_ids;

	size_t n_cells;
	uint32_t *cells;   /* n_cells * n_axes value ids */
	uint32_t *variant; /* per cell */
	struct variant *variants;
	size_t n_variants;

	char *ids;      /* every id, NUL-terminated, back to back */
	size_t *id_off; /* per cell */

	/* for matrix_cell_find(): product cells are sorted by the values of the first axis of
	 * each odometer slot (value ids of one axis ascend with the axis order) */
	struct strmap axis_values; /* (value, axis) -> value id */
	size_t n_product;          /* cells [0, n_product) come from the product */
	size_t *lead_axes;
	size_t n_slots;

	/* what the caller attached (matrix_attach()), freed with the matrix */
	void *attached;
	void (*attached_free)(void *);
};
