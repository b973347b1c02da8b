/* SPDX-License-Identifier: MIT */
/*
 * JUnit XML for CI (libxml2 tree API). The shape satisfies both schemas in fixtures/xsd/:
 *   - Ant (windyroad JUnit.xsd) is the strict one: <testsuites> takes no attributes; each
 *     <testsuite> inside it needs package and id, plus name, timestamp (no zone, no fraction),
 *     hostname, tests, failures, errors, time; its children are exactly properties, testcase*,
 *     system-out, system-err in that order; a testcase has name, classname, time and at most one
 *     child (skipped, error or failure) and no system-out of its own;
 *   - Jenkins (junit-10.xsd) accepts all of that.
 * Every string goes through report_clean_text(): libxml2 escapes markup but passes control
 * characters such as ESC through, and then cannot parse its own output.
 */
#include <libxml/tree.h>
#include <libxml/xmlsave.h>
#include <math.h>
#include <string.h>

#include "cleanup.h"
#include "reporters.h"

/* How much of a serial tail the <error> body repeats (the full tail is in <system-out>). */
#define ERROR_BODY_TAIL_MAX 4096

static const xmlChar *X(const char *s)
{
	return (const xmlChar *)s;
}

/* Set an attribute from untrusted text. */
static void set_attr(xmlNodePtr n, const char *name, const char *value)
{
	_cleanup_free_ char *clean = report_clean_text(value);
	xmlNewProp(n, X(name), X(clean));
}

/* An attribute that is a name (testsuite, testcase, property): one line, never empty. */
static void set_name_attr(xmlNodePtr n, const char *name, const char *value, const char *fallback)
{
	_cleanup_free_ char *clean = report_clean_text(value);
	bool blank = true;
	for (char *p = clean; *p; p++) {
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
		if (*p != ' ')
			blank = false;
	}
	xmlNewProp(n, X(name), X(blank ? fallback : clean));
}

static void set_attrf(xmlNodePtr n, const char *name, const char *fmt, ...) _printf_(3, 4);
static void set_attrf(xmlNodePtr n, const char *name, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *v = xvasprintf(fmt, ap);
	va_end(ap);
	xmlNewProp(n, X(name), X(v));
}

/* Seconds as "%.3f" (the caller holds the C locale); undefined or negative times are 0. */
static void set_time_attr(xmlNodePtr n, double s)
{
	set_attrf(n, "time", "%.3f", isfinite(s) && s > 0 ? s : 0.0);
}

static void add_text(xmlNodePtr n, const char *text)
{
	_cleanup_free_ char *clean = report_clean_text(text);
	xmlNodeAddContent(n, X(clean));
}

static void add_property(xmlNodePtr props, const char *name, const char *value)
{
	xmlNodePtr p = xmlNewChild(props, NULL, X("property"), NULL);
	set_name_attr(p, "name", name, "unnamed");
	set_attr(p, "value", value);
}

static void add_propertyf(xmlNodePtr props, const char *name, const char *fmt, ...) _printf_(3, 4);
static void add_propertyf(xmlNodePtr props, const char *name, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *v = xvasprintf(fmt, ap);
	va_end(ap);
	add_property(props, name, v);
}

static void add_number_property(xmlNodePtr props, const char *name, double v)
{
	if (isfinite(v))
		add_propertyf(props, name, "%.9g", v);
}

static void add_summary_properties(xmlNodePtr props, const char *prefix,
				   const struct stats_summary *s)
{
	_cleanup_free_ char *n = xasprintf("%s.n", prefix);
	add_propertyf(props, n, "%zu", s->n);
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
		add_number_property(props, name, v);
	}
}

/* Where the numbers come from, in every suite: CI tools show one suite at a time. */
static void add_provenance_properties(xmlNodePtr props, const struct results *r)
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
			add_property(props, rows[i].name, rows[i].value);
}

