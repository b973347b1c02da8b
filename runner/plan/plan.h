/* SPDX-License-Identifier: MIT */
/*
 * A parsed, merged and checked test plan.
 *
 * plan_parse_file() reads a YAML plan (and every file it includes), fills these structs through
 * the key tables in keys.c (every key has a default, so a field is always meaningful), and checks
 * everything that can be checked without a host. Values are in base units: sizes in bytes,
 * durations in nanoseconds, throughputs in bytes per second, percentages as numbers (5% -> 5.0).
 *
 * Each struct has a `set` bit mask: bit i is set when key i of its table (keys.c) was written in
 * a plan file rather than defaulted (key_is_set() reads it by name). Named entries carry their
 * name and the position of the name in the plan, for messages at run time.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "diag.h"
#include "formats.h"
#include "metrics.h"
#include "matrix.h"

/* A position in a plan file; `file` points into plan->files and lives as long as the plan. */
struct plan_pos {
	const char *file;
	int line, col; /* 1-based */
};

/* The first member of every named entry (vms, disks, datasets, methods). */
struct plan_entry {
	char *name;
	struct plan_pos pos;
	uint64_t set;
	/* NULL for an entry as written. An entry resolved for a cell whose matrix sweeps some of
	 * its keys (ferry(1) MATRIX EXPANSION, Sweeps) keeps the entry's name and has the swept
	 * parameters here as in a cell id ("disk.cache=none,disk.io=native"); `pos` is then where
	 * the matrix sets the first of them. Two cells share such an entry exactly when these are
	 * equal. */
	char *sweep;
};

/* Enumerations: values are indexes into the allowed-value lists of keys.c, in that order. */
enum plan_guest { PLAN_GUEST_BUILTIN, PLAN_GUEST_IMAGE, PLAN_GUEST_DEBIAN };
enum plan_os { PLAN_OS_LINUX, PLAN_OS_WINDOWS };
enum plan_machine { PLAN_MACHINE_PC, PLAN_MACHINE_Q35 };
enum plan_firmware { PLAN_FIRMWARE_BIOS, PLAN_FIRMWARE_UEFI };
enum plan_accel { PLAN_ACCEL_AUTO, PLAN_ACCEL_KVM, PLAN_ACCEL_TCG };
enum plan_nic_model { PLAN_NIC_VIRTIO, PLAN_NIC_E1000 };
enum plan_nic_backend { PLAN_NIC_USER, PLAN_NIC_PRIVATE };

struct plan_nic {
	uint64_t set;
	enum plan_nic_model model;
	uint64_t queues;
	/* user: QEMU user networking (or network/bridge when set); private: a tap on ferry's
	 * own network namespace of the run */
	enum plan_nic_backend backend;
	char *network; /* libvirt network name, or NULL */
	char *bridge;  /* host bridge name, or NULL; neither: QEMU user networking */
};

struct plan_vm {
	struct plan_entry e;
	enum plan_guest guest;
	char *image; /* base image when guest is image (booted through an overlay) */
	/* direct kernel boot of an image guest: host paths (read by ferry, copied into the run
	   directory), and the kernel command line */
	char *kernel, *initrd, *cmdline;
	char *seed; /* user-data for a NoCloud seed (cidata ISO) of an image guest */
	enum plan_os os;
	uint64_t vcpus;
	uint64_t memory; /* bytes */
	enum plan_machine machine;
	enum plan_firmware firmware;
	enum plan_accel accel;
	struct plan_nic nic;
	uint64_t boot_timeout; /* ns, boot until the agent answers */
};

enum plan_disk_kind { PLAN_DISK_IMAGE, PLAN_DISK_TMPFS };
enum plan_disk_format { PLAN_FORMAT_RAW, PLAN_FORMAT_QCOW2 };
enum plan_allocation { PLAN_ALLOC_SPARSE, PLAN_ALLOC_FALLOC, PLAN_ALLOC_FULL };
enum plan_bus { PLAN_BUS_VIRTIO, PLAN_BUS_SCSI, PLAN_BUS_SATA, PLAN_BUS_IDE };
enum plan_cache {
	PLAN_CACHE_NONE,
	PLAN_CACHE_WRITEBACK,
	PLAN_CACHE_WRITETHROUGH,
	PLAN_CACHE_DIRECTSYNC,
	PLAN_CACHE_UNSAFE
};
enum plan_io { PLAN_IO_THREADS, PLAN_IO_NATIVE, PLAN_IO_URING };
enum plan_disk_fs { PLAN_DISK_FS_EXT4, PLAN_DISK_FS_VFAT, PLAN_DISK_FS_NTFS };

