/* SPDX-License-Identifier: MIT */
/* Sweeps: a key of a vm/disk/dataset/method entry as a matrix axis ("disk.cache"). */
#include <glib.h>
#include <string.h>

#include "keys.h"
#include "matrix.h"
#include "plan.h"

#define MiB (UINT64_C(1) << 20)
#define KiB (UINT64_C(1) << 10)

static struct plan *parse(const char *text, struct diag_list *d)
{
	return plan_parse_buffer("mem.yaml", text, strlen(text), d);
}

static char *joined(struct diag_list *d)
{
	GString *s = g_string_new(NULL);
	for (size_t i = 0; i < d->n; i++) {
		char *m = diag_format(&d->items[i]);
		g_string_append_printf(s, "%s%s", i ? "\n" : "", m);
		free(m);
	}
	diag_list_clear(d);
	return g_string_free(s, FALSE);
}

/* The messages of a plan that must fail to parse, or, when it parses, to expand. */
static char *errors_of(const char *text)
{
	struct diag_list d = { 0 };
	struct plan *p = parse(text, &d);
	if (p) {
		g_assert_cmpuint(d.n, ==, 0);
		struct matrix *m = plan_expand(p, 0, &d);
		g_assert_null(m);
		plan_free(p);
	}
	g_assert_cmpuint(d.n, >, 0);
	return joined(&d);
}

#define HEAD                                                                                       \
	"ferry: 1\n"                                                                               \
	"vms: {pc: {machine: pc, vcpus: 2, memory: 1GiB}}\n"                                       \
	"disks: {d: {format: raw, size: 2GiB, io: threads}}\n"                                     \
	"datasets: {s: {files: 1, size: 4MiB}}\n"                                                  \
	"methods: {dd: {type: block, block_size: 1MiB}, ag: {type: agent-file}}\n"

/* 4 buses x 2 cache modes, one disk entry: ids, odometer order, resolved entries. */
static void test_bus_cache(void)
{
	const char *text =
	    HEAD "matrix:\n"
		 "  disk.bus: [ide, sata, virtio, scsi]\n"
		 "  disk.cache: [none, writeback]\n"
		 "  method: dd\n"
		 "  exclude: [{disk.bus: ide, disk.cache: writeback}]\n"
		 "  include: [{disk.bus: virtio, disk.cache: none, disk.io: native}]\n";
	struct diag_list d = { 0 };
	struct plan *p = parse(text, &d);
	g_assert_nonnull(p);
	struct matrix *m = plan_expand(p, 0, &d);
	g_assert_cmpuint(d.n, ==, 0);
	g_assert_nonnull(m);
	g_assert_cmpuint(matrix_n_cells(m), ==, 7);
	static const char *const ids[] = {
		"vm=pc,disk=d,disk.bus=ide,disk.cache=none,dataset=s,method=dd",
		"vm=pc,disk=d,disk.bus=sata,disk.cache=none,dataset=s,method=dd",
		"vm=pc,disk=d,disk.bus=sata,disk.cache=writeback,dataset=s,method=dd",
		"vm=pc,disk=d,disk.bus=virtio,disk.cache=none,dataset=s,method=dd,disk.io=native",
		"vm=pc,disk=d,disk.bus=virtio,disk.cache=writeback,dataset=s,method=dd",
		"vm=pc,disk=d,disk.bus=scsi,disk.cache=none,dataset=s,method=dd",
		"vm=pc,disk=d,disk.bus=scsi,disk.cache=writeback,dataset=s,method=dd",
	};
	const struct plan_disk *base = plan_find_disk(p, "d");
	for (size_t i = 0; i < ELEMENTSOF(ids); i++) {
		struct plan_cell c;
		plan_cell(p, m, i, &c);
		g_assert_cmpstr(c.id, ==, ids[i]);
		g_assert_cmpuint(matrix_cell_find(m, ids[i]), ==, i);
		/* the resolved disk: the entry with the cell's swept keys, its name kept */
		g_assert_true(c.disk != base);
		g_assert_cmpstr(c.disk->e.name, ==, "d");
		g_assert_cmpuint(c.disk->size, ==, 2048 * MiB);
		g_assert_true(key_is_set(&plan_disk_keys, c.disk, "bus"));
		g_assert_true(c.vm == plan_find_vm(p, "pc")); /* not swept: the entry itself */
	}
	struct plan_cell c0, c3, c4;
	plan_cell(p, m, 0, &c0);
	plan_cell(p, m, 3, &c3);
	plan_cell(p, m, 4, &c4);
	g_assert_cmpint(c0.disk->bus, ==, PLAN_BUS_IDE);
	g_assert_cmpint(c0.disk->cache, ==, PLAN_CACHE_NONE);
	g_assert_cmpint(c0.disk->io, ==, PLAN_IO_THREADS);
	g_assert_cmpstr(c0.disk->e.sweep, ==, "disk.bus=ide,disk.cache=none");
	g_assert_cmpint(c3.disk->bus, ==, PLAN_BUS_VIRTIO);
	g_assert_cmpint(c3.disk->io, ==, PLAN_IO_NATIVE); /* added by the include entry */
	g_assert_cmpstr(c3.disk->e.sweep, ==, "disk.bus=virtio,disk.cache=none,disk.io=native");
	g_assert_cmpint(c4.disk->cache, ==, PLAN_CACHE_WRITEBACK);
	g_assert_cmpint(c4.disk->io, ==, PLAN_IO_THREADS);
	/* the entry as written is untouched */
	g_assert_cmpint(base->bus, ==, PLAN_BUS_VIRTIO);
	g_assert_null(base->e.sweep);
	/* the same cell twice gives the same resolved entry */
	struct plan_cell again;
	plan_cell(p, m, 4, &again);
	g_assert_true(again.disk == c4.disk);
	matrix_free(m);
	plan_free(p);
}

