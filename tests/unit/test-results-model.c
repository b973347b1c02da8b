/* SPDX-License-Identifier: MIT */
/*
 * The results model and its file: lossless round trip, atomic rewrite, reader errors.
 * `test-results-model --write-sample PATH` writes the sample document (tests/results-schema.sh
 * validates it against schema/ferry-results.schema.json).
 */
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>

#include "results-sample.h"
#include "results.h"
#include "util.h"

/* doubles are equal when bit-identical in value, NAN equal to NAN */
static void assert_same_double(double a, double b)
{
	if (isnan(a) || isnan(b)) {
		g_assert_true(isnan(a) && isnan(b));
		return;
	}
	g_assert_cmpfloat(a, ==, b);
}

static void assert_same_str(const char *a, const char *b)
{
	g_assert_cmpstr(a, ==, b);
}

static void assert_same_summary(const struct stats_summary *a, const struct stats_summary *b)
{
	g_assert_cmpuint(a->n, ==, b->n);
	assert_same_double(a->mean, b->mean);
	assert_same_double(a->median, b->median);
	assert_same_double(a->stddev, b->stddev);
	assert_same_double(a->cv, b->cv);
	assert_same_double(a->min, b->min);
	assert_same_double(a->max, b->max);
	assert_same_double(a->p90, b->p90);
	assert_same_double(a->ci_low, b->ci_low);
	assert_same_double(a->ci_high, b->ci_high);
}

static void assert_same_json(const json_t *a, const json_t *b)
{
	if (!a || !b) {
		g_assert_true(a == b);
		return;
	}
	g_assert_true(json_equal(a, b));
}

