/* SPDX-License-Identifier: MIT */
/*
 * The executor (runner/exec/) on the fake machine with the null method: the repeat rule, warmups,
 * resume and rerun-failed, fail-fast, a broken shared guest, criteria, the run and cell timeouts,
 * the run's metrics, and the results file after every cell (the orders and VM lifetimes:
 * test-executor-order.c). No guest boots; every test takes
 * milliseconds (the null method's durations and the timeouts are set in ms on the parsed plan).
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <signal.h>
#include <string.h>

#include "criteria.h"
#include "executor-run.h"
#include "fake-run.h"
#include "fs.h"
#include "plan.h"
#include "run.h"
#include "stats.h"
#include "util.h"

/* ---- the repeat rule and warmups ---- */

static void test_repeat_cv(void)
{
	struct fake_run t;
	tx_init(&t, "matrix: {method: [a]}\n"
		    "run: {repeat: {min: 3, max: 10, until_cv: 1000%}, caches: keep}\n");
	set_null_duration(&t, 2 * MS);
	tx_run(&t);
	struct result_cell *c = cell(&t, CELL("a"));
	g_assert_cmpint(c->status, ==, STATUS_PASSED);
	g_assert_cmpuint(measured(c), ==, 3); /* min wins; then the CV target is met */
	g_assert_cmpint(c->stop_reason, ==, STATS_STOP_CV);
	g_assert_cmpuint(c->stats.total.n, ==, 3);
	fake_run_clear(&t);
}

static void test_repeat_cap(void)
{
	struct fake_run t;
	/* runs of 2 ms, 3 ms, 4 ms, ... can never reach a CV of 0.001% (runs of a fixed 1 ms
	 * can: poll's timer slack makes them agree to 10 ns) */
	tx_init(&t, "matrix: {method: [a]}\n"
		    "run: {repeat: {min: 2, max: 5, until_cv: 0.001%}, caches: keep}\n");
	set_null_duration(&t, 1 * MS);
	t.fake.stretch_ms = 1;
	tx_run(&t);
	struct result_cell *c = cell(&t, CELL("a"));
	g_assert_cmpint(c->status, ==, STATUS_PASSED);
	g_assert_cmpuint(measured(c), ==, 5);
	g_assert_cmpint(c->stop_reason, ==, STATS_STOP_MAX);
	fake_run_clear(&t);
}

static void test_repeat_budget(void)
{
	struct fake_run t;
	tx_init(&t, "matrix: {method: [a]}\n"
		    "run: {repeat: {min: 2, max: 1000, budget: 1s}, caches: keep}\n");
	set_null_duration(&t, 2 * MS);
	t.p->run.repeat.budget = 9 * MS; /* patched: so that the test takes milliseconds */
	tx_run(&t);
	struct result_cell *c = cell(&t, CELL("a"));
	g_assert_cmpint(c->stop_reason, ==, STATS_STOP_BUDGET);
	g_assert_cmpuint(measured(c), >=, 2);
	g_assert_cmpuint(measured(c), <=, 5);
	fake_run_clear(&t);
}

static void test_warmups(void)
{
	struct fake_run t;
	tx_init(&t, "matrix: {method: [a]}\nrun: {repeat: 3, warmup: 2, caches: drop}\n");
	tx_run(&t);
	struct result_cell *c = cell(&t, CELL("a"));
	g_assert_cmpint(c->status, ==, STATUS_PASSED);
	g_assert_cmpuint(c->n_runs, ==, 5);
	g_assert_true(c->runs[0].warmup && c->runs[1].warmup);
	g_assert_cmpuint(measured(c), ==, 3);
	g_assert_cmpuint(c->stats.total.n, ==, 3); /* statistics over the measured runs only */
	g_assert_cmpint(c->stop_reason, ==, STATS_STOP_MAX);
	g_assert_cmpuint(t.fake.drops, ==, 3); /* caches are dropped before measured runs only */
	/* the null method says what it moved: nothing */
	for (size_t i = 0; i < c->n_runs; i++) {
		g_assert_cmpuint(c->runs[i].bytes, ==, 0);
		g_assert_cmpuint(c->runs[i].files, ==, 0);
	}
	g_assert_cmpfloat(c->stats.bytes_per_s, ==, 0.0);
	fake_run_clear(&t);
}

/* ---- resume, rerun-failed, fail-fast ---- */

