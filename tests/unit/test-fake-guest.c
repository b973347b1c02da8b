/* SPDX-License-Identifier: MIT */
/*
 * The fake machine's guest over a local directory (runner/machine/fake-guest.c, fake-proc.c): its
 * commands run (exit status, stdin, stdout and stderr), a mount outlives the command that made it,
 * a command past its timeout is killed with what it started, a plugged image is a disk the guest
 * finds by serial and mounts, a port carries a stream to the end, and nothing of a guest
 * outlives it (processes, loop devices, its root); a file opened from the host as the guest
 * opens it stays inside the guest's root. Skipped, with the reason, where the host
 * cannot run fake guests (fake_root_support()).
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <linux/sockios.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake-guest.h"
#include "fs.h"
#include "proc.h"
#include "run.h"
#include "util.h"

static char *tmp_dir;

static bool skip_unless_supported(void)
{
	const char *why = fake_root_support();
	if (why)
		g_test_skip(why);
	return why != NULL;
}

static struct fake_root *boot(void)
{
	char *dir = g_build_filename(tmp_dir, "root", NULL);
	struct fake_root *r = NULL;
	char *err = NULL;
	int rc = fake_root_boot(dir, NULL, &r, &err);
	if (rc < 0)
		g_test_message("boot: %s", err);
	g_assert_cmpint(rc, ==, 0);
	g_free(dir);
	return r;
}

/* Destroys r and checks that nothing of it is left. */
static void destroy(struct fake_root *r)
{
	char *dir = g_strdup(fake_root_dir(r));
	fake_root_destroy(r);
	g_assert_false(g_file_test(dir, G_FILE_TEST_EXISTS));
	g_free(dir);
}

/* Runs cmd, which must exit 0; returns its stdout (g_free). */
static char *sh(struct fake_root *r, const char *cmd)
{
	struct fake_result res;
	char *err = NULL;
	g_assert_cmpint(fake_root_run(r, cmd, NULL, 0, 10000, &res, &err), ==, 0);
	if (res.status != 0)
		g_test_message("%s: %s", cmd, res.err);
	g_assert_cmpint(res.status, ==, 0);
	char *out = g_strdup(res.out);
	fake_result_clear(&res);
	return out;
}

static void test_commands(void)
{
	if (skip_unless_supported())
		return;
	struct fake_root *r = boot();
	struct fake_result res;
	char *err = NULL;
	g_assert_cmpint(fake_root_run(r, "cat; echo oops >&2; exit 3", "in", 2, 10000, &res, &err),
			==, 0);
	g_assert_cmpint(res.status, ==, 3);
	g_assert_cmpstr(res.out, ==, "in");
	g_assert_cmpstr(res.err, ==, "oops\n");
	fake_result_clear(&res);
	/* the guest's root is the directory: / holds what the host wrote there */
	char *marker = g_build_filename(fake_root_dir(r), "etc", "marker", NULL);
	g_assert_true(g_file_set_contents(marker, "m", 1, NULL));
	char *out = sh(r, "cat /etc/marker; readlink /bin/sh");
	g_assert_cmpstr(out, ==, "m/usr/bin/busybox\n");
	g_free(out);
	g_free(marker);
	/* a mount stays for the next command, and is the guest's alone */
	out = sh(r, "mkdir -p /mnt/t && mount -t tmpfs tmpfs /mnt/t && echo x > /mnt/t/f");
	g_free(out);
	g_assert_cmpint(fake_root_mounts(r), ==, 1);
	out = sh(r, "cat /mnt/t/f");
	g_assert_cmpstr(out, ==, "x\n");
	g_free(out);
	char *host = g_build_filename(fake_root_dir(r), "mnt", "t", "f", NULL);
	g_assert_false(g_file_test(host, G_FILE_TEST_EXISTS));
	g_free(host);
	destroy(r);
}

/* A file opened from the host as the guest opens it: in its mounts, every path and link kept
 * inside its root; and the first file below a folder in name order. */
