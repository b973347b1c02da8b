/* SPDX-License-Identifier: MIT */
/*
 * Order units (exec-int.h): run.order across VM configurations. Under vm: shared the cells of
 * one VM group take turns on its guest (schedule.c run_group). Under vm: per-cell or per-run
 * every cell has a guest of its own, so to interleave or shuffle their runs the cells with the
 * same run.vm, order and seed form one unit and take their runs in a rotation:
 *  - interleaved: round-robin, one run of every cell that still wants one per round;
 *  - shuffled: the same rounds, each in a new seeded order (every cell keeps an equal share of
 *    the early and late runs, and no two rounds need to look alike);
 *  - vm: per-run boots a fresh guest for every run, as without a rotation;
 *  - vm: per-cell keeps every cell's guest booted for the whole rotation and pauses all but the
 *    one that measures (machine_suspend/machine_resume): a paused guest takes no CPU, keeps its
 *    memory and page cache, and boots once. When the machine cannot pause a guest, or the
 *    unit's guests together would take more than half the host's memory, every run boots a
 *    fresh guest instead (the order is kept; result_run.boot shows the boots).
 * Warmups stay per cell, before its first measured run (in the first rounds). A cell whose
 * repeat rule is met (or that failed) leaves the rotation and its guest is destroyed; the others
 * go on. Every guest of the unit is destroyed when the unit ends, however it ends.
 */
#include "exec-int.h"

/* What QEMU and the guest's page tables take beyond the guest's RAM (capacity-plan.c's). */
#define QEMU_OVERHEAD (UINT64_C(256) << 20)

static bool takes_turns(const struct xcell *c)
{
	return c->pc.run.vm != PLAN_VM_SHARED && c->pc.run.order != PLAN_ORDER_SEQUENTIAL;
}

/* The first active cell of group g (under per-cell and per-run, its only one). */
static struct xcell *group_cell(struct exec *x, const struct xgroup *g)
{
	for (size_t i = 0; i < x->n_cells; i++)
		if (x->cells[i].active && x->cells[i].group == g)
			return &x->cells[i];
	return NULL;
}

static void unit_add(struct xunit *u, struct xgroup *g)
{
	u->groups = xrealloc(u->groups, (u->n_groups + 1) * sizeof(*u->groups));
	u->groups[u->n_groups++] = g;
}

void order_units(struct exec *x)
{
	x->units = xcalloc(x->n_groups ? x->n_groups : 1, sizeof(*x->units));
	x->n_units = 0;
	for (size_t i = 0; i < x->n_groups; i++) {
		struct xgroup *g = x->groups[i];
		struct xcell *c = group_cell(x, g);
		struct xunit *u = NULL;
		if (c && takes_turns(c)) {
			c->across = true;
			/* a unit is found at its first group: units keep the order of the groups */
			for (size_t k = 0; k < x->n_units && !u; k++) {
				struct xcell *f = x->units[k].across
						      ? group_cell(x, x->units[k].groups[0])
						      : NULL;
				if (f && f->pc.run.vm == c->pc.run.vm &&
				    f->pc.run.order == c->pc.run.order &&
				    f->pc.run.seed == c->pc.run.seed)
					u = &x->units[k];
			}
		}
		if (!u) {
			u = &x->units[x->n_units++];
			u->across = c && c->across;
		}
		unit_add(u, g);
	}
}

void units_free(struct exec *x)
{
	for (size_t i = 0; i < x->n_units; i++)
		free(x->units[i].groups);
	free(x->units);
	x->units = NULL;
	x->n_units = 0;
}

