/* SPDX-License-Identifier: MIT */
/*
 * Matrix expansion (see matrix.h for the semantics and the id format).
 *
 * Layout, chosen so that a million cells expand in tens of milliseconds with modest memory:
 *  - every distinct value gets a uint32 "value id": axis values first (axis by axis), then one
 *    id per include key/value pair; each value id belongs to exactly one key, so the id fragment
 *    "key=value" is rendered once per value id and cell ids are built by copying fragments;
 *  - a cell is n_axes value ids (VNONE where an include-created cell lacks an axis) plus a
 *    "variant": the list of include entries that extended or created it. Cells sharing a list
 *    share the variant, and the include-added parameters are computed once per variant;
 *  - all ids live in one arena, NUL-separated, with one offset per cell.
 */
#include "matrix.h"

#include <inttypes.h>
#include <limits.h>
#include <string.h>

#include "matrix-impl.h"

void matrix_free(struct matrix *m)
{
	if (!m)
		return;
	if (m->attached_free)
		m->attached_free(m->attached);
	for (size_t i = 0; i < m->n_keys; i++)
		free(m->keys[i]);
	free(m->keys);
	for (size_t i = 0; i < m->n_values; i++)
		free(m->values[i]);
	free(m->values);
	free(m->value_key);
	strmap_free(&m->key_ids);
	free(m->cells);
	free(m->variant);
	for (size_t i = 0; i < m->n_variants; i++) {
		free(m->variants[i].includes);
		free(m->variants[i].extra);
	}
	free(m->variants);
	free(m->ids);
	free(m->id_off);
	strmap_free(&m->axis_values);
	free(m->lead_axes);
	free(m);
}

/* ---- building ---- */

struct kvref { /* one resolved key/value pair of an include or exclude entry */
	uint32_t key, vid;
};

struct entryref {
	/* pairs on axis keys; a value the axis lacks has vid VNONE in an exclude entry, and a
	 * value id of its own in an include entry (for the cell it adds) */
	struct kvref *axis_kv;
	size_t n_axis_kv;
	struct kvref *extra_kv; /* pairs on include-only keys (include entries only) */
	size_t n_extra_kv;
	bool impossible; /* some axis value is not in its axis: matches no product cell */
	bool matched;
};

struct builder {
	const struct matrix_def *def;
	const char *file;
	struct diag_list *diags;
	struct matrix *m;
	bool failed;

	uint32_t *axis_base; /* first value id of each axis */
	/* odometer slots: a slot is a single axis or a zip group */
	size_t n_slots;
	size_t *slot_len;
	size_t *slot_first; /* into slot_axes */
	size_t *slot_axes;

	struct entryref *exclude, *include;
	size_t variants_cap;
	uint32_t *variant_table; /* open addressing over variant ids (VNONE empty) */
	size_t variant_table_cap;
};

_printf_(4, 5) static void fail(struct builder *b, int line, int col, const char *fmt, ...)
{
	va_list ap;
	if (b->diags) {
		va_start(ap, fmt);
		diag_vadd(b->diags, b->file, line, col, fmt, ap);
		va_end(ap);
	}
	b->failed = true;
}

