/* SPDX-License-Identifier: MIT */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "keys.h"
#include "matrix.h"
#include "plan.h"
#include "plan-text.h"
#include "units.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

static const char *full_plan =
    "ferry: 1\n"
    "name: full\n"
    "description: every section\n"
    "connect: test:///default\n"
    "vms:\n"
    "  small: {vcpus: 2, memory: 1GiB, nic: {model: virtio, queues: 1}}\n"
    "  big: {vcpus: 4, memory: 2GiB, machine: q35, accel: tcg}\n"
    "  custom: {image: /var/lib/img.qcow2, os: linux}\n"
    "disks:\n"
    "  sparse: {format: qcow2, allocation: sparse, size: 4GiB, bus: "
    "virtio, cache: none, io: native}\n"
    "  fixed: {format: raw, allocation: full, size: 2GiB, bus: sata}\n"
    "  ram: {kind: tmpfs}\n"
    "datasets:\n"
    "  few-large: {files: 10, size: 64MiB}\n"
    "  many-small: {files: 2000, size: {min: 1KiB, max: 64KiB, "
    "distribution: lognormal}, dirs: {depth: 2, fanout: 8}, seed: 7}\n"
    "  tree: {path: /usr/share/doc}\n"
    "methods:\n"
    "  image: {type: disk-image, filesystem: ext4}\n"
    "  agent: {type: agent-file, archive: tar}\n"
    "  agentz: {type: agent-file, archive: {format: tar, compression: "
    "zstd, level: 3}}\n"
    "  share: {type: share, driver: 9p, msize: 256KiB, cache: loose}\n"
    "  net: {type: network, archive: tar}\n"
    "  raw: {type: block, block_size: 4KiB, queue_depth: 8}\n"
    "matrix:\n"
    "  vm: [small, big]\n"
    "  disk: [sparse, fixed]\n"
    "  dataset: [few-large, many-small]\n"
    "  method: [image, agent, share, net]\n"
    "  exclude: [{method: agent, dataset: many-small}]\n"
    "  include:\n"
    "    - {vm: small, disk: ram, dataset: few-large, method: net,\n"
    "       run: {repeat: 5, timeout: 1m}}\n"
    "run: {repeat: {min: 3, max: 10, until_cv: 5%}, warmup: 1, caches: "
    "drop, vm: per-cell, timeout: 10m}\n"
    "criteria:\n"
    "  - {metric: throughput, min: 20MB/s}\n"
    "  - {metric: phase.copy, max: 60s, where: {method: share}}\n"
    "report: {junit: out/a.xml, markdown: out/a.md, json: out/a.json}\n";

/* Method m's option `key` reads as `want` (as a plan writes it). */
static void assert_opt(const struct plan_method *m, const char *key, const char *want)
{
	char *v = plan_method_get(m, key);
	g_assert_cmpstr(v, ==, want);
	free(v);
}

/* test_full's VMs and disks, as written and with their defaults */
static void check_full_vms_disks(const struct plan *p)
{
	g_assert_cmpuint(p->n_vms, ==, 3);
	const struct plan_vm *big = plan_find_vm(p, "big");
	g_assert_cmpuint(big->vcpus, ==, 4);
	g_assert_cmpuint(big->memory, ==, 2 * GiB);
	g_assert_cmpint(big->machine, ==, PLAN_MACHINE_Q35);
	g_assert_cmpint(big->accel, ==, PLAN_ACCEL_TCG);
	g_assert_cmpint(big->guest, ==, PLAN_GUEST_BUILTIN);
	g_assert_cmpint(big->e.pos.line, ==, 7);
	g_assert_cmpint(big->e.pos.col, ==, 3);
	g_assert_cmpstr(big->e.pos.file, ==, "mem.yaml");
	const struct plan_vm *custom = plan_find_vm(p, "custom");
	g_assert_cmpint(custom->guest, ==, PLAN_GUEST_IMAGE); /* implied by image */
	g_assert_cmpint(custom->os, ==, PLAN_OS_LINUX);
	g_assert_true(key_is_set(&plan_vm_keys, custom, "os"));
	g_assert_cmpstr(custom->image, ==, "/var/lib/img.qcow2");
	/* defaults */
	g_assert_cmpuint(custom->vcpus, ==, 2);
	g_assert_cmpuint(custom->memory, ==, GiB);
	g_assert_cmpint(custom->firmware, ==, PLAN_FIRMWARE_BIOS);
	g_assert_cmpuint(custom->nic.queues, ==, 1);
	g_assert_cmpuint(custom->boot_timeout, ==, 120 * NSEC_PER_SEC);

	const struct plan_disk *sparse = plan_find_disk(p, "sparse");
	g_assert_cmpint(sparse->io, ==, PLAN_IO_NATIVE);
	g_assert_cmpuint(sparse->size, ==, 4 * GiB);
	const struct plan_disk *fixed_disk = plan_find_disk(p, "fixed");
	g_assert_cmpint(fixed_disk->allocation, ==, PLAN_ALLOC_FULL);
	g_assert_cmpint(fixed_disk->bus, ==, PLAN_BUS_SATA);
	g_assert_cmpint(fixed_disk->cache, ==, PLAN_CACHE_NONE);
	g_assert_cmpint(plan_find_disk(p, "ram")->kind, ==, PLAN_DISK_TMPFS);
}

