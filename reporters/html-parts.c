/* SPDX-License-Identifier: MIT */
/*
 * The run report's other parts (html-int.h): the summary, stacked phase bars with the full phase
 * table (the detail the Markdown's Phases tables leave out), failures and skips, provenance.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "html-common.h"
#include "html-int.h"
#include "reporters.h"

#define PB_W     760.0
#define PB_LEFT  230.0
#define PB_RIGHT 20.0
#define PB_ROW   22.0
#define PB_TOP   6.0
#define PB_BOT   30.0

void html_run_summary(FILE *f, const struct results *r)
{
	size_t counts[STATUS_COUNT];
	results_count_status(r, counts);
	fprintf(f, "<p class=\"summary\"><b>%zu cell%s</b>:", r->n_cells,
		r->n_cells == 1 ? "" : "s");
	static const enum result_status order[] = { STATUS_PASSED, STATUS_FAILED, STATUS_ERROR,
						    STATUS_SKIPPED, STATUS_PENDING };
	for (size_t i = 0; i < ELEMENTSOF(order); i++)
		if (counts[order[i]] || order[i] == STATUS_PASSED)
			fprintf(f, "%s <span class=\"status-%s\">%zu %s</span>",
				i ? " \xc2\xb7" : "", result_status_name(order[i]),
				counts[order[i]], result_status_name(order[i]));
	const struct result_provenance *p = &r->provenance;
	if (p->started_ms && p->finished_ms >= p->started_ms) {
		fputs(" \xc2\xb7 wall time ", f);
		html_seconds(f, (double)(p->finished_ms - p->started_ms) / 1000.0);
	}
	fputs(" \xc2\xb7 host ", f);
	html_text(f, p->hostname ? p->hostname : "unknown");
	fputs(" \xc2\xb7 accelerator ", f);
	html_text(f, p->accelerator ? p->accelerator : "unknown");
	fputs("</p>\n<p>A cell's number is the mean total time (prepare + transfer + finalize) of "
	      "its "
	      "measured runs with the 95% confidence interval of that mean: the same value and "
	      "interval as in the Markdown, JUnit, BMF and github-action-benchmark reports.</p>\n",
	      f);
}

static const char *cell_label(const struct layout *l, size_t i, char *buf, size_t size)
{
	snprintf(buf, size, "%s%s%s%s%s", l->row[i], l->cols ? " \xc2\xb7 " : "",
		 l->cols ? l->col[i] : "", *l->group_label[i] ? " \xc2\xb7 " : "",
		 l->group_label[i]);
	return buf;
}

static void phase_bar(FILE *f, const struct result_cell *c, const char *label,
		      const struct html_axis *ax, double y)
{
	fputs("<g class=\"phases\" data-cell=\"", f);
	html_text(f, c->id);
	fprintf(f, "\"><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\"><title>", PB_LEFT - 6,
		y + 4);
	html_text(f, c->id);
	fputs("</title>", f);
	html_label(f, label, 34);
	fputs("</text>\n", f);
	double at = 0;
	for (int p = 0; p < PHASE_COUNT; p++) {
		const struct stats_summary *s = &c->stats.phase[p];
		if (p == PHASE_VERIFY)
			at += (ax->hi - ax->lo) *
			      0.01; /* a gap: verify and cleanup are not in total */
		if (!s->n || !isfinite(s->mean) || s->mean <= 0)
			continue;
		const char *name = result_phase_name((enum result_phase)p);
		double x0 = html_axis_px(ax, at), x1 = html_axis_px(ax, at + s->mean);
		fprintf(f,
			"<rect class=\"p-%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"14\" "
			"data-phase=\"%s\" data-mean=\"%.9g\"><title>%s: mean ",
			name, x0, y - 7, x1 - x0 > 0.5 ? x1 - x0 : 0.5, name, s->mean, name);
		html_seconds(f, s->mean);
		fputs(", median ", f);
		html_seconds(f, s->median);
		fprintf(f, " (%zu runs)%s</title></rect>\n", s->n,
			p >= PHASE_VERIFY ? ", not part of the total" : "");
		at += s->mean;
	}
	fputs("</g>\n", f);
}

static void phase_legend(FILE *f)
{
	fputs("<p class=\"legend\">", f);
	for (int p = 0; p < PHASE_COUNT; p++) {
		const char *name = result_phase_name((enum result_phase)p);
		fprintf(f,
			"<svg width=\"12\" height=\"12\"><rect class=\"p-%s\" width=\"12\" "
			"height=\"12\"/></svg> %s ",
			name, name);
	}
	fputs("(verify and cleanup, after the gap, are timed but not part of the total)</p>\n", f);
}