static void test_open(void)
{
	if (skip_unless_supported())
		return;
	struct fake_root *r = boot();
	g_free(sh(r, "mkdir -p /mnt/t && mount -t tmpfs tmpfs /mnt/t && mkdir /mnt/t/b /mnt/t/a && "
		     "echo 2 > /mnt/t/b/x && echo 1 > /mnt/t/a/y && ln -s / /tmp/top && "
		     "ln -s /etc /tmp/etc"));
	/* written through the guest's tmpfs mount, seen by a guest command */
	int fd = fake_root_open(r, "/mnt/t/new", O_WRONLY | O_CREAT | O_TRUNC);
	g_assert_cmpint(fd, >=, 0);
	g_assert_cmpint(write_all(fd, "bytes", 5), ==, 0);
	g_assert_cmpint(close(fd), ==, 0);
	char *out = sh(r, "cat /mnt/t/new; stat -c %a /mnt/t/new");
	g_assert_cmpstr(out, ==, "bytes644\n");
	g_free(out);
	/* the host's root is out of reach: "..", an absolute link and a link to / stay in the
	 * guest's (its /etc/passwd is the fake's root and nobody) */
	static const char *const paths[] = { "/../../../../../../etc/passwd", "/tmp/etc/passwd",
					     "/tmp/top/etc/passwd", "../etc/passwd" };
	for (size_t i = 0; i < G_N_ELEMENTS(paths); i++) {
		fd = fake_root_open(r, paths[i], O_RDONLY);
		g_assert_cmpint(fd, >=, 0);
		char buf[256] = { 0 };
		g_assert_cmpint(read(fd, buf, sizeof(buf) - 1), >, 0);
		close(fd);
		g_assert_true(g_str_has_prefix(buf, "root:x:0:0:root:/root:/bin/sh\nnobody:"));
	}
	g_assert_cmpint(fake_root_open(r, "/mnt/t/none", O_RDONLY), ==, -1);
	g_assert_cmpint(errno, ==, ENOENT);
	/* the first regular file by path, as find | sort | head -n 1 names it */
	char *first = fake_root_first_file(r, "/mnt/t");
	g_assert_cmpstr(first, ==, "/mnt/t/a/y");
	free(first);
	g_assert_null(fake_root_first_file(r, "/mnt/none"));
	g_free(sh(r, "umount /mnt/t"));
	destroy(r);
}

static void test_timeout(void)
{
	if (skip_unless_supported())
		return;
	struct fake_root *r = boot();
	struct fake_result res;
	char *err = NULL;
	/* a pipeline with a child in the background: all of it killed */
	g_assert_cmpint(fake_root_run(r, "sleep 100 & sleep 100 | cat", NULL, 0, 50, &res, &err),
			==, 1);
	g_assert_cmpint(fake_root_procs(r), ==, 0);
	/* a command that ends leaves no background child behind */
	char *out = sh(r, "sleep 100 & echo started");
	g_assert_cmpstr(out, ==, "started\n");
	g_free(out);
	g_assert_cmpint(fake_root_procs(r), ==, 0);
	/* a running command is killed at destroy */
	struct fake_proc *p = NULL;
	int in = -1;
	struct fake_input pipe_in = { .fd = -1, .pipe = &in };
	g_assert_cmpint(fake_root_start_sh(r, "cat > /tmp/x", &pipe_in, &p, &err), ==, 0);
	g_assert_false(fake_proc_done(p));
	g_assert_cmpint(write(in, "abc", 3), ==, 3);
	close(in);
	g_assert_cmpint(fake_proc_wait(r, p, 10000, &res, &err), ==, 0);
	g_assert_cmpint(res.status, ==, 0);
	fake_result_clear(&res);
	const char *argv[] = { "sleep", "100", NULL };
	g_assert_cmpint(fake_root_start(r, argv, NULL, &p, &err), ==, 0);
	g_assert_cmpint(fake_root_procs(r), ==, 1);
	fake_proc_kill(r, p);
	g_assert_cmpint(fake_root_procs(r), ==, 0);
	destroy(r);
}

/* An ext4 image holding one file, made on the host. */
static char *ext4_image(void)
{
	char *src = g_build_filename(tmp_dir, "src", NULL);
	char *img = g_build_filename(tmp_dir, "img.raw", NULL);
	g_assert_cmpint(g_mkdir(src, 0755), ==, 0);
	char *f = g_build_filename(src, "hello", NULL);
	g_assert_true(g_file_set_contents(f, "hi there", -1, NULL));
	const char *argv[] = { "mke2fs", "-q", "-F", "-t", "ext4", "-d", src, img, "4M", NULL };
	char *err = NULL;
	g_assert_cmpint(proc_run(argv, NULL, &err), ==, 0);
	g_assert_cmpint(rm_tree(src, NULL), ==, 0);
	g_free(f);
	g_free(src);
	return img;
}

