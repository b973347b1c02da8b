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
#include "util.h"

/* What QEMU and the guest's page tables take beyond the guest's RAM (measured: ~150 MiB). */
#define QEMU_OVERHEAD (UINT64_C(256) << 20)

int capacity_plan(const struct plan *p, const struct matrix *m, const char *cache_dir,
		  const char *run_root, char **err)
{
	uint64_t cache_fs = capacity_fs_of(cache_dir), run_fs = capacity_fs_of(run_root);
	uint64_t gen = 0, cell_max = 0, mem_max = 0;
	/* inodes: the datasets' files and directories, and the largest cell's own (a share's
	   staging copy holds one per file of its dataset) */
	uint64_t gen_inodes = 0, cell_inodes_max = 0;
	size_t n = matrix_n_cells(m);
	const struct plan_dataset **seen = xcalloc(n ? n : 1, sizeof(*seen));
	size_t n_seen = 0;
	/* the guests that take turns under vm: per-cell (order.c) */
	struct turns {
		enum plan_order order;
		uint64_t seed, mem;
	} *turns = xcalloc(n ? n : 1, sizeof(*turns));
	size_t n_turns = 0;
	for (size_t i = 0; i < n; i++) {
		struct plan_cell c;
		plan_cell(p, m, i, &c);
		struct dataset_spec s;
		dataset_spec_from_plan(c.dataset, &s);
		uint64_t data = s.path ? 0 : capacity_dataset_bytes(&s);
		uint64_t data_inodes = s.path ? 0 : capacity_dataset_inodes(&s);
		bool dup = false;
		for (size_t k = 0; k < n_seen && !dup; k++)
			dup = seen[k] == c.dataset;
		if (!dup) {
			seen[n_seen++] = c.dataset;
			if (!s.path && !capacity_dataset_cached(&s, cache_dir)) {
				if (!add_u64(gen, data, &gen))
					gen = UINT64_MAX;
				if (!add_u64(gen_inodes, data_inodes, &gen_inodes))
					gen_inodes = UINT64_MAX;
			}
		}
		/* the cell's own files in the run directory: the target disk (written out, or as
		   far as the data fills it), and what its method builds or copies there */
		uint64_t need = 0;
		if (c.disk->kind == PLAN_DISK_IMAGE)
			need = c.disk->allocation == PLAN_ALLOC_SPARSE && data < c.disk->size
				   ? data
				   : c.disk->size;
		const struct method_ops *ops = method_of(c.method);
		uint64_t extra =
		    ops && ops->needs.run_dir_bytes ? ops->needs.run_dir_bytes(c.method, data) : 0;
		/* the cell's files in the run directory (images, logs, results): a few dozen */
		uint64_t inodes = 64;
		if (ops && ops->needs.run_dir_files && !add_u64(inodes, data_inodes, &inodes))
			inodes = UINT64_MAX;
		if (inodes > cell_inodes_max)
			cell_inodes_max = inodes;
		if (!add_u64(need, extra, &need))
			need = UINT64_MAX;
		if (need > cell_max)
			cell_max = need;
		/* the largest VM, not a sum: under every run.vm mode the executor runs its VM
		   groups one after the other and destroys each group's guest before the next
		   boots (schedule.c run_group(); per-run destroys after every run), so one guest
		   is alive at a time (test-executor /executor/one-guest-at-a-time holds it);
		   except per-cell cells that take turns (order.c): their guests stay booted,
		   paused, so they count together (by run.order and seed, as order.c groups them) */
		uint64_t mem = c.vm->memory + QEMU_OVERHEAD;
		if (mem > mem_max)
			mem_max = mem;
		if (c.run.vm == PLAN_VM_PER_CELL && c.run.order != PLAN_ORDER_SEQUENTIAL) {
			size_t k = 0;
			while (k < n_turns &&
			       (turns[k].order != c.run.order || turns[k].seed != c.run.seed))
				k++;
			if (k == n_turns)
				turns[n_turns++] = (struct turns){ c.run.order, c.run.seed, 0 };
			if (!add_u64(turns[k].mem, mem, &turns[k].mem))
				turns[k].mem = UINT64_MAX;
		}
	}
	/* the executor keeps them booted only within half the host's memory (else one at a time) */
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	uint64_t total = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
	const char *mem_what = "the largest VM";
	for (size_t k = 0; k < n_turns; k++)
		if (turns[k].mem > mem_max && (!total || turns[k].mem <= total / 2)) {
			mem_max = turns[k].mem;
			mem_what = "the guests that take turns, kept booted";
		}
	free(turns);
	free(seen);
	struct capacity_need needs[] = {
		{ "datasets to generate", cache_fs, gen, gen_inodes },
		{ "target disks and method images of the largest cell", run_fs, cell_max,
		  cell_inodes_max },
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
	return capacity_check(needs, ELEMENTSOF(needs), space, n_space, err);
}
