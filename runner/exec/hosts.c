/* SPDX-License-Identifier: MIT */
/*
 * A run fanned out over several libvirt hosts (exec_opts.hosts: `ferry run --connect A
 * --connect B`, or `--hosts FILE`), ferry(1) REMOTE HOSTS.
 *
 * Units: the cells are cut into units that must run on one host together (exec_host_units()):
 * the cells of one shared guest (run.vm shared: they take their turns on it in the plan's
 * order), the cells of one rotation over guests of their own (run.vm per-cell or per-run with
 * run.order interleaved or shuffled: same order and seed, order.c), and otherwise one cell each. A
 * free host takes the next unit in the plan's order; every host runs one unit at a time, all hosts
 * at once.
 *
 * Processes, not threads: each unit runs in a child process forked from this one, which calls
 * exec_plan() for that host and those cells only (exec_opts.only) and writes its own results
 * file; this process merges it into the run's results (its cells, boot ids renumbered, the host's
 * provenance as an origin that every cell it ran names) and rewrites the results file. A libvirt
 * connection is thread-safe, but ferry's per-process state is not (the run directory's registry
 * and signal self-pipe, the storage pool registry, libvirt's error handler), and a child isolates
 * a host whose connection breaks or hangs: killing it takes nothing of the other hosts along.
 * Children run in their own process group (a Ctrl-C reaches them once, from here) and die with
 * this process (PR_SET_PDEATHSIG).
 *
 * A host that fails: a child whose connection was lost (machine_alive() after a failure, or no
 * connection at all) exits with HOST_LOST and says why; the host is reported and takes no more
 * units. The cells that child finished stay; the cell it was running and those it had not
 * started go back to the queue for another host, ahead of the rest; a unit that lost its host
 * twice is left pending for --resume, as is everything when no host is left.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec-int.h"
#include "fs.h"

/* A child's exit status: its host failed (the unit's unfinished cells go elsewhere). */
#define HOST_LOST 75
/* How often a unit may lose its host before its cells are left pending. */
#define UNIT_TRIES 2

bool exec_host_lost(struct exec *x)
{
	_cleanup_free_ char *why = NULL;
	if (machine_alive(x->machine, &why))
		return false;
	snprintf(x->res->host_lost, sizeof(x->res->host_lost), "%s",
		 why ? why : "the connection to the host was lost");
	x->stop = true;
	return true;
}

/* The unit key of a cell: cells with equal keys run on one host (order.c's order units, the
 * executor's VM groups). */
static void key_of(const struct plan_cell *pc, char *buf, size_t n)
{
	if (pc->run.boots.min > 0)
		/* blocks (blocks.c): every block boots every VM configuration, so one host runs
		 * them all, or the blocks would not pair */
		snprintf(buf, n, "blocks");
	else if (pc->run.vm != PLAN_VM_SHARED && pc->run.order != PLAN_ORDER_SEQUENTIAL)
		/* a rotation over guests of their own (order.c): same run.vm, order and seed */
		snprintf(buf, n, "order=%d|vm=%d|seed=%llu", (int)pc->run.order, (int)pc->run.vm,
			 (unsigned long long)pc->run.seed);
	else if (pc->run.vm == PLAN_VM_SHARED)
		/* a unit per vm and disk: it may hold several of the executor's VM groups (which
		 * also tell the method's boot-time devices apart); the cells of disks that one
		 * guest can switch between (cells.c disk_key: known to a host's machine only) may
		 * go to several hosts, each booting a guest of its own, at once */
		snprintf(buf, n, "vm=%s{%s}|disk=%s{%s}", pc->vm->e.name,
			 pc->vm->e.sweep ? pc->vm->e.sweep : "", pc->disk->e.name,
			 pc->disk->e.sweep ? pc->disk->e.sweep : "");
	else
		snprintf(buf, n, "cell=%s", pc->id);
}