/* test_full's datasets and methods, with each type's own options */
static void check_full_datasets_methods(const struct plan *p)
{
	const struct plan_dataset *fl = plan_find_dataset(p, "few-large");
	g_assert_cmpuint(fl->files, ==, 10);
	g_assert_cmpuint(fl->size.min, ==, 64 * MiB);
	g_assert_cmpuint(fl->size.max, ==, 64 * MiB);
	g_assert_cmpuint(fl->seed, ==, 1);
	const struct plan_dataset *ms = plan_find_dataset(p, "many-small");
	g_assert_cmpuint(ms->size.min, ==, 1024);
	g_assert_cmpuint(ms->size.max, ==, 64 * 1024);
	g_assert_cmpint(ms->size.distribution, ==, PLAN_DIST_LOGNORMAL);
	g_assert_cmpuint(ms->dirs.depth, ==, 2);
	g_assert_cmpuint(ms->dirs.fanout, ==, 8);
	g_assert_cmpuint(ms->seed, ==, 7);
	g_assert_cmpstr(plan_find_dataset(p, "tree")->path, ==, "/usr/share/doc");

	const struct plan_method *agentz = plan_find_method(p, "agentz");
	g_assert_cmpstr(plan_method_type_name(agentz), ==, "agent-file");
	g_assert_cmpint(agentz->archive.format, ==, PLAN_ARCHIVE_TAR);
	g_assert_cmpint(agentz->archive.compression, ==, PLAN_COMPRESS_ZSTD);
	g_assert_cmpuint(agentz->archive.level, ==, 3);
	g_assert_cmpint(plan_find_method(p, "agent")->archive.format, ==, PLAN_ARCHIVE_TAR);
	g_assert_cmpint(plan_find_method(p, "image")->archive.format, ==, PLAN_ARCHIVE_NONE);
	const struct plan_method *share = plan_find_method(p, "share");
	assert_opt(share, "msize", "256KiB");
	assert_opt(share, "cache", "loose");
	const struct plan_method *raw = plan_find_method(p, "raw");
	assert_opt(raw, "block_size", "4KiB");
	assert_opt(raw, "queue_depth", "8");
	/* another type's option is not there */
	g_assert_null(plan_method_get(raw, "msize"));
}

/* test_full's run settings, criteria and report paths */
static void check_full_run_report(const struct plan *p)
{
	g_assert_cmpuint(p->run.repeat.min, ==, 3);
	g_assert_cmpuint(p->run.repeat.max, ==, 10);
	g_assert_cmpfloat(p->run.repeat.until_cv, ==, 5.0);
	g_assert_cmpuint(p->run.warmup, ==, 1);
	g_assert_cmpuint(p->run.timeout, ==, 600 * NSEC_PER_SEC);
	g_assert_cmpuint(p->run.cell_timeout, ==, 3600 * NSEC_PER_SEC);
	g_assert_cmpint(p->run.disk, ==, PLAN_DISK_FRESH);

	g_assert_cmpuint(p->n_criteria, ==, 2);
	g_assert_cmpint(p->criteria[0].metric, ==, METRIC_THROUGHPUT);
	g_assert_true(p->criteria[0].has_min);
	g_assert_cmpfloat(p->criteria[0].min, ==, 20e6);
	g_assert_false(p->criteria[0].has_max);
	g_assert_cmpint(p->criteria[1].metric, ==, METRIC_FINALIZE);
	g_assert_cmpfloat(p->criteria[1].max, ==, 60e9);
	g_assert_cmpstr(p->criteria[1].where.method, ==, "share");
	g_assert_null(p->criteria[1].where.vm);
	g_assert_cmpint(p->criteria[1].pos.line, ==, 36);

	g_assert_cmpstr(p->report.paths[REPORT_JUNIT], ==, "out/a.xml");
	g_assert_cmpstr(p->report.markdown.path, ==, "out/a.md");
	g_assert_cmpstr(p->report.markdown.rows, ==, "method");
	g_assert_cmpstr(p->report.markdown.cols, ==, "dataset");
	g_assert_null(p->report.paths[REPORT_BMF]);
}