/* "12345678" -> "12,345,678" */
static void fmt_count(char buf[32], uint64_t v)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "%" PRIu64, v);
	size_t o = 0;
	for (int i = 0; i < n; i++) {
		if (i > 0 && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = '\0';
}

static uint32_t add_value(struct matrix *m, const char *s, uint32_t key, size_t *cap)
{
	size_t old = *cap;
	m->values = xgrow(m->values, cap, m->n_values + 1, sizeof(*m->values));
	m->values[m->n_values] = xstrdup(s);
	/* value_key grows in step with values: same capacity */
	if (*cap != old)
		m->value_key = xrealloc(m->value_key, *cap * sizeof(*m->value_key));
	m->value_key[m->n_values] = key;
	return (uint32_t)m->n_values++;
}

static uint32_t add_key(struct matrix *m, const char *s, size_t *cap)
{
	m->keys = xgrow(m->keys, cap, m->n_keys + 1, sizeof(*m->keys));
	m->keys[m->n_keys] = xstrdup(s);
	return (uint32_t)m->n_keys++;
}

static const char *def_axis_names_closest(const struct matrix_def *def, const char *word)
{
	_cleanup_free_ const char **names = xcalloc(def->n_axes, sizeof(*names));
	for (size_t i = 0; i < def->n_axes; i++)
		names[i] = def->axes[i].name;
	return closest_match(word, names, def->n_axes);
}

static void unknown_axis(struct builder *b, int line, int col, const char *what, const char *name)
{
	const char *near = def_axis_names_closest(b->def, name);
	if (near)
		fail(b, line, col, "%s names unknown matrix axis '%s' (did you mean '%s'?)", what,
		     name, near);
	else
		fail(b, line, col, "%s names unknown matrix axis '%s'", what, name);
}

/* The axes' keys and values, with their ids; false when the values do not fit the ids (the rest
 * of the matrix is not built then). */
static bool add_axes(struct builder *b, size_t *keys_cap, size_t *values_cap)
{
	const struct matrix_def *def = b->def;
	struct matrix *m = b->m;
	size_t total = 0;

	strmap_init(&m->key_ids, def->n_axes + 8);
	for (size_t a = 0; a < def->n_axes; a++)
		total += def->axes[a].n_values;
	strmap_init(&b->m->axis_values, total);
	b->axis_base = xcalloc(def->n_axes, sizeof(*b->axis_base));

	for (size_t a = 0; a < def->n_axes; a++) {
		const struct matrix_axis *ax = &def->axes[a];
		uint32_t k = add_key(m, ax->name, keys_cap);
		uint32_t prev = strmap_put(&m->key_ids, m->keys[k], 0, k);

		if (!ax->name[0])
			fail(b, ax->line, ax->col, "empty matrix axis name");
		if (prev != VNONE) {
			const struct matrix_axis *first = &def->axes[prev];
			if (first->line)
				fail(b, ax->line, ax->col,
				     "duplicate matrix axis '%s' (first defined at line %d)",
				     ax->name, first->line);
			else
				fail(b, ax->line, ax->col, "duplicate matrix axis '%s'", ax->name);
		}
		if (ax->n_values == 0)
			fail(b, ax->line, ax->col, "matrix axis '%s' has no values", ax->name);
		if (m->n_values + ax->n_values >= VNONE) {
			fail(b, ax->line, ax->col, "matrix axis '%s' has too many values",
			     ax->name);
			return false;
		}
		b->axis_base[a] = (uint32_t)m->n_values;
		for (size_t j = 0; j < ax->n_values; j++) {
			uint32_t vid = add_value(m, ax->values[j], k, values_cap);
			if (strmap_put(&b->m->axis_values, m->values[vid], k, vid) != VNONE)
				fail(b, ax->line, ax->col,
				     "duplicate value '%s' in matrix axis '%s'", ax->values[j],
				     ax->name);
		}
	}
	return true;
}

/* Zip group z into group_of (per axis: its group, SIZE_MAX for none): its axes must exist, be
 * in no other group, and have as many values each. */
static void zip_group(struct builder *b, size_t z, size_t *group_of)
{
	const struct matrix_def *def = b->def;
	const struct matrix_zip *zip = &def->zips[z];
	size_t len = SIZE_MAX, len_axis = 0;
	if (zip->n_axes == 0)
		fail(b, zip->line, zip->col, "empty zip group");
	for (size_t i = 0; i < zip->n_axes; i++) {
		uint32_t a = strmap_get(&b->m->key_ids, zip->axes[i], 0);
		if (a == VNONE) {
			unknown_axis(b, zip->line, zip->col, "zip", zip->axes[i]);
			continue;
		}
		if (group_of[a] == z) {
			fail(b, zip->line, zip->col, "axis '%s' appears twice in one zip group",
			     zip->axes[i]);
			continue;
		}
		if (group_of[a] != SIZE_MAX) {
			const struct matrix_zip *other = &def->zips[group_of[a]];
			if (other->line)
				fail(b, zip->line, zip->col,
				     "axis '%s' is already in the zip group at line %d",
				     zip->axes[i], other->line);
			else
				fail(b, zip->line, zip->col, "axis '%s' is in two zip groups",
				     zip->axes[i]);
			continue;
		}
		group_of[a] = z;
		if (len == SIZE_MAX) {
			len = def->axes[a].n_values;
			len_axis = a;
		} else if (def->axes[a].n_values != len) {
			fail(b, zip->line, zip->col,
			     "zipped axes differ in length: '%s' has %zu values, '%s' has %zu",
			     def->axes[len_axis].name, len, def->axes[a].name,
			     def->axes[a].n_values);
		}
	}
}

/* The odometer's slots (a single axis, or a zip group: group_of), in the order of each slot's
 * first axis, and each slot's lead axis. */
static void build_slots(struct builder *b, const size_t *group_of)
{
	const struct matrix_def *def = b->def;
	struct matrix *m = b->m;
	b->slot_len = xcalloc(def->n_axes + 1, sizeof(*b->slot_len));
	b->slot_first = xcalloc(def->n_axes + 2, sizeof(*b->slot_first));
	b->slot_axes = xcalloc(def->n_axes + 1, sizeof(*b->slot_axes));
	_cleanup_free_ bool *placed = xcalloc(def->n_axes + 1, sizeof(*placed));
	size_t o = 0;
	for (size_t a = 0; a < def->n_axes; a++) {
		if (placed[a])
			continue;
		b->slot_first[b->n_slots] = o;
		b->slot_len[b->n_slots] = def->axes[a].n_values;
		for (size_t x = a; x < def->n_axes; x++) {
			if (x == a || (group_of[a] != SIZE_MAX && group_of[x] == group_of[a])) {
				placed[x] = true;
				b->slot_axes[o++] = x;
			}
		}
		b->n_slots++;
	}
	b->slot_first[b->n_slots] = o;
	m->n_slots = b->n_slots;
	m->lead_axes = xcalloc(b->n_slots + 1, sizeof(*m->lead_axes));
	for (size_t sl = 0; sl < b->n_slots; sl++)
		m->lead_axes[sl] = b->slot_axes[b->slot_first[sl]];
}

/* Axes, their values and keys; zip groups into odometer slots. */
static void build_axes(struct builder *b, size_t *keys_cap, size_t *values_cap)
{
	if (!add_axes(b, keys_cap, values_cap))
		return;
	_cleanup_free_ size_t *group_of = xmalloc(b->def->n_axes * sizeof(*group_of) + 1);
	for (size_t a = 0; a < b->def->n_axes; a++)
		group_of[a] = SIZE_MAX;
	for (size_t z = 0; z < b->def->n_zips; z++)
		zip_group(b, z, group_of);
	build_slots(b, group_of);
}

/* Resolve include/exclude entries to value ids; include-only keys become new keys. */
static struct entryref *resolve_entries(struct builder *b, const struct matrix_entry *entries,
					size_t n, bool is_include, size_t *keys_cap,
					size_t *values_cap)
{
	struct matrix *m = b->m;
	const char *what = is_include ? "include" : "exclude";
	struct entryref *refs = xcalloc(n + 1, sizeof(*refs));

	for (size_t i = 0; i < n; i++) {
		const struct matrix_entry *e = &entries[i];
		struct entryref *r = &refs[i];
		r->axis_kv = xcalloc(e->n_kv + 1, sizeof(*r->axis_kv));
		r->extra_kv = xcalloc(e->n_kv + 1, sizeof(*r->extra_kv));
		/* an empty exclude would remove everything (GitHub rejects it too); an empty
		 * include is kept: it may carry a `run:` override the caller keeps aside */
		if (e->n_kv == 0 && !is_include)
			fail(b, e->line, e->col, "empty exclude entry");
		for (size_t k = 0; k < e->n_kv; k++) {
			const struct matrix_kv *kv = &e->kv[k];
			int line = kv->line ? kv->line : e->line, col = kv->line ? kv->col : e->col;
			bool dup = false;
			for (size_t j = 0; j < k; j++)
				dup |= STREQ(e->kv[j].key, kv->key);
			if (dup) {
				fail(b, line, col, "duplicate key '%s' in %s entry", kv->key, what);
				continue;
			}
			uint32_t key = strmap_get(&m->key_ids, kv->key, 0);
			if (key != VNONE && key < b->def->n_axes) {
				uint32_t vid = strmap_get(&b->m->axis_values, kv->value, key);
				if (vid == VNONE) {
					r->impossible = true;
					/* an include may add a cell with a value the axis lacks */
					if (is_include)
						vid = add_value(m, kv->value, key, values_cap);
				}
				r->axis_kv[r->n_axis_kv++] = (struct kvref){ key, vid };
				continue;
			}
			if (!is_include) {
				unknown_axis(b, line, col, what, kv->key);
				continue;
			}
			if (key == VNONE) {
				key = add_key(m, kv->key, keys_cap);
				strmap_put(&m->key_ids, m->keys[key], 0, key);
			}
			if (m->n_values >= VNONE - 1) {
				fail(b, line, col, "too many include values");
				continue;
			}
			uint32_t vid = add_value(m, kv->value, key, values_cap);
			r->extra_kv[r->n_extra_kv++] = (struct kvref){ key, vid };
		}
	}
	return refs;
}

static void free_entries(struct entryref *refs, size_t n)
{
	if (!refs)
		return;
	for (size_t i = 0; i < n; i++) {
		free(refs[i].axis_kv);
		free(refs[i].extra_kv);
	}
	free(refs);
}

static bool entry_matches(const struct entryref *r, const uint32_t *cell)
{
	for (size_t k = 0; k < r->n_axis_kv; k++)
		if (cell[r->axis_kv[k].key] != r->axis_kv[k].vid)
			return false;
	return true;
}

static uint64_t hash_list(const size_t *l, size_t n)
{
	uint64_t h = 0x84222325cbf29ce4ull ^ n;
	for (size_t i = 0; i < n; i++) {
		h ^= l[i];
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	return h;
}

/* The variant (include list) id for `list`, creating it (and its parameters) when new. */
static uint32_t variant_get(struct builder *b, const size_t *list, size_t n)
{
	struct matrix *m = b->m;
	uint64_t h = hash_list(list, n);

	if ((m->n_variants + 1) * 2 > b->variant_table_cap) {
		size_t ncap = b->variant_table_cap ? b->variant_table_cap * 2 : 64;
		uint32_t *nt = xmalloc(ncap * sizeof(*nt));
		memset(nt, 0xff, ncap * sizeof(*nt));
		for (size_t v = 0; v < m->n_variants; v++) {
			size_t i = hash_list(m->variants[v].includes, m->variants[v].n_includes) &
				   (ncap - 1);
			while (nt[i] != VNONE)
				i = (i + 1) & (ncap - 1);
			nt[i] = (uint32_t)v;
		}
		free(b->variant_table);
		b->variant_table = nt;
		b->variant_table_cap = ncap;
	}
	size_t i = h & (b->variant_table_cap - 1);
	for (; b->variant_table[i] != VNONE; i = (i + 1) & (b->variant_table_cap - 1)) {
		const struct variant *v = &m->variants[b->variant_table[i]];
		if (v->n_includes == n && (n == 0 || !memcmp(v->includes, list, n * sizeof(*list))))
			return b->variant_table[i];
	}

	m->variants = xgrow(m->variants, &b->variants_cap, m->n_variants + 1, sizeof(*m->variants));
	struct variant *v = &m->variants[m->n_variants];
	*v = (struct variant){ .n_includes = n };
	v->includes = xmalloc(n * sizeof(*list) + 1);
	if (n)
		memcpy(v->includes, list, n * sizeof(*list));
	/* apply the entries in order: later ones overwrite values added by earlier ones */
	size_t n_extra_keys = m->n_keys - m->n_axes;
	_cleanup_free_ uint32_t *slot = xmalloc(n_extra_keys * sizeof(*slot) + 1);
	memset(slot, 0xff, n_extra_keys * sizeof(*slot));
	for (size_t j = 0; j < n; j++) {
		const struct entryref *r = &b->include[list[j]];
		for (size_t k = 0; k < r->n_extra_kv; k++)
			slot[r->extra_kv[k].key - m->n_axes] = r->extra_kv[k].vid;
	}
	v->extra = xmalloc(n_extra_keys * sizeof(*v->extra) + 1);
	for (size_t k = 0; k < n_extra_keys; k++)
		if (slot[k] != VNONE)
			v->extra[v->n_extra++] = slot[k];
	b->variant_table[i] = (uint32_t)m->n_variants;
	return (uint32_t)m->n_variants++;
}

/* Append the "key=value" rendering of a string to buf (if non-NULL); returns its length.
 * ',', '=', '%' and control bytes are percent-encoded so that ids parse back unambiguously. */
static size_t escape(char *buf, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == ',' || *p == '=' || *p == '%' || *p < 0x20 || *p == 0x7f) {
			if (buf) {
				buf[n] = '%';
				buf[n + 1] = hex[*p >> 4];
				buf[n + 2] = hex[*p & 15];
			}
			n += 3;
		} else {
			if (buf)
				buf[n] = (char)*p;
			n++;
		}
	}
	return n;
}

