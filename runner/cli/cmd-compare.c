/* SPDX-License-Identifier: MIT */
/*
 * `ferry compare BASELINE... NEW`: a noise-aware verdict per cell and metric (compare.h).
 * Pipeline: options -> read the results files -> compare -> open every output (a bad path fails
 * before anything is written) -> render -> GitHub annotations and step summary -> exit status.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "commands.h"
#include "compare-report.h"
#include "compare.h"
#include "fs.h"
#include "reporters.h"
#include "results.h"
#include "units.h"
#include "util.h"

static int cmd_compare(int argc, char **argv);
static const struct cli_option compare_options[] = {
	{ .name = "markdown",
	  .id = 'm',
	  .arg = "FILE",
	  .value = CLI_FILE,
	  .help = "the comparison as Markdown ('-': standard output, the default)" },
	{ .name = "junit",
	  .id = 'j',
	  .arg = "FILE",
	  .value = CLI_FILE,
	  .help = "the comparison as JUnit XML (a regression is a failure)" },
	{ .name = "json",
	  .id = 'J',
	  .arg = "FILE",
	  .value = CLI_FILE,
	  .help = "the comparison as JSON" },
	{ .name = "html",
	  .id = 'H',
	  .arg = "FILE",
	  .value = CLI_FILE,
	  .help = "the comparison as one static HTML page with charts" },
	{ .name = "threshold",
	  .id = 't',
	  .arg = "[CELLS:][METRIC=]PERCENT",
	  .value = CLI_WORD,
	  .flags = CLI_REPEAT,
	  .help = "minimum relative change, default 5%; repeat as METRIC=PCT or "
		  "AXIS=VALUE[,...]:[METRIC=]PCT (last wins)" },
	{ .name = "confidence",
	  .id = 'c',
	  .arg = "PERCENT",
	  .value = CLI_WORD,
	  .help = "confidence of each bound and verdict, default 95%" },
	{ .name = "rule",
	  .id = 'r',
	  .value = CLI_ENUM,
	  .values = (const char *const[]){ "welch", "lkp", NULL },
	  .help = "welch (default) or lkp (stricter: ranges must not overlap)" },
	{ .name = "allow-different",
	  .id = 'a',
	  .arg = "KEY",
	  .value = CLI_ENUM,
	  .values = (const char *const[]){ "accelerator", "cpu_model", "qemu_version",
					   "libvirt_version", "guest_kernel", "guest_initramfs",
					   "dataset", "params", "all", NULL },
	  .flags = CLI_REPEAT,
	  .help = "compare across this difference (accelerator, cpu_model, qemu_version, "
		  "libvirt_version, guest_kernel, guest_initramfs, dataset[.NAME], params, all)" },
	{ .name = "gate",
	  .id = 'g',
	  .arg = "METRIC,...",
	  .value = CLI_WORD,
	  .help = "the metrics whose regression fails (exit 1), default total; the others are "
		  "reported, never fatal" },
	{ .name = "control",
	  .id = 'K',
	  .arg = "AXIS=VALUE,...",
	  .value = CLI_WORD,
	  .help = "a cell of both files that the change does not touch: the gated times of the "
		  "other cells are judged by their ratio to it in the same blocks, which cancels "
		  "the host's moment (default: the new file's plan's regression.control; none: "
		  "no control)" },
	{ .name = "confirm-with",
	  .id = 'C',
	  .arg = "FILE",
	  .value = CLI_RESULTS,
	  .help = "a rerun of the new file's cells (the confirmation ferry run makes): a "
		  "regression fails only "
		  "when the rerun's cell regressed against the same baseline too" },
	{ .name = "screen",
	  .id = 'S',
	  .arg = "PERCENT",
	  .value = CLI_WORD,
	  .help = "with --confirm-with: the confidence at which a gated row is suspected, "
		  "default 80%; the rerun's test at --confidence decides" },
	CLI_END,
};
const struct cli_command cli_compare = {
	.name = "compare",
	.operands = "BASELINE... NEW",
	.operand = CLI_RESULTS,
	.summary = "did it get slower? a noise-aware verdict per cell",
	.about =
	    "Compare a new results file with a baseline (a results file, or a directory of them;\n"
	    "with several, the newest N comparable ones are pooled). Each cell and metric is\n"
	    "regressed, improved, unchanged or inconclusive; see ferry(1) COMPARE for the rule.\n"
	    "With no output option the Markdown goes to standard output. Under GitHub Actions\n"
	    "regressions become ::error annotations and the Markdown is appended to\n"
	    "$GITHUB_STEP_SUMMARY. Exit: 0 no regression, 1 a regression, 2 bad input or a\n"
	    "refused comparison.",
	.opts = (const struct cli_option *const[]){ compare_options, cli_window_option, NULL },
	.run = cmd_compare,
};

/* A list of strings that grows (borrowed or owned by the caller). */
struct strv {
	char **v;
	size_t n;
};

