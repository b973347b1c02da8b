/* SPDX-License-Identifier: MIT */
/* The executor (exec.h). */
#include "exec.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <libvirt/virterror.h>
#include <openssl/evp.h>

#include "agent.h"
#include "guest.h"
#include "hash.h"
#include "keys.h"
#include "methods/method.h"
#include "proc.h"
#include "units.h"
#include "rules.h"
#include "run.h"
#include "util.h"

#define TARGET_SERIAL "ferry-target"
#define TARGET_MNT    "/mnt/target"
#define LANDING       TARGET_MNT "/data"
/* Guest commands the executor runs itself (mount, empty, drop caches) get this long. */
#define HOUSEKEEPING_MS 120000u
#define ATTACH_MS       60000u
/* Filesystem modules load behind the agent (guest.h): wait for them before mounting. */
#define MODULES_WAIT METHOD_GUEST_MODULES_WAIT

/* ---- mapping of plan entries (the one place) ---- */

enum disk_format exec_disk_format(enum plan_disk_format f)
{
	return f == PLAN_FORMAT_QCOW2 ? DISK_FORMAT_QCOW2 : DISK_FORMAT_RAW;
}

enum disk_bus exec_disk_bus(enum plan_bus b)
{
	switch (b) {
	case PLAN_BUS_SCSI: return DISK_BUS_SCSI;
	case PLAN_BUS_SATA: return DISK_BUS_SATA;
	case PLAN_BUS_IDE: return DISK_BUS_IDE;
	default: return DISK_BUS_VIRTIO;
	}
}

void exec_vm_config(const struct plan_vm *p, const char *kernel, const char *initrd,
		    const char *cmdline, struct vm_config *c)
{
	vm_config_init(c);
	c->vcpus = (unsigned)p->vcpus;
	c->memory = p->memory;
	c->machine = p->machine == PLAN_MACHINE_Q35 ? VM_MACHINE_Q35 : VM_MACHINE_PC;
	c->firmware = p->firmware == PLAN_FIRMWARE_UEFI ? VM_FIRMWARE_UEFI : VM_FIRMWARE_BIOS;
	c->accel = p->accel == PLAN_ACCEL_KVM   ? VM_ACCEL_KVM
		   : p->accel == PLAN_ACCEL_TCG ? VM_ACCEL_TCG
						: VM_ACCEL_AUTO;
	c->os = p->os == PLAN_OS_WINDOWS ? VM_OS_WINDOWS : VM_OS_LINUX;
	if (p->guest == PLAN_GUEST_IMAGE) {
		c->image = p->image;
	} else {
		c->kernel = kernel;
		c->initrd = initrd;
		c->cmdline = cmdline;
	}
	c->nic.model = p->nic.model == PLAN_NIC_E1000 ? NIC_MODEL_E1000 : NIC_MODEL_VIRTIO;
	c->nic.queues = (unsigned)p->nic.queues;
	if (p->nic.network) {
		c->nic.backend = NIC_BACKEND_NETWORK;
		c->nic.source = p->nic.network;
	} else if (p->nic.bridge) {
		c->nic.backend = NIC_BACKEND_BRIDGE;
		c->nic.source = p->nic.bridge;
	} else {
		c->nic.backend = NIC_BACKEND_USER;
	}
}

void exec_disk_config(const struct plan_disk *p, const char *path, const char *serial,
		      struct disk_config *c)
{
	static const enum disk_cache caches[] = {
		[PLAN_CACHE_NONE] = DISK_CACHE_NONE,
		[PLAN_CACHE_WRITEBACK] = DISK_CACHE_WRITEBACK,
		[PLAN_CACHE_WRITETHROUGH] = DISK_CACHE_WRITETHROUGH,
		[PLAN_CACHE_DIRECTSYNC] = DISK_CACHE_DIRECTSYNC,
		[PLAN_CACHE_UNSAFE] = DISK_CACHE_UNSAFE,
	};
	static const enum disk_io ios[] = {
		[PLAN_IO_THREADS] = DISK_IO_THREADS,
		[PLAN_IO_NATIVE] = DISK_IO_NATIVE,
		[PLAN_IO_URING] = DISK_IO_IO_URING,
	};
	*c = (struct disk_config){
		.kind = p->kind == PLAN_DISK_TMPFS ? DISK_KIND_TMPFS : DISK_KIND_IMAGE,
		.format = exec_disk_format(p->format),
		.allocation = p->allocation == PLAN_ALLOC_FULL     ? DISK_ALLOC_FULL
			      : p->allocation == PLAN_ALLOC_FALLOC ? DISK_ALLOC_FALLOC
								   : DISK_ALLOC_SPARSE,
		.size = p->size,
		.bus = exec_disk_bus(p->bus),
		.cache = caches[p->cache],
		.io = ios[p->io],
		.discard = p->discard,
		.serial = serial,
		.path = path,
	};
}

void exec_dataset_spec(const struct plan_dataset *p, struct dataset_spec *s)
{
	*s = (struct dataset_spec){ 0 };
	if (p->path) {
		s->path = p->path;
		return;
	}
	s->files = p->files;
	s->size_min = p->size.min;
	s->size_max = p->size.max;
	if (p->size.min == p->size.max)
		s->dist = DATASET_DIST_FIXED;
	else
		s->dist = p->size.distribution == PLAN_DIST_LOGNORMAL ? DATASET_DIST_LOGNORMAL
								      : DATASET_DIST_UNIFORM;
	s->depth = (unsigned)p->dirs.depth;
	s->fanout = (unsigned)p->dirs.fanout;
	s->content = p->content == PLAN_CONTENT_ZEROS          ? DATASET_CONTENT_ZEROS
		     : p->content == PLAN_CONTENT_TEXT         ? DATASET_CONTENT_TEXT
		     : p->content == PLAN_CONTENT_COMPRESSIBLE ? DATASET_CONTENT_COMPRESSIBLE
							       : DATASET_CONTENT_RANDOM;
	s->ratio = p->ratio;
	s->seed = p->seed;
}

/* ---- state ---- */

