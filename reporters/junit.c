/* SPDX-License-Identifier: MIT */
/*
 * JUnit XML for CI, streamed with libxml2's xmlTextWriter: nothing per cell stays in memory
 * once its <testsuite> is written, so the report costs the results model and an output buffer,
 * whatever the number of cells. The shape satisfies both schemas in fixtures/xsd/:
 *   - Ant (windyroad JUnit.xsd) is the strict one: <testsuites> takes no attributes; each
 *     <testsuite> inside it needs package and id, plus name, timestamp (no zone, no fraction),
 *     hostname, tests, failures, errors, time; its children are exactly properties, testcase*,
 *     system-out, system-err in that order; a testcase has name, classname, time and at most one
 *     child (skipped, error or failure) and no system-out of its own;
 *   - Jenkins (junit-10.xsd) accepts all of that.
 * A <testsuite>'s counts are attributes, written before its testcases: each suite is walked
 * twice, once counting (no writer) and once writing, by the same code.
 * Every string goes through report_clean_text(): libxml2 escapes markup but passes control
 * characters such as ESC through, and then cannot parse its own output.
 */
#include <libxml/xmlwriter.h>
#include <math.h>
#include <string.h>

#include "cleanup.h"
#include "pivot-verdicts.h"
#include "reporters.h"

/* How much of a serial tail the <error> body repeats (the full tail is in <system-out>). */
#define ERROR_BODY_TAIL_MAX 4096

DEFINE_TRIVIAL_CLEANUP_FUNC(xmlTextWriterPtr, xmlFreeTextWriter)

/* The output of one pass: w is NULL in the counting pass (nothing is written); a libxml2 write
 * error sticks in failed. */
struct jw {
	xmlTextWriterPtr w;
	bool failed;
};

static const xmlChar *X(const char *s)
{
	return (const xmlChar *)s;
}

static void check(struct jw *j, int rc)
{
	if (rc < 0)
		j->failed = true;
}

static void start_element(struct jw *j, const char *name)
{
	if (j->w)
		check(j, xmlTextWriterStartElement(j->w, X(name)));
}

static void end_element(struct jw *j)
{
	if (j->w)
		check(j, xmlTextWriterEndElement(j->w));
}

/* An element with no content: <name/>. */
static void empty_element(struct jw *j, const char *name)
{
	start_element(j, name);
	end_element(j);
}

static void put_attr(struct jw *j, const char *name, const char *value)
{
	if (j->w)
		check(j, xmlTextWriterWriteAttribute(j->w, X(name), X(value)));
}

/* Set an attribute from untrusted text. */
static void set_attr(struct jw *j, const char *name, const char *value)
{
	if (!j->w)
		return;
	_cleanup_free_ char *clean = report_clean_text(value);
	put_attr(j, name, clean);
}

/* An attribute that is a name (testsuite, testcase, property): one line, never empty. */
static void set_name_attr(struct jw *j, const char *name, const char *value, const char *fallback)
{
	if (!j->w)
		return;
	_cleanup_free_ char *clean = report_clean_text(value);
	bool blank = true;
	for (char *p = clean; *p; p++) {
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
		if (*p != ' ')
			blank = false;
	}
	put_attr(j, name, blank ? fallback : clean);
}

static void set_attrf(struct jw *j, const char *name, const char *fmt, ...) _printf_(3, 4);
static void set_attrf(struct jw *j, const char *name, const char *fmt, ...)
{
	if (!j->w)
		return;
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *v = xvasprintf(fmt, ap);
	va_end(ap);
	put_attr(j, name, v);
}

/* Seconds as "%.3f" (the caller holds the C locale); undefined or negative times are 0. */
static void set_time_attr(struct jw *j, double s)
{
	set_attrf(j, "time", "%.3f", isfinite(s) && s > 0 ? s : 0.0);
}

/*
 * Character data from untrusted text. Escaped here as libxml2's serializer escapes text nodes
 * (&, <, >; a CR cannot remain after report_clean_text()) and written raw: xmlTextWriterWriteString
 * would also turn every '"' into &quot;, which is valid but not the bytes the reports always had.
 */
