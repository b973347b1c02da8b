/* SPDX-License-Identifier: MIT */
/*
 * The executor (runner/exec/) on the fake machine with the null method: the run orders, the VM
 * lifetimes, one shared guest for the cells of several target disks, and the order across VM
 * configurations (its drop-outs, faults and interrupts). No guest boots; every test takes
 * milliseconds.
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

/* ---- orders and VM lifetimes ---- */

/*
 * How many guests are alive at once, under each run.vm and order: one, except per-cell cells that
 * take turns (order interleaved or shuffled), whose guests stay booted and paused; running, one
 * always. The VM groups (a shared guest per vm, disk and method devices; a guest per cell or per
 * run otherwise) run one after the other, each destroyed before the next boots, so the capacity
 * check (capacity-plan.c) counts the largest single VM, or the sum of the guests that take turns.
 * Counted from the fake's log of boots and destroys.
 */
static void test_one_guest_at_a_time(void)
{
	const char *modes[] = { "shared", "per-cell", "per-run" };
	const char *orders[] = { "sequential", "interleaved", "shuffled" };
	for (size_t i = 0; i < ELEMENTSOF(modes); i++) {
		for (size_t o = 0; o < ELEMENTSOF(orders); o++) {
			char *plan = g_strdup_printf(
			    "ferry: 1\n"
			    "name: t\n"
			    "vms: {v: {guest: builtin, memory: 1GiB}, w: {guest: builtin, memory: "
			    "2GiB}}\n"
			    "disks: {d: {kind: tmpfs, size: 64MiB}, e: {kind: tmpfs, size: "
			    "32MiB}}\n"
			    "datasets: {s: {files: 1, size: 1KiB}}\n"
			    "methods: {a: {type: null}, b: {type: null}}\n"
			    "matrix: {vm: [v, w], disk: [d, e], method: [a, b]}\n"
			    "run: {repeat: 2, vm: %s, order: %s}\n",
			    modes[i], orders[o]);
			struct fake_run t;
			tx_init(&t, plan);
			g_free(plan);
			tx_run(&t);
			unsigned live = 0, most = 0;
			char **lines = g_strsplit(t.fake.log ? t.fake.log : "", "\n", -1);
			for (char **l = lines; *l; l++) {
				if (g_str_has_prefix(*l, "boot ") && ++live > most)
					most = live;
				else if (g_str_has_prefix(*l, "destroy "))
					live--;
			}
			g_strfreev(lines);
			/* shared: a guest per vm (2), which switches from tmpfs d to tmpfs e
			 * (neither is part of the boot); otherwise per cell (8) or run (16) */
			g_assert_cmpuint(t.fake.boots, ==, i == 0 ? 2 : i == 1 ? 8 : 16);
			g_assert_cmpuint(t.fake.switches, ==, i == 0 ? 2 : 0);
			g_assert_cmpuint(t.res.switches, ==, t.fake.switches);
			g_assert_cmpuint(t.fake.bad_switches, ==, 0);
			/* per-cell cells that take turns keep their guests booted, all but one
			 * paused (the capacity check sums their memory); else one at a time */
			g_assert_cmpuint(most, ==, i == 1 && o > 0 ? 8 : 1);
			g_assert_cmpuint(t.fake.max_running, ==, 1);
			g_assert_cmpuint(t.fake.bad_runs, ==, 0);
			fake_run_clear(&t);
		}
	}
}

static void test_order_sequential(void)
{
	struct fake_run t;
	tx_init(&t, "run: {repeat: 2, vm: shared, order: sequential}\n");
	tx_run(&t);
	char *runs = runs_of(&t);
	g_assert_cmpstr(runs, ==, "a0 a1 b0 b1 c0 c1");
	g_free(runs);
	g_assert_cmpuint(t.fake.boots, ==, 1); /* one guest for the three cells */
	g_assert_cmpuint(t.res.boots, ==, 1);
	g_assert_cmpuint(t.res.counts[STATUS_PASSED], ==, 3);
	fake_run_clear(&t);
}

