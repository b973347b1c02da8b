/* SPDX-License-Identifier: MIT */
/*
 * Matrix expansion (runner/plan/matrix.c) against a direct transcription of GitHub's
 * MatrixBuilder, on random small defs.
 */
#include <glib.h>
#include <stdint.h>
#include <string.h>

#include "diag.h"
#include "matrix-defs.h"
#include "matrix.h"
#include "util.h"

/*
 * Random small defs against a direct transcription of GitHub's MatrixBuilder (odometer product,
 * drop cells any exclude matches, each product cell gets the extras of every include whose axis
 * keys it matches, later ones winning; unmatched includes are appended as they are), with a zip
 * of two axes in half of them. Fixed seed: the same 3,000 defs every run.
 */
#define R_AXES  3
#define R_EXTRA 2 /* include-only keys "x" and "y" */

struct rcell {
	const char *v[R_AXES + R_EXTRA]; /* NULL: absent */
};

static const char *const r_keys[R_AXES + R_EXTRA] = { "a", "b", "c", "x", "y" };
static const char *const r_vals[] = { "0", "1", "2", "3" };

struct rentry {
	const char *v[R_AXES + R_EXTRA];
};

/* zip: axis z1 (> z0, or SIZE_MAX for none) advances with axis z0, at z0's place */
static void reference_ids(size_t n_axes, const size_t *lens, size_t z0, size_t z1,
			  const struct rentry *ex, size_t n_ex, const struct rentry *in,
			  size_t n_in, GString *out, bool *dup)
{
	GPtrArray *cells = g_ptr_array_new_with_free_func(g_free);
	size_t product = n_axes ? 1 : 0, n_product;
	bool matched[8] = { false };

	for (size_t a = 0; a < n_axes; a++)
		if (a != z1)
			product *= lens[a];
	for (size_t p = 0; p < product; p++) {
		struct rcell *c = g_new0(struct rcell, 1);
		size_t rest = p;
		for (size_t a = n_axes; a-- > 0;) {
			if (a == z1)
				continue;
			c->v[a] = r_vals[rest % lens[a]];
			rest /= lens[a];
		}
		if (z1 != SIZE_MAX)
			c->v[z1] = c->v[z0];
		bool excluded = false;
		for (size_t e = 0; e < n_ex && !excluded; e++) {
			bool all = true;
			for (size_t a = 0; a < n_axes; a++)
				if (ex[e].v[a] && strcmp(ex[e].v[a], c->v[a]) != 0)
					all = false;
			excluded = all;
		}
		if (excluded) {
			g_free(c);
			continue;
		}
		for (size_t i = 0; i < n_in; i++) {
			bool all = true;
			for (size_t a = 0; a < n_axes; a++)
				if (in[i].v[a] && strcmp(in[i].v[a], c->v[a]) != 0)
					all = false;
			if (!all)
				continue;
			matched[i] = true;
			for (size_t k = R_AXES; k < R_AXES + R_EXTRA; k++)
				if (in[i].v[k])
					c->v[k] = in[i].v[k];
		}
		g_ptr_array_add(cells, c);
	}
	n_product = cells->len;
	for (size_t i = 0; i < n_in; i++) {
		if (matched[i])
			continue;
		struct rcell *c = g_new0(struct rcell, 1);
		for (size_t k = 0; k < R_AXES + R_EXTRA; k++)
			c->v[k] = in[i].v[k];
		g_ptr_array_add(cells, c);
	}
	/* include-only keys in order of first appearance across the include list */
	size_t order[R_EXTRA], n_order = 0;
	for (size_t i = 0; i < n_in; i++)
		for (size_t k = R_AXES; k < R_AXES + R_EXTRA; k++) {
			bool seen = false;
			for (size_t j = 0; j < n_order; j++)
				seen |= order[j] == k;
			if (in[i].v[k] && !seen)
				order[n_order++] = k;
		}
	GHashTable *ids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	*dup = false;
	for (size_t c = 0; c < cells->len; c++) {
		const struct rcell *cell = g_ptr_array_index(cells, c);
		GString *id = g_string_new(NULL);
		for (size_t a = 0; a < n_axes; a++)
			if (cell->v[a])
				g_string_append_printf(id, "%s%s=%s", id->len ? "," : "", r_keys[a],
						       cell->v[a]);
		for (size_t j = 0; j < n_order; j++)
			if (cell->v[order[j]])
				g_string_append_printf(id, "%s%s=%s", id->len ? "," : "",
						       r_keys[order[j]], cell->v[order[j]]);
		g_string_append_printf(out, "%s%s", c ? "\n" : "", id->str);
		if (c >= n_product && !g_hash_table_add(ids, g_strdup(id->str)))
			*dup = true;
		g_string_free(id, TRUE);
	}
	g_hash_table_destroy(ids);
	g_ptr_array_free(cells, TRUE);
}

