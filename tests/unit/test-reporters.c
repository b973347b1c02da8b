/* SPDX-License-Identifier: MIT */
/*
 * Reporters: every output compared byte for byte with tests/golden/ (regenerate with
 * FERRY_UPDATE_GOLDEN=1 after checking the difference is intended), and the helpers they share.
 * Modes for the script tests (real consumers re-read what is written here):
 *   test-reporters --write-sample-results PATH   the sample results file
 *   test-reporters --write-empty-results PATH    a results file without cells or provenance
 *   test-reporters --render DIR                  every report of the sample, in the locale of
 *                                                the environment (prints its decimal point)
 */
#include <errno.h>
#include <glib.h>
#include <libxml/xmlmemory.h>
#include <malloc.h>
#include <glib/gstdio.h>
#include <locale.h>
#include <math.h>
#include <string.h>

#include "keys.h"
#include "pivot-verdicts.h"
#include "reporters.h"
#include "results.h"
#include "util.h"

static const char plan_text[] = "ferry: 1\nname: sample\n";

/* Phases are prepare, transfer, finalize, verify, cleanup. */
static struct result_run *add_run(struct result_cell *c, bool warmup, double prepare,
				  double transfer, double finalize, double verify, double cleanup,
				  bool ok)
{
	struct result_run *run = result_cell_add_run(c, warmup);
	run->phase[PHASE_PREPARE] = prepare;
	run->phase[PHASE_TRANSFER] = transfer;
	run->phase[PHASE_FINALIZE] = finalize;
	run->phase[PHASE_VERIFY] = verify;
	run->phase[PHASE_CLEANUP] = cleanup;
	run->total = result_run_total(run);
	run->bytes = UINT64_C(671088640);
	run->files = 10;
	run->integrity_ok = ok;
	return run;
}

static struct result_cell *add_cell(struct results *r, const char *vm, const char *dataset,
				    const char *method, enum result_status status, int64_t start)
{
	_cleanup_free_ char *id = xasprintf("vm=%s,dataset=%s,method=%s", vm, dataset, method);
	struct result_cell *c = results_add_cell(r, id);
	result_cell_add_axis(c, "vm", vm);
	result_cell_add_axis(c, "dataset", dataset);
	result_cell_add_axis(c, "method", method);
	c->status = status;
	if (start) {
		c->started_ms = start;
		c->finished_ms = start + 31750;
	}
	return c;
}

#define HOSTILE "we\"ird <script>alert(1)</script> | ]]> `x` *y* \x1b[1m\xc3\xa9t\xc3\xa9\nline2"

/*
 * Every case a reporter must handle: passed cells (one the fastest), warmups, an outlier, a
 * failed cell (integrity in one run and a broken criterion for the cell), a regression, an
 * infrastructure error before any run with a serial tail full of colour codes and control
 * characters, a skipped cell, a cell never run, a second vm (a second table), and hostile
 * strings (quotes, <, ]]>, |, backticks, ESC, non-ASCII, a newline) in names and messages.
 */