/* Cell ids: fragments "key=value" per value id, copied into one arena. */
static void build_ids(struct builder *b)
{
	struct matrix *m = b->m;
	size_t frag_total = 0;
	_cleanup_free_ size_t *frag_off = xmalloc((m->n_values + 1) * sizeof(*frag_off));
	_cleanup_free_ uint32_t *frag_len = xmalloc((m->n_values + 1) * sizeof(*frag_len));

	for (size_t v = 0; v < m->n_values; v++) {
		size_t l = escape(NULL, m->keys[m->value_key[v]]) + 1 + escape(NULL, m->values[v]);
		frag_off[v] = frag_total;
		frag_len[v] = (uint32_t)l;
		frag_total += l;
	}
	_cleanup_free_ char *frags = xmalloc(frag_total + 1);
	for (size_t v = 0; v < m->n_values; v++) {
		char *p = frags + frag_off[v];
		p += escape(p, m->keys[m->value_key[v]]);
		*p++ = '=';
		escape(p, m->values[v]);
	}

	/* pass 1: offsets */
	m->id_off = xmalloc((m->n_cells + 1) * sizeof(*m->id_off));
	size_t total = 0;
	for (size_t c = 0; c < m->n_cells; c++) {
		const uint32_t *cell = m->cells + c * m->n_axes;
		const struct variant *v = &m->variants[m->variant[c]];
		size_t l = 0, parts = 0;
		m->id_off[c] = total;
		for (size_t a = 0; a < m->n_axes; a++)
			if (cell[a] != VNONE) {
				l += frag_len[cell[a]];
				parts++;
			}
		for (size_t k = 0; k < v->n_extra; k++)
			l += frag_len[v->extra[k]];
		parts += v->n_extra;
		total += l + (parts ? parts - 1 : 0) + 1;
	}
	m->ids = xmalloc(total + 1);

	/* pass 2: text */
	for (size_t c = 0; c < m->n_cells; c++) {
		const uint32_t *cell = m->cells + c * m->n_axes;
		const struct variant *v = &m->variants[m->variant[c]];
		char *p = m->ids + m->id_off[c];
		bool first = true;
		for (size_t a = 0; a < m->n_axes; a++) {
			if (cell[a] == VNONE)
				continue;
			if (!first)
				*p++ = ',';
			first = false;
			memcpy(p, frags + frag_off[cell[a]], frag_len[cell[a]]);
			p += frag_len[cell[a]];
		}
		for (size_t k = 0; k < v->n_extra; k++) {
			if (!first)
				*p++ = ',';
			first = false;
			memcpy(p, frags + frag_off[v->extra[k]], frag_len[v->extra[k]]);
			p += frag_len[v->extra[k]];
		}
		*p = '\0';
	}
}

