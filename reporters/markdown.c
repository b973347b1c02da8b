/* SPDX-License-Identifier: MIT */
/*
 * Markdown for people (GitHub-flavoured: tables, <details>, Mermaid). The report reads top down:
 * verdict, the table people draw by hand, phases, charts, what went wrong, raw data, provenance.
 * Every string that comes from the results (plan names, axis values, error messages, serial
 * output) is untrusted: it is cleaned (report_clean_text) and escaped so that it renders as the
 * text it is, never as markup, HTML or a broken table.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "md-layout.h"
#include "pivot-verdicts.h"
#include "reporters.h"
#include "strmap.h"

/* Serial console shown per error in the Markdown report (the JUnit report keeps 64 KiB). */
#define MD_SERIAL_TAIL_MAX 8192

static const char *const status_badge[STATUS_COUNT] = {
	[STATUS_PENDING] = "\xe2\x8f\xb3 not run", /* hourglass */
	[STATUS_PASSED] = "\xe2\x9c\x85 passed",   /* check mark */
	[STATUS_FAILED] = "\xe2\x9d\x8c failed",   /* cross mark */
	[STATUS_ERROR] = "\xf0\x9f\x92\xa5 error", /* collision */
	[STATUS_SKIPPED] = "\xe2\x8f\xad skipped", /* next track */
};