static void test_resume(void)
{
	struct fake_run t;
	tx_init(&t, "run: {repeat: 1}\n");
	t.results_path = g_build_filename(tmp_dir, "resume.json", NULL);
	t.o.results_path = t.results_path;
	/* a first run of one shard only: cells 0 and 2 of 0..2 (shard 1/2) */
	t.o.shard_k = 1;
	t.o.shard_n = 2;
	tx_run(&t);
	char *runs = runs_of(&t);
	g_assert_cmpstr(runs, ==, "a0 c0");
	g_free(runs);
	/* resume the whole plan: exactly the missing cell runs */
	char *err = NULL;
	t.o.shard_k = t.o.shard_n = 0;
	results_free(t.r);
	t.r = NULL;
	t.o.resume = results_read(t.results_path, &err);
	g_assert_nonnull(t.o.resume);
	struct results *prev = t.o.resume;
	tx_run(&t);
	g_assert_true(t.r == prev); /* resume fills the earlier results */
	runs = runs_of(&t);
	g_assert_cmpstr(runs, ==, "b0");
	g_free(runs);
	g_assert_cmpuint(t.res.counts[STATUS_PASSED], ==, 3);
	fake_run_clear(&t);
}

static const char *const fail_b = "run: {repeat: 1}\n"
				  "criteria:\n"
				  "  - {metric: total, max: 1ms, where: {method: b}}\n";

static void test_rerun_failed(void)
{
	struct fake_run t;
	tx_init(&t, fail_b);
	set_null_duration(&t, 3 * MS); /* b's total (3 ms) breaks its criterion */
	t.results_path = g_build_filename(tmp_dir, "rerun.json", NULL);
	t.o.results_path = t.results_path;
	tx_run(&t);
	g_assert_cmpint(cell(&t, CELL("b"))->status, ==, STATUS_FAILED);
	g_assert_cmpuint(t.res.counts[STATUS_PASSED], ==, 2);
	/* plain resume: nothing left to run */
	char *err = NULL;
	results_free(t.r);
	t.r = NULL;
	t.o.resume = results_read(t.results_path, &err);
	tx_run(&t);
	char *runs = runs_of(&t);
	g_assert_cmpstr(runs, ==, "");
	g_free(runs);
	/* --rerun-failed: exactly b */
	results_free(t.r); /* the resumed results */
	t.r = NULL;
	t.o.resume = results_read(t.results_path, &err);
	t.o.rerun_failed = true;
	tx_run(&t);
	runs = runs_of(&t);
	g_assert_cmpstr(runs, ==, "b0");
	g_free(runs);
	fake_run_clear(&t);
}

static void test_fail_fast(void)
{
	struct fake_run t;
	tx_init(&t, fail_b);
	set_null_duration(&t, 3 * MS);
	t.o.fail_fast = true;
	tx_run(&t);
	char *runs = runs_of(&t);
	g_assert_cmpstr(runs, ==, "a0 b0");
	g_free(runs);
	g_assert_true(t.res.stopped);
	g_assert_cmpint(cell(&t, CELL("b"))->status, ==, STATUS_FAILED);
	g_assert_cmpint(cell(&t, CELL("c"))->status, ==, STATUS_PENDING);
	g_assert_cmpuint(cell(&t, CELL("c"))->n_runs, ==, 0);
	g_assert_cmpuint(t.res.counts[STATUS_PENDING], ==, 1);
	fake_run_clear(&t);
}

/* ---- faults of the machine ---- */

static void test_broken_shared_vm(void)
{
	struct fake_run t;
	tx_init(&t, "run: {repeat: 2, vm: shared}\n");
	t.o.verbose = true;
	t.fake.break_after = 2; /* the guest breaks before b's first run */
	tx_run(&t);
	g_assert_cmpint(cell(&t, CELL("a"))->status, ==, STATUS_PASSED);
	struct result_cell *b = cell(&t, CELL("b"));
	g_assert_cmpint(b->status, ==, STATUS_ERROR);
	g_assert_nonnull(strstr(b->errors[0].message, "does not answer"));
	g_assert_cmpstr(b->errors[0].serial_tail, ==, "fake console of guest 1");
	/* the broken guest was replaced: c runs on a new one and passes */
	g_assert_cmpint(cell(&t, CELL("c"))->status, ==, STATUS_PASSED);
	g_assert_cmpuint(t.fake.boots, ==, 2);
	g_assert_nonnull(strstr(t.fake.log, "reset 1\ndestroy 1\nboot 2\n"));
	bool told = false;
	for (guint i = 0; i < t.lines->len; i++)
		told |= strstr(t.lines->pdata[i], "the guest fake-1 broke") != NULL;
	g_assert_true(told);
	fake_run_clear(&t);
}