static void builder_free(struct builder *b)
{
	free(b->axis_base);
	free(b->slot_len);
	free(b->slot_first);
	free(b->slot_axes);
	free_entries(b->exclude, b->def->n_exclude);
	free_entries(b->include, b->def->n_include);
	free(b->variant_table);
}

static void entry_position(const struct matrix_entry *e, int *line, int *col)
{
	*line = e->line;
	*col = e->col;
	if (!*line && e->n_kv) {
		*line = e->kv[0].line;
		*col = e->kv[0].col;
	}
}

/* The number of product cells (the slot lengths multiplied), checked against the cap before
 * anything is allocated for cells, and the cell arrays allocated for it and the include
 * entries; false when a diagnostic was added. */
static bool product_size(struct builder *b, size_t cap, uint64_t *product)
{
	const struct matrix_def *def = b->def;
	struct matrix *m = b->m;
	/* without axes there are no product cells, only include-created ones (GitHub) */
	*product = def->n_axes ? 1 : 0;
	bool overflow = false;
	for (size_t s = 0; s < b->n_slots && !overflow; s++)
		overflow = !mul_u64(*product, b->slot_len[s], product);
	int pline = def->n_axes ? def->axes[0].line : 0, pcol = def->n_axes ? def->axes[0].col : 0;
	char num[32], capbuf[32];
	fmt_count(capbuf, cap);
	if (overflow) {
		fmt_count(num, UINT64_MAX);
		fail(b, pline, pcol,
		     "matrix expands to more than %s cells (the product of the axis lengths "
		     "overflows 64 bits), over the cap of %s",
		     num, capbuf);
		return false;
	}
	if (*product > cap) {
		fmt_count(num, *product);
		fail(b, pline, pcol,
		     "matrix expands to %s cells%s, over the cap of %s (raise it with --max-cells)",
		     num, def->n_exclude ? " before exclude" : "", capbuf);
		return false;
	}
	uint64_t max_cells, bytes;
	if (!add_u64(*product, def->n_include, &max_cells) ||
	    !mul_u64(max_cells, def->n_axes * sizeof(uint32_t), &bytes) || bytes > SIZE_MAX / 2) {
		fail(b, pline, pcol, "matrix is too large to expand");
		return false;
	}
	m->cells = xmalloc((size_t)bytes + 1);
	m->variant = xmalloc(((size_t)max_cells + 1) * sizeof(*m->variant));
	return true;
}

