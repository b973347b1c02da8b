/* SPDX-License-Identifier: MIT */
/*
 * One run of a cell (exec-int.h): the guest of its group (booted when needed), the landing place
 * reset, the timed phases of the method, verification, cleanup, and the run's record.
 */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "exec-int.h"

static const char *const phase_names[] = { "prepare", "transfer", "finalize", "verify", "cleanup" };

void group_destroy(struct exec *x, struct xgroup *g)
{
	uint64_t t = now_ns();
	machine_destroy(x->machine, g->guest);
	g->guest = NULL;
	g->suspended = false;
	x->res->time.teardown += secs(now_ns() - t);
}

/* Which guest ran the cell (its OS, userland, init and /bin/sh), as "guest" in observed. */
static void record_guest(struct result_cell *rc, const struct machine_guest *mg)
{
	if (!mg || !mg->userland)
		return;
	if (!rc->observed)
		rc->observed = json_object();
	json_object_set_new(rc->observed, "guest",
			    json_pack("{s:s?, s:s, s:s?, s:s?}", "os", mg->os, "userland",
				      mg->userland, "init", mg->init, "sh", mg->sh));
}

static int group_boot(struct exec *x, struct xgroup *g, char **err, char **detail)
{
	x->res->boots++;
	uint64_t t0 = now_ns();
	int rc = machine_boot(x->machine, &g->cfg, &g->guest, err, detail);
	double s = secs(now_ns() - t0), probe = rc == 0 ? g->guest->probe_ms / 1000.0 : 0.0;
	x->res->time.kvm_probe += probe;
	x->res->time.boots += s - probe;
	if (rc < 0)
		return -1;
	/* runs of one boot share its luck: `ferry compare` takes a boot, not a run, as a sample */
	g->boot = ++x->last_boot;
	machine_describe(x->machine, g->guest, &x->r->provenance);
	canary_measure(x, g);
	if (g->guest->fresh_note)
		progress_line(x->o, "%s boots instead of restoring a saved state: %s", g->key,
			      g->guest->fresh_note);
	if (x->o->verbose)
		progress_line(x->o, "%s %s in %.1f s (%s)",
			      g->guest->restored ? "restored" : "booted", g->guest->name,
			      g->guest->boot_ms / 1000.0, g->key);
	return 0;
}

/* After a failure: is the guest still usable? Destroy it when not, so the next cell re-boots. */
static void group_check(struct exec *x, struct xgroup *g)
{
	if (!g->guest || machine_healthy(x->machine, g->guest))
		return;
	if (x->o->verbose)
		progress_line(x->o, "the guest %s broke; the next cell boots a new one",
			      g->guest->name);
	group_destroy(x, g);
}

/* A guest booted and reset for the next run of c. Returns 0, or -1 with the cell's error. */
static int guest_ready(struct exec *x, struct xcell *c, bool warmup)
{
	struct xgroup *g = c->group;
	_cleanup_free_ char *err = NULL, *detail = NULL;
	progress(x, c, "boot");
	if (!g->guest) {
		g->cfg.disk = c->pc.disk;
		if (group_boot(x, g, &err, &detail) < 0) {
			cell_error(x, c, ERROR_INFRA, -1, -1, err, NULL, detail);
			return -1;
		}
	}
	progress(x, c, "reset");
	/* a guest shared by cells of several disks (cells.c disk_key) switches to c's */
	bool sw = !machine_disk_same(g->cfg.disk, c->pc.disk);
	struct machine_reset r = {
		.disk = c->pc.disk,
		.fresh_disk = c->pc.run.disk == PLAN_DISK_FRESH,
		.drop_caches = !warmup && c->pc.run.caches == PLAN_CACHES_DROP,
	};
	uint64_t t0 = now_ns();
	int rc = machine_reset(x->machine, g->guest, &r, &err);
	double s = secs(now_ns() - t0);
	*(sw ? &x->res->time.switches : &x->res->time.resets) += s;
	if (sw) {
		x->res->switches++;
		if (rc == 0 && x->o->verbose)
			progress_line(x->o, "switched %s from disk '%s' to '%s' in %.1f s",
				      g->guest->name, g->cfg.disk->e.name, c->pc.disk->e.name, s);
		if (rc == 0)
			g->cfg.disk = c->pc.disk;
	}
	if (rc < 0) {
		cell_error(x, c, ERROR_INFRA, -1, -1, err, NULL, NULL);
		group_check(x, g);
		return -1;
	}
	return 0;
}

static void hook_at(struct exec *x, struct xcell *c, enum machine_point point, uint64_t elapsed_ns)
{
	struct machine_where w = {
		.point = point,
		.cell = c->pc.id,
		.run_index = c->ctx.run_index,
		.warmup = c->ctx.warmup,
		.timeout_ms = c->ctx.timeout_ms,
		.elapsed_ns = elapsed_ns,
	};
	machine_hook(x->machine, c->group->guest, &w);
}

