/* SPDX-License-Identifier: MIT */
/*
 * Issue 24 class 7 against a real libvirtd and QEMU (TCG): a guest on QEMU user networking must
 * not reach the host's loopback. Without restrict=on, slirp maps the guest's 10.0.2.2 to the
 * host's 127.0.0.1, so a guest read whatever a local service serves there. A server of this test
 * bound to 127.0.0.1 on a free port answers every connection with a secret; the built-in guest,
 * booted by vm_boot() on user networking (pc, and q35 with its own root port), tries it with nc
 * and wget at 10.0.2.2 and at the slirp DNS address 10.0.2.3: nothing of the secret reaches the
 * guest and the server never sees a connection. The way in still works: a port forwarded into
 * the guest (the machine's hostfwd, which the ssh and network push methods use) carries bytes
 * from the host to a guest `nc -l`. Skips with the reason when libvirtd or the guest is missing.
 */
#include <arpa/inet.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"
#include "e2e-host.h"
#include "guest.h"
#include "machine-libvirt.h"
#include "machine.h"
#include "methods/netserve.h"
#include "run.h"
#include "util.h"
#include "vm.h"

#define BOOT_TIMEOUT_MS 120000
#define EXEC_TIMEOUT_MS 60000
#define GUEST_PORT      18090
#define SECRET          "ferry-class7-secret-3f9c1d"

static struct {
	struct e2e_host h; /* root, guest, libvirtd, run directory, run (e2e-host.h) */
	/* the host's loopback server */
	int lfd, port;
	pthread_t thread;
	atomic_uint accepted;
	atomic_bool stop;
} t;

static char *sh(struct vm *vm, const char *line)
{
	const char *argv[] = { "/bin/sh", "-c", line, NULL };
	char *out = NULL, *err = NULL;
	if (agent_run(vm_domain(vm), argv, EXEC_TIMEOUT_MS, &out, &err) < 0)
		g_error("guest: %s: %s", line, err);
	return out;
}

/* Answers every connection on 127.0.0.1:port with the secret, as a local web server would. */
static void *serve(void *arg)
{
	(void)arg;
	static const char reply[] =
	    "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n" SECRET "\n";
	while (!atomic_load(&t.stop)) {
		struct pollfd p = { .fd = t.lfd, .events = POLLIN };
		if (poll(&p, 1, 100) <= 0)
			continue;
		int c = accept(t.lfd, NULL, NULL);
		if (c < 0)
			continue;
		atomic_fetch_add(&t.accepted, 1);
		char buf[512];
		struct pollfd q = { .fd = c, .events = POLLIN };
		if (poll(&q, 1, 2000) > 0 && read(c, buf, sizeof(buf)) < 0) {
			/* an answer with or without the request */
		}
		if (write(c, reply, sizeof(reply) - 1) < 0) {
			/* the peer went */
		}
		close(c);
	}
	return NULL;
}

/* Every way the guest may try the host's loopback server, each step's status printed. */
static char *attack_command(void)
{
	return g_strdup_printf(
	    "i=0; until ip route get 10.0.2.2 >/dev/null 2>&1 || [ $i -ge 100 ]; do sleep 0.1; "
	    "i=$((i+1)); done; "
	    "for a in 10.0.2.2 10.0.2.3; do "
	    "(echo 'GET / HTTP/1.0'; echo) | timeout 20 nc $a %d; echo nc-$a=$?; "
	    "timeout 20 wget -q -O - http://$a:%d/; echo wget-$a=$?; done; true",
	    t.port, t.port);
}

