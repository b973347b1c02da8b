/* SPDX-License-Identifier: MIT */
/* `ferry compare` (compare.h): names, thresholds, comparability and pairing; the rows of a
 * comparison and false-discovery control over them are compare-rows.c, the rule for one row
 * compare-rule.c. */
#include "compare.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "strmap.h"
#include "compare-impl.h"

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
	base = base ? base : "unknown";
	cand = cand ? cand : "unknown";
	for (size_t i = 0; i < c->n_diffs; i++) /* the same difference seen on another cell */
		if (STREQ(c->diffs[i].key, key) && STREQ(c->diffs[i].base, base) &&
		    STREQ(c->diffs[i].cand, cand))
			return;
	c->diffs = xrealloc(c->diffs, (c->n_diffs + 1) * sizeof(*c->diffs));
	c->diffs[c->n_diffs++] = (struct cmp_diff){
		.key = xstrdup(key),
		.base = xstrdup(base),
		.cand = xstrdup(cand),
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

/* The environment of one host: what refuses a comparison, and what is only shown. */
static void host_diffs(struct comparison *c, const struct compare_opts *o,
		       const struct result_provenance *p, const struct result_provenance *q)
{
	check_str(c, o, "accelerator", p->accelerator, q->accelerator, true);
	check_str(c, o, "cpu_model", p->cpu_model, q->cpu_model, true);
	check_str(c, o, "qemu_version", p->qemu_version, q->qemu_version, true);
	check_str(c, o, "libvirt_version", p->libvirt_version, q->libvirt_version, true);
	check_str(c, o, "hostname", p->hostname, q->hostname, false);
	check_str(c, o, "host_kernel", p->host_kernel, q->host_kernel, false);
}

/* The provenance of the host that ran cell i of r: its origin's in a merged or fanned-out file,
 * else the file's. */
static const struct result_provenance *cell_host(const struct results *r, size_t i)
{
	int o = r->cells[i].origin;
	return o >= 0 && (size_t)o < r->n_origins ? &r->origins[o].provenance : &r->provenance;
}

/*
 * A file whose cells ran on several hosts (a fan-out, a merge of shards): every cell's host is
 * compared with the host that ran the same cell in the baseline, like the files' own environment
 * (each difference once).
 */
static void cell_host_diffs(struct comparison *c, const struct compare_opts *o,
			    const struct results *a, const struct results *b)
{
	if (!a->n_origins && !b->n_origins)
		return;
	for (size_t i = 0; i < b->n_cells; i++) {
		const struct result_cell *bc = &b->cells[i];
		const struct result_cell *ac = results_find_cell(a, bc->id);
		if (ac)
			host_diffs(c, o, cell_host(a, (size_t)(ac - a->cells)), cell_host(b, i));
	}
}

static void provenance_diffs(struct comparison *c, const struct compare_opts *o,
			     const struct results *a, const struct results *b)
{
	const struct result_provenance *p = &a->provenance, *q = &b->provenance;
	cell_host_diffs(c, o, a, b);
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
static const char *const replication_keys[] = { "repeat",        "warmup",       "order", "seed",
						"timeout",       "cell_timeout", "vm",    "boots",
						"runs_per_boot", "until",        "budget" };

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

/* ---- the comparison ----------------------------------------------------------------------- */

static void add_id(char ***list, size_t *n, const char *id)
{
	*list = xrealloc(*list, (*n + 1) * sizeof(**list));
	(*list)[(*n)++] = xstrdup(id);
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

/* Chooses the newest comparable baselines, up to the window, into cmp->used (the differences
 * of the newest one used into cmp). With none comparable, the differences of the newest
 * baseline say why: refused, and false. */
static bool choose_baselines(struct comparison *cmp, const struct results *const *base,
			     size_t n_base, const struct results *cand,
			     const struct compare_opts *o)
{
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
		provenance_diffs(cmp, o, base[ord[0].i], cand);
		cmp->refused = true;
		return false;
	}
	return true;
}

/*
 * The cell of baseline file f (index bi) that pairs with c: the one with its pairing key, or
 * else the one with its axes and other parameters (the meaning changed: a "params" difference,
 * noted for the first file, pairs only when allowed). STRMAP_NONE when none is left unpaired.
 */
static uint32_t partner(struct comparison *cmp, const struct compare_opts *o,
			const struct base_index *bi, size_t f, const struct result_cell *c,
			const char *key, const char *ax, size_t *params_diffs)
{
	uint32_t j = strmap_get(&bi->by_key, key, 0);
	if (j == STRMAP_NONE) {
		uint32_t k = strmap_get(&bi->by_axes, ax, 0);
		if (k == STRMAP_NONE || bi->paired[k])
			return STRMAP_NONE;
		const struct result_cell *bc = &bi->r->cells[k];
		if (f == 0 && *params_diffs < 3) {
			_cleanup_free_ char *d =
			    results_first_difference("", bc->params, c->params);
			_cleanup_free_ char *what =
			    xasprintf("cell %s: %s", c->id, d ? d : "other parameters");
			add_diff(cmp, o, "params", what, "", true);
		} else if (f == 0) {
			add_diff(cmp, o, "params", "more cells differ", "", true);
		}
		*params_diffs += f == 0;
		if (!allowed(o, "params"))
			return STRMAP_NONE;
		j = k;
	}
	return bi->paired[j] ? STRMAP_NONE : j;
}

/* Pairs the cells of cand with those of the used baselines (indexed in bi) by their resolved
 * parameters into pairs; the cells on one side only into cmp. Returns the number of pairs. */
static size_t pair_cells(struct comparison *cmp, struct base_index *bi, const struct results *cand,
			 const struct compare_opts *o, struct pair *pairs)
{
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
			uint32_t j = partner(cmp, o, &bi[f], f, c, key, ax, &params_diffs);
			if (j == STRMAP_NONE)
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
	return n_pairs;
}

/* The control cell (compare_opts.control): AXIS=VALUE,... that names exactly one cell present on
 * both sides. Sets cmp->control_cell; -1 with *err otherwise. */
static int control_check(struct comparison *cmp, const char *sel, const struct pair *pairs,
			 size_t n_pairs, char **err)
{
	if (!cmp_where_valid(sel)) {
		*err = xasprintf("invalid control '%s': expected AXIS=VALUE[,AXIS=VALUE...], e.g. "
				 "dataset=small",
				 sel);
		return -1;
	}
	size_t n = 0;
	const struct pair *found = NULL;
	for (size_t i = 0; i < n_pairs; i++)
		if (cmp_where_matches(sel, pairs[i].cand)) {
			n++;
			found = &pairs[i];
		}
	if (n != 1) {
		*err =
		    xasprintf("the control '%s' matches %zu cells present in both files; it must "
			      "name exactly one",
			      sel, n);
		return -1;
	}
	cmp->control_cell = xstrdup(found->cand->id);
	return 0;
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
	if (!choose_baselines(cmp, base, n_base, cand, o))
		return cmp;

	_cleanup_free_ struct base_index *bi = xcalloc(cmp->n_used, sizeof(*bi));
	for (size_t f = 0; f < cmp->n_used; f++)
		base_index_init(&bi[f], base[cmp->used[f]]);
	_cleanup_free_ struct pair *pairs = xcalloc(cand->n_cells + 1, sizeof(*pairs));
	size_t n_pairs = pair_cells(cmp, bi, cand, o, pairs);
	cmp->refused = diffs_refuse(cmp);
	if (o->control && control_check(cmp, o->control, pairs, n_pairs, err) < 0) {
		for (size_t i = 0; i < n_pairs; i++)
			free(pairs[i].base);
		for (size_t f = 0; f < cmp->n_used; f++)
			base_index_free(&bi[f]);
		comparison_free(cmp);
		return NULL;
	}

	if (!cmp->refused)
		cmp_build_rows(cmp, pairs, n_pairs, cmp->n_used, cand, o, def_thr, confidence);
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
	for (size_t i = 0; i < c->n_gate; i++)
		free(c->gate[i]);
	free(c->gate);
	free(c->control_cell);
	free(c);
}

double comparison_interval_pct(const struct comparison *c)
{
	return 100 * (2 * c->confidence - 1);
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
