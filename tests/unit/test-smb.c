/* SPDX-License-Identifier: MIT */
/*
 * share driver smb without a guest: the configuration ferry gives smbd (checked by Samba's own
 * testparm where it is installed), the guest's mount command, and a real smbd started the way
 * ferry starts it, in a network namespace of the test's own: it listens on its address only
 * and smb_server_kill() leaves no process of it running. For `served_by: guest`: the skip reason
 * of a guest without smbd, the names SMB cannot hold, smbclient's commands, and smbclient run
 * with them against such an smbd: every file of a tree (subdirectories, an empty file and
 * directory, a dot file) arrives with its exact size, one archive arrives whole, and a name SMB
 * refuses is skipped with exit status 0 but an NT_STATUS on its output (what ferry fails on).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fs.h"
#include "manifest.h"
#include "methods/smb.h"
#include "plan.h"
#include "proc.h"
#include "util.h"

static const char *smbd(void)
{
	return access("/usr/sbin/smbd", X_OK) == 0 ? "/usr/sbin/smbd" : NULL;
}

/* A temporary server directory with what server_start() makes in it. */
static char *server_dir(void)
{
	char *dir = g_dir_make_tmp("ferry-test-smb-XXXXXX", NULL);
	g_assert_cmpint(chmod(dir, 0755), ==, 0);
	static const char *const subs[] = { "private", "lock",    "state", "cache",
					    "pid",     "ncalrpc", "a",     "b" };
	for (size_t i = 0; i < ELEMENTSOF(subs); i++) {
		char *d = g_build_filename(dir, subs[i], NULL);
		g_assert_cmpint(mkdir(d, 0700), ==, 0);
		g_free(d);
	}
	return dir;
}

static void test_config(void)
{
	char *c = smb_config("/run/x/smb/s1", "10.0.2.3", 1);
	static const char *const want[] = {
		"\tinterfaces = 10.0.2.3\n",
		"\tbind interfaces only = yes\n",
		"\thosts allow = 10.0.2.0/24\n",
		"\tpid directory = /run/x/smb/s1/pid\n",
		"\tprivate dir = /run/x/smb/s1/private\n",
		"\tguest only = yes\n",
		"\tguest account = nobody\n",
		"\tcreate mask = 0644\n",
		"\tunix extensions = no\n",
		"\tfollow symlinks = no\n",
		"[a]\n\tpath = /run/x/smb/s1/a\n",
		"[b]\n\tpath = /run/x/smb/s1/b\n",
	};
	for (size_t i = 0; i < ELEMENTSOF(want); i++)
		if (!strstr(c, want[i]))
			g_error("smb.conf lacks '%s':\n%s", want[i], c);
	/* both shares are guest only (the guest account nobody writes), and neither forces a user:
	 * a forced user's token does not own what nobody owns in smbd's ACL check (smb.c) */
	char *b = strstr(c, "[b]");
	g_assert_nonnull(strstr(b, "guest only = yes"));
	g_assert_null(strstr(c, "force user"));
	g_assert_null(strstr(c, "/etc/samba"));
	g_assert_null(strstr(c, "/var/lib/samba"));
	free(c);
}

/* vm2vm tool smb's configuration: one share, the receiver's landing place, and no [b]. */
static void test_config_shares(void)
{
	char *c = smb_config_shares("/run/ferry-v2v-smb", "10.0.2.17", 0, "/mnt/t/land", NULL);
	g_assert_nonnull(strstr(c, "\tinterfaces = 10.0.2.17\n"));
	g_assert_nonnull(strstr(c, "\tpid directory = /run/ferry-v2v-smb/pid\n"));
	char *a = strstr(c, "[a]\n\tpath = /mnt/t/land\n");
	g_assert_nonnull(a);
	g_assert_nonnull(strstr(a, "guest only = yes"));
	g_assert_null(strstr(c, "[b]"));
	g_assert_null(strstr(c, "force user"));
	free(c);
}

