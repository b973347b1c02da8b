/* SPDX-License-Identifier: MIT */
/*
 * `ferry dataset`: generate, scan and verify datasets by hand and from tests.
 *
 *   ferry dataset gen --files N --size S[:MAX] [--dist uniform|lognormal] [--depth D]
 *                     [--fanout F] [--content random|zeros|text|compressible] [--ratio R]
 *                     [--seed N] [--dir DIR [--manifest FILE]] [--cache-dir C] [--rehash]
 *                     [--no-sync]
 *   ferry dataset scan DIR [--manifest FILE]
 *   ferry dataset command DIR [--symlinks]
 *   ferry dataset verify --manifest FILE [--symlinks] (--dir DIR | LISTING | -)
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "capacity.h"
#include "cli.h"
#include "commands.h"
#include "dataset.h"
#include "plan-limits.h"
#include "proc.h"
#include "status.h"
#include "util.h"

static const char *const gen_contents[] = { "random", "zeros", "text", "compressible", NULL };
static const char *const gen_dists[] = { "uniform", "lognormal", NULL };
static const struct cli_option gen_options[] = {
	{ .name = "files",
	  .id = 'n',
	  .arg = "N",
	  .value = CLI_WORD,
	  .help = "how many files (default 1)" },
	{ .name = "size",
	  .id = 's',
	  .arg = "S[:MAX]",
	  .value = CLI_WORD,
	  .flags = CLI_REQUIRED,
	  .help = "the size of each file, or a range MIN:MAX" },
	{ .name = "dist",
	  .id = 'D',
	  .value = CLI_ENUM,
	  .values = gen_dists,
	  .help = "how sizes spread over a range" },
	{ .name = "depth", .id = 'd', .arg = "D", .value = CLI_WORD, .help = "directory depth" },
	{ .name = "fanout",
	  .id = 'f',
	  .arg = "F",
	  .value = CLI_WORD,
	  .help = "subdirectories per directory" },
	{ .name = "content",
	  .id = 'c',
	  .value = CLI_ENUM,
	  .values = gen_contents,
	  .help = "what the files hold" },
	{ .name = "ratio",
	  .id = 'r',
	  .arg = "R",
	  .value = CLI_WORD,
	  .help = "the compression ratio of compressible content" },
	{ .name = "seed",
	  .id = 'S',
	  .arg = "N",
	  .value = CLI_WORD,
	  .help = "the generator's seed" },
	{ .name = "dir",
	  .id = 'o',
	  .arg = "DIR",
	  .value = CLI_DIR,
	  .help = "write into DIR (which must not exist) instead of the cache" },
	{ .name = "manifest",
	  .id = 'm',
	  .arg = "FILE",
	  .value = CLI_FILE,
	  .help = "with --dir, save the manifest to FILE" },
	{ .name = "cache-dir",
	  .id = 'C',
	  .arg = "DIR",
	  .value = CLI_DIR,
	  .help = "the dataset cache instead of the default" },
	{ .name = "rehash", .id = 'R', .help = "hash a cached dataset again" },
	{ .name = "no-sync", .id = 'N', .help = "do not sync the files to disk" },
	{ .name = "no-capacity-check",
	  .id = 'K',
	  .help = "generate even when the disk looks too small" },
	CLI_END,
};
static const struct cli_option scan_options[] = {
	{ .name = "manifest",
	  .id = 'm',
	  .arg = "FILE",
	  .value = CLI_FILE,
	  .help = "save the manifest to FILE" },
	CLI_END,
};
static const struct cli_option symlinks_option[] = {
	{ .name = "symlinks", .id = 'l', .help = "list symbolic links as links" },
	CLI_END,
};
static const struct cli_option verify_options[] = {
	{ .name = "manifest",
	  .id = 'm',
	  .arg = "FILE",
	  .value = CLI_FILE,
	  .flags = CLI_REQUIRED,
	  .help = "the manifest to compare with" },
	{ .name = "dir",
	  .id = 'd',
	  .arg = "DIR",
	  .value = CLI_DIR,
	  .flags = CLI_OPERAND,
	  .help = "run the listing command here on DIR" },
	CLI_END,
};
static int cmd_gen(int argc, char **argv);
static int cmd_scan(int argc, char **argv);
static int cmd_command(int argc, char **argv);
static int cmd_verify(int argc, char **argv);
static const struct cli_command cli_dataset_gen = {
	.name = "dataset gen",
	.opts = (const struct cli_option *const[]){ gen_options, NULL },
	.run = cmd_gen,
};
static const struct cli_command cli_dataset_scan = {
	.name = "dataset scan",
	.operands = "DIR",
	.operand = CLI_DIR,
	.opts = (const struct cli_option *const[]){ scan_options, NULL },
	.run = cmd_scan,
};
static const struct cli_command cli_dataset_command = {
	.name = "dataset command",
	.operands = "DIR",
	.operand = CLI_DIR,
	.opts = (const struct cli_option *const[]){ symlinks_option, NULL },
	.run = cmd_command,
};
static const struct cli_command cli_dataset_verify = {
	.name = "dataset verify",
	.operands = "(--dir DIR | LISTING | -)",
	.operand = CLI_FILE,
	.opts = (const struct cli_option *const[]){ verify_options, symlinks_option, NULL },
	.run = cmd_verify,
};
static int cmd_dataset(int argc, char **argv);
const struct cli_command cli_dataset = {
	.name = "dataset",
	.summary = "generate, scan and verify datasets",
	.about =
	    "gen writes a deterministic dataset into DIR (which must not exist), or into the "
	    "cache\n"
	    "when --dir is not given, and prints where it is and its manifest digest.\n"
	    "scan prints the manifest of an existing directory. command prints the shell command\n"
	    "the guest runs to list what landed; verify compares such a listing (a file, stdin, "
	    "or\n"
	    "the command run here on DIR) with a manifest: exit 0 when intact, 1 when not.",
	.subs =
	    (const struct cli_command *const[]){ &cli_dataset_gen, &cli_dataset_scan,
						 &cli_dataset_command, &cli_dataset_verify, NULL },
	.run = cmd_dataset,
};

static int parse_u64(const char *opt, const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-') {
		errorf("option '--%s': '%s' is not a number", opt, s);
		return -1;
	}
	*out = v;
	return 0;
}

static int lookup(const char *opt, const char *s, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (STREQ(s, names[i]))
			return (int)i;
	const char *hint = closest_match(s, names, n);
	if (hint)
		errorf("option '--%s': unknown value '%s' (did you mean '%s'?)", opt, s, hint);
	else
		errorf("option '--%s': unknown value '%s'", opt, s);
	return -1;
}

static void print_summary(const struct manifest *m, const char *dir, const char *mpath)
{
	char hex[65];
	sha256_hex(m->digest, hex);
	printf("dir: %s\n", dir);
	if (mpath)
		printf("manifest: %s\n", mpath);
	printf("files: %llu\nbytes: %llu\ndigest: %s\n", (unsigned long long)m->files,
	       (unsigned long long)m->bytes, hex);
}

/* The signal that interrupted a generation (SIGINT, SIGTERM or SIGHUP), or 0. */
static volatile sig_atomic_t gen_signal;