static void test_order_interleaved(void)
{
	struct fake_run t;
	tx_init(&t, "run: {repeat: 2, vm: shared, order: interleaved}\n");
	tx_run(&t);
	char *runs = runs_of(&t);
	g_assert_cmpstr(runs, ==, "a0 b0 c0 a1 b1 c1"); /* round-robin over the cells */
	g_free(runs);
	g_assert_cmpuint(t.fake.boots, ==, 1);
	fake_run_clear(&t);
}

static char *shuffled_runs(uint64_t seed)
{
	struct fake_run t;
	char *extra = g_strdup_printf("run: {repeat: 2, vm: shared, order: shuffled, seed: %llu}\n",
				      (unsigned long long)seed);
	tx_init(&t, extra);
	g_free(extra);
	tx_run(&t);
	char *runs = runs_of(&t);
	fake_run_clear(&t);
	return runs;
}

static void test_order_shuffled(void)
{
	/* cells in a seeded random order, each cell's runs together; the same seed, the same order
	 */
	bool moved = false;
	for (uint64_t seed = 1; seed <= 4; seed++) {
		char *r1 = shuffled_runs(seed), *r2 = shuffled_runs(seed);
		g_assert_cmpstr(r1, ==, r2);
		g_assert_cmpuint(strlen(r1), ==, strlen("a0 a1 b0 b1 c0 c1"));
		for (int i = 0; i < 3; i++) {
			char a = r1[i * 6], b = r1[i * 6 + 3];
			g_assert_cmpint(a, ==, b);
			g_assert_cmpint(r1[i * 6 + 1], ==, '0');
			g_assert_cmpint(r1[i * 6 + 4], ==, '1');
		}
		g_assert_true(strchr(r1, 'a') && strchr(r1, 'b') && strchr(r1, 'c'));
		moved |= !STREQ(r1, "a0 a1 b0 b1 c0 c1");
		g_free(r1);
		g_free(r2);
	}
	g_assert_true(moved);
}

static void test_vm_per_cell_per_run(void)
{
	struct fake_run t;
	tx_init(&t, "run: {repeat: 2, vm: per-cell}\n");
	tx_run(&t);
	g_assert_cmpuint(t.fake.boots, ==, 3);
	fake_run_clear(&t);
	tx_init(&t, "matrix: {method: [a]}\nrun: {repeat: 3, warmup: 1, vm: per-run}\n");
	tx_run(&t);
	g_assert_cmpuint(t.fake.boots, ==, 4);
	g_assert_cmpuint(t.res.boots, ==, 4);
	/* every run records the boot it ran in (compare's sample): one boot per run here */
	const struct result_cell *c = &t.r->cells[0];
	g_assert_cmpuint(c->n_runs, ==, 4);
	for (size_t i = 0; i < c->n_runs; i++)
		g_assert_cmpint(c->runs[i].boot, ==, (int64_t)i + 1);
	fake_run_clear(&t);
	/* per cell: the runs of a cell share its boot, the next cell has the next one */
	tx_init(&t, "run: {repeat: 2, vm: per-cell}\n");
	tx_run(&t);
	for (size_t k = 0; k < t.r->n_cells; k++)
		for (size_t i = 0; i < t.r->cells[k].n_runs; i++)
			g_assert_cmpint(t.r->cells[k].runs[i].boot, ==, (int64_t)k + 1);
	fake_run_clear(&t);
}

/* ---- one shared guest for cells of several target disks (cells.c disk_key) ---- */

/* Disks: ram (tmpfs) and q (virtio image) are mounted or plugged after boot and share a guest;
 * s (sata) is part of the boot; c (scsi) is plugged after boot but its controller is part of the
 * boot configuration. Methods a and b; disk is the last axis, so the matrix alternates disks. */
