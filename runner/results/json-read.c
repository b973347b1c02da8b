/* SPDX-License-Identifier: MIT */
/*
 * The results model from a JSON tree (results.h): untrusted input, since a results file handed
 * to `ferry report` or `--resume` may come from anywhere (json-load.c limits its size and depth
 * before the tree is built). Every field is type-checked and the first problem is reported with
 * its place ("cells[2].runs[0]: 'total' must be a number or null"); values from the file are
 * quoted with their control characters escaped.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "results.h"
#include "strmap.h"

/* The reader keeps the first error with the place it happened, e.g. "cells[2].runs[0]". */
struct reader {
	char *err;
	struct strmap ids; /* cell ids seen so far (borrowed from the model) */
	size_t n_origins;  /* a cell's "origin" indexes the origins read before the cells */
};

static const char *phase_name(int i)
{
	return result_phase_name((enum result_phase)i);
}

static const char *status_name(int i)
{
	return result_status_name((enum result_status)i);
}

static const char *kind_name(int i)
{
	return result_error_kind_name((enum result_error_kind)i);
}

/* A value from the file for an error message: quoted, control characters escaped (a message
 * must not carry ESC or a newline to a terminal or a CI log), cut after 60 characters. */
static char *quote_value(const char *s)
{
	size_t n = strlen(s), max = 60;
	char *out = xmalloc(4 * (n < max ? n : max) + 8), *o = out;
	*o++ = '\'';
	for (size_t i = 0; i < n && i < max; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f)
			o += sprintf(o, "\\x%02x", c);
		else
			*o++ = (char)c;
	}
	*o++ = '\'';
	if (n > max)
		o = stpcpy(o, "...");
	*o = '\0';
	return out;
}

_printf_(3, 4) static int fail(struct reader *rd, const char *where, const char *fmt, ...)
{
	va_list ap;
	if (rd->err)
		return -1;
	va_start(ap, fmt);
	_cleanup_free_ char *m = xvasprintf(fmt, ap);
	va_end(ap);
	rd->err = where && *where ? xasprintf("%s: %s", where, m) : TAKE_PTR(m);
	return -1;
}

static const json_t *get(const json_t *o, const char *key)
{
	return json_is_object(o) ? json_object_get(o, key) : NULL;
}

/* optional string: absent or null -> NULL */
static int rd_str(struct reader *rd, const char *where, const json_t *o, const char *key,
		  bool required, char **out)
{
	const json_t *v = get(o, key);
	*out = NULL;
	if (!v || json_is_null(v)) {
		if (required)
			return fail(rd, where, "missing '%s'", key);
		return 0;
	}
	if (!json_is_string(v))
		return fail(rd, where, "'%s' must be a string", key);
	*out = xstrndup(json_string_value(v), json_string_length(v));
	return 0;
}

/* number: absent or null -> NAN */
static int rd_num(struct reader *rd, const char *where, const json_t *o, const char *key,
		  double *out)
{
	const json_t *v = get(o, key);
	*out = NAN;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v))
		return fail(rd, where, "'%s' must be a number or null", key);
	*out = json_number_value(v);
	return 0;
}

static int rd_uint(struct reader *rd, const char *where, const json_t *o, const char *key,
		   uint64_t max, uint64_t *out);

/* "plan"."control": the plan's regression.control, which `ferry compare` uses by default, so
 * it is held to what the plan's key allows: AXIS=VALUE pairs of printable ASCII, short */
static void rd_control(struct reader *rd, const json_t *plan, char **out)
{
	if (rd_str(rd, "plan", plan, "control", false, out) < 0 || !*out)
		return;
	bool ok = **out && strlen(*out) <= 1024 && strchr(*out, '=');
	for (const char *c = *out; ok && *c; c++)
		ok = *c > ' ' && *c < 0x7f;
	if (!ok) {
		fail(rd, "plan",
		     "'control' must be AXIS=VALUE[,AXIS=VALUE...] (printable, at most "
		     "1024 characters)");
		free(*out);
		*out = NULL;
	}
}

