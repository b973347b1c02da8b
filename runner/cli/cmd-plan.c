/* SPDX-License-Identifier: MIT */
/*
 * Plan commands without side effects: `ferry validate`, `ferry expand`, and the hidden
 * `ferry schema` that prints what the key tables generate (the JSON Schema, or the PLAN KEYS
 * section of ferry(1)).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <string.h>

#include "capacity-plan.h"
#include "cli.h"
#include "commands.h"
#include "keys.h"
#include "matrix.h"
#include "plan.h"
#include "results.h"
#include "units.h"

/* jansson >= 2.10 provides json_decrefp() for its json_auto_t */
#define _cleanup_json_t_ _cleanup_(json_decrefp)

/* --max-cells: a positive integer. */
static int parse_cap(const char *s, size_t *cap)
{
	uint64_t v;
	_cleanup_free_ char *err = NULL;

	if (parse_uint(s, &v, &err) < 0 || v == 0 || v > SIZE_MAX) {
		errorf("invalid --max-cells '%s': expected a positive integer", s);
		return -1;
	}
	*cap = (size_t)v;
	return 0;
}

/* ---- what the command line allows a plan ---- */

static bool var_name(const char *s, size_t n)
{
	if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return false;
	return true;
}

static void push(const char *const **arr, size_t *n, const char *s)
{
	const char **a = xrealloc((void *)*arr, (*n + 1) * sizeof(*a));
	a[(*n)++] = s;
	*arr = a;
}

static int plan_trust_option(int opt, const char *arg, struct plan_options *o)
{
	switch (opt) {
	case OPT_ALLOW_ENV:
		if (!var_name(arg, strlen(arg))) {
			errorf("invalid --allow-env '%s': expected a variable name", arg);
			return -1;
		}
		push(&o->allow_env, &o->n_allow_env, arg);
		return 1;
	case OPT_VAR: {
		const char *eq = strchr(arg, '=');
		if (!eq || !var_name(arg, (size_t)(eq - arg))) {
			errorf("invalid --var '%s': expected NAME=VALUE", arg);
			return -1;
		}
		push(&o->vars, &o->n_vars, arg);
		return 1;
	}
	case OPT_ALLOW_OUTPUT:
		if (!*arg) {
			errorf("invalid --allow-output '': expected a directory");
			return -1;
		}
		push(&o->allow_output, &o->n_allow_output, arg);
		return 1;
	default: return 0;
	}
}

/* 1: `opt` was one of the shared options (stored), 0: it was not, -1: invalid (printed). */
static int plan_args_option(int opt, const char *arg, struct plan_args *a)
{
	switch (opt) {
	case OPT_MAX_CELLS: return parse_cap(arg, &a->cap) < 0 ? -1 : 1;
	case OPT_SHARD: {
		_cleanup_free_ char *err = NULL;
		if (shard_parse(arg, &a->shard_k, &a->shard_n, &err) < 0) {
			errorf("%s", err);
			return -1;
		}
		return 1;
	}
	default: return plan_trust_option(opt, arg, &a->trust);
	}
}

int plan_args_getopt(const struct cli_command *cmd, int argc, char **argv, struct plan_args *a)
{
	for (;;) {
		int c = cli_getopt(cmd, argc, argv);
		int t = c == -1 ? 0 : plan_args_option(c, optarg, a);
		if (t < 0)
			return PLAN_ARGS_INVALID;
		if (!t)
			return c;
	}
}

void plan_args_free(struct plan_args *a)
{
	free((void *)a->trust.allow_env);
	free((void *)a->trust.vars);
	free((void *)a->trust.allow_output);
	*a = (struct plan_args){ 0 };
}

