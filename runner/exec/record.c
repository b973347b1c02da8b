/* SPDX-License-Identifier: MIT */
/* The executor's results bookkeeping and progress messages (exec-int.h). */
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "criteria.h"
#include "exec-int.h"
#include "keys.h"
#include "proc.h"

struct result_cell *rcell(struct exec *x, const struct xcell *c)
{
	return &x->r->cells[c->rc];
}

/* The last line of a guest's message that is not blank (proc_last_line()), at most 200 bytes of
 * it, or NULL. (The terminal's line callback shows its control characters escaped.) */
static char *guest_said(const char *msg)
{
	if (!msg)
		return NULL;
	char *l = proc_last_line(msg, strlen(msg));
	if (!*l || strlen(l) > 200) {
		char *cut = *l ? xasprintf("%.200s...", l) : NULL;
		free(l);
		return cut;
	}
	return l;
}

/* An error of cell c, with the console tail of its guest when there is one. */
struct result_error *cell_error(struct exec *x, struct xcell *c, enum result_error_kind kind,
				int run, int phase, const char *msg, const char *agent_msg,
				const char *libvirt_msg)
{
	struct result_error *e = result_cell_add_error(rcell(x, c), kind, "%s", msg);
	e->run = run;
	e->phase = phase;
	if (agent_msg)
		e->agent_message = xstrdup(agent_msg);
	if (libvirt_msg)
		e->libvirt_message = xstrdup(libvirt_msg);
	if (c->group && c->group->guest) {
		char *tail = machine_console_tail(x->machine, c->group->guest, 30);
		if (tail && *tail)
			e->serial_tail = tail;
		else
			free(tail);
	}
	return e;
}

json_t *cell_params(const struct exec *x, size_t i, const struct plan_cell *pc)
{
	json_t *params = json_object();
	json_object_set_new(params, "vm", key_entry_json(&plan_vm_keys, &pc->vm->e));
	json_object_set_new(params, "disk", key_entry_json(&plan_disk_keys, &pc->disk->e));
	json_object_set_new(params, "dataset", key_entry_json(&plan_dataset_keys, &pc->dataset->e));
	json_object_set_new(params, "method", key_entry_json(&plan_method_keys, &pc->method->e));
	json_object_set_new(params, "run", key_values_json(&plan_run_keys, &pc->run));
	for (size_t j = 0; j < matrix_cell_n_params(x->m, i); j++) {
		const char *k = matrix_cell_key(x->m, i, j);
		if (!json_object_get(params, k))
			json_object_set_new(params, k, json_string(matrix_cell_value(x->m, i, j)));
	}
	return params;
}

int write_results(struct exec *x)
{
	if (!x->o->results_path)
		return 0;
	_cleanup_free_ char *err = NULL;
	x->r->provenance.finished_ms = results_now_ms();
	uint64_t t = now_ns();
	int rc = results_write(x->r, x->o->results_path, &err);
	x->res->time.results += secs(now_ns() - t);
	if (rc < 0) {
		exec_error(x->o, "%s", err);
		return -1;
	}
	return 0;
}

/* The status of a finished cell from its errors (criteria only when the runs were clean). */
static enum result_status cell_status(struct exec *x, struct xcell *c, struct result_cell *rc)
{
	bool infra = false, integrity = false;
	for (size_t i = 0; i < rc->n_errors; i++) {
		if (rc->errors[i].kind == ERROR_INTEGRITY)
			integrity = true;
		else
			infra = true;
	}
	size_t crit = 0;
	if (!infra && !integrity)
		crit = criteria_check(x->p->criteria, x->p->n_criteria, &c->pc, &rc->stats, rc);
	return infra ? STATUS_ERROR : integrity || crit ? STATUS_FAILED : STATUS_PASSED;
}

