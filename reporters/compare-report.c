/* SPDX-License-Identifier: MIT */
/* Reports of a comparison (compare-report.h). */
#include "compare-report.h"

#include <libxml/xmlwriter.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "md-layout.h"
#include "reporters.h"

static const char *const mark[CMP_VERDICT_COUNT] = {
	[CMP_UNCHANGED] = "\xe2\x9e\x96 unchanged",       /* heavy minus */
	[CMP_IMPROVED] = "\xe2\x9c\x85 improved",         /* check mark */
	[CMP_REGRESSED] = "\xe2\x9d\x8c regressed",       /* cross mark */
	[CMP_INCONCLUSIVE] = "\xe2\x9d\x94 inconclusive", /* question mark */
};

/* A value in its unit, for people. */
static void value(FILE *f, double v, const char *unit)
{
	if (!isfinite(v)) {
		fputs("-", f);
		return;
	}
	if (STREQ(unit, "B/s")) {
		fprintf(f, "%.3g MiB/s", v / (1024.0 * 1024.0));
	} else if (STREQ(unit, "s")) {
		if (v < 1)
			fprintf(f, "%.1f ms", v * 1000);
		else
			fprintf(f, "%.3f s", v);
	} else {
		fprintf(f, "%.4g", v);
		if (*unit) {
			fputc(' ', f);
			md_text(f, unit);
		}
	}
}

static void pct(FILE *f, double x)
{
	if (isfinite(x))
		fprintf(f, "%+.1f%%", 100 * x);
	else
		fputs("?", f);
}

static void change(FILE *f, const struct cmp_row *r)
{
	if (!isfinite(r->change)) {
		fputs("-", f);
		return;
	}
	pct(f, r->change);
	if (isfinite(r->ci_low) && isfinite(r->ci_high)) {
		fputs(" [", f);
		pct(f, r->ci_low);
		fputs(", ", f);
		pct(f, r->ci_high);
		fputs("]", f);
	}
}

/* What fails the comparison, the drift canary and the confirmation, under the counts (in the
 * Markdown, md, or as one plain line). */
static void gate_summary(FILE *f, const struct comparison *c, bool md)
{
	fprintf(f, "%sGate: %s%s (%zu cell%s with a regressed gated metric: ", md ? "**" : "",
		c->failed_cells ? "failed" : "passed", md ? "**" : "", c->failed_cells,
		c->failed_cells == 1 ? "" : "s");
	for (size_t i = 0; i < c->n_gate; i++) {
		fputs(i ? ", " : "gated: ", f);
		if (md)
			md_text(f, c->gate[i]);
		else
			fputs(c->gate[i], f);
	}
	fputs("; the other metrics are reported, never fatal).", f);
	if (isfinite(c->canary_change))
		fprintf(f,
			" Drift canary: the host was %.1f%% %s than in the baseline [%+.1f%%, "
			"%+.1f%%] (boots %zu/%zu)%s.",
			100 * fabs(c->canary_change), c->canary_change > 0 ? "slower" : "faster",
			100 * c->canary_low, 100 * c->canary_high, c->canary_boots_base,
			c->canary_boots_cand,
			c->canary_moved ? ": beyond its noise, so a gated regression is withheld"
					: ", within its noise");
	else
		fputs(" Drift canary: not measured on both sides (runs without blocks).", f);
	if (c->confirm_given)
		fputs(" A suspected regression stands only when the rerun confirms it.", f);
	fputs(md ? "\n\n" : "\n", f);
}

static void row_line(FILE *f, const struct cmp_row *r)
{
	fputs("| ", f);
	md_text(f, r->cell);
	fputs(" | ", f);
	md_text(f, r->metric);
	fputs(" | ", f);
	value(f, r->median_base, r->unit);
	fputs(" | ", f);
	value(f, r->median_cand, r->unit);
	fputs(" | ", f);
	change(f, r);
	fprintf(f, " | %zu/%zu | %s |\n", r->boots_base, r->boots_cand, mark[r->verdict]);
}

/* The interval shown is the one every verdict is read from: its ends are the one-sided bounds
 * at the confidence (95%: a 90% two-sided interval, ferry(1) COMPARE). */