static void test_boot_fails(void)
{
	struct fake_run t;
	tx_init(&t, "run: {repeat: 1, vm: per-cell}\n");
	t.fake.fail_boot = 1;
	tx_run(&t);
	struct result_cell *a = cell(&t, CELL("a"));
	g_assert_cmpint(a->status, ==, STATUS_ERROR);
	g_assert_cmpstr(a->errors[0].message, ==, "fake boot 1 fails as scripted");
	g_assert_cmpint(cell(&t, CELL("b"))->status, ==, STATUS_PASSED);
	g_assert_cmpint(cell(&t, CELL("c"))->status, ==, STATUS_PASSED);
	fake_run_clear(&t);
}

/* ---- timeouts ---- */

static void test_run_timeout(void)
{
	struct fake_run t;
	tx_init(&t, "matrix: {method: [a, b]}\nrun: {repeat: 3}\n");
	t.p->run.timeout = 40 * MS;
	t.fake.hang_cell = CELL("a");
	t.fake.hang_run = 1; /* the second run hangs until the run timeout */
	tx_run(&t);
	struct result_cell *a = cell(&t, CELL("a"));
	g_assert_cmpint(a->status, ==, STATUS_ERROR);
	g_assert_cmpuint(a->n_errors, ==, 1);
	g_assert_cmpint(a->errors[0].kind, ==, ERROR_TIMEOUT);
	g_assert_cmpint(a->errors[0].run, ==, 1);
	g_assert_nonnull(strstr(a->errors[0].message, "run 1 took"));
	g_assert_nonnull(strstr(a->errors[0].message, "longer than the run timeout 40ms"));
	g_assert_cmpuint(a->n_runs, ==, 2); /* the cell stops at the run that timed out */
	g_assert_cmpint(cell(&t, CELL("b"))->status, ==, STATUS_PASSED);
	fake_run_clear(&t);
}

static void test_null_longer_than_timeout(void)
{
	struct fake_run t;
	tx_init(&t, "matrix: {method: [a]}\nrun: {repeat: 1}\n");
	set_null_duration(&t, 3600000 * MS); /* an hour: the transfer gives up at the timeout */
	t.p->run.timeout = 20 * MS;
	uint64_t t0 = now_ns();
	tx_run(&t);
	g_assert_cmpuint(now_ns() - t0, <, 2000 * MS);
	struct result_cell *a = cell(&t, CELL("a"));
	g_assert_cmpint(a->status, ==, STATUS_ERROR);
	g_assert_cmpint(a->errors[0].kind, ==, ERROR_TIMEOUT);
	g_assert_cmpint(a->errors[0].phase, ==, PHASE_TRANSFER);
	g_assert_nonnull(strstr(a->errors[0].message, "longer than the run timeout"));
	fake_run_clear(&t);
}

static void test_cell_timeout(void)
{
	struct fake_run t;
	tx_init(&t, "matrix: {method: [a]}\nrun: {repeat: {min: 1000, max: 1000}}\n");
	set_null_duration(&t, 10 * MS);
	t.p->run.cell_timeout = 45 * MS;
	tx_run(&t);
	struct result_cell *a = cell(&t, CELL("a"));
	g_assert_cmpint(a->status, ==, STATUS_ERROR);
	g_assert_cmpint(a->errors[0].kind, ==, ERROR_TIMEOUT);
	g_assert_cmpint(a->errors[0].run, ==, -1);
	g_assert_nonnull(strstr(a->errors[0].message, "cell took longer than its timeout 45ms"));
	g_assert_cmpuint(a->n_runs, >=, 1);
	g_assert_cmpuint(a->n_runs, <=, 5); /* 45 ms of 10 ms runs, not 1000 runs */
	fake_run_clear(&t);
}

/* ---- criteria ---- */