/* Print a plan's warnings (valid, but probably not meant) on standard error. */
static void plan_warnings_print(const struct plan *p)
{
	bool annotate = gh_actions();
	for (size_t i = 0; i < p->warnings.n; i++) {
		const struct diag *d = &p->warnings.items[i];
		_cleanup_free_ char *s = diag_format(d);
		/* "FILE:LINE:COL: msg" -> "FILE:LINE:COL: warning: msg", escaped like errors (a
		 * message quotes the plan: one line, no forged workflow command) */
		_cleanup_free_ char *line =
		    xasprintf("%.*swarning: %s", (int)(strlen(s) - strlen(d->msg)), s, d->msg);
		_cleanup_free_ char *clean = escape_controls(line);
		fprintf(stderr, "ferry: %s\n", clean);
		if (annotate)
			gh_annotation(stderr, "warning", d->file, d->line, d->col, NULL, d->msg);
	}
}

struct matrix *plan_args_load(const char *path, const struct plan_args *a, struct plan **out)
{
	_cleanup_(diag_list_clearp) struct diag_list diags = { 0 };
	_cleanup_(plan_freep) struct plan *p = plan_load(path, &a->trust, &diags);
	struct matrix *m = NULL;

	if (p)
		m = plan_expand(p, a->cap, &diags);
	diag_print(&diags, stderr);
	if (!m)
		return NULL;
	plan_warnings_print(p);
	*out = TAKE_PTR(p);
	return m;
}

static int cmd_validate(int argc, char **argv);
const struct cli_command cli_validate = {
	.name = "validate",
	.operands = "PLAN...",
	.operand = CLI_PLAN,
	.summary = "check plan files without running anything",
	.about = "Check plan files (syntax, keys, values, names, the matrix, whether every\n"
		 "cell's data fits its guest) without running anything. Prints 'ok: PLAN (N\n"
		 "cells)' for each valid plan. Exit status 0 when every plan is valid, 2\n"
		 "otherwise. A plan reads only FERRY_* variables and writes reports only below\n"
		 "the working directory unless --allow-env, --var or --allow-output allow more.",
	.opts = (const struct cli_option *const[]){ cli_plan_options, NULL },
	.run = cmd_validate,
};

static int cmd_validate(int argc, char **argv)
{
	int c, status = EXIT_OK;
	_cleanup_(plan_args_free) struct plan_args pa = { 0 };

	while ((c = plan_args_getopt(&cli_validate, argc, argv, &pa)) != -1) {
		switch (c) {
		case PLAN_ARGS_INVALID: return EXIT_PLAN;
		case 'h': return cli_usage_exit(&cli_validate, stdout);
		default: return cli_usage_exit(&cli_validate, stderr);
		}
	}
	if (optind >= argc)
		return cli_usage_exit(&cli_validate, stderr);
	for (int i = optind; i < argc; i++) {
		_cleanup_(plan_freep) struct plan *p = NULL;
		_cleanup_(matrix_freep) struct matrix *m = plan_args_load(argv[i], &pa, &p);
		if (!m) {
			status = EXIT_PLAN;
			continue;
		}
		_cleanup_free_ char *fit = NULL;
		if (capacity_plan_guests(p, m, &fit) < 0) {
			errorf("%s: %s", argv[i], fit);
			status = EXIT_PLAN;
			continue;
		}
		size_t n = matrix_n_cells(m);
		printf("ok: %s (%zu cell%s)\n", argv[i], n, n == 1 ? "" : "s");
	}
	return status;
}

static int cmd_expand(int argc, char **argv);
static const struct cli_option expand_options[] = {
	{ .name = "format",
	  .id = 'f',
	  .short_name = 'f',
	  .value = CLI_ENUM,
	  .values = (const char *const[]){ "table", "json", NULL },
	  .help = "a table (the default) or JSON with every entry's resolved keys" },
	{ .name = "estimate",
	  .id = 'e',
	  .arg = "RESULTS",
	  .value = CLI_RESULTS,
	  .help = "add how long the cells took in an earlier results file" },
	CLI_END,
};
const struct cli_command cli_expand = {
	.name = "expand",
	.operands = "PLAN",
	.operand = CLI_PLAN,
	.summary = "list the cells of a plan with their resolved settings",
	.about = "Print the cells of a plan with the entries each uses and its resolved run\n"
		 "settings, then the count. --shard keeps the cells of shard K of N.\n"
		 "--estimate adds how long the cells took in an earlier results file.",
	.opts = (const struct cli_option *const[]){ expand_options, cli_shard_option,
						    cli_plan_options, NULL },
	.run = cmd_expand,
};

