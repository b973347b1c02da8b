/* SPDX-License-Identifier: MIT */
/*
 * Subcommands. Each takes the argv that follows the subcommand name (argv[0] is the subcommand)
 * and returns a process exit status.
 */
#pragma once

#include <stddef.h>
#include <stdio.h>

enum ferry_exit {
	EXIT_OK = 0,
	EXIT_FAILED = 1, /* a criterion failed, or `compare` (or `run --baseline`) found a
			  * regression */
	EXIT_PLAN = 2,   /* plan or usage errors */
	EXIT_INFRA = 3,  /* infrastructure errors (libvirt, guest, host) */
	EXIT_EMPTY = 4,  /* the run measured nothing: no cell has a measured run (--allow-empty) */
	EXIT_SIGINT = 130,
	EXIT_SIGTERM = 143,
};

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

/* One declaration per subcommand; keep alphabetical so parallel work merges cleanly. */
int cmd_compare(int argc, char **argv);
int cmd_dataset(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_expand(int argc, char **argv);
int cmd_guest(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_schema(int argc, char **argv);
int cmd_trend(int argc, char **argv);
int cmd_validate(int argc, char **argv);

/* The exit status of a comparison (cmd-compare.c): EXIT_PLAN refused, EXIT_FAILED a regression,
 * else EXIT_OK. */
struct comparison;
int compare_exit_code(const struct comparison *c);

/* `ferry run --baseline`: compare the run's results with its baselines (files or directories;
 * one that does not exist yet is a warning), add an error of kind regression to every cell with
 * a regressed metric (its status becomes failed), print a summary, write the comparison's
 * Markdown to markdown (when set), and under GitHub Actions annotate. Returns 0, or EXIT_PLAN when
 * a baseline cannot be read or the comparison is refused (printed). */
struct results;
struct run_baseline {
	const char *const *paths;
	size_t n_paths;
	size_t window;
	double threshold, confidence; /* fractions; 0: defaults */
	int rule;                     /* enum cmp_rule */
	const char *markdown;         /* the comparison's Markdown, or NULL */
};
int compare_run_results(struct results *r, const struct run_baseline *b);

/*
 * Under GitHub Actions: one "::error" annotation per error of every failed or errored cell
 * (a broken criterion points at its line in the plan, other faults at the entry of the cell's
 * VM or method), at most 50. p and m (the plan that ran, may be NULL) give the positions;
 * without them the annotation names the results' plan path. Returns how many were printed.
 * annotate.c.
 */
struct matrix;
struct plan;
struct results;
size_t results_annotate(FILE *out, const struct results *r, const struct plan *p,
			const struct matrix *m);

/*
 * What the command line allows a plan (ferry(1) SECURITY), shared by validate, expand and run
 * (cmd-plan.c): add PLAN_TRUST_LONG_OPTIONS to the getopt table and hand every option to
 * plan_trust_option() first.
 */
struct plan;
struct plan_options;
enum { OPT_ALLOW_ENV = 0x1000, OPT_VAR, OPT_ALLOW_OUTPUT };
/* clang-format off */
#define PLAN_TRUST_LONG_OPTIONS                                                                    \
	{ "allow-env", required_argument, NULL, OPT_ALLOW_ENV },                                   \
	{ "var", required_argument, NULL, OPT_VAR },                                               \
	{ "allow-output", required_argument, NULL, OPT_ALLOW_OUTPUT }
/* clang-format on */
/* 1: `opt` was one of them (stored), 0: it was not, -1: invalid (printed). */
int plan_trust_option(int opt, const char *arg, struct plan_options *o);
void plan_trust_free(struct plan_options *o);
/* Print a plan's warnings (valid, but probably not meant) on standard error. */
void plan_warnings_print(const struct plan *p);