static void test_criteria(void)
{
	struct fake_run t;
	tx_init(&t, "criteria:\n"
		    "  - {metric: throughput, min: 20MB/s}\n"
		    "  - {metric: total, max: 2s, where: {method: a}}\n"
		    "  - {metric: cv, max: 5%, where: {method: b}}\n");
	struct plan_cell pa, pb;
	plan_cell(t.p, t.m, 0, &pa);
	plan_cell(t.p, t.m, 1, &pb);
	g_assert_true(criterion_applies(&t.p->criteria[1], &pa));
	g_assert_false(criterion_applies(&t.p->criteria[1], &pb));

	struct result_stats s = { 0 };
	s.bytes_per_s = 30e6;
	s.total.median = 1.5;
	s.total.cv = 0.10;
	struct result_cell *rc = results_add_cell(t.r = results_new(), "x");
	g_assert_cmpuint(criteria_check(t.p->criteria, t.p->n_criteria, &pa, &s, rc), ==, 0);
	g_assert_cmpuint(rc->n_errors, ==, 0);
	/* b: cv 10% > 5% */
	g_assert_cmpuint(criteria_check(t.p->criteria, t.p->n_criteria, &pb, &s, rc), ==, 1);
	g_assert_cmpint(rc->errors[0].kind, ==, ERROR_CRITERION);
	g_assert_true(g_str_has_suffix(rc->errors[0].message,
				       "/plan.yaml:11: cv is 10%, expected at most 5%"));
	g_assert_true(g_str_has_prefix(rc->errors[0].message, "criterion /"));
	/* a: too slow and too long; an undefined throughput never passes */
	s.bytes_per_s = NAN;
	s.total.median = 2.5;
	g_assert_cmpuint(criteria_check(t.p->criteria, t.p->n_criteria, &pa, &s, rc), ==, 2);
	g_assert_nonnull(strstr(rc->errors[1].message, "throughput is undefined, expected at "
						       "least 20MB/s"));
	g_assert_nonnull(strstr(rc->errors[2].message, "total is 2.500 s, expected at most 2s"));
	fake_run_clear(&t);
}

/* ---- the metrics of a run (run-metrics.c) ---- */

static double run_metric(const struct result_run *r, const char *name)
{
	json_t *v = r->metrics ? json_object_get(r->metrics, name) : NULL;
	g_assert_true(json_is_number(v));
	return json_number_value(v);
}

/* The executor samples allocation before prepare and after finalize, the CPU counters around the
 * transfer phase only, and the allocation again after a reclaim; every run records them. */
static void test_metrics_sampled(void)
{
	struct fake_run t;
	tx_init(&t, "matrix: {method: [a]}\n"
		    "run: {repeat: 3, warmup: 1, caches: keep}\n");
	t.fake.sample = t.fake.discard = true;
	t.fake.alloc_fresh = 1 << 20;
	t.fake.alloc_per_run = 5 << 20;
	t.fake.alloc_trimmed = 2 << 20;
	t.fake.cpu_qemu_per_run = 0.25;
	t.fake.cpu_guest_per_run = 0.125;
	t.results_path = g_build_filename(tmp_dir, "metrics.json", NULL);
	t.o.results_path = t.results_path;
	tx_run(&t);
	struct result_cell *c = cell(&t, CELL("a"));
	g_assert_cmpint(c->status, ==, STATUS_PASSED);
	g_assert_cmpuint(c->n_runs, ==, 4);
	g_assert_cmpuint(t.fake.reclaims, ==, 4);
	for (size_t i = 0; i < c->n_runs; i++) {
		const struct result_run *r = &c->runs[i];
		g_assert_cmpfloat(run_metric(r, "alloc_before"), ==, 1 << 20);
		g_assert_cmpfloat(run_metric(r, "alloc_after"), ==, 6 << 20);
		g_assert_cmpfloat(run_metric(r, "alloc_growth"), ==, 5 << 20);
		g_assert_cmpfloat(run_metric(r, "alloc_deleted"), ==, 2 << 20);
		g_assert_cmpfloat(run_metric(r, "cpu_qemu"), ==, 0.25);
		g_assert_cmpfloat(run_metric(r, "cpu_guest"), ==, 0.125);
	}
	/* described with unit and direction; summarized over the measured runs */
	const struct result_metric *d = results_find_metric(t.r, "alloc_after");
	g_assert_nonnull(d);
	g_assert_cmpstr(d->unit, ==, "B");
	g_assert_false(d->higher_better);
	g_assert_cmpstr(results_find_metric(t.r, "cpu_qemu")->unit, ==, "s");
	struct stats_summary s;
	result_cell_metric_summary(c, "cpu_guest", &s);
	g_assert_cmpuint(s.n, ==, 3);
	g_assert_cmpfloat(s.median, ==, 0.125);
	result_cell_metric_summary(c, "write_throughput", &s);
	g_assert_cmpuint(s.n, ==, 0);
	/* the results file carries them and their summaries */
	char *err = NULL;
	struct results *r = results_read(t.results_path, &err);
	g_assert_null(err);
	const struct result_cell *rc = results_find_cell(r, CELL("a"));
	g_assert_cmpfloat(result_run_metric(&rc->runs[2], "alloc_growth"), ==, 5 << 20);
	g_assert_cmpstr(results_find_metric(r, "alloc_growth")->unit, ==, "B");
	results_free(r);
	gchar *text = NULL;
	g_assert_true(g_file_get_contents(t.results_path, &text, NULL, NULL));
	json_t *root = json_loads(text, 0, NULL);
	json_t *st = json_object_get(json_array_get(json_object_get(root, "cells"), 0), "stats");
	json_t *cg = json_object_get(json_object_get(st, "metrics"), "cpu_guest");
	g_assert_cmpint(json_integer_value(json_object_get(cg, "n")), ==, 3);
	g_assert_cmpfloat(json_number_value(json_object_get(cg, "median")), ==, 0.125);
	json_decref(root);
	g_free(text);
	fake_run_clear(&t);
}

