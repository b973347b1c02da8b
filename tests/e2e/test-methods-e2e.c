/* SPDX-License-Identifier: MIT */
/*
 * The channel, share, network and block methods end to end against a real libvirtd and QEMU
 * (TCG), driven through their struct method_ops exactly as the executor drives them: supports,
 * add_devices (whose boot needs become the VM configuration), then per run prepare, transfer,
 * finalize, the verification (the method's own or the guest listing against the manifest) and
 * cleanup. Two tiny datasets (8 x 1 MiB, 500 x 4 KiB in 5 directories), two runs each; the
 * median phase times are printed as test messages. Three guests in all: one with the read-only
 * share, the channel port, a NIC on user networking and a raw target disk, one with the writable
 * share staging (share move and packed shares), and one on ferry's private network for the
 * network pulls (on user networking the guest reaches nothing of the host: a pull is skipped
 * there). Skips with the reason when libvirtd or the guest is missing.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "agent.h"
#include "dataset.h"
#include "e2e-host.h"
#include "guest.h"
#include "machine-libvirt.h"
#include "machine.h"
#include "manifest.h"
#include "methods/method.h"
#include "run.h"
#include "util.h"
#include "vm.h"

#define BOOT_TIMEOUT_MS 120000
#define EXEC_TIMEOUT_MS 120000
#define RUNS            2
#define LANDING         "/tmp/ferry-landing"
#define TARGET_SERIAL   "ferry-target"
#define TARGET_SIZE     (64ull << 20)

struct ds {
	const char *name;
	struct plan_dataset pds;
	struct dataset_spec spec;
	struct dataset_info info;
	struct manifest *m;
};

static struct {
	struct e2e_host h; /* root, guest, libvirtd, run directory, run (e2e-host.h) */
	struct ds ds[2];
	struct plan_vm vm;
	struct plan_vm vm_private; /* vm on ferry's private network (nic backend private) */
	struct plan_disk tmpfs, image;
	struct disk_config target;
	struct vm *a; /* read-only share, channel, NIC, target disk */
	struct vm *b; /* writable share staging */
	struct vm *c; /* a NIC on the private network */
	/* the libvirt machine the methods reach a and b through (machine_libvirt_guest_wrap) */
	struct machine_guest *ga, *gb, *gc;
	char *target_dev;
} t;

/* Destroy this run's domains before a fatal error: g_error() may end without atexit handlers. */
#define die(...)                                                                                   \
	do {                                                                                       \
		char *msg_ = g_strdup_printf(__VA_ARGS__);                                         \
		run_close(t.h.run, NULL);                                                          \
		t.h.run = NULL;                                                                    \
		g_error("%s", msg_);                                                               \
	} while (0)

static bool need(void)
{
	return e2e_host_need(&t.h);
}

static char *sh(struct vm *vm, const char *line)
{
	const char *argv[] = { "/bin/sh", "-c", line, NULL };
	char *out = NULL, *err = NULL;
	if (agent_run(vm_domain(vm), argv, EXEC_TIMEOUT_MS, &out, &err) < 0)
		die("guest: %s: %s", line, err);
	return out;
}

/* The libvirt machine's guest for a or b (the methods' guest operations go through it); a's
 * carries the target disk, whose host cache the block method evicts (machine_evict_target()). */
static struct machine_guest *guest_of(struct vm *vm)
{
	struct machine_guest **g = vm == t.a ? &t.ga : vm == t.b ? &t.gb : &t.gc;
	if (!*g)
		*g = machine_libvirt_guest_wrap(t.h.m, vm, vm == t.a ? &t.target : NULL,
						vm == t.a ? t.target_dev : NULL);
	return *g;
}

static void ctx_init(struct method_ctx *ctx, struct plan_cell *cell, const struct plan_method *m,
		     const struct plan_disk *disk, struct ds *ds)
{
	memset(cell, 0, sizeof(*cell));
	cell->id = m->e.name;
	cell->vm = &t.vm;
	cell->disk = disk;
	cell->dataset = &ds->pds;
	cell->method = m;
	memset(ctx, 0, sizeof(*ctx));
	ctx->cell = cell;
	ctx->method = m;
	ctx->disk = disk;
	ctx->pds = &ds->pds;
	ctx->spec = &ds->spec;
	ctx->dataset_dir = ds->info.dir;
	ctx->manifest = ds->m;
	ctx->run = t.h.run;
	ctx->machine = t.h.m;
	ctx->timeout_ms = EXEC_TIMEOUT_MS;
	ctx->err.kind = ERROR_INFRA;
}

