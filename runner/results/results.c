/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "results.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>

#include "fs.h"
#include "hash.h"
#include "utf8.h"

/* ---- names ------------------------------------------------------------------------------- */

static const char *const phase_names[PHASE_COUNT] = {
	[PHASE_PREPARE] = "prepare", [PHASE_TRANSFER] = "transfer", [PHASE_FINALIZE] = "finalize",
	[PHASE_VERIFY] = "verify",   [PHASE_CLEANUP] = "cleanup",
};
static const char *const status_names[STATUS_COUNT] = {
	[STATUS_PENDING] = "pending", [STATUS_PASSED] = "passed",   [STATUS_FAILED] = "failed",
	[STATUS_ERROR] = "error",     [STATUS_SKIPPED] = "skipped",
};
static const char *const kind_names[ERROR_KIND_COUNT] = {
	[ERROR_INFRA] = "infra",         [ERROR_INTEGRITY] = "integrity",
	[ERROR_CRITERION] = "criterion", [ERROR_REGRESSION] = "regression",
	[ERROR_TIMEOUT] = "timeout",
};

static int name_index(const char *const *names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (STREQ(names[i], name))
			return (int)i;
	return -1;
}

const char *result_phase_name(enum result_phase p)
{
	return (size_t)p < PHASE_COUNT ? phase_names[p] : "unknown";
}

int result_phase_from_name(const char *name)
{
	return name_index(phase_names, PHASE_COUNT, name);
}

const char *result_status_name(enum result_status s)
{
	return (size_t)s < STATUS_COUNT ? status_names[s] : "unknown";
}

int result_status_from_name(const char *name)
{
	return name_index(status_names, STATUS_COUNT, name);
}

const char *result_error_kind_name(enum result_error_kind k)
{
	return (size_t)k < ERROR_KIND_COUNT ? kind_names[k] : "unknown";
}

int result_error_kind_from_name(const char *name)
{
	return name_index(kind_names, ERROR_KIND_COUNT, name);
}

/* ---- building and freeing the model ------------------------------------------------------ */

struct results *results_new(void)
{
	struct results *r = xcalloc(1, sizeof(*r));
	r->version = RESULTS_VERSION;
	return r;
}

/* what a run of the cell produced, as opposed to what defines it (id, axes, params) */
static void cell_clear_outcome(struct result_cell *c)
{
	free(c->skip_reason);
	for (size_t i = 0; i < c->n_errors; i++) {
		struct result_error *e = &c->errors[i];
		free(e->message);
		free(e->libvirt_message);
		free(e->agent_message);
		free(e->serial_tail);
	}
	free(c->errors);
	free(c->runs);
}

static void cell_clear(struct result_cell *c)
{
	free(c->id);
	for (size_t i = 0; i < c->n_axes; i++) {
		free(c->axes[i].key);
		free(c->axes[i].value);
	}
	free(c->axes);
	json_decref(c->params);
	cell_clear_outcome(c);
}

void result_cell_reset(struct result_cell *c)
{
	cell_clear_outcome(c);
	c->skip_reason = NULL;
	c->errors = NULL;
	c->n_errors = 0;
	c->runs = NULL;
	c->n_runs = 0;
	c->has_stats = false;
	memset(&c->stats, 0, sizeof(c->stats));
	c->status = STATUS_PENDING;
	c->stop_reason = STATS_CONTINUE;
	c->cpu_user_s = c->cpu_sys_s = NAN;
	c->started_ms = c->finished_ms = 0;
}

static void provenance_clear(struct result_provenance *p)
{
	free(p->ferry_version);
	free(p->hostname);
	free(p->host_kernel);
	free(p->cpu_model);
	free(p->qemu_version);
	free(p->libvirt_version);
	free(p->accelerator);
	free(p->guest_kernel_sha256);
	free(p->guest_initramfs_sha256);
	for (size_t i = 0; i < p->n_datasets; i++) {
		free(p->datasets[i].name);
		free(p->datasets[i].manifest_sha256);
		json_decref(p->datasets[i].spec);
	}
	free(p->datasets);
}