/* A machine that cannot measure records nothing; without discard there is no reclaim, and a
 * failed run is never reclaimed. */
static void test_metrics_absent(void)
{
	struct fake_run t;
	tx_init(&t, "matrix: {method: [a]}\nrun: {repeat: 2, caches: keep}\n");
	tx_run(&t);
	struct result_cell *c = cell(&t, CELL("a"));
	g_assert_cmpuint(c->n_runs, ==, 2);
	for (size_t i = 0; i < c->n_runs; i++)
		g_assert_null(c->runs[i].metrics);
	g_assert_null(results_find_metric(t.r, "alloc_after"));
	fake_run_clear(&t);

	tx_init(&t, "matrix: {method: [a]}\nrun: {repeat: 2, caches: keep}\n");
	t.fake.sample = true;
	t.fake.alloc_fresh = 4096;
	tx_run(&t);
	c = cell(&t, CELL("a"));
	g_assert_cmpuint(t.fake.reclaims, ==, 0);
	g_assert_null(json_object_get(c->runs[0].metrics, "alloc_deleted"));
	g_assert_cmpfloat(run_metric(&c->runs[0], "alloc_before"), ==, 4096);
	fake_run_clear(&t);

	/* a transfer that fails (longer than the run timeout) is not reclaimed */
	tx_init(&t, "matrix: {method: [a]}\nrun: {repeat: 1, caches: keep}\n");
	set_null_duration(&t, 3600000 * MS);
	t.p->run.timeout = 20 * MS;
	t.fake.sample = t.fake.discard = true;
	tx_run(&t);
	g_assert_cmpint(cell(&t, CELL("a"))->status, ==, STATUS_ERROR);
	g_assert_cmpuint(t.fake.reclaims, ==, 0);
	fake_run_clear(&t);
}

/* A criterion on a run metric checks its median over the cell's measured runs, in its unit. */
static void test_criteria_run_metric(void)
{
	struct fake_run t;
	tx_init(&t, "criteria:\n"
		    "  - {metric: write_throughput, min: 20MB/s}\n"
		    "  - {metric: alloc_growth, max: 10MiB}\n"
		    "  - {metric: cpu_qemu, max: 1s}\n");
	struct plan_cell pa;
	plan_cell(t.p, t.m, 0, &pa);
	struct result_stats s = { 0 };
	struct result_cell *rc = results_add_cell(t.r = results_new(), "x");
	double w[3] = { 30e6, 10e6, 25e6 };
	for (int i = 0; i < 3; i++) {
		struct result_run *r = result_cell_add_run(rc, false);
		r->total = 1.0;
		r->integrity_ok = true;
		r->metrics = json_pack("{s:f, s:f, s:f}", "write_throughput", w[i], "alloc_growth",
				       12.0 * (1 << 20), "cpu_qemu", 0.5);
	}
	/* medians: 25 MB/s passes, 12 MiB is too much, 0.5 s passes */
	g_assert_cmpuint(criteria_check(t.p->criteria, t.p->n_criteria, &pa, &s, rc), ==, 1);
	g_assert_nonnull(strstr(rc->errors[0].message, "alloc_growth is 12.6 MB, expected at most "
						       "10MiB"));
	/* a metric no run reported never passes */
	json_object_del(rc->runs[0].metrics, "cpu_qemu");
	json_object_del(rc->runs[1].metrics, "cpu_qemu");
	json_object_del(rc->runs[2].metrics, "cpu_qemu");
	g_assert_cmpuint(criteria_check(t.p->criteria, t.p->n_criteria, &pa, &s, rc), ==, 2);
	g_assert_nonnull(
	    strstr(rc->errors[2].message, "cpu_qemu is undefined, expected at most 1s"));
	fake_run_clear(&t);
}

