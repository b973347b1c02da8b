/* SPDX-License-Identifier: MIT */
/*
 * The Markdown report beyond its golden file (test-reporters.c): the Design section of a run with
 * blocks, axes and their names, fresh data, verdicts, other metrics, and the size cap.
 */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pivot-verdicts.h"
#include "reporters-sample.h"
#include "reporters.h"
#include "results.h"
#include "util.h"

/* A run with blocks: the Markdown's Design section says the blocks, how runs per boot were
 * chosen with the variance components and costs, and why the blocks stopped. */
static void test_design_section(void)
{
	_cleanup_(results_freep) struct results *r = sample();
	size_t len;
	_cleanup_free_ char *none = render_to_string(render_md, r, &len);
	g_assert_null(strstr(none, "### Design"));
	r->design = (struct result_design){ .blocks = 5,
					    .runs_per_boot = 2,
					    .automatic = true,
					    .pilot_blocks = 2,
					    .pilot_runs = 3,
					    .within_var = 0.0009,
					    .between_var = 0.0025,
					    .boot_s = 6.5,
					    .run_s = 2.25,
					    .stop = STATS_STOP_BUDGET,
					    .until = 0.05,
					    .halfwidth = 0.083 };
	_cleanup_free_ char *md = render_to_string(render_md, r, &len);
	const char *d = strstr(md, "### Design\n\nA boot is the sample: 5 blocks, ");
	g_assert_nonnull(d);
	g_assert_nonnull(strstr(d, "2 measured runs of every cell per boot, chosen after a pilot "
				   "of 2 blocks at 3 runs per boot"));
	g_assert_nonnull(strstr(d, "| 0.0009 | 0.0025 | 6.5\xc2\xa0s | 2.25\xc2\xa0s | 2 |"));
	g_assert_nonnull(strstr(d,
				"Stopped after 5 blocks: the time budget of blocks (run.budget) "
				"was used up; target half-width 5%, the widest at the end 8.3%."));
	r->design.automatic = false;
	r->design.runs_per_boot = 1;
	r->design.within_var = r->design.between_var = NAN;
	r->design.stop = STATS_STOP_HALFWIDTH;
	_cleanup_free_ char *fixed = render_to_string(render_md, r, &len);
	g_assert_nonnull(strstr(fixed, "1 measured run of every cell per boot (set by the plan: "
				       "run.runs_per_boot). Within- and between-boot variance are "
				       "told apart only with 2 or more runs per boot."));
	g_assert_nonnull(strstr(fixed, "Stopped after 5 blocks: every cell's and every "
				       "comparison's 95% interval reached the target half-width"));
}

static void test_markdown_bad_axis(void)
{
	_cleanup_(results_freep) struct results *r = sample();
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	_cleanup_free_ char *err = NULL;
	struct report_markdown_opts o = { .rows = "metod" };
	g_assert_cmpint(report_markdown(r, &o, f, &err), ==, -1);
	g_assert_cmpstr(err, ==, "unknown axis 'metod' for rows (did you mean 'method'?)");
	free(err);
	err = NULL;
	o = (struct report_markdown_opts){ .rows = "vm", .cols = "vm" };
	g_assert_cmpint(report_markdown(r, &o, f, &err), ==, -1);
	g_assert_nonnull(strstr(err, "same axis"));
	fclose(f);
	g_assert_cmpuint(len, ==, 0);
	free(buf);
}

/* The value given for --rows/--cols and the axis suggested for it come back escaped: an ESC or
 * a newline in either cannot reach a terminal or forge a CI log line through the message. */
static void test_markdown_bad_axis_escaped(void)
{
	_cleanup_(results_freep) struct results *r = results_new();
	struct result_cell *c = results_add_cell(r, "me\x1b[2Jthod=agent");
	result_cell_add_axis(c, "me\x1b[2Jthod", "agent");
	FILE *f = fopen("/dev/null", "w");
	g_assert_nonnull(f);
	_cleanup_free_ char *err = NULL;
	struct report_markdown_opts o = { .rows = "me\x1b[2Jtho\n" };
	g_assert_cmpint(report_markdown(r, &o, f, &err), ==, -1);
	g_assert_cmpstr(err, ==,
			"unknown axis 'me\\x1b[2Jtho\\n' for rows (did you mean "
			"'me\\x1b[2Jthod'?)");
	free(err);
	err = NULL;
	o = (struct report_markdown_opts){ .cols = "\x07odd" };
	g_assert_cmpint(report_markdown(r, &o, f, &err), ==, -1);
	g_assert_cmpstr(err, ==, "unknown axis '\\x07odd' for columns");
	free(err);
	err = NULL;
	o = (struct report_markdown_opts){ .rows = "me\x1b[2Jthod", .cols = "me\x1b[2Jthod" };
	g_assert_cmpint(report_markdown(r, &o, f, &err), ==, -1);
	g_assert_cmpstr(err, ==, "rows and columns are the same axis 'me\\x1b[2Jthod'");
	fclose(f);
}