/* test_full's matrix as written, and its expansion */
static void check_full_matrix(const struct plan *p)
{
	/* the matrix, as written */
	const struct matrix_def *m = &p->matrix;
	g_assert_cmpuint(m->n_axes, ==, 4);
	g_assert_cmpstr(m->axes[2].name, ==, "dataset");
	g_assert_cmpuint(m->axes[3].n_values, ==, 4);
	g_assert_cmpstr(m->axes[3].values[2], ==, "share");
	g_assert_cmpint(m->axes[0].line, ==, 25);
	g_assert_cmpuint(m->n_exclude, ==, 1);
	g_assert_cmpuint(m->exclude[0].n_kv, ==, 2);
	g_assert_cmpstr(m->exclude[0].kv[1].key, ==, "dataset");
	g_assert_cmpuint(m->n_include, ==, 1);
	g_assert_cmpuint(p->include_run[0].repeat.min, ==, 5);
	g_assert_true(key_is_set(&plan_run_keys, &p->include_run[0], "timeout"));
	g_assert_false(key_is_set(&plan_run_keys, &p->include_run[0], "warmup"));

	/* cells: 2*2*2*4 = 32, minus the 2*2 agent/many-small ones, plus the include entry's
	 * own cell (its disk contradicts every product cell, so it extends none) */
	struct diag_list d = { 0 };
	struct matrix *mx = plan_expand(p, 0, &d);
	g_assert_nonnull(mx);
	size_t n = matrix_n_cells(mx);
	g_assert_cmpuint(n, ==, 32 - 4 + 1);
	struct plan_cell cell;
	plan_cell(p, mx, 0, &cell);
	g_assert_cmpstr(cell.id, ==, "vm=small,disk=sparse,dataset=few-large,method=image");
	g_assert_true(cell.vm == plan_find_vm(p, "small"));
	g_assert_cmpuint(cell.run.repeat.min, ==, 3);
	g_assert_cmpuint(cell.run.timeout, ==, 600 * NSEC_PER_SEC);
	plan_cell(p, mx, n - 1, &cell);
	g_assert_cmpstr(cell.id, ==, "vm=small,disk=ram,dataset=few-large,method=net");
	g_assert_cmpuint(cell.run.repeat.min, ==, 5);
	g_assert_cmpuint(cell.run.repeat.max, ==, 5);
	g_assert_cmpfloat(cell.run.repeat.until_cv, ==, 5.0);
	g_assert_cmpuint(cell.run.timeout, ==, 60 * NSEC_PER_SEC);
	g_assert_cmpuint(cell.run.warmup, ==, 1);
	g_assert_cmpuint(d.n, ==, 0);
	matrix_free(mx);
	diag_list_clear(&d);
}

static void test_full(void)
{
	/* phase.copy is not a metric: check the message, then parse the corrected plan */
	char *e = errors_of(full_plan);
	g_assert_cmpstr(e, ==,
			"mem.yaml:36:14: invalid metric 'phase.copy' (expected 'throughput', "
			"'files_per_s', 'total', 'phase.prepare', 'phase.transfer', "
			"'phase.finalize', 'phase.verify', 'phase.cleanup', 'cv', "
			"'write_throughput', 'read_throughput', 'guest_write_time', "
			"'guest_read_time', 'guest_write_throughput', 'guest_read_throughput', "
			"'alloc_before', 'alloc_after', "
			"'alloc_growth', 'alloc_deleted', 'cpu_guest', 'cpu_qemu', 'canary_host' "
			"or 'canary_guest')");
	g_free(e);

	GString *fixed = g_string_new(full_plan);
	g_string_replace(fixed, "phase.copy", "phase.finalize", 1);
	struct diag_list d = { 0 };
	struct plan *p = parse(fixed->str, &d);
	g_string_free(fixed, TRUE);
	g_assert_cmpuint(d.n, ==, 0);
	g_assert_nonnull(p);

	g_assert_cmpuint(p->version, ==, 1);
	g_assert_cmpstr(p->name, ==, "full");
	g_assert_cmpstr(p->connect, ==, "test:///default");

	check_full_vms_disks(p);
	check_full_datasets_methods(p);
	check_full_run_report(p);
	check_full_matrix(p);
	plan_free(p);
	diag_list_clear(&d);
}

