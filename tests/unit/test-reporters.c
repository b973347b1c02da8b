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
#include "reporters-sample.h"
#include "reporters.h"
#include "results.h"
#include "util.h"

static const struct {
	const char *golden;
	render_fn fn;
} outputs[] = {
	{ "report.xml", report_junit },    { "report.md", render_md },
	{ "report.bmf.json", report_bmf }, { "report.gab.json", report_gab },
	{ "report.json", report_json },
};

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
	g_test_add_func("/reporters/bmf-lower-bound", test_bmf_lower_bound);
	g_test_add_func("/reporters/export-metrics", test_export_metrics);
	g_test_add_func("/reporters/junit-tail-limit", test_junit_tail_limit);
	g_test_add_func("/reporters/junit-streams", test_junit_streams);
	g_test_add_func("/reporters/comma-locale", test_comma_locale);
	g_test_add_func("/reporters/output", test_output);
	g_test_add_func("/reporters/step-summary", test_step_summary);
	return g_test_run();
}
