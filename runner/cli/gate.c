/* SPDX-License-Identifier: MIT */
/* The gate's metrics (commands.h): --gate METRIC,... and the plan's regression.gate. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "exec.h"
#include "matrix.h"
#include "metrics.h"
#include "util.h"

int gate_metrics_parse(const char *opt, const char *text, struct gate_metrics *g)
{
	_cleanup_free_ char *dup = xstrdup(text);
	if (!*dup) {
		errorf("invalid %s '': expected metric names, like total,phase.transfer", opt);
		return -1;
	}
	for (char *sv = NULL, *t = strtok_r(dup, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
		int m = metric_find(t);
		if (m < 0 || metric_defs[m].kind == METRIC_SPREAD) {
			errorf("invalid %s metric '%s': expected total, phase.prepare, "
			       "phase.transfer, phase.finalize, phase.verify, phase.cleanup, "
			       "throughput, files_per_s or a per-run metric of ferry(1) METRICS",
			       opt, t);
			return -1;
		}
		g->v = xrealloc(g->v, (g->n + 1) * sizeof(*g->v));
		g->v[g->n++] = xstrdup(t);
	}
	return 0;
}

void gate_metrics_free(struct gate_metrics *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->v[i]);
	free(g->v);
	*g = (struct gate_metrics){ 0 };
}

struct results *gate_rerun(void *ud, const char *const *cells, size_t n, unsigned blocks)
{
	struct gate_rerun *g = ud;
	size_t nc = matrix_n_cells(g->m);
	_cleanup_free_ bool *only = xcalloc(nc + 1, sizeof(*only));
	size_t found = 0;
	for (size_t i = 0; i < nc; i++)
		for (size_t j = 0; j < n && !only[i]; j++)
			if (STREQ(matrix_cell_id(g->m, i), cells[j]))
				only[i] = true, found++;
	if (!found)
		return NULL;
	/* new blocks: the boots of the rerun, shuffled anew, one run per cell and boot unless the
	 * plan says how many; no stop rule (exactly `blocks`) */
	struct plan p = *g->p; /* shallow: only its run settings differ, and nothing is freed */
	struct plan_run *run = &p.run;
	run->boots.min = run->boots.max = blocks;
	run->until = 0;
	run->budget = 0;
	run->seed = g->p->run.seed ^ 0x5bd1e995u;
	if (!g->p->run.boots.min)
		run->rpb = 1;
	struct exec_opts eo = *g->eo;
	eo.resume = NULL;
	eo.rerun_failed = false;
	eo.only = only;
	eo.results_path = g->path;
	struct results *r = NULL;
	struct exec_result st;
	_cleanup_free_ char *err = NULL;
	int rc = exec_plan(&p, g->m, &eo, &r, &st, &err);
	if (rc < 0) {
		errorf("the rerun: %s", err);
		results_free(r);
		return NULL;
	}
	return r;
}

long gate_parse_confirm(const char *text)
{
	char *end;
	errno = 0;
	long v = strtol(text, &end, 10);
	if (end == text || *end || errno || v < 0 || v > 20 || (v > 0 && v < PLAN_CONFIRM_MIN)) {
		errorf(
		    "invalid --confirm '%s': expected 0 (no rerun) or a number of blocks from %d "
		    "to 20 (a rerun of fewer cannot be tested)",
		    text, PLAN_CONFIRM_MIN);
		return -1;
	}
	return v;
}

char *gate_confirm_path(const char *path)
{
	if (STREQ(path, "-"))
		return NULL;
	size_t n = strlen(path);
	if (n > 5 && STREQ(path + n - 5, ".json"))
		return xasprintf("%.*s.confirm.json", (int)(n - 5), path);
	return xasprintf("%s.confirm.json", path);
}
