/* SPDX-License-Identifier: MIT */
/*
 * The results model as JSON (schema/ferry-results.schema.json): the one writer of the results
 * file. results_write() (the executor, after every cell) and report_json() (`--json`) both go
 * through results_dump(), which streams the document cell by cell, so that writing needs memory
 * for one cell at a time, not for the whole tree and its text.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"
#include "results.h"
#include "utf8.h"

json_t *results_json_string(const char *s, char *(*sanitize)(const char *))
{
	if (!s)
		return json_null();
	json_t *j = json_string(s);
	if (j)
		return j;
	_cleanup_free_ char *clean = sanitize(s);
	return json_string(clean);
}

json_t *results_json_number(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

/* Strings that are not UTF-8 (a serial console tail may hold anything; jansson refuses them)
 * are written with U+FFFD in place of the bytes that are not (utf8_sanitize()). */
static json_t *jstr(const char *s)
{
	return results_json_string(s, utf8_sanitize);
}

/* JSON has no NaN or infinity: an undefined number is null */
static json_t *jnum(double x)
{
	return results_json_number(x);
}

static json_t *juint(uint64_t x)
{
	/* json_int_t is long long; clamp rather than wrap (no real byte count comes close) */
	return json_integer(x > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)x);
}

static json_t *jtime(int64_t ms)
{
	char buf[40];
	return ms ? json_string(results_format_time(ms, buf, sizeof(buf))) : json_null();
}

static json_t *jobj_or_null(json_t *o)
{
	return o ? json_incref(o) : json_null();
}

static json_t *summary_to_json(const struct stats_summary *s)
{
	return json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "n",
			 (json_int_t)s->n, "mean", jnum(s->mean), "median", jnum(s->median),
			 "stddev", jnum(s->stddev), "cv", jnum(s->cv), "min", jnum(s->min), "max",
			 jnum(s->max), "p90", jnum(s->p90), "ci95_low", jnum(s->ci_low),
			 "ci95_high", jnum(s->ci_high));
}

static json_t *phases_to_json(const double *phase)
{
	json_t *o = json_object();
	for (size_t p = 0; p < PHASE_COUNT; p++)
		json_object_set_new(o, result_phase_name((enum result_phase)p), jnum(phase[p]));
	return o;
}

/* The summary of every metric the cell's runs reported, in the order the runs name them. */
static json_t *metric_summaries(const struct result_cell *c)
{
	json_t *o = json_object();
	_cleanup_free_ const char **names = NULL;
	size_t n = result_cell_metric_names(c, &names);
	for (size_t i = 0; i < n; i++) {
		struct stats_summary s;
		result_cell_metric_summary(c, names[i], &s);
		_cleanup_free_ char *name = utf8_sanitize(names[i]);
		json_object_set_new(o, name, summary_to_json(&s));
	}
	return o;
}

