/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "results.h"

#include "hash.h"

/*
 * The results model (results.h): names, building and freeing, statistics of a cell, time. Its
 * JSON form is in json-write.c, json-read.c and json-load.c, the host's provenance in provenance.c,
 * the
 * --resume check in resume.c.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

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

/* ---- the per-run metrics ------------------------------------------------------------------ */

const struct metric_def *result_metric_def_find(const char *name)
{
	int m = metric_find(name);
	return m >= 0 && metric_defs[m].kind == METRIC_RUN ? &metric_defs[m] : NULL;
}

/* ---- building and freeing the model ------------------------------------------------------ */

struct results *results_new(void)
{
	struct results *r = xcalloc(1, sizeof(*r));
	r->version = RESULTS_VERSION;
	/* every metric a cell has (not a spread, not a run's own): the times first (total, the
	 * phases), then the rates, the order results files have always listed them in */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < METRIC_COUNT; i++) {
			const struct metric_def *d = &metric_defs[i];
			bool time = d->unit_kind == METRIC_TIME;
			if ((d->kind == METRIC_CELL || d->kind == METRIC_PHASE) && time == !pass)
				results_set_metric(r, d->name, d->unit, d->higher_better);
		}
	return r;
}

struct result_metric *results_set_metric(struct results *r, const char *name, const char *unit,
					 bool higher_better)
{
	struct result_metric *m = (struct result_metric *)results_find_metric(r, name);
	if (!m) {
		r->metrics =
		    xgrow(r->metrics, &r->metrics_cap, r->n_metrics + 1, sizeof(*r->metrics));
		m = &r->metrics[r->n_metrics++];
		*m = (struct result_metric){ .name = xstrdup(name) };
	}
	free(m->unit);
	m->unit = xstrdup(unit ? unit : "");
	m->higher_better = higher_better;
	return m;
}

const struct result_metric *results_find_metric(const struct results *r, const char *name)
{
	for (size_t i = 0; i < r->n_metrics; i++)
		if (STREQ(r->metrics[i].name, name))
			return &r->metrics[i];
	return NULL;
}

int64_t results_max_boot(const struct results *r)
{
	int64_t max = 0;
	for (size_t i = 0; i < r->n_cells; i++)
		for (size_t j = 0; j < r->cells[i].n_runs; j++)
			if (r->cells[i].runs[j].boot > max)
				max = r->cells[i].runs[j].boot;
	return max;
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
	for (size_t i = 0; i < c->n_runs; i++)
		json_decref(c->runs[i].metrics);
	free(c->runs);
	json_decref(c->observed);
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
	c->n_errors = c->errors_cap = 0;
	c->runs = NULL;
	c->n_runs = c->runs_cap = 0;
	c->observed = NULL;
	c->has_stats = false;
	memset(&c->stats, 0, sizeof(c->stats));
	c->status = STATUS_PENDING;
	c->stop_reason = STATS_CONTINUE;
	c->cpu_user_s = c->cpu_sys_s = NAN;
	c->started_ms = c->finished_ms = 0;
}

void result_provenance_clear(struct result_provenance *p)
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
	memset(p, 0, sizeof(*p));
}

void results_free(struct results *r)
{
	if (!r)
		return;
	json_decref(r->verdicts);
	free(r->plan.name);
	free(r->plan.path);
	free(r->plan.sha256);
	free(r->plan.text);
	free(r->plan.control);
	result_provenance_clear(&r->provenance);
	for (size_t i = 0; i < r->n_metrics; i++) {
		free(r->metrics[i].name);
		free(r->metrics[i].unit);
	}
	free(r->metrics);
	for (size_t i = 0; i < r->n_cells; i++)
		cell_clear(&r->cells[i]);
	free(r->cells);
	strmap_free(&r->ids);
	for (size_t i = 0; i < r->n_origins; i++) {
		result_provenance_clear(&r->origins[i].provenance);
		free(r->origins[i].host);
		free(r->origins[i].lost);
	}
	free(r->origins);
	free(r);
}