/* rows and columns are the caller's choice: vm across, datasets down */
static void test_markdown_axes(void)
{
	_cleanup_(results_freep) struct results *r = sample();
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	_cleanup_free_ char *err = NULL;
	struct report_markdown_opts o = { .rows = "dataset", .cols = "vm" };
	g_assert_cmpint(report_markdown(r, &o, f, &err), ==, 0);
	fclose(f);
	g_assert_nonnull(strstr(buf, "| dataset \\\\ vm | small |"));
	g_assert_nonnull(strstr(buf, "#### method=agent\n"));
	free(buf);
}

/* The provenance says how the runs' guests started (run.fresh), and nothing when no run said */
static void test_markdown_fresh(void)
{
	_cleanup_(results_freep) struct results *r = sample();
	size_t len;
	_cleanup_free_ char *none = render_to_string(render_md, r, &len);
	g_assert_null(strstr(none, "fresh guests"));
	for (size_t i = 0; i < r->cells[0].n_runs; i++)
		r->cells[0].runs[i].fresh = i < 2 ? "boot" : "restore";
	_cleanup_free_ char *md = render_to_string(render_md, r, &len);
	g_assert_nonnull(strstr(md, "| fresh guests | 4 runs in guests restored from a state saved "
				    "after one boot per VM configuration, 2 in booted guests |"));
	for (size_t i = 0; i < r->cells[0].n_runs; i++)
		r->cells[0].runs[i].fresh = "boot";
	_cleanup_free_ char *booted = render_to_string(render_md, r, &len);
	g_assert_nonnull(strstr(booted, "| fresh guests | every run in a booted guest |"));
}

/* Cells a and b measured in the same 4 blocks: b takes twice a's time in each: a is bold and b
 * says "slower"; two identical configurations (c and d, equal up to each block's noise) get no
 * bold winner and are called indistinguishable or inconclusive, never faster. */
static void test_markdown_verdicts(void)
{
	_cleanup_(results_freep) struct results *r = results_new();
	const char *ids[] = { "method=a", "method=b" };
	const double noise[4] = { 1.00, 1.03, 0.97, 1.01 }, jitter[4] = { 1.01, 0.99, 1.02, 1.00 };
	for (int g = 0; g < 2; g++)
		for (int k = 0; k < 2; k++) {
			char id[64];
			snprintf(id, sizeof(id), "vm=%s,%s", g ? "same" : "diff", ids[k]);
			struct result_cell *c = results_add_cell(r, id);
			result_cell_add_axis(c, "vm", g ? "same" : "diff");
			result_cell_add_axis(c, "method", ids[k] + 7);
			c->status = STATUS_PASSED;
			for (int b = 0; b < 4; b++)
				for (int i = 0; i < 2; i++) {
					double t = (g == 0 && k == 1 ? 2.0 : 1.0) * noise[b] *
						   (k ? jitter[b] : 1.0);
					struct result_run *run =
					    add_run(c, false, 0, t, 0, 0, 0, true);
					run->boot = 8 * g + 2 * b + k + 1;
					run->block = b + 1;
				}
			results_cell_compute_stats(c);
		}
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	_cleanup_free_ char *err = NULL;
	struct report_markdown_opts o = { .rows = "method", .cols = "vm" };
	g_assert_cmpint(report_markdown(r, &o, f, &err), ==, 0);
	fclose(f);
	const char *table = strstr(buf, "### Mean total time");
	g_assert_nonnull(table);
	g_assert_nonnull(strstr(table, "| a | **"));
	g_assert_nonnull(strstr(table, "x slower |"));
	/* the Verdicts section: one "faster", the identical pair never */
	g_assert_nonnull(strstr(buf, "a is 101.0% faster than b \\[95% CI "));
	g_assert_true(strstr(buf, "a and b are indistinguishable") ||
		      strstr(buf, "a vs b: inconclusive"));
	size_t faster = 0;
	for (const char *p = buf; (p = strstr(p, "% faster than")); p++)
		faster++;
	g_assert_cmpuint(faster, ==, 1);
	const char *rows = strstr(table, "| a | ");
	g_assert_nonnull(rows);
	/* row a: bold in diff, not in same (the second column) */
	const char *second = strstr(rows + 4, " | ");
	g_assert_nonnull(second);
	g_assert_cmpint(strncmp(second, " | **", 5), !=, 0);
	free(buf);
}

/* `metric`: a second table of that metric's means, best (highest rate) in bold, a cell without
 * it shown as a dash; an unknown metric is an error. */
