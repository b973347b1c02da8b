/* SPDX-License-Identifier: MIT */
/* The end-to-end tests' shared host setup (e2e-host.h). */
#include <glib.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <libxml/parser.h>

#include "e2e-host.h"
#include "fs.h"
#include "vm.h"

/* the one host of this test program, for the abort handler */
static struct e2e_host *aborting;

/* A failed assertion aborts: destroy this run's domains and remove its directory, and the test's
 * own temporary directory, before dying (best effort, test only: ferry itself leaves crash
 * leftovers to `ferry doctor --reap`). */
static void on_abort(int sig)
{
	signal(SIGABRT, SIG_DFL);
	if (aborting && aborting->run) {
		run_close(aborting->run, NULL);
		aborting->run = NULL;
	}
	if (aborting && aborting->base)
		rm_tree(aborting->base, NULL);
	raise(sig);
}

static bool skip_because(struct e2e_host *h, char *why)
{
	h->skip = why;
	return false;
}

/* root, the guest, libvirtd: true when all are there, else false with h->skip */
static bool host_ready(struct e2e_host *h, const char *root_why)
{
	char *err = NULL;
	if (getuid() != 0)
		return skip_because(h, g_strdup_printf("needs root (%s)", root_why));
	if (guest_locate(NULL, &h->guest, &err) < 0) {
		h->skip = g_strdup_printf("the built-in guest is not built: %s", err);
		free(err);
		return false;
	}
	h->conn = vm_connect("qemu:///system", &err);
	if (!h->conn) {
		h->skip = g_strdup_printf("libvirtd is not reachable: %s", err);
		free(err);
		return false;
	}
	return true;
}

void e2e_host_open(struct e2e_host *h, const char *name, const char *root_why, unsigned flags)
{
	char *err = NULL;
	*h = (struct e2e_host){ 0 };
	/* QEMU runs as libvirt-qemu: the run directory's parents must be traversable */
	char *tmpl = g_strdup_printf("ferry-e2e-%s-XXXXXX", name);
	h->base = g_dir_make_tmp(tmpl, NULL);
	g_free(tmpl);
	if (!h->base)
		g_error("cannot make the test's temporary directory");
	g_chmod(h->base, 0755);
	h->runs = g_build_filename(h->base, "runs", NULL);
	g_mkdir(h->runs, 0755);
	if (!host_ready(h, root_why))
		return;
	g_setenv("FERRY_RUN_DIR", h->runs, TRUE);
	h->run = run_open(&err);
	if (!h->run)
		g_error("%s", err);
	if (flags & E2E_MACHINE) {
		h->m = machine_libvirt_open(h->run, "qemu:///system", NULL, &err);
		if (!h->m)
			g_error("%s", err);
	}
	aborting = h;
	signal(SIGABRT, on_abort);
}

void e2e_host_close(struct e2e_host *h)
{
	machine_close(h->m);
	run_close(h->run, NULL);
	if (h->conn)
		virConnectClose(h->conn);
	if (h->base)
		rm_tree(h->base, NULL);
	g_free(h->base);
	g_free(h->runs);
	g_free(h->skip);
	guest_files_clear(&h->guest);
	xmlCleanupParser();
	aborting = NULL;
	*h = (struct e2e_host){ 0 };
}

bool e2e_host_need(const struct e2e_host *h)
{
	if (h->skip) {
		g_test_skip(h->skip);
		return false;
	}
	return true;
}

void e2e_host_vm_config(const struct e2e_host *h, struct vm_config *c)
{
	vm_config_init(c);
	c->kernel = h->guest.kernel;
	c->initrd = h->guest.initramfs;
	c->cmdline = h->guest.cmdline;
	c->accel = VM_ACCEL_TCG;
}