static void free_needs(struct method_boot_needs *n)
{
	free(n->share_dir);
	free(n->share_tag);
	for (size_t i = 0; i < n->n_channels; i++)
		free(n->channels[i]);
	free(n->channels);
	memset(n, 0, sizeof(*n));
}

/* A guest with what n needs, its NIC (when n asks for one) on nic. */
static struct vm *boot_nic(const struct method_boot_needs *n, bool with_target,
			   enum nic_backend nic)
{
	struct vm_config c;
	vm_config_init(&c);
	c.kernel = t.h.guest.kernel;
	c.initrd = t.h.guest.initramfs;
	c.cmdline = t.h.guest.cmdline;
	c.accel = VM_ACCEL_TCG;
	c.nic.backend = n->nic ? nic : NIC_BACKEND_NONE;
	c.share =
	    (struct share_config){ n->share_dir, n->share_tag, n->share_mode, n->share_readonly };
	c.channels = (const char *const *)n->channels;
	c.n_channels = n->n_channels;
	if (with_target) {
		c.disks = &t.target;
		c.n_disks = 1;
	}
	struct vm *vm = NULL;
	char *err = NULL;
	if (vm_boot(t.h.run, t.h.conn, &c, BOOT_TIMEOUT_MS, &vm, &err) < 0)
		die("boot: %s", err);
	g_test_message("boot: %.0f ms", vm_boot_ms(vm));
	return vm;
}

static struct vm *boot(const struct method_boot_needs *n, bool with_target)
{
	return boot_nic(n, with_target, NIC_BACKEND_USER);
}

static double median2(const double *v, size_t n)
{
	double s[16];
	memcpy(s, v, n * sizeof(*v));
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && s[j] < s[j - 1]; j--) {
			double x = s[j];
			s[j] = s[j - 1];
			s[j - 1] = x;
		}
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void fail_ctx(struct method_ctx *ctx, const char *phase)
{
	die("%s %s: %s [agent: %s] [libvirt: %s]", ctx->method->e.name, phase, ctx->err.message,
	    ctx->err.guest_message ? ctx->err.guest_message : "-",
	    ctx->err.libvirt_message ? ctx->err.libvirt_message : "-");
}

/* The executor's default verification: list the landing directory in the guest. */
static bool verify_listing(struct vm *vm, const struct manifest *m, const char *landing,
			   char **message)
{
	char *cmd = manifest_guest_command(landing, true, false);
	char *out = sh(vm, cmd);
	struct listing l = { 0 };
	char *err = NULL;
	if (listing_parse(out, strlen(out), &l, &err) < 0)
		die("listing: %s", err);
	struct verify_opts o = { .symlinks = true };
	struct verify_result r = { 0 };
	manifest_verify(m, &l, &o, &r);
	bool ok = r.ok;
	*message = xstrdup(r.message);
	verify_result_clear(&r);
	listing_clear(&l);
	free(out);
	free(cmd);
	return ok;
}

/*
 * Run one method RUNS times on a dataset in vm and print the median phase times. The landing is
 * emptied before each run (the executor's job); block gets the raw target device.
 */
