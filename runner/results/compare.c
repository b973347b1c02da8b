/* SPDX-License-Identifier: MIT */
/* `ferry compare`: pairing, comparability and the verdict rule (compare.h). */
#include "compare.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "strmap.h"
#include "units.h"

/* ---- names ------------------------------------------------------------------------------- */

static const char *const verdict_names[CMP_VERDICT_COUNT] = {
	[CMP_UNCHANGED] = "unchanged",
	[CMP_IMPROVED] = "improved",
	[CMP_REGRESSED] = "regressed",
	[CMP_INCONCLUSIVE] = "inconclusive",
};

const char *cmp_verdict_name(enum cmp_verdict v)
{
	return (size_t)v < CMP_VERDICT_COUNT ? verdict_names[v] : "unknown";
}

const char *cmp_rule_name(enum cmp_rule r)
{
	return r == CMP_RULE_LKP ? "lkp" : "welch";
}

int cmp_rule_from_name(const char *name)
{
	if (STREQ(name, "welch"))
		return CMP_RULE_WELCH;
	if (STREQ(name, "lkp"))
		return CMP_RULE_LKP;
	return -1;
}

const char *const cmp_refusing_keys[] = {
	"accelerator",     "cpu_model",    "qemu_version",
	"libvirt_version", "guest_kernel", "guest_initramfs",
	"dataset",         "params",       NULL,
};
const char *const cmp_shown_keys[] = { "ferry_version", "hostname", "host_kernel", NULL };

/* ---- thresholds -------------------------------------------------------------------------- */

static int parse_fraction(const char *s, double *out, char **err)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || !isfinite(v) || v < 0 || !(STREQ(end, "%") || *end == '\0')) {
		*err = xasprintf("invalid threshold '%s': expected a percentage like 5%%", s);
		return -1;
	}
	*out = v / 100.0;
	if (*out >= 10) {
		*err = xasprintf("invalid threshold '%s': at most 1000%%", s);
		return -1;
	}
	return 0;
}

int cmp_threshold_parse(const char *text, struct cmp_threshold *t, char **err)
{
	*t = (struct cmp_threshold){ 0 };
	const char *colon = strrchr(text, ':');
	const char *rest = colon ? colon + 1 : text;
	if (colon) {
		if (colon == text || !strchr(text, '=') || strchr(text, '=') > colon) {
			*err = xasprintf("invalid threshold '%s': the cells go before ':' as "
					 "AXIS=VALUE[,AXIS=VALUE]",
					 text);
			return -1;
		}
		t->where = xstrndup(text, (size_t)(colon - text));
	}
	const char *eq = strchr(rest, '=');
	if (eq) {
		if (eq == rest) {
			*err = xasprintf("invalid threshold '%s': the metric is empty", text);
			cmp_threshold_clear(t);
			return -1;
		}
		t->metric = xstrndup(rest, (size_t)(eq - rest));
		rest = eq + 1;
	}
	if (parse_fraction(rest, &t->value, err) < 0) {
		cmp_threshold_clear(t);
		return -1;
	}
	return 0;
}

void cmp_threshold_clear(struct cmp_threshold *t)
{
	free(t->where);
	free(t->metric);
	*t = (struct cmp_threshold){ 0 };
}