static void add_cell_properties(xmlNodePtr props, const struct result_cell *c)
{
	add_property(props, "cell.id", c->id);
	add_property(props, "cell.status", result_status_name(c->status));
	if (c->skip_reason)
		add_property(props, "cell.skip_reason", c->skip_reason);
	for (size_t i = 0; i < c->n_axes; i++) {
		_cleanup_free_ char *name = xasprintf("axis.%s", c->axes[i].key);
		add_property(props, name, c->axes[i].value);
	}
	if (json_is_object(c->params)) {
		const char *key;
		json_t *v;
		json_object_foreach(c->params, key, v)
		{
			_cleanup_free_ char *name = xasprintf("param.%s", key);
			if (json_is_string(v)) {
				add_property(props, name, json_string_value(v));
			} else {
				_cleanup_free_ char *text =
				    json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER |
						      JSON_ENCODE_ANY | JSON_REAL_PRECISION(9));
				add_property(props, name, text ? text : "");
			}
		}
	}
	size_t warmups = 0;
	for (size_t i = 0; i < c->n_runs; i++)
		warmups += c->runs[i].warmup;
	add_propertyf(props, "runs.measured", "%zu", c->n_runs - warmups);
	add_propertyf(props, "runs.warmup", "%zu", warmups);
	if (c->has_stats) {
		add_summary_properties(props, "stats.total", &c->stats.total);
		for (int p = 0; p < PHASE_COUNT; p++) {
			if (c->stats.phase[p].n == 0)
				continue;
			_cleanup_free_ char *prefix =
			    xasprintf("stats.%s", result_phase_name((enum result_phase)p));
			add_summary_properties(props, prefix, &c->stats.phase[p]);
		}
		add_number_property(props, "stats.bytes_per_s", c->stats.bytes_per_s);
		add_number_property(props, "stats.files_per_s", c->stats.files_per_s);
		add_propertyf(props, "stats.outliers", "%zu", c->stats.outliers);
	}
	if (c->stop_reason != STATS_CONTINUE)
		add_property(props, "stop_reason",
			     stats_stop_name((enum stats_stop)c->stop_reason));
	add_number_property(props, "cpu.user_s", c->cpu_user_s);
	add_number_property(props, "cpu.sys_s", c->cpu_sys_s);
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
static int add_verdict(xmlNodePtr tc, const struct result_error **errs, size_t n,
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

	xmlNodePtr v = xmlNewChild(tc, NULL, X(is_error ? "error" : "failure"), NULL);
	const char *type = lead ? result_error_kind_name(lead->kind) : fallback_kind;
	set_attr(v, "type", type);
	if (!lead) {
		set_attr(v, "message", fallback_msg);
		add_text(v, fallback_msg);
		return is_error;
	}
	if (n > 1) {
		_cleanup_free_ char *m = xasprintf("%s (and %zu more)", lead->message, n - 1);
		set_attr(v, "message", m);
	} else {
		set_attr(v, "message", lead->message);
	}
	for (size_t i = 0; i < n; i++) {
		const struct result_error *e = errs[i];
		_cleanup_free_ char *head = xasprintf("%s%s: %s\n", i ? "\n" : "",
						      result_error_kind_name(e->kind), e->message);
		add_text(v, head);
		if (e->phase >= 0 && e->phase < PHASE_COUNT) {
			_cleanup_free_ char *ph = xasprintf(
			    "phase: %s\n", result_phase_name((enum result_phase)e->phase));
			add_text(v, ph);
		}
		if (e->libvirt_message) {
			add_text(v, "libvirt: ");
			add_text(v, e->libvirt_message);
			add_text(v, "\n");
		}
		if (e->agent_message) {
			add_text(v, "guest agent: ");
			add_text(v, e->agent_message);
			add_text(v, "\n");
		}
		if (e->serial_tail) {
			_cleanup_free_ char *clean = report_clean_text(e->serial_tail);
			bool cut;
			const char *tail = report_text_tail(clean, ERROR_BODY_TAIL_MAX, &cut);
			add_text(v, cut ? "serial console (end; the suite's system-out has more):\n"
					: "serial console:\n");
			add_text(v, tail);
			if (*tail && tail[strlen(tail) - 1] != '\n')
				add_text(v, "\n");
		}
	}
	return is_error;
}

static xmlNodePtr new_testcase(xmlNodePtr suite, const char *name, const char *classname,
			       double time)
{
	xmlNodePtr tc = xmlNewChild(suite, NULL, X("testcase"), NULL);
	set_name_attr(tc, "name", name, "unnamed");
	set_name_attr(tc, "classname", classname, "ferry");
	set_time_attr(tc, time);
	return tc;
}

