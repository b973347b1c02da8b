/* SPDX-License-Identifier: MIT */
/* The sample results of the reporters' tests (reporters-sample.h). */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "reporters-sample.h"
#include "reporters.h"
#include "util.h"

const char plan_text[] = "ferry: 1\nname: sample\n";

/* Phases are prepare, transfer, finalize, verify, cleanup. */
struct result_run *add_run(struct result_cell *c, bool warmup, double prepare, double transfer,
			   double finalize, double verify, double cleanup, bool ok)
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

struct result_cell *add_cell(struct results *r, const char *vm, const char *dataset,
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

struct results *sample(void)
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

int render_md(const struct results *r, FILE *f, char **err)
{
	return report_markdown(r, NULL, f, err);
}

char *render_to_string(render_fn fn, const struct results *r, size_t *len)
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
