/* SPDX-License-Identifier: MIT */
/*
 * Inside the fake machine (machine-fake.c: the script, boot, reset, destroy; fake-ops.c: the
 * guest operations over a fake_root, fake-guest.h): its machine and guest structs.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "fake-guest.h"
#include "machine-fake.h"

struct fake_machine {
	struct machine base;
	struct machine_fake *f;
	struct run *run;
	/* fake_ops, or its copy without suspend and resume under machine_fake.no_suspend, and
	 * without guest operations unless machine_fake.guests: the executor asks
	 * machine_can_suspend(), which looks for those two operations */
	struct machine_ops ops;
	char *uri;
	bool doomed;     /* opened with f->lost_uri */
	unsigned resets; /* on this machine */
	bool lost;
	struct fake_saved *saved; /* machine_fake.no_restore */
	size_t n_saved;
};

/* One VM configuration asked to restore (fake_fresh): its state's number, or why it boots. */
struct fake_saved {
	char *key;
	unsigned number; /* 0: it boots, for why */
	char *why;
};

/* A process started by the spawn operation, or a guest file open for writing or reading. */
struct fake_handle {
	int64_t id;
	struct fake_proc *proc; /* spawn */
	int in;                 /* a file being written: its descriptor */
	char *path;             /* a file */
	char *data;             /* a file being read: its bytes, read at open */
	size_t len, off;
};

struct fake_guest {
	struct machine_guest base;
	unsigned number; /* 1-based boot number */
	unsigned runs;   /* resets so far */
	bool broken;
	bool suspended;
	const struct plan_disk *disk;      /* the target disk its landing place is on */
	struct fake_guest *peer;           /* booted with it (method_boot_needs.peer), or NULL */
	struct plan_disk peer_disk;        /* a peer's own tmpfs (machine_peer_config) */
	double alloc, cpu_qemu, cpu_guest; /* what fake_sample reports */
	/* ---- machine_fake.guests: a guest over a directory ---- */
	struct fake_root *root;
	char *target_path; /* the target's raw image on the host (image disks), or NULL */
	char *target_dev;  /* "/dev/vdb" (image disks) */
	struct disk_config target;
	struct fake_handle *handles;
	size_t n_handles;
	int64_t next_handle;
};

/* The guest operations over a fake_root (fake-ops.c). */
extern const struct machine_guest_ops fake_guest_ops;

/* machine_fake.guests: boot g's root with c's devices and target, mount the landing place.
 * 0 or -1 with *err (g's root is then gone). */
int fake_real_boot(struct fake_machine *fm, struct fake_guest *g, const struct machine_config *c,
		   char **err);
/* The landing place empty (or on a fresh target, or on disk d when it is not g's), as
 * machine_reset asks. 0 or -1 with *err. */
int fake_real_reset(struct fake_machine *fm, struct fake_guest *g, const struct plan_disk *d,
		    bool fresh, char **err);
/* Log what the last run left in g ("left N ..."), then end its root and target. */
void fake_real_destroy(struct fake_machine *fm, struct fake_guest *g);
/* Log a line "left N mounts=M procs=P disks=D files=F1,F2" of what g holds beyond its start
 * state: mounts besides the landing place's, processes, disks besides the target, files in
 * /tmp and /run (its shares and the port FIFOs not counted). */
void fake_real_leftovers(struct fake_machine *fm, struct fake_guest *g);
/* Flip the first byte of the guest file or device path (relative: below the landing place;
 * "*": the first regular file there in name order; "target": the target disk's device,
 * flipped on its medium) and log it ("corrupt N PATH"). */
void fake_real_corrupt(struct fake_machine *fm, struct fake_guest *g, const char *path);
/* Run the shell command cmd in the guest as the fake's own (no hung programs) and log it
 * ("sh N", with the error when it failed). */
void fake_real_sh(struct fake_machine *fm, struct fake_guest *g, const char *cmd);
/* Why the fake guest cannot run the cell pc (NULL: it can). */
char *fake_real_supports(struct fake_machine *fm, const struct plan_cell *pc);

void fake_logf(struct machine_fake *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
