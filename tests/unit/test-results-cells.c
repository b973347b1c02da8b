/* SPDX-License-Identifier: MIT */
/*
 * The results model's cells: found by id (a hash lookup) and reset, compared (Welch), counted by
 * status and finished or not for --resume and --rerun-failed; and the CPU time the process took.
 */
#include <glib.h>
#include <math.h>
#include <sys/mman.h>
#include <unistd.h>

#include "results-sample.h"
#include "results.h"
#include "util.h"

/*
 * results_find_cell() is a hash lookup, not a scan (--resume looks up every cell of the plan,
 * which a scan makes quadratic): with every other cell's id pointing at a page that cannot be
 * read, finding a cell must not touch them. A scan faults on the first of them.
 */
static void test_find_cell_hashed(void)
{
	_cleanup_(results_freep) struct results *r = results_new();
	enum { N = 2000 };
	for (int i = 0; i < N; i++) {
		_cleanup_free_ char *id = xasprintf("vm=small,dataset=d%d,method=agent", i);
		results_add_cell(r, id);
	}
	/* the same id again: the first cell keeps it, as with a scan */
	results_add_cell(r, "vm=small,dataset=d7,method=agent");
	long page = sysconf(_SC_PAGESIZE);
	char *guard = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	g_assert_true(guard != MAP_FAILED);
	_cleanup_free_ char **saved = xcalloc(N + 1, sizeof(*saved));
	for (int k = 0; k < N; k += 97) {
		_cleanup_free_ char *want = xasprintf("vm=small,dataset=d%d,method=agent", k);
		for (size_t i = 0; i < r->n_cells; i++) {
			saved[i] = r->cells[i].id;
			if (i != (size_t)k)
				r->cells[i].id = guard;
		}
		struct result_cell *c = results_find_cell(r, want);
		for (size_t i = 0; i < r->n_cells; i++)
			r->cells[i].id = saved[i];
		g_assert_true(c == &r->cells[k]);
	}
	g_assert_true(results_find_cell(r, "vm=small,dataset=d7,method=agent") == &r->cells[7]);
	g_assert_null(results_find_cell(r, "vm=small,dataset=d2000,method=agent"));
	g_assert_null(results_find_cell(r, ""));
	munmap(guard, (size_t)page);

	/* cells moved behind results_add_cell()'s back (as merge does) are still found */
	struct result_cell tmp = r->cells[0];
	r->cells[0] = r->cells[1];
	r->cells[1] = tmp;
	g_assert_true(results_find_cell(r, "vm=small,dataset=d0,method=agent") == &r->cells[1]);
	g_assert_true(results_find_cell(r, "vm=small,dataset=d1,method=agent") == &r->cells[0]);
	size_t n = r->n_cells;
	r->n_cells = 1;
	g_assert_null(results_find_cell(r, "vm=small,dataset=d0,method=agent"));
	r->n_cells = n;
	g_assert_true(results_find_cell(r, "vm=small,dataset=d0,method=agent") == &r->cells[1]);
}

static void test_find_names(void)
{
	struct results *r = sample();
	g_assert_true(results_find_cell(r, "method=share,dataset=tree") == &r->cells[3]);
	g_assert_null(results_find_cell(r, "method=nope"));
	for (int i = 0; i < PHASE_COUNT; i++)
		g_assert_cmpint(result_phase_from_name(result_phase_name(i)), ==, i);
	for (int i = 0; i < STATUS_COUNT; i++)
		g_assert_cmpint(result_status_from_name(result_status_name(i)), ==, i);
	for (int i = 0; i < ERROR_KIND_COUNT; i++)
		g_assert_cmpint(result_error_kind_from_name(result_error_kind_name(i)), ==, i);
	g_assert_cmpint(result_status_from_name("ok"), ==, -1);

	/* a failed cell reset for --rerun-failed keeps what defines it and nothing it produced */
	struct result_cell *c = &r->cells[1];
	result_cell_reset(c);
	g_assert_cmpstr(c->id, ==, "method=share,dataset=few-large");
	g_assert_cmpuint(c->n_axes, ==, 2);
	g_assert_cmpint(c->status, ==, STATUS_PENDING);
	g_assert_cmpuint(c->n_runs + c->n_errors, ==, 0);
	g_assert_false(c->has_stats);
	g_assert_cmpint(c->stop_reason, ==, STATS_CONTINUE);
	g_assert_cmpint(c->started_ms, ==, 0);
	/* and can be filled again */
	struct result_run *run = result_cell_add_run(c, false);
	g_assert_cmpuint(run->index, ==, 0);
	g_assert_true(isnan(run->total));
	results_free(r);
}