static void strv_add(struct strv *s, char *x)
{
	s->v = xrealloc(s->v, (s->n + 1) * sizeof(*s->v));
	s->v[s->n++] = x;
}

static void strv_free(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A baseline argument: a file, or a directory whose *.json regular files are baselines. */
static int expand_baseline(const char *arg, struct strv *out)
{
	struct stat st;
	if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
		DIR *d = opendir(arg);
		if (!d) {
			errorf("%s: cannot list the directory", arg);
			return -1;
		}
		size_t first = out->n;
		for (struct dirent *e; (e = readdir(d));) {
			size_t n = strlen(e->d_name);
			if (e->d_name[0] == '.' || n < 6 || !STREQ(e->d_name + n - 5, ".json"))
				continue;
			/* a listing follows no link: a plan's baseline directory may come from a
			 * pull request, and "x.json -> /etc/shadow" would be read and quoted */
			struct stat est;
			const char *is = "", *why = NULL;
			if (fstatat(dirfd(d), e->d_name, &est, AT_SYMLINK_NOFOLLOW) < 0)
				why = strerror(errno);
			else if (!S_ISREG(est.st_mode))
				is = "is ", why = file_kind(est.st_mode);
			if (why) {
				errorf("%s/%s: %s%s: the results files of a baseline directory are "
				       "read only when they are regular files (no symbolic links)",
				       arg, e->d_name, is, why);
				closedir(d);
				return -1;
			}
			strv_add(out, xasprintf("%s/%s", arg, e->d_name));
		}
		closedir(d);
		qsort(out->v + first, out->n - first, sizeof(*out->v), cmp_str);
		if (out->n == first) {
			errorf("%s: no results files (*.json) in the directory", arg);
			return -1;
		}
		return 0;
	}
	strv_add(out, xstrdup(arg));
	return 0;
}

static int parse_confidence(const char *opt, const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || !(STREQ(end, "%") || !*end) || !(v > 50 && v < 100)) {
		errorf("invalid %s '%s': expected a percentage above 50%% and below 100%%, like "
		       "95%%",
		       opt, s);
		return -1;
	}
	*out = v / 100;
	return 0;
}

static bool known_key(const char *k)
{
	if (STREQ(k, "all") || !strncmp(k, "dataset.", 8))
		return true;
	for (size_t i = 0; cmp_refusing_keys[i]; i++)
		if (STREQ(cmp_refusing_keys[i], k))
			return true;
	return false;
}

/* Write one report to path (atomically; "-" is standard output). */
static int write_report(const char *path, int (*fn)(void *, FILE *, char **), void *ud)
{
	struct report_output o;
	_cleanup_free_ char *err = NULL;
	if (report_output_open(&o, path, &err) < 0) {
		errorf("%s", err);
		return -1;
	}
	if (fn(ud, o.f, &err) < 0) {
		errorf("%s: %s", path, err);
		report_output_abort(&o);
		return -1;
	}
	if (report_output_commit(&o, &err) < 0) {
		errorf("%s", err);
		return -1;
	}
	return 0;
}

