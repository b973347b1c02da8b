/* SPDX-License-Identifier: MIT */
/*
 * Run directories (run.c): layout, domain names, the cleanup registry, the signal handling and
 * the atexit backstop; and host process spawning (proc.c).
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs.h"
#include "proc.h"
#include "run.h"
#include "util.h"
#include "vm.h"

static void builtin(struct vm_config *c)
{
	vm_config_init(c);
	c->kernel = "/var/cache/ferry/guest/vmlinux";
	c->initrd = "/var/cache/ferry/guest/initrd.cpio";
	c->cmdline = "console=ttyS0 panic=-1 quiet";
}

static void count_call(void *data)
{
	(*(int *)data)++;
}

static void test_run_dir(void)
{
	char *base = g_dir_make_tmp("ferry-test-run-XXXXXX", NULL);
	g_assert_nonnull(base);
	g_setenv("FERRY_RUN_DIR", base, TRUE);
	char *err = NULL;
	struct run *r = run_open(&err);
	g_assert_null(err);
	g_assert_nonnull(r);
	g_assert_true(g_str_has_prefix(run_dir(r), base));
	struct stat st;
	g_assert_cmpint(stat(run_dir(r), &st), ==, 0);
	g_assert_cmpuint(st.st_mode & 07777, ==, 0755);

	char *p = run_path(r, "disks/deep", "a.raw");
	g_assert_true(g_str_has_suffix(p, "/disks/deep/a.raw"));
	g_assert_true(g_file_set_contents(p, "x", 1, NULL));
	char *dir = g_path_get_dirname(p);
	g_assert_cmpint(stat(dir, &st), ==, 0);
	g_assert_cmpuint(st.st_mode & 07777, ==, 0755);
	g_free(dir);

	char *n0 = run_domain_name(r), *n1 = run_domain_name(r);
	char *want = g_strdup_printf("ferry-%s-0", run_id(r));
	g_assert_cmpstr(n0, ==, want);
	g_free(want);
	char *id = NULL;
	long pid = 0;
	g_assert_true(run_parse_domain_name(n1, &id, &pid));
	g_assert_cmpstr(id, ==, run_id(r));
	g_assert_cmpint(pid, ==, (long)getpid());
	free(id);
	g_assert_false(run_parse_domain_name("ferry", NULL, NULL));
	g_assert_false(run_parse_domain_name("other-2026-1-0", NULL, NULL));
	g_assert_false(run_parse_domain_name("ferry-x-0", NULL, NULL));

	/* a domain owned by the run is destroyed at close */
	virConnectPtr conn = vm_connect("test:///default", &err);
	g_assert_nonnull(conn);
	struct vm_config c;
	builtin(&c);
	char *xml = vm_domain_xml(&c, n0, false, NULL, &err);
	virDomainPtr d = virDomainCreateXML(conn, xml, 0);
	g_assert_nonnull(d);
	virDomainFree(d);
	free(xml);
	vm_own_domain(r, conn, n0);
	static int deferred;
	run_defer(r, count_call, &deferred);
	char *rd = g_strdup(run_dir(r));
	g_assert_cmpint(run_close(r, &err), ==, 0);
	g_assert_null(err);
	g_assert_cmpint(deferred, ==, 1);
	g_assert_false(g_file_test(rd, G_FILE_TEST_EXISTS));
	g_assert_null(virDomainLookupByName(conn, n0));
	virConnectClose(conn);
	g_free(rd);
	free(n0);
	free(n1);
	free(p);
	g_assert_cmpint(g_rmdir(base), ==, 0);
	g_free(base);
	g_unsetenv("FERRY_RUN_DIR");
}

