/* SPDX-License-Identifier: MIT */
/*
 * YAML merge keys (the YAML 1.1 merge type): `<<: *defaults` and `<<: [*a, *b]` in a mapping
 * insert the pairs of the aliased mappings, which plan authors use to share settings between
 * entries. libyaml parses `<<` as an ordinary key and resolves nothing, so the composer
 * (load.c) resolves each mapping here as it closes: the merged mappings are complete by then,
 * with their own merges resolved. The rules are the merge type's:
 * - an explicit key of the mapping overrides a merged one, wherever it stands;
 * - in a list of mappings, an earlier mapping's key overrides a later one's;
 * - the merged pairs take the place of the `<<` pair, in their own order.
 * Merged pairs are the aliased nodes themselves, so an error in a merged value points at the
 * line and column where that value is written. Only a plain `<<` merges: a quoted '<<' is an
 * ordinary (unknown) key.
 */
#include <string.h>

#include "plan-parse.h"
#include "strmap.h"

static bool is_merge_key(const yaml_node_t *k)
{
	return k->type == YAML_SCALAR_NODE && k->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       k->data.scalar.length == 2 && memcmp(k->data.scalar.value, "<<", 2) == 0;
}

static const char *key_text(const yaml_node_t *k)
{
	return k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : NULL;
}

/* The mappings a `<<` value names, into srcs (ids, at most n). Returns how many; reports
 * anything else (a scalar, a list holding a non-mapping). */
static size_t merge_sources(struct ctx *c, yaml_document_t *d, int value, int *srcs, size_t n)
{
	yaml_node_t *v = yaml_document_get_node(d, value);
	if (v->type == YAML_MAPPING_NODE) {
		srcs[0] = value;
		return 1;
	}
	if (v->type != YAML_SEQUENCE_NODE) {
		pl_err_node(c, v,
			    "the merge key '<<' takes a mapping or a list of mappings (for example "
			    "'<<: *defaults'), not %s",
			    pl_node_kind(v));
		return 0;
	}
	size_t k = 0;
	for (yaml_node_item_t *i = v->data.sequence.items.start;
	     i < v->data.sequence.items.top && k < n; i++) {
		yaml_node_t *item = yaml_document_get_node(d, *i);
		if (item->type != YAML_MAPPING_NODE) {
			pl_err_node(c, item, "the merge key '<<' merges mappings, not %s",
				    pl_node_kind(item));
			continue;
		}
		srcs[k++] = *i;
	}
	return k;
}

static void append(yaml_document_t *d, int to, int key, int value)
{
	if (!yaml_document_append_mapping_pair(d, to, key, value))
		abort();
}

/* Append the pairs of mapping `src` whose keys `seen` does not hold yet, and add them to it. */
static void append_merged(yaml_document_t *d, int to, int src, struct strmap *seen)
{
	/* the pair array of `src` stays put while `to` grows (each node has its own) */
	const yaml_node_t *s = yaml_document_get_node(d, src);
	const yaml_node_pair_t *p = s->data.mapping.pairs.start, *end = s->data.mapping.pairs.top;
	for (; p < end; p++) {
		yaml_node_pair_t q = *p;
		const char *t = key_text(yaml_document_get_node(d, q.key));
		if (t && strmap_put(seen, t, 0, 1) != STRMAP_NONE)
			continue;
		append(d, to, q.key, q.value);
	}
}

int pl_resolve_merges(struct ctx *c, yaml_document_t *d, int id)
{
	yaml_node_t *m = yaml_document_get_node(d, id);
	yaml_node_pair_t *pairs = m->data.mapping.pairs.start;
	size_t n = (size_t)(m->data.mapping.pairs.top - pairs), merge = n;

	for (size_t i = 0; i < n; i++) {
		yaml_node_t *k = yaml_document_get_node(d, pairs[i].key);
		if (!is_merge_key(k))
			continue;
		if (merge == n) {
			merge = i;
			continue;
		}
		const yaml_node_t *first = yaml_document_get_node(d, pairs[merge].key);
		pl_err_node(c, k,
			    "duplicate merge key '<<' (first at line %d, column %d; merge "
			    "several mappings with '<<: [*a, *b]')",
			    (int)first->start_mark.line + 1, (int)first->start_mark.column + 1);
	}
	if (merge == n)
		return id;

	yaml_node_t *mv = yaml_document_get_node(d, pairs[merge].value);
	size_t cap = mv->type == YAML_SEQUENCE_NODE
			 ? (size_t)(mv->data.sequence.items.top - mv->data.sequence.items.start)
			 : 1;
	_cleanup_free_ int *srcs = xmalloc((cap ? cap : 1) * sizeof(*srcs));
	size_t nsrc = merge_sources(c, d, pairs[merge].value, srcs, cap);

	struct strmap seen;
	strmap_init(&seen, n);
	for (size_t i = 0; i < n; i++) {
		const yaml_node_t *k = yaml_document_get_node(d, pairs[i].key);
		const char *t = key_text(k);
		if (t && !is_merge_key(k))
			(void)strmap_put(&seen, t, 0, 1);
	}
	yaml_mark_t start = m->start_mark, end = m->end_mark;
	int to = yaml_document_add_mapping(d, NULL, m->data.mapping.style);
	if (!to)
		abort();
	/* adding a node may move the node array (not the pair arrays): no node pointer past here */
	yaml_document_get_node(d, to)->start_mark = start;
	yaml_document_get_node(d, to)->end_mark = end;
	for (size_t i = 0; i < n; i++) {
		if (is_merge_key(yaml_document_get_node(d, pairs[i].key))) {
			if (i == merge)
				for (size_t s = 0; s < nsrc; s++)
					append_merged(d, to, srcs[s], &seen);
			continue;
		}
		append(d, to, pairs[i].key, pairs[i].value);
	}
	strmap_free(&seen);
	return to;
}
