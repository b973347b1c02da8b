/* SPDX-License-Identifier: MIT */
/*
 * The verdict between two cells of one results file (the report's pivot, the end-of-run summary,
 * JUnit properties, the results JSON): by the rule and code of `ferry compare` (compare.h,
 * compare-rule.c), on boot means:
 *  - the sample is a boot: each boot (or each block, ferry(1) run.boots) contributes the mean
 *    log value of its measured runs;
 *  - paired by block when both cells have a mean in exactly the same blocks (at least 2): the
 *    difference within a block cancels the host's drift; cells with no blocks that shared their
 *    boots (run.vm shared) pair by boot the same way; otherwise Welch on the two sides' boot
 *    means (one-boot sides borrow the other side's spread, and one boot on each side caps the
 *    verdict at inconclusive);
 *  - each bound one-sided at `confidence`, Benjamini-Hochberg at q = 1 - confidence over the
 *    pairs of one call (one table), a direction a family. `compare` asks whether a new file got
 *    worse (a direction given in advance: 0.95, a 90% interval); a comparison between two
 *    configurations has none, so the default here is 0.975 a side: a two-sided 5% test and a
 *    95% interval (an A/A table calls at most 5% of its pairs different);
 *  - A or B better: significant after BH and the estimate at least the threshold (5%);
 *    indistinguishable: both bounds inside +-threshold; inconclusive otherwise, with how many
 *    more boots (blocks) would likely resolve it.
 * Pure: no I/O, no printing.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "results.h"

/* The default confidence of each one-sided bound: together a two-sided 95% interval. */
#define VERDICT_CONFIDENCE 0.975

enum verdict_kind {
	VERDICT_A_BETTER,     /* A is significantly better (faster) than B */
	VERDICT_B_BETTER,     /* B is significantly better than A */
	VERDICT_SAME,         /* indistinguishable: the interval lies inside +-threshold */
	VERDICT_INCONCLUSIVE, /* neither */
};

/* "a-better", "b-better", "indistinguishable", "inconclusive". */
const char *verdict_kind_name(enum verdict_kind k);

struct verdict_opts {
	const char *metric; /* NULL: "total"; else "phase.NAME", "throughput", "files_per_s" or a
			       method metric (its direction from the results' metrics) */
	double threshold;   /* minimum relative change that matters (fraction); 0: 0.05 */
	double confidence;  /* of each one-sided bound; 0: VERDICT_CONFIDENCE */
};

struct verdict {
	enum verdict_kind kind;
	bool higher_better; /* the metric's direction */
	/* How much better A is than B, as a fraction of B's badness: for a time T_B / T_A - 1
	 * (+0.12: A is 12% faster, i.e. B takes 12% longer), for a throughput X_A / X_B - 1;
	 * negative when B is better. Its interval bounds are each one-sided at confidence. NAN
	 * when no test was possible. */
	double gain, gain_low, gain_high;
	double threshold, confidence;
	bool paired;                   /* paired by block (or shared boot) */
	size_t boots_a, boots_b;       /* samples (boots or blocks) a side */
	size_t runs_a, runs_b;         /* measured runs with a value */
	double p_a_better, p_b_better; /* one-sided p-values before BH; NAN when no test */
	double mde;      /* minimum detectable effect at 80% power (fraction); NAN unknown */
	long more_boots; /* to resolve an inconclusive verdict, per side; -1 unknown */
	char *note;      /* why inconclusive, or what capped the verdict; NULL */
};

struct verdict_pair {
	const struct result_cell *a, *b;
};

/*
 * The verdicts of pairs[0..n) of cells of results r (for the metric's direction) into
 * out[0..n) (clear each with verdict_clear()), with false-discovery control across the n pairs.
 * Returns 0, or -1 with *err for bad options.
 */
int verdict_pairs(const struct results *r, const struct verdict_pair *pairs, size_t n,
		  const struct verdict_opts *o, struct verdict *out, char **err);
void verdict_clear(struct verdict *v);

/*
 * The verdict in words (caller frees), e.g.
 *   "A is 12.3% faster than B [95% CI 8.1% to 16.6%]",
 *   "A and B are indistinguishable (|change| < 5%) [95% CI -2.0% to 3.1%]",
 *   "A vs B: inconclusive (need ~4 more boots) [95% CI -3.0% to 20.4%]".
 * "faster" for a time, "better" for other metrics.
 */
char *verdict_text(const struct verdict *v, const char *a, const char *b);