static void add_text(struct jw *j, const char *text)
{
	if (!j->w)
		return;
	_cleanup_free_ char *clean = report_clean_text(text);
	size_t n = strlen(clean), o = 0;
	_cleanup_free_ char *esc = xmalloc(5 * n + 1);
	for (size_t i = 0; i < n; i++) {
		const char *rep = clean[i] == '&'   ? "&amp;"
				  : clean[i] == '<' ? "&lt;"
				  : clean[i] == '>' ? "&gt;"
						    : NULL;
		if (rep) {
			memcpy(esc + o, rep, strlen(rep));
			o += strlen(rep);
		} else {
			esc[o++] = clean[i];
		}
	}
	esc[o] = '\0';
	if (o > 0)
		check(j, xmlTextWriterWriteRaw(j->w, X(esc)));
}

static void add_property(struct jw *j, const char *name, const char *value)
{
	start_element(j, "property");
	set_name_attr(j, "name", name, "unnamed");
	set_attr(j, "value", value);
	end_element(j);
}

static void add_propertyf(struct jw *j, const char *name, const char *fmt, ...) _printf_(3, 4);
static void add_propertyf(struct jw *j, const char *name, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *v = xvasprintf(fmt, ap);
	va_end(ap);
	add_property(j, name, v);
}

static void add_number_property(struct jw *j, const char *name, double v)
{
	if (isfinite(v))
		add_propertyf(j, name, "%.9g", v);
}

static void add_summary_properties(struct jw *j, const char *prefix, const struct stats_summary *s)
{
	_cleanup_free_ char *n = xasprintf("%s.n", prefix);
	add_propertyf(j, n, "%zu", s->n);
	static const struct {
		const char *name;
		size_t off;
	} fields[] = {
		{ "median", offsetof(struct stats_summary, median) },
		{ "mean", offsetof(struct stats_summary, mean) },
		{ "stddev", offsetof(struct stats_summary, stddev) },
		{ "cv", offsetof(struct stats_summary, cv) },
		{ "min", offsetof(struct stats_summary, min) },
		{ "max", offsetof(struct stats_summary, max) },
		{ "p90", offsetof(struct stats_summary, p90) },
		{ "ci_low", offsetof(struct stats_summary, ci_low) },
		{ "ci_high", offsetof(struct stats_summary, ci_high) },
	};
	for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
		double v;
		memcpy(&v, (const char *)s + fields[i].off, sizeof(v));
		_cleanup_free_ char *name = xasprintf("%s.%s", prefix, fields[i].name);
		add_number_property(j, name, v);
	}
}

/* The run metrics the cell's runs reported (ferry(1) METRICS): "metric.NAME.mean", ".median", ".n",
 * ".ci_low", ".ci_high" over the measured runs, each metric once, in the order runs name them. */
static void add_metric_properties(struct jw *j, const struct result_cell *c)
{
	_cleanup_free_ const char **names = NULL;
	size_t n_names = result_cell_metric_names(c, &names);
	for (size_t i = 0; i < n_names; i++) {
		const char *k = names[i];
		struct stats_summary s;
		result_cell_metric_summary(c, k, &s);
		_cleanup_free_ char *n = xasprintf("metric.%s.n", k);
		add_propertyf(j, n, "%zu", s.n);
		const char *field[] = { "mean", "median", "ci_low", "ci_high" };
		double val[] = { s.mean, s.median, s.ci_low, s.ci_high };
		for (size_t f = 0; f < ELEMENTSOF(field); f++) {
			_cleanup_free_ char *name = xasprintf("metric.%s.%s", k, field[f]);
			add_number_property(j, name, val[f]);
		}
	}
}