/* Whether every AXIS=VALUE of `where` is an axis of c. */
static bool where_matches(const char *where, const struct result_cell *c)
{
	if (!where)
		return true;
	_cleanup_free_ char *dup = xstrdup(where);
	for (char *sv = NULL, *t = strtok_r(dup, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
		char *eq = strchr(t, '=');
		if (!eq)
			return false;
		*eq = '\0';
		bool found = false;
		for (size_t i = 0; i < c->n_axes && !found; i++)
			found = STREQ(c->axes[i].key, t) && STREQ(c->axes[i].value, eq + 1);
		if (!found)
			return false;
	}
	return true;
}

static double threshold_for(const struct compare_opts *o, double def, const struct result_cell *c,
			    const char *metric)
{
	double t = def;
	for (size_t i = 0; i < o->n_thresholds; i++) {
		const struct cmp_threshold *th = &o->thresholds[i];
		if ((!th->metric || STREQ(th->metric, metric)) && where_matches(th->where, c))
			t = th->value;
	}
	return t;
}

/* ---- comparability ----------------------------------------------------------------------- */

static bool allowed(const struct compare_opts *o, const char *key)
{
	for (size_t i = 0; i < o->n_allow_different; i++) {
		const char *a = o->allow_different[i];
		size_t n = strlen(a);
		if (STREQ(a, "all") || STREQ(a, key) ||
		    (!strncmp(key, a, n) && key[n] == '.')) /* "dataset" allows "dataset.NAME" */
			return true;
	}
	return false;
}

static void add_diff(struct comparison *c, const struct compare_opts *o, const char *key,
		     const char *base, const char *cand, bool refusing)
{
	c->diffs = xrealloc(c->diffs, (c->n_diffs + 1) * sizeof(*c->diffs));
	c->diffs[c->n_diffs++] = (struct cmp_diff){
		.key = xstrdup(key),
		.base = xstrdup(base ? base : "unknown"),
		.cand = xstrdup(cand ? cand : "unknown"),
		.refusing = refusing,
		.allowed = refusing && allowed(o, key),
	};
}

static void diffs_clear(struct comparison *c)
{
	for (size_t i = 0; i < c->n_diffs; i++) {
		free(c->diffs[i].key);
		free(c->diffs[i].base);
		free(c->diffs[i].cand);
	}
	free(c->diffs);
	c->diffs = NULL;
	c->n_diffs = 0;
}

/* A difference only counts when both files know the value: an older file or a fake machine
 * without it proves nothing either way (shown, never refused). */
static void check_str(struct comparison *c, const struct compare_opts *o, const char *key,
		      const char *a, const char *b, bool refusing)
{
	if (a && b && STREQ(a, b))
		return;
	if (!a && !b)
		return;
	add_diff(c, o, key, a, b, refusing && a && b);
}

static void provenance_diffs(struct comparison *c, const struct compare_opts *o,
			     const struct results *a, const struct results *b)
{
	const struct result_provenance *p = &a->provenance, *q = &b->provenance;
	check_str(c, o, "accelerator", p->accelerator, q->accelerator, true);
	check_str(c, o, "cpu_model", p->cpu_model, q->cpu_model, true);
	check_str(c, o, "qemu_version", p->qemu_version, q->qemu_version, true);
	check_str(c, o, "libvirt_version", p->libvirt_version, q->libvirt_version, true);
	check_str(c, o, "guest_kernel", p->guest_kernel_sha256, q->guest_kernel_sha256, true);
	check_str(c, o, "guest_initramfs", p->guest_initramfs_sha256, q->guest_initramfs_sha256,
		  true);
	for (size_t i = 0; i < q->n_datasets; i++)
		for (size_t j = 0; j < p->n_datasets; j++) {
			if (!STREQ(q->datasets[i].name, p->datasets[j].name))
				continue;
			_cleanup_free_ char *key = xasprintf("dataset.%s", q->datasets[i].name);
			check_str(c, o, key, p->datasets[j].manifest_sha256,
				  q->datasets[i].manifest_sha256, true);
		}
	check_str(c, o, "ferry_version", p->ferry_version, q->ferry_version, false);
	check_str(c, o, "hostname", p->hostname, q->hostname, false);
	check_str(c, o, "host_kernel", p->host_kernel, q->host_kernel, false);
}

static bool diffs_refuse(const struct comparison *c)
{
	for (size_t i = 0; i < c->n_diffs; i++)
		if (c->diffs[i].refusing && !c->diffs[i].allowed)
			return true;
	return false;
}

/* ---- pairing ----------------------------------------------------------------------------- */

/* run settings that say how often or in which order to measure, not what is measured */
static const char *const replication_keys[] = { "repeat",  "warmup",       "order", "seed",
						"timeout", "cell_timeout", "vm" };

/* The pairing key of a cell: its resolved parameters without the replication keys, as
 * canonical JSON (sorted keys). NULL when the cell has no parameters. */
static char *pair_key(const struct result_cell *c)
{
	if (!c->params)
		return NULL;
	_cleanup_(json_decrefp) json_t *p = json_deep_copy(c->params);
	json_t *run = json_object_get(p, "run");
	if (json_is_object(run))
		for (size_t i = 0; i < ELEMENTSOF(replication_keys); i++)
			json_object_del(run, replication_keys[i]);
	return json_dumps(p, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The axes of a cell as sorted "k=v" lines: the same cell whatever the axis order. */
static char *axes_key(const struct result_cell *c)
{
	_cleanup_free_ char **kv = xcalloc(c->n_axes + 1, sizeof(*kv));
	for (size_t i = 0; i < c->n_axes; i++)
		kv[i] = xasprintf("%s=%s", c->axes[i].key, c->axes[i].value);
	qsort(kv, c->n_axes, sizeof(*kv), cmp_str);
	char *out = xstrdup("");
	for (size_t i = 0; i < c->n_axes; i++) {
		char *n = xasprintf("%s%s\n", out, kv[i]);
		free(out);
		free(kv[i]);
		out = n;
	}
	return out;
}

/* Per baseline file: the pairing keys of its cells in a map. */
struct base_index {
	const struct results *r;
	char **keys; /* per cell: pair_key() (or the id when no params) */
	char **axes; /* per cell: axes_key() */
	struct strmap by_key, by_axes;
	bool *paired;
};

static void base_index_init(struct base_index *bi, const struct results *r)
{
	bi->r = r;
	bi->keys = xcalloc(r->n_cells + 1, sizeof(*bi->keys));
	bi->axes = xcalloc(r->n_cells + 1, sizeof(*bi->axes));
	bi->paired = xcalloc(r->n_cells + 1, sizeof(*bi->paired));
	strmap_init(&bi->by_key, r->n_cells);
	strmap_init(&bi->by_axes, r->n_cells);
	for (size_t i = 0; i < r->n_cells; i++) {
		bi->keys[i] = pair_key(&r->cells[i]);
		if (!bi->keys[i])
			bi->keys[i] = xasprintf("id:%s", r->cells[i].id);
		bi->axes[i] = axes_key(&r->cells[i]);
		strmap_put(&bi->by_key, bi->keys[i], 0, (uint32_t)i);
		strmap_put(&bi->by_axes, bi->axes[i], 0, (uint32_t)i);
	}
}

static void base_index_free(struct base_index *bi)
{
	for (size_t i = 0; i < bi->r->n_cells; i++) {
		free(bi->keys[i]);
		free(bi->axes[i]);
	}
	free(bi->keys);
	free(bi->axes);
	free(bi->paired);
	strmap_free(&bi->by_key);
	strmap_free(&bi->by_axes);
}

/* ---- samples ----------------------------------------------------------------------------- */

enum metric_kind { M_TOTAL, M_PHASE, M_THROUGHPUT, M_FILES, M_METHOD };

struct metric_ref {
	enum metric_kind kind;
	int phase;
	const char *name;
};

static bool measured(const struct result_run *run)
{
	return !run->warmup && run->integrity_ok && isfinite(run->total);
}

static double run_value(const struct result_run *run, const struct metric_ref *m)
{
	switch (m->kind) {
	case M_TOTAL: return run->total;
	case M_PHASE: return run->phase[m->phase];
	case M_THROUGHPUT:
		return run->bytes && run->total > 0 ? (double)run->bytes / run->total : NAN;
	case M_FILES: return run->files && run->total > 0 ? (double)run->files / run->total : NAN;
	case M_METHOD: {
		json_t *v = run->metrics ? json_object_get(run->metrics, m->name) : NULL;
		return json_is_number(v) ? json_number_value(v) : NAN;
	}
	}
	return NAN;
}

/* The log values of a metric over the measured runs of some cells, with a boot key per value:
 * (file, boot), or (file) alone when the file has no boot ids. */
struct samples {
	double *v;
	uint64_t *boot;
	size_t n, cap;
	double *raw; /* the values themselves, for medians */
};

static void samples_add(struct samples *s, const struct result_cell *c, size_t file,
			const struct metric_ref *m)
{
	for (size_t i = 0; i < c->n_runs; i++) {
		const struct result_run *run = &c->runs[i];
		double x = measured(run) ? run_value(run, m) : NAN;
		if (!(x > 0) || !isfinite(x))
			continue;
		if (s->n == s->cap) {
			s->cap = s->cap ? 2 * s->cap : 16;
			s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
			s->raw = xrealloc(s->raw, s->cap * sizeof(*s->raw));
			s->boot = xrealloc(s->boot, s->cap * sizeof(*s->boot));
		}
		s->v[s->n] = log(x);
		s->raw[s->n] = x;
		s->boot[s->n] = ((uint64_t)file << 40) | (uint64_t)(run->boot > 0 ? run->boot : 0);
		s->n++;
	}
}

static void samples_free(struct samples *s)
{
	free(s->v);
	free(s->raw);
	free(s->boot);
}

struct vb {
	uint64_t boot;
	double v;
};

static int cmp_vb(const void *a, const void *b)
{
	const struct vb *x = a, *y = b;
	return (x->boot > y->boot) - (x->boot < y->boot);
}

/* The mean log value of each boot into *means (caller frees); returns how many boots. */
static size_t boot_means(const struct samples *s, double **means)
{
	_cleanup_free_ struct vb *a = xcalloc(s->n + 1, sizeof(*a));
	for (size_t i = 0; i < s->n; i++)
		a[i] = (struct vb){ s->boot[i], s->v[i] };
	qsort(a, s->n, sizeof(*a), cmp_vb);
	double *m = xcalloc(s->n + 1, sizeof(*m));
	size_t k = 0;
	for (size_t i = 0; i < s->n;) {
		size_t j = i;
		double sum = 0;
		for (; j < s->n && a[j].boot == a[i].boot; j++)
			sum += a[j].v;
		m[k++] = sum / (double)(j - i);
		i = j;
	}
	*means = m;
	return k;
}

static void mean_var(const double *x, size_t n, double *mean, double *var)
{
	double sum = 0, ss = 0;
	for (size_t i = 0; i < n; i++)
		sum += x[i];
	*mean = n ? sum / (double)n : NAN;
	for (size_t i = 0; i < n; i++)
		ss += (x[i] - *mean) * (x[i] - *mean);
	*var = n > 1 ? ss / (double)(n - 1) : NAN;
}

static double median_of(const double *x, size_t n)
{
	struct stats_summary s;
	stats_summarize(x, n, &s);
	return s.median;
}

static void min_max(const double *x, size_t n, double *lo, double *hi)
{
	*lo = INFINITY;
	*hi = -INFINITY;
	for (size_t i = 0; i < n; i++) {
		if (x[i] < *lo)
			*lo = x[i];
		if (x[i] > *hi)
			*hi = x[i];
	}
}

/* ---- one row ------------------------------------------------------------------------------ */

/* What the test needs of a row beyond the row itself. */
struct row_work {
	double d, se, tq; /* difference of log means, its standard error, t quantile */
	double s_boot;    /* standard deviation of one sample (boot mean, or run when unknown) */
	size_t k_base, k_cand; /* samples per side */
	double *sa, *sb;       /* the samples (log) */
};

static void row_test(struct cmp_row *row, struct row_work *w, const struct samples *a,
		     const struct samples *b, double confidence)
{
	double *ma = NULL, *mb = NULL;
	size_t ka = boot_means(a, &ma), kb = boot_means(b, &mb);
	row->boots_base = ka;
	row->boots_cand = kb;
	double xa, va, xb, vb, se2, df;

	if (ka >= 2 && kb >= 2) {
		/* each boot mean carries between-boot + within/n: their spread estimates both */
		mean_var(ma, ka, &xa, &va);
		mean_var(mb, kb, &xb, &vb);
		double sa = va / (double)ka, sb = vb / (double)kb;
		se2 = sa + sb;
		df = se2 > 0 ? se2 * se2 / (sa * sa / (double)(ka - 1) + sb * sb / (double)(kb - 1))
			     : (double)(ka + kb - 2);
		row->between_known = true;
		w->s_boot = sqrt((va + vb) / 2);
		w->sa = ma, w->sb = mb, w->k_base = ka, w->k_cand = kb;
		ma = mb = NULL;
	} else if ((ka >= 2 && kb == 1) || (ka == 1 && kb >= 2)) {
		/* one side has a single boot: its mean has the variance of a boot mean of the
		 * other side (same cell, same host), so borrow it */
		const double *many = ka >= 2 ? ma : mb;
		size_t k = ka >= 2 ? ka : kb;
		double v;
		mean_var(ma, ka, &xa, &v);
		mean_var(mb, kb, &xb, &v);
		double xm;
		mean_var(many, k, &xm, &v);
		se2 = v / (double)k + v;
		df = (double)(k - 1);
		row->between_known = true;
		w->s_boot = sqrt(v);
		w->sa = ma, w->sb = mb, w->k_base = ka, w->k_cand = kb;
		ma = mb = NULL;
	} else {
		/* one boot on each side: only the runs are left, and their spread misses the
		 * between-boot term; the interval is shown, the verdict is capped */
		mean_var(a->v, a->n, &xa, &va);
		mean_var(b->v, b->n, &xb, &vb);
		double sa = va / (double)a->n, sb = vb / (double)b->n;
		se2 = sa + sb;
		df = se2 > 0
			 ? se2 * se2 / (sa * sa / (double)(a->n - 1) + sb * sb / (double)(b->n - 1))
			 : (double)(a->n + b->n - 2);
		row->between_known = false;
		w->s_boot = sqrt((va + vb) / 2);
		w->sa = xmalloc(a->n * sizeof(double));
		w->sb = xmalloc(b->n * sizeof(double));
		memcpy(w->sa, a->v, a->n * sizeof(double));
		memcpy(w->sb, b->v, b->n * sizeof(double));
		w->k_base = a->n, w->k_cand = b->n;
	}
	free(ma);
	free(mb);

	w->d = xb - xa;
	w->se = sqrt(se2);
	row->df = df;
	w->tq = stats_t_quantile(confidence, df);
	row->change = expm1(w->d);
	row->ci_low = expm1(w->d - w->tq * w->se);
	row->ci_high = expm1(w->d + w->tq * w->se);
	/* one-sided p-values of "larger" and "smaller" */
	double p_larger, p_smaller;
	if (w->se > 0) {
		double t = w->d / w->se;
		p_larger = 1 - stats_t_cdf(t, df);
		p_smaller = stats_t_cdf(t, df);
	} else {
		p_larger = w->d > 0 ? 0 : 1;
		p_smaller = w->d < 0 ? 0 : 1;
	}
	row->p_worse = row->higher_better ? p_smaller : p_larger;
	row->p_better = row->higher_better ? p_larger : p_smaller;
	if (w->se > 0 && isfinite(df))
		row->mde = expm1((w->tq + stats_t_quantile(0.8, df)) * w->se);
}

static void set_note(struct cmp_row *row, const char *fmt, ...) _printf_(2, 3);
static void set_note(struct cmp_row *row, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *n = xvasprintf(fmt, ap);
	va_end(ap);
	if (row->note) {
		char *both = xasprintf("%s; %s", row->note, n);
		free(n);
		n = both;
	}
	free(row->note);
	row->note = n;
}

/* Boots per side that would likely (80%) resolve an inconclusive row. */
static long more_boots(const struct cmp_row *row, const struct row_work *w, double confidence)
{
	double thr = log1p(row->threshold), ad = fabs(w->d);
	double dist = ad >= thr ? ad : thr - ad;
	if (!(w->s_boot > 0) || dist < 1e-4)
		return -1;
	/* normal approximation: k per side with (z_c + z_0.8) s sqrt(2/k) <= dist */
	double z = stats_t_quantile(confidence, INFINITY) + stats_t_quantile(0.8, INFINITY);
	double k = ceil(2 * (z * w->s_boot / dist) * (z * w->s_boot / dist));
	size_t have = row->boots_base < row->boots_cand ? row->boots_base : row->boots_cand;
	if (k > 1e6)
		return -1;
	return k > (double)have ? (long)k - (long)have : 1;
}

/* The verdict of a row whose test ran (BH already applied). */
static void row_verdict(struct cmp_row *row, struct row_work *w, enum cmp_rule rule,
			double confidence)
{
	double thr = log1p(row->threshold);
	bool larger = w->d > 0;
	bool worse_dir = row->higher_better ? !larger : larger;
	double lo = w->d - w->tq * w->se, hi = w->d + w->tq * w->se;
	enum cmp_verdict v = CMP_INCONCLUSIVE;

	if (rule == CMP_RULE_WELCH) {
		bool big = fabs(w->d) >= thr;
		if (row->sig_worse && worse_dir && big)
			v = CMP_REGRESSED;
		else if (row->sig_better && !worse_dir && big)
			v = CMP_IMPROVED;
		else if (lo > -thr && hi < thr)
			v = CMP_UNCHANGED;
		else if ((row->sig_worse && worse_dir) || (row->sig_better && !worse_dir))
			set_note(row, "a significant change smaller than the %.3g%% threshold",
				 100 * row->threshold);
	} else {
		if (w->k_base < 3 || w->k_cand < 3) {
			set_note(row, "the lkp rule needs 3 samples (boots) per side");
		} else {
			double amin, amax, bmin, bmax;
			min_max(w->sa, w->k_base, &amin, &amax);
			min_max(w->sb, w->k_cand, &bmin, &bmax);
			double dmed =
			    fabs(median_of(w->sb, w->k_cand) - median_of(w->sa, w->k_base));
			bool apart = bmin > amax   ? bmin - amax > dmed / 2
				     : amin > bmax ? amin - bmax > dmed / 2
						   : false;
			if (apart && fabs(w->d) >= thr)
				v = worse_dir ? CMP_REGRESSED : CMP_IMPROVED;
			else if (lo > -thr && hi < thr)
				v = CMP_UNCHANGED;
		}
	}
	if (!row->between_known) {
		if (v != CMP_INCONCLUSIVE)
			set_note(row, "would be %s", cmp_verdict_name(v));
		set_note(row,
			 "with one boot per side the between-boot variance is unknown (runs "
			 "of one boot are not independent samples: use vm: per-run, more boots "
			 "or --baseline-window)");
		v = CMP_INCONCLUSIVE;
	}
	row->verdict = v;
	if (v == CMP_INCONCLUSIVE) {
		row->more_boots = more_boots(row, w, confidence);
		if (!row->note)
			set_note(row, "the interval reaches past both 0 and the %.3g%% threshold",
				 100 * row->threshold);
	}
}

/* ---- the comparison ----------------------------------------------------------------------- */

static void add_id(char ***list, size_t *n, const char *id)
{
	*list = xrealloc(*list, (*n + 1) * sizeof(**list));
	(*list)[(*n)++] = xstrdup(id);
}

struct pair {
	const struct result_cell *cand;
	const struct result_cell **base; /* one per used baseline file (NULL: absent there) */
};

/* The metrics of a pair, in report order. */
static size_t pair_metrics(const struct pair *pr, size_t n_used, const struct results *cand,
			   struct metric_ref *out, size_t cap)
{
	size_t n = 0;
	out[n++] = (struct metric_ref){ M_TOTAL, -1, "total" };
	static const char *const phase_metric[PHASE_COUNT] = {
		"phase.prepare", "phase.transfer", "phase.finalize",
		"phase.verify",  "phase.cleanup",
	};
	bool bytes = false, files = false;
	for (int p = 0; p < PHASE_COUNT; p++) {
		bool any = false;
		for (size_t f = 0; f <= n_used && !any; f++) {
			const struct result_cell *c = f < n_used ? pr->base[f] : pr->cand;
			for (size_t i = 0; c && i < c->n_runs && !any; i++)
				any = measured(&c->runs[i]) && c->runs[i].phase[p] > 0;
		}
		if (any)
			out[n++] = (struct metric_ref){ M_PHASE, p, phase_metric[p] };
	}
	for (size_t f = 0; f <= n_used; f++) {
		const struct result_cell *c = f < n_used ? pr->base[f] : pr->cand;
		for (size_t i = 0; c && i < c->n_runs; i++) {
			bytes |= measured(&c->runs[i]) && c->runs[i].bytes;
			files |= measured(&c->runs[i]) && c->runs[i].files;
		}
	}
	if (bytes)
		out[n++] = (struct metric_ref){ M_THROUGHPUT, -1, "throughput" };
	if (files)
		out[n++] = (struct metric_ref){ M_FILES, -1, "files_per_s" };
	/* method metrics of the new file's runs */
	for (size_t i = 0; i < pr->cand->n_runs && n < cap; i++) {
		const char *k;
		json_t *v;
		if (!pr->cand->runs[i].metrics)
			continue;
		json_object_foreach(pr->cand->runs[i].metrics, k, v)
		{
			bool seen = false;
			for (size_t j = 0; j < n && !seen; j++)
				seen = STREQ(out[j].name, k);
			if (!seen && n < cap)
				out[n++] = (struct metric_ref){ M_METHOD, -1, k };
		}
	}
	(void)cand;
	return n;
}

#define MAX_METRICS 64

static void build_rows(struct comparison *cmp, const struct pair *pairs, size_t n_pairs,
		       size_t n_used, const struct results *cand, const struct compare_opts *o,
		       double def_thr, double confidence)
{
	size_t cap = 0;
	struct row_work *work = NULL;
	for (size_t i = 0; i < n_pairs; i++) {
		struct metric_ref m[MAX_METRICS];
		size_t nm = pair_metrics(&pairs[i], n_used, cand, m, MAX_METRICS);
		for (size_t k = 0; k < nm; k++) {
			struct samples a = { 0 }, b = { 0 };
			for (size_t f = 0; f < n_used; f++)
				if (pairs[i].base[f])
					samples_add(&a, pairs[i].base[f], f, &m[k]);
			samples_add(&b, pairs[i].cand, n_used, &m[k]);
			if (a.n == 0 && b.n == 0 && k > 0) {
				samples_free(&a);
				samples_free(&b);
				continue;
			}
			if (cmp->n_rows == cap) {
				cap = cap ? 2 * cap : 64;
				cmp->rows = xrealloc(cmp->rows, cap * sizeof(*cmp->rows));
				work = xrealloc(work, cap * sizeof(*work));
			}
			struct cmp_row *row = &cmp->rows[cmp->n_rows];
			struct row_work *w = &work[cmp->n_rows];
			cmp->n_rows++;
			const struct result_metric *desc = results_find_metric(cand, m[k].name);
			*row = (struct cmp_row){
				.cell = xstrdup(pairs[i].cand->id),
				.metric = xstrdup(m[k].name),
				.unit = xstrdup(desc && desc->unit ? desc->unit : ""),
				.higher_better = desc ? desc->higher_better : false,
				.cand = pairs[i].cand,
				.n_base = a.n,
				.n_cand = b.n,
				.median_base = a.n ? median_of(a.raw, a.n) : NAN,
				.median_cand = b.n ? median_of(b.raw, b.n) : NAN,
				.change = NAN,
				.ci_low = NAN,
				.ci_high = NAN,
				.df = NAN,
				.p_worse = NAN,
				.p_better = NAN,
				.threshold = threshold_for(o, def_thr, pairs[i].cand, m[k].name),
				.mde = NAN,
				.more_boots = -1,
				.verdict = CMP_INCONCLUSIVE,
			};
			*w = (struct row_work){ 0 };
			if (m[k].kind == M_METHOD && !desc)
				set_note(row,
					 "the new file does not describe this metric: taken as "
					 "lower is better");
			if (a.n < 3 || b.n < 3) {
				set_note(row,
					 "fewer than 3 measured runs on a side (baseline %zu, new "
					 "%zu): no verdict",
					 a.n, b.n);
				size_t wanted = 3;
				row->more_boots = -1;
				(void)wanted;
			} else {
				row_test(row, w, &a, &b, confidence);
			}
			samples_free(&a);
			samples_free(&b);
		}
	}

	/* Benjamini-Hochberg over every tested row, one family per direction */
	double q = 1 - confidence;
	_cleanup_free_ double *pw = xcalloc(cmp->n_rows + 1, sizeof(double));
	_cleanup_free_ double *pb = xcalloc(cmp->n_rows + 1, sizeof(double));
	_cleanup_free_ bool *rw = xcalloc(cmp->n_rows + 1, sizeof(bool));
	_cleanup_free_ bool *rb = xcalloc(cmp->n_rows + 1, sizeof(bool));
	for (size_t i = 0; i < cmp->n_rows; i++) {
		pw[i] = cmp->rows[i].p_worse;
		pb[i] = cmp->rows[i].p_better;
	}
	stats_bh(pw, cmp->n_rows, q, rw);
	stats_bh(pb, cmp->n_rows, q, rb);
	for (size_t i = 0; i < cmp->n_rows; i++) {
		struct cmp_row *row = &cmp->rows[i];
		row->sig_worse = rw[i];
		row->sig_better = rb[i];
		if (!isnan(row->p_worse))
			row_verdict(row, &work[i], o->rule, confidence);
		free(work[i].sa);
		free(work[i].sb);
		cmp->counts[row->verdict]++;
	}
	free(work);

	const char *last = NULL;
	for (size_t i = 0; i < cmp->n_rows; i++)
		if (cmp->rows[i].verdict == CMP_REGRESSED &&
		    (!last || !STREQ(last, cmp->rows[i].cell))) {
			cmp->regressed_cells++;
			last = cmp->rows[i].cell;
		}
}

struct order {
	int64_t started;
	size_t i;
};

static int cmp_order(const void *a, const void *b)
{
	const struct order *x = a, *y = b;
	if (x->started != y->started)
		return (x->started < y->started) - (x->started > y->started); /* newest first */
	return (x->i < y->i) - (x->i > y->i); /* later on the command line first */
}

struct comparison *compare_results(const struct results *const *base, size_t n_base,
				   const struct results *cand, const struct compare_opts *o,
				   char **err)
{
	double confidence = o->confidence > 0 ? o->confidence : 0.95;
	double def_thr = o->threshold > 0 ? o->threshold : 0.05;
	if (!(confidence > 0.5 && confidence < 1)) {
		*err = xasprintf("confidence must be between 50%% and 100%%, not %g%%",
				 100 * confidence);
		return NULL;
	}
	if (n_base == 0) {
		*err = xstrdup("no baseline results");
		return NULL;
	}
	struct comparison *cmp = xcalloc(1, sizeof(*cmp));
	cmp->confidence = confidence;
	cmp->rule = o->rule;
	cmp->threshold = def_thr;

	/* the newest comparable baselines, up to the window */
	size_t window = o->window > 1 ? o->window : 1;
	_cleanup_free_ struct order *ord = xcalloc(n_base, sizeof(*ord));
	for (size_t i = 0; i < n_base; i++)
		ord[i] = (struct order){ base[i]->provenance.started_ms, i };
	qsort(ord, n_base, sizeof(*ord), cmp_order);
	cmp->used = xcalloc(n_base, sizeof(*cmp->used));
	for (size_t k = 0; k < n_base && cmp->n_used < window; k++) {
		struct comparison probe = { 0 };
		provenance_diffs(&probe, o, base[ord[k].i], cand);
		bool refuse = diffs_refuse(&probe);
		if (!refuse) {
			if (cmp->n_used == 0) {
				cmp->diffs = probe.diffs;
				cmp->n_diffs = probe.n_diffs;
				probe.diffs = NULL;
				probe.n_diffs = 0;
			}
			cmp->used[cmp->n_used++] = ord[k].i;
		}
		diffs_clear(&probe);
	}
	if (cmp->n_used == 0) {
		/* nothing comparable: the differences of the newest baseline say why */
		provenance_diffs(cmp, o, base[ord[0].i], cand);
		cmp->refused = true;
		return cmp;
	}

	/* pair the cells by their resolved parameters */
	_cleanup_free_ struct base_index *bi = xcalloc(cmp->n_used, sizeof(*bi));
	for (size_t f = 0; f < cmp->n_used; f++)
		base_index_init(&bi[f], base[cmp->used[f]]);
	_cleanup_free_ struct pair *pairs = xcalloc(cand->n_cells + 1, sizeof(*pairs));
	size_t n_pairs = 0;
	size_t params_diffs = 0;
	for (size_t i = 0; i < cand->n_cells; i++) {
		const struct result_cell *c = &cand->cells[i];
		_cleanup_free_ char *key = pair_key(c);
		if (!key)
			key = xasprintf("id:%s", c->id);
		_cleanup_free_ char *ax = axes_key(c);
		const struct result_cell **found = xcalloc(cmp->n_used, sizeof(*found));
		bool any = false;
		for (size_t f = 0; f < cmp->n_used; f++) {
			uint32_t j = strmap_get(&bi[f].by_key, key, 0);
			if (j == STRMAP_NONE) {
				/* the same axis values with other parameters: the meaning changed
				 */
				uint32_t k = strmap_get(&bi[f].by_axes, ax, 0);
				if (k != STRMAP_NONE && !bi[f].paired[k]) {
					const struct result_cell *bc = &bi[f].r->cells[k];
					if (f == 0 && params_diffs < 3) {
						_cleanup_free_ char *d = results_first_difference(
						    "", bc->params, c->params);
						_cleanup_free_ char *what =
						    xasprintf("cell %s: %s", c->id,
							      d ? d : "other parameters");
						add_diff(cmp, o, "params", what, "", true);
					} else if (f == 0) {
						add_diff(cmp, o, "params", "more cells differ", "",
							 true);
					}
					params_diffs += f == 0;
					if (!allowed(o, "params"))
						continue;
					j = k;
				} else {
					continue;
				}
			}
			if (bi[f].paired[j])
				continue;
			bi[f].paired[j] = true;
			found[f] = &bi[f].r->cells[j];
			any = true;
		}
		if (!any) {
			free(found);
			add_id(&cmp->only_cand, &cmp->n_only_cand, c->id);
			continue;
		}
		pairs[n_pairs++] = (struct pair){ c, found };
	}
	for (size_t j = 0; j < bi[0].r->n_cells; j++)
		if (!bi[0].paired[j])
			add_id(&cmp->only_base, &cmp->n_only_base, bi[0].r->cells[j].id);
	cmp->refused = diffs_refuse(cmp);

	if (!cmp->refused)
		build_rows(cmp, pairs, n_pairs, cmp->n_used, cand, o, def_thr, confidence);
	for (size_t i = 0; i < n_pairs; i++)
		free(pairs[i].base);
	for (size_t f = 0; f < cmp->n_used; f++)
		base_index_free(&bi[f]);
	return cmp;
}

void comparison_free(struct comparison *c)
{
	if (!c)
		return;
	diffs_clear(c);
	for (size_t i = 0; i < c->n_rows; i++) {
		free(c->rows[i].cell);
		free(c->rows[i].metric);
		free(c->rows[i].unit);
		free(c->rows[i].note);
	}
	free(c->rows);
	for (size_t i = 0; i < c->n_only_base; i++)
		free(c->only_base[i]);
	free(c->only_base);
	for (size_t i = 0; i < c->n_only_cand; i++)
		free(c->only_cand[i]);
	free(c->only_cand);
	free(c->used);
	free(c);
}

char *comparison_refusal(const struct comparison *c)
{
	char *out = NULL;
	for (size_t i = 0; i < c->n_diffs; i++) {
		const struct cmp_diff *d = &c->diffs[i];
		if (!d->refusing || d->allowed)
			continue;
		char *part = STREQ(d->key, "params")
				 ? xasprintf("params differ (%s)", d->base)
				 : xasprintf("%s differs ('%s' in the baseline, '%s' now)", d->key,
					     d->base, d->cand);
		char *n = out ? xasprintf("%s; %s", out, part) : part;
		if (out) {
			free(out);
			free(part);
		}
		out = n;
	}
	if (!out)
		return xstrdup("refused");
	char *r = xasprintf("refused to compare: %s (--allow-different KEY compares anyway)", out);
	free(out);
	return r;
}
