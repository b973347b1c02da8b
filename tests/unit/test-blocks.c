/* SPDX-License-Identifier: MIT */
/*
 * Blocks (run.boots, runner/exec/blocks.c and runner/results/design.c) on the fake machine with
 * the null method, and the design's statistics on seeded synthetic results: the groups of a
 * block shuffled by seed, every cell measured in every block in its VM configuration's one
 * boot, the pilot's variance components and its runs per boot (Kalibera and Jones), the stop
 * rule on half-width, cap and budget with its reason, a failing boot, the plan keys as
 * untrusted input, and one fan-out unit for all cells.
 */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "design.h"
#include "exec.h"
#include "exec-int.h"
#include "fake-run.h"
#include "plan.h"
#include "stats.h"
#include "util.h"

#define MS 1000000ull

static char *tmp_dir;

/* Three VM configurations (v1, v2, v3), one disk, one dataset, null methods a and b. */
static const char *const base_plan = "ferry: 1\n"
				     "name: t\n"
				     "vms: {v1: {guest: builtin}, v2: {guest: builtin, vcpus: 2},"
				     " v3: {guest: builtin, vcpus: 3}}\n"
				     "disks: {d: {kind: tmpfs, size: 64MiB}}\n"
				     "datasets: {s: {files: 1, size: 1KiB}}\n"
				     "methods: {a: {type: null}, b: {type: null}}\n";

static void bx_init(struct fake_run *t, const char *extra)
{
	char *text = g_strconcat(base_plan, extra, NULL);
	fake_run_init(t, tmp_dir, text, NULL);
	g_free(text);
	t->o.no_canary = true; /* test_every_cell_every_block measures it */
	for (size_t i = 0; i < t->p->n_methods; i++) {
		char *err = NULL;
		g_assert_cmpint(plan_method_set(&t->p->methods[i], "duration", "1ms", &err), ==, 0);
	}
}

static void bx_run(struct fake_run *t)
{
	fake_run_exec(t);
	g_assert_cmpuint(t->fake.live, ==, 0); /* every guest destroyed */
}

static struct result_cell *cell(struct fake_run *t, const char *id)
{
	struct result_cell *c = results_find_cell(t->r, id);
	g_assert_nonnull(c);
	return c;
}

/* The VM of each run in the fake's log order, one letter per run ("1", "2", "3"), blocks of
 * runs per boot and cells: "1122 3344 ..." without spaces. */
static char *vm_sequence(const struct fake_run *t)
{
	GString *s = g_string_new("");
	gchar **lines = g_strsplit(t->fake.log ? t->fake.log : "", "\n", -1);
	for (gchar **l = lines; *l; l++) {
		const char *v = strstr(*l, "vm=v");
		if (g_str_has_prefix(*l, "run ") && v)
			g_string_append_c(s, v[4]);
	}
	g_strfreev(lines);
	return g_string_free(s, FALSE);
}

static char *run_seed(uint64_t seed)
{
	struct fake_run t;
	char *extra =
	    g_strdup_printf("matrix: {vm: [v1, v2, v3], method: [a]}\n"
			    "run: {boots: 4, runs_per_boot: 2, seed: %llu, caches: keep}\n",
			    (unsigned long long)seed);
	bx_init(&t, extra);
	g_free(extra);
	bx_run(&t);
	char *seq = vm_sequence(&t);
	g_assert_cmpuint(t.fake.boots, ==, 12); /* 4 blocks x 3 VM configurations */
	g_assert_cmpuint(t.r->design.blocks, ==, 4);
	fake_run_clear(&t);
	return seq;
}

/* Each block boots every VM configuration once, in an order shuffled by the seed. */
static void test_shuffle_by_seed(void)
{
	bool differs = false, moved = false;
	char *first = NULL;
	for (uint64_t seed = 1; seed <= 4; seed++) {
		char *a = run_seed(seed), *b = run_seed(seed);
		g_assert_cmpstr(a, ==, b); /* the same seed, the same order */
		g_assert_cmpuint(strlen(a), ==, 4 * 3 * 2);
		for (size_t k = 0; k < 4; k++) {
			/* a block: three turns of two runs, each VM configuration once */
			const char *blk = a + k * 6;
			g_assert_cmpint(blk[0], ==, blk[1]);
			g_assert_cmpint(blk[2], ==, blk[3]);
			g_assert_cmpint(blk[4], ==, blk[5]);
			g_assert_true(memchr(blk, '1', 6) && memchr(blk, '2', 6) &&
				      memchr(blk, '3', 6));
			moved |=
			    k > 0 && memcmp(blk, a, 6) != 0; /* blocks differ from each other */
		}
		if (!first)
			first = g_strdup(a);
		else
			differs |= !STREQ(first, a);
		g_free(a);
		g_free(b);
	}
	g_assert_true(differs);
	g_assert_true(moved);
	g_free(first);
}

