/* SPDX-License-Identifier: MIT */
/* ferry run: parse -> expand -> open reports -> execute -> render. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../reporters/reporters.h"
#include "capacity-plan.h"
#include "cli.h"
#include "pivot-verdicts.h"
#include "commands.h"
#include "dataset.h"
#include "fs.h"
#include "exec.h"
#include "plan.h"
#include "status.h"
#include "units.h"
#include "util.h"

static int cmd_run(int argc, char **argv);
static const struct cli_option run_hosts_options[] = {
	{ .name = "connect",
	  .id = 'c',
	  .arg = "URI",
	  .value = CLI_WORD,
	  .flags = CLI_REPEAT,
	  .help = "the libvirt URI, overriding the plan's connect (default qemu:///system); "
		  "several fan the cells out over those hosts" },
	{ .name = "hosts",
	  .id = 'H',
	  .arg = "FILE",
	  .value = CLI_FILE,
	  .help = "more hosts for the fan-out: one libvirt URI a line" },
	{ .name = "storage",
	  .id = 'S',
	  .value = CLI_ENUM,
	  .values = (const char *const[]){ "auto", "local", "volumes", NULL },
	  .help = "whether the libvirt host shares ferry's filesystem (auto: from the URI)" },
	CLI_END,
};
static const struct cli_option run_options[] = {
	{ .name = "results",
	  .id = 'r',
	  .arg = "FILE",
	  .value = CLI_FILE,
	  .help =
	      "the results file, rewritten after every cell (default: the plan's report.json)" },
	{ .name = "resume",
	  .id = 'R',
	  .arg = "FILE",
	  .value = CLI_RESULTS,
	  .help = "run only the cells the results file FILE does not list as finished" },
	{ .name = "rerun-failed", .id = 'F', .help = "with --resume, run failed cells again too" },
	{ .name = "fail-fast", .id = 'f', .help = "stop at the first failing cell" },
	{ .name = "quiet",
	  .id = 'q',
	  .short_name = 'q',
	  .help = "no progress and no summary on standard error" },
	{ .name = "verbose",
	  .id = 'v',
	  .short_name = 'v',
	  .help = "also print boots, switches, datasets and where the wall time went" },
	{ .name = "no-capacity-check",
	  .id = 'K',
	  .help = "run even when the host looks too small for the plan" },
	{ .name = "allow-empty",
	  .id = 'E',
	  .help = "exit 0 even when no cell produced a measured run (else 4)" },
	{ .name = "baseline",
	  .id = 'b',
	  .arg = "FILE",
	  .value = CLI_RESULTS,
	  .flags = CLI_REPEAT,
	  .help = "compare the run with this baseline (a results file or a directory of them)" },
	{ .name = "gate",
	  .id = 'g',
	  .arg = "METRIC,...",
	  .value = CLI_WORD,
	  .help = "with a baseline: the metrics whose regression fails the run (default: the "
		  "plan's regression.gate, else total); the others are reported, never fatal" },
	{ .name = "confirm",
	  .id = 'C',
	  .arg = "N",
	  .value = CLI_WORD,
	  .help = "with a baseline: rerun a suspected regression's cells in N new blocks and fail "
		  "only when the rerun agrees; 0 or 3 to 20 (default: the plan's "
		  "regression.confirm)" },
	CLI_END,
};
const struct cli_command cli_run = {
	.name = "run",
	.operands = "PLAN",
	.operand = CLI_PLAN,
	.summary = "run a plan: every cell, timed, verified, reported",
	.about = "Run every cell of a plan against real guests, verify every run, and write the\n"
		 "results file (after every cell) and the reports the plan or the options name.\n"
		 "With --baseline (a results file or a directory of them) or the plan's baseline:\n"
		 "the run compares itself (ferry(1) COMPARE), and a regressed cell fails.\n"
		 "--connect given several times (or --hosts FILE, one URI a line) fans the cells\n"
		 "out over those libvirt hosts, one cell (or shared-VM group) at a time per host,\n"
		 "all hosts at once; a host that fails is reported and its unfinished cells go to\n"
		 "the others (ferry(1) REMOTE HOSTS).\n"
		 "Exit: 0 all passed, 1 a criterion, integrity check or regression failed, 2 plan\n"
		 "errors or a refused comparison,\n"
		 "3 infrastructure errors, 4 nothing measured (no cell has a measured run: all\n"
		 "skipped, or an empty shard; --allow-empty makes that 0), 128+N interrupted by\n"
		 "signal N: 129 SIGHUP, 130 SIGINT, 131 SIGQUIT, 143 SIGTERM (results written,\n"
		 "domains and run directory removed). Under GitHub Actions, failed cells and\n"
		 "broken criteria are also printed as ::error annotations.",
	.opts = (const struct cli_option *const[]){ run_hosts_options, cli_shard_option,
						    cli_report_options, run_options,
						    cli_window_option, cli_plan_options, NULL },
	.run = cmd_run,
};

/*
 * Reports go to directories such as out/ that a fresh checkout does not have yet: the missing
 * parents of an output path are created when the path stays inside the working directory
 * (relative, no ".." component). Anywhere else the directory must exist, and opening the output
 * fails naming it: ferry does not create directories elsewhere on the host.
 */
