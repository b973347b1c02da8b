/* SPDX-License-Identifier: MIT */
/*
 * The Markdown report's pivot (see md-layout.h): axis keys, the row and column of every cell, the
 * groups of the other axes and the cells of each group, all in linear time.
 */
#include <math.h>
#include <string.h>

#include "md-layout.h"

const char *md_axis_value(const struct result_cell *c, const char *key)
{
	if (!key)
		return "";
	for (size_t i = 0; i < c->n_axes; i++)
		if (STREQ(c->axes[i].key, key))
			return c->axes[i].value;
	return NULL;
}

size_t md_strset_add(struct strset *s, const char *x)
{
	if (!s->idx.slots)
		strmap_init(&s->idx, 16);
	uint32_t k = strmap_put(&s->idx, x, 0, (uint32_t)s->n);
	if (k != STRMAP_NONE)
		return k;
	s->v = xgrow(s->v, &s->cap, s->n + 1, sizeof(*s->v));
	s->v[s->n] = x;
	return s->n++;
}

/* The index of x, or -1. */
long md_strset_find(const struct strset *s, const char *x)
{
	uint32_t k = s->idx.slots ? strmap_get(&s->idx, x, 0) : STRMAP_NONE;
	return k == STRMAP_NONE ? -1 : (long)k;
}

void md_strset_free(struct strset *s)
{
	free(s->v);
	strmap_free(&s->idx);
	*s = (struct strset){ 0 };
}

/* A growing string (the group labels, built from any number of axes in linear time). */
struct strbuf {
	char *s;
	size_t n, cap;
};

static void strbuf_add(struct strbuf *b, const char *x)
{
	size_t l = strlen(x);
	b->s = xgrow(b->s, &b->cap, b->n + l + 1, 1);
	memcpy(b->s + b->n, x, l + 1);
	b->n += l;
}

bool md_has_stats(const struct result_cell *c)
{
	return c->has_stats && c->stats.total.n > 0 && isfinite(c->stats.total.median);
}

void md_layout_free(struct layout *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(l->group_label ? l->group_label[i] : NULL);
	free(l->group_label);
	free(l->group);
	free(l->row);
	free(l->col);
	free(l->order);
	free(l->group_start);
	md_strset_free(&l->keys);
	md_strset_free(&l->groups);
}

/* "unknown axis 'X' for rows (did you mean 'Y'?)", escaped; returns -1. */
static int unknown_axis(char **err, const char *what, const char *given, const struct strset *keys)
{
	const char *hint = closest_match(given, keys->v, keys->n);
	_cleanup_free_ char *g = escape_controls(given);
	_cleanup_free_ char *h = hint ? escape_controls(hint) : NULL;
	*err = h ? xasprintf("unknown axis '%s' for %s (did you mean '%s'?)", g, what, h)
		 : xasprintf("unknown axis '%s' for %s", g, what);
	return -1;
}

int md_layout_build(struct layout *l, const struct results *r, const struct report_markdown_opts *o,
		    char **err)
{
	for (size_t i = 0; i < r->n_cells; i++)
		for (size_t a = 0; a < r->cells[i].n_axes; a++)
			md_strset_add(&l->keys, r->cells[i].axes[a].key);

	bool have_rows = o->rows && md_strset_find(&l->keys, o->rows) >= 0;
	bool have_cols = o->cols && md_strset_find(&l->keys, o->cols) >= 0;
	/* the values come from the command line and the keys from the results file: both are
	   shown with their control characters escaped, like every other message */
	if (o->rows && !have_rows && r->n_cells)
		return unknown_axis(err, "rows", o->rows, &l->keys);
	if (o->cols && !have_cols && r->n_cells)
		return unknown_axis(err, "columns", o->cols, &l->keys);
	if (o->rows && o->cols && STREQ(o->rows, o->cols)) {
		_cleanup_free_ char *axis = escape_controls(o->rows);
		*err = xasprintf("rows and columns are the same axis '%s'", axis);
		return -1;
	}

	/* defaults: methods down, datasets across, as people draw it */
	l->rows = o->rows;
	l->cols = o->cols;
	for (size_t k = 0; k < l->keys.n && !l->rows; k++)
		if (STREQ(l->keys.v[k], "method") && !(l->cols && STREQ(l->cols, "method")))
			l->rows = l->keys.v[k];
	for (size_t k = 0; k < l->keys.n && !l->rows; k++)
		if (!l->cols || !STREQ(l->keys.v[k], l->cols))
			l->rows = l->keys.v[k];
	for (size_t k = 0; k < l->keys.n && !l->cols; k++)
		if (STREQ(l->keys.v[k], "dataset") && !(l->rows && STREQ(l->rows, "dataset")))
			l->cols = l->keys.v[k];
	for (size_t k = 0; k < l->keys.n && !l->cols; k++)
		if (!l->rows || !STREQ(l->keys.v[k], l->rows))
			l->cols = l->keys.v[k];

	size_t n = r->n_cells;
	l->group = xcalloc(n + 1, sizeof(*l->group));
	l->group_label = xcalloc(n + 1, sizeof(*l->group_label));
	l->row = xcalloc(n + 1, sizeof(*l->row));
	l->col = xcalloc(n + 1, sizeof(*l->col));
	for (size_t i = 0; i < n; i++) {
		const struct result_cell *c = &r->cells[i];
		const char *v;
		l->row[i] = l->rows ? ((v = md_axis_value(c, l->rows)) ? v : "(none)") : c->id;
		l->col[i] = l->cols ? ((v = md_axis_value(c, l->cols)) ? v : "(none)") : "";
		struct strbuf label = { 0 };
		strbuf_add(&label, "");
		for (size_t a = 0; a < c->n_axes; a++) {
			const char *k = c->axes[a].key;
			if ((l->rows && STREQ(k, l->rows)) || (l->cols && STREQ(k, l->cols)))
				continue;
			strbuf_add(&label, label.n ? ", " : "");
			strbuf_add(&label, k);
			strbuf_add(&label, "=");
			strbuf_add(&label, c->axes[a].value);
		}
		l->group_label[i] = label.s;
		l->group[i] = md_strset_add(&l->groups, label.s);
	}

	/* the cells of each group, by a counting sort (stable: cell order within a group) */
	l->group_start = xcalloc(l->groups.n + 2, sizeof(*l->group_start));
	l->order = xcalloc(n + 1, sizeof(*l->order));
	for (size_t i = 0; i < n; i++)
		l->group_start[l->group[i] + 2]++;
	for (size_t g = 0; g < l->groups.n; g++)
		l->group_start[g + 2] += l->group_start[g + 1];
	for (size_t i = 0; i < n; i++)
		l->order[l->group_start[l->group[i] + 1]++] = i;
	return 0;
}

/* The cells of group g: for (size_t *p = md_group_begin(l, g); p < md_group_end(l, g); p++) */
const size_t *md_group_begin(const struct layout *l, size_t g)
{
	return l->order + l->group_start[g];
}

const size_t *md_group_end(const struct layout *l, size_t g)
{
	return l->order + l->group_start[g + 1];
}