/* Samba's testparm reads the configuration as smbd will: no unknown parameter, no error. */
static void test_config_testparm(void)
{
	if (access("/usr/bin/testparm", X_OK) != 0) {
		g_test_skip("testparm (Debian package samba-common-bin) is not installed");
		return;
	}
	char *dir = server_dir();
	char *c = smb_config(dir, "10.0.2.2", 0);
	char *conf = g_build_filename(dir, "smb.conf", NULL);
	g_assert_true(g_file_set_contents(conf, c, -1, NULL));
	const char *argv[] = { "testparm", "-s", "--suppress-prompt", conf, NULL };
	struct proc_opts o = { .split_stderr = true };
	struct proc_result r;
	char *err = NULL;
	g_assert_cmpint(proc_spawn(argv, &o, &r, &err), ==, 0);
	if (r.status != 0 || strstr(r.errout, "Unknown parameter") ||
	    strstr(r.errout, "Ignoring unknown") || strstr(r.errout, "ERROR"))
		g_error("testparm: status %d: %s", r.status, r.errout);
	/* what testparm read back: the settings ferry relies on survive */
	g_assert_nonnull(strstr(r.out, "bind interfaces only = Yes"));
	g_assert_nonnull(strstr(r.out, "guest only = Yes"));
	g_assert_null(strstr(r.out, "force user"));
	proc_result_clear(&r);
	rm_tree(dir, NULL);
	g_free(conf);
	free(c);
	g_free(dir);
}

static void test_mount_command(void)
{
	char *m = smb_mount_command("10.0.2.3", 'b', "/mnt/ferry-smb1");
	g_assert_cmpstr(m, ==,
			"mkdir -p /mnt/ferry-smb1 && mount -t cifs //10.0.2.3/b /mnt/ferry-smb1 -o "
			"ip=10.0.2.3,sec=none,vers=3.0");
	free(m);
}

static bool connects(const char *addr)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(445) };
	inet_pton(AF_INET, addr, &sa.sin_addr);
	bool ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

static bool own_network(void)
{
	if (unshare(CLONE_NEWNET) < 0)
		return false;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = { 0 };
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	bool ok = s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0;
	ifr.ifr_flags |= IFF_UP;
	ok = ok && ioctl(s, SIOCSIFFLAGS, &ifr) == 0;
	if (s >= 0)
		close(s);
	return ok;
}

/* smbd -D with ferry's configuration in dir, on 127.0.0.1; returns its process group once it
 * accepts a connection. */
static long start_smbd(const char *dir)
{
	char *c = smb_config(dir, "127.0.0.1", 0);
	char *conf = g_build_filename(dir, "smb.conf", NULL);
	g_assert_true(g_file_set_contents(conf, c, -1, NULL));
	const char *argv[] = { smbd(), "-D", "-s", conf, NULL };
	char *err = NULL;
	if (proc_run(argv, NULL, &err) < 0)
		g_error("smbd: %s", err);
	char *pidfile = g_build_filename(dir, "pid", "smbd.pid", NULL);
	long pgid = 0;
	for (unsigned i = 0; i < 1500 && (pgid <= 1 || !connects("127.0.0.1")); i++) {
		char *text = NULL;
		if (!pgid && g_file_get_contents(pidfile, &text, NULL, NULL))
			pgid = strtol(text, NULL, 10);
		g_free(text);
		usleep(20000);
	}
	g_assert_cmpint(pgid, >, 1);
	g_free(pidfile);
	g_free(conf);
	free(c);
	return pgid;
}

/* smbd -D with ferry's configuration: up on its address only, then gone after the kill. */
static void test_server_lifecycle(void)
{
	if (!smbd()) {
		g_test_skip("smbd (Debian package samba) is not installed");
		return;
	}
	if (geteuid() != 0 || !own_network()) {
		g_test_skip("needs root for a network namespace of its own");
		return;
	}
	char *dir = server_dir();
	long pgid = start_smbd(dir);
	g_assert_true(smb_group_running(pgid));
	g_assert_true(connects("127.0.0.1"));
	/* bind interfaces only: not on the other loopback addresses */
	g_assert_false(connects("127.0.0.2"));
	smb_server_kill(pgid);
	g_assert_false(smb_group_running(pgid));
	g_assert_false(connects("127.0.0.1"));
	smb_server_kill(0); /* a server that never started */
	rm_tree(dir, NULL);
	g_free(dir);
}

