/* SPDX-License-Identifier: MIT */
/*
 * Whether an earlier results file belongs to this plan (exec_check_resume() in exec.h): the
 * plan's hash and every cell's resolved parameters, computed exactly as the executor records
 * them, compared by results_check_resume().
 */
#include "exec.h"
#include "keys.h"

static json_t *entry_params(const struct key_table *t, const struct plan_entry *e)
{
	json_t *o = json_pack("{s:s}", "name", e->name);
	json_t *v = key_values_json(t, e);
	json_object_update(o, v);
	json_decref(v);
	return o;
}

json_t *exec_cell_params(const struct plan *p, const struct matrix *m, size_t i)
{
	struct plan_cell pc;
	plan_cell(p, m, i, &pc);
	json_t *params = json_object();
	json_object_set_new(params, "vm", entry_params(&plan_vm_keys, &pc.vm->e));
	json_object_set_new(params, "disk", entry_params(&plan_disk_keys, &pc.disk->e));
	json_object_set_new(params, "dataset", entry_params(&plan_dataset_keys, &pc.dataset->e));
	json_object_set_new(params, "method", entry_params(&plan_method_keys, &pc.method->e));
	json_object_set_new(params, "run", key_values_json(&plan_run_keys, &pc.run));
	for (size_t j = 0; j < matrix_cell_n_params(m, i); j++) {
		const char *k = matrix_cell_key(m, i, j);
		if (!json_object_get(params, k))
			json_object_set_new(params, k, json_string(matrix_cell_value(m, i, j)));
	}
	return params;
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