/* Every cell takes runs_per_boot runs in every block, in its VM configuration's one boot of it;
 * the cells of one configuration share that boot. */
static void test_every_cell_every_block(void)
{
	struct fake_run t;
	bx_init(&t, "matrix: {vm: [v1, v2], method: [a, b]}\n"
		    "run: {boots: 3, runs_per_boot: 2, warmup: 1, caches: keep}\n");
	t.o.no_canary = false;
	bx_run(&t);
	g_assert_cmpuint(t.fake.boots, ==, 6);
	g_assert_cmpuint(t.r->design.runs_per_boot, ==, 2);
	g_assert_false(t.r->design.automatic);
	g_assert_cmpint(t.r->design.stop, ==, STATS_STOP_MAX);
	const char *ids[] = { "vm=v1,disk=d,dataset=s,method=a", "vm=v1,disk=d,dataset=s,method=b",
			      "vm=v2,disk=d,dataset=s,method=a",
			      "vm=v2,disk=d,dataset=s,method=b" };
	int64_t boot_of[4][4] = { { 0 } };
	for (size_t i = 0; i < 4; i++) {
		struct result_cell *c = cell(&t, ids[i]);
		g_assert_cmpint(c->status, ==, STATUS_PASSED);
		g_assert_cmpint(c->stop_reason, ==, STATS_STOP_MAX);
		size_t per[4] = { 0 };
		size_t warm = 0;
		for (size_t j = 0; j < c->n_runs; j++) {
			const struct result_run *r = &c->runs[j];
			/* the drift canary of the run's boot on the host (the fake runs no guest
			 * commands, so the guest's is not recorded rather than 0) */
			g_assert_cmpfloat(result_run_metric(r, "canary_host"), >, 0);
			g_assert_true(isnan(result_run_metric(r, "canary_guest")));
			g_assert_cmpint(r->block, >=, 1);
			g_assert_cmpint(r->block, <=, 3);
			if (r->warmup) {
				warm++;
				g_assert_cmpint(r->block, ==, 1);
				continue;
			}
			per[r->block]++;
			if (boot_of[i][r->block])
				g_assert_cmpint(boot_of[i][r->block], ==, r->boot); /* one boot */
			boot_of[i][r->block] = r->boot;
		}
		g_assert_cmpuint(warm, ==, 1);
		for (int b = 1; b <= 3; b++)
			g_assert_cmpuint(per[b], ==, 2);
	}
	for (int b = 1; b <= 3; b++) {
		g_assert_cmpint(boot_of[0][b], ==, boot_of[1][b]); /* a and b share v1's boot */
		g_assert_cmpint(boot_of[2][b], ==, boot_of[3][b]);
		g_assert_cmpint(boot_of[0][b], !=, boot_of[2][b]);
	}
	fake_run_clear(&t);
}

/* In every block the cells that share the boot take their runs in turns (a, b, a, b), whatever
 * run.order says, so that a drift of the host within one boot falls on both alike (the gate's
 * control cell, docs/gate.md). The order is the fake's log of runs. */
static void test_round_robin_blocks(void)
{
	const char *want[] = { "abababababab", "ababababab"
					       "ab" };
	const char *orders[] = { "sequential", "interleaved" };
	for (int k = 0; k < 2; k++) {
		struct fake_run t;
		char *extra = g_strdup_printf("matrix: {vm: [v1], method: [a, b]}\n"
					      "run: {boots: 2, runs_per_boot: 3, caches: keep, "
					      "order: %s}\n",
					      orders[k]);
		bx_init(&t, extra);
		g_free(extra);
		bx_run(&t);
		g_assert_cmpuint(t.fake.boots, ==, 2);
		GString *seq = g_string_new("");
		gchar **lines = g_strsplit(t.fake.log ? t.fake.log : "", "\n", -1);
		for (gchar **l = lines; *l; l++) {
			const char *m = strstr(*l, "method=");
			if (g_str_has_prefix(*l, "run ") && m)
				g_string_append_c(seq, m[7]);
		}
		g_strfreev(lines);
		g_assert_cmpstr(seq->str, ==, want[k]);
		g_string_free(seq, TRUE);
		fake_run_clear(&t);
	}
}

