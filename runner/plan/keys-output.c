/* SPDX-License-Identifier: MIT */
/* The key tables of what a run checks and writes: criteria[], report and regression (keys.h;
 * the other sections are in keys.c). */
#include "keys-int.h"
#include "plan.h"

/* ---- criteria[] -------------------------------------------------------------------------- */

#define WHERE_DEF(axis)                                                                            \
	{                                                                                          \
		.name = #axis, .type = KEY_STRING, .offset = FIELD(plan_where, axis),              \
		.help = "only cells whose " #axis " is this " #axis " name"                        \
	}
static const struct key_def where_defs[] = {
	WHERE_DEF(vm),
	WHERE_DEF(disk),
	WHERE_DEF(dataset),
	WHERE_DEF(method),
};
const struct key_table plan_where_keys = {
	.name = "criteria[].where",
	.doc = "the cells a criterion applies to",
	KEYS(where_defs),
	.set_offset = FIELD(plan_where, set),
};

static const struct key_def criterion_defs[] = {
	{ .name = "metric",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_criterion, metric),
	  .values = METRIC_NAMES, /* runner/results/metrics.h */
	  .flags = KEY_REQUIRED,
	  .help = "what is checked: throughput (a rate like 20MB/s), files_per_s, total or a "
		  "phase's median time (a duration), cv (a percentage), or the median of a run "
		  "metric (ferry(1) METRICS): write_throughput and read_throughput (rates), "
		  "alloc_* (sizes like 64MiB), cpu_guest and cpu_qemu (durations)" },
	{ .name = "min",
	  .type = KEY_QUANTITY,
	  .offset = FIELD(plan_criterion, min_text),
	  .help = "lowest acceptable value, in the metric's unit" },
	{ .name = "max",
	  .type = KEY_QUANTITY,
	  .offset = FIELD(plan_criterion, max_text),
	  .help = "highest acceptable value, in the metric's unit" },
	{ .name = "where",
	  .type = KEY_MAPPING,
	  .offset = FIELD(plan_criterion, where),
	  .sub = &plan_where_keys,
	  .help = "apply only to cells with these axis values" },
};
const struct key_table plan_criterion_keys = {
	.name = "criteria[]",
	.doc = "pass/fail thresholds on cell statistics",
	KEYS(criterion_defs),
	.set_offset = FIELD(plan_criterion, set),
};

/* ---- report ------------------------------------------------------------------------------ */

static const struct key_def markdown_defs[] = {
	{ .name = "path",
	  .type = KEY_STRING,
	  .offset = FIELD(plan_markdown, path),
	  .help = "where to write the Markdown report" },
	{ .name = "rows",
	  .type = KEY_STRING,
	  .offset = FIELD(plan_markdown, rows),
	  .def = "method",
	  .help = "matrix key whose values are the table's rows: an axis (vm, disk, dataset, "
		  "method) or a sweep (disk.cache)" },
	{ .name = "cols",
	  .type = KEY_STRING,
	  .offset = FIELD(plan_markdown, cols),
	  .def = "dataset",
	  .help = "matrix key whose values are the table's columns: an axis or a sweep" },
	{ .name = "metric",
	  .type = KEY_STRING,
	  .offset = FIELD(plan_markdown, metric),
	  .def = "total",
	  .help = "a second table of this metric's medians: throughput, files_per_s, phase.NAME or "
		  "a run metric (ferry(1) METRICS, e.g. write_throughput, alloc_growth)" },
};
const struct key_table plan_markdown_keys = {
	.name = "report.markdown",
	.doc = "the Markdown report",
	KEYS(markdown_defs),
	.set_offset = FIELD(plan_markdown, set),
};

/* One key per report format (reporters/formats.h), in the table's order: bit REPORT_x of the
 * `set` mask is the format's key. PLAN says the key's shape. */
