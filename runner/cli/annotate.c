/* SPDX-License-Identifier: MIT */
/*
 * Where the GitHub annotations of a run point (commands.h results_annotate()): a broken
 * criterion at its line in the plan, other faults at the plan entry that defines what failed.
 */
#include <string.h>

#include "../reporters/reporters.h"
#include "commands.h"
#include "plan.h"
#include "strmap.h"
#include "util.h"

/* GitHub shows at most 10 error annotations per step and 50 per job: more would be noise. */
#define ANNOTATE_MAX 50

struct locator {
	const struct plan *p;
	const struct matrix *m;
	struct strmap ids; /* cell id -> index in m */
};

/* The criterion an ERROR_CRITERION message names ("criterion FILE:LINE: ..."), or NULL. */
static const struct plan_criterion *criterion_of(const struct plan *p, const char *msg)
{
	for (size_t i = 0; msg && i < p->n_criteria; i++) {
		const struct plan_criterion *cr = &p->criteria[i];
		if (!cr->pos.file)
			continue;
		_cleanup_free_ char *prefix =
		    xasprintf("criterion %s:%d:", cr->pos.file, cr->pos.line);
		if (strncmp(msg, prefix, strlen(prefix)) == 0)
			return cr;
	}
	return NULL;
}

/* A broken criterion points at the criterion; a fault outside the method's phases (a guest
 * that did not boot) at the cell's VM entry; anything else at its method entry. */
static void locate(void *ud, const struct result_cell *c, const struct result_error *e,
		   struct report_where *w)
{
	struct locator *l = ud;
	struct plan_pos pos = { 0 };
	if (l->p->n_files)
		w->file = l->p->files[0];
	if (e && e->kind == ERROR_CRITERION) {
		const struct plan_criterion *cr = criterion_of(l->p, e->message);
		if (cr)
			pos = cr->pos;
	} else {
		uint32_t k = strmap_get(&l->ids, c->id, 0);
		if (k != STRMAP_NONE) {
			struct plan_cell pc;
			plan_cell(l->p, l->m, k, &pc);
			if (e && e->kind == ERROR_INFRA && e->phase < 0 && pc.vm)
				pos = pc.vm->e.pos;
			else if (pc.method)
				pos = pc.method->e.pos;
		}
	}
	if (pos.file) {
		w->file = pos.file;
		w->line = pos.line;
		w->col = pos.col;
	}
}

size_t results_annotate(FILE *out, const struct results *r, const struct plan *p,
			const struct matrix *m)
{
	if (!p || !m)
		return report_annotations(r, NULL, NULL, ANNOTATE_MAX, out);
	struct locator l = { .p = p, .m = m };
	size_t n = matrix_n_cells(m);
	strmap_init(&l.ids, n);
	for (size_t i = 0; i < n; i++)
		strmap_put(&l.ids, matrix_cell_id(m, i), 0, (uint32_t)i);
	size_t shown = report_annotations(r, locate, &l, ANNOTATE_MAX, out);
	strmap_free(&l.ids);
	return shown;
}
