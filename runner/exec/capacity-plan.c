/* SPDX-License-Identifier: MIT */
/* Whether this host can hold a plan's run: its cells' needs against the probes (capacity-plan.h).
 */
#include "capacity-plan.h"

#include <unistd.h>

#include "capacity.h"
#include "methods/method.h"
#include "dataset-plan.h"
#include "dataset.h"
#include "matrix.h"
#include "plan.h"
#include "units.h"
#include "util.h"

/* What QEMU and the guest's page tables take beyond the guest's RAM (measured: ~150 MiB). */
#define QEMU_OVERHEAD (UINT64_C(256) << 20)

/* Guests that take turns under vm: per-cell (order.c), grouped by run.order and seed. */
struct turns {
	enum plan_order order;
	uint64_t seed, mem;
};

/* What the cells of a plan need, summed or the largest, as the loop over them finds it. */
struct plan_needs {
	uint64_t gen, gen_inodes; /* the datasets to generate: bytes, files and directories */
	/* the largest cell's own bytes and inodes in the run directory (a share's staging copy
	   holds one inode per file of its dataset) */
	uint64_t cell_max, cell_inodes_max;
	uint64_t mem_max; /* the largest VM */
	const struct plan_dataset **seen;
	size_t n_seen;
	struct turns *turns;
	size_t n_turns;
	/* the first cell whose method stages more in the guest's RAM than its VM can hold
	   (ram_first.id NULL: none), and how much */
	struct plan_cell ram_first;
	uint64_t ram_need;
};

/* A dataset counts once, and only when it is generated into a cache that does not hold it. */
static void add_dataset(struct plan_needs *pn, const struct plan_dataset *d,
			const struct dataset_spec *s, const char *cache_dir, uint64_t data,
			uint64_t data_inodes)
{
	for (size_t k = 0; k < pn->n_seen; k++)
		if (pn->seen[k] == d)
			return;
	pn->seen[pn->n_seen++] = d;
	if (!s->path && !capacity_dataset_cached(s, cache_dir)) {
		if (!add_u64(pn->gen, data, &pn->gen))
			pn->gen = UINT64_MAX;
		if (!add_u64(pn->gen_inodes, data_inodes, &pn->gen_inodes))
			pn->gen_inodes = UINT64_MAX;
	}
}

/* The cell's own files in the run directory: the target disk (written out, or as far as the
 * data fills it), what its method builds or copies there, and a few dozen files (images, logs,
 * results) plus the dataset's for a method that copies them one by one. */
static void add_cell_files(struct plan_needs *pn, const struct plan_cell *c, uint64_t data,
			   uint64_t data_inodes)
{
	uint64_t need = 0;
	if (c->disk->kind == PLAN_DISK_IMAGE)
		need = c->disk->allocation == PLAN_ALLOC_SPARSE && data < c->disk->size
			   ? data
			   : c->disk->size;
	const struct method_ops *ops = method_of(c->method);
	uint64_t extra =
	    ops && ops->needs.run_dir_bytes ? ops->needs.run_dir_bytes(c->method, data) : 0;
	uint64_t inodes = 64;
	if (ops && ops->needs.run_dir_files && !add_u64(inodes, data_inodes, &inodes))
		inodes = UINT64_MAX;
	if (inodes > pn->cell_inodes_max)
		pn->cell_inodes_max = inodes;
	if (!add_u64(need, extra, &need))
		need = UINT64_MAX;
	if (need > pn->cell_max)
		pn->cell_max = need;
}

/* What the cell's method stages in the guest's RAM (method_needs.guest_ram_bytes) against the
 * staging tmpfs its VM's memory allows: the first cell short of it is kept for the message. */
static void add_cell_guest_ram(struct plan_needs *pn, const struct plan_cell *c, uint64_t data)
{
	const struct method_ops *ops = method_of(c->method);
	if (pn->ram_first.id || !ops || !ops->needs.guest_ram_bytes)
		return;
	uint64_t need = ops->needs.guest_ram_bytes(c->method, data);
	if (need > c->vm->memory / 100 * METHOD_GUEST_STAGE_PCT) {
		pn->ram_first = *c;
		pn->ram_need = need;
	}
}

/* The message for a cell whose guest cannot stage its data, or NULL. */
static char *guest_ram_error(const struct plan_needs *pn)
{
	if (!pn->ram_first.id)
		return NULL;
	const struct plan_cell *c = &pn->ram_first;
	_cleanup_free_ char *need = format_size(pn->ram_need), *mem = format_size(c->vm->memory),
			    *cap = human_size(c->vm->memory / 100 * METHOD_GUEST_STAGE_PCT);
	return xasprintf(
	    "cell '%s': method '%s' (type %s) stages the dataset's %s in the guest's "
	    "RAM, and vm '%s' has %s of memory, of which a staging tmpfs takes at most "
	    "%s (%d%%): raise vms.%s.memory or use a smaller dataset",
	    c->id, c->method->e.name, method_of(c->method)->name, need, c->vm->e.name, mem, cap,
	    METHOD_GUEST_STAGE_PCT, c->vm->e.name);
}