static void add_suite(xmlNodePtr root, const struct results *r, const struct result_cell *c,
		      size_t index, const char *classname)
{
	xmlNodePtr suite = xmlNewChild(root, NULL, X("testsuite"), NULL);
	size_t tests = 0, failures = 0, errors = 0, skipped = 0;
	double sum = 0;

	/* attributes first so they read in a sensible order; counts are filled in at the end */
	set_name_attr(suite, "name", c->id, "cell");
	set_name_attr(suite, "package", classname, "ferry");
	set_attrf(suite, "id", "%zu", index);
	char ts[32];
	int64_t started = c->started_ms ? c->started_ms : r->provenance.started_ms;
	set_attr(suite, "timestamp", report_format_timestamp(started, ts, sizeof(ts)));
	set_name_attr(suite, "hostname", r->provenance.hostname, "localhost");

	xmlNodePtr props = xmlNewChild(suite, NULL, X("properties"), NULL);
	add_cell_properties(props, c);
	add_provenance_properties(props, r);

	_cleanup_free_ const struct result_error **errs = xcalloc(c->n_errors + 1, sizeof(*errs));

	for (size_t i = 0; i < c->n_runs; i++) {
		const struct result_run *run = &c->runs[i];
		if (run->warmup)
			continue;
		_cleanup_free_ char *name = xasprintf("%s run %zu", c->id, i);
		xmlNodePtr tc = new_testcase(suite, name, classname, run->total);
		tests++;
		if (isfinite(run->total) && run->total > 0)
			sum += run->total;
		size_t n = 0;
		for (size_t e = 0; e < c->n_errors; e++)
			if (error_run_slot(c, &c->errors[e]) == (long)i)
				errs[n++] = &c->errors[e];
		if (n > 0 || !run->integrity_ok) {
			if (add_verdict(tc, errs, n, "integrity",
					"integrity check failed: the data in the guest does not "
					"match the manifest",
					false))
				errors++;
			else
				failures++;
		}
	}

	/* what belongs to the cell as a whole */
	size_t n = 0;
	for (size_t e = 0; e < c->n_errors; e++)
		if (error_run_slot(c, &c->errors[e]) < 0)
			errs[n++] = &c->errors[e];
	_cleanup_free_ char *cell_name = xasprintf("%s (cell)", c->id);
	if (c->status == STATUS_SKIPPED) {
		xmlNodePtr tc = new_testcase(suite, cell_name, classname, 0);
		xmlNodePtr s = xmlNewChild(tc, NULL, X("skipped"), NULL);
		set_attr(s, "message", c->skip_reason ? c->skip_reason : "skipped");
		tests++, skipped++;
	} else if (n > 0) {
		xmlNodePtr tc = new_testcase(suite, cell_name, classname, 0);
		tests++;
		if (add_verdict(tc, errs, n, NULL, NULL, false))
			errors++;
		else
			failures++;
	} else if ((c->status == STATUS_FAILED && failures == 0 && errors == 0) ||
		   (c->status == STATUS_ERROR && errors == 0)) {
		/* the status says it went wrong but nothing says why: do not report a pass */
		xmlNodePtr tc = new_testcase(suite, cell_name, classname, 0);
		tests++;
		bool is_error = c->status == STATUS_ERROR;
		add_verdict(tc, NULL, 0, is_error ? "infra" : "criterion",
			    is_error ? "the cell ended with an error; no reason was recorded"
				     : "the cell failed; no reason was recorded",
			    is_error);
		if (is_error)
			errors++;
		else
			failures++;
	} else if (c->status == STATUS_PENDING) {
		xmlNodePtr tc = new_testcase(suite, cell_name, classname, 0);
		xmlNodePtr s = xmlNewChild(tc, NULL, X("skipped"), NULL);
		set_attr(s, "message",
			 c->n_runs ? "not finished: the run stopped before this cell completed"
				   : "not run: the run stopped before this cell started");
		tests++, skipped++;
	}

	/* the serial console tails, each cut to its last REPORT_SERIAL_TAIL_MAX bytes */
	xmlNodePtr out = xmlNewChild(suite, NULL, X("system-out"), NULL);
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
		add_text(out, head);
		add_text(out, tail);
		if (*tail && tail[strlen(tail) - 1] != '\n')
			add_text(out, "\n");
	}
	xmlNewChild(suite, NULL, X("system-err"), NULL);

	set_attrf(suite, "tests", "%zu", tests);
	set_attrf(suite, "failures", "%zu", failures);
	set_attrf(suite, "errors", "%zu", errors);
	set_attrf(suite, "skipped", "%zu", skipped);
	double wall = c->started_ms && c->finished_ms >= c->started_ms
			  ? (double)(c->finished_ms - c->started_ms) / 1000.0
			  : sum;
	set_time_attr(suite, wall);
}

static int write_cb(void *ctx, const char *buf, int len)
{
	return fwrite(buf, 1, (size_t)len, ctx) == (size_t)len ? len : -1;
}

static int close_cb(void *ctx)
{
	return 0;
}

int report_junit(const struct results *r, FILE *out, char **err)
{
	struct report_locale loc;
	report_locale_enter(&loc);

	_cleanup_(xmlFreeDocp) xmlDocPtr doc = xmlNewDoc(X("1.0"));
	xmlNodePtr root = xmlNewNode(NULL, X("testsuites"));
	xmlDocSetRootElement(doc, root);

	_cleanup_free_ char *classname =
	    xasprintf("ferry.%s", r->plan.name && *r->plan.name ? r->plan.name : "plan");
	for (size_t i = 0; i < r->n_cells; i++)
		add_suite(root, r, &r->cells[i], i, classname);

	xmlSaveCtxtPtr save = xmlSaveToIO(write_cb, close_cb, out, "UTF-8", XML_SAVE_FORMAT);
	int rc = -1;
	if (save) {
		rc = xmlSaveDoc(save, doc) < 0 ? -1 : 0;
		if (xmlSaveClose(save) < 0)
			rc = -1;
	}
	report_locale_leave(&loc);
	if (rc < 0 || fflush(out) != 0 || ferror(out)) {
		*err = xstrdup("cannot write the JUnit report");
		return -1;
	}
	return 0;
}