static void mkdir_parents(const char *path)
{
	if (!path || STREQ(path, "-") || path[0] == '/')
		return;
	_cleanup_free_ char *d = xstrdup(path);
	char *slash = strrchr(d, '/');
	if (!slash)
		return;
	*slash = '\0';
	for (const char *c = d; *c; c += strcspn(c, "/"), c += *c == '/') {
		if (strncmp(c, "..", 2) == 0 && (c[2] == '/' || c[2] == '\0'))
			return;
	}
	(void)mkdir_p(d, 0755, NULL); /* a failure shows when the output is opened */
}

/* Progress of the executor on standard error: a live status line on a TTY, fitted to its
 * width (status.c), else plain lines. */
static void show_status(void *ud, const char *text)
{
	term_status_draw(ud, text);
}

static void show_line(void *ud, const char *text)
{
	term_status_line(ud, text);
}

static void show_error(void *ud, const char *text)
{
	term_status_clear(ud);
	errorf("%s", text);
}

/* The cells with at least one measured run (counted in their statistics). */
static size_t measured_cells(const struct results *r)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n_cells; i++)
		n += r->cells[i].has_stats && r->cells[i].stats.total.n > 0;
	return n;
}

/* Whether the plan's baseline, symbolic links resolved, is below the working directory (the
 * plan reader checked the text; a link inside the tree may still point elsewhere). A baseline
 * that does not exist yet is fine: there is nothing to read. */
static bool plan_baseline_inside(const char *path)
{
	_cleanup_free_ char *real = realpath(path, NULL);
	_cleanup_free_ char *cwd = realpath(".", NULL);
	if (!real)
		return errno == ENOENT;
	if (!cwd)
		return false;
	size_t n = strlen(cwd);
	return STREQ(cwd, "/") || (!strncmp(real, cwd, n) && (real[n] == '/' || !real[n]));
}

/* The exit status of a run that happened (ferry(1) EXIT STATUS). A run that would pass but
 * measured nothing (every cell skipped, an empty shard) is EXIT_EMPTY: a CI job that measured
 * nothing must not pass unless --allow-empty says that is expected. */
static int exit_code(const struct exec_result *st, const struct results *r, bool allow_empty)
{
	if (st->signal) /* 129 SIGHUP, 130 SIGINT, 131 SIGQUIT, 143 SIGTERM */
		return 128 + st->signal;
	if (st->counts[STATUS_ERROR])
		return EXIT_INFRA;
	/* a host failed and cells it could not hand on are left (--resume runs them) */
	if (st->hosts_lost && st->counts[STATUS_PENDING])
		return EXIT_INFRA;
	if (st->counts[STATUS_FAILED])
		return EXIT_FAILED;
	if (!allow_empty && measured_cells(r) == 0)
		return EXIT_EMPTY;
	return EXIT_OK;
}