static void hook(struct exec *x, struct xcell *c, enum machine_point point)
{
	hook_at(x, c, point, 0);
}

/* One timed phase; ph receives its seconds (0 for a phase the method does not have). */
static int phase(struct exec *x, struct xcell *c, int i, int (*fn)(struct method_ctx *), double *ph)
{
	hook(x, c, (enum machine_point)(MACHINE_BEFORE_PREPARE + i));
	progress(x, c, phase_names[i]);
	method_error_clear(&c->ctx.err);
	bool xfer = i == PHASE_TRANSFER && fn;
	if (xfer)
		metrics_transfer(x, c, false);
	uint64_t t = now_ns();
	if (xfer)
		hook(x, c, MACHINE_DURING_TRANSFER);
	int rc = fn ? fn(&c->ctx) : 0;
	if (xfer && rc == 0)
		hook_at(x, c, MACHINE_END_TRANSFER, now_ns() - t);
	*ph = fn ? secs(now_ns() - t) : 0.0;
	if (xfer)
		metrics_transfer(x, c, true);
	return rc;
}

static int verify_default(struct method_ctx *ctx)
{
	bool symlinks = true;
	return method_verify_dir(ctx, ctx->landing, symlinks);
}

/*
 * prepare, transfer, finalize, verify. Returns the failed phase or -1; *integrity_ok is false
 * when verification found the data not intact.
 */
static int run_phases(struct exec *x, struct xcell *c, double ph[PHASE_COUNT], bool *integrity_ok)
{
	struct method_ctx *ctx = &c->ctx;
	int (*hooks[])(struct method_ctx *) = { c->ops->prepare, c->ops->transfer,
						c->ops->finalize };
	*integrity_ok = true;
	for (int i = 0; i < 3; i++) {
		if (run_interrupted()) {
			method_fail(ctx, ERROR_INFRA, NULL, "interrupted");
			return i;
		}
		if (c->ops->before_phase) {
			/* the method's untimed step: in no phase and no total */
			method_error_clear(&ctx->err);
			uint64_t t = now_ns();
			int rc = c->ops->before_phase(ctx, (enum result_phase)i);
			x->res->time.unmeasured += secs(now_ns() - t);
			if (rc < 0)
				return i;
		}
		if (phase(x, c, i, hooks[i], &ph[i]) < 0)
			return i;
	}
	metrics_finalized(x, c);
	if (phase(x, c, PHASE_VERIFY, c->ops->verify ? c->ops->verify : verify_default,
		  &ph[PHASE_VERIFY]) < 0) {
		*integrity_ok = ctx->err.kind != ERROR_INTEGRITY;
		return PHASE_VERIFY;
	}
	return -1;
}

/* cleanup (always); keeps the error of the failed phase in *ferr, cleanup's own error only when
 * nothing else failed. Returns the failed phase. */
static int run_cleanup(struct exec *x, struct xcell *c, int failed, double *ph,
		       struct method_error *ferr)
{
	struct method_ctx *ctx = &c->ctx;
	*ferr = ctx->err;
	memset(&ctx->err, 0, sizeof(ctx->err));
	progress(x, c, "cleanup");
	uint64_t t = now_ns();
	int crc = c->ops->cleanup ? c->ops->cleanup(ctx) : 0;
	*ph = c->ops->cleanup ? secs(now_ns() - t) : 0.0;
	if (crc < 0 && failed < 0) {
		method_error_clear(ferr);
		*ferr = ctx->err;
		memset(&ctx->err, 0, sizeof(ctx->err));
		return PHASE_CLEANUP;
	}
	method_error_clear(&ctx->err);
	return failed;
}

static void ctx_for_run(struct exec *x, struct xcell *c, bool warmup)
{
	struct method_ctx *ctx = &c->ctx;
	machine_bind(x->machine, c->group->guest, ctx);
	ctx->run_index = c->runs_done;
	ctx->warmup = warmup;
	ctx->bytes = c->man->bytes;
	ctx->files = c->man->files;
	ctx->verify_hash = NULL;
	ctx->timeout_ms = ns_to_ms(c->pc.run.timeout);
}

/* The run took longer than the run timeout: the cell's error. */
static void run_timed_out(struct exec *x, struct xcell *c, unsigned ri, uint64_t run_ns)
{
	_cleanup_free_ char *lim = format_duration(c->pc.run.timeout);
	_cleanup_free_ char *msg =
	    xasprintf("run %u took %.1f s, longer than the run timeout %s", ri, secs(run_ns), lim);
	cell_error(x, c, ERROR_TIMEOUT, (int)ri, -1, msg, NULL, NULL);
}