void results_free_array(struct results **rs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		results_free(rs[i]);
	free(rs);
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

/* (Re)build results_find_cell()'s index over the cells as they are now. */
static void index_cells(struct results *r)
{
	strmap_free(&r->ids);
	strmap_init(&r->ids, r->n_cells);
	for (size_t i = 0; i < r->n_cells; i++)
		if (r->cells[i].id)
			strmap_put(&r->ids, r->cells[i].id, 0, (uint32_t)i);
	r->ids_cells = r->cells;
	r->ids_n = r->n_cells;
}

static bool index_current(const struct results *r)
{
	return r->ids.slots && r->ids_cells == r->cells && r->ids_n == r->n_cells;
}

struct result_cell *results_add_cell(struct results *r, const char *id)
{
	bool current = index_current(r);
	/* geometric growth: a results file read back may hold tens of thousands of cells */
	r->cells = xgrow(r->cells, &r->cells_cap, r->n_cells + 1, sizeof(*r->cells));
	struct result_cell *c = &r->cells[r->n_cells++];
	*c = (struct result_cell){
		.id = xstrdup(id),
		.status = STATUS_PENDING,
		.cpu_user_s = NAN,
		.cpu_sys_s = NAN,
		.origin = -1,
	};
	/* the index borrows c->id, which stays put when the array of cells moves */
	if (current) {
		strmap_put(&r->ids, c->id, 0, (uint32_t)(r->n_cells - 1));
		r->ids_cells = r->cells;
		r->ids_n = r->n_cells;
	} else {
		index_cells(r);
	}
	return c;
}

struct result_cell *results_find_cell(const struct results *r, const char *id)
{
	/* hashed: --resume and --rerun-failed look up every cell of the plan. The index is a
	   cache of the cells, rebuilt when they were changed behind results_add_cell()'s back */
	struct results *w = (struct results *)r;
	if (!index_current(r))
		index_cells(w);
	for (int pass = 0; pass < 2; pass++) {
		uint32_t i = strmap_get(&r->ids, id, 0);
		if (i == STRMAP_NONE)
			return NULL;
		if (i < r->n_cells && r->cells[i].id && STREQ(r->cells[i].id, id))
			return &r->cells[i];
		index_cells(w); /* cells moved within the array */
	}
	return NULL;
}

void result_cell_add_axis(struct result_cell *c, const char *key, const char *value)
{
	c->axes = xgrow(c->axes, &c->axes_cap, c->n_axes + 1, sizeof(*c->axes));
	c->axes[c->n_axes++] = (struct result_axis){ xstrdup(key), xstrdup(value) };
}

struct result_run *result_cell_add_run(struct result_cell *c, bool warmup)
{
	c->runs = xgrow(c->runs, &c->runs_cap, c->n_runs + 1, sizeof(*c->runs));
	struct result_run *run = &c->runs[c->n_runs];
	*run = (struct result_run){ .index = (unsigned)c->n_runs,
				    .warmup = warmup,
				    .total = NAN,
				    .boot = -1,
				    .block = -1 };
	for (size_t p = 0; p < PHASE_COUNT; p++)
		run->phase[p] = NAN;
	c->n_runs++;
	return run;
}

struct result_error *result_cell_add_error(struct result_cell *c, enum result_error_kind kind,
					   const char *fmt, ...)
{
	va_list ap;

	c->errors = xgrow(c->errors, &c->errors_cap, c->n_errors + 1, sizeof(*c->errors));
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
	result_provenance_add_dataset(&r->provenance, name, manifest_sha256, spec);
}

void result_provenance_add_dataset(struct result_provenance *p, const char *name,
				   const char *manifest_sha256, json_t *spec)
{
	p->datasets = xgrow(p->datasets, &p->datasets_cap, p->n_datasets + 1, sizeof(*p->datasets));
	p->datasets[p->n_datasets++] = (struct result_dataset){
		.name = xstrdup(name),
		.manifest_sha256 = strdup_or_null(manifest_sha256),
		.spec = spec,
	};
}

void result_provenance_add_datasets(struct result_provenance *to,
				    const struct result_provenance *from)
{
	for (size_t d = 0; d < from->n_datasets; d++) {
		bool have = false;
		for (size_t e = 0; e < to->n_datasets && !have; e++)
			have = STREQ(to->datasets[e].name, from->datasets[d].name);
		if (!have)
			result_provenance_add_dataset(
			    to, from->datasets[d].name, from->datasets[d].manifest_sha256,
			    from->datasets[d].spec ? json_deep_copy(from->datasets[d].spec) : NULL);
	}
}

void result_provenance_copy(struct result_provenance *dst, const struct result_provenance *src)
{
	*dst = (struct result_provenance){
		.ferry_version = strdup_or_null(src->ferry_version),
		.hostname = strdup_or_null(src->hostname),
		.host_kernel = strdup_or_null(src->host_kernel),
		.cpu_model = strdup_or_null(src->cpu_model),
		.cpu_count = src->cpu_count,
		.memory_bytes = src->memory_bytes,
		.qemu_version = strdup_or_null(src->qemu_version),
		.libvirt_version = strdup_or_null(src->libvirt_version),
		.accelerator = strdup_or_null(src->accelerator),
		.guest_kernel_sha256 = strdup_or_null(src->guest_kernel_sha256),
		.guest_initramfs_sha256 = strdup_or_null(src->guest_initramfs_sha256),
		.started_ms = src->started_ms,
		.finished_ms = src->finished_ms,
	};
	for (size_t i = 0; i < src->n_datasets; i++) {
		const struct result_dataset *d = &src->datasets[i];
		result_provenance_add_dataset(dst, d->name, d->manifest_sha256,
					      d->spec ? json_deep_copy(d->spec) : NULL);
	}
}

size_t results_add_origin(struct results *r, unsigned shard_k, unsigned shard_n,
			  const struct result_provenance *p)
{
	r->origins = xgrow(r->origins, &r->origins_cap, r->n_origins + 1, sizeof(*r->origins));
	struct result_origin *o = &r->origins[r->n_origins];
	o->shard_k = shard_k;
	o->shard_n = shard_n;
	o->host = o->lost = NULL;
	result_provenance_copy(&o->provenance, p);
	return r->n_origins++;
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

double result_run_metric(const struct result_run *run, const char *name)
{
	double v = NAN;
	if (STREQ(name, "total")) {
		v = run->total;
	} else if (strncmp(name, "phase.", 6) == 0) {
		int p = result_phase_from_name(name + 6);
		v = p >= 0 ? run->phase[p] : NAN;
	} else if (STREQ(name, "throughput") || STREQ(name, "files_per_s")) {
		double amount = (double)(STREQ(name, "throughput") ? run->bytes : run->files);
		v = isfinite(run->total) && run->total > 0 ? amount / run->total : NAN;
	} else if (run->metrics) {
		json_t *j = json_object_get(run->metrics, name);
		v = json_is_number(j) ? json_number_value(j) : NAN;
	}
	return isfinite(v) ? v : NAN;
}

void result_cell_metric_summary(const struct result_cell *c, const char *name,
				struct stats_summary *out)
{
	_cleanup_free_ double *v = xcalloc(c->n_runs + 1, sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; i < c->n_runs; i++) {
		double x = result_run_metric(&c->runs[i], name);
		if (measured(&c->runs[i]) && isfinite(x))
			v[n++] = x;
	}
	stats_summarize(v, n, out);
}

size_t result_cell_metric_names(const struct result_cell *c, const char ***out)
{
	const char **names = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < c->n_runs; i++) {
		const char *k;
		json_t *v;
		if (!c->runs[i].metrics)
			continue;
		json_object_foreach(c->runs[i].metrics, k, v)
		{
			bool seen = false;
			for (size_t j = 0; j < n && !seen; j++)
				seen = STREQ(names[j], k);
			if (seen)
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 8;
				names = xrealloc(names, cap * sizeof(*names));
			}
			names[n++] = k;
		}
	}
	*out = names;
	return n;
}

bool result_cell_has_metric(const struct result_cell *c, const char *name)
{
	for (size_t i = 0; i < c->n_runs; i++)
		if (c->runs[i].metrics && json_object_get(c->runs[i].metrics, name))
			return true;
	return false;
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
