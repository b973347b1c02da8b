/* SPDX-License-Identifier: MIT */
/*
 * Reporters: pure functions over the results model (runner/results.h) that write one report to a
 * FILE *. They never touch libvirt, never print, and never read the process locale: numbers are
 * formatted in the C locale even when the caller set a comma-decimal one. Each returns 0, or -1
 * with *err set (free it) when the report cannot be written or the options are wrong.
 *
 * `ferry report` (runner/cmd-report.c) and `ferry run` call them once at the end.
 */
#pragma once

#include <locale.h>
#include <stdio.h>

#include "formats.h"
#include "fs.h"
#include "results.h"

/* The most a JUnit <system-out> or error body keeps of a serial console tail (its end). */
#define REPORT_SERIAL_TAIL_MAX (64 * 1024)
/* The Markdown report stays under this many bytes (GitHub's step summary limit is 1 MiB). */
#define REPORT_MARKDOWN_MAX (1000 * 1000)

/*
 * JUnit XML, valid against both Jenkins xunit-plugin's junit-10.xsd and the Ant JUnit schema
 * (fixtures/xsd/): a <testsuites> wrapper without attributes (Ant allows none), one <testsuite>
 * per cell (with package and id, as Ant requires inside the wrapper), its <properties> (axes,
 * resolved parameters, summary statistics), one <testcase> per measured run named
 * "CELL-ID run N", plus a "CELL-ID (cell)" testcase carrying what belongs to the cell as a whole
 * (a broken criterion, an infrastructure fault before any run, the skip reason). Ant allows one
 * child per testcase, so the serial console tails go to the suite's <system-out>.
 */
int report_junit(const struct results *r, FILE *out, char **err);

struct report_markdown_opts;
/* The same, with the verdict properties of the pivot laid out as the Markdown's (opts NULL:
 * defaults): each cell's verdict.table and verdict.role (fastest mean, or against it), and
 * against the fastest its verdict.kind, the words (verdict) and A's gain with its interval. */
int report_junit_layout(const struct results *r, const struct report_markdown_opts *opts, FILE *out,
			char **err);

struct report_markdown_opts {
	const char *rows; /* axis for the table rows; NULL: "method" if present, else the first */
	const char *cols; /* axis for the columns; NULL: "dataset" if present, else another axis */
	size_t max_bytes; /* cap on the output; 0: REPORT_MARKDOWN_MAX */
	/* a second rows x columns table of this metric's means (any metric the results describe
	 * or ferry(1) METRICS names, e.g. "write_throughput"); NULL or "total": only the total */
	const char *metric;
};

/*
 * GitHub-flavoured Markdown for people: a summary line, the rows x columns table of mean
 * totals with their 95% confidence interval and the relative speed to the fastest of each
 * column (one table per combination of the other axes), the verdicts of each column
 * (pivot-verdicts.h), the Phases and Runs tables (md-phases.c), Mermaid bar
 * charts, failures and skip reasons, raw runs in <details>, provenance. Every string from the
 * results is escaped (|, HTML, backticks, emphasis) and newlines become <br>. When the output
 * would exceed max_bytes, raw runs are dropped first, and the report says so.
 * opts may be NULL (defaults). An explicit rows/cols that no cell has is an error.
 */
int report_markdown(const struct results *r, const struct report_markdown_opts *opts, FILE *out,
		    char **err);

/* The results file itself (the same bytes results_write() puts in a file), with the verdicts
 * of the pivot (laid out as the Markdown's, opts NULL: defaults) computed anew from the runs. */
int report_json(const struct results *r, FILE *out, char **err);
int report_json_layout(const struct results *r, const struct report_markdown_opts *opts, FILE *out,
		       char **err);

/*
 * Bencher Metric Format (https://bencher.dev/docs/reference/bencher-metric-format/):
 * {"CELL-ID": {"latency": {"value", "lower_value", "upper_value"}, "bytes-per-second": ...}}.
 * latency is Bencher's built-in measure in nanoseconds: the mean total with its 95% confidence
 * interval (its lower bound cut at 0). The per-run metrics (ferry(1) METRICS) are more measures
 * named as the metric ("write_throughput", "alloc_after", ...): the mean over the measured runs
 * with its 95% CI, in the metric's unit. Cells without measured runs are left out.
 * schema/bmf.schema.json describes it.
 */
