/* SPDX-License-Identifier: MIT */
/*
 * Datasets: what a run moves into the guest, and the manifest every run is verified against.
 *
 * A dataset is either generated (N files, sizes, tree shape, content, seed) or an existing
 * directory (`path:`, read in place and never modified). Generated datasets are deterministic:
 * every byte, size and name is a pure function of the spec and seed (a counter-based generator
 * keyed by (seed, file index, offset)), so generation order does not matter and the same spec
 * gives the same bytes on every host. They are cached under the cache directory by spec hash.
 *
 * The manifest lists every entry (relative path, type, size, SHA-256 or symlink target) sorted
 * by path, plus one digest over a canonical serialization (see manifest.h).
 *
 * Library code: nothing here prints. Errors come back as -1 and a message in *err (free it).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "manifest.h"

enum dataset_content {
	DATASET_CONTENT_RANDOM = 0,   /* incompressible: counter-based PRNG output */
	DATASET_CONTENT_ZEROS,        /* all zero bytes */
	DATASET_CONTENT_TEXT,         /* pseudo-English words and lines (ASCII) */
	DATASET_CONTENT_COMPRESSIBLE, /* random and zero runs mixed to hit `ratio` */
};

enum dataset_dist {
	DATASET_DIST_FIXED = 0, /* every file is size_min bytes */
	DATASET_DIST_UNIFORM,   /* uniform in [size_min, size_max] */
	DATASET_DIST_LOGNORMAL, /* lognormal with median sqrt(min*max), +-3 sigma = [min, max],
				   clamped to [min, max] */
};

/*
 * What the plan's `datasets:` entry says, in ferry's own terms. The plan parser maps its struct
 * onto this one. Zero-initialise, then set what the plan gives.
 */
struct dataset_spec {
	/* `path:` an existing directory. When set, every other field is ignored. */
	const char *path;

	uint64_t files;    /* number of regular files (>= 1) */
	uint64_t size_min; /* bytes; the size of every file when dist is FIXED */
	uint64_t size_max; /* bytes; used by UNIFORM and LOGNORMAL (>= size_min) */
	enum dataset_dist dist;

	/* Tree shape: `depth` levels of `fanout` directories each; files go round-robin into
	 * the fanout^depth leaf directories. depth 0 (or fanout 0) puts every file at the top. */
	unsigned depth;
	unsigned fanout;

	enum dataset_content content;
	/* COMPRESSIBLE only: the target compressed/original size, in (0, 1]; 0.5 compresses to
	 * about half with gzip, zstd, lz4 or xz. 0 means the default 0.5. */
	double ratio;

	uint64_t seed;
};

/* Options of dataset_generate() and dataset_get(). */
struct dataset_gen_opts {
	/* Skip syncfs() before the manifest is written. Only for benchmarks and scratch use: a
	 * crash could then leave a manifest that claims bytes the disk never got. */
	bool no_sync;
	/* Polled between writes (every 256 KiB) and while waiting for another process's
	 * generation: when it returns true, generation stops, removes what it wrote and fails
	 * with "interrupted". NULL: run_interrupted() (runner/util/run.h). */
	bool (*cancelled)(void *userdata);
	/* Called after every chunk written with the bytes written so far and the dataset's total,
	 * and once more with `syncing` before the sync to disk (which can take as long as the
	 * writing). NULL: nothing. It may be called often: the caller draws at its own pace. */
	void (*progress)(void *userdata, uint64_t done, uint64_t total, bool syncing);
	void *userdata;
};

/*
 * Check a spec for values that cannot be generated (files 0, size_max < size_min, ratio out of
 * range, a tree with more than 2^20 leaf directories, ...). Returns 0 or -1 with *err.
 */
int dataset_spec_check(const struct dataset_spec *spec, char **err);

/*
 * The canonical one-line description of a generated spec ("ferry-dataset/1 files=... seed=...");
 * it names everything that changes the bytes, including the generator version. Caller frees.
 */
