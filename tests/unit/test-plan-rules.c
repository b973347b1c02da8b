/* SPDX-License-Identifier: MIT */
/*
 * The rules table (runner/plan/rules.c): well-formed rows, and the skip reasons the executor and
 * the methods' supports() get from it (the same cells tests/e2e/test-methods-e2e.c checks through
 * them); sizes few hosts have are warnings, not errors.
 */
#include <glib.h>
#include <string.h>

#include "plan-text.h"
#include "plan.h"
#include "rules.h"

/* Every rule of the table has a check and a description, a unique id, and only error rules
 * are checked at run time as such. */
static void check_rules_table(void)
{
	GHashTable *ids = g_hash_table_new(g_str_hash, g_str_equal);
	for (size_t i = 0; i < n_plan_rules; i++) {
		const struct plan_rule *r = &plan_rules[i];
		g_assert_nonnull(r->check);
		g_assert_true(r->checks && *r->checks);
		g_assert_true(g_hash_table_add(ids, (gpointer)r->id));
		/* only error rules are also checked at run time as such */
		g_assert_true(!(r->flags & RULE_AT_RUN) || r->kind == RULE_ERROR);
	}
	g_hash_table_destroy(ids);
}

/* Archives the guest cannot unpack and disks a method cannot use, per method type: `cell`'s
 * method is `m`, its disk set to `image` or `tmpfs` per case. */