/* The guest disk the data lands on. */
struct plan_disk {
	struct plan_entry e;
	enum plan_disk_kind kind;
	enum plan_disk_format format;
	enum plan_allocation allocation;
	uint64_t size; /* bytes (for tmpfs: the size limit) */
	enum plan_bus bus;
	enum plan_cache cache;
	enum plan_io io;
	bool discard;
	enum plan_disk_fs filesystem;
};

enum plan_distribution { PLAN_DIST_UNIFORM, PLAN_DIST_LOGNORMAL };
enum plan_content {
	PLAN_CONTENT_RANDOM,
	PLAN_CONTENT_ZEROS,
	PLAN_CONTENT_TEXT,
	PLAN_CONTENT_COMPRESSIBLE
};

struct plan_size_range {
	uint64_t set;
	uint64_t min, max; /* bytes per file; a plain `size: S` sets both */
	enum plan_distribution distribution;
};

struct plan_dirs {
	uint64_t set;
	uint64_t depth;  /* 0: every file at the top */
	uint64_t fanout; /* subdirectories per directory */
};

struct plan_dataset {
	struct plan_entry e;
	uint64_t files;
	struct plan_size_range size;
	struct plan_dirs dirs;
	enum plan_content content;
	double ratio; /* target compression ratio for content: compressible */
	uint64_t seed;
	char *path; /* an existing host directory instead of generated files, or NULL */
};

enum plan_archive_format {
	PLAN_ARCHIVE_NONE,
	PLAN_ARCHIVE_TAR,
	PLAN_ARCHIVE_PAX,
	PLAN_ARCHIVE_CPIO,
	PLAN_ARCHIVE_ZIP
};
enum plan_compression {
	PLAN_COMPRESS_NONE,
	PLAN_COMPRESS_GZIP,
	PLAN_COMPRESS_ZSTD,
	PLAN_COMPRESS_LZ4,
	PLAN_COMPRESS_XZ
};

struct plan_archive {
	uint64_t set;
	enum plan_archive_format format; /* none: files one by one */
	enum plan_compression compression;
	uint64_t level; /* 0: the compressor's default */
};

/* The room a method's own options have in struct plan_method (each method's file asserts that
 * its struct fits: METHOD_OPTIONS() in runner/methods/method.h). */
#define PLAN_METHOD_OPTS_SIZE 128

/*
 * A transfer method. `type` is the method: its index in the registry of runner/methods/method.c
 * (the order of plan_method_types[]). Its own options (fio's ioengine options) are in `opts`:
 * the struct its own file declares, filled through the key table it declares there, and read
 * there (METHOD_OPTS()); nothing else knows their names.
 */
struct plan_method {
	struct plan_entry e;
	int type;
	struct plan_archive archive; /* the methods that take one (struct method_ops.archive) */
	union {
		uint64_t align_u64;
		double align_double;
		void *align_ptr;
		unsigned char bytes[PLAN_METHOD_OPTS_SIZE];
	} opts;
};

/* The method types' names, in the registry's order, NULL-terminated; and what each adds to
 * methods.NAME (its options and its docs). Both defined by runner/methods/method.c. */
extern const char *const plan_method_types[];
struct key_variants;
extern const struct key_variants plan_method_variants;

/* The name of m's type ("agent-file"). */
const char *plan_method_type_name(const struct plan_method *m);
/* Make `m` an entry named `name` (borrowed, not freed by plan_method_clear()) of method type
 * `type` with every default, as a plan would get it (tests, hand-built cells). 0, or -1 when
 * no method has that name. */
int plan_method_init(struct plan_method *m, const char *name, const char *type);
/* Set key `key` of m ("streams", "archive.format") from plan text, range-checked as in a plan.
 * 0, or -1 with a message in *err (the key does not apply to m's type, a bad value). */
int plan_method_set(struct plan_method *m, const char *key, const char *text, char **err);
/* The value of key `key` of m ("streams", "archive.format") as a plan writes it ("4KiB"), or
 * NULL when m's type has no such key. Caller frees. */
char *plan_method_get(const struct plan_method *m, const char *key);
/* Free what `m`'s options own (plan_method_init() entries). */
void plan_method_clear(struct plan_method *m);

enum plan_order { PLAN_ORDER_SEQUENTIAL, PLAN_ORDER_INTERLEAVED, PLAN_ORDER_SHUFFLED };
enum plan_caches { PLAN_CACHES_DROP, PLAN_CACHES_KEEP };
enum plan_vm_life { PLAN_VM_PER_CELL, PLAN_VM_PER_RUN, PLAN_VM_SHARED };
enum plan_disk_life { PLAN_DISK_FRESH, PLAN_DISK_REUSE };
enum plan_fresh { PLAN_FRESH_BOOT, PLAN_FRESH_RESTORE };