/* Omitted axes default to the single entry; the include entry's run overrides. */
static void test_defaults_and_overrides(void)
{
	const char *text = "ferry: 1\n"
			   "vms: {v: {}}\n"
			   "disks: {d: {}}\n"
			   "datasets: {a: {size: 1KiB}, b: {size: 2KiB, files: 3}}\n"
			   "methods: {m: {type: agent-file}}\n"
			   "matrix:\n"
			   "  dataset: [a, b]\n"
			   "  include:\n"
			   "    - {dataset: b, run: {repeat: {min: 20}, warmup: 2}}\n"
			   "    - {run: {timeout: 30s}}\n";
	struct diag_list d = { 0 };
	struct plan *p = parse(text, &d);
	g_assert_cmpuint(d.n, ==, 0);
	g_assert_nonnull(p);
	g_assert_cmpstr(p->name, ==, "mem");
	g_assert_cmpstr(p->connect, ==, "qemu:///system");
	g_assert_cmpuint(p->matrix.n_axes, ==, 4);
	g_assert_cmpstr(p->matrix.axes[0].name, ==, "vm");
	g_assert_cmpstr(p->matrix.axes[1].name, ==, "disk");
	g_assert_cmpstr(p->matrix.axes[2].name, ==, "dataset");
	g_assert_cmpstr(p->matrix.axes[3].name, ==, "method");
	/* run defaults */
	g_assert_cmpuint(p->run.repeat.min, ==, 3);
	g_assert_cmpuint(p->run.warmup, ==, 0);
	g_assert_cmpint(p->run.vm, ==, PLAN_VM_PER_CELL);
	g_assert_cmpint(p->run.caches, ==, PLAN_CACHES_DROP);

	struct matrix *m = plan_expand(p, 0, &d);
	g_assert_nonnull(m);
	g_assert_cmpuint(matrix_n_cells(m), ==, 2);
	struct plan_cell a, b;
	plan_cell(p, m, 0, &a);
	plan_cell(p, m, 1, &b);
	g_assert_cmpstr(a.id, ==, "vm=v,disk=d,dataset=a,method=m");
	g_assert_cmpuint(a.run.repeat.min, ==, 3);
	g_assert_cmpuint(a.run.warmup, ==, 0);
	g_assert_cmpuint(a.run.timeout, ==, 30 * NSEC_PER_SEC);
	g_assert_cmpuint(b.run.repeat.min, ==, 20);
	g_assert_cmpuint(b.run.repeat.max, ==, 20); /* raised to min */
	g_assert_cmpuint(b.run.warmup, ==, 2);
	g_assert_cmpuint(b.run.timeout, ==, 30 * NSEC_PER_SEC);
	g_assert_cmpuint(b.dataset->files, ==, 3);
	matrix_free(m);
	plan_free(p);
	diag_list_clear(&d);
}

static void test_env_substitution(void)
{
	const char *text = "ferry: 1\n"
			   "vms: {v: {vcpus: '${FERRY_T_VCPUS:-1}', memory: '${FERRY_T_MEM}'}}\n"
			   "disks: {d: {}}\n"
			   "datasets: {a: {size: '${FERRY_T_SIZE:-4KiB}'}}\n"
			   "methods: {m: {type: agent-file}}\n"
			   "description: costs $$5\n";
	g_setenv("FERRY_T_MEM", "768MiB", TRUE);
	g_setenv("FERRY_T_VCPUS", "3", TRUE);
	g_unsetenv("FERRY_T_SIZE");
	struct diag_list d = { 0 };
	struct plan *p = parse(text, &d);
	g_assert_nonnull(p);
	g_assert_cmpuint(p->vms[0].vcpus, ==, 3);
	g_assert_cmpuint(p->vms[0].memory, ==, 768 * MiB);
	g_assert_cmpuint(p->datasets[0].size.max, ==, 4096);
	g_assert_cmpstr(p->description, ==, "costs $5");
	plan_free(p);

	g_unsetenv("FERRY_T_MEM");
	char *e = errors_of(text);
	g_assert_cmpstr(e, ==,
			"mem.yaml:2:49: environment variable 'FERRY_T_MEM' is not set (write "
			"'${FERRY_T_MEM:-DEFAULT}' for a default)");
	g_free(e);
}