static struct results *sample(void)
{
	struct results *r = results_new();
	results_set_plan(r, "sample <b>plan</b> | 1", "plans/sample.yaml", plan_text,
			 strlen(plan_text));
	struct result_provenance *p = &r->provenance;
	p->ferry_version = xstrdup("0.1.0");
	p->hostname = xstrdup("builder-01");
	p->host_kernel = xstrdup("Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC x86_64");
	p->cpu_model = xstrdup("Intel(R) Xeon(R) CPU @ 2.20GHz");
	p->cpu_count = 2;
	p->memory_bytes = UINT64_C(8341037056);
	p->qemu_version = xstrdup("7.2.0");
	p->libvirt_version = xstrdup("9.0.0");
	p->accelerator = xstrdup("tcg");
	p->guest_kernel_sha256 =
	    xstrdup("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
	p->started_ms = INT64_C(1795993868123);
	p->finished_ms = INT64_C(1795994012001);
	results_add_dataset(r, "few-large",
			    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
			    json_pack("{s:i, s:s, s:i}", "files", 10, "size", "64MiB", "seed", 7));

	/* passed: a warmup, five measured runs, one an outlier */
	struct result_cell *c =
	    add_cell(r, "small", "few-large", "agent", STATUS_PASSED, INT64_C(1795993868500));
	c->params = json_pack("{s:{s:s, s:i}, s:s, s:b, s:f}", "vm", "memory", "1GiB", "vcpus", 2,
			      "archive", "tar", "fresh", 1, "ratio", 0.1);
	add_run(c, true, 0.5, 3.0, 1.0, 0.25, 0.125, true);
	add_run(c, false, 0.1, 2.0, 0.75, 0.2, 0.1, true);
	add_run(c, false, 0.1, 2.1, 0.7, 0.2, 0.1, true);
	add_run(c, false, 0.1, 1.9, 0.8, 0.21, 0.1, true);
	add_run(c, false, 0.1, 9.5, 0.75, 0.2, 0.1, true);
	add_run(c, false, 0.125, 2.05, 0.7, NAN, 0.1, true);
	results_cell_compute_stats(c);
	c->stop_reason = STATS_STOP_MAX;
	c->cpu_user_s = 0.42;
	c->cpu_sys_s = 0.0625;

	/* passed and the fastest of its column */
	c = add_cell(r, "small", "few-large", "image", STATUS_PASSED, INT64_C(1795993900300));
	add_run(c, false, 0.6, 0.05, 0.5, 0.2, 0.05, true);
	add_run(c, false, 0.62, 0.05, 0.52, 0.2, 0.05, true);
	add_run(c, false, 0.58, 0.06, 0.49, 0.2, 0.05, true);
	results_cell_compute_stats(c);
	c->stop_reason = STATS_STOP_CV;

	/* failed: integrity in run 1, and a broken criterion for the cell */
	c = add_cell(r, "small", "few-large", "share", STATUS_FAILED, INT64_C(1795993932100));
	add_run(c, false, NAN, 1.5, 2.5, 0.5, 0.1, true);
	add_run(c, false, NAN, 1.25, 2.4, 0.5, 0.1, false);
	add_run(c, false, NAN, 1.6, 2.6, 0.5, 0.1, true);
	results_cell_compute_stats(c);
	c->stop_reason = STATS_STOP_BUDGET;
	struct result_error *e = result_cell_add_error(
	    c, ERROR_INTEGRITY, "file 'dir/a.bin' differs: expected sha256 %s", "e3b0c442");
	e->run = 1;
	e->phase = PHASE_VERIFY;
	e->agent_message = xstrdup("sha256sum: dir/a.bin: I/O error");
	result_cell_add_error(c, ERROR_CRITERION, "throughput %s, expected at least %s",
			      "163.1 MB/s", "200 MB/s");

	/* error before any run: the guest did not boot */
	c = add_cell(r, "small", "many-small", "agent", STATUS_ERROR, INT64_C(1795993964000));
	e = result_cell_add_error(c, ERROR_INFRA, "guest did not boot within %s", "120 s");
	e->libvirt_message = xstrdup("internal error: process exited while connecting to "
				     "monitor: \"qemu\" <failed> ]]> | \xc3\xa9t\xc3\xa9");
	e->serial_tail = xstrdup("[    0.000000] Linux version 6.1\n"
				 "\x1b[31mKernel panic\x1b[0m - not syncing: VFS\r\n"
				 "bell\x07 nul-free \x01\x02\x1f del\x7f c1\xc2\x85 "
				 "bad\xff\xfe utf8 \xef\xbf\xbe nonchar\n"
				 "```\n<script>alert(1)</script>\n");

	/* skipped */
	c = add_cell(r, "small", "many-small", "share", STATUS_SKIPPED, 0);
	c->skip_reason = xstrdup("9p is not available on this host (no virtio-9p in QEMU)");

	/* passed but slower than the baseline: a regression */
	c = add_cell(r, "small", "many-small", "image", STATUS_FAILED, INT64_C(1795993980000));
	add_run(c, false, 1.2, 0.05, 3.3, 0.4, 0.05, true);
	add_run(c, false, 1.25, 0.05, 3.1, 0.4, 0.05, true);
	results_cell_compute_stats(c);
	c->stop_reason = STATS_STOP_MAX;
	result_cell_add_error(c, ERROR_REGRESSION,
			      "total mean %s slower than the baseline (95%% CI %s), limit %s",
			      "+18.2%", "+9.1% .. +27.4%", "+10%");

	/* hostile names everywhere, on a second vm (so a second table) */
	c = add_cell(r, "large" HOSTILE, HOSTILE, "agent", STATUS_PASSED, INT64_C(1795993995000));
	add_run(c, false, 0.1, 1.0, 0.5, 0.1, 0.1, true);
	results_cell_compute_stats(c);
	c->stop_reason = STATS_STOP_MAX;

	/* the run stopped before this cell */
	add_cell(r, "large" HOSTILE, HOSTILE, "image", STATUS_PENDING, 0);
	return r;
}

typedef int (*render_fn)(const struct results *, FILE *, char **);

static int render_md(const struct results *r, FILE *f, char **err)
{
	return report_markdown(r, NULL, f, err);
}

static const struct {
	const char *golden;
	render_fn fn;
} outputs[] = {
	{ "report.xml", report_junit },    { "report.md", render_md },
	{ "report.bmf.json", report_bmf }, { "report.gab.json", report_gab },
	{ "report.json", report_json },
};

static char *render_to_string(render_fn fn, const struct results *r, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	g_assert_nonnull(f);
	_cleanup_free_ char *err = NULL;
	int rc = fn(r, f, &err);
	fclose(f);
	g_assert_null(err);
	g_assert_cmpint(rc, ==, 0);
	return buf;
}

static void test_golden(gconstpointer data)
{
	size_t i = GPOINTER_TO_SIZE(data);
	_cleanup_(results_freep) struct results *r = sample();
	size_t len;
	_cleanup_free_ char *got = render_to_string(outputs[i].fn, r, &len);

	const char *src = g_getenv("FERRY_SOURCE_DIR");
	g_assert_nonnull(src);
	_cleanup_free_ char *path = xasprintf("%s/tests/golden/%s", src, outputs[i].golden);
	if (g_getenv("FERRY_UPDATE_GOLDEN")) {
		g_assert_true(g_file_set_contents(path, got, (gssize)len, NULL));
		g_test_message("rewrote %s", path);
		return;
	}
	size_t want_len;
	_cleanup_free_ char *want = read_file(path, &want_len);
	if (!want)
		g_error("%s: %s (regenerate with FERRY_UPDATE_GOLDEN=1)", path, strerror(errno));
	size_t k = 0;
	while (k < len && k < want_len && got[k] == want[k])
		k++;
	if (k != len || k != want_len)
		g_error("%s differs from the output at byte %zu (got %zu bytes, want %zu): "
			"...%.60s...",
			path, k, len, want_len, got + (k > 20 ? k - 20 : 0));
}

/* The JSON export is exactly what results_write() puts in a file once ferry run attached the
 * verdicts: the export computes them anew from the runs, and they come out the same. */
static void test_json_is_results_file(void)
{
	_cleanup_(results_freep) struct results *r = sample();
	size_t len, flen;
	_cleanup_free_ char *got = render_to_string(report_json, r, &len);
	g_assert_nonnull(strstr(got, "\n  \"verdicts\": [\n"));
	g_assert_nonnull(strstr(got, "\"verdict\": \""));
	_cleanup_free_ char *dir = g_dir_make_tmp("ferry-reporters-XXXXXX", NULL);
	_cleanup_free_ char *path = g_build_filename(dir, "r.json", NULL);
	_cleanup_free_ char *err = NULL;
	r->verdicts = report_verdicts_json(r, NULL, &err);
	g_assert_nonnull(r->verdicts);
	g_assert_cmpint(results_write(r, path, &err), ==, 0);
	_cleanup_free_ char *file = read_file(path, &flen);
	g_assert_cmpmem(got, len, file, flen);
	g_unlink(path);
	g_rmdir(dir);
}

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

static void test_clean_text(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "plain", "plain" },
		/* LF and TAB stay (Markdown and XML handle them); CR LF of serial consoles is LF */
		{ "tab\tnl\ncr\r", "tab\tnl\ncr\\r" },
		{ "crlf\r\nlone\rcr", "crlf\nlone\\rcr" },
		/* every other control is shown as its escape, never dropped nor passed through */
		{ "\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m" },
		{ "\x1b[1;38;5;208mbold\x1b[m", "\\x1b[1;38;5;208mbold\\x1b[m" },
		{ "\x1b]0;title\x07"
		  "after",
		  "\\x1b]0;title\\x07after" },
		{ "\x1b]8;;http://x\x1b\\link", "\\x1b]8;;http://x\\x1b\\link" },
		{ "esc\x1b", "esc\\x1b" },
		{ "\x1b"
		  "7saved",
		  "\\x1b"
		  "7saved" },
		{ "a\x01\x02\x08\x0b\x0c\x1f"
		  "b",
		  "a\\x01\\x02\\x08\\x0b\\x0c\\x1f"
		  "b" },
		{ "del\x7f", "del\\x7f" },
		{ "c1\xc2\x80\xc2\x9f", "c1\\u0080\\u009f" },
		{ "nbsp\xc2\xa0", "nbsp\xc2\xa0" },
		{ "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
		  "\xc3\xa9t\xc3\xa9 \xe2\x82\xac "
		  "\xf0\x9f\x98\x80" },
		/* bytes that are not UTF-8 are shown as their values */
		{ "bad\xff", "bad\\xff" },
		{ "trunc\xc3", "trunc\\xc3" },
		{ "overlong\xc0\xaf", "overlong\\xc0\\xaf" },
		{ "surrogate\xed\xa0\x80", "surrogate\\xed\\xa0\\x80" },
		/* noncharacters XML does not allow */
		{ "nonchar\xef\xbf\xbe\xef\xbf\xbf!", "nonchar\\ufffe\\uffff!" },
		{ "fffd\xef\xbf\xbd", "fffd\xef\xbf\xbd" },
		{ "max\xf4\x8f\xbf\xbf", "max\xf4\x8f\xbf\xbf" },
		{ "beyond\xf4\x90\x80\x80", "beyond\\xf4\\x90\\x80\\x80" },
		{ "", "" },
		/* issue 24, class 9: a console line "::stop-commands::x" must not reach column 0
		 * of a CI log (it stops GitHub's annotation processing) */
		{ "boot\n::stop-commands::x\n", "boot\n\\x3a:stop-commands::x\n" },
		{ "::warning::forged", "\\x3a:warning::forged" },
		{ "a\r\n::error::x", "a\n\\x3a:error::x" },
		{ "in a line :: stays", "in a line :: stays" },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_free_ char *got = report_clean_text(cases[i].in);
		g_assert_cmpstr(got, ==, cases[i].out);
	}
	_cleanup_free_ char *null = report_clean_text(NULL);
	g_assert_cmpstr(null, ==, "");
}