/* Values are read as the key's type and kept canonical: one value, one spelling, one id. */
static void test_canonical_values(void)
{
	const char *text = HEAD "matrix:\n"
				"  dataset.size: [4KiB]\n"
				"  method: dd\n"
				"  method.block_size: [4096, 64KiB, '1024 KiB']\n"
				"  exclude: [{method.block_size: 65536}]\n";
	struct diag_list d = { 0 };
	struct plan *p = parse(text, &d);
	g_assert_nonnull(p);
	struct matrix *m = plan_expand(p, 0, &d);
	g_assert_nonnull(m);
	g_assert_cmpuint(matrix_n_cells(m), ==, 2);
	struct plan_cell c;
	plan_cell(p, m, 0, &c);
	g_assert_cmpstr(c.id, ==,
			"vm=pc,disk=d,dataset=s,dataset.size=4KiB,method=dd,"
			"method.block_size=4KiB");
	char *bs = plan_method_get(c.method, "block_size");
	g_assert_cmpstr(bs, ==, "4KiB");
	free(bs);
	/* a shorthand mapping: `size: 4KiB` sets min and max */
	g_assert_cmpuint(c.dataset->size.min, ==, 4 * KiB);
	g_assert_cmpuint(c.dataset->size.max, ==, 4 * KiB);
	plan_cell(p, m, 1, &c);
	g_assert_cmpstr(c.id, ==,
			"vm=pc,disk=d,dataset=s,dataset.size=4KiB,method=dd,"
			"method.block_size=1MiB");
	bs = plan_method_get(c.method, "block_size");
	g_assert_cmpstr(bs, ==, "1MiB");
	free(bs);
	matrix_free(m);
	plan_free(p);

	char *e = errors_of(HEAD "matrix: {method: dd, disk.size: [1GiB, 1024MiB]}\n");
	g_assert_cmpstr(e, ==, "mem.yaml:6:40: axis 'disk.size' lists '1GiB' twice");
	g_free(e);
}

/* Nested keys (vm.nic.queues, method.archive.format), zip, and a vm sweep. */
static void test_nested_and_zip(void)
{
	const char *text = "ferry: 1\n"
			   "vms: {v: {vcpus: 4, nic: {backend: private}}}\n"
			   "disks: {d: {}}\n"
			   "datasets: {s: {size: 4KiB}}\n"
			   "methods: {n: {type: network}}\n"
			   "matrix:\n"
			   "  vm.nic.queues: [1, 4]\n"
			   "  vm.vcpus: [1, 4]\n"
			   "  method.archive.format: [none, tar]\n"
			   "  zip: [[vm.nic.queues, vm.vcpus]]\n";
	struct diag_list d = { 0 };
	struct plan *p = parse(text, &d);
	g_assert_nonnull(p);
	struct matrix *m = plan_expand(p, 0, &d);
	g_assert_cmpuint(d.n, ==, 0);
	g_assert_cmpuint(matrix_n_cells(m), ==, 4);
	struct plan_cell c;
	plan_cell(p, m, 3, &c);
	g_assert_cmpstr(c.id, ==,
			"vm=v,vm.nic.queues=4,vm.vcpus=4,disk=d,dataset=s,method=n,"
			"method.archive.format=tar");
	g_assert_cmpuint(c.vm->nic.queues, ==, 4);
	g_assert_cmpuint(c.vm->vcpus, ==, 4);
	g_assert_cmpint(c.vm->nic.backend, ==, PLAN_NIC_PRIVATE);
	g_assert_true(key_is_set(&plan_vm_keys, c.vm, "nic"));
	g_assert_true(key_is_set(&plan_nic_keys, &c.vm->nic, "queues"));
	g_assert_cmpint(c.method->archive.format, ==, PLAN_ARCHIVE_TAR);
	g_assert_cmpstr(c.vm->e.sweep, ==, "vm.nic.queues=4,vm.vcpus=4");
	matrix_free(m);
	plan_free(p);
}