size_t exec_host_units(const struct plan *p, const struct matrix *m, const bool *active,
		       size_t *unit_of)
{
	size_t n = matrix_n_cells(m), units = 0;
	char **keys = xcalloc(n + 1, sizeof(*keys));
	struct strmap map;
	strmap_init(&map, n);
	for (size_t i = 0; i < n; i++) {
		unit_of[i] = SIZE_MAX;
		if (!active[i])
			continue;
		struct plan_cell pc;
		plan_cell(p, m, i, &pc);
		char buf[1024];
		key_of(&pc, buf, sizeof(buf));
		keys[i] = xstrdup(buf);
		uint32_t was = strmap_put(&map, keys[i], 0, (uint32_t)units);
		unit_of[i] = was == STRMAP_NONE ? units++ : was;
	}
	strmap_free(&map);
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
	return units;
}

struct host {
	const char *uri;
	char label[32]; /* "host 1" */
	bool lost;
	pid_t pid;   /* the child running a unit, or 0 */
	size_t unit; /* the unit it runs */
	int origin;  /* its index in results.origins, -1 before its first unit */
};

struct unit {
	bool *cells; /* matrix index -> in this unit (only those still to run) */
	unsigned tries;
	bool queued, done;
};

struct fan {
	const struct plan *p;
	const struct matrix *m;
	const struct exec_opts *o;
	struct exec_result *res;
	struct results *r;
	struct host *hosts;
	size_t n_hosts;
	struct unit *units;
	size_t n_units;
	size_t *queue; /* unit indices, next first */
	size_t q_head, q_len, q_cap;
	char *tmp; /* the children's results files */
	size_t n_cells, n_done;
};

/* ---- signals: forwarded once to the children, which clean up and write what ran ----------- */

static volatile sig_atomic_t fan_signal;

static void on_signal(int sig)
{
	if (!fan_signal)
		fan_signal = sig;
}

static const int fan_signals[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM };

static void signals_install(struct sigaction *old)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ELEMENTSOF(fan_signals); i++)
		sigaction(fan_signals[i], &sa, &old[i]);
}

static void signals_restore(const struct sigaction *old)
{
	for (size_t i = 0; i < ELEMENTSOF(fan_signals); i++)
		sigaction(fan_signals[i], &old[i], NULL);
}

/* ---- progress ------------------------------------------------------------------------------ */

/* The first cell of a unit, for messages. */
static const char *unit_first(struct fan *f, size_t u, size_t *count)
{
	const char *first = NULL;
	*count = 0;
	for (size_t i = 0; i < f->n_cells; i++)
		if (f->units[u].cells[i]) {
			if (!first)
				first = matrix_cell_id(f->m, i);
			++*count;
		}
	return first;
}

/* The live status: which host runs which cell. */
static void fan_status(struct fan *f)
{
	if (!f->o->status)
		return;
	_cleanup_free_ char *s = xasprintf("%zu/%zu cells done", f->n_done, f->n_cells);
	for (size_t h = 0; h < f->n_hosts; h++) {
		size_t count;
		const char *what = f->hosts[h].lost  ? "lost"
				   : f->hosts[h].pid ? unit_first(f, f->hosts[h].unit, &count)
						     : "idle";
		char *t = xasprintf("%s | %s: %s", s, f->hosts[h].label, what);
		free(s);
		s = t;
	}
	f->o->status(f->o->ud, s);
}

/* A child's progress: prefixed with its host. */
struct child_ud {
	const struct exec_opts *o;
	const char *label;
};

static void child_line(void *ud, const char *text)
{
	struct child_ud *c = ud;
	_cleanup_free_ char *s = xasprintf("%s: %s", c->label, text);
	c->o->line(c->o->ud, s);
}

static void child_error(void *ud, const char *text)
{
	struct child_ud *c = ud;
	_cleanup_free_ char *s = xasprintf("%s: %s", c->label, text);
	c->o->error(c->o->ud, s);
}

/* ---- the child ----------------------------------------------------------------------------- */

static char *unit_path(const struct fan *f, pid_t pid, const char *what)
{
	return xasprintf("%s/%ld.%s", f->tmp, (long)pid, what);
}

