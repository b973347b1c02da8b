/* SPDX-License-Identifier: MIT */
/* Whether this host has the disk space and memory a plan's run needs (capacity.h does the sums). */
#pragma once

struct plan;
struct matrix;

/*
 * The needs of expanding `m` of `p` here: generated datasets missing from the cache (on the
 * cache's filesystem), the largest cell's target disk and method copies (on the run directory's
 * filesystem, run_root), the largest VM's memory (plus what QEMU itself takes). Then
 * capacity_check() (capacity.h) against statvfs(2) and /proc/meminfo. Returns 0 or -1 with *err.
 */
int capacity_plan(const struct plan *p, const struct matrix *m, const char *cache_dir,
		  const char *run_root, char **err);

/*
 * Whether every cell's data can land in its guest, from the plan alone (ferry validate and
 * ferry run): the dataset on its target disk (a tmpfs's size, the ext4 ferry makes on an image,
 * or the raw device a method such as block writes), and what the method stages in the guest's
 * RAM (method_needs.guest_ram_bytes) beside a tmpfs target, within METHOD_GUEST_STAGE_PCT of
 * the VM's memory. `path:` datasets are checked when they are scanned. Returns 0, or -1 with
 * *err naming the first cell that does not fit, what it needs, what holds it and the key to
 * raise.
 */
int capacity_plan_guests(const struct plan *p, const struct matrix *m, char **err);
