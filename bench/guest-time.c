/* SPDX-License-Identifier: MIT */
/*
 * Host-side timing of the hand-made ceilings of bench/methods.sh, taken the way ferry times its
 * phases: a host clock (CLOCK_MONOTONIC) around guest commands started with guest-exec and
 * waited for by polling guest-exec-status (ferry's own agent_exec(), so the polling costs the
 * same on both sides).
 *
 *   bench-guest-time URI DOMAIN exec CMD
 *       /bin/sh -c CMD in the guest; prints the seconds from guest-exec to its end
 *   bench-guest-time URI DOMAIN channel SOCKET FILE CMD
 *       connects to the virtio-serial port's host SOCKET, starts CMD in the guest (it reads the
 *       port to its end), writes FILE into the socket, closes it once QEMU took every byte
 *       (SIOCOUTQ 0, as ferry's channel does), waits for CMD; prints the seconds from the connect
 *   bench-guest-time URI DOMAIN attach XMLFILE CMD
 *       hot-plugs the device of XMLFILE (live), then runs CMD (it waits for the device and
 *       uses it); prints the seconds from the attach to CMD's end; the device stays attached
 *   bench-guest-time URI DOMAIN detach XMLFILE CMD
 *       unplugs the device, runs CMD (it waits until the guest dropped it); prints the seconds
 * A command that fails (exit code other than 0) prints its stderr and exits 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "agent.h"

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *what, const char *msg)
{
	fprintf(stderr, "bench-guest-time: %s: %s\n", what, msg);
	exit(1);
}

/* guest-exec of sh -c cmd and wait; exits on failure */
static void run(virDomainPtr dom, const char *cmd)
{
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct agent_exec_result r;
	char *err = NULL;
	if (agent_exec(dom, argv, NULL, 0, 600000, &r, &err) < 0)
		die(cmd, err);
	if (r.exit_code != 0) {
		fprintf(stderr, "bench-guest-time: '%s' exited with %d: %s\n", cmd, r.exit_code,
			r.err ? r.err : "");
		exit(1);
	}
	agent_exec_result_clear(&r);
}

static int64_t start(virDomainPtr dom, const char *cmd)
{
	json_t *args = json_pack("{s:s, s:[s,s], s:b}", "path", "/bin/sh", "arg", "-c", cmd,
				 "capture-output", 0);
	json_t *ret = NULL;
	char *err = NULL;
	if (agent_command(dom, "guest-exec", args, 30, &ret, &err) < 0)
		die(cmd, err);
	int64_t pid = json_integer_value(json_object_get(ret, "pid"));
	json_decref(ret);
	return pid;
}

/* poll guest-exec-status as agent_exec() does (2 ms, doubling to 64 ms) */
static void wait_pid(virDomainPtr dom, int64_t pid, const char *cmd)
{
	unsigned wait = 2;
	for (;;) {
		json_t *st = NULL;
		char *err = NULL;
		if (agent_command(dom, "guest-exec-status", json_pack("{s:I}", "pid", pid), 30, &st,
				  &err) < 0)
			die(cmd, err);
		if (json_is_true(json_object_get(st, "exited"))) {
			json_int_t code = json_integer_value(json_object_get(st, "exitcode"));
			json_decref(st);
			if (code != 0) {
				fprintf(stderr, "bench-guest-time: '%s' exited with %lld\n", cmd,
					(long long)code);
				exit(1);
			}
			return;
		}
		json_decref(st);
		struct timespec ts = { 0, (long)wait * 1000000L };
		nanosleep(&ts, NULL);
		if (wait < 50)
			wait *= 2;
	}
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		die(path, strerror(errno));
	char *buf = calloc(1, 65536);
	size_t n = fread(buf, 1, 65535, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: bench-guest-time URI DOMAIN exec CMD | channel SOCKET FILE "
				"CMD | attach XMLFILE CMD | detach XMLFILE CMD\n");
		return 2;
	}
	virConnectPtr conn = virConnectOpen(argv[1]);
	virDomainPtr dom = conn ? virDomainLookupByName(conn, argv[2]) : NULL;
	if (!dom)
		die(argv[2], "no such domain");
	const char *mode = argv[3];
	double t0 = 0, t1 = 0;
	if (strcmp(mode, "exec") == 0) {
		t0 = now_s();
		run(dom, argv[4]);
		t1 = now_s();
	} else if (strcmp(mode, "channel") == 0 && argc >= 7) {
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[4]);
		int fd = open(argv[5], O_RDONLY | O_CLOEXEC);
		if (s < 0 || fd < 0)
			die(argv[5], strerror(errno));
		/* the host end first: a guest reading a port whose host end is closed gets end
		   of file */
		t0 = now_s();
		if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			die(argv[4], strerror(errno));
		int64_t pid = start(dom, argv[6]);
		static char buf[1 << 20];
		ssize_t n;
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			for (ssize_t off = 0; off < n;) {
				ssize_t w = write(s, buf + off, (size_t)(n - off));
				if (w < 0)
					die("writing the port", strerror(errno));
				off += w;
			}
		/* the host end stays open until QEMU has taken every byte (a close before that
		   loses what is left: GUEST.md); then the guest's reader sees the end */
		for (int q = 1; q > 0;) {
			if (ioctl(s, SIOCOUTQ, &q) < 0)
				die("SIOCOUTQ", strerror(errno));
			struct timespec ts = { 0, 2 * 1000000L };
			if (q > 0)
				nanosleep(&ts, NULL);
		}
		close(s);
		wait_pid(dom, pid, argv[6]);
		t1 = now_s();
		close(fd);
	} else if ((strcmp(mode, "attach") == 0 || strcmp(mode, "detach") == 0) && argc >= 6) {
		char *xml = slurp(argv[4]);
		t0 = now_s();
		int rc = mode[0] == 'a'
			     ? virDomainAttachDeviceFlags(dom, xml, VIR_DOMAIN_AFFECT_LIVE)
			     : virDomainDetachDeviceFlags(dom, xml, VIR_DOMAIN_AFFECT_LIVE);
		if (rc < 0)
			die(mode, virGetLastErrorMessage());
		run(dom, argv[5]);
		t1 = now_s();
		free(xml);
	} else {
		die(mode, "unknown mode or missing arguments");
	}
	printf("%.3f\n", t1 - t0);
	virDomainFree(dom);
	virConnectClose(conn);
	return 0;
}