/* Where the numbers come from, in every suite: CI tools show one suite at a time. */
static void add_provenance_properties(struct jw *j, const struct results *r)
{
	const struct result_provenance *p = &r->provenance;
	const struct {
		const char *name, *value;
	} rows[] = {
		{ "plan.name", r->plan.name },
		{ "plan.sha256", r->plan.sha256 },
		{ "ferry.version", p->ferry_version },
		{ "host.kernel", p->host_kernel },
		{ "host.cpu", p->cpu_model },
		{ "qemu.version", p->qemu_version },
		{ "libvirt.version", p->libvirt_version },
		{ "accelerator", p->accelerator },
	};
	for (size_t i = 0; i < ELEMENTSOF(rows); i++)
		if (rows[i].value)
			add_property(j, rows[i].name, rows[i].value);
}

static void add_cell_properties(struct jw *j, const struct result_cell *c)
{
	add_property(j, "cell.id", c->id);
	add_property(j, "cell.status", result_status_name(c->status));
	if (c->skip_reason)
		add_property(j, "cell.skip_reason", c->skip_reason);
	for (size_t i = 0; i < c->n_axes; i++) {
		_cleanup_free_ char *name = xasprintf("axis.%s", c->axes[i].key);
		add_property(j, name, c->axes[i].value);
	}
	if (json_is_object(c->params)) {
		const char *key;
		json_t *v;
		json_object_foreach(c->params, key, v)
		{
			_cleanup_free_ char *name = xasprintf("param.%s", key);
			if (json_is_string(v)) {
				add_property(j, name, json_string_value(v));
			} else {
				_cleanup_free_ char *text =
				    json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER |
						      JSON_ENCODE_ANY | JSON_REAL_PRECISION(9));
				add_property(j, name, text ? text : "");
			}
		}
	}
	size_t warmups = 0;
	for (size_t i = 0; i < c->n_runs; i++)
		warmups += c->runs[i].warmup;
	add_propertyf(j, "runs.measured", "%zu", c->n_runs - warmups);
	add_propertyf(j, "runs.warmup", "%zu", warmups);
	if (c->has_stats) {
		add_summary_properties(j, "stats.total", &c->stats.total);
		for (int p = 0; p < PHASE_COUNT; p++) {
			if (c->stats.phase[p].n == 0)
				continue;
			_cleanup_free_ char *prefix =
			    xasprintf("stats.%s", result_phase_name((enum result_phase)p));
			add_summary_properties(j, prefix, &c->stats.phase[p]);
		}
		add_number_property(j, "stats.bytes_per_s", c->stats.bytes_per_s);
		add_number_property(j, "stats.files_per_s", c->stats.files_per_s);
		add_propertyf(j, "stats.outliers", "%zu", c->stats.outliers);
		add_metric_properties(j, c);
	}
	if (c->stop_reason != STATS_CONTINUE)
		add_property(j, "stop_reason", stats_stop_name((enum stats_stop)c->stop_reason));
	add_number_property(j, "cpu.user_s", c->cpu_user_s);
	add_number_property(j, "cpu.sys_s", c->cpu_sys_s);
}

/* Where cell `index` stands in the report's pivot (pivot-verdicts.h, the Markdown's words): the
 * fastest mean of its column, or its verdict against that cell. */
static void add_verdict_properties(struct jw *j, const struct results *r,
				   const struct pivot_verdicts *pv, size_t index)
{
	for (size_t i = 0; i < pv->n; i++) {
		const struct pivot_table *t = &pv->t[i];
		if (t->winner == index) {
			add_property(j, "verdict.table", t->title);
			add_property(j, "verdict.role", "fastest mean");
			return;
		}
		for (size_t k = 0; k < t->n; k++) {
			if (t->cells[k] != index)
				continue;
			const struct verdict *v = &t->v[k];
			add_property(j, "verdict.table", t->title);
			add_property(j, "verdict.role", "against the fastest mean");
			add_property(j, "verdict.against", r->cells[t->winner].id);
			add_property(j, "verdict.kind", verdict_kind_name(v->kind));
			add_property(j, "verdict", t->text[k]);
			add_number_property(j, "verdict.gain", v->gain);
			add_number_property(j, "verdict.ci_low", v->gain_low);
			add_number_property(j, "verdict.ci_high", v->gain_high);
			add_number_property(j, "verdict.level", 2 * v->confidence - 1);
			return;
		}
	}
}

