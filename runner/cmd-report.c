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

enum { OUT_JUNIT, OUT_MARKDOWN, OUT_JSON, OUT_BMF, OUT_GAB, OUT_COUNT };

static const char *const out_names[OUT_COUNT] = { "junit", "markdown", "json", "bmf", "gab" };

static void report_usage(FILE *f)
{
	fputs("usage: ferry report RESULTS.json [--junit FILE] [--markdown FILE] [--json FILE]\n"
	      "                    [--bmf FILE] [--gab FILE] [--rows AXIS] [--cols AXIS]\n"
	      "\n"
	      "Render a results file again. FILE '-' is standard output; with no output option\n"
	      "the Markdown report goes to standard output. Under GitHub Actions the Markdown\n"
	      "report is also appended to $GITHUB_STEP_SUMMARY.\n"
	      "\n"
	      "  --junit FILE     JUnit XML (one testsuite per cell, one testcase per run)\n"
	      "  --markdown FILE  Markdown for people\n"
	      "  --json FILE      the results file itself\n"
	      "  --bmf FILE       Bencher Metric Format JSON\n"
	      "  --gab FILE       github-action-benchmark customSmallerIsBetter JSON\n"
	      "  --rows AXIS      axis of the Markdown table rows (default: method)\n"
	      "  --cols AXIS      axis of the Markdown table columns (default: dataset)\n",
	      f);
}

static int render(int which, const struct results *r, const struct report_markdown_opts *mo,
		  FILE *f, char **err)
{
	switch (which) {
	case OUT_JUNIT: return report_junit(r, f, err);
	case OUT_MARKDOWN: return report_markdown(r, mo, f, err);
	case OUT_JSON: return report_json(r, f, err);
	case OUT_BMF: return report_bmf(r, f, err);
	default: return report_gab(r, f, err);
	}
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "junit", required_argument, NULL, 'j' },
		{ "markdown", required_argument, NULL, 'm' },
		{ "json", required_argument, NULL, 'J' },
		{ "bmf", required_argument, NULL, 'b' },
		{ "gab", required_argument, NULL, 'g' },
		{ "rows", required_argument, NULL, 'r' },
		{ "cols", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *paths[OUT_COUNT] = { 0 };
	struct report_markdown_opts mo = { 0 };
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': paths[OUT_JUNIT] = optarg; break;
		case 'm': paths[OUT_MARKDOWN] = optarg; break;
		case 'J': paths[OUT_JSON] = optarg; break;
		case 'b': paths[OUT_BMF] = optarg; break;
		case 'g': paths[OUT_GAB] = optarg; break;
		case 'r': mo.rows = optarg; break;
		case 'c': mo.cols = optarg; break;
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
	size_t to_stdout = 0;
	for (int i = 0; i < OUT_COUNT; i++) {
		any |= paths[i] != NULL;
		to_stdout += paths[i] && STREQ(paths[i], "-");
	}
	if (!any) {
		paths[OUT_MARKDOWN] = "-";
		to_stdout = 1;
	}
	if (to_stdout > 1) {
		errorf("report: only one output can be '-' (standard output)");
		return EXIT_PLAN;
	}

	_cleanup_free_ char *err = NULL;
	_cleanup_(results_freep) struct results *r = results_read(argv[optind], &err);
	if (!r) {
		errorf("%s", err);
		return EXIT_PLAN;
	}

	/* open everything first: a bad path fails before any report is written */
	struct report_output outs[OUT_COUNT] = { 0 };
	int rc = EXIT_OK;
	for (int i = 0; i < OUT_COUNT && rc == EXIT_OK; i++) {
		if (paths[i] && report_output_open(&outs[i], paths[i], &err) < 0) {
			errorf("%s", err);
			rc = EXIT_PLAN;
		}
	}

	/* render into memory, so that a rendering error leaves every file untouched */
	char *text[OUT_COUNT] = { 0 };
	size_t len[OUT_COUNT] = { 0 };
	bool summary = getenv("GITHUB_STEP_SUMMARY") && *getenv("GITHUB_STEP_SUMMARY");
	for (int i = 0; i < OUT_COUNT && rc == EXIT_OK; i++) {
		/* Markdown is also rendered for the step summary, and to check --rows/--cols */
		if (!paths[i] && !(i == OUT_MARKDOWN && (summary || mo.rows || mo.cols)))
			continue;
		FILE *m = open_memstream(&text[i], &len[i]);
		if (!m)
			abort();
		free(err);
		err = NULL;
		int k = render(i, r, &mo, m, &err);
		fclose(m);
		if (k < 0) {
			errorf("report: %s: %s", out_names[i], err);
			rc = EXIT_PLAN;
		}
	}

	for (int i = 0; i < OUT_COUNT; i++) {
		if (!outs[i].f)
			continue;
		if (rc != EXIT_OK) {
			report_output_abort(&outs[i]);
			continue;
		}
		fwrite(text[i], 1, len[i], outs[i].f);
		free(err);
		err = NULL;
		if (report_output_commit(&outs[i], &err) < 0) {
			errorf("%s", err);
			rc = EXIT_PLAN;
		}
	}

	if (rc == EXIT_OK && summary) {
		free(err);
		err = NULL;
		if (report_step_summary_append(text[OUT_MARKDOWN], len[OUT_MARKDOWN], &err) < 0)
			warnf("cannot append to GITHUB_STEP_SUMMARY: %s", err);
	}
	for (int i = 0; i < OUT_COUNT; i++)
		free(text[i]);
	return rc;
}