static void on_signal(int sig)
{
	gen_signal = sig;
}

/* Generation on a terminal: the bytes written, the rate and what is left, then the sync. */
struct gen_progress {
	struct term_status ts;
	struct term_ticker *k;
	uint64_t t0;
};

static void gen_progress(void *userdata, uint64_t done, uint64_t total, bool syncing)
{
	struct gen_progress *g = userdata;
	if (!syncing && done < total && !term_status_due(&g->ts, 200))
		return;
	double s = (double)(now_ns() - g->t0) / 1e9;
	_cleanup_free_ char *d = human_size(done), *t = human_size(total);
	_cleanup_free_ char *rate = s > 0 ? human_size((uint64_t)((double)done / s)) : NULL;
	_cleanup_free_ char *text = NULL;
	if (syncing)
		text = xasprintf("dataset: %s written, syncing to disk", d);
	else if (rate && done > 0)
		text = xasprintf("dataset: %s of %s (%.0f%%), %s/s, eta %.0fs", d, t,
				 total ? 100.0 * (double)done / (double)total : 100.0, rate,
				 s * (double)(total - done) / (double)done);
	else
		text = xasprintf("dataset: %s of %s", d, t);
	term_ticker_set(g->k, text);
}

static bool gen_cancelled(void *userdata)
{
	(void)userdata;
	return gen_signal != 0;
}

