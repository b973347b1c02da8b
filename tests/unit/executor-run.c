/* SPDX-License-Identifier: MIT */
/* The executor's tests on the fake machine with the null method (executor-run.h). */
#include "executor-run.h"

#include <string.h>

#include "plan.h"
#include "util.h"

char *tmp_dir;

/* A plan with three null methods a, b, c (three cells) on one vm, disk and dataset. */
const char *const base_plan = "ferry: 1\n"
			      "name: t\n"
			      "vms: {v: {guest: builtin}}\n"
			      "disks: {d: {kind: tmpfs, size: 64MiB}}\n"
			      "datasets: {s: {files: 1, size: 1KiB}}\n"
			      "methods: {a: {type: null}, b: {type: null}, c: {type: null}}\n";

void on_line(void *ud, const char *text)
{
	struct fake_run *t = ud;
	g_ptr_array_add(t->lines, g_strdup(text));
	if (text[0] != '[' || !t->results_path)
		return;
	/* a cell finished: the file holds the cells that finished before it */
	char *err = NULL;
	struct results *r = results_read(t->results_path, &err);
	g_assert_null(err);
	size_t counts[STATUS_COUNT];
	results_count_status(r, counts);
	guint done = (guint)(r->n_cells - counts[STATUS_PENDING]);
	g_array_append_val(t->seen, done);
	results_free(r);
}

/* Parse base_plan + extra (the matrix, run, criteria). */
void tx_init(struct fake_run *t, const char *extra)
{
	/* extra that starts with "ferry:" is the whole plan */
	char *text =
	    g_str_has_prefix(extra, "ferry:")
		? g_strdup(extra)
		: g_strconcat(base_plan,
			      strstr(extra, "matrix:") ? "" : "matrix: {method: [a, b, c]}\n",
			      extra, NULL);
	fake_run_init(t, tmp_dir, text, on_line);
	g_free(text);
}

void tx_run(struct fake_run *t)
{
	results_free(t->r);
	machine_fake_clear(&t->fake);
	t->fake.boots = t->fake.destroys = t->fake.resets = t->fake.drops = 0;
	t->fake.suspends = t->fake.resumes = t->fake.max_running = t->fake.bad_runs = 0;
	t->fake.switches = t->fake.bad_switches = 0;
	fake_run_exec(t);
	g_assert_cmpuint(t->fake.live, ==, 0); /* every guest destroyed */
}

struct result_cell *cell(struct fake_run *t, const char *id)
{
	struct result_cell *c = results_find_cell(t->r, id);
	g_assert_nonnull(c);
	return c;
}

size_t measured(const struct result_cell *c)
{
	size_t n = 0;
	for (size_t i = 0; i < c->n_runs; i++)
		n += !c->runs[i].warmup;
	return n;
}

/* The "run CELL #I" lines of the fake's log, as "a0 a1 b0 ..." (method letter and run index). */
char *runs_of(const struct fake_run *t)
{
	GString *s = g_string_new("");
	gchar **lines = g_strsplit(t->fake.log ? t->fake.log : "", "\n", -1);
	for (gchar **l = lines; *l; l++) {
		const char *m = strstr(*l, "method=");
		if (!g_str_has_prefix(*l, "run ") || !m)
			continue;
		const char *hash = strchr(m, '#');
		g_string_append_printf(s, "%s%c%s", s->len ? " " : "", m[7], hash + 1);
	}
	g_strfreev(lines);
	return g_string_free(s, FALSE);
}

void set_null_duration(struct fake_run *t, uint64_t ns)
{
	char *d = g_strdup_printf("%llums", (unsigned long long)(ns / MS));
	for (size_t i = 0; i < t->p->n_methods; i++) {
		char *err = NULL;
		g_assert_cmpint(plan_method_set(&t->p->methods[i], "duration", d, &err), ==, 0);
	}
	g_free(d);
}