static void run_failed(struct exec *x, struct xcell *c, unsigned ri, int failed,
		       const struct method_error *e)
{
	_cleanup_free_ char *msg = xasprintf("run %u, %s: %s", ri, phase_names[failed],
					     e->message ? e->message : "failed without a message");
	cell_error(x, c, e->kind, (int)ri, failed, msg, e->guest_message, e->libvirt_message);
	if (!run_interrupted())
		group_check(x, c->group);
}

static void run_succeeded(struct exec *x, struct xcell *c, const struct result_run *rr, bool warmup)
{
	if (warmup) {
		c->warm_done++;
	} else {
		c->samples = xrealloc(c->samples, (c->n_samples + 1) * sizeof(double));
		c->samples[c->n_samples++] = rr->total;
		c->measured_s += rr->total;
		x->res->measured_s += rr->total;
	}
	if (!x->o->live_status)
		progress_line(x->o,
			      "%s run %u%s: total %.3f s (prepare %.3f, transfer %.3f, finalize "
			      "%.3f; verify %.3f, cleanup %.3f)",
			      c->pc.id, rr->index, warmup ? " (warmup)" : "", rr->total,
			      rr->phase[0], rr->phase[1], rr->phase[2], rr->phase[3], rr->phase[4]);
}

/* Returns 0 when the run was recorded, -1 when the cell failed (error recorded). */
int do_run(struct exec *x, struct xcell *c)
{
	bool warmup = c->warm_done < c->pc.run.warmup;
	double cu0, cs0, cu1, cs1;
	/* the run's cost for the ETA (eta.c): its wall time less a boot it waited for */
	uint64_t w0 = now_ns();
	double boots0 = x->res->time.boots + x->res->time.kvm_probe;
	results_cpu_now(&cu0, &cs0);
	if (guest_ready(x, c, warmup) < 0)
		return -1;
	ctx_for_run(x, c, warmup);
	metrics_run_start(x, c);
	unsigned ri = result_cell_add_run(rcell(x, c), warmup)->index;
	double ph[PHASE_COUNT];
	for (int i = 0; i < PHASE_COUNT; i++)
		ph[i] = NAN;
	c->group->guest->dirty = true;
	uint64_t run_start = now_ns();
	rcell(x, c)->runs[ri].started_ms = results_now_ms();
	bool integrity_ok;
	/* every guest operation and transfer loop of the phases ends at the run timeout (a guest
	   answering a byte at a time cannot hold the run: issue 24 class 8); cleanup runs after */
	run_set_deadline(c->pc.run.timeout ? run_start + c->pc.run.timeout : 0, c->pc.run.timeout);
	int failed = run_phases(x, c, ph, &integrity_ok);
	run_set_deadline(0, 0);
	struct method_error ferr;
	failed = run_cleanup(x, c, failed, &ph[PHASE_CLEANUP], &ferr);
	uint64_t run_ns = now_ns() - run_start;
	if (failed < 0)
		metrics_reclaim(x, c);

	struct result_run *rr = &rcell(x, c)->runs[ri];
	memcpy(rr->phase, ph, sizeof(ph));
	rr->total = result_run_total(rr);
	rr->bytes = c->ctx.bytes;
	rr->files = c->ctx.files;
	rr->integrity_ok = integrity_ok && failed < 0;
	rr->verify_hash = c->ctx.verify_hash;
	struct exec_time *tm = &x->res->time;
	for (int i = 0; i < 3; i++)
		if (!isnan(ph[i]))
			*(failed < 0 && !warmup ? &tm->measured : &tm->unmeasured) += ph[i];
	tm->verify += isnan(ph[PHASE_VERIFY]) ? 0.0 : ph[PHASE_VERIFY];
	tm->cleanup += isnan(ph[PHASE_CLEANUP]) ? 0.0 : ph[PHASE_CLEANUP];
	rr->boot = c->group->boot;
	rr->block = x->block > 0 ? x->block : -1;
	if (c->group->guest)
		rr->fresh = c->group->guest->restored ? "restore" : "boot";
	metrics_record(x, c, rr);
	if (c->ctx.observed) {
		json_decref(rcell(x, c)->observed);
		rcell(x, c)->observed = json_deep_copy(c->ctx.observed);
	}
	record_guest(rcell(x, c), c->group->guest);
	results_cpu_now(&cu1, &cs1);
	rcell(x, c)->cpu_user_s += cu1 - cu0;
	rcell(x, c)->cpu_sys_s += cs1 - cs0;
	c->runs_done++;
	c->cost_s += secs(now_ns() - w0) - (x->res->time.boots + x->res->time.kvm_probe - boots0);
	c->n_cost++;

	int rc = -1;
	if (failed < 0 && run_ns > c->pc.run.timeout) {
		run_timed_out(x, c, ri, run_ns);
		rr->integrity_ok = false;
	} else if (failed >= 0) {
		run_failed(x, c, ri, failed, &ferr);
	} else {
		run_succeeded(x, c, rr, warmup);
		rc = 0;
	}
	method_error_clear(&ferr);
	return rc;
}