static bool is_failure_kind(enum result_error_kind k)
{
	return k == ERROR_INTEGRITY || k == ERROR_CRITERION || k == ERROR_REGRESSION;
}

/* The testcase index (into the measured runs) an error belongs to, or -1 for the cell. */
static long error_run_slot(const struct result_cell *c, const struct result_error *e)
{
	if (e->run < 0 || (size_t)e->run >= c->n_runs || c->runs[e->run].warmup)
		return -1;
	return e->run;
}

/*
 * Attach the errors of one testcase as its single child: <error> when any is an infrastructure
 * fault or timeout, else <failure>; the first such error gives type and message, the body lists
 * them all with their details.
 */
static int add_verdict(struct jw *j, const struct result_error **errs, size_t n,
		       const char *fallback_kind, const char *fallback_msg, bool fallback_is_error)
{
	const struct result_error *lead = NULL;
	bool is_error = fallback_is_error && n == 0;
	for (size_t i = 0; i < n; i++) {
		if (!is_failure_kind(errs[i]->kind)) {
			lead = errs[i];
			is_error = true;
			break;
		}
	}
	if (!lead && n > 0)
		lead = errs[0];

	if (!j->w)
		return is_error;
	start_element(j, is_error ? "error" : "failure");
	const char *type = lead ? result_error_kind_name(lead->kind) : fallback_kind;
	set_attr(j, "type", type);
	if (!lead) {
		set_attr(j, "message", fallback_msg);
		add_text(j, fallback_msg);
		end_element(j);
		return is_error;
	}
	if (n > 1) {
		_cleanup_free_ char *m = xasprintf("%s (and %zu more)", lead->message, n - 1);
		set_attr(j, "message", m);
	} else {
		set_attr(j, "message", lead->message);
	}
	for (size_t i = 0; i < n; i++) {
		const struct result_error *e = errs[i];
		_cleanup_free_ char *head = xasprintf("%s%s: %s\n", i ? "\n" : "",
						      result_error_kind_name(e->kind), e->message);
		add_text(j, head);
		if (e->phase >= 0 && e->phase < PHASE_COUNT) {
			_cleanup_free_ char *ph = xasprintf(
			    "phase: %s\n", result_phase_name((enum result_phase)e->phase));
			add_text(j, ph);
		}
		if (e->libvirt_message) {
			add_text(j, "libvirt: ");
			add_text(j, e->libvirt_message);
			add_text(j, "\n");
		}
		if (e->agent_message) {
			add_text(j, "guest agent: ");
			add_text(j, e->agent_message);
			add_text(j, "\n");
		}
		if (e->serial_tail) {
			_cleanup_free_ char *clean = report_clean_text(e->serial_tail);
			bool cut;
			const char *tail = report_text_tail(clean, ERROR_BODY_TAIL_MAX, &cut);
			add_text(j, cut ? "serial console (end; the suite's system-out has more):\n"
					: "serial console:\n");
			add_text(j, tail);
			if (*tail && tail[strlen(tail) - 1] != '\n')
				add_text(j, "\n");
		}
	}
	end_element(j);
	return is_error;
}

/* Open a <testcase>; the caller adds at most one child and closes it. */
static void start_testcase(struct jw *j, const char *name, const char *classname, double time)
{
	start_element(j, "testcase");
	set_name_attr(j, "name", name, "unnamed");
	set_name_attr(j, "classname", classname, "ferry");
	set_time_attr(j, time);
}

static void skipped_testcase(struct jw *j, const char *name, const char *classname,
			     const char *message)
{
	start_testcase(j, name, classname, 0);
	start_element(j, "skipped");
	set_attr(j, "message", message);
	end_element(j);
	end_element(j);
}

struct suite_counts {
	size_t tests, failures, errors, skipped;
	double sum; /* of the measured runs' totals */
};

/*
 * The <testcase>s of one cell: with j->w NULL nothing is written and only *k is filled, which
 * the <testsuite> attributes need before its children are written.
 */