/* SIGTERM sets the flag; exit() then removes the run directory through the atexit backstop. */
static void test_run_signal(void)
{
	if (g_test_subprocess()) {
		char *err = NULL;
		struct run *r = run_open(&err);
		g_assert_nonnull(r);
		char *p = run_path(r, "logs", "x.log");
		g_assert_true(g_file_set_contents(p, "x", 1, NULL));
		free(p);
		g_assert_cmpint(run_interrupted(), ==, 0);
		raise(SIGTERM);
		g_assert_cmpint(run_interrupted(), ==, SIGTERM);
		char c;
		g_assert_cmpint(read(run_signal_fd(), &c, 1), ==, 1);
		g_assert_cmpint(c, ==, SIGTERM);
		printf("interrupted with the run open\n");
		exit(143);
	}
	char *base = g_dir_make_tmp("ferry-test-sig-XXXXXX", NULL);
	g_setenv("FERRY_RUN_DIR", base, TRUE);
	g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDERR);
	g_test_trap_assert_failed();
	g_test_trap_assert_stdout("*interrupted with the run open*");
	/* the child's run directory existed (files written) and is gone */
	g_assert_cmpint(g_rmdir(base), ==, 0);
	g_free(base);
	g_unsetenv("FERRY_RUN_DIR");
}

static void test_proc(void)
{
	char *out = NULL, *err = NULL;
	const char *ok[] = { "sh", "-c", "echo out; echo err >&2", NULL };
	g_assert_cmpint(proc_run(ok, &out, &err), ==, 0);
	g_assert_cmpstr(out, ==, "out\nerr\n");
	free(out);
	const char *bad[] = { "sh", "-c", "echo first; echo 'it broke'; exit 3", NULL };
	g_assert_cmpint(proc_run(bad, NULL, &err), ==, -1);
	g_assert_cmpstr(err, ==, "'sh' exited with status 3: it broke");
	free(err);
	err = NULL;
	const char *missing[] = { "ferry-no-such-program", NULL };
	g_assert_cmpint(proc_run(missing, NULL, &err), ==, -1);
	g_assert_nonnull(strstr(err, "ferry-no-such-program"));
	free(err);
}

/* SIGHUP and SIGQUIT end a run like SIGINT/SIGTERM (a flag; the cleanup runs normally), and a
 * second signal does not kill at once: the cleanup still runs (here: exit's atexit backstop). */
static void test_run_signal_hup_quit(void)
{
	if (g_test_subprocess()) {
		char *err = NULL;
		struct run *r = run_open(&err);
		g_assert_nonnull(r);
		char *p = run_path(r, "logs", "x.log");
		g_assert_true(g_file_set_contents(p, "x", 1, NULL));
		free(p);
		raise(SIGHUP);
		g_assert_cmpint(run_interrupted(), ==, SIGHUP);
		raise(SIGQUIT); /* the second signal */
		g_assert_cmpint(run_interrupted(), ==, SIGHUP);
		printf("alive after a second signal\n");
		exit(129);
	}
	char *base = g_dir_make_tmp("ferry-test-sig-XXXXXX", NULL);
	g_setenv("FERRY_RUN_DIR", base, TRUE);
	g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDERR);
	g_test_trap_assert_failed();
	g_test_trap_assert_stdout("*alive after a second signal*");
	g_assert_cmpint(g_rmdir(base), ==, 0); /* the run directory was removed */
	g_free(base);
	g_unsetenv("FERRY_RUN_DIR");
}

/* After a second signal a cleanup that hangs is cut short: exit 128 + the first signal within
 * RUN_SECOND_SIGNAL_S, the run directory left for doctor --reap. */
