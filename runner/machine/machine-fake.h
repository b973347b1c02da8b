/* SPDX-License-Identifier: MIT */
/*
 * The fake machine (machine.h), for the executor's and the methods' unit tests. It boots in no
 * time, keeps a log of what the executor asked for, and follows a script: a boot that fails, a
 * guest that breaks after some runs, a run that hangs until its timeout.
 *
 * By default its guests exist only in this process: the landing place is a name, never a
 * directory, and the machine has no guest operations, so only the null method runs on it. With
 * `guests` set every guest is a directory with busybox in a mount namespace of its own
 * (fake-guest.h, fake-ops.c): the guest operations really run there (commands, files, disks
 * as loop devices, ports, shares, the loopback as its network), so every method that reaches
 * the guest only through the machine interface moves real bytes on it in milliseconds. That
 * needs root and loop devices (fake_root_support(); the cells are skipped with its reason
 * otherwise), and the guest's kernel is the host's: a disk-image filesystem the host kernel
 * lacks, qcow2 images, the private network and virtiofs are skipped with a reason.
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
	/* guests over directories (above); in them, hang names a guest program (e.g. "tar") that
	 * never returns, and corrupt a guest path (relative: below the landing place; "*": the
	 * first regular file there in name order; an absolute path whose last part is "*": the
	 * first below that folder; "target": the target device, on its medium) whose first byte
	 * is flipped before every verify */
	bool guests;
	const char *hang;
	const char *corrupt;
	/* with guests: the guest's /usr/bin/dd (the host's coreutils dd, as the built-in guest
	 * carries it) replaced by busybox's dd, which moves the bytes, followed by this text on its
	 * standard error in place of a report of its own (NULL: the real dd) */
	const char *dd_report;
	/* with guests: a shell command the fake runs in the guest before every verify (as its
	 * own: no hung programs), logged as "sh N" */
	const char *before_verify_sh;
	/* with guests: a host path of ferry-sum (the build tree's), bound at /usr/bin/ferry-sum in
	 * every guest so that verify lists with XXH3-128 as in the built-in guest; NULL: guests
	 * without it, which verify with SHA-256 */
	const char *sum;
	/* with guests: a host folder where the fake keeps an empty ext4 image per target size,
	 * made by mke2fs at the first need and copied (fd_copy_sparse) for every new image target
	 * after, as libvirt's driver copies its run's empty image (a test's many runs share it);
	 * NULL: mke2fs for every target. The caller removes the folder. */
	const char *templates;
	/* saved states (machine_config.restore), as libvirt's driver keeps them: the first boot of
	 * a configuration that can be saved saves it ("save K"), and every guest of it, that one
	 * included, is restored from it ("restore N K"); a configuration with a share, extra
	 * channels or boot-time disks cannot be saved (libvirt's reasons), nor any under
	 * no_restore (its text is the reason); fail_save makes the save with this number (1-based)
	 * fail, so that configuration boots. The states go when the machine closes ("unsave K"). */
	const char *no_restore;
	unsigned fail_save;
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
	unsigned saves, restores, saved_live; /* states made, guests restored, states not removed */
	unsigned running, max_running;        /* live guests not suspended, now and at most */
	unsigned bad_runs; /* runs or resets on a suspended guest (the executor's bug) */
	/* One line per event: "boot N", "destroy N", "reset N", "switch N DISK" (before
	 * its reset's line), "suspend N", "resume N",
	 * "run CELLID #I" (before prepare; "(warmup)" appended for warmups); with guests, before
	 * every reset and destroy what the last run left in the guest beyond its start state
	 * ("left N mounts=M procs=P disks=D files=PATH,...": mounts besides the landing place's,
	 * processes, disks besides the target, files in /tmp and /run), and "corrupt N PATH".
	 * Freed by machine_fake_clear(). */
	char *log;
	size_t log_len;
};

/* machine_open_fn for exec_opts: data is a struct machine_fake (the caller's; it outlives the
 * machine). */
struct machine *machine_fake_open(struct run *run, const char *uri, void *data, char **err);
void machine_fake_clear(struct machine_fake *f);