/* A booted guest with its target disk, shared by the cells with the same key. */
struct xvm {
	char *key;
	const struct plan_vm *pvm;
	const struct plan_disk *pdisk;
	struct method_boot_needs needs; /* of the cell that booted it (equal for all sharing it) */
	struct vm *vm;
	struct disk_config target;
	char *target_path;
	char *target_dev; /* "/dev/vdb" */
	bool dirty;       /* the landing place holds data of an earlier run */
};

struct xcell {
	size_t index; /* in the matrix */
	size_t rc;    /* index into results->cells */
	struct plan_cell pc;
	const struct method_ops *ops;
	struct method_ctx ctx;
	bool ctx_ready;
	struct dataset_spec spec;
	struct dataset_info dinfo;
	struct manifest *man;
	struct method_boot_needs needs;
	char *key;
	struct xvm *xvm;
	bool active; /* to run */
	bool done;
	unsigned runs_done, warm_done;
	double *samples;
	size_t n_samples;
	double measured_s;
	uint64_t started_ns;
	char *cell_dir;
};

struct exec {
	const struct plan *p;
	const struct matrix *m;
	const struct exec_opts *o;
	struct results *r;
	struct exec_stats *st;
	struct run *run;
	virConnectPtr conn;
	struct guest_files gf;
	struct xcell *cells;
	size_t n_cells;
	struct xvm **vms;
	size_t n_vms;
	size_t n_active, n_finished;
	bool stop; /* fail-fast or interrupted */
	const char *corrupt;
	const char *fault; /* FERRY_TEST_FAULT */
	uint64_t t0;
	unsigned n_targets;
};

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

static unsigned ns_to_ms(uint64_t ns)
{
	uint64_t ms = ns / 1000000u;
	return ms > UINT_MAX ? UINT_MAX : ms == 0 ? 1 : (unsigned)ms;
}

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

/* ---- progress ---- */

static void progress(struct exec *x, const struct xcell *c, const char *phase)
{
	if (!x->o->status)
		return;
	const struct plan_repeat *rp = &c->pc.run.repeat;
	double el = secs(now_ns() - x->t0);
	_cleanup_free_ char *eta =
	    x->n_finished > 0 ? xasprintf("  eta %.0fs", el / (double)x->n_finished *
							     (double)(x->n_active - x->n_finished))
			      : xstrdup("");
	_cleanup_free_ char *text =
	    xasprintf("[%zu/%zu] %s run %u/%" PRIu64 " %s  %.0fs%s", x->n_finished + 1, x->n_active,
		      c->pc.id, c->runs_done + 1, c->pc.run.warmup + rp->max, phase, el, eta);
	x->o->status(x->o->ud, text);
}

static void progress_line(struct exec *x, const char *fmt, ...) _printf_(2, 3);
static void progress_line(struct exec *x, const char *fmt, ...)
{
	if (!x->o->line)
		return;
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *text = xvasprintf(fmt, ap);
	va_end(ap);
	x->o->line(x->o->ud, text);
}

static void exec_error(struct exec *x, const char *fmt, ...) _printf_(2, 3);
static void exec_error(struct exec *x, const char *fmt, ...)
{
	if (!x->o->error)
		return;
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *text = xvasprintf(fmt, ap);
	va_end(ap);
	x->o->error(x->o->ud, text);
}

/* ---- host helpers ---- */

static int run_prog(const char *const *argv, char **err)
{
	return proc_run(argv, NULL, err);
}

static void drop_host_caches(void)
{
	sync();
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return; /* not root: the guest caches are still dropped */
	if (write(fd, "3\n", 2) < 0) {
		/* best effort, like sync */
	}
	close(fd);
}

/* Create the target image with an empty ext4 filesystem, without root or mounting. */
static int target_create(const struct disk_config *d, char **err)
{
	bool prealloc = d->allocation != DISK_ALLOC_SPARSE;
	_cleanup_free_ char *size = xasprintf("%" PRIu64 "k", d->size / 1024);
	unlink(d->path);
	if (d->format == DISK_FORMAT_RAW) {
		if (vm_image_create(d, d->path, err) < 0)
			return -1;
		const char *argv[] = { "mke2fs", "-q",   "-F",
				       "-t",     "ext4", "-m",
				       "0",      "-E",   prealloc ? "nodiscard" : "discard",
				       d->path,  size,   NULL };
		return run_prog(argv, err);
	}
	_cleanup_free_ char *raw = xasprintf("%s.raw", d->path);
	unlink(raw);
	const char *mk[] = { "mke2fs", "-q", "-F", "-t", "ext4", "-m", "0", raw, size, NULL };
	if (run_prog(mk, err) < 0)
		return -1;
	const char *pre = d->allocation == DISK_ALLOC_FULL     ? "preallocation=full"
			  : d->allocation == DISK_ALLOC_FALLOC ? "preallocation=falloc"
							       : "preallocation=off";
	const char *cv[] = { "qemu-img", "convert", "-q", "-f", "raw",   "-O",
			     "qcow2",    "-o",      pre,  raw,  d->path, NULL };
	int rc = run_prog(cv, err);
	unlink(raw);
	return rc;
}

/* ---- guest helpers ---- */

static int guest_sh(struct vm *vm, const char *cmd, unsigned timeout_ms, char **err)
{
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	return agent_run(vm_domain(vm), argv, timeout_ms, NULL, err);
}

static int mount_target(struct exec *x, struct xvm *v, char **err)
{
	(void)x;
	_cleanup_free_ char *cmd = NULL;
	if (v->pdisk->kind == PLAN_DISK_TMPFS) {
		cmd = xasprintf(MODULES_WAIT "mkdir -p " TARGET_MNT
					     " && mount -t tmpfs -o size=%" PRIu64
					     "k tmpfs " TARGET_MNT " && mkdir -p " LANDING,
				v->pdisk->size / 1024);
	} else {
		_cleanup_free_ char *dev = NULL;
		int f = vm_find_disk(v->vm, TARGET_SERIAL, &dev, err);
		if (f < 0)
			return -1;
		if (f == 0) {
			*err = xstrdup(
			    "the guest does not show the target disk (serial " TARGET_SERIAL ")");
			return -1;
		}
		free(v->target_dev);
		v->target_dev = xasprintf("/dev/%s", dev);
		cmd =
		    xasprintf(MODULES_WAIT "mkdir -p " TARGET_MNT " && mount -t ext4 %s " TARGET_MNT
					   " && mkdir -p " LANDING,
			      v->target_dev);
	}
	return guest_sh(v->vm, cmd, HOUSEKEEPING_MS, err);
}

