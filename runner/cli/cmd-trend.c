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
#include "commands.h"
#include "results.h"
#include "trend.h"
#include "util.h"

static void trend_usage(FILE *f)
{
	fputs("usage: ferry trend [-o FILE] [--html FILE] RESULTS.json...\n"
	      "\n"
	      "The history of every cell over the results files of successive runs (in any\n"
	      "order: they are ordered by their start time): per cell a Markdown table of the\n"
	      "median total with its 95% confidence interval and a Mermaid line chart, with\n"
	      "the changes of level marked (at least 5% at p <= 0.001; one seen at the newest\n"
	      "run only is pending), and many cells changing at the same run reported once as\n"
	      "an environment shift. Cells are followed by their resolved parameters.\n"
	      "Under GitHub Actions the report is also appended to $GITHUB_STEP_SUMMARY.\n"
	      "Exit: 0 written, 2 bad input or usage.\n"
	      "\n"
	      "  -o, --output FILE  where the Markdown goes (default: standard output)\n"
	      "  --html FILE        also write the trend as one static HTML page with charts\n",
	      f);
}

int cmd_trend(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "html", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *output = "-", *html = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': output = optarg; break;
		case 'H': html = optarg; break;
		case 'h': trend_usage(stdout); return EXIT_OK;
		default: trend_usage(stderr); return EXIT_PLAN;
		}
	}
	size_t n = (size_t)(argc - optind);
	if (n < 1) {
		errorf("trend: missing the results files");
		trend_usage(stderr);
		return EXIT_PLAN;
	}
	const char *const *names = (const char *const *)(argv + optind);
	struct results **in;
	{
		_cleanup_free_ char *err = NULL;
		in = results_read_all(names, n, &err);
		if (!in) {
			errorf("trend: %s", err);
			return EXIT_PLAN;
		}
	}
	_cleanup_free_ char *err = NULL;
	_cleanup_(trend_freep) struct trend *t = trend_build(in, names, n, &err);
	results_free_array(in, n);
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