/* Ctrl-C, SIGTERM and SIGHUP stop a generation between two writes; it removes its temp files. */
static void catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART: waits return */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static int interrupted_exit(void)
{
	return gen_signal == SIGINT ? EXIT_SIGINT : 128 + gen_signal;
}

/* What `ferry dataset gen`'s command line said. */
struct gen_args {
	struct dataset_spec spec;
	struct dataset_get_opts gopts;
	const char *dir, *mpath, *size_arg;
	bool have_size, no_capacity_check;
};

/* --size SIZE or MIN:MAX */
static int gen_parse_size(struct gen_args *a, const char *arg)
{
	a->size_arg = arg;
	_cleanup_free_ char *lo = xstrdup(arg);
	char *hi = strchr(lo, ':');
	if (hi)
		*hi++ = '\0';
	if (dataset_parse_size(lo, &a->spec.size_min) < 0 ||
	    (hi && dataset_parse_size(hi, &a->spec.size_max) < 0)) {
		errorf("option '--size': '%s' is not a size or MIN:MAX", arg);
		return -1;
	}
	if (!hi)
		a->spec.size_max = a->spec.size_min;
	else if (a->spec.dist == DATASET_DIST_FIXED)
		a->spec.dist = DATASET_DIST_UNIFORM;
	a->have_size = true;
	return 0;
}

/* One option of `dataset gen` into *a. Returns -1 to go on, else the exit status to return. */
static int gen_option(struct gen_args *a, int c)
{
	struct dataset_spec *spec = &a->spec;
	uint64_t v;
	int i;
	switch (c) {
	case 'n': return parse_u64("files", optarg, &spec->files) < 0 ? EXIT_PLAN : -1;
	case 's': return gen_parse_size(a, optarg) < 0 ? EXIT_PLAN : -1;
	case 'D':
		if ((i = lookup("dist", optarg, gen_dists, ELEMENTSOF(gen_dists) - 1)) < 0)
			return EXIT_PLAN;
		spec->dist = i == 0 ? DATASET_DIST_UNIFORM : DATASET_DIST_LOGNORMAL;
		return -1;
	case 'd':
		if (parse_u64("depth", optarg, &v) < 0 || v > 64)
			return EXIT_PLAN;
		spec->depth = (unsigned)v;
		return -1;
	case 'f':
		if (parse_u64("fanout", optarg, &v) < 0 || v > 1000000)
			return EXIT_PLAN;
		spec->fanout = (unsigned)v;
		return -1;
	case 'c':
		if ((i = lookup("content", optarg, gen_contents, ELEMENTSOF(gen_contents) - 1)) < 0)
			return EXIT_PLAN;
		spec->content = (enum dataset_content)i;
		return -1;
	case 'r': {
		char *end;
		spec->ratio = strtod(optarg, &end);
		if (*end || end == optarg) {
			errorf("option '--ratio': '%s' is not a number", optarg);
			return EXIT_PLAN;
		}
		return -1;
	}
	case 'S': return parse_u64("seed", optarg, &spec->seed) < 0 ? EXIT_PLAN : -1;
	case 'o': a->dir = optarg; return -1;
	case 'm': a->mpath = optarg; return -1;
	case 'C': a->gopts.cache_dir = optarg; return -1;
	case 'R': a->gopts.rehash = true; return -1;
	case 'N': a->gopts.gen.no_sync = true; return -1;
	case 'K': a->no_capacity_check = true; return -1;
	case 'h': return cli_usage_exit(&cli_dataset, stdout);
	default: return cli_usage_exit(&cli_dataset, stderr);
	}
}

