/* SPDX-License-Identifier: MIT */
/*
 * Manifests: what a dataset holds, and the check that a guest received exactly that.
 *
 * File format (JSON, written with jansson, UTF-8):
 *   {
 *     "format": "ferry-manifest", "version": 1,
 *     "spec": "ferry-dataset/1 files=...",      (generated datasets; absent for path datasets)
 *     "files": N, "bytes": B,                   (regular files and their total size)
 *     "digest": "<sha256 hex of the canonical serialization>",
 *     "entries": [ {"path": "dir0/f0001", "type": "file", "size": 4096, "sha256": "<hex>"},
 *                  {"path": "dir0", "type": "dir"},
 *                  {"path": "link", "type": "symlink", "target": "dir0/f0001"} ],
 *     "skipped": [ {"path": "fifo", "reason": "fifo: not a regular file"} ],
 *     "complete": true                          (the completion marker, written last)
 *   }
 * Entries are sorted by path, bytewise (strcmp), paths relative, '/'-separated, no "./".
 *
 * Canonical serialization (what "digest" hashes): for every entry in order, one line
 *   "file\t<size>\t<sha256 hex>\t<path>\n"
 *   "dir\t0\t-\t<path>\n"
 *   "symlink\t<target length>\t<target>\t<path>\n"
 * where path and target escape '\\' as "\\\\", newline as "\\n" and tab as "\\t". Skipped
 * entries and the spec are not part of the digest: two directories with the same content have
 * the same digest however they were made.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hash.h" /* sha256_hex(), sha256_parse() for the digests below */
#include "util.h"

enum manifest_type {
	MANIFEST_FILE = 0,
	MANIFEST_DIR,
	MANIFEST_SYMLINK,
};

struct manifest_entry {
	char *path;
	enum manifest_type type;
	uint64_t size;            /* files: bytes; symlinks: target length; dirs: 0 */
	unsigned char sha256[32]; /* files only */
	/* Files: XXH3-128 of the same bytes, for guests that verify with ferry-sum; set only by
	 * dataset_add_xxh128() (in the same read as a SHA-256 that matched), never saved. */
	unsigned char xxh128[16];
	bool has_xxh128;
	char *target; /* symlinks only */
	/* Where the scan or the generator found it on the host (0: unknown, e.g. loaded from a
	 * file): dataset_open_file() refuses a file that is not this inode any more. Not saved. */
	uint64_t dev, ino;
};

struct manifest_skip {
	char *path;
	char *reason;
};

struct manifest {
	struct manifest_entry *entries;
	size_t n, cap;
	struct manifest_skip *skipped;
	size_t n_skipped, cap_skipped;
	char *spec;               /* canonical spec of a generated dataset, or NULL */
	uint64_t files, bytes;    /* filled by manifest_finish() */
	unsigned char digest[32]; /* filled by manifest_finish() */
	bool complete;
	/* The dataset's top directory as scanned (0: unknown); see dataset_open_root(). */
	uint64_t root_dev, root_ino;
};

struct manifest *manifest_new(void);
void manifest_free(struct manifest *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct manifest *, manifest_free)

/* Append an entry (copies strings). sha256 may be NULL (dirs, symlinks). */
struct manifest_entry *manifest_add(struct manifest *m, const char *path, enum manifest_type type,
				    uint64_t size, const unsigned char *sha256, const char *target);
void manifest_add_skip(struct manifest *m, const char *path, const char *reason);

/*
 * Sort by path, then compute files, bytes and the digest, and mark complete. Returns 0, or -1
 * with *err when a path appears twice.
 */
int manifest_finish(struct manifest *m, char **err);

/* Binary search by path; NULL when absent. Needs a finished (sorted) manifest. */
const struct manifest_entry *manifest_find(const struct manifest *m, const char *path);

/* The canonical serialization that the digest covers (see above). Caller frees. */
char *manifest_canonical(const struct manifest *m, size_t *len);

/*
 * Write as JSON to `path` atomically (write_file_atomic(): exclusive temp file, fsync, rename,
 * fsync of the directory; only a regular file is replaced). Returns 0 or -1 with *err.
 */
int manifest_save(const struct manifest *m, const char *path, char **err);

