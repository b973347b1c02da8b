/* SPDX-License-Identifier: MIT */
/*
 * The run's estimated time to the end (exec-int.h exec_eta), from what it has measured: the
 * mean wall time of a boot (boot and teardown) and, per cell, the mean wall time of its runs
 * (everything do_run does but the boot: reset, cache drop, the phases, verify, cleanup). A cell
 * that has not run yet costs what the cells measured so far that move the same dataset with the
 * same method cost a run, else those of the same method, else of the same dataset, else all.
 * What is left: the runs each cell still takes, if no stop rule ends it early (repeat.min, or
 * under run.boots the blocks of boots.min at the runs per boot decided so far), and the boots
 * those need (run.vm and the blocks say how many).
 */
#include <math.h>

#include "exec-int.h"

/* The mean cost of a run of the measured cells that match c (same method and/or dataset). */
static double similar_cost(const struct exec *x, const struct xcell *c, bool method, bool data)
{
	double s = 0;
	unsigned n = 0;
	for (size_t i = 0; i < x->n_cells; i++) {
		const struct xcell *d = &x->cells[i];
		if (!d->n_cost || (method && d->pc.method != c->pc.method) ||
		    (data && d->pc.dataset != c->pc.dataset))
			continue;
		s += d->cost_s;
		n += d->n_cost;
	}
	return n ? s / n : NAN;
}

static double run_cost(const struct exec *x, const struct xcell *c)
{
	if (c->n_cost)
		return c->cost_s / c->n_cost;
	double v = similar_cost(x, c, true, true);
	if (isnan(v))
		v = similar_cost(x, c, true, false);
	if (isnan(v))
		v = similar_cost(x, c, false, true);
	return isnan(v) ? similar_cost(x, c, false, false) : v;
}

uint64_t exec_planned_blocks(const struct exec *x)
{
	uint64_t b = x->p->run.boots.min, now = x->block > 0 ? (uint64_t)x->block : 1;
	return b > now ? b : now;
}

uint64_t exec_planned_runs(const struct exec *x, const struct xcell *c)
{
	const struct plan_run *run = &c->pc.run;
	if (!x->blocks)
		return run->repeat.min ? run->repeat.min : 1;
	const struct result_design *d = &x->r->design;
	uint64_t b = exec_planned_blocks(x);
	if (!d->automatic)
		return b * d->runs_per_boot;
	uint64_t pilot = d->pilot_blocks < b ? d->pilot_blocks : b;
	return pilot * d->pilot_runs + (b - pilot) * d->runs_per_boot;
}

static bool live(const struct xcell *c)
{
	return c->active && !c->done;
}

/* The boots still to come: every block boots each live group once; otherwise a live group
 * without a guest boots once (per run under run.vm: per-run, counted with the runs). */
static uint64_t boots_left(const struct exec *x, uint64_t per_run_boots)
{
	uint64_t groups = 0, unbooted = 0;
	for (size_t g = 0; g < x->n_groups; g++)
		for (size_t i = 0; i < x->n_cells; i++)
			if (live(&x->cells[i]) && x->cells[i].group == x->groups[g]) {
				groups++;
				unbooted += !x->groups[g]->guest;
				break;
			}
	if (!x->blocks)
		return unbooted + per_run_boots;
	uint64_t done = x->res->boots - x->boots0, want = exec_planned_blocks(x) * groups;
	return want > done ? want - done : 0;
}

double exec_eta(const struct exec *x)
{
	double left = 0;
	uint64_t per_run_boots = 0;
	for (size_t i = 0; i < x->n_cells; i++) {
		const struct xcell *c = &x->cells[i];
		if (!live(c))
			continue;
		uint64_t want = exec_planned_runs(x, c),
			 runs = want > c->n_samples ? want - c->n_samples : 0;
		if (c->warm_done < c->pc.run.warmup)
			runs += c->pc.run.warmup - c->warm_done;
		double cost = run_cost(x, c);
		if (isnan(cost))
			return NAN; /* nothing measured yet */
		left += (double)runs * cost;
		if (c->pc.run.vm == PLAN_VM_PER_RUN)
			per_run_boots += runs;
	}
	uint64_t boots = boots_left(x, per_run_boots);
	if (boots) {
		if (!x->res->boots)
			return NAN;
		double boot = (x->res->time.boots + x->res->time.teardown) / x->res->boots;
		left += (double)boots * boot;
	}
	return left;
}