static void random_entry(GRand *r, struct rentry *e, size_t n_axes, bool include)
{
	size_t n_keys = include ? n_axes + R_EXTRA : n_axes;
	do {
		*e = (struct rentry){ 0 };
		for (size_t k = 0; k < n_keys; k++) {
			if (!g_rand_boolean(r))
				continue;
			size_t slot = k < n_axes ? k : R_AXES + (k - n_axes);
			e->v[slot] = r_vals[g_rand_int_range(r, 0, 4)];
		}
	} while (!include && !e->v[0] && !e->v[1] && !e->v[2]);
}

static void add_rentry(struct matrix_def *def, const struct rentry *e, bool include)
{
	struct matrix_entry *me =
	    include ? matrix_def_add_include(def, 1, 1) : matrix_def_add_exclude(def, 1, 1);
	for (size_t k = 0; k < R_AXES + R_EXTRA; k++)
		if (e->v[k])
			matrix_entry_add(me, r_keys[k], e->v[k], 1, 1);
}

static void test_random_vs_reference(void)
{
	GRand *r = g_rand_new_with_seed(20261129);
	size_t checked = 0, errors = 0;

	for (int iter = 0; iter < 3000; iter++) {
		size_t n_axes = (size_t)g_rand_int_range(r, 0, R_AXES + 1), lens[R_AXES];
		size_t n_ex = n_axes ? (size_t)g_rand_int_range(r, 0, 3) : 0;
		size_t n_in = (size_t)g_rand_int_range(r, n_axes ? 0 : 1, 5);
		struct rentry ex[2], in[4];
		struct matrix_def def = { 0 };

		size_t z0 = SIZE_MAX, z1 = SIZE_MAX;
		for (size_t a = 0; a < n_axes; a++)
			lens[a] = (size_t)g_rand_int_range(r, 1, 4);
		if (n_axes >= 2 && g_rand_boolean(r)) {
			z0 = (size_t)g_rand_int_range(r, 0, (gint32)n_axes - 1);
			z1 = (size_t)g_rand_int_range(r, (gint32)z0 + 1, (gint32)n_axes);
			lens[z1] = lens[z0];
			struct matrix_zip *zip = matrix_def_add_zip(&def, 1, 1);
			/* either order: the group stands where its first axis in axis order does */
			bool swap = g_rand_boolean(r);
			matrix_zip_add_axis(zip, r_keys[swap ? z1 : z0]);
			matrix_zip_add_axis(zip, r_keys[swap ? z0 : z1]);
		}
		for (size_t a = 0; a < n_axes; a++) {
			struct matrix_axis *ax = matrix_def_add_axis(&def, r_keys[a], 1, 1);
			for (size_t j = 0; j < lens[a]; j++)
				matrix_axis_add_value(ax, r_vals[j]);
		}
		for (size_t e = 0; e < n_ex; e++) {
			random_entry(r, &ex[e], n_axes, false);
			add_rentry(&def, &ex[e], false);
		}
		for (size_t i = 0; i < n_in; i++) {
			random_entry(r, &in[i], n_axes, true);
			add_rentry(&def, &in[i], true);
		}

		GString *want = g_string_new(NULL);
		bool dup;
		reference_ids(n_axes, lens, z0, z1, ex, n_ex, in, n_in, want, &dup);
		bool all_excluded = n_axes && n_in == 0 && want->len == 0;

		struct diag_list diags = { 0 };
		struct matrix *m = matrix_expand(&def, 0, NULL, &diags);
		if (dup || all_excluded) {
			g_assert_null(m);
			g_assert_cmpuint(diags.n, >, 0);
			errors++;
		} else {
			g_assert_nonnull(m);
			g_autofree char *got = joined_ids(m);
			g_assert_cmpstr(got, ==, want->str);
			for (size_t c = 0; c < matrix_n_cells(m); c++)
				g_assert_cmpuint(matrix_cell_find(m, matrix_cell_id(m, c)), ==, c);
			checked++;
		}
		matrix_free(m);
		diag_list_clear(&diags);
		matrix_def_clear(&def);
		g_string_free(want, TRUE);
	}
	g_test_message("%zu defs matched the reference, %zu rejected as expected", checked, errors);
	/* the generator must exercise both paths */
	g_assert_cmpuint(checked, >, 1000);
	g_assert_cmpuint(errors, >, 10);
	g_rand_free(r);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/matrix/random-vs-reference", test_random_vs_reference);
	return g_test_run();
}