/* The guest's init (fake-init.c) starts the commands: a signal's end and a long command line
 * come back as they were, a process a command left outside its group keeps running (as in a
 * guest) until destroy, and a command started after such an orphan ended still works. */
static void test_init(void)
{
	if (skip_unless_supported())
		return;
	struct fake_root *r = boot();
	struct fake_result res;
	char *err = NULL;
	g_assert_cmpint(fake_root_run(r, "kill -TERM $$", NULL, 0, 10000, &res, &err), ==, 0);
	g_assert_cmpint(res.signal, ==, 15);
	fake_result_clear(&res);
	/* 63 arguments of 16 KiB (about 1 MiB of command line), more than a socket's default send
	 * buffer */
	const char *argv[68] = { "/bin/sh", "-c", "echo $# ${#1}", "sh" };
	char *big = g_malloc(16385);
	memset(big, 'x', 16384);
	big[16384] = '\0';
	for (size_t i = 4; i < 67; i++)
		argv[i] = big;
	argv[67] = NULL;
	struct fake_proc *p = NULL;
	g_assert_cmpint(fake_root_start(r, argv, NULL, &p, &err), ==, 0);
	g_assert_cmpint(fake_proc_wait(r, p, 10000, &res, &err), ==, 0);
	g_assert_cmpint(res.status, ==, 0);
	g_assert_cmpstr(res.out, ==, "63 16384\n");
	fake_result_clear(&res);
	g_free(big);
	/* an orphan in a session of its own outlives its command, not the guest */
	char *out = sh(r, "setsid sleep 100 </dev/null >/dev/null 2>&1 & "
			  "until [ \"$(cut -d' ' -f6 /proc/$!/stat)\" = $! ]; do sleep 0.01; done; "
			  "echo $! > /tmp/orphan; echo started");
	g_assert_cmpstr(out, ==, "started\n");
	g_free(out);
	g_assert_cmpint(fake_root_procs(r), ==, 1);
	out = sh(r, "kill -KILL $(cat /tmp/orphan) && echo killed");
	g_assert_cmpstr(out, ==, "killed\n");
	g_free(out);
	for (int i = 0; i < 1000 && fake_root_procs(r) > 0; i++)
		g_usleep(1000);
	g_assert_cmpint(fake_root_procs(r), ==, 0);
	out = sh(r, "echo still");
	g_assert_cmpstr(out, ==, "still\n");
	g_free(out);
	destroy(r);
}

static void test_disk(void)
{
	if (skip_unless_supported())
		return;
	struct fake_root *r = boot();
	char *img = ext4_image();
	char *err = NULL, *name = NULL;
	g_assert_cmpint(fake_root_plug(r, img, "ferry-src-1", true, &name, &err), ==, 0);
	g_assert_cmpstr(fake_root_disk(r, "ferry-src-1"), ==, name);
	g_assert_cmpint(fake_root_plug(r, img, "ferry-src-1", true, NULL, &err), ==, -1);
	g_assert_nonnull(strstr(err, "already"));
	g_free(err);
	err = NULL;
	/* found by its serial in sysfs, as the libvirt guest's wait command looks for it */
	char *out = sh(r, "for b in /sys/block/*; do read -r s < $b/serial; "
			  "[ \"$s\" = ferry-src-1 ] && d=${b##*/}; done; mkdir -p /mnt/s && "
			  "mount -t ext4 -o ro /dev/$d /mnt/s && cat /mnt/s/hello && "
			  "grep -c \"^/dev/$d /mnt/s \" /proc/mounts");
	g_assert_cmpstr(out, ==, "hi there1\n");
	g_free(out);
	/* read-only: the guest cannot write it */
	struct fake_result res;
	g_assert_cmpint(fake_root_run(r, "echo x > /mnt/s/new", NULL, 0, 10000, &res, &err), ==, 0);
	g_assert_cmpint(res.status, !=, 0);
	fake_result_clear(&res);
	g_assert_cmpuint(fake_root_disks(r), ==, 1);
	/* unplugged while mounted: the disk goes, the loop device at the unmount */
	g_assert_cmpint(fake_root_unplug(r, "ferry-src-1", &err), ==, 0);
	g_assert_null(fake_root_disk(r, "ferry-src-1"));
	g_assert_cmpint(fake_root_unplug(r, "ferry-src-1", &err), ==, -1);
	g_free(err);
	err = NULL;
	out = sh(r, "umount /mnt/s && ls /dev");
	g_assert_null(strstr(out, name));
	g_free(out);
	/* a disk left plugged and mounted goes with the guest */
	g_assert_cmpint(fake_root_plug(r, img, "ferry-src-2", true, NULL, &err), ==, 0);
	out = sh(r, "mount -t ext4 -o ro /dev/vdc /mnt/s && echo ok");
	g_free(out);
	destroy(r);
	const char *argv[] = { "losetup", "-j", img, NULL };
	g_assert_cmpint(proc_run(argv, &out, &err), ==, 0);
	g_assert_cmpstr(out, ==, ""); /* no loop device of the image is left */
	g_free(out);
	g_unlink(img);
	g_free(img);
	g_free(name);
}

