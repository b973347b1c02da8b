/* SPDX-License-Identifier: MIT */
/*
 * Saved states against a real libvirtd and QEMU (TCG): a booted built-in guest is saved
 * (vm_save), and two fresh guests are restored from the one state at the same time (new names,
 * new UUIDs, both alive). Each answers its agent, holds what the saved guest wrote to its RAM,
 * has the host's time again (the state is kept for a while first, so a clock that was not set
 * would be behind by at least that), its kernel's vmgenid driver is bound to the domain's
 * generation ID, and the two guests read different random bytes from /dev/urandom after the
 * host's bytes were mixed in (two copies of one state with nothing mixed in start from one
 * generator state). Destroyed, they leave no domain; the state file goes with vm_saved_free.
 * Skips with the reason when libvirtd or the guest is missing.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "e2e-host.h"
#include "guest.h"
#include "run.h"
#include "util.h"
#include "vm.h"

#define BOOT_TIMEOUT_MS 120000
#define EXEC_TIMEOUT_MS 60000
/* how long the saved state waits before the restores: a guest clock not set from the host's
 * would be at least this far behind */
#define KEEP_S 20

static struct {
	struct e2e_host h; /* root, guest, libvirtd, run directory, run (e2e-host.h) */
} t;

static char *sh(struct vm *vm, const char *line)
{
	const char *argv[] = { "/bin/sh", "-c", line, NULL };
	char *out = NULL, *err = NULL;
	if (agent_run(vm_domain(vm), argv, EXEC_TIMEOUT_MS, &out, &err) < 0)
		g_error("guest: %s: %s", line, err);
	return out;
}

static void base_config(struct vm_config *c)
{
	vm_config_init(c);
	c->kernel = t.h.guest.kernel;
	c->initrd = t.h.guest.initramfs;
	c->cmdline = t.h.guest.cmdline;
	c->accel = VM_ACCEL_TCG;
	c->genid = true;
}

static void check_fresh(struct vm *vm)
{
	char *marker = sh(vm, "cat /ferry-saved-marker");
	g_assert_cmpstr(marker, ==, "written before the save\n");
	free(marker);
	char *date = sh(vm, "date +%s");
	long long guest = atoll(date), host = (long long)time(NULL);
	free(date);
	/* the state is KEEP_S old: a clock left as saved would be that far behind */
	if (guest < host - KEEP_S / 2 || guest > host + 2)
		g_error("restored guest's clock %lld, host %lld: not set from the host's", guest,
			host);
	/* the domain has a VM generation ID and the kernel's vmgenid driver took it */
	free(sh(vm, "test -e /sys/bus/acpi/devices/QEMUVGID:00/driver"));
}

static void test_save_restore(void)
{
	if (!e2e_host_need(&t.h))
		return;
	struct vm_config c;
	base_config(&c);
	c.nic.backend = NIC_BACKEND_NONE;
	g_assert_null(vm_restore_unsupported(&c, false));
	g_assert_nonnull(vm_restore_unsupported(&c, true));
	struct vm *vm = NULL;
	char *err = NULL;
	if (vm_boot(t.h.run, t.h.conn, &c, BOOT_TIMEOUT_MS, &vm, &err) < 0)
		g_error("%s", err);
	free(sh(vm, "echo 'written before the save' > /ferry-saved-marker"));
	char *path = run_path(t.h.run, "saved", "state.save");
	struct vm_saved *s = NULL;
	if (vm_save(vm, path, &s, &err) < 0)
		g_error("%s", err);
	vm_destroy(vm);
	g_assert_cmpuint(vm_saved_bytes(s), >, 1u << 20);
	sleep(KEEP_S);

	c.restore = s;
	struct vm *a = NULL, *b = NULL;
	if (vm_boot(t.h.run, t.h.conn, &c, BOOT_TIMEOUT_MS, &a, &err) < 0 ||
	    vm_boot(t.h.run, t.h.conn, &c, BOOT_TIMEOUT_MS, &b, &err) < 0)
		g_error("%s", err);
	g_assert_cmpstr(vm_name(a), !=, vm_name(b));
	char ua[VIR_UUID_STRING_BUFLEN], ub[VIR_UUID_STRING_BUFLEN];
	g_assert_cmpint(virDomainGetUUIDString(vm_domain(a), ua), ==, 0);
	g_assert_cmpint(virDomainGetUUIDString(vm_domain(b), ub), ==, 0);
	g_assert_cmpstr(ua, !=, ub);
	check_fresh(a);
	check_fresh(b);
	const char *rnd = "head -c 16 /dev/urandom | od -An -tx1";
	char *ra = sh(a, rnd), *rb = sh(b, rnd);
	g_assert_cmpstr(ra, !=, rb);
	free(ra);
	free(rb);
	char *na = g_strdup(vm_name(a)), *nb = g_strdup(vm_name(b));
	vm_destroy(a);
	vm_destroy(b);
	for (const char *n = na; n; n = n == na ? nb : NULL) {
		virDomainPtr d = virDomainLookupByName(t.h.conn, n);
		g_assert_null(d);
	}
	g_free(na);
	g_free(nb);
	vm_saved_free(s);
	struct stat st;
	g_assert_cmpint(stat(path, &st), !=, 0);
	free(path);
}

static void setup(void)
{
	e2e_host_open(&t.h, "restore", "qemu:///system, libvirt's save files", 0);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	setup();
	g_test_add_func("/restore-e2e/save-restore", test_save_restore);
	int r = g_test_run();
	e2e_host_close(&t.h);
	return r;
}
