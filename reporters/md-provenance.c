/* SPDX-License-Identifier: MIT */
/* The Markdown report's tail (md-layout.h): the raw runs, kept whole or cut to fit by
 * markdown.c, the provenance, and the hosts of a run fanned out over several. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "md-layout.h"

static void prov_row(FILE *f, const char *what, const char *value, size_t *rows)
{
	if (!value || !*value)
		return;
	if ((*rows)++ == 0)
		fputs("| | |\n| :--- | :--- |\n", f);
	fprintf(f, "| %s | ", what);
	md_text(f, value);
	fputs(" |\n", f);
}

/* How the runs' guests started (run.fresh), e.g. "12 runs in guests restored from a saved
 * state, 4 in booted guests"; NULL when no run recorded it. */
static char *fresh_text(const struct results *r)
{
	size_t booted = 0, restored = 0;
	for (size_t i = 0; i < r->n_cells; i++)
		for (size_t j = 0; j < r->cells[i].n_runs; j++) {
			const char *fr = r->cells[i].runs[j].fresh;
			booted += fr && strcmp(fr, "boot") == 0;
			restored += fr && strcmp(fr, "restore") == 0;
		}
	if (!restored)
		return booted ? xasprintf("every run in a booted guest") : NULL;
	return xasprintf("%zu run%s in guests restored from a state saved after one boot per VM "
			 "configuration, %zu in booted guests",
			 restored, restored == 1 ? "" : "s", booted);
}

void md_write_provenance(FILE *f, const struct results *r)
{
	const struct result_provenance *p = &r->provenance;
	char buf[64];
	size_t n = 0;
	fputs("### Provenance\n\n", f);
	prov_row(f, "plan", r->plan.name, &n);
	prov_row(f, "plan file", r->plan.path, &n);
	prov_row(f, "plan sha256", r->plan.sha256, &n);
	prov_row(f, "ferry", p->ferry_version, &n);
	prov_row(f, "host", p->hostname, &n);
	prov_row(f, "kernel", p->host_kernel, &n);
	if (p->cpu_model) {
		_cleanup_free_ char *cpu = xasprintf("%s (%u CPUs)", p->cpu_model, p->cpu_count);
		prov_row(f, "CPU", cpu, &n);
	}
	if (p->memory_bytes) {
		snprintf(buf, sizeof(buf), "%.1f GiB",
			 (double)p->memory_bytes / (1024.0 * 1024 * 1024));
		prov_row(f, "memory", buf, &n);
	}
	prov_row(f, "QEMU", p->qemu_version, &n);
	prov_row(f, "libvirt", p->libvirt_version, &n);
	prov_row(f, "accelerator", p->accelerator, &n);
	_cleanup_free_ char *fresh = fresh_text(r);
	prov_row(f, "fresh guests", fresh, &n);
	prov_row(f, "guest kernel sha256", p->guest_kernel_sha256, &n);
	prov_row(f, "guest initramfs sha256", p->guest_initramfs_sha256, &n);
	for (size_t i = 0; i < p->n_datasets; i++) {
		_cleanup_free_ char *v = result_dataset_text(&p->datasets[i]);
		prov_row(f, "dataset", v, &n);
	}
	if (p->started_ms)
		prov_row(f, "started", results_format_time(p->started_ms, buf, sizeof(buf)), &n);
	if (p->finished_ms)
		prov_row(f, "finished", results_format_time(p->finished_ms, buf, sizeof(buf)), &n);
	fputs(n ? "\n" : "Nothing was recorded.\n\n", f);
}

/* Whether several hosts of a fan-out (origins with a host URI) ran cells of r. */
static bool fanned_out(const struct results *r)
{
	bool fanout = false;
	for (size_t o = 0; o < r->n_origins; o++)
		fanout |= r->origins[o].host != NULL;
	for (size_t i = 1; fanout && i < r->n_cells; i++)
		if (r->cells[i].origin != r->cells[0].origin)
			return true;
	return false;
}

void md_write_hosts(FILE *f, const struct results *r)
{
	if (!fanned_out(r))
		return;
	fputs("### Hosts\n\n| host | URI | hostname | CPU | QEMU | libvirt | accelerator | cells | "
	      "failed |\n| ---: | :--- | :--- | :--- | :--- | :--- | :--- | ---: | :--- |\n",
	      f);
	for (size_t o = 0; o < r->n_origins; o++) {
		const struct result_origin *og = &r->origins[o];
		const struct result_provenance *p = &og->provenance;
		const char *cols[] = { og->host,        p->hostname,        p->cpu_model,
				       p->qemu_version, p->libvirt_version, p->accelerator };
		size_t cells = 0;
		for (size_t i = 0; i < r->n_cells; i++)
			cells += r->cells[i].origin == (int)o;
		fprintf(f, "| %zu |", o + 1);
		for (size_t k = 0; k < ELEMENTSOF(cols); k++) {
			fputc(' ', f);
			md_text(f, cols[k] ? cols[k] : "");
			fputs(" |", f);
		}
		fprintf(f, " %zu | ", cells);
		md_text(f, og->lost ? og->lost : "");
		fputs(" |\n", f);
	}
	fputc('\n', f);
}

size_t md_write_raw_runs(FILE *f, const struct results *r, size_t **row_end, size_t *header)
{
	size_t n = 0, cap = 0;
	bool hosts = fanned_out(r); /* then a host column (### Hosts) */
	fprintf(
	    f,
	    "| cell |%s run | kind | prepare | transfer | finalize | verify | cleanup | total | "
	    "bytes | files | integrity |\n"
	    "| :--- |%s ---: | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
	    ":--- |\n",
	    hosts ? " host |" : "", hosts ? " ---: |" : "");
	fflush(f);
	*header = (size_t)ftell(f);
	*row_end = NULL;
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct result_cell *c = &r->cells[i];
		for (size_t k = 0; k < c->n_runs; k++) {
			const struct result_run *run = &c->runs[k];
			fputs("| ", f);
			md_text(f, c->id);
			if (hosts && c->origin >= 0)
				fprintf(f, " | %d", c->origin + 1);
			else if (hosts)
				fputs(" |", f);
			fprintf(f, " | %zu | %s%s |", k, run->warmup ? "warmup" : "measured",
				run->outlier ? ", outlier" : "");
			for (int p = 0; p < PHASE_COUNT; p++) {
				if (isfinite(run->phase[p]))
					fprintf(f, " %.3f |", run->phase[p]);
				else
					fputs(" \xe2\x80\x94 |", f);
			}
			if (isfinite(run->total))
				fprintf(f, " %.3f |", run->total);
			else
				fputs(" \xe2\x80\x94 |", f);
			fprintf(f, " %" PRIu64 " | %" PRIu64 " | %s |\n", run->bytes, run->files,
				run->integrity_ok ? "ok" : "**mismatch**");
			fflush(f);
			*row_end = xgrow(*row_end, &cap, n + 1, sizeof(**row_end));
			(*row_end)[n++] = (size_t)ftell(f);
		}
	}
	return n;
}
