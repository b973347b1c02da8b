/* SPDX-License-Identifier: MIT */
/*
 * The fake machine (machine.h): guests that exist only in this process, for the executor's unit
 * tests. It boots in no time, keeps a log of what the executor asked for, and follows a script:
 * a boot that fails, a guest that breaks after some runs, a run that hangs until its timeout.
 * Methods see no libvirt handles (ctx->vm and ctx->dom are NULL), so only methods that do not
 * touch a guest (null) run on it; the landing place is a name, never a directory.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "machine.h"

struct machine_fake {
	/* ---- the script (set before exec_plan) ---- */
	unsigned fail_boot;    /* the boot with this number (1-based) fails; 0: none */
	unsigned break_after;  /* every guest breaks after this many runs (resets); 0: never */
	unsigned fail_switch;  /* the switch of disks with this number (1-based) fails and breaks
				  the guest; 0: none */
	const char *hang_cell; /* before the transfer of run hang_run of this cell, block until */
	unsigned hang_run;     /* the run timeout has passed (or a signal) */
	unsigned stretch_ms;   /* the transfer of run i (run_index) takes (i + 1) * stretch_ms
				  longer: samples whose spread no CV target can miss by chance */
	/* samples (machine_sample), when `sample` is set: the target's allocation is alloc_fresh
	 * after a reset, alloc_fresh + alloc_per_run once a run's transfer began, alloc_trimmed
	 * after a reclaim (which applies when `discard` is set); the QEMU and guest CPU counters
	 * advance by cpu_qemu_per_run and cpu_guest_per_run during each transfer */
	/* a machine opened with the URI lost_uri (fan-out tests) loses its connection once
	 * lost_after resets happened on it: that reset fails and alive() says so from then on;
	 * lost_after 0: opening it fails (the host is unreachable) */
	const char *lost_uri;
	unsigned lost_after;
	bool sample, discard;
	double alloc_fresh, alloc_per_run, alloc_trimmed;
	double cpu_qemu_per_run, cpu_guest_per_run;
	unsigned reclaims;
	/* suspend/resume: when no_suspend is set the machine has neither (machine_can_suspend()
	 * is false); fail_suspend makes the suspend with this number (1-based) fail;
	 * host_memory is what machine_host_memory() says (0: unknown) */
	bool no_suspend;
	unsigned fail_suspend;
	unsigned sigint_resume; /* the resume with this number raises SIGINT (Ctrl-C) and fails */
	uint64_t host_memory;
	/* ---- what happened ---- */
	unsigned boots, destroys, resets, fresh_disks, drops;
	/* resets that switched a guest to another target disk (machine_reset's disk), and those
	 * the executor asked for between disks that disk_boot_key() says a guest cannot switch
	 * between (its bug). The fake's rule is libvirt's: a tmpfs or a virtio image is no part
	 * of the boot (key ""), a scsi image needs its controller ("scsi"), sata and ide are
	 * attached at boot. */
	unsigned switches, bad_switches;
	unsigned live; /* guests booted and not destroyed */
	unsigned suspends, resumes;
	unsigned running, max_running; /* live guests not suspended, now and at most */
	unsigned bad_runs; /* runs or resets on a suspended guest (the executor's bug) */
	/* One line per event: "boot N", "destroy N", "reset N", "switch N DISK" (before
	 * its reset's line), "suspend N", "resume N",
	 * "run CELLID #I" (before prepare; "(warmup)" appended for warmups). Freed by
	 * machine_fake_clear(). */
	char *log;
	size_t log_len;
};

/* machine_open_fn for exec_opts: data is a struct machine_fake (the caller's; it outlives the
 * machine). */
struct machine *machine_fake_open(struct run *run, const char *uri, void *data, char **err);
void machine_fake_clear(struct machine_fake *f);
