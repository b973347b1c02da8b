/* SPDX-License-Identifier: MIT */
/*
 * Evaluating the rules table (rules.c) three ways:
 *  - entry rules while the plan is read (pl_check_entry_rules: errors and warnings at the key
 *    the rule names, a dotted path inside the entry such as "nic.queues"), and over entries a
 *    sweep resolved (pl_entry_rules_each);
 *  - cell rules over every expanded cell (pl_check_cells: errors at the entry the rule names,
 *    once per distinct message, and the whole-plan check that some cell can run);
 *  - the skip reason of one cell at run time (plan_rules_skip).
 */
#include <string.h>

#include "keys.h"
#include "methods/method.h"
#include "plan-parse.h"
#include "rules-int.h"
#include "strmap.h"

/* ---- evaluation ---------------------------------------------------------------------------- */

static bool applies(const struct plan_rule *r, const struct rule_subject *s)
{
	switch (r->scope) {
	case RULE_VM: return s->vm;
	case RULE_DISK: return s->disk;
	case RULE_DATASET: return s->dataset;
	case RULE_METHOD: return s->method;
	default: return s->vm && s->disk && s->dataset && s->method;
	}
}

/*
 * The rules for an entry or a cell whose method is m (NULL: none) in the order they are checked:
 * scope by scope (vm, disk, dataset, method, cell), the method's own rules of a scope (its file's
 * `rules`) before the table's. Caller frees.
 */
static size_t rules_for(const struct plan_method *m, const struct plan_rule ***out)
{
	const struct method_ops *ops = m ? method_of(m) : NULL;
	size_t n_own = ops ? ops->n_rules : 0, n = 0;
	const struct plan_rule **v = xcalloc(n_plan_rules + n_own + 1, sizeof(*v));
	for (int scope = RULE_VM; scope <= RULE_CELL; scope++) {
		for (size_t i = 0; i < n_own; i++)
			if ((int)ops->rules[i].scope == scope)
				v[n++] = &ops->rules[i];
		for (size_t i = 0; i < n_plan_rules; i++)
			if ((int)plan_rules[i].scope == scope)
				v[n++] = &plan_rules[i];
	}
	*out = v;
	return n;
}

/* A number per rule, for telling messages apart: its row in the table, else after them its row
 * among its method's own. */
static uint32_t rule_tag(const struct plan_rule *r, const struct plan_method *m)
{
	if (r >= plan_rules && r < plan_rules + n_plan_rules)
		return (uint32_t)(r - plan_rules);
	const struct method_ops *ops = method_of(m);
	return (uint32_t)(n_plan_rules + 64 * (size_t)m->type + (size_t)(r - ops->rules));
}

/* -- entry rules while reading: positioned at the key path -- */

struct entry_out {
	struct rule_out o;
	struct ctx *c;
	const yaml_node_t *map, *owner;
};

static void entry_fail(struct rule_out *o, const char *key, char *msg)
{
	struct entry_out *e = (struct entry_out *)(void *)o;
	const yaml_node_t *at = e->owner, *map = e->map;

	/* the deepest key of the path that is written, else the entry */
	for (const char *k = key; k && map;) {
		const char *dot = strchr(k, '.');
		_cleanup_free_ char *seg = dot ? xstrndup(k, (size_t)(dot - k)) : xstrdup(k);
		yaml_node_t *kn = NULL;
		yaml_node_t *v = pl_lookup(e->c, map, seg, &kn);
		if (!kn)
			break;
		at = kn;
		map = v;
		k = dot ? dot + 1 : NULL;
	}
	if (o->rule->kind == RULE_WARN)
		pl_warn_node(e->c, at, "%s", msg);
	else
		pl_err_node(e->c, at, "%s", msg);
	free(msg);
}

void pl_check_entry_rules(struct ctx *c, enum rule_scope scope, const void *entry,
			  const yaml_node_t *map, const yaml_node_t *owner)
{
	struct rule_subject s = { 0 };
	switch (scope) {
	case RULE_VM: s.vm = entry; break;
	case RULE_DISK: s.disk = entry; break;
	case RULE_DATASET: s.dataset = entry; break;
	case RULE_METHOD: s.method = entry; break;
	default: return;
	}
	struct entry_out e = { .o = { .fail = entry_fail }, .c = c, .map = map, .owner = owner };
	_cleanup_free_ const struct plan_rule **rules = NULL;
	size_t n = rules_for(s.method, &rules);
	for (size_t i = 0; i < n; i++) {
		const struct plan_rule *r = rules[i];
		if (r->scope != scope || r->kind == RULE_SKIP)
			continue;
		e.o.rule = r;
		r->check(&s, &e.o);
	}
}

/* -- cell rules over an expanded plan -- */

struct cell_out {
	struct rule_out o;
	const struct plan_cell *cell;
	struct diag_list *diags;
	struct strmap seen; /* messages reported, with the rule as tag: once per pair of entries */
	char **msgs;
	size_t n_msgs, cap_msgs;
	size_t errors;
	char *skip; /* first skip reason of the cell */
};

static const struct plan_entry *entry_of(const struct plan_cell *cell, const char *axis)
{
	if (STREQ(axis, "vm"))
		return &cell->vm->e;
	if (STREQ(axis, "disk"))
		return &cell->disk->e;
	if (STREQ(axis, "dataset"))
		return &cell->dataset->e;
	return &cell->method->e;
}