static const char *const disks_plan = "ferry: 1\n"
				      "name: t\n"
				      "vms: {v: {guest: builtin}}\n"
				      "disks:\n"
				      "  ram: {kind: tmpfs, size: 64MiB}\n"
				      "  q: {format: qcow2, size: 1GiB, bus: virtio}\n"
				      "  s: {format: qcow2, size: 1GiB, bus: sata}\n"
				      "  c: {format: qcow2, size: 1GiB, bus: scsi}\n"
				      "  c2: {format: raw, size: 1GiB, bus: scsi}\n"
				      "datasets: {s: {files: 1, size: 1KiB}}\n"
				      "methods: {a: {type: null}, b: {type: null}}\n";

/* The fake's log as "boot 1, ram:a0, ram:a1, switch 1 q, q:a0, ..., destroy 1": runs as
 * DISK:METHOD+INDEX, boots, switches and destroys; resets left out. */
static char *disk_events(const struct fake_run *t)
{
	GString *s = g_string_new("");
	gchar **lines = g_strsplit(t->fake.log ? t->fake.log : "", "\n", -1);
	for (gchar **l = lines; *l && **l; l++) {
		if (g_str_has_prefix(*l, "reset "))
			continue;
		if (s->len)
			g_string_append(s, ", ");
		const char *d = strstr(*l, "disk="), *m = strstr(*l, "method=");
		if (g_str_has_prefix(*l, "run ") && d && m)
			g_string_append_printf(s, "%.*s:%c%s", (int)strcspn(d + 5, ", "), d + 5,
					       m[7], strchr(m, '#') + 1);
		else
			g_string_append(s, *l);
	}
	g_strfreev(lines);
	return g_string_free(s, FALSE);
}

static void disks_run(struct fake_run *t, const char *disks, const char *run)
{
	char *plan = g_strdup_printf("%smatrix: {method: [a, b], disk: [%s]}\nrun: {%s}\n",
				     disks_plan, disks, run);
	tx_init(t, plan);
	g_free(plan);
	t->o.verbose = true;
	tx_run(t);
}

static void test_disk_switch(void)
{
	struct fake_run t;
	disks_run(&t, "ram, q, s, c, c2", "repeat: 2, vm: shared");
	char *ev = disk_events(&t);
	/* ram and q on one guest, each disk's cells together (one switch, not one per cell); s on
	 * a guest of its own; c and c2 (scsi) on a third */
	g_assert_cmpstr(ev, ==,
			"boot 1, ram:a0, ram:a1, ram:b0, ram:b1, switch 1 q, q:a0, q:a1, q:b0, "
			"q:b1, destroy 1, boot 2, s:a0, s:a1, s:b0, s:b1, destroy 2, boot 3, c:a0, "
			"c:a1, c:b0, c:b1, switch 3 c2, c2:a0, c2:a1, c2:b0, c2:b1, destroy 3");
	g_free(ev);
	g_assert_cmpuint(t.fake.bad_switches, ==, 0);
	g_assert_cmpuint(t.res.boots, ==, 3);
	g_assert_cmpuint(t.res.switches, ==, 2);
	g_assert_cmpuint(t.res.counts[STATUS_PASSED], ==, 10);
	/* every run records the boot it ran in: the switch is no new boot */
	const char *ids[] = { "vm=v,dataset=s,method=a,disk=ram", "vm=v,dataset=s,method=b,disk=q",
			      "vm=v,dataset=s,method=a,disk=s", "vm=v,dataset=s,method=b,disk=c2" };
	const int64_t boots[] = { 1, 1, 2, 3 };
	for (size_t k = 0; k < ELEMENTSOF(ids); k++) {
		const struct result_cell *c = cell(&t, ids[k]);
		g_assert_cmpuint(c->n_runs, ==, 2);
		for (size_t i = 0; i < c->n_runs; i++)
			g_assert_cmpint(c->runs[i].boot, ==, boots[k]);
	}
	bool told = false;
	for (guint i = 0; i < t.lines->len; i++)
		told |= strstr(t.lines->pdata[i], "switched fake-1 from disk 'ram' to 'q'") != NULL;
	g_assert_true(told);
	fake_run_clear(&t);
}

