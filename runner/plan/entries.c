/* SPDX-License-Identifier: MIT */
/* What is read from one entry beyond its keys: the rules table over it (rules.c), criteria
 * bounds in the metric's unit, ranges within one section, and the names it refers to
 * (resolved once every file is merged). */
#include <inttypes.h>
#include <string.h>

#include "plan-parse.h"
#include "results.h"
#include "units.h"

void pl_add_ref(struct ctx *c, enum plan_axis axis, const char *name, const yaml_node_t *n,
		bool matrix)
{
	c->refs = xgrow(c->refs, &c->cap_refs, c->n_refs + 1, sizeof(*c->refs));
	c->refs[c->n_refs++] = (struct ref){ axis, xstrdup(name), pl_node_pos(c, n), matrix };
}

/* `image` implies `guest: image`; the rules table checks the rest (rules.c). */
void pl_resolve_vm(struct plan_vm *vm)
{
	const struct key_table *t = &plan_vm_keys;
	if (key_is_set(t, vm, "image") && !key_is_set(t, vm, "guest"))
		vm->guest = PLAN_GUEST_IMAGE;
}

static void check_criterion(struct ctx *c, struct plan_criterion *cr, const yaml_node_t *map)
{
	if (!key_is_set(&plan_criterion_keys, cr, "metric"))
		return; /* reported already: missing or invalid; units depend on it */
	if (!cr->min_text && !cr->max_text) {
		pl_err_node(c, map, "criterion needs 'min' or 'max'");
		return;
	}
	for (int i = 0; i < 2; i++) {
		const char *text = i ? cr->max_text : cr->min_text;
		const char *which = i ? "max" : "min";
		if (!text)
			continue;
		const yaml_node_t *v = pl_lookup(c, map, which, NULL);
		_cleanup_free_ char *err = NULL;
		double d = 0;
		int r = 0;
		switch (metric_defs[cr->metric].unit_kind) {
		case METRIC_SIZE: {
			uint64_t b = 0;
			r = parse_size(text, &b, &err);
			d = (double)b;
			break;
		}
		case METRIC_RATE: {
			uint64_t b = 0;
			r = parse_throughput(text, &b, &err);
			d = (double)b;
			break;
		}
		case METRIC_FILES: r = parse_double(text, &d, &err); break;
		case METRIC_PERCENT: r = parse_percent(text, &d, &err); break;
		case METRIC_TIME: {
			uint64_t ns = 0;
			r = parse_duration(text, &ns, &err);
			d = (double)ns;
		}
		}
		if (r < 0) {
			pl_err_node(c, v, "'%s': %s", which, err);
			continue;
		}
		if (i) {
			cr->has_max = true;
			cr->max = d;
		} else {
			cr->has_min = true;
			cr->min = d;
		}
	}
	if (cr->has_min && cr->has_max && cr->min > cr->max)
		pl_err_node(c, pl_lookup(c, map, "min", NULL),
			    "criterion can never pass: 'min' is larger than 'max'");
}

/* report.markdown metric: any metric of the table (metrics.h) with values to take a median of
 * (not a spread such as cv) */
static bool plan_metric_name_ok(const char *name)
{
	int m = metric_find(name);
	return m >= 0 && metric_defs[m].kind != METRIC_SPREAD;
}

/* report.markdown rows/cols: an axis or a sweep key (whether the matrix has it: plan_expand) */
static void check_pivot_key(struct ctx *c, const yaml_node_t *map, const char *which,
			    const char *key, struct plan_pos *pos)
{
	yaml_node_t *v = pl_lookup(c, map, which, NULL);
	if (v)
		*pos = pl_node_pos(c, v);
	if (pl_axis_from_name(key) >= 0)
		return;
	struct sweep_key sk;
	_cleanup_free_ char *err = NULL;
	if (!pl_is_sweep(key))
		pl_err_node(c, v,
			    "invalid %s '%s' (expected vm, disk, dataset, method or a swept "
			    "key such as disk.cache)",
			    which, key);
	else if (pl_sweep_resolve(key, &sk, &err) < 0)
		pl_err_node(c, v, "'%s': %s", which, err);
}

void pl_check_entry(struct ctx *c, const struct key_table *t, void *obj, const yaml_node_t *map,
		    const yaml_node_t *owner)
{
	if (t == &plan_vm_keys) {
		pl_resolve_vm(obj);
		pl_check_entry_rules(c, RULE_VM, obj, map, owner);
	} else if (t == &plan_disk_keys) {
		pl_check_entry_rules(c, RULE_DISK, obj, map, owner);
	} else if (t == &plan_dataset_keys) {
		pl_check_entry_rules(c, RULE_DATASET, obj, map, owner);
	} else if (t == &plan_method_keys) {
		pl_check_entry_rules(c, RULE_METHOD, obj, map, owner);
	} else if (t == &plan_criterion_keys) {
		check_criterion(c, obj, map);
	} else if (t == &plan_repeat_keys) {
		struct plan_repeat *r = obj;
		bool min = key_is_set(t, r, "min"), max = key_is_set(t, r, "max");
		if (min && max && r->min > r->max)
			pl_err_node(c, pl_key_node(c, map, "min", owner),
				    "'repeat' range is empty: min is larger than max");
	} else if (t == &plan_where_keys) {
		struct plan_where *w = obj;
		char *names[PLAN_N_AXES] = { w->vm, w->disk, w->dataset, w->method };
		for (int a = 0; a < PLAN_N_AXES; a++)
			if (names[a])
				pl_add_ref(
				    c, (enum plan_axis)a, names[a],
				    pl_lookup(c, map, plan_axis_name((enum plan_axis)a), NULL),
				    false);
	} else if (t == &plan_markdown_keys) {
		struct plan_markdown *md = obj;
		check_pivot_key(c, map, "rows", md->rows, &md->rows_pos);
		check_pivot_key(c, map, "cols", md->cols, &md->cols_pos);
		if (md->metric && !plan_metric_name_ok(md->metric))
			pl_err_node(c, pl_lookup(c, map, "metric", NULL),
				    "unknown metric '%s' (expected total, throughput, files_per_s, "
				    "phase.NAME or a metric of ferry(1) METRICS)",
				    md->metric);
		if (STREQ(md->rows, md->cols))
			pl_err_node(c, pl_key_node(c, map, "cols", owner),
				    "markdown 'rows' and 'cols' must be different axes (both are "
				    "'%s')",
				    md->rows);
	}
}