static void write_testcases(struct jw *j, const struct result_cell *c, const char *classname,
			    const struct result_error **errs, struct suite_counts *k)
{
	*k = (struct suite_counts){ 0 };
	for (size_t i = 0; i < c->n_runs; i++) {
		const struct result_run *run = &c->runs[i];
		if (run->warmup)
			continue;
		k->tests++;
		if (isfinite(run->total) && run->total > 0)
			k->sum += run->total;
		size_t n = 0;
		for (size_t e = 0; e < c->n_errors; e++)
			if (error_run_slot(c, &c->errors[e]) == (long)i)
				errs[n++] = &c->errors[e];
		if (j->w) {
			_cleanup_free_ char *name = xasprintf("%s run %zu", c->id, i);
			start_testcase(j, name, classname, run->total);
		}
		if (n > 0 || !run->integrity_ok) {
			if (add_verdict(j, errs, n, "integrity",
					"integrity check failed: the data in the guest does not "
					"match the manifest",
					false))
				k->errors++;
			else
				k->failures++;
		}
		end_element(j);
	}

	/* what belongs to the cell as a whole */
	size_t n = 0;
	for (size_t e = 0; e < c->n_errors; e++)
		if (error_run_slot(c, &c->errors[e]) < 0)
			errs[n++] = &c->errors[e];
	_cleanup_free_ char *cell_name = j->w ? xasprintf("%s (cell)", c->id) : NULL;
	if (c->status == STATUS_SKIPPED) {
		skipped_testcase(j, cell_name, classname,
				 c->skip_reason ? c->skip_reason : "skipped");
		k->tests++, k->skipped++;
	} else if (n > 0) {
		start_testcase(j, cell_name, classname, 0);
		k->tests++;
		if (add_verdict(j, errs, n, NULL, NULL, false))
			k->errors++;
		else
			k->failures++;
		end_element(j);
	} else if ((c->status == STATUS_FAILED && k->failures == 0 && k->errors == 0) ||
		   (c->status == STATUS_ERROR && k->errors == 0)) {
		/* the status says it went wrong but nothing says why: do not report a pass */
		start_testcase(j, cell_name, classname, 0);
		k->tests++;
		bool is_error = c->status == STATUS_ERROR;
		add_verdict(j, NULL, 0, is_error ? "infra" : "criterion",
			    is_error ? "the cell ended with an error; no reason was recorded"
				     : "the cell failed; no reason was recorded",
			    is_error);
		if (is_error)
			k->errors++;
		else
			k->failures++;
		end_element(j);
	} else if (c->status == STATUS_PENDING) {
		skipped_testcase(j, cell_name, classname,
				 c->n_runs
				     ? "not finished: the run stopped before this cell completed"
				     : "not run: the run stopped before this cell started");
		k->tests++, k->skipped++;
	}
}

static void write_suite(struct jw *j, const struct results *r, const struct pivot_verdicts *pv,
			size_t index, const char *classname)
{
	const struct result_cell *c = &r->cells[index];
	_cleanup_free_ const struct result_error **errs = xcalloc(c->n_errors + 1, sizeof(*errs));
	struct suite_counts k;
	struct jw counting = { .w = NULL };
	write_testcases(&counting, c, classname, errs, &k);

	start_element(j, "testsuite");
	set_name_attr(j, "name", c->id, "cell");
	set_name_attr(j, "package", classname, "ferry");
	set_attrf(j, "id", "%zu", index);
	char ts[32];
	int64_t started = c->started_ms ? c->started_ms : r->provenance.started_ms;
	set_attr(j, "timestamp", report_format_timestamp(started, ts, sizeof(ts)));
	set_name_attr(j, "hostname", r->provenance.hostname, "localhost");
	set_attrf(j, "tests", "%zu", k.tests);
	set_attrf(j, "failures", "%zu", k.failures);
	set_attrf(j, "errors", "%zu", k.errors);
	set_attrf(j, "skipped", "%zu", k.skipped);
	double wall = c->started_ms && c->finished_ms >= c->started_ms
			  ? (double)(c->finished_ms - c->started_ms) / 1000.0
			  : k.sum;
	set_time_attr(j, wall);

	start_element(j, "properties");
	add_cell_properties(j, c);
	add_verdict_properties(j, r, pv, index);
	add_provenance_properties(j, r);
	end_element(j);

	write_testcases(j, c, classname, errs, &k);

	/* the serial console tails, each cut to its last REPORT_SERIAL_TAIL_MAX bytes */
	start_element(j, "system-out");
	for (size_t e = 0; e < c->n_errors; e++) {
		const struct result_error *er = &c->errors[e];
		if (!er->serial_tail)
			continue;
		_cleanup_free_ char *clean = report_clean_text(er->serial_tail);
		bool cut;
		const char *tail = report_text_tail(clean, REPORT_SERIAL_TAIL_MAX, &cut);
		_cleanup_free_ char *head =
		    er->run >= 0 ? xasprintf("--- serial console, run %d%s ---\n", er->run,
					     cut ? " (truncated: last 64 KiB)" : "")
				 : xasprintf("--- serial console%s ---\n",
					     cut ? " (truncated: last 64 KiB)" : "");
		add_text(j, head);
		add_text(j, tail);
		if (*tail && tail[strlen(tail) - 1] != '\n')
			add_text(j, "\n");
	}
	end_element(j);
	empty_element(j, "system-err");
	end_element(j);
}

