/* SPDX-License-Identifier: MIT */
/* Joining the results files of the shards of one plan (merge.h). */
#include <stdlib.h>
#include <string.h>

#include "merge.h"
#include "strmap.h"

/* A cell of an input and where it goes. */
struct slot {
	size_t input, cell;
	size_t key; /* its index in the plan's expansion order, as far as the shard tells */
};

/*
 * A shard K/N holds the cells i of the expansion with i % N == K - 1, in expansion order
 * (shard_contains()), so its j-th cell is cell (K - 1) + j * N of the whole plan; a file that
 * is not a shard holds its cells in expansion order from 0. In a merged file the same holds
 * for the cells of each origin.
 */
static size_t shard_key(unsigned k, unsigned n, size_t j)
{
	return n ? (size_t)(k - 1) + j * (size_t)n : j;
}

/* The expansion index of every cell of r into keys[]. */
static void expansion_keys(const struct results *r, size_t *keys)
{
	/* a run fanned out over hosts (every origin a host) holds its cells in its own order */
	bool hosts = r->n_origins > 0;
	for (size_t o = 0; o < r->n_origins; o++)
		hosts &= r->origins[o].host != NULL;
	if (!r->n_origins || hosts) {
		for (size_t j = 0; j < r->n_cells; j++)
			keys[j] = shard_key(r->shard_k, r->shard_n, j);
		return;
	}
	_cleanup_free_ size_t *seen = xcalloc(r->n_origins + 1, sizeof(*seen));
	for (size_t j = 0; j < r->n_cells; j++) {
		int o = r->cells[j].origin;
		if (o < 0)
			keys[j] = shard_key(r->shard_k, r->shard_n, seen[r->n_origins]++);
		else
			keys[j] =
			    shard_key(r->origins[o].shard_k, r->origins[o].shard_n, seen[o]++);
	}
}

static int slot_cmp(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->input != y->input)
		return x->input < y->input ? -1 : 1;
	return x->cell < y->cell ? -1 : x->cell > y->cell;
}

/* A cell id for a message: quoted, control characters escaped. */
static char *shown_id(const char *id)
{
	_cleanup_free_ char *e = escape_controls(id);
	return xasprintf("'%s'", e);
}

static int check_inputs(struct results *const *in, const char *const *names, size_t n, char **err)
{
	for (size_t i = 0; i < n; i++) {
		const char *sha = in[i]->plan.sha256;
		if (!sha || !*sha) {
			*err = xasprintf("%s: no plan hash (not written by 'ferry run')", names[i]);
			return -1;
		}
		if (i && !STREQ(sha, in[0]->plan.sha256)) {
			*err =
			    xasprintf("%s: written by another plan than %s (plan sha256 %.12s..., "
				      "not %.12s...): only shards of one plan can be merged",
				      names[i], names[0], sha, in[0]->plan.sha256);
			return -1;
		}
		for (size_t j = 0; j < i && in[i]->shard_n; j++)
			if (in[j]->shard_k == in[i]->shard_k && in[j]->shard_n == in[i]->shard_n) {
				*err = xasprintf("%s and %s are both shard %u/%u", names[j],
						 names[i], in[i]->shard_k, in[i]->shard_n);
				return -1;
			}
	}
	struct strmap ids;
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += in[i]->n_cells;
	strmap_init(&ids, total);
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		for (size_t c = 0; c < in[i]->n_cells; c++) {
			uint32_t was = strmap_put(&ids, in[i]->cells[c].id, 0, (uint32_t)i);
			if (was == STRMAP_NONE)
				continue;
			_cleanup_free_ char *id = shown_id(in[i]->cells[c].id);
			*err = was == i
				   ? xasprintf("%s: cell %s is in the file twice", names[i], id)
				   : xasprintf("cell %s is in both %s and %s (a cell may be "
					       "merged once)",
					       id, names[was], names[i]);
			rc = -1;
			break;
		}
	strmap_free(&ids);
	return rc;
}

/* Shards of K/N that no input holds, when every input is a shard of the same N. */
static char *missing_shards(struct results *const *in, size_t n)
{
	unsigned of = in[0]->shard_n;
	for (size_t i = 0; i < n; i++)
		if (!in[i]->shard_n || in[i]->shard_n != of || in[i]->n_origins)
			return NULL;
	_cleanup_free_ char *list = NULL;
	size_t missing = 0;
	for (unsigned k = 1; k <= of; k++) {
		bool have = false;
		for (size_t i = 0; i < n && !have; i++)
			have = in[i]->shard_k == k;
		if (have)
			continue;
		if (++missing > 8)
			continue;
		char *l = list ? xasprintf("%s, %u/%u", list, k, of) : xasprintf("%u/%u", k, of);
		free(list);
		list = l;
	}
	if (!missing)
		return NULL;
	return xasprintf("shard%s %s%s not merged: the merged file holds only part of the plan's "
			 "cells",
			 missing == 1 ? "" : "s", list, missing > 8 ? ", ..." : "");
}

/* The origin index in `out` of input i's own run (added on first use). */
static int own_origin(struct results *out, const struct results *r, int *cache)
{
	if (*cache < 0)
		*cache = (int)results_add_origin(out, r->shard_k, r->shard_n, &r->provenance);
	return *cache;
}

/* The merged provenance: lead's, spanning from the earliest start to the latest end of the
 * inputs, with every input's datasets. */