void results_free(struct results *r)
{
	if (!r)
		return;
	free(r->plan.name);
	free(r->plan.path);
	free(r->plan.sha256);
	free(r->plan.text);
	provenance_clear(&r->provenance);
	for (size_t i = 0; i < r->n_cells; i++)
		cell_clear(&r->cells[i]);
	free(r->cells);
	free(r);
}

static char *strdup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

void results_set_plan(struct results *r, const char *name, const char *path, const char *bytes,
		      size_t len)
{
	char hex[65];

	free(r->plan.name);
	free(r->plan.path);
	free(r->plan.sha256);
	free(r->plan.text);
	r->plan.name = strdup_or_null(name);
	r->plan.path = strdup_or_null(path);
	sha256_buf_hex(bytes, len, hex);
	r->plan.sha256 = xstrdup(hex);
	r->plan.text = xstrndup(bytes, len);
}

struct result_cell *results_add_cell(struct results *r, const char *id)
{
	/* exact-size growth keeps the model simple; a plan has at most thousands of cells */
	r->cells = xrealloc(r->cells, (r->n_cells + 1) * sizeof(*r->cells));
	struct result_cell *c = &r->cells[r->n_cells++];
	*c = (struct result_cell){
		.id = xstrdup(id),
		.status = STATUS_PENDING,
		.cpu_user_s = NAN,
		.cpu_sys_s = NAN,
	};
	return c;
}

struct result_cell *results_find_cell(const struct results *r, const char *id)
{
	for (size_t i = 0; i < r->n_cells; i++)
		if (STREQ(r->cells[i].id, id))
			return &r->cells[i];
	return NULL;
}

void result_cell_add_axis(struct result_cell *c, const char *key, const char *value)
{
	c->axes = xrealloc(c->axes, (c->n_axes + 1) * sizeof(*c->axes));
	c->axes[c->n_axes++] = (struct result_axis){ xstrdup(key), xstrdup(value) };
}

struct result_run *result_cell_add_run(struct result_cell *c, bool warmup)
{
	c->runs = xrealloc(c->runs, (c->n_runs + 1) * sizeof(*c->runs));
	struct result_run *run = &c->runs[c->n_runs];
	*run = (struct result_run){ .index = (unsigned)c->n_runs, .warmup = warmup, .total = NAN };
	for (size_t p = 0; p < PHASE_COUNT; p++)
		run->phase[p] = NAN;
	c->n_runs++;
	return run;
}

struct result_error *result_cell_add_error(struct result_cell *c, enum result_error_kind kind,
					   const char *fmt, ...)
{
	va_list ap;

	c->errors = xrealloc(c->errors, (c->n_errors + 1) * sizeof(*c->errors));
	struct result_error *e = &c->errors[c->n_errors++];
	*e = (struct result_error){ .kind = kind, .run = -1, .phase = -1 };
	va_start(ap, fmt);
	e->message = xvasprintf(fmt, ap);
	va_end(ap);
	return e;
}

void results_add_dataset(struct results *r, const char *name, const char *manifest_sha256,
			 json_t *spec)
{
	struct result_provenance *p = &r->provenance;
	p->datasets = xrealloc(p->datasets, (p->n_datasets + 1) * sizeof(*p->datasets));
	p->datasets[p->n_datasets++] = (struct result_dataset){
		.name = xstrdup(name),
		.manifest_sha256 = strdup_or_null(manifest_sha256),
		.spec = spec,
	};
}

/* ---- statistics -------------------------------------------------------------------------- */

double result_run_total(const struct result_run *run)
{
	double t = 0;
	for (enum result_phase p = PHASE_PREPARE; p <= PHASE_FINALIZE; p++)
		if (isfinite(run->phase[p]))
			t += run->phase[p];
	return t;
}

/* Whether results_cell_compute_stats() counts a run. */
static bool measured(const struct result_run *run)
{
	return !run->warmup && run->integrity_ok && isfinite(run->total);
}

