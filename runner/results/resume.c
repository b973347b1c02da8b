/* SPDX-License-Identifier: MIT */
/*
 * May an earlier results file be resumed by the current plan (results_check_resume() in
 * results.h)? Cell ids are built from names only: a dataset whose size changed keeps its id, so
 * the ids prove nothing; the plan's hash and each cell's resolved parameters do.
 */
#include <string.h>

#include "results.h"
#include "strmap.h"

/* How many differing cells a refusal names before "and N more". */
#define SHOW_CELLS 3

/* A JSON value for a message: compact, control characters escaped by jansson, cut after max. */
static char *show(const json_t *v, int max)
{
	if (!v)
		return xstrdup("absent");
	_cleanup_free_ char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_ESCAPE_SLASH);
	if (!s)
		return xstrdup("?");
	if (strlen(s) > (size_t)max)
		return xasprintf("%.*s...", max, s);
	return TAKE_PTR(s);
}

/* The first difference between two parameter values, as "'path' was X, now Y"; NULL when equal.
 * Objects are compared key by key (in the earlier value's order, then keys only now has). */
char *results_first_difference(const char *path, const json_t *was, const json_t *now)
{
	if (!was && !now)
		return NULL;
	if (was && now && json_equal((json_t *)was, (json_t *)now))
		return NULL;
	if (json_is_object(was) && json_is_object(now)) {
		const char *k;
		json_t *v;
		json_object_foreach((json_t *)was, k, v)
		{
			_cleanup_free_ char *sub = *path ? xasprintf("%s.%s", path, k) : xstrdup(k);
			char *d = results_first_difference(sub, v, json_object_get(now, k));
			if (d)
				return d;
		}
		json_object_foreach((json_t *)now, k, v)
		{
			if (json_object_get(was, k))
				continue;
			_cleanup_free_ char *sub = *path ? xasprintf("%s.%s", path, k) : xstrdup(k);
			return results_first_difference(sub, NULL, v);
		}
		return NULL;
	}
	_cleanup_free_ char *a = show(was, 40), *b = show(now, 40);
	return xasprintf("parameter '%s' was %s, now %s", *path ? path : "(all)", a, b);
}

static void append(char **text, const char *more)
{
	char *t = *text ? xasprintf("%s; %s", *text, more) : xstrdup(more);
	free(*text);
	*text = t;
}

int results_check_resume(const struct results *earlier, const struct results *now, char **why)
{
	_cleanup_free_ char *text = NULL;
	const char *was_sha = earlier->plan.sha256, *now_sha = now->plan.sha256;

	if (!was_sha || !now_sha || !STREQ(was_sha, now_sha)) {
		_cleanup_free_ char *m =
		    xasprintf("the plan differs (sha256 %.12s..., now %.12s...)",
			      was_sha ? was_sha : "none", now_sha ? now_sha : "none");
		append(&text, m);
	}

	struct strmap ids;
	strmap_init(&ids, now->n_cells);
	for (size_t i = 0; i < now->n_cells; i++)
		strmap_put(&ids, now->cells[i].id, 0, (uint32_t)i);
	size_t differ = 0;
	for (size_t i = 0; i < earlier->n_cells; i++) {
		const struct result_cell *c = &earlier->cells[i];
		uint32_t k = strmap_get(&ids, c->id, 0);
		_cleanup_free_ char *d =
		    k == STRMAP_NONE
			? xstrdup("not a cell of the current plan")
			: results_first_difference("", c->params, now->cells[k].params);
		if (!d)
			continue;
		if (differ++ < SHOW_CELLS) {
			_cleanup_(json_decrefp) json_t *jid = json_string(c->id);
			_cleanup_free_ char *sid = jid ? show(jid, 120) : xstrdup("?");
			_cleanup_free_ char *m = xasprintf("cell %s: %s", sid, d);
			append(&text, m);
		}
	}
	strmap_free(&ids);
	if (differ > SHOW_CELLS) {
		_cleanup_free_ char *m = xasprintf("and %zu more cell%s", differ - SHOW_CELLS,
						   differ - SHOW_CELLS == 1 ? "" : "s");
		append(&text, m);
	}
	if (!text)
		return 0;
	*why = xasprintf("not a results file of this plan: %s (run without --resume, or with "
			 "--results to start a new file)",
			 text);
	return -1;
}