static void test_text_tail(void)
{
	bool cut;
	g_assert_cmpstr(report_text_tail("short", 10, &cut), ==, "short");
	g_assert_false(cut);
	/* starts at the next line when one is near */
	g_assert_cmpstr(report_text_tail("first line\nsecond\nthird\n", 16, &cut), ==,
			"second\nthird\n");
	g_assert_true(cut);
	/* never in the middle of a UTF-8 character */
	g_assert_cmpstr(report_text_tail("\xc3\xa9\xc3\xa9\xc3\xa9", 3, &cut), ==, "\xc3\xa9");
	g_assert_true(cut);
}

static void test_timestamp(void)
{
	char buf[32];
	g_assert_cmpstr(report_format_timestamp(INT64_C(1795993868123), buf, sizeof(buf)), ==,
			"2026-11-29T23:11:08");
	g_assert_cmpstr(report_format_timestamp(0, buf, sizeof(buf)), ==, "1970-01-01T00:00:00");
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

/* Two runs far apart: the mean's interval reaches below 0 s, and BMF cuts it at 0. */
static void test_bmf_lower_bound(void)
{
	_cleanup_(results_freep) struct results *r = results_new();
	struct result_cell *c = results_add_cell(r, "method=agent");
	c->status = STATUS_PASSED;
	add_run(c, false, 0, 1.0, 0, 0, 0, true);
	add_run(c, false, 0, 10.0, 0, 0, 0, true);
	results_cell_compute_stats(c);
	g_assert_cmpfloat(c->stats.total.ci_low, <, 0);
	size_t len;
	_cleanup_free_ char *text = render_to_string(report_bmf, r, &len);
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr);
	g_assert_nonnull(j);
	json_t *lat = json_object_get(json_object_get(j, "method=agent"), "latency");
	g_assert_cmpfloat(json_real_value(json_object_get(lat, "lower_value")), ==, 0.0);
	g_assert_cmpfloat(json_real_value(json_object_get(lat, "value")), ==, 5.5e9);
	g_assert_cmpfloat(json_real_value(json_object_get(lat, "upper_value")), >, 10e9);
	json_decref(j);
}

