/* SPDX-License-Identifier: MIT */
/*
 * Capacity: whether this host has the disk space and memory a run needs, checked before anything
 * is generated or booted, and the dataset cache's size limit with least-recently-used eviction.
 *
 * capacity_check() is pure: it gets what each part of the run needs on which filesystem and what
 * is free there, and says yes or why not. The probes (statvfs(2), /proc/meminfo, the cache's
 * manifests) are here too; capacity_plan() (runner/exec/capacity-plan.h) works out the needs of a
 * plan's cells with them and calls capacity_check().
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dataset_spec;

/* One need: `bytes` and `inodes` (files and directories) on the filesystem `fs` (an id from
 * capacity_fs_of(); 0: memory, where inodes do not count). */
struct capacity_need {
	const char *what; /* "datasets to generate", "target disks and images", "VM memory" */
	uint64_t fs;
	uint64_t bytes;
	uint64_t inodes;
};

/* What a filesystem (or memory, id 0) has free. */
struct capacity_space {
	uint64_t fs;
	const char *where; /* a directory on it, for the message */
	uint64_t avail;    /* bytes free for an unprivileged writer (memory: MemAvailable) */
	/* inodes free for an unprivileged writer; checked only when inodes_known (a filesystem
	 * without a fixed inode table, btrfs say, reports none: capacity_fs_inodes()) */
	uint64_t inodes;
	bool inodes_known;
};

/*
 * Whether every filesystem (and memory) has room for the sum of the needs on it, in bytes and in
 * inodes (5,000 files do not fit a filesystem with 2,000 free inodes however many bytes it has:
 * it would fail mid-run with ENOSPC). Returns 0, or -1 with *err naming each that is short:
 * "not enough disk space on the filesystem of '/var/cache/ferry': needs 12GiB (datasets to
 * generate 12GiB), 3.1GiB are free", "not enough inodes on the filesystem of '/x': needs 5001
 * (...), 2000 are free". A need on a filesystem without a space entry is not checked.
 */
int capacity_check(const struct capacity_need *needs, size_t n_needs,
		   const struct capacity_space *space, size_t n_space, char **err);

/* The id of the filesystem holding path (its nearest existing ancestor), 0 when unknown. */
uint64_t capacity_fs_of(const char *path);

/* Bytes free for an unprivileged writer on the filesystem of path (its nearest existing
 * ancestor), UINT64_MAX when unknown. */
uint64_t capacity_fs_avail(const char *path);

/* Inodes free for an unprivileged writer on the filesystem of path (its nearest existing
 * ancestor) in *inodes; false when the filesystem has no fixed number (f_files 0) or is unknown.
 */
bool capacity_fs_inodes(const char *path, uint64_t *inodes);

/* MemAvailable from /proc/meminfo in bytes, UINT64_MAX when unknown. */
uint64_t capacity_mem_available(void);

/* The bytes a generated dataset takes on disk (each file rounded up to 4 KiB blocks). */
uint64_t capacity_dataset_bytes(const struct dataset_spec *spec);

/* The inodes a generated dataset takes: its files, its directories and its top directory. */
uint64_t capacity_dataset_inodes(const struct dataset_spec *spec);

/* Whether the cache holds a complete copy of spec (its manifest says so; dataset_get() checks
 * the rest when it hands it out). */
bool capacity_dataset_cached(const struct dataset_spec *spec, const char *cache_dir);

/*
 * Whether the filesystem of `dir` (or its nearest existing parent) has room to generate spec
 * (files rounded up to 4 KiB blocks, and an inode per file and directory); 0 or -1 with *err as
 * capacity_check() words it.
 */
int capacity_dataset(const struct dataset_spec *spec, const char *dir, char **err);

/* ---- the dataset cache's size limit ---- */

/* The limit: $FERRY_CACHE_MAX (a size, "0" or "none": no limit), else half the size of the
 * filesystem holding the cache. */
uint64_t dataset_cache_limit(const char *cache_dir);

struct evict_result {
	size_t removed; /* dataset entries evicted */
	uint64_t freed; /* their bytes */
	uint64_t total; /* the datasets' bytes after eviction */
	size_t in_use;  /* entries skipped because a process holds them */
};

/*
 * Remove least recently used datasets (by the time dataset_get() last handed them out) from
 * <cache_dir>/datasets until they take at most `limit` bytes. An entry held by any process (the
 * use lock dataset_get() leaves on it, or its generation lock) is never removed, so neither this
 * run's datasets nor another ferry's are. Returns 0 or -1 with *err.
 */
int dataset_cache_evict(const char *cache_dir, uint64_t limit, struct evict_result *res,
			char **err);