struct render {
	const struct comparison *c;
	const struct results *cand;
	const struct compare_report_ctx *x;
};

static int do_md(void *ud, FILE *f, char **err)
{
	struct render *r = ud;
	return report_compare_markdown(r->c, r->cand, r->x, f, err);
}

static int do_html(void *ud, FILE *f, char **err)
{
	struct render *r = ud;
	return report_compare_html(r->c, r->cand, r->x, f, err);
}

static int do_junit(void *ud, FILE *f, char **err)
{
	struct render *r = ud;
	return report_compare_junit(r->c, r->cand, r->x, f, err);
}

static int do_json(void *ud, FILE *f, char **err)
{
	struct render *r = ud;
	return report_compare_json(r->c, r->x, f, err);
}

/* Under GitHub Actions: annotations on standard output, the Markdown in the step summary. */
static void github(const struct render *r)
{
	const char *gha = getenv("GITHUB_ACTIONS");
	if (!gha || !STREQ(gha, "true"))
		return;
	_cleanup_free_ char *ann = report_compare_annotations(r->c);
	fputs(ann, stdout);
	fflush(stdout);
	char *md = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&md, &len);
	_cleanup_free_ char *err = NULL;
	if (!m)
		return;
	int rc = report_compare_markdown(r->c, r->cand, r->x, m, &err);
	fclose(m);
	if (rc == 0 && report_step_summary_append(md, len, &err) < 0)
		warnf("cannot append to GITHUB_STEP_SUMMARY: %s", err);
	free(md);
}

/* The answer on standard error, in the Markdown's words (report_compare_summary()). */
static void print_summary(const struct comparison *c)
{
	fflush(stdout); /* after the Markdown, when it went to the same terminal */
	_cleanup_free_ char *text = report_compare_summary(c);
	for (char *line = text; *line;) {
		size_t n = strcspn(line, "\n");
		char *next = line + n + (line[n] == '\n');
		line[n] = '\0';
		_cleanup_free_ char *clean = escape_controls(line);
		fprintf(stderr, "ferry: %s\n", clean);
		line = next;
	}
}

/* Read every baseline of paths; NULL after printing why one could not be read. */
static struct results **read_all(const struct strv *paths)
{
	_cleanup_free_ char *err = NULL;
	struct results **base = results_read_all((const char *const *)paths->v, paths->n, &err);
	if (!base)
		errorf("%s", err);
	return base;
}

/* The rerun of the cells whose gated metric regressed (run_baseline.confirm), or NULL. */
static struct results *confirm_rerun(const struct comparison *cmp, const struct run_baseline *b)
{
	_cleanup_free_ const char **cells = xcalloc(cmp->n_rows + 2, sizeof(*cells));
	size_t n = 0;
	bool control = false;
	for (size_t i = 0; i < cmp->n_rows; i++) {
		const struct cmp_row *row = &cmp->rows[i];
		if (row->verdict == CMP_REGRESSED && row->gated &&
		    (!n || !STREQ(cells[n - 1], row->cell))) {
			cells[n++] = row->cell;
			control |= row->controlled;
		}
	}
	/* a row judged relative to the control is confirmed relative to it: the rerun runs the
	 * control in the same blocks (it is not counted among the suspected cells) */
	size_t suspected = n;
	bool listed = false;
	for (size_t i = 0; i < n && control; i++)
		listed |= STREQ(cells[i], cmp->control_cell);
	if (control && !listed)
		cells[n++] = cmp->control_cell;
	fprintf(stderr,
		"ferry: suspected regression in %zu cell%s: rerunning %s in %u new block%s to "
		"confirm it\n",
		suspected, suspected == 1 ? "" : "s", suspected == 1 ? "it" : "them", b->confirm,
		b->confirm == 1 ? "" : "s");
	struct results *rerun = b->rerun(b->rerun_ud, cells, n, b->confirm);
	if (!rerun)
		warnf("the rerun did not run: the rows are judged at the confidence alone");
	return rerun;
}