static void xvm_destroy(struct exec *x, struct xvm *v)
{
	(void)x;
	if (!v || !v->vm)
		return;
	vm_destroy(v->vm);
	v->vm = NULL;
	v->dirty = false;
}

static bool hotpluggable(const struct disk_config *d)
{
	return d->bus == DISK_BUS_VIRTIO || d->bus == DISK_BUS_SCSI;
}

static int xvm_boot(struct exec *x, struct xvm *v, char **err)
{
	struct vm_config c;
	exec_vm_config(v->pvm, x->gf.kernel, x->gf.initramfs, x->gf.cmdline, &c);
	size_t nd = 0;
	struct disk_config *disks = xcalloc(v->needs.n_disks + 1, sizeof(*disks));
	if (v->pdisk->kind == PLAN_DISK_IMAGE) {
		if (!v->target_path) {
			_cleanup_free_ char *name =
			    xasprintf("target-%u.%s", ++x->n_targets,
				      v->pdisk->format == PLAN_FORMAT_QCOW2 ? "qcow2" : "raw");
			v->target_path = run_path(x->run, "disks", name);
		}
		exec_disk_config(v->pdisk, v->target_path, TARGET_SERIAL, &v->target);
		if (target_create(&v->target, err) < 0) {
			free(disks);
			return -1;
		}
		/* hot-pluggable buses are attached after boot, so that vm.c knows the disk and a
		   fresh disk can be swapped in by detach + attach */
		if (!hotpluggable(&v->target))
			disks[nd++] = v->target;
	}
	for (size_t i = 0; i < v->needs.n_disks; i++)
		disks[nd++] = v->needs.disks[i];
	c.disks = disks;
	c.n_disks = nd;
	c.share.host_dir = v->needs.share_dir;
	c.share.tag = v->needs.share_tag;
	c.share.mode = v->needs.share_mode;
	c.share.readonly = v->needs.share_readonly;
	c.share.driver = v->needs.share_driver;
	c.share.virtiofsd = vm_virtiofsd_path();
	c.channels = (const char *const *)v->needs.channels;
	c.n_channels = v->needs.n_channels;
	x->st->boots++;
	int rc = vm_boot(x->run, x->conn, &c, ns_to_ms(v->pvm->boot_timeout), &v->vm, err);
	free(disks);
	if (rc < 0)
		return -1;
	if (!x->r->provenance.accelerator)
		x->r->provenance.accelerator = xstrdup(vm_accel_used(v->vm));
	if (x->o->verbose)
		progress_line(x, "booted %s in %.1f s (%s)", vm_name(v->vm),
			      vm_boot_ms(v->vm) / 1000.0, v->key);
	if (v->pdisk->kind == PLAN_DISK_IMAGE && hotpluggable(&v->target) &&
	    vm_disk_attach(v->vm, &v->target, ATTACH_MS, NULL, err) < 0) {
		xvm_destroy(x, v);
		return -1;
	}
	if (mount_target(x, v, err) < 0) {
		xvm_destroy(x, v);
		return -1;
	}
	v->dirty = false;
	return 0;
}

/* Bring the landing place to its start state: empty, or a fresh disk. */
/*
 * Bring the landing place to its start state (empty, or a fresh disk) and drop the guest's
 * caches when drop is set; one guest command where possible, since each costs ~0.15 s under TCG.
 */
static int reset_landing(struct exec *x, struct xvm *v, const struct xcell *c, bool drop,
			 char **err)
{
#define DROP_CMD "sync && echo 3 > /proc/sys/vm/drop_caches"
	if (!v->dirty)
		return drop ? guest_sh(v->vm, DROP_CMD, HOUSEKEEPING_MS, err) : 0;
	if (c->pc.run.disk == PLAN_DISK_FRESH && v->pdisk->kind == PLAN_DISK_IMAGE) {
		if (!hotpluggable(&v->target)) {
			/* cannot be hot-plugged: a fresh disk needs a new boot */
			xvm_destroy(x, v);
			return xvm_boot(x, v, err);
		}
		/* the block method unmounts the target itself (it writes the raw device) */
		if (guest_sh(v->vm,
			     "if grep -q ' " TARGET_MNT " ' /proc/mounts; then umount " TARGET_MNT
			     "; fi",
			     HOUSEKEEPING_MS, err) < 0)
			return -1;
		if (vm_disk_detach(v->vm, TARGET_SERIAL, ATTACH_MS, err) < 0)
			return -1;
		if (target_create(&v->target, err) < 0)
			return -1;
		if (vm_disk_attach(v->vm, &v->target, ATTACH_MS, NULL, err) < 0)
			return -1;
		if (mount_target(x, v, err) < 0)
			return -1;
		v->dirty = false;
		return drop ? guest_sh(v->vm, DROP_CMD, HOUSEKEEPING_MS, err) : 0;
	}
	if (guest_sh(v->vm,
		     drop ? "rm -rf " LANDING " && mkdir -p " LANDING " && " DROP_CMD
			  : "rm -rf " LANDING " && mkdir -p " LANDING,
		     HOUSEKEEPING_MS, err) < 0)
		return -1;
	v->dirty = false;
	return 0;
#undef DROP_CMD
}

/* ---- results ---- */

static struct result_cell *rcell(struct exec *x, const struct xcell *c)
{
	return &x->r->cells[c->rc];
}

