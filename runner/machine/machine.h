/* SPDX-License-Identifier: MIT */
/*
 * The machine interface: what the executor asks of the place a cell runs in. A machine boots a
 * guest for a configuration (the plan's vm entry, the target disk the data lands on, and the
 * boot-time devices the cell's method asked for), brings the landing place back to its start
 * state before every run, says whether a guest is still usable after a failure, and destroys it.
 * The executor never talks to libvirt itself; the methods get the libvirt handles of a real guest
 * through machine_bind().
 *
 * Two implementations: machine_libvirt_open() (transient libvirt/QEMU domains, the real thing)
 * and machine_fake_open() (in-process, scriptable, for the executor's unit tests).
 */
#pragma once

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "methods/method.h"
#include "plan.h"
#include "results.h"
#include "run.h"

/* The guest directory the data lands in (the target's filesystem is mounted on its parent). */
#define MACHINE_TARGET_MNT "/mnt/target"
#define MACHINE_LANDING    MACHINE_TARGET_MNT "/data"
/* The serial the guest finds the target disk by. */
#define MACHINE_TARGET_SERIAL "ferry-target"

/* What to boot: borrowed, valid while the guest lives. */
struct machine_config {
	const struct plan_vm *vm;
	const struct plan_disk *disk;          /* the target disk (tmpfs or image) to boot with */
	const struct method_boot_needs *needs; /* the method's boot-time devices */
	/* run.fresh restore: start the guest from a saved state of this configuration (made by a
	 * boot at the first need) where the machine can, else boot it (machine_guest.fresh_note
	 * says why) */
	bool restore;
};

/* A booted guest. Implementations embed it first; the executor reads the fields. */
struct machine_guest {
	char *name;      /* e.g. the domain name; caller never frees */
	double boot_ms;  /* from start to the first answer of the guest */
	double probe_ms; /* of the boot: the KVM boot probe it ran first (accel auto), or 0 */
	bool dirty;      /* the landing place holds data of an earlier run */
	bool restored;   /* started from a saved state (machine_config.restore), not booted */
	/* asked to restore but booted: why, the first time for this configuration (else NULL;
	 * the guest owns it) */
	char *fresh_note;
	/* what ran the cell, seen in the guest after boot (NULL when it could not be asked):
	 * os is /etc/os-release's PRETTY_NAME or "none", userland "busybox", "gnu" or "other" (who
	 * answers `ls`), init /proc/1/comm, sh what /bin/sh resolves to */
	char *os, *userland, *init, *sh;
};

/* The start state of a run (machine_reset). */
struct machine_reset {
	/* the run's target disk. When it is not the one the guest's landing place is on (cells of
	 * several disks share a guest: machine_disk_boot_key()), the machine unmounts (tmpfs) or
	 * unmounts and detaches (image) the current target and mounts or plugs a fresh one of this
	 * disk, the start state a boot with it would have given, whatever fresh_disk says. NULL:
	 * the guest's current disk. */
	const struct plan_disk *disk;
	bool fresh_disk;  /* re-create the target disk instead of emptying the landing directory */
	bool drop_caches; /* sync and drop the host's and the guest's page caches */
};

/* Where in a run the executor is (machine_hook): the test fault hooks act there. */
enum machine_point {
	MACHINE_BEFORE_PREPARE,
	MACHINE_BEFORE_TRANSFER,
	MACHINE_BEFORE_FINALIZE,
	MACHINE_BEFORE_VERIFY,
	MACHINE_DURING_TRANSFER, /* after the transfer phase's clock started (a test delay counts)
				  */
};

struct machine_where {
	enum machine_point point;
	const char *cell;   /* the cell id */
	unsigned run_index; /* 0-based over the cell's runs, warmups first */
	bool warmup;
	unsigned timeout_ms; /* the run's timeout */
};

/* What the executor measures of a guest around a run (machine_sample): counters and levels read
 * at one moment; NAN where the machine cannot tell (a tmpfs target has no image). */
struct machine_sample {
	double alloc_bytes; /* host bytes allocated by the target image file (st_blocks x 512) */
	double cpu_qemu_s;  /* CPU time of the QEMU process so far, user + system, all threads */
	double cpu_guest_s; /* the guest's non-idle CPU time so far (its /proc/stat, all CPUs) */
};
enum machine_sample_what {
	MACHINE_SAMPLE_ALLOC = 1, /* alloc_bytes */
	MACHINE_SAMPLE_CPU = 2,   /* cpu_qemu_s, cpu_guest_s */
};

struct machine;