/*
 * The largest VM, not a sum: under every run.vm mode the executor runs its VM groups one after
 * the other and destroys each group's guest before the next boots (schedule.c run_group();
 * per-run destroys after every run), so one guest is alive at a time (test-executor
 * /executor/one-guest-at-a-time holds it); except per-cell cells that take turns (order.c):
 * their guests stay booted, paused, so they count together (by run.order and seed, as order.c
 * groups them).
 */
static void add_cell_memory(struct plan_needs *pn, const struct plan_cell *c)
{
	uint64_t mem = c->vm->memory + QEMU_OVERHEAD;
	if (mem > pn->mem_max)
		pn->mem_max = mem;
	if (c->run.vm == PLAN_VM_PER_CELL && c->run.order != PLAN_ORDER_SEQUENTIAL) {
		size_t k = 0;
		while (k < pn->n_turns &&
		       (pn->turns[k].order != c->run.order || pn->turns[k].seed != c->run.seed))
			k++;
		if (k == pn->n_turns)
			pn->turns[pn->n_turns++] = (struct turns){ c->run.order, c->run.seed, 0 };
		if (!add_u64(pn->turns[k].mem, mem, &pn->turns[k].mem))
			pn->turns[k].mem = UINT64_MAX;
	}
}

/* The memory needed at once, and what it is for: guests that take turns count together when
 * the executor keeps them booted, only within half the host's memory (else one at a time). */
static uint64_t memory_need(const struct plan_needs *pn, const char **what)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	uint64_t total = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
	uint64_t mem_max = pn->mem_max;
	*what = "the largest VM";
	for (size_t k = 0; k < pn->n_turns; k++)
		if (pn->turns[k].mem > mem_max && (!total || pn->turns[k].mem <= total / 2)) {
			mem_max = pn->turns[k].mem;
			*what = "the guests that take turns, kept booted";
		}
	return mem_max;
}

int capacity_plan(const struct plan *p, const struct matrix *m, const char *cache_dir,
		  const char *run_root, char **err)
{
	uint64_t cache_fs = capacity_fs_of(cache_dir), run_fs = capacity_fs_of(run_root);
	size_t n = matrix_n_cells(m);
	struct plan_needs pn = {
		.seen = xcalloc(n ? n : 1, sizeof(*pn.seen)),
		.turns = xcalloc(n ? n : 1, sizeof(*pn.turns)),
	};
	for (size_t i = 0; i < n; i++) {
		struct plan_cell c;
		plan_cell(p, m, i, &c);
		struct dataset_spec s;
		dataset_spec_from_plan(c.dataset, &s);
		uint64_t data = s.path ? 0 : capacity_dataset_bytes(&s);
		uint64_t data_inodes = s.path ? 0 : capacity_dataset_inodes(&s);
		add_dataset(&pn, c.dataset, &s, cache_dir, data, data_inodes);
		add_cell_files(&pn, &c, data, data_inodes);
		add_cell_memory(&pn, &c);
		add_cell_guest_ram(&pn, &c, data);
	}
	char *ram_err = guest_ram_error(&pn);
	const char *mem_what;
	uint64_t mem_max = memory_need(&pn, &mem_what);
	free(pn.turns);
	free(pn.seen);
	struct capacity_need needs[] = {
		{ "datasets to generate", cache_fs, pn.gen, pn.gen_inodes },
		{ "target disks and method images of the largest cell", run_fs, pn.cell_max,
		  pn.cell_inodes_max },
		{ mem_what, 0, mem_max, 0 },
	};
	struct capacity_space space[3] = {
		{ cache_fs, cache_dir, capacity_fs_avail(cache_dir), 0, false },
		{ 0, "memory", capacity_mem_available(), 0, false },
	};
	space[0].inodes_known = capacity_fs_inodes(cache_dir, &space[0].inodes);
	size_t n_space = 2;
	if (run_fs != cache_fs) {
		space[n_space] = (struct capacity_space){ run_fs, run_root,
							  capacity_fs_avail(run_root), 0, false };
		space[n_space].inodes_known = capacity_fs_inodes(run_root, &space[n_space].inodes);
		n_space++;
	}
	char *short_err = NULL;
	int rc = capacity_check(needs, ELEMENTSOF(needs), space, n_space, &short_err);
	if (!ram_err) {
		*err = short_err;
		return rc;
	}
	*err = rc < 0 ? xasprintf("%s; %s", ram_err, short_err) : ram_err;
	if (rc < 0)
		free(ram_err);
	free(short_err);
	return -1;
}