/* splitmix64: a round's shuffle seed from the plan's seed and the round number */
static uint64_t round_seed(uint64_t seed, uint64_t round)
{
	uint64_t z = seed + (round + 1) * 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* Whether the unit's per-cell guests stay booted and paused; else why not (caller frees). */
static char *why_not_suspend(struct exec *x, struct xcell **cells, size_t n)
{
	if (!machine_can_suspend(x->machine))
		return xstrdup("this machine cannot suspend a guest");
	uint64_t sum = 0, host = machine_host_memory(x->machine);
	for (size_t i = 0; i < n; i++)
		if (!add_u64(sum, cells[i]->pc.vm->memory + QEMU_OVERHEAD, &sum))
			sum = UINT64_MAX;
	if (host && sum > host / 2) {
		/* GiB with one decimal: the host's memory is rarely a round number of units */
		return xasprintf("the %zu guests together would take %.1f GiB, more than half of "
				 "the host's %.1f GiB",
				 n, (double)sum / 1073741824.0, (double)host / 1073741824.0);
	}
	return NULL;
}

/* Pause the guest of c after its turn; a guest that cannot pause is destroyed (it boots again
 * for its next run), so it never runs beside the one measuring. */
static void pause_cell(struct exec *x, struct xcell *c)
{
	struct xgroup *g = c->group;
	if (!g->guest || g->suspended)
		return;
	_cleanup_free_ char *err = NULL;
	uint64_t t = now_ns();
	int rc = machine_suspend(x->machine, g->guest, &err);
	x->res->time.resets += secs(now_ns() - t);
	if (rc == 0) {
		g->suspended = true;
		return;
	}
	progress_line(x->o, "%s: %s; its guest is destroyed and boots again for its next run",
		      c->pc.id, err);
	group_destroy(x, g);
}

/* Resume the guest of c for its turn; one that does not come back is destroyed (the run boots
 * a new one). */
static void wake_cell(struct exec *x, struct xcell *c)
{
	struct xgroup *g = c->group;
	if (!g->guest || !g->suspended)
		return;
	_cleanup_free_ char *err = NULL;
	uint64_t t = now_ns();
	int rc = machine_resume(x->machine, g->guest, &err);
	x->res->time.resets += secs(now_ns() - t);
	if (rc == 0) {
		g->suspended = false;
		return;
	}
	progress_line(x->o, "%s: %s; a new guest boots for its run", c->pc.id, err);
	group_destroy(x, g);
}

static bool others_left(struct xcell **cells, size_t n, const struct xcell *c)
{
	for (size_t i = 0; i < n; i++)
		if (cells[i] != c && !cells[i]->done)
			return true;
	return false;
}

/* The rotation of an order unit across VM configurations. */
static void run_across(struct exec *x, struct xunit *u)
{
	_cleanup_free_ struct xcell **cells = xcalloc(u->n_groups, sizeof(*cells));
	_cleanup_free_ size_t *turn = xcalloc(u->n_groups, sizeof(*turn));
	size_t n = 0;
	for (size_t i = 0; i < u->n_groups; i++) {
		struct xcell *c = group_cell(x, u->groups[i]);
		if (c && !c->done)
			cells[n++] = c;
	}
	if (n == 0)
		return;
	const struct plan_run *run = &cells[0]->pc.run;
	bool keep = run->vm == PLAN_VM_PER_CELL;
	if (keep) {
		_cleanup_free_ char *why = n > 1 ? why_not_suspend(x, cells, n) : NULL;
		keep = !why;
		if (why)
			progress_line(x->o,
				      "%s: %s, so each of its runs boots a fresh guest (the order "
				      "is kept)",
				      cells[0]->pc.id, why);
		else if (x->o->verbose && n > 1)
			progress_line(x->o,
				      "%zu cells take turns, each on its own guest, paused while "
				      "another measures",
				      n);
	}
	for (uint64_t round = 0; !x->stop; round++) {
		size_t left = 0;
		for (size_t i = 0; i < n; i++)
			if (!cells[i]->done)
				turn[left++] = i;
		if (left == 0)
			break;
		if (run->order == PLAN_ORDER_SHUFFLED)
			shuffle(turn, left, round_seed(run->seed, round));
		for (size_t k = 0; k < left && !x->stop; k++) {
			struct xcell *c = cells[turn[k]];
			if (c->done)
				continue;
			/* a cell whose repeat rule is met leaves before its guest wakes */
			bool more = !run_interrupted() && cell_next(x, c);
			if (more && keep)
				wake_cell(x, c);
			if (run_interrupted()) {
				x->stop = true; /* not a new boot for a guest that did not resume */
				break;
			}
			if (more) {
				uint64_t t = now_ns();
				more = cell_run(x, c);
				c->own_ns += now_ns() - t;
			}
			if (!more || !keep)
				group_destroy(x, c->group); /* over, or a guest per run */
			else if (others_left(cells, n, c))
				pause_cell(x, c);
		}
	}
	/* an interrupt or --fail-fast leaves guests of the unit booted */
	for (size_t i = 0; i < u->n_groups; i++)
		group_destroy(x, u->groups[i]);
}

void run_unit(struct exec *x, struct xunit *u)
{
	if (u->across)
		run_across(x, u);
	else
		for (size_t i = 0; i < u->n_groups && !x->stop && !run_interrupted(); i++)
			run_group(x, u->groups[i]);
}
