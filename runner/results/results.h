/* SPDX-License-Identifier: MIT */
/*
 * The results model: everything a run of a plan produced (cells, raw runs, statistics, errors,
 * provenance), and its JSON file (schema/ferry-results.schema.json, "ferry_results": 1).
 * The executor fills it and rewrites the file atomically after every cell; `ferry report`,
 * `ferry compare` and `--resume` read it back. Reporters are pure functions over it.
 *
 * Conventions: times are seconds (double); an undefined number is NAN and is written as JSON
 * null; strings may be NULL (written as null or left out); timestamps are milliseconds since the
 * Unix epoch, written as UTC ISO-8601 ("2026-11-29T23:11:08.123Z"), 0 meaning "not yet".
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "metrics.h"
#include "stats.h"
#include "strmap.h"
#include "util.h"

/*
 * The format version written ("ferry_results"). The reader takes every version from
 * RESULTS_VERSION_MIN on: last month's file stays readable after an upgrade. History:
 *   1  the first format;
 *   2  adds per run the boot it happened in ("boot", which VM boot: runs of one boot are not
 *      independent samples) and its method-reported metrics ("metrics"), and per file the
 *      unit and direction of every metric ("metrics": {"total": {"unit": "s", "better":
 *      "lower"}, ...}). A version 1 file reads with boot unknown (-1) and the built-in
 *      metric descriptions.
 */
#define RESULTS_VERSION     2
#define RESULTS_VERSION_MIN 1
/* Limits of the reader: a results file is untrusted input. 256 MiB holds about 80,000 cells of
 * ten runs; the document is never nested deeper than a handful of levels. */
#define RESULTS_MAX_BYTES (256 << 20)
#define RESULTS_MAX_DEPTH 32

enum result_phase {
	PHASE_PREPARE,
	PHASE_TRANSFER,
	PHASE_FINALIZE,
	PHASE_VERIFY, /* timed, never part of the total */
	PHASE_CLEANUP,
	PHASE_COUNT,
};

enum result_status {
	STATUS_PENDING, /* not run yet (or interrupted before it finished) */
	STATUS_PASSED,
	STATUS_FAILED, /* a criterion, regression or integrity check failed */
	STATUS_ERROR,  /* an infrastructure fault or timeout */
	STATUS_SKIPPED,
	STATUS_COUNT,
};

enum result_error_kind {
	ERROR_INFRA,
	ERROR_INTEGRITY,
	ERROR_CRITERION,
	ERROR_REGRESSION,
	ERROR_TIMEOUT,
	ERROR_KIND_COUNT,
};

/* Names as written in the file; the _from_name() functions return -1 for an unknown name. */
const char *result_phase_name(enum result_phase p);
int result_phase_from_name(const char *name);
const char *result_status_name(enum result_status s);
int result_status_from_name(const char *name);
const char *result_error_kind_name(enum result_error_kind k);
int result_error_kind_from_name(const char *name);

struct result_error {
	enum result_error_kind kind;
	char *message;         /* lower-case, what went wrong and what was expected */
	int run;               /* index of the run it happened in, -1 for the cell as a whole */
	int phase;             /* enum result_phase, -1 when not in a phase */
	char *libvirt_message; /* optional: virGetLastErrorMessage() at the failing call */
	char *agent_message;   /* optional: the guest agent's error or the command's stderr */
	char *serial_tail;     /* optional: the last lines of the guest serial console */
};

struct result_run {
	unsigned index; /* 0-based over all runs of the cell, warmups first */
	bool warmup;    /* warmups are kept for the record but never counted in statistics */
	double phase[PHASE_COUNT]; /* seconds; NAN for a phase that did not run */
	double total;   /* prepare + transfer + finalize (verify and cleanup never counted) */
	uint64_t bytes; /* payload bytes moved */
	uint64_t files; /* payload files moved */
	bool
	    integrity_ok; /* verified against the manifest (true when there is nothing to verify) */
	bool outlier;     /* set by results_cell_compute_stats() on measured runs */
	int64_t boot;     /* which VM boot of the file the run happened in (ids unique within one
			   * results file, from 1); -1 when unknown (a version 1 file) */
	int64_t block;    /* which block of the run (a round that boots every VM configuration
			   * once, ferry(1) run.boots), from 1; -1 when the run had no blocks */
	/* how the run's guest started: "boot" or "restore" (run.fresh: from a saved state, or
	 * booted where the configuration could not be saved), NULL when unknown (older files) */
	const char *fresh;
	/* what verify compared the landed files by: "sha256" (sha256sum in the guest) or "xxh128"
	 * (the built-in guest's ferry-sum); NULL when no listing was compared (a method with its
	 * own check, a run that failed before verify, older files) */
	const char *verify_hash;
	json_t *metrics;    /* method-reported metrics {"name": number} (owned), or NULL */
	int64_t started_ms; /* wall clock when the run began (Unix ms; 0: unknown): the order of
			     * runs across cells, e.g. under run.order interleaved */
};