/* The per-run metrics become BMF measures (mean and CI) and lines of github-action-benchmark's
 * extra; a metric no run reported is not exported. */
static void test_export_metrics(void)
{
	_cleanup_(results_freep) struct results *r = results_new();
	results_set_metric(r, "write_throughput", "B/s", true);
	results_set_metric(r, "cpu_qemu", "s", false);
	struct result_cell *c = results_add_cell(r, "method=block");
	c->status = STATUS_PASSED;
	for (int i = 0; i < 3; i++) {
		add_run(c, false, 0, 1.0, 0, 0, 0, true);
		c->runs[i].metrics = json_pack("{s:f}", "write_throughput", 1e6 * (i + 1));
	}
	results_cell_compute_stats(c);
	size_t len;
	_cleanup_free_ char *text = render_to_string(report_bmf, r, &len);
	json_t *j = json_loads(text, 0, NULL);
	g_assert_nonnull(j);
	json_t *b = json_object_get(j, "method=block");
	json_t *w = json_object_get(b, "write_throughput");
	g_assert_cmpfloat(json_real_value(json_object_get(w, "value")), ==, 2e6);
	g_assert_cmpfloat(json_real_value(json_object_get(w, "lower_value")), <, 2e6);
	g_assert_null(json_object_get(b, "cpu_qemu"));
	json_decref(j);
	_cleanup_free_ char *junit = render_to_string(report_junit, r, &len);
	g_assert_nonnull(strstr(junit, "<property name=\"metric.write_throughput.median\" "
				       "value=\"2000000\""));
	g_assert_nonnull(strstr(junit, "<property name=\"metric.write_throughput.n\" value=\"3\""));
	_cleanup_free_ char *gab = render_to_string(report_gab, r, &len);
	g_assert_nonnull(strstr(gab, "write_throughput: 2e+06 B/s"));
	g_assert_null(strstr(gab, "cpu_qemu"));
}

