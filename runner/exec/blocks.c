/* SPDX-License-Identifier: MIT */
/*
 * A run as a sequence of blocks (ferry(1) run.boots; DESIGN.md "a boot is the sample"). In every
 * block each VM group (the cells of one VM configuration, as run.vm shared groups them) boots a
 * fresh guest once, the groups in an order shuffled anew each block from run.seed, and every
 * cell of the group takes its runs per boot in that boot (round-robin, the cells of one target
 * disk together); the guest is destroyed at the end of its turn. Paired by block, differences
 * between configurations cancel the host's drift over time.
 *
 * runs_per_boot: auto runs a pilot of the first 2 blocks at PILOT_RUNS runs per boot, estimates
 * the within- and between-boot variance of the log total and the costs of a boot and of a run,
 * and sets runs per boot by Kalibera and Jones (design.h). Blocks go on until the stop rule
 * (design_stop: half-width, cap, budget) says enough; the results' design records all of it.
 * Warmups are per cell, before its first measured run (in the first block).
 */
#include <math.h>

#include "design.h"
#include "exec-int.h"

#define PILOT_BLOCKS 2
#define PILOT_RUNS   3

/* splitmix64: a block's shuffle seed from the plan's seed and the block number */
static uint64_t block_seed(uint64_t seed, uint64_t block)
{
	uint64_t z = seed + block * 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* One run of c in the current boot; false when the cell is over or the run must stop.
 * run.cell_timeout holds as without blocks: it counts the cell's own runs (the boot its run
 * waited for included) over all blocks, and a cell past it leaves with a timeout error. */
static bool block_run(struct exec *x, struct xcell *c)
{
	cell_begin(x, c);
	if (cell_timed_out(x, c, c->own_ns)) {
		finish_cell(x, c);
		return false;
	}
	uint64_t t0 = now_ns();
	int rc = do_run(x, c);
	c->own_ns += now_ns() - t0;
	if (run_interrupted()) {
		x->stop = true;
		return false;
	}
	if (rc < 0 && exec_host_lost(x)) {
		x->stop = true; /* the host's fault: the cells stay pending */
		return false;
	}
	if (rc < 0) {
		finish_cell(x, c); /* a failed cell leaves the blocks */
		return false;
	}
	return true;
}

/* The cells of group g that still run, those of one target disk together (run_group's order). */
static size_t group_cells(struct exec *x, const struct xgroup *g, struct xcell **out)
{
	_cleanup_free_ bool *taken = xcalloc(x->n_cells + 1, sizeof(*taken));
	size_t n = 0;
	for (size_t i = 0; i < x->n_cells; i++) {
		struct xcell *c = &x->cells[i];
		if (taken[i] || !c->active || c->done || c->group != g)
			continue;
		for (size_t j = i; j < x->n_cells; j++) {
			struct xcell *d = &x->cells[j];
			if (!taken[j] && d->active && !d->done && d->group == g &&
			    machine_disk_same(c->pc.disk, d->pc.disk)) {
				taken[j] = true;
				out[n++] = d;
			}
		}
	}
	return n;
}

/* Group g's turn in a block: one fresh boot, `runs` measured runs of each of its cells. */
static void group_turn(struct exec *x, struct xgroup *g, unsigned runs, size_t *n_runs)
{
	_cleanup_free_ struct xcell **cells = xcalloc(x->n_cells + 1, sizeof(*cells));
	size_t n = group_cells(x, g, cells);
	for (size_t i = 0; i < n && !x->stop; i++) {
		/* the cells of one disk take turns, run by run; warmups first */
		size_t end = i + 1;
		while (end < n && machine_disk_same(cells[i]->pc.disk, cells[end]->pc.disk))
			end++;
		for (unsigned k = 0; k < runs && !x->stop; k++)
			for (size_t j = i; j < end && !x->stop; j++) {
				struct xcell *c = cells[j];
				while (!c->done && !x->stop && c->warm_done < c->pc.run.warmup)
					if (!block_run(x, c))
						break;
				if (!c->done && !x->stop && block_run(x, c))
					(*n_runs)++;
			}
		i = end - 1;
	}
	group_destroy(x, g); /* the next block boots a fresh guest */
}

/* The cells that take part (active, not finished): into *out, caller frees. */
static size_t live_cells(struct exec *x, const struct result_cell ***out)
{
	const struct result_cell **a = xcalloc(x->n_cells + 1, sizeof(*a));
	size_t n = 0;
	for (size_t i = 0; i < x->n_cells; i++)
		if (x->cells[i].active && !x->cells[i].done)
			a[n++] = rcell(x, &x->cells[i]);
	*out = a;
	return n;
}

/* After the pilot: the variance components, the costs and the runs per boot they call for. */
static unsigned pilot_choice(struct exec *x, double boot_s, double run_s)
{
	struct result_design *d = &x->r->design;
	_cleanup_free_ const struct result_cell **cells = NULL;
	size_t n = live_cells(x, &cells);
	design_components(cells, n, &d->within_var, &d->between_var);
	d->boot_s = boot_s;
	d->run_s = run_s;
	unsigned r = design_runs_per_boot(boot_s, run_s, d->within_var, d->between_var,
					  DESIGN_AUTO_MAX, PILOT_RUNS);
	progress_line(x->o,
		      "pilot of %u blocks: within-boot variance %.3g, between-boot %.3g (log "
		      "total), a boot %.2f s, a run %.2f s: %u run%s per boot",
		      d->pilot_blocks, d->within_var, d->between_var, boot_s, run_s, r,
		      r == 1 ? "" : "s");
	return r;
}