static struct result_error *add_error(struct exec *x, struct xcell *c, enum result_error_kind kind,
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
	if (c->xvm && c->xvm->vm) {
		char *tail = vm_console_tail(c->xvm->vm, 30);
		if (tail && *tail)
			e->serial_tail = tail;
		else
			free(tail);
	}
	return e;
}

static json_t *entry_json(const struct key_table *t, const struct plan_entry *e)
{
	json_t *o = json_pack("{s:s}", "name", e->name);
	json_t *v = key_values_json(t, e);
	json_object_update(o, v);
	json_decref(v);
	return o;
}

static json_t *cell_params(const struct exec *x, size_t i, const struct plan_cell *pc)
{
	json_t *params = json_object();
	json_object_set_new(params, "vm", entry_json(&plan_vm_keys, &pc->vm->e));
	json_object_set_new(params, "disk", entry_json(&plan_disk_keys, &pc->disk->e));
	json_object_set_new(params, "dataset", entry_json(&plan_dataset_keys, &pc->dataset->e));
	json_object_set_new(params, "method", entry_json(&plan_method_keys, &pc->method->e));
	json_object_set_new(params, "run", key_values_json(&plan_run_keys, &pc->run));
	for (size_t j = 0; j < matrix_cell_n_params(x->m, i); j++) {
		const char *k = matrix_cell_key(x->m, i, j);
		if (!json_object_get(params, k))
			json_object_set_new(params, k, json_string(matrix_cell_value(x->m, i, j)));
	}
	return params;
}

static int write_results(struct exec *x)
{
	if (!x->o->results_path)
		return 0;
	_cleanup_free_ char *err = NULL;
	x->r->provenance.finished_ms = results_now_ms();
	if (results_write(x->r, x->o->results_path, &err) < 0) {
		exec_error(x, "%s", err);
		return -1;
	}
	return 0;
}

/* ---- criteria ---- */

static bool where_matches(const struct plan_where *w, const struct plan_cell *pc)
{
	return (!w->vm || STREQ(w->vm, pc->vm->e.name)) &&
	       (!w->disk || STREQ(w->disk, pc->disk->e.name)) &&
	       (!w->dataset || STREQ(w->dataset, pc->dataset->e.name)) &&
	       (!w->method || STREQ(w->method, pc->method->e.name));
}

static const char *metric_name(enum plan_metric m)
{
	static const char *const n[] = { "throughput",    "files_per_s",    "total",
					 "phase.prepare", "phase.transfer", "phase.finalize",
					 "phase.verify",  "phase.cleanup",  "cv" };
	return n[m];
}

static void eval_criteria(struct exec *x, struct xcell *c)
{
	struct result_cell *rc = rcell(x, c);
	const struct result_stats *s = &rc->stats;
	for (size_t i = 0; i < x->p->n_criteria; i++) {
		const struct plan_criterion *cr = &x->p->criteria[i];
		if (!where_matches(&cr->where, &c->pc))
			continue;
		double v;
		switch (cr->metric) {
		case PLAN_METRIC_THROUGHPUT: v = s->bytes_per_s; break;
		case PLAN_METRIC_FILES_PER_S: v = s->files_per_s; break;
		case PLAN_METRIC_TOTAL: v = s->total.median * 1e9; break;
		case PLAN_METRIC_CV: v = s->total.cv * 100.0; break;
		default: v = s->phase[cr->metric - PLAN_METRIC_PREPARE].median * 1e9; break;
		}
		bool bad =
		    !isfinite(v) || (cr->has_min && v < cr->min) || (cr->has_max && v > cr->max);
		if (!bad)
			continue;
		/* the value in the units the plan wrote its bound in */
		_cleanup_free_ char *val = NULL;
		if (!isfinite(v))
			val = xstrdup("undefined");
		else if (cr->metric == PLAN_METRIC_THROUGHPUT)
			val = xasprintf("%.3g MB/s", v / 1e6);
		else if (cr->metric == PLAN_METRIC_FILES_PER_S)
			val = xasprintf("%.3g files/s", v);
		else if (cr->metric == PLAN_METRIC_CV)
			val = xasprintf("%.3g%%", v);
		else
			val = xasprintf("%.3f s", v / 1e9);
		struct result_error *e = result_cell_add_error(
		    rc, ERROR_CRITERION, "criterion %s:%d: %s is %s, expected %s%s%s%s%s",
		    cr->pos.file, cr->pos.line, metric_name(cr->metric), val,
		    cr->has_min ? "at least " : "", cr->has_min ? cr->min_text : "",
		    cr->has_min && cr->has_max ? " and " : "", cr->has_max ? "at most " : "",
		    cr->has_max ? cr->max_text : "");
		e->run = -1;
		e->phase = -1;
	}
}

/* A cell is over: statistics, criteria, status, results file. */
static void finish_cell(struct exec *x, struct xcell *c)
{
	if (c->done)
		return;
	c->done = true;
	x->n_finished++;
	struct result_cell *rc = rcell(x, c);
	rc->finished_ms = results_now_ms();
	if (rc->status == STATUS_SKIPPED) {
		progress_line(x, "[%zu/%zu] %s: skipped: %s", x->n_finished, x->n_active, c->pc.id,
			      rc->skip_reason);
		write_results(x);
		return;
	}
	results_cell_compute_stats(rc);
	bool infra = false, integrity = false;
	for (size_t i = 0; i < rc->n_errors; i++) {
		if (rc->errors[i].kind == ERROR_INTEGRITY)
			integrity = true;
		else
			infra = true;
	}
	if (!infra && !integrity)
		eval_criteria(x, c);
	bool crit = false;
	for (size_t i = 0; i < rc->n_errors; i++)
		crit |= rc->errors[i].kind == ERROR_CRITERION;
	rc->status = infra ? STATUS_ERROR : integrity || crit ? STATUS_FAILED : STATUS_PASSED;
	if (rc->status != STATUS_PASSED && x->o->fail_fast)
		x->stop = true;
	progress_line(x, "[%zu/%zu] %s: %s%s%s", x->n_finished, x->n_active, c->pc.id,
		      result_status_name(rc->status), rc->n_errors ? ": " : "",
		      rc->n_errors ? rc->errors[0].message : "");
	write_results(x);
}

