/* SPDX-License-Identifier: MIT */
/*
 * `ferry trend RESULTS... [-o FILE]`: the history of every cell over results files of
 * successive runs (results/trend.h), as Markdown with Mermaid charts.
 * Pipeline: options -> read every file -> order and detect (trend_build) -> open the output ->
 * render -> commit (atomic) -> GitHub step summary.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "../reporters/reporters.h"
#include "cli.h"
#include "commands.h"
#include "results.h"
#include "trend.h"
#include "util.h"

static int cmd_trend(int argc, char **argv);
static const struct cli_option trend_options[] = {
	{ .name = "output",
	  .id = 'o',
	  .short_name = 'o',
	  .arg = "FILE",
	  .value = CLI_FILE,
	  .help = "where the Markdown goes (default: standard output)" },
	{ .name = "html",
	  .id = 'H',
	  .arg = "FILE",
	  .value = CLI_FILE,
	  .help = "also write the trend as one static HTML page with charts" },
	CLI_END,
};
const struct cli_command cli_trend = {
	.name = "trend",
	.operands = "RESULTS.json...",
	.operand = CLI_RESULTS,
	.summary = "the history of every cell over many runs, with changes",
	.about = "The history of every cell over the results files of successive runs (in any\n"
		 "order: they are ordered by their start time): per cell a Markdown table of the\n"
		 "median total with its 95% confidence interval and a Mermaid line chart, with\n"
		 "the changes of level marked (at least 5% at p <= 0.001; one seen at the newest\n"
		 "run only is pending), and many cells changing at the same run reported once as\n"
		 "an environment shift. Cells are followed by their resolved parameters. At most\n"
		 "50 cells are shown (the largest changes first); one line counts the rest.\n"
		 "Under GitHub Actions the report is also appended to $GITHUB_STEP_SUMMARY.\n"
		 "Exit: 0 written, 2 bad input or usage.",
	.opts = (const struct cli_option *const[]){ trend_options, NULL },
	.run = cmd_trend,
};

static int cmd_trend(int argc, char **argv)
{
	const char *output = "-", *html = NULL;
	int c;

	while ((c = cli_getopt(&cli_trend, argc, argv)) != -1) {
		switch (c) {
		case 'o': output = optarg; break;
		case 'H': html = optarg; break;
		case 'h': return cli_usage_exit(&cli_trend, stdout);
		default: return cli_usage_exit(&cli_trend, stderr);
		}
	}
	size_t n = (size_t)(argc - optind);
	if (n < 1) {
		errorf("trend: missing the results files");
		return cli_usage_exit(&cli_trend, stderr);
	}
	const char *const *names = (const char *const *)(argv + optind);
	/* one file in memory at a time: the trend keeps only its points (issue 24 class 10: 200
	   files of 2,000 cells read at once took 3.5 GB) */
	_cleanup_free_ char *err = NULL;
	struct trend *t0 = trend_begin();
	for (size_t i = 0; i < n; i++) {
		struct results *r = results_read(names[i], &err);
		if (!r) {
			trend_free(t0);
			errorf("trend: %s", err);
			return EXIT_PLAN;
		}
		trend_add(t0, r, names[i]);
		results_free(r);
	}
	_cleanup_(trend_freep) struct trend *t = trend_end(t0, &err);
	if (!t) {
		errorf("trend: %s", err);
		return EXIT_PLAN;
	}

	/* rendered into memory first: the step summary gets the same text */
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	if (!mem || report_trend_markdown(t, mem, &err) < 0) {
		if (mem)
			fclose(mem);
		errorf("trend: %s", err ? err : "out of memory");
		return EXIT_PLAN;
	}
	fclose(mem);

	/* both outputs open before either is written: a bad path leaves nothing behind */
	struct report_output o = { 0 }, h = { 0 };
	if (report_output_open(&o, output, &err) < 0 ||
	    (html && report_output_open(&h, html, &err) < 0)) {
		report_output_abort(&o);
		errorf("trend: %s", err);
		return EXIT_PLAN;
	}
	if (fwrite(text, 1, len, o.f) != len || (html && report_trend_html(t, h.f, &err) < 0)) {
		report_output_abort(&o);
		report_output_abort(&h);
		errorf("trend: %s", err ? err : "cannot write");
		return EXIT_PLAN;
	}
	if (report_output_commit(&o, &err) < 0 || (html && report_output_commit(&h, &err) < 0)) {
		report_output_abort(&h);
		errorf("trend: %s", err);
		return EXIT_PLAN;
	}
	_cleanup_free_ char *serr = NULL;
	if (report_step_summary_append(text, len, &serr) < 0)
		warnf("cannot append to GITHUB_STEP_SUMMARY: %s", serr);
	return EXIT_OK;
}