static void test_run_second_signal_deadline(void)
{
	char *base = g_dir_make_tmp("ferry-test-sig-XXXXXX", NULL);
	g_setenv("FERRY_RUN_DIR", base, TRUE);
	uint64_t t0 = now_ns();
	pid_t pid = fork();
	g_assert_cmpint(pid, >=, 0);
	if (pid == 0) {
		char *err = NULL;
		if (!run_open(&err))
			_exit(99);
		raise(SIGINT);
		raise(SIGINT);
		sleep(60); /* a cleanup that hangs */
		_exit(98);
	}
	int st = 0;
	g_assert_cmpint(waitpid(pid, &st, 0), ==, pid);
	double s = (double)(now_ns() - t0) / 1e9;
	g_assert_true(WIFEXITED(st));
	g_assert_cmpint(WEXITSTATUS(st), ==, 130);
	g_assert_cmpfloat(s, >=, RUN_SECOND_SIGNAL_S - 0.5);
	g_assert_cmpfloat(s, <, RUN_SECOND_SIGNAL_S + 10);
	g_assert_cmpint(rm_tree(base, NULL), ==, 0);
	g_free(base);
	g_unsetenv("FERRY_RUN_DIR");
}

/* A domain ferry starts carries its marker; one without it is not ferry's, whatever its name. */
static void test_domain_owner(void)
{
	char *err = NULL;
	virConnectPtr conn = vm_connect("test:///default", &err);
	g_assert_nonnull(conn);
	struct vm_config c;
	builtin(&c);
	c.owner_run = "20260101T000000-4242";
	c.owner_pid = 4242;
	char *xml = vm_domain_xml(&c, "ferry-20260101T000000-4242-0", false, NULL, &err);
	g_assert_nonnull(xml);
	g_assert_nonnull(strstr(xml, "https://github.com/ferry/ferry/xmlns/run/1"));
	virDomainPtr d = virDomainCreateXML(conn, xml, 0);
	g_assert_nonnull(d);
	char *id = NULL;
	long pid = 0;
	g_assert_true(vm_domain_owner(d, &id, &pid));
	g_assert_cmpstr(id, ==, "20260101T000000-4242");
	g_assert_cmpint(pid, ==, 4242);
	free(id);
	virDomainDestroy(d);
	virDomainFree(d);
	free(xml);
	/* the same name without the marker */
	c.owner_run = NULL;
	xml = vm_domain_xml(&c, "ferry-20260101T000000-4242-1", false, NULL, &err);
	g_assert_null(strstr(xml, "metadata"));
	d = virDomainCreateXML(conn, xml, 0);
	g_assert_nonnull(d);
	g_assert_false(vm_domain_owner(d, NULL, NULL));
	virDomainDestroy(d);
	virDomainFree(d);
	free(xml);
	virConnectClose(conn);
}

/*
 * Removing the run directory cannot be led out of it: a symbolic link to a directory outside
 * (as a guest-writable staging directory could hold) is removed, not followed, and a mount
 * planted inside (a guest's bind mount) is neither entered nor emptied.
 */
static void test_run_close_contained(void)
{
	char *base = g_dir_make_tmp("ferry-test-rm-XXXXXX", NULL);
	char *outside = g_dir_make_tmp("ferry-test-outside-XXXXXX", NULL);
	char *victim = g_build_filename(outside, "victim", NULL);
	g_assert_true(g_file_set_contents(victim, "keep", 4, NULL));
	g_setenv("FERRY_RUN_DIR", base, TRUE);
	char *err = NULL;
	struct run *r = run_open(&err);
	g_assert_nonnull(r);
	char *link = run_path(r, "staging/deep", "escape");
	g_assert_cmpint(symlink(outside, link), ==, 0);
	char *mnt = run_path(r, "staging", "mnt");
	g_assert_cmpint(mkdir(mnt, 0755), ==, 0);
	bool mounted = mount("ferry-test", mnt, "tmpfs", 0, "size=1m") == 0;
	char *inmount = g_build_filename(mnt, "guest-file", NULL);
	if (mounted)
		g_assert_true(g_file_set_contents(inmount, "keep", 4, NULL));
	char *rd = g_strdup(run_dir(r));
	int rc = run_close(r, &err);
	g_assert_true(g_file_test(victim, G_FILE_TEST_IS_REGULAR)); /* not followed */
	if (mounted) {
		/* the mount point cannot be removed, and what is in it stays */
		g_assert_cmpint(rc, ==, -1);
		g_assert_nonnull(err);
		g_assert_true(g_file_test(inmount, G_FILE_TEST_IS_REGULAR));
		g_assert_cmpint(umount(mnt), ==, 0);
		free(err);
		g_assert_cmpint(rm_tree(rd, NULL), ==, 0);
	} else {
		g_assert_cmpint(rc, ==, 0);
		g_test_message("not root: the planted mount is not tested");
	}
	g_assert_false(g_file_test(rd, G_FILE_TEST_EXISTS));
	g_assert_cmpint(rm_tree(outside, NULL), ==, 0);
	g_assert_cmpint(g_rmdir(base), ==, 0);
	g_free(rd);
	g_free(inmount);
	free(mnt);
	free(link);
	g_free(victim);
	g_free(outside);
	g_free(base);
	g_unsetenv("FERRY_RUN_DIR");
}