struct machine_ops {
	const char *name;
	/* Boot a guest for c. Returns 0 with *out set, or -1 with *err (and maybe *detail: the
	 * libvirt message; caller frees both). */
	int (*boot)(struct machine *m, const struct machine_config *c, struct machine_guest **out,
		    char **err, char **detail);
	/* Bring the landing place to the start state r asks for, on r->disk. 0 or -1 with *err
	 * (after a failed switch of disks the guest is not healthy()). */
	int (*reset)(struct machine *m, struct machine_guest *g, const struct machine_reset *r,
		     char **err);
	/* What of target disk d a guest's boot configuration holds, as a key (caller frees), or
	 * NULL when d is part of it (a disk on a bus that cannot be hot-plugged). A disk the
	 * machine mounts or plugs only after boot (tmpfs, a hot-pluggable image) gives a key that
	 * is the same for every disk it can switch a running guest to (machine_reset's disk): ""
	 * when the boot configuration holds nothing of it, else e.g. the driver its bus loads at
	 * boot. Under run.vm shared, cells whose disks give equal keys (and that agree on the rest
	 * of the configuration) share one guest. May be NULL: every disk is part of the boot. */
	char *(*disk_boot_key)(struct machine *m, const struct plan_disk *d);
	/* Destroy the guest and free g. Safe with NULL. */
	void (*destroy)(struct machine *m, struct machine_guest *g);
	/* After a failure: whether the guest still answers (false: destroy it). */
	bool (*healthy)(struct machine *m, struct machine_guest *g);
	/* The last lines of the guest's console (caller frees), or NULL. */
	char *(*console_tail)(struct machine *m, struct machine_guest *g, unsigned lines);
	/* Provenance: versions, accelerator, guest hashes, into pv (host facts are the caller's).
	 */
	void (*describe)(struct machine *m, struct machine_guest *g, struct result_provenance *pv);
	/* Fill what a method needs of the host (g NULL: before boot) or of guest g. */
	void (*bind)(struct machine *m, struct machine_guest *g, struct method_ctx *ctx);
	/* Whether a cell's method can run on this machine at all (NULL: yes), else the skip
	 * reason (caller frees): e.g. share and network need the host's own filesystem and
	 * network, which a remote libvirt host does not share. May be NULL. */
	char *(*supports)(struct machine *m, const struct plan_cell *pc);
	/* Read what `what` (enum machine_sample_what bits) asks into *out; what cannot be read is
	 * NAN. May be NULL (nothing measurable). */
	void (*sample)(struct machine *m, struct machine_guest *g, unsigned what,
		       struct machine_sample *out);
	/* After a run: delete its data on the target and hand the freed blocks back to the host
	 * (fstrim; blkdiscard when the target is not mounted), where the target disk allows
	 * discard. Returns 1 when done, 0 when it does not apply, -1 with *err. May be NULL. */
	int (*reclaim)(struct machine *m, struct machine_guest *g, char **err);
	/* Flush and evict the host's cached pages of guest g's target disk image (the block
	 * method, between a write and its read-back, so that the read comes from the device);
	 * *resident gets the bytes of it still cached. 0, or -1 with *err. May be NULL: the
	 * machine cannot (machine_evict_target() says so). */
	int (*evict_target)(struct machine *m, struct machine_guest *g, uint64_t *resident,
			    char **err);
	/* Pause guest g: its vCPUs stop, its memory (and page cache) stays, so it takes no CPU
	 * while another guest of an interleaved unit measures (ferry(1) run.order). 0, or -1 with
	 * *err. May be NULL: the machine cannot; the executor then boots a guest per run. */
	int (*suspend)(struct machine *m, struct machine_guest *g, char **err);
	/* Resume a suspended guest and wait until it answers again. 0, or -1 with *err. */
	int (*resume)(struct machine *m, struct machine_guest *g, char **err);
	/* The physical memory of the host the guests run on, in bytes; 0 when unknown. May be
	 * NULL. */
	uint64_t (*host_memory)(struct machine *m);
	/* Called at each point of every run (test fault injection; the fake's script). */
	void (*hook)(struct machine *m, struct machine_guest *g, const struct machine_where *w);
	/* After a failure: whether the connection to the host still works (a lost libvirt
	 * connection is the host's fault, not the cell's), else false with *why (caller frees).
	 * May be NULL (always alive). */
	bool (*alive)(struct machine *m, char **why);
	void (*close)(struct machine *m);
};

/* Implementations embed it first. */
struct machine {
	const struct machine_ops *ops;
};

/* Opens a machine for a run (exec_opts.machine_open). Returns NULL with *err set. */
typedef struct machine *(*machine_open_fn)(struct run *run, const char *uri, void *data,
					   char **err);