/* ---- the pilot ---- */

struct rng {
	uint64_t s;
};

static double uniform(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return (double)((r->s * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static double normal(struct rng *r)
{
	double u = uniform(r), v = uniform(r);
	if (u < 1e-300)
		u = 1e-300;
	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

/* The pilot's variance components of seeded cells (within-boot SD 3%, between-boot SD 5%)
 * come within 20% of the truth, and the runs per boot follow the formula. */
static void test_pilot_components(void)
{
	struct rng g = { 20261201u };
	struct results *r = results_new();
	const size_t n_cells = 40, blocks = 4, runs = 4;
	const struct result_cell **cells = g_new0(const struct result_cell *, n_cells);
	for (size_t c = 0; c < n_cells; c++) {
		char id[32];
		snprintf(id, sizeof(id), "c=%zu", c);
		results_add_cell(r, id);
	}
	for (size_t c = 0; c < n_cells; c++) {
		struct result_cell *rc = &r->cells[c];
		for (size_t b = 0; b < blocks; b++) {
			double boot = 0.05 * normal(&g);
			for (size_t k = 0; k < runs; k++) {
				struct result_run *run = result_cell_add_run(rc, false);
				run->total = (1.0 + (double)c) * exp(boot + 0.03 * normal(&g));
				run->integrity_ok = true;
				run->boot = (int64_t)(c * blocks + b + 1);
				run->block = (int64_t)b + 1;
			}
		}
		cells[c] = rc;
	}
	double within, between;
	g_assert_cmpuint(design_components(cells, n_cells, &within, &between), ==, n_cells);
	g_test_message("within %.5f (true 0.00090), between %.5f (true 0.00250)", within, between);
	g_assert_cmpfloat(fabs(within / 0.0009 - 1), <, 0.2);
	g_assert_cmpfloat(fabs(between / 0.0025 - 1), <, 0.2);

	/* ceil(sqrt((c_boot / c_run) * (T_run^2 / T_boot^2))) */
	g_assert_cmpuint(design_runs_per_boot(10, 1, 0.0009, 0.0025, 10, 3), ==, 2);
	g_assert_cmpuint(design_runs_per_boot(100, 1, 0.0009, 0.0025, 10, 3), ==, 6);
	g_assert_cmpuint(design_runs_per_boot(1000, 1, 0.0009, 0.0025, 10, 3), ==, 10); /* bound */
	g_assert_cmpuint(design_runs_per_boot(0.01, 1, 0.0009, 0.0025, 10, 3), ==, 1);
	g_assert_cmpuint(design_runs_per_boot(10, 1, 0.0009, 0, 10, 3), ==, 10);
	g_assert_cmpuint(design_runs_per_boot(10, 1, 0, 0.0025, 10, 3), ==, 1);
	g_assert_cmpuint(design_runs_per_boot(NAN, 1, 0.0009, 0.0025, 10, 3), ==, 3);
	unsigned want = (unsigned)ceil(sqrt((10.0 / 1.0) * (within / between)));
	g_assert_cmpuint(design_runs_per_boot(10, 1, within, between, 10, 3), ==, want);
	g_free(cells);
	results_free(r);
}

/* runs_per_boot: auto on the fake: a pilot of 2 blocks at 3 runs per boot, then what the
 * formula says of the pilot's own components and costs, recorded in the results' design. */
static void test_pilot_on_fake(void)
{
	struct fake_run t;
	bx_init(&t, "matrix: {vm: [v1, v2], method: [a]}\n"
		    "run: {boots: 4, caches: keep}\n");
	t.fake.stretch_ms = 1; /* runs of a boot differ: a within-boot variance to measure */
	bx_run(&t);
	const struct result_design *d = &t.r->design;
	g_assert_true(d->automatic);
	g_assert_cmpuint(d->pilot_blocks, ==, 2);
	g_assert_cmpuint(d->pilot_runs, ==, 3);
	g_assert_cmpuint(d->blocks, ==, 4);
	g_assert_true(isfinite(d->within_var) && d->within_var > 0);
	g_assert_true(isfinite(d->boot_s) && isfinite(d->run_s));
	unsigned want =
	    design_runs_per_boot(d->boot_s, d->run_s, d->within_var, d->between_var, 10, 3);
	g_test_message(
	    "pilot: within %.4g, between %.4g, boot %.4f s, run %.4f s: %u runs per boot",
	    d->within_var, d->between_var, d->boot_s, d->run_s, d->runs_per_boot);
	g_assert_cmpuint(d->runs_per_boot, ==, want);
	struct result_cell *c = cell(&t, "vm=v1,disk=d,dataset=s,method=a");
	size_t per[5] = { 0 };
	for (size_t j = 0; j < c->n_runs; j++)
		per[c->runs[j].block]++;
	g_assert_cmpuint(per[1], ==, 3);
	g_assert_cmpuint(per[2], ==, 3);
	g_assert_cmpuint(per[3], ==, want);
	g_assert_cmpuint(per[4], ==, want);
	fake_run_clear(&t);
}

/* ---- the stop rule ---- */

static void test_stop_rule(void)
{
	struct design_rule r = { .min = 3, .max = 10, .until = 0.05, .budget = 60 };
	g_assert_cmpint(design_stop(&r, 2, 1000, 0.01), ==, STATS_CONTINUE); /* min wins */
	g_assert_cmpint(design_stop(&r, 3, 1, 0.05), ==, STATS_STOP_HALFWIDTH);
	g_assert_cmpint(design_stop(&r, 3, 1, 0.06), ==, STATS_CONTINUE);
	g_assert_cmpint(design_stop(&r, 10, 1, 0.06), ==, STATS_STOP_MAX);
	g_assert_cmpint(design_stop(&r, 4, 60, 0.06), ==, STATS_STOP_BUDGET);
	g_assert_cmpint(design_stop(&r, 4, 59, INFINITY), ==, STATS_CONTINUE);
	r.until = 0;
	g_assert_cmpint(design_stop(&r, 4, 1, 0.0), ==, STATS_CONTINUE); /* no target: max */
	g_assert_cmpint(design_stop(&r, 10, 1, 0.0), ==, STATS_STOP_MAX);
}

/* On the fake: the cap, the budget and the half-width each stop the blocks, and say so. */
static void test_stop_on_fake(void)
{
	struct fake_run t;
	/* runs of 1, 2, 3 ms within a boot and alike across boots: 0.001% is out of reach */
	bx_init(&t, "matrix: {vm: [v1], method: [a]}\n"
		    "run: {boots: {min: 2, max: 4}, runs_per_boot: 3, until: 0.001%, "
		    "caches: keep}\n");
	t.fake.stretch_ms = 1;
	bx_run(&t);
	g_assert_cmpuint(t.r->design.blocks, ==, 4);
	g_assert_cmpint(t.r->design.stop, ==, STATS_STOP_MAX);
	g_assert_cmpint(cell(&t, "vm=v1,disk=d,dataset=s,method=a")->stop_reason, ==,
			STATS_STOP_MAX);
	fake_run_clear(&t);

	bx_init(&t,
		"matrix: {vm: [v1], method: [a]}\n"
		"run: {boots: {min: 2, max: 1000}, runs_per_boot: 2, until: 0.001%, budget: 1s, "
		"caches: keep}\n");
	t.fake.stretch_ms = 1;
	t.p->run.budget = 1; /* patched: 1 ns, used up by any block */
	bx_run(&t);
	g_assert_cmpuint(t.r->design.blocks, ==, 2); /* min blocks always run */
	g_assert_cmpint(t.r->design.stop, ==, STATS_STOP_BUDGET);
	g_assert_cmpint(cell(&t, "vm=v1,disk=d,dataset=s,method=a")->stop_reason, ==,
			STATS_STOP_BUDGET);
	fake_run_clear(&t);

	/* a target that intervals of runs of one fixed duration meet (a factor of 11 either
	 * way) once min blocks ran, or a few more on a host busy enough to stretch some runs */
	bx_init(&t, "matrix: {vm: [v1], method: [a]}\n"
		    "run: {boots: {min: 3, max: 200}, runs_per_boot: 2, until: 1000%, "
		    "caches: keep}\n");
	bx_run(&t);
	g_assert_cmpuint(t.r->design.blocks, >=, 3);
	g_assert_cmpuint(t.r->design.blocks, <, 200);
	g_assert_cmpint(t.r->design.stop, ==, STATS_STOP_HALFWIDTH);
	g_assert_cmpfloat(t.r->design.halfwidth, <=, 10.0);
	g_assert_cmpint(cell(&t, "vm=v1,disk=d,dataset=s,method=a")->stop_reason, ==,
			STATS_STOP_HALFWIDTH);
	fake_run_clear(&t);
}

/* The half-width of a cell and of the pairs a report compares. */
static void test_halfwidth(void)
{
	struct results *r = results_new();
	struct result_cell *a = results_add_cell(r, "m=a");
	result_cell_add_axis(a, "m", "a");
	struct result_cell *b = results_add_cell(r, "m=b");
	a = &r->cells[0];
	result_cell_add_axis(b, "m", "b");
	double la[] = { 1.00, 1.10, 0.95 }, lb[] = { 2.0, 2.2, 1.9 };
	for (int k = 0; k < 3; k++) {
		for (int c = 0; c < 2; c++) {
			struct result_run *run = result_cell_add_run(&r->cells[c], false);
			run->total = c ? lb[k] : la[k];
			run->integrity_ok = true;
			run->boot = 2 * k + c + 1;
			run->block = k + 1;
		}
	}
	double m = (log(1.0) + log(1.1) + log(0.95)) / 3, v = 0;
	for (int k = 0; k < 3; k++)
		v += (log(la[k]) - m) * (log(la[k]) - m) / 2;
	double want = expm1(stats_t_quantile(0.975, 2) * sqrt(v / 3));
	g_assert_cmpfloat(fabs(design_cell_halfwidth(&r->cells[0]) - want), <, 1e-12);
	const struct result_cell *cells[] = { &r->cells[0], &r->cells[1] };
	struct verdict_pair *pairs = NULL;
	g_assert_cmpuint(design_pairs(cells, 2, &pairs), ==, 1);
	g_free(pairs);
	/* b is exactly twice a in every block: the paired interval has no width, so the cells'
	 * own intervals are the widest */
	g_assert_cmpfloat(fabs(design_halfwidth(r, cells, 2) - want), <, 1e-9);
	results_free(r);
}

/* A boot that fails: that configuration's cell errs and leaves; the others go on. */
static void test_boot_fails(void)
{
	struct fake_run t;
	bx_init(&t, "matrix: {vm: [v1, v2], method: [a]}\n"
		    "run: {boots: 3, runs_per_boot: 1, caches: keep}\n");
	t.fake.fail_boot = 3; /* the first boot of block 2 */
	bx_run(&t);
	size_t errs = 0, passed = 0;
	for (size_t i = 0; i < t.r->n_cells; i++) {
		errs += t.r->cells[i].status == STATUS_ERROR;
		passed += t.r->cells[i].status == STATUS_PASSED;
	}
	g_assert_cmpuint(errs, ==, 1);
	g_assert_cmpuint(passed, ==, 1);
	g_assert_cmpuint(t.r->design.blocks, ==, 3);
	fake_run_clear(&t);
}

/* run.cell_timeout holds under blocks: a cell's own runs over all blocks count against it, and
 * the cell past it leaves the blocks with a timeout error while the others go on. */
static void test_cell_timeout(void)
{
	struct fake_run t;
	bx_init(&t, "matrix: {vm: [v1], method: [a, b]}\n"
		    "run: {boots: 4, runs_per_boot: 1, cell_timeout: 1s, caches: keep}\n");
	char *err = NULL; /* a: over 1 s by its second run */
	g_assert_cmpint(plan_method_set(&t.p->methods[0], "duration", "600ms", &err), ==, 0);
	bx_run(&t);
	const struct result_cell *a = cell(&t, "vm=v1,disk=d,dataset=s,method=a");
	const struct result_cell *b = cell(&t, "vm=v1,disk=d,dataset=s,method=b");
	g_assert_cmpint(a->status, ==, STATUS_ERROR);
	/* 2 runs (1.2 s) always pass the limit; on a host slow enough (valgrind under load) that
	 * the boot and the first run do, a leaves after 1: never 3 or 4 as b */
	g_assert_cmpuint(a->n_runs, >=, 1);
	g_assert_cmpuint(a->n_runs, <=, 2);
	g_assert_cmpuint(a->n_errors, ==, 1);
	g_assert_cmpint(a->errors[0].kind, ==, ERROR_TIMEOUT);
	char *want =
	    g_strdup_printf("cell took longer than its timeout 1s after %zu runs", a->n_runs);
	g_assert_nonnull(strstr(a->errors[0].message, want));
	g_free(want);
	g_assert_cmpint(b->status, ==, STATUS_PASSED);
	g_assert_cmpuint(b->n_runs, ==, 4);
	g_assert_cmpuint(t.r->design.blocks, ==, 4);
	fake_run_clear(&t);
}

/* ---- plan keys: untrusted input ---- */

static void bad_plan(const char *run, const char *want)
{
	char *text = g_strconcat(base_plan, "matrix: {vm: [v1], method: [a]}\n", run, NULL);
	struct diag_list d = { 0 };
	struct plan *p = plan_parse_buffer("p.yaml", text, strlen(text), &d);
	g_assert_cmpuint(d.n, >=, 1);
	bool found = false;
	for (size_t i = 0; i < d.n; i++)
		found |= strstr(d.items[i].msg, want) != NULL;
	if (!found)
		diag_print(&d, stderr);
	g_assert_true(found);
	diag_list_clear(&d);
	plan_free(p);
	g_free(text);
}

static void test_plan_keys(void)
{
	bad_plan("run: {boots: {min: 4, max: 2}}\n", "'boots' range is empty");
	bad_plan("run: {boots: 3, runs_per_boot: many}\n",
		 "'runs_per_boot' must be a whole number from 1 to 100 or auto, not 'many'");
	bad_plan("run: {boots: 3, runs_per_boot: 0}\n", "not '0'");
	bad_plan("run: {boots: 3, runs_per_boot: 101}\n", "not '101'");
	bad_plan("run: {boots: 3, runs_per_boot: -1}\n", "not '-1'");
	bad_plan("run: {boots: 3, repeat: 5}\n", "'run.repeat' and 'run.boots'");
	bad_plan("run: {boots: 3, vm: per-run}\n", "contradicts 'run.boots'");
	bad_plan("run: {until: 5%}\n", "'run.until' needs blocks");
	bad_plan("run: {boots: 3, until: 2000%}\n", "until");
	bad_plan("run: {boots: 20000}\n", "boots");
	char *text = g_strconcat(base_plan,
				 "matrix: {vm: [v1], method: [a], include: [{method: a, run: "
				 "{boots: 3}}]}\n",
				 NULL);
	struct diag_list d = { 0 };
	struct plan *p = plan_parse_buffer("p.yaml", text, strlen(text), &d);
	g_assert_cmpuint(d.n, ==, 1);
	g_assert_nonnull(strstr(d.items[0].msg, "'run.boots' is about the whole run"));
	diag_list_clear(&d);
	plan_free(p);
	g_free(text);

	/* the good ones read back */
	text = g_strconcat(
	    base_plan, "matrix: {vm: [v1], method: [a]}\n",
	    "run: {boots: {min: 3, max: 9}, runs_per_boot: 4, until: 5%, budget: 2m}\n", NULL);
	p = plan_parse_buffer("p.yaml", text, strlen(text), &d);
	g_assert_cmpuint(d.n, ==, 0);
	g_assert_cmpuint(p->run.boots.min, ==, 3);
	g_assert_cmpuint(p->run.boots.max, ==, 9);
	g_assert_cmpuint(p->run.rpb, ==, 4);
	g_assert_cmpfloat(p->run.until, ==, 5);
	g_assert_cmpuint(p->run.budget, ==, 120 * 1000 * MS);
	plan_free(p);
	g_free(text);
	text = g_strconcat(base_plan, "matrix: {vm: [v1], method: [a]}\n",
			   "run: {boots: 5, runs_per_boot: auto}\n", NULL);
	p = plan_parse_buffer("p.yaml", text, strlen(text), &d);
	g_assert_cmpuint(d.n, ==, 0);
	g_assert_cmpuint(p->run.boots.max, ==, 5);
	g_assert_cmpuint(p->run.rpb, ==, 0);
	plan_free(p);
	g_free(text);
}

/* A fan-out keeps every cell of a run with blocks on one host: the blocks pair them. */
static void test_one_unit(void)
{
	struct fake_run t;
	bx_init(&t, "matrix: {vm: [v1, v2, v3], method: [a, b]}\n"
		    "run: {boots: 3, runs_per_boot: 1}\n");
	size_t n = matrix_n_cells(t.m);
	bool *active = g_new0(bool, n);
	size_t *unit = g_new0(size_t, n);
	for (size_t i = 0; i < n; i++)
		active[i] = true;
	g_assert_cmpuint(exec_host_units(t.p, t.m, active, unit), ==, 1);
	for (size_t i = 0; i < n; i++)
		g_assert_cmpuint(unit[i], ==, 0);
	g_free(active);
	g_free(unit);
	fake_run_clear(&t);
}

/*
 * The ETA's blocks (eta.c exec_planned_blocks): the stop rule projected from the half-width
 * (1/sqrt(blocks)) and the block cost measured so far, capped by boots.max and the budget, never
 * under boots.min or the block running. Pure arithmetic on a hand-made state: no clock.
 */
static void test_eta_projection(void)
{
	struct results *r = results_new();
	struct exec_result res = { 0 };
	struct exec x = { .r = r, .res = &res, .rule = { 3, 6, 0.05, 0 } };
	struct result_design *d = &r->design;
	d->runs_per_boot = 1;
	d->halfwidth = NAN;
	/* nothing measured: every block up to boots.max */
	x.block = 1;
	g_assert_cmpuint(exec_planned_blocks(&x), ==, 6);
	/* 3 blocks at a half-width of 6%: 3 * 1.2^2 = 4.32, so 5 */
	x.block = 4;
	d->blocks = 3;
	d->halfwidth = 0.06;
	g_assert_cmpuint(exec_planned_blocks(&x), ==, 5);
	/* at 10%: 12 blocks wanted, boots.max caps it */
	d->halfwidth = 0.10;
	g_assert_cmpuint(exec_planned_blocks(&x), ==, 6);
	/* already within: boots.min, or the block running */
	d->halfwidth = 0.04;
	x.block = 0;
	g_assert_cmpuint(exec_planned_blocks(&x), ==, 3);
	x.block = 4;
	g_assert_cmpuint(exec_planned_blocks(&x), ==, 4);
	/* a budget of 90 s at 20 s a block: the block that ends past it is the fifth */
	x.rule.budget = 90;
	d->halfwidth = 0.10;
	x.blocks_t0 = now_ns() - UINT64_C(60000000000);
	x.blocks_end = x.blocks_t0 + UINT64_C(60000000000);
	g_assert_cmpuint(exec_planned_blocks(&x), ==, 5);
	/* the fourth block running late, 31 s after the third ended: past the budget, the last */
	x.blocks_t0 -= UINT64_C(31000000000);
	x.blocks_end -= UINT64_C(31000000000);
	g_assert_cmpuint(exec_planned_blocks(&x), ==, 4);
	/* between blocks, after the third at 60 s: (90 - 60) / 20 more, so 5 */
	x.block = 0;
	x.blocks_end += UINT64_C(31000000000);
	x.blocks_t0 += UINT64_C(31000000000);
	g_assert_cmpuint(exec_planned_blocks(&x), ==, 5);
	x.block = 4;
	/* the budget before a block has ended: the live cells' runs plus a boot per group */
	d->blocks = 0;
	x.block = 1;
	d->halfwidth = NAN;
	g_assert_cmpuint(exec_planned_blocks(&x), ==, 6); /* no boot measured: unknown cost */
	results_free(r);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	tmp_dir = fake_dir_make("ferry-test-blocks");
	g_test_add_func("/blocks/shuffle-by-seed", test_shuffle_by_seed);
	g_test_add_func("/blocks/every-cell-every-block", test_every_cell_every_block);
	g_test_add_func("/blocks/round-robin", test_round_robin_blocks);
	g_test_add_func("/blocks/pilot-components", test_pilot_components);
	g_test_add_func("/blocks/pilot-on-fake", test_pilot_on_fake);
	g_test_add_func("/blocks/stop-rule", test_stop_rule);
	g_test_add_func("/blocks/stop-on-fake", test_stop_on_fake);
	g_test_add_func("/blocks/halfwidth", test_halfwidth);
	g_test_add_func("/blocks/boot-fails", test_boot_fails);
	g_test_add_func("/blocks/cell-timeout", test_cell_timeout);
	g_test_add_func("/blocks/plan-keys", test_plan_keys);
	g_test_add_func("/blocks/one-unit", test_one_unit);
	g_test_add_func("/blocks/eta-projection", test_eta_projection);
	int rc = g_test_run();
	fake_dir_remove(tmp_dir);
	return rc;
}