/* After a failure: is the guest still usable? Destroy it when not, so the next cell re-boots. */
static void check_vm(struct exec *x, struct xvm *v)
{
	if (!v->vm)
		return;
	virDomainPtr d = vm_domain(v->vm);
	int active = virDomainIsActive(d);
	_cleanup_free_ char *err = NULL;
	bool ok = active == 1;
	for (int i = 0; ok && i < 5; i++) {
		free(err);
		err = NULL;
		if (agent_ping(d, 2, &err) == 0)
			break;
		if (i == 4 || run_interrupted())
			ok = false;
		else
			sleep(1);
	}
	if (!ok) {
		if (x->o->verbose)
			progress_line(x, "the guest %s broke; the next cell boots a new one",
				      vm_name(v->vm));
		xvm_destroy(x, v);
	}
}

/* ---- one run ---- */

static int do_verify_default(struct method_ctx *ctx)
{
	bool symlinks = true;
	return method_verify_dir(ctx, ctx->landing, symlinks);
}

/* The fault FERRY_TEST_FAULT asks for in this cell ("KIND@CELL;KIND@CELL": cell ids hold commas),
 * or NULL. */
static char *fault_for(const char *spec, const char *cell)
{
	if (!spec)
		return NULL;
	_cleanup_free_ char *dup = xstrdup(spec);
	for (char *sv = NULL, *t = strtok_r(dup, ";", &sv); t; t = strtok_r(NULL, ";", &sv)) {
		char *at = strchr(t, '@');
		if (at && STREQ(at + 1, cell))
			return xstrndup(t, (size_t)(at - t));
	}
	return NULL;
}

static void test_fault(struct exec *x, struct xcell *c)
{
	if (c->runs_done != 0)
		return;
	_cleanup_free_ char *kind = fault_for(x->fault, c->pc.id);
	if (!kind)
		return;
	struct vm *vm = c->xvm->vm;
	_cleanup_free_ char *err = NULL;
	if (STREQ(kind, "destroy")) {
		virDomainDestroy(vm_domain(vm));
	} else if (STREQ(kind, "killga")) {
		/* keep init from respawning it: replace the binary's path, then kill */
		const char *argv[] = { "/bin/sh", "-c",
				       "(sleep 1; mv /usr/sbin/qemu-ga /usr/sbin/qemu-ga.off; "
				       "killall -9 qemu-ga) >/dev/null 2>&1 </dev/null &",
				       NULL };
		struct agent_exec_result r = { 0 };
		agent_exec(vm_domain(vm), argv, NULL, 0, 10000, &r, &err);
		agent_exec_result_clear(&r);
		sleep(3);
	} else if (STREQ(kind, "fill")) {
		guest_sh(vm, "dd if=/dev/zero of=" LANDING "/fill bs=1M 2>/dev/null; true",
			 HOUSEKEEPING_MS, &err);
	}
}