/* The spec against the plan language's limits (ferry(1) SECURITY, Limits: a typo must not
 * fill the disk) and, unless --no-capacity-check, against the disk it lands on. Returns
 * EXIT_OK or the exit status to return. */
static int gen_check(const struct gen_args *a)
{
	const struct dataset_spec *spec = &a->spec;
	_cleanup_free_ char *err = NULL;
	if (dataset_spec_check(spec, &err) < 0) {
		errorf("%s", err);
		return EXIT_PLAN;
	}
	uint64_t total;
	if (spec->files > PLAN_DATASET_FILES_MAX) {
		errorf("option '--files': %llu files are above the limit of %u (ferry(1) SECURITY, "
		       "Limits)",
		       (unsigned long long)spec->files, PLAN_DATASET_FILES_MAX);
		return EXIT_PLAN;
	}
	if (!mul_u64(spec->files,
		     spec->dist == DATASET_DIST_FIXED ? spec->size_min : spec->size_max, &total) ||
	    total > PLAN_DATASET_MAX) {
		errorf("option '--size': %llu files of up to '%s' are above the limit of 16TiB per "
		       "dataset (ferry(1) SECURITY, Limits)",
		       (unsigned long long)spec->files, a->size_arg);
		return EXIT_PLAN;
	}
	if (a->no_capacity_check)
		return EXIT_OK;
	/* the disk it lands on must hold it (a cached copy needs nothing) */
	_cleanup_free_ char *cache =
	    a->gopts.cache_dir ? xstrdup(a->gopts.cache_dir) : dataset_cache_dir();
	_cleanup_free_ char *hash = dataset_spec_hash(spec);
	_cleanup_free_ char *mf = xasprintf("%s/datasets/%s.manifest.json", cache, hash);
	_cleanup_free_ char *where = a->dir ? xstrdup(a->dir) : xasprintf("%s/datasets", cache);
	if ((a->dir || access(mf, F_OK) < 0) && capacity_dataset(spec, where, &err) < 0) {
		errorf("%s (--no-capacity-check generates anyway)", err);
		return EXIT_INFRA;
	}
	return EXIT_OK;
}

/* Generates into --output, or gets the dataset through the cache; stops the status line (k,
 * may be NULL) and prints the summary. */
static int gen_execute(const struct gen_args *a, struct manifest **m, struct term_ticker *k)
{
	_cleanup_free_ char *err = NULL;
	if (a->dir) {
		int r = dataset_generate(&a->spec, a->dir, &a->gopts.gen, m, &err);
		term_ticker_stop(k);
		if (r < 0) {
			errorf("%s", err);
			return gen_signal ? interrupted_exit() : EXIT_INFRA;
		}
		if (a->mpath && manifest_save(*m, a->mpath, &err) < 0) {
			errorf("%s", err);
			return EXIT_INFRA;
		}
		print_summary(*m, a->dir, a->mpath);
		printf("generated: yes\n");
		return EXIT_OK;
	}
	struct dataset_info info;
	int r = dataset_get(&a->spec, &a->gopts, &info, m, &err);
	term_ticker_stop(k);
	if (r < 0) {
		dataset_info_clear(&info);
		errorf("%s", err);
		return gen_signal ? interrupted_exit() : EXIT_INFRA;
	}
	print_summary(*m, info.dir, info.manifest_path);
	if (info.evicted)
		printf("evicted: %zu\n", info.evicted);
	if (info.generated && info.regen_reason)
		printf("generated: yes (%s)\n", info.regen_reason);
	else
		printf("generated: %s\n", info.generated ? "yes" : "no (cached)");
	dataset_info_clear(&info);
	return EXIT_OK;
}

