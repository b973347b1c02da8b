/* SPDX-License-Identifier: MIT */
/* The fake machine (machine-fake.h). */
#include "machine-fake.h"

#include "fake-int.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>

#include "fs.h"
#include "util.h"

void fake_logf(struct machine_fake *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *line = xvasprintf(fmt, ap);
	va_end(ap);
	size_t n = strlen(line);
	f->log = xrealloc(f->log, f->log_len + n + 2);
	memcpy(f->log + f->log_len, line, n);
	f->log_len += n;
	f->log[f->log_len++] = '\n';
	f->log[f->log_len] = '\0';
}

static struct machine_fake *script(struct machine *m)
{
	return ((struct fake_machine *)m)->f;
}

static char *fake_disk_boot_key(struct machine *m, const struct plan_disk *d);

/* Why configuration c cannot be saved (libvirt's reasons, vm_restore_unsupported), or NULL. */
static const char *fake_unsavable(const struct machine_fake *f, const struct machine_config *c)
{
	if (f->no_restore)
		return f->no_restore;
	if (c->needs && c->needs->share_dir)
		return "a shared folder";
	if (c->needs && c->needs->n_channels)
		return "extra virtio-serial channels";
	if (c->needs && c->needs->n_disks)
		return "boot-time disks";
	return NULL;
}

/* machine_config.restore: g restored from its configuration's state (saved at the first need),
 * or booted with fresh_note saying why (the first time for that configuration). */
static void fake_fresh(struct fake_machine *fm, struct fake_guest *g,
		       const struct machine_config *c)
{
	struct machine_fake *f = fm->f;
	_cleanup_free_ char *disk = c->disk ? fake_disk_boot_key(&fm->base, c->disk) : NULL;
	_cleanup_free_ char *key =
	    xasprintf("%s{%s}|%s|nic=%d", c->vm->e.name, c->vm->e.sweep ? c->vm->e.sweep : "",
		      disk ? disk : "?", c->needs ? (int)c->needs->nic : 0);
	struct fake_saved *s = NULL;
	for (size_t i = 0; i < fm->n_saved && !s; i++)
		if (STREQ(fm->saved[i].key, key))
			s = &fm->saved[i];
	if (!s) {
		fm->saved = xrealloc(fm->saved, (fm->n_saved + 1) * sizeof(*fm->saved));
		s = &fm->saved[fm->n_saved++];
		*s = (struct fake_saved){ .key = TAKE_PTR(key) };
		const char *no = fake_unsavable(f, c);
		if (no)
			s->why = xstrdup(no);
		else if (++f->saves == f->fail_save)
			s->why = xasprintf("saving a booted guest failed: fake save %u fails as "
					   "scripted",
					   f->saves);
		else {
			s->number = f->saves;
			f->saved_live++;
			fake_logf(f, "save %u", s->number);
		}
		if (s->why)
			g->base.fresh_note = xstrdup(s->why);
	}
	if (!s->number)
		return;
	g->base.restored = true;
	f->restores++;
	fake_logf(f, "restore %u %u", g->number, s->number);
}

static void fake_destroy(struct machine *m, struct machine_guest *mg);

static int fake_boot(struct machine *m, const struct machine_config *c, struct machine_guest **out,
		     char **err, char **detail)
{
	(void)detail;
	struct machine_fake *f = script(m);
	if (((struct fake_machine *)m)->lost) {
		*err = xasprintf("the fake connection to '%s' is lost",
				 ((struct fake_machine *)m)->uri);
		return -1;
	}
	/* the peer first, from its own vm entry (fake_destroy() ends it with the guest) */
	struct fake_guest *peer = NULL;
	if (c->needs && c->needs->peer) {
		struct plan_disk pd;
		struct machine_config pc;
		machine_peer_config(c, &pd, &pc);
		struct machine_guest *pg = NULL;
		if (fake_boot(m, &pc, &pg, err, detail) < 0)
			return -1;
		peer = (struct fake_guest *)pg;
		peer->peer_disk = pd;
		peer->disk = &peer->peer_disk;
		fake_logf(f, "peer %u", peer->number);
	}
	unsigned number = ++f->boots;
	fake_logf(f, "boot %u", number);
	if (number == f->fail_boot) {
		*err = xasprintf("fake boot %u fails as scripted", number);
		if (peer)
			fake_destroy(m, &peer->base);
		return -1;
	}
	struct fake_guest *g = xcalloc(1, sizeof(*g));
	g->number = number;
	g->disk = c->disk;
	if (f->guests && fake_real_boot((struct fake_machine *)m, g, c, err) < 0) {
		free(g);
		if (peer)
			fake_destroy(m, &peer->base);
		return -1;
	}
	g->base.name = xasprintf("fake-%u", number);
	g->base.boot_ms = peer ? 2 : 1;
	g->peer = peer;
	if (c->restore)
		fake_fresh((struct fake_machine *)m, g, c);
	f->live++;
	if (++f->running > f->max_running)
		f->max_running = f->running;
	*out = &g->base;
	return 0;
}