char *dataset_spec_canonical(const struct dataset_spec *spec);

/* Hex SHA-256 of dataset_spec_canonical(), truncated to 16 hex digits: the cache key. */
char *dataset_spec_hash(const struct dataset_spec *spec);

/* The size in bytes of generated file `index` (0-based) of `spec`. */
uint64_t dataset_file_size(const struct dataset_spec *spec, uint64_t index);

/* The relative path of generated file `index` ("dir1/dir0/f000042"). Caller frees. */
char *dataset_file_path(const struct dataset_spec *spec, uint64_t index);

/*
 * Fill buf with bytes [offset, offset + len) of generated file `index`. Pure: any order of calls
 * gives the same bytes.
 */
void dataset_fill(const struct dataset_spec *spec, uint64_t index, uint64_t offset, void *buf,
		  size_t len);

/*
 * Generate the dataset into `dir`, which must not exist (it is created, mode 0755; files 0644).
 * Files are written in 256 KiB writes and hashed in the same pass; memory stays at a few MiB
 * whatever the dataset size. On success *out is the manifest (free with manifest_free()); on
 * failure or interruption (opts->cancelled) `dir` is removed again.
 */
int dataset_generate(const struct dataset_spec *spec, const char *dir,
		     const struct dataset_gen_opts *opts, struct manifest **out, char **err);

/*
 * Build the manifest of an existing directory without modifying it. Symlinks are recorded with
 * their target and not followed; fifos, sockets, devices and names the guest listing cannot
 * represent (newline or tab, not UTF-8) are skipped and listed in manifest->skipped with a
 * reason; an unreadable file or directory is an error naming its path.
 */
int dataset_scan(const char *dir, struct manifest **out, char **err);

/*
 * The cache directory: $FERRY_CACHE_DIR, else /var/cache/ferry as root, else
 * $XDG_CACHE_HOME/ferry, else $HOME/.cache/ferry. Caller frees.
 */
char *dataset_cache_dir(void);

/* Options and outcome of dataset_get(). */
struct dataset_get_opts {
	struct dataset_gen_opts gen;
	const char *cache_dir; /* NULL: dataset_cache_dir() */
	bool rehash;           /* check a cached dataset by re-hashing every file (slow) */
};

struct dataset_info {
	char *dir;           /* where the data is: the cache entry, or spec->path */
	char *manifest_path; /* the manifest file beside it (NULL for path datasets) */
	bool generated;      /* false when a cached copy was reused */
	char *regen_reason;  /* why a cached copy was not reused (NULL when none existed) */
	size_t rehashed;     /* files of a reused copy hashed to check them (see dataset_get()) */
	size_t evicted;      /* other datasets evicted from the cache to make room (capacity.h) */
	int *use_lock;       /* the use lock held on the cache entry until dataset_info_clear() */
};

void dataset_info_clear(struct dataset_info *info);

/*
 * Make the dataset available and return its manifest. Path datasets are scanned in place.
 * Generated datasets live in <cache>/datasets/<spec hash>/ with the manifest beside it in
 * <spec hash>.manifest.json; an intact cached copy is reused (intact: the manifest is complete
 * and for this spec, and the tree holds exactly its entries with their types and sizes, and the
 * SHA-256 of every file whose inode changed (ctime) after the manifest was written, or of every
 * file with opts->rehash: a write that keeps a file's size is caught without hashing the rest;
 * a copy found whole that way is sealed again by touching its manifest). Anything else is removed
 * and regenerated into a temporary directory that is renamed into place, the manifest written last,
 * under an flock so two ferry processes do not generate the same dataset twice. Temporary
 * directories of dead processes are removed. The entry stays locked for use (a shared flock on
 * its directory) until dataset_info_clear(), so that cache eviction never removes it; after a
 * generation the cache is brought under its limit (dataset_cache_limit(), dataset_cache_evict()).
 */