static void phase_table(FILE *f, const struct results *r, const struct layout *l)
{
	fputs("<table class=\"phases\"><tr><th class=\"l\">cell</th><th>runs</th>", f);
	for (int p = 0; p < PHASE_COUNT; p++)
		fprintf(f, "<th>%s</th>", result_phase_name((enum result_phase)p));
	fputs("<th>mean total</th><th>95% CI</th><th>median</th><th>CV</th><th>throughput</th>"
	      "<th class=\"l\">stopped</th><th class=\"l\">status</th></tr>\n",
	      f);
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct result_cell *c = &r->cells[i];
		if (!md_has_stats(c))
			continue;
		char buf[512];
		fputs("<tr><td class=\"l\">", f);
		html_text(f, cell_label(l, i, buf, sizeof(buf)));
		fprintf(f, "</td><td>%zu", c->stats.total.n);
		if (c->stats.outliers)
			fprintf(f, " (%zu outlier%s)", c->stats.outliers,
				c->stats.outliers == 1 ? "" : "s");
		fputs("</td>", f);
		for (int p = 0; p < PHASE_COUNT; p++) {
			fputs("<td>", f);
			html_seconds(f, c->stats.phase[p].n ? c->stats.phase[p].mean : NAN);
			fputs("</td>", f);
		}
		fputs("<td>", f);
		html_seconds(f, c->stats.total.mean);
		fputs("</td><td>", f);
		if (isfinite(c->stats.total.ci_low) && isfinite(c->stats.total.ci_high)) {
			html_seconds(f, c->stats.total.ci_low);
			fputs(" \xe2\x80\x93 ", f);
			html_seconds(f, c->stats.total.ci_high);
		} else {
			fputs("\xe2\x80\x94", f);
		}
		fputs("</td><td>", f);
		html_seconds(f, c->stats.total.median);
		if (isfinite(c->stats.total.cv))
			fprintf(f, "</td><td>%.1f%%</td><td>", 100 * c->stats.total.cv);
		else
			fputs("</td><td>\xe2\x80\x94</td><td>", f);
		if (isfinite(c->stats.bytes_per_s))
			fprintf(f, "%.1f\xc2\xa0MB/s", c->stats.bytes_per_s / 1e6);
		else
			fputs("\xe2\x80\x94", f);
		fprintf(f, "</td><td class=\"l\">%s</td><td class=\"l\">%s</td></tr>\n",
			c->stop_reason != STATS_CONTINUE
			    ? stats_stop_name((enum stats_stop)c->stop_reason)
			    : "\xe2\x80\x94",
			result_status_name(c->status));
	}
	fputs("</table>\n", f);
}

void html_phases(FILE *f, const struct results *r, const struct layout *l)
{
	size_t n = 0;
	double hi = 0;
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct result_cell *c = &r->cells[i];
		if (!md_has_stats(c))
			continue;
		n++;
		double sum = 0;
		for (int p = 0; p < PHASE_COUNT; p++)
			if (c->stats.phase[p].n && isfinite(c->stats.phase[p].mean))
				sum += c->stats.phase[p].mean;
		hi = sum > hi ? sum : hi;
	}
	struct html_axis ax;
	html_axis_init(&ax, 0, hi * 1.02, PB_LEFT, PB_W - PB_RIGHT);
	double h = PB_TOP + PB_ROW * (double)n + PB_BOT;
	fputs(
	    "<h2 id=\"phases\">Phases</h2>\n<p>The mean time of each phase over the measured runs "
	    "(the means of prepare, transfer and finalize add up to the mean total).</p>\n",
	    f);
	phase_legend(f);
	fprintf(f,
		"<svg class=\"phase-bars\" role=\"img\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 "
		"0 %.0f %.0f\"><title>mean time per phase of every cell</title>\n",
		PB_W, h, PB_W, h);
	html_axis_draw_x(f, &ax, PB_TOP, h - PB_BOT + 4, "", 1);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">seconds</text>\n",
		(PB_LEFT + PB_W - PB_RIGHT) / 2, h - 3);
	size_t k = 0;
	for (size_t i = 0; i < r->n_cells; i++) {
		if (!md_has_stats(&r->cells[i]))
			continue;
		char buf[512];
		phase_bar(f, &r->cells[i], cell_label(l, i, buf, sizeof(buf)), &ax,
			  PB_TOP + PB_ROW * ((double)k++ + 0.5));
	}
	fputs("</svg>\n", f);
	phase_table(f, r, l);
}

