/* SPDX-License-Identifier: MIT */
/* The plan's `matrix:` section -> struct matrix_def (matrix.h expands it): the axes vm, disk,
 * dataset and method, sweeps of entry keys ("disk.cache", sweep.c), zip groups, exclude and
 * include entries (with their `run:` overrides). A later file's matrix replaces an included one
 * whole. */
#include <string.h>

#include "plan-parse.h"

static void unknown_axis(struct ctx *c, const yaml_node_t *k, const struct key_table *t)
{
	const char *hint = key_suggest(t, pl_scalar(k));
	if (hint)
		pl_err_node(c, k, "unknown axis '%s' (did you mean '%s'?)", pl_scalar(k), hint);
	else
		pl_err_node(c, k, "unknown axis '%s' (axes are vm, disk, dataset and method)",
			    pl_scalar(k));
}

/* A value of a sweep: checked as the entry's key (its messages, at the value), canonical. */
static char *sweep_value(struct ctx *c, const struct sweep_key *sk, const yaml_node_t *n)
{
	_cleanup_free_ char *text = pl_value_text(c, n);
	_cleanup_free_ char *err = NULL;
	char *canon = NULL;
	if (!text)
		return NULL;
	if (pl_sweep_value(sk, text, &canon, &err) < 0) {
		pl_err_node(c, n, "%s", err);
		return NULL;
	}
	return canon;
}

/* Resolve the sweep key written at `k` (an error there when it names no sweepable key). */
static bool sweep_key(struct ctx *c, const yaml_node_t *k, struct sweep_key *sk)
{
	_cleanup_free_ char *err = NULL;
	if (pl_sweep_resolve(pl_scalar(k), sk, &err) < 0) {
		pl_err_node(c, k, "%s", err);
		return false;
	}
	return true;
}

/* An axis: entry names (a >= 0), or the values of a sweep (sk). */
static void parse_axis(struct ctx *c, int a, const struct sweep_key *sk, yaml_node_t *k,
		       yaml_node_t *v)
{
	struct matrix_def *d = &c->p->matrix;
	const char *name = sk ? pl_scalar(k) : plan_axis_name((enum plan_axis)a);
	struct matrix_axis ax = { .name = xstrdup(name),
				  .line = (int)k->start_mark.line + 1,
				  .col = (int)k->start_mark.column + 1 };
	yaml_node_item_t one = 0, *b, *e;

	if (v->type == YAML_SCALAR_NODE && !pl_is_null(v)) {
		b = &one;
		e = b + 1;
		one = (yaml_node_item_t)(v - c->doc->nodes.start) + 1;
	} else if (v->type == YAML_SEQUENCE_NODE) {
		b = v->data.sequence.items.start;
		e = v->data.sequence.items.top;
	} else {
		pl_err_node(c, v, "axis '%s' must be %s, not %s", name,
			    sk ? "a value or a list of values" : "a name or a list of names",
			    pl_node_kind(v));
		free(ax.name);
		return;
	}
	if (b == e)
		pl_err_node(c, v, "axis '%s' is empty: it would make no cells", name);
	for (yaml_node_item_t *i = b; i < e; i++) {
		yaml_node_t *n = pl_node(c, *i);
		if (n->type != YAML_SCALAR_NODE || pl_is_null(n)) {
			pl_err_node(c, n, "axis '%s' values must be %s, not %s", name,
				    sk ? "single values" : "names", pl_node_kind(n));
			continue;
		}
		char *value = sk ? sweep_value(c, sk, n) : pl_value_text(c, n);
		if (!value)
			continue;
		for (size_t j = 0; j < ax.n_values; j++)
			if (STREQ(ax.values[j], value)) {
				pl_err_node(c, n, "axis '%s' lists '%s' twice", name, value);
				break;
			}
		if (!sk)
			pl_add_ref(c, (enum plan_axis)a, value, n, true);
		ax.values = xrealloc(ax.values, (ax.n_values + 1) * sizeof(*ax.values));
		ax.values[ax.n_values++] = value;
	}
	d->axes = xrealloc(d->axes, (d->n_axes + 1) * sizeof(*d->axes));
	d->axes[d->n_axes++] = ax;
}