/* The JSON of every entry, built once and shared by the cells that use it. */
struct entry_cache {
	json_t **vm, **disk, **dataset, **method;
};

static json_t **entries_json(const struct key_table *t, const void *arr, size_t n, size_t elem_size)
{
	json_t **out = xcalloc(n, sizeof(*out));
	for (size_t i = 0; i < n; i++)
		out[i] = key_entry_json(t, (const void *)((const char *)arr + i * elem_size));
	return out;
}

static void entries_free(json_t **a, size_t n)
{
	for (size_t i = 0; a && i < n; i++)
		json_decref(a[i]);
	free(a);
}

static json_t *cell_json(const struct plan *p, const struct entry_cache *ec, const struct matrix *m,
			 size_t i, const struct plan_cell *cell)
{
	json_t *params = json_object();
	for (size_t j = 0; j < matrix_cell_n_params(m, i); j++)
		json_object_set_new(params, matrix_cell_key(m, i, j),
				    json_string(matrix_cell_value(m, i, j)));
	/* an entry a sweep resolved for the cell is not one of the plan's: its own JSON */
	json_t *vm = cell->vm->e.sweep ? key_entry_json(&plan_vm_keys, &cell->vm->e)
				       : json_incref(ec->vm[cell->vm - p->vms]);
	json_t *disk = cell->disk->e.sweep ? key_entry_json(&plan_disk_keys, &cell->disk->e)
					   : json_incref(ec->disk[cell->disk - p->disks]);
	json_t *ds = cell->dataset->e.sweep ? key_entry_json(&plan_dataset_keys, &cell->dataset->e)
					    : json_incref(ec->dataset[cell->dataset - p->datasets]);
	json_t *me = cell->method->e.sweep ? key_entry_json(&plan_method_keys, &cell->method->e)
					   : json_incref(ec->method[cell->method - p->methods]);
	return json_pack("{s:I, s:s, s:o, s:o, s:o, s:o, s:o, s:o}", "index", (json_int_t)i, "id",
			 cell->id, "params", params, "vm", vm, "disk", disk, "dataset", ds,
			 "method", me, "run", key_values_json(&plan_run_keys, &cell->run));
}

static const char *run_enum(const char *key, int v)
{
	return key_find(&plan_run_keys, key)->values[v];
}

static void cell_line(size_t i, const struct plan_cell *cell)
{
	const struct plan_run *r = &cell->run;
	_cleanup_free_ char *timeout = format_duration(r->timeout);

	if (r->boots.min > 0) {
		/* blocks: a boot of the VM configuration per block (run.vm does not apply) */
		printf("%6zu  %s  boots %" PRIu64, i + 1, cell->id, r->boots.min);
		if (r->boots.max > r->boots.min)
			printf("..%" PRIu64, r->boots.max);
		if (r->rpb)
			printf(", %u run%s per boot", r->rpb, r->rpb == 1 ? "" : "s");
		else
			printf(", runs per boot auto");
		if (r->until > 0)
			printf(", until %g%%", r->until);
		if (r->budget) {
			_cleanup_free_ char *budget = format_duration(r->budget);
			printf(", budget %s", budget);
		}
		printf(", warmup %" PRIu64 ", disk %s, caches %s, timeout %s\n", r->warmup,
		       run_enum("disk", (int)r->disk), run_enum("caches", (int)r->caches), timeout);
		return;
	}
	if (r->repeat.until_cv > 0)
		printf("%6zu  %s  repeat %" PRIu64 "..%" PRIu64 " until cv %g%%", i + 1, cell->id,
		       r->repeat.min, r->repeat.max, r->repeat.until_cv);
	else
		printf("%6zu  %s  repeat %" PRIu64, i + 1, cell->id, r->repeat.min);
	printf(", warmup %" PRIu64 ", vm %s, disk %s, caches %s, timeout %s\n", r->warmup,
	       run_enum("vm", (int)r->vm), run_enum("disk", (int)r->disk),
	       run_enum("caches", (int)r->caches), timeout);
}