int report_bmf(const struct results *r, FILE *out, char **err);

/*
 * github-action-benchmark, tool "customSmallerIsBetter": [{"name": CELL-ID, "unit": "s",
 * "value": mean total, "range": "± half-width of the 95% CI", "extra": "median ..."}]; the
 * per-run metrics are lines "NAME: MEAN UNIT" of extra (the tool charts one unit per list).
 * schema/gab.schema.json describes it.
 */
int report_gab(const struct results *r, FILE *out, char **err);

/*
 * One static HTML page (inline SVG and CSS, no script, nothing fetched: it opens from a CI
 * artifact or a mail): per pivot table of the Markdown report (opts->rows and cols, the same
 * layout), a strip plot per column of every measured run, every boot's geometric mean and the
 * cell's mean total with its 95% confidence interval, with the numbers beside it and in each
 * mark's <title>; stacked phase bars and the full phase table; failures, skips, provenance.
 * Every string from the results is escaped. html.c, html-parts.c.
 */
int report_html(const struct results *r, const struct report_markdown_opts *opts, FILE *out,
		char **err);

/*
 * The trend report (`ferry trend`): the runs in time order, environment shifts, and per cell a
 * Markdown table of its median total with the 95% CI and the changes of level, and a Mermaid
 * xychart-beta line chart of the median and the CI bounds. trend-md.c.
 */
struct trend;
int report_trend_markdown(const struct trend *t, FILE *out, char **err);
/* The trend as one static HTML page (html-trend.c): per cell the median total over the runs with
 * each run's 95% CI, the changes of level and the levels, the numbers beside it and on hover. */
int report_trend_html(const struct trend *t, FILE *out, char **err);

/* Where an annotation points: a plan file and a 1-based line and column (0: unknown). */
struct report_where {
	const char *file;
	int line, col;
};
/* Sets *w for an error of a cell (e is NULL for a failed cell without errors); w->file starts
 * as the results' plan path. */
typedef void (*report_locate_fn)(void *ud, const struct result_cell *c,
				 const struct result_error *e, struct report_where *w);

/*
 * GitHub Actions annotations: one "::error file=F,line=L,col=C,title=ferry: WHAT: CELL::cell
 * CELL: MESSAGE" workflow command per error of every failed or errored cell, in cell order, at
 * most max (then one "::warning" saying how many more), escaped as GitHub requires
 * (gh_annotation()). locate (may be NULL) says where in the plan each one points. Returns how
 * many errors were annotated.
 */
size_t report_annotations(const struct results *r, report_locate_fn locate, void *ud, size_t max,
			  FILE *out);

/*
 * Append text to the file named by $GITHUB_STEP_SUMMARY (GitHub Actions shows it on the run's
 * page). Returns 0 when the variable is unset or empty (nothing done), 1 when appended, -1 with
 * *err set when the file cannot be written.
 */
int report_step_summary_append(const char *text, size_t len, char **err);

/* --- helpers shared by the reporters (reporters/common.c) --- */

/* Run a block of formatting in the C numeric locale, whatever the thread's locale is. */
struct report_locale {
	locale_t c;
	locale_t old;
};
void report_locale_enter(struct report_locale *l);
void report_locale_leave(struct report_locale *l);

/*
 * A copy of s that is valid UTF-8 and holds only characters allowed in XML 1.0, with nothing
 * dropped silently: CR LF becomes LF (serial consoles); \t and \n stay; every other control
 * character (ESC of colour codes, a lone CR, BEL, DEL) and every byte of an invalid UTF-8 sequence
 * is shown as its escape (escape_controls(): \x1b, \r, \xNN), C1 controls as \u0080-\u009f,
 * U+FFFE/U+FFFF as \ufffe/\uffff, and the first ':' of a line that starts with "::" as \x3a (a
 * workflow command in a CI log: "::stop-commands::"). NULL gives "". Free the result.
 */
char *report_clean_text(const char *s);

/*
 * The end of s that fits in max bytes, starting at a line start when one is near (else at a
 * UTF-8 character boundary). *truncated tells whether anything was cut. Returns a pointer into s.
 */