/* ---- the results file ---- */

static void test_results_every_cell(void)
{
	struct fake_run t;
	tx_init(&t, "run: {repeat: 1}\n");
	t.results_path = g_build_filename(tmp_dir, "every.json", NULL);
	t.o.results_path = t.results_path;
	tx_run(&t);
	/* when cell k finished, the file on disk held the k - 1 cells before it */
	g_assert_cmpuint(t.seen->len, ==, 3);
	for (guint i = 0; i < 3; i++)
		g_assert_cmpuint(g_array_index(t.seen, guint, i), ==, i);
	char *err = NULL;
	struct results *r = results_read(t.results_path, &err);
	g_assert_nonnull(r);
	size_t counts[STATUS_COUNT];
	results_count_status(r, counts);
	g_assert_cmpuint(counts[STATUS_PASSED], ==, 3);
	g_assert_cmpstr(r->provenance.accelerator, ==, "fake");
	results_free(r);
	fake_run_clear(&t);
}

static void interrupt_after_first(void *ud, const char *text)
{
	on_line(ud, text);
	if (g_str_has_prefix(text, "[1/3]"))
		raise(SIGINT);
}

/* An interrupt stops the run, leaves the unfinished cells pending and says which signal. */
static void test_interrupt(void)
{
	if (g_test_subprocess()) {
		struct fake_run t;
		/* shared: b starts in the same group and is cut short at its first run */
		tx_init(&t, "run: {repeat: 2, vm: shared}\n");
		t.o.line = interrupt_after_first;
		tx_run(&t);
		g_assert_cmpint(t.res.signal, ==, SIGINT);
		g_assert_cmpint(cell(&t, CELL("a"))->status, ==, STATUS_PASSED);
		g_assert_cmpint(cell(&t, CELL("b"))->status, ==, STATUS_PENDING);
		g_assert_cmpuint(cell(&t, CELL("b"))->n_runs, ==, 0);
		g_assert_cmpint(cell(&t, CELL("c"))->status, ==, STATUS_PENDING);
		char *runs = runs_of(&t);
		g_assert_cmpstr(runs, ==, "a0 a1");
		g_free(runs);
		fake_run_clear(&t);
		return;
	}
	g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDERR);
	g_test_trap_assert_passed();
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	tmp_dir = fake_dir_make("ferry-test-executor");
	g_test_add_func("/executor/repeat/cv", test_repeat_cv);
	g_test_add_func("/executor/repeat/cap", test_repeat_cap);
	g_test_add_func("/executor/repeat/budget", test_repeat_budget);
	g_test_add_func("/executor/warmups", test_warmups);
	g_test_add_func("/executor/resume", test_resume);
	g_test_add_func("/executor/rerun-failed", test_rerun_failed);
	g_test_add_func("/executor/fail-fast", test_fail_fast);
	g_test_add_func("/executor/broken-shared-vm", test_broken_shared_vm);
	g_test_add_func("/executor/boot-fails", test_boot_fails);
	g_test_add_func("/executor/timeout/run", test_run_timeout);
	g_test_add_func("/executor/timeout/null-longer", test_null_longer_than_timeout);
	g_test_add_func("/executor/timeout/cell", test_cell_timeout);
	g_test_add_func("/executor/criteria", test_criteria);
	g_test_add_func("/executor/criteria/run-metric", test_criteria_run_metric);
	g_test_add_func("/executor/results-every-cell", test_results_every_cell);
	g_test_add_func("/executor/metrics/sampled", test_metrics_sampled);
	g_test_add_func("/executor/metrics/absent", test_metrics_absent);
	g_test_add_func("/executor/interrupt", test_interrupt);
	int rc = g_test_run();
	fake_dir_remove(tmp_dir);
	return rc;
}