static int cmd_gen(int argc, char **argv)
{
	struct gen_args a = { .spec = { .files = 1 }, .size_arg = "" };
	int c, code;
	while ((c = cli_getopt(&cli_dataset_gen, argc, argv)) != -1)
		if ((code = gen_option(&a, c)) >= 0)
			return code;
	if (optind < argc || !a.have_size) {
		errorf(optind < argc ? "unexpected argument '%s'" : "'--size' is required",
		       optind < argc ? argv[optind] : "");
		return EXIT_PLAN;
	}
	if ((code = gen_check(&a)) != EXIT_OK)
		return code;
	a.gopts.gen.cancelled = gen_cancelled;
	catch_signals();
	/* on a terminal, the status line says how far generation is (and ticks while the
	 * cache waits for another process, or the disk syncs) */
	struct gen_progress gp = { .t0 = now_ns() };
	term_status_init(&gp.ts);
	gp.k = term_ticker_start(&gp.ts);
	if (gp.k) {
		term_ticker_set(gp.k, "dataset: starting");
		a.gopts.gen.progress = gen_progress;
		a.gopts.gen.userdata = &gp;
	}

	_cleanup_(manifest_freep) struct manifest *m = NULL;
	uint64_t t0 = now_ns();
	if ((code = gen_execute(&a, &m, gp.k)) != EXIT_OK)
		return code;
	double s = (double)(now_ns() - t0) / 1e9;
	printf("seconds: %.3f\nMB/s: %.1f\n", s, s > 0 ? (double)m->bytes / 1e6 / s : 0.0);
	return EXIT_OK;
}

static int cmd_scan(int argc, char **argv)
{
	const char *mpath = NULL;
	int c;
	while ((c = cli_getopt(&cli_dataset_scan, argc, argv)) != -1) {
		switch (c) {
		case 'm': mpath = optarg; break;
		case 'h': return cli_usage_exit(&cli_dataset, stdout);
		default: return cli_usage_exit(&cli_dataset, stderr);
		}
	}
	if (optind != argc - 1) {
		return cli_usage_exit(&cli_dataset, stderr);
	}
	_cleanup_(manifest_freep) struct manifest *m = NULL;
	_cleanup_free_ char *err = NULL;
	if (dataset_scan(argv[optind], &m, &err) < 0 ||
	    (mpath && manifest_save(m, mpath, &err) < 0)) {
		errorf("%s", err);
		return EXIT_INFRA;
	}
	for (size_t i = 0; i < m->n_skipped; i++)
		warnf("skipped '%s': %s", m->skipped[i].path, m->skipped[i].reason);
	print_summary(m, argv[optind], mpath);
	printf("skipped: %zu\n", m->n_skipped);
	return EXIT_OK;
}

static int cmd_command(int argc, char **argv)
{
	bool symlinks = false;
	int c;
	while ((c = cli_getopt(&cli_dataset_command, argc, argv)) != -1) {
		switch (c) {
		case 'l': symlinks = true; break;
		case 'h': return cli_usage_exit(&cli_dataset, stdout);
		default: return cli_usage_exit(&cli_dataset, stderr);
		}
	}
	if (optind != argc - 1) {
		return cli_usage_exit(&cli_dataset, stderr);
	}
	_cleanup_free_ char *cmd = manifest_guest_command(argv[optind], symlinks, false);
	puts(cmd);
	return EXIT_OK;
}

/*
 * Run the guest's listing command here, on a host directory, and capture its output. The command
 * is the shell script the guest runs (that is what this checks), so it goes to sh as one argument
 * through the one process helper; stderr is kept for the message.
 */