static void cell_fail(struct rule_out *o, const char *key, char *msg)
{
	struct cell_out *co = (struct cell_out *)(void *)o;
	if (o->rule->kind == RULE_SKIP) {
		if (!co->skip)
			co->skip = msg;
		else
			free(msg);
		return;
	}
	uint32_t tag = rule_tag(o->rule, co->cell->method);
	if (strmap_put(&co->seen, msg, tag, 0) != STRMAP_NONE) {
		free(msg);
		return;
	}
	co->msgs = xgrow(co->msgs, &co->cap_msgs, co->n_msgs + 1, sizeof(*co->msgs));
	co->msgs[co->n_msgs++] = msg;
	const struct plan_entry *at = entry_of(co->cell, key);
	diag_add(co->diags, at->pos.file, at->pos.line, at->pos.col, "%s (first in cell '%s')", msg,
		 co->cell->id);
	co->errors++;
}

size_t pl_check_cells(const struct plan *p, const struct matrix *m, struct diag_list *diags)
{
	struct cell_out co = { .o = { .fail = cell_fail }, .diags = diags };
	size_t n = matrix_n_cells(m), skipped = 0;
	char *first_skip = NULL;
	const char *first_id = NULL;

	strmap_init(&co.seen, 8);
	for (size_t i = 0; i < n; i++) {
		struct plan_cell cell;
		plan_cell(p, m, i, &cell);
		struct rule_subject s = { cell.vm, cell.disk, cell.dataset, cell.method };
		if (!s.vm || !s.disk || !s.dataset || !s.method)
			continue; /* an include entry left it incomplete: reported by plan_expand */
		co.cell = &cell;
		co.skip = NULL;
		_cleanup_free_ const struct plan_rule **rules = NULL;
		size_t n_rules = rules_for(s.method, &rules);
		for (size_t r = 0; r < n_rules; r++) {
			const struct plan_rule *rule = rules[r];
			/* entry errors were reported where the entry is written */
			if (rule->kind == RULE_WARN ||
			    (rule->scope != RULE_CELL && rule->kind != RULE_SKIP))
				continue;
			co.o.rule = rule;
			rule->check(&s, &co.o);
		}
		if (co.skip) {
			skipped++;
			if (!first_skip) {
				first_skip = co.skip;
				first_id = cell.id;
			} else {
				free(co.skip);
			}
		}
	}
	if (n && skipped == n && !co.errors) {
		diag_add(diags, p->matrix_pos.file, p->matrix_pos.line, p->matrix_pos.col,
			 "no cell of the plan can run on any host: every one is skipped (first "
			 "cell '%s': %s)",
			 first_id, first_skip);
		co.errors++;
	}
	free(first_skip);
	strmap_free(&co.seen);
	for (size_t i = 0; i < co.n_msgs; i++)
		free(co.msgs[i]);
	free(co.msgs);
	return co.errors;
}

/* -- one cell at run time -- */

void rules_keep_first(struct rule_out *o, const char *key, char *msg)
{
	char **first = o->ud;
	(void)key;
	if (!*first)
		*first = msg;
	else
		free(msg);
}

char *plan_rules_skip(const struct plan *p, const struct plan_cell *cell)
{
	struct rule_subject s = { cell->vm, cell->disk, cell->dataset, cell->method };
	char *why = NULL;
	struct rule_out o = { .run = true, .fail = rules_keep_first, .ud = &why };

	(void)p;
	_cleanup_free_ const struct plan_rule **rules = NULL;
	size_t n = rules_for(s.method, &rules);
	for (size_t i = 0; i < n && !why; i++) {
		const struct plan_rule *r = rules[i];
		if (r->kind != RULE_SKIP && !(r->flags & RULE_AT_RUN))
			continue;
		if (!applies(r, &s))
			continue;
		o.rule = r;
		r->check(&s, &o);
	}
	return why;
}

/* -- entries a sweep resolved -- */

struct each_out {
	struct rule_out o;
	void (*fail)(void *ud, const char *key, char *msg);
};

static void each_fail(struct rule_out *o, const char *key, char *msg)
{
	struct each_out *e = (struct each_out *)(void *)o;
	e->fail(o->ud, key, msg);
}

void pl_entry_rules_each(enum rule_scope scope, const void *entry,
			 void (*fail)(void *ud, const char *key, char *msg), void *ud)
{
	struct rule_subject s = { 0 };
	switch (scope) {
	case RULE_VM: s.vm = entry; break;
	case RULE_DISK: s.disk = entry; break;
	case RULE_DATASET: s.dataset = entry; break;
	case RULE_METHOD: s.method = entry; break;
	default: return;
	}
	struct each_out e = { .o = { .fail = each_fail, .ud = ud }, .fail = fail };
	_cleanup_free_ const struct plan_rule **rules = NULL;
	size_t n = rules_for(s.method, &rules);
	for (size_t i = 0; i < n; i++) {
		const struct plan_rule *r = rules[i];
		if (r->scope != scope || r->kind != RULE_ERROR)
			continue;
		e.o.rule = r;
		r->check(&s, &e.o);
	}
}