static void add_totals(struct result_cell *c, const double *t, size_t n)
{
	/* a warmup and a run that failed integrity, both far off: neither may count */
	struct result_run *run = result_cell_add_run(c, true);
	run->total = 100;
	run->integrity_ok = true;
	run = result_cell_add_run(c, false);
	run->total = 200;
	run->integrity_ok = false;
	for (size_t i = 0; i < n; i++) {
		run = result_cell_add_run(c, false);
		run->phase[PHASE_TRANSFER] = t[i];
		run->total = result_run_total(run);
		run->integrity_ok = true;
	}
}

static void test_compare_cells(void)
{
	struct results *r = results_new();
	struct stats_compare cmp;
	static const double a[] = { 1, 2, 3 }, b[] = { 4, 5, 6 };

	add_totals(results_add_cell(r, "base"), a, 3);
	add_totals(results_add_cell(r, "cand"), b, 3);
	add_totals(results_add_cell(r, "one"), a, 1);
	/* the same figures as test-stats' hand-computed Welch case: t = 3/sqrt(2/3), df 4 */
	g_assert_cmpint(results_compare_cells(&r->cells[0], &r->cells[1], -1, 0.95, &cmp), ==, 0);
	assert_near(cmp.t, 3.674234614174767, 1e-12);
	assert_near(cmp.df, 4, 1e-12);
	assert_near(cmp.p_value, 0.021311641129, 1e-9);
	assert_near(cmp.rel_change, 1.5, 1e-15);
	/* per phase: the same figures, since only transfer has time; prepare has none at all */
	g_assert_cmpint(
	    results_compare_cells(&r->cells[0], &r->cells[1], PHASE_TRANSFER, 0.95, &cmp), ==, 0);
	assert_near(cmp.t, 3.674234614174767, 1e-12);
	g_assert_cmpint(
	    results_compare_cells(&r->cells[0], &r->cells[1], PHASE_PREPARE, 0.95, &cmp), ==, -1);
	g_assert_cmpint(results_compare_cells(&r->cells[0], &r->cells[1], PHASE_COUNT, 0.95, &cmp),
			==, -1);
	/* one measured run is not enough to compare */
	g_assert_cmpint(results_compare_cells(&r->cells[0], &r->cells[2], -1, 0.95, &cmp), ==, -1);
	results_free(r);
}

static void test_finished_and_counts(void)
{
	struct results *r = sample();
	size_t counts[STATUS_COUNT];

	results_count_status(r, counts);
	for (size_t s = 0; s < STATUS_COUNT; s++)
		g_assert_cmpuint(counts[s], ==, 1);

	static const struct {
		enum result_status status;
		bool resume, rerun_failed;
	} cases[] = {
		{ STATUS_PENDING, false, false }, { STATUS_PASSED, true, true },
		{ STATUS_FAILED, true, false },   { STATUS_ERROR, true, false },
		{ STATUS_SKIPPED, true, true },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct result_cell c = { .status = cases[i].status };
		g_assert_cmpint(result_cell_finished(&c, false), ==, cases[i].resume);
		g_assert_cmpint(result_cell_finished(&c, true), ==, cases[i].rerun_failed);
	}
	results_free(r);
}

static void test_cpu(void)
{
	double u0, s0, u1, s1;
	volatile double x = 0;

	results_cpu_now(&u0, &s0);
	for (int i = 0; i < 1000000; i++)
		x += i;
	results_cpu_now(&u1, &s1);
	g_assert_true(isfinite(u0) && isfinite(s0) && u0 >= 0 && s0 >= 0);
	g_assert_cmpfloat(u1, >=, u0);
	g_assert_cmpfloat(s1, >=, s0);
	g_assert_cmpfloat(x, ==, 499999500000.0); /* sum 0..999999: the loop really ran */
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/results/find-names", test_find_names);
	g_test_add_func("/results/find-cell-hashed", test_find_cell_hashed);
	g_test_add_func("/results/compare-cells", test_compare_cells);
	g_test_add_func("/results/finished-and-counts", test_finished_and_counts);
	g_test_add_func("/results/cpu", test_cpu);
	return g_test_run();
}