int compare_run_results(struct results *r, const struct run_baseline *b)
{
	struct strv paths = { 0 };
	int rc = 0;
	for (size_t i = 0; i < b->n_paths; i++) {
		struct stat st;
		if (stat(b->paths[i], &st) < 0) {
			warnf("baseline '%s' does not exist (yet): nothing to compare with",
			      b->paths[i]);
			continue;
		}
		if (expand_baseline(b->paths[i], &paths) < 0) {
			strv_free(&paths);
			return EXIT_PLAN;
		}
	}
	if (!paths.n) {
		strv_free(&paths);
		return 0;
	}
	struct results **base = read_all(&paths);
	struct compare_opts o = {
		.threshold = b->threshold,
		.confidence = b->confidence,
		.rule = b->rule,
		.window = b->window ? b->window : 1,
		.gate = b->gate,
		.n_gate = b->n_gate,
		.control = b->control,
		.screen = b->screen,
		/* two stages: suspects at the screen, the rerun decides */
		.confirming = b->confirm && b->rerun,
	};
	_cleanup_free_ char *err = NULL;
	struct comparison *cmp =
	    base ? compare_results((const struct results *const *)base, paths.n, r, &o, &err)
		 : NULL;
	_cleanup_(results_freep) struct results *rerun = NULL;
	if (cmp && !cmp->refused && o.confirming) {
		/* the screen only picks what to rerun: with no rerun (none suspected, or it could
		 * not run) every row is judged at the confidence, as without --confirm */
		if (cmp->failed_cells)
			rerun = confirm_rerun(cmp, b);
		o.confirm = rerun;
		o.confirming = false;
		comparison_free(cmp);
		cmp = compare_results((const struct results *const *)base, paths.n, r, &o, &err);
	}
	if (!cmp) {
		if (err)
			errorf("compare: %s", err);
		rc = EXIT_PLAN;
	} else if (cmp->refused) {
		_cleanup_free_ char *why = comparison_refusal(cmp);
		errorf("baseline: %s", why);
		rc = EXIT_PLAN;
	} else {
		/* a regressed metric is the cell's error: every report of the run carries it */
		for (size_t i = 0; i < cmp->n_rows; i++) {
			const struct cmp_row *row = &cmp->rows[i];
			if (row->verdict != CMP_REGRESSED || !row->gated)
				continue;
			struct result_cell *c = &r->cells[row->cand - r->cells];
			result_cell_add_error(
			    c, ERROR_REGRESSION,
			    "regression of %s: %+.1f%% [%.0f%% CI %+.1f%%, %+.1f%%] against the "
			    "baseline (median %.6g %s, now %.6g %s; boots %zu/%zu; threshold "
			    "%.3g%%)",
			    row->metric, 100 * row->change, comparison_interval_pct(cmp),
			    100 * row->ci_low, 100 * row->ci_high, row->median_base, row->unit,
			    row->median_cand, row->unit, row->boots_base, row->boots_cand,
			    100 * row->threshold);
			if (c->status == STATUS_PASSED)
				c->status = STATUS_FAILED;
		}
		fprintf(stderr,
			"ferry: compared with %zu baseline%s: %zu regressed, %zu improved, %zu "
			"unchanged, %zu inconclusive (cell and metric pairs)\n",
			cmp->n_used, cmp->n_used == 1 ? "" : "s", cmp->counts[CMP_REGRESSED],
			cmp->counts[CMP_IMPROVED], cmp->counts[CMP_UNCHANGED],
			cmp->counts[CMP_INCONCLUSIVE]);
	}
	if (cmp) {
		struct compare_report_ctx x = {
			.baselines = (const char *const *)paths.v,
			.n_baselines = paths.n,
			.cand = "this run",
		};
		struct render rd = { cmp, r, &x };
		if (b->markdown && write_report(b->markdown, do_md, &rd) < 0)
			rc = EXIT_PLAN;
		github(&rd);
		comparison_free(cmp);
	}
	if (base)
		results_free_array(base, paths.n);
	strv_free(&paths);
	return rc;
}