static void test_disk_switch_orders(void)
{
	struct fake_run t;
	/* interleaved: round-robin over the cells of one disk, then the next disk's */
	disks_run(&t, "ram, q", "repeat: 2, vm: shared, order: interleaved");
	char *ev = disk_events(&t);
	g_assert_cmpstr(ev, ==,
			"boot 1, ram:a0, ram:b0, ram:a1, ram:b1, switch 1 q, q:a0, q:b0, q:a1, "
			"q:b1, destroy 1");
	g_free(ev);
	fake_run_clear(&t);
	/* shuffled: each disk's cells in a seeded order, one switch */
	for (uint64_t seed = 1; seed <= 4; seed++) {
		char *run = g_strdup_printf("repeat: 1, vm: shared, order: shuffled, seed: %llu",
					    (unsigned long long)seed);
		disks_run(&t, "ram, q", run);
		g_free(run);
		g_assert_cmpuint(t.fake.boots, ==, 1);
		g_assert_cmpuint(t.fake.switches, ==, 1);
		fake_run_clear(&t);
	}
	/* a guest per cell or per run never switches */
	disks_run(&t, "ram, q", "repeat: 1, vm: per-cell");
	g_assert_cmpuint(t.fake.boots, ==, 4);
	g_assert_cmpuint(t.fake.switches, ==, 0);
	fake_run_clear(&t);
	disks_run(&t, "ram, q", "repeat: 2, vm: per-run, order: interleaved");
	g_assert_cmpuint(t.fake.boots, ==, 8);
	g_assert_cmpuint(t.fake.switches, ==, 0);
	fake_run_clear(&t);
}

/* A switch that fails: the cell has the error, the broken guest is destroyed, and the next cell
 * boots a new one with its own disk (no switch back). */
static void test_disk_switch_fails(void)
{
	struct fake_run t;
	char *plan = g_strdup_printf("%smatrix: {disk: [ram, q], method: [a, b]}\n"
				     "run: {repeat: 1, vm: shared}\n",
				     disks_plan);
	tx_init(&t, plan);
	g_free(plan);
	t.fake.fail_switch = 1;
	tx_run(&t);
	char *ev = disk_events(&t);
	g_assert_cmpstr(ev, ==,
			"boot 1, ram:a0, ram:b0, switch 1 q, destroy 1, boot 2, q:b0, destroy 2");
	g_free(ev);
	struct result_cell *qa = cell(&t, "vm=v,disk=q,dataset=s,method=a");
	g_assert_cmpint(qa->status, ==, STATUS_ERROR);
	g_assert_cmpstr(qa->errors[0].message, ==, "fake switch 1 fails as scripted");
	g_assert_cmpint(cell(&t, "vm=v,disk=q,dataset=s,method=b")->status, ==, STATUS_PASSED);
	g_assert_cmpuint(t.fake.bad_switches, ==, 0);
	fake_run_clear(&t);
}

/* ---- run order across VM configurations (order.c) ---- */

/* The fake's log without the "run" lines' cell ids: "boot 1, reset 1, a0, suspend 1, ..." */
static char *events_of(const struct fake_run *t)
{
	GString *s = g_string_new("");
	gchar **lines = g_strsplit(t->fake.log ? t->fake.log : "", "\n", -1);
	for (gchar **l = lines; *l && **l; l++) {
		const char *m = strstr(*l, "method=");
		if (s->len)
			g_string_append(s, ", ");
		if (g_str_has_prefix(*l, "run ") && m)
			g_string_append_printf(s, "%c%s", m[7], strchr(m, '#') + 1);
		else
			g_string_append(s, *l);
	}
	g_strfreev(lines);
	return g_string_free(s, FALSE);
}

