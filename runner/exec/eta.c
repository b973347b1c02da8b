/* SPDX-License-Identifier: MIT */
/*
 * The run's estimated time to the end (exec-int.h exec_eta), from what it has measured: the
 * mean wall time of a boot (boot and teardown) and, per cell, the mean wall time of its runs
 * (everything do_run does but the boot: reset, cache drop, the phases, verify, cleanup). A cell
 * that has not run yet costs what the cells measured so far that move the same dataset with the
 * same method cost a run, else those of the same method, else of the same dataset, else all.
 * What is left: the runs each cell still takes (repeat.min; under run.boots the blocks the stop
 * rule is expected to take, exec_planned_blocks(), at the runs per boot decided so far), and
 * the boots those need (run.vm and the blocks say how many).
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

static bool live(const struct xcell *c)
{
	return c->active && !c->done;
}

/* Whether VM group g still has a cell to run. */
static bool group_live(const struct exec *x, size_t g)
{
	for (size_t i = 0; i < x->n_cells; i++)
		if (live(&x->cells[i]) && x->cells[i].group == x->groups[g])
			return true;
	return false;
}

/* The mean wall time of a boot with its teardown; NAN before the first. */
static double boot_cost(const struct exec *x)
{
	return x->res->boots ? (x->res->time.boots + x->res->time.teardown) / x->res->boots : NAN;
}

/* Seconds a block takes: measured over the whole blocks so far, else (in the first) every
 * live cell's runs of a boot at its measured run cost plus a boot per group; NAN: unknown. */
static double block_cost(const struct exec *x)
{
	const struct result_design *d = &x->r->design;
	if (d->blocks > 0)
		return secs(x->blocks_end - x->blocks_t0) / d->blocks;
	double s = 0;
	for (size_t i = 0; i < x->n_cells; i++)
		if (live(&x->cells[i]))
			s += (double)d->runs_per_boot * run_cost(x, &x->cells[i]);
	for (size_t g = 0; g < x->n_groups; g++)
		if (group_live(x, g))
			s += boot_cost(x);
	return s;
}

/* The blocks run.budget lets the run take: the block running ends a mean block after the last
 * one did, or now if it is later than that; the blocks after it, at the mean block time, until
 * one ends past the budget. UINT64_MAX: no budget, or no block cost known yet. */
static uint64_t budget_blocks(const struct exec *x)
{
	double cost = block_cost(x);
	if (!(x->rule.budget > 0) || !isfinite(cost) || !(cost > 0))
		return UINT64_MAX;
	uint64_t done = x->r->design.blocks;
	double end = secs(x->blocks_end - x->blocks_t0);
	if (x->block > 0 && (uint64_t)x->block > done) {
		double now = secs(now_ns() - x->blocks_t0);
		end += cost;
		if (now > end)
			end = now;
		done = (uint64_t)x->block;
	}
	if (end >= x->rule.budget)
		return done;
	return done + (uint64_t)ceil((x->rule.budget - end) / cost);
}

/*
 * The stop rule (design_stop) projected: the half-width shrinks as 1/sqrt(blocks), so the
 * blocks `until` needs are blocks * (halfwidth / until)^2 (every block until one is measured:
 * boots.max); the budget stops after the first block that ends past it (budget_blocks());
 * boots.max caps both. Never fewer than boots.min or the block running.
 */
uint64_t exec_planned_blocks(const struct exec *x)
{
	const struct result_design *d = &x->r->design;
	const struct design_rule *rule = &x->rule;
	uint64_t now = x->block > 0 ? (uint64_t)x->block : 1;
	if (d->blocks > now)
		now = d->blocks;
	uint64_t lo = rule->min > now ? rule->min : now, want = rule->max;
	if (rule->until > 0 && d->blocks >= 2 && isfinite(d->halfwidth)) {
		double r = d->halfwidth / rule->until;
		double b = ceil((double)d->blocks * r * r);
		if (b < (double)want)
			want = b < 1 ? 1 : (uint64_t)b;
	}
	uint64_t b = budget_blocks(x);
	if (b < want)
		want = b;
	return want > lo ? want : lo;
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

/* The boots still to come: every block boots each live group once; otherwise a live group
 * without a guest boots once (per run under run.vm: per-run, counted with the runs). */
static uint64_t boots_left(const struct exec *x, uint64_t per_run_boots)
{
	uint64_t groups = 0, unbooted = 0;
	for (size_t g = 0; g < x->n_groups; g++)
		if (group_live(x, g)) {
			groups++;
			unbooted += !x->groups[g]->guest;
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
		double boot = boot_cost(x);
		if (isnan(boot))
			return NAN;
		left += (double)boots * boot;
	}
	return left;
}