static void entry_cache_build(struct entry_cache *ec, const struct plan *p)
{
	ec->vm = entries_json(&plan_vm_keys, p->vms, p->n_vms, sizeof(*p->vms));
	ec->disk = entries_json(&plan_disk_keys, p->disks, p->n_disks, sizeof(*p->disks));
	ec->dataset =
	    entries_json(&plan_dataset_keys, p->datasets, p->n_datasets, sizeof(*p->datasets));
	ec->method = entries_json(&plan_method_keys, p->methods, p->n_methods, sizeof(*p->methods));
}

static void entry_cache_free(struct entry_cache *ec, const struct plan *p)
{
	entries_free(ec->vm, p->n_vms);
	entries_free(ec->disk, p->n_disks);
	entries_free(ec->dataset, p->n_datasets);
	entries_free(ec->method, p->n_methods);
}

/* --estimate FILE: the wall time of the cells an earlier results file timed. */
struct estimate {
	double known_s, n_known, n_unknown;
};

/* A cell's wall time in the earlier run (boot included for the first cell of a shared VM), else
 * it counts as the mean of the cells that have one. */
static void estimate_add(struct estimate *e, const struct results *earlier, const char *id)
{
	const struct result_cell *rc = results_find_cell(earlier, id);
	if (rc && rc->started_ms > 0 && rc->finished_ms >= rc->started_ms) {
		e->known_s += (double)(rc->finished_ms - rc->started_ms) / 1000.0;
		e->n_known++;
	} else {
		e->n_unknown++;
	}
}

static void estimate_print(const struct estimate *e, const char *path)
{
	if (e->n_known == 0) {
		printf("estimate: no cell of this plan has a time in '%s'\n", path);
		return;
	}
	double total_s = e->known_s + e->n_unknown * e->known_s / e->n_known;
	printf("estimate: about %.0f s (%.0f cell%s timed in '%s', %.0f from their mean)\n",
	       total_s, e->n_known, e->n_known == 1 ? "" : "s", path, e->n_unknown);
}