/* One exclude or include entry; include entries may carry `run:` overrides. */
static void parse_matrix_entry(struct ctx *c, yaml_node_t *v, bool include, struct matrix_entry *me,
			       struct plan_run *run)
{
	const struct key_table *t = include ? &plan_matrix_include_keys : &plan_exclude_keys;

	me->line = (int)v->start_mark.line + 1;
	me->col = (int)v->start_mark.column + 1;
	_cleanup_free_ bool *skip = pl_check_keys(c, v);
	/* an include entry with only `run:` applies its overrides to every cell; one with
	 * nothing at all is a mistake */
	if (v->data.mapping.pairs.start == v->data.mapping.pairs.top)
		pl_err_node(c, v,
			    include ? "empty include entry: it would extend every cell with nothing"
				    : "empty exclude entry: it would remove every cell");
	for (yaml_node_pair_t *i = v->data.mapping.pairs.start; i < v->data.mapping.pairs.top;
	     i++) {
		yaml_node_t *kn = pl_node(c, i->key), *val = pl_node(c, i->value);
		const char *name = pl_scalar(kn);
		if (skip[i - v->data.mapping.pairs.start])
			continue;
		int a = pl_axis_from_name(name);
		struct sweep_key sk;
		if (pl_is_sweep(name)) {
			if (!sweep_key(c, kn, &sk))
				continue;
		} else if (a < 0 && include && STREQ(name, "run")) {
			if (pl_is_null(val))
				continue;
			if (val->type != YAML_MAPPING_NODE) {
				pl_err_node(c, val, "'run' must be a mapping, not %s",
					    pl_node_kind(val));
				continue;
			}
			pl_walk_mapping(c, &plan_run_keys, run, val, kn);
			continue;
		} else if (a < 0) {
			pl_unknown_key(c, t, kn);
			continue;
		}
		if (val->type != YAML_SCALAR_NODE || pl_is_null(val)) {
			if (a >= 0)
				pl_err_node(c, val, "'%s' must be one %s name, not %s", name, name,
					    pl_node_kind(val));
			else
				pl_err_node(c, val, "'%s' must be a single value, not %s", name,
					    pl_node_kind(val));
			continue;
		}
		char *value = a >= 0 ? pl_value_text(c, val) : sweep_value(c, &sk, val);
		if (!value)
			continue;
		if (a >= 0)
			pl_add_ref(c, (enum plan_axis)a, value, val, true);
		me->kv = xrealloc(me->kv, (me->n_kv + 1) * sizeof(*me->kv));
		me->kv[me->n_kv++] =
		    (struct matrix_kv){ xstrdup(name), value, (int)kn->start_mark.line + 1,
					(int)kn->start_mark.column + 1 };
	}
}

static void parse_zip(struct ctx *c, yaml_node_t *v)
{
	struct matrix_def *d = &c->p->matrix;

	if (v->type != YAML_SEQUENCE_NODE) {
		pl_err_node(c, v, "'zip' must be a list of lists of axes, not %s", pl_node_kind(v));
		return;
	}
	for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top;
	     i++) {
		yaml_node_t *g = pl_node(c, *i);
		if (g->type != YAML_SEQUENCE_NODE) {
			pl_err_node(c, g, "each 'zip' group must be a list of axes, not %s",
				    pl_node_kind(g));
			continue;
		}
		struct matrix_zip z = { .line = (int)g->start_mark.line + 1,
					.col = (int)g->start_mark.column + 1 };
		size_t n_items =
		    (size_t)(g->data.sequence.items.top - g->data.sequence.items.start);
		for (yaml_node_item_t *j = g->data.sequence.items.start;
		     j < g->data.sequence.items.top; j++) {
			yaml_node_t *n = pl_node(c, *j);
			const char *s = pl_scalar(n);
			struct sweep_key sk;
			if (s && pl_is_sweep(s)) {
				if (!sweep_key(c, n, &sk))
					continue;
			} else if (!s || pl_axis_from_name(s) < 0) {
				if (s)
					unknown_axis(c, n, &plan_matrix_keys);
				else
					pl_err_node(c, n, "a 'zip' group lists axis names, not %s",
						    pl_node_kind(n));
				continue;
			}
			z.axes = xrealloc(z.axes, (z.n_axes + 1) * sizeof(*z.axes));
			z.axes[z.n_axes++] = xstrdup(s);
		}
		if (n_items < 2)
			pl_err_node(c, g, "a 'zip' group needs at least two axes");
		d->zips = xrealloc(d->zips, (d->n_zips + 1) * sizeof(*d->zips));
		d->zips[d->n_zips++] = z;
	}
}