static void run_method(struct vm *vm, const struct plan_method *m, const struct plan_disk *disk,
		       struct ds *ds)
{
	const struct method_ops *ops = method_find(m->type);
	g_assert_nonnull(ops);
	struct plan_cell cell;
	struct method_ctx ctx;
	ctx_init(&ctx, &cell, m, disk, ds);
	if (vm == t.c)
		cell.vm = &t.vm_private;
	char *why = ops->supports ? ops->supports(&ctx) : NULL;
	if (why)
		die("%s: unexpected skip: %s", m->e.name, why);
	ctx.guest = guest_of(vm);
	ctx.landing = LANDING;
	bool block = method_of(m) == method_find_name("block");
	if (block) {
		ctx.target_dev = t.target_dev;
		ctx.target_disk = &t.target;
	}
	char *cell_dir = run_path(t.h.run, "cells", m->e.name);
	g_mkdir_with_parents(cell_dir, 0755);
	ctx.cell_dir = cell_dir;
	double ph[4][RUNS];
	for (unsigned r = 0; r < RUNS; r++) {
		free(sh(vm, "rm -rf " LANDING " && mkdir -p " LANDING " && sync && "
			    "echo 3 > /proc/sys/vm/drop_caches"));
		ctx.run_index = r;
		ctx.bytes = ds->m->bytes;
		ctx.files = ds->m->files;
		int (*phase[3])(struct method_ctx *) = { ops->prepare, ops->transfer,
							 ops->finalize };
		static const char *const names[] = { "prepare", "transfer", "finalize", "verify" };
		for (int p = 0; p < 3; p++) {
			/* the method's untimed step before each phase, as the executor calls it */
			method_error_clear(&ctx.err);
			if (ops->before_phase &&
			    ops->before_phase(&ctx, (enum result_phase)p) < 0) {
				if (ops->cleanup)
					ops->cleanup(&ctx);
				fail_ctx(&ctx, names[p]);
			}
			method_error_clear(&ctx.err);
			uint64_t t0 = now_ns();
			if (phase[p] && phase[p](&ctx) < 0) {
				if (ops->cleanup)
					ops->cleanup(&ctx);
				fail_ctx(&ctx, names[p]);
			}
			ph[p][r] = (double)(now_ns() - t0) / 1e9;
		}
		uint64_t t0 = now_ns();
		if (ops->verify) {
			method_error_clear(&ctx.err);
			if (ops->verify(&ctx) < 0)
				fail_ctx(&ctx, "verify");
		} else {
			char *msg = NULL;
			bool ok = verify_listing(vm, ds->m, LANDING, &msg);
			if (!ok)
				die("%s on %s: %s", m->e.name, ds->name, msg);
			free(msg);
		}
		ph[3][r] = (double)(now_ns() - t0) / 1e9;
		method_error_clear(&ctx.err);
		if (ops->cleanup && ops->cleanup(&ctx) < 0)
			fail_ctx(&ctx, "cleanup");
	}
	double tot[RUNS];
	for (unsigned r = 0; r < RUNS; r++)
		tot[r] = ph[0][r] + ph[1][r] + ph[2][r];
	g_test_message("| %s | %s | %.3f | %.3f | %.3f | %.3f | %.3f |", m->e.name, ds->name,
		       median2(ph[0], RUNS), median2(ph[1], RUNS), median2(ph[2], RUNS),
		       median2(tot, RUNS), median2(ph[3], RUNS));
	/* a byte flipped after the transfer is caught and named */
	if (!block && ds == &t.ds[1]) {
		const char *victim = NULL;
		for (size_t i = 0, files = 0; i < ds->m->n && !victim; i++)
			if (ds->m->entries[i].type == MANIFEST_FILE && ++files == 3)
				victim = ds->m->entries[i].path;
		char *flip = xasprintf("printf X | dd of=" LANDING "/%s bs=1 seek=100 "
				       "conv=notrunc 2>/dev/null",
				       victim);
		free(sh(vm, flip));
		free(flip);
		char *msg = NULL;
		g_assert_false(verify_listing(vm, ds->m, LANDING, &msg));
		g_test_message("%s", msg);
		g_assert_nonnull(strstr(msg, victim));
		free(msg);
	}
	if (ops->free_state)
		ops->free_state(&ctx);
	method_error_clear(&ctx.err);
	free(cell_dir);
}

/* A method entry of `type` with every default, as a plan would get it. */
static struct plan_method method(const char *name, const char *type)
{
	struct plan_method m;
	if (plan_method_init(&m, name, type) < 0)
		die("no method type %s", type);
	return m;
}

/* Set one of m's options from plan text. */
static void set_opt(struct plan_method *m, const char *key, const char *text)
{
	char *err = NULL;
	if (plan_method_set(m, key, text, &err) < 0)
		die("%s: %s", key, err);
}

