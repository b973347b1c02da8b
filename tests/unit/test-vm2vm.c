/* SPDX-License-Identifier: MIT */
/*
 * The vm2vm method on the fake machine's guests over local directories (machine_fake.guests):
 * the machine boots the sender (method_boot_needs.peer) before the receiver, the method stages
 * the dataset in the sender, starts the receiver's dropbear, and the sender's own dbclient (the
 * host's, bound into the fake guest) carries the bytes: tar over ssh or scp -O. Checked: a
 * clean run of each tool verifies in the receiver; a byte flipped in the receiver is caught; a
 * hung scp in the sender ends the run at its timeout; both guests are destroyed (each block
 * boots both, the sender first); a dataset with a link is refused for scp; and nothing is left
 * (no guest, no run directory, no process in the receiver). The test runs in a network
 * namespace of its own (loopback only): the fake guests share it, as two guests share ferry's
 * private network. Skipped where the host cannot run fake guests or has no dropbear.
 */
#include <glib.h>
#include <string.h>
#include <unistd.h>

#include "fake-guest.h"
#include "fake-run.h"
#include "util.h"

#define MS 1000000ull

static char *tmp_dir;

static const char *const plan_fmt =
    "ferry: 1\n"
    "name: v\n"
    "vms:\n"
    "  recv: {guest: builtin, nic: {backend: private, queues: 4}, vcpus: 4}\n"
    "  send: {guest: builtin, memory: 256MiB, nic: {backend: private}}\n"
    "disks: {t: {kind: tmpfs, size: 64MiB}}\n"
    "datasets: {s: %s}\n"
    "methods: {m: {type: vm2vm, tool: %s, from: send}}\n"
    "matrix: {vm: [recv]}\n"
    "run: %s\n";

static const char *const tree =
    "{files: 12, size: {min: 1KiB, max: 8KiB}, dirs: {depth: 1, fanout: 3}, seed: 5}";

static bool skip_unsupported(void)
{
	const char *why = fake_root_support();
	if (!why &&
	    (access("/usr/sbin/dropbear", X_OK) != 0 || access("/usr/bin/dbclient", X_OK) != 0))
		why = "the fake guests' ssh server and client are the host's dropbear and dbclient "
		      "(Debian's dropbear-bin), which this host lacks";
	if (why)
		g_test_skip(why);
	return why != NULL;
}

/* Run the plan; every guest is gone and the run directory empty after it. */
static void run(struct fake_run *t, const char *dataset, const char *tool, const char *run_keys,
		unsigned timeout_ms)
{
	char *text = g_strdup_printf(plan_fmt, dataset, tool, run_keys);
	fake_run_init(t, tmp_dir, text, NULL);
	g_free(text);
	t->p->run.timeout = (uint64_t)timeout_ms * MS;
	t->fake.guests = true;
	fake_run_exec(t);
	g_assert_cmpuint(t->fake.live, ==, 0);
	g_assert_cmpuint(t->fake.destroys, ==, t->fake.boots);
	char *runs = g_build_filename(tmp_dir, "runs", NULL);
	GDir *d = g_dir_open(runs, 0, NULL);
	g_assert_true(!d || !g_dir_read_name(d));
	if (d)
		g_dir_close(d);
	g_free(runs);
	g_assert_cmpuint(t->r->n_cells, ==, 1);
	for (size_t i = 0; i < t->r->cells[0].n_errors; i++)
		g_test_message("error: %s [%s]", t->r->cells[0].errors[i].message,
			       t->r->cells[0].errors[i].agent_message
				   ? t->r->cells[0].errors[i].agent_message
				   : "");
}

/* The receiver's last "left" line: its cleanup left no process, mount or file. */
static void assert_receiver_clean(const struct fake_run *t)
{
	const char *last = NULL;
	for (const char *p = t->fake.log; p && (p = strstr(p, "left ")); p++)
		last = p;
	g_assert_nonnull(last);
	char *line = g_strndup(last, strcspn(last, "\n"));
	g_test_message("%s", line);
	g_assert_nonnull(strstr(line, " mounts=0 procs=0 disks=0 files="));
	g_assert_true(g_str_has_suffix(line, "files="));
	g_free(line);
}

static void check_clean(const char *tool)
{
	if (skip_unsupported())
		return;
	struct fake_run t;
	run(&t, tree, tool, "{repeat: 2, vm: per-cell}", 60000);
	struct result_cell *c = &t.r->cells[0];
	g_assert_cmpint(c->status, ==, STATUS_PASSED);
	g_assert_cmpuint(c->n_runs, ==, 2);
	for (size_t i = 0; i < c->n_runs; i++) {
		g_assert_true(c->runs[i].integrity_ok);
		g_assert_cmpuint(c->runs[i].files, ==, 12);
	}
	/* the sender boots first (its own boot number), then the receiver; one pair */
	g_test_message("%s", t.fake.log);
	g_assert_cmpuint(t.fake.boots, ==, 2);
	g_assert_nonnull(strstr(t.fake.log, "boot 1\npeer 1\nboot 2\n"));
	/* the second run's reset found the first's data in the receiver, not the sender's */
	assert_receiver_clean(&t);
	fake_run_clear(&t);
}

