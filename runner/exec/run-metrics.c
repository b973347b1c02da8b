/* SPDX-License-Identifier: MIT */
/*
 * The metrics of a run beyond its phase times (the metric table, metrics.h in results.h): what the
 * method reported (method_metric(), e.g. write_throughput) and what the executor samples of the
 * guest through the machine (machine_sample): the host allocation of the target image before
 * prepare, after finalize and after the data was deleted and trimmed, and the CPU time of the QEMU
 * process and of the guest over the transfer phase. Sampling happens outside the timed phases.
 */
#include <math.h>

#include "exec-int.h"

void metrics_run_start(struct exec *x, struct xcell *c)
{
	json_decref(c->ctx.metrics);
	c->ctx.metrics = NULL;
	struct machine_sample none = { NAN, NAN, NAN };
	c->smp = (struct xsamples){ none, none, none, none, none };
	machine_sample(x->machine, c->group->guest, MACHINE_SAMPLE_ALLOC, &c->smp.before);
}

void metrics_transfer(struct exec *x, struct xcell *c, bool end)
{
	machine_sample(x->machine, c->group->guest, MACHINE_SAMPLE_CPU,
		       end ? &c->smp.xfer1 : &c->smp.xfer0);
}

void metrics_finalized(struct exec *x, struct xcell *c)
{
	machine_sample(x->machine, c->group->guest, MACHINE_SAMPLE_ALLOC, &c->smp.after);
}

/* After a run that succeeded: delete its data and trim, where the disk allows discard. */
void metrics_reclaim(struct exec *x, struct xcell *c)
{
	if (run_interrupted() || !c->group->guest)
		return;
	_cleanup_free_ char *err = NULL;
	int rc = machine_reclaim(x->machine, c->group->guest, &err);
	if (rc > 0)
		machine_sample(x->machine, c->group->guest, MACHINE_SAMPLE_ALLOC, &c->smp.deleted);
	else if (rc < 0 && x->o->verbose)
		progress_line(x->o, "%s: no alloc_deleted: %s", c->pc.id, err);
}

static void put(json_t *o, const char *name, double v)
{
	if (!isfinite(v))
		return;
	json_object_set_new(o, name, json_real(v));
}

/* The run's metrics: the method's, then the executor's; every name is described in the file. */
void metrics_record(struct exec *x, struct xcell *c, struct result_run *rr)
{
	const struct xsamples *s = &c->smp;
	json_t *o = c->ctx.metrics ? json_deep_copy(c->ctx.metrics) : json_object();
	put(o, "alloc_before", s->before.alloc_bytes);
	put(o, "alloc_after", s->after.alloc_bytes);
	put(o, "alloc_growth", s->after.alloc_bytes - s->before.alloc_bytes);
	put(o, "alloc_deleted", s->deleted.alloc_bytes);
	put(o, "cpu_guest", s->xfer1.cpu_guest_s - s->xfer0.cpu_guest_s);
	put(o, "cpu_qemu", s->xfer1.cpu_qemu_s - s->xfer0.cpu_qemu_s);
	if (c->group && c->group->canary_host > 0)
		put(o, "canary_host", c->group->canary_host);
	if (c->group && c->group->canary_guest > 0)
		put(o, "canary_guest", c->group->canary_guest);
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
	{
		const struct metric_def *d = result_metric_def_find(k);
		if (!results_find_metric(x->r, k))
			results_set_metric(x->r, k, d ? d->unit : "", d ? d->higher_better : false);
	}
	json_decref(rr->metrics);
	rr->metrics = json_object_size(o) ? o : NULL;
	if (!rr->metrics)
		json_decref(o);
}