static void test_errors_one_pass(void)
{
	const char *text = "ferry: 1\n"
			   "vms:\n"
			   "  v: {vcpu: 2, memory: 1XB}\n"
			   "  v: {}\n"
			   "disks: {d: {bus: ide, cache: writeback, io: native}, 'bad name': {}}\n"
			   "datasets: {a: {files: two, size: 1KiB}}\n"
			   "methods: {m: {type: agent-file, filesystem: ext4}}\n"
			   "matrix: {method: [m, n], dataset: [a]}\n";
	char *e = errors_of(text);
	g_assert_cmpstr(
	    e, ==,
	    "mem.yaml:3:7: unknown key 'vcpu' (did you mean 'vcpus'?)\n"
	    "mem.yaml:3:24: 'memory': invalid size '1XB': unknown unit 'XB' (did you "
	    "mean 'B'?)\n"
	    "mem.yaml:4:3: duplicate key 'v' (first at line 3, column 3)\n"
	    "mem.yaml:5:41: 'io: native' cannot be used with 'cache: writeback': native "
	    "AIO needs O_DIRECT, which only cache 'none' and 'directsync' give (libvirt "
	    "and QEMU refuse it)\n"
	    "mem.yaml:5:54: invalid disk name 'bad name' (names use only letters, "
	    "digits, '.', '_' and '-')\n"
	    "mem.yaml:6:23: 'files': invalid integer 'two': expected a whole number\n"
	    "mem.yaml:7:33: 'filesystem' does not apply to type 'agent-file' (only to "
	    "disk-image)\n"
	    "mem.yaml:8:22: method 'n' is not defined (did you mean 'm'?)");
	g_free(e);
}

static void test_yaml_errors(void)
{
	char *e = errors_of("ferry: 1\nvms: {a: [}\n");
	g_assert_cmpstr(e, ==,
			"mem.yaml:2:11: invalid YAML: did not find expected node content while "
			"parsing a flow node");
	g_free(e);
	e = errors_of("");
	g_assert_cmpstr(e, ==, "mem.yaml:1:1: empty plan (a plan starts with 'ferry: 1')");
	g_free(e);
	e = errors_of("- a\n- b\n");
	g_assert_cmpstr(e, ==, "mem.yaml:1:1: a plan must be a mapping of sections, not a list");
	g_free(e);
	e = errors_of("name: x\n");
	g_assert_cmpstr(e, ==,
			"mem.yaml:1:1: missing required key 'ferry' (the plan language version: "
			"'ferry: 1')");
	g_free(e);
	e = errors_of("ferry: 1\nname: x\n");
	g_assert_cmpstr(
	    e, ==,
	    "mem.yaml:1:1: the plan defines no vms (it needs at least one in 'vms')\n"
	    "mem.yaml:1:1: the plan defines no disks (it needs at least one in 'disks')\n"
	    "mem.yaml:1:1: the plan defines no datasets (it needs at least one in "
	    "'datasets')\n"
	    "mem.yaml:1:1: the plan defines no methods (it needs at least one in "
	    "'methods')");
	g_free(e);
}

static void test_cells_incompatible(void)
{
	const char *text = "ferry: 1\n"
			   "vms: {pc: {}, q35: {machine: q35}}\n"
			   "disks: {old: {bus: ide}, ram: {kind: tmpfs}}\n"
			   "datasets: {a: {size: 1KiB}}\n"
			   "methods: {dd: {type: block}, agent: {type: agent-file}}\n"
			   "matrix: {vm: [pc, q35], disk: [old, ram], method: [dd, agent]}\n";
	struct diag_list d = { 0 };
	struct plan *p = parse(text, &d);
	g_assert_nonnull(p);
	g_assert_null(plan_expand(p, 0, &d));
	g_assert_cmpuint(d.n, ==, 2);
	char *m0 = diag_format(&d.items[0]), *m1 = diag_format(&d.items[1]);
	g_assert_cmpstr(
	    m0, ==,
	    "mem.yaml:3:9: disk 'old' uses bus 'ide', which vm 'q35' (machine q35) does "
	    "not have: ide exists only on machine pc (first in cell "
	    "'vm=q35,disk=old,dataset=a,method=dd')");
	g_assert_cmpstr(
	    m1, ==,
	    "mem.yaml:5:11: method 'dd' (type block) writes a raw device, and disk 'ram' "
	    "is a tmpfs, which has none (first in cell "
	    "'vm=pc,disk=ram,dataset=a,method=dd')");
	free(m0);
	free(m1);
	diag_list_clear(&d);
	plan_free(p);
}

/* Includes: files under a temporary directory. */
struct tmp {
	char *dir;
};

static char *write_file(const char *dir, const char *name, const char *text)
{
	char *path = g_build_filename(dir, name, NULL);
	g_assert_true(g_file_set_contents(path, text, -1, NULL));
	return path;
}

