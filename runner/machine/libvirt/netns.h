/* SPDX-License-Identifier: MIT */
/*
 * The private network of a run (NIC backend `private`): a network namespace ferry creates for the
 * run, holding a bridge with the host's address and the host end of every guest's tap. Nothing of
 * it is visible on the host's own network: no address, route or firewall rule outside the
 * namespace; the sender's sockets are created inside it (netns_socket()).
 *
 * How a guest's tap gets there: libvirt only attaches a precreated tap that exists in its own
 * (the root) namespace (`<interface type='ethernet'>` with `<target dev='TAP' managed='no'/>`).
 * So netns_tap_create() makes the tap in the root namespace, down and without any address, libvirt
 * hands its file descriptors to QEMU when the domain starts, and netns_tap_adopt() then moves the
 * link into the namespace, enslaves it to the bridge and brings it up there. The tap keeps
 * working for QEMU: the descriptors are bound to the device, not to a namespace.
 *
 * Names and markers (what `ferry doctor --reap` proves before it removes anything):
 *   namespace  "ferry-<run id>-net" (/run/netns, as `ip netns` keeps them)
 *   bridge     NETNS_BRIDGE inside it, with the alias "ferry-run <run id> <pid>"
 *   tap        "fy<pid>n<k>" (IFNAMSIZ leaves 15 characters), with the same alias
 * Addresses (inside the namespace only): the bridge is NETNS_HOST_ADDR/24, the k-th guest
 * 10.0.2.(NETNS_GUEST_FIRST + k): the built-in guest's default route already points at
 * 10.0.2.2 (QEMU user networking's host), so the same guest works on both backends.
 *
 * Everything is removed by run_close() (a run_defer() callback: on success, failure, and after
 * SIGINT/SIGTERM), which runs after the run's domains are destroyed. The program `ip`
 * (iproute2) does the work, run through proc_run() with an argv.
 */
#pragma once

#include <stdbool.h>

#include "proc.h"
#include "run.h"

#define NETNS_BRIDGE      "ferrybr0"
#define NETNS_HOST_ADDR   "10.0.2.2"
#define NETNS_GUEST_FIRST 16
#define NETNS_ALIAS       "ferry-run"
/* host addresses on the bridge: NETNS_HOST_ADDR and the ones after it (netns_host_addr) */
#define NETNS_HOST_ADDRS 4

struct netns;

/* The private network of run, created on the first call (then registered for removal at
 * run_close). Returns NULL with *err set. */
struct netns *netns_of_run(struct run *run, char **err);
/* The private network of run when one was created, else NULL. */
struct netns *netns_find(const struct run *run);
/* "ferry-<run id>-net" */
const char *netns_name(const struct netns *ns);

/*
 * Create a tap for a guest in the root namespace: down, no address, the ferry alias; multi_queue
 * when queues > 1 (libvirt opens one descriptor per queue and refuses a mismatch). *tap receives
 * its name and *guest_addr the guest's address on the private network (caller frees both).
 */
int netns_tap_create(struct netns *ns, unsigned queues, char **tap, char **guest_addr, char **err);
/* Move tap (QEMU holds its descriptors) into the namespace, onto the bridge, up. */
int netns_tap_adopt(struct netns *ns, const char *tap, char **err);
/* Remove tap wherever it is (the domain is gone). */
void netns_tap_remove(struct netns *ns, const char *tap);

/* The host's address number index (0: NETNS_HOST_ADDR, then 10.0.2.3, ...; below
 * NETNS_HOST_ADDRS), added to the bridge at the first call: a second server listens there.
 * *addr receives it (caller frees). */
int netns_host_addr(struct netns *ns, unsigned index, char **addr, char **err);
/* Run argv (argv[0] looked up in PATH) inside the namespace (`ip netns exec`) and wait for it:
 * proc_run()'s contract. A program that puts itself into the background stays in there. */
int netns_run(const struct netns *ns, const char *const *argv, char **out, char **err);
/* proc_spawn() of argv (at most 75 arguments) inside the namespace, with its stdin, timeout and
 * split output (a client that must reach the guests: ssh) */
int netns_spawn(const struct netns *ns, const char *const *argv, const struct proc_opts *o,
		struct proc_result *r, char **err);

/* A socket (socket(2) arguments) created inside the namespace. Returns the fd or -1 with *err. */
int netns_socket(const struct netns *ns, int domain, int type, char **err);

/* What `ferry doctor` found or removed: stale ferry namespaces and taps. */
struct netns_leftovers {
	unsigned stale_ns, stale_taps; /* of ferry processes that are gone */
	unsigned live;                 /* of ferry processes still running */
	unsigned reaped_ns, reaped_taps;
};
/*
 * Find (and with reap, remove) ferry's namespaces and taps whose process is gone. Only what
 * carries ferry's alias with a dead pid counts: a namespace named like ferry's without the
 * marked bridge is left alone. Returns 0, or -1 with *err when `ip` could not list them.
 */
int netns_leftovers(bool reap, struct netns_leftovers *out, char **err);