static void table_head(FILE *f, const struct comparison *c)
{
	fprintf(f,
		"| cell | metric | baseline median | new median | change [%.0f%% CI] | boots | "
		"verdict |\n|---|---|---:|---:|---:|---:|---|\n",
		comparison_interval_pct(c));
}

/* The counts of the verdicts, in the Markdown's words (bold regressions there). */
static void counts_line(FILE *f, const struct comparison *c, bool md)
{
	fprintf(f,
		"%s%zu regressed%s, %zu improved, %zu unchanged, %zu inconclusive (cell and metric "
		"pairs; %zu cell%s regressed)",
		md ? "**" : "", c->counts[CMP_REGRESSED], md ? "**" : "", c->counts[CMP_IMPROVED],
		c->counts[CMP_UNCHANGED], c->counts[CMP_INCONCLUSIVE], c->regressed_cells,
		c->regressed_cells == 1 ? "" : "s");
}

/* The rows the Cells table shows: every total, every gated metric, and every metric that
 * changed. */
static bool shown_row(const struct cmp_row *r)
{
	return STREQ(r->metric, "total") || r->gated || r->verdict == CMP_REGRESSED ||
	       r->verdict == CMP_IMPROVED;
}

/* Why an inconclusive row is (its note, the effect it could detect, the boots it needs). */
static void note_text(FILE *f, const struct cmp_row *r, bool md)
{
	if (md)
		md_text(f, r->note ? r->note : "inconclusive");
	else
		fputs(r->note ? r->note : "inconclusive", f);
	if (isfinite(r->mde))
		fprintf(f, "; minimum detectable effect %.1f%%", 100 * r->mde);
	if (r->more_boots > 0)
		fprintf(f, "; about %ld more boot%s per side would resolve it", r->more_boots,
			r->more_boots == 1 ? "" : "s");
}

static void note_line(FILE *f, const struct cmp_row *r)
{
	fputs("- ", f);
	md_text(f, r->cell);
	fputs(" ", f);
	md_text(f, r->metric);
	fputs(": ", f);
	note_text(f, r, true);
	fputs("\n", f);
}

/* The title, and the counts and the rule, or why the comparison was refused. */
static void md_head(FILE *f, const struct comparison *c, const struct results *cand)
{
	fputs("## ferry compare", f);
	if (cand->plan.name) {
		fputs(": ", f);
		md_text(f, cand->plan.name);
	}
	fputs("\n\n", f);
	if (c->refused) {
		_cleanup_free_ char *why = comparison_refusal(c);
		fputs("> **Refused:** ", f);
		md_text(f, why);
		fputs("\n\n", f);
	} else {
		counts_line(f, c, true);
		fprintf(f,
			". Rule %s; each bound of a change is a one-sided %.0f%% confidence bound "
			"(together a %.0f%% interval); minimum change %.3g%%; baseline: %zu file%s "
			"pooled.\n\n",
			cmp_rule_name(c->rule), 100 * c->confidence, 100 * (2 * c->confidence - 1),
			100 * c->threshold, c->n_used, c->n_used == 1 ? "" : "s");
		gate_summary(f, c, true);
	}
}

/* The baseline files used, by the names they were given (code spans, no '`' '|' or newline). */
static void md_baselines(FILE *f, const struct comparison *c, const struct compare_report_ctx *x)
{
	fputs("Baseline: ", f);
	for (size_t i = 0; i < c->n_used; i++) {
		if (i)
			fputs(", ", f);
		fputc('`', f);
		_cleanup_free_ char *clean = report_clean_text(x->baselines[c->used[i]]);
		for (char *p = clean; *p; p++)
			if (*p == '`' || *p == '\n' || *p == '|')
				*p = '?';
		fputs(clean, f);
		fputc('`', f);
	}
	if (!c->n_used)
		fputs("none comparable", f);
	fputs("\n\n", f);
}

/* The provenance differences between the sides, each refused, allowed or only shown. */
static void md_differences(FILE *f, const struct comparison *c)
{
	fputs("### Differences\n\n| key | baseline | new | |\n|---|---|---|---|\n", f);
	for (size_t i = 0; i < c->n_diffs; i++) {
		const struct cmp_diff *d = &c->diffs[i];
		fputs("| ", f);
		md_text(f, d->key);
		fputs(" | ", f);
		md_text(f, d->base);
		fputs(" | ", f);
		md_text(f, d->cand);
		fputs(" | ", f);
		if (d->refusing && !d->allowed)
			fputs("**refused** (--allow-different ", f), md_text(f, d->key),
			    fputs(")", f);
		else if (d->refusing)
			fputs("allowed", f);
		else
			fputs("shown", f);
		fputs(" |\n", f);
	}
	fputs("\n", f);
}