/* The serial tail in <system-out> keeps the end of a long console log, not more than 64 KiB. */
static void test_junit_tail_limit(void)
{
	_cleanup_(results_freep) struct results *r = results_new();
	struct result_cell *c = results_add_cell(r, "method=agent");
	c->status = STATUS_ERROR;
	struct result_error *e = result_cell_add_error(c, ERROR_TIMEOUT, "agent timed out");
	GString *log = g_string_new(NULL);
	for (int i = 0; i < 20000; i++)
		g_string_append_printf(log, "line %d\n", i);
	e->serial_tail = g_string_free(log, FALSE);
	size_t len;
	_cleanup_free_ char *xml = render_to_string(report_junit, r, &len);
	g_assert_nonnull(strstr(xml, "line 19999\n"));
	g_assert_null(strstr(xml, "line 100\n"));
	g_assert_nonnull(strstr(xml, "(truncated: last 64 KiB)"));
	g_assert_cmpuint(len, <, REPORT_SERIAL_TAIL_MAX + 4096 + 4096);
	g_assert_nonnull(strstr(xml, "<error type=\"timeout\" message=\"agent timed out\">"));
}

/*
 * What libxml2 holds while the JUnit report is written, counted through xmlMemSetup(): the
 * report is streamed, so the most it holds at once is the writer and its output buffer, the
 * same for 20 cells as for 2000 (a document tree grows by some 100 KB per cell). A count of
 * bytes held, never a time or the process's RSS.
 */
static size_t xml_live, xml_peak;
static bool xml_counting;

static void xml_account(void *p, bool add)
{
	if (!p)
		return;
	size_t n = malloc_usable_size(p);
	xml_live = add ? xml_live + n : xml_live - n;
	if (xml_live > xml_peak)
		xml_peak = xml_live;
}

static void *xml_malloc(size_t n)
{
	void *p = malloc(n);
	xml_account(p, true);
	return p;
}

static void xml_free(void *p)
{
	xml_account(p, false);
	free(p);
}