/*
 * Issue 24, class 1: a sweep value in a cell id walks out of the run directory. The first cell
 * (dataset.path=x) makes cells/<...x>; the second one's id, "...dataset.path=x/../../...", used
 * to resolve through it to a directory outside, where a disk-image cell's mke2fs then wrote
 * through a planted link. Every name run_path gets is one component of <run>/<sub>, and
 * file_create_new refuses the planted link, leaving what it points at untouched.
 */
static void test_run_path_escape(void)
{
	char *base = g_dir_make_tmp("ferry-test-run-XXXXXX", NULL);
	g_setenv("FERRY_RUN_DIR", base, TRUE);
	char *err = NULL;
	struct run *r = run_open(&err);
	g_assert_nonnull(r);
	char *trap = g_build_filename(base, "trap", NULL);
	g_assert_cmpint(g_mkdir(trap, 0755), ==, 0);
	char *victim = g_build_filename(base, "victim", NULL);
	g_assert_true(g_file_set_contents(victim, "precious", -1, NULL));
	char *planted = g_build_filename(trap, "image-1.raw", NULL);
	g_assert_cmpint(symlink(victim, planted), ==, 0);

	char *first = run_path(r, "cells", "vm=v,dataset.path=x");
	g_assert_cmpint(g_mkdir(first, 0755), ==, 0);
	const char *ids[] = { "vm=v,dataset.path=x/../../../../../../../../../../../../trap",
			      "..",
			      ".",
			      "",
			      "a/b",
			      "%2F",
			      "/abs" };
	char *cells = g_build_filename(run_dir(r), "cells", NULL);
	GHashTable *seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	for (size_t i = 0; i < G_N_ELEMENTS(ids); i++) {
		char *p = run_path(r, "cells", ids[i]);
		char *dir = g_path_get_dirname(p), *leaf = g_path_get_basename(p);
		g_assert_cmpstr(dir, ==, cells);
		g_assert_null(strchr(leaf, '/'));
		g_assert_false(leaf[0] == '.');
		g_assert_true(
		    g_hash_table_add(seen, g_strdup(leaf))); /* distinct ids, distinct names */
		g_assert_cmpint(g_mkdir(p, 0755), ==, 0);
		g_free(dir);
		g_free(leaf);
		g_free(p);
	}
	g_hash_table_unref(seen);
	/* the disk-image output through the planted link: refused, the victim untouched */
	int fd = file_create_new(planted, 0644, &err);
	g_assert_cmpint(fd, ==, -1);
	g_assert_nonnull(strstr(err, "exists as a symbolic link"));
	free(err);
	char *text = NULL;
	g_assert_true(g_file_get_contents(victim, &text, NULL, NULL));
	g_assert_cmpstr(text, ==, "precious");
	g_free(text);
	/* nothing was made in the trap: it holds the planted link only */
	GDir *d = g_dir_open(trap, 0, NULL);
	g_assert_cmpstr(g_dir_read_name(d), ==, "image-1.raw");
	g_assert_null(g_dir_read_name(d));
	g_dir_close(d);

	run_close(r, NULL);
	g_assert_cmpint(rm_tree(base, NULL), ==, 0);
	g_free(cells);
	free(first);
	g_free(planted);
	g_free(victim);
	g_free(trap);
	g_free(base);
	g_unsetenv("FERRY_RUN_DIR");
}