/* A metric's unit and direction (results.metrics): "total", "phase.NAME", "throughput",
 * "files_per_s" are built in; a method may report more (result_run.metrics). */
struct result_metric {
	char *name;
	char *unit;         /* "s", "B/s", "files/s", ... */
	bool higher_better; /* false: lower is better (times) */
};

/* A per-run metric ferry's methods and executor report (result_run.metrics): a row of kind
 * METRIC_RUN of the metric table (metrics.h), or NULL. A run has only those that apply to its
 * method and disk. */
const struct metric_def *result_metric_def_find(const char *name);

struct result_axis {
	char *key;
	char *value;
};

/* Statistics over the measured (non-warmup) runs of a cell. */
struct result_stats {
	struct stats_summary phase[PHASE_COUNT];
	struct stats_summary total;
	double bytes_per_s; /* bytes of a run / median total; NAN without runs */
	double files_per_s; /* files of a run / median total */
	size_t outliers;    /* measured runs flagged as outliers of the total */
};

struct result_cell {
	char *id; /* stable cell id, "vm=small,disk=sparse,..." */
	struct result_axis *axes;
	size_t n_axes, axes_cap;
	json_t *params; /* resolved parameters, a JSON object passed through (owned; may be NULL) */
	enum result_status status;
	char *skip_reason; /* when skipped */
	struct result_error *errors;
	size_t n_errors, errors_cap;
	struct result_run *runs;
	size_t n_runs, runs_cap;
	/* what the method saw of the guest during the runs (method_ctx.observed), a JSON object
	 * passed through (owned; may be NULL) */
	json_t *observed;
	bool has_stats; /* stats is valid (computed or read) */
	struct result_stats stats;
	int stop_reason;   /* enum stats_stop; STATS_CONTINUE (written as null) when not stopped */
	double cpu_user_s; /* ferry's own CPU time spent on this cell */
	double cpu_sys_s;
	int64_t started_ms; /* wall-clock start and end of the cell */
	int64_t finished_ms;
	/* In a merged file (`ferry merge`): the index into results.origins of the shard that ran
	 * this cell; -1 (not written) when the cell was run by the run that wrote the file. */
	int origin;
};

struct result_dataset {
	char *name;
	char *manifest_sha256; /* digest over the dataset's manifest */
	json_t *spec;          /* the dataset's spec (seed, files, size, ...), passed through */
};

struct result_provenance {
	char *ferry_version;
	char *hostname;
	char *host_kernel; /* uname: "Linux 6.1.0-18-amd64 #1 SMP ... x86_64" */
	char *cpu_model;   /* /proc/cpuinfo "model name" */
	unsigned cpu_count;
	uint64_t memory_bytes; /* /proc/meminfo MemTotal */
	char *qemu_version;
	char *libvirt_version;
	char *accelerator; /* "kvm" or "tcg" */
	char *guest_kernel_sha256;
	char *guest_initramfs_sha256;
	struct result_dataset *datasets;
	size_t n_datasets, datasets_cap;
	int64_t started_ms;
	int64_t finished_ms;
};

/*
 * Where the cells of a merged file came from (`ferry merge`): one entry per results file merged
 * (or per shard of a merged file merged again), with the shard it ran and its provenance, so
 * that every cell knows which host, QEMU and guest measured it. A run fanned out over several
 * hosts writes one per host (with `host` set).
 */
struct result_origin {
	unsigned shard_k, shard_n; /* `--shard K/N` of that run; 0/0: it ran every cell */
	struct result_provenance provenance;
	/* a host of a fan-out (`ferry run --connect A --connect B`): its libvirt URI as given
	 * on the command line, and why it failed during the run (NULL: it did not) */
	char *host;
	char *lost;
};