/* In the child: run the unit on the host, write the results, say whether the host failed. */
static _Noreturn void child_main(struct fan *f, struct host *h, const bool *only)
{
	for (size_t i = 0; i < ELEMENTSOF(fan_signals); i++)
		signal(fan_signals[i], SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() == 1)
		_exit(HOST_LOST);
	(void)setpgid(0, 0);
	struct child_ud cu = { f->o, h->label };
	struct exec_opts o = *f->o;
	o.hosts = NULL;
	o.n_hosts = 0;
	o.connect = h->uri;
	o.only = only;
	o.resume = NULL;
	o.rerun_failed = false;
	o.live_status = false;
	o.status = NULL;
	o.line = f->o->line ? child_line : NULL;
	o.error = f->o->error ? child_error : NULL;
	o.ud = &cu;
	_cleanup_free_ char *results = unit_path(f, getpid(), "json");
	_cleanup_free_ char *lost = unit_path(f, getpid(), "lost");
	o.results_path = results;
	struct results *r = NULL;
	struct exec_result res;
	char *err = NULL;
	int rc = exec_plan(f->p, f->m, &o, &r, &res, &err);
	int code = 0;
	if (rc < 0 || res.host_lost[0]) {
		const char *why = rc < 0 ? err : res.host_lost;
		(void)write_file_atomic(lost, why, strlen(why), 0644, NULL);
		code = HOST_LOST;
	}
	if (res.signal)
		code = 128 + res.signal;
	/* only what this process wrote: the report files it inherited are the parent's */
	fflush(stdout);
	fflush(stderr);
	_exit(code);
}

/* ---- merging a child's results ------------------------------------------------------------- */

/* Move what c measured into the run's cell d (its id, axes and parameters stay d's). */
static void cell_take(struct result_cell *d, struct result_cell *c, int origin, int64_t boot_base)
{
	result_cell_reset(d);
	struct result_cell t = *d;
	*d = *c;
	d->id = t.id;
	d->axes = t.axes;
	d->n_axes = t.n_axes;
	d->axes_cap = t.axes_cap;
	d->params = t.params;
	d->origin = origin;
	for (size_t j = 0; j < d->n_runs; j++)
		if (d->runs[j].boot > 0)
			d->runs[j].boot += boot_base;
	/* what c keeps is freed with its results: its id, axes and params, and d's empty lists */
	struct result_cell e = t;
	e.id = c->id;
	e.axes = c->axes;
	e.n_axes = c->n_axes;
	e.axes_cap = c->axes_cap;
	e.params = c->params;
	*c = e;
}

/* The origin of host h: its provenance as its first unit recorded it. */
static int host_origin(struct fan *f, struct host *h, const struct results *cr)
{
	if (h->origin < 0) {
		h->origin =
		    (int)results_add_origin(f->r, f->r->shard_k, f->r->shard_n, &cr->provenance);
		free(f->r->origins[h->origin].host);
		/* without its query string: transport parameters (key files) are not results */
		f->r->origins[h->origin].host = xstrndup(h->uri, strcspn(h->uri, "?"));
		if (!f->r->provenance.qemu_version) {
			/* the run's own provenance: the first host's, from the run's start */
			int64_t started = f->r->provenance.started_ms;
			result_provenance_clear(&f->r->provenance);
			result_provenance_copy(&f->r->provenance, &cr->provenance);
			f->r->provenance.started_ms = started;
		}
	}
	struct result_provenance *pv = &f->r->origins[h->origin].provenance;
	if (cr->provenance.finished_ms > pv->finished_ms)
		pv->finished_ms = cr->provenance.finished_ms;
	if (!pv->accelerator && cr->provenance.accelerator)
		pv->accelerator = xstrdup(cr->provenance.accelerator);
	if (!pv->guest_kernel_sha256 && cr->provenance.guest_kernel_sha256)
		pv->guest_kernel_sha256 = xstrdup(cr->provenance.guest_kernel_sha256);
	if (!pv->guest_initramfs_sha256 && cr->provenance.guest_initramfs_sha256)
		pv->guest_initramfs_sha256 = xstrdup(cr->provenance.guest_initramfs_sha256);
	return h->origin;
}

/*
 * Merge the results of h's unit into the run's: the cells the child finished. The unit keeps
 * (in its cells[]) those it did not finish. Returns how many it finished.
 */