/*
 * Issue 24, class 3: a custom guest's image is a regular file in the allowed tree with its whole
 * backing chain so (a device, a FIFO that hung qemu-img info, a qcow2 backed by a host file
 * outside, a json: backing that made qemu-img open a TCP connection): vm_boot refuses each
 * before anything boots, and the run directory closes clean.
 */
static void test_image_checks(void)
{
	char *base = g_dir_make_tmp("ferry-test-image-XXXXXX", NULL);
	char *tree = g_build_filename(base, "tree", NULL),
	     *out = g_build_filename(base, "out", NULL);
	g_assert_cmpint(g_mkdir(tree, 0755), ==, 0);
	g_assert_cmpint(g_mkdir(out, 0755), ==, 0);
	g_setenv("FERRY_RUN_DIR", base, TRUE);
	g_setenv("FERRY_ALLOW_INPUT", tree, TRUE);
	char *secret = g_build_filename(out, "secret.raw", NULL);
	char *outside = g_build_filename(tree, "outside.qcow2", NULL);
	char *json = g_build_filename(tree, "json.qcow2", NULL);
	char *fifo = g_build_filename(tree, "fifo.qcow2", NULL);
	g_assert_true(g_file_set_contents(secret, "secret", -1, NULL));
	g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
	char *err = NULL;
	const char *mk1[] = { "qemu-img", "create", "-q", "-f",    "qcow2", "-b", secret,
			      "-F",       "raw",    "-u", outside, "1M",    NULL };
	g_assert_cmpint(proc_run(mk1, NULL, &err), ==, 0);
	const char *mk2[] = { "qemu-img",
			      "create",
			      "-q",
			      "-f",
			      "qcow2",
			      "-b",
			      "json:{\"driver\":\"raw\",\"file\":{\"driver\":\"nbd\","
			      "\"host\":\"127.0.0.1\",\"port\":\"9\"}}",
			      "-F",
			      "raw",
			      "-u",
			      json,
			      "1M",
			      NULL };
	g_assert_cmpint(proc_run(mk2, NULL, &err), ==, 0);
	static const struct {
		const char *image, *says;
	} bad[] = {
		{ "/dev/null", "is a character device, not a regular file" },
		{ NULL, "is a FIFO, not a regular file" },
		{ NULL, "backing file" },
		{ NULL, "is not a local file" },
		{ "/etc/hostname", "outside the allowed tree" },
	};
	const char *paths[] = { bad[0].image, fifo, outside, json, bad[4].image };
	virConnectPtr conn = vm_connect("test:///default", &err);
	g_assert_nonnull(conn);
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		struct run *r = run_open(&err);
		g_assert_nonnull(r);
		struct vm_config c;
		builtin(&c);
		c.image = paths[i];
		c.kernel = c.initrd = c.cmdline = NULL; /* a custom guest boots its own */
		struct vm *vm = NULL;
		g_assert_cmpint(vm_boot(r, conn, &c, 10000, &vm, &err), ==, -1);
		g_test_message("%s: %s", paths[i], err);
		g_assert_nonnull(strstr(err, bad[i].says));
		g_clear_pointer(&err, free);
		g_assert_cmpint(run_close(r, &err), ==, 0);
	}
	/* the backing file outside was never handed to anyone: still root's, untouched */
	struct stat st;
	g_assert_cmpint(stat(secret, &st), ==, 0);
	g_assert_cmpuint(st.st_uid, ==, getuid());
	virConnectClose(conn);
	g_unsetenv("FERRY_ALLOW_INPUT");
	g_unsetenv("FERRY_RUN_DIR");
	g_assert_cmpint(rm_tree(base, NULL), ==, 0);
	g_free(secret);
	g_free(outside);
	g_free(json);
	g_free(fifo);
	g_free(tree);
	g_free(out);
	g_free(base);
}