static void *xml_realloc(void *p, size_t n)
{
	size_t old = p ? malloc_usable_size(p) : 0;
	void *q = realloc(p, n);
	if (q) {
		xml_live -= old;
		xml_account(q, true);
	}
	return q;
}

static char *xml_strdup(const char *s)
{
	char *p = strdup(s);
	xml_account(p, true);
	return p;
}

/* The most libxml2 held at once while rendering the JUnit report of `cells` cells. */
static size_t junit_peak_for(size_t cells)
{
	_cleanup_(results_freep) struct results *r = results_new();
	results_set_plan(r, "scale", "plans/scale.yaml", plan_text, strlen(plan_text));
	for (size_t i = 0; i < cells; i++) {
		_cleanup_free_ char *ds = xasprintf("d%zu", i);
		struct result_cell *c = add_cell(r, "small", ds, "agent", STATUS_FAILED, 0);
		for (int k = 0; k < 5; k++)
			add_run(c, k == 0, 0.1, 2.0 + k, 0.7, 0.2, 0.1, k != 3);
		result_cell_add_error(c, ERROR_CRITERION, "throughput below 200 MB/s");
		results_cell_compute_stats(c);
	}
	FILE *f = fopen("/dev/null", "w");
	g_assert_nonnull(f);
	size_t base = xml_live;
	xml_peak = xml_live;
	_cleanup_free_ char *err = NULL;
	g_assert_cmpint(report_junit(r, f, &err), ==, 0);
	fclose(f);
	return xml_peak - base;
}

static void test_junit_streams(void)
{
	if (!xml_counting) {
		g_test_skip("libxml2 was initialised before its allocator could be counted");
		return;
	}
	size_t small = junit_peak_for(20), large = junit_peak_for(2000);
	g_test_message("libxml2 peak: %zu bytes for 20 cells, %zu for 2000", small, large);
	g_assert_cmpuint(small, >, 0); /* the counting sees libxml2 at all */
	/* the same buffers whatever the size: room for a page of slack, not for 1980 cells */
	g_assert_cmpuint(large, <=, small + 4096);
}