/* The shown rows, the notes on the gate's metrics and inconclusive totals, then every row
 * folded. */
static void md_cells(FILE *f, const struct comparison *c)
{
	fputs("### Cells\n\n", f);
	table_head(f, c);
	for (size_t i = 0; i < c->n_rows; i++) {
		if (shown_row(&c->rows[i]))
			row_line(f, &c->rows[i]);
	}
	fputs("\n", f);
	bool any = false;
	for (size_t i = 0; i < c->n_rows; i++) {
		const struct cmp_row *r = &c->rows[i];
		if (!(r->verdict == CMP_INCONCLUSIVE && STREQ(r->metric, "total")) &&
		    !(r->gated && r->note))
			continue;
		if (!any)
			fputs("Notes on the gate's metrics and inconclusive totals:\n\n", f);
		any = true;
		note_line(f, &c->rows[i]);
	}
	if (any)
		fputs("\n", f);
	fputs("<details><summary>Every metric</summary>\n\n", f);
	table_head(f, c);
	for (size_t i = 0; i < c->n_rows; i++)
		row_line(f, &c->rows[i]);
	fputs("\n</details>\n\n", f);
}

/* The cells of one side only. */
static void md_not_compared(FILE *f, const struct comparison *c)
{
	fputs("Not compared: ", f);
	for (size_t i = 0; i < c->n_only_base; i++) {
		fputs(i ? ", " : "", f);
		md_text(f, c->only_base[i]);
		fputs(" (baseline only)", f);
	}
	for (size_t i = 0; i < c->n_only_cand; i++) {
		fputs(i || c->n_only_base ? ", " : "", f);
		md_text(f, c->only_cand[i]);
		fputs(" (new only)", f);
	}
	fputs("\n", f);
}

int report_compare_markdown(const struct comparison *c, const struct results *cand,
			    const struct compare_report_ctx *x, FILE *out, char **err)
{
	struct report_locale loc;
	report_locale_enter(&loc);
	FILE *f = out;

	md_head(f, c, cand);
	if (x && x->n_baselines)
		md_baselines(f, c, x);
	if (c->n_diffs)
		md_differences(f, c);
	if (!c->refused && c->n_rows)
		md_cells(f, c);
	if (c->n_only_base || c->n_only_cand)
		md_not_compared(f, c);
	report_locale_leave(&loc);
	if (ferror(f)) {
		*err = xstrdup("cannot write the Markdown comparison");
		return -1;
	}
	return 0;
}

char *report_compare_summary(const struct comparison *c)
{
	if (c->refused)
		return xstrdup("");
	struct report_locale loc;
	report_locale_enter(&loc);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		abort();
	counts_line(f, c, false);
	fputs("\n", f);
	for (size_t i = 0; i < c->n_rows; i++) {
		const struct cmp_row *r = &c->rows[i];
		if (!shown_row(r))
			continue;
		fprintf(f, "%s %s: ", r->cell, r->metric);
		change(f, r);
		fprintf(f, " (%.0f%% CI): %s", comparison_interval_pct(c),
			cmp_verdict_name(r->verdict));
		if ((r->verdict == CMP_INCONCLUSIVE && STREQ(r->metric, "total")) ||
		    (r->gated && r->note)) {
			fputs(": ", f);
			note_text(f, r, false);
		}
		fputs("\n", f);
	}
	gate_summary(f, c, false);
	fclose(f);
	report_locale_leave(&loc);
	return text;
}

/* ---- JUnit --------------------------------------------------------------------------------- */

static int attr(xmlTextWriterPtr w, const char *name, const char *v)
{
	_cleanup_free_ char *clean = report_clean_text(v);
	return xmlTextWriterWriteAttribute(w, (const xmlChar *)name, (const xmlChar *)clean);
}