static void assert_same_results(const struct results *a, const struct results *b)
{
	g_assert_cmpint(a->version, ==, b->version);
	assert_same_str(a->plan.name, b->plan.name);
	assert_same_str(a->plan.path, b->plan.path);
	assert_same_str(a->plan.sha256, b->plan.sha256);
	assert_same_str(a->plan.text, b->plan.text);
	g_assert_cmpuint(a->n_metrics, ==, b->n_metrics);
	for (size_t i = 0; i < a->n_metrics; i++) {
		g_assert_cmpstr(a->metrics[i].name, ==, b->metrics[i].name);
		g_assert_cmpstr(a->metrics[i].unit, ==, b->metrics[i].unit);
		g_assert_cmpint(a->metrics[i].higher_better, ==, b->metrics[i].higher_better);
	}

	const struct result_provenance *p = &a->provenance, *q = &b->provenance;
	assert_same_str(p->ferry_version, q->ferry_version);
	assert_same_str(p->hostname, q->hostname);
	assert_same_str(p->host_kernel, q->host_kernel);
	assert_same_str(p->cpu_model, q->cpu_model);
	g_assert_cmpuint(p->cpu_count, ==, q->cpu_count);
	g_assert_cmpuint(p->memory_bytes, ==, q->memory_bytes);
	assert_same_str(p->qemu_version, q->qemu_version);
	assert_same_str(p->libvirt_version, q->libvirt_version);
	assert_same_str(p->accelerator, q->accelerator);
	assert_same_str(p->guest_kernel_sha256, q->guest_kernel_sha256);
	assert_same_str(p->guest_initramfs_sha256, q->guest_initramfs_sha256);
	g_assert_cmpint(p->started_ms, ==, q->started_ms);
	g_assert_cmpint(p->finished_ms, ==, q->finished_ms);
	g_assert_cmpuint(p->n_datasets, ==, q->n_datasets);
	for (size_t i = 0; i < p->n_datasets; i++) {
		assert_same_str(p->datasets[i].name, q->datasets[i].name);
		assert_same_str(p->datasets[i].manifest_sha256, q->datasets[i].manifest_sha256);
		assert_same_json(p->datasets[i].spec, q->datasets[i].spec);
	}

	g_assert_cmpuint(a->n_cells, ==, b->n_cells);
	for (size_t i = 0; i < a->n_cells; i++) {
		const struct result_cell *c = &a->cells[i], *d = &b->cells[i];
		assert_same_str(c->id, d->id);
		g_assert_cmpuint(c->n_axes, ==, d->n_axes);
		for (size_t k = 0; k < c->n_axes; k++) {
			assert_same_str(c->axes[k].key, d->axes[k].key);
			assert_same_str(c->axes[k].value, d->axes[k].value);
		}
		assert_same_json(c->params, d->params);
		assert_same_json(c->observed, d->observed);
		g_assert_cmpint(c->status, ==, d->status);
		assert_same_str(c->skip_reason, d->skip_reason);
		g_assert_cmpuint(c->n_errors, ==, d->n_errors);
		for (size_t k = 0; k < c->n_errors; k++) {
			const struct result_error *e = &c->errors[k], *f = &d->errors[k];
			g_assert_cmpint(e->kind, ==, f->kind);
			assert_same_str(e->message, f->message);
			g_assert_cmpint(e->run, ==, f->run);
			g_assert_cmpint(e->phase, ==, f->phase);
			assert_same_str(e->libvirt_message, f->libvirt_message);
			assert_same_str(e->agent_message, f->agent_message);
			assert_same_str(e->serial_tail, f->serial_tail);
		}
		g_assert_cmpuint(c->n_runs, ==, d->n_runs);
		for (size_t k = 0; k < c->n_runs; k++) {
			const struct result_run *x = &c->runs[k], *y = &d->runs[k];
			g_assert_cmpuint(x->index, ==, y->index);
			g_assert_cmpint(x->warmup, ==, y->warmup);
			for (size_t ph = 0; ph < PHASE_COUNT; ph++)
				assert_same_double(x->phase[ph], y->phase[ph]);
			assert_same_double(x->total, y->total);
			g_assert_cmpuint(x->bytes, ==, y->bytes);
			g_assert_cmpuint(x->files, ==, y->files);
			g_assert_cmpint(x->integrity_ok, ==, y->integrity_ok);
			g_assert_cmpint(x->outlier, ==, y->outlier);
			g_assert_cmpint(x->boot, ==, y->boot);
			g_assert_cmpint(x->started_ms, ==, y->started_ms);
			g_assert_true((!x->metrics && !y->metrics) ||
				      json_equal(x->metrics, y->metrics));
		}
		g_assert_cmpint(c->has_stats, ==, d->has_stats);
		if (c->has_stats) {
			assert_same_summary(&c->stats.total, &d->stats.total);
			for (size_t ph = 0; ph < PHASE_COUNT; ph++)
				assert_same_summary(&c->stats.phase[ph], &d->stats.phase[ph]);
			assert_same_double(c->stats.bytes_per_s, d->stats.bytes_per_s);
			assert_same_double(c->stats.files_per_s, d->stats.files_per_s);
			g_assert_cmpuint(c->stats.outliers, ==, d->stats.outliers);
		}
		g_assert_cmpint(c->stop_reason, ==, d->stop_reason);
		assert_same_double(c->cpu_user_s, d->cpu_user_s);
		assert_same_double(c->cpu_sys_s, d->cpu_sys_s);
		g_assert_cmpint(c->started_ms, ==, d->started_ms);
		g_assert_cmpint(c->finished_ms, ==, d->finished_ms);
	}
}

static char *scratch_dir(void)
{
	GError *error = NULL;
	char *dir = g_dir_make_tmp("ferry-results-XXXXXX", &error);
	g_assert_no_error(error);
	return dir;
}

static size_t count_entries(const char *dir)
{
	GDir *d = g_dir_open(dir, 0, NULL);
	size_t n = 0;
	g_assert_nonnull(d);
	while (g_dir_read_name(d))
		n++;
	g_dir_close(d);
	return n;
}

static void remove_dir(const char *dir)
{
	GDir *d = g_dir_open(dir, 0, NULL);
	const char *name;
	g_assert_nonnull(d);
	while ((name = g_dir_read_name(d))) {
		char *p = g_build_filename(dir, name, NULL);
		g_assert_cmpint(g_unlink(p), ==, 0);
		g_free(p);
	}
	g_dir_close(d);
	g_assert_cmpint(g_rmdir(dir), ==, 0);
}