/* Write untrusted text as inline Markdown that renders literally, also inside a table cell. */
void md_text(FILE *f, const char *s)
{
	_cleanup_free_ char *clean = report_clean_text(s);
	for (const char *p = clean; *p; p++) {
		switch (*p) {
		case '|': fputs("\\|", f); break;
		case '\n': fputs("<br>", f); break;
		case '\r': break;
		case '\t': fputc(' ', f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '\\':
		case '`':
		case '*':
		case '_':
		case '[':
		case ']':
		case '~':
		case '#':
		case '!':
		case '$': /* GitHub renders $...$ as math */
			fputc('\\', f);
			fputc(*p, f);
			break;
		default: fputc(*p, f);
		}
	}
}

/* A label inside a Mermaid string ("..."): no quotes, no line breaks, nothing Mermaid or its
 * HTML labels would interpret. */
void mermaid_label(FILE *f, const char *s)
{
	_cleanup_free_ char *clean = report_clean_text(s);
	fputc('"', f);
	for (const char *p = clean; *p; p++) {
		if (strchr("\"`<>\\;%#&{}[]\n\r\t", *p))
			fputc(*p == '"' ? '\'' : ' ', f);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* A fenced code block holding untrusted text: the fence is longer than any backtick run in it. */
static void md_code_block(FILE *f, const char *text)
{
	size_t run = 0, longest = 0;
	for (const char *p = text; *p; p++) {
		run = *p == '`' ? run + 1 : 0;
		if (run > longest)
			longest = run;
	}
	size_t fence = longest >= 3 ? longest + 1 : 3;
	for (size_t i = 0; i < fence; i++)
		fputc('`', f);
	fputs("text\n", f);
	for (const char *p = text; *p; p++)
		if (*p != '\r')
			fputc(*p, f);
	if (*text && text[strlen(text) - 1] != '\n')
		fputc('\n', f);
	for (size_t i = 0; i < fence; i++)
		fputc('`', f);
	fputc('\n', f);
}

/* Seconds for people: 3 significant digits, ms below a second. *unit_scale and *decimals let a
 * confidence half-width be written in the same unit. */
static void human_seconds(FILE *f, double s, double *scale, int *decimals)
{
	double v = s;
	const char *unit = "s";
	if (s < 1) {
		v = s * 1000;
		unit = "ms";
	}
	int d = v >= 100 ? 0 : v >= 10 ? 1 : 2;
	fprintf(f, "%.*f\xc2\xa0%s" /* no-break space: a number never wraps from its unit */, d, v,
		unit);
	if (scale)
		*scale = s < 1 ? 1000 : 1;
	if (decimals)
		*decimals = d;
}

static void human_duration(FILE *f, double s)
{
	if (!isfinite(s) || s < 0) {
		fputs("unknown", f);
	} else if (s < 60) {
		human_seconds(f, s, NULL, NULL);
	} else if (s < 3600) {
		fprintf(f, "%d\xc2\xa0min %d\xc2\xa0s", (int)(s / 60), (int)fmod(s, 60));
	} else {
		fprintf(f, "%d\xc2\xa0h %d\xc2\xa0min", (int)(s / 3600), (int)fmod(s / 60, 60));
	}
}

void md_human_rate(FILE *f, double bytes_per_s)
{
	if (!isfinite(bytes_per_s))
		fputs("\xe2\x80\x94", f);
	else if (bytes_per_s >= 1e9)
		fprintf(f, "%.2f\xc2\xa0GB/s", bytes_per_s / 1e9);
	else if (bytes_per_s >= 1e6)
		fprintf(f, "%.1f\xc2\xa0MB/s", bytes_per_s / 1e6);
	else
		fprintf(f, "%.1f\xc2\xa0kB/s", bytes_per_s / 1e3);
}

/* A phase or total time in a table cell, or a dash. */
void md_cell_seconds(FILE *f, double s)
{
	if (isfinite(s))
		human_seconds(f, s, NULL, NULL);
	else
		fputs("\xe2\x80\x94", f);
}

static void write_summary(FILE *f, const struct results *r)
{
	size_t counts[STATUS_COUNT];
	results_count_status(r, counts);

	fputs("## ferry: ", f);
	md_text(f, r->plan.name && *r->plan.name ? r->plan.name : "results");
	fputs("\n\n", f);

	fprintf(f, "**%zu cell%s:", r->n_cells, r->n_cells == 1 ? "" : "s");
	static const enum result_status order[] = { STATUS_PASSED, STATUS_FAILED, STATUS_ERROR,
						    STATUS_SKIPPED, STATUS_PENDING };
	bool first = true;
	for (size_t i = 0; i < ELEMENTSOF(order); i++) {
		enum result_status s = order[i];
		if (counts[s] == 0 && s != STATUS_PASSED && s != STATUS_FAILED)
			continue;
		fprintf(f, "%s %zu %s", first ? "" : " \xc2\xb7", counts[s], status_badge[s]);
		first = false;
	}
	fputs("** \xc2\xb7 wall time ", f);
	double wall = NAN;
	const struct result_provenance *p = &r->provenance;
	if (p->started_ms && p->finished_ms >= p->started_ms)
		wall = (double)(p->finished_ms - p->started_ms) / 1000.0;
	human_duration(f, wall);
	fputs(" \xc2\xb7 host ", f);
	md_text(f, p->hostname ? p->hostname : "unknown");
	fputs(" \xc2\xb7 accelerator ", f);
	md_text(f, p->accelerator ? p->accelerator : "unknown");
	fputs("\n\n", f);
}

/* What the main table pivots on: the total, or any metric (report_markdown_opts.metric). */
struct pivot {
	const char *metric; /* NULL: total */
	const char *unit;   /* of a metric: "B/s", "B", "s", ... */
	bool higher_better;
};

/* The summary of the pivot's metric for c; n is 0 when the cell has none. */
static void pivot_summary(const struct pivot *pv, const struct result_cell *c,
			  struct stats_summary *s)
{
	if (!md_has_stats(c))
		stats_summarize(NULL, 0, s);
	else if (!pv->metric)
		*s = c->stats.total;
	else
		result_cell_metric_summary(c, pv->metric, s);
}

/* A value of the pivot's metric with the half-width of its CI, in readable units. */
static void pivot_value(FILE *f, const struct pivot *pv, const struct stats_summary *t)
{
	bool ci = isfinite(t->ci_low) && isfinite(t->ci_high);
	double half = ci ? (t->ci_high - t->ci_low) / 2 : NAN;
	if (!pv->metric || STREQ(pv->unit, "s")) {
		double scale;
		int decimals;
		human_seconds(f, t->mean, &scale, &decimals);
		if (ci)
			fprintf(f, " \xc2\xb1 %.*f", decimals, half * scale);
	} else if (STREQ(pv->unit, "B/s")) {
		md_human_rate(f, t->mean);
		if (ci)
			fprintf(f, " \xc2\xb1 %.1f", half / 1e6);
	} else if (STREQ(pv->unit, "B")) {
		fprintf(f, "%.1f\xc2\xa0MB", t->mean / 1e6);
		if (ci)
			fprintf(f, " \xc2\xb1 %.1f", half / 1e6);
	} else {
		fprintf(f, "%.4g", t->mean);
		if (ci)
			fprintf(f, " \xc2\xb1 %.3g", half);
	}
}

/* A cell of the pivot: bold only for its column's significant winner; the others say their
 * verdict against it (md-verdicts.c). */
static void write_table_cell(FILE *f, const struct pivot *pv, const struct result_cell *c,
			     double best_value, const struct md_verdicts *mv, size_t i)
{
	struct stats_summary t;
	pivot_summary(pv, c, &t);
	if (t.n == 0 || !isfinite(t.mean)) {
		fputs(md_has_stats(c) ? "\xe2\x80\x94" : status_badge[c->status], f);
		return;
	}
	bool bold = mv->winner[i];
	fputs(bold ? "**" : "", f);
	pivot_value(f, pv, &t);
	fputs(bold ? "**" : "", f);
	double ratio = pv->higher_better ? best_value / t.mean : t.mean / best_value;
	const struct verdict *v = mv->slot[i] != SIZE_MAX ? &mv->v[mv->slot[i]] : NULL;
	if (!v || !isfinite(ratio))
		fputs("<br>1.00x", f);
	else if (v->kind == VERDICT_A_BETTER)
		fprintf(f, "<br>%.*fx %s", ratio < 2 ? 2 : 1, ratio,
			!pv->metric ? "slower" : "worse");
	else if (v->kind == VERDICT_SAME)
		fputs("<br>indistinguishable", f);
	else
		fprintf(f, "<br>%.*fx, inconclusive", ratio < 2 ? 2 : 1, ratio);
	if (c->status != STATUS_PASSED)
		fprintf(f, "<br>%s", status_badge[c->status]);
}

/* The best mean of each column of group g, lowest or highest for a higher-is-better metric:
 * its value in fastest[c] and its cell in best[c] (SIZE_MAX: no cell of the column has one). */
static void column_best(const struct results *r, const struct layout *l, size_t g,
			const struct strset *cols, const struct pivot *pv, double *fastest,
			size_t *best)
{
	for (size_t c = 0; c < cols->n; c++) {
		fastest[c] = pv->higher_better ? -INFINITY : INFINITY;
		best[c] = SIZE_MAX;
	}
	for (const size_t *p = md_group_begin(l, g); p < md_group_end(l, g); p++) {
		struct stats_summary t;
		pivot_summary(pv, &r->cells[*p], &t);
		size_t col = (size_t)md_strset_find(cols, l->col[*p]);
		if (t.n && isfinite(t.mean) &&
		    (pv->higher_better ? t.mean > fastest[col] : t.mean < fastest[col])) {
			fastest[col] = t.mean;
			best[col] = *p;
		}
	}
}

/* The header rows of a pivot table: the row axis (\ the column axis), then one column each. */
static void table_header(FILE *f, const struct layout *l, const struct strset *cols,
			 const struct pivot *pv)
{
	fputs("| ", f);
	md_text(f, l->rows ? l->rows : "cell");
	if (l->cols) {
		fputs(" \\\\ ", f);
		md_text(f, l->cols);
	}
	fputs(" |", f);
	for (size_t c = 0; c < cols->n; c++) {
		fputc(' ', f);
		md_text(f, l->cols ? cols->v[c] : pv->metric ? pv->metric : "total");
		fputs(" |", f);
	}
	fputs("\n| :--- |", f);
	for (size_t c = 0; c < cols->n; c++)
		fputs(" ---: |", f);
	fputc('\n', f);
}

/* The pivot table of group g: its heading when there are other axes, then a row per row value
 * with the cell of each column (a dash where none), verdicts against the column's best. */
static void write_group_table(FILE *f, const struct results *r, const struct layout *l, size_t g,
			      const struct pivot *pv)
{
	struct strset rows = { 0 }, cols = { 0 };
	/* (row, column) -> the first cell there */
	struct strmap at;
	strmap_init(&at, (size_t)(md_group_end(l, g) - md_group_begin(l, g)));
	for (const size_t *p = md_group_begin(l, g); p < md_group_end(l, g); p++) {
		md_strset_add(&rows, l->row[*p]);
		size_t col = md_strset_add(&cols, l->col[*p]);
		strmap_put(&at, l->row[*p], (uint32_t)col, (uint32_t)*p);
	}
	double *fastest = xcalloc(cols.n + 1, sizeof(*fastest));
	size_t *best = xcalloc(cols.n + 1, sizeof(*best));
	column_best(r, l, g, &cols, pv, fastest, best);
	struct md_verdicts mv;
	md_verdicts_build(&mv, r, l, g, &cols, best, pv->metric);
	if (*l->groups.v[g]) {
		fputs("#### ", f);
		md_text(f, l->groups.v[g]);
		fputs("\n\n", f);
	}
	table_header(f, l, &cols, pv);
	for (size_t ro = 0; ro < rows.n; ro++) {
		fputs("| ", f);
		md_text(f, rows.v[ro]);
		fputs(" |", f);
		for (size_t c = 0; c < cols.n; c++) {
			uint32_t i = strmap_get(&at, rows.v[ro], (uint32_t)c);
			fputc(' ', f);
			if (i == STRMAP_NONE)
				fputs("\xe2\x80\x94", f);
			else
				write_table_cell(f, pv, &r->cells[i], fastest[c], &mv, i);
			fputs(" |", f);
		}
		fputc('\n', f);
	}
	fputc('\n', f);
	md_verdicts_free(&mv);
	free(best);
	free(fastest);
	strmap_free(&at);
	md_strset_free(&rows);
	md_strset_free(&cols);
}

/* The main tables of the pivot's metric (the total, or report_markdown_opts.metric): one per
 * group, then what their values, ratios and bold mean. */
static void write_main_tables(FILE *f, const struct results *r, const struct layout *l,
			      const struct pivot *pv)
{
	if (r->n_cells == 0) {
		fputs("No cells.\n\n", f);
		return;
	}
	if (pv->metric) {
		fputs("### Mean ", f);
		md_text(f, pv->metric);
		fputs("\n\n", f);
	} else {
		fputs("### Mean total time\n\n", f);
	}
	for (size_t g = 0; g < l->groups.n; g++)
		write_group_table(f, r, l, g, pv);
	if (pv->metric) {
		fputs("Mean of the measured runs' ", f);
		md_text(f, pv->metric);
		fprintf(
		    f,
		    " (ferry(1) METRICS, %s is better); \xc2\xb1 is the half-width of its 95%% "
		    "confidence interval; the ratio is relative to the best of its "
		    "column, **bold** only when that is significantly better than every other cell "
		    "of the column (ferry(1) VERDICTS); \xe2\x80\x94 is a cell without the "
		    "metric.\n\n",
		    pv->higher_better ? "higher" : "lower");
		return;
	}
	fputs("Mean of the measured runs' total (prepare + transfer + finalize); \xc2\xb1 is the "
	      "half-width of its 95% confidence interval; the ratio is relative to the "
	      "fastest of its column, **bold** only when that is significantly faster than every "
	      "other cell of the column: verdicts on boot means, paired by block, 95% intervals, "
	      "Benjamini-Hochberg across the table (ferry(1) VERDICTS).\n\n",
	      f);
}

static void write_charts(FILE *f, const struct results *r, const struct layout *l)
{
	bool heading = false;
	for (size_t g = 0; g < l->groups.n; g++) {
		/* the group's cells with statistics, bucketed by column (stable: cell order) */
		struct strset cols = { 0 };
		size_t n = (size_t)(md_group_end(l, g) - md_group_begin(l, g));
		size_t *col_of = xcalloc(n + 1, sizeof(*col_of));
		for (size_t k = 0; k < n; k++)
			col_of[k] = md_strset_add(&cols, l->col[md_group_begin(l, g)[k]]);
		size_t *start = xcalloc(cols.n + 2, sizeof(*start));
		size_t *bucket = xcalloc(n + 1, sizeof(*bucket));
		for (size_t k = 0; k < n; k++)
			if (md_has_stats(&r->cells[md_group_begin(l, g)[k]]))
				start[col_of[k] + 2]++;
		for (size_t c = 0; c < cols.n; c++)
			start[c + 2] += start[c + 1];
		for (size_t k = 0; k < n; k++)
			if (md_has_stats(&r->cells[md_group_begin(l, g)[k]]))
				bucket[start[col_of[k] + 1]++] = md_group_begin(l, g)[k];
		for (size_t c = 0; c < cols.n; c++) {
			const size_t *b = bucket + start[c], bars = start[c + 1] - start[c];
			/* one bar says nothing a table cell does not */
			if (bars < 2)
				continue;
			double max = 0;
			for (size_t k = 0; k < bars; k++)
				if (r->cells[b[k]].stats.total.mean > max)
					max = r->cells[b[k]].stats.total.mean;
			if (!heading) {
				fputs("### Charts\n\n", f);
				heading = true;
			}
			_cleanup_free_ char *title = xasprintf(
			    "%s%s%s%s%s%s", l->cols ? l->cols : "", l->cols ? "=" : "",
			    l->cols ? cols.v[c] : "mean total", *l->groups.v[g] ? " (" : "",
			    l->groups.v[g], *l->groups.v[g] ? ")" : "");
			fputs("```mermaid\nxychart-beta\n    title ", f);
			mermaid_label(f, title);
			fputs("\n    x-axis [", f);
			for (size_t k = 0; k < bars; k++) {
				fputs(k ? ", " : "", f);
				mermaid_label(f, l->row[b[k]]);
			}
			fprintf(f, "]\n    y-axis \"mean total (s)\" 0 --> %.3f\n    bar [",
				max * 1.1);
			for (size_t k = 0; k < bars; k++)
				fprintf(f, "%s%.3f", k ? ", " : "",
					r->cells[b[k]].stats.total.mean);
			fputs("]\n```\n\n", f);
		}
		free(col_of);
		free(start);
		free(bucket);
		md_strset_free(&cols);
	}
}

static void write_problems(FILE *f, const struct results *r)
{
	bool heading = false;
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct result_cell *c = &r->cells[i];
		bool bad_runs = false;
		for (size_t k = 0; k < c->n_runs; k++)
			bad_runs |= !c->runs[k].integrity_ok;
		if (c->status != STATUS_FAILED && c->status != STATUS_ERROR && c->n_errors == 0 &&
		    !bad_runs)
			continue;
		if (!heading) {
			fputs("### Failures and errors\n\n", f);
			heading = true;
		}
		fprintf(f, "%s \xe2\x80\x94 **", status_badge[c->status]);
		md_text(f, c->id);
		fputs("**\n\n", f);
		if (c->n_errors == 0)
			fputs("- no reason was recorded\n", f);
		for (size_t e = 0; e < c->n_errors; e++) {
			const struct result_error *er = &c->errors[e];
			fprintf(f, "- %s", result_error_kind_name(er->kind));
			if (er->run >= 0 || er->phase >= 0) {
				fputs(" (", f);
				if (er->run >= 0)
					fprintf(f, "run %d%s", er->run, er->phase >= 0 ? ", " : "");
				if (er->phase >= 0 && er->phase < PHASE_COUNT)
					fprintf(f, "phase %s",
						result_phase_name((enum result_phase)er->phase));
				fputc(')', f);
			}
			fputs(": ", f);
			md_text(f, er->message);
			if (er->libvirt_message) {
				fputs("<br>libvirt: ", f);
				md_text(f, er->libvirt_message);
			}
			if (er->agent_message) {
				fputs("<br>guest agent: ", f);
				md_text(f, er->agent_message);
			}
			fputc('\n', f);
		}
		fputc('\n', f);
		for (size_t e = 0; e < c->n_errors; e++) {
			const struct result_error *er = &c->errors[e];
			if (!er->serial_tail)
				continue;
			_cleanup_free_ char *clean = report_clean_text(er->serial_tail);
			bool cut;
			const char *tail = report_text_tail(clean, MD_SERIAL_TAIL_MAX, &cut);
			fputs("<details><summary>serial console", f);
			if (er->run >= 0)
				fprintf(f, " of run %d", er->run);
			fputs(cut ? " (last 8 KiB)" : "", f);
			fputs("</summary>\n\n", f);
			md_code_block(f, tail);
			fputs("\n</details>\n\n", f);
		}
	}

	heading = false;
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct result_cell *c = &r->cells[i];
		if (c->status != STATUS_SKIPPED && c->status != STATUS_PENDING)
			continue;
		if (!heading) {
			fputs("### Skipped and not run\n\n", f);
			heading = true;
		}
		fputs("- **", f);
		md_text(f, c->id);
		fprintf(f, "**: %s", status_badge[c->status]);
		if (c->status == STATUS_SKIPPED) {
			fputs(", ", f);
			md_text(f, c->skip_reason ? c->skip_reason : "no reason given");
		}
		fputc('\n', f);
	}
	if (heading)
		fputc('\n', f);
}

struct membuf {
	char *data;
	size_t len;
	FILE *f;
};

static int membuf_open(struct membuf *m)
{
	m->data = NULL;
	m->len = 0;
	m->f = open_memstream(&m->data, &m->len);
	return m->f ? 0 : -1;
}

static void membuf_close(struct membuf *m)
{
	if (m->f)
		fclose(m->f);
	m->f = NULL;
}

/* The pivot of a metric other than the total: its unit and direction from the results, else
 * from ferry(1) METRICS; -1 with *err for a metric that is neither. */
static int pivot_of(const struct results *r, const char *metric, struct pivot *pv, char **err)
{
	const struct result_metric *m = results_find_metric(r, metric);
	const struct metric_def *d = result_metric_def_find(metric);
	if (!m && !d) {
		_cleanup_free_ char *shown = escape_controls(metric);
		*err = xasprintf("metric '%s' is neither described in the results nor a metric "
				 "of ferry(1) METRICS",
				 shown);
		return -1;
	}
	*pv = (struct pivot){ metric, m ? m->unit : d->unit,
			      m ? m->higher_better : d->higher_better };
	return 0;
}

/* The report's body, top down: summary, the main tables (the total's, then pv's), verdicts,
 * design, phases, charts, problems. Returns 0, or -1 with *err when the verdicts failed. */
static int write_body(FILE *f, const struct results *r, const struct layout *l,
		      const struct pivot *pv, char **err)
{
	write_summary(f, r);
	struct pivot total = { 0 };
	write_main_tables(f, r, l, &total);
	if (pv->metric)
		write_main_tables(f, r, l, pv);
	struct pivot_verdicts verdicts;
	int vrc = pivot_verdicts_build(r, l, &verdicts, err);
	md_write_verdicts(f, r, &verdicts, l);
	md_write_design(f, r);
	pivot_verdicts_free(&verdicts);
	md_write_phases(f, r, status_badge);
	write_charts(f, r, l);
	write_problems(f, r);
	return vrc;
}

/* What of the parts fits under the size limit. */
struct md_fit {
	size_t body_len; /* the body, cut at a line end when even without raw runs it is too long */
	bool body_cut;
	size_t keep; /* the raw runs that fit */
};

static struct md_fit fit_parts(const struct membuf *body, const struct membuf *prov, size_t rows,
			       const size_t *row_end, size_t header, size_t max)
{
	/* room for the <details> wrapper and the truncation notes */
	const size_t reserve = 600;
	struct md_fit fit = { body->len, false, 0 };
	size_t fixed = body->len + prov->len + reserve;
	if (fixed > max) {
		size_t room = max > prov->len + reserve ? max - prov->len - reserve : 0;
		while (room > 0 && body->data[room - 1] != '\n')
			room--;
		fit.body_len = room;
		fit.body_cut = true;
		fixed = fit.body_len + prov->len + reserve;
	}
	if (rows && fixed + header < max) {
		size_t room = max - fixed;
		while (fit.keep < rows && row_end[fit.keep] <= room)
			fit.keep++;
	}
	return fit;
}

/* The report: the body as fitted, the raw runs that fit folded (with how many were left out),
 * the provenance. */
static void write_parts(FILE *out, const struct membuf *body, const struct membuf *prov,
			const struct membuf *raw, const struct md_fit *fit, size_t rows,
			const size_t *row_end, size_t max)
{
	fwrite(body->data, 1, fit->body_len, out);
	if (fit->body_cut)
		fputs(
		    "\n\n> **This report was cut to stay under the size limit.** The results JSON "
		    "has everything.\n\n",
		    out);
	if (rows) {
		fprintf(out, "<details><summary>Raw runs (%zu; times in seconds)</summary>\n\n",
			rows);
		if (fit->keep > 0)
			fwrite(raw->data, 1, row_end[fit->keep - 1], out);
		if (fit->keep < rows)
			fprintf(out,
				"\n%zu of %zu runs are shown: the rest were left out to keep this "
				"report under %zu bytes. The results JSON has them all.\n",
				fit->keep, rows, max);
		fputs("\n</details>\n\n", out);
	}
	fwrite(prov->data, 1, prov->len, out);
}

int report_markdown(const struct results *r, const struct report_markdown_opts *opts, FILE *out,
		    char **err)
{
	static const struct report_markdown_opts defaults = { 0 };
	const struct report_markdown_opts *o = opts ? opts : &defaults;
	size_t max = o->max_bytes ? o->max_bytes : REPORT_MARKDOWN_MAX;

	struct pivot pv = { 0 };
	if (o->metric && !STREQ(o->metric, "total") && pivot_of(r, o->metric, &pv, err) < 0)
		return -1;
	struct layout l = { 0 };
	if (md_layout_build(&l, r, o, err) < 0) {
		md_layout_free(&l, r->n_cells);
		return -1;
	}

	struct report_locale loc;
	report_locale_enter(&loc);

	struct membuf body = { 0 }, prov = { 0 }, raw = { 0 };
	if (membuf_open(&body) < 0 || membuf_open(&prov) < 0 || membuf_open(&raw) < 0) {
		membuf_close(&body);
		membuf_close(&prov);
		free(body.data);
		free(prov.data);
		report_locale_leave(&loc);
		md_layout_free(&l, r->n_cells);
		*err = xstrdup("out of memory for the Markdown report");
		return -1;
	}
	int rc = write_body(body.f, r, &l, &pv, err);
	membuf_close(&body);

	md_write_provenance(prov.f, r);
	md_write_hosts(prov.f, r);
	membuf_close(&prov);

	_cleanup_free_ size_t *row_end = NULL;
	size_t header = 0;
	size_t rows = md_write_raw_runs(raw.f, r, &row_end, &header);
	membuf_close(&raw);
	md_layout_free(&l, r->n_cells);

	struct md_fit fit = fit_parts(&body, &prov, rows, row_end, header, max);
	if (rc < 0) /* *err says why: nothing is written */
		fit.body_len = 0, rows = 0, prov.len = 0;
	write_parts(out, &body, &prov, &raw, &fit, rows, row_end, max);
	report_locale_leave(&loc);
	free(body.data);
	free(prov.data);
	free(raw.data);
	if (rc == 0 && (fflush(out) != 0 || ferror(out))) {
		*err = xstrdup("cannot write the Markdown report");
		rc = -1;
	}
	return rc;
}
