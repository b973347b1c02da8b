/* SPDX-License-Identifier: MIT */
/*
 * A plan run by the executor on the fake machine (runner/machine/machine-fake.c), shared by
 * test-executor.c, test-executor-order.c, test-hosts.c and others: the temporary folder with the
 * run and cache folders, the plan written there, parsed and expanded, and exec_opts that open the
 * fake machine and collect the progress lines and errors.
 */
#pragma once

#include <glib.h>

#include "exec.h"
#include "machine-fake.h"
#include "plan.h"

struct fake_run {
	struct plan *p;
	struct matrix *m;
	struct results *r;
	struct exec_result res;
	struct machine_fake fake;
	struct exec_opts o;
	char *plan_path;
	char
	    *results_path; /* NULL, or set by the test (also in o.results_path); removed at clear */
	GPtrArray *lines, *errors;
	GArray
	    *seen; /* test-executor: cells not pending in the results file when a cell finished */
};

/* For main(): a new temporary folder named after prefix, with FERRY_RUN_DIR and
 * FERRY_CACHE_DIR below it. Returns the folder, for fake_run_init() and fake_dir_remove(). */
char *fake_dir_make(const char *prefix);
void fake_dir_remove(char *dir);

/*
 * Writes text to dir/plan.yaml, parses and expands it (asserting that it is valid) and sets
 * t->o to run it on t->fake: progress lines go to line (NULL: collected in t->lines), errors
 * are collected in t->errors.
 */
void fake_run_init(struct fake_run *t, const char *dir, const char *text,
		   void (*line)(void *ud, const char *text));
/* exec_plan(), which must succeed. */
void fake_run_exec(struct fake_run *t);
void fake_run_clear(struct fake_run *t);

/* Puts the test process in a network namespace of its own with its loopback up (the fake
 * guests' ports and the pair of vm2vm meet there); as a non-root user it does nothing, and
 * fake_root_support() says why the tests skip. */
void fake_run_own_network(void);