void pl_parse_matrix(struct ctx *c, yaml_node_t *key, yaml_node_t *v)
{
	struct plan *p = c->p;
	struct matrix_def *d = &p->matrix;

	/* a later file's matrix replaces an included one whole */
	matrix_def_clear(d);
	free(p->include_run);
	p->include_run = NULL;
	size_t keep = 0;
	for (size_t i = 0; i < c->n_refs; i++) {
		if (c->refs[i].matrix)
			free(c->refs[i].name);
		else
			c->refs[keep++] = c->refs[i];
	}
	c->n_refs = keep;
	c->have_matrix = true;
	c->matrix_pos = pl_node_pos(c, key);
	p->matrix_pos = c->matrix_pos;
	p->matrix_file = c->file;

	if (pl_is_null(v))
		return;
	if (v->type != YAML_MAPPING_NODE) {
		pl_err_node(c, v, "'matrix' must be a mapping, not %s", pl_node_kind(v));
		return;
	}
	_cleanup_free_ bool *skip = pl_check_keys(c, v);
	for (yaml_node_pair_t *i = v->data.mapping.pairs.start; i < v->data.mapping.pairs.top;
	     i++) {
		yaml_node_t *kn = pl_node(c, i->key), *val = pl_node(c, i->value);
		const char *name = pl_scalar(kn);
		if (skip[i - v->data.mapping.pairs.start])
			continue;
		int a = pl_axis_from_name(name);
		struct sweep_key sk;
		if (a >= 0) {
			parse_axis(c, a, NULL, kn, val);
		} else if (pl_is_sweep(name)) {
			if (sweep_key(c, kn, &sk))
				parse_axis(c, -1, &sk, kn, val);
		} else if (STREQ(name, "zip")) {
			parse_zip(c, val);
		} else if (STREQ(name, "exclude") || STREQ(name, "include")) {
			bool inc = STREQ(name, "include");
			if (pl_is_null(val))
				continue;
			if (val->type != YAML_SEQUENCE_NODE) {
				pl_err_node(c, val, "'%s' must be a list of mappings, not %s", name,
					    pl_node_kind(val));
				continue;
			}
			for (yaml_node_item_t *j = val->data.sequence.items.start;
			     j < val->data.sequence.items.top; j++) {
				yaml_node_t *ev = pl_node(c, *j);
				if (ev->type != YAML_MAPPING_NODE) {
					pl_err_node(c, ev,
						    "each '%s' entry must be a mapping, not %s",
						    name, pl_node_kind(ev));
					continue;
				}
				struct matrix_entry me = { 0 };
				if (inc) {
					p->include_run =
					    xrealloc(p->include_run,
						     (d->n_include + 1) * sizeof(*p->include_run));
					struct plan_run *r = &p->include_run[d->n_include];
					memset(r, 0, sizeof(*r));
					key_defaults(&plan_run_keys, r);
					parse_matrix_entry(c, ev, true, &me, r);
					d->include = xrealloc(d->include, (d->n_include + 1) *
									      sizeof(*d->include));
					d->include[d->n_include++] = me;
				} else {
					parse_matrix_entry(c, ev, false, &me, NULL);
					d->exclude = xrealloc(d->exclude, (d->n_exclude + 1) *
									      sizeof(*d->exclude));
					d->exclude[d->n_exclude++] = me;
				}
			}
		} else {
			unknown_axis(c, kn, &plan_matrix_keys);
		}
	}
}