/* The runs' start times follow the order of the fake's log: for every "run" line in the log, the
 * run it names started no earlier than the one before it. */
static void assert_starts_in_log_order(const struct fake_run *t)
{
	gchar **lines = g_strsplit(t->fake.log ? t->fake.log : "", "\n", -1);
	int64_t last = 0;
	size_t seen = 0;
	for (gchar **l = lines; *l; l++) {
		if (!g_str_has_prefix(*l, "run "))
			continue;
		char *id = g_strndup(*l + 4, (gsize)(strchr(*l, '#') - *l - 5));
		unsigned idx = (unsigned)atoi(strchr(*l, '#') + 1);
		const struct result_cell *c = results_find_cell(t->r, id);
		g_assert_nonnull(c);
		g_assert_cmpuint(idx, <, c->n_runs);
		g_assert_cmpint(c->runs[idx].started_ms, >, 0);
		g_assert_cmpint(c->runs[idx].started_ms, >=, last);
		last = c->runs[idx].started_ms;
		seen++;
		g_free(id);
	}
	g_assert_cmpuint(seen, >, 0);
	g_strfreev(lines);
}

static void test_across_per_run(void)
{
	struct fake_run t;
	tx_init(&t, "run: {repeat: 2, warmup: 1, vm: per-run, order: interleaved}\n");
	tx_run(&t);
	char *runs = runs_of(&t);
	/* warmups first, in the first round; then round-robin, a fresh guest every run */
	g_assert_cmpstr(runs, ==, "a0 (warmup) b0 (warmup) c0 (warmup) a1 b1 c1 a2 b2 c2");
	g_free(runs);
	char *ev = events_of(&t);
	g_assert_cmpstr(
	    ev, ==,
	    "boot 1, reset 1, a0 (warmup), destroy 1, boot 2, reset 2, b0 (warmup), "
	    "destroy 2, boot 3, reset 3, c0 (warmup), destroy 3, boot 4, reset 4, a1, destroy 4, "
	    "boot 5, reset 5, b1, destroy 5, boot 6, reset 6, c1, destroy 6, "
	    "boot 7, reset 7, a2, destroy 7, boot 8, reset 8, b2, destroy 8, "
	    "boot 9, reset 9, c2, destroy 9");
	g_free(ev);
	g_assert_cmpuint(t.fake.suspends, ==, 0);
	g_assert_cmpuint(t.res.counts[STATUS_PASSED], ==, 3);
	/* the results show the order: every run's start, in the order the runs happened */
	assert_starts_in_log_order(&t);
	/* a's runs were on boots 1, 4, 7 */
	const struct result_cell *a = cell(&t, CELL("a"));
	g_assert_cmpint(a->runs[0].boot, ==, 1);
	g_assert_cmpint(a->runs[1].boot, ==, 4);
	g_assert_cmpint(a->runs[2].boot, ==, 7);
	g_assert_true(a->runs[0].warmup && !a->runs[1].warmup);
	fake_run_clear(&t);
}

static void test_across_per_cell(void)
{
	struct fake_run t;
	tx_init(&t, "run: {repeat: 2, vm: per-cell, order: interleaved, caches: drop}\n");
	tx_run(&t);
	char *ev = events_of(&t);
	/* every cell boots once; all but the measuring guest are paused; a cell whose rule is met
	 * leaves the rotation without waking its guest, which is destroyed */
	g_assert_cmpstr(ev, ==,
			"boot 1, reset 1, a0, suspend 1, boot 2, reset 2, b0, suspend 2, "
			"boot 3, reset 3, c0, suspend 3, resume 1, reset 1, a1, suspend 1, "
			"resume 2, reset 2, b1, suspend 2, resume 3, reset 3, c1, suspend 3, "
			"destroy 1, destroy 2, destroy 3");
	g_free(ev);
	g_assert_cmpuint(t.fake.boots, ==, 3);
	g_assert_cmpuint(t.fake.max_running, ==, 1);
	g_assert_cmpuint(t.fake.bad_runs, ==, 0);
	/* caches dropped before every measured run, on the guest that measures */
	g_assert_cmpuint(t.fake.drops, ==, 6);
	g_assert_cmpuint(t.res.counts[STATUS_PASSED], ==, 3);
	for (size_t k = 0; k < t.r->n_cells; k++)
		for (size_t i = 0; i < t.r->cells[k].n_runs; i++)
			g_assert_cmpint(t.r->cells[k].runs[i].boot, ==, (int64_t)k + 1);
	assert_starts_in_log_order(&t);
	fake_run_clear(&t);
}

