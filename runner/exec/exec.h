/* SPDX-License-Identifier: MIT */
/*
 * The executor: runs the cells of an expanded plan against real guests and fills the results
 * model. For every cell: supports() of its method (or a skip with the reason), a VM (booted per
 * run, per cell, or shared by every cell with the same VM configuration), and its runs (warmups
 * first, then measured runs until the repeat rule stops), each run timed per phase with
 * CLOCK_MONOTONIC on the host and verified against the dataset manifest. A failing cell records
 * its error with diagnostics and the executor goes on to the next cell. The results file is
 * rewritten atomically after every cell.
 *
 * Test-only hooks (environment; never set them outside tests):
 *   FERRY_TEST_CORRUPT=RELPATH   between finalize and verify of every measured run, overwrite
 *                                the first byte of RELPATH under the guest landing directory
 *   FERRY_TEST_FAULT=KIND@CELLID[;KIND@CELLID...]
 *                                before the transfer phase of the first run of cell CELLID:
 *                                KIND destroy (virDomainDestroy the domain), killga (kill
 *                                qemu-ga in the guest and keep it from being respawned), fill
 *                                (fill the landing filesystem)
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "dataset.h"
#include "plan.h"
#include "results.h"
#include "vm.h"

/* Exit codes of `ferry run` (ferry(1)). */
enum exec_exit {
	EXEC_EXIT_OK = 0,
	EXEC_EXIT_FAILED = 1, /* a criterion or integrity check failed */
	EXEC_EXIT_PLAN = 2,
	EXEC_EXIT_INFRA = 3,
	EXEC_EXIT_SIGINT = 130,
	EXEC_EXIT_SIGTERM = 143,
};

struct exec_opts {
	const char *plan_path;     /* for the results' plan section */
	const char *connect;       /* libvirt URI; NULL: the plan's, else qemu:///system */
	unsigned shard_k, shard_n; /* 0/0: every cell */
	const char *results_path;  /* rewritten after every cell; NULL: none */
	struct results *resume;    /* an earlier results file (--resume), or NULL */
	bool rerun_failed;
	bool fail_fast;
	bool verbose; /* also report boots, replaced guests and dataset generation */
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
};

/* What the execution counted, for the summary and the report. */
struct exec_stats {
	unsigned boots;
	double wall_s;     /* from the first boot to the end */
	double measured_s; /* sum of prepare+transfer+finalize of every measured run */
};

/*
 * Run every selected cell of m (from plan_expand(p)). *out receives the results (also when the
 * run was interrupted or failed part-way; caller frees). Returns an enum exec_exit; on
 * EXEC_EXIT_INFRA before any cell ran, *err says why (caller frees).
 */
int exec_plan(const struct plan *p, const struct matrix *m, const struct exec_opts *o,
	      struct results **out, struct exec_stats *st, char **err);

/* ---- the mapping of plan entries onto the lower layers (one place for all of it) ---- */

/* vm entry -> vm_config (borrowing strings of p and g: the built-in guest's files). */
void exec_vm_config(const struct plan_vm *p, const char *kernel, const char *initrd,
		    const char *cmdline, struct vm_config *c);
/* disk entry -> disk_config of the target disk (image kind: path and serial as given). */
void exec_disk_config(const struct plan_disk *p, const char *path, const char *serial,
		      struct disk_config *c);
/* dataset entry -> dataset_spec (borrowing p's path). */
void exec_dataset_spec(const struct plan_dataset *p, struct dataset_spec *s);
/* plan enums -> vm enums */
enum disk_format exec_disk_format(enum plan_disk_format f);
enum disk_bus exec_disk_bus(enum plan_bus b);

/* A cell's resolved parameters as the results record them (a new JSON object). */
json_t *exec_cell_params(const struct plan *p, const struct matrix *m, size_t i);

/*
 * Whether `earlier` (a results file given to --resume or --rerun-failed) was written by this
 * plan: same plan file hash, and every cell it holds is a cell of m with the same resolved
 * parameters (results_check_resume()). Returns 0, or -1 with *why saying what differs.
 */
int exec_check_resume(const struct plan *p, const struct matrix *m, const char *plan_path,
		      const struct results *earlier, char **why);