static char *run_listing(const char *dir, bool symlinks, size_t *len, char **err)
{
	_cleanup_free_ char *cmd = manifest_guest_command(dir, symlinks, false);
	const char *const argv[] = { "sh", "-c", cmd, NULL };
	const struct proc_opts opts = { .split_stderr = true };
	struct proc_result res;
	_cleanup_free_ char *e = NULL;

	if (proc_spawn(argv, &opts, &res, &e) < 0) {
		*err = xasprintf("cannot run the listing command: %s", e);
		return NULL;
	}
	if (res.status != 0) {
		_cleanup_free_ char *line = proc_last_line(res.errout, strlen(res.errout));
		*err = xasprintf("listing command failed (status %d): %s%s%s", res.status, cmd,
				 *line ? ": " : "", line);
		proc_result_clear(&res);
		return NULL;
	}
	*len = res.out_len;
	char *out = TAKE_PTR(res.out);
	proc_result_clear(&res);
	return out;
}

static int cmd_verify(int argc, char **argv)
{
	const char *mpath = NULL, *dir = NULL;
	struct verify_opts vopts = { 0 };
	int c;
	while ((c = cli_getopt(&cli_dataset_verify, argc, argv)) != -1) {
		switch (c) {
		case 'm': mpath = optarg; break;
		case 'd': dir = optarg; break;
		case 'l': vopts.symlinks = true; break;
		case 'h': return cli_usage_exit(&cli_dataset, stdout);
		default: return cli_usage_exit(&cli_dataset, stderr);
		}
	}
	if (!mpath || (dir ? optind != argc : optind != argc - 1)) {
		return cli_usage_exit(&cli_dataset, stderr);
	}
	_cleanup_(manifest_freep) struct manifest *m = NULL;
	_cleanup_free_ char *err = NULL, *text = NULL;
	size_t len = 0;
	if (manifest_load(mpath, &m, &err) < 0) {
		errorf("%s", err);
		return EXIT_PLAN;
	}
	if (dir) {
		text = run_listing(dir, vopts.symlinks, &len, &err);
	} else if (STREQ(argv[optind], "-")) {
		size_t cap = 0, r;
		char chunk[65536];
		while ((r = fread(chunk, 1, sizeof(chunk), stdin)) > 0) {
			text = xgrow(text, &cap, len + r + 1, 1);
			memcpy(text + len, chunk, r);
			len += r;
		}
		if (!text)
			text = xstrdup("");
	} else if (!(text = read_file(argv[optind], &len))) {
		err = xasprintf("cannot read '%s': %s", argv[optind], strerror(errno));
	}
	if (!text) {
		errorf("%s", err);
		return EXIT_INFRA;
	}

	struct listing l = { 0 };
	if (listing_parse(text, len, &l, &err) < 0) {
		listing_clear(&l);
		errorf("%s", err);
		return EXIT_INFRA;
	}
	struct verify_result res;
	manifest_verify(m, &l, &vopts, &res);
	listing_clear(&l);
	int rc = res.ok ? EXIT_OK : EXIT_FAILED;
	if (res.ok)
		printf("%s\n", res.message);
	else
		errorf("%s", res.message);
	verify_result_clear(&res);
	return rc;
}

static int cmd_dataset(int argc, char **argv)
{
	const struct cli_command *const *subs = cli_dataset.subs;
	if (argc < 2 || STREQ(argv[1], "--help") || STREQ(argv[1], "-h"))
		return cli_usage_exit(&cli_dataset, argc < 2 ? stderr : stdout);
	const char *names[8];
	size_t n = 0;
	for (; subs[n] && n < ELEMENTSOF(names); n++) {
		names[n] = subs[n]->name + strlen("dataset ");
		if (STREQ(argv[1], names[n])) {
			optind = 0;
			return subs[n]->run(argc - 1, argv + 1);
		}
	}
	const char *hint = closest_match(argv[1], names, n);
	if (hint)
		errorf("unknown dataset command '%s' (did you mean '%s'?)", argv[1], hint);
	else
		errorf("unknown dataset command '%s'", argv[1]);
	return EXIT_PLAN;
}
