/* SPDX-License-Identifier: MIT */
/* The executor's entry point (exec.h): setup, the cells to run, the groups in turn, teardown. */
#include <signal.h>

#include "exec-int.h"

/* The results' plan section and the provenance of this host and machine. */
void results_start(struct exec *x)
{
	size_t len = 0;
	_cleanup_free_ char *text = read_file(x->o->plan_path, &len);
	results_set_plan(x->r, x->p->name, x->o->plan_path, text ? text : "", text ? len : 0);
	/* the plan's control cell, for a `ferry compare` of this file that names none */
	free(x->r->plan.control);
	x->r->plan.control = x->p->regression.control ? xstrdup(x->p->regression.control) : NULL;
	/* which slice of the cells this file holds, for `ferry merge` */
	x->r->shard_k = x->o->shard_n ? x->o->shard_k : 0;
	x->r->shard_n = x->o->shard_n;
}

static void provenance(struct exec *x)
{
	struct result_provenance *pv = &x->r->provenance;
	_cleanup_free_ char *err = NULL;
	results_gather_host(pv, &err);
	machine_describe(x->machine, NULL, pv);
	if (!pv->started_ms)
		pv->started_ms = results_now_ms();
}

/* The cell's entry in the results: found again on --resume, else new with its parameters. */
static struct result_cell *results_entry(struct exec *x, size_t i, const struct plan_cell *pc)
{
	struct result_cell *rc = results_find_cell(x->r, pc->id);
	if (rc) {
		result_cell_reset(rc);
		return rc;
	}
	rc = results_add_cell(x->r, pc->id);
	for (size_t j = 0; j < matrix_cell_n_params(x->m, i); j++)
		result_cell_add_axis(rc, matrix_cell_key(x->m, i, j),
				     matrix_cell_value(x->m, i, j));
	rc->params = cell_params(x, i, pc);
	return rc;
}

/* Which cells run: this shard's, less those an earlier results file has finished (--resume). */
void select_cells(struct exec *x)
{
	const struct exec_opts *o = x->o;
	size_t n = matrix_n_cells(x->m);
	x->cells = xcalloc(n, sizeof(*x->cells));
	x->n_cells = n;
	for (size_t i = 0; i < n; i++) {
		struct xcell *c = &x->cells[i];
		c->index = i;
		plan_cell(x->p, x->m, i, &c->pc);
		if (o->shard_n && !shard_contains(i, o->shard_k, o->shard_n))
			continue;
		if (o->only && !o->only[i])
			continue;
		struct result_cell *rc = results_find_cell(x->r, c->pc.id);
		if (rc && o->resume && result_cell_finished(rc, o->rerun_failed))
			continue;
		rc = results_entry(x, i, &c->pc);
		c->rc = (size_t)(rc - x->r->cells);
		c->active = true;
		x->n_active++;
	}
}

/* A cell cut short by an interrupt or --fail-fast stays pending, without partial runs. */
static void reset_unfinished(struct exec *x)
{
	for (size_t i = 0; i < x->n_cells; i++) {
		struct xcell *c = &x->cells[i];
		if (c->active && !c->done) {
			result_cell_reset(rcell(x, c));
			if (c->started_ns)
				rcell(x, c)->started_ms = 0;
		}
	}
}

static void teardown(struct exec *x)
{
	for (size_t i = 0; i < x->n_groups; i++)
		group_destroy(x, x->groups[i]);
	for (size_t i = 0; i < x->n_cells; i++)
		cell_free(&x->cells[i]);
	units_free(x);
	for (size_t i = 0; i < x->n_groups; i++)
		group_free(x->groups[i]);
	free(x->groups);
	free(x->cells);
	machine_close(x->machine);
	_cleanup_free_ char *cerr = NULL;
	if (run_close(x->run, &cerr) < 0)
		exec_error(x->o, "cleanup: %s", cerr);
}

int exec_plan(const struct plan *p, const struct matrix *m, const struct exec_opts *o,
	      struct results **out, struct exec_result *res, char **err)
{
	if (o->n_hosts > 1)
		return exec_hosts(p, m, o, out, res, err);
	struct exec X = { .p = p, .m = m, .o = o, .res = res }, *x = &X;
	*res = (struct exec_result){ 0 };
	x->t0 = now_ns();
	x->r = o->resume ? o->resume : results_new();
	x->last_boot = results_max_boot(x->r); /* a resumed file keeps its boot ids unique */
	*out = x->r;
	results_start(x);
	x->run = run_open(err);
	if (!x->run)
		return -1;
	machine_open_fn open = o->machine_open ? o->machine_open : machine_libvirt_open;
	x->machine = open(x->run, o->connect ? o->connect : p->connect, o->machine_data, err);
	if (!x->machine) {
		run_close(x->run, NULL);
		return -1;
	}
	provenance(x);
	select_cells(x);
	write_results(x);
	uint64_t t = now_ns();
	res->time.setup = secs(t - x->t0);
	for (size_t i = 0; i < x->n_cells && !run_interrupted(); i++)
		if (x->cells[i].active)
			prepare_cell(x, &x->cells[i]);
	res->time.datasets = secs(now_ns() - t);
	order_units(x);
	if (p->run.boots.min > 0)
		run_blocks(x);
	else
		for (size_t i = 0; i < x->n_units && !x->stop && !run_interrupted(); i++)
			run_unit(x, &x->units[i]);

	res->signal = run_interrupted();
	reset_unfinished(x);
	t = now_ns();
	double destroyed = res->time.teardown;
	/* the guests teardown() destroys count once: group_destroy() adds them too */
	teardown(x);
	res->time.teardown = destroyed + secs(now_ns() - t);
	res->wall_s = secs(now_ns() - x->t0);
	write_results(x);
	results_count_status(x->r, res->counts);
	return 0;
}