static char *across_shuffled(const char *vm, uint64_t seed)
{
	struct fake_run t;
	char *extra = g_strdup_printf("run: {repeat: 3, vm: %s, order: shuffled, seed: %llu}\n", vm,
				      (unsigned long long)seed);
	tx_init(&t, extra);
	g_free(extra);
	tx_run(&t);
	g_assert_cmpuint(t.fake.max_running, ==, 1);
	g_assert_cmpuint(t.res.counts[STATUS_PASSED], ==, 3);
	char *runs = runs_of(&t);
	fake_run_clear(&t);
	return runs;
}

static void test_across_shuffled(void)
{
	/* rounds of one run per cell, each round in a seeded order: the same seed, the same order;
	 * some seed moves the cells away from a b c */
	bool moved = false;
	for (uint64_t seed = 1; seed <= 4; seed++) {
		for (int v = 0; v < 2; v++) {
			const char *vm = v ? "per-cell" : "per-run";
			char *r1 = across_shuffled(vm, seed), *r2 = across_shuffled(vm, seed);
			g_assert_cmpstr(r1, ==, r2);
			g_assert_cmpuint(strlen(r1), ==, strlen("a0 b0 c0 a1 b1 c1 a2 b2 c2"));
			for (int round = 0; round < 3; round++) {
				const char *rd = r1 + round * 9;
				/* each round holds every cell once, with its run index */
				g_assert_true(rd[0] != rd[3] && rd[3] != rd[6] && rd[0] != rd[6]);
				for (int k = 0; k < 3; k++)
					g_assert_cmpint(rd[k * 3 + 1], ==, '0' + round);
			}
			moved |= !STREQ(r1, "a0 b0 c0 a1 b1 c1 a2 b2 c2");
			g_free(r1);
			g_free(r2);
		}
	}
	g_assert_true(moved);
}

/* A cell whose repeat rule is met leaves the rotation (and its guest goes); the others go on. */
static void test_across_drop_out(void)
{
	struct fake_run t;
	tx_init(&t, "matrix:\n"
		    "  method: [a, b, c]\n"
		    "  include: [{method: a, run: {repeat: {min: 2, max: 5, until_cv: 1000%}}}]\n"
		    "run: {repeat: {min: 2, max: 4, until_cv: 0.001%}, vm: per-cell, "
		    "order: interleaved, caches: keep}\n");
	set_null_duration(&t, 1 * MS);
	t.fake.stretch_ms = 1; /* b and c never reach their CV target: they run to max */
	tx_run(&t);
	char *runs = runs_of(&t);
	g_assert_cmpstr(runs, ==, "a0 b0 c0 a1 b1 c1 b2 c2 b3 c3");
	g_free(runs);
	g_assert_cmpint(cell(&t, CELL("a"))->stop_reason, ==, STATS_STOP_CV);
	g_assert_cmpint(cell(&t, CELL("b"))->stop_reason, ==, STATS_STOP_MAX);
	g_assert_cmpuint(measured(cell(&t, CELL("c"))), ==, 4);
	/* a's guest was destroyed when it left, before b's third run */
	const char *gone = strstr(t.fake.log, "destroy 1\n");
	g_assert_nonnull(gone);
	g_assert_true(gone < strstr(t.fake.log, "method=b #2"));
	g_assert_cmpuint(t.fake.max_running, ==, 1);
	fake_run_clear(&t);
}