static void test_compute_stats(void)
{
	struct results *r = sample();
	const struct result_cell *c = &r->cells[0];

	/* measured totals (the warmup's 4.5 excluded):
	 *   2.85, 2.9, 1/3+1.9+0.8 = 3.0333.., 10.35, 0.123456789012345+2.05+0.7 = 2.8734567..
	 * sorted 2.8734567, 2.85?  no: 2.85 < 2.8734567 < 2.9 < 3.0333 < 10.35 -> median 2.9.
	 * |x - 2.9|: .05, .0265432, 0, .1333, 7.45 -> MAD .05; M(10.35) = .6745*7.45/.05 = 100.5 */
	g_assert_true(c->has_stats);
	g_assert_cmpuint(c->stats.total.n, ==, 5);
	assert_near(c->stats.total.median, 2.9, 1e-12);
	assert_near(c->stats.total.min, 2.85, 1e-12);
	assert_near(c->stats.total.max, 10.35, 1e-12);
	g_assert_cmpuint(c->stats.outliers, ==, 1);
	g_assert_false(c->runs[0].outlier); /* warmups are never flagged */
	g_assert_true(c->runs[4].outlier);
	for (size_t i = 1; i < c->n_runs; i++)
		if (i != 4)
			g_assert_false(c->runs[i].outlier);
	/* verify is timed but never counted: run 1 total 0.1+2.0+0.75 */
	assert_near(c->runs[1].total, 2.85, 1e-12);
	/* per phase: verify has 4 values (one run did not verify), transfer 5 */
	g_assert_cmpuint(c->stats.phase[PHASE_VERIFY].n, ==, 4);
	g_assert_cmpuint(c->stats.phase[PHASE_TRANSFER].n, ==, 5);
	assert_near(c->stats.phase[PHASE_TRANSFER].median, 2.05, 1e-12);
	/* throughput from the median total: 671088640 B / 2.9 s, 10 files / 2.9 s */
	assert_near(c->stats.bytes_per_s, 671088640 / 2.9, 1e-3);
	assert_near(c->stats.files_per_s, 10 / 2.9, 1e-12);

	/* a run that failed integrity is not a measurement */
	c = &r->cells[1];
	g_assert_cmpuint(c->stats.total.n, ==, 1);
	assert_near(c->stats.total.mean, 4.0, 1e-12);
	g_assert_true(isnan(c->stats.total.stddev));
	results_free(r);
}

static void test_round_trip(void)
{
	_cleanup_free_ char *dir = scratch_dir();
	_cleanup_free_ char *path = g_build_filename(dir, "out.json", NULL);
	_cleanup_free_ char *again = g_build_filename(dir, "again.json", NULL);
	struct results *r = sample();
	r->plan.control = xstrdup("dataset=small");
	char *err = NULL;

	g_assert_cmpint(results_write(r, path, &err), ==, 0);
	g_assert_null(err);
	struct results *back = results_read(path, &err);
	g_assert_null(err);
	g_assert_nonnull(back);
	assert_same_results(r, back);
	/* the plan's control cell, for a compare that names none */
	g_assert_cmpstr(back->plan.control, ==, "dataset=small");

	/* the plan hash is SHA-256 of the plan's bytes (sha256sum of plan_text) */
	g_assert_cmpstr(back->plan.sha256, ==,
			"cf8a642fe3848c05e2ee8c869ed58b79cb5f379d6ffb0313c63e8aac0533cd21");

	/* writing what was read gives the same bytes */
	g_assert_cmpint(results_write(back, again, &err), ==, 0);
	gchar *a = NULL, *b = NULL;
	gsize la, lb;
	g_assert_true(g_file_get_contents(path, &a, &la, NULL));
	g_assert_true(g_file_get_contents(again, &b, &lb, NULL));
	g_assert_cmpmem(a, la, b, lb);
	/* numbers in the C locale with enough digits: 1/3 + 1.9 + 0.8 */
	g_assert_nonnull(strstr(a, "0.33333333333333331"));
	g_assert_nonnull(strstr(a, "\"ferry_results\": 2"));
	g_assert_nonnull(strstr(a, "\"verify\": null"));
	/* ESC is escaped, not written raw */
	g_assert_nonnull(strstr(a, "\\u001B[31mKernel panic"));
	g_assert_null(strchr(a, '\x1b'));
	g_free(a);
	g_free(b);

	results_free(back);
	results_free(r);
	remove_dir(dir);
}