/* libvirt's rule (machine-libvirt.c lv_disk_boot_key()) on the plan's disk alone */
static char *fake_disk_boot_key(struct machine *m, const struct plan_disk *d)
{
	(void)m;
	if (d->kind == PLAN_DISK_TMPFS)
		return xstrdup("");
	switch (d->bus) {
	case PLAN_BUS_VIRTIO: return xstrdup("");
	case PLAN_BUS_SCSI: return xstrdup("scsi");
	default: return NULL;
	}
}

/* Whether a guest can switch its target between disks a and b. */
static bool fake_switchable(struct machine *m, const struct plan_disk *a, const struct plan_disk *b)
{
	_cleanup_free_ char *ka = fake_disk_boot_key(m, a), *kb = fake_disk_boot_key(m, b);
	return ka && kb && STREQ(ka, kb);
}

static int fake_reset(struct machine *m, struct machine_guest *mg, const struct machine_reset *r,
		      char **err)
{
	struct machine_fake *f = script(m);
	struct fake_machine *fm = (struct fake_machine *)m;
	struct fake_guest *g = (struct fake_guest *)mg;
	const struct plan_disk *old = g->disk;
	if (r->disk && !machine_disk_same(r->disk, g->disk)) {
		fake_logf(f, "switch %u %s", g->number, r->disk->e.name);
		f->switches++;
		if (!g->disk || !fake_switchable(m, g->disk, r->disk))
			f->bad_switches++;
		if (f->switches == f->fail_switch) {
			g->broken = true; /* like libvirt's, which destroys the domain */
			*err = xasprintf("fake switch %u fails as scripted", f->switches);
			return -1;
		}
		g->disk = r->disk;
		g->base.dirty = false; /* a fresh target */
	}
	f->resets++;
	fake_logf(f, "reset %u", g->number);
	if (fm->doomed && ++fm->resets >= f->lost_after)
		fm->lost = true;
	if (fm->lost) {
		*err = xasprintf("the fake connection to '%s' is lost", fm->uri);
		return -1;
	}
	if (g->suspended)
		f->bad_runs++;
	if (f->break_after && g->runs >= f->break_after)
		g->broken = true;
	if (g->broken) {
		*err = xasprintf("the fake guest %u does not answer", g->number);
		return -1;
	}
	if (g->root &&
	    fake_real_reset(fm, g, g->disk != old ? g->disk : NULL, r->fresh_disk, err) < 0) {
		g->broken = true;
		return -1;
	}
	g->runs++;
	g->alloc = f->alloc_fresh;
	f->fresh_disks += r->fresh_disk;
	f->drops += r->drop_caches;
	g->base.dirty = false;
	return 0;
}

static void fake_destroy(struct machine *m, struct machine_guest *mg)
{
	struct machine_fake *f = script(m);
	struct fake_guest *g = (struct fake_guest *)mg;
	if (g->peer)
		fake_destroy(m, &g->peer->base);
	f->destroys++;
	f->live--;
	if (!g->suspended)
		f->running--;
	if (g->root)
		fake_real_destroy((struct fake_machine *)m, g);
	fake_logf(f, "destroy %u", g->number);
	free(g->base.name);
	free(g->base.fresh_note);
	free(g);
}

static bool fake_healthy(struct machine *m, struct machine_guest *mg)
{
	struct fake_guest *g = (struct fake_guest *)mg;
	if (g->peer && !fake_healthy(m, &g->peer->base))
		return false;
	return !g->broken && (!g->root || fake_root_procs(g->root) >= 0);
}

static char *fake_console_tail(struct machine *m, struct machine_guest *mg, unsigned lines)
{
	(void)m;
	(void)lines;
	return xasprintf("fake console of guest %u", ((struct fake_guest *)mg)->number);
}

