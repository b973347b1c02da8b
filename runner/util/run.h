/* SPDX-License-Identifier: MIT */
/*
 * A run directory owns every resource one ferry run creates: domains, disk images, overlays,
 * console logs, temporary directories. A cleanup registry removes all of it on every exit path:
 * run_close() on the normal path, an atexit() backstop, and SIGHUP/SIGINT/SIGQUIT/SIGTERM, whose
 * handler only sets a flag and writes to a self-pipe: long waits poll run_interrupted() and
 * return, so the cleanup itself always runs from normal context. A second signal does not stop
 * the cleanup: it gives it RUN_SECOND_SIGNAL_S seconds more, after which the process exits with
 * 128 + the first signal (domains die with ferry's libvirt connection, see vm_boot); a third
 * signal, and any signal while no run is open, act as usual (terminate at once).
 *
 * Layout: $FERRY_RUN_DIR/<run id>/ (default /var/lib/ferry/runs/<run id>/), every directory 0755
 * because QEMU opens kernels and images as libvirt-qemu. The run id is
 * "<UTC yyyymmddThhmmss>-<pid>", so `ferry doctor --reap` can tell stale runs (dead pid) from
 * live ones. Domains of a run are named "ferry-<run id>-<n>".
 */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#define RUN_DIR_DEFAULT "/var/lib/ferry/runs"

struct run;

/* The base directory holding run directories: $FERRY_RUN_DIR or RUN_DIR_DEFAULT. */
const char *run_base_dir(void);

/*
 * Create a new run directory under run_base_dir() and install the signal handlers and the atexit
 * backstop (once per process). Returns NULL with *err set (caller frees) on failure.
 */
struct run *run_open(char **err);

/* The run id ("20261129T231500-4242") and the run directory's absolute path. */
const char *run_id(const struct run *r);
const char *run_dir(const struct run *r);

/*
 * Create (0755) and return a fresh path inside the run directory: run_dir/<sub>/<name>. sub may
 * be NULL (it is ferry's own, never a plan's). name is made one path component
 * (path_component: '/' encoded, no leading '.'), so a cell id or entry name never leads out of
 * the run directory. The directory is created; the file is not. Caller frees.
 */
char *run_path(struct run *r, const char *sub, const char *name);

/* The next transient domain name of this run: "ferry-<run id>-<n>". Caller frees. */
char *run_domain_name(struct run *r);

/*
 * What the run owns that cleanup destroys before the deferred callbacks, newest first (a domain,
 * registered by the libvirt driver: it may use files, taps and volumes that deferred callbacks
 * remove). destroy() returns 0, or -1 with a message in *why (the caller frees it); release()
 * then frees data, and alone frees it when the owner destroyed the thing itself.
 */
struct run_owned_ops {
	int (*destroy)(void *data, char **why);
	void (*release)(void *data);
};
/* Register data under key (a domain's name) to be destroyed at cleanup. */
void run_own(struct run *r, const char *key, const struct run_owned_ops *ops, void *data);
/* Forget what was registered under key, which its owner destroyed itself: release() only
 * (nothing when r was closed already). */
void run_disown(struct run *r, const char *key);

/* Register a callback run at cleanup, newest first (e.g. delete a network namespace). */
void run_defer(struct run *r, void (*fn)(void *data), void *data);

/*
 * Destroy every owned domain, run the deferred callbacks, remove the run directory recursively
 * and free r. Safe with NULL. Returns 0, or -1 when something could not be removed (reported in
 * *err when err is not NULL; caller frees).
 */
int run_close(struct run *r, char **err);

/* How long the cleanup may still take after a second signal. */
#define RUN_SECOND_SIGNAL_S 5

/* The first signal (SIGHUP, SIGINT, SIGQUIT or SIGTERM) received since the handlers were
 * installed, or 0. */
int run_interrupted(void);
/* Sleeps ms milliseconds; a signal that interrupts the run (run_interrupted()) ends it early. */
void run_sleep_ms(unsigned long ms);
/* A file descriptor that becomes readable when a signal arrived (for poll()). */
int run_signal_fd(void);

/*
 * The measured run's deadline (CLOCK_MONOTONIC ns; 0: none), set by the executor around a run's
 * phases from the plan's run timeout: every guest operation (machine_guest_*) and every transfer
 * loop checks it, so that a guest that answers slowly or a byte at a time cannot hold ferry past
 * the timeout (issue 24 class 8). Cleanup runs without it.
 */
void run_set_deadline(uint64_t mono_ns, uint64_t timeout_ns);
/* The timeout the deadline stands for, in ms (for messages: "the run timeout (5000 ms) passed"),
 * 0 when none is set. */
unsigned run_deadline_timeout_ms(void);
/* Whether the deadline is set and has passed. */
bool run_deadline_passed(void);
/* timeout_ms, or what is left until the deadline when that is less (at least 1 ms). */
unsigned run_deadline_clamp_ms(unsigned timeout_ms);

/*
 * Parse a ferry domain or run directory name "ferry-<run id>-<n>" into its run id (caller frees)
 * and the pid in it. Returns false when name is not of that shape. A name is no proof of
 * ownership (vm_domain_owner is).
 */
bool run_parse_domain_name(const char *name, char **run_id, long *pid);