/* Whether the libvirt host shares ferry's filesystem (ferry run --storage). */
enum machine_storage {
	MACHINE_STORAGE_AUTO,    /* decided from the URI: hoststore_uri_remote() */
	MACHINE_STORAGE_LOCAL,   /* files ferry creates are paths the host opens */
	MACHINE_STORAGE_VOLUMES, /* everything goes through ferry's storage pool on the host */
};

/* The options of machine_libvirt_open (its data; NULL: all defaults). */
struct machine_libvirt_opts {
	enum machine_storage storage;
};

/* libvirt/QEMU (machine-libvirt.c): uri NULL means qemu:///system; data: NULL or a struct
 * machine_libvirt_opts. */
struct machine *machine_libvirt_open(struct run *run, const char *uri, void *data, char **err);

/* Thin wrappers, so call sites read as verbs. */
static inline int machine_boot(struct machine *m, const struct machine_config *c,
			       struct machine_guest **out, char **err, char **detail)
{
	return m->ops->boot(m, c, out, err, detail);
}
static inline int machine_reset(struct machine *m, struct machine_guest *g,
				const struct machine_reset *r, char **err)
{
	return m->ops->reset(m, g, r, err);
}
static inline char *machine_disk_boot_key(struct machine *m, const struct plan_disk *d)
{
	return m->ops->disk_boot_key ? m->ops->disk_boot_key(m, d) : NULL;
}
/* Whether a and b are the same disk of the plan: the same entry with the same swept values. */
static inline bool machine_disk_same(const struct plan_disk *a, const struct plan_disk *b)
{
	if (a == b)
		return true;
	if (!a || !b || strcmp(a->e.name, b->e.name) != 0)
		return false;
	return a->e.sweep && b->e.sweep ? strcmp(a->e.sweep, b->e.sweep) == 0
					: !a->e.sweep && !b->e.sweep;
}
static inline void machine_destroy(struct machine *m, struct machine_guest *g)
{
	if (g)
		m->ops->destroy(m, g);
}
static inline bool machine_healthy(struct machine *m, struct machine_guest *g)
{
	return m->ops->healthy(m, g);
}
static inline char *machine_console_tail(struct machine *m, struct machine_guest *g, unsigned lines)
{
	return m->ops->console_tail ? m->ops->console_tail(m, g, lines) : NULL;
}
static inline void machine_describe(struct machine *m, struct machine_guest *g,
				    struct result_provenance *pv)
{
	m->ops->describe(m, g, pv);
}
static inline void machine_bind(struct machine *m, struct machine_guest *g, struct method_ctx *ctx)
{
	ctx->machine = m;
	ctx->guest = g;
	m->ops->bind(m, g, ctx);
}
static inline char *machine_supports(struct machine *m, const struct plan_cell *pc)
{
	return m->ops->supports ? m->ops->supports(m, pc) : NULL;
}
static inline void machine_sample(struct machine *m, struct machine_guest *g, unsigned what,
				  struct machine_sample *out)
{
	*out = (struct machine_sample){ NAN, NAN, NAN };
	if (m->ops->sample && g)
		m->ops->sample(m, g, what, out);
}
static inline int machine_reclaim(struct machine *m, struct machine_guest *g, char **err)
{
	return m->ops->reclaim && g ? m->ops->reclaim(m, g, err) : 0;
}
static inline int machine_evict_target(struct machine *m, struct machine_guest *g,
				       uint64_t *resident, char **err)
{
	if (!m || !m->ops->evict_target) {
		*err = xstrdup("this machine cannot evict the host's cache of the target disk");
		return -1;
	}
	return m->ops->evict_target(m, g, resident, err);
}
static inline bool machine_can_suspend(struct machine *m)
{
	return m->ops->suspend && m->ops->resume;
}
static inline int machine_suspend(struct machine *m, struct machine_guest *g, char **err)
{
	return m->ops->suspend(m, g, err);
}
static inline int machine_resume(struct machine *m, struct machine_guest *g, char **err)
{
	return m->ops->resume(m, g, err);
}
static inline uint64_t machine_host_memory(struct machine *m)
{
	return m->ops->host_memory ? m->ops->host_memory(m) : 0;
}
static inline void machine_hook(struct machine *m, struct machine_guest *g,
				const struct machine_where *w)
{
	if (m->ops->hook)
		m->ops->hook(m, g, w);
}
static inline bool machine_alive(struct machine *m, char **why)
{
	return m->ops->alive ? m->ops->alive(m, why) : true;
}
static inline void machine_close(struct machine *m)
{
	if (m)
		m->ops->close(m);
}