/* Faults in sweep keys and values: the entry's messages, at the key or value written. */
static void test_bad_keys_and_values(void)
{
	char *e = errors_of(HEAD "matrix:\n"
				 "  method: dd\n"
				 "  disk.cach: [none]\n"
				 "  dsk.cache: [none]\n"
				 "  disk.kind: [tmpfs]\n"
				 "  vm.nic: [1]\n"
				 "  vm.nic.queues: [1, 100]\n"
				 "  disk.bus: [virtio, vritio, virtio]\n"
				 "  disk.cache.x: [1]\n"
				 "  dataset.seed: []\n"
				 "  vm.vcpus: [{a: 1}]\n"
				 "  exclude: [{disk.bus: nope}]\n"
				 "  include: [{disk.io: [native]}]\n");
	g_assert_cmpstr(
	    e, ==,
	    "mem.yaml:8:3: unknown key 'cach' in sweep 'disk.cach' (did you mean 'disk.cache'?)\n"
	    "mem.yaml:9:3: unknown axis 'dsk' in sweep 'dsk.cache' (did you mean "
	    "'disk.cache'?)\n"
	    "mem.yaml:10:3: 'disk.kind' cannot be swept: it decides which keys apply (list one "
	    "disk per kind in 'matrix.disk')\n"
	    "mem.yaml:11:3: 'vm.nic' is a mapping: sweep one of its keys ('vm.nic.model', "
	    "'vm.nic.queues', 'vm.nic.backend', 'vm.nic.network' or 'vm.nic.bridge')\n"
	    "mem.yaml:12:22: 'queues' must be between 1 and 64, not '100'\n"
	    "mem.yaml:13:22: invalid bus 'vritio' (did you mean 'virtio'?)\n"
	    "mem.yaml:13:30: axis 'disk.bus' lists 'virtio' twice\n"
	    "mem.yaml:14:3: unknown key 'x' in sweep 'disk.cache.x' ('disk.cache' has no keys)\n"
	    "mem.yaml:15:17: axis 'dataset.seed' is empty: it would make no cells\n"
	    "mem.yaml:16:14: axis 'vm.vcpus' values must be single values, not a mapping\n"
	    "mem.yaml:17:24: invalid bus 'nope' (expected 'virtio', 'scsi', 'sata' or 'ide')\n"
	    "mem.yaml:18:23: 'disk.io' must be a single value, not a list");
	g_free(e);
}

/* Every resolved cell goes through the rules table as if its entries were written so. */
static void test_rules_per_cell(void)
{
	char *e = errors_of("ferry: 1\n"
			    "vms: {q: {machine: q35}}\n"
			    "disks: {d: {format: raw, size: 2GiB, io: native}}\n"
			    "datasets: {s: {size: 4KiB}}\n"
			    "methods: {dd: {type: block}, ag: {type: agent-file}}\n"
			    "matrix:\n"
			    "  method: [dd, ag]\n"
			    "  disk.bus: [ide, virtio]\n"
			    "  disk.cache: [none, writeback]\n"
			    "  method.block_size: [4KiB]\n"
			    "  include: [{method: ag, vm.nic.queues: 4}]\n");
	g_assert_cmpstr(
	    e, ==,
	    "mem.yaml:8:3: 'io: native' cannot be used with 'cache: writeback': native AIO "
	    "needs O_DIRECT, which only cache 'none' and 'directsync' give (libvirt and QEMU "
	    "refuse it) (first in cell 'vm=q,disk=d,dataset=s,method=dd,disk.bus=ide,"
	    "disk.cache=writeback,method.block_size=4KiB')\n"
	    "mem.yaml:8:3: disk 'd' uses bus 'ide', which vm 'q' (machine q35) does not have: "
	    "ide exists only on machine pc (first in cell 'vm=q,disk=d,dataset=s,method=dd,"
	    "disk.bus=ide,disk.cache=none,method.block_size=4KiB')\n"
	    "mem.yaml:10:3: 'block_size' does not apply to type 'agent-file' (only to block) "
	    "(first in cell 'vm=q,disk=d,dataset=s,method=ag,disk.bus=ide,disk.cache=none,"
	    "method.block_size=4KiB,vm.nic.queues=4')\n"
	    "mem.yaml:11:26: 'queues: 4' needs a tap device: QEMU user networking refuses "
	    "multiple queues (set 'backend: private') (first in cell 'vm=q,disk=d,dataset=s,"
	    "method=ag,disk.bus=ide,disk.cache=none,method.block_size=4KiB,vm.nic.queues=4')");
	g_free(e);
}