/* "design": how a run with blocks was designed (absent: no blocks) */
static void rd_design(struct reader *rd, const json_t *o, struct result_design *d)
{
	if (!o || json_is_null(o))
		return;
	if (!json_is_object(o)) {
		fail(rd, NULL, "'design' must be an object");
		return;
	}
	uint64_t blocks, rpb, pb, pr;
	rd_uint(rd, "design", o, "blocks", 1000000, &blocks);
	rd_uint(rd, "design", o, "runs_per_boot", 1000000, &rpb);
	rd_uint(rd, "design", o, "pilot_blocks", 1000000, &pb);
	rd_uint(rd, "design", o, "pilot_runs", 1000000, &pr);
	*d = (struct result_design){ .blocks = (unsigned)blocks,
				     .runs_per_boot = (unsigned)rpb,
				     .pilot_blocks = (unsigned)pb,
				     .pilot_runs = (unsigned)pr };
	const json_t *a = get(o, "automatic");
	d->automatic = json_is_true(a);
	rd_num(rd, "design", o, "within_var", &d->within_var);
	rd_num(rd, "design", o, "between_var", &d->between_var);
	rd_num(rd, "design", o, "boot_s", &d->boot_s);
	rd_num(rd, "design", o, "run_s", &d->run_s);
	rd_num(rd, "design", o, "until", &d->until);
	rd_num(rd, "design", o, "halfwidth", &d->halfwidth);
	_cleanup_free_ char *stop = NULL;
	if (rd_str(rd, "design", o, "stop", false, &stop) == 0 && stop) {
		int s = stats_stop_from_name(stop);
		if (s <= STATS_CONTINUE)
			fail(rd, "design", "'stop' is not a stop reason");
		else
			d->stop = s;
	}
}

static int rd_uint(struct reader *rd, const char *where, const json_t *o, const char *key,
		   uint64_t max, uint64_t *out)
{
	const json_t *v = get(o, key);
	*out = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > max)
		return fail(rd, where, "'%s' must be an integer from 0 to %llu", key,
			    (unsigned long long)max);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int rd_bool(struct reader *rd, const char *where, const json_t *o, const char *key,
		   bool *out)
{
	const json_t *v = get(o, key);
	*out = false;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return fail(rd, where, "'%s' must be true or false", key);
	*out = json_is_true(v);
	return 0;
}

static int rd_time(struct reader *rd, const char *where, const json_t *o, const char *key,
		   int64_t *out)
{
	_cleanup_free_ char *s = NULL;
	*out = 0;
	if (rd_str(rd, where, o, key, false, &s) < 0)
		return -1;
	if (s && results_parse_time(s, out) < 0) {
		_cleanup_free_ char *shown = quote_value(s);
		return fail(rd, where, "'%s' is not a UTC time like 2026-01-31T12:00:00.000Z: %s",
			    key, shown);
	}
	return 0;
}

static int rd_enum(struct reader *rd, const char *where, const json_t *o, const char *key,
		   const char *(*name)(int), size_t n, bool required, int *out)
{
	_cleanup_free_ char *s = NULL;
	if (rd_str(rd, where, o, key, required, &s) < 0)
		return -1;
	*out = -1;
	if (!s)
		return 0;
	for (size_t i = 0; i < n && *out < 0; i++)
		if (STREQ(name((int)i), s))
			*out = (int)i;
	if (*out < 0) {
		_cleanup_free_ char *list = xstrdup(name(0));
		for (size_t i = 1; i < n; i++) {
			char *l = xasprintf("%s, %s", list, name((int)i));
			free(list);
			list = l;
		}
		_cleanup_free_ char *shown = quote_value(s);
		return fail(rd, where, "'%s' is %s, expected one of: %s", key, shown, list);
	}
	return 0;
}

/* JSON object (passed through) or null; a new reference in *out. */
static int rd_object(struct reader *rd, const char *where, const json_t *o, const char *key,
		     json_t **out)
{
	const json_t *v = get(o, key);
	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return fail(rd, where, "'%s' must be an object or null", key);
	*out = json_incref((json_t *)v); /* shared with the document, which the reader drops */
	return 0;
}