struct plan_repeat {
	uint64_t set;
	uint64_t min;    /* measured runs at least */
	uint64_t max;    /* and at most (only reached while until_cv is not met) */
	double until_cv; /* stop once the CV of the total is at most this percentage; 0: off */
	uint64_t budget; /* ns of measured time per cell after which to stop; 0: none */
};

/* run.boots: blocks, each booting every VM configuration once (ferry(1) BLOCKS) */
struct plan_boots {
	uint64_t set;
	uint64_t min; /* 0: no blocks */
	uint64_t max; /* >= min once resolved */
};

/* The most runs a cell takes in one boot of a block (run.runs_per_boot, and what auto picks). */
#define PLAN_RUNS_PER_BOOT_MAX 100

struct plan_run {
	uint64_t set;
	struct plan_boots boots;
	char *runs_per_boot; /* "N" or "auto"; NULL: auto. Owned by the plan's own run only: the
				block keys are top-level only, so a cell's copy borrows it */
	unsigned rpb;        /* runs_per_boot read: 0 auto, else N */
	double until;        /* target relative half-width, percent; 0: none */
	uint64_t budget;     /* ns of blocks after which none starts; 0: none */
	struct plan_repeat repeat;
	uint64_t warmup;
	enum plan_order order;
	uint64_t seed;
	enum plan_caches caches;
	enum plan_vm_life vm;
	enum plan_disk_life disk;
	enum plan_fresh fresh; /* how a fresh guest starts: boot, or restore a saved state */
	uint64_t timeout;      /* ns per run */
	uint64_t cell_timeout; /* ns per cell */
};

/* Restricts a criterion to the cells whose axes have these values (NULL: any). */
struct plan_where {
	uint64_t set;
	char *vm, *disk, *dataset, *method;
};

struct plan_criterion {
	uint64_t set;
	enum metric metric;        /* a row of the metric table (metrics.h) */
	char *min_text, *max_text; /* as written, NULL when absent */
	/* min_text/max_text converted for the metric: bytes/s (throughput, *_throughput), files/s,
	 * ns (total, phase.*, cpu_*), percent (cv), bytes (alloc_*) */
	bool has_min, has_max;
	double min, max;
	struct plan_where where;
	struct plan_pos pos;
};

enum plan_axis { PLAN_AXIS_VM, PLAN_AXIS_DISK, PLAN_AXIS_DATASET, PLAN_AXIS_METHOD, PLAN_N_AXES };

struct plan_markdown {
	uint64_t set;
	char *path;
	/* matrix keys: an axis ("method") or a sweep ("disk.cache"); plan_expand() checks that the
	 * matrix has them */
	char *rows, *cols;
	struct plan_pos rows_pos, cols_pos; /* where written (line 0: defaulted) */
	char *metric; /* a second table of this metric's medians ("total": none) */
};

/* `report:` one key per report format (reporters/formats.h), bit REPORT_x of `set` */
struct plan_report {
	uint64_t set;
	/* paths relative to the working directory, or NULL; the Markdown's is markdown.path
	 * (plan_report_path() reads either) */
	char *paths[REPORT_FORMAT_COUNT];
	struct plan_markdown markdown;
};
/* The path the plan names for format f (an enum report_format), or NULL. */
const char *plan_report_path(const struct plan_report *r, int f);

/* `regression:` how `ferry run` compares itself with its baseline (ferry(1) COMPARE). */
enum plan_regression_rule { PLAN_RULE_WELCH, PLAN_RULE_LKP };
/* The fewest blocks a confirming rerun may have: its test needs 3 boots of the cell, as a side of
 * any comparison does (regression.confirm and --confirm are 0 or at least this). */
#define PLAN_CONFIRM_MIN 3

struct plan_regression {
	uint64_t set;
	double threshold;  /* percent: the minimum relative change */
	double confidence; /* percent */
	enum plan_regression_rule rule;
	uint64_t window; /* pool the newest N comparable baselines */
	char **gate;     /* the metrics whose regression fails the run; none given: total */
	size_t n_gate;
	uint64_t confirm; /* blocks of a rerun that must confirm a suspected regression; 0: none */
	double screen;    /* percent: the confidence at which a rerun is made (compare_opts) */
	char *control;    /* AXIS=VALUE,... of the control cell (compare_opts.control), or NULL */
};