int compare_exit_code(const struct comparison *c)
{
	if (c->refused)
		return EXIT_PLAN;
	return c->failed_cells ? EXIT_FAILED : EXIT_OK;
}

/* What `ferry compare`'s command line said. */
struct compare_args {
	const char *md, *junit, *json, *html;
	struct compare_opts o;
	struct cmp_threshold *th;
	size_t n_th;
	struct strv allow;
	bool window_set;
	struct gate_metrics gate;
	struct results *confirm;
};

static void compare_args_free(struct compare_args *a)
{
	for (size_t i = 0; i < a->n_th; i++)
		cmp_threshold_clear(&a->th[i]);
	free(a->th);
	strv_free(&a->allow);
	gate_metrics_free(&a->gate);
	results_free(a->confirm);
}

/* --threshold [CELLS:][METRIC=]PERCENT: the default, or one more specific threshold */
static int compare_threshold(struct compare_args *a, const char *arg)
{
	_cleanup_free_ char *err = NULL;
	struct cmp_threshold t;
	if (cmp_threshold_parse(arg, &t, &err) < 0) {
		errorf("%s", err);
		return -1;
	}
	if (!t.where && !t.metric) {
		a->o.threshold = t.value;
		cmp_threshold_clear(&t);
		return 0;
	}
	a->th = xrealloc(a->th, (a->n_th + 1) * sizeof(*a->th));
	a->th[a->n_th++] = t;
	return 0;
}

/* One option of `compare` into *a. Returns -1 to go on, else the exit status to return. */
static int compare_option(struct compare_args *a, int c)
{
	switch (c) {
	case 'm': a->md = optarg; return -1;
	case 'j': a->junit = optarg; return -1;
	case 'J': a->json = optarg; return -1;
	case 'H': a->html = optarg; return -1;
	case 't': return compare_threshold(a, optarg) < 0 ? EXIT_PLAN : -1;
	case 'c':
		return parse_confidence("--confidence", optarg, &a->o.confidence) < 0 ? EXIT_PLAN
										      : -1;
	case 'S': return parse_confidence("--screen", optarg, &a->o.screen) < 0 ? EXIT_PLAN : -1;
	case 'r': {
		int r = cmp_rule_from_name(optarg);
		if (r < 0) {
			errorf("invalid --rule '%s': expected welch or lkp", optarg);
			return EXIT_PLAN;
		}
		a->o.rule = (enum cmp_rule)r;
		return -1;
	}
	case 'a':
		if (!known_key(optarg)) {
			errorf("invalid --allow-different '%s': expected accelerator, "
			       "cpu_model, qemu_version, libvirt_version, guest_kernel, "
			       "guest_initramfs, dataset, dataset.NAME, params or all",
			       optarg);
			return EXIT_PLAN;
		}
		strv_add(&a->allow, xstrdup(optarg));
		return -1;
	case OPT_WINDOW:
		if (cli_parse_window(optarg, &a->o.window) < 0)
			return EXIT_PLAN;
		a->window_set = true;
		return -1;
	case 'g': return gate_metrics_parse("--gate", optarg, &a->gate) < 0 ? EXIT_PLAN : -1;
	case 'K': a->o.control = optarg; return -1;
	case 'C': {
		_cleanup_free_ char *err = NULL;
		results_free(a->confirm);
		a->confirm = results_read(optarg, &err);
		if (!a->confirm) {
			errorf("%s", err);
			return EXIT_PLAN;
		}
		return -1;
	}
	case 'h': return cli_usage_exit(&cli_compare, stdout);
	default: cli_usage_exit(&cli_compare, stderr); return EXIT_PLAN;
	}
}