/* The product of sweep axes is checked against the cap before cells are allocated. */
static void test_cap(void)
{
	GString *t = g_string_new(HEAD "matrix:\n  method: dd\n");
	static const char *const keys[] = { "vm.vcpus", "vm.memory", "disk.size", "dataset.seed" };
	for (size_t k = 0; k < ELEMENTSOF(keys); k++) {
		g_string_append_printf(t, "  %s: [", keys[k]);
		for (int i = 1; i <= 200; i++)
			g_string_append_printf(t, "%s%d%s", i > 1 ? ", " : "",
					       k == 0 ? (i % 255) + 1 : i + 100,
					       k == 1 || k == 2 ? "MiB" : "");
		g_string_append(t, "]\n");
	}
	struct diag_list d = { 0 };
	struct plan *p = parse(t->str, &d);
	g_string_free(t, TRUE);
	g_assert_nonnull(p);
	g_assert_null(plan_expand(p, 0, &d));
	char *e = joined(&d);
	g_assert_cmpstr(e, ==,
			"mem.yaml: matrix expands to 1,600,000,000 cells, over the cap of 10,000 "
			"(raise it with --max-cells)");
	g_free(e);
	plan_free(p);
}

/* The Markdown report pivots on matrix keys, sweeps included; a key the matrix lacks is an
 * error at validate, not a report that fails after the run. */
static void test_markdown_pivot(void)
{
	const char *text =
	    HEAD "matrix:\n"
		 "  disk.bus: [sata, virtio]\n"
		 "  disk.cache: [none, writeback]\n"
		 "  method: dd\n"
		 "  include: [{disk.cache: none, disk.io: native}]\n"
		 "report: {markdown: {path: out/x.md, rows: disk.bus, cols: disk.io}}\n";
	struct diag_list d = { 0 };
	struct plan *p = parse(text, &d);
	g_assert_nonnull(p);
	g_assert_cmpstr(p->report.markdown.rows, ==, "disk.bus");
	g_assert_cmpstr(p->report.markdown.cols, ==, "disk.io");
	struct matrix *m = plan_expand(p, 0, &d);
	g_assert_cmpuint(d.n, ==, 0);
	g_assert_nonnull(m);
	matrix_free(m);
	plan_free(p);

	char *e = errors_of(HEAD "matrix: {method: dd, disk.bus: [sata, virtio]}\n"
				 "report: {markdown: {path: out/x.md, rows: disk.cache}}\n");
	g_assert_cmpstr(e, ==,
			"mem.yaml:7:43: markdown rows 'disk.cache' is not a key of the matrix (a "
			"sweep must be an axis or be added by an include entry)");
	g_free(e);
	e = errors_of(HEAD "matrix: {method: dd}\n"
			   "report: {markdown: {path: out/x.md, rows: disks, cols: disk.cach}}\n");
	g_assert_cmpstr(
	    e, ==,
	    "mem.yaml:7:43: invalid rows 'disks' (expected vm, disk, dataset, method or "
	    "a swept key such as disk.cache)\n"
	    "mem.yaml:7:56: 'cols': unknown key 'cach' in sweep 'disk.cach' (did you "
	    "mean 'disk.cache'?)");
	g_free(e);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/plan-sweep/bus-cache", test_bus_cache);
	g_test_add_func("/plan-sweep/canonical-values", test_canonical_values);
	g_test_add_func("/plan-sweep/nested-and-zip", test_nested_and_zip);
	g_test_add_func("/plan-sweep/bad-keys-and-values", test_bad_keys_and_values);
	g_test_add_func("/plan-sweep/rules-per-cell", test_rules_per_cell);
	g_test_add_func("/plan-sweep/cap", test_cap);
	g_test_add_func("/plan-sweep/markdown-pivot", test_markdown_pivot);
	return g_test_run();
}
