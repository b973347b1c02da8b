/* SPDX-License-Identifier: MIT */
/*
 * What test-matrix.c and test-matrix-reference.c share: matrix defs written in a compact notation,
 * so that a case fits on a few lines, and what expanding them gave, joined by '\n':
 *   axes:    "fruit=apple,pear;animal=cat,dog"     (axis i gets position line 10+i, col 3)
 *   zip:     "os+arch;x+y"                         (group z: line 30+z, col 5)
 *   exclude: "os=a,version=1|os=b"                 (entry j: line 40+j, col 7; key k: col 9+10k)
 *   include: "color=green|color=pink,animal=cat"   (entry j: line 60+j, col 7; key k: col 9+10k)
 * NULL leaves a part out; "" is an empty one (no axes, an empty zip group, one "{}" entry).
 */
#pragma once

#include "diag.h"
#include "matrix.h"

/* *def (cleared first) as the notation above writes it. */
void build_def(struct matrix_def *def, const char *axes, const char *zip, const char *exclude,
	       const char *include);
/* The ids of m's cells in order, joined by '\n' (g_free()). */
char *joined_ids(const struct matrix *m);
/* The formatted diagnostics of l, joined by '\n' (g_free()). */
char *joined_diags(const struct diag_list *l);
