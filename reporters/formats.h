/* SPDX-License-Identifier: MIT */
/*
 * The report formats, one row each. Everything that handles reports reads this one table: the
 * plan's `report:` keys (runner/plan/keys.c), the trust check of their paths (trust.c), the
 * options of `ferry run` and `ferry report` (their --NAME FILE options and help), the rendering
 * (reporters/output.c), the completions and ferry(1). A new format is its writer plus one row.
 *
 *   X(ID, NAME, SUFFIX, WRITER, PLAN, DOC)
 *   ID      REPORT_ID in enum report_format
 *   NAME    the plan key report.NAME and the option --NAME FILE
 *   SUFFIX  the file name's conventional ending (out/plan.SUFFIX): examples, tests, completion
 *   WRITER  int WRITER(const struct results *, const struct report_opts *, FILE *, char **err)
 *           (report_writer_fn in reporters.h)
 *   PLAN    the shape of its plan key: path (a path) or markdown (a path or {path, rows, cols,
 *           metric}: plan_markdown_keys)
 *   DOC     what the report is, a noun phrase without a final period ("where to write DOC")
 *
 * This header holds only the list, so that the plan layer can include it without the reporters.
 */
#pragma once

#define REPORT_FORMATS(X)                                                                          \
	X(JUNIT, "junit", ".junit.xml", report_junit_write, path, "JUnit XML")                     \
	X(MARKDOWN, "markdown", ".md", report_markdown_write, markdown, "Markdown")                \
	X(JSON, "json", ".json", report_json_write, path, "the JSON results")                      \
	X(BMF, "bmf", ".bmf.json", report_bmf_write, path, "Bencher Metric Format JSON")           \
	X(GAB, "gab", ".gab.json", report_gab_write, path,                                         \
	  "github-action-benchmark JSON (customSmallerIsBetter)")                                  \
	X(HTML, "html", ".html", report_html_write, path,                                          \
	  "the HTML report (one static page with charts)")

enum report_format {
#define REPORT_FORMAT_ENUM(id, name, suffix, writer, plan, doc) REPORT_##id,
	REPORT_FORMATS(REPORT_FORMAT_ENUM)
#undef REPORT_FORMAT_ENUM
	    REPORT_FORMAT_COUNT,
};
