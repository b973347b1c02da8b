/* SPDX-License-Identifier: MIT */
/*
 * `ferry calibrate PLAN`: what the gate can see on this host (docs/gate.md). The plan runs K
 * times (DIR/run-N.json; runs already there count, so a calibration can be made in pieces),
 * then every ordered pair of runs is compared as the gate would (compare.h with --gate): the
 * share of identical-code pairs that fail is the gate's A/A false-alarm rate here, and the
 * minimum detectable effect (80% power) of each gated cell and metric, over the pairs, says
 * which slowdowns it can catch.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "commands.h"
#include "compare.h"
#include "exec.h"
#include "fs.h"
#include "matrix.h"
#include "plan.h"
#include "results.h"
#include "stats.h"
#include "util.h"

#define CALIBRATE_MAX_RUNS 50

static int cmd_calibrate(int argc, char **argv);
static const struct cli_option calibrate_options[] = {
	{ .name = "runs",
	  .id = 'k',
	  .arg = "K",
	  .value = CLI_WORD,
	  .help = "how many results files of the plan to compare (default 6; 2 to 50)" },
	{ .name = "dir",
	  .id = 'd',
	  .arg = "DIR",
	  .value = CLI_FILE,
	  .help = "where the runs go as run-N.json (default out/calibrate); runs already there "
		  "count" },
	{ .name = "gate",
	  .id = 'g',
	  .arg = "METRIC,...",
	  .value = CLI_WORD,
	  .help = "the gate's metrics (default: the plan's regression.gate, else total)" },
	CLI_END,
};
const struct cli_command cli_calibrate = {
	.name = "calibrate",
	.operands = "PLAN",
	.operand = CLI_PLAN,
	.summary = "measure the gate's false-alarm rate and detectable effect on this host",
	.about = "Run a plan K times (or use the runs already in DIR), compare every ordered pair\n"
		 "of runs as the gate does (the plan's regression settings, --gate), and print\n"
		 "how many identical-code pairs fail the gate (its A/A false-alarm rate on this\n"
		 "host) and the minimum detectable effect of every gated cell and metric (80%\n"
		 "power, the median over the pairs). Each run is a 'ferry run' of its own, so the\n"
		 "calibration can be made in pieces. See docs/gate.md.\n"
		 "Exit: 0 calibrated, 2 plan or usage errors, 3 a run could not run.",
	.opts = (const struct cli_option *const[]){ calibrate_options, cli_plan_options, NULL },
	.run = cmd_calibrate,
};

/* Run the plan into path (a new run). */
static int calibrate_run(const struct plan *p, const struct matrix *m, const char *plan_path,
			 const char *path)
{
	struct exec_opts eo = { .plan_path = plan_path, .results_path = path };
	struct results *r = NULL;
	struct exec_result st = { 0 };
	_cleanup_free_ char *err = NULL;
	int rc = exec_plan(p, m, &eo, &r, &st, &err);
	if (rc < 0)
		errorf("%s: %s", path, err);
	results_free(r);
	return rc < 0 ? EXIT_INFRA : st.signal ? 128 + st.signal : EXIT_OK;
}

/* The gated rows of every pair: failures, and each cell and metric's minimum detectable
 * effects (row i of the first comparison names them). */
struct tally {
	size_t pairs, failed;
	char **name; /* "cell metric" */
	double **mde;
	size_t *n_mde, n;
};

static void tally_add(struct tally *t, const struct comparison *c)
{
	t->pairs++;
	t->failed += c->failed_cells > 0;
	for (size_t i = 0; i < c->n_rows; i++) {
		const struct cmp_row *r = &c->rows[i];
		if (!r->gated)
			continue;
		_cleanup_free_ char *name = xasprintf("%s %s", r->cell, r->metric);
		size_t j = 0;
		while (j < t->n && !STREQ(t->name[j], name))
			j++;
		if (j == t->n) {
			t->name = xrealloc(t->name, (t->n + 1) * sizeof(*t->name));
			t->mde = xrealloc(t->mde, (t->n + 1) * sizeof(*t->mde));
			t->n_mde = xrealloc(t->n_mde, (t->n + 1) * sizeof(*t->n_mde));
			t->name[j] = TAKE_PTR(name);
			t->mde[j] = NULL;
			t->n_mde[j] = 0;
			t->n++;
		}
		if (!isfinite(r->mde))
			continue;
		t->mde[j] = xrealloc(t->mde[j], (t->n_mde[j] + 1) * sizeof(double));
		t->mde[j][t->n_mde[j]++] = r->mde;
	}
}