static int attrf(xmlTextWriterPtr w, const char *name, const char *fmt, ...) _printf_(3, 4);
static int attrf(xmlTextWriterPtr w, const char *name, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *v = xvasprintf(fmt, ap);
	va_end(ap);
	return attr(w, name, v);
}

static int text(xmlTextWriterPtr w, const char *v)
{
	_cleanup_free_ char *clean = report_clean_text(v);
	return xmlTextWriterWriteString(w, (const xmlChar *)clean);
}

static int start(xmlTextWriterPtr w, const char *name)
{
	return xmlTextWriterStartElement(w, (const xmlChar *)name);
}

static char *row_message(const struct comparison *c, const struct cmp_row *r)
{
	char lo[32] = "?", hi[32] = "?";
	if (isfinite(r->ci_low))
		snprintf(lo, sizeof(lo), "%+.1f%%", 100 * r->ci_low);
	if (isfinite(r->ci_high))
		snprintf(hi, sizeof(hi), "%+.1f%%", 100 * r->ci_high);
	return xasprintf("%s %s: %s %+.1f%% [%.0f%% CI %s, %s] (baseline median %.6g %s, new %.6g "
			 "%s, boots %zu/%zu, threshold %.3g%%)",
			 r->cell, r->metric, cmp_verdict_name(r->verdict), 100 * r->change,
			 comparison_interval_pct(c), lo, hi, r->median_base, r->unit,
			 r->median_cand, r->unit, r->boots_base, r->boots_cand, 100 * r->threshold);
}

/* The XML declaration and the testsuite's element with its attributes. */
static int junit_suite(xmlTextWriterPtr w, const struct comparison *c, const struct results *cand)
{
	size_t failures = 0;
	for (size_t i = 0; i < c->n_rows; i++)
		failures += c->rows[i].verdict == CMP_REGRESSED && c->rows[i].gated;
	size_t tests = c->refused ? 1 : c->n_rows;
	char ts[40];
	int64_t when = cand->provenance.started_ms ? cand->provenance.started_ms : 0;
	report_format_timestamp(when, ts, sizeof(ts));
	_cleanup_free_ char *suite = xasprintf(
	    "ferry compare %s", cand->plan.name && *cand->plan.name ? cand->plan.name : "results");

	int rc = xmlTextWriterStartDocument(w, NULL, "UTF-8", NULL);
	rc = rc < 0 ? rc : start(w, "testsuites");
	rc = rc < 0 ? rc : start(w, "testsuite");
	rc = rc < 0 ? rc : attr(w, "name", suite);
	rc = rc < 0 ? rc : attr(w, "package", "ferry.compare");
	rc = rc < 0 ? rc : attr(w, "id", "0");
	rc = rc < 0 ? rc : attr(w, "timestamp", ts);
	rc = rc < 0 ? rc
		    : attr(w, "hostname",
			   cand->provenance.hostname && *cand->provenance.hostname
			       ? cand->provenance.hostname
			       : "localhost");
	rc = rc < 0 ? rc : attrf(w, "tests", "%zu", tests);
	rc = rc < 0 ? rc : attrf(w, "failures", "%zu", c->refused ? 0 : failures);
	rc = rc < 0 ? rc : attrf(w, "errors", "%d", c->refused ? 1 : 0);
	rc = rc < 0 ? rc : attr(w, "time", "0");
	return rc;
}

/* The testsuite's properties: the rule and its parameters, then each provenance difference. */
static int junit_properties(xmlTextWriterPtr w, const struct comparison *c,
			    const struct compare_report_ctx *x)
{
	int rc = start(w, "properties");
	struct {
		const char *k;
		char *v;
	} props[] = {
		{ "rule", xstrdup(cmp_rule_name(c->rule)) },
		{ "confidence", xasprintf("%g", c->confidence) },
		{ "threshold", xasprintf("%g", c->threshold) },
		{ "baselines", xasprintf("%zu", c->n_used) },
		{ "new", xstrdup(x && x->cand ? x->cand : "") },
	};
	for (size_t i = 0; i < ELEMENTSOF(props); i++) {
		rc = rc < 0 ? rc : start(w, "property");
		rc = rc < 0 ? rc : attr(w, "name", props[i].k);
		rc = rc < 0 ? rc : attr(w, "value", props[i].v);
		rc = rc < 0 ? rc : xmlTextWriterEndElement(w);
		free(props[i].v);
	}
	for (size_t i = 0; i < c->n_diffs; i++) {
		_cleanup_free_ char *name = xasprintf("difference.%s", c->diffs[i].key);
		_cleanup_free_ char *v = xasprintf("%s -> %s", c->diffs[i].base, c->diffs[i].cand);
		rc = rc < 0 ? rc : start(w, "property");
		rc = rc < 0 ? rc : attr(w, "name", name);
		rc = rc < 0 ? rc : attr(w, "value", v);
		rc = rc < 0 ? rc : xmlTextWriterEndElement(w);
	}
	return rc < 0 ? rc : xmlTextWriterEndElement(w); /* properties */
}