static json_t *cell_to_json(const struct result_cell *c)
{
	json_t *axes = json_object();
	for (size_t i = 0; i < c->n_axes; i++) {
		_cleanup_free_ char *key = utf8_sanitize(c->axes[i].key);
		json_object_set_new(axes, key, jstr(c->axes[i].value));
	}

	json_t *errors = json_array();
	for (size_t i = 0; i < c->n_errors; i++) {
		const struct result_error *e = &c->errors[i];
		json_array_append_new(
		    errors,
		    json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o}", "kind",
			      result_error_kind_name(e->kind), "message", jstr(e->message), "run",
			      e->run >= 0 ? json_integer(e->run) : json_null(), "phase",
			      e->phase >= 0 && e->phase < PHASE_COUNT
				  ? json_string(result_phase_name((enum result_phase)e->phase))
				  : json_null(),
			      "libvirt_message", jstr(e->libvirt_message), "agent_message",
			      jstr(e->agent_message), "serial_tail", jstr(e->serial_tail)));
	}

	json_t *runs = json_array();
	for (size_t i = 0; i < c->n_runs; i++) {
		const struct result_run *r = &c->runs[i];
		json_t *jr = json_pack("{s:I, s:b, s:o, s:o, s:o, s:o, s:b, s:b, s:o, s:o}",
				       "index", (json_int_t)r->index, "warmup", r->warmup, "phases",
				       phases_to_json(r->phase), "total", jnum(r->total), "bytes",
				       juint(r->bytes), "files", juint(r->files), "integrity_ok",
				       r->integrity_ok, "outlier", r->outlier, "boot",
				       r->boot > 0 ? json_integer(r->boot) : json_null(), "metrics",
				       jobj_or_null(r->metrics));
		/* optional: files written before it existed have no run start */
		if (r->started_ms)
			json_object_set_new(jr, "started", jtime(r->started_ms));
		if (r->fresh)
			json_object_set_new(jr, "fresh", json_string(r->fresh));
		if (r->verify_hash)
			json_object_set_new(jr, "verify_hash", json_string(r->verify_hash));
		/* optional: only runs of a plan with blocks (run.boots) have one */
		if (r->block > 0)
			json_object_set_new(jr, "block", json_integer(r->block));
		json_array_append_new(runs, jr);
	}

	json_t *stats = json_null();
	if (c->has_stats) {
		json_t *ph = json_object();
		for (size_t p = 0; p < PHASE_COUNT; p++)
			json_object_set_new(ph, result_phase_name((enum result_phase)p),
					    summary_to_json(&c->stats.phase[p]));
		json_decref(stats);
		stats = json_pack(
		    "{s:o, s:o, s:o, s:o, s:I}", "total", summary_to_json(&c->stats.total),
		    "phases", ph, "bytes_per_s", jnum(c->stats.bytes_per_s), "files_per_s",
		    jnum(c->stats.files_per_s), "outliers", (json_int_t)c->stats.outliers);
		json_t *ms = metric_summaries(c);
		if (json_object_size(ms))
			json_object_set(stats, "metrics", ms);
		json_decref(ms);
	}

	json_t *cell = json_pack(
	    "{s:o, s:o, s:o, s:s, s:o, s:o, s:o, s:o, s:o, s:{s:o, s:o}, s:o, s:o}", "id",
	    jstr(c->id), "axes", axes, "params", jobj_or_null(c->params), "status",
	    result_status_name(c->status), "skip_reason", jstr(c->skip_reason), "errors", errors,
	    "runs", runs, "stats", stats, "stop_reason",
	    c->stop_reason != STATS_CONTINUE ? json_string(stats_stop_name(c->stop_reason))
					     : json_null(),
	    "cpu", "user_s", jnum(c->cpu_user_s), "sys_s", jnum(c->cpu_sys_s), "started",
	    jtime(c->started_ms), "finished", jtime(c->finished_ms));
	if (cell && c->origin >= 0)
		json_object_set_new(cell, "origin", json_integer(c->origin));
	/* only when there is something: results of methods that observe nothing stay as they were
	 */
	if (cell && c->observed)
		json_object_set(cell, "observed", c->observed);
	return cell;
}

static json_t *provenance_to_json(const struct result_provenance *p)
{
	json_t *datasets = json_array();
	for (size_t i = 0; i < p->n_datasets; i++)
		json_array_append_new(
		    datasets, json_pack("{s:o, s:o, s:o}", "name", jstr(p->datasets[i].name),
					"manifest_sha256", jstr(p->datasets[i].manifest_sha256),
					"spec", jobj_or_null(p->datasets[i].spec)));

	return json_pack(
	    "{s:o, s:o, s:o, s:o, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
	    "ferry_version", jstr(p->ferry_version), "hostname", jstr(p->hostname), "host_kernel",
	    jstr(p->host_kernel), "cpu_model", jstr(p->cpu_model), "cpu_count",
	    (json_int_t)p->cpu_count, "memory_bytes", juint(p->memory_bytes), "qemu_version",
	    jstr(p->qemu_version), "libvirt_version", jstr(p->libvirt_version), "accelerator",
	    jstr(p->accelerator), "guest_kernel_sha256", jstr(p->guest_kernel_sha256),
	    "guest_initramfs_sha256", jstr(p->guest_initramfs_sha256), "datasets", datasets,
	    "started", jtime(p->started_ms), "finished", jtime(p->finished_ms));
}