static void test_doubles_exact(void)
{
	/* every finite double survives the text form bit for bit: random bit patterns (subnormals,
	 * huge and tiny values included) plus the usual suspects */
	struct results *r = results_new();
	struct result_cell *c = results_add_cell(r, "x=1");
	static const double fixed[] = { 0.1,
					1.0 / 3,
					2.0 / 3,
					1e-9,
					123456.789,
					5e-324,
					2.2250738585072014e-308,
					1.7976931348623157e308,
					-0.0,
					0 };
	size_t n = 0;

	for (size_t i = 0; i < 2000; i++) {
		struct result_run *run = result_cell_add_run(c, false);
		for (size_t p = 0; p < PHASE_COUNT; p++) {
			double d;
			if (n < ELEMENTSOF(fixed)) {
				d = fixed[n++];
			} else {
				do {
					uint64_t bits = (uint64_t)g_test_rand_int() << 32 |
							(uint32_t)g_test_rand_int();
					memcpy(&d, &bits, sizeof(d));
				} while (!isfinite(d));
			}
			run->phase[p] = d;
		}
	}
	json_t *j = results_to_json(r);
	char *text = json_dumps(j, JSON_REAL_PRECISION(17));
	json_error_t jerr;
	json_t *back_j = json_loads(text, 0, &jerr);
	g_assert_nonnull(back_j);
	char *err = NULL;
	struct results *back = results_from_json(back_j, &err);
	g_assert_null(err);
	for (size_t i = 0; i < c->n_runs; i++)
		for (size_t p = 0; p < PHASE_COUNT; p++)
			g_assert_cmpmem(&c->runs[i].phase[p], sizeof(double),
					&back->cells[0].runs[i].phase[p], sizeof(double));
	results_free(back);
	json_decref(back_j);
	free(text);
	json_decref(j);
	results_free(r);
}

static void test_invalid_utf8(void)
{
	/* bytes that are not UTF-8 (a serial console can produce anything) become U+FFFD instead
	 * of making the writer fail */
	struct results *r = results_new();
	struct result_cell *c = results_add_cell(r, "x=1");
	struct result_error *e = result_cell_add_error(c, ERROR_INFRA, "boot failed");
	e->serial_tail = xstrdup("ok \xff\xfe bad \xc3 end \xed\xa0\x80 \xe2\x82\xac");
	json_t *j = results_to_json(r);
	g_assert_nonnull(j);
	const char *tail = json_string_value(json_object_get(
	    json_array_get(
		json_object_get(json_array_get(json_object_get(j, "cells"), 0), "errors"), 0),
	    "serial_tail"));
	g_assert_cmpstr(tail, ==,
			"ok \xef\xbf\xbd\xef\xbf\xbd bad \xef\xbf\xbd end "
			"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xe2\x82\xac");
	json_decref(j);
	results_free(r);
}