/* The product cells in odometer order (last slot fastest), minus excluded ones; their count. */
static size_t product_cells(struct builder *b, uint64_t product)
{
	const struct matrix_def *def = b->def;
	struct matrix *m = b->m;
	size_t n_excl = 0;
	_cleanup_free_ struct entryref **excl = xcalloc(def->n_exclude + 1, sizeof(*excl));
	for (size_t i = 0; i < def->n_exclude; i++)
		if (!b->exclude[i].impossible) /* a value no axis has excludes nothing */
			excl[n_excl++] = &b->exclude[i];
	_cleanup_free_ size_t *idx = xcalloc(b->n_slots + 1, sizeof(*idx));
	_cleanup_free_ uint32_t *cur = xmalloc(def->n_axes * sizeof(*cur) + 1);
	for (size_t a = 0; a < def->n_axes; a++)
		cur[a] = b->axis_base[a];
	size_t n = 0;
	for (uint64_t c = 0; c < product; c++) {
		bool excluded = false;
		for (size_t e = 0; e < n_excl && !excluded; e++)
			excluded = entry_matches(excl[e], cur);
		if (!excluded) {
			memcpy(m->cells + n * def->n_axes, cur, def->n_axes * sizeof(*cur));
			n++;
		}
		for (size_t s = b->n_slots; s-- > 0;) {
			bool carry = ++idx[s] == b->slot_len[s];
			if (carry)
				idx[s] = 0;
			for (size_t i = b->slot_first[s]; i < b->slot_first[s + 1]; i++)
				cur[b->slot_axes[i]] =
				    b->axis_base[b->slot_axes[i]] + (uint32_t)idx[s];
			if (!carry)
				break;
		}
	}
	return n;
}

