/* SPDX-License-Identifier: MIT */
/*
 * `ferry compare`: a noise-aware verdict per cell and metric between a baseline (one results
 * file, or the pooled last N comparable ones) and a new results file. Pure: no I/O, no printing;
 * the reporters in reporters/compare-*.c and runner/cli/cmd-compare.c render and print it.
 *
 * The rule (ferry(1) COMPARE, and REGRESSIONS.md for why):
 *  - cells are paired by their resolved parameters (results cell params, less the keys that
 *    only say how often or in which order to run: run.repeat, warmup, order, seed, timeout,
 *    cell_timeout, vm, boots, runs_per_boot, until, budget), never by id strings; a cell whose axis
 * values match but whose parameters differ is a refused difference ("params"), not a silent
 * non-match;
 *  - every metric works on log values (a ratio is symmetric and noise is multiplicative);
 *  - a boot is the sample: runs of one VM boot share its luck, so each boot contributes the mean
 *    of its runs' logs; the variance of a boot mean (between-boot + within/n) is estimated
 *    from the spread of boot means when both sides have >= 2 boots, borrowed from the other
 *    side when one side has a single boot, and otherwise unknown: then the runs are the
 *    samples, the interval is shown, and the verdict is capped at inconclusive;
 *  - Welch's t on those log means gives the change (ratio of geometric means) with bounds that
 *    are each one-sided at `confidence` (together a two-sided 2c-1 interval);
 *  - Benjamini-Hochberg at q = 1 - confidence over every (cell, metric) pair, separately for
 *    "worse" and "better", controls false discoveries across cells;
 *  - regressed / improved: significant after BH and the estimate at least the threshold
 *    (default 5%) in that direction; unchanged: both bounds inside +-threshold (two one-sided
 *    tests); inconclusive otherwise, and always with fewer than 3 measured runs on a side;
 *  - rule lkp (stricter): regressed / improved only when at least 3 samples (boots) per side
 *    have ranges that do not overlap, with a gap of more than half the difference of medians,
 *    and a change of at least the threshold.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "results.h"

enum cmp_verdict {
	CMP_UNCHANGED,
	CMP_IMPROVED,
	CMP_REGRESSED,
	CMP_INCONCLUSIVE,
	CMP_VERDICT_COUNT,
};

enum cmp_rule { CMP_RULE_WELCH, CMP_RULE_LKP };

/* "unchanged", "improved", "regressed", "inconclusive". */
const char *cmp_verdict_name(enum cmp_verdict v);
/* "welch", "lkp"; cmp_rule_from_name() returns -1 for an unknown name. */
const char *cmp_rule_name(enum cmp_rule r);
int cmp_rule_from_name(const char *name);

/*
 * A minimum relative change for some cells and metrics: `where` is NULL (every cell) or
 * "AXIS=VALUE[,AXIS=VALUE...]" (a cell whose axes have all of these); `metric` NULL (every metric)
 * or a metric name ("total", "phase.transfer", "throughput", ...). The last matching one wins.
 */
struct cmp_threshold {
	char *where;
	char *metric;
	double value; /* a fraction: 0.05 = 5% */
};

/* Parse "[WHERE:][METRIC=]PERCENT" (e.g. "7%", "phase.transfer=10%", "method=net:total=8%")
 * into t (strings owned). Returns 0, or -1 with *err. */
int cmp_threshold_parse(const char *text, struct cmp_threshold *t, char **err);
void cmp_threshold_clear(struct cmp_threshold *t);

struct compare_opts {
	/* AXIS=VALUE,... naming one cell of both sides, or NULL: the gated time rows of the
	 * other cells are judged relative to it, block by block (its time in the same blocks
	 * cancels the host's moment: docs/gate.md) */
	const char *control;
	double threshold;  /* default minimum relative change (fraction); 0: 0.05 */
	double confidence; /* 0: 0.95 */
	enum cmp_rule rule;
	const struct cmp_threshold *thresholds; /* per cell and metric, last match wins */
	size_t n_thresholds;
	/* provenance keys allowed to differ (cmp_keys below, or "all") */
	const char *const *allow_different;
	size_t n_allow_different;
	size_t window; /* pool the last `window` comparable baselines; 0 or 1: the newest one */
	/* The metrics a regression of which fails the comparison (compare_exit_code); the others
	 * are reported, never fatal. NULL/0: "total". */
	const char *const *gate;
	size_t n_gate;
	/* The rerun of the new file's flagged cells (`--confirm`), or NULL: a regression of a
	 * gated metric stands only when the rerun agrees (its own change against the same
	 * baseline a slowdown past the threshold, and both runs' boots together still regressed).
	 */
	const struct results *confirm;
	/* The first stage of a two-stage gate: when a rerun confirms (confirm set, or
	 * `confirming`: the caller reruns the cells this comparison flags), a gated row is
	 * suspected at this confidence and only the rerun's test, at `confidence`, makes it a
	 * regression. 0: 0.80. Without a rerun every row is judged at `confidence`. */
	double screen;
	bool confirming;
};