static void test_supports(void)
{
	if (!t.ds[0].m) {
		g_test_skip(t.h.skip);
		return;
	}
	struct {
		struct plan_method m;
		const struct plan_disk *disk;
		const char *reason; /* substring, NULL: supported */
	} cases[] = {
		{ method("c-zstd", "channel"), &t.tmpfs, "cannot decompress zstd" },
		{ method("c-lz4", "network"), &t.tmpfs, "cannot decompress lz4" },
		/* a pull on user networking: the guest reaches nothing of the host */
		{ method("n-pull", "network"), &t.tmpfs, "'nic: {backend: private}'" },
		{ method("c-zipxz", "channel"), &t.tmpfs, "stored and deflated" },
		{ method("c-tgz", "channel"), &t.tmpfs, NULL },
		/* virtiofs: a skip only on a machine without virtiofsd (none: no machine) */
		{ method("s-virtiofs", "share"), &t.tmpfs,
		  machine_has_virtiofs(t.h.m) ? NULL : "needs virtiofsd" },
		{ method("s-9p", "share"), &t.tmpfs, NULL },
		{ method("b-tmpfs", "block"), &t.tmpfs, "not tmpfs" },
		{ method("b-odd", "block"), &t.image, "multiple of 512" },
		{ method("b-ok", "block"), &t.image, NULL },
	};
	cases[0].m.archive = (struct plan_archive){ 0, PLAN_ARCHIVE_TAR, PLAN_COMPRESS_ZSTD, 0 };
	cases[1].m.archive = (struct plan_archive){ 0, PLAN_ARCHIVE_TAR, PLAN_COMPRESS_LZ4, 0 };
	set_opt(&cases[1].m, "direction", "push");
	cases[3].m.archive = (struct plan_archive){ 0, PLAN_ARCHIVE_ZIP, PLAN_COMPRESS_XZ, 0 };
	cases[4].m.archive = (struct plan_archive){ 0, PLAN_ARCHIVE_TAR, PLAN_COMPRESS_GZIP, 0 };
	set_opt(&cases[5].m, "driver", "virtiofs");
	set_opt(&cases[8].m, "block_size", "1000");
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct plan_cell cell;
		struct method_ctx ctx;
		ctx_init(&ctx, &cell, &cases[i].m, cases[i].disk, &t.ds[0]);
		const struct method_ops *ops = method_of(&cases[i].m);
		char *why = ops->supports(&ctx);
		if (cases[i].reason) {
			g_assert_nonnull(why);
			g_test_message("%s: %s", cases[i].m.e.name, why);
			g_assert_nonnull(strstr(why, cases[i].reason));
		} else {
			g_assert_null(why);
		}
		free(why);
	}
	/* a NIC on a libvirt network is a skip: ferry's sender reaches a guest only through user
	 * networking (loopback) or the private network it owns */
	struct plan_method net = method("n", "network");
	struct plan_cell cell;
	struct method_ctx ctx;
	ctx_init(&ctx, &cell, &net, &t.tmpfs, &t.ds[0]);
	struct plan_vm vm = t.vm;
	vm.nic.network = (char *)"default";
	cell.vm = &vm;
	char *why = method_find_name("network")->supports(&ctx);
	g_assert_nonnull(why);
	g_assert_nonnull(strstr(why, "libvirt network ('default')"));
	g_assert_nonnull(strstr(why, "private network"));
	free(why);
	/* a Windows guest is a skip (validate refuses 'os: windows'; this cell is hand-built) */
	struct plan_method vfs = method("v", "share");
	set_opt(&vfs, "driver", "virtiofs");
	ctx_init(&ctx, &cell, &vfs, &t.tmpfs, &t.ds[0]);
	struct plan_vm win = t.vm;
	win.os = PLAN_OS_WINDOWS;
	cell.vm = &win;
	why = method_find_name("share")->supports(&ctx);
	g_assert_nonnull(why);
	g_assert_nonnull(strstr(why, "windows guests are not supported"));
	free(why);
}

static void boot_a(void)
{
	if (t.a)
		return;
	/* the boot needs of every method this guest serves, through their own hooks */
	struct method_boot_needs n = { 0 };
	static const char *const types[] = { "channel", "share", "network", "block" };
	for (size_t i = 0; i < G_N_ELEMENTS(types); i++) {
		struct plan_method m = method("boot", types[i]);
		struct plan_cell cell;
		struct method_ctx ctx;
		ctx_init(&ctx, &cell, &m, STREQ(types[i], "block") ? &t.image : &t.tmpfs, &t.ds[0]);
		const struct method_ops *ops = method_of(&m);
		if (ops->add_devices(&ctx, &n) < 0)
			fail_ctx(&ctx, "add_devices");
	}
	g_assert_cmpuint(n.n_channels, ==, 1); /* channel and block share the port */
	g_assert_true(n.share_readonly);
	t.a = boot(&n, true);
	free_needs(&n);
	char *err = NULL;
	if (vm_find_disk(t.a, TARGET_SERIAL, &t.target_dev, &err) != 1)
		die("target disk: %s", err ? err : "not found");
	char *dev = xasprintf("/dev/%s", t.target_dev);
	free(t.target_dev);
	t.target_dev = dev;
}