/* How a run with blocks (run.boots) was designed and why it stopped ("design" in the JSON). */
struct result_design {
	unsigned blocks;        /* blocks run; 0: the run had no blocks (nothing else is set) */
	unsigned runs_per_boot; /* measured runs of each cell per boot after the pilot */
	bool automatic;         /* chosen from the pilot (runs_per_boot: auto) */
	unsigned pilot_blocks, pilot_runs; /* the pilot: blocks and runs per boot */
	/* the pilot's variance components of the log total, pooled over the cells: within a
	 * boot (T_run^2) and between boots (T_boot^2, unbiased); NAN unknown */
	double within_var, between_var;
	double boot_s, run_s; /* the pilot's cost of a boot and of a run, seconds; NAN unknown */
	int stop;         /* enum stats_stop: halfwidth-reached, max-reached, budget-exhausted */
	double until;     /* target relative half-width (fraction); 0: none */
	double halfwidth; /* the widest relative half-width at the end; NAN unknown */
};

struct results {
	int version; /* RESULTS_VERSION */
	struct result_design design;
	/* The verdicts of the report's pivot ("verdicts" in the JSON; reporters/pivot-verdicts.h
	 * makes them, from the runs): derived, so never read from a file (whoever writes one
	 * computes them anew); NULL: none (owned) */
	json_t *verdicts;
	struct {
		char *name;
		char *path;
		char *sha256; /* hex SHA-256 of the plan file's bytes */
		char *text;   /* the plan file's text */
		/* the plan's regression.control (AXIS=VALUE,...): the cell `ferry compare`
		 * judges the others against when its command line names none; NULL none */
		char *control;
	} plan;
	struct result_provenance provenance;
	struct result_metric *metrics; /* built-ins first (results_new()), then method metrics */
	size_t n_metrics, metrics_cap;
	struct result_cell *cells;
	size_t n_cells, cells_cap;
	/* results_find_cell()'s index: cell id -> index (the first cell of an id), borrowing the
	 * ids; valid while cells and n_cells are what it was built over (results_add_cell() keeps
	 * it so; code that moves cells in directly, like merge, gets it rebuilt on the next
	 * look-up) */
	struct strmap ids;
	const struct result_cell *ids_cells;
	size_t ids_n;
	/* `ferry run --shard K/N` ran this slice of the plan's cells; 0/0: every cell (also a
	 * merged file, whose origins name the shards). Written only when set. */
	unsigned shard_k, shard_n;
	/* A merged file: where its cells came from (cell.origin indexes this); none otherwise. */
	struct result_origin *origins;
	size_t n_origins, origins_cap;
};

/* A new, empty results model (version set, the built-in metrics described). Free with
 * results_free(). */
struct results *results_new(void);
void results_free(struct results *r);
/* frees n results files and the array holding them (ferry merge and trend read several) */
void results_free_array(struct results **rs, size_t n);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct results *, results_free)

/* Set the plan: name, path, its bytes (len bytes; hashed with SHA-256 and kept as text). */
void results_set_plan(struct results *r, const char *name, const char *path, const char *bytes,
		      size_t len);

/* Append a cell with the given id (copied), status pending; returns it (valid until the next
 * results_add_cell()). */
struct result_cell *results_add_cell(struct results *r, const char *id);
/* The cell with this id (the first added with it), or NULL; a hash lookup, not a scan. */
struct result_cell *results_find_cell(const struct results *r, const char *id);
/* Forget what a cell measured, to run it again (`--rerun-failed`): runs, errors, statistics,
 * skip and stop reasons, CPU and wall times go; id, axes and params stay; status is pending. */
void result_cell_reset(struct result_cell *c);
/* Append an axis (key and value copied). */
void result_cell_add_axis(struct result_cell *c, const char *key, const char *value);
/* Append a run (index = its position); its phases and total start as NAN. Returns it (valid
 * until the next add). */
struct result_run *result_cell_add_run(struct result_cell *c, bool warmup);
/* Append an error with a printf-style message; the optional strings are set by the caller on
 * the returned error (valid until the next add). */
struct result_error *result_cell_add_error(struct result_cell *c, enum result_error_kind kind,
					   const char *fmt, ...) _printf_(3, 4);