static void fake_describe(struct machine *m, struct machine_guest *g, struct result_provenance *pv)
{
	struct fake_machine *fm = (struct fake_machine *)m;
	if (g && !pv->accelerator)
		pv->accelerator = xstrdup("fake");
	if (!g && fm->uri) { /* each fake host its own name */
		free(pv->hostname);
		pv->hostname = xasprintf("fake:%s", fm->uri);
	}
}

static bool fake_alive(struct machine *m, char **why)
{
	struct fake_machine *fm = (struct fake_machine *)m;
	if (fm->lost)
		*why = xasprintf("the fake connection to '%s' is lost", fm->uri);
	return !fm->lost;
}

static void fake_bind(struct machine *m, struct machine_guest *mg, struct method_ctx *ctx)
{
	(void)m;
	struct fake_guest *g = (struct fake_guest *)mg;
	if (!g)
		return;
	ctx->landing = MACHINE_LANDING;
	ctx->target_dev = g->target_dev;
	ctx->target_disk = g->target_path ? &g->target : NULL;
}

static char *fake_supports(struct machine *m, const struct plan_cell *pc)
{
	struct fake_machine *fm = (struct fake_machine *)m;
	if (!fm->f->guests)
		return NULL;
	const char *why = fake_root_support();
	return why ? xstrdup(why) : fake_real_supports(fm, pc);
}

static int fake_evict_target(struct machine *m, struct machine_guest *mg, uint64_t *resident,
			     char **err)
{
	(void)m;
	struct fake_guest *g = (struct fake_guest *)mg;
	if (!g->target_path) {
		*err = xstrdup("the fake guest's target is no image");
		return -1;
	}
	return file_cache_evict(g->target_path, resident, err);
}

/* The fake guests share the host's page cache, which the test does not drop: counted only. */
static int fake_drop_caches(struct machine *m, struct machine_guest *mg, char **err)
{
	(void)mg;
	(void)err;
	((struct fake_machine *)m)->f->drops++;
	return 0;
}

/* Block until ms have passed or a signal arrived. */
static void hang(unsigned ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000u;
	while (!run_interrupted() && now_ns() < end) {
		struct pollfd pfd = { .fd = run_signal_fd(), .events = POLLIN };
		uint64_t left = (end - now_ns()) / 1000000u + 1;
		if (poll(&pfd, pfd.fd >= 0 ? 1 : 0, (int)(left > 1000 ? 1000 : left)) < 0 &&
		    errno != EINTR)
			return;
	}
}

static void fake_hook(struct machine *m, struct machine_guest *g, const struct machine_where *w)
{
	struct machine_fake *f = script(m);
	struct fake_guest *fg = (struct fake_guest *)g;
	if (w->point == MACHINE_DURING_TRANSFER && fg) {
		/* what a transfer does to the counters: sampled before and after the phase */
		fg->alloc = f->alloc_fresh + f->alloc_per_run;
		fg->cpu_qemu += f->cpu_qemu_per_run;
		fg->cpu_guest += f->cpu_guest_per_run;
		if (f->stretch_ms)
			hang((w->run_index + 1) * f->stretch_ms);
	}
	if (fg && fg->suspended)
		f->bad_runs++;
	if (w->point == MACHINE_BEFORE_PREPARE)
		fake_logf(f, "run %s #%u%s", w->cell, w->run_index, w->warmup ? " (warmup)" : "");
	if (w->point == MACHINE_BEFORE_VERIFY && fg && fg->root && f->corrupt)
		fake_real_corrupt((struct fake_machine *)m, fg, f->corrupt);
	if (w->point == MACHINE_BEFORE_VERIFY && fg && fg->root && f->before_verify_sh)
		fake_real_sh((struct fake_machine *)m, fg, f->before_verify_sh);
	if (w->point == MACHINE_BEFORE_TRANSFER && f->hang_cell && STREQ(f->hang_cell, w->cell) &&
	    w->run_index == f->hang_run) {
		fake_logf(f, "hang %s #%u", w->cell, w->run_index);
		hang(w->timeout_ms + 1);
	}
}

static int fake_suspend(struct machine *m, struct machine_guest *mg, char **err)
{
	struct machine_fake *f = script(m);
	struct fake_guest *g = (struct fake_guest *)mg;
	if (g->peer && fake_suspend(m, &g->peer->base, err) < 0)
		return -1;
	unsigned number = ++f->suspends;
	fake_logf(f, "suspend %u", g->number);
	if (number == f->fail_suspend) {
		*err = xasprintf("fake suspend %u fails as scripted", number);
		return -1;
	}
	if (!g->suspended)
		f->running--;
	g->suspended = true;
	return 0;
}