static void test_channel(void)
{
	if (!need())
		return;
	boot_a();
	struct plan_method tar = method("channel-tar", "channel");
	tar.archive.format = PLAN_ARCHIVE_TAR;
	struct plan_method cpio = method("channel-cpio-gz", "channel");
	cpio.archive = (struct plan_archive){ 0, PLAN_ARCHIVE_CPIO, PLAN_COMPRESS_GZIP, 1 };
	struct plan_method zip = method("channel-zip", "channel");
	zip.archive = (struct plan_archive){ 0, PLAN_ARCHIVE_ZIP, PLAN_COMPRESS_GZIP, 0 };
	for (int d = 0; d < 2; d++)
		run_method(t.a, &tar, &t.tmpfs, &t.ds[d]);
	run_method(t.a, &cpio, &t.tmpfs, &t.ds[1]);
	run_method(t.a, &zip, &t.tmpfs, &t.ds[1]);
}

/* The guest on ferry's private network, with only its NIC (the network pulls; the landing is
 * in the guest's RAM). */
static void boot_c(void)
{
	if (t.c)
		return;
	struct method_boot_needs n = { .nic = true };
	t.c = boot_nic(&n, false, NIC_BACKEND_PRIVATE);
	t.vm_private = t.vm;
	t.vm_private.nic.backend = PLAN_NIC_PRIVATE;
}

static void test_network(void)
{
	if (!need())
		return;
	boot_a();
	struct plan_method pull = method("net-pull-tgz", "network");
	pull.archive = (struct plan_archive){ 0, PLAN_ARCHIVE_TAR, PLAN_COMPRESS_GZIP, 1 };
	struct plan_method files = method("net-pull-files", "network");
	struct plan_method push = method("net-push-pax-xz", "network");
	set_opt(&push, "direction", "push");
	push.archive = (struct plan_archive){ 0, PLAN_ARCHIVE_PAX, PLAN_COMPRESS_XZ, 1 };
	/* push through the forwarded port on user networking (a), pull on the private network
	   (c): a's guest cannot connect out to the host (test_supports has the skip) */
	boot_c();
	for (int d = 0; d < 2; d++) {
		run_method(t.c, &pull, &t.tmpfs, &t.ds[d]);
		run_method(t.a, &push, &t.tmpfs, &t.ds[d]);
	}
	/* one wget process per file: ~9 s for 500 small files under TCG, so the large set only
	   (methods-run.sh pulls a tree with awkward names file by file) */
	run_method(t.c, &files, &t.tmpfs, &t.ds[0]);
}

static void test_share_copy(void)
{
	if (!need())
		return;
	boot_a();
	struct plan_method copy = method("share-copy", "share");
	set_opt(&copy, "msize", "512000");
	set_opt(&copy, "cache", "loose");
	for (int d = 0; d < 2; d++)
		run_method(t.a, &copy, &t.tmpfs, &t.ds[d]);
}

static void test_share_move(void)
{
	if (!need())
		return;
	struct plan_method move = method("share-move", "share");
	set_opt(&move, "mode", "move");
	struct plan_method tar = method("share-move-tar", "share");
	set_opt(&tar, "mode", "move");
	tar.archive.format = PLAN_ARCHIVE_TAR;
	struct method_boot_needs n = { 0 };
	struct plan_cell cell;
	struct method_ctx ctx;
	ctx_init(&ctx, &cell, &move, &t.tmpfs, &t.ds[0]);
	if (method_find_name("share")->add_devices(&ctx, &n) < 0)
		fail_ctx(&ctx, "add_devices");
	g_assert_false(n.share_readonly);
	t.b = boot(&n, false);
	free_needs(&n);
	for (int d = 0; d < 2; d++) {
		run_method(t.b, &move, &t.tmpfs, &t.ds[d]);
		run_method(t.b, &tar, &t.tmpfs, &t.ds[d]);
	}
	/* the cache was never touched by a move */
	for (int d = 0; d < 2; d++) {
		char *why = NULL;
		g_assert_true(dataset_intact(t.ds[d].m, t.ds[d].info.dir, true, &why));
	}
}

