/* SPDX-License-Identifier: MIT */
/*
 * share driver smb without a guest: the configuration ferry gives smbd (checked by Samba's own
 * testparm where it is installed), the guest's mount command, and a real smbd started the way
 * ferry starts it, in a network namespace of the test's own: it listens on its address only
 * and smb_server_kill() leaves no process of it running.
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
#include "methods/smb.h"
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
	g_assert_true(smb_group_running(pgid));
	g_assert_true(connects("127.0.0.1"));
	/* bind interfaces only: not on the other loopback addresses */
	g_assert_false(connects("127.0.0.2"));
	smb_server_kill(pgid);
	g_assert_false(smb_group_running(pgid));
	g_assert_false(connects("127.0.0.1"));
	smb_server_kill(0); /* a server that never started */
	rm_tree(dir, NULL);
	g_free(pidfile);
	g_free(conf);
	free(c);
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
	return g_test_run();
}
