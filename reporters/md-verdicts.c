/* SPDX-License-Identifier: MIT */
/* The verdicts of the Markdown pivot (md-layout.h): each column's best against the rest. */
#include <stdint.h>
#include <stdlib.h>

#include "md-layout.h"

void md_verdicts_build(struct md_verdicts *mv, const struct results *r, const struct layout *l,
		       size_t g, const struct strset *cols, const size_t *best, const char *metric)
{
	*mv = (struct md_verdicts){ 0 };
	mv->slot = xcalloc(r->n_cells + 1, sizeof(*mv->slot));
	mv->winner = xcalloc(r->n_cells + 1, sizeof(*mv->winner));
	for (size_t i = 0; i < r->n_cells; i++)
		mv->slot[i] = SIZE_MAX;
	size_t n = (size_t)(md_group_end(l, g) - md_group_begin(l, g));
	mv->pairs = xcalloc(n + 1, sizeof(*mv->pairs));
	for (const size_t *p = md_group_begin(l, g); p < md_group_end(l, g); p++) {
		size_t b = best[md_strset_find(cols, l->col[*p])];
		if (b == SIZE_MAX || b == *p || !md_has_stats(&r->cells[*p]))
			continue;
		mv->slot[*p] = mv->n;
		mv->pairs[mv->n++] = (struct verdict_pair){ &r->cells[b], &r->cells[*p] };
	}
	mv->v = xcalloc(mv->n + 1, sizeof(*mv->v));
	_cleanup_free_ char *err = NULL;
	if (verdict_pairs(r, mv->pairs, mv->n, &(struct verdict_opts){ .metric = metric }, mv->v,
			  &err) < 0) {
		/* a metric verdicts do not know (cv): no verdicts, and so no winner */
		for (size_t i = 0; i < r->n_cells; i++)
			mv->slot[i] = SIZE_MAX;
		mv->n = 0;
		return;
	}
	/* a winner beats every other cell of its column, significantly */
	for (size_t c = 0; c < cols->n; c++) {
		if (best[c] == SIZE_MAX)
			continue;
		size_t others = 0, beaten = 0;
		for (size_t k = 0; k < mv->n; k++)
			if (mv->pairs[k].a == &r->cells[best[c]]) {
				others++;
				beaten += mv->v[k].kind == VERDICT_A_BETTER;
			}
		mv->winner[best[c]] = others > 0 && beaten == others;
	}
}

void md_verdicts_free(struct md_verdicts *mv)
{
	for (size_t k = 0; k < mv->n; k++)
		verdict_clear(&mv->v[k]);
	free(mv->v);
	free(mv->pairs);
	free(mv->slot);
	free(mv->winner);
}
