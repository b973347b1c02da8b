/* SPDX-License-Identifier: MIT */
/*
 * The method runs on the fake machine's guests (as test-method-runs.c, with method-case.c) that
 * check one thing beyond a clean, corrupted or hung run: block's figures from dd's own report
 * (and the reports it refuses), guest-copy's cache drops as the plan asks, and a `path:`
 * dataset with a link pointing out of it, carried as a link or refused. Skipped, with the
 * reason, where the host cannot run fake guests (fake_root_support()).
 */
#include <glib.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "method-case.h"

/*
 * block's guest-timed figures are dd's own report (method_dd_report()), not a clock around the
 * command: with the guest's /usr/bin/dd printing a report the test chose (busybox's dd moves the
 * bytes, machine_fake.dd_report), guest_write_time and guest_read_time are exactly its seconds
 * and the throughputs its bytes over them (not its rounded rate); with queue_depth 2, the bytes
 * of both writers over the slower one's seconds (each writer prints the same report here). A
 * report that is missing (busybox's two record lines), garbage, or of the wrong byte count fails
 * the run with a message naming it. The stream is 2 MiB: two blocks of 1 MiB.
 */
static struct result_cell *run_dd_report(struct fake_run *t, const char *method, const char *report)
{
	char *text = g_strdup_printf("ferry: 1\nname: m\nvms: {v: {guest: builtin}}\n"
				     "disks: {i: {format: raw, size: 64MiB}}\n"
				     "datasets: {s: {files: 1, size: 2MiB, seed: 3}}\n"
				     "methods: {m: %s}\nmatrix: {disk: [i], method: [m]}\n"
				     "run: {repeat: 1, vm: per-cell}\n",
				     method);
	fake_run_init(t, tmp_dir, text, NULL);
	g_free(text);
	t->p->run.timeout = 60000 * MS;
	t->fake.guests = true;
	t->fake.sum = sum_path;
	t->fake.dd_report = report;
	fake_run_exec(t);
	g_assert_cmpuint(t->fake.live, ==, 0);
	assert_host_clean();
	g_assert_cmpuint(t->r->n_cells, ==, 1);
	return &t->r->cells[0];
}

static void check_dd_figures(const char *method, const char *report, double seconds, double bytes)
{
	if (skip_unless_supported())
		return;
	struct fake_run t;
	struct result_cell *cell = run_dd_report(&t, method, report);
	if (!skipped(cell)) {
		log_errors(cell);
		g_assert_cmpint(cell->status, ==, STATUS_PASSED);
		g_assert_true(cell->runs[0].integrity_ok);
		json_t *m = cell->runs[0].metrics;
		static const char *const times[] = { "guest_write_time", "guest_read_time" };
		static const char *const rates[] = { "guest_write_throughput",
						     "guest_read_throughput" };
		for (size_t i = 0; i < 2; i++) {
			g_test_message("%s = %g, %s = %g", times[i],
				       json_number_value(json_object_get(m, times[i])), rates[i],
				       json_number_value(json_object_get(m, rates[i])));
			g_assert_cmpfloat(json_number_value(json_object_get(m, times[i])), ==,
					  seconds);
			g_assert_cmpfloat(json_number_value(json_object_get(m, rates[i])), ==,
					  bytes / seconds);
		}
		assert_guest_clean(&t);
	}
	fake_run_clear(&t);
}

static void test_dd_gnu(void)
{
	check_dd_figures("{type: block}",
			 "2+0 records in\n2+0 records out\n2097152 bytes (2.1 MB, 2.0 MiB) copied, "
			 "0.5 s, 4.2 MB/s\n",
			 0.5, 2097152);
}

/* %g seconds, as GNU dd prints a short time */
static void test_dd_gnu_exp(void)
{
	check_dd_figures("{type: block}",
			 "2+0 records in\n2+0 records out\n2097152 bytes (2.1 MB, 2.0 MiB) copied, "
			 "6.25e-05 s, 33.6 GB/s\n",
			 6.25e-05, 2097152);
}

static void test_dd_busybox(void)
{
	check_dd_figures("{type: block}",
			 "2+0 records in\n2+0 records out\n2097152 bytes (2.0MB) copied, 0.250000 "
			 "seconds, 8.0MB/s\n",
			 0.25, 2097152);
}

/* two writers of one block each: both reports' bytes over the slower's seconds */
static void test_dd_qd2(void)
{
	check_dd_figures("{type: block, queue_depth: 2}",
			 "1+0 records in\n1+0 records out\n1048576 bytes (1.0 MB, 1.0 MiB) copied, "
			 "0.5 s, 2.1 MB/s\n",
			 0.5, 2097152);
}