/* --verbose: where the wall time went (exec_result.time). */
static void print_time_breakdown(const struct exec_result *st)
{
	const struct exec_time *t = &st->time;
	_cleanup_free_ char *boots = xasprintf("boots (%u)", st->boots);
	_cleanup_free_ char *switches = xasprintf("disk switches (%u)", st->switches);
	struct {
		const char *what;
		double s;
	} rows[] = {
		{ "measured phases", t->measured },
		{ "setup", t->setup },
		{ boots, t->boots },
		{ "KVM probe", t->kvm_probe },
		{ "datasets", t->datasets },
		{ switches, t->switches },
		{ "reset, cache drop", t->resets },
		{ "verify", t->verify },
		{ "cleanup", t->cleanup },
		{ "warmup, failed runs", t->unmeasured },
		{ "guests destroyed", t->teardown },
		{ "results file", t->results },
		{ "other", 0 },
	};
	size_t n = ELEMENTSOF(rows);
	double sum = 0;
	for (size_t i = 0; i + 1 < n; i++)
		sum += rows[i].s;
	rows[n - 1].s = st->wall_s > sum ? st->wall_s - sum : 0.0;
	fprintf(stderr, "ferry: where the wall time of %.1f s went:\n", st->wall_s);
	for (size_t i = 0; i < n; i++)
		if (rows[i].s > 0 || i == 0)
			fprintf(stderr, "ferry:   %-20s %8.1f s %5.1f%%\n", rows[i].what, rows[i].s,
				st->wall_s > 0 ? 100.0 * rows[i].s / st->wall_s : 0.0);
	double w = st->wall_s - t->kvm_probe;
	fprintf(stderr, "ferry: measured phases / wall (less the KVM probe): %.2f\n",
		w > 0 ? t->measured / w : 0.0);
}

/* --hosts FILE: one libvirt URI a line; blank lines and lines starting with # are skipped. */
static int read_hosts(const char *path, char ***uris, size_t *n)
{
	size_t len = 0;
	_cleanup_free_ char *text = read_file(path, &len);
	if (!text) {
		errorf("cannot read --hosts '%s': %s", path, strerror(errno));
		return -1;
	}
	size_t before = *n;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line += strspn(line, " \t\r");
		size_t l = strlen(line);
		while (l && strchr(" \t\r", line[l - 1]))
			line[--l] = '\0';
		if (!l || line[0] == '#')
			continue;
		*uris = xrealloc(*uris, (*n + 1) * sizeof(**uris));
		(*uris)[(*n)++] = xstrdup(line);
	}
	if (*n == before) {
		errorf("--hosts '%s' names no host (one libvirt URI a line)", path);
		return -1;
	}
	return 0;
}