void results_cell_compute_stats(struct result_cell *c)
{
	/* measured runs: not warmups, and not runs whose bytes did not arrive intact (their times
	 * measure something else than a complete transfer) or that have no total */
	_cleanup_free_ double *tot = xcalloc(c->n_runs, sizeof(*tot));
	_cleanup_free_ double *ph = xcalloc(c->n_runs, sizeof(*ph));
	_cleanup_free_ size_t *idx = xcalloc(c->n_runs, sizeof(*idx));
	_cleanup_free_ bool *flags = xcalloc(c->n_runs, sizeof(*flags));
	size_t n = 0;
	double bytes = 0, files = 0;

	for (size_t i = 0; i < c->n_runs; i++) {
		c->runs[i].outlier = false;
		if (!measured(&c->runs[i]))
			continue;
		idx[n] = i;
		tot[n] = c->runs[i].total;
		bytes += (double)c->runs[i].bytes;
		files += (double)c->runs[i].files;
		n++;
	}
	stats_summarize(tot, n, &c->stats.total);
	for (size_t p = 0; p < PHASE_COUNT; p++) {
		size_t m = 0;
		for (size_t k = 0; k < n; k++)
			if (isfinite(c->runs[idx[k]].phase[p]))
				ph[m++] = c->runs[idx[k]].phase[p];
		stats_summarize(ph, m, &c->stats.phase[p]);
	}
	c->stats.outliers = stats_outliers(tot, n, flags);
	for (size_t k = 0; k < n; k++)
		c->runs[idx[k]].outlier = flags[k];
	c->stats.bytes_per_s = n ? stats_throughput(bytes / (double)n, c->stats.total.median) : NAN;
	c->stats.files_per_s = n ? stats_throughput(files / (double)n, c->stats.total.median) : NAN;
	c->has_stats = true;
}

/* The values of metric (-1: total, else a phase) over the measured runs; returns how many
 * (array owned by the caller). */
static size_t measured_values(const struct result_cell *c, int metric, double **out)
{
	double *v = xcalloc(c->n_runs, sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; i < c->n_runs; i++) {
		const struct result_run *run = &c->runs[i];
		double x = metric < 0 ? run->total : run->phase[metric];
		if (measured(run) && isfinite(x))
			v[n++] = x;
	}
	*out = v;
	return n;
}

int results_compare_cells(const struct result_cell *base, const struct result_cell *cand,
			  int metric, double level, struct stats_compare *out)
{
	if (metric >= PHASE_COUNT)
		return -1;
	_cleanup_free_ double *a = NULL, *b = NULL;
	size_t na = measured_values(base, metric, &a), nb = measured_values(cand, metric, &b);
	return stats_welch(a, na, b, nb, level, out);
}

bool result_cell_finished(const struct result_cell *c, bool rerun_failed)
{
	switch (c->status) {
	case STATUS_PASSED:
	case STATUS_SKIPPED: return true;
	case STATUS_FAILED:
	case STATUS_ERROR: return !rerun_failed;
	default: return false;
	}
}

void results_count_status(const struct results *r, size_t counts[STATUS_COUNT])
{
	for (size_t s = 0; s < STATUS_COUNT; s++)
		counts[s] = 0;
	for (size_t i = 0; i < r->n_cells; i++)
		if ((size_t)r->cells[i].status < STATUS_COUNT)
			counts[r->cells[i].status]++;
}

void results_cpu_now(double *user_s, double *sys_s)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) < 0) {
		*user_s = *sys_s = NAN;
		return;
	}
	*user_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
	*sys_s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* ---- provenance -------------------------------------------------------------------------- */

/* The value of the first "key<spaces>:" line in a /proc file, or NULL. */
static char *proc_field(const char *path, const char *key)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0, kl = strlen(key);

	if (!f)
		return NULL;
	while (getline(&line, &cap, f) > 0) {
		if (strncmp(line, key, kl) != 0)
			continue;
		char *p = line + kl;
		p += strspn(p, " \t");
		if (*p != ':')
			continue;
		p++;
		p += strspn(p, " \t");
		p[strcspn(p, "\n")] = '\0';
		return xstrdup(p);
	}
	return NULL;
}