static void test_atomic_rewrite(void)
{
	_cleanup_free_ char *dir = scratch_dir();
	_cleanup_free_ char *path = g_build_filename(dir, "results.json", NULL);
	struct results *r = sample();
	char *err = NULL;

	/* written after every cell: each rewrite replaces the file, nothing else is left */
	for (size_t i = 0; i < r->n_cells; i++) {
		r->cells[i].status = STATUS_PASSED;
		g_assert_cmpint(results_write(r, path, &err), ==, 0);
		g_assert_cmpuint(count_entries(dir), ==, 1);
		struct results *back = results_read(path, &err);
		g_assert_nonnull(back);
		g_assert_cmpint(back->cells[i].status, ==, STATUS_PASSED);
		results_free(back);
	}

	gchar *before = NULL, *after = NULL;
	gsize lbefore, lafter;
	g_assert_true(g_file_get_contents(path, &before, &lbefore, NULL));

	/*
	 * A write that fails half way: cap the file size below the document's size, so write()
	 * fails with EFBIG (root ignores permissions, so a read-only directory would not do).
	 */
	struct rlimit old, lim;
	g_assert_cmpint(getrlimit(RLIMIT_FSIZE, &old), ==, 0);
	lim = old;
	lim.rlim_cur = 512;
	void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
	g_assert_cmpint(setrlimit(RLIMIT_FSIZE, &lim), ==, 0);
	r->cells[0].status = STATUS_FAILED;
	int rc = results_write(r, path, &err);
	g_assert_cmpint(setrlimit(RLIMIT_FSIZE, &old), ==, 0);
	signal(SIGXFSZ, prev);
	g_assert_cmpint(rc, ==, -1);
	g_assert_nonnull(err);
	g_assert_true(g_str_has_prefix(err, path));
	g_assert_nonnull(strstr(err, "write: File too large"));
	free(err);
	err = NULL;
	/* the old file is intact and no temporary file is left */
	g_assert_cmpuint(count_entries(dir), ==, 1);
	g_assert_true(g_file_get_contents(path, &after, &lafter, NULL));
	g_assert_cmpmem(before, lbefore, after, lafter);
	g_free(before);
	g_free(after);

	/* a directory that does not exist */
	_cleanup_free_ char *bad = g_build_filename(dir, "missing", "r.json", NULL);
	g_assert_cmpint(results_write(r, bad, &err), ==, -1);
	_cleanup_free_ char *want = g_strdup_printf(
	    "%s: cannot create a file in '%s/missing': No such file or directory", bad, dir);
	g_assert_cmpstr(err, ==, want);
	free(err);

	results_free(r);
	remove_dir(dir);
}

/* Write text to DIR/name and read it as results; returns the error (or NULL). */
static char *read_error(const char *dir, const char *name, const char *text)
{
	_cleanup_free_ char *path = g_build_filename(dir, name, NULL);
	char *err = NULL;
	g_assert_true(g_file_set_contents(path, text, -1, NULL));
	struct results *r = results_read(path, &err);
	g_assert_null(r);
	g_assert_nonnull(err);
	char *msg = g_strdup(err + strlen(dir) + 1); /* without the directory, for readability */
	free(err);
	return msg;
}