static void check_dd_refused(const char *report, const char *want)
{
	if (skip_unless_supported())
		return;
	struct fake_run t;
	struct result_cell *cell = run_dd_report(&t, "{type: block}", report);
	if (!skipped(cell)) {
		log_errors(cell);
		g_assert_cmpint(cell->status, ==, STATUS_ERROR);
		g_assert_cmpuint(cell->n_errors, ==, 1);
		g_assert_cmpint(cell->errors[0].phase, ==, PHASE_TRANSFER);
		g_assert_nonnull(
		    strstr(cell->errors[0].message, "block: write: the dd of blocks 0 on"));
		g_assert_nonnull(strstr(cell->errors[0].message, want));
		/* no guess in its place */
		g_assert_null(json_object_get(cell->runs[0].metrics, "guest_write_throughput"));
		g_assert_null(json_object_get(cell->runs[0].metrics, "guest_write_time"));
		g_assert_false(isnan(cell->runs[0].phase[PHASE_CLEANUP]));
		assert_guest_clean(&t);
	}
	fake_run_clear(&t);
}

/* Debian's busybox dd: the records only */
static void test_dd_missing(void)
{
	check_dd_refused("2+0 records in\n2+0 records out\n",
			 "dd printed no \"N bytes ... copied, S s\" line on its standard error "
			 "(busybox's dd, built without its third status line, prints only the "
			 "records): '2+0 records in|2+0 records out|'");
}

static void test_dd_garbage(void)
{
	check_dd_refused("dd: warning: something odd\nfast, 3 GB/s\n",
			 "dd printed no \"N bytes ... copied, S s\" line");
}

/* a locale's decimal comma is no figure (block runs dd under LC_ALL=C) */
static void test_dd_comma(void)
{
	check_dd_refused("2097152 bytes (2,1 MB, 2,0 MiB) copied, 0,5 s, 4,2 MB/s\n",
			 "dd printed no \"N bytes ... copied, S s\" line");
}

static void test_dd_zero_time(void)
{
	check_dd_refused("2097152 bytes (2.1 MB, 2.0 MiB) copied, 0 s, Infinity B/s\n",
			 "dd reported 2097152 bytes copied in 0 s: no time to divide by");
}

static void test_dd_short(void)
{
	check_dd_refused("1048576 bytes (1.0 MB, 1.0 MiB) copied, 0.5 s, 2.1 MB/s\n",
			 "reported 1048576 bytes copied, not the 2097152 of its 2 blocks");
}

/* guest-copy drops the caches its untimed work filled, as the plan asks: once more than the
 * executor's reset per run, and not under caches keep */
static void check_gc_drops(const char *caches, unsigned want)
{
	if (skip_unless_supported())
		return;
	char *text = g_strdup_printf("%svms: {v: {guest: builtin}}\n"
				     "methods: {m: {type: guest-copy, direction: read}}\n"
				     "matrix: {disk: [i], method: [m]}\n"
				     "run: {repeat: 1, vm: per-cell, caches: %s}\n",
				     plan_head, caches);
	struct fake_run t;
	fake_run_init(&t, tmp_dir, text, NULL);
	g_free(text);
	t.p->run.timeout = 60000 * MS;
	t.fake.guests = true;
	fake_run_exec(&t);
	assert_host_clean();
	struct result_cell *cell = &t.r->cells[0];
	if (!skipped(cell)) {
		log_errors(cell);
		g_assert_cmpint(cell->status, ==, STATUS_PASSED);
		g_assert_cmpuint(t.fake.drops, ==, want);
	}
	fake_run_clear(&t);
}

static void test_gc_drops(void)
{
	check_gc_drops("drop", 2);
	check_gc_drops("keep", 0);
}

/*
 * Issue 24 class 6: a `path:` dataset with a link inside that points out of it (sub/link ->
 * a secret file next to the tree). Every method that reads a path dataset carries the link as a
 * link (verify compares links and their targets, so a followed link is an integrity error), and
 * vfat, which cannot hold one (mcopy -s followed it), refuses the dataset before anything is
 * built, naming the link.
 */