static size_t merge_unit(struct fan *f, struct host *h, struct unit *u, pid_t pid)
{
	_cleanup_free_ char *path = unit_path(f, pid, "json");
	_cleanup_free_ char *err = NULL;
	_cleanup_(results_freep) struct results *cr = results_read(path, &err);
	unlink(path);
	if (!cr)
		return 0; /* nothing ran (the host was unreachable) */
	int origin = host_origin(f, h, cr);
	result_provenance_add_datasets(&f->r->provenance, &cr->provenance);
	result_provenance_add_datasets(&f->r->origins[origin].provenance, &cr->provenance);
	for (size_t j = 0; j < cr->n_metrics; j++)
		results_set_metric(f->r, cr->metrics[j].name, cr->metrics[j].unit,
				   cr->metrics[j].higher_better);
	int64_t boot_base = results_max_boot(f->r);
	f->res->boots += (unsigned)results_max_boot(cr);
	size_t n = 0;
	for (size_t i = 0; i < f->n_cells; i++) {
		if (!u->cells[i])
			continue;
		struct result_cell *c = results_find_cell(cr, matrix_cell_id(f->m, i));
		struct result_cell *d = results_find_cell(f->r, matrix_cell_id(f->m, i));
		if (!c || !d || c->status == STATUS_PENDING)
			continue;
		cell_take(d, c, origin, boot_base);
		for (size_t j = 0; j < d->n_runs; j++)
			if (!d->runs[j].warmup && isfinite(d->runs[j].total))
				f->res->measured_s += d->runs[j].total;
		u->cells[i] = false;
		n++;
	}
	return n;
}

/* The origins this run added (from `first` on) in the order of the hosts on the command line,
 * whichever finished a unit first; the cells' origins follow. */
static void order_origins(struct fan *f, size_t first)
{
	struct results *r = f->r;
	size_t n = r->n_origins - first;
	if (n < 2)
		return;
	_cleanup_free_ int *to = xcalloc(n, sizeof(*to)); /* old index - first -> new index */
	_cleanup_free_ struct result_origin *sorted = xcalloc(n, sizeof(*sorted));
	size_t k = 0;
	for (size_t h = 0; h < f->n_hosts; h++) {
		int o = f->hosts[h].origin;
		if (o < 0 || (size_t)o < first)
			continue;
		to[(size_t)o - first] = (int)(first + k);
		sorted[k++] = r->origins[o];
	}
	memcpy(r->origins + first, sorted, n * sizeof(*sorted));
	for (size_t i = 0; i < r->n_cells; i++)
		if (r->cells[i].origin >= (int)first)
			r->cells[i].origin = to[r->cells[i].origin - (int)first];
	for (size_t h = 0; h < f->n_hosts; h++)
		if (f->hosts[h].origin >= (int)first)
			f->hosts[h].origin = to[f->hosts[h].origin - (int)first];
}

static int fan_write(struct fan *f)
{
	if (!f->o->results_path)
		return 0;
	_cleanup_free_ char *err = NULL;
	f->r->provenance.finished_ms = results_now_ms();
	if (results_write(f->r, f->o->results_path, &err) < 0) {
		exec_error(f->o, "%s", err);
		return -1;
	}
	return 0;
}

/* ---- the queue ----------------------------------------------------------------------------- */

static void enqueue(struct fan *f, size_t unit, bool front)
{
	if (f->q_head + f->q_len + 1 > f->q_cap || (front && f->q_head == 0)) {
		/* compact, with room at the front for one */
		size_t cap = f->q_len + 16;
		size_t *q = xcalloc(cap, sizeof(*q));
		if (f->q_len) /* the first time, there is no queue to copy from */
			memcpy(q + 1, f->queue + f->q_head, f->q_len * sizeof(*q));
		free(f->queue);
		f->queue = q;
		f->q_cap = cap;
		f->q_head = 1;
	}
	if (front)
		f->queue[--f->q_head] = unit;
	else
		f->queue[f->q_head + f->q_len] = unit;
	f->q_len++;
	f->units[unit].queued = true;
}

static bool dequeue(struct fan *f, size_t *unit)
{
	if (!f->q_len)
		return false;
	*unit = f->queue[f->q_head++];
	f->q_len--;
	f->units[*unit].queued = false;
	return true;
}