static void test_markdown_metric(void)
{
	_cleanup_(results_freep) struct results *r = results_new();
	results_set_metric(r, "write_throughput", "B/s", true);
	const char *ids[] = { "method=a", "method=b", "method=c" };
	for (int k = 0; k < 3; k++) {
		struct result_cell *c = results_add_cell(r, ids[k]);
		result_cell_add_axis(c, "method", ids[k] + 7);
		c->status = STATUS_PASSED;
		for (int i = 0; i < 2; i++) {
			add_run(c, false, 0, 1.0, 0, 0, 0, true);
			if (k < 2)
				c->runs[i].metrics =
				    json_pack("{s:f}", "write_throughput", (k + 1) * 10e6);
		}
		results_cell_compute_stats(c);
	}
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	_cleanup_free_ char *err = NULL;
	struct report_markdown_opts o = { .metric = "write_throughput" };
	g_assert_cmpint(report_markdown(r, &o, f, &err), ==, 0);
	fclose(f);
	g_assert_nonnull(strstr(buf, "### Mean total time"));
	g_assert_nonnull(strstr(buf, "### Mean write\\_throughput"));
	/* one boot a side: the best is not bold, the other's verdict is inconclusive */
	g_assert_nonnull(
	    strstr(buf, "| a | 10.0\xc2\xa0MB/s \xc2\xb1 0.0<br>2.0x, inconclusive |"));
	g_assert_nonnull(strstr(buf, "| b | 20.0\xc2\xa0MB/s \xc2\xb1 0.0<br>1.00x |"));
	g_assert_nonnull(strstr(buf, "| c | \xe2\x80\x94 |"));
	g_assert_nonnull(strstr(buf, "higher is better"));
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &len);
	o.metric = "speed";
	g_assert_cmpint(report_markdown(r, &o, f, &err), ==, -1);
	fclose(f);
	g_assert_cmpstr(err, ==,
			"metric 'speed' is neither described in the results nor a metric "
			"of ferry(1) METRICS");
	free(buf);
}

/* Many runs: the report stays under the cap by dropping raw runs, and says so. */
static void test_markdown_cap(void)
{
	_cleanup_(results_freep) struct results *r = results_new();
	struct result_cell *c = results_add_cell(r, "method=agent,dataset=big");
	result_cell_add_axis(c, "method", "agent");
	result_cell_add_axis(c, "dataset", "big");
	c->status = STATUS_PASSED;
	for (int i = 0; i < 3000; i++)
		add_run(c, false, 0.1, 1.0 + i * 1e-4, 0.5, 0.1, 0.1, true);
	results_cell_compute_stats(c);

	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	_cleanup_free_ char *err = NULL;
	struct report_markdown_opts o = { .max_bytes = 50000 };
	g_assert_cmpint(report_markdown(r, &o, f, &err), ==, 0);
	fclose(f);
	g_assert_cmpuint(len, <, 50000);
	g_assert_cmpuint(len, >, 40000); /* it kept what fits */
	g_assert_nonnull(strstr(buf, "of 3000 runs are shown"));
	g_assert_nonnull(strstr(buf, "### Provenance"));
	g_assert_nonnull(strstr(buf, "</details>"));
	free(buf);

	/* with room enough, everything is there and nothing is said */
	buf = NULL;
	f = open_memstream(&buf, &len);
	g_assert_cmpint(report_markdown(r, NULL, f, &err), ==, 0);
	fclose(f);
	g_assert_null(strstr(buf, "runs are shown"));
	g_assert_nonnull(strstr(buf, "Raw runs (3000; times in seconds)"));
	g_assert_nonnull(strstr(buf, "| 2999 | measured |"));
	free(buf);
}

/* So many failing cells that even without raw runs the report is too big: it is cut at a line
 * end, says so, and still ends with the provenance. */
static void test_markdown_cap_body(void)
{
	_cleanup_(results_freep) struct results *r = results_new();
	_cleanup_free_ char *msg = g_strnfill(500, 'x');
	for (int i = 0; i < 200; i++) {
		_cleanup_free_ char *id = xasprintf("method=m%d", i);
		struct result_cell *c = results_add_cell(r, id);
		result_cell_add_axis(c, "method", id + 7);
		c->status = STATUS_ERROR;
		result_cell_add_error(c, ERROR_INFRA, "%s", msg);
	}
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	_cleanup_free_ char *err = NULL;
	struct report_markdown_opts o = { .max_bytes = 20000 };
	g_assert_cmpint(report_markdown(r, &o, f, &err), ==, 0);
	fclose(f);
	g_assert_cmpuint(len, <, 20000);
	g_assert_nonnull(strstr(buf, "This report was cut to stay under the size limit"));
	g_assert_nonnull(strstr(buf, "### Provenance"));
	g_assert_null(strstr(buf, "method=m199"));
	free(buf);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/reporters/markdown-bad-axis", test_markdown_bad_axis);
	g_test_add_func("/reporters/markdown-bad-axis-escaped", test_markdown_bad_axis_escaped);
	g_test_add_func("/reporters/markdown-axes", test_markdown_axes);
	g_test_add_func("/reporters/markdown-fresh", test_markdown_fresh);
	g_test_add_func("/reporters/markdown-metric", test_markdown_metric);
	g_test_add_func("/reporters/markdown-verdicts", test_markdown_verdicts);
	g_test_add_func("/reporters/markdown-cap", test_markdown_cap);
	g_test_add_func("/reporters/markdown-cap-body", test_markdown_cap_body);
	g_test_add_func("/reporters/design-section", test_design_section);
	return g_test_run();
}