struct uri_list {
	char **v;
	size_t n;
};
static void free_uris(struct uri_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

/* --storage: whether the libvirt host shares ferry's filesystem (ferry(1) REMOTE HOSTS). */
static int parse_storage(const char *s, enum machine_storage *out)
{
	static const char *const names[] = { "auto", "local", "volumes" };
	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (STREQ(s, names[i])) {
			*out = (enum machine_storage)i;
			return 0;
		}
	errorf("invalid --storage '%s': expected auto, local or volumes", s);
	return -1;
}

/* The answer, in the Markdown report's words (its Verdicts section): per pivot column the
 * fastest mean and every other configuration's verdict against it. */
static void print_verdicts(const struct results *r, const struct report_markdown_opts *o)
{
	_cleanup_free_ char *err = NULL;
	_cleanup_free_ char *text = report_pivot_summary(r, o, &err);
	if (!text) {
		warnf("no verdicts: %s", err);
		return;
	}
	for (char *line = text, *end; *line; line = end + (*end == '\n')) {
		end = line + strcspn(line, "\n");
		fprintf(stderr, "ferry: %.*s\n", (int)(end - line), line);
	}
}

/* What `ferry run`'s command line said. */
struct run_args {
	struct plan_args pa;
	struct machine_libvirt_opts lvo;
	struct exec_opts eo;
	bool quiet, no_capacity_check, allow_empty;
	const char *paths[REPORT_FORMAT_COUNT];
	const char *resume;
	size_t window;
	const char **baselines;
	size_t n_baselines;
	struct gate_metrics gate; /* --gate */
	long confirm;             /* --confirm N; -1: the plan's */
	/* --connect and --hosts, in order: one host is the connection, several the fan-out */
	struct uri_list ul;
};

static void run_args_free(struct run_args *a)
{
	plan_args_free(&a->pa);
	free_uris(&a->ul);
	free(a->baselines);
	gate_metrics_free(&a->gate);
}

/* Reads the options into *a. Returns -1 to go on, else the exit status to return. */
static int run_parse_args(struct run_args *a, int argc, char **argv)
{
	a->lvo.storage = MACHINE_STORAGE_AUTO;
	a->eo.error = show_error;
	a->eo.machine_data = &a->lvo;
	a->confirm = -1;
	int c;
	while ((c = plan_args_getopt(&cli_run, argc, argv, &a->pa)) != -1) {
		switch (c) {
		case PLAN_ARGS_INVALID: return EXIT_PLAN;
		case 'c':
			a->ul.v = xrealloc(a->ul.v, (a->ul.n + 1) * sizeof(*a->ul.v));
			a->ul.v[a->ul.n++] = xstrdup(optarg);
			break;
		case 'H':
			if (read_hosts(optarg, &a->ul.v, &a->ul.n) < 0)
				return EXIT_PLAN;
			break;
		case 'S':
			if (parse_storage(optarg, &a->lvo.storage) < 0)
				return EXIT_PLAN;
			break;
		case 'r': a->eo.results_path = optarg; break;
		case 'R': a->resume = optarg; break;
		case 'F': a->eo.rerun_failed = true; break;
		case 'f': a->eo.fail_fast = true; break;
		case 'q': a->quiet = true; break;
		case 'v': a->eo.verbose = true; break;
		case 'K': a->no_capacity_check = true; break;
		case 'b':
			a->baselines =
			    xrealloc(a->baselines, (a->n_baselines + 1) * sizeof(*a->baselines));
			a->baselines[a->n_baselines++] = optarg;
			break;
		case OPT_WINDOW:
			if (cli_parse_window(optarg, &a->window) < 0)
				return EXIT_PLAN;
			break;
		case 'E': a->allow_empty = true; break;
		case 'g':
			if (gate_metrics_parse("--gate", optarg, &a->gate) < 0)
				return EXIT_PLAN;
			break;
		case 'C':
			if ((a->confirm = gate_parse_confirm(optarg)) < 0)
				return EXIT_PLAN;
			break;
		case 'h': return cli_usage_exit(&cli_run, stdout);
		default:
			if (c >= OPT_REPORT && c < OPT_REPORT + REPORT_FORMAT_COUNT) {
				a->paths[c - OPT_REPORT] = optarg;
				break;
			}
			return cli_usage_exit(&cli_run, stderr);
		}
	}
	if (optind != argc - 1)
		return cli_usage_exit(&cli_run, stderr);
	a->eo.plan_path = argv[optind];
	a->eo.shard_k = a->pa.shard_k;
	a->eo.shard_n = a->pa.shard_n;
	if (a->ul.n == 1)
		a->eo.connect = a->ul.v[0];
	else if (a->ul.n > 1) {
		a->eo.hosts = (const char *const *)a->ul.v;
		a->eo.n_hosts = a->ul.n;
	}
	return -1;
}

/* Before anything runs: the plan's baseline, the host's capacity, the report paths and the
 * results file to resume. Returns EXIT_OK or the exit status to return. */
static int run_prepare(struct run_args *a, const struct plan *p, const struct matrix *m)
{
	if (!a->n_baselines && p->baseline && !plan_baseline_inside(p->baseline)) {
		errorf(
		    "baseline '%s' resolves outside the working directory (through a symbolic "
		    "link): a plan reads a baseline only below it (name it with --baseline FILE)",
		    p->baseline);
		return EXIT_PLAN;
	}
	if (!a->no_capacity_check) {
		/* disk space and memory before anything is generated or booted (ferry(1) CAPACITY)
		 */
		_cleanup_free_ char *cache = dataset_cache_dir(), *cerr = NULL;
		if (capacity_plan_guests(p, m, &cerr) < 0) {
			errorf("%s (--no-capacity-check runs anyway)", cerr);
			return EXIT_PLAN;
		}
		if (capacity_plan(p, m, cache, run_base_dir(), &cerr) < 0) {
			errorf("%s (--no-capacity-check runs anyway)", cerr);
			return EXIT_INFRA;
		}
	}

	/* the plan's report paths, unless an option overrides them */
	for (int i = 0; i < REPORT_FORMAT_COUNT; i++)
		if (!a->paths[i])
			a->paths[i] = plan_report_path(&p->report, i);
	if (!a->eo.results_path)
		a->eo.results_path = a->resume ? a->resume : a->paths[REPORT_JSON];

	if (a->resume) {
		_cleanup_free_ char *err = NULL;
		a->eo.resume = results_read(a->resume, &err);
		if (!a->eo.resume) {
			errorf("%s", err);
			return EXIT_PLAN;
		}
		/* ids are built from names only: refuse numbers measured for another plan */
		if (exec_check_resume(p, m, a->eo.plan_path, a->eo.resume, &err) < 0) {
			errorf("%s: %s", a->resume, err);
			results_free(a->eo.resume);
			return EXIT_PLAN;
		}
	}

	for (int i = 0; i < REPORT_FORMAT_COUNT; i++)
		mkdir_parents(a->paths[i]);
	mkdir_parents(a->eo.results_path);
	return EXIT_OK;
}

/* Opens every report before the run, so that an unwritable one fails before anything boots. */
static int run_open_reports(const struct run_args *a, const struct plan *p, struct report_set *rs)
{
	for (int i = 0; i < REPORT_FORMAT_COUNT; i++)
		rs->paths[i] = a->paths[i];
	if (p->report.markdown.set) {
		rs->opts.markdown.rows = p->report.markdown.rows;
		rs->opts.markdown.cols = p->report.markdown.cols;
		rs->opts.markdown.metric = p->report.markdown.metric;
	}
	_cleanup_free_ char *err = NULL;
	if (report_set_open(rs, &err) < 0) {
		errorf("%s", err);
		return -1;
	}
	return 0;
}

/* --baseline or the plan's baseline: compares the run, marks regressions and rewrites the
 * results file with them. Returns compare_run_results()'s status. */
static int run_compare_baselines(const struct run_args *a, const struct plan *p,
				 const struct matrix *m, struct results *r, struct exec_result *st)
{
	/* the plan's baseline (checked below the working directory when the plan was read)
	 * unless the command line names one */
	const char *plan_bl[] = { p->baseline };

	struct run_baseline rb = {
		.paths = a->n_baselines ? a->baselines : plan_bl,
		.n_paths = a->n_baselines ? a->n_baselines : 1,
		.window = a->window ? a->window : (size_t)p->regression.window,
		.threshold = p->regression.threshold / 100,
		.confidence = p->regression.confidence / 100,
		.rule = (int)p->regression.rule,
		.gate = a->gate.n ? (const char *const *)a->gate.v
				  : (const char *const *)p->regression.gate,
		.n_gate = a->gate.n ? a->gate.n : p->regression.n_gate,
		.control = p->regression.control,
		.confirm = a->confirm >= 0 ? (unsigned)a->confirm : (unsigned)p->regression.confirm,
		.screen = p->regression.screen / 100,
		.rerun = gate_rerun,
	};
	_cleanup_free_ char *confirm_path =
	    a->eo.results_path ? gate_confirm_path(a->eo.results_path) : NULL;
	struct gate_rerun gr = { p, m, &a->eo, confirm_path };
	rb.rerun_ud = &gr;
	int cmp_rc = compare_run_results(r, &rb);
	results_count_status(r, st->counts);
	return cmp_rc;
}

/* The results file carries the regressions and the verdicts of the report's pivot too (laid
 * out as the Markdown's; results.h verdicts): rewritten once the run and the comparison are
 * over. */
static void run_write_verdicts(const struct run_args *a, const struct report_set *rs,
			       struct results *r)
{
	_cleanup_free_ char *verr = NULL, *werr = NULL;
	r->verdicts = report_verdicts_json(r, &rs->opts.markdown, &verr);
	if (!r->verdicts)
		warnf("no verdicts: %s", verr);
	if (a->eo.results_path && results_write(r, a->eo.results_path, &werr) < 0)
		errorf("%s", werr);
}

/* The end-of-run summary on standard error: counts, boots, times and where the reports are. */
static void print_run_summary(const struct run_args *a, const struct exec_result *st)
{
	const size_t *counts = st->counts;
	fprintf(stderr,
		"ferry: %zu passed, %zu failed, %zu errors, %zu skipped, %zu pending; %u "
		"boot%s; wall %.1f s, measured %.1f s (%.0f%%)\n",
		counts[STATUS_PASSED], counts[STATUS_FAILED], counts[STATUS_ERROR],
		counts[STATUS_SKIPPED], counts[STATUS_PENDING], st->boots,
		st->boots == 1 ? "" : "s", st->wall_s, st->measured_s,
		st->wall_s > 0 ? 100.0 * st->measured_s / st->wall_s : 0.0);
	for (int i = 0; i < REPORT_FORMAT_COUNT; i++)
		if (a->paths[i] && !STREQ(a->paths[i], "-"))
			fprintf(stderr, "ferry: %s report: %s\n", report_format_name(i),
				a->paths[i]);
	if (a->eo.results_path &&
	    (!a->paths[REPORT_JSON] || !STREQ(a->eo.results_path, a->paths[REPORT_JSON])))
		fprintf(stderr, "ferry: results: %s\n", a->eo.results_path);
}

/* After the run: baselines, the exit status, the reports and the summary. Frees r. */
static int run_finish(struct run_args *a, const struct plan *p, const struct matrix *m,
		      struct report_set *rs, struct results *r, struct exec_result *st)
{
	int cmp_rc = 0;
	if (a->n_baselines || p->baseline)
		cmp_rc = run_compare_baselines(a, p, m, r, st);
	run_write_verdicts(a, rs, r);
	int code = exit_code(st, r, a->allow_empty);
	if (cmp_rc && code == EXIT_OK)
		code = cmp_rc;
	_cleanup_free_ char *rerr = NULL, *warning = NULL;
	if (report_set_write(rs, r, &rerr, &warning) < 0) {
		errorf("%s", rerr);
		if (code == EXIT_OK)
			code = EXIT_INFRA;
	}
	if (warning)
		warnf("%s", warning);
	const size_t *counts = st->counts;
	if (!a->quiet && a->eo.verbose)
		print_time_breakdown(st);
	if (!a->quiet)
		print_verdicts(r, &rs->opts.markdown);
	if (!a->quiet)
		print_run_summary(a, st);
	if (code == EXIT_EMPTY)
		errorf("no cell produced a measured run (%zu skipped, %zu pending of %zu): nothing "
		       "was measured (--allow-empty accepts that)",
		       counts[STATUS_SKIPPED], counts[STATUS_PENDING], r->n_cells);
	if (gh_actions())
		results_annotate(stderr, r, p, m);
	results_free(r);
	return code;
}

static int cmd_run(int argc, char **argv)
{
	_cleanup_(run_args_free) struct run_args a = { 0 };
	int code = run_parse_args(&a, argc, argv);
	if (code >= 0)
		return code;

	_cleanup_(plan_freep) struct plan *p = NULL;
	_cleanup_(matrix_freep) struct matrix *m = plan_args_load(a.eo.plan_path, &a.pa, &p);
	if (!m)
		return EXIT_PLAN;
	code = run_prepare(&a, p, m);
	if (code != EXIT_OK)
		return code;
	struct report_set rs = { .step_summary = true };
	if (run_open_reports(&a, p, &rs) < 0) {
		results_free(a.eo.resume);
		return EXIT_PLAN;
	}

	struct results *r = NULL;
	struct exec_result st;
	_cleanup_free_ char *err = NULL;
	struct term_status prog;
	term_status_init(&prog);
	a.eo.ud = &prog;
	if (!a.quiet) {
		a.eo.live_status = prog.live;
		a.eo.status = prog.live ? show_status : NULL;
		a.eo.line = show_line;
	}
	int rc = exec_plan(p, m, &a.eo, &r, &st, &err);
	term_status_clear(&prog);
	if (rc < 0) {
		errorf("%s", err);
		report_set_abort(&rs);
		results_free(r);
		return EXIT_INFRA;
	}
	return run_finish(&a, p, m, &rs, r, &st);
}