/* A failing cell leaves the rotation with its guest destroyed; a guest that cannot pause is
 * destroyed and booted again; without suspend (or memory), every run boots a fresh guest. */
static void test_across_faults(void)
{
	struct fake_run t;
	/* boot 2 (b's guest) fails: b is over with the error, a and c go on */
	tx_init(&t, "run: {repeat: 2, vm: per-cell, order: interleaved}\n");
	t.fake.fail_boot = 2;
	tx_run(&t);
	char *runs = runs_of(&t);
	g_assert_cmpstr(runs, ==, "a0 c0 a1 c1");
	g_free(runs);
	g_assert_cmpint(cell(&t, CELL("b"))->status, ==, STATUS_ERROR);
	g_assert_cmpint(cell(&t, CELL("a"))->status, ==, STATUS_PASSED);
	g_assert_cmpint(cell(&t, CELL("c"))->status, ==, STATUS_PASSED);
	fake_run_clear(&t);

	/* a guest that breaks (the fake: after 1 run) fails its cell's next run: the guest is
	 * destroyed there, not left paused */
	tx_init(&t, "run: {repeat: 2, vm: per-cell, order: interleaved}\n");
	t.fake.break_after = 1;
	tx_run(&t);
	g_assert_cmpuint(t.res.counts[STATUS_ERROR], ==, 3);
	g_assert_cmpuint(t.fake.max_running, ==, 1);
	g_assert_cmpuint(t.fake.bad_runs, ==, 0);
	fake_run_clear(&t);

	/* the first suspend fails: a's guest is destroyed, a boots again for its next run */
	tx_init(&t, "run: {repeat: 2, vm: per-cell, order: interleaved}\n");
	t.fake.fail_suspend = 1;
	tx_run(&t);
	char *ev = events_of(&t);
	g_assert_nonnull(
	    strstr(ev, "boot 1, reset 1, a0, suspend 1, destroy 1, boot 2, reset 2, b0"));
	g_assert_nonnull(strstr(ev, "c0, suspend 3, boot 4, reset 4, a1"));
	g_free(ev);
	g_assert_cmpuint(t.res.counts[STATUS_PASSED], ==, 3);
	g_assert_cmpuint(t.fake.max_running, ==, 1);
	bool told = false;
	for (guint i = 0; i < t.lines->len; i++)
		told |= strstr(t.lines->pdata[i], "fake suspend 1 fails as scripted") != NULL;
	g_assert_true(told);
	fake_run_clear(&t);

	/* 3 x (1 GiB + 256 MiB of QEMU) > half of 4 GiB: a fresh guest every run, in order */
	const char *fallbacks[] = { "memory", "no-suspend" };
	for (size_t f = 0; f < ELEMENTSOF(fallbacks); f++) {
		tx_init(&t, "run: {repeat: 2, vm: per-cell, order: interleaved}\n");
		if (f == 0)
			t.fake.host_memory = 4ull << 30;
		else
			t.fake.no_suspend = true;
		tx_run(&t);
		runs = runs_of(&t);
		g_assert_cmpstr(runs, ==, "a0 b0 c0 a1 b1 c1");
		g_free(runs);
		g_assert_cmpuint(t.fake.boots, ==, 6);
		g_assert_cmpuint(t.fake.suspends, ==, 0);
		g_assert_cmpuint(t.res.counts[STATUS_PASSED], ==, 3);
		bool said = false;
		for (guint i = 0; i < t.lines->len; i++)
			said |= strstr(t.lines->pdata[i], "each of its runs boots a fresh guest") !=
				    NULL &&
				strstr(t.lines->pdata[i],
				       f == 0 ? "take 3.8 GiB, more than half of the host's 4.0 GiB"
					      : "cannot suspend") != NULL;
		g_assert_true(said);
		fake_run_clear(&t);
	}
	/* enough memory: the guests stay */
	tx_init(&t, "run: {repeat: 2, vm: per-cell, order: interleaved}\n");
	t.fake.host_memory = 64ull << 30;
	tx_run(&t);
	g_assert_cmpuint(t.fake.boots, ==, 3);
	g_assert_cmpuint(t.fake.suspends, ==, 6);
	fake_run_clear(&t);
}