/* include: extend the n product cells each entry does not contradict, then add a cell for every
 * entry that extended none; the number of cells. */
static size_t include_cells(struct builder *b, size_t n)
{
	const struct matrix_def *def = b->def;
	struct matrix *m = b->m;
	_cleanup_free_ size_t *list = xmalloc((def->n_include + 1) * sizeof(*list));
	_cleanup_free_ size_t *candidates = xmalloc((def->n_include + 1) * sizeof(*candidates));
	size_t n_cand = 0;
	for (size_t i = 0; i < def->n_include; i++)
		if (!b->include[i].impossible)
			candidates[n_cand++] = i;
	uint32_t empty = variant_get(b, list, 0);
	for (size_t c = 0; c < n; c++) {
		const uint32_t *cell = m->cells + c * def->n_axes;
		size_t nl = 0;
		for (size_t j = 0; j < n_cand; j++) {
			struct entryref *r = &b->include[candidates[j]];
			if (entry_matches(r, cell)) {
				r->matched = true;
				list[nl++] = candidates[j];
			}
		}
		m->variant[c] = nl ? variant_get(b, list, nl) : empty;
	}
	m->n_product = n;
	for (size_t i = 0; i < def->n_include; i++) {
		const struct entryref *r = &b->include[i];
		if (r->matched)
			continue;
		uint32_t *cell = m->cells + n * def->n_axes;
		for (size_t a = 0; a < def->n_axes; a++)
			cell[a] = VNONE;
		for (size_t k = 0; k < r->n_axis_kv; k++)
			cell[r->axis_kv[k].key] = r->axis_kv[k].vid;
		list[0] = i;
		m->variant[n++] = variant_get(b, list, 1);
	}
	return n;
}