static const json_t *rd_array(struct reader *rd, const char *where, const json_t *o,
			      const char *key)
{
	const json_t *v = get(o, key);
	if (!v || json_is_null(v))
		return NULL;
	if (!json_is_array(v)) {
		fail(rd, where, "'%s' must be an array", key);
		return NULL;
	}
	return v;
}

static void rd_summary(struct reader *rd, const char *where, const json_t *o,
		       struct stats_summary *s)
{
	uint64_t n;
	if (!json_is_object(o)) {
		fail(rd, where, "must be an object");
		return;
	}
	rd_uint(rd, where, o, "n", SIZE_MAX, &n);
	s->n = (size_t)n;
	rd_num(rd, where, o, "mean", &s->mean);
	rd_num(rd, where, o, "median", &s->median);
	rd_num(rd, where, o, "stddev", &s->stddev);
	rd_num(rd, where, o, "cv", &s->cv);
	rd_num(rd, where, o, "min", &s->min);
	rd_num(rd, where, o, "max", &s->max);
	rd_num(rd, where, o, "p90", &s->p90);
	rd_num(rd, where, o, "ci95_low", &s->ci_low);
	rd_num(rd, where, o, "ci95_high", &s->ci_high);
}

/* A cell's "axes": an object of strings, or absent. */
static int rd_axes(struct reader *rd, const char *where, const json_t *o, struct result_cell *c)
{
	const json_t *axes = get(o, "axes");
	if (!axes || json_is_null(axes))
		return 0;
	const char *k;
	const json_t *val;
	if (!json_is_object(axes))
		return fail(rd, where, "'axes' must be an object");
	json_object_foreach((json_t *)axes, k, val)
	{
		if (!json_is_string(val)) {
			_cleanup_free_ char *shown = quote_value(k);
			return fail(rd, where, "axis %s must be a string", shown);
		}
		result_cell_add_axis(c, k, json_string_value(val));
	}
	return 0;
}

/* One of a cell's "errors" (w: its place). */
static int rd_error(struct reader *rd, const char *w, const json_t *e, struct result_cell *c)
{
	int kind, phase;
	uint64_t run;
	if (!json_is_object(e))
		return fail(rd, w, "must be an object");
	if (rd_enum(rd, w, e, "kind", kind_name, ERROR_KIND_COUNT, true, &kind) < 0)
		return -1;
	struct result_error *err = result_cell_add_error(c, kind, "%s", "");
	free(err->message);
	err->message = NULL;
	rd_str(rd, w, e, "message", true, &err->message);
	const json_t *jr = get(e, "run");
	if (jr && !json_is_null(jr)) {
		rd_uint(rd, w, e, "run", INT32_MAX, &run);
		err->run = (int)run;
	}
	rd_enum(rd, w, e, "phase", phase_name, PHASE_COUNT, false, &phase);
	err->phase = phase;
	rd_str(rd, w, e, "libvirt_message", false, &err->libvirt_message);
	rd_str(rd, w, e, "agent_message", false, &err->agent_message);
	rd_str(rd, w, e, "serial_tail", false, &err->serial_tail);
	return 0;
}

/* A run's "boot", "block", "fresh", "verify_hash" and "metrics" (w: its place). */
static int rd_run_context(struct reader *rd, const char *w, const json_t *jr,
			  struct result_run *run)
{
	const json_t *jb = get(jr, "boot");
	if (jb && !json_is_null(jb)) {
		uint64_t boot;
		rd_uint(rd, w, jr, "boot", INT64_MAX, &boot);
		run->boot = boot > 0 ? (int64_t)boot : -1;
	}
	if (get(jr, "block")) {
		uint64_t block;
		rd_uint(rd, w, jr, "block", INT64_MAX, &block);
		run->block = block > 0 ? (int64_t)block : -1;
	}
	rd_time(rd, w, jr, "started", &run->started_ms);
	const json_t *jf = get(jr, "fresh");
	if (jf && !json_is_null(jf)) {
		const char *f = json_string_value(jf);
		if (!f || (strcmp(f, "boot") != 0 && strcmp(f, "restore") != 0))
			return fail(rd, w, "'fresh' must be \"boot\" or \"restore\"");
		run->fresh = f[0] == 'b' ? "boot" : "restore";
	}
	const json_t *jh = get(jr, "verify_hash");
	if (jh && !json_is_null(jh)) {
		const char *h = json_string_value(jh);
		if (!h || (strcmp(h, "sha256") != 0 && strcmp(h, "xxh128") != 0))
			return fail(rd, w, "'verify_hash' must be \"sha256\" or \"xxh128\"");
		run->verify_hash = h[0] == 's' ? "sha256" : "xxh128";
	}
	rd_object(rd, w, jr, "metrics", &run->metrics);
	const char *mk;
	const json_t *mv;
	if (run->metrics)
		json_object_foreach(run->metrics, mk, mv)
		{
			if (!json_is_number(mv) && !json_is_null(mv)) {
				_cleanup_free_ char *shown = quote_value(mk);
				return fail(rd, w, "metric %s must be a number or null", shown);
			}
		}
	return 0;
}