static void test_reader_errors(void)
{
	_cleanup_free_ char *dir = scratch_dir();
	static const struct {
		const char *name, *text, *err;
	} cases[] = {
		{ "v3.json", "{\"ferry_results\": 3, \"cells\": []}",
		  "v3.json: unsupported results version 3 (this ferry reads versions 1 to 2; "
		  "written by a newer ferry)" },
		{ "v0.json", "{\"ferry_results\": 0, \"cells\": []}",
		  "v0.json: unsupported results version 0 (this ferry reads versions 1 to 2)" },
		{ "metric.json",
		  "{\"ferry_results\": 2, \"cells\": [], \"metrics\": {\"total\": {\"unit\": "
		  "\"s\", \"better\": \"up\"}}}",
		  "metric.json: metrics.'total': 'better' is 'up', expected lower or higher" },
		{ "boot.json",
		  "{\"ferry_results\": 2, \"cells\": [{\"id\": \"a=1\", \"status\": \"passed\", "
		  "\"runs\": [{\"boot\": -2}]}]}",
		  "boot.json: cells[0].runs[0]: 'boot' must be an integer from 0 to "
		  "9223372036854775807" },
		{ "vs.json", "{\"ferry_results\": \"1\", \"cells\": []}",
		  "vs.json: 'ferry_results' must be an integer (the schema version)" },
		{ "other.json", "{\"name\": \"x\"}",
		  "other.json: not a ferry results file (no 'ferry_results' key)" },
		{ "array.json", "[1, 2]",
		  "array.json: not a ferry results file (the document is not a JSON object)" },
		/* malformed JSON: position from jansson's json_error_t, line and column 1-based */
		{ "bad.json", "{\n  \"ferry_results\": 1,\n  \"cells\": [\n}\n",
		  "bad.json:4:1: unexpected token near '}'" },
		{ "trunc.json", "{\"ferry_results\": 1,\n \"cells\": [",
		  "trunc.json:2:11: ']' expected near end of file" },
		{ "dup.json", "{\"ferry_results\": 1,\n \"cells\": [], \"cells\": []}",
		  "dup.json:2:21: duplicate object key near '\"cells\"'" },
		{ "nocells.json", "{\"ferry_results\": 1}",
		  "nocells.json: 'cells' must be an array" },
		{ "status.json",
		  "{\"ferry_results\": 1, \"cells\": [{\"id\": \"a=1\", \"status\": \"great\"}]}",
		  "status.json: cells[0]: 'status' is 'great', expected one of: pending, passed, "
		  "failed, error, skipped" },
		{ "noid.json", "{\"ferry_results\": 1, \"cells\": [{\"status\": \"passed\"}]}",
		  "noid.json: cells[0]: missing 'id'" },
		{ "bytes.json",
		  "{\"ferry_results\": 1, \"cells\": [{\"id\": \"a=1\", \"status\": \"passed\", "
		  "\"runs\": [{\"index\": 0}, {\"index\": 1, \"bytes\": -5}]}]}",
		  "bytes.json: cells[0].runs[1]: 'bytes' must be an integer from 0 to "
		  "9223372036854775807" },
		{ "phase.json",
		  "{\"ferry_results\": 1, \"cells\": [{\"id\": \"a=1\", \"status\": \"passed\", "
		  "\"runs\": [{\"index\": 0, \"phases\": {\"transfer\": \"1s\"}}]}]}",
		  "phase.json: cells[0].runs[0].phases: 'transfer' must be a number or null" },
		{ "kind.json",
		  "{\"ferry_results\": 1, \"cells\": [{\"id\": \"a=1\", \"status\": \"error\", "
		  "\"errors\": [{\"kind\": \"oops\", \"message\": \"m\"}]}]}",
		  "kind.json: cells[0].errors[0]: 'kind' is 'oops', expected one of: infra, "
		  "integrity, criterion, regression, timeout" },
		{ "time.json",
		  "{\"ferry_results\": 1, \"cells\": [], \"provenance\": {\"started\": "
		  "\"yesterday\"}}",
		  "time.json: provenance: 'started' is not a UTC time like "
		  "2026-01-31T12:00:00.000Z: "
		  "'yesterday'" },
		{ "dupcell.json",
		  "{\"ferry_results\": 1, \"cells\": [{\"id\": \"a=1\", \"status\": \"passed\"}, "
		  "{\"id\": \"a=1\", \"status\": \"passed\"}]}",
		  "dupcell.json: cells[1]: duplicate cell id 'a=1'" },
		{ "stop.json",
		  "{\"ferry_results\": 1, \"cells\": [{\"id\": \"a=1\", \"status\": \"passed\", "
		  "\"stop_reason\": \"continue\"}]}",
		  "stop.json: cells[0]: 'stop_reason' is 'continue', expected one of: cv-reached, "
		  "max-reached, budget-exhausted, halfwidth-reached" },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_free_ char *msg = read_error(dir, cases[i].name, cases[i].text);
		g_assert_cmpstr(msg, ==, cases[i].err);
	}

	/* a file that is not there */
	_cleanup_free_ char *missing = g_build_filename(dir, "none.json", NULL);
	char *err = NULL;
	g_assert_null(results_read(missing, &err));
	_cleanup_free_ char *want = g_strdup_printf("%s: No such file or directory", missing);
	g_assert_cmpstr(err, ==, want);
	free(err);

	/* the smallest valid document */
	_cleanup_free_ char *min = g_build_filename(dir, "min.json", NULL);
	g_assert_true(g_file_set_contents(min, "{\"ferry_results\": 1, \"cells\": []}", -1, NULL));
	struct results *r = results_read(min, &err);
	g_assert_nonnull(r);
	g_assert_cmpuint(r->n_cells, ==, 0);
	results_free(r);
	remove_dir(dir);
}

