/* SPDX-License-Identifier: MIT */
/*
 * run.fresh restore in the executor, on the fake machine (machine_fake's saved states): every
 * fresh guest of a configuration that can be saved is restored from one state saved at its first
 * need, each run records how its guest started (results "fresh"), a configuration that cannot be
 * saved boots and the log says why once, and the saved states are gone when the run ends, after
 * an interrupt too. Milliseconds: no guest boots.
 */
#include <glib.h>
#include <signal.h>
#include <string.h>

#include "fake-run.h"
#include "plan.h"
#include "run.h"
#include "util.h"

static char *tmp_dir;

static const char *const plan_head = "ferry: 1\n"
				     "name: t\n"
				     "vms: {v: {guest: builtin}, w: {guest: builtin}}\n"
				     "disks: {d: {kind: tmpfs, size: 64MiB}}\n"
				     "datasets: {s: {files: 1, size: 1KiB}}\n"
				     "methods: {a: {type: null, duration: 1ms}, "
				     "b: {type: null, duration: 1ms}}\n";

static void run_plan(struct fake_run *t, const char *rest, void (*line)(void *, const char *))
{
	char *text = g_strconcat(plan_head, rest, NULL);
	fake_run_init(t, tmp_dir, text, line);
	g_free(text);
	fake_run_exec(t);
	g_assert_cmpuint(t->fake.live, ==, 0);       /* every guest destroyed */
	g_assert_cmpuint(t->fake.saved_live, ==, 0); /* every saved state removed */
}

/* How many runs of the results started their guest as fresh ("boot" or "restore"); a run
 * without the field fails the test. */
static size_t runs_fresh(const struct results *r, const char *fresh)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n_cells; i++)
		for (size_t j = 0; j < r->cells[i].n_runs; j++) {
			const char *f = r->cells[i].runs[j].fresh;
			g_assert_nonnull(f);
			n += strcmp(f, fresh) == 0;
		}
	return n;
}

static size_t count_lines(const struct fake_run *t, const char *needle)
{
	size_t n = 0;
	for (guint i = 0; i < t->lines->len; i++)
		n += strstr(g_ptr_array_index(t->lines, i), needle) != NULL;
	return n;
}

static size_t log_count(const struct fake_run *t, const char *prefix)
{
	size_t n = 0;
	gchar **lines = g_strsplit(t->fake.log ? t->fake.log : "", "\n", -1);
	for (gchar **l = lines; *l; l++)
		n += g_str_has_prefix(*l, prefix);
	g_strfreev(lines);
	return n;
}

/* vm per-run: a guest per run, each restored from the one state of its configuration (two VM
 * entries: two states), saved at the first guest of each. */
static void test_per_run(void)
{
	struct fake_run t;
	run_plan(&t,
		 "matrix: {vm: [v, w], method: [a, b]}\n"
		 "run: {repeat: 3, vm: per-run, fresh: restore, caches: keep}\n",
		 NULL);
	g_assert_cmpuint(t.fake.boots, ==, 12);
	g_assert_cmpuint(t.fake.saves, ==, 2);
	g_assert_cmpuint(t.fake.restores, ==, 12);
	g_assert_cmpuint(runs_fresh(t.r, "restore"), ==, 12);
	g_assert_cmpuint(log_count(&t, "save "), ==, 2);
	g_assert_cmpuint(log_count(&t, "unsave "), ==, 2);
	g_assert_cmpuint(count_lines(&t, "boots instead of restoring"), ==, 0);
	fake_run_clear(&t);
}

/* The default is to boot: no state is saved, every run says "boot". */
static void test_default_boot(void)
{
	struct fake_run t;
	run_plan(&t, "matrix: {vm: [v], method: [a, b]}\nrun: {repeat: 2, vm: per-run}\n", NULL);
	g_assert_cmpuint(t.fake.boots, ==, 4);
	g_assert_cmpuint(t.fake.saves, ==, 0);
	g_assert_cmpuint(t.fake.restores, ==, 0);
	g_assert_cmpuint(runs_fresh(t.r, "boot"), ==, 4);
	fake_run_clear(&t);
}