/* One of a cell's "runs" (w: its place). */
static int rd_run(struct reader *rd, const char *w, const json_t *jr, struct result_cell *c)
{
	uint64_t index;
	if (!json_is_object(jr))
		return fail(rd, w, "must be an object");
	struct result_run *run = result_cell_add_run(c, false);
	rd_uint(rd, w, jr, "index", UINT32_MAX, &index);
	run->index = (unsigned)index;
	rd_bool(rd, w, jr, "warmup", &run->warmup);
	const json_t *ph = get(jr, "phases");
	if (ph && !json_is_object(ph))
		return fail(rd, w, "'phases' must be an object");
	_cleanup_free_ char *wp = xasprintf("%s.phases", w);
	for (size_t p = 0; p < PHASE_COUNT; p++)
		rd_num(rd, wp, ph, phase_name((int)p), &run->phase[p]);
	rd_num(rd, w, jr, "total", &run->total);
	rd_uint(rd, w, jr, "bytes", INT64_MAX, &run->bytes);
	rd_uint(rd, w, jr, "files", INT64_MAX, &run->files);
	rd_bool(rd, w, jr, "integrity_ok", &run->integrity_ok);
	rd_bool(rd, w, jr, "outlier", &run->outlier);
	return rd_run_context(rd, w, jr, run);
}

/* A cell's "stats", or null. */
static int rd_cell_stats(struct reader *rd, const char *where, const json_t *o,
			 struct result_cell *c)
{
	const json_t *st = get(o, "stats");
	if (!st || json_is_null(st))
		return 0;
	_cleanup_free_ char *w = xasprintf("%s.stats", where);
	uint64_t outliers;
	if (!json_is_object(st))
		return fail(rd, where, "'stats' must be an object or null");
	_cleanup_free_ char *wt = xasprintf("%s.total", w);
	rd_summary(rd, wt, get(st, "total"), &c->stats.total);
	const json_t *ph = get(st, "phases");
	for (size_t p = 0; p < PHASE_COUNT; p++) {
		_cleanup_free_ char *wp = xasprintf("%s.phases.%s", w, phase_name((int)p));
		rd_summary(rd, wp, get(ph, phase_name((int)p)), &c->stats.phase[p]);
	}
	rd_num(rd, w, st, "bytes_per_s", &c->stats.bytes_per_s);
	rd_num(rd, w, st, "files_per_s", &c->stats.files_per_s);
	rd_uint(rd, w, st, "outliers", SIZE_MAX, &outliers);
	c->stats.outliers = (size_t)outliers;
	c->has_stats = true;
	return 0;
}

