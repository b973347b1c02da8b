/* SPDX-License-Identifier: MIT */
/* The executor's state, shared by the files of runner/exec/ (exec.h); not an interface. */
#pragma once

#include <stdint.h>
#include <string.h>

#include "dataset.h"
#include "design.h"
#include "exec.h"
#include "keys.h"
#include "units.h"
#include "machine.h"
#include "manifest.h"
#include "methods/method.h"
#include "run.h"
#include "util.h"

/* A VM group: the cells that run on one guest (the same key), booted when one of them runs. */
struct xgroup {
	char *key;
	/* borrowed from the cell that created the group; disk: the target disk the guest boots
	 * with (that of the cell that boots it), then the one machine_reset switched it to */
	struct machine_config cfg;
	struct machine_guest *guest; /* NULL: not booted (or destroyed) */
	int64_t boot;                /* the id of the guest's boot (result_run.boot) */
	bool suspended;              /* the guest is paused while another group measures */
	/* the drift canary of this boot (canary.c), in seconds; 0: not measured */
	double canary_host, canary_guest;
};

/*
 * An order unit (order.c): VM groups whose cells take their runs in one rotation. Under
 * vm: shared a unit is one group (its cells share the guest); under vm: per-cell or per-run
 * with order interleaved or shuffled, the cells with the same run.vm, order and seed take
 * turns across their VM configurations (`across`). A unit runs on one machine, as a whole.
 */
struct xunit {
	struct xgroup **groups;
	size_t n_groups;
	bool across;
};

/* What the executor sampled of the guest during one run (run-metrics.c). */
struct xsamples {
	struct machine_sample before, xfer0, xfer1, after, deleted;
};

struct xcell {
	size_t index; /* in the matrix */
	size_t rc;    /* index into results->cells */
	struct plan_cell pc;
	const struct method_ops *ops;
	struct method_ctx ctx;
	bool ctx_ready;
	struct dataset_spec spec;
	struct dataset_info dinfo;
	struct manifest *man;
	struct method_boot_needs needs;
	struct xgroup *group;
	bool active; /* to run */
	bool done;
	unsigned runs_done, warm_done;
	double *samples;
	size_t n_samples;
	double measured_s;
	uint64_t started_ns;
	char *cell_dir;
	struct xsamples smp; /* the current run's samples (run-metrics.c) */
	bool across;         /* in an order unit across VM configurations (order.c) */
	uint64_t own_ns;     /* there: the time of its own steps (its cell timeout counts these) */
	double cost_s;       /* the wall time of its runs, boots excluded (eta.c) */
	unsigned n_cost;     /* how many runs cost_s adds up */
};

struct exec {
	const struct plan *p;
	const struct matrix *m;
	const struct exec_opts *o;
	struct results *r;
	struct exec_result *res;
	struct run *run;
	struct machine *machine;
	struct xcell *cells;
	size_t n_cells;
	struct xgroup **groups;
	size_t n_groups;
	struct xunit *units; /* order.c order_units() */
	size_t n_units;
	size_t n_active, n_finished;
	bool stop;         /* fail-fast or interrupted */
	int64_t last_boot; /* the highest boot id in the results so far */
	int64_t block;     /* the block running (run.boots, blocks.c), from 1; 0: none */
	bool blocks;       /* the run is a sequence of blocks (blocks.c) */
	unsigned boots0;   /* the boots before the first block */
	/* the blocks' stop rule, when they started and when the last whole block ended
	   (blocks.c), for the ETA's projection of how many blocks the run takes (eta.c) */
	struct design_rule rule;
	uint64_t blocks_t0, blocks_end;
	uint64_t t0;
};

static inline double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

/* exec.c: the results' plan section; the cells to run (this shard's, less those resumed) */
void results_start(struct exec *x);
void select_cells(struct exec *x);

/* hosts.c: a run fanned out over several hosts (exec_opts.hosts); whether the machine's
 * connection was lost after a failure (then the run stops: exec_result.host_lost) */
int exec_hosts(const struct plan *p, const struct matrix *m, const struct exec_opts *o,
	       struct results **out, struct exec_result *res, char **err);
bool exec_host_lost(struct exec *x);

/* record.c: results bookkeeping and progress */
struct result_cell *rcell(struct exec *x, const struct xcell *c);
struct result_error *cell_error(struct exec *x, struct xcell *c, enum result_error_kind kind,
				int run, int phase, const char *msg, const char *agent_msg,
				const char *libvirt_msg);
json_t *cell_params(const struct exec *x, size_t i, const struct plan_cell *pc);
int write_results(struct exec *x);
void finish_cell(struct exec *x, struct xcell *c);
void progress(struct exec *x, const struct xcell *c, const char *phase);
/* eta.c: the seconds the run still needs by the costs measured so far; NAN when unknown */
double exec_eta(const struct exec *x);
/* the measured runs cell c takes in all if no stop rule ends it early (repeat.min; in blocks,
 * boots.min blocks at the runs per boot decided so far) */
uint64_t exec_planned_runs(const struct exec *x, const struct xcell *c);
/* the blocks the run is expected to take: the stop rule's (run.until, run.budget, boots.max)
 * projected from the half-width and the block cost measured so far, at least boots.min and
 * the current one (eta.c) */
uint64_t exec_planned_blocks(const struct exec *x);
/* Format a message for the options' line() or error() callback; nothing when it is unset. */
void progress_line(const struct exec_opts *o, const char *fmt, ...) _printf_(2, 3);
void exec_error(const struct exec_opts *o, const char *fmt, ...) _printf_(2, 3);

/* cells.c: a cell's preparation, skips and VM groups */
void cell_begin(struct exec *x, struct xcell *c);
void prepare_cell(struct exec *x, struct xcell *c);
void cell_free(struct xcell *c);
void group_free(struct xgroup *g);

/* runs.c: one run of a cell, and the guest of its group */
int do_run(struct exec *x, struct xcell *c);
void group_destroy(struct exec *x, struct xgroup *g);

/* run-metrics.c: the executor's metrics of a run (allocation, CPU time) and its record */
void metrics_run_start(struct exec *x, struct xcell *c);
void metrics_transfer(struct exec *x, struct xcell *c, bool end);
void metrics_finalized(struct exec *x, struct xcell *c);
void metrics_reclaim(struct exec *x, struct xcell *c);
void metrics_record(struct exec *x, struct xcell *c, struct result_run *rr);

/* schedule.c: order of the cells of a group and the repeat rule */
void run_group(struct exec *x, struct xgroup *g);
bool cell_next(struct exec *x, struct xcell *c);
/* Whether c, having taken `took` of its own time, is past run.cell_timeout: then its timeout
 * error is recorded (the caller finishes the cell). */
bool cell_timed_out(struct exec *x, struct xcell *c, uint64_t took);
bool cell_run(struct exec *x, struct xcell *c);
void shuffle(size_t *a, size_t n, uint64_t seed);

/* canary.c: the drift canary of a boot in a block (host and guest reference workloads) */
void canary_measure(struct exec *x, struct xgroup *g);

/* blocks.c: a run as a sequence of blocks (run.boots) */
void run_blocks(struct exec *x);

/* order.c: order units (several VM groups in one rotation) */
void order_units(struct exec *x);
void run_unit(struct exec *x, struct xunit *u);
void units_free(struct exec *x);
