/* SPDX-License-Identifier: MIT */
/*
 * Whether an earlier results file belongs to this plan (exec_check_resume() in exec.h): the
 * plan's hash and every cell's resolved parameters, computed exactly as the executor records
 * them (cell_params() in record.c), compared by results_check_resume().
 */
#include "exec-int.h"

json_t *exec_cell_params(const struct plan *p, const struct matrix *m, size_t i)
{
	/* the executor's own cell_params() (record.c), so both record the same parameters */
	const struct exec x = { .p = p, .m = m };
	struct plan_cell pc;
	plan_cell(p, m, i, &pc);
	return cell_params(&x, i, &pc);
}

int exec_check_resume(const struct plan *p, const struct matrix *m, const char *plan_path,
		      const struct results *earlier, char **why)
{
	_cleanup_(results_freep) struct results *now = results_new();
	size_t len = 0;
	_cleanup_free_ char *text = read_file(plan_path, &len);
	results_set_plan(now, p->name, plan_path, text ? text : "", text ? len : 0);
	for (size_t i = 0; i < matrix_n_cells(m); i++) {
		struct plan_cell pc;
		plan_cell(p, m, i, &pc);
		struct result_cell *c = results_add_cell(now, pc.id);
		c->params = exec_cell_params(p, m, i);
	}
	return results_check_resume(earlier, now, why);
}
