/* SPDX-License-Identifier: MIT */
/*
 * The statistics of a run with blocks (ferry(1) run.boots; the executor's blocks.c): the
 * variance components of a pilot, the runs per boot they call for (Kalibera and Jones,
 * "Rigorous Benchmarking in Reasonable Time", ISMM 2013), the boot-level half-widths the stop
 * rule watches, and the rule itself. Pure: no I/O.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "results.h"
#include "stats.h"
#include "verdict.h"

/* The most runs per boot that runs_per_boot: auto picks (and the least: 1). */
#define DESIGN_AUTO_MAX 10

/*
 * The variance components of the log total of cells[0..n), pooled (averaged) over the cells
 * that have at least 2 boots with 2 measured runs: *within the within-boot variance (T_run^2,
 * runs pooled about their boot's mean), *between the between-boot variance (T_boot^2 = the
 * variance of boot means less within / runs per boot, the unbiased estimate, clamped at 0).
 * Boots are told apart by block when the runs have one, else by boot id. Returns how many
 * cells counted (0: both NAN).
 */
size_t design_components(const struct result_cell *const *cells, size_t n, double *within,
			 double *between);

/*
 * Runs per boot by Kalibera and Jones: ceil(sqrt((boot_s / run_s) * (within / between))),
 * bounded to [1, max]: max when the between-boot variance is 0 (more runs are free of it), 1
 * when the within-boot one is, `fallback` when a number is unknown.
 */
unsigned design_runs_per_boot(double boot_s, double run_s, double within, double between,
			      unsigned max, unsigned fallback);

/* The relative half-width of the 95% interval of cell c's mean log total over its boot means
 * (exp(t * s / sqrt(k)) - 1); INFINITY with fewer than 2 boots. */
double design_cell_halfwidth(const struct result_cell *c);

/* The pairs of cells[0..n) that a report compares: those whose axes differ in exactly one
 * (into *pairs, caller frees; returns how many). */
size_t design_pairs(const struct result_cell *const *cells, size_t n, struct verdict_pair **pairs);

/* The widest relative half-width over cells[0..n) and over their pairs' verdicts (half the
 * width of the interval of log change); INFINITY when one is unknown. */
double design_halfwidth(const struct results *r, const struct result_cell *const *cells, size_t n);

struct design_rule {
	unsigned min, max; /* blocks */
	double until;      /* target relative half-width (fraction); 0: none (run max) */
	double budget;     /* seconds of blocks; 0: none */
};

/*
 * After `blocks` blocks that took `elapsed` seconds, with the widest half-width `halfwidth`:
 *   1. blocks < min                         -> STATS_CONTINUE (min always runs)
 *   2. until set and halfwidth <= until     -> STATS_STOP_HALFWIDTH
 *   3. blocks >= max                        -> STATS_STOP_MAX
 *   4. budget set and elapsed >= budget     -> STATS_STOP_BUDGET
 *   5. otherwise                            -> STATS_CONTINUE
 */
enum stats_stop design_stop(const struct design_rule *rule, unsigned blocks, double elapsed,
			    double halfwidth);