int dataset_get(const struct dataset_spec *spec, const struct dataset_get_opts *opts,
		struct dataset_info *info, struct manifest **out, char **err);

/*
 * Check that `dir` holds exactly the entries of `m` (types, sizes, symlink targets; and the
 * SHA-256 of every file when `rehash`). Returns true when intact; otherwise false and *why says
 * what differs first (caller frees).
 */
bool dataset_intact(const struct manifest *m, const char *dir, bool rehash, char **why);

/* ---- reading a dataset for a transfer (data/access.c) ---- */

/*
 * Open the dataset directory `dir` (O_DIRECTORY); when m recorded the directory it scanned
 * (root_ino), it must be that one. Returns an fd or -1 with *err.
 */
int dataset_open_root(const char *dir, const struct manifest *m, char **err);

/*
 * Open file entry e of the dataset below root (an fd from dataset_open_root()) for reading: one
 * path component at a time, never through a symbolic link, and only when it is still a regular
 * file of the manifest's size and, when the scan recorded it, the same inode. A file or directory
 * swapped for a symlink (or anything else) after the scan is refused with "dataset file 'P'
 * changed since it was scanned: ...", and nothing is read. Returns an fd or -1 with *err.
 */
int dataset_open_file(int root, const struct manifest_entry *e, char **err);

/*
 * Give every file entry of m its XXH3-128 (manifest_entry.xxh128), for guests that verify with
 * ferry-sum: each file is read once below dir (dataset_open_file(): never through a link, the
 * scanned inode only) and hashed with SHA-256 and XXH3-128 in the same pass, and a file whose
 * SHA-256 or size is not the manifest's fails, so an XXH3-128 always stands for the bytes the
 * manifest's SHA-256 names. Returns 0 or -1 with *err.
 */
int dataset_add_xxh128(const char *dir, struct manifest *m, char **err);

/* Options of dataset_copy(). */
struct dataset_copy_opts {
	/* hard-link a file instead of copying it when this says so (st: the checked source);
	 * NULL: always copy. A link shares the inode: only for readers that cannot write it. */
	bool (*may_link)(const struct stat *st, void *userdata);
	/* stop with "interrupted" when this returns true (checked per entry); may be NULL */
	bool (*cancelled)(void *userdata);
	void *userdata;
	/* write each symbolic link as QEMU's 9p security_model=mapped-xattr keeps one: a regular
	 * file 0600 holding the target, with user.virtfs.mode S_IFLNK|0777 (32 bits, little
	 * endian); for a 9p share in accessmode mapped, which cannot read a host symlink */
	bool mapped_links;
	/* chown what is created (not hard links) to uid:gid */
	bool chown;
	uid_t uid;
	gid_t gid;
};

/*
 * A private copy of the dataset in dir (every entry of m, read with dataset_open_file()) into
 * dst, which must not exist; directories 0755, files 0644. *copied (may be NULL) receives the
 * bytes copied (not linked). Returns 0 or -1 with *err; a partial dst is the caller's to remove.
 */
int dataset_copy(const char *dir, const struct manifest *m, const char *dst,
		 const struct dataset_copy_opts *o, uint64_t *copied, char **err);
/* The same into the entry `name` of the directory dst_dirfd (`shown` names it in messages):
 * nothing is reached through a symbolic link, for destinations a guest can write to. */
int dataset_copy_at(const char *dir, const struct manifest *m, int dst_dirfd, const char *name,
		    const char *shown, const struct dataset_copy_opts *o, uint64_t *copied,
		    char **err);

/*
 * Parse a size such as "4096", "64KiB", "1.5MiB", "1GiB", "10MB" (SI) or "1G" (binary) into
 * bytes. Returns 0, or -1 when the text is not a size or overflows.
 */
int dataset_parse_size(const char *s, uint64_t *out);
