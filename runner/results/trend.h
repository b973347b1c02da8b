/* SPDX-License-Identifier: MIT */
/*
 * `ferry trend`: the history of every cell over results files of successive runs, with its
 * change points (REGRESSIONS.md "Trend"). A point is one run of the plan (one results file):
 * the cell's median total with its 95% confidence interval. Points, not the runs inside one
 * file, are the samples: runs of one boot share that boot's luck, so only the spread between
 * files says what noise is.
 *
 * Change points (trend_detect()): an exact segmentation (optimal partitioning by dynamic
 * programming) of the log medians with a robust cost, the sum of absolute deviations from each
 * segment's median, a penalty of TREND_PENALTY * sigma * ln(n) per change (sigma: the robust
 * spread of successive differences, MAD * 1.4826 / sqrt 2, which a step does not inflate) and a
 * minimum segment of TREND_MIN_SEGMENT points, so that one spike can never be a segment of its
 * own. Each change is then kept only when the two segments it separates differ by at least
 * TREND_MIN_CHANGE (5%) and a t-test of their log means, with the residual spread pooled over
 * every segment and Bonferroni-corrected for the number of places a cut could have gone (the
 * search picks the luckiest split, so an uncorrected test passes noise), gives p <= TREND_P
 * (0.001); the weakest failing change is dropped and the
 * rest tested again until all pass. The newest point alone cannot make a segment: when it
 * lies outside the last segment's 99.9% prediction interval and 5% away, it is a *pending*
 * change, to be confirmed (or not) by the next run.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "results.h"

#define TREND_MIN_SEGMENT 2
#define TREND_P           0.001
#define TREND_MIN_CHANGE  0.05
#define TREND_PENALTY     3.0
/* The most points per cell the segmentation looks at (the newest): it is cubic in them. */
#define TREND_MAX_POINTS 120
/* Many cells shifting at the same file is the environment, reported once: at least this many
 * cells, and at least half of those that have a point there. */
#define TREND_ENV_MIN_CELLS 3
/* The most cells a report shows (the most important: a kept change, the largest first, then a
 * pending one, then the rest in order); the others are counted in one line, so that the output
 * stays bounded however many cells the files hold (issue 24 class 10). */
#define TREND_SHOW_CELLS 50

struct trend_change {
	size_t at;        /* index of the first point of the new level */
	double rel;       /* new level / old level - 1 (geometric means of the segments) */
	double p;         /* two-sided p of the t-test; NAN for a pending change */
	bool pending;     /* only the newest point shows it */
	bool environment; /* part of an environment shift (trend.env) */
};

/*
 * Change points of the positive series y[0..n) (NAN and non-positive values are not allowed;
 * the caller leaves such points out). *out receives them in order (free it), *n_out their
 * count. Deterministic: the same series gives the same changes.
 */
void trend_detect(const double *y, size_t n, struct trend_change **out, size_t *n_out);

struct trend_file {
	char *name;         /* as given on the command line */
	int64_t started_ms; /* the run's start (provenance.started), 0 when unknown */
	char *hostname;
	char *ferry_version;
};

struct trend_point {
	size_t file; /* index into trend.files */
	double median, ci_low, ci_high;
	size_t n; /* measured runs */
};

struct trend_cell {
	char *id; /* as the newest file names it */
	struct trend_point *points;
	size_t n_points;
	struct trend_change *changes; /* at indexes points */
	size_t n_changes;
	bool shown; /* among the TREND_SHOW_CELLS the reports show */
};

struct trend_acc;

struct trend {
	struct trend_file *files; /* ordered by start time (then by name) */
	size_t n_files;
	struct trend_cell *cells; /* in the order the newest file holding each has them */
	size_t n_cells;
	size_t *env; /* files at which many cells changed level together (an environment shift) */
	size_t *env_cells; /* how many cells changed at env[i] */
	size_t n_env;
	/* the cells the reports do not show (TREND_SHOW_CELLS): how many, how many of them with a
	 * kept change of level, and with only a pending one */
	struct {
		size_t cells, with_change, pending;
	} hidden;
	struct trend_acc *acc; /* while files are added (trend_add()) */
};

/*
 * The trend over n results files (names[i] names in[i] in messages; any order: they are
 * ordered by their start time). Cells are the same cell across files when their resolved
 * parameters are equal (their id when a file has none). Files of different plans may be mixed:
 * a cell is followed wherever it appears. Returns NULL with *err when n is 0.
 */
struct trend *trend_build(struct results *const *in, const char *const *names, size_t n,
			  char **err);
/*
 * The same one file at a time, so that a caller holds one results file in memory at once:
 * trend_begin(), trend_add() for every file (r may be freed after the call; name is copied),
 * trend_end() (NULL with *err when no file was added; t is then freed).
 */
struct trend *trend_begin(void);
void trend_add(struct trend *t, const struct results *r, const char *name);
struct trend *trend_end(struct trend *t, char **err);
void trend_free(struct trend *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct trend *, trend_free)