int results_gather_host(struct result_provenance *p, char **err)
{
	_cleanup_free_ char *problems = NULL;
	char host[256];
	struct utsname u;

#define PROBLEM(...)                                                                               \
	do {                                                                                       \
		_cleanup_free_ char *m_ = xasprintf(__VA_ARGS__);                                  \
		char *n_ = problems ? xasprintf("%s; %s", problems, m_) : xstrdup(m_);             \
		free(problems);                                                                    \
		problems = n_;                                                                     \
	} while (0)

	free(p->ferry_version);
	p->ferry_version = xstrdup(FERRY_VERSION);

	free(p->hostname);
	p->hostname = NULL;
	if (gethostname(host, sizeof(host)) == 0) {
		host[sizeof(host) - 1] = '\0';
		p->hostname = xstrdup(host);
	} else {
		PROBLEM("gethostname: %s", strerror(errno));
	}

	free(p->host_kernel);
	p->host_kernel = NULL;
	if (uname(&u) == 0)
		p->host_kernel =
		    xasprintf("%s %s %s %s", u.sysname, u.release, u.version, u.machine);
	else
		PROBLEM("uname: %s", strerror(errno));

	/* not every architecture has "model name" (some only "Hardware" or "cpu model"): absent
	 * means unknown, not an error */
	free(p->cpu_model);
	p->cpu_model = proc_field("/proc/cpuinfo", "model name");
	if (!p->cpu_model)
		p->cpu_model = proc_field("/proc/cpuinfo", "Hardware");

	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	p->cpu_count = ncpu > 0 ? (unsigned)ncpu : 0;

	_cleanup_free_ char *mem = proc_field("/proc/meminfo", "MemTotal");
	unsigned long long kib;
	p->memory_bytes = 0;
	if (mem && sscanf(mem, "%llu kB", &kib) == 1)
		p->memory_bytes = (uint64_t)kib * 1024;
	else
		PROBLEM("cannot read MemTotal from '/proc/meminfo'");
#undef PROBLEM

	if (problems) {
		*err = TAKE_PTR(problems);
		return -1;
	}
	return 0;
}

/* ---- time -------------------------------------------------------------------------------- */

int64_t results_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

char *results_format_time(int64_t ms, char *buf, size_t size)
{
	time_t sec = (time_t)(ms / 1000);
	int frac = (int)(ms % 1000);
	struct tm tm;

	if (frac < 0) {
		frac += 1000;
		sec--;
	}
	gmtime_r(&sec, &tm);
	char date[24];
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, size, "%s.%03dZ", date, frac);
	return buf;
}

int results_parse_time(const char *s, int64_t *ms)
{
	struct tm tm = { 0 };
	int frac = 0, used = 0;

	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &used) != 6)
		return -1;
	s += used;
	if (*s == '.') {
		int digits = 0;
		for (s++; *s >= '0' && *s <= '9'; s++, digits++)
			if (digits < 3)
				frac = frac * 10 + (*s - '0');
		if (digits == 0)
			return -1;
		for (; digits < 3; digits++)
			frac *= 10;
	}
	if (!STREQ(s, "Z"))
		return -1;
	if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
	    tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	*ms = (int64_t)timegm(&tm) * 1000 + frac;
	return 0;
}

/* ---- writing JSON ------------------------------------------------------------------------ */

/* Strings that are not UTF-8 (a serial console tail may hold anything; jansson refuses them)
 * are written with U+FFFD in place of the bytes that are not (utf8_sanitize()). */
static json_t *jstr(const char *s)
{
	if (!s)
		return json_null();
	json_t *j = json_string(s);
	if (j)
		return j;
	_cleanup_free_ char *clean = utf8_sanitize(s);
	return json_string(clean);
}

