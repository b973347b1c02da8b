/* SPDX-License-Identifier: MIT */
/* Reading an expanded matrix (accessors, finding a cell by id) and building a definition by
 * hand; see matrix.h. */
#include <string.h>

#include "matrix-impl.h"

/* ---- accessors ---- */

void matrix_attach(struct matrix *m, void *data, void (*free_fn)(void *))
{
	if (m->attached_free)
		m->attached_free(m->attached);
	m->attached = data;
	m->attached_free = free_fn;
}

void *matrix_attached(const struct matrix *m)
{
	return m->attached;
}

size_t matrix_n_cells(const struct matrix *m)
{
	return m->n_cells;
}

size_t matrix_n_keys(const struct matrix *m)
{
	return m->n_keys;
}

const char *matrix_key(const struct matrix *m, size_t key)
{
	return key < m->n_keys ? m->keys[key] : NULL;
}

const char *matrix_cell_id(const struct matrix *m, size_t cell)
{
	return m->ids + m->id_off[cell];
}

size_t matrix_cell_n_params(const struct matrix *m, size_t cell)
{
	const uint32_t *c = m->cells + cell * m->n_axes;
	size_t n = m->variants[m->variant[cell]].n_extra;
	for (size_t a = 0; a < m->n_axes; a++)
		n += c[a] != VNONE;
	return n;
}

/* The value id of parameter `param` of `cell`. */
static uint32_t cell_param(const struct matrix *m, size_t cell, size_t param)
{
	const uint32_t *c = m->cells + cell * m->n_axes;
	const struct variant *v = &m->variants[m->variant[cell]];
	for (size_t a = 0; a < m->n_axes; a++) {
		if (c[a] == VNONE)
			continue;
		if (param-- == 0)
			return c[a];
	}
	return param < v->n_extra ? v->extra[param] : VNONE;
}

const char *matrix_cell_key(const struct matrix *m, size_t cell, size_t param)
{
	uint32_t v = cell_param(m, cell, param);
	return v == VNONE ? NULL : m->keys[m->value_key[v]];
}

const char *matrix_cell_value(const struct matrix *m, size_t cell, size_t param)
{
	uint32_t v = cell_param(m, cell, param);
	return v == VNONE ? NULL : m->values[v];
}

const char *matrix_cell_get(const struct matrix *m, size_t cell, const char *key)
{
	uint32_t k = strmap_get(&m->key_ids, key, 0);
	if (k == VNONE)
		return NULL;
	if (k < m->n_axes) {
		uint32_t v = m->cells[cell * m->n_axes + k];
		return v == VNONE ? NULL : m->values[v];
	}
	const struct variant *v = &m->variants[m->variant[cell]];
	for (size_t i = 0; i < v->n_extra; i++)
		if (m->value_key[v->extra[i]] == k)
			return m->values[v->extra[i]];
	return NULL;
}

const size_t *matrix_cell_includes(const struct matrix *m, size_t cell, size_t *n)
{
	const struct variant *v = &m->variants[m->variant[cell]];
	*n = v->n_includes;
	return v->includes;
}

/* Percent-decode s[0, n) into a new string; NULL when malformed. */
static char *unescape(const char *s, size_t n)
{
	char *out = xmalloc(n + 1), *o = out;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '%') {
			*o++ = s[i];
			continue;
		}
		int hi = i + 2 < n ? hex_digit_value(s[i + 1]) : -1;
		int lo = i + 2 < n ? hex_digit_value(s[i + 2]) : -1;
		if (hi < 0 || lo < 0) {
			free(out);
			return NULL;
		}
		*o++ = (char)(hi * 16 + lo);
		i += 2;
	}
	*o = '\0';
	return out;
}

