/* SPDX-License-Identifier: MIT */
/*
 * `ferry report RESULTS.json [--junit F] [--markdown F] [--json F] [--bmf F] [--gab F]
 *  [--rows AXIS] [--cols AXIS]`: render a results file again.
 * Pipeline: options -> read results -> open every output (a bad path fails before anything is
 * written) -> render all into memory -> write and rename each -> GitHub step summary.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "reporters.h"
#include "results.h"
#include "util.h"

static void report_usage(FILE *f)
{
	fputs("usage: ferry report RESULTS.json [--junit FILE] [--markdown FILE] [--json FILE]\n"
	      "                    [--bmf FILE] [--gab FILE] [--html FILE] [--rows AXIS]\n"
	      "                    [--cols AXIS]\n"
	      "\n"
	      "Render a results file again. FILE '-' is standard output; with no output option\n"
	      "the Markdown report goes to standard output. Under GitHub Actions the Markdown\n"
	      "report is also appended to $GITHUB_STEP_SUMMARY. Exit status 2 for bad input.\n"
	      "\n"
	      "  --junit FILE     JUnit XML (one testsuite per cell, one testcase per run)\n"
	      "  --markdown FILE  Markdown for people\n"
	      "  --json FILE      the results file itself\n"
	      "  --bmf FILE       Bencher Metric Format JSON\n"
	      "  --gab FILE       github-action-benchmark customSmallerIsBetter JSON\n"
	      "  --html FILE      one static HTML page with charts (no script, nothing fetched)\n"
	      "  --rows AXIS      axis of the Markdown table rows (default: method)\n"
	      "  --cols AXIS      axis of the Markdown table columns (default: dataset)\n",
	      f);
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "junit", required_argument, NULL, 'j' },
		{ "markdown", required_argument, NULL, 'm' },
		{ "json", required_argument, NULL, 'J' },
		{ "bmf", required_argument, NULL, 'b' },
		{ "gab", required_argument, NULL, 'g' },
		{ "html", required_argument, NULL, 'H' },
		{ "rows", required_argument, NULL, 'r' },
		{ "cols", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct report_set set = { .step_summary = true };
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': set.paths[REPORT_JUNIT] = optarg; break;
		case 'm': set.paths[REPORT_MARKDOWN] = optarg; break;
		case 'J': set.paths[REPORT_JSON] = optarg; break;
		case 'b': set.paths[REPORT_BMF] = optarg; break;
		case 'g': set.paths[REPORT_GAB] = optarg; break;
		case 'H': set.paths[REPORT_HTML] = optarg; break;
		case 'r': set.markdown.rows = optarg; break;
		case 'c': set.markdown.cols = optarg; break;
		case 'h': report_usage(stdout); return EXIT_OK;
		default: report_usage(stderr); return EXIT_PLAN;
		}
	}
	if (optind + 1 != argc) {
		if (optind >= argc)
			errorf("report: missing the results file");
		else
			errorf("report: one results file expected, got '%s' as well",
			       argv[optind + 1]);
		report_usage(stderr);
		return EXIT_PLAN;
	}
	bool any = false;
	for (int i = 0; i < REPORT_FORMAT_COUNT; i++)
		any |= set.paths[i] != NULL;
	if (!any)
		set.paths[REPORT_MARKDOWN] = "-";

	_cleanup_free_ char *err = NULL, *warning = NULL;
	_cleanup_(results_freep) struct results *r = results_read(argv[optind], &err);
	if (!r) {
		errorf("%s", err);
		return EXIT_PLAN;
	}
	if (report_set_open(&set, &err) < 0) {
		errorf("report: %s", err);
		return EXIT_PLAN;
	}
	int rc = report_set_write(&set, r, &err, &warning);
	if (warning)
		warnf("%s", warning);
	if (rc < 0) {
		errorf("report: %s", err);
		return EXIT_PLAN;
	}
	return EXIT_OK;
}
