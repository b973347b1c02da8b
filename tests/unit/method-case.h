/* SPDX-License-Identifier: MIT */
/*
 * What test-method-runs.c and test-method-runs-edges.c share: a method's cell run by the
 * executor on the fake machine's guests (fake-run.h) in the program's temporary folder, in a
 * network namespace of its own, and the checks such a run ends with (nothing left on the host,
 * nothing left in the guest, the cell's errors logged, its skip reason the test's).
 */
#pragma once

#include <stdbool.h>

#include "fake-run.h"

#define MS 1000000ull

/* The program's temporary folder (fake_dir_make()) and the build tree's ferry-sum, which a guest
 * gets with `sum` (a path of tmp_dir's lifetime): set by method_case_init(). */
extern char *tmp_dir;
extern char *sum_path;

/* The plan's head the cases share: disks t (tmpfs) and i (image), dataset s. */
extern const char *const plan_head;

/* For main(): stdout line-buffered, SIGPIPE ignored, g_test_init(), the program's own network
 * namespace, and tmp_dir and sum_path, named after prefix. */
void method_case_init(int *argc, char ***argv, const char *prefix);
/* g_test_run(), then tmp_dir removed; returns what g_test_run() did. */
int method_case_run(void);

/* The vm of a method's cells. */
const char *vm_for(const char *method);

/* g_test_skip() with the reason when the host cannot run fake guests (fake_root_support()). */
bool skip_unless_supported(void);

/* Nothing of the run is left on the host: the run directories are gone and no loop device
 * refers to a file below tmp_dir. */
void assert_host_clean(void);
/* The cell's skip reason as the test's, when it was skipped. */
bool skipped(const struct result_cell *cell);
void log_errors(const struct result_cell *cell);
/* The guest's last "left" line: what the cleanup of the failed run left in it (nothing). */
void assert_guest_clean(const struct fake_run *t);
