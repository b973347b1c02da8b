/* SPDX-License-Identifier: MIT */
/*
 * What test-executor.c and test-executor-order.c share: the executor on the fake machine with the
 * null method, a plan of three null methods a, b, c on one vm, disk and dataset, and readers of
 * what the run did.
 */
#pragma once

#include <glib.h>

#include "fake-run.h"

#define MS 1000000ull

/* The test's temporary folder (fake_dir_make()), set by main(). */
extern char *tmp_dir;

/* A plan with three null methods a, b, c (three cells) on one vm, disk and dataset. */
extern const char *const base_plan;

#define CELL(m) "vm=v,disk=d,dataset=s,method=" m

/* tx_init()'s progress line callback: collects the line in t->lines, and when a cell finished
 * and t->results_path is set, appends to t->seen how many cells the file holds as finished. */
void on_line(void *ud, const char *text);
/* Parse base_plan + extra (the matrix, run, criteria); extra that starts with "ferry:" is the
 * whole plan. With t->results_path set, every finished cell appends to t->seen how many cells the
 * results file then held as finished. */
void tx_init(struct fake_run *t, const char *extra);
/* Run it (again: the fake's counters and log start over); every guest is destroyed. */
void tx_run(struct fake_run *t);
/* The result cell with this id, which must exist. */
struct result_cell *cell(struct fake_run *t, const char *id);
/* The cell's runs that are not warmups. */
size_t measured(const struct result_cell *c);
/* The "run CELL #I" lines of the fake's log, as "a0 a1 b0 ..." (method letter and run index). */
char *runs_of(const struct fake_run *t);
/* Every null method of the parsed plan takes ns. */
void set_null_duration(struct fake_run *t, uint64_t ns);