#define REPORT_KEY_path(id, name_, doc)                                                            \
	{ .name = name_,                                                                           \
	  .type = KEY_STRING,                                                                      \
	  .offset = FIELD(plan_report, paths[REPORT_##id]),                                        \
	  .help = "where to write " doc },
#define REPORT_KEY_markdown(id, name_, doc)                                                        \
	{ .name = name_,                                                                           \
	  .type = KEY_MAPPING,                                                                     \
	  .offset = FIELD(plan_report, markdown),                                                  \
	  .sub = &plan_markdown_keys,                                                              \
	  .shorthand = V("path"),                                                                  \
	  .help = "where to write " doc ": a path, or {path, rows, cols}" },
#define REPORT_KEY(id, name, suffix, writer, plan, doc) REPORT_KEY_##plan(id, name, doc)
static const struct key_def report_defs[] = { REPORT_FORMATS(REPORT_KEY) };
#undef REPORT_KEY
_Static_assert(ELEMENTSOF(report_defs) == REPORT_FORMAT_COUNT, "one report key per format");
const struct key_table plan_report_keys = {
	.name = "report",
	.doc = "report files written at the end of a run",
	KEYS(report_defs),
	.set_offset = FIELD(plan_report, set),
};

/* ---- regression --------------------------------------------------------------------------- */

static const struct key_def regression_defs[] = {
	{ .name = "threshold",
	  .type = KEY_PERCENT,
	  .offset = FIELD(plan_regression, threshold),
	  .def = "5%",
	  .fmin = 0.1,
	  .fmax = 1000,
	  .help = "the minimum relative change that is a regression or an improvement" },
	{ .name = "confidence",
	  .type = KEY_PERCENT,
	  .offset = FIELD(plan_regression, confidence),
	  .def = "95%",
	  .fmin = 50.1,
	  .fmax = 99.99,
	  .help = "confidence of each bound and verdict (one-sided)" },
	{ .name = "rule",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_regression, rule),
	  .def = "welch",
	  .values = V("welch", "lkp"),
	  .help = "welch: Welch's t on log boot means with Benjamini-Hochberg; lkp: stricter, "
		  "ranges of at least 3 boots that do not overlap" },
	{ .name = "window",
	  .type = KEY_UINT,
	  .offset = FIELD(plan_regression, window),
	  .def = "1",
	  .min = 1,
	  .max = 1000,
	  .help = "pool the newest N comparable results files of the baseline directory" },
	{ .name = "gate",
	  .type = KEY_STRING_LIST,
	  .offset = FIELD(plan_regression, gate),
	  .count_offset = FIELD(plan_regression, n_gate),
	  .help = "the metrics whose regression fails the run (--gate overrides it); the others "
		  "are reported, never fatal; none given: total" },
	{ .name = "confirm",
	  .type = KEY_UINT,
	  .offset = FIELD(plan_regression, confirm),
	  .def = "0",
	  .max = 20,
	  .help = "on a suspected regression, rerun the flagged cells in this many new blocks and "
		  "fail only when the rerun agrees (its own change a slowdown past the threshold, "
		  "and the boots of both still regressed) (--confirm overrides it); 0: no rerun, "
		  "else at least 3 (a rerun of fewer blocks cannot be tested)" },
	{ .name = "screen",
	  .type = KEY_PERCENT,
	  .offset = FIELD(plan_regression, screen),
	  .def = "80%",
	  .fmin = 50.1,
	  .fmax = 99.99,
	  .help = "with confirm: the confidence at which a gated metric is suspected and its cells "
		  "rerun; the rerun's test at the confidence decides (a screen at or above the "
		  "confidence: no screening)" },
	{ .name = "control",
	  .type = KEY_STRING,
	  .offset = FIELD(plan_regression, control),
	  .help = "a cell the change under test does not touch, as AXIS=VALUE,... (for example "
		  "dataset=small): the gated times of the other cells are judged by their ratio "
		  "to it in the same blocks, which cancels the host's moment (docs/gate.md)" },
};
const struct key_table plan_regression_keys = {
	.name = "regression",
	.doc = "how a run compares itself with its baseline (ferry(1) COMPARE)",
	KEYS(regression_defs),
	.set_offset = FIELD(plan_regression, set),
};
