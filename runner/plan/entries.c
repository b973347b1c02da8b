/* SPDX-License-Identifier: MIT */
/* What is read from one entry beyond its keys: the rules table over it (rules.c), criteria
 * bounds in the metric's unit, ranges within one section, and the names it refers to
 * (resolved once every file is merged). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "methods/method.h"
#include "plan-parse.h"
#include "results.h"
#include "units.h"

void pl_add_ref(struct ctx *c, enum plan_axis axis, const char *name, const yaml_node_t *n,
		bool matrix)
{
	c->refs = xgrow(c->refs, &c->cap_refs, c->n_refs + 1, sizeof(*c->refs));
	c->refs[c->n_refs++] = (struct ref){ axis, xstrdup(name), pl_node_pos(c, n), matrix };
}

/* regression.control: AXIS=VALUE,... of the matrix's axes, each value an entry of its section
 * (resolved with the other references). */
static void control_refs(struct ctx *c, const char *sel, const yaml_node_t *n)
{
	_cleanup_free_ char *dup = xstrdup(sel);
	size_t items = 0;
	for (char *sv = NULL, *t = strtok_r(dup, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
		char *eq = strchr(t, '=');
		items++;
		if (!eq || eq == t || !eq[1]) {
			pl_err_node(c, n,
				    "regression.control '%s': expected AXIS=VALUE[,AXIS=VALUE...], "
				    "for example dataset=small",
				    sel);
			return;
		}
		*eq = '\0';
		int a = 0;
		while (a < PLAN_N_AXES && !STREQ(plan_axis_name((enum plan_axis)a), t))
			a++;
		if (a == PLAN_N_AXES) {
			pl_err_node(c, n,
				    "regression.control: unknown axis '%s' (expected vm, disk, "
				    "dataset or method)",
				    t);
			return;
		}
		pl_add_ref(c, (enum plan_axis)a, eq + 1, n, false);
	}
	if (!items)
		pl_err_node(c, n, "regression.control is empty: name a cell as AXIS=VALUE,...");
}

/* The vms a method entry's own options name (KEY_VM_PRIVATE), resolved once every file is read
 * (check_refs in plan.c). */
static void method_vm_refs(struct ctx *c, const struct plan_method *m, const yaml_node_t *map)
{
	const struct method_ops *ops = method_of(m);
	const struct key_table *t = ops ? ops->options : NULL;
	for (size_t i = 0; t && i < t->n_keys; i++) {
		const struct key_def *k = &t->keys[i];
		if (!(k->flags & KEY_VM_PRIVATE) || k->type != KEY_STRING)
			continue;
		const char *name = *(char *const *)(const void *)(m->opts.bytes + k->offset);
		const yaml_node_t *at = pl_lookup(c, map, k->name, NULL);
		if (!name || !at)
			continue;
		pl_add_ref(c, PLAN_AXIS_VM, name, at, false);
		c->refs[c->n_refs - 1].private_by = xasprintf("methods.%s.%s", m->e.name, k->name);
	}
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

/* The block keys (run.boots and what goes with it) are about the whole run, never some cells. */
static const char *const block_keys[] = { "boots", "runs_per_boot", "until", "budget" };

static void check_blocks(struct ctx *c, struct plan_run *r, const yaml_node_t *map,
			 const yaml_node_t *owner)
{
	const struct key_table *t = &plan_run_keys;
	const yaml_node_t *boots = pl_key_node(c, map, "boots", owner);
	if (key_is_set(&plan_boots_keys, &r->boots, "max") && r->boots.max < r->boots.min)
		pl_err_node(c, boots, "'boots' range is empty: min is larger than max");
	if (r->boots.max < r->boots.min)
		r->boots.max = r->boots.min;
	if (r->boots.max < 3)
		pl_warn_node(c, boots,
			     "run.boots allows at most %llu block%s: every comparison of cells "
			     "has fewer than 3 boots a side and is rarely conclusive",
			     (unsigned long long)r->boots.max, r->boots.max == 1 ? "" : "s");
	if (key_is_set(t, r, "repeat"))
		pl_err_node(c, pl_key_node(c, map, "repeat", owner),
			    "'run.repeat' and 'run.boots' both say how often a cell runs: with "
			    "blocks, run.runs_per_boot says how many runs each boot takes");
	if (key_is_set(t, r, "vm") && r->vm == PLAN_VM_PER_RUN)
		pl_err_node(c, pl_key_node(c, map, "vm", owner),
			    "'run.vm: per-run' contradicts 'run.boots': a block boots every VM "
			    "configuration once and its cells take their runs in that boot");
	const char *s = r->runs_per_boot;
	r->rpb = 0;
	if (!s || STREQ(s, "auto"))
		return;
	unsigned long long n =
	    *s && strspn(s, "0123456789") == strlen(s) && strlen(s) < 6 ? strtoull(s, NULL, 10) : 0;
	if (n >= 1 && n <= PLAN_RUNS_PER_BOOT_MAX)
		r->rpb = (unsigned)n;
	else
		pl_err_node(c, pl_key_node(c, map, "runs_per_boot", owner),
			    "'runs_per_boot' must be a whole number from 1 to %d or auto, not '%s'",
			    PLAN_RUNS_PER_BOOT_MAX, s);
}

static void check_run(struct ctx *c, struct plan_run *r, const yaml_node_t *map,
		      const yaml_node_t *owner)
{
	bool top = r == &c->p->run;
	for (size_t i = 0; i < sizeof(block_keys) / sizeof(block_keys[0]); i++) {
		if (!key_is_set(&plan_run_keys, r, block_keys[i]))
			continue;
		if (!top)
			pl_err_node(c, pl_key_node(c, map, block_keys[i], owner),
				    "'run.%s' is about the whole run (its blocks of boots), not "
				    "some cells: set it in the top-level 'run'",
				    block_keys[i]);
		else if (i > 0 && r->boots.min == 0)
			pl_err_node(c, pl_key_node(c, map, block_keys[i], owner),
				    "'run.%s' needs blocks: set run.boots (at least 1)",
				    block_keys[i]);
	}
	if (top && r->boots.min > 0)
		check_blocks(c, r, map, owner);
}

void pl_check_entry(struct ctx *c, const struct key_table *t, void *obj, const yaml_node_t *map,
		    const yaml_node_t *owner)
{
	if (t == &plan_run_keys) {
		check_run(c, obj, map, owner);
		return;
	}
	if (t == &plan_vm_keys) {
		pl_resolve_vm(obj);
		pl_check_entry_rules(c, RULE_VM, obj, map, owner);
	} else if (t == &plan_disk_keys) {
		pl_check_entry_rules(c, RULE_DISK, obj, map, owner);
	} else if (t == &plan_dataset_keys) {
		pl_check_entry_rules(c, RULE_DATASET, obj, map, owner);
	} else if (t == &plan_method_keys) {
		pl_check_entry_rules(c, RULE_METHOD, obj, map, owner);
		method_vm_refs(c, obj, map);
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
	} else if (t == &plan_regression_keys) {
		struct plan_regression *rg = obj;
		for (size_t i = 0; i < rg->n_gate; i++)
			if (!plan_metric_name_ok(rg->gate[i]))
				pl_err_node(
				    c, pl_lookup(c, map, "gate", NULL),
				    "unknown gate metric '%s' (expected total, throughput, "
				    "files_per_s, phase.NAME or a metric of ferry(1) METRICS)",
				    rg->gate[i]);
		if (rg->control)
			control_refs(c, rg->control, pl_lookup(c, map, "control", NULL));
		if (rg->confirm > 0 && rg->confirm < PLAN_CONFIRM_MIN)
			pl_err_node(c, pl_lookup(c, map, "confirm", NULL),
				    "regression.confirm %" PRIu64
				    " cannot confirm anything: a rerun "
				    "needs at least %d blocks to be tested (0 is no rerun)",
				    rg->confirm, PLAN_CONFIRM_MIN);
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