static void tally_print(const struct tally *t, size_t k)
{
	printf("## ferry calibrate\n\n%zu runs, %zu ordered pairs of identical code: the gate "
	       "failed %zu (%.1f%%): its A/A false-alarm rate on this host.\n\n",
	       k, t->pairs, t->failed, t->pairs ? 100.0 * (double)t->failed / (double)t->pairs : 0);
	printf("| cell and metric | minimum detectable effect (median) | min | max | pairs |\n"
	       "|---|---:|---:|---:|---:|\n");
	for (size_t i = 0; i < t->n; i++) {
		struct stats_summary s;
		stats_summarize(t->mde[i], t->n_mde[i], &s);
		if (t->n_mde[i])
			printf("| %s | %.1f%% | %.1f%% | %.1f%% | %zu |\n", t->name[i],
			       100 * s.median, 100 * s.min, 100 * s.max, t->n_mde[i]);
		else
			printf("| %s | unknown | | | 0 |\n", t->name[i]);
	}
}

static void tally_free(struct tally *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->name[i]);
		free(t->mde[i]);
	}
	free(t->name);
	free(t->mde);
	free(t->n_mde);
}

/* Compare every ordered pair of the K results files in dir. */
static int calibrate_compare(const struct plan *p, const struct gate_metrics *g, char **paths,
			     size_t k)
{
	_cleanup_free_ char *err = NULL;
	struct results **r = results_read_all((const char *const *)paths, k, &err);
	if (!r) {
		errorf("%s", err);
		return EXIT_PLAN;
	}
	struct compare_opts o = {
		.threshold = p->regression.threshold / 100,
		.confidence = p->regression.confidence / 100,
		.rule = (enum cmp_rule)p->regression.rule,
		.gate = g->n ? (const char *const *)g->v : (const char *const *)p->regression.gate,
		.n_gate = g->n ? g->n : p->regression.n_gate,
		.control = p->regression.control,
	};
	struct tally t = { 0 };
	int rc = EXIT_OK;
	for (size_t i = 0; i < k && rc == EXIT_OK; i++)
		for (size_t j = 0; j < k && rc == EXIT_OK; j++) {
			if (i == j)
				continue;
			const struct results *base[] = { r[i] };
			struct comparison *c = compare_results(base, 1, r[j], &o, &err);
			if (!c || c->refused) {
				_cleanup_free_ char *why = c ? comparison_refusal(c) : NULL;
				errorf("%s vs %s: %s", paths[i], paths[j], c ? why : err);
				rc = EXIT_PLAN;
			} else {
				tally_add(&t, c);
			}
			comparison_free(c);
		}
	if (rc == EXIT_OK)
		tally_print(&t, k);
	tally_free(&t);
	results_free_array(r, k);
	return rc;
}

static int cmd_calibrate(int argc, char **argv)
{
	_cleanup_(plan_args_free) struct plan_args pa = { 0 };
	_cleanup_(gate_metrics_free) struct gate_metrics g = { 0 };
	const char *dir = "out/calibrate";
	long k = 6;
	int c;
	while ((c = plan_args_getopt(&cli_calibrate, argc, argv, &pa)) != -1) {
		switch (c) {
		case PLAN_ARGS_INVALID: return EXIT_PLAN;
		case 'k': {
			char *end;
			k = strtol(optarg, &end, 10);
			if (end == optarg || *end || k < 2 || k > CALIBRATE_MAX_RUNS) {
				errorf("invalid --runs '%s': expected 2 to %d", optarg,
				       CALIBRATE_MAX_RUNS);
				return EXIT_PLAN;
			}
			break;
		}
		case 'd': dir = optarg; break;
		case 'g':
			if (gate_metrics_parse("--gate", optarg, &g) < 0)
				return EXIT_PLAN;
			break;
		case 'h': return cli_usage_exit(&cli_calibrate, stdout);
		default: return cli_usage_exit(&cli_calibrate, stderr);
		}
	}
	if (optind != argc - 1)
		return cli_usage_exit(&cli_calibrate, stderr);
	const char *plan_path = argv[optind];
	_cleanup_(plan_freep) struct plan *p = NULL;
	_cleanup_(matrix_freep) struct matrix *m = plan_args_load(plan_path, &pa, &p);
	if (!m)
		return EXIT_PLAN;
	_cleanup_free_ char *err = NULL;
	if (mkdir_p(dir, 0755, &err) < 0) {
		errorf("%s", err);
		return EXIT_PLAN;
	}
	_cleanup_free_ char **paths = xcalloc((size_t)k + 1, sizeof(*paths));
	int rc = EXIT_OK;
	for (long i = 0; i < k; i++) {
		paths[i] = xasprintf("%s/run-%ld.json", dir, i + 1);
		struct stat st;
		if (rc != EXIT_OK || stat(paths[i], &st) == 0)
			continue;
		fprintf(stderr, "ferry: calibrate: run %ld of %ld into %s\n", i + 1, k, paths[i]);
		rc = calibrate_run(p, m, plan_path, paths[i]);
	}
	if (rc == EXIT_OK)
		rc = calibrate_compare(p, &g, paths, (size_t)k);
	for (long i = 0; i < k; i++)
		free(paths[i]);
	return rc;
}