/* served_by guest: only the Debian guest carries smbd */
static void test_push_skip(void)
{
	static const struct {
		enum plan_guest guest;
		bool skipped;
	} cases[] = { { PLAN_GUEST_BUILTIN, true },
		      { PLAN_GUEST_IMAGE, true },
		      { PLAN_GUEST_DEBIAN, false } };
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct plan_vm vm = { .e.name = (char *)"v", .guest = cases[i].guest };
		char *why = smb_push_skip_reason(&vm);
		if (cases[i].skipped)
			g_assert_cmpstr(
			    why, ==,
			    "share: served_by guest needs Samba's smbd in the guest, which "
			    "only ferry's Debian guest carries (vm 'v' is not guest: "
			    "debian)");
		else
			g_assert_null(why);
		free(why);
	}
}

/* The names smbclient would skip: \ : * ? " < > | and control characters. */
static void test_push_names(void)
{
	static const struct {
		const char *path;
		bool invalid;
	} cases[] = { { "d/a b;c'$(x).txt", false },
		      { ".hidden", false },
		      { "d/x\"y", true },
		      { "a:b", true },
		      { "a*", true },
		      { "q?", true },
		      { "l<", true },
		      { "g>", true },
		      { "p|", true },
		      { "b\\s", true },
		      { "t\tab", true },
		      { "n\nl", true } };
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct manifest_entry e[2] = { { .path = (char *)"ok/file", .type = MANIFEST_FILE },
					       { .path = (char *)cases[i].path,
						 .type = MANIFEST_FILE } };
		struct manifest m = { .entries = e, .n = 2 };
		const char *bad = smb_name_invalid(&m);
		if (cases[i].invalid)
			g_assert_cmpstr(bad, ==, cases[i].path);
		else
			g_assert_null(bad);
	}
	g_assert_null(smb_name_invalid(NULL));
}

/* smbclient's commands: every name in them is ferry's own. */
static void test_push_command(void)
{
	static const struct {
		const char *format, *compression, *want;
	} cases[] = {
		{ NULL, NULL, "prompt OFF; recurse ON; mput *" },
		{ "tar", NULL, "put data.tar data.tar" },
		{ "tar", "gzip", "put data.tar.gz data.tar.gz" },
		{ "cpio", "xz", "put data.cpio.xz data.cpio.xz" },
		{ "zip", NULL, "put data.zip data.zip" },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct plan_method m = { 0 };
		g_assert_cmpint(plan_method_init(&m, "m", "share"), ==, 0);
		char *err = NULL;
		if (cases[i].format)
			g_assert_cmpint(
			    plan_method_set(&m, "archive.format", cases[i].format, &err), ==, 0);
		if (cases[i].compression)
			g_assert_cmpint(
			    plan_method_set(&m, "archive.compression", cases[i].compression, &err),
			    ==, 0);
		char *c = smb_push_command(&m);
		g_assert_cmpstr(c, ==, cases[i].want);
		free(c);
		plan_method_clear(&m);
	}
}

static void write_text(const char *dir, const char *name, const char *text, size_t len)
{
	char *p = g_build_filename(dir, name, NULL);
	g_assert_true(g_file_set_contents(p, text, (gssize)len, NULL));
	g_free(p);
}

static off_t size_of(const char *dir, const char *name)
{
	char *p = g_build_filename(dir, name, NULL);
	struct stat st;
	off_t size = lstat(p, &st) == 0 && S_ISREG(st.st_mode) ? st.st_size : -1;
	g_free(p);
	return size;
}

/* smbclient as ferry runs it (options, commands), from cwd; its output, and its status in *rc */
static char *smbclient(const char *cwd, const char *cmd, int *rc)
{
	const char *argv[] = { "smbclient", SMB_PUSH_OPTS, "//127.0.0.1/a", "-c", cmd, NULL };
	const struct proc_opts o = { .cwd = cwd, .timeout_ms = 60000 };
	struct proc_result r;
	char *err = NULL;
	if (proc_spawn(argv, &o, &r, &err) < 0)
		g_error("smbclient: %s", err);
	*rc = r.status;
	char *out = g_strdup(r.out);
	proc_result_clear(&r);
	return out;
}