/* An interrupt in a rotation destroys every guest of the unit, running or paused (tx_run checks
 * that none is left), and leaves its cells pending. */
static void interrupt_after_a1(void *ud, const char *text)
{
	on_line(ud, text);
	if (g_str_has_prefix(text, CELL("a") " run 1:"))
		raise(SIGINT);
}

static void test_across_interrupt(void)
{
	if (g_test_subprocess()) {
		struct fake_run t;
		tx_init(&t, "run: {repeat: 3, vm: per-cell, order: interleaved}\n");
		t.o.line = interrupt_after_a1;
		tx_run(&t);
		g_assert_cmpint(t.res.signal, ==, SIGINT);
		char *runs = runs_of(&t);
		g_assert_cmpstr(runs, ==, "a0 b0 c0 a1");
		g_free(runs);
		g_assert_cmpuint(t.fake.boots, ==, 3);
		g_assert_cmpuint(t.fake.destroys, ==, 3);
		g_assert_cmpuint(t.res.counts[STATUS_PENDING], ==, 3);
		fake_run_clear(&t);
		return;
	}
	g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDERR);
	g_test_trap_assert_passed();
}

/* Ctrl-C while a guest resumes: no new guest boots in its place, all go. */
static void test_across_interrupt_resume(void)
{
	if (g_test_subprocess()) {
		struct fake_run t;
		tx_init(&t, "run: {repeat: 3, vm: per-cell, order: interleaved}\n");
		t.fake.sigint_resume = 1;
		tx_run(&t);
		g_assert_cmpint(t.res.signal, ==, SIGINT);
		g_assert_cmpuint(t.fake.boots, ==, 3);
		g_assert_cmpuint(t.fake.destroys, ==, 3);
		char *ev = events_of(&t);
		g_assert_true(g_str_has_suffix(ev, "resume 1, destroy 1, destroy 2, destroy 3"));
		g_free(ev);
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
	tmp_dir = fake_dir_make("ferry-test-executor-order");
	g_test_add_func("/executor/order/sequential", test_order_sequential);
	g_test_add_func("/executor/one-guest-at-a-time", test_one_guest_at_a_time);
	g_test_add_func("/executor/order/interleaved", test_order_interleaved);
	g_test_add_func("/executor/order/shuffled", test_order_shuffled);
	g_test_add_func("/executor/vm/per-cell-per-run", test_vm_per_cell_per_run);
	g_test_add_func("/executor/disk-switch", test_disk_switch);
	g_test_add_func("/executor/disk-switch/orders", test_disk_switch_orders);
	g_test_add_func("/executor/disk-switch/fails", test_disk_switch_fails);
	g_test_add_func("/executor/order/across/per-run", test_across_per_run);
	g_test_add_func("/executor/order/across/per-cell", test_across_per_cell);
	g_test_add_func("/executor/order/across/shuffled", test_across_shuffled);
	g_test_add_func("/executor/order/across/drop-out", test_across_drop_out);
	g_test_add_func("/executor/order/across/faults", test_across_faults);
	g_test_add_func("/executor/order/across/interrupt", test_across_interrupt);
	g_test_add_func("/executor/order/across/interrupt-resume", test_across_interrupt_resume);
	int rc = g_test_run();
	fake_dir_remove(tmp_dir);
	return rc;
}