/* Blocks: every block's guest of the configuration is restored from the state saved once. */
static void test_blocks(void)
{
	struct fake_run t;
	run_plan(&t,
		 "matrix: {vm: [v], method: [a, b]}\n"
		 "run: {boots: {min: 4, max: 4}, runs_per_boot: 1, fresh: restore, caches: keep}\n",
		 NULL);
	g_assert_cmpuint(t.fake.boots, ==, 4);
	g_assert_cmpuint(t.fake.saves, ==, 1);
	g_assert_cmpuint(t.fake.restores, ==, 4);
	g_assert_cmpuint(runs_fresh(t.r, "restore"), ==, 8);
	fake_run_clear(&t);
}

/* A configuration that cannot be saved boots each of its guests, and the log says why once. */
static void test_unsavable(void)
{
	struct fake_run t;
	char *text = g_strconcat(plan_head,
				 "matrix: {vm: [v], method: [a, b]}\n"
				 "run: {repeat: 2, vm: per-run, fresh: restore, caches: keep}\n",
				 NULL);
	fake_run_init(&t, tmp_dir, text, NULL);
	g_free(text);
	t.fake.no_restore = "the fake cannot save this one";
	fake_run_exec(&t);
	g_assert_cmpuint(t.fake.live, ==, 0);
	g_assert_cmpuint(t.fake.saves, ==, 0);
	g_assert_cmpuint(runs_fresh(t.r, "boot"), ==, 4);
	g_assert_cmpuint(count_lines(&t, "boots instead of restoring a saved state: the fake "
					 "cannot save this one"),
			 ==, 1);
	fake_run_clear(&t);
}

/* A save that fails: that configuration boots (said once), the other is restored. */
static void test_save_fails(void)
{
	struct fake_run t;
	char *text = g_strconcat(plan_head,
				 "matrix: {vm: [v, w], method: [a]}\n"
				 "run: {repeat: 2, vm: per-run, fresh: restore, caches: keep}\n",
				 NULL);
	fake_run_init(&t, tmp_dir, text, NULL);
	g_free(text);
	t.fake.fail_save = 1;
	fake_run_exec(&t);
	g_assert_cmpuint(t.fake.saved_live, ==, 0);
	g_assert_cmpuint(t.fake.saves, ==, 2);
	g_assert_cmpuint(t.fake.restores, ==, 2);
	g_assert_cmpuint(runs_fresh(t.r, "boot"), ==, 2);
	g_assert_cmpuint(runs_fresh(t.r, "restore"), ==, 2);
	g_assert_cmpuint(count_lines(&t, "saving a booted guest failed: fake save 1 fails"), ==, 1);
	fake_run_clear(&t);
}

/* Ctrl-C in the middle of the run: the states saved so far are removed all the same. */
static void test_interrupt(void)
{
	if (g_test_subprocess()) {
		struct fake_run t;
		char *text =
		    g_strconcat(plan_head,
				"matrix: {vm: [v, w], method: [a, b]}\n"
				"run: {repeat: 3, vm: per-cell, order: interleaved, fresh: "
				"restore, caches: keep}\n",
				NULL);
		fake_run_init(&t, tmp_dir, text, NULL);
		g_free(text);
		t.fake.sigint_resume = 2;
		fake_run_exec(&t);
		g_assert_cmpint(t.res.signal, ==, SIGINT);
		g_assert_cmpuint(t.fake.saves, >=, 1);
		g_assert_cmpuint(t.fake.saved_live, ==, 0);
		g_assert_cmpuint(t.fake.live, ==, 0);
		g_assert_cmpuint(log_count(&t, "unsave "), ==, t.fake.saves);
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
	tmp_dir = fake_dir_make("ferry-test-restore");
	g_test_add_func("/restore/per-run", test_per_run);
	g_test_add_func("/restore/default-boot", test_default_boot);
	g_test_add_func("/restore/blocks", test_blocks);
	g_test_add_func("/restore/unsavable", test_unsavable);
	g_test_add_func("/restore/save-fails", test_save_fails);
	g_test_add_func("/restore/interrupt", test_interrupt);
	int rc = g_test_run();
	fake_dir_remove(tmp_dir);
	return rc;
}