static void check_path_links(const char *method, bool vfat, const char *refusal)
{
	if (!vfat && skip_unless_supported())
		return;
	char *tree = g_build_filename(tmp_dir, "linked-tree", NULL);
	char *secret = g_build_filename(tmp_dir, "secret", NULL);
	if (!g_file_test(tree, G_FILE_TEST_EXISTS)) {
		char *sub = g_build_filename(tree, "sub", NULL);
		g_assert_cmpint(g_mkdir_with_parents(sub, 0755), ==, 0);
		char *a = g_build_filename(tree, "a.txt", NULL),
		     *b = g_build_filename(sub, "b.txt", NULL);
		char *l = g_build_filename(sub, "link", NULL);
		g_assert_true(g_file_set_contents(a, "a\n", -1, NULL));
		g_assert_true(g_file_set_contents(b, "b\n", -1, NULL));
		g_assert_true(g_file_set_contents(secret, "secret-do-not-copy\n", -1, NULL));
		g_assert_cmpint(symlink(secret, l), ==, 0);
		g_free(a), g_free(b), g_free(l), g_free(sub);
	}
	char *text = g_strdup_printf("ferry: 1\nname: m\nvms: {v: %s}\n"
				     "disks: {t: {kind: tmpfs, size: 64MiB}}\n"
				     "datasets: {s: {path: '%s'}}\n"
				     "methods: {m: %s}\nmatrix: {disk: [t], method: [m]}\n"
				     "run: {repeat: 1, vm: per-cell}\n",
				     vm_for(method), tree, method);
	struct fake_run t;
	fake_run_init(&t, tmp_dir, text, NULL);
	g_free(text);
	t.p->run.timeout = 60000 * MS;
	/* vfat: the fake machine without guests (this host's kernel may have no vfat to mount
	   the image with, and the refusal comes before any guest) */
	t.fake.guests = !vfat;
	fake_run_exec(&t);
	g_assert_cmpuint(t.fake.live, ==, 0);
	assert_host_clean();
	struct result_cell *cell = &t.r->cells[0];
	if (!skipped(cell)) {
		log_errors(cell);
		if (refusal) {
			g_assert_cmpint(cell->status, ==, STATUS_ERROR);
			if (vfat) /* refused before the image is built */
				g_assert_cmpuint(cell->n_runs, ==, 0);
			g_assert_cmpuint(cell->n_errors, ==, 1);
			g_assert_nonnull(strstr(cell->errors[0].message, refusal));
			g_assert_null(strstr(cell->errors[0].message, "secret"));
		} else {
			g_assert_cmpint(cell->status, ==, STATUS_PASSED);
			g_assert_true(cell->runs[0].integrity_ok);
		}
	}
	fake_run_clear(&t);
	g_free(tree), g_free(secret);
}

/* scp -r copies what a link points to: refused before anything is sent */
static void test_links_scp(void)
{
	check_path_links("{type: ssh, tool: scp}", false,
			 "ssh: scp copies what a symbolic link points to, and dataset 's' has 1 "
			 "('sub/link' first)");
}

static void test_links_vfat(void)
{
	check_path_links(
	    "{type: disk-image, filesystem: vfat}", true,
	    "vfat cannot hold symbolic links, and dataset 's' has 1 ('sub/link' first)");
}

#define LINK_CASES(X)                                                                              \
	X(ext4, "{type: disk-image, filesystem: ext4}")                                            \
	X(iso9660, "{type: disk-image, filesystem: iso9660}")                                      \
	X(agent_files, "{type: agent-file}")                                                       \
	X(agent_tar, "{type: agent-file, archive: tar}")                                           \
	X(channel, "{type: channel}")                                                              \
	X(share_9p, "{type: share, driver: 9p}")                                                   \
	X(share_move, "{type: share, driver: 9p, mode: move}")                                     \
	X(net_pull, "{type: network}")                                                             \
	X(net_pull_tar, "{type: network, archive: tar}")                                           \
	X(ssh_rsync, "{type: ssh, tool: rsync}")                                                   \
	X(ssh_tar, "{type: ssh, tool: tar}")
#define LINK_DEFINE(c, m)                                                                          \
	static void test_links_##c(void)                                                           \
	{                                                                                          \
		check_path_links(m, false, NULL);                                                  \
	}
LINK_CASES(LINK_DEFINE)
#define LINK_ADD(c, m) g_test_add_func("/method-runs/path-links/" #c, test_links_##c);

int main(int argc, char **argv)
{
	method_case_init(&argc, &argv, "ferry-test-method-runs-edges");
	g_test_add_func("/method-runs/block/dd-report/gnu", test_dd_gnu);
	g_test_add_func("/method-runs/block/dd-report/gnu-exponent", test_dd_gnu_exp);
	g_test_add_func("/method-runs/block/dd-report/busybox", test_dd_busybox);
	g_test_add_func("/method-runs/block/dd-report/qd2", test_dd_qd2);
	g_test_add_func("/method-runs/block/dd-report/missing", test_dd_missing);
	g_test_add_func("/method-runs/block/dd-report/garbage", test_dd_garbage);
	g_test_add_func("/method-runs/block/dd-report/comma", test_dd_comma);
	g_test_add_func("/method-runs/block/dd-report/zero-time", test_dd_zero_time);
	g_test_add_func("/method-runs/block/dd-report/short", test_dd_short);
	g_test_add_func("/method-runs/guest-copy/drops", test_gc_drops);
	g_test_add_func("/method-runs/path-links/vfat", test_links_vfat);
	g_test_add_func("/method-runs/path-links/scp", test_links_scp);
	LINK_CASES(LINK_ADD)
	return method_case_run();
}
