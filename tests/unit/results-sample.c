/* SPDX-License-Identifier: MIT */
/* The sample results document of test-results-model.c and test-results-cells.c. */
#include <math.h>
#include <string.h>

#include "results-sample.h"
#include "util.h"

static const char plan_text[] = "ferry: 1\n"
				"name: sample\n"
				"matrix: {method: [agent, share]}\n";

/* sample()'s provenance and datasets */
static void sample_provenance(struct results *r)
{
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
	p->guest_initramfs_sha256 = NULL; /* not known: written as null */
	p->started_ms = INT64_C(1795993868123);
	p->finished_ms = INT64_C(1795993999001);
	results_add_dataset(r, "few-large",
			    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
			    json_pack("{s:i, s:s, s:i}", "files", 10, "size", "64MiB", "seed", 7));
	results_add_dataset(r, "tree", NULL, NULL);
}

/* sample()'s passed cell */
static void sample_passed(struct results *r)
{
	/* passed: one warmup and four measured runs, one of them slow */
	struct result_cell *c = results_add_cell(r, "method=agent,dataset=few-large");
	result_cell_add_axis(c, "method", "agent");
	result_cell_add_axis(c, "dataset", "few-large");
	c->params = json_pack("{s:{s:s, s:i}, s:{s:s}, s:b, s:f}", "vm", "memory", "1GiB", "vcpus",
			      2, "method", "archive", "tar", "fresh", 1, "ratio", 0.1);
	c->observed = json_pack("{s:{s:s, s:i, s:[i,i]}}", "nic", "backend", "private",
				"queues_used", 2, "rx_interrupts", 40, 12);
	c->status = STATUS_PASSED;
	static const double times[][PHASE_COUNT] = {
		{ 0.5, 3.0, 1.0, 0.25, 0.125 },             /* warmup */
		{ 0.1, 2.0, 0.75, 0.2, 0.1 },               /* total 2.85 */
		{ 0.1, 2.1, 0.7, 0.2, 0.1 },                /* total 2.9 */
		{ 1.0 / 3, 1.9, 0.8, 0.21, 0.1 },           /* total 3.0333... */
		{ 0.1, 9.5, 0.75, 0.2, 1e-9 },              /* total 10.35: an outlier */
		{ 0.123456789012345, 2.05, 0.7, NAN, 0.1 }, /* verify did not run */
	};
	for (size_t i = 0; i < ELEMENTSOF(times); i++) {
		struct result_run *run = result_cell_add_run(c, i == 0);
		memcpy(run->phase, times[i], sizeof(run->phase));
		run->total = result_run_total(run);
		run->bytes = UINT64_C(671088640);
		run->files = 10;
		run->integrity_ok = true;
		run->boot = 1 + (int64_t)i / 3;
		/* the last run has no start: a file written before runs recorded it */
		if (i + 1 < ELEMENTSOF(times))
			run->started_ms = INT64_C(1795993868500) + (int64_t)i * 1250;
	}
	c->runs[1].metrics = json_pack("{s:f}", "pages_per_s", 1234.5);
	results_set_metric(r, "pages_per_s", "pages/s", true);
	results_cell_compute_stats(c);
	c->stop_reason = STATS_STOP_MAX;
	c->cpu_user_s = 0.42;
	c->cpu_sys_s = 0.0625;
	c->started_ms = INT64_C(1795993868500);
	c->finished_ms = INT64_C(1795993900250);
}

/* sample()'s failed cell */
static void sample_failed(struct results *r)
{
	/* failed: an integrity failure in run 1 and a broken criterion */
	struct result_cell *c = results_add_cell(r, "method=share,dataset=few-large");
	result_cell_add_axis(c, "method", "share");
	result_cell_add_axis(c, "dataset", "few-large");
	c->status = STATUS_FAILED;
	struct result_run *run = result_cell_add_run(c, false);
	run->phase[PHASE_TRANSFER] = 1.5;
	run->phase[PHASE_FINALIZE] = 2.5;
	run->phase[PHASE_VERIFY] = 0.5;
	run->total = result_run_total(run);
	run->bytes = 671088640;
	run->files = 10;
	run->integrity_ok = true;
	run = result_cell_add_run(c, false);
	run->phase[PHASE_TRANSFER] = 1.25;
	run->total = result_run_total(run);
	run->integrity_ok = false;
	results_cell_compute_stats(c);
	c->stop_reason = STATS_STOP_BUDGET;
	struct result_error *e = result_cell_add_error(
	    c, ERROR_INTEGRITY, "file 'dir/a.bin' differs: expected sha256 %s", "e3b0c442...");
	e->run = 1;
	e->phase = PHASE_VERIFY;
	e->agent_message = xstrdup("sha256sum: dir/a.bin: I/O error");
	result_cell_add_error(c, ERROR_CRITERION, "throughput %s, expected at least %s",
			      "12.5 MB/s", "20 MB/s");
	c->started_ms = INT64_C(1795993900300);
	c->finished_ms = INT64_C(1795993950000);
}

/* sample()'s errored, skipped and pending cells */
static void sample_others(struct results *r)
{
	/* error: infrastructure fault with hostile strings (quotes, <, ]]>, |, ESC, non-ASCII) */
	struct result_cell *c = results_add_cell(r, "method=agent,dataset=tree");
	result_cell_add_axis(c, "method", "agent");
	result_cell_add_axis(c, "dataset", "tree");
	c->status = STATUS_ERROR;
	struct result_error *e = result_cell_add_error(c, ERROR_INFRA, "guest did not boot");
	e->libvirt_message = xstrdup("internal error: process exited while connecting to "
				     "monitor: \"qemu\" <failed> ]]> | \xc3\xa9t\xc3\xa9");
	e->serial_tail = xstrdup("[    0.000000] Linux version 6.1\n\x1b[31mKernel panic\x1b[0m\r\n"
				 "\tnot syncing: VFS\n");
	e = result_cell_add_error(c, ERROR_TIMEOUT, "run timed out after %d s", 600);
	e->run = 0;
	e->phase = PHASE_TRANSFER;
	e = result_cell_add_error(c, ERROR_REGRESSION, "median 3.1 s is 12%% slower than baseline");

	/* skipped and pending */
	c = results_add_cell(r, "method=share,dataset=tree");
	result_cell_add_axis(c, "method", "share");
	result_cell_add_axis(c, "dataset", "tree");
	c->status = STATUS_SKIPPED;
	c->skip_reason = xstrdup("9p is not available on this host (no virtio-9p in QEMU)");
	c = results_add_cell(r, "method=share,dataset=tree,disk=ram");
	result_cell_add_axis(c, "method", "share");
	result_cell_add_axis(c, "dataset", "tree");
	result_cell_add_axis(c, "disk", "ram");
}

struct results *sample(void)
{
	struct results *r = results_new();
	results_set_plan(r, "sample", "plans/sample.yaml", plan_text, strlen(plan_text));

	sample_provenance(r);
	sample_passed(r);
	sample_failed(r);
	sample_others(r);
	return r;
}