/* Writes every output the options name (Markdown on standard output when none), then the
 * GitHub annotations. Returns the exit status. */
static int compare_render(struct compare_args *a, struct comparison *cmp,
			  const struct results *cand, const struct strv *paths,
			  const char *cand_path)
{
	struct compare_report_ctx x = {
		.baselines = (const char *const *)paths->v,
		.n_baselines = paths->n,
		.cand = cand_path,
	};
	struct render r = { cmp, cand, &x };
	int out_rc = 0;
	if (!a->md && !a->junit && !a->json && !a->html)
		a->md = "-";
	if (a->md && write_report(a->md, do_md, &r) < 0)
		out_rc = -1;
	if (a->junit && write_report(a->junit, do_junit, &r) < 0)
		out_rc = -1;
	if (a->json && write_report(a->json, do_json, &r) < 0)
		out_rc = -1;
	if (a->html && write_report(a->html, do_html, &r) < 0)
		out_rc = -1;
	github(&r);
	print_summary(cmp);
	if (cmp->refused) {
		_cleanup_free_ char *why = comparison_refusal(cmp);
		errorf("%s", why);
	}
	return out_rc < 0 ? EXIT_PLAN : compare_exit_code(cmp);
}

/* Reads the baselines (paths) and the new results file, compares and renders. Returns the exit
 * status. */
static int compare_files(struct compare_args *a, const struct strv *paths, const char *cand_path)
{
	if (!a->window_set)
		a->o.window = paths->n; /* every baseline named is pooled */
	a->o.thresholds = a->th;
	a->o.n_thresholds = a->n_th;
	a->o.allow_different = (const char *const *)a->allow.v;
	a->o.n_allow_different = a->allow.n;
	a->o.gate = (const char *const *)a->gate.v;
	a->o.n_gate = a->gate.n;
	a->o.confirm = a->confirm;

	_cleanup_free_ char *err = NULL;
	_cleanup_(results_freep) struct results *cand = results_read(cand_path, &err);
	if (!cand)
		errorf("%s", err);
	/* no --control: the new file's plan's regression.control, as `ferry run --baseline` and
	 * `ferry calibrate` use it; --control none: no control */
	bool from_plan = cand && !a->o.control && cand->plan.control;
	if (from_plan)
		a->o.control = cand->plan.control;
	else if (a->o.control && STREQ(a->o.control, "none"))
		a->o.control = NULL;
	struct results **base = cand ? read_all(paths) : NULL;
	struct comparison *cmp = NULL;
	if (base) {
		free(err);
		err = NULL;
		cmp = compare_results((const struct results *const *)base, paths->n, cand, &a->o,
				      &err);
		if (!cmp && from_plan)
			errorf(
			    "compare: %s (the control is the new file's plan's regression.control; "
			    "--control none compares without one)",
			    err);
		else if (!cmp)
			errorf("compare: %s", err);
	}
	int rc = EXIT_PLAN;
	if (cmp) {
		rc = compare_render(a, cmp, cand, paths, cand_path);
		comparison_free(cmp);
	}
	if (base)
		results_free_array(base, paths->n);
	return rc;
}

static int cmd_compare(int argc, char **argv)
{
	_cleanup_(compare_args_free) struct compare_args a = { 0 };
	int c, code;
	while ((c = cli_getopt(&cli_compare, argc, argv)) != -1)
		if ((code = compare_option(&a, c)) >= 0)
			return code;
	if (argc - optind < 2) {
		errorf("compare: expected a baseline and a new results file");
		cli_usage_exit(&cli_compare, stderr);
		return EXIT_PLAN;
	}
	struct strv paths = { 0 };
	for (int i = optind; i < argc - 1; i++)
		if (expand_baseline(argv[i], &paths) < 0) {
			strv_free(&paths);
			return EXIT_PLAN;
		}
	int rc = compare_files(&a, &paths, argv[argc - 1]);
	strv_free(&paths);
	return rc;
}
