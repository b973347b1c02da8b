/* SPDX-License-Identifier: MIT */
/*
 * What every end-to-end test in C needs from this host before it boots a guest, written once:
 * root, the built-in guest, a reachable libvirtd (qemu:///system), a temporary directory QEMU
 * (libvirt-qemu) can traverse with a runs/ folder as FERRY_RUN_DIR, ferry's run in it (closed on
 * a failed assertion too, so the run's domains and files go before the test dies), and, when
 * asked, a libvirt machine on that run. When the host cannot run the tests, `skip` says why and
 * every test skips with it (e2e_host_need()).
 */
#pragma once

#include <libvirt/libvirt.h>
#include <stdbool.h>

#include "guest.h"
#include "machine.h"
#include "run.h"
#include "vm.h"

struct e2e_host {
	char *skip; /* why every test skips, or NULL */
	char *base; /* the test's temporary directory (0755), removed by e2e_host_close() */
	char *runs; /* base/runs: FERRY_RUN_DIR */
	struct guest_files guest;
	virConnectPtr conn;
	struct run *run;
	struct machine *m; /* with E2E_MACHINE */
};

enum {
	E2E_MACHINE = 1 << 0, /* also open a libvirt machine (machine_libvirt_open) on the run */
};

/* name: the directory's "ferry-e2e-NAME-XXXXXX"; root_why: what root is needed for (the skip
 * reason "needs root (ROOT_WHY)"). The directory is made first, also when the tests will skip,
 * so that a test can prepare host-side things (datasets) in it either way. Aborts (g_error) only
 * on what a working host never does. */
void e2e_host_open(struct e2e_host *h, const char *name, const char *root_why, unsigned flags);

/* Closes the machine, the run and the connection, removes the directory, frees. */
void e2e_host_close(struct e2e_host *h);

/* false, with g_test_skip(reason), when the host cannot run the tests */
bool e2e_host_need(const struct e2e_host *h);

/* c (initialized first) boots the built-in guest of h with TCG: what a test then changes */
void e2e_host_vm_config(const struct e2e_host *h, struct vm_config *c);