static int cmd_expand(int argc, char **argv)
{
	_cleanup_(plan_args_free) struct plan_args pa = { 0 };
	const char *estimate = NULL;
	bool json = false;
	int c;

	/* -s is --shard (OPT_SHARD) */
	while ((c = plan_args_getopt(&cli_expand, argc, argv, &pa)) != -1) {
		switch (c) {
		case PLAN_ARGS_INVALID: return EXIT_PLAN;
		case 'h': return cli_usage_exit(&cli_expand, stdout);
		case 'f':
			if (STREQ(optarg, "json")) {
				json = true;
			} else if (!STREQ(optarg, "table")) {
				errorf("invalid --format '%s' (expected 'table' or 'json')",
				       optarg);
				return EXIT_PLAN;
			}
			break;
		case 'e': estimate = optarg; break;
		default: return cli_usage_exit(&cli_expand, stderr);
		}
	}
	if (optind + 1 != argc)
		return cli_usage_exit(&cli_expand, stderr);

	_cleanup_(plan_freep) struct plan *p = NULL;
	_cleanup_(matrix_freep) struct matrix *m = plan_args_load(argv[optind], &pa, &p);
	if (!m)
		return EXIT_PLAN;
	bool sharded = pa.shard_n > 0;
	unsigned k = sharded ? pa.shard_k : 1, n = sharded ? pa.shard_n : 1;
	_cleanup_(results_freep) struct results *earlier = NULL;
	if (estimate) {
		_cleanup_free_ char *err = NULL;
		earlier = results_read(estimate, &err);
		if (!earlier) {
			errorf("%s", err);
			return EXIT_PLAN;
		}
	}
	struct estimate est = { 0 };

	size_t total = matrix_n_cells(m), count = 0;
	_cleanup_json_t_ json_t *cells = json ? json_array() : NULL;
	struct entry_cache ec = { 0 };
	if (json)
		entry_cache_build(&ec, p);
	for (size_t i = 0; i < total; i++) {
		if (!shard_contains(i, k, n))
			continue;
		struct plan_cell cell;
		plan_cell(p, m, i, &cell);
		if (json)
			json_array_append_new(cells, cell_json(p, &ec, m, i, &cell));
		else
			cell_line(i, &cell);
		count++;
		if (earlier)
			estimate_add(&est, earlier, cell.id);
	}
	entry_cache_free(&ec, p);
	if (json) {
		_cleanup_json_t_ json_t *o =
		    json_pack("{s:s, s:I, s:I, s:O}", "plan", p->name, "count", (json_int_t)count,
			      "total", (json_int_t)total, "cells", cells);
		if (sharded)
			json_object_set_new(o, "shard",
					    json_pack("{s:i, s:i}", "k", (int)k, "n", (int)n));
		if (json_dumpf(o, stdout, JSON_INDENT(2)) < 0)
			return EXIT_INFRA;
		putchar('\n');
	} else if (sharded) {
		printf("%zu cell%s (shard %u/%u of %zu)\n", count, count == 1 ? "" : "s", k, n,
		       total);
	} else {
		printf("%zu cell%s\n", count, count == 1 ? "" : "s");
	}
	if (earlier && !json)
		estimate_print(&est, estimate);
	if (fflush(stdout) != 0) {
		errorf("cannot write the output: %s", strerror(errno));
		return EXIT_INFRA;
	}
	return EXIT_OK;
}

static int cmd_schema(int argc, char **argv);
static const struct cli_option schema_options[] = {
	{ .name = "man", .id = 'm', .help = "the PLAN KEYS section of ferry(1) instead" },
	{ .name = "man-synopsis", .id = 'S', .help = "the SYNOPSIS section of ferry(1) instead" },
	{ .name = "man-metrics", .id = 'M', .help = "the list of METRICS of ferry(1) instead" },
	CLI_END,
};
/* hidden (no summary): scripts/update-docs.sh's generator of the committed schema and the
 * generated sections of ferry.1 */
const struct cli_command cli_schema = {
	.name = "schema",
	.about = "Print the JSON Schema of plan files (schema/ferry-plan.schema.json).",
	.opts = (const struct cli_option *const[]){ schema_options, NULL },
	.run = cmd_schema,
};

static int cmd_schema(int argc, char **argv)
{
	if (argc == 2 && STREQ(argv[1], "--man")) {
		_cleanup_free_ char *man = key_man();
		fputs(man, stdout);
		return EXIT_OK;
	}
	if (argc == 2 && STREQ(argv[1], "--man-metrics")) {
		_cleanup_free_ char *man = metric_man();
		fputs(man, stdout);
		return EXIT_OK;
	}
	if (argc == 2 && STREQ(argv[1], "--man-synopsis")) {
		cli_man_synopsis(stdout);
		return EXIT_OK;
	}
	if (argc != 1)
		return cli_usage_exit(&cli_schema, stderr);
	_cleanup_json_t_ json_t *s = key_schema();
	_cleanup_free_ char *text = json_dumps(s, JSON_INDENT(2));
	printf("%s\n", text);
	return EXIT_OK;
}