static void merge_provenance(struct result_provenance *out, const struct results *lead,
			     struct results *const *in, size_t n)
{
	result_provenance_copy(out, &lead->provenance);
	for (size_t i = 0; i < n; i++) {
		const struct result_provenance *p = &in[i]->provenance;
		if (p->started_ms && (!out->started_ms || p->started_ms < out->started_ms))
			out->started_ms = p->started_ms;
		if (p->finished_ms && p->finished_ms > out->finished_ms)
			out->finished_ms = p->finished_ms;
		result_provenance_add_datasets(out, p);
	}
}

/* The inputs' indexes in shard order (stable). Caller frees. */
static size_t *shard_order(struct results *const *in, size_t n)
{
	size_t *order = xcalloc(n ? n : 1, sizeof(*order));
	for (size_t i = 0; i < n; i++) {
		size_t j = i;
		for (; j > 0 && in[order[j - 1]]->shard_k > in[i]->shard_k; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	return order;
}

/* The origins, in shard order: an input's own run (own[i], its index in out once added, else
 * -1), or the origins of an input that was merged before (from base[i] on). */
static void merge_origins(struct results *out, struct results *const *in, size_t n,
			  const size_t *order, int *own, size_t *base)
{
	for (size_t i = 0; i < n; i++)
		own[i] = -1;
	for (size_t j = 0; j < n; j++) {
		size_t i = order[j];
		base[i] = out->n_origins;
		for (size_t o = 0; o < in[i]->n_origins; o++) {
			const struct result_origin *io = &in[i]->origins[o];
			size_t oo =
			    results_add_origin(out, io->shard_k, io->shard_n, &io->provenance);
			out->origins[oo].host = io->host ? xstrdup(io->host) : NULL;
			out->origins[oo].lost = io->lost ? xstrdup(io->lost) : NULL;
		}
		if (!in[i]->n_origins)
			own_origin(out, in[i], &own[i]);
	}
}

/* Boot ids are unique within a file: each input's follow those of the inputs before it (in
 * shard order), so that runs of different hosts never look like one boot. */
static void renumber_boots(struct results *const *in, size_t n, const size_t *order)
{
	_cleanup_free_ int64_t *boot_base = xcalloc(n ? n : 1, sizeof(*boot_base));
	for (size_t j = 0, next = 0; j < n; j++) {
		boot_base[order[j]] = (int64_t)next;
		next += (size_t)results_max_boot(in[order[j]]);
	}
	for (size_t i = 0; i < n; i++)
		for (size_t c = 0; c < in[i]->n_cells; c++)
			for (size_t j = 0; j < in[i]->cells[c].n_runs; j++)
				if (in[i]->cells[c].runs[j].boot > 0)
					in[i]->cells[c].runs[j].boot += boot_base[i];
}

struct results *results_merge(struct results *const *in, const char *const *names, size_t n,
			      char **warning, char **err)
{
	if (warning)
		*warning = NULL;
	if (n == 0) {
		*err = xstrdup("no results files to merge");
		return NULL;
	}
	if (check_inputs(in, names, n, err) < 0)
		return NULL;

	_cleanup_(results_freep) struct results *out = results_new();
	const struct results *first = in[0];
	out->plan.name = first->plan.name ? xstrdup(first->plan.name) : NULL;
	out->plan.path = first->plan.path ? xstrdup(first->plan.path) : NULL;
	out->plan.sha256 = xstrdup(first->plan.sha256);
	out->plan.text = first->plan.text ? xstrdup(first->plan.text) : NULL;
	out->plan.control = first->plan.control ? xstrdup(first->plan.control) : NULL;

	/* the cells in expansion order */
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += in[i]->n_cells;
	_cleanup_free_ struct slot *slots = xcalloc(total ? total : 1, sizeof(*slots));
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ size_t *keys = xcalloc(in[i]->n_cells + 1, sizeof(*keys));
		expansion_keys(in[i], keys);
		for (size_t c = 0; c < in[i]->n_cells; c++)
			slots[k++] = (struct slot){ i, c, keys[c] };
	}
	qsort(slots, total, sizeof(*slots), slot_cmp);

	/* the top-level provenance: that of the input holding the first cell (else the first
	 * input), spanning from the earliest start to the latest end */
	merge_provenance(&out->provenance, total ? in[slots[0].input] : first, in, n);

	_cleanup_free_ int *own = xcalloc(n, sizeof(*own));
	_cleanup_free_ size_t *base = xcalloc(n, sizeof(*base));
	_cleanup_free_ size_t *order = shard_order(in, n);
	merge_origins(out, in, n, order, own, base);

	/* the metrics every input describes (built-ins and those of its methods) */
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < in[i]->n_metrics; j++)
			results_set_metric(out, in[i]->metrics[j].name, in[i]->metrics[j].unit,
					   in[i]->metrics[j].higher_better);

	renumber_boots(in, n, order);

	/* move the cells: the inputs keep none */
	out->cells = xcalloc(total ? total : 1, sizeof(*out->cells));
	out->cells_cap = total ? total : 1;
	for (size_t s = 0; s < total; s++) {
		struct results *r = in[slots[s].input];
		struct result_cell *c = &out->cells[out->n_cells++];
		*c = r->cells[slots[s].cell];
		c->origin = c->origin >= 0 ? (int)base[slots[s].input] + c->origin
					   : own_origin(out, r, &own[slots[s].input]);
	}
	for (size_t i = 0; i < n; i++) {
		memset(in[i]->cells, 0, in[i]->n_cells * sizeof(*in[i]->cells));
		in[i]->n_cells = 0;
	}
	if (warning)
		*warning = missing_shards(in, n);
	return TAKE_PTR(out);
}