/* test_include_merge's faults: a cycle named with its chain, a missing include */
static void check_include_errors(const char *dir)
{
	struct diag_list d = { 0 };
	/* a cycle: a -> b -> a, reported with the chain */
	char *a = write_file(dir, "a.yaml", "ferry: 1\ninclude: [b.yaml]\n");
	char *b = write_file(dir, "b.yaml", "ferry: 1\ninclude: [a.yaml]\n");
	struct plan *p = plan_parse_file(a, &d);
	g_assert_null(p);
	g_assert_cmpuint(d.n, >=, 1);
	char *expect = g_strdup_printf("include cycle: %s -> %s -> %s/a.yaml", a, b, dir);
	g_assert_cmpstr(d.items[0].msg, ==, expect);
	g_assert_cmpstr(d.items[0].file, ==, b);
	g_assert_cmpint(d.items[0].line, ==, 2);
	g_assert_cmpint(d.items[0].col, ==, 11);
	g_free(expect);
	diag_list_clear(&d);

	/* a missing include */
	char *c = write_file(dir, "c.yaml", "ferry: 1\ninclude: [nope.yaml]\n");
	p = plan_parse_file(c, &d);
	g_assert_null(p);
	expect = g_strdup_printf("cannot read '%s/nope.yaml': no such file or directory", dir);
	g_assert_cmpstr(d.items[0].msg, ==, expect);
	g_free(expect);
	diag_list_clear(&d);
	g_free(a);
	g_free(b);
	g_free(c);
}

static void test_include_merge(void)
{
	char *dir = g_dir_make_tmp("ferry-test-XXXXXX", NULL);
	g_assert_nonnull(dir);
	char *base = write_file(dir, "base.yaml",
				"ferry: 1\n"
				"name: base\n"
				"vms: {v: {vcpus: 1}, w: {vcpus: 4, memory: 2GiB}}\n"
				"disks: {d: {}}\n"
				"datasets: {a: {size: 1KiB}}\n"
				"methods: {m: {type: agent-file}}\n"
				"run: {repeat: 5, warmup: 2, timeout: 1m}\n"
				"criteria: [{metric: total, max: 1m}]\n"
				"matrix: {vm: [v, w]}\n");
	char *subdir = g_build_filename(dir, "sub", NULL);
	g_assert_cmpint(g_mkdir(subdir, 0700), ==, 0);
	g_free(subdir);
	char *extra = write_file(dir, "sub/extra.yaml",
				 "ferry: 1\n"
				 "methods: {n: {type: share}}\n");
	char *main_path = write_file(dir, "main.yaml",
				     "ferry: 1\n"
				     "include: [base.yaml, sub/extra.yaml]\n"
				     "vms: {w: {vcpus: 8}}\n"
				     "run: {warmup: 0}\n"
				     "criteria: [{metric: cv, max: 10%}]\n"
				     "matrix: {vm: [w], method: [m, n]}\n");
	struct diag_list d = { 0 };
	struct plan *p = plan_parse_file(main_path, &d);
	for (size_t i = 0; i < d.n; i++)
		g_test_message("%s", d.items[i].msg);
	g_assert_nonnull(p);
	g_assert_cmpstr(p->name, ==, "base");
	g_assert_cmpuint(p->n_files, ==, 3);
	g_assert_cmpuint(p->n_include, ==, 2);
	g_assert_cmpstr(p->include[1], ==, "sub/extra.yaml");
	g_assert_cmpuint(p->n_vms, ==, 2);
	/* w replaced whole: vcpus from main, memory back to the default */
	const struct plan_vm *w = plan_find_vm(p, "w");
	g_assert_cmpuint(w->vcpus, ==, 8);
	g_assert_cmpuint(w->memory, ==, GiB);
	g_assert_cmpstr(w->e.pos.file, ==, main_path);
	g_assert_cmpstr(plan_find_vm(p, "v")->e.pos.file, !=, main_path);
	g_assert_cmpuint(p->n_methods, ==, 2);
	/* run key by key */
	g_assert_cmpuint(p->run.repeat.min, ==, 5);
	g_assert_cmpuint(p->run.warmup, ==, 0);
	g_assert_cmpuint(p->run.timeout, ==, 60 * NSEC_PER_SEC);
	/* criteria appended, the matrix replaced */
	g_assert_cmpuint(p->n_criteria, ==, 2);
	g_assert_cmpint(p->criteria[0].metric, ==, METRIC_TOTAL);
	g_assert_cmpint(p->criteria[1].metric, ==, METRIC_CV);
	g_assert_cmpstr(p->matrix_file, ==, main_path);
	struct matrix *m = plan_expand(p, 0, &d);
	g_assert_nonnull(m);
	g_assert_cmpuint(matrix_n_cells(m), ==, 2);
	g_assert_cmpstr(matrix_cell_id(m, 1), ==, "vm=w,disk=d,dataset=a,method=n");
	matrix_free(m);
	plan_free(p);
	diag_list_clear(&d);

	check_include_errors(dir);

	const char *names[] = { "base.yaml", "sub/extra.yaml", "main.yaml",
				"a.yaml",    "b.yaml",         "c.yaml" };
	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		char *f = g_build_filename(dir, names[i], NULL);
		g_unlink(f);
		g_free(f);
	}
	char *sub = g_build_filename(dir, "sub", NULL);
	g_rmdir(sub);
	g_rmdir(dir);
	g_free(sub);
	g_free(base);
	g_free(extra);
	g_free(main_path);
	g_free(dir);
}