/*
 * Read a manifest file. Checks format, version, sort order and that "digest" matches the
 * entries. An incomplete manifest loads with complete=false. Returns 0 or -1 with *err.
 */
int manifest_load(const char *path, struct manifest **out, char **err);

/* ---- Verification against what landed in the guest ---- */

/* The hash a guest listing was made with. */
enum verify_hash {
	VERIFY_HASH_NONE = 0, /* the listing has no file lines */
	VERIFY_HASH_SHA256,   /* "<64 hex>  ./path": sha256sum (busybox, coreutils) */
	VERIFY_HASH_XXH128,   /* "<32 hex>  ./path": ferry-sum (the built-in guest) */
};

/* "sha256", "xxh128", or NULL for VERIFY_HASH_NONE: the name results files record. */
const char *verify_hash_name(enum verify_hash h);

/* Whether every file entry of m has its XXH3-128 (dataset_add_xxh128()); true for a manifest
 * without files. */
bool manifest_has_xxh128(const struct manifest *m);

/*
 * The command the guest runs (with /bin/sh; busybox applets or coreutils) to list what landed
 * under `dir`. Its output is one line per regular file as sha256sum prints it,
 *   "<64 hex>  ./<path>\n"
 * and, when `symlinks`, one line per symbolic link,
 *   "symlink <target>\t./<path>\n"
 * The exact command is
 *   cd -- 'DIR' && find . -type f -exec sha256sum {} + && \
 *   find . -type l -exec sh -c 'for l; do printf "symlink %s\t%s\n" "$(readlink "$l")" "$l"; \
 *   done' sh {} +
 * (the second find only with `symlinks`). With `fast` (for a manifest with XXH3-128s), a guest
 * that has ferry-sum in its PATH lists with it instead, in the same command:
 *   cd -- 'DIR' && if command -v ferry-sum >/dev/null 2>&1; then ferry-sum [-l]; \
 *   else <the finds above>; fi
 * and its file lines carry 32 hex digits (XXH3-128) instead of 64. Caller frees.
 */
char *manifest_guest_command(const char *dir, bool symlinks, bool fast);

/* One listed file, as parsed from the guest's output. */
struct listing_entry {
	char *path; /* relative, without "./" */
	bool symlink;
	unsigned char sha256[32]; /* files of a SHA-256 listing */
	unsigned char xxh128[16]; /* files of an XXH3-128 listing */
	char *target;             /* symlinks */
};

struct listing {
	struct listing_entry *entries;
	size_t n, cap;
	enum verify_hash hash; /* what the file lines carry */
};

/*
 * Parse the guest command's output (also GNU sha256sum's "\\"-escaped lines and "*" binary
 * marker; paths may contain spaces): file lines with 64 hex digits (SHA-256) or 32 (XXH3-128),
 * never both in one listing. Returns 0, or -1 with *err naming the line.
 */
int listing_parse(const char *text, size_t len, struct listing *out, char **err);
void listing_clear(struct listing *l);

/* How many paths of each kind the verification result keeps by name. */
#define VERIFY_FIRST 5

struct verify_result {
	bool ok;
	enum verify_hash hash; /* the listing's: what the files were compared by */
	size_t missing, extra, different;
	/* The first (in path order) VERIFY_FIRST paths of each kind; n_* say how many are set. */
	char *first_missing[VERIFY_FIRST], *first_extra[VERIFY_FIRST],
	    *first_different[VERIFY_FIRST];
	size_t n_first_missing, n_first_extra, n_first_different;
	/* "integrity: ok (N files)" or
	 * "integrity: 1 different (dir1/f0003), 0 missing, 0 extra" */
	char *message;
};

struct verify_opts {
	/* Compare symlinks too (the guest listing then must include them). Off: symlinks in the
	 * manifest and the listing are ignored, for vehicles that cannot carry them (vfat). */
	bool symlinks;
};

/* Compare a manifest with a parsed guest listing, by the listing's hash (a manifest entry
 * without an XXH3-128 differs from every XXH3-128 line). Fills *res (clear it with
 * verify_result_clear()). Never fails. */
void manifest_verify(const struct manifest *m, const struct listing *l,
		     const struct verify_opts *opts, struct verify_result *res);
void verify_result_clear(struct verify_result *res);