static void test_block(void)
{
	if (!need())
		return;
	boot_a();
	struct plan_method big = method("block-1m-qd1", "block");
	struct plan_method small = method("block-4k-qd4", "block");
	set_opt(&small, "block_size", "4096");
	set_opt(&small, "queue_depth", "4");
	for (int d = 0; d < 2; d++)
		run_method(t.a, &big, &t.image, &t.ds[d]);
	run_method(t.a, &small, &t.image, &t.ds[0]);
	/* a byte changed on the device after the write is an integrity failure */
	struct plan_cell cell;
	struct method_ctx ctx;
	ctx_init(&ctx, &cell, &big, &t.image, &t.ds[0]);
	ctx.guest = guest_of(t.a);
	ctx.landing = LANDING;
	ctx.target_dev = t.target_dev;
	/* block stages its stream in its untimed step before prepare (it has no timed prepare) */
	g_assert_cmpint(method_find_name("block")->before_phase(&ctx, PHASE_PREPARE), ==, 0);
	g_assert_null(method_find_name("block")->prepare);
	g_assert_cmpint(method_find_name("block")->transfer(&ctx), ==, 0);
	g_assert_cmpint(method_find_name("block")->verify(&ctx), ==, 0);
	char *flip = xasprintf("printf X | dd of=%s bs=1 seek=4097 conv=notrunc 2>/dev/null && "
			       "sync && echo 3 > /proc/sys/vm/drop_caches",
			       t.target_dev);
	free(sh(t.a, flip));
	free(flip);
	g_assert_cmpint(method_find_name("block")->verify(&ctx), ==, -1);
	g_assert_cmpint(ctx.err.kind, ==, ERROR_INTEGRITY);
	g_test_message("%s", ctx.err.message);
	method_find_name("block")->cleanup(&ctx);
	method_find_name("block")->free_state(&ctx);
	method_error_clear(&ctx.err);
}

static void setup(void)
{
	char *err = NULL;
	t.vm.guest = PLAN_GUEST_BUILTIN;
	t.vm.os = PLAN_OS_LINUX;
	t.vm.vcpus = 1;
	t.tmpfs.kind = PLAN_DISK_TMPFS;
	t.image.kind = PLAN_DISK_IMAGE;
	t.image.size = TARGET_SIZE;
	e2e_host_open(&t.h, "methods", "qemu:///system", E2E_MACHINE);
	/* datasets also when the tests skip: the skip-reason checks need only them */
	char *cache = g_build_filename(t.h.base, "cache", NULL);
	t.ds[0] = (struct ds){ .name = "8x1MiB" };
	t.ds[0].spec = (struct dataset_spec){ .files = 8, .size_min = 1 << 20, .seed = 1 };
	t.ds[1] = (struct ds){ .name = "500x4KiB" };
	t.ds[1].spec = (struct dataset_spec){
		.files = 500, .size_min = 4096, .depth = 1, .fanout = 5, .seed = 2
	};
	for (int d = 0; d < 2; d++) {
		t.ds[d].spec.size_max = t.ds[d].spec.size_min;
		t.ds[d].pds.e.name = (char *)t.ds[d].name;
		struct dataset_get_opts o = { .cache_dir = cache };
		if (dataset_get(&t.ds[d].spec, &o, &t.ds[d].info, &t.ds[d].m, &err) < 0)
			g_error("dataset: %s", err);
	}
	g_free(cache);
	if (t.h.skip)
		return;
	t.target = (struct disk_config){ .kind = DISK_KIND_IMAGE,
					 .format = DISK_FORMAT_RAW,
					 .size = TARGET_SIZE,
					 .bus = DISK_BUS_VIRTIO,
					 .cache = DISK_CACHE_NONE,
					 .io = DISK_IO_NATIVE,
					 .serial = TARGET_SERIAL };
	char *img = run_path(t.h.run, "disks", "target.raw");
	t.target.path = img;
	if (vm_image_create(&t.target, img, &err) < 0)
		g_error("%s", err);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	setup();
	g_test_add_func("/methods-e2e/supports", test_supports);
	g_test_add_func("/methods-e2e/channel", test_channel);
	g_test_add_func("/methods-e2e/network", test_network);
	g_test_add_func("/methods-e2e/share-copy", test_share_copy);
	g_test_add_func("/methods-e2e/block", test_block);
	g_test_add_func("/methods-e2e/share-move", test_share_move);
	int r = g_test_run();
	machine_libvirt_guest_unwrap(t.ga);
	machine_libvirt_guest_unwrap(t.gb);
	machine_libvirt_guest_unwrap(t.gc);
	vm_destroy(t.a);
	vm_destroy(t.b);
	vm_destroy(t.c);
	for (int d = 0; d < 2; d++) {
		dataset_info_clear(&t.ds[d].info);
		manifest_free(t.ds[d].m);
	}
	free(t.target_dev);
	free((char *)t.target.path);
	e2e_host_close(&t.h);
	return r;
}