struct plan {
	uint64_t set;
	uint64_t version; /* the `ferry:` schema version: 1 */
	char *name;       /* defaults to the file name without directory and .yaml */
	char *description;
	char *connect;  /* libvirt URI */
	char **include; /* the main file's `include:` paths as written (p->files has them all) */
	size_t n_include;
	struct plan_vm *vms;
	size_t n_vms;
	struct plan_disk *disks;
	size_t n_disks;
	struct plan_dataset *datasets;
	size_t n_datasets;
	struct plan_method *methods;
	size_t n_methods;
	struct plan_run run;
	struct plan_criterion *criteria;
	size_t n_criteria;
	struct plan_report report;
	char
	    *baseline; /* results file or directory to compare with (below the working directory) */
	struct plan_regression regression;

	/* The matrix, ready for matrix_expand(); omitted axes already filled in (see ferry(1)). */
	struct matrix_def matrix;
	const char *matrix_file;    /* the file whose `matrix:` is used (positions refer to it) */
	struct plan_pos matrix_pos; /* of the `matrix:` key; the file's start when there is none */
	/* Per include entry of the matrix (n = matrix.n_include): its `run:` overrides; an entry
	 * without `run:` has set == 0. plan_cell() applies them to a cell's run settings. */
	struct plan_run *include_run;

	char **files; /* every file read, the main one first */
	size_t n_files;

	/* What is valid but probably not meant (sizes few hosts have, see plan-limits.h): the
	 * commands print these as warnings; they never make a plan fail. */
	struct diag_list warnings;
};

/*
 * What the command line allows a plan beyond what any plan may do (ferry(1) SECURITY). A plan
 * may come from a pull request: it may read only FERRY_* environment variables and write its
 * reports only below the working directory.
 */
struct plan_options {
	/* --allow-env NAME: environment variables a plan may read besides FERRY_* */
	const char *const *allow_env;
	size_t n_allow_env;
	/* --var NAME=VALUE: values for ${NAME}, which win over the environment */
	const char *const *vars;
	size_t n_vars;
	/* --allow-output DIR: directories the plan's report paths may name besides the working
	 * directory (absolute, or relative to it) */
	const char *const *allow_output;
	size_t n_allow_output;
};

/*
 * Parse, merge and check a plan file under `o` (NULL: nothing beyond what any plan may do).
 * Returns NULL (and diagnostics) on any error.
 */
struct plan *plan_load(const char *path, const struct plan_options *o, struct diag_list *diags);
/* The same from memory (see plan_parse_buffer()). */
struct plan *plan_load_buffer(const char *name, const char *buf, size_t len,
			      const struct plan_options *o, struct diag_list *diags);

/* plan_load() with no options. */
struct plan *plan_parse_file(const char *path, struct diag_list *diags);

/*
 * The same from memory; `name` is used in messages and is the base for `include:` paths (they
 * are resolved relative to name's directory).
 */
struct plan *plan_parse_buffer(const char *name, const char *buf, size_t len,
			       struct diag_list *diags);

void plan_free(struct plan *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct plan *, plan_free)

/* Look up a named entry; NULL when absent. */
const struct plan_vm *plan_find_vm(const struct plan *p, const char *name);
const struct plan_disk *plan_find_disk(const struct plan *p, const char *name);
const struct plan_dataset *plan_find_dataset(const struct plan *p, const char *name);
const struct plan_method *plan_find_method(const struct plan *p, const char *name);

/* "vm", "disk", "dataset", "method" */
const char *plan_axis_name(enum plan_axis a);

/* One cell of an expanded plan: the entries it uses and its resolved run settings. */
struct plan_cell {
	const char *id; /* matrix_cell_id(), lives as long as the matrix */
	const struct plan_vm *vm;
	const struct plan_disk *disk;
	const struct plan_dataset *dataset;
	const struct plan_method *method;
	struct plan_run run; /* plan->run with the run: overrides of the cell's include entries */
};

/*
 * Expand the plan's matrix (at most `cap` cells, 0: MATRIX_DEFAULT_CAP) and check every cell
 * for combinations that cannot work whatever the host (ide disks on q35 machines, block
 * methods on tmpfs disks, what a guest OS lacks, cells an include entry left without a
 * vm/disk/dataset/method).
 * Returns NULL with diagnostics on any error; free with matrix_free().
 */
struct matrix *plan_expand(const struct plan *p, size_t cap, struct diag_list *diags);

/* Fill `out` for cell `i` of `m` (from plan_expand() of the same plan). */
void plan_cell(const struct plan *p, const struct matrix *m, size_t i, struct plan_cell *out);

/* Apply run overrides: every key set in `over` replaces the one in `run` (nested: key by key). */
void plan_run_apply(struct plan_run *run, const struct plan_run *over);
