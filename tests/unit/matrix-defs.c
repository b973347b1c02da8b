/* SPDX-License-Identifier: MIT */
/* Matrix defs in the tests' compact notation (matrix-defs.h), and what expanding them gave. */
#include <glib.h>
#include <string.h>

#include "matrix-defs.h"
#include "util.h"

static void add_entries(struct matrix_def *def, const char *spec, bool include)
{
	if (!spec)
		return;
	if (!spec[0]) { /* g_strsplit("") has no elements: "" means one empty entry */
		if (include)
			matrix_def_add_include(def, 60, 7);
		else
			matrix_def_add_exclude(def, 40, 7);
		return;
	}
	g_auto(GStrv) entries = g_strsplit(spec, "|", -1);
	for (size_t j = 0; entries[j]; j++) {
		int line = (include ? 60 : 40) + (int)j;
		struct matrix_entry *e = include ? matrix_def_add_include(def, line, 7)
						 : matrix_def_add_exclude(def, line, 7);
		if (!entries[j][0])
			continue; /* "{}" */
		g_auto(GStrv) kvs = g_strsplit(entries[j], ",", -1);
		for (size_t k = 0; kvs[k]; k++) {
			g_auto(GStrv) kv = g_strsplit(kvs[k], "=", 2);
			g_assert_nonnull(kv[1]);
			matrix_entry_add(e, kv[0], kv[1], line, 9 + 10 * (int)k);
		}
	}
}

void build_def(struct matrix_def *def, const char *axes, const char *zip, const char *exclude,
	       const char *include)
{
	*def = (struct matrix_def){ 0 };
	if (axes && axes[0]) {
		g_auto(GStrv) as = g_strsplit(axes, ";", -1);
		for (size_t i = 0; as[i]; i++) {
			g_auto(GStrv) nv = g_strsplit(as[i], "=", 2);
			struct matrix_axis *ax = matrix_def_add_axis(def, nv[0], 10 + (int)i, 3);
			if (!nv[1] || !nv[1][0])
				continue; /* an empty axis */
			g_auto(GStrv) vs = g_strsplit(nv[1], ",", -1);
			for (size_t j = 0; vs[j]; j++)
				matrix_axis_add_value(ax, vs[j]);
		}
	}
	if (zip && !zip[0])
		matrix_def_add_zip(def, 30, 5);
	if (zip && zip[0]) {
		g_auto(GStrv) zs = g_strsplit(zip, ";", -1);
		for (size_t z = 0; zs[z]; z++) {
			struct matrix_zip *zp = matrix_def_add_zip(def, 30 + (int)z, 5);
			if (!zs[z][0])
				continue;
			g_auto(GStrv) names = g_strsplit(zs[z], "+", -1);
			for (size_t i = 0; names[i]; i++)
				matrix_zip_add_axis(zp, names[i]);
		}
	}
	add_entries(def, exclude, false);
	add_entries(def, include, true);
}

char *joined_ids(const struct matrix *m)
{
	GString *s = g_string_new(NULL);
	for (size_t c = 0; c < matrix_n_cells(m); c++)
		g_string_append_printf(s, "%s%s", c ? "\n" : "", matrix_cell_id(m, c));
	return g_string_free(s, FALSE);
}

char *joined_diags(const struct diag_list *l)
{
	GString *s = g_string_new(NULL);
	for (size_t i = 0; i < l->n; i++) {
		char *d = diag_format(&l->items[i]);
		g_string_append_printf(s, "%s%s", i ? "\n" : "", d);
		free(d);
	}
	return g_string_free(s, FALSE);
}
