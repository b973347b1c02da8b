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

#include "commands.h"
#include "reporters.h"
#include "results.h"
#include "util.h"

void report_options_usage(FILE *out, bool help, int col, int indent)
{
	for (int i = 0; i < REPORT_FORMAT_COUNT; i++) {
		const struct report_format_def *d = &report_formats[i];
		if (help) {
			fprintf(out, "  --%s FILE%*s%s\n", d->name, (int)(10 - strlen(d->name)), "",
				d->doc);
			continue;
		}
		int w = (int)strlen(d->name) + 6; /* " [--NAME F]" */
		if (col + w > 80) {
			fprintf(out, "\n%*s", indent, "");
			col = indent;
		}
		col += fprintf(out, " [--%s F]", d->name);
	}
}

static void report_usage(FILE *f)
{
	fputs("usage: ferry report RESULTS.json", f);
	report_options_usage(f, false, 32, 19);
	fputs(" [--rows AXIS] [--cols AXIS]\n"
	      "\n"
	      "Render a results file again. FILE '-' is standard output; with no output option\n"
	      "the Markdown report goes to standard output. Under GitHub Actions the Markdown\n"
	      "report is also appended to $GITHUB_STEP_SUMMARY. Exit status 2 for bad input.\n"
	      "\n",
	      f);
	report_options_usage(f, true, 0, 0);
	fputs("  --rows AXIS      axis of the Markdown table rows (default: method)\n"
	      "  --cols AXIS      axis of the Markdown table columns (default: dataset)\n",
	      f);
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		REPORT_LONG_OPTIONS{ "rows", required_argument, NULL, 'r' },
		{ "cols", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct report_set set = { .step_summary = true };
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'r': set.opts.markdown.rows = optarg; break;
		case 'c': set.opts.markdown.cols = optarg; break;
		case 'h': report_usage(stdout); return EXIT_OK;
		default:
			if (c >= OPT_REPORT && c < OPT_REPORT + REPORT_FORMAT_COUNT) {
				set.paths[c - OPT_REPORT] = optarg;
				break;
			}
			report_usage(stderr);
			return EXIT_PLAN;
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
