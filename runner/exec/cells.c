/* SPDX-License-Identifier: MIT */
/*
 * A cell before its first run (exec-int.h): its method, the skip reasons, its dataset, the
 * boot-time devices its method asks for, and the VM group it joins.
 */
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "dataset-plan.h"
#include "exec-int.h"
#include "keys.h"
#include "rules.h"

static void needs_clear(struct method_boot_needs *n)
{
	free(n->share_dir);
	free(n->share_tag);
	for (size_t i = 0; i < n->n_channels; i++)
		free(n->channels[i]);
	free(n->channels);
	for (size_t i = 0; i < n->n_disks; i++) {
		free((char *)n->disks[i].path);
		free((char *)n->disks[i].serial);
	}
	free(n->disks);
	memset(n, 0, sizeof(*n));
}

void cell_begin(struct exec *x, struct xcell *c)
{
	if (c->started_ns)
		return;
	c->started_ns = now_ns();
	rcell(x, c)->started_ms = results_now_ms();
}

static void skip_cell(struct exec *x, struct xcell *c, const char *why)
{
	struct result_cell *rc = rcell(x, c);
	rc->status = STATUS_SKIPPED;
	free(rc->skip_reason);
	rc->skip_reason = xstrdup(why);
	cell_begin(x, c);
	finish_cell(x, c);
}

/* A cell that cannot start: the error, and the cell is over. */
static void fail_cell(struct exec *x, struct xcell *c, enum result_error_kind kind, const char *msg,
		      const char *agent_msg)
{
	cell_begin(x, c);
	cell_error(x, c, kind, -1, -1, msg, agent_msg, NULL);
	finish_cell(x, c);
}

/* Why this cell cannot run with this ferry on this host (caller frees), or NULL. */
static char *skip_reason(const struct xcell *c)
{
	if (!c->ops)
		return xasprintf("method type '%s' is not built into this ferry",
				 plan_method_type_name(c->pc.method));
	/* what no host can do (vfat/ntfs targets, guest OS, archives): the plan's rules table;
	 * what the host lacks, the method's supports() says next */
	return plan_rules_skip(NULL, &c->pc);
}

static void dataset_provenance(struct exec *x, const struct xcell *c)
{
	const struct plan_entry *e = &c->pc.dataset->e;
	/* a swept dataset ("dataset.files=100") is another dataset than the entry as written */
	_cleanup_free_ char *name =
	    e->sweep ? xasprintf("%s{%s}", e->name, e->sweep) : xstrdup(e->name);
	for (size_t i = 0; i < x->r->provenance.n_datasets; i++)
		if (STREQ(x->r->provenance.datasets[i].name, name))
			return;
	char hex[65];
	sha256_hex(c->man->digest, hex);
	results_add_dataset(x->r, name, hex, key_entry_json(&plan_dataset_keys, &c->pc.dataset->e));
}

static char *key_append(char *k, const char *fmt, const char *v)
{
	_cleanup_free_ char *part = xasprintf(fmt, v);
	char *k2 = xasprintf("%s%s", k, part);
	free(k);
	return k2;
}

/*
 * The target disk's part of a group key: the disk (a swept one is another disk than the entry as
 * written), or under run.vm shared, for a disk the machine mounts or plugs only after boot, what
 * of it the boot configuration holds (machine_disk_boot_key()): the cells of such disks share a
 * guest, which switches its target between them (machine_reset's disk; run_group keeps the
 * cells of one disk together).
 */
/* Whether cells with the same VM configuration share a boot: run.vm shared, or blocks. */
static bool shares_boot(const struct xcell *c)
{
	return c->pc.run.vm == PLAN_VM_SHARED || c->pc.run.boots.min > 0;
}

static char *disk_key(struct exec *x, const struct xcell *c)
{
	const struct plan_disk *d = c->pc.disk;
	_cleanup_free_ char *boot = shares_boot(c) ? machine_disk_boot_key(x->machine, d) : NULL;
	if (boot)
		return xasprintf("after-boot%s%s", *boot ? ":" : "", boot);
	return xasprintf("%s{%s}", d->e.name, d->e.sweep ? d->e.sweep : "");
}

