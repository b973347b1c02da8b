/* SPDX-License-Identifier: MIT */
/* What compare.c (comparability, pairing), compare-rows.c (the rows, false-discovery control)
 * and compare-rule.c (the test and the verdict of one cell and metric) share. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compare.h"
#include "metrics.h"
#include "results.h"
#include "util.h"

/* A metric as compare reads it from a run: a row of the metrics table (metrics.h) that is
 * computed from the run (the total, a phase, throughput, files_per_s), or one the run reports. */
struct metric_ref {
	int metric;       /* enum metric, or -1: read from the run's reported metrics */
	int phase;        /* a phase metric's phase, else -1 */
	const char *name; /* borrowed */
};

/* The metric named name (borrowed into *m). Returns 0, or -1 for "phase.X" of no phase. */
int cmp_metric_ref(const char *name, struct metric_ref *m);

/* The log values of a metric over the measured runs of some cells, with a boot key per value:
 * (file, boot), or (file) alone when the file has no boot ids. */
struct samples {
	double *v;
	uint64_t *boot;
	size_t n, cap;
	double *raw; /* the values themselves, for medians */
};

/* What the test needs of a row beyond the row itself. */
struct row_work {
	double d, se, tq; /* difference of log means, its standard error, t quantile */
	double s_boot;    /* standard deviation of one sample (boot mean, or run when unknown) */
	size_t k_base, k_cand; /* samples per side */
	double *sa, *sb;       /* the samples (log) */
};

/* A run that counts: not a warmup, integrity checked, a finite total. */
bool cmp_measured(const struct result_run *run);
/* Adds the measured runs of cell c (from baseline file number file) to s. */
void cmp_samples_add(struct samples *s, const struct result_cell *c, size_t file,
		     const struct metric_ref *m);
/* The same, keyed by (file, block) where a run has a block (ferry(1) run.boots). */
void cmp_samples_add_blocks(struct samples *s, const struct result_cell *c, size_t file,
			    const struct metric_ref *m);
/* Appends one sample: its key (boot or block), log value and value. */
void cmp_samples_push(struct samples *s, uint64_t key, double logv, double raw);
void cmp_samples_free(struct samples *s);
/* The mean log value of each key of s (its boot, or block) in key order into *means, and the
 * keys into *keys unless keys is NULL (caller frees both); returns how many keys. */
size_t cmp_key_means(const struct samples *s, double **means, uint64_t **keys);
/* The value of metric m in a run (NAN when it has none). */
double cmp_run_value(const struct result_run *run, const struct metric_ref *m);
double cmp_median(const double *x, size_t n);
/* Appends a note to the row ("; " between notes). */
void cmp_row_note(struct cmp_row *row, const char *fmt, ...) _printf_(2, 3);
/* The test of a row with at least 3 samples a side: change, interval, p-values into row, what
 * the verdict needs into w (w->sa and w->sb: caller frees). */
void cmp_row_test(struct cmp_row *row, struct row_work *w, const struct samples *a,
		  const struct samples *b, double confidence);
/* The paired test of a row: ma[i] and mb[i] are the mean log values of the two sides in block
 * i (k >= 2 blocks, both sides in each); what the verdict needs into w (caller frees sa, sb). */
void cmp_row_test_paired(struct cmp_row *row, struct row_work *w, const double *ma,
			 const double *mb, size_t k, double confidence);
/* The verdict of a row whose test ran, once false-discovery control set row->sig_*. */
void cmp_row_verdict(struct cmp_row *row, struct row_work *w, enum cmp_rule rule,
		     double confidence);

/* compare-gate.c: the gate. Whether metric fails the comparison (compare_opts.gate). */
bool cmp_gated(const struct compare_opts *o, const char *metric);
/* The absolute noise floor in seconds of a time metric from its baseline samples t. */
double cmp_floor(const struct samples *t);
/* A regressed or improved row whose change, in the terms of its time (floor_time: the median
 * of the time the floor is of), is under its floor: unchanged. */
void cmp_floor_apply(struct cmp_row *row);
/* The canary's change between the sides from its samples (one per boot). */
void cmp_canary(struct comparison *cmp, const struct samples *a, const struct samples *b);
/* A regressed gated row when the canary moved: withheld (inconclusive, with a note). */
void cmp_canary_apply(const struct comparison *cmp, struct cmp_row *row);
/* A regressed gated row checked against its rerun b (NULL: the rerun has no such cell) with
 * the same baseline samples a: stays regressed only when the rerun's own change is a slowdown
 * of at least the threshold and `pooled` (the new side's samples and the rerun's) is still
 * regressed. */
void cmp_confirm_apply(struct cmp_row *row, const struct samples *a, const struct samples *b,
		       const struct samples *pooled, double confidence);

/* Whether `where` is AXIS=VALUE[,AXIS=VALUE...]. */
bool cmp_where_valid(const char *where);
/* Whether every AXIS=VALUE of `where` is an axis of c (NULL: every cell). */
bool cmp_where_matches(const char *where, const struct result_cell *c);

/* A cell of the new file with the cells it pairs with. */
struct pair {
	const struct result_cell *cand;
	const struct result_cell **base; /* one per used baseline file (NULL: absent there) */
};

/* compare-rows.c: the rows of the n_pairs pairs of a comparison that is not refused (n_used
 * baseline files), their verdicts, and the counts; def_thr and confidence as resolved. */
void cmp_build_rows(struct comparison *cmp, const struct pair *pairs, size_t n_pairs, size_t n_used,
		    const struct results *cand, const struct compare_opts *o, double def_thr,
		    double confidence);