/* Returns 0 when the run was recorded, -1 when the cell failed (error recorded). */
static int do_run(struct exec *x, struct xcell *c)
{
	struct xvm *v = c->xvm;
	bool warmup = c->warm_done < c->pc.run.warmup;
	_cleanup_free_ char *err = NULL;
	double cu0, cs0, cu1, cs1;
	results_cpu_now(&cu0, &cs0);

	progress(x, c, "boot");
	if (!v->vm && xvm_boot(x, v, &err) < 0) {
		add_error(x, c, ERROR_INFRA, -1, -1, err, NULL, virGetLastErrorMessage());
		return -1;
	}
	progress(x, c, "reset");
	bool drop = !warmup && c->pc.run.caches == PLAN_CACHES_DROP;
	if (reset_landing(x, v, c, drop, &err) < 0) {
		add_error(x, c, ERROR_INFRA, -1, -1, err, NULL, NULL);
		check_vm(x, v);
		return -1;
	}
	if (drop)
		drop_host_caches();

	struct method_ctx *ctx = &c->ctx;
	ctx->vm = v->vm;
	ctx->dom = vm_domain(v->vm);
	ctx->landing = LANDING;
	ctx->target_dev = v->target_dev;
	ctx->target_disk = v->pdisk->kind == PLAN_DISK_IMAGE ? &v->target : NULL;
	ctx->run_index = c->runs_done;
	ctx->warmup = warmup;
	ctx->bytes = c->man->bytes;
	ctx->files = c->man->files;
	ctx->timeout_ms = ns_to_ms(c->pc.run.timeout);

	struct result_run *rr = result_cell_add_run(rcell(x, c), warmup);
	unsigned ri = rr->index;
	double ph[PHASE_COUNT];
	for (int i = 0; i < PHASE_COUNT; i++)
		ph[i] = NAN;
	int (*hooks[])(struct method_ctx *) = { c->ops->prepare, c->ops->transfer,
						c->ops->finalize };
	static const char *const names[] = { "prepare", "transfer", "finalize", "verify",
					     "cleanup" };
	int failed_phase = -1;
	bool integrity_ok = true;
	v->dirty = true;
	uint64_t run_start = now_ns();
	for (int i = 0; i < 3 && failed_phase < 0; i++) {
		if (run_interrupted()) {
			failed_phase = i;
			method_fail(ctx, ERROR_INFRA, NULL, "interrupted");
			break;
		}
		if (i == PHASE_TRANSFER)
			test_fault(x, c);
		progress(x, c, names[i]);
		method_error_clear(&ctx->err);
		uint64_t t = now_ns();
		int rc = hooks[i] ? hooks[i](ctx) : 0;
		ph[i] = hooks[i] ? secs(now_ns() - t) : 0.0; /* a phase the method does not have */
		if (rc < 0)
			failed_phase = i;
	}
	if (failed_phase < 0) {
		if (x->corrupt && !warmup) {
			_cleanup_free_ char *q = xasprintf("%s/%s", LANDING, x->corrupt);
			_cleanup_free_ char *qq = method_shell_quote(q);
			_cleanup_free_ char *cmd = xasprintf(
			    "printf '\\132\\132\\132\\132' | dd of=%s bs=4 count=1 conv=notrunc "
			    "2>/dev/null",
			    qq);
			guest_sh(v->vm, cmd, HOUSEKEEPING_MS, &err);
		}
		progress(x, c, "verify");
		method_error_clear(&ctx->err);
		uint64_t t = now_ns();
		int rc = c->ops->verify ? c->ops->verify(ctx) : do_verify_default(ctx);
		ph[PHASE_VERIFY] = secs(now_ns() - t);
		if (rc < 0) {
			failed_phase = PHASE_VERIFY;
			integrity_ok = ctx->err.kind != ERROR_INTEGRITY;
		}
	}
	/* keep the error of the failed phase; cleanup's own error only when nothing else failed */
	struct method_error ferr = ctx->err;
	memset(&ctx->err, 0, sizeof(ctx->err));
	progress(x, c, "cleanup");
	uint64_t t = now_ns();
	int crc = c->ops->cleanup ? c->ops->cleanup(ctx) : 0;
	ph[PHASE_CLEANUP] = c->ops->cleanup ? secs(now_ns() - t) : 0.0;
	if (crc < 0 && failed_phase < 0) {
		failed_phase = PHASE_CLEANUP;
		method_error_clear(&ferr);
		ferr = ctx->err;
		memset(&ctx->err, 0, sizeof(ctx->err));
	} else {
		method_error_clear(&ctx->err);
	}
	uint64_t run_ns = now_ns() - run_start;

	rr = &rcell(x, c)->runs[ri];
	for (int i = 0; i < PHASE_COUNT; i++)
		rr->phase[i] = ph[i];
	rr->total = result_run_total(rr);
	rr->bytes = ctx->bytes;
	rr->files = ctx->files;
	rr->integrity_ok = integrity_ok && failed_phase < 0;
	results_cpu_now(&cu1, &cs1);
	rcell(x, c)->cpu_user_s += cu1 - cu0;
	rcell(x, c)->cpu_sys_s += cs1 - cs0;
	c->runs_done++;

	if (failed_phase < 0 && run_ns > c->pc.run.timeout) {
		_cleanup_free_ char *lim = format_duration(c->pc.run.timeout);
		add_error(x, c, ERROR_TIMEOUT, (int)ri, -1, "", NULL, NULL);
		struct result_cell *rc = rcell(x, c);
		free(rc->errors[rc->n_errors - 1].message);
		rc->errors[rc->n_errors - 1].message = xasprintf(
		    "run %u took %.1f s, longer than the run timeout %s", ri, secs(run_ns), lim);
		rr->integrity_ok = false;
		method_error_clear(&ferr);
		return -1;
	}
	if (failed_phase >= 0) {
		_cleanup_free_ char *msg =
		    xasprintf("run %u, %s: %s", ri, names[failed_phase],
			      ferr.message ? ferr.message : "failed without a message");
		add_error(x, c, ferr.kind, (int)ri, failed_phase, msg, ferr.agent_message,
			  ferr.libvirt_message);
		method_error_clear(&ferr);
		if (!run_interrupted())
			check_vm(x, v);
		return -1;
	}
	method_error_clear(&ferr);
	if (warmup) {
		c->warm_done++;
	} else {
		c->samples = xrealloc(c->samples, (c->n_samples + 1) * sizeof(double));
		c->samples[c->n_samples++] = rr->total;
		c->measured_s += rr->total;
		x->st->measured_s += rr->total;
	}
	if (!x->o->live_status)
		progress_line(x,
			      "%s run %u%s: total %.3f s (prepare %.3f, transfer %.3f, finalize "
			      "%.3f; verify %.3f, cleanup %.3f)",
			      c->pc.id, ri, warmup ? " (warmup)" : "", rr->total, ph[0], ph[1],
			      ph[2], ph[3], ph[4]);
	return 0;
}

/* Whether the cell wants another run (and records why it stopped). */
static bool cell_wants_run(struct exec *x, struct xcell *c)
{
	if (c->done)
		return false;
	if (c->warm_done < c->pc.run.warmup)
		return true;
	const struct plan_repeat *rp = &c->pc.run.repeat;
	struct stats_repeat_rule rule = {
		.min = rp->min ? rp->min : 1,
		.max = rp->max < rp->min ? rp->min : rp->max,
		.until_cv = rp->until_cv / 100.0,
		.budget = secs(rp->budget),
	};
	enum stats_stop s = stats_repeat_next(c->samples, c->n_samples, &rule, c->measured_s);
	if (s != STATS_CONTINUE) {
		rcell(x, c)->stop_reason = (int)s;
		return false;
	}
	if (c->pc.run.cell_timeout && now_ns() - c->started_ns > c->pc.run.cell_timeout) {
		_cleanup_free_ char *lim = format_duration(c->pc.run.cell_timeout);
		struct result_error *e = result_cell_add_error(
		    rcell(x, c), ERROR_TIMEOUT,
		    "cell took longer than its timeout %s after %u runs", lim, c->runs_done);
		e->run = -1;
		e->phase = -1;
		return false;
	}
	return true;
}

static void cell_begin(struct exec *x, struct xcell *c)
{
	if (c->started_ns)
		return;
	c->started_ns = now_ns();
	rcell(x, c)->started_ms = results_now_ms();
}

/* One step for cell c: a run, or finishing it. Returns false when the cell is over. */
static bool cell_step(struct exec *x, struct xcell *c)
{
	cell_begin(x, c);
	if (!cell_wants_run(x, c)) {
		finish_cell(x, c);
		return false;
	}
	int rc = do_run(x, c);
	if (run_interrupted()) {
		x->stop = true;
		return false;
	}
	if (rc < 0) {
		finish_cell(x, c);
		return false;
	}
	if (c->pc.run.vm == PLAN_VM_PER_RUN)
		xvm_destroy(x, c->xvm);
	return true;
}

/* ---- setup ---- */