static void test_tar(void)
{
	check_clean("tar");
}

static void test_scp(void)
{
	check_clean("scp");
}

/* a byte flipped in the receiver's landing place: the receiver is what verify reads */
static void test_corrupt(void)
{
	if (skip_unsupported())
		return;
	struct fake_run t;
	char *text = g_strdup_printf(plan_fmt, tree, "tar", "{repeat: 1, vm: per-cell}");
	fake_run_init(&t, tmp_dir, text, NULL);
	g_free(text);
	t.p->run.timeout = 60000 * MS;
	t.fake.guests = true;
	t.fake.corrupt = "*";
	fake_run_exec(&t);
	g_assert_cmpuint(t.fake.live, ==, 0);
	struct result_cell *c = &t.r->cells[0];
	g_assert_cmpuint(c->n_errors, ==, 1);
	g_assert_cmpint(c->errors[0].kind, ==, ERROR_INTEGRITY);
	g_assert_cmpint(c->errors[0].phase, ==, PHASE_VERIFY);
	fake_run_clear(&t);
}

/* scp hangs in the sender: the run ends at its timeout, in the transfer, and the cleanup still
 * leaves the receiver as it booted */
static void test_hang(void)
{
	if (skip_unsupported())
		return;
	struct fake_run t;
	char *text = g_strdup_printf(plan_fmt, tree, "scp", "{repeat: 1, vm: per-cell}");
	fake_run_init(&t, tmp_dir, text, NULL);
	g_free(text);
	t.p->run.timeout = 10000 * MS; /* the staging before it takes seconds under valgrind */
	t.fake.guests = true;
	t.fake.hang = "scp";
	fake_run_exec(&t);
	g_assert_cmpuint(t.fake.live, ==, 0);
	struct result_cell *c = &t.r->cells[0];
	for (size_t i = 0; i < c->n_errors; i++)
		g_test_message("error: %s [%s]", c->errors[i].message,
			       c->errors[i].agent_message ? c->errors[i].agent_message : "");
	g_assert_cmpint(c->status, ==, STATUS_ERROR);
	g_assert_cmpint(c->errors[0].kind, ==, ERROR_TIMEOUT);
	g_assert_cmpint(c->errors[0].phase, ==, PHASE_TRANSFER);
	g_assert_nonnull(strstr(c->errors[0].message, "in the sender"));
	assert_receiver_clean(&t);
	fake_run_clear(&t);
}

/* blocks: each block boots the pair anew, the sender first (its boot is in the block) */
static void test_blocks(void)
{
	if (skip_unsupported())
		return;
	struct fake_run t;
	run(&t, tree, "tar", "{boots: 2}", 60000);
	struct result_cell *c = &t.r->cells[0];
	g_assert_cmpint(c->status, ==, STATUS_PASSED);
	g_assert_cmpuint(t.fake.boots, ==, 4);
	g_assert_nonnull(strstr(t.fake.log, "peer 1\nboot 2\n"));
	g_assert_nonnull(strstr(t.fake.log, "peer 3\nboot 4\n"));
	fake_run_clear(&t);
}

/* scp follows links: a path dataset with one is refused before anything is sent */
static void test_links_scp(void)
{
	if (skip_unsupported())
		return;
	char *dir = g_build_filename(tmp_dir, "linked", NULL);
	char *sub = g_build_filename(dir, "sub", NULL);
	g_assert_cmpint(g_mkdir_with_parents(sub, 0755), ==, 0);
	char *a = g_build_filename(dir, "a.txt", NULL), *l = g_build_filename(sub, "link", NULL);
	g_assert_true(g_file_set_contents(a, "a\n", -1, NULL));
	g_assert_cmpint(symlink("/etc/hostname", l), ==, 0);
	char *ds = g_strdup_printf("{path: '%s'}", dir);
	struct fake_run t;
	run(&t, ds, "scp", "{repeat: 1, vm: per-cell}", 60000);
	struct result_cell *c = &t.r->cells[0];
	g_assert_cmpint(c->status, ==, STATUS_ERROR);
	g_assert_nonnull(
	    strstr(c->errors[0].message, "vm2vm: scp copies what a symbolic link points to"));
	fake_run_clear(&t);
	g_free(ds), g_free(a), g_free(l), g_free(sub), g_free(dir);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	fake_run_own_network();
	tmp_dir = fake_dir_make("ferry-test-vm2vm");
	g_test_add_func("/vm2vm/tar", test_tar);
	g_test_add_func("/vm2vm/scp", test_scp);
	g_test_add_func("/vm2vm/corrupt", test_corrupt);
	g_test_add_func("/vm2vm/hang", test_hang);
	g_test_add_func("/vm2vm/blocks", test_blocks);
	g_test_add_func("/vm2vm/links-scp", test_links_scp);
	int rc = g_test_run();
	fake_dir_remove(tmp_dir);
	return rc;
}