/* The host puts bytes into the guest through a forwarded port (machine_guest_hostfwd). */
static void check_way_in(struct vm *vm)
{
	struct machine_guest *g = machine_libvirt_guest_wrap(t.h.m, vm, NULL, NULL);
	int hport = 0;
	char *err = NULL;
	int fd = loopback_socket(false, &hport, &err);
	g_assert_cmpint(fd, >=, 0);
	close(fd);
	struct machine_err e = { 0 };
	if (machine_guest_hostfwd(t.h.m, g, hport, GUEST_PORT, &e) < 0)
		g_error("hostfwd: %s", e.msg);
	/* the listener in the background, its output nowhere but the file (the agent's command
	   returns at once) */
	free(sh(vm, "(timeout 60 nc -l -p 18090 > /tmp/way-in) </dev/null >/dev/null 2>&1 &"));
	/* QEMU accepts on the host port at once and connects into the guest when data flows:
	   retry until the guest listens and the bytes arrive */
	char *got = NULL;
	for (int i = 0; i < 100; i++) {
		int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons((uint16_t)hport),
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		g_assert_cmpint(connect(c, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
		static const char msg[] = "bytes-through-the-forward\n";
		g_assert_cmpint(write(c, msg, sizeof(msg) - 1), ==, (ssize_t)sizeof(msg) - 1);
		close(c);
		g_free(got);
		got = sh(vm, "sleep 0.3; cat /tmp/way-in 2>/dev/null; true");
		if (strstr(got, "bytes-through-the-forward"))
			break;
	}
	g_test_message("through the forward 127.0.0.1:%d -> guest :%d: %s", hport, GUEST_PORT, got);
	g_assert_nonnull(strstr(got, "bytes-through-the-forward"));
	g_free(got);
	machine_err_clear(&e);
	machine_libvirt_guest_unwrap(g);
}

static void attack(enum vm_machine machine)
{
	if (!e2e_host_need(&t.h))
		return;
	struct vm_config c;
	vm_config_init(&c);
	c.kernel = t.h.guest.kernel;
	c.initrd = t.h.guest.initramfs;
	c.cmdline = t.h.guest.cmdline;
	c.accel = VM_ACCEL_TCG;
	c.machine = machine;
	c.nic.backend = NIC_BACKEND_USER;
	struct vm *vm = NULL;
	char *err = NULL;
	if (vm_boot(t.h.run, t.h.conn, &c, BOOT_TIMEOUT_MS, &vm, &err) < 0)
		g_error("boot: %s", err);
	/* the guest's network is up as before: eth0 at 10.0.2.15, the route via 10.0.2.2 */
	char *ip = sh(vm, "ip -4 addr show eth0; ip route");
	g_test_message("%s", ip);
	g_assert_nonnull(strstr(ip, "10.0.2.15/24"));
	g_assert_nonnull(strstr(ip, "default via 10.0.2.2"));
	g_free(ip);
	unsigned before = atomic_load(&t.accepted);
	char *cmd = attack_command();
	char *out = sh(vm, cmd);
	g_test_message("the guest's tries at 127.0.0.1:%d of the host: %s", t.port, out);
	if (strstr(out, SECRET) || atomic_load(&t.accepted) != before)
		g_error("the guest on user networking reached the host's 127.0.0.1:%d (%u "
			"connections): %s",
			t.port, atomic_load(&t.accepted) - before, out);
	/* and it did try: the commands ran and failed */
	g_assert_nonnull(strstr(out, "nc-10.0.2.2=1"));
	g_free(out);
	g_free(cmd);
	check_way_in(vm);
	vm_destroy(vm);
}

static void test_pc(void)
{
	attack(VM_MACHINE_PC);
}

static void test_q35(void)
{
	attack(VM_MACHINE_Q35);
}

static void setup(void)
{
	char *err = NULL;
	t.lfd = -1;
	e2e_host_open(&t.h, "net-guard", "qemu:///system", E2E_MACHINE);
	if (t.h.skip)
		return;
	t.lfd = loopback_socket(true, &t.port, &err);
	if (t.lfd < 0)
		g_error("%s", err);
	g_assert_cmpint(pthread_create(&t.thread, NULL, serve, NULL), ==, 0);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	setup();
	g_test_add_func("/net-guard-e2e/pc", test_pc);
	g_test_add_func("/net-guard-e2e/q35", test_q35);
	int r = g_test_run();
	if (t.lfd >= 0) {
		atomic_store(&t.stop, true);
		pthread_join(t.thread, NULL);
		close(t.lfd);
	}
	e2e_host_close(&t.h);
	return r;
}