/* A cell's "stop_reason", "cpu", times and "origin". */
static void rd_cell_end(struct reader *rd, const char *where, const json_t *o,
			struct result_cell *c)
{
	_cleanup_free_ char *stop = NULL;
	if (rd_str(rd, where, o, "stop_reason", false, &stop) == 0 && stop) {
		int s = stats_stop_from_name(stop);
		if (s <= STATS_CONTINUE) {
			_cleanup_free_ char *shown = quote_value(stop);
			fail(rd, where,
			     "'stop_reason' is %s, expected one of: cv-reached, max-reached, "
			     "budget-exhausted, halfwidth-reached",
			     shown);
		} else
			c->stop_reason = s;
	}
	const json_t *cpu = get(o, "cpu");
	if (cpu && !json_is_null(cpu) && !json_is_object(cpu))
		fail(rd, where, "'cpu' must be an object");
	c->cpu_user_s = c->cpu_sys_s = NAN;
	_cleanup_free_ char *wc = xasprintf("%s.cpu", where);
	rd_num(rd, wc, cpu, "user_s", &c->cpu_user_s);
	rd_num(rd, wc, cpu, "sys_s", &c->cpu_sys_s);
	rd_time(rd, where, o, "started", &c->started_ms);
	rd_time(rd, where, o, "finished", &c->finished_ms);
	const json_t *origin = get(o, "origin");
	if (origin && !json_is_null(origin)) {
		if (!json_is_integer(origin) || json_integer_value(origin) < 0 ||
		    (uint64_t)json_integer_value(origin) >= rd->n_origins)
			fail(rd, where, "'origin' must index 'origins' (0 to %zu entries)",
			     rd->n_origins);
		else
			c->origin = (int)json_integer_value(origin);
	}
}

static void rd_cell(struct reader *rd, const char *where, const json_t *o, struct results *r)
{
	_cleanup_free_ char *id = NULL;
	int v;

	if (!json_is_object(o)) {
		fail(rd, where, "must be an object");
		return;
	}
	if (rd_str(rd, where, o, "id", true, &id) < 0)
		return;
	if (strmap_get(&rd->ids, id, 0) != STRMAP_NONE) {
		_cleanup_free_ char *shown = quote_value(id);
		fail(rd, where, "duplicate cell id %s", shown);
		return;
	}
	struct result_cell *c = results_add_cell(r, id);
	strmap_put(&rd->ids, c->id, 0, (uint32_t)r->n_cells);

	if (rd_axes(rd, where, o, c) < 0)
		return;
	rd_object(rd, where, o, "params", &c->params);
	rd_object(rd, where, o, "observed", &c->observed);
	rd_enum(rd, where, o, "status", status_name, STATUS_COUNT, true, &v);
	c->status = v < 0 ? STATUS_PENDING : (enum result_status)v;
	rd_str(rd, where, o, "skip_reason", false, &c->skip_reason);

	const json_t *errors = rd_array(rd, where, o, "errors");
	for (size_t i = 0; errors && i < json_array_size(errors) && !rd->err; i++) {
		_cleanup_free_ char *w = xasprintf("%s.errors[%zu]", where, i);
		if (rd_error(rd, w, json_array_get(errors, i), c) < 0)
			return;
	}
	const json_t *runs = rd_array(rd, where, o, "runs");
	for (size_t i = 0; runs && i < json_array_size(runs) && !rd->err; i++) {
		_cleanup_free_ char *w = xasprintf("%s.runs[%zu]", where, i);
		if (rd_run(rd, w, json_array_get(runs, i), c) < 0)
			return;
	}
	if (rd_cell_stats(rd, where, o, c) < 0)
		return;
	rd_cell_end(rd, where, o, c);
}