const char *report_text_tail(const char *s, size_t max, bool *truncated);

/* ms since the epoch as UTC "YYYY-MM-DDTHH:MM:SS" (no fraction, no zone: the Ant schema's
 * timestamp), into buf (at least 32 bytes). */
char *report_format_timestamp(int64_t ms, char *buf, size_t size);

/*
 * An output file opened before anything is rendered, so that a bad path fails early and nothing
 * is half-written: the report goes to a temporary file created exclusively in the target's
 * directory, renamed over the target by report_output_commit() (atomic_file_*() in fs.h: only a
 * regular file is replaced, never through a symbolic link; a missing directory is an error, not
 * created). "-" means standard output (written directly).
 */
struct report_output {
	char *path;            /* as given */
	struct atomic_file af; /* the temporary file (af.fd < 0 for stdout) */
	FILE *f;
};

/* Open the output; returns 0, or -1 with *err ("PATH: why"; a target that is a symbolic link,
 * device, FIFO, socket or directory is refused: "PATH: is a FIFO (ferry replaces only regular
 * files)"). */
int report_output_open(struct report_output *o, const char *path, char **err);
/* Flush, sync and rename into place (or just flush stdout); returns 0, or -1 with *err. The
 * output is closed either way. */
int report_output_commit(struct report_output *o, char **err);
/* Close and remove the temporary file; the target is untouched. Accepts a never-opened output. */
void report_output_abort(struct report_output *o);

/*
 * What a writer may read besides the results (the formats that have no options ignore it). opts
 * NULL: defaults.
 */
struct report_opts {
	struct report_markdown_opts markdown;
};
typedef int (*report_writer_fn)(const struct results *r, const struct report_opts *opts, FILE *out,
				char **err);

/* One row of the format table (formats.h: REPORT_FORMATS). */
struct report_format_def {
	const char *name;   /* "junit": the plan key report.NAME and the option --NAME */
	const char *suffix; /* ".junit.xml" */
	report_writer_fn write;
	const char *doc; /* "JUnit XML" */
};
/* Indexed by enum report_format. */
extern const struct report_format_def report_formats[REPORT_FORMAT_COUNT];

/* "junit", "markdown", ...: report_formats[f].name, "?" out of range. */
const char *report_format_name(enum report_format f);
/* The format named name, or -1. */
int report_format_find(const char *name);
/* Render one format (its row's writer). */
int report_render(enum report_format f, const struct results *r, const struct report_opts *o,
		  FILE *out, char **err);

/*
 * Every report a run asks for, opened before the run and written once at its end:
 *   struct report_set set = { .paths[REPORT_JUNIT] = "out/x.xml", .opts.markdown.rows = ... };
 *   if (report_set_open(&set, &err) < 0) ...    (before anything runs: a bad path fails early)
 *   ... run, results_write() after every cell ...
 *   if (report_set_write(&set, results, &err, &warning) < 0) ...
 * At most one path may be "-" (standard output).
 */
struct report_set {
	const char *paths[REPORT_FORMAT_COUNT]; /* NULL: not wanted; "-": standard output */
	struct report_opts opts;
	bool step_summary; /* also append the Markdown to $GITHUB_STEP_SUMMARY when it is set */
	struct report_output out[REPORT_FORMAT_COUNT];
};

/* Open every output. Returns 0, or -1 with *err (and nothing left open or created). */
int report_set_open(struct report_set *s, char **err);
/*
 * Render every report into its temporary file (the Markdown first, into a capped buffer; the
 * others streamed, so memory does not grow with the report; standard output last), then rename
 * each into place: a rendering error, such as an unknown --rows axis, leaves every file
 * untouched. Then append the Markdown to the step summary if asked (rendering it for that even
 * when no Markdown file is wanted). Returns 0, or
 * -1 with *err. A step summary that cannot be written is not an error: *warning says why.
 * Every output is closed afterwards.
 */
int report_set_write(struct report_set *s, const struct results *r, char **err, char **warning);
/* Close and remove what report_set_open() created (when the run is abandoned). */
void report_set_abort(struct report_set *s);