/* Include-created cells (from first_new on) are the only ones that can repeat an id (product
 * cells differ in their axis values, and an entry equal to a product cell extends it
 * instead): each repeat is a diagnostic. */
static void check_repeated_ids(struct builder *b, size_t first_new)
{
	const struct matrix_def *def = b->def;
	struct matrix *m = b->m;
	size_t n = m->n_cells;
	if (n <= first_new)
		return;
	struct strmap seen;
	strmap_init(&seen, n - first_new);
	for (size_t c = first_new; c < n; c++) {
		uint32_t prev = strmap_put(&seen, m->ids + m->id_off[c], 0, (uint32_t)c);
		if (prev == VNONE)
			continue;
		const struct matrix_entry *e =
		    &def->include[m->variants[m->variant[c]].includes[0]];
		const struct matrix_entry *pe =
		    &def->include[m->variants[m->variant[prev]].includes[0]];
		int line, col, pl, pc;
		entry_position(e, &line, &col);
		entry_position(pe, &pl, &pc);
		if (pl)
			fail(b, line, col,
			     "include entry adds the cell '%s' that the include entry at "
			     "line %d already added",
			     m->ids + m->id_off[c], pl);
		else
			fail(b, line, col,
			     "include entry adds the cell '%s' that an earlier include "
			     "entry "
			     "already added",
			     m->ids + m->id_off[c]);
	}
	strmap_free(&seen);
}

/* Product, exclude, include, ids; false when a diagnostic was added. */
static bool expand(struct builder *b, size_t cap)
{
	const struct matrix_def *def = b->def;
	struct matrix *m = b->m;
	uint64_t product;
	if (!product_size(b, cap, &product))
		return false;
	size_t n = product_cells(b, product);
	if (product > 0 && n == 0 && def->n_include == 0) {
		int line, col;
		entry_position(&def->exclude[0], &line, &col);
		fail(b, line, col, "every matrix cell is excluded");
		return false;
	}
	size_t first_new = n;
	n = include_cells(b, n);
	m->n_cells = n;
	if (n > cap) {
		char num[32], capbuf[32];
		fmt_count(num, n);
		fmt_count(capbuf, cap);
		fail(b, def->n_axes ? def->axes[0].line : 0, def->n_axes ? def->axes[0].col : 0,
		     "matrix expands to %s cells, over the cap of %s (raise it with --max-cells)",
		     num, capbuf);
		return false;
	}
	build_ids(b);
	check_repeated_ids(b, first_new);
	return !b->failed;
}

struct matrix *matrix_expand(const struct matrix_def *def, size_t cap, const char *file,
			     struct diag_list *diags)
{
	_cleanup_(matrix_freep) struct matrix *m = xcalloc(1, sizeof(*m));
	struct builder b = { .def = def, .file = file, .diags = diags, .m = m };
	size_t keys_cap = 0, values_cap = 0;
	bool ok;

	m->n_axes = def->n_axes;
	build_axes(&b, &keys_cap, &values_cap);
	b.exclude =
	    resolve_entries(&b, def->exclude, def->n_exclude, false, &keys_cap, &values_cap);
	b.include = resolve_entries(&b, def->include, def->n_include, true, &keys_cap, &values_cap);
	ok = !b.failed && expand(&b, cap ? cap : MATRIX_DEFAULT_CAP);
	builder_free(&b);
	return ok ? TAKE_PTR(m) : NULL;
}