/* The groups that have cells to run, in the plan's order. */
static size_t live_groups(struct exec *x, struct xgroup **out)
{
	size_t n = 0;
	for (size_t i = 0; i < x->n_groups; i++)
		for (size_t j = 0; j < x->n_cells; j++)
			if (x->cells[j].active && !x->cells[j].done &&
			    x->cells[j].group == x->groups[i]) {
				out[n++] = x->groups[i];
				break;
			}
	return n;
}

/* Block b: every live group's turn in a seeded shuffled order. Returns the runs it took. */
static size_t run_block(struct exec *x, unsigned b, unsigned runs)
{
	_cleanup_free_ struct xgroup **groups = xcalloc(x->n_groups + 1, sizeof(*groups));
	_cleanup_free_ size_t *order = xcalloc(x->n_groups + 1, sizeof(*order));
	size_t n = live_groups(x, groups), n_runs = 0;
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	shuffle(order, n, block_seed(x->p->run.seed, b));
	x->block = b;
	for (size_t i = 0; i < n && !x->stop && !run_interrupted(); i++)
		group_turn(x, groups[order[i]], runs, &n_runs);
	x->block = 0;
	return n_runs;
}

void run_blocks(struct exec *x)
{
	const struct plan_run *run = &x->p->run;
	struct result_design *d = &x->r->design;
	unsigned max =
	    (unsigned)(run->boots.max > run->boots.min ? run->boots.max : run->boots.min);
	struct design_rule rule = { (unsigned)run->boots.min, max, run->until / 100,
				    secs(run->budget) };
	*d = (struct result_design){ .automatic = run->rpb == 0,
				     .until = rule.until,
				     .within_var = NAN,
				     .between_var = NAN,
				     .boot_s = NAN,
				     .run_s = NAN,
				     .halfwidth = NAN };
	unsigned runs = run->rpb ? run->rpb : PILOT_RUNS;
	if (d->automatic) {
		d->pilot_blocks = max < PILOT_BLOCKS ? max : PILOT_BLOCKS;
		d->pilot_runs = runs;
	}
	d->runs_per_boot = runs;
	x->blocks = true;
	x->boots0 = x->res->boots;
	uint64_t t0 = now_ns(), pilot_ns = 0;
	x->rule = rule;
	x->blocks_t0 = x->blocks_end = t0;
	double boots0 = x->res->time.boots + x->res->time.teardown;
	unsigned nboots0 = x->res->boots;
	size_t pilot_runs = 0;
	for (unsigned b = 1; !x->stop && !run_interrupted(); b++) {
		uint64_t tb = now_ns();
		size_t took = run_block(x, b, runs);
		if (x->stop || run_interrupted())
			break;
		d->blocks = b;
		x->blocks_end = now_ns();
		if (b <= d->pilot_blocks) {
			pilot_ns += now_ns() - tb;
			pilot_runs += took;
		}
		if (d->automatic && b == d->pilot_blocks) {
			unsigned nb = x->res->boots - nboots0;
			double boot_s = x->res->time.boots + x->res->time.teardown - boots0;
			boot_s = nb ? boot_s / nb : NAN;
			double run_s =
			    pilot_runs ? (secs(pilot_ns) - boot_s * nb) / (double)pilot_runs : NAN;
			runs = d->runs_per_boot = pilot_choice(x, boot_s, run_s);
		}
		_cleanup_free_ const struct result_cell **cells = NULL;
		size_t n = live_cells(x, &cells);
		d->halfwidth = n ? design_halfwidth(x->r, cells, n) : NAN;
		double elapsed = secs(now_ns() - t0);
		d->stop = (int)design_stop(&rule, b, elapsed, d->halfwidth);
		/* the precision the run has bought so far, by ferry's own rule (bench/precision.sh
		   reads the curve of half-width against time from these lines) */
		if (x->o->verbose && isfinite(d->halfwidth))
			progress_line(x->o,
				      "block %u: widest half-width %.1f%% after %.1f s of blocks",
				      b, 100 * d->halfwidth, elapsed);
		else if (x->o->verbose)
			progress_line(x->o, "block %u: no half-width yet after %.1f s of blocks", b,
				      elapsed);
		if (n == 0 && d->stop == STATS_CONTINUE)
			d->stop = STATS_STOP_MAX; /* every cell failed: nothing left to add */
		if (d->stop != STATS_CONTINUE)
			break;
		write_results(x);
	}
	if (x->stop || run_interrupted())
		return; /* the cells stay pending (exec.c reset_unfinished) */
	if (!d->automatic) {
		/* the variance components the report prints (unknown at 1 run per boot) */
		_cleanup_free_ const struct result_cell **cells = NULL;
		size_t n = live_cells(x, &cells);
		design_components(cells, n, &d->within_var, &d->between_var);
	}
	for (size_t i = 0; i < x->n_cells; i++) {
		struct xcell *c = &x->cells[i];
		if (c->active && !c->done) {
			cell_begin(x, c);
			rcell(x, c)->stop_reason = d->stop;
			finish_cell(x, c);
		}
	}
}