static void test_time(void)
{
	char buf[40];
	int64_t ms;

	g_assert_cmpstr(results_format_time(0, buf, sizeof(buf)), ==, "1970-01-01T00:00:00.000Z");
	/* 2026-11-29T23:11:08.123Z is 1795993868.123 s after the epoch (python datetime) */
	g_assert_cmpstr(results_format_time(INT64_C(1795993868123), buf, sizeof(buf)), ==,
			"2026-11-29T23:11:08.123Z");
	g_assert_cmpint(results_parse_time("2026-11-29T23:11:08.123Z", &ms), ==, 0);
	g_assert_cmpint(ms, ==, INT64_C(1795993868123));
	g_assert_cmpint(results_parse_time("2026-11-29T23:11:08Z", &ms), ==, 0);
	g_assert_cmpint(ms, ==, INT64_C(1795993868000));
	g_assert_cmpint(results_parse_time("2026-11-29T23:11:08.1Z", &ms), ==, 0);
	g_assert_cmpint(ms, ==, INT64_C(1795993868100));
	g_assert_cmpint(results_parse_time("2026-11-29T23:11:08", &ms), ==, -1);
	g_assert_cmpint(results_parse_time("2026-11-29 23:11:08Z", &ms), ==, -1);
	g_assert_cmpint(results_parse_time("2026-13-29T23:11:08Z", &ms), ==, -1);
	g_assert_cmpint(results_parse_time("2026-11-29T23:11:08.Z", &ms), ==, -1);
	/* now is after this code was written */
	g_assert_cmpint(results_now_ms(), >, INT64_C(1764000000000));
}

static void test_host(void)
{
	struct results *r = results_new();
	char *err = NULL;
	int rc = results_gather_host(&r->provenance, &err);
	if (rc < 0)
		g_test_message("gather_host: %s", err);
	g_assert_cmpint(rc, ==, 0);
	g_assert_null(err);

	const struct result_provenance *p = &r->provenance;
	char host[256];
	g_assert_cmpint(gethostname(host, sizeof(host)), ==, 0);
	g_assert_cmpstr(p->hostname, ==, host);
	g_assert_true(g_str_has_prefix(p->host_kernel, "Linux "));
	g_assert_cmpstr(p->ferry_version, !=, "");
	g_assert_cmpuint(p->cpu_count, >=, 1);
	/* /proc/meminfo MemTotal, in bytes: compare with sysconf's physical pages */
	uint64_t phys = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
	g_assert_cmpuint(p->memory_bytes, >, 0);
	g_assert_cmpuint(p->memory_bytes, ==, phys);
	/* model name is x86 and most others; where it exists it must have been read */
	gchar *cpuinfo = NULL;
	if (g_file_get_contents("/proc/cpuinfo", &cpuinfo, NULL, NULL) &&
	    strstr(cpuinfo, "model name")) {
		g_assert_nonnull(p->cpu_model);
		g_assert_nonnull(strstr(cpuinfo, p->cpu_model));
	}
	g_free(cpuinfo);
	/* filled twice: replaced, not leaked */
	g_assert_cmpint(results_gather_host(&r->provenance, &err), ==, 0);
	results_free(r);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* helper modes for script tests; they take the caller's locale on purpose, to show that
	 * the file is written and read the same under a comma-decimal locale */
	if (argc >= 3 && (STREQ(argv[1], "--write-sample") || STREQ(argv[1], "--rewrite"))) {
		setlocale(LC_ALL, "");
		printf("decimal point: '%s'\n", localeconv()->decimal_point);
		char *err = NULL;
		struct results *r = NULL;
		const char *out = argv[2];
		if (STREQ(argv[1], "--rewrite") && argc == 4) {
			r = results_read(argv[2], &err);
			out = argv[3];
		} else if (argc == 3) {
			r = sample();
		} else {
			fputs("usage: test-results-model --write-sample OUT | --rewrite IN OUT\n",
			      stderr);
			return 2;
		}
		int rc = r ? results_write(r, out, &err) : -1;
		if (rc < 0) {
			fprintf(stderr, "%s\n", err);
			free(err);
		}
		results_free(r);
		return rc < 0 ? 1 : 0;
	}
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/results/compute-stats", test_compute_stats);
	g_test_add_func("/results/round-trip", test_round_trip);
	g_test_add_func("/results/doubles-exact", test_doubles_exact);
	g_test_add_func("/results/invalid-utf8", test_invalid_utf8);
	g_test_add_func("/results/atomic-rewrite", test_atomic_rewrite);
	g_test_add_func("/results/reader-errors", test_reader_errors);
	g_test_add_func("/results/time", test_time);
	g_test_add_func("/results/host", test_host);
	return g_test_run();
}