/* Cells with equal keys share a guest (run.vm shared) */
static char *group_key(struct exec *x, const struct xcell *c)
{
	const struct method_boot_needs *n = &c->needs;
	_cleanup_free_ char *disk = disk_key(x, c);
	/* a swept vm (e.sweep) is another guest than the entry as written */
	char *k = xasprintf("vm=%s{%s}|disk=%s|share=%s:%s:%d:%d:%d|nic=%d", c->pc.vm->e.name,
			    c->pc.vm->e.sweep ? c->pc.vm->e.sweep : "", disk,
			    n->share_dir ? n->share_dir : "", n->share_tag ? n->share_tag : "",
			    (int)n->share_mode, (int)n->share_readonly, (int)n->share_driver,
			    (int)n->nic);
	for (size_t i = 0; i < n->n_channels; i++)
		k = key_append(k, "|ch=%s", n->channels[i]);
	for (size_t i = 0; i < n->n_disks; i++)
		k = key_append(k, "|d=%s", n->disks[i].path);
	if (n->peer)
		k = key_append(k, "|peer=%s", n->peer->e.name);
	if (c->pc.run.fresh == PLAN_FRESH_RESTORE)
		k = key_append(k, "%s", "|fresh=restore");
	if (!shares_boot(c))
		k = key_append(k, "|cell=%s", c->pc.id);
	return k;
}

static void join_group(struct exec *x, struct xcell *c)
{
	_cleanup_free_ char *key = group_key(x, c);
	for (size_t i = 0; i < x->n_groups; i++)
		if (STREQ(x->groups[i]->key, key)) {
			c->group = x->groups[i];
			return;
		}
	struct xgroup *g = xcalloc(1, sizeof(*g));
	g->key = TAKE_PTR(key);
	g->cfg = (struct machine_config){ .vm = c->pc.vm,
					  .disk = c->pc.disk,
					  .needs = &c->needs,
					  .restore = c->pc.run.fresh == PLAN_FRESH_RESTORE };
	x->groups = xrealloc(x->groups, (x->n_groups + 1) * sizeof(*x->groups));
	x->groups[x->n_groups++] = g;
	c->group = g;
}

static void ctx_init(struct exec *x, struct xcell *c)
{
	struct method_ctx *ctx = &c->ctx;
	*ctx = (struct method_ctx){
		.plan = x->p,
		.cell = &c->pc,
		.method = c->pc.method,
		.disk = c->pc.disk,
		.pds = c->pc.dataset,
		.spec = &c->spec,
		.run = x->run,
		.cell_dir = c->cell_dir,
		.timeout_ms = ns_to_ms(c->pc.run.timeout),
	};
	machine_bind(x->machine, NULL, ctx);
	method_error_clear(&ctx->err);
	c->ctx_ready = true;
}

/* Everything before the cell's first run; a cell that cannot run is over when this returns. */
void prepare_cell(struct exec *x, struct xcell *c)
{
	c->ops = method_of(c->pc.method);
	_cleanup_free_ char *why = skip_reason(c);
	if (why) {
		skip_cell(x, c, why);
		return;
	}
	dataset_spec_from_plan(c->pc.dataset, &c->spec);
	c->cell_dir = run_path(x->run, "cells", c->pc.id);
	mkdir(c->cell_dir, 0755);
	ctx_init(x, c);
	struct method_ctx *ctx = &c->ctx;
	if ((c->ops->supports && (why = c->ops->supports(ctx))) ||
	    (why = machine_supports(x->machine, &c->pc))) {
		skip_cell(x, c, why);
		return;
	}
	/* the host capacity check (disk space, memory) goes here */
	_cleanup_free_ char *err = NULL;
	/* the XXH3-128s beside the SHA-256s: one more read of the dataset on the host, checked
	 * against its SHA-256s, so that a guest with ferry-sum verifies at XXH3's speed */
	if (dataset_get(&c->spec, NULL, &c->dinfo, &c->man, &err) < 0 ||
	    dataset_add_xxh128(c->dinfo.dir, c->man, &err) < 0) {
		fail_cell(x, c, ERROR_INFRA, err, NULL);
		return;
	}
	if (x->o->verbose)
		progress_line(x->o, "dataset '%s' %s in %s", c->pc.dataset->e.name,
			      c->dinfo.generated ? "generated" : "cached", c->dinfo.dir);
	ctx->dataset_dir = c->dinfo.dir;
	ctx->manifest = c->man;
	dataset_provenance(x, c);
	if (c->ops->add_devices && c->ops->add_devices(ctx, &c->needs) < 0) {
		fail_cell(x, c, ctx->err.kind, ctx->err.message, ctx->err.guest_message);
		method_error_clear(&ctx->err);
		return;
	}
	join_group(x, c);
}

void cell_free(struct xcell *c)
{
	if (c->ctx_ready && c->ops && c->ops->free_state)
		c->ops->free_state(&c->ctx);
	method_error_clear(&c->ctx.err);
	json_decref(c->ctx.metrics);
	manifest_free(c->man);
	dataset_info_clear(&c->dinfo);
	needs_clear(&c->needs);
	free(c->samples);
	free(c->cell_dir);
}

void group_free(struct xgroup *g)
{
	free(g->key);
	free(g);
}
