/* SPDX-License-Identifier: MIT */
/*
 * The metrics, one row each: everything that names a metric reads this one table: the plan's
 * criteria[].metric and report.markdown.metric (runner/plan/keys.c, entries.c), the criteria's
 * bounds and verdicts (exec/criteria.c), the per-run metrics the methods and the executor report
 * and the results file describes (results.c), the exports and ferry(1) METRICS
 * (`ferry schema --man-metrics`). A new metric is one row (and the code that measures it).
 *
 *   X(ID, NAME, UNIT, KIND, HIGHER, DOC)
 *   ID      METRIC_ID in enum metric
 *   NAME    as plans, results and reports spell it
 *   UNIT    RATE (B/s; bounds like 20MB/s), FILES (files/s), TIME (s; bounds are durations),
 *           SIZE (B; bounds like 64MiB), PERCENT (%)
 *   KIND    CELL: from the cell's statistics; PHASE: a phase's median time; SPREAD: a statistic
 *           of the total's spread (no per-run values); RUN: reported per run by the method or the
 *           executor (result_run.metrics), its median over the measured runs
 *   HIGHER  true when higher is better
 *   DOC     what it is, a noun phrase without a final period
 */
#pragma once

#include <stdbool.h>

/* clang-format off */
#define METRICS(X)                                                                                 \
	X(THROUGHPUT, "throughput", RATE, CELL, true,                                              \
	  "the dataset's bytes over the median total time")                                        \
	X(FILES_PER_S, "files_per_s", FILES, CELL, true,                                           \
	  "the dataset's files over the median total time")                                        \
	X(TOTAL, "total", TIME, CELL, false,                                                       \
	  "the median total time (prepare + transfer + finalize)")                                 \
	X(PREPARE, "phase.prepare", TIME, PHASE, false, "the median time of the prepare phase")    \
	X(TRANSFER, "phase.transfer", TIME, PHASE, false, "the median time of the transfer phase") \
	X(FINALIZE, "phase.finalize", TIME, PHASE, false, "the median time of the finalize phase") \
	X(VERIFY, "phase.verify", TIME, PHASE, false, "the median time of the verify phase")       \
	X(CLEANUP, "phase.cleanup", TIME, PHASE, false, "the median time of the cleanup phase")    \
	X(CV, "cv", PERCENT, SPREAD, false,                                                        \
	  "the coefficient of variation of the total time over the measured runs")                 \
	X(WRITE_THROUGHPUT, "write_throughput", RATE, RUN, true,                                   \
	  "payload bytes over the time the method's write took (block: the direct-I/O dd with "    \
	  "fsync; disk-image: the copy into the target plus the sync)")                            \
	X(READ_THROUGHPUT, "read_throughput", RATE, RUN, true,                                     \
	  "payload bytes over the time the method's read took (block: the direct-I/O read-back; "  \
	  "disk-image in_place: reading every file of the mounted image)")                         \
	X(GUEST_WRITE_TIME, "guest_write_time", TIME, RUN, false,                                 \
	  "seconds of the method's write step timed in the guest, without the agent's round "     \
	  "trip or the host's polling: block: the seconds dd itself reports for its direct-I/O "  \
	  "write with fsync (the slowest writer's); guest-copy write: the copy onto the target "  \
	  "with its sync, on the guest's CLOCK_MONOTONIC read right before and after it")         \
	X(GUEST_READ_TIME, "guest_read_time", TIME, RUN, false,                                   \
	  "seconds of the method's read step timed in the guest (block: the seconds dd reports "  \
	  "for the direct-I/O read-back; guest-copy read: the copy from the target onto the "     \
	  "source disk with its sync, on the guest's clock)")                                      \
	X(GUEST_WRITE_THROUGHPUT, "guest_write_throughput", RATE, RUN, true,                      \
	  "bytes over guest_write_time (block: dd's own figure, the bytes it reports over its "    \
	  "seconds: a study's dd MB/s with direct I/O)")                                           \
	X(GUEST_READ_THROUGHPUT, "guest_read_throughput", RATE, RUN, true,                        \
	  "bytes over guest_read_time (block: dd's own figure for the read-back)")                 \
	X(ALLOC_BEFORE, "alloc_before", SIZE, RUN, false,                                          \
	  "host bytes allocated by the target image (st_blocks x 512) before prepare")             \
	X(ALLOC_AFTER, "alloc_after", SIZE, RUN, false,                                            \
	  "host bytes allocated by the target image after finalize")                               \
	X(ALLOC_GROWTH, "alloc_growth", SIZE, RUN, false, "alloc_after - alloc_before")            \
	X(ALLOC_DELETED, "alloc_deleted", SIZE, RUN, false,                                        \
	  "host bytes allocated by the target image after the run's data was deleted in the "      \
	  "guest and fstrim (blkdiscard for a raw device) ran; only disks with discard: true")     \
	X(CPU_GUEST, "cpu_guest", TIME, RUN, false,                                                \
	  "the guest's non-idle CPU time during the transfer phase (user + nice + system + irq + " \
	  "softirq of the guest's /proc/stat, all CPUs)")                                          \
	X(CPU_QEMU, "cpu_qemu", TIME, RUN, false,                                                  \
	  "CPU time of the QEMU process (user + system, all threads) during the transfer phase")   \
	X(CANARY_HOST, "canary_host", TIME, RUN, false,                                            \
	  "the drift canary on the host: SHA-256 of a fixed 4 MiB buffer, four times, right after " \
	  "the run's boot (blocks only; the same for every run of a boot)")                        \
	X(CANARY_GUEST, "canary_guest", TIME, RUN, false,                                          \
	  "the drift canary in the guest: a fixed shell loop, timed on the host, right after the " \
	  "run's boot (blocks only; the same for every run of a boot)")
/* clang-format on */

enum metric {
#define METRIC_ENUM(id, name, unit, kind, higher, doc) METRIC_##id,
	METRICS(METRIC_ENUM)
#undef METRIC_ENUM
	    METRIC_COUNT,
};

enum metric_unit { METRIC_RATE, METRIC_FILES, METRIC_TIME, METRIC_SIZE, METRIC_PERCENT };
enum metric_class { METRIC_CELL, METRIC_PHASE, METRIC_SPREAD, METRIC_RUN };

struct metric_def {
	const char *name;
	const char *unit; /* as the results file writes it: "B/s", "files/s", "s", "B", "%" */
	enum metric_unit unit_kind;
	enum metric_class kind;
	bool higher_better;
	const char *doc;
};

/* Indexed by enum metric. */
extern const struct metric_def metric_defs[METRIC_COUNT];
/* The names, in the table's order, NULL-terminated (the plan's criteria[].metric values). */
#define METRIC_NAME(id, name, unit, kind, higher, doc) name,
#define METRIC_NAMES                                   ((const char *const[]){ METRICS(METRIC_NAME) NULL })

/* The metric named name, or -1. */
int metric_find(const char *name);
/* The ferry(1) METRICS table (roff): name, unit, direction and doc of every metric. Free it. */
char *metric_man(void);
