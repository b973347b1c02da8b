/* SPDX-License-Identifier: MIT */
/* Whether this host can hold a plan's run: its cells' needs against the probes (capacity-plan.h).
 */
#include "capacity-plan.h"

#include <inttypes.h>
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

/* ---- whether each cell's data fits its guest: the plan alone decides (validate checks it) ---- */

/*
 * What vm_target_create()'s `mke2fs -t ext4 -m 0` leaves of `size` bytes for files: the inode
 * tables (a 256-byte inode per 16 KiB, per 4 KiB below 512 MiB: mke2fs.conf's "small"), the
 * journal (ext2fs_default_journal_size(), in 4 KiB blocks) and 1/64 for bitmaps, group
 * descriptors and slack; and its inodes, less the 11 ext4 reserves.
 */
static void ext4_room(uint64_t size, uint64_t *bytes, uint64_t *inodes)
{
	static const struct {
		uint64_t below, journal; /* filesystem blocks, journal blocks */
	} j[] = { { 2048, 0 },
		  { 32768, 1024 },
		  { 256 << 10, 4096 },
		  { 512 << 10, 8192 },
		  { 4096 << 10, 16384 },
		  { 8192 << 10, 32768 },
		  { 16384 << 10, 65536 },
		  { 32768 << 10, 131072 },
		  { UINT64_MAX, 262144 } };
	uint64_t blocks = size / 4096, journal = 0;
	for (size_t i = 0; i < ELEMENTSOF(j); i++)
		if (blocks < j[i].below) {
			journal = j[i].journal;
			break;
		}
	uint64_t n = size / (size < (UINT64_C(512) << 20) ? 4096 : 16384);
	uint64_t meta = n * 256 + journal * 4096 + size / 64;
	*bytes = meta < size ? size - meta : 0;
	*inodes = n > 11 ? n - 11 : 0;
}

/* A fit's refusal: "cell 'ID': WHAT needs NEED and HAS holds ROOM: FIX". */
static char *fit_error(const struct plan_cell *c, const char *what, uint64_t need, const char *has,
		       uint64_t room, const char *fix)
{
	_cleanup_free_ char *n = human_size(need), *r = human_size(room);
	return xasprintf("cell '%s': %s %s, and %s %s: %s", c->id, what, n, has, r, fix);
}

/* Why the cell's data cannot land in its guest, or NULL: the dataset on the target disk (a
 * tmpfs's size, the ext4 that ferry makes on an image, or the raw device the method writes)
 * and what the method stages in the guest's RAM beside a tmpfs target (method_needs). */
static char *cell_fit(const struct plan_cell *c, uint64_t data, uint64_t files, uint64_t inodes)
{
	const struct method_ops *ops = method_of(c->method);
	const struct plan_disk *d = c->disk;
	const char *vm = c->vm->e.name, *dn = d->e.name;
	uint64_t stage = ops && ops->needs.guest_ram_bytes
			     ? ops->needs.guest_ram_bytes(c->method, data, files)
			     : 0;
	uint64_t ram = c->vm->memory / 100 * METHOD_GUEST_STAGE_PCT;
	_cleanup_free_ char *disk_fix =
	    xasprintf("raise disks.%s.size or use a smaller dataset", dn);
	_cleanup_free_ char *mem_fix =
	    xasprintf("raise vms.%s.memory or use a smaller dataset", vm);
	_cleanup_free_ char *has = NULL;
	if (d->kind == PLAN_DISK_TMPFS) {
		has = xasprintf("disk '%s' (a tmpfs) holds", dn);
		if (data > d->size)
			return fit_error(c, "the dataset takes", data, has, d->size, disk_fix);
		free(has);
		has = xasprintf("vm '%s' gives tmpfs at most %d%% of its memory,", vm,
				METHOD_GUEST_STAGE_PCT);
		if (data > ram - (stage < ram ? stage : ram))
			return fit_error(c,
					 stage ? "the dataset on a tmpfs disk and what the method "
						 "stages in RAM take"
					       : "the dataset on a tmpfs disk takes",
					 data + stage, has, ram, mem_fix);
	} else if (ops && ops->needs.target_raw) {
		has = xasprintf("disk '%s' holds", dn);
		if (data > d->size)
			return fit_error(c, "the method writes the dataset's stream of", data, has,
					 d->size, disk_fix);
	} else if (d->filesystem == PLAN_DISK_FS_EXT4) {
		uint64_t room, n_inodes;
		ext4_room(d->size, &room, &n_inodes);
		has = xasprintf("the ext4 ferry makes on disk '%s' holds", dn);
		if (data > room)
			return fit_error(c, "the dataset takes", data, has, room, disk_fix);
		if (inodes > n_inodes) {
			_cleanup_free_ char *h =
			    xasprintf("the ext4 ferry makes on disk '%s' has", dn);
			return xasprintf("cell '%s': the dataset has %" PRIu64
					 " files and directories, and %s %" PRIu64 " inodes: %s",
					 c->id, inodes, h, n_inodes, disk_fix);
		}
	}
	if (stage > ram) {
		_cleanup_free_ char *need = human_size(stage), *mem = human_size(c->vm->memory),
				    *cap = human_size(ram);
		return xasprintf("cell '%s': method '%s' (type %s) stages the dataset's %s in the "
				 "guest's RAM, and vm '%s' has %s of memory, of which a staging "
				 "tmpfs takes at most %s (%d%%): %s",
				 c->id, c->method->e.name, ops->name, need, vm, mem, cap,
				 METHOD_GUEST_STAGE_PCT, mem_fix);
	}
	return NULL;
}

int capacity_plan_guests(const struct plan *p, const struct matrix *m, char **err)
{
	size_t n = matrix_n_cells(m), refused = 0;
	char *first = NULL;
	for (size_t i = 0; i < n; i++) {
		struct plan_cell c;
		plan_cell(p, m, i, &c);
		struct dataset_spec s;
		dataset_spec_from_plan(c.dataset, &s);
		if (s.path) /* a host folder: its size is known when it is scanned, at run time */
			continue;
		char *why =
		    cell_fit(&c, capacity_dataset_bytes(&s), s.files, capacity_dataset_inodes(&s));
		if (why && !refused++)
			first = why;
		else
			free(why);
	}
	if (!refused)
		return 0;
	*err = refused == 1
		   ? first
		   : xasprintf("%s (and %zu more cells that do not fit)", first, refused - 1);
	if (refused > 1)
		free(first);
	return -1;
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
	}
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
	return capacity_check(needs, ELEMENTSOF(needs), space, n_space, err);
}