/* A refused comparison: one test case, comparability, in error with the reason. */
static int junit_refused(xmlTextWriterPtr w, const struct comparison *c)
{
	_cleanup_free_ char *why = comparison_refusal(c);
	int rc = start(w, "testcase");
	rc = rc < 0 ? rc : attr(w, "name", "comparability");
	rc = rc < 0 ? rc : attr(w, "classname", "ferry.compare");
	rc = rc < 0 ? rc : attr(w, "time", "0");
	rc = rc < 0 ? rc : start(w, "error");
	rc = rc < 0 ? rc : attr(w, "type", "refused");
	rc = rc < 0 ? rc : attr(w, "message", why);
	rc = rc < 0 ? rc : text(w, why);
	rc = rc < 0 ? rc : xmlTextWriterEndElement(w);
	return rc < 0 ? rc : xmlTextWriterEndElement(w);
}

/* One test case per row, a failure of type regression for a regressed gated row; then every
 * verdict in words in system-out, for people reading the CI log. */
static int junit_rows(xmlTextWriterPtr w, const struct comparison *c)
{
	int rc = 0;
	for (size_t i = 0; !c->refused && i < c->n_rows && rc >= 0; i++) {
		const struct cmp_row *r = &c->rows[i];
		_cleanup_free_ char *name = xasprintf("%s %s", r->cell, r->metric);
		rc = start(w, "testcase");
		rc = rc < 0 ? rc : attr(w, "name", name);
		rc = rc < 0 ? rc : attr(w, "classname", "ferry.compare");
		rc = rc < 0 ? rc : attr(w, "time", "0");
		if (r->verdict == CMP_REGRESSED && r->gated) {
			_cleanup_free_ char *msg = row_message(c, r);
			rc = rc < 0 ? rc : start(w, "failure");
			rc = rc < 0 ? rc : attr(w, "type", "regression");
			rc = rc < 0 ? rc : attr(w, "message", msg);
			rc = rc < 0 ? rc : text(w, msg);
			rc = rc < 0 ? rc : xmlTextWriterEndElement(w);
		}
		rc = rc < 0 ? rc : xmlTextWriterEndElement(w);
	}
	rc = rc < 0 ? rc : start(w, "system-out");
	for (size_t i = 0; !c->refused && i < c->n_rows && rc >= 0; i++) {
		_cleanup_free_ char *msg = row_message(c, &c->rows[i]);
		_cleanup_free_ char *line = xasprintf("%s%s%s\n", msg, c->rows[i].note ? "; " : "",
						      c->rows[i].note ? c->rows[i].note : "");
		rc = text(w, line);
	}
	return rc < 0 ? rc : xmlTextWriterEndElement(w);
}