/* A provenance object (the run's, or an origin's in a merged file). */
static void rd_provenance(struct reader *rd, const char *where, const json_t *prov,
			  struct result_provenance *p)
{
	uint64_t u;
	if (prov && !json_is_null(prov) && !json_is_object(prov)) {
		fail(rd, NULL, "'%s' must be an object", where);
		return;
	}
	rd_str(rd, where, prov, "ferry_version", false, &p->ferry_version);
	rd_str(rd, where, prov, "hostname", false, &p->hostname);
	rd_str(rd, where, prov, "host_kernel", false, &p->host_kernel);
	rd_str(rd, where, prov, "cpu_model", false, &p->cpu_model);
	rd_uint(rd, where, prov, "cpu_count", UINT32_MAX, &u);
	p->cpu_count = (unsigned)u;
	rd_uint(rd, where, prov, "memory_bytes", INT64_MAX, &p->memory_bytes);
	rd_str(rd, where, prov, "qemu_version", false, &p->qemu_version);
	rd_str(rd, where, prov, "libvirt_version", false, &p->libvirt_version);
	rd_str(rd, where, prov, "accelerator", false, &p->accelerator);
	rd_str(rd, where, prov, "guest_kernel_sha256", false, &p->guest_kernel_sha256);
	rd_str(rd, where, prov, "guest_initramfs_sha256", false, &p->guest_initramfs_sha256);
	const json_t *ds = rd_array(rd, where, prov, "datasets");
	for (size_t i = 0; ds && i < json_array_size(ds) && !rd->err; i++) {
		_cleanup_free_ char *w = xasprintf("%s.datasets[%zu]", where, i);
		_cleanup_free_ char *name = NULL, *digest = NULL;
		json_t *spec = NULL;
		const json_t *d = json_array_get(ds, i);
		if (!json_is_object(d)) {
			fail(rd, w, "must be an object");
			break;
		}
		if (rd_str(rd, w, d, "name", true, &name) < 0 ||
		    rd_str(rd, w, d, "manifest_sha256", false, &digest) < 0 ||
		    rd_object(rd, w, d, "spec", &spec) < 0)
			break;
		result_provenance_add_dataset(p, name, digest, spec);
	}
	rd_time(rd, where, prov, "started", &p->started_ms);
	rd_time(rd, where, prov, "finished", &p->finished_ms);
}

/* "shard": {"k": K, "n": N} with 1 <= K <= N, or absent or null (0/0). */
static void rd_shard(struct reader *rd, const char *where, const json_t *o, unsigned *k,
		     unsigned *n)
{
	const json_t *v = get(o, "shard");
	uint64_t kk, nn;
	*k = *n = 0;
	if (!v || json_is_null(v))
		return;
	_cleanup_free_ char *w = where ? xasprintf("%s.shard", where) : xstrdup("shard");
	if (!json_is_object(v)) {
		fail(rd, w, "must be an object or null");
		return;
	}
	if (rd_uint(rd, w, v, "k", UINT32_MAX, &kk) < 0 ||
	    rd_uint(rd, w, v, "n", UINT32_MAX, &nn) < 0)
		return;
	if (nn < 1 || kk < 1 || kk > nn) {
		fail(rd, w, "expected 1 <= k <= n, got k %llu, n %llu", (unsigned long long)kk,
		     (unsigned long long)nn);
		return;
	}
	*k = (unsigned)kk;
	*n = (unsigned)nn;
}

/* The model from the document; with consume, each cell's subtree is dropped once it is read, so
 * that the document and the model are not both whole in memory. */
/* "origins": the runs a merged file was made of, each with its shard and provenance. */
static void rd_origins(struct reader *rd, const json_t *root, struct results *r)
{
	const json_t *origins = rd_array(rd, NULL, root, "origins");
	for (size_t i = 0; origins && i < json_array_size(origins) && !rd->err; i++) {
		_cleanup_free_ char *w = xasprintf("origins[%zu]", i);
		const json_t *o = json_array_get(origins, i);
		if (!json_is_object(o)) {
			fail(rd, w, "must be an object");
			break;
		}
		unsigned k, n;
		struct result_provenance pv = { 0 };
		_cleanup_free_ char *wp = xasprintf("%s.provenance", w);
		rd_shard(rd, w, o, &k, &n);
		rd_provenance(rd, wp, get(o, "provenance"), &pv);
		size_t oi = results_add_origin(r, k, n, &pv);
		result_provenance_clear(&pv);
		rd_str(rd, w, o, "host", false, &r->origins[oi].host);
		rd_str(rd, w, o, "lost", false, &r->origins[oi].lost);
	}
}

/* One metric description (version 2) under "metrics" (w: its place). */
static int rd_metric_desc(struct reader *rd, const char *w, const char *name, const json_t *desc,
			  struct results *r)
{
	_cleanup_free_ char *unit = NULL, *better = NULL;
	if (!json_is_object(desc))
		return fail(rd, w, "must be an object");
	if (rd_str(rd, w, desc, "unit", false, &unit) < 0 ||
	    rd_str(rd, w, desc, "better", true, &better) < 0)
		return -1;
	if (!STREQ(better, "lower") && !STREQ(better, "higher")) {
		_cleanup_free_ char *b = quote_value(better);
		return fail(rd, w, "'better' is %s, expected lower or higher", b);
	}
	if (r->n_metrics >= 1024)
		return fail(rd, NULL, "more than 1024 metrics");
	results_set_metric(r, name, unit, STREQ(better, "higher"));
	return 0;
}