static void check_rules_cases(struct plan_cell *cell, struct plan_method *m,
			      struct plan_disk *image, struct plan_disk *tmpfs)
{
	static const struct {
		const char *type;
		enum plan_archive_format format;
		enum plan_compression compression;
		bool image_disk;
		const char *reason;    /* substring; NULL: none */
		const char *direction; /* network's, or NULL */
	} cases[] = {
		{ "channel", PLAN_ARCHIVE_TAR, PLAN_COMPRESS_ZSTD, false,
		  "busybox cannot decompress zstd" },
		{ "network", PLAN_ARCHIVE_TAR, PLAN_COMPRESS_LZ4, false, "cannot decompress lz4",
		  "push" },
		/* a pull on user networking, where the guest reaches nothing of the host */
		{ "network", PLAN_ARCHIVE_TAR, PLAN_COMPRESS_GZIP, false,
		  "or put vm 'v' on ferry's private network ('nic: {backend: private}')", "pull" },
		{ "network", PLAN_ARCHIVE_TAR, PLAN_COMPRESS_GZIP, false, NULL, "push" },
		{ "channel", PLAN_ARCHIVE_ZIP, PLAN_COMPRESS_XZ, false, "stored and deflated" },
		{ "channel", PLAN_ARCHIVE_TAR, PLAN_COMPRESS_GZIP, false, NULL },
		{ "share", PLAN_ARCHIVE_NONE, PLAN_COMPRESS_NONE, false, NULL },
		{ "block", PLAN_ARCHIVE_NONE, PLAN_COMPRESS_NONE, false, "not tmpfs" },
		{ "block", PLAN_ARCHIVE_NONE, PLAN_COMPRESS_NONE, true, NULL },
		{ "disk-image", PLAN_ARCHIVE_TAR, PLAN_COMPRESS_NONE, true,
		  "archive does not apply" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_assert_cmpint(plan_method_init(m, "m", cases[i].type), ==, 0);
		m->archive = (struct plan_archive){ 0, cases[i].format, cases[i].compression, 0 };
		if (cases[i].direction)
			set_opt(m, "direction", cases[i].direction);
		cell->disk = cases[i].image_disk ? image : tmpfs;
		char *why = plan_rules_skip(NULL, cell);
		if (cases[i].reason) {
			g_assert_nonnull(why);
			g_assert_nonnull(strstr(why, cases[i].reason));
		} else {
			g_assert_null(why);
		}
		free(why);
	}
}

static void test_rules(void)
{
	check_rules_table();

	struct plan_vm vm = { .e.name = (char *)"v",
			      .guest = PLAN_GUEST_BUILTIN,
			      .vcpus = 1,
			      .memory = 1 << 30,
			      .nic.queues = 1 };
	struct plan_disk tmpfs = { .e.name = (char *)"t", .kind = PLAN_DISK_TMPFS };
	struct plan_disk image = { .e.name = (char *)"i",
				   .kind = PLAN_DISK_IMAGE,
				   .size = 1 << 30 };
	struct plan_dataset ds = { .e.name = (char *)"a", .files = 1 };
	struct plan_method m;
	g_assert_cmpint(plan_method_init(&m, "m", "channel"), ==, 0);
	struct plan_cell cell = {
		.id = "c", .vm = &vm, .disk = &tmpfs, .dataset = &ds, .method = &m
	};
	check_rules_cases(&cell, &m, &image, &tmpfs);
	/* the run-time message of a method's disk kind need (block on tmpfs) */
	g_assert_cmpint(plan_method_init(&m, "m", "block"), ==, 0);
	cell.disk = &tmpfs;
	char *why = plan_rules_skip(NULL, &cell);
	g_assert_cmpstr(why, ==, "block: writes a raw device and needs an image disk, not tmpfs");
	free(why);
	m.archive = (struct plan_archive){ 0 };
	cell.disk = &image;
	/* block_size that direct I/O cannot use */
	g_assert_cmpint(plan_method_init(&m, "m", "block"), ==, 0);
	set_opt(&m, "block_size", "1000");
	why = plan_rules_skip(NULL, &cell);
	g_assert_cmpstr(why, ==,
			"block: block_size 1000 is not a multiple of 512 bytes (direct I/O needs "
			"aligned requests)");
	free(why);
	/* a NIC on a libvirt network: the network method cannot drive it yet */
	g_assert_cmpint(plan_method_init(&m, "m", "network"), ==, 0);
	vm.nic.network = (char *)"default";
	why = plan_rules_skip(NULL, &cell);
	g_assert_nonnull(why);
	g_assert_nonnull(strstr(why, "are not supported"));
	free(why);
	vm.nic.network = NULL;
	/* a pull on user networking: skipped, the ways that run named (the private network takes
	   ferry's built-in and Debian guests, not a user's image); on the private network it runs
	 */
	static const struct {
		enum plan_guest guest;
		const char *way; /* what the reason offers besides a push */
	} pulls[] = {
		{ PLAN_GUEST_BUILTIN, "'nic: {backend: private}')" },
		{ PLAN_GUEST_DEBIAN, "'nic: {backend: private}')" },
		{ PLAN_GUEST_IMAGE, "takes ferry's built-in and Debian guests only" },
	};
	for (size_t i = 0; i < ELEMENTSOF(pulls); i++) {
		vm.guest = pulls[i].guest;
		why = plan_rules_skip(NULL, &cell);
		g_assert_nonnull(why);
		g_assert_nonnull(strstr(why, "use 'direction: push'"));
		g_assert_nonnull(strstr(why, pulls[i].way));
		free(why);
	}
	vm.guest = PLAN_GUEST_BUILTIN;
	vm.nic.backend = PLAN_NIC_PRIVATE;
	g_assert_null(plan_rules_skip(NULL, &cell));
	vm.nic.backend = PLAN_NIC_USER;
	/* a Windows guest (refused by validate; a hand-built cell is skipped) */
	g_assert_cmpint(plan_method_init(&m, "m", "share"), ==, 0);
	set_opt(&m, "driver", "virtiofs");
	vm.os = PLAN_OS_WINDOWS;
	vm.guest = PLAN_GUEST_IMAGE;
	why = plan_rules_skip(NULL, &cell);
	g_assert_cmpstr(why, ==,
			"windows guests are not supported: target disks are ext4 and every "
			"method's guest side is a POSIX shell");
	free(why);
	vm.os = PLAN_OS_LINUX;
	image.filesystem = PLAN_DISK_FS_NTFS;
	why = plan_rules_skip(NULL, &cell);
	g_assert_cmpstr(why, ==,
			"ntfs target disks are not supported: ferry formats targets ext4 on the "
			"host");
	free(why);
	image.filesystem = PLAN_DISK_FS_EXT4;
	/* vfat targets: no host yet */
	vm.os = PLAN_OS_LINUX;
	vm.guest = PLAN_GUEST_BUILTIN;
	set_opt(&m, "driver", "9p");
	image.filesystem = PLAN_DISK_FS_VFAT;
	why = plan_rules_skip(NULL, &cell);
	g_assert_cmpstr(
	    why, ==,
	    "vfat target disks are not supported yet: ferry formats targets ext4 on the "
	    "host");
	free(why);
	image.filesystem = PLAN_DISK_FS_EXT4;
	g_assert_null(plan_rules_skip(NULL, &cell));
}

/* Sizes few hosts have are warnings (plan-limits.h), not errors; the limits are errors. */
static void test_rules_warnings(void)
{
	const char *text = "ferry: 1\n"
			   "vms: {v: {memory: 4TiB}}\n"
			   "disks: {d: {size: 16TiB, allocation: full}}\n"
			   "datasets: {a: {files: 16, size: 1TiB}}\n"
			   "methods: {m: {type: agent-file}}\n";
	struct diag_list d = { 0 };
	struct plan *p = parse(text, &d);
	g_assert_nonnull(p);
	g_assert_cmpuint(p->warnings.n, ==, 3);
	char *w = diag_format(&p->warnings.items[0]);
	g_assert_cmpstr(w, ==,
			"mem.yaml:2:11: vm 'v' asks for 4TiB of memory, more than 256GiB: "
			"few hosts have it");
	free(w);
	g_assert_nonnull(strstr(p->warnings.items[1].msg, "writes out 16TiB"));
	g_assert_nonnull(strstr(p->warnings.items[2].msg, "generates up to 16TiB"));
	plan_free(p);
	/* a sparse disk of that size writes nothing up front: no warning */
	const char *sparse = "ferry: 1\nvms: {v: {}}\ndisks: {d: {size: 16TiB}}\n"
			     "datasets: {a: {size: 4KiB}}\nmethods: {m: {type: agent-file}}\n";
	p = parse(sparse, &d);
	g_assert_nonnull(p);
	g_assert_cmpuint(p->warnings.n, ==, 0);
	plan_free(p);
	/* a plan no host could run: every cell skipped whatever the host */
	const char *vfat = "ferry: 1\nvms: {v: {}}\ndisks: {d: {filesystem: vfat}}\n"
			   "datasets: {a: {size: 4KiB}}\nmethods: {m: {type: agent-file}}\n";
	p = parse(vfat, &d);
	g_assert_nonnull(p);
	g_assert_null(plan_expand(p, 0, &d));
	g_assert_cmpuint(d.n, ==, 1);
	g_assert_nonnull(strstr(d.items[0].msg, "no cell of the plan can run on any host"));
	diag_list_clear(&d);
	plan_free(p);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/plan/rules", test_rules);
	g_test_add_func("/plan/rules-warnings", test_rules_warnings);
	return g_test_run();
}