/* smbclient with ferry's commands onto a real smbd: a tree, an archive, a name SMB refuses. */
static void test_push_smbclient(void)
{
	if (!smbd() || access("/usr/bin/smbclient", X_OK) != 0) {
		g_test_skip("smbd and smbclient (Debian packages samba, smbclient) are needed");
		return;
	}
	if (geteuid() != 0 || !own_network()) {
		g_test_skip("needs root for a network namespace of its own");
		return;
	}
	char *dir = server_dir();
	char *share = g_build_filename(dir, "a", NULL);
	g_assert_cmpint(chown(share, 65534, 65534), ==, 0); /* nobody, as smbd writes */
	long pgid = start_smbd(dir);
	/* a tree: subdirectories, an empty file and directory, a dot file, a larger file */
	char *src = g_dir_make_tmp("ferry-test-smb-src-XXXXXX", NULL);
	char *sub = g_build_filename(src, "sub", "deeper", NULL);
	char *empty_dir = g_build_filename(src, "emptydir", NULL);
	g_assert_cmpint(g_mkdir_with_parents(sub, 0755), ==, 0);
	g_assert_cmpint(mkdir(empty_dir, 0755), ==, 0);
	char *big = g_malloc(300001);
	for (size_t i = 0; i < 300001; i++)
		big[i] = (char)(i * 7);
	write_text(src, "a.txt", "hello", 5);
	write_text(src, "empty", "", 0);
	write_text(src, ".hidden", "x\n", 2);
	write_text(src, "sub/deeper/big.bin", big, 300001);
	write_text(src, "sub/s p;a'ce.txt", "spaces", 6);
	struct plan_method m = { 0 };
	g_assert_cmpint(plan_method_init(&m, "m", "share"), ==, 0);
	char *cmd = smb_push_command(&m);
	int rc;
	char *out = smbclient(src, cmd, &rc);
	g_assert_cmpint(rc, ==, 0);
	g_assert_null(strstr(out, "NT_STATUS_"));
	g_assert_cmpint(size_of(share, "a.txt"), ==, 5);
	g_assert_cmpint(size_of(share, "empty"), ==, 0);
	g_assert_cmpint(size_of(share, ".hidden"), ==, 2);
	g_assert_cmpint(size_of(share, "sub/deeper/big.bin"), ==, 300001);
	g_assert_cmpint(size_of(share, "sub/s p;a'ce.txt"), ==, 6);
	char *got_empty = g_build_filename(share, "emptydir", NULL);
	g_assert_true(g_file_test(got_empty, G_FILE_TEST_IS_DIR));
	char *got_big = g_build_filename(share, "sub/deeper/big.bin", NULL);
	char *text = NULL;
	gsize len = 0;
	g_assert_true(g_file_get_contents(got_big, &text, &len, NULL));
	g_assert_true(len == 300001 && memcmp(text, big, len) == 0);
	g_free(text);
	g_free(out);
	free(cmd);
	/* one archive, whole */
	char *err = NULL;
	g_assert_cmpint(plan_method_set(&m, "archive.format", "tar", &err), ==, 0);
	write_text(src, "data.tar", big, 300001);
	cmd = smb_push_command(&m);
	out = smbclient(src, cmd, &rc);
	g_assert_cmpint(rc, ==, 0);
	g_assert_cmpint(size_of(share, "data.tar"), ==, 300001);
	g_free(out);
	free(cmd);
	/* a name SMB refuses: skipped, exit status 0, an NT_STATUS on the output */
	char *bad = g_dir_make_tmp("ferry-test-smb-bad-XXXXXX", NULL);
	write_text(bad, "q\"uote", "q", 1);
	out = smbclient(bad, "prompt OFF; recurse ON; mput *", &rc);
	g_assert_cmpint(rc, ==, 0);
	g_assert_nonnull(strstr(out, "NT_STATUS_OBJECT_NAME_INVALID"));
	smb_server_kill(pgid);
	g_assert_false(smb_group_running(pgid));
	plan_method_clear(&m);
	g_free(out);
	rm_tree(bad, NULL);
	rm_tree(src, NULL);
	rm_tree(dir, NULL);
	g_free(got_big);
	g_free(got_empty);
	g_free(big);
	g_free(empty_dir);
	g_free(sub);
	g_free(bad);
	g_free(src);
	g_free(share);
	g_free(dir);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/smb/config", test_config);
	g_test_add_func("/smb/config/testparm", test_config_testparm);
	g_test_add_func("/smb/config/shares", test_config_shares);
	g_test_add_func("/smb/mount-command", test_mount_command);
	g_test_add_func("/smb/server/lifecycle", test_server_lifecycle);
	g_test_add_func("/smb/push/skip", test_push_skip);
	g_test_add_func("/smb/push/names", test_push_names);
	g_test_add_func("/smb/push/command", test_push_command);
	g_test_add_func("/smb/push/smbclient", test_push_smbclient);
	return g_test_run();
}