/* Append a dataset to the provenance (strings copied, spec reference taken over). */
void results_add_dataset(struct results *r, const char *name, const char *manifest_sha256,
			 json_t *spec);

/* Append a dataset to a provenance (strings copied, spec reference taken over). */
void result_provenance_add_dataset(struct result_provenance *p, const char *name,
				   const char *manifest_sha256, json_t *spec);
/* Free what a provenance holds and zero it. */
void result_provenance_clear(struct result_provenance *p);
/* Deep copy of a provenance into *dst (which is overwritten, not freed). */
void result_provenance_copy(struct result_provenance *dst, const struct result_provenance *src);
/* Append the datasets of from that to does not name yet (merged files, fanned-out runs). */
void result_provenance_add_datasets(struct result_provenance *to,
				    const struct result_provenance *from);
/* Append an origin (the provenance is deep-copied); returns its index. */
size_t results_add_origin(struct results *r, unsigned shard_k, unsigned shard_n,
			  const struct result_provenance *p);
/* Describe a metric (name and unit copied); replaces the description of a metric of that name.
 * Returns it (valid until the next call). */
struct result_metric *results_set_metric(struct results *r, const char *name, const char *unit,
					 bool higher_better);
/* The description of a metric, or NULL. */
const struct result_metric *results_find_metric(const struct results *r, const char *name);
/* The highest boot id of any run in r (0 when none is known). */
int64_t results_max_boot(const struct results *r);

/* total = prepare + transfer + finalize (a NAN phase counts as 0). */
double result_run_total(const struct result_run *run);

/*
 * Compute the statistics of a cell from its measured runs: per-phase and total summaries,
 * throughput, and the outlier flag of each measured run (by the total). Sets has_stats.
 * Measured runs are those that are not warmups, whose integrity_ok is true and whose total is
 * finite; a phase summary counts the measured runs where that phase has a finite time.
 */
void results_cell_compute_stats(struct result_cell *c);

/*
 * A run's value of any metric: "total", "phase.NAME", "throughput" (bytes / total),
 * "files_per_s" (files / total) or a reported one (result_run.metrics). Returns NAN when the run
 * has no finite value for it.
 */
double result_run_metric(const struct result_run *run, const char *name);

/*
 * The summary of a metric (result_run_metric()) over a cell's measured runs (as
 * results_cell_compute_stats() counts them) that have a finite value for it; out->n is 0 when none
 * has. The built-in total and phases are also in c->stats; this works for any metric.
 */
void result_cell_metric_summary(const struct result_cell *c, const char *name,
				struct stats_summary *out);

/* The distinct names of the metrics the cell's runs reported (result_run.metrics), in the order
 * first seen; returns how many. The array is the caller's (free()), the names the cell's. */
size_t result_cell_metric_names(const struct result_cell *c, const char ***out);

/* Whether any run of the cell reported the metric (result_run.metrics). */
bool result_cell_has_metric(const struct result_cell *c, const char *name);

/*
 * Compare a baseline cell with a candidate cell on one metric: the total (metric -1) or one
 * phase (an enum result_phase), over their measured runs (as results_cell_compute_stats() counts
 * them; runs without a finite time for the phase are left out). Welch's t-test and the relative
 * change of the mean with its confidence interval at `level`, e.g. 0.95; see stats_welch().
 * Returns -1 when either side has fewer than 2 values (or metric is out of range).
 */
int results_compare_cells(const struct result_cell *base, const struct result_cell *cand,
			  int metric, double level, struct stats_compare *out);

/*
 * Whether a cell found in an earlier results file is finished for `--resume`: passed and skipped
 * cells are; failed and error cells are unless rerun_failed (`--rerun-failed` reruns them);
 * pending cells (interrupted or never started) never are.
 */
bool result_cell_finished(const struct result_cell *c, bool rerun_failed);

/* Count cells per status into counts[STATUS_COUNT]. */
void results_count_status(const struct results *r, size_t counts[STATUS_COUNT]);

/* ferry's own CPU time so far (getrusage RUSAGE_SELF), user and system seconds; a cell records
 * the difference between its start and end. */
void results_cpu_now(double *user_s, double *sys_s);

