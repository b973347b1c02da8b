/* SPDX-License-Identifier: MIT */
/* What every machine shares: the guest operations' errors and results, and the verbs built on
 * them (machine.h). */
#include "machine.h"

#include <stdarg.h>
#include <stdlib.h>

#include "run.h"
#include "util.h"

void machine_err_clear(struct machine_err *e)
{
	free(e->msg);
	free(e->detail);
	*e = (struct machine_err){ 0 };
}

int machine_err_set(struct machine_err *e, enum machine_err_kind kind, const char *fmt, ...)
{
	va_list ap;
	machine_err_clear(e);
	e->kind = kind;
	va_start(ap, fmt);
	e->msg = xvasprintf(fmt, ap);
	va_end(ap);
	return -1;
}

void machine_peer_config(const struct machine_config *c, struct plan_disk *disk,
			 struct machine_config *out)
{
	static const struct method_boot_needs nic = { .nic = true };
	*disk = (struct plan_disk){ .e = { .name = (char *)"peer" },
				    .kind = PLAN_DISK_TMPFS,
				    .size = c->needs->peer->memory / 100 * METHOD_GUEST_STAGE_PCT };
	*out = (struct machine_config){ .vm = c->needs->peer, .disk = disk, .needs = &nic };
}

void machine_exec_result_clear(struct machine_exec_result *r)
{
	free(r->out);
	free(r->err);
	*r = (struct machine_exec_result){ 0 };
}

void machine_proc_status_clear(struct machine_proc_status *st)
{
	free(st->out);
	free(st->err);
	*st = (struct machine_proc_status){ 0 };
}

const struct machine_guest_ops *machine_guest_ops_for(struct machine *m, struct machine_guest *g,
						      bool has_op, const char *what,
						      struct machine_err *e)
{
	if (!has_op) {
		machine_err_set(e, MACHINE_ERR_UNSUPPORTED, "this machine (%s) cannot %s",
				m ? m->ops->name : "none", what);
		return NULL;
	}
	if (!g) {
		machine_err_set(e, MACHINE_ERR_FAILED, "cannot %s: no guest is running", what);
		return NULL;
	}
	if (run_deadline_passed()) {
		machine_err_set(e, MACHINE_ERR_TIMEOUT, "cannot %s: the run timeout (%u ms) passed",
				what, run_deadline_timeout_ms());
		return NULL;
	}
	return m->ops->guest;
}

unsigned machine_timeout_ms(unsigned timeout_ms)
{
	return run_deadline_clamp_ms(timeout_ms);
}

int machine_guest_exec(struct machine *m, struct machine_guest *g, const char *const *argv,
		       const void *input, size_t input_len, unsigned timeout_ms,
		       struct machine_exec_result *r, struct machine_err *e)
{
	*r = (struct machine_exec_result){ 0 };
	const struct machine_guest_ops *o = MACHINE_GUEST_OP_(m, g, exec, "run a guest command", e);
	if (!o)
		return -1;
	unsigned t = machine_timeout_ms(timeout_ms);
	int rc = o->exec(m, g, argv, input, input_len, t, r, e);
	/* cut short by the run's deadline: say so, not "did not finish within 873 ms" */
	if (rc < 0 && t < timeout_ms && e->kind == MACHINE_ERR_TIMEOUT) {
		char *msg = xasprintf("%s (the run timeout (%u ms) passed)", e->msg,
				      run_deadline_timeout_ms());
		free(e->msg);
		e->msg = msg;
	}
	return rc;
}

int machine_guest_run(struct machine *m, struct machine_guest *g, const char *const *argv,
		      unsigned timeout_ms, char **out, struct machine_err *e)
{
	struct machine_exec_result r;
	if (machine_guest_exec(m, g, argv, NULL, 0, timeout_ms, &r, e) < 0)
		return -1;
	if (r.exit_code != 0) {
		/* the program's own words, without the trailing newline */
		size_t n = r.err_len;
		while (n > 0 && r.err[n - 1] == '\n')
			n--;
		if (r.signal)
			machine_err_set(e, MACHINE_ERR_FAILED,
					"'%s' in the guest was killed by signal %d", argv[0],
					r.signal);
		else
			machine_err_set(e, MACHINE_ERR_FAILED,
					"'%s' in the guest exited with status %d%s%.*s", argv[0],
					r.exit_code, n ? ": " : "", (int)n, r.err);
		machine_exec_result_clear(&r);
		return -1;
	}
	if (out)
		*out = TAKE_PTR(r.out);
	machine_exec_result_clear(&r);
	return 0;
}

int machine_guest_sh(struct machine *m, struct machine_guest *g, const char *cmd,
		     unsigned timeout_ms, char **out, struct machine_err *e)
{
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	return machine_guest_run(m, g, argv, timeout_ms, out, e);
}