int report_compare_junit(const struct comparison *c, const struct results *cand,
			 const struct compare_report_ctx *x, FILE *out, char **err)
{
	struct report_locale loc;
	report_locale_enter(&loc);
	xmlOutputBufferPtr buf = xmlOutputBufferCreateFile(out, NULL);
	xmlTextWriterPtr w = buf ? xmlNewTextWriter(buf) : NULL;
	if (!w) {
		if (buf)
			xmlOutputBufferClose(buf);
		report_locale_leave(&loc);
		*err = xstrdup("cannot start the XML writer");
		return -1;
	}
	xmlTextWriterSetIndent(w, 1);
	xmlTextWriterSetIndentString(w, (const xmlChar *)"  ");
	int rc = junit_suite(w, c, cand);
	rc = rc < 0 ? rc : junit_properties(w, c, x);
	if (c->refused)
		rc = rc < 0 ? rc : junit_refused(w, c);
	rc = rc < 0 ? rc : junit_rows(w, c);
	rc = rc < 0 ? rc : start(w, "system-err");
	rc = rc < 0 ? rc : xmlTextWriterEndElement(w);
	rc = rc < 0 ? rc : xmlTextWriterEndElement(w); /* testsuite */
	rc = rc < 0 ? rc : xmlTextWriterEndElement(w); /* testsuites */
	rc = rc < 0 ? rc : xmlTextWriterEndDocument(w);
	xmlFreeTextWriter(w); /* flushes and closes the output buffer (not the FILE) */
	report_locale_leave(&loc);
	if (rc < 0 || ferror(out)) {
		*err = xstrdup("cannot write the JUnit comparison");
		return -1;
	}
	return 0;
}

/* ---- JSON ---------------------------------------------------------------------------------- */

static json_t *jnum(double v)
{
	return results_json_number(v);
}

/* names and notes quote plans and guests: cleaned like every report's text */
static json_t *jstr(const char *s)
{
	return results_json_string(s, report_clean_text);
}

int report_compare_json(const struct comparison *c, const struct compare_report_ctx *x, FILE *out,
			char **err)
{
	json_t *diffs = json_array();
	for (size_t i = 0; i < c->n_diffs; i++)
		json_array_append_new(
		    diffs,
		    json_pack("{s:o, s:o, s:o, s:b, s:b}", "key", jstr(c->diffs[i].key), "baseline",
			      jstr(c->diffs[i].base), "new", jstr(c->diffs[i].cand), "refusing",
			      c->diffs[i].refusing, "allowed", c->diffs[i].allowed));
	json_t *rows = json_array();
	for (size_t i = 0; i < c->n_rows; i++) {
		const struct cmp_row *r = &c->rows[i];
		json_array_append_new(
		    rows,
		    json_pack(
			"{s:o, s:o, s:o, s:s, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:o, "
			"s:o, s:o, s:o, s:o, s:o, s:b, s:s, s:o}",
			"cell", jstr(r->cell), "metric", jstr(r->metric), "unit", jstr(r->unit),
			"better", r->higher_better ? "higher" : "lower", "runs_baseline",
			(json_int_t)r->n_base, "runs_new", (json_int_t)r->n_cand, "boots_baseline",
			(json_int_t)r->boots_base, "boots_new", (json_int_t)r->boots_cand,
			"median_baseline", jnum(r->median_base), "median_new", jnum(r->median_cand),
			"change", jnum(r->change), "bound_low", jnum(r->ci_low), "bound_high",
			jnum(r->ci_high), "p_worse", jnum(r->p_worse), "p_better",
			jnum(r->p_better), "threshold", jnum(r->threshold), "mde", jnum(r->mde),
			"more_boots", r->more_boots > 0 ? json_integer(r->more_boots) : json_null(),
			"between_boot_known", r->between_known, "verdict",
			cmp_verdict_name(r->verdict), "note", jstr(r->note)));
		json_t *jr = json_array_get(rows, json_array_size(rows) - 1);
		json_object_set_new(jr, "gated", json_boolean(r->gated));
		json_object_set_new(jr, "noise_floor_s",
				    r->floor > 0 ? jnum(r->floor) : json_null());
		json_object_set_new(jr, "withheld", json_boolean(r->withheld));
		json_object_set_new(
		    jr, "confirm",
		    isfinite(r->confirm_change)
			? json_pack("{s:o, s:o, s:o, s:I, s:b}", "change", jnum(r->confirm_change),
				    "bound_low", jnum(r->confirm_low), "bound_high",
				    jnum(r->confirm_high), "boots", (json_int_t)r->confirm_boots,
				    "confirmed", r->confirmed)
			: json_null());
	}
	json_t *used = json_array();
	for (size_t i = 0; i < c->n_used; i++)
		json_array_append_new(used, x && c->used[i] < x->n_baselines
						? jstr(x->baselines[c->used[i]])
						: json_integer((json_int_t)c->used[i]));
	json_t *only_b = json_array(), *only_c = json_array();
	for (size_t i = 0; i < c->n_only_base; i++)
		json_array_append_new(only_b, jstr(c->only_base[i]));
	for (size_t i = 0; i < c->n_only_cand; i++)
		json_array_append_new(only_c, jstr(c->only_cand[i]));
	_cleanup_free_ char *why = c->refused ? comparison_refusal(c) : NULL;
	json_t *root = json_pack(
	    "{s:i, s:s, s:f, s:f, s:o, s:o, s:b, s:o, s:{s:I, s:I, s:I, s:I}, s:I, s:o, s:o, s:o}",
	    "ferry_compare", 1, "rule", cmp_rule_name(c->rule), "confidence", c->confidence,
	    "threshold", c->threshold, "baselines", used, "new", jstr(x ? x->cand : NULL),
	    "refused", c->refused, "refusal", jstr(why), "counts", "regressed",
	    (json_int_t)c->counts[CMP_REGRESSED], "improved", (json_int_t)c->counts[CMP_IMPROVED],
	    "unchanged", (json_int_t)c->counts[CMP_UNCHANGED], "inconclusive",
	    (json_int_t)c->counts[CMP_INCONCLUSIVE], "regressed_cells",
	    (json_int_t)c->regressed_cells, "differences", diffs, "rows", rows, "not_compared",
	    json_pack("{s:o, s:o}", "baseline_only", only_b, "new_only", only_c));
	if (root) {
		json_object_set_new(root, "failed_cells",
				    json_integer((json_int_t)c->failed_cells));
		json_object_set_new(
		    root, "canary",
		    isfinite(c->canary_change)
			? json_pack("{s:o, s:o, s:o, s:I, s:I, s:b}", "change",
				    jnum(c->canary_change), "bound_low", jnum(c->canary_low),
				    "bound_high", jnum(c->canary_high), "boots_baseline",
				    (json_int_t)c->canary_boots_base, "boots_new",
				    (json_int_t)c->canary_boots_cand, "moved", c->canary_moved)
			: json_null());
	}
	if (!root) {
		*err = xstrdup("cannot build the JSON comparison");
		return -1;
	}
	int rc =
	    json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
	json_decref(root);
	if (rc < 0 || fputc('\n', out) == EOF || ferror(out)) {
		*err = xstrdup("cannot write the JSON comparison");
		return -1;
	}
	return 0;
}