static int write_cb(void *ctx, const char *buf, int len)
{
	return fwrite(buf, 1, (size_t)len, ctx) == (size_t)len ? len : -1;
}

static int close_cb(void *ctx)
{
	return 0;
}

static int junit_write(const struct results *r, const struct pivot_verdicts *pv, FILE *out,
		       char **err)
{
	struct report_locale loc;
	report_locale_enter(&loc);

	/* the output buffer hands libxml2's chunks to out as they fill; the writer owns it */
	xmlOutputBufferPtr buf = xmlOutputBufferCreateIO(write_cb, close_cb, out, NULL);
	_cleanup_(xmlFreeTextWriterp) xmlTextWriterPtr w = buf ? xmlNewTextWriter(buf) : NULL;
	if (!w && buf)
		xmlOutputBufferClose(buf);
	struct jw j = { .w = w, .failed = !w };
	if (w) {
		/* the layout xmlSaveFormat gave: two spaces per level, text kept as is */
		check(&j, xmlTextWriterSetIndent(w, 1));
		check(&j, xmlTextWriterSetIndentString(w, X("  ")));
		check(&j, xmlTextWriterStartDocument(w, "1.0", "UTF-8", NULL));
		start_element(&j, "testsuites");
		_cleanup_free_ char *classname =
		    xasprintf("ferry.%s", r->plan.name && *r->plan.name ? r->plan.name : "plan");
		for (size_t i = 0; i < r->n_cells && !j.failed; i++)
			write_suite(&j, r, pv, i, classname);
		end_element(&j);
		check(&j, xmlTextWriterEndDocument(w));
		check(&j, xmlTextWriterFlush(w));
	}
	report_locale_leave(&loc);
	if (j.failed || fflush(out) != 0 || ferror(out)) {
		*err = xstrdup("cannot write the JUnit report");
		return -1;
	}
	return 0;
}

int report_junit(const struct results *r, FILE *out, char **err)
{
	return report_junit_layout(r, NULL, out, err);
}

int report_junit_layout(const struct results *r, const struct report_markdown_opts *o, FILE *out,
			char **err)
{
	static const struct report_markdown_opts defaults = { 0 };
	struct layout l = { 0 };
	struct pivot_verdicts pv = { 0 };
	/* the verdicts' words in the C locale, as every number of the report */
	struct report_locale loc;
	report_locale_enter(&loc);
	int rc = md_layout_build(&l, r, o ? o : &defaults, err);
	if (rc == 0)
		rc = pivot_verdicts_build(r, &l, &pv, err);
	report_locale_leave(&loc);
	if (rc == 0)
		rc = junit_write(r, &pv, out, err);
	pivot_verdicts_free(&pv);
	md_layout_free(&l, r->n_cells);
	return rc;
}