static int fake_resume(struct machine *m, struct machine_guest *mg, char **err)
{
	struct machine_fake *f = script(m);
	struct fake_guest *g = (struct fake_guest *)mg;
	if (g->peer && fake_resume(m, &g->peer->base, err) < 0)
		return -1;
	fake_logf(f, "resume %u", g->number);
	if (++f->resumes == f->sigint_resume) {
		raise(SIGINT);
		*err = xstrdup("interrupted");
		return -1;
	}
	if (g->suspended && ++f->running > f->max_running)
		f->max_running = f->running;
	g->suspended = false;
	return 0;
}

static struct machine_guest *fake_peer(struct machine *m, struct machine_guest *mg)
{
	(void)m;
	struct fake_guest *g = (struct fake_guest *)mg;
	return g->peer ? &g->peer->base : NULL;
}

static uint64_t fake_host_memory(struct machine *m)
{
	return script(m)->host_memory;
}

static void fake_sample(struct machine *m, struct machine_guest *mg, unsigned what,
			struct machine_sample *out)
{
	struct machine_fake *f = script(m);
	struct fake_guest *g = (struct fake_guest *)mg;
	if (!f->sample)
		return;
	if (what & MACHINE_SAMPLE_ALLOC)
		out->alloc_bytes = g->alloc;
	if (what & MACHINE_SAMPLE_CPU) {
		out->cpu_qemu_s = g->cpu_qemu;
		out->cpu_guest_s = g->cpu_guest;
	}
}

static int fake_reclaim(struct machine *m, struct machine_guest *mg, char **err)
{
	(void)err;
	struct machine_fake *f = script(m);
	struct fake_guest *g = (struct fake_guest *)mg;
	if (!f->discard)
		return 0;
	f->reclaims++;
	fake_logf(f, "reclaim %u", g->number);
	g->alloc = f->alloc_trimmed;
	return 1;
}

static void fake_close(struct machine *m)
{
	struct fake_machine *fm = (struct fake_machine *)m;
	for (size_t i = 0; i < fm->n_saved; i++) {
		if (fm->saved[i].number) {
			fake_logf(fm->f, "unsave %u", fm->saved[i].number);
			fm->f->saved_live--;
		}
		free(fm->saved[i].key);
		free(fm->saved[i].why);
	}
	free(fm->saved);
	free(fm->uri);
	free(m);
}

static const struct machine_ops fake_ops = {
	.name = "fake",
	.boot = fake_boot,
	.reset = fake_reset,
	.disk_boot_key = fake_disk_boot_key,
	.destroy = fake_destroy,
	.healthy = fake_healthy,
	.console_tail = fake_console_tail,
	.describe = fake_describe,
	.bind = fake_bind,
	.supports = fake_supports,
	.evict_target = fake_evict_target,
	.drop_caches = fake_drop_caches,
	.sample = fake_sample,
	.reclaim = fake_reclaim,
	.suspend = fake_suspend,
	.resume = fake_resume,
	.host_memory = fake_host_memory,
	.hook = fake_hook,
	.alive = fake_alive,
	.close = fake_close,
	.peer = fake_peer,
};

struct machine *machine_fake_open(struct run *run, const char *uri, void *data, char **err)
{
	struct machine_fake *f = data;
	bool doomed = uri && f->lost_uri && STREQ(uri, f->lost_uri);
	if (doomed && !f->lost_after) {
		*err = xasprintf("cannot connect to the fake host '%s'", uri);
		return NULL;
	}
	struct fake_machine *fm = xcalloc(1, sizeof(*fm));
	fm->f = f;
	fm->run = run;
	fm->ops = fake_ops;
	if (f->no_suspend)
		fm->ops.suspend = fm->ops.resume = NULL;
	if (f->guests)
		fm->ops.guest = &fake_guest_ops;
	fm->base.ops = &fm->ops;
	fm->uri = uri ? xstrdup(uri) : NULL;
	fm->doomed = doomed;
	return &fm->base;
}

void machine_fake_clear(struct machine_fake *f)
{
	free(f->log);
	f->log = NULL;
	f->log_len = 0;
}