/* The provenance keys whose difference changes what a number means (refused unless allowed),
 * and those only shown. */
extern const char *const cmp_refusing_keys[]; /* NULL-terminated */
extern const char *const cmp_shown_keys[];    /* NULL-terminated */

/* A provenance difference between the baseline and the new file. */
struct cmp_diff {
	char *key;     /* "qemu_version", "dataset.NAME", "params", "ferry_version", ... */
	char *base;    /* the baseline's value (or a description) */
	char *cand;    /* the new file's value */
	bool refusing; /* changes the meaning of the numbers */
	bool allowed;  /* refusing, but --allow-different names it */
};

/* One cell and metric. */
struct cmp_row {
	char *cell;   /* the new file's cell id */
	char *metric; /* "total", "phase.transfer", "throughput", "files_per_s", method metrics */
	char *unit;
	bool higher_better;
	const struct result_cell *cand; /* in the new file (borrowed) */
	size_t n_base, n_cand;          /* measured runs with a value */
	size_t boots_base, boots_cand;  /* distinct boots (a file without boot ids: one per file) */
	double median_base, median_cand;
	double change;          /* ratio of geometric means - 1 (+0.10: the value is 10% larger) */
	double ci_low, ci_high; /* each a one-sided `confidence` bound of change; NAN when none */
	double df;              /* degrees of freedom of the interval */
	double p_worse, p_better;   /* one-sided p-values; NAN when no test was possible */
	bool sig_worse, sig_better; /* after Benjamini-Hochberg */
	double threshold;           /* the minimum relative change that applied */
	double mde;         /* minimum detectable effect (80% power), fraction; NAN unknown */
	long more_boots;    /* per side, to resolve an inconclusive verdict; -1 unknown */
	bool between_known; /* the between-boot variance could be estimated */
	enum cmp_verdict verdict;
	char *note; /* why inconclusive, or what capped the verdict; NULL */
	bool gated; /* a metric of the gate: its regression fails the comparison */
	/* The absolute noise floor in seconds (0: none) of the row's time (its own, or the total
	 * for a rate), and that time's baseline median: a change under floor / floor_time is no
	 * regression or improvement. */
	double floor, floor_time;
	bool withheld;   /* would be regressed, but the drift canary says the host moved */
	bool controlled; /* the test is of the ratio to the control cell (compare_opts.control) */
	/* a suspected regression of a gated metric rerun (compare_opts.confirm): the rerun's
	 * change with its bounds against the same baseline (NAN: not rerun), and its verdict */
	double confirm_change, confirm_low, confirm_high;
	size_t confirm_boots;
	bool confirmed;
};

struct comparison {
	double confidence;
	enum cmp_rule rule;
	double threshold;
	/* the baselines used (pooled), newest first, as indexes into the caller's array */
	size_t *used;
	size_t n_used;
	struct cmp_diff *diffs; /* against the newest baseline used (or the newest given) */
	size_t n_diffs;
	bool refused; /* a refusing difference that is not allowed: no verdicts */
	struct cmp_row *rows;
	size_t n_rows;
	char **only_base; /* cell ids only in the baseline (or with no runs on one side) */
	size_t n_only_base;
	char **only_cand;
	size_t n_only_cand;
	size_t counts[CMP_VERDICT_COUNT]; /* rows by verdict */
	size_t regressed_cells;           /* cells with at least one regressed metric */
	size_t failed_cells;              /* cells with a regressed gated metric: the gate fails */
	/* The drift canary (canary_host of every boot of the paired cells): the host's change
	 * of speed from the baseline to the new file (+0.38: 38% slower) with its bounds, NAN
	 * when a side has fewer than 2 boots with it; moved: beyond its own noise (significant
	 * and at least the threshold), so a gated regression is withheld. */
	double canary_change, canary_low, canary_high;
	size_t canary_boots_base, canary_boots_cand;
	bool canary_moved;
	bool confirm_given; /* compare_opts.confirm was set */
	char *control_cell; /* the id of the control cell (compare_opts.control), or NULL */
	char **gate;        /* the gate's metrics (compare_opts.gate, or "total") */
	size_t n_gate;
};

/*
 * Compare the new results `cand` with the baselines base[0..n_base) (their order does not
 * matter: the newest comparable ones by provenance start time are pooled, o->window of them).
 * Returns the comparison (free with comparison_free()); when no baseline is comparable,
 * refused is set and diffs name why. NULL with *err only for bad options.
 */
struct comparison *compare_results(const struct results *const *base, size_t n_base,
				   const struct results *cand, const struct compare_opts *o,
				   char **err);
void comparison_free(struct comparison *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct comparison *, comparison_free)

/* One line for a refused comparison: "refused: qemu_version differs ('7.2.0' vs '8.0.0'); ...
 * (--allow-different KEY compares anyway)". Caller frees. */
char *comparison_refusal(const struct comparison *c);
/* The two-sided level, in percent, of the interval whose ends are the one-sided bounds every
 * verdict is read from (confidence 95%: 90). Messages label the interval with it. */
double comparison_interval_pct(const struct comparison *c);