size_t matrix_cell_find(const struct matrix *m, const char *id)
{
	_cleanup_free_ uint32_t *want = xmalloc(m->n_axes * sizeof(*want) + 1);
	bool product = m->n_axes > 0;

	for (size_t a = 0; a < m->n_axes; a++)
		want[a] = VNONE;
	/* the axis values the id names, when they are all axis values */
	for (const char *p = id; product && *p;) {
		size_t len = strcspn(p, ","), klen = strcspn(p, "=");
		if (klen >= len) {
			product = false;
			break;
		}
		_cleanup_free_ char *key = unescape(p, klen);
		_cleanup_free_ char *val = unescape(p + klen + 1, len - klen - 1);
		uint32_t k = key && val ? strmap_get(&m->key_ids, key, 0) : VNONE;
		if (k != VNONE && k < m->n_axes) {
			want[k] = strmap_get(&m->axis_values, val, k);
			if (want[k] == VNONE)
				product = false;
		}
		p += len + (p[len] == ',');
	}
	for (size_t a = 0; a < m->n_axes && product; a++)
		product = want[a] != VNONE;
	if (product) {
		size_t lo = 0, hi = m->n_product;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			const uint32_t *c = m->cells + mid * m->n_axes;
			int cmp = 0;
			for (size_t s = 0; s < m->n_slots && !cmp; s++) {
				size_t a = m->lead_axes[s];
				cmp = c[a] < want[a] ? -1 : c[a] > want[a];
			}
			/* equal lead values but another id: a zipped axis or an extra key differs,
			 * which only an include-created cell can have */
			if (cmp == 0) {
				if (STREQ(matrix_cell_id(m, mid), id))
					return mid;
				break;
			}
			if (cmp < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	/* include-created cells: few, scanned */
	for (size_t c = m->n_product; c < m->n_cells; c++)
		if (STREQ(matrix_cell_id(m, c), id))
			return c;
	return SIZE_MAX;
}

/* ---- the definition ---- */

static void entries_clear(struct matrix_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < e[i].n_kv; k++) {
			free(e[i].kv[k].key);
			free(e[i].kv[k].value);
		}
		free(e[i].kv);
	}
	free(e);
}

void matrix_def_clear(struct matrix_def *def)
{
	if (!def)
		return;
	for (size_t a = 0; a < def->n_axes; a++) {
		free(def->axes[a].name);
		for (size_t j = 0; j < def->axes[a].n_values; j++)
			free(def->axes[a].values[j]);
		free(def->axes[a].values);
	}
	free(def->axes);
	for (size_t z = 0; z < def->n_zips; z++) {
		for (size_t i = 0; i < def->zips[z].n_axes; i++)
			free(def->zips[z].axes[i]);
		free(def->zips[z].axes);
	}
	free(def->zips);
	entries_clear(def->exclude, def->n_exclude);
	entries_clear(def->include, def->n_include);
	*def = (struct matrix_def){ 0 };
}

struct matrix_axis *matrix_def_add_axis(struct matrix_def *def, const char *name, int line, int col)
{
	def->axes = xrealloc(def->axes, (def->n_axes + 1) * sizeof(*def->axes));
	struct matrix_axis *ax = &def->axes[def->n_axes++];
	*ax = (struct matrix_axis){ .name = xstrdup(name), .line = line, .col = col };
	return ax;
}

void matrix_axis_add_value(struct matrix_axis *axis, const char *value)
{
	axis->values = xrealloc(axis->values, (axis->n_values + 1) * sizeof(*axis->values));
	axis->values[axis->n_values++] = xstrdup(value);
}

static struct matrix_entry *add_entry(struct matrix_entry **v, size_t *n, int line, int col)
{
	*v = xrealloc(*v, (*n + 1) * sizeof(**v));
	struct matrix_entry *e = &(*v)[(*n)++];
	*e = (struct matrix_entry){ .line = line, .col = col };
	return e;
}

struct matrix_entry *matrix_def_add_include(struct matrix_def *def, int line, int col)
{
	return add_entry(&def->include, &def->n_include, line, col);
}

struct matrix_entry *matrix_def_add_exclude(struct matrix_def *def, int line, int col)
{
	return add_entry(&def->exclude, &def->n_exclude, line, col);
}

void matrix_entry_add(struct matrix_entry *e, const char *key, const char *value, int line, int col)
{
	e->kv = xrealloc(e->kv, (e->n_kv + 1) * sizeof(*e->kv));
	e->kv[e->n_kv++] = (struct matrix_kv){
		.key = xstrdup(key), .value = xstrdup(value), .line = line, .col = col
	};
}

struct matrix_zip *matrix_def_add_zip(struct matrix_def *def, int line, int col)
{
	def->zips = xrealloc(def->zips, (def->n_zips + 1) * sizeof(*def->zips));
	struct matrix_zip *z = &def->zips[def->n_zips++];
	*z = (struct matrix_zip){ .line = line, .col = col };
	return z;
}

void matrix_zip_add_axis(struct matrix_zip *zip, const char *axis)
{
	zip->axes = xrealloc(zip->axes, (zip->n_axes + 1) * sizeof(*zip->axes));
	zip->axes[zip->n_axes++] = xstrdup(axis);
}
