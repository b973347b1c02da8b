/* SPDX-License-Identifier: MIT */
/*
 * The executor: a scheduler that runs the cells of an expanded plan on a machine (machine.h:
 * libvirt guests, or the fake in tests) and fills the results model. For every cell: supports()
 * of its method (or a skip with the reason), a guest (booted per run, per cell, or shared by
 * every cell with the same VM configuration), and its runs (warmups first, then measured runs
 * until the repeat rule stops), each run timed per phase with CLOCK_MONOTONIC on the host and
 * verified against the dataset manifest. Cells that share a guest run in the plan's order
 * (sequential, interleaved, shuffled); under a guest per cell or per run, interleaved and
 * shuffled cells take turns across their guests (order.c). A failing cell records its error with
 * diagnostics and the executor goes on to the next cell (a broken guest is replaced) unless
 * fail_fast. The results file is rewritten atomically after every cell.
 *
 * Layout of runner/exec/: exec.c (setup, cell selection, teardown), cells.c (a cell's
 * preparation and VM groups), schedule.c (order and repeat rule), order.c (order units: turns
 * across VM configurations), runs.c (one run: reset, phases, timing), record.c (results bookkeeping
 * and progress), criteria.c (pure verdicts).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "machine.h"
#include "plan.h"
#include "results.h"

struct exec_opts {
	const char *plan_path;     /* for the results' plan section */
	const char *connect;       /* libvirt URI; NULL: the plan's, else qemu:///system */
	unsigned shard_k, shard_n; /* 0/0: every cell */
	const char *results_path;  /* rewritten after every cell; NULL: none */
	struct results *resume;    /* an earlier results file (--resume), or NULL */
	bool rerun_failed;
	bool fail_fast;
	bool verbose; /* also report boots, replaced guests and dataset generation */
	/* No drift canary after a block's boots (canary.c): for tests of the schedule alone, whose
	 * thousands of fake boots would each hash 16 MiB (minutes under valgrind). */
	bool no_canary;
	/*
	 * Progress, for the caller to show: the executor never prints. status() gets a one-line
	 * snapshot (cell i/N, run j/k, phase, elapsed, ETA) whenever a phase starts; line() gets
	 * one message per event (a cell finished or skipped, a guest booted; with !live_status
	 * also every finished run, since nothing shows the status); error() gets faults that do
	 * not belong to a cell (the results file could not be written, cleanup failed). Any may
	 * be NULL. Messages have no "ferry: " prefix and no newline.
	 */
	bool live_status;
	void (*status)(void *ud, const char *text);
	void (*line)(void *ud, const char *text);
	void (*error)(void *ud, const char *text);
	void *ud;
	/* The machine the cells run on: NULL means machine_libvirt_open. */
	machine_open_fn machine_open;
	void *machine_data;
	/*
	 * Fan-out (hosts.c): with n_hosts > 1, the cells are spread over these libvirt URIs
	 * (connect is not used): one unit of cells at a time per host, every host at once, each
	 * unit in a child process of its own. NULL/0 (or 1): one host, connect.
	 */
	const char *const *hosts;
	size_t n_hosts;
	/* Only the cells i (matrix index) with only[i] run (a unit of a fan-out); NULL: all. */
	const bool *only;
};

/* What the execution did, for the summary and the exit status. */
struct exec_result {
	size_t counts[STATUS_COUNT]; /* cells of the results by status, at the end */
	int signal;   /* the signal that interrupted the run (run_interrupted), or 0 */
	bool stopped; /* fail_fast stopped the run after a cell that did not pass */
	unsigned boots;
	unsigned switches; /* a shared guest's target switched to another disk (exec_time) */
	/* The machine's connection was lost (the host failed, not a cell): why; the cell that was
	 * running stays pending and the run stops. Empty: no. */
	char host_lost[256];
	unsigned hosts_lost; /* fan-out: hosts that failed during the run */
	double wall_s;       /* from the start to the end */
	double measured_s;   /* sum of prepare+transfer+finalize of every measured run */
	/* Where wall_s went, in seconds (what is left is wall_s minus their sum). */
	struct exec_time {
		double setup;     /* libvirt connection, provenance, run directory */
		double datasets;  /* generating or checking the datasets */
		double kvm_probe; /* the one-time KVM boot probe of accel auto, when it ran */
		double boots;     /* guests booted up to a mounted landing place (less the probe) */
		double resets;    /* before every run: landing place emptied or a fresh disk,
				     caches dropped */
		double switches;  /* before a run: a shared guest's target switched to the
				     run's disk, caches dropped (instead of a boot) */
		double unmeasured; /* prepare+transfer+finalize of warmups and failed runs,
				      and the methods' untimed steps (before_phase) */
		double measured;   /* == measured_s */
		double verify;     /* the verify phase of every run */
		double cleanup;    /* the cleanup phase of every run */
		double teardown;   /* guests destroyed, run directory removed */
		double results;    /* the results file written after every cell */
	} time;
};

/*
 * Run every selected cell of m (from plan_expand(p)). *out receives the results (also when the
 * run was interrupted or failed part-way; caller frees) and *res what happened. Returns 0 when
 * the cells ran (whatever their outcome), -1 when nothing could run: *err says why (caller frees).
 */
int exec_plan(const struct plan *p, const struct matrix *m, const struct exec_opts *o,
	      struct results **out, struct exec_result *res, char **err);

/*
 * The units of a fan-out (hosts.c): cells that must run on one host together get one unit
 * number in unit_of[i] (matrix index; SIZE_MAX where !active[i]): the cells of a shared guest
 * (run.vm shared: same vm and disk; the cells of several disks one guest could switch between
 * are separate units, which hosts run at once), the cells of one rotation (run.vm per-cell or
 * per-run with run.order interleaved or shuffled: same order and seed), else one cell each.
 * Numbered from 0 in the plan's order; returns how many.
 */
size_t exec_host_units(const struct plan *p, const struct matrix *m, const bool *active,
		       size_t *unit_of);

/* A cell's resolved parameters as the results record them (a new JSON object). */
json_t *exec_cell_params(const struct plan *p, const struct matrix *m, size_t i);

/*
 * Whether `earlier` (a results file given to --resume or --rerun-failed) was written by this
 * plan: same plan file hash, and every cell it holds is a cell of m with the same resolved
 * parameters (results_check_resume()). Returns 0, or -1 with *why saying what differs.
 */
int exec_check_resume(const struct plan *p, const struct matrix *m, const char *plan_path,
		      const struct results *earlier, char **why);
