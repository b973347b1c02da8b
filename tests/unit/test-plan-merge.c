/* SPDX-License-Identifier: MIT */
/* YAML merge keys in plans (runner/plan/merge-keys.c): `<<: *a` and `<<: [*a, *b]`. */
#include <glib.h>
#include <string.h>

#include "plan.h"
#include "plan-text.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

static const char *tail = "datasets: {d: {files: 1, size: 1KiB}}\n"
			  "methods: {m: {type: agent-file}}\n";

static struct plan *parse_ok(const char *head)
{
	char *text = g_strconcat(head, tail, NULL);
	struct diag_list d = { 0 };
	struct plan *p = parse(text, &d);
	for (size_t i = 0; i < d.n; i++) {
		char *m = diag_format(&d.items[i]);
		g_test_message("%s", m);
		free(m);
	}
	g_assert_cmpuint(d.n, ==, 0);
	g_assert_nonnull(p);
	diag_list_clear(&d);
	g_free(text);
	return p;
}

static char *errors_with_tail(const char *head)
{
	char *text = g_strconcat(head, tail, NULL);
	char *e = errors_of(text);
	g_free(text);
	return e;
}

static void test_merge_one(void)
{
	struct plan *p = parse_ok("ferry: 1\n"
				  "vms:\n"
				  "  small: &vm {vcpus: 2, memory: 512MiB, accel: tcg}\n"
				  "  big: {vcpus: 4, <<: *vm}\n"
				  "disks: {q: {format: qcow2, size: 1GiB}}\n"
				  "matrix: {vm: [small, big]}\n");
	const struct plan_vm *big = plan_find_vm(p, "big");
	g_assert_nonnull(big);
	/* the explicit key overrides the merged one, even when it comes first */
	g_assert_cmpuint(big->vcpus, ==, 4);
	g_assert_cmpuint(big->memory, ==, 512 * MiB);
	g_assert_cmpint(big->accel, ==, PLAN_ACCEL_TCG);
	const struct plan_vm *small = plan_find_vm(p, "small");
	g_assert_cmpuint(small->vcpus, ==, 2);
	plan_free(p);
}

static void test_merge_list(void)
{
	/* an earlier mapping of the list overrides a later one; the explicit key both; a merged
	 * mapping's own merges are resolved; a block mapping merges as a flow one does */
	struct plan *p = parse_ok("ferry: 1\n"
				  "vms: {v: {}}\n"
				  "disks:\n"
				  "  base: &base {format: qcow2, size: 1GiB, bus: sata}\n"
				  "  fast: &fast\n"
				  "    <<: *base\n"
				  "    cache: none\n"
				  "    bus: scsi\n"
				  "  slow: &slow {cache: writeback, bus: ide, size: 2GiB}\n"
				  "  a:\n"
				  "    <<: [*fast, *slow]\n"
				  "  b:\n"
				  "    <<: [*slow, *fast]\n"
				  "    bus: virtio\n"
				  "matrix: {disk: [a, b]}\n");
	const struct plan_disk *fast = plan_find_disk(p, "fast");
	g_assert_cmpint(fast->format, ==, PLAN_FORMAT_QCOW2);
	g_assert_cmpint(fast->bus, ==, PLAN_BUS_SCSI);
	g_assert_cmpint(fast->cache, ==, PLAN_CACHE_NONE);
	const struct plan_disk *a = plan_find_disk(p, "a");
	g_assert_cmpint(a->format, ==, PLAN_FORMAT_QCOW2);
	g_assert_cmpint(a->bus, ==, PLAN_BUS_SCSI);
	g_assert_cmpint(a->cache, ==, PLAN_CACHE_NONE);
	g_assert_cmpuint(a->size, ==, 1 * GiB);
	const struct plan_disk *b = plan_find_disk(p, "b");
	g_assert_cmpint(b->format, ==, PLAN_FORMAT_QCOW2);
	g_assert_cmpint(b->bus, ==, PLAN_BUS_VIRTIO);
	g_assert_cmpint(b->cache, ==, PLAN_CACHE_WRITEBACK);
	g_assert_cmpuint(b->size, ==, 2 * GiB);
	plan_free(p);
}

static void test_merge_errors(void)
{
	char *e = errors_with_tail("ferry: 1\n"
				   "vms:\n"
				   "  a: &a {vcpus: 2}\n"
				   "  b: {<<: 5}\n"
				   "  c: {<<: [*a, [1]]}\n"
				   "  d: {<<: *a, <<: *a}\n"
				   "  e: {'<<': *a}\n"
				   "disks: {q: {format: qcow2, size: 1GiB}}\n"
				   "matrix: {vm: [a]}\n");
	g_assert_cmpstr(e, ==,
			"mem.yaml:4:11: the merge key '<<' takes a mapping or a list of mappings "
			"(for example '<<: *defaults'), not a single value\n"
			"mem.yaml:5:16: the merge key '<<' merges mappings, not a list\n"
			"mem.yaml:6:15: duplicate merge key '<<' (first at line 6, column 7; merge "
			"several mappings with '<<: [*a, *b]')\n"
			"mem.yaml:7:7: unknown key '<<' (expected one of: guest, image, kernel, "
			"initrd, cmdline, seed, os, vcpus, memory, machine, firmware, accel, nic, "
			"boot_timeout)");
	g_free(e);
}

static void test_merge_positions(void)
{
	/* an error in a merged value is where that value is written; in an explicit one, there */
	char *e = errors_with_tail("ferry: 1\n"
				   "vms:\n"
				   "  a: &a {vcpus: 2}\n"
				   "  b: {<<: *a, memory: 1XB}\n"
				   "disks:\n"
				   "  base: &base {format: qcow3}\n"
				   "  q: {<<: *base, size: 1GiB}\n"
				   "matrix: {vm: [a], disk: [q]}\n");
	g_assert_nonnull(strstr(e, "mem.yaml:4:23: 'memory': invalid size '1XB'"));
	g_assert_nonnull(strstr(e, "mem.yaml:6:24: invalid format 'qcow3'"));
	g_assert_null(strstr(e, "mem.yaml:7:"));
	g_free(e);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/plan-merge/one", test_merge_one);
	g_test_add_func("/plan-merge/list", test_merge_list);
	g_test_add_func("/plan-merge/errors", test_merge_errors);
	g_test_add_func("/plan-merge/positions", test_merge_positions);
	return g_test_run();
}