static void test_channel(void)
{
	if (skip_unless_supported())
		return;
	struct fake_root *r = boot();
	char *err = NULL;
	int fd = -1;
	g_assert_cmpint(fake_root_channel(r, "p", &fd, &err), ==, 0);
	struct fake_proc *p = NULL;
	g_assert_cmpint(fake_root_start_sh(r, "sha256sum < /dev/virtio-ports/p", NULL, &p, &err),
			==, 0);
	/* 1 MiB: more than the socket, the relay and the FIFO hold */
	size_t n = 1u << 20;
	guchar *buf = g_malloc(n);
	for (size_t i = 0; i < n; i++)
		buf[i] = (guchar)(i * 7 + i / 251);
	g_assert_cmpint(write_all(fd, buf, n), ==, 0);
	int q = 1;
	for (int i = 0; i < 5000 && q; i++) {
		g_assert_cmpint(ioctl(fd, SIOCOUTQ, &q), ==, 0);
		if (q)
			g_usleep(1000);
	}
	g_assert_cmpint(q, ==, 0);
	close(fd);
	struct fake_result res;
	g_assert_cmpint(fake_proc_wait(r, p, 10000, &res, &err), ==, 0);
	g_assert_cmpint(res.status, ==, 0);
	char *want = g_compute_checksum_for_data(G_CHECKSUM_SHA256, buf, n);
	g_assert_cmpint(strncmp(res.out, want, 64), ==, 0);
	fake_result_clear(&res);
	g_free(want);
	g_free(buf);
	/* a connection nobody reads is ended with the guest */
	g_assert_cmpint(fake_root_channel(r, "p", &fd, &err), ==, 0);
	g_assert_cmpint(write(fd, "x", 1), ==, 1);
	destroy(r);
	close(fd);
}

static void test_share_and_hang(void)
{
	if (skip_unless_supported())
		return;
	struct fake_root *r = boot();
	char *dir = g_build_filename(tmp_dir, "shared", NULL);
	g_assert_cmpint(g_mkdir(dir, 0755), ==, 0);
	char *f = g_build_filename(dir, "f", NULL);
	g_assert_true(g_file_set_contents(f, "shared", -1, NULL));
	char *err = NULL;
	g_assert_cmpint(fake_root_share(r, "tag", dir, &err), ==, 0);
	g_assert_cmpint(fake_root_share(r, "../x", dir, &err), ==, -1);
	g_free(err);
	err = NULL;
	/* read-only as the plan's 9p export: the guest reads, cannot write */
	char *out = sh(r, "mkdir -p /mnt/s && mount -t 9p -o trans=virtio,ro tag /mnt/s && "
			  "cat /mnt/s/f && ! touch /mnt/s/g 2>/dev/null && umount /mnt/s && "
			  "mount -t virtiofs tag /mnt/s && mv /mnt/s/f /tmp/ && umount /mnt/s && "
			  "cat /tmp/f");
	g_assert_cmpstr(out, ==, "sharedshared");
	g_free(out);
	g_assert_false(g_file_test(f, G_FILE_TEST_EXISTS)); /* moved out of the host folder */
	g_assert_cmpint(fake_root_mounts(r), ==, 0);
	struct fake_result res;
	g_assert_cmpint(fake_root_run(r, "mount -t 9p nosuch /mnt/s", NULL, 0, 10000, &res, &err),
			==, 0);
	g_assert_cmpint(res.status, ==, 32);
	fake_result_clear(&res);
	/* a hung program blocks the command, wherever it is in it */
	g_assert_cmpint(fake_root_hang(r, "tar", &err), ==, 0);
	struct fake_proc *p = NULL;
	g_assert_cmpint(fake_root_start_sh(r, "echo x | tar -x", NULL, &p, &err), ==, 0);
	g_assert_cmpint(fake_proc_wait(r, p, 50, &res, &err), ==, 1);
	g_assert_cmpint(fake_root_procs(r), ==, 0);
	out = sh(r, "echo other programs run");
	g_free(out);
	destroy(r);
	g_assert_cmpint(rm_tree(dir, NULL), ==, 0);
	g_free(f);
	g_free(dir);
}