/* JSON has no NaN or infinity: an undefined number is null */
static json_t *jnum(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
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
		json_object_set_new(o, phase_names[p], jnum(phase[p]));
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
		    errors, json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o}", "kind",
				      kind_names[e->kind], "message", jstr(e->message), "run",
				      e->run >= 0 ? json_integer(e->run) : json_null(), "phase",
				      e->phase >= 0 && e->phase < PHASE_COUNT
					  ? json_string(phase_names[e->phase])
					  : json_null(),
				      "libvirt_message", jstr(e->libvirt_message), "agent_message",
				      jstr(e->agent_message), "serial_tail", jstr(e->serial_tail)));
	}

	json_t *runs = json_array();
	for (size_t i = 0; i < c->n_runs; i++) {
		const struct result_run *r = &c->runs[i];
		json_array_append_new(
		    runs, json_pack("{s:I, s:b, s:o, s:o, s:o, s:o, s:b, s:b}", "index",
				    (json_int_t)r->index, "warmup", r->warmup, "phases",
				    phases_to_json(r->phase), "total", jnum(r->total), "bytes",
				    juint(r->bytes), "files", juint(r->files), "integrity_ok",
				    r->integrity_ok, "outlier", r->outlier));
	}

	json_t *stats = json_null();
	if (c->has_stats) {
		json_t *ph = json_object();
		for (size_t p = 0; p < PHASE_COUNT; p++)
			json_object_set_new(ph, phase_names[p],
					    summary_to_json(&c->stats.phase[p]));
		json_decref(stats);
		stats = json_pack(
		    "{s:o, s:o, s:o, s:o, s:I}", "total", summary_to_json(&c->stats.total),
		    "phases", ph, "bytes_per_s", jnum(c->stats.bytes_per_s), "files_per_s",
		    jnum(c->stats.files_per_s), "outliers", (json_int_t)c->stats.outliers);
	}

	return json_pack("{s:o, s:o, s:o, s:s, s:o, s:o, s:o, s:o, s:o, s:{s:o, s:o}, s:o, s:o}",
			 "id", jstr(c->id), "axes", axes, "params", jobj_or_null(c->params),
			 "status", status_names[c->status], "skip_reason", jstr(c->skip_reason),
			 "errors", errors, "runs", runs, "stats", stats, "stop_reason",
			 c->stop_reason != STATS_CONTINUE
			     ? json_string(stats_stop_name(c->stop_reason))
			     : json_null(),
			 "cpu", "user_s", jnum(c->cpu_user_s), "sys_s", jnum(c->cpu_sys_s),
			 "started", jtime(c->started_ms), "finished", jtime(c->finished_ms));
}

json_t *results_to_json(const struct results *r)
{
	const struct result_provenance *p = &r->provenance;

	json_t *datasets = json_array();
	for (size_t i = 0; i < p->n_datasets; i++)
		json_array_append_new(
		    datasets, json_pack("{s:o, s:o, s:o}", "name", jstr(p->datasets[i].name),
					"manifest_sha256", jstr(p->datasets[i].manifest_sha256),
					"spec", jobj_or_null(p->datasets[i].spec)));

	json_t *prov = json_pack(
	    "{s:o, s:o, s:o, s:o, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
	    "ferry_version", jstr(p->ferry_version), "hostname", jstr(p->hostname), "host_kernel",
	    jstr(p->host_kernel), "cpu_model", jstr(p->cpu_model), "cpu_count",
	    (json_int_t)p->cpu_count, "memory_bytes", juint(p->memory_bytes), "qemu_version",
	    jstr(p->qemu_version), "libvirt_version", jstr(p->libvirt_version), "accelerator",
	    jstr(p->accelerator), "guest_kernel_sha256", jstr(p->guest_kernel_sha256),
	    "guest_initramfs_sha256", jstr(p->guest_initramfs_sha256), "datasets", datasets,
	    "started", jtime(p->started_ms), "finished", jtime(p->finished_ms));

	json_t *cells = json_array();
	for (size_t i = 0; i < r->n_cells; i++)
		json_array_append_new(cells, cell_to_json(&r->cells[i]));

	return json_pack("{s:i, s:{s:o, s:o, s:o, s:o}, s:o, s:o}", "ferry_results",
			 RESULTS_VERSION, "plan", "name", jstr(r->plan.name), "path",
			 jstr(r->plan.path), "sha256", jstr(r->plan.sha256), "text",
			 jstr(r->plan.text), "provenance", prov, "cells", cells);
}

