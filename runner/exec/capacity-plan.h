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