/*
 * Issue 24, class 3: the owners and modes of an image's chain are put back when the run ends
 * (libvirt's dynamic ownership hands them to libvirt-qemu and left a backing file of the user's
 * owned by it), and never through a link planted meanwhile: a chain file swapped for a symbolic
 * link to a file outside keeps that file's owner and mode.
 */
static void test_owner_restore(void)
{
	if (geteuid() != 0) {
		g_test_skip("chown to other owners needs root");
		return;
	}
	char *base = g_dir_make_tmp("ferry-test-owner-XXXXXX", NULL);
	char *tree = g_build_filename(base, "tree", NULL);
	g_assert_cmpint(g_mkdir(tree, 0755), ==, 0);
	g_setenv("FERRY_RUN_DIR", base, TRUE);
	g_setenv("FERRY_ALLOW_INPUT", tree, TRUE);
	char *back = g_build_filename(tree, "base.raw", NULL);
	char *top = g_build_filename(tree, "top.qcow2", NULL);
	char *other = g_build_filename(tree, "other.raw", NULL);
	char *outside = g_build_filename(base, "outside", NULL);
	char *err = NULL;
	const char *mk0[] = { "qemu-img", "create", "-q", "-f", "raw", back, "1M", NULL };
	g_assert_cmpint(proc_run(mk0, NULL, &err), ==, 0);
	const char *mk1[] = { "qemu-img", "create", "-q",  "-f", "qcow2", "-b",
			      back,       "-F",     "raw", top,  "1M",    NULL };
	g_assert_cmpint(proc_run(mk1, NULL, &err), ==, 0);
	g_assert_cmpint(
	    proc_run((const char *[]){ "qemu-img", "create", "-q", "-f", "raw", other, "1M", NULL },
		     NULL, &err),
	    ==, 0);
	g_assert_true(g_file_set_contents(outside, "outside", -1, NULL));
	g_assert_cmpint(chmod(outside, 0644), ==, 0);
	/* the user's: 1234:2345, 0640 and 0604 */
	g_assert_cmpint(chown(back, 1234, 2345), ==, 0);
	g_assert_cmpint(chmod(back, 0640), ==, 0);
	g_assert_cmpint(chown(top, 1234, 2345), ==, 0);
	g_assert_cmpint(chmod(top, 0604), ==, 0);
	virConnectPtr conn = vm_connect("test:///default", &err);
	g_assert_nonnull(conn);
	for (int swap = 0; swap <= 1; swap++) {
		struct run *r = run_open(&err);
		g_assert_nonnull(r);
		struct vm_config c;
		builtin(&c);
		c.image = top;
		c.kernel = c.initrd = c.cmdline = NULL;
		struct vm *vm = NULL;
		/* the chain is checked and remembered whether the test driver then boots it */
		if (vm_boot(r, conn, &c, 10000, &vm, &err) == 0)
			vm_destroy(vm);
		g_clear_pointer(&err, free);
		/* what libvirt's relabelling does while the guest runs */
		g_assert_cmpint(chown(top, 64055, 64055), ==, 0);
		g_assert_cmpint(chmod(top, 0600), ==, 0);
		if (swap) {
			/* base.raw swapped for a link out of the tree: the restore must not
			   follow it */
			g_assert_cmpint(rename(back, other), ==, 0);
			g_assert_cmpint(symlink(outside, back), ==, 0);
		} else {
			g_assert_cmpint(chown(back, 64055, 64055), ==, 0);
			g_assert_cmpint(chmod(back, 0600), ==, 0);
		}
		g_assert_cmpint(run_close(r, &err), ==, 0);
		struct stat st;
		g_assert_cmpint(stat(top, &st), ==, 0);
		g_assert_cmpuint(st.st_uid, ==, 1234);
		g_assert_cmpuint(st.st_gid, ==, 2345);
		g_assert_cmpuint(st.st_mode & 07777, ==, 0604);
		if (!swap) {
			g_assert_cmpint(stat(back, &st), ==, 0);
			g_assert_cmpuint(st.st_uid, ==, 1234);
			g_assert_cmpuint(st.st_gid, ==, 2345);
			g_assert_cmpuint(st.st_mode & 07777, ==, 0640);
		} else {
			g_assert_cmpint(stat(outside, &st), ==, 0);
			g_assert_cmpuint(st.st_uid, ==, getuid());
			g_assert_cmpuint(st.st_mode & 07777, ==, 0644);
		}
	}
	virConnectClose(conn);
	g_unsetenv("FERRY_ALLOW_INPUT");
	g_unsetenv("FERRY_RUN_DIR");
	g_assert_cmpint(rm_tree(base, NULL), ==, 0);
	g_free(back), g_free(top), g_free(other), g_free(outside), g_free(tree), g_free(base);
}