/* Formatting follows the C locale even when the thread's numeric locale has a decimal comma. */
static void test_comma_locale(void)
{
	const char *names[] = { "de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "de_DE" };
	const char *got = NULL;
	for (size_t i = 0; i < ELEMENTSOF(names) && !got; i++)
		got = setlocale(LC_NUMERIC, names[i]);
	if (!got || localeconv()->decimal_point[0] != ',') {
		setlocale(LC_NUMERIC, "C");
		g_test_skip(
		    "no comma-decimal locale installed (tests/report-locale.sh builds one)");
		return;
	}
	_cleanup_(results_freep) struct results *r = sample();
	size_t len;
	_cleanup_free_ char *xml = render_to_string(report_junit, r, &len);
	setlocale(LC_NUMERIC, "C");
	g_assert_nonnull(strstr(xml, "time=\"2.850\""));
}

static void test_output(void)
{
	_cleanup_free_ char *dir = g_dir_make_tmp("ferry-reporters-XXXXXX", NULL);
	_cleanup_free_ char *path = g_build_filename(dir, "out.md", NULL);
	_cleanup_free_ char *bad = g_build_filename(dir, "missing", "out.md", NULL);
	_cleanup_free_ char *err = NULL;
	struct report_output o;

	/* a path in a directory that does not exist fails at open */
	g_assert_cmpint(report_output_open(&o, bad, &err), ==, -1);
	g_assert_nonnull(strstr(err, "cannot create a file in"));
	report_output_abort(&o);

	/* aborted: nothing is left behind */
	g_assert_cmpint(report_output_open(&o, path, &err), ==, 0);
	fputs("half", o.f);
	report_output_abort(&o);
	GDir *d = g_dir_open(dir, 0, NULL);
	g_assert_null(g_dir_read_name(d));
	g_dir_close(d);

	/* committed: the file appears whole under its name */
	g_assert_cmpint(report_output_open(&o, path, &err), ==, 0);
	g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
	fputs("whole\n", o.f);
	g_assert_cmpint(report_output_commit(&o, &err), ==, 0);
	_cleanup_free_ char *text = read_file(path, NULL);
	g_assert_cmpstr(text, ==, "whole\n");

	/* a directory as the target is refused */
	free(err);
	err = NULL;
	g_assert_cmpint(report_output_open(&o, dir, &err), ==, -1);
	g_assert_nonnull(strstr(err, "is a directory"));
	g_unlink(path);
	g_rmdir(dir);
}

static void test_step_summary(void)
{
	_cleanup_free_ char *dir = g_dir_make_tmp("ferry-reporters-XXXXXX", NULL);
	_cleanup_free_ char *path = g_build_filename(dir, "summary.md", NULL);
	_cleanup_free_ char *err = NULL;

	g_unsetenv("GITHUB_STEP_SUMMARY");
	g_assert_cmpint(report_step_summary_append("x", 1, &err), ==, 0);
	g_setenv("GITHUB_STEP_SUMMARY", path, TRUE);
	g_assert_cmpint(report_step_summary_append("one\n", 4, &err), ==, 1);
	g_assert_cmpint(report_step_summary_append("two\n", 4, &err), ==, 1);
	_cleanup_free_ char *text = read_file(path, NULL);
	g_assert_cmpstr(text, ==, "one\ntwo\n");
	g_setenv("GITHUB_STEP_SUMMARY", dir, TRUE); /* a directory cannot be appended to */
	g_assert_cmpint(report_step_summary_append("x", 1, &err), ==, -1);
	g_assert_nonnull(err);
	g_unsetenv("GITHUB_STEP_SUMMARY");
	g_unlink(path);
	g_rmdir(dir);
}

/* The sample, or (empty) a results model with no plan name, no host and no cells. */
static int write_sample_results(const char *path, bool empty)
{
	_cleanup_(results_freep) struct results *r = empty ? results_new() : sample();
	_cleanup_free_ char *err = NULL;
	/* with its verdicts, as ferry run writes them (and ferry report --json computes anew) */
	r->verdicts = report_verdicts_json(r, NULL, &err);
	if (!r->verdicts || results_write(r, path, &err) < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	return 0;
}

/* Render every report in the environment's locale, to show it does not leak into the output. */
static int render_all(const char *dir)
{
	setlocale(LC_ALL, "");
	printf("decimal point: '%s'\n", localeconv()->decimal_point);
	_cleanup_(results_freep) struct results *r = sample();
	for (size_t i = 0; i < ELEMENTSOF(outputs); i++) {
		_cleanup_free_ char *path = xasprintf("%s/%s", dir, outputs[i].golden);
		FILE *f = fopen(path, "w");
		_cleanup_free_ char *err = NULL;
		if (!f || outputs[i].fn(r, f, &err) < 0) {
			fprintf(stderr, "%s: %s\n", path, err ? err : strerror(errno));
			if (f)
				fclose(f);
			return 1;
		}
		fclose(f);
	}
	return 0;
}

/* The format table (reporters/formats.h): every row is whole and renders the sample, names are
 * unique, and the plan has one report key per row, by the same name and in the same order (its
 * bit in the `set` mask is the format). */
static void test_format_table(void)
{
	_cleanup_(results_freep) struct results *r = sample();
	g_assert_cmpuint(plan_report_keys.n_keys, ==, REPORT_FORMAT_COUNT);
	for (int i = 0; i < REPORT_FORMAT_COUNT; i++) {
		const struct report_format_def *d = &report_formats[i];
		g_assert_nonnull(d->name);
		g_assert_nonnull(d->write);
		g_assert_true(d->doc && *d->doc);
		g_assert_true(d->suffix && d->suffix[0] == '.');
		g_assert_cmpstr(report_format_name(i), ==, d->name);
		g_assert_cmpint(report_format_find(d->name), ==, i);
		g_assert_cmpstr(plan_report_keys.keys[i].name, ==, d->name);
		for (int j = 0; j < i; j++)
			g_assert_cmpstr(report_formats[j].name, !=, d->name);

		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		_cleanup_free_ char *err = NULL;
		int rc = report_render(i, r, NULL, f, &err);
		fclose(f);
		g_assert_null(err);
		g_assert_cmpint(rc, ==, 0);
		g_assert_cmpuint(len, >, 0);
		free(buf);
	}
	g_assert_cmpint(report_format_find("nope"), ==, -1);
	g_assert_cmpstr(report_format_name(REPORT_FORMAT_COUNT), ==, "?");
}

/* The metric table (metrics.h): names unique, the plan's criteria[].metric values are its names
 * in its order (the enum index is the row), only run metrics are per-run metrics, and a new
 * results file describes every metric a cell has with the row's unit and direction. */
static void test_metric_table(void)
{
	const struct key_def *k = key_find(&plan_criterion_keys, "metric");
	g_assert_nonnull(k);
	_cleanup_(results_freep) struct results *r = results_new();
	for (int i = 0; i < METRIC_COUNT; i++) {
		const struct metric_def *d = &metric_defs[i];
		g_assert_true(d->name && d->unit && d->doc && *d->doc);
		g_assert_cmpint(metric_find(d->name), ==, i);
		g_assert_cmpstr(k->values[i], ==, d->name);
		g_assert_true((result_metric_def_find(d->name) != NULL) == (d->kind == METRIC_RUN));
		const struct result_metric *m = results_find_metric(r, d->name);
		if (d->kind == METRIC_CELL || d->kind == METRIC_PHASE) {
			g_assert_nonnull(m);
			g_assert_cmpstr(m->unit, ==, d->unit);
			g_assert_true(m->higher_better == d->higher_better);
		} else {
			g_assert_null(m);
		}
		for (int j = 0; j < i; j++)
			g_assert_cmpstr(metric_defs[j].name, !=, d->name);
	}
	g_assert_null(k->values[METRIC_COUNT]);
	g_assert_cmpint(metric_find("phase.copy"), ==, -1);
	_cleanup_free_ char *man = metric_man();
	for (int i = 0; i < METRIC_COUNT; i++)
		g_assert_nonnull(strstr(man, metric_defs[i].name));
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* before anything makes libxml2 allocate (test_junit_streams counts its bytes) */
	xml_counting = xmlMemSetup(xml_free, xml_malloc, xml_realloc, xml_strdup) == 0;
	if (argc == 3 && STREQ(argv[1], "--write-sample-results"))
		return write_sample_results(argv[2], false);
	if (argc == 3 && STREQ(argv[1], "--write-empty-results"))
		return write_sample_results(argv[2], true);
	if (argc == 3 && STREQ(argv[1], "--render"))
		return render_all(argv[2]);

	g_test_init(&argc, &argv, NULL);
	for (size_t i = 0; i < ELEMENTSOF(outputs); i++) {
		_cleanup_free_ char *name = xasprintf("/reporters/golden/%s", outputs[i].golden);
		g_test_add_data_func(name, GSIZE_TO_POINTER(i), test_golden);
	}
	g_test_add_func("/reporters/format-table", test_format_table);
	g_test_add_func("/reporters/metric-table", test_metric_table);
	g_test_add_func("/reporters/json-is-results-file", test_json_is_results_file);
	g_test_add_func("/reporters/clean-text", test_clean_text);
	g_test_add_func("/reporters/text-tail", test_text_tail);
	g_test_add_func("/reporters/timestamp", test_timestamp);
	g_test_add_func("/reporters/markdown-bad-axis", test_markdown_bad_axis);
	g_test_add_func("/reporters/markdown-bad-axis-escaped", test_markdown_bad_axis_escaped);
	g_test_add_func("/reporters/markdown-axes", test_markdown_axes);
	g_test_add_func("/reporters/markdown-fresh", test_markdown_fresh);
	g_test_add_func("/reporters/markdown-metric", test_markdown_metric);
	g_test_add_func("/reporters/markdown-verdicts", test_markdown_verdicts);
	g_test_add_func("/reporters/markdown-cap", test_markdown_cap);
	g_test_add_func("/reporters/markdown-cap-body", test_markdown_cap_body);
	g_test_add_func("/reporters/bmf-lower-bound", test_bmf_lower_bound);
	g_test_add_func("/reporters/export-metrics", test_export_metrics);
	g_test_add_func("/reporters/junit-tail-limit", test_junit_tail_limit);
	g_test_add_func("/reporters/junit-streams", test_junit_streams);
	g_test_add_func("/reporters/comma-locale", test_comma_locale);
	g_test_add_func("/reporters/output", test_output);
	g_test_add_func("/reporters/design-section", test_design_section);
	g_test_add_func("/reporters/step-summary", test_step_summary);
	return g_test_run();
}