static void test_missing_file(void)
{
	struct diag_list d = { 0 };
	g_assert_null(plan_parse_file("/nonexistent/plan.yaml", &d));
	g_assert_cmpuint(d.n, ==, 1);
	g_assert_cmpstr(d.items[0].msg, ==,
			"cannot read '/nonexistent/plan.yaml': no such file or directory");
	diag_list_clear(&d);
	g_assert_null(plan_parse_file("/", &d));
	g_assert_cmpstr(d.items[0].msg, ==, "cannot read '/': not a regular file");
	diag_list_clear(&d);
}

static const char *trust_base = "vms: {v: {}}\n"
				"disks: {d: {}}\n"
				"datasets: {a: {size: 4KiB}}\n"
				"methods: {m: {type: agent-file}}\n";

/* What the command line allows: --var, --allow-env, --allow-output (ferry(1) SECURITY). */
static void test_trust_options(void)
{
	char *text = g_strdup_printf("ferry: 1\nname: 'x-${T_SECRET}'\n%s", trust_base);
	struct diag_list d = { 0 };
	g_setenv("T_SECRET", "hunter2", TRUE);

	/* not allowed: the value never reaches the plan */
	char *e = errors_of(text);
	g_assert_cmpstr(e, ==,
			"mem.yaml:2:7: a plan may read only FERRY_* variables, not 'T_SECRET' "
			"(allow it on the command line with --allow-env T_SECRET or --var "
			"T_SECRET=VALUE)");
	g_assert_null(strstr(e, "hunter2"));
	g_free(e);

	/* --allow-env NAME reads it */
	const char *allow[] = { "T_SECRET" };
	struct plan_options o = { .allow_env = allow, .n_allow_env = 1 };
	struct plan *p = plan_load_buffer("mem.yaml", text, strlen(text), &o, &d);
	g_assert_nonnull(p);
	g_assert_cmpstr(p->name, ==, "x-hunter2");
	plan_free(p);

	/* --var NAME=VALUE wins over the environment, the last one of a name wins */
	const char *vars[] = { "T_SECRET=first", "T_SECRET=public" };
	o = (struct plan_options){ .vars = vars, .n_vars = 2 };
	p = plan_load_buffer("mem.yaml", text, strlen(text), &o, &d);
	g_assert_nonnull(p);
	g_assert_cmpstr(p->name, ==, "x-public");
	plan_free(p);
	g_unsetenv("T_SECRET");
	g_free(text);

	/* report paths: below the working directory, or below --allow-output */
	text = g_strdup_printf(
	    "ferry: 1\n%sreport: {junit: /tmp/ferry-t/a.xml, json: ok/./b.json}\n", trust_base);
	e = errors_of(text);
	g_assert_cmpstr(e, ==,
			"mem.yaml:6:17: report path '/tmp/ferry-t/a.xml' is outside the working "
			"directory: a plan writes reports only below it (allow more on the command "
			"line with --allow-output DIR, or name the file with --junit)");
	g_free(e);
	const char *dirs[] = { "/tmp/ferry-t/" };
	o = (struct plan_options){ .allow_output = dirs, .n_allow_output = 1 };
	p = plan_load_buffer("mem.yaml", text, strlen(text), &o, &d);
	g_assert_nonnull(p);
	plan_free(p);
	g_free(text);
	/* a sibling that only shares the prefix is not below it */
	text = g_strdup_printf("ferry: 1\n%sreport: {junit: /tmp/ferry-tx/a.xml}\n", trust_base);
	g_assert_null(plan_load_buffer("mem.yaml", text, strlen(text), &o, &d));
	diag_list_clear(&d);
	g_free(text);

	/* connect: local URIs only */
	static const struct {
		const char *uri;
		bool ok;
	} uris[] = {
		{ "qemu:///system", true },
		{ "qemu:///session", true },
		{ "test:///default", true },
		{ "qemu+ext:///system?command=/tmp/x.sh", false },
		{ "qemu+ssh://host/system", false },
		{ "qemu+unix:///system", false },
		{ "qemu:///system?socket=/tmp/s", false },
		{ "qemu://host/system", false },
		{ "qemu:///system#x", false },
		/* issue 24, class 5: the test driver loads a path as XML and quotes it */
		{ "test:///etc/shadow", false },
		{ "test:///proc/self/environ", false },
		{ "qemu:///embed", false },
		{ "qemu:///system/../../etc/shadow", false },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(uris); i++) {
		text = g_strdup_printf("ferry: 1\nconnect: '%s'\n%s", uris[i].uri, trust_base);
		p = plan_load_buffer("mem.yaml", text, strlen(text), NULL, &d);
		g_assert_true(!!p == uris[i].ok);
		if (!p) {
			g_assert_cmpuint(d.n, ==, 1);
			g_assert_nonnull(strstr(d.items[0].msg, "--connect"));
		}
		plan_free(p);
		diag_list_clear(&d);
		g_free(text);
	}
}