/* {"k": K, "n": N}, or null for 0/0 (every cell) */
static json_t *shard_to_json(unsigned k, unsigned n)
{
	if (!n)
		return json_null();
	return json_pack("{s:I, s:I}", "k", (json_int_t)k, "n", (json_int_t)n);
}

/* Everything but the cells. "shard" and "origins" are written only when there are some, so
 * that the file of an unsharded run is what it always was. */
static json_t *head_to_json(const struct results *r, const json_t *verdicts)
{
	json_t *metrics = json_object();
	for (size_t i = 0; i < r->n_metrics; i++) {
		_cleanup_free_ char *name = utf8_sanitize(r->metrics[i].name);
		json_object_set_new(metrics, name,
				    json_pack("{s:o, s:s}", "unit", jstr(r->metrics[i].unit),
					      "better",
					      r->metrics[i].higher_better ? "higher" : "lower"));
	}

	json_t *head =
	    json_pack("{s:i, s:{s:o, s:o, s:o, s:o}, s:o, s:o}", "ferry_results", RESULTS_VERSION,
		      "plan", "name", jstr(r->plan.name), "path", jstr(r->plan.path), "sha256",
		      jstr(r->plan.sha256), "text", jstr(r->plan.text), "provenance",
		      provenance_to_json(&r->provenance), "metrics", metrics);
	if (head && r->plan.control)
		json_object_set_new(json_object_get(head, "plan"), "control",
				    jstr(r->plan.control));
	if (head && r->shard_n)
		json_object_set_new(head, "shard", shard_to_json(r->shard_k, r->shard_n));
	const struct result_design *d = &r->design;
	if (head && d->blocks)
		json_object_set_new(
		    head, "design",
		    json_pack("{s:I, s:I, s:b, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
			      "blocks", (json_int_t)d->blocks, "runs_per_boot",
			      (json_int_t)d->runs_per_boot, "automatic", d->automatic,
			      "pilot_blocks", (json_int_t)d->pilot_blocks, "pilot_runs",
			      (json_int_t)d->pilot_runs, "within_var", jnum(d->within_var),
			      "between_var", jnum(d->between_var), "boot_s", jnum(d->boot_s),
			      "run_s", jnum(d->run_s), "stop",
			      d->stop ? json_string(stats_stop_name(d->stop)) : json_null(),
			      "until", jnum(d->until), "halfwidth", jnum(d->halfwidth)));
	if (head && verdicts)
		json_object_set(head, "verdicts", (json_t *)verdicts);
	if (head && r->n_origins) {
		json_t *origins = json_array();
		for (size_t i = 0; i < r->n_origins; i++) {
			const struct result_origin *o = &r->origins[i];
			json_t *oj =
			    json_pack("{s:o, s:o}", "shard", shard_to_json(o->shard_k, o->shard_n),
				      "provenance", provenance_to_json(&o->provenance));
			/* a host of a fan-out: its URI, and why it failed */
			if (oj && o->host)
				json_object_set_new(oj, "host", jstr(o->host));
			if (oj && o->lost)
				json_object_set_new(oj, "lost", jstr(o->lost));
			json_array_append_new(origins, oj);
		}
		json_object_set_new(head, "origins", origins);
	}
	return head;
}

json_t *results_to_json(const struct results *r)
{
	json_t *root = head_to_json(r, r->verdicts);
	json_t *cells = json_array();
	for (size_t i = 0; i < r->n_cells; i++)
		json_array_append_new(cells, cell_to_json(&r->cells[i]));
	json_object_set_new(root, "cells", cells);
	return root;
}