/* ---- GitHub workflow commands -------------------------------------------------------------- */

/* A workflow command's data (and, with props, a property value): the text cleaned as every
 * report cleans it, then GitHub's escaping (gh_escape(), diag.h). */
static char *gh_text(const char *s, bool props)
{
	_cleanup_free_ char *clean = report_clean_text(s);
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f)
		abort();
	gh_escape(f, clean, props);
	fclose(f);
	return out;
}

static void append(char **text, const char *kind, const char *title, const char *msg)
{
	_cleanup_free_ char *t = gh_text(title, true), *m = gh_text(msg, false);
	char *n = xasprintf("%s::%s title=%s::%s\n", *text, kind, t, m);
	free(*text);
	*text = n;
}

char *report_compare_annotations(const struct comparison *c)
{
	char *text = xstrdup("");
	for (size_t i = 0; i < c->n_diffs; i++) {
		const struct cmp_diff *d = &c->diffs[i];
		if (!d->refusing)
			continue;
		_cleanup_free_ char *title = xasprintf("ferry compare: %s differs", d->key);
		_cleanup_free_ char *msg =
		    xasprintf("%s: '%s' in the baseline, '%s' now%s", d->key, d->base, d->cand,
			      d->allowed ? " (allowed)" : " (comparison refused)");
		append(&text, d->allowed ? "warning" : "error", title, msg);
	}
	for (size_t i = 0; i < c->n_rows; i++) {
		const struct cmp_row *r = &c->rows[i];
		if (r->verdict != CMP_REGRESSED && r->verdict != CMP_IMPROVED)
			continue;
		_cleanup_free_ char *title = xasprintf("ferry compare: %s %s %s", r->cell,
						       r->metric, cmp_verdict_name(r->verdict));
		_cleanup_free_ char *msg = row_message(c, r);
		append(&text, r->verdict == CMP_REGRESSED && r->gated ? "error" : "notice", title,
		       msg);
	}
	return text;
}