/* A test program that aborts with a guest running (a process it left in a session of its own, a
 * disk mounted on a loop device): fake_root_abort_cleanup() ends them and removes its scratch
 * folder before the abort goes on. The program is this one, run again for this test only
 * (g_test_trap_subprocess); it says where things are in the file FERRY_TEST_ABORT_INFO names. */
static void test_abort(void)
{
	if (skip_unless_supported())
		return;
	if (g_test_subprocess()) {
		struct fake_root *r = boot();
		char *img = ext4_image(), *name = NULL, *err = NULL;
		g_assert_cmpint(fake_root_plug(r, img, "ferry-abort", false, &name, &err), ==, 0);
		char *cmd = g_strdup_printf("mkdir -p /mnt/a && mount -t ext4 /dev/%s /mnt/a && "
					    "{ setsid sleep 600 </dev/null >/dev/null 2>&1 & } && "
					    "echo $!",
					    name);
		char *pid = sh(r, cmd);
		char *info = g_strdup_printf("%s%s\n%s\n", pid, tmp_dir, img);
		g_assert_true(g_file_set_contents(getenv("FERRY_TEST_ABORT_INFO"), info, -1, NULL));
		/* what a failed assertion does (in a test subprocess glib's would _exit(1) instead)
		 */
		abort();
	}
	char *path = g_build_filename(tmp_dir, "abort-info", NULL);
	g_setenv("FERRY_TEST_ABORT_INFO", path, TRUE);
	g_test_trap_subprocess(NULL, 60 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
	g_test_trap_assert_failed();
	char *text = NULL;
	g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
	char **l = g_strsplit(text, "\n", 4);
	g_assert_cmpuint(g_strv_length(l), >=, 3);
	/* the process the guest left: killed (gone, or a zombie of the host's init) */
	char *stat = g_strdup_printf("/proc/%s/stat", l[0]), *st = NULL;
	if (g_file_get_contents(stat, &st, NULL, NULL))
		g_assert_nonnull(strstr(st, ") Z "));
	/* its scratch folder removed, the guest's root and the image with it */
	g_assert_false(g_file_test(l[1], G_FILE_TEST_EXISTS));
	/* no loop device left on the image (detached once the guest's mount went with it) */
	bool held = true;
	for (int i = 0; i < 500 && held; i++) {
		held = false;
		GDir *d = g_dir_open("/sys/block", 0, NULL);
		for (const char *n; d && !held && (n = g_dir_read_name(d));) {
			char *bf = g_strdup_printf("/sys/block/%s/loop/backing_file", n), *b = NULL;
			held = g_file_get_contents(bf, &b, NULL, NULL) && g_str_has_prefix(b, l[2]);
			g_free(b);
			g_free(bf);
		}
		if (d)
			g_dir_close(d);
		if (held)
			g_usleep(10000);
	}
	g_assert_false(held);
	g_free(st);
	g_free(stat);
	g_strfreev(l);
	g_free(text);
	g_free(path);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	tmp_dir = g_dir_make_tmp("ferry-test-fake-guest-XXXXXX", NULL);
	fake_root_abort_cleanup(tmp_dir);
	g_test_add_func("/fake-guest/commands", test_commands);
	g_test_add_func("/fake-guest/open", test_open);
	g_test_add_func("/fake-guest/timeout", test_timeout);
	g_test_add_func("/fake-guest/init", test_init);
	g_test_add_func("/fake-guest/disk", test_disk);
	g_test_add_func("/fake-guest/channel", test_channel);
	g_test_add_func("/fake-guest/share-and-hang", test_share_and_hang);
	g_test_add_func("/fake-guest/abort", test_abort);
	int rc = g_test_run();
	fake_root_abort_cleanup(NULL);
	g_assert_cmpint(rm_tree(tmp_dir, NULL), ==, 0);
	g_free(tmp_dir);
	return rc;
}