/* 17 significant digits print every double so that it reads back bit-identical */
#define DUMP_FLAGS (JSON_INDENT(2) | JSON_REAL_PRECISION(17) | JSON_PRESERVE_ORDER)

/* Write s with every newline followed by `indent` spaces (strings in JSON text never hold a raw
 * newline, so this only moves the lines of a nested value to its depth). */
static int put_indented(FILE *out, const char *s, int indent)
{
	for (const char *nl; (nl = strchr(s, '\n')); s = nl + 1)
		if (fwrite(s, 1, (size_t)(nl - s) + 1, out) != (size_t)(nl - s) + 1 ||
		    fprintf(out, "%*s", indent, "") < 0)
			return -1;
	return fputs(s, out) < 0 ? -1 : 0;
}

int results_dump(const struct results *r, FILE *out, char **err)
{
	return results_dump_with(r, r->verdicts, out, err);
}

int results_dump_with(const struct results *r, const json_t *verdicts, FILE *out, char **err)
{
	/*
	 * The same bytes as json_dumpf(results_to_json(r), DUMP_FLAGS): the head without its
	 * closing brace, then "cells" with each cell dumped alone and indented to its depth (2 for
	 * the key, 4 for the array's elements). tests/unit/test-results-json.c holds both equal.
	 */
	_cleanup_(json_decrefp) json_t *head = head_to_json(r, verdicts);
	_cleanup_free_ char *text = head ? json_dumps(head, DUMP_FLAGS) : NULL;
	size_t len = text ? strlen(text) : 0;
	if (len < 2 || !STREQ(text + len - 2, "\n}")) {
		*err = xstrdup("cannot serialize the results document");
		return -1;
	}
	text[len - 2] = '\0';
	int rc = fputs(text, out) < 0 ? -1 : 0;
	if (rc == 0)
		rc = fputs(r->n_cells ? ",\n  \"cells\": [" : ",\n  \"cells\": []", out) < 0 ? -1
											     : 0;
	for (size_t i = 0; rc == 0 && i < r->n_cells; i++) {
		_cleanup_(json_decrefp) json_t *cell = cell_to_json(&r->cells[i]);
		_cleanup_free_ char *ct = cell ? json_dumps(cell, DUMP_FLAGS) : NULL;
		if (!ct) {
			*err = xasprintf("cannot serialize cell %zu of the results document", i);
			return -1;
		}
		if (fputs(i ? ",\n    " : "\n    ", out) < 0 || put_indented(out, ct, 4) < 0)
			rc = -1;
	}
	if (rc == 0)
		rc = fputs(r->n_cells ? "\n  ]\n}\n" : "\n}\n", out) < 0 ? -1 : 0;
	if (rc == 0 && fflush(out) != 0)
		rc = -1;
	if (rc < 0 || ferror(out)) {
		*err = xasprintf("write: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int results_write(const struct results *r, const char *path, char **err)
{
	/* the one atomic writer (fs.h): a temporary file created exclusively next to the target,
	 * fsync, rename over it (only a regular file is replaced), fsync the directory */
	struct atomic_file af;
	if (atomic_file_open(&af, path, 0644, err) < 0)
		return -1;
	int fd = dup(af.fd);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		*err = xasprintf("%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		atomic_file_abort(&af);
		return -1;
	}
	_cleanup_free_ char *derr = NULL;
	int rc = results_dump(r, f, &derr);
	if (fclose(f) != 0 && rc == 0) {
		rc = -1;
		derr = xasprintf("close: %s", strerror(errno));
	}
	if (rc < 0) {
		*err = xasprintf("%s: %s", path, derr);
		atomic_file_abort(&af);
		return -1;
	}
	return atomic_file_commit(&af, err);
}