static char *needs_key(const struct xcell *c)
{
	const struct method_boot_needs *n = &c->needs;
	_cleanup_free_ char *k = xasprintf(
	    "vm=%s|disk=%s|share=%s:%s:%d:%d:%d|nic=%d", c->pc.vm->e.name, c->pc.disk->e.name,
	    n->share_dir ? n->share_dir : "", n->share_tag ? n->share_tag : "", (int)n->share_mode,
	    (int)n->share_readonly, (int)n->share_driver, (int)n->nic);
	for (size_t i = 0; i < n->n_channels; i++) {
		char *k2 = xasprintf("%s|ch=%s", k, n->channels[i]);
		free(k);
		k = k2;
	}
	for (size_t i = 0; i < n->n_disks; i++) {
		char *k2 = xasprintf("%s|d=%s", k, n->disks[i].path);
		free(k);
		k = k2;
	}
	if (c->pc.run.vm != PLAN_VM_SHARED) {
		char *k2 = xasprintf("%s|cell=%s", k, c->pc.id);
		free(k);
		k = k2;
	}
	return TAKE_PTR(k);
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

static void dataset_provenance(struct exec *x, const struct xcell *c)
{
	const char *name = c->pc.dataset->e.name;
	for (size_t i = 0; i < x->r->provenance.n_datasets; i++)
		if (STREQ(x->r->provenance.datasets[i].name, name))
			return;
	char hex[65];
	sha256_hex(c->man->digest, hex);
	results_add_dataset(x->r, name, hex, entry_json(&plan_dataset_keys, &c->pc.dataset->e));
}

static int prepare_cell(struct exec *x, struct xcell *c)
{
	_cleanup_free_ char *err = NULL;
	c->ops = method_find(c->pc.method->type);
	if (!c->ops) {
		_cleanup_free_ char *why =
		    xasprintf("method type '%s' is not built into this ferry",
			      key_find(&plan_method_keys, "type")->values[c->pc.method->type]);
		skip_cell(x, c, why);
		return 0;
	}
	{
		/* what no host can do (vfat/ntfs targets, guest OS, archives): the rules table */
		_cleanup_free_ char *why = plan_rules_skip(x->p, &c->pc);
		if (why) {
			skip_cell(x, c, why);
			return 0;
		}
	}
	exec_dataset_spec(c->pc.dataset, &c->spec);
	c->cell_dir = run_path(x->run, "cells", c->pc.id);
	mkdir(c->cell_dir, 0755);
	struct method_ctx *ctx = &c->ctx;
	*ctx = (struct method_ctx){
		.plan = x->p,
		.cell = &c->pc,
		.method = c->pc.method,
		.disk = c->pc.disk,
		.pds = c->pc.dataset,
		.spec = &c->spec,
		.run = x->run,
		.conn = x->conn,
		.cell_dir = c->cell_dir,
		.timeout_ms = ns_to_ms(c->pc.run.timeout),
	};
	method_error_clear(&ctx->err);
	c->ctx_ready = true;
	if (c->ops->supports) {
		_cleanup_free_ char *why = c->ops->supports(ctx);
		if (why) {
			skip_cell(x, c, why);
			return 0;
		}
	}
	if (dataset_get(&c->spec, NULL, &c->dinfo, &c->man, &err) < 0) {
		cell_begin(x, c);
		add_error(x, c, ERROR_INFRA, -1, -1, err, NULL, NULL);
		finish_cell(x, c);
		return 0;
	}
	if (x->o->verbose)
		progress_line(x, "dataset '%s' %s in %s", c->pc.dataset->e.name,
			      c->dinfo.generated ? "generated" : "cached", c->dinfo.dir);
	ctx->dataset_dir = c->dinfo.dir;
	ctx->manifest = c->man;
	dataset_provenance(x, c);
	if (c->ops->add_devices && c->ops->add_devices(ctx, &c->needs) < 0) {
		cell_begin(x, c);
		add_error(x, c, ctx->err.kind, -1, -1, ctx->err.message, ctx->err.agent_message,
			  NULL);
		method_error_clear(&ctx->err);
		finish_cell(x, c);
		return 0;
	}
	c->key = needs_key(c);
	for (size_t i = 0; i < x->n_vms; i++)
		if (STREQ(x->vms[i]->key, c->key))
			c->xvm = x->vms[i];
	if (!c->xvm) {
		struct xvm *v = xcalloc(1, sizeof(*v));
		v->key = xstrdup(c->key);
		v->pvm = c->pc.vm;
		v->pdisk = c->pc.disk;
		v->needs = c->needs; /* shallow: the cell keeps ownership */
		x->vms = xrealloc(x->vms, (x->n_vms + 1) * sizeof(*x->vms));
		x->vms[x->n_vms++] = v;
		c->xvm = v;
	}
	return 0;
}

static void cell_free(struct xcell *c)
{
	if (c->ctx_ready && c->ops && c->ops->free_state)
		c->ops->free_state(&c->ctx);
	method_error_clear(&c->ctx.err);
	manifest_free(c->man);
	dataset_info_clear(&c->dinfo);
	needs_clear(&c->needs);
	free(c->key);
	free(c->samples);
	free(c->cell_dir);
}

static char *file_sha256(const char *path)
{
	size_t len;
	_cleanup_free_ char *buf = read_file(path, &len);
	if (!buf)
		return NULL;
	char hex[SHA256_HEX];
	sha256_buf_hex(buf, len, hex);
	return xstrdup(hex);
}

static void provenance(struct exec *x)
{
	struct result_provenance *pv = &x->r->provenance;
	_cleanup_free_ char *err = NULL;
	results_gather_host(pv, &err);
	unsigned long v = 0;
	if (virConnectGetVersion(x->conn, &v) == 0) {
		free(pv->qemu_version);
		pv->qemu_version = xasprintf("%lu.%lu.%lu", v / 1000000, v / 1000 % 1000, v % 1000);
	}
	if (virConnectGetLibVersion(x->conn, &v) == 0) {
		free(pv->libvirt_version);
		pv->libvirt_version =
		    xasprintf("%lu.%lu.%lu", v / 1000000, v / 1000 % 1000, v % 1000);
	}
	free(pv->guest_kernel_sha256);
	pv->guest_kernel_sha256 = file_sha256(x->gf.kernel);
	free(pv->guest_initramfs_sha256);
	pv->guest_initramfs_sha256 = xstrdup(x->gf.initramfs_sha256);
	if (!pv->started_ms)
		pv->started_ms = results_now_ms();
}

static void shuffle(size_t *a, size_t n, uint64_t seed)
{
	uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
	for (size_t i = n; i > 1; i--) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		size_t j = (size_t)(s % i);
		size_t t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

/* Run the cells that share one VM, in the plan's order. */
static void run_group(struct exec *x, struct xvm *v)
{
	size_t *idx = xcalloc(x->n_cells, sizeof(*idx));
	size_t n = 0;
	for (size_t i = 0; i < x->n_cells; i++)
		if (x->cells[i].active && !x->cells[i].done && x->cells[i].xvm == v)
			idx[n++] = i;
	if (n == 0) {
		free(idx);
		return;
	}
	const struct plan_run *first = &x->cells[idx[0]].pc.run;
	if (first->order == PLAN_ORDER_SHUFFLED)
		shuffle(idx, n, first->seed);
	if (first->order == PLAN_ORDER_INTERLEAVED) {
		bool any = true;
		while (any && !x->stop) {
			any = false;
			for (size_t i = 0; i < n && !x->stop; i++)
				if (!x->cells[idx[i]].done)
					any |= cell_step(x, &x->cells[idx[i]]);
		}
	} else {
		for (size_t i = 0; i < n && !x->stop; i++)
			while (!x->stop && cell_step(x, &x->cells[idx[i]]))
				;
	}
	/* a cell may still be open when the loop stopped early */
	free(idx);
	xvm_destroy(x, v);
}

int exec_plan(const struct plan *p, const struct matrix *m, const struct exec_opts *o,
	      struct results **out, struct exec_stats *st, char **err)
{
	struct exec X = { .p = p, .m = m, .o = o, .st = st }, *x = &X;
	*st = (struct exec_stats){ 0 };
	x->t0 = now_ns();
	x->corrupt = getenv("FERRY_TEST_CORRUPT");
	x->fault = getenv("FERRY_TEST_FAULT");
	int code = EXEC_EXIT_OK;

	x->r = o->resume ? o->resume : results_new();
	*out = x->r;
	{
		size_t len = 0;
		_cleanup_free_ char *text = read_file(o->plan_path, &len);
		results_set_plan(x->r, p->name, o->plan_path, text ? text : "", text ? len : 0);
	}
	if (guest_locate(NULL, &x->gf, err) < 0)
		return EXEC_EXIT_INFRA;
	const char *uri = o->connect ? o->connect : p->connect;
	x->conn = vm_connect(uri, err);
	if (!x->conn) {
		guest_files_clear(&x->gf);
		return EXEC_EXIT_INFRA;
	}
	x->run = run_open(err);
	if (!x->run) {
		virConnectClose(x->conn);
		guest_files_clear(&x->gf);
		return EXEC_EXIT_INFRA;
	}
	provenance(x);

	size_t n = matrix_n_cells(m);
	x->cells = xcalloc(n, sizeof(*x->cells));
	x->n_cells = n;
	for (size_t i = 0; i < n; i++) {
		struct xcell *c = &x->cells[i];
		c->index = i;
		plan_cell(p, m, i, &c->pc);
		if (o->shard_n && !shard_contains(i, o->shard_k, o->shard_n))
			continue;
		struct result_cell *rc = results_find_cell(x->r, c->pc.id);
		if (rc && o->resume && result_cell_finished(rc, o->rerun_failed))
			continue;
		if (rc) {
			result_cell_reset(rc);
		} else {
			rc = results_add_cell(x->r, c->pc.id);
			for (size_t j = 0; j < matrix_cell_n_params(m, i); j++)
				result_cell_add_axis(rc, matrix_cell_key(m, i, j),
						     matrix_cell_value(m, i, j));
			rc->params = cell_params(x, i, &c->pc);
		}
		c->rc = (size_t)(rc - x->r->cells);
		c->active = true;
		x->n_active++;
	}
	write_results(x);
	for (size_t i = 0; i < n && !run_interrupted(); i++)
		if (x->cells[i].active)
			prepare_cell(x, &x->cells[i]);

	for (size_t i = 0; i < x->n_vms && !x->stop && !run_interrupted(); i++)
		run_group(x, x->vms[i]);

	int sig = run_interrupted();
	/* a cell cut short by an interrupt or --fail-fast stays pending, without partial runs */
	for (size_t i = 0; i < n; i++) {
		struct xcell *c = &x->cells[i];
		if (c->active && !c->done) {
			result_cell_reset(rcell(x, c));
			if (c->started_ns)
				rcell(x, c)->started_ms = 0;
		}
	}
	for (size_t i = 0; i < x->n_vms; i++)
		xvm_destroy(x, x->vms[i]);
	for (size_t i = 0; i < n; i++)
		cell_free(&x->cells[i]);
	for (size_t i = 0; i < x->n_vms; i++) {
		free(x->vms[i]->key);
		free(x->vms[i]->target_path);
		free(x->vms[i]->target_dev);
		free(x->vms[i]);
	}
	free(x->vms);
	free(x->cells);
	_cleanup_free_ char *cerr = NULL;
	if (run_close(x->run, &cerr) < 0)
		exec_error(x, "cleanup: %s", cerr);
	virConnectClose(x->conn);
	guest_files_clear(&x->gf);
	st->wall_s = secs(now_ns() - x->t0);
	write_results(x);

	size_t counts[STATUS_COUNT];
	results_count_status(x->r, counts);
	if (sig)
		code = sig == SIGTERM ? EXEC_EXIT_SIGTERM : EXEC_EXIT_SIGINT;
	else if (counts[STATUS_ERROR])
		code = EXEC_EXIT_INFRA;
	else if (counts[STATUS_FAILED])
		code = EXEC_EXIT_FAILED;
	return code;
}
