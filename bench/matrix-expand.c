/* SPDX-License-Identifier: MIT */
/*
 * Matrix expansion speed: builds a 10,000-cell and a 1,000,000-cell def in memory (axes of ten
 * values, two include entries that extend cells, one exclude entry that matches nothing so every
 * cell pays for the check) and prints the median of 5 expansions, ids per second, the time to
 * find every cell by its id, and peak RSS.
 * Goals (issue 2): under 0.1 s and under 2 s. Run: build/bench/bench-matrix
 */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "diag.h"
#include "matrix.h"
#include "util.h"

#define RUNS 5

static const char *const axis_names[] = { "vm", "disk", "dataset", "method", "repeat", "host" };

static void build(struct matrix_def *def, size_t n_axes)
{
	*def = (struct matrix_def){ 0 };
	for (size_t a = 0; a < n_axes; a++) {
		struct matrix_axis *ax = matrix_def_add_axis(def, axis_names[a], (int)a + 2, 3);
		for (int v = 0; v < 10; v++) {
			char val[32];
			snprintf(val, sizeof(val), "%s-%d", axis_names[a], v);
			matrix_axis_add_value(ax, val);
		}
	}
	struct matrix_entry *e = matrix_def_add_include(def, 20, 5);
	matrix_entry_add(e, "method", "method-1", 20, 7);
	matrix_entry_add(e, "archive", "tar", 21, 7);
	e = matrix_def_add_include(def, 22, 5);
	matrix_entry_add(e, "disk", "disk-2", 22, 7);
	matrix_entry_add(e, "dataset", "dataset-3", 23, 7);
	matrix_entry_add(e, "note", "slow", 24, 7);
	e = matrix_def_add_exclude(def, 26, 5);
	matrix_entry_add(e, "vm", "vm-none", 26, 7);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int bench(size_t n_axes, size_t cap)
{
	struct matrix_def def;
	uint64_t t[RUNS], tf[RUNS], tl[RUNS];
	size_t cells = 0, id_bytes = 0;

	build(&def, n_axes);
	for (int r = 0; r < RUNS; r++) {
		struct diag_list diags = { 0 };
		uint64_t t0 = now_ns();
		struct matrix *m = matrix_expand(&def, cap, "bench.yaml", &diags);
		t[r] = now_ns() - t0;
		if (!m) {
			diag_print(&diags, stderr);
			diag_list_clear(&diags);
			matrix_def_clear(&def);
			return 1;
		}
		cells = matrix_n_cells(m);
		id_bytes = 0;
		for (size_t c = 0; c < cells; c++)
			id_bytes += strlen(matrix_cell_id(m, c)) + 1;
		/* looking every cell up by its id (resume, merge) */
		t0 = now_ns();
		for (size_t c = 0; c < cells; c++)
			if (matrix_cell_find(m, matrix_cell_id(m, c)) != c)
				abort();
		tl[r] = now_ns() - t0;
		t0 = now_ns();
		matrix_free(m);
		tf[r] = now_ns() - t0;
	}
	matrix_def_clear(&def);
	qsort(t, RUNS, sizeof(t[0]), cmp_u64);
	qsort(tf, RUNS, sizeof(tf[0]), cmp_u64);
	qsort(tl, RUNS, sizeof(tl[0]), cmp_u64);
	double med = (double)t[RUNS / 2] / 1e9;
	printf("%9zu cells: expand median %8.2f ms (min %.2f, max %.2f), %6.1f M ids/s, "
	       "free %.2f ms, ids %.1f MB, find all %.1f ms\n",
	       cells, med * 1e3, (double)t[0] / 1e6, (double)t[RUNS - 1] / 1e6,
	       (double)cells / med / 1e6, (double)tf[RUNS / 2] / 1e6, (double)id_bytes / 1e6,
	       (double)tl[RUNS / 2] / 1e6);
	return 0;
}

int main(void)
{
	struct rusage ru;
	int r = 0;

	printf("matrix expansion, median of %d runs\n", RUNS);
	r |= bench(4, 0);       /* 10^4: the default cap */
	r |= bench(6, 1000000); /* 10^6: cap raised */
	getrusage(RUSAGE_SELF, &ru);
	printf("peak RSS %.1f MB\n", (double)ru.ru_maxrss / 1024);
	return r;
}
