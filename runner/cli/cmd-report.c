/* SPDX-License-Identifier: MIT */
/*
 * `ferry report RESULTS.json [--FORMAT F]... [--rows AXIS] [--cols AXIS]`: render a results
 * file again (one --FORMAT per row of reporters/formats.h).
 * Pipeline: options -> read results -> open every output (a bad path fails before anything is
 * written) -> render all into memory -> write and rename each -> GitHub step summary.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "reporters.h"
#include "results.h"
#include "util.h"

static int cmd_report(int argc, char **argv);
static const struct cli_option report_pivot_options[] = {
	{ .name = "rows",
	  .id = 'r',
	  .arg = "AXIS",
	  .value = CLI_WORD,
	  .help = "axis of the Markdown table rows (default: method)" },
	{ .name = "cols",
	  .id = 'c',
	  .arg = "AXIS",
	  .value = CLI_WORD,
	  .help = "axis of the Markdown table columns (default: dataset)" },
	CLI_END,
};
const struct cli_command cli_report = {
	.name = "report",
	.operands = "RESULTS.json",
	.operand = CLI_RESULTS,
	.summary = "render a results file as JUnit, Markdown or JSON",
	.about = "Render a results file again. FILE '-' is standard output; with no output option\n"
		 "the Markdown report goes to standard output. Under GitHub Actions the Markdown\n"
		 "report is also appended to $GITHUB_STEP_SUMMARY. Exit status 2 for bad input.",
	.opts =
	    (const struct cli_option *const[]){ cli_report_options, report_pivot_options, NULL },
	.run = cmd_report,
};

static int cmd_report(int argc, char **argv)
{
	struct report_set set = { .step_summary = true };
	int c;

	while ((c = cli_getopt(&cli_report, argc, argv)) != -1) {
		switch (c) {
		case 'r': set.opts.markdown.rows = optarg; break;
		case 'c': set.opts.markdown.cols = optarg; break;
		case 'h': return cli_usage_exit(&cli_report, stdout);
		default:
			if (c >= OPT_REPORT && c < OPT_REPORT + REPORT_FORMAT_COUNT) {
				set.paths[c - OPT_REPORT] = optarg;
				break;
			}
			return cli_usage_exit(&cli_report, stderr);
		}
	}
	if (optind + 1 != argc) {
		if (optind >= argc)
			errorf("report: missing the results file");
		else
			errorf("report: one results file expected, got '%s' as well",
			       argv[optind + 1]);
		return cli_usage_exit(&cli_report, stderr);
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