/*
 * Fill the host part of the provenance: hostname, kernel (uname), CPU model and count,
 * memory, ferry version. Replaces what was there. Returns 0, or -1 with *err set (free it) when a
 * source could not be read; the fields that could be read are filled anyway.
 */
int results_gather_host(struct result_provenance *p, char **err);
/* A dataset of the provenance as one line: "NAME SPEC-JSON, manifest sha256 HEX" (the parts it
 * has), as the reports print it. Caller frees. */
char *result_dataset_text(const struct result_dataset *d);

/* Wall-clock now in milliseconds since the epoch (CLOCK_REALTIME). */
int64_t results_now_ms(void);
/* Format ms since the epoch as UTC ISO-8601 with milliseconds, e.g. "2026-11-29T23:11:08.123Z"
 * into buf (at least 32 bytes); returns buf. */
char *results_format_time(int64_t ms, char *buf, size_t size);
/* Parse what results_format_time() writes (also accepts no fraction); returns 0 or -1. */
int results_parse_time(const char *s, int64_t *ms);

/* The model as a JSON object (new reference). */
json_t *results_to_json(const struct results *r);
/* The model from a JSON object; returns NULL with *err set ("where: what") on a bad document. */
struct results *results_from_json(const json_t *root, char **err);
/* The same, dropping each cell's JSON from root as it is read (json-load.c: a large file is not
 * held twice in memory); root is the caller's still. */
struct results *results_from_json_consume(json_t *root, char **err);

/*
 * The results document as text (the file's bytes: JSON indented by 2, doubles with 17
 * significant digits, a final newline), streamed cell by cell to out. The one producer of the
 * results JSON: results_write() and the JSON reporter both use it. Returns 0, or -1 with *err.
 */
int results_dump(const struct results *r, FILE *out, char **err);
/* The same with `verdicts` (a JSON array, or NULL: none) in place of r->verdicts. */
int results_dump_with(const struct results *r, const json_t *verdicts, FILE *out, char **err);

/*
 * Write the file atomically (atomic_file_*() in fs.h: a temporary file created exclusively in the
 * same directory, fsync, rename over path, fsync the directory; only a regular file is replaced).
 * On failure the old file is untouched, no temporary file is left and *err says why
 * ("PATH: message"). Returns 0 or -1.
 */
int results_write(const struct results *r, const char *path, char **err);

/*
 * The model from the bytes of a results file (untrusted: at most RESULTS_MAX_BYTES, nested at
 * most RESULTS_MAX_DEPTH, every field type-checked). On failure returns NULL with *err set:
 * "LINE:COL: message" for malformed JSON, "where: message" for a bad field (naming it).
 */
struct results *results_parse(const char *buf, size_t len, char **err);

/*
 * Read a results file (only a regular file: a FIFO or device is refused, never opened for a
 * blocking read). On failure returns NULL with *err set: "PATH:LINE:COL: message" for malformed
 * JSON, "PATH: message" for a wrong schema version or a bad field (naming it).
 */
/* s as a JSON string (NULL: null); text jansson refuses (not UTF-8) goes through sanitize. */
json_t *results_json_string(const char *s, char *(*sanitize)(const char *));
/* x as a JSON number; JSON has no NaN or infinity: those are null. */
json_t *results_json_number(double x);
struct results *results_read(const char *path, char **err);
/* Every file of paths read as results_read() does: an array of n (results_free_array()), or
 * NULL with *err set by the first file that could not be read. */
struct results **results_read_all(const char *const *paths, size_t n, char **err);

/*
 * Whether an earlier results file may be resumed by a run of the current plan (`--resume`,
 * `--rerun-failed`): `now` holds the current plan (plan.sha256) and every cell of it with its
 * id and resolved parameters (params). Refused when the plan hashes differ, when a cell of the
 * earlier file is not a cell of the current plan, or when a cell with the same id has other
 * parameters. Returns 0, or -1 with *why saying what differs (the first few cells and
 * parameters, e.g. "cell 'vm=a,...': parameter 'dataset.size' was '1MiB', now '2MiB'").
 */
int results_check_resume(const struct results *earlier, const struct results *now, char **why);

/* The first difference between two JSON values under `path` ("" at the top), as
 * "parameter 'dataset.size' was \"1MiB\", now \"2MiB\""; NULL when equal. Caller frees. */
char *results_first_difference(const char *path, const json_t *was, const json_t *now);