/*
 * Issue 24, class 3: every helper runs under a timeout, and SIGTERM during a helper ends it at
 * once (proc_spawn used to retry EINTR and wait forever for a qemu-img stuck on a FIFO).
 */
static void test_proc_timeout(void)
{
	char *err = NULL;
	const char *slow[] = { "sleep", "1000", NULL };
	g_assert_cmpint(proc_run_timeout(slow, 50, NULL, &err), ==, -1);
	g_assert_cmpstr(err, ==, "'sleep' did not finish in 50 ms and was killed");
	free(err);
	if (g_test_subprocess()) {
		char *e = NULL;
		struct run *r = run_open(&e);
		g_assert_nonnull(r);
		/* the helper sends ferry SIGTERM, then waits as a hung qemu-img would */
		const char *hang[] = { "sh", "-c", "kill -TERM $PPID; exec sleep 1000", NULL };
		g_assert_cmpint(proc_run(hang, NULL, &e), ==, -1);
		printf("%s\n", e);
		free(e);
		/* a helper started after the signal is the cleanup's: it runs to its end (a
		 * killed 'ip netns del' left the run's namespace behind) */
		const char *later[] = { "sh", "-c", "sleep 0.2; echo cleanup helper ran", NULL };
		char *out = NULL;
		e = NULL;
		g_assert_cmpint(proc_run(later, &out, &e), ==, 0);
		printf("%s", out);
		exit(143);
	}
	char *base = g_dir_make_tmp("ferry-test-proc-XXXXXX", NULL);
	g_setenv("FERRY_RUN_DIR", base, TRUE);
	g_test_trap_subprocess("/run/proc-timeout", 0, G_TEST_SUBPROCESS_INHERIT_STDERR);
	g_test_trap_assert_failed();
	g_test_trap_assert_stdout("*'sh' was killed: ferry was interrupted*cleanup helper ran*");
	g_assert_cmpint(g_rmdir(base), ==, 0); /* the run directory is gone */
	g_free(base);
	g_unsetenv("FERRY_RUN_DIR");
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/run/dir", test_run_dir);
	g_test_add_func("/run/path-escape", test_run_path_escape);
	g_test_add_func("/run/signal", test_run_signal);
	g_test_add_func("/run/signal-hup-quit", test_run_signal_hup_quit);
	g_test_add_func("/run/second-signal-deadline", test_run_second_signal_deadline);
	g_test_add_func("/run/domain-owner", test_domain_owner);
	g_test_add_func("/run/close-contained", test_run_close_contained);
	g_test_add_func("/run/proc", test_proc);
	g_test_add_func("/run/proc-timeout", test_proc_timeout);
	g_test_add_func("/run/image-checks", test_image_checks);
	g_test_add_func("/run/owner-restore", test_owner_restore);
	return g_test_run();
}