static void problem(FILE *f, const struct result_cell *c)
{
	fprintf(f, "<h3 class=\"bad\">%s: ", result_status_name(c->status));
	html_text(f, c->id);
	fputs("</h3>\n<ul>\n", f);
	if (c->n_errors == 0)
		fputs("<li>no reason was recorded</li>\n", f);
	for (size_t e = 0; e < c->n_errors; e++) {
		const struct result_error *er = &c->errors[e];
		fprintf(f, "<li>%s", result_error_kind_name(er->kind));
		if (er->run >= 0)
			fprintf(f, " (run %d)", er->run);
		if (er->phase >= 0 && er->phase < PHASE_COUNT)
			fprintf(f, " (phase %s)", result_phase_name((enum result_phase)er->phase));
		fputs(": ", f);
		html_text(f, er->message);
		if (er->libvirt_message) {
			fputs("<br>libvirt: ", f);
			html_text(f, er->libvirt_message);
		}
		if (er->agent_message) {
			fputs("<br>guest agent: ", f);
			html_text(f, er->agent_message);
		}
		if (er->serial_tail) {
			bool cut;
			_cleanup_free_ char *clean = report_clean_text(er->serial_tail);
			const char *tail = report_text_tail(clean, 8192, &cut);
			fprintf(f, "<details><summary>serial console%s</summary><pre>",
				cut ? " (last 8 KiB)" : "");
			html_text(f, tail);
			fputs("</pre></details>", f);
		}
		fputs("</li>\n", f);
	}
	fputs("</ul>\n", f);
}

void html_problems(FILE *f, const struct results *r)
{
	bool heading = false;
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct result_cell *c = &r->cells[i];
		if (c->status != STATUS_FAILED && c->status != STATUS_ERROR && c->n_errors == 0)
			continue;
		if (!heading)
			fputs("<h2 id=\"problems\">Failures and errors</h2>\n", f);
		heading = true;
		problem(f, c);
	}
	heading = false;
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct result_cell *c = &r->cells[i];
		if (c->status != STATUS_SKIPPED && c->status != STATUS_PENDING)
			continue;
		if (!heading)
			fputs("<h2 id=\"skipped\">Skipped and not run</h2>\n<ul>\n", f);
		heading = true;
		fputs("<li>", f);
		html_text(f, c->id);
		fprintf(f, ": %s", c->status == STATUS_SKIPPED ? "skipped, " : "not run");
		if (c->status == STATUS_SKIPPED)
			html_text(f, c->skip_reason ? c->skip_reason : "no reason given");
		fputs("</li>\n", f);
	}
	if (heading)
		fputs("</ul>\n", f);
}

static void prov_row(FILE *f, const char *what, const char *value)
{
	if (!value || !*value)
		return;
	fprintf(f, "<tr><th class=\"l\">%s</th><td class=\"l\">", what);
	html_text(f, value);
	fputs("</td></tr>\n", f);
}

void html_provenance(FILE *f, const struct results *r)
{
	const struct result_provenance *p = &r->provenance;
	char buf[64];
	fputs("<h2 id=\"provenance\">Provenance</h2>\n<table class=\"provenance\">\n", f);
	prov_row(f, "plan", r->plan.name);
	prov_row(f, "plan file", r->plan.path);
	prov_row(f, "plan sha256", r->plan.sha256);
	prov_row(f, "ferry", p->ferry_version);
	prov_row(f, "host", p->hostname);
	prov_row(f, "kernel", p->host_kernel);
	if (p->cpu_model) {
		_cleanup_free_ char *cpu = xasprintf("%s (%u CPUs)", p->cpu_model, p->cpu_count);
		prov_row(f, "CPU", cpu);
	}
	if (p->memory_bytes) {
		snprintf(buf, sizeof(buf), "%.1f GiB",
			 (double)p->memory_bytes / (1024.0 * 1024 * 1024));
		prov_row(f, "memory", buf);
	}
	prov_row(f, "QEMU", p->qemu_version);
	prov_row(f, "libvirt", p->libvirt_version);
	prov_row(f, "accelerator", p->accelerator);
	prov_row(f, "guest kernel sha256", p->guest_kernel_sha256);
	prov_row(f, "guest initramfs sha256", p->guest_initramfs_sha256);
	for (size_t i = 0; i < p->n_datasets; i++) {
		_cleanup_free_ char *v = result_dataset_text(&p->datasets[i]);
		prov_row(f, "dataset", v);
	}
	if (p->started_ms)
		prov_row(f, "started", results_format_time(p->started_ms, buf, sizeof(buf)));
	if (p->finished_ms)
		prov_row(f, "finished", results_format_time(p->finished_ms, buf, sizeof(buf)));
	fputs("</table>\n", f);
}