/* A cell is over: statistics, criteria, status, results file. */
void finish_cell(struct exec *x, struct xcell *c)
{
	if (c->done)
		return;
	c->done = true;
	x->n_finished++;
	struct result_cell *rc = rcell(x, c);
	rc->finished_ms = results_now_ms();
	if (rc->status == STATUS_SKIPPED) {
		progress_line(x->o, "[%zu/%zu] %s: skipped: %s", x->n_finished, x->n_active,
			      c->pc.id, rc->skip_reason);
		write_results(x);
		return;
	}
	results_cell_compute_stats(rc);
	rc->status = cell_status(x, c, rc);
	if (rc->status != STATUS_PASSED && x->o->fail_fast) {
		x->stop = true;
		x->res->stopped = true;
	}
	_cleanup_free_ char *said = rc->n_errors ? guest_said(rc->errors[0].agent_message) : NULL;
	progress_line(x->o, "[%zu/%zu] %s: %s%s%s%s%s", x->n_finished, x->n_active, c->pc.id,
		      result_status_name(rc->status), rc->n_errors ? ": " : "",
		      rc->n_errors ? rc->errors[0].message : "", said ? "; the guest said: " : "",
		      said ? said : "");
	write_results(x);
}

/* A short duration for the status line: 45s, 3m05s, 1h02m. */
static char *short_duration(double s)
{
	unsigned long t = s > 0 ? (unsigned long)(s + 0.5) : 0;
	if (t < 60)
		return xasprintf("%lus", t);
	if (t < 3600)
		return xasprintf("%lum%02lus", t / 60, t % 60);
	return xasprintf("%luh%02lum", t / 3600, t / 60 % 60);
}

/* The cell's place among the cells this run measures (1-based). */
static size_t cell_ordinal(const struct exec *x, const struct xcell *c)
{
	size_t k = 0;
	for (size_t i = 0; i < x->n_cells && &x->cells[i] != c; i++)
		k += x->cells[i].active;
	return k + 1;
}

/*
 * The status line: where the run is, then the cell's id last, so that a terminal narrower than
 * the line cuts the id, not the numbers: "[3/8] run 2/3 transfer  41s, eta 1m05s  vm=...". In
 * a run of blocks, cells finish together at the end: the cell's place, the block, and its run
 * of the runs planned so far.
 */
void progress(struct exec *x, const struct xcell *c, const char *phase)
{
	if (!x->o->status)
		return;
	const struct plan_repeat *rp = &c->pc.run.repeat;
	double eta = exec_eta(x);
	_cleanup_free_ char *el = short_duration(secs(now_ns() - x->t0));
	_cleanup_free_ char *left = isnan(eta) ? NULL : short_duration(eta);
	_cleanup_free_ char *where =
	    x->blocks ? xasprintf("[%zu/%zu] block %" PRId64 "/%" PRIu64 " run %u/%" PRIu64,
				  cell_ordinal(x, c), x->n_active, x->block, exec_planned_blocks(x),
				  c->runs_done + 1, exec_planned_runs(x, c) + c->pc.run.warmup)
		      : xasprintf("[%zu/%zu] run %u/%" PRIu64, x->n_finished + 1, x->n_active,
				  c->runs_done + 1, c->pc.run.warmup + rp->max);
	_cleanup_free_ char *text = xasprintf("%s %s  %s%s%s  %s", where, phase, el,
					      left ? ", eta " : "", left ? left : "", c->pc.id);
	x->o->status(x->o->ud, text);
}

/* Formats a message and hands it to one of the options' callbacks (line or error), if set. */
static void say(void (*cb)(void *ud, const char *text), void *ud, const char *fmt, va_list ap)
    _printf_(3, 0);
static void say(void (*cb)(void *ud, const char *text), void *ud, const char *fmt, va_list ap)
{
	if (!cb)
		return;
	_cleanup_free_ char *text = xvasprintf(fmt, ap);
	cb(ud, text);
}

void progress_line(const struct exec_opts *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say(o->line, o->ud, fmt, ap);
	va_end(ap);
}

void exec_error(const struct exec_opts *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say(o->error, o->ud, fmt, ap);
	va_end(ap);
}