static void start_unit(struct fan *f, struct host *h, size_t u)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		exec_error(f->o, "%s: cannot start a process: %s", h->label, strerror(errno));
		enqueue(f, u, true);
		h->lost = true;
		return;
	}
	if (pid == 0)
		child_main(f, h, f->units[u].cells);
	(void)setpgid(pid, pid); /* also here: no race with a signal forwarded right away */
	h->pid = pid;
	h->unit = u;
	f->units[u].tries++;
	size_t count;
	const char *first = unit_first(f, u, &count);
	/* the process id names the unit's run (its run id, domains and volumes) */
	if (count == 1)
		progress_line(f->o, "%s (%s) runs %s (process %ld)", h->label, h->uri, first,
			      (long)pid);
	else
		progress_line(f->o, "%s (%s) runs %zu cells from %s (process %ld)", h->label,
			      h->uri, count, first, (long)pid);
	fan_status(f);
}

/* A child ended: merge, and on a lost host requeue what it did not finish. */
static void unit_ended(struct fan *f, struct host *h, int status)
{
	pid_t pid = h->pid;
	h->pid = 0;
	struct unit *u = &f->units[h->unit];
	f->n_done += merge_unit(f, h, u, pid);
	fan_write(f);
	_cleanup_free_ char *lost_path = unit_path(f, pid, "lost");
	size_t len = 0;
	_cleanup_free_ char *why = read_file(lost_path, &len);
	unlink(lost_path);
	bool host_lost = WIFEXITED(status) && WEXITSTATUS(status) == HOST_LOST;
	if (WIFSIGNALED(status) && !fan_signal) {
		host_lost = true;
		free(why);
		why = xasprintf("its process died of signal %d", WTERMSIG(status));
	}
	size_t left;
	(void)unit_first(f, h->unit, &left);
	if (host_lost) {
		h->lost = true;
		f->res->hosts_lost++;
		if (h->origin >= 0) {
			free(f->r->origins[h->origin].lost);
			f->r->origins[h->origin].lost = xstrdup(why ? why : "unknown");
		}
		bool others = false;
		for (size_t o = 0; o < f->n_hosts; o++)
			others |= !f->hosts[o].lost;
		bool retry = left && others && u->tries < UNIT_TRIES && !fan_signal;
		exec_error(
		    f->o, "%s (%s) failed: %s; %s", h->label, h->uri, why ? why : "unknown",
		    !left   ? "none of its cells is left"
		    : retry ? "its unfinished cells go to another host"
			    : "its unfinished cells stay pending (ferry run --resume runs them)");
		if (retry)
			enqueue(f, h->unit, true);
		else if (!left)
			u->done = true;
	} else {
		u->done = true;
	}
	fan_status(f);
}

/* Whether a cell the run merged did not pass (for --fail-fast). */
static bool any_failed(const struct fan *f)
{
	for (size_t i = 0; i < f->r->n_cells; i++)
		if (f->r->cells[i].status == STATUS_FAILED || f->r->cells[i].status == STATUS_ERROR)
			return true;
	return false;
}

static void forward(struct fan *f, int sig)
{
	for (size_t h = 0; h < f->n_hosts; h++)
		if (f->hosts[h].pid)
			kill(f->hosts[h].pid, sig);
}

static void fan_loop(struct fan *f)
{
	bool forwarded = false;
	for (;;) {
		bool stop = fan_signal || (f->o->fail_fast && any_failed(f));
		if (stop && f->o->fail_fast && !fan_signal)
			f->res->stopped = true;
		size_t running = 0;
		for (size_t h = 0; h < f->n_hosts; h++) {
			struct host *hs = &f->hosts[h];
			size_t u;
			if (!hs->pid && !hs->lost && !stop && dequeue(f, &u))
				start_unit(f, hs, u);
			running += hs->pid != 0;
		}
		if (!running)
			return;
		if (fan_signal && !forwarded) {
			forward(f, fan_signal);
			forwarded = true;
		}
		int status;
		pid_t pid = waitpid(-1, &status, 0);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			exec_error(f->o, "waitpid: %s", strerror(errno));
			return;
		}
		for (size_t h = 0; h < f->n_hosts; h++)
			if (f->hosts[h].pid == pid)
				unit_ended(f, &f->hosts[h], status);
	}
}