/* Untrusted input stays linear and bounded: nodes, nesting, aliases. */
static void test_limits(void)
{
	struct diag_list d = { 0 };
	GString *s = g_string_new("ferry: 1\nrun: {");
	for (int i = 0; i < 60000; i++)
		g_string_append_printf(s, "%sk%d: 1", i ? ", " : "", i);
	g_string_append(s, "}\n");
	g_assert_null(plan_load_buffer("mem.yaml", s->str, s->len, NULL, &d));
	g_assert_cmpstr(d.items[0].msg, ==,
			"the plan is too large: more than 100000 YAML nodes (keys, values and list "
			"items, with what aliases repeat)");
	diag_list_clear(&d);
	g_string_free(s, TRUE);

	/* 30000 duplicates of one key: each one reported (the first 50 kept), in linear time */
	s = g_string_new("ferry: 1\nrun:\n");
	for (int i = 0; i < 30000; i++)
		g_string_append(s, "  warmup: 1\n");
	g_assert_null(plan_load_buffer("mem.yaml", s->str, s->len, NULL, &d));
	g_assert_cmpuint(d.n + d.dropped, ==, 29999);
	g_assert_cmpstr(d.items[0].msg, ==, "duplicate key 'warmup' (first at line 3, column 3)");
	diag_list_clear(&d);
	g_string_free(s, TRUE);

	/* 64 levels are fine (as far as nesting goes), 65 are not */
	for (int depth = 63; depth <= 64; depth++) {
		s = g_string_new("ferry: 1\ndescription: ");
		for (int i = 0; i < depth; i++)
			g_string_append_c(s, '[');
		for (int i = 0; i < depth; i++)
			g_string_append_c(s, ']');
		g_string_append_c(s, '\n');
		g_assert_null(plan_load_buffer("mem.yaml", s->str, s->len, NULL, &d));
		g_assert_cmpstr(d.items[0].msg, ==,
				depth == 63 ? "'description' must be a string, not a list"
					    : "mappings and lists nest deeper than 64 levels");
		diag_list_clear(&d);
		g_string_free(s, TRUE);
	}

	/* an alias inside its own anchor is undefined (no cycles in the document) */
	const char *cyc = "ferry: 1\nrun: &r {repeat: *r}\n";
	g_assert_null(plan_load_buffer("mem.yaml", cyc, strlen(cyc), NULL, &d));
	g_assert_cmpstr(d.items[0].msg, ==, "invalid YAML: found undefined alias 'r'");
	diag_list_clear(&d);

	/* aliases still work within the limits */
	const char *ok = "ferry: 1\nvms: {v: &vm {vcpus: 3}, w: *vm}\ndisks: {d: {}}\n"
			 "datasets: {a: {size: 4KiB}}\nmethods: {m: {type: agent-file}}\n"
			 "matrix: {vm: [v, w]}\n";
	struct plan *p = plan_load_buffer("mem.yaml", ok, strlen(ok), NULL, &d);
	g_assert_nonnull(p);
	g_assert_cmpuint(p->vms[1].vcpus, ==, 3);
	plan_free(p);
	diag_list_clear(&d);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/plan/full", test_full);
	g_test_add_func("/plan/defaults-and-overrides", test_defaults_and_overrides);
	g_test_add_func("/plan/env", test_env_substitution);
	g_test_add_func("/plan/errors-one-pass", test_errors_one_pass);
	g_test_add_func("/plan/yaml-errors", test_yaml_errors);
	g_test_add_func("/plan/cells-incompatible", test_cells_incompatible);
	g_test_add_func("/plan/include", test_include_merge);
	g_test_add_func("/plan/missing-file", test_missing_file);
	g_test_add_func("/plan/trust-options", test_trust_options);
	g_test_add_func("/plan/limits", test_limits);
	return g_test_run();
}
