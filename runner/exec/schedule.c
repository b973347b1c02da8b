/* SPDX-License-Identifier: MIT */
/*
 * The scheduler (exec-int.h): the order in which the cells of a VM group take their runs
 * (ferry(1) run.order: sequential, interleaved round-robin, shuffled with a seed), and the repeat
 * rule that ends a cell (warmups first and never counted, then measured runs until the rule or
 * the cell timeout stops it).
 */
#include "exec-int.h"
#include "stats.h"

/* Whether the cell wants another run (and records why it stopped). */
static bool cell_wants_run(struct exec *x, struct xcell *c)
{
	if (c->done)
		return false;
	if (c->warm_done < c->pc.run.warmup)
		return true;
	const struct plan_repeat *rp = &c->pc.run.repeat;
	struct stats_repeat_rule rule = {
		.min = rp->min ? rp->min : 1,
		.max = rp->max < rp->min ? rp->min : rp->max,
		.until_cv = rp->until_cv / 100.0,
		.budget = secs(rp->budget),
	};
	enum stats_stop s = stats_repeat_next(c->samples, c->n_samples, &rule, c->measured_s);
	if (s != STATS_CONTINUE) {
		rcell(x, c)->stop_reason = (int)s;
		return false;
	}
	/* a cell that takes turns with others counts only its own steps */
	return !cell_timed_out(x, c, c->across ? c->own_ns : now_ns() - c->started_ns);
}

bool cell_timed_out(struct exec *x, struct xcell *c, uint64_t took)
{
	if (!c->pc.run.cell_timeout || took <= c->pc.run.cell_timeout)
		return false;
	_cleanup_free_ char *lim = format_duration(c->pc.run.cell_timeout);
	struct result_error *e = result_cell_add_error(
	    rcell(x, c), ERROR_TIMEOUT, "cell took longer than its timeout %s after %u runs", lim,
	    c->runs_done);
	e->run = -1;
	e->phase = -1;
	return true;
}

/* Whether cell c takes another run; a cell that does not is finished here. */
bool cell_next(struct exec *x, struct xcell *c)
{
	cell_begin(x, c);
	if (!cell_wants_run(x, c)) {
		finish_cell(x, c);
		return false;
	}
	return true;
}

/* The next run of cell c (cell_next() said it wants one). Returns false when the cell is over.
 */
bool cell_run(struct exec *x, struct xcell *c)
{
	int rc = do_run(x, c);
	if (run_interrupted()) {
		x->stop = true;
		return false;
	}
	if (rc < 0 && exec_host_lost(x))
		return false; /* the host's fault: the cell stays pending (exec_hosts retries it) */
	if (rc < 0) {
		finish_cell(x, c);
		return false;
	}
	if (c->pc.run.vm == PLAN_VM_PER_RUN)
		group_destroy(x, c->group);
	return true;
}

/* One step for cell c: a run, or finishing it. Returns false when the cell is over. */
static bool cell_step(struct exec *x, struct xcell *c)
{
	return cell_next(x, c) && cell_run(x, c);
}

/* A seeded Fisher-Yates shuffle (xorshift64), the same order for the same seed everywhere. */
void shuffle(size_t *a, size_t n, uint64_t seed)
{
	uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
	for (size_t i = n; i > 1; i--) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		size_t j = (size_t)(s % i);
		size_t t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

/* Run the cells idx[0..n) in the plan's order (that of the first). */
static void run_cells(struct exec *x, size_t *idx, size_t n)
{
	const struct plan_run *first = &x->cells[idx[0]].pc.run;
	if (first->order == PLAN_ORDER_SHUFFLED)
		shuffle(idx, n, first->seed);
	if (first->order == PLAN_ORDER_INTERLEAVED) {
		bool any = true;
		while (any && !x->stop) {
			any = false;
			for (size_t i = 0; i < n && !x->stop; i++)
				if (!x->cells[idx[i]].done)
					any |= cell_step(x, &x->cells[idx[i]]);
		}
	} else {
		for (size_t i = 0; i < n && !x->stop; i++)
			while (!x->stop && cell_step(x, &x->cells[idx[i]]))
				;
	}
}

/*
 * Run the cells of group g. A group may hold cells of several target disks (cells.c disk_key):
 * the cells of each disk run together, in the order they would have on a guest of their own,
 * the disks in the order of their first cells, so that the guest switches its target once per
 * disk (machine_reset's disk), never per run.
 */
void run_group(struct exec *x, struct xgroup *g)
{
	_cleanup_free_ size_t *idx = xcalloc(x->n_cells, sizeof(*idx));
	_cleanup_free_ size_t *ord = xcalloc(x->n_cells, sizeof(*ord));
	_cleanup_free_ bool *taken = xcalloc(x->n_cells, sizeof(*taken));
	size_t n = 0;
	for (size_t i = 0; i < x->n_cells; i++)
		if (x->cells[i].active && !x->cells[i].done && x->cells[i].group == g)
			idx[n++] = i;
	for (size_t i = 0, k = 0; i < n && !x->stop; i++) {
		if (taken[i])
			continue;
		size_t from = k;
		for (size_t j = i; j < n; j++)
			if (!taken[j] &&
			    machine_disk_same(x->cells[idx[i]].pc.disk, x->cells[idx[j]].pc.disk)) {
				taken[j] = true;
				ord[k++] = idx[j];
			}
		run_cells(x, ord + from, k - from);
	}
	/* a cell may still be open when the loop stopped early */
	group_destroy(x, g);
}