int exec_hosts(const struct plan *p, const struct matrix *m, const struct exec_opts *o,
	       struct results **out, struct exec_result *res, char **err)
{
	uint64_t t0 = now_ns();
	*res = (struct exec_result){ 0 };
	struct exec X = { .p = p, .m = m, .o = o, .res = res }, *x = &X;
	x->r = o->resume ? o->resume : results_new();
	*out = x->r;
	results_start(x);
	select_cells(x);                  /* the results' cells, in the plan's order */
	_cleanup_free_ char *gerr = NULL; /* what could not be read stays unknown */
	results_gather_host(&x->r->provenance, &gerr);
	free(x->r->provenance.hostname); /* the hosts' own names are in origins */
	x->r->provenance.hostname = NULL;
	x->r->provenance.started_ms = results_now_ms();

	char tmpl[] = "/tmp/ferry-hosts-XXXXXX";
	const char *tmp = mkdtemp(tmpl);
	if (!tmp) {
		*err = xasprintf("cannot create a temporary directory: %s", strerror(errno));
		free(x->cells);
		return -1;
	}
	struct fan F = {
		.p = p, .m = m, .o = o, .res = res, .r = x->r, .tmp = xstrdup(tmp),
		.n_cells = x->n_cells,
	}, *f = &F;
	_cleanup_free_ bool *active = xcalloc(x->n_cells + 1, sizeof(*active));
	_cleanup_free_ size_t *unit_of = xcalloc(x->n_cells + 1, sizeof(*unit_of));
	for (size_t i = 0; i < x->n_cells; i++)
		active[i] = x->cells[i].active;
	free(x->cells);
	f->n_units = exec_host_units(p, m, active, unit_of);
	f->units = xcalloc(f->n_units + 1, sizeof(*f->units));
	for (size_t u = 0; u < f->n_units; u++)
		f->units[u].cells = xcalloc(f->n_cells + 1, sizeof(bool));
	for (size_t i = 0; i < f->n_cells; i++)
		if (unit_of[i] != SIZE_MAX)
			f->units[unit_of[i]].cells[i] = true;
	for (size_t u = 0; u < f->n_units; u++)
		enqueue(f, u, false);
	f->n_hosts = o->n_hosts;
	f->hosts = xcalloc(f->n_hosts, sizeof(*f->hosts));
	for (size_t h = 0; h < f->n_hosts; h++) {
		f->hosts[h] = (struct host){ .uri = o->hosts[h], .origin = -1 };
		snprintf(f->hosts[h].label, sizeof(f->hosts[h].label), "host %zu", h + 1);
	}
	size_t n_sel = 0;
	for (size_t i = 0; i < f->n_cells; i++)
		n_sel += active[i];
	f->n_cells = matrix_n_cells(m);
	fan_write(f);
	progress_line(f->o, "%zu cells in %zu units over %zu hosts", n_sel, f->n_units, f->n_hosts);

	size_t first_origin = x->r->n_origins; /* a resumed file keeps its own first */
	struct sigaction old[ELEMENTSOF(fan_signals)];
	fan_signal = 0;
	signals_install(old);
	fan_loop(f);
	order_origins(f, first_origin);
	res->signal = fan_signal;
	signals_restore(old);
	if (f->q_len && res->hosts_lost == f->n_hosts)
		exec_error(f->o,
			   "no host is left: the cells of %zu unit%s stay pending (ferry run "
			   "--resume runs them)",
			   f->q_len, f->q_len == 1 ? "" : "s");

	x->r->provenance.finished_ms = results_now_ms();
	res->wall_s = secs(now_ns() - t0);
	res->time.measured = res->measured_s; /* the rest of the breakdown is the units' own */
	fan_write(f);
	results_count_status(x->r, res->counts);
	rmdir(f->tmp);
	free(f->tmp);
	for (size_t u = 0; u < f->n_units; u++)
		free(f->units[u].cells);
	free(f->units);
	free(f->hosts);
	free(f->queue);
	return 0;
}