/* "metrics": their descriptions (version 2); the built-ins stay unless the file says otherwise */
static void rd_metric_descs(struct reader *rd, const json_t *root, struct results *r)
{
	const json_t *metrics = get(root, "metrics");
	if (metrics && !json_is_null(metrics) && !json_is_object(metrics))
		fail(rd, NULL, "'metrics' must be an object");
	const char *mname;
	const json_t *mdesc;
	if (json_is_object(metrics) && !rd->err)
		json_object_foreach((json_t *)metrics, mname, mdesc)
		{
			_cleanup_free_ char *shown = quote_value(mname);
			_cleanup_free_ char *w = xasprintf("metrics.%s", shown);
			if (rd_metric_desc(rd, w, mname, mdesc, r) < 0)
				break;
		}
}

static struct results *from_json(json_t *root, bool consume, char **err)
{
	struct reader rd = { 0 };
	_cleanup_(results_freep) struct results *r = results_new();

	if (!json_is_object(root)) {
		*err = xstrdup("not a ferry results file (the document is not a JSON object)");
		return NULL;
	}
	const json_t *ver = json_object_get(root, "ferry_results");
	if (!ver) {
		*err = xstrdup("not a ferry results file (no 'ferry_results' key)");
		return NULL;
	}
	if (!json_is_integer(ver)) {
		*err = xstrdup("'ferry_results' must be an integer (the schema version)");
		return NULL;
	}
	json_int_t version = json_integer_value(ver);
	if (version < RESULTS_VERSION_MIN || version > RESULTS_VERSION) {
		*err = xasprintf(
		    "unsupported results version %lld (this ferry reads versions %d to %d%s)",
		    (long long)version, RESULTS_VERSION_MIN, RESULTS_VERSION,
		    version > RESULTS_VERSION ? "; written by a newer ferry" : "");
		return NULL;
	}
	/* an older file is upgraded as it is read: written back, it is the current version */
	r->version = (int)version;

	const json_t *plan = get(root, "plan");
	if (plan && !json_is_null(plan) && !json_is_object(plan))
		fail(&rd, NULL, "'plan' must be an object");
	rd_str(&rd, "plan", plan, "name", false, &r->plan.name);
	rd_str(&rd, "plan", plan, "path", false, &r->plan.path);
	rd_str(&rd, "plan", plan, "sha256", false, &r->plan.sha256);
	rd_str(&rd, "plan", plan, "text", false, &r->plan.text);
	rd_control(&rd, plan, &r->plan.control);

	rd_provenance(&rd, "provenance", get(root, "provenance"), &r->provenance);
	rd_shard(&rd, NULL, root, &r->shard_k, &r->shard_n);
	rd_design(&rd, get(root, "design"), &r->design);
	rd_origins(&rd, root, r);
	rd.n_origins = r->n_origins;
	rd_metric_descs(&rd, root, r);

	json_t *cells = (json_t *)get(root, "cells");
	if (!cells || !json_is_array(cells))
		fail(&rd, NULL, "'cells' must be an array");
	strmap_init(&rd.ids, json_array_size(cells));
	for (size_t i = 0; !rd.err && i < json_array_size(cells); i++) {
		_cleanup_free_ char *w = xasprintf("cells[%zu]", i);
		rd_cell(&rd, w, json_array_get(cells, i), r);
		if (consume)
			json_array_set_new(cells, i, json_null());
	}
	strmap_free(&rd.ids);

	if (rd.err) {
		*err = rd.err;
		return NULL;
	}
	return TAKE_PTR(r);
}

struct results *results_from_json(const json_t *root, char **err)
{
	return from_json((json_t *)root, false, err);
}

struct results *results_from_json_consume(json_t *root, char **err)
{
	return from_json(root, true, err);
}
