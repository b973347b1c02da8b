/* SPDX-License-Identifier: MIT */
/*
 * Subcommands. Each takes the argv that follows the subcommand name (argv[0] is the subcommand)
 * and returns a process exit status.
 */
#pragma once

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

#include "plan.h"

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

/* One table per command (cli.h), defined next to its parser; keep alphabetical so parallel work
 * merges cleanly. main.c lists them in cli_commands[]. */
struct cli_command;
extern const struct cli_command cli_calibrate;
extern const struct cli_command cli_compare;
extern const struct cli_command cli_dataset;
extern const struct cli_command cli_doctor;
extern const struct cli_command cli_expand;
extern const struct cli_command cli_guest;
extern const struct cli_command cli_merge;
extern const struct cli_command cli_report;
extern const struct cli_command cli_run;
extern const struct cli_command cli_schema;
extern const struct cli_command cli_trend;
extern const struct cli_command cli_validate;

/* --NAME FILE for every report format (reporters/formats.h; cli_report_options): the id is
 * OPT_REPORT + the format. */
enum { OPT_REPORT = 0x1100 };

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
	const char *const *gate;      /* the metrics that fail (compare_opts.gate) */
	size_t n_gate;
	const char *control; /* compare_opts.control, or NULL */
	/* confirm > 0: a gated regression reruns its cells in that many new blocks through
	 * rerun() (a results file the caller frees, NULL when it could not run), and stands only
	 * when the rerun agrees */
	unsigned confirm;
	double screen; /* compare_opts.screen: the first stage's confidence (fraction); 0: 80% */
	struct results *(*rerun)(void *ud, const char *const *cells, size_t n, unsigned blocks);
	void *rerun_ud;
};
int compare_run_results(struct results *r, const struct run_baseline *b);

/* The metrics of a gate (--gate METRIC,..., the plan's regression.gate), gate.c. */
struct gate_metrics {
	char **v;
	size_t n;
};
/* Adds the comma-separated metric names of text (each a known metric: total, phase.NAME,
 * throughput, files_per_s or a per-run metric of ferry(1) METRICS); -1 after printing why. */
int gate_metrics_parse(const char *opt, const char *text, struct gate_metrics *g);
void gate_metrics_free(struct gate_metrics *g);

/* What `ferry run --confirm` reruns the flagged cells with (gate.c): the plan (a copy with
 * the rerun's blocks runs), its matrix and the run's options; the rerun's
 * results are written to path (NULL: none). */
struct gate_rerun {
	const struct plan *p;
	const struct matrix *m;
	const struct exec_opts *eo;
	const char *path;
};
/* --confirm N: 1 to 20 blocks, or 0; -1 after printing why. */
long gate_parse_confirm(const char *text);
/* Where the rerun of results file path goes: "X.json" -> "X.confirm.json". Caller frees. */
char *gate_confirm_path(const char *path);
/* run_baseline.rerun for a struct gate_rerun. */
struct results *gate_rerun(void *ud, const char *const *cells, size_t n, unsigned blocks);

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
 * The options the plan commands share (cmd-plan.c): what the command line allows a plan
 * (ferry(1) SECURITY) and --max-cells, for validate, expand and run; --shard for expand and run.
 * Add cli_plan_options (and cli_shard_option) to the command's rows, read the options with
 * plan_args_getopt(), then the plan with plan_args_load().
 */
struct plan_args {
	struct plan_options trust;
	size_t cap;                /* --max-cells N; 0: no cap */
	unsigned shard_k, shard_n; /* --shard K/N; 0/0: not given (every cell) */
};
/* --shard is 's', which is also `ferry expand -s` */
enum { OPT_ALLOW_ENV = 0x1000, OPT_VAR, OPT_ALLOW_OUTPUT, OPT_MAX_CELLS, OPT_SHARD = 's' };
/* cli_getopt() that stores the shared options (cli_plan_options, cli_shard_option) itself:
 * returns the command's next option, -1 after the last, or PLAN_ARGS_INVALID when a shared
 * option is invalid (printed). */
#define PLAN_ARGS_INVALID (-2)
int plan_args_getopt(const struct cli_command *cmd, int argc, char **argv, struct plan_args *a);
void plan_args_free(struct plan_args *a);
/* Parse and expand the plan at path; prints its errors and warnings. Returns NULL on errors. */
struct matrix *plan_args_load(const char *path, const struct plan_args *a, struct plan **out);