int results_write(const struct results *r, const char *path, char **err)
{
	_cleanup_(json_decrefp) json_t *root = results_to_json(r);
	if (!root) {
		*err = xasprintf("%s: cannot build the results document", path);
		return -1;
	}
	/* 17 significant digits print every double so that it reads back bit-identical */
	_cleanup_free_ char *text =
	    json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(17) | JSON_PRESERVE_ORDER);
	if (!text) {
		*err = xasprintf("%s: cannot serialize the results document", path);
		return -1;
	}

	size_t len = strlen(text);
	text[len] = '\n'; /* replace the NUL: the file ends with a newline */
	return write_file_atomic(path, text, len + 1, 0644, err);
}

/* ---- reading JSON ------------------------------------------------------------------------ */

/* The reader keeps the first error with the place it happened, e.g. "cells[2].runs[0]". */
struct reader {
	char *err;
};

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
	if (s && results_parse_time(s, out) < 0)
		return fail(rd, where, "'%s' is not a UTC time like 2026-01-31T12:00:00.000Z: '%s'",
			    key, s);
	return 0;
}

static int rd_enum(struct reader *rd, const char *where, const json_t *o, const char *key,
		   const char *const *names, size_t n, bool required, int *out)
{
	_cleanup_free_ char *s = NULL;
	if (rd_str(rd, where, o, key, required, &s) < 0)
		return -1;
	*out = -1;
	if (!s)
		return 0;
	*out = name_index(names, n, s);
	if (*out < 0) {
		_cleanup_free_ char *list = xstrdup(names[0]);
		for (size_t i = 1; i < n; i++) {
			char *l = xasprintf("%s, %s", list, names[i]);
			free(list);
			list = l;
		}
		return fail(rd, where, "'%s' is '%s', expected one of: %s", key, s, list);
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
	*out = json_deep_copy(v);
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
	if (results_find_cell(r, id)) {
		fail(rd, where, "duplicate cell id '%s'", id);
		return;
	}
	struct result_cell *c = results_add_cell(r, id);

	const json_t *axes = get(o, "axes");
	if (axes && !json_is_null(axes)) {
		const char *k;
		const json_t *val;
		if (!json_is_object(axes)) {
			fail(rd, where, "'axes' must be an object");
			return;
		}
		json_object_foreach((json_t *)axes, k, val)
		{
			if (!json_is_string(val)) {
				fail(rd, where, "axis '%s' must be a string", k);
				return;
			}
			result_cell_add_axis(c, k, json_string_value(val));
		}
	}
	rd_object(rd, where, o, "params", &c->params);
	rd_enum(rd, where, o, "status", status_names, STATUS_COUNT, true, &v);
	c->status = v < 0 ? STATUS_PENDING : (enum result_status)v;
	rd_str(rd, where, o, "skip_reason", false, &c->skip_reason);

	const json_t *errors = rd_array(rd, where, o, "errors");
	for (size_t i = 0; errors && i < json_array_size(errors) && !rd->err; i++) {
		_cleanup_free_ char *w = xasprintf("%s.errors[%zu]", where, i);
		const json_t *e = json_array_get(errors, i);
		int kind, phase;
		uint64_t run;
		if (!json_is_object(e)) {
			fail(rd, w, "must be an object");
			return;
		}
		if (rd_enum(rd, w, e, "kind", kind_names, ERROR_KIND_COUNT, true, &kind) < 0)
			return;
		struct result_error *err = result_cell_add_error(c, kind, "%s", "");
		free(err->message);
		err->message = NULL;
		rd_str(rd, w, e, "message", true, &err->message);
		const json_t *jr = get(e, "run");
		if (jr && !json_is_null(jr)) {
			rd_uint(rd, w, e, "run", INT32_MAX, &run);
			err->run = (int)run;
		}
		rd_enum(rd, w, e, "phase", phase_names, PHASE_COUNT, false, &phase);
		err->phase = phase;
		rd_str(rd, w, e, "libvirt_message", false, &err->libvirt_message);
		rd_str(rd, w, e, "agent_message", false, &err->agent_message);
		rd_str(rd, w, e, "serial_tail", false, &err->serial_tail);
	}

	const json_t *runs = rd_array(rd, where, o, "runs");
	for (size_t i = 0; runs && i < json_array_size(runs) && !rd->err; i++) {
		_cleanup_free_ char *w = xasprintf("%s.runs[%zu]", where, i);
		const json_t *jr = json_array_get(runs, i);
		uint64_t index;
		if (!json_is_object(jr)) {
			fail(rd, w, "must be an object");
			return;
		}
		struct result_run *run = result_cell_add_run(c, false);
		rd_uint(rd, w, jr, "index", UINT32_MAX, &index);
		run->index = (unsigned)index;
		rd_bool(rd, w, jr, "warmup", &run->warmup);
		const json_t *ph = get(jr, "phases");
		if (ph && !json_is_object(ph)) {
			fail(rd, w, "'phases' must be an object");
			return;
		}
		_cleanup_free_ char *wp = xasprintf("%s.phases", w);
		for (size_t p = 0; p < PHASE_COUNT; p++)
			rd_num(rd, wp, ph, phase_names[p], &run->phase[p]);
		rd_num(rd, w, jr, "total", &run->total);
		rd_uint(rd, w, jr, "bytes", INT64_MAX, &run->bytes);
		rd_uint(rd, w, jr, "files", INT64_MAX, &run->files);
		rd_bool(rd, w, jr, "integrity_ok", &run->integrity_ok);
		rd_bool(rd, w, jr, "outlier", &run->outlier);
	}

	const json_t *st = get(o, "stats");
	if (st && !json_is_null(st)) {
		_cleanup_free_ char *w = xasprintf("%s.stats", where);
		uint64_t outliers;
		if (!json_is_object(st)) {
			fail(rd, where, "'stats' must be an object or null");
			return;
		}
		_cleanup_free_ char *wt = xasprintf("%s.total", w);
		rd_summary(rd, wt, get(st, "total"), &c->stats.total);
		const json_t *ph = get(st, "phases");
		for (size_t p = 0; p < PHASE_COUNT; p++) {
			_cleanup_free_ char *wp = xasprintf("%s.phases.%s", w, phase_names[p]);
			rd_summary(rd, wp, get(ph, phase_names[p]), &c->stats.phase[p]);
		}
		rd_num(rd, w, st, "bytes_per_s", &c->stats.bytes_per_s);
		rd_num(rd, w, st, "files_per_s", &c->stats.files_per_s);
		rd_uint(rd, w, st, "outliers", SIZE_MAX, &outliers);
		c->stats.outliers = (size_t)outliers;
		c->has_stats = true;
	}

	_cleanup_free_ char *stop = NULL;
	if (rd_str(rd, where, o, "stop_reason", false, &stop) == 0 && stop) {
		int s = stats_stop_from_name(stop);
		if (s <= STATS_CONTINUE)
			fail(rd, where,
			     "'stop_reason' is '%s', expected one of: cv-reached, max-reached, "
			     "budget-exhausted",
			     stop);
		else
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
}

struct results *results_from_json(const json_t *root, char **err)
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
	if (version != RESULTS_VERSION) {
		*err = xasprintf("unsupported results version %lld (this ferry reads version %d%s)",
				 (long long)version, RESULTS_VERSION,
				 version > RESULTS_VERSION ? "; written by a newer ferry" : "");
		return NULL;
	}

	const json_t *plan = get(root, "plan");
	if (plan && !json_is_null(plan) && !json_is_object(plan))
		fail(&rd, NULL, "'plan' must be an object");
	rd_str(&rd, "plan", plan, "name", false, &r->plan.name);
	rd_str(&rd, "plan", plan, "path", false, &r->plan.path);
	rd_str(&rd, "plan", plan, "sha256", false, &r->plan.sha256);
	rd_str(&rd, "plan", plan, "text", false, &r->plan.text);

	const json_t *prov = get(root, "provenance");
	struct result_provenance *p = &r->provenance;
	uint64_t u;
	if (prov && !json_is_null(prov) && !json_is_object(prov))
		fail(&rd, NULL, "'provenance' must be an object");
	rd_str(&rd, "provenance", prov, "ferry_version", false, &p->ferry_version);
	rd_str(&rd, "provenance", prov, "hostname", false, &p->hostname);
	rd_str(&rd, "provenance", prov, "host_kernel", false, &p->host_kernel);
	rd_str(&rd, "provenance", prov, "cpu_model", false, &p->cpu_model);
	rd_uint(&rd, "provenance", prov, "cpu_count", UINT32_MAX, &u);
	p->cpu_count = (unsigned)u;
	rd_uint(&rd, "provenance", prov, "memory_bytes", INT64_MAX, &p->memory_bytes);
	rd_str(&rd, "provenance", prov, "qemu_version", false, &p->qemu_version);
	rd_str(&rd, "provenance", prov, "libvirt_version", false, &p->libvirt_version);
	rd_str(&rd, "provenance", prov, "accelerator", false, &p->accelerator);
	rd_str(&rd, "provenance", prov, "guest_kernel_sha256", false, &p->guest_kernel_sha256);
	rd_str(&rd, "provenance", prov, "guest_initramfs_sha256", false,
	       &p->guest_initramfs_sha256);
	const json_t *ds = rd_array(&rd, "provenance", prov, "datasets");
	for (size_t i = 0; ds && i < json_array_size(ds) && !rd.err; i++) {
		_cleanup_free_ char *w = xasprintf("provenance.datasets[%zu]", i);
		_cleanup_free_ char *name = NULL, *digest = NULL;
		json_t *spec = NULL;
		const json_t *d = json_array_get(ds, i);
		if (!json_is_object(d)) {
			fail(&rd, w, "must be an object");
			break;
		}
		if (rd_str(&rd, w, d, "name", true, &name) < 0 ||
		    rd_str(&rd, w, d, "manifest_sha256", false, &digest) < 0 ||
		    rd_object(&rd, w, d, "spec", &spec) < 0)
			break;
		results_add_dataset(r, name, digest, spec);
	}
	rd_time(&rd, "provenance", prov, "started", &p->started_ms);
	rd_time(&rd, "provenance", prov, "finished", &p->finished_ms);

	const json_t *cells = get(root, "cells");
	if (!cells || !json_is_array(cells))
		fail(&rd, NULL, "'cells' must be an array");
	for (size_t i = 0; !rd.err && i < json_array_size(cells); i++) {
		_cleanup_free_ char *w = xasprintf("cells[%zu]", i);
		rd_cell(&rd, w, json_array_get(cells, i), r);
	}

	if (rd.err) {
		*err = rd.err;
		return NULL;
	}
	return TAKE_PTR(r);
}

struct results *results_read(const char *path, char **err)
{
	size_t len;
	json_error_t jerr;

	_cleanup_free_ char *buf = read_file(path, &len);
	if (!buf) {
		*err = xasprintf("%s: %s", path, strerror(errno));
		return NULL;
	}
	_cleanup_(json_decrefp) json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		if (jerr.line > 0)
			*err = xasprintf("%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
		else
			*err = xasprintf("%s: %s", path, jerr.text);
		return NULL;
	}
	_cleanup_free_ char *e = NULL;
	struct results *r = results_from_json(root, &e);
	if (!r) {
		*err = xasprintf("%s: %s", path, e);
		return NULL;
	}
	return r;
}
