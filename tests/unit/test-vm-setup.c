/* SPDX-License-Identifier: MIT */
/*
 * VM configurations without a real hypervisor, beyond their XML (test-vm-config.c): validation
 * of disks and VMs, the enums' names, image and target creation, the KVM probe's memory, and
 * which configurations a saved state can stand for, and the test-only slowdown's arithmetic.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

#include "faults.h"
#include "proc.h"
#include "run.h"
#include "vm-plan.h"
#include "util.h"
#include "vm.h"
#include "vm-builtin.h"

static void test_validate(void)
{
	static const struct {
		struct disk_config d;
		enum vm_machine m;
		bool hotplug;
		const char *why; /* NULL: accepted; else a substring of the reason */
	} cases[] = {
		{ { .size = 1 << 20, .bus = DISK_BUS_VIRTIO }, VM_MACHINE_PC, true, NULL },
		{ { .size = 1 << 20, .bus = DISK_BUS_SCSI, .readonly = true },
		  VM_MACHINE_Q35,
		  true,
		  NULL },
		{ { .size = 1 << 20, .bus = DISK_BUS_SATA }, VM_MACHINE_Q35, false, NULL },
		{ { .size = 1 << 20, .bus = DISK_BUS_IDE }, VM_MACHINE_PC, false, NULL },
		{ { .size = 1 << 20, .cache = DISK_CACHE_NONE, .io = DISK_IO_NATIVE },
		  VM_MACHINE_PC,
		  false,
		  NULL },
		{ { .size = 1 << 20, .cache = DISK_CACHE_DIRECTSYNC, .io = DISK_IO_NATIVE },
		  VM_MACHINE_PC,
		  false,
		  NULL },
		{ { .size = 1 << 20, .cache = DISK_CACHE_WRITEBACK, .io = DISK_IO_IO_URING },
		  VM_MACHINE_PC,
		  false,
		  NULL },
		{ { .kind = DISK_KIND_TMPFS, .bus = DISK_BUS_SATA, .readonly = true },
		  VM_MACHINE_PC,
		  true,
		  NULL },
		{ { .size = 1 << 20, .cache = DISK_CACHE_WRITEBACK, .io = DISK_IO_NATIVE },
		  VM_MACHINE_PC,
		  false,
		  "io 'native' needs cache 'none' or 'directsync', not "
		  "'writeback'" },
		{ { .size = 1 << 20, .io = DISK_IO_NATIVE },
		  VM_MACHINE_PC,
		  false,
		  "not 'default'" },
		{ { .size = 1 << 20, .bus = DISK_BUS_IDE },
		  VM_MACHINE_Q35,
		  false,
		  "bus 'ide' does not exist on machine 'q35'" },
		{ { .size = 1 << 20, .bus = DISK_BUS_SATA },
		  VM_MACHINE_PC,
		  true,
		  "bus 'sata' cannot be hot-plugged" },
		{ { .size = 1 << 20, .bus = DISK_BUS_IDE },
		  VM_MACHINE_PC,
		  true,
		  "bus 'ide' cannot be hot-plugged" },
		{ { .size = 1 << 20, .bus = DISK_BUS_SATA, .readonly = true },
		  VM_MACHINE_PC,
		  false,
		  "read-only 'sata' disks are not supported" },
		{ { .size = 1 << 20, .bus = DISK_BUS_IDE, .readonly = true },
		  VM_MACHINE_PC,
		  false,
		  "read-only 'ide' disks" },
		{ { .size = 1 << 20, .serial = "way-too-long-serial-number" },
		  VM_MACHINE_PC,
		  false,
		  "1 to 20 characters" },
		{ { .size = 1 << 20, .serial = "no spaces" },
		  VM_MACHINE_PC,
		  false,
		  "disk serial 'no spaces'" },
		{ { .size = 0 }, VM_MACHINE_PC, false, "needs a size" },
		{ { .size = 1000 }, VM_MACHINE_PC, false, "multiple of 512" },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char *why = NULL;
		int r = vm_disk_validate(&cases[i].d, cases[i].m, cases[i].hotplug, &why);
		if (!cases[i].why) {
			if (r != 0)
				g_error("case %zu refused: %s", i, why);
			g_assert_null(why);
		} else {
			g_assert_cmpint(r, ==, -1);
			g_assert_nonnull(why);
			if (!strstr(why, cases[i].why))
				g_error("case %zu: '%s' does not say '%s'", i, why, cases[i].why);
			free(why);
		}
	}
}

static void test_validate_vm(void)
{
	struct vm_config c;
	char *why = NULL;
	const char *const dup[] = { "a", "a" };
	const char *const agent[] = { "org.qemu.guest_agent.0" };
	const char *const quote[] = { "it's" };
	const struct disk_config nopath[] = { { .size = 1 << 20 } };
	const struct disk_config twice[] = { { .serial = "s", .path = "/a" },
					     { .serial = "s", .path = "/b" } };
	static const char *const reasons[] = {
		"multiqueue on user networking",
		"need model 'virtio'",
		"needs a name",
		"seed goes with an image",
		"needs a kernel",
		"vcpus",
		"memory",
		"named twice",
		"taken by the guest agent",
		"needs its image path",
		"used twice",
		"absolute path",
		"mount tag",
		"may hold only",
		"cannot be read-only",
		"accessmode passthrough",
		"path of virtiofsd",
	};
	for (size_t i = 0; i < ELEMENTSOF(reasons); i++) {
		builtin(&c);
		switch (i) {
		case 0: c.nic.queues = 4; break;
		case 1:
			c.nic.backend = NIC_BACKEND_ETHERNET;
			c.nic.model = NIC_MODEL_E1000;
			c.nic.queues = 2;
			break;
		case 2: c.nic.backend = NIC_BACKEND_BRIDGE; break;
		case 3: c.seed = "/seed.iso"; break;
		case 4: c.kernel = NULL; break;
		case 5: c.vcpus = 0; break;
		case 6: c.memory = 10 << 20; break;
		case 7:
			c.channels = dup;
			c.n_channels = 2;
			break;
		case 8:
			c.channels = agent;
			c.n_channels = 1;
			break;
		case 9:
			c.disks = nopath;
			c.n_disks = 1;
			break;
		case 10:
			c.disks = twice;
			c.n_disks = 2;
			break;
		case 11: c.share = (struct share_config){ "rel/dir", "t", 0, false }; break;
		case 12: c.share = (struct share_config){ "/abs", "", 0, false }; break;
		case 14:
		case 15:
		case 16:
			c.share = (struct share_config){ .host_dir = "/abs",
							 .tag = "t",
							 .mode = i == 15 ? SHARE_MODE_MAPPED
									 : SHARE_MODE_PASSTHROUGH,
							 .readonly = i == 14,
							 .driver = SHARE_DRIVER_VIRTIOFS,
							 .virtiofsd = i == 16 ? NULL : "/v" };
			break;
		case 13:
			c.channels = quote;
			c.n_channels = 1;
			break;
		}
		g_assert_cmpint(vm_config_validate(&c, &why), ==, -1);
		if (!strstr(why, reasons[i]))
			g_error("case %zu: '%s' does not say '%s'", i, why, reasons[i]);
		free(why);
		why = NULL;
		/* the XML builder refuses the same */
		g_assert_null(vm_domain_xml(&c, "x", false, NULL, &why));
		g_assert_nonnull(why);
		free(why);
		why = NULL;
	}
	builtin(&c);
	c.nic.backend = NIC_BACKEND_ETHERNET;
	c.nic.queues = 4;
	g_assert_cmpint(vm_config_validate(&c, &why), ==, 0);
}

static void test_enum_names(void)
{
	g_assert_cmpint(vm_enum_parse(disk_bus_names, "scsi"), ==, DISK_BUS_SCSI);
	g_assert_cmpint(vm_enum_parse(disk_io_names, "io_uring"), ==, DISK_IO_IO_URING);
	g_assert_cmpint(vm_enum_parse(disk_cache_names, "directsync"), ==, DISK_CACHE_DIRECTSYNC);
	g_assert_cmpint(vm_enum_parse(disk_alloc_names, "falloc"), ==, DISK_ALLOC_FALLOC);
	g_assert_cmpint(vm_enum_parse(nic_backend_names, "bridge"), ==, NIC_BACKEND_BRIDGE);
	g_assert_cmpint(vm_enum_parse(vm_accel_names, "tcg"), ==, VM_ACCEL_TCG);
	g_assert_cmpint(vm_enum_parse(disk_bus_names, "usb"), ==, -1);
}

static void test_image_create(void)
{
	const char *argv[] = { "qemu-img", "--version", NULL };
	char *err = NULL;
	if (proc_run(argv, NULL, &err) < 0) {
		g_test_skip(err);
		free(err);
		return;
	}
	char *dir = g_dir_make_tmp("ferry-test-img-XXXXXX", NULL);
	char *path = g_build_filename(dir, "a.qcow2", NULL);
	struct disk_config d = { .format = DISK_FORMAT_QCOW2, .size = 8 << 20 };
	g_assert_cmpint(vm_image_create(&d, path, &err), ==, 0);
	const char *info[] = { "qemu-img", "info", "--output=json", path, NULL };
	char *out = NULL;
	g_assert_cmpint(proc_run(info, &out, &err), ==, 0);
	g_assert_nonnull(strstr(out, "\"format\": \"qcow2\""));
	g_assert_nonnull(strstr(out, "\"virtual-size\": 8388608"));
	free(out);
	/* qemu-img's own error comes back */
	d.size = 0;
	char *bad = g_build_filename(dir, "no/such/dir.raw", NULL);
	g_assert_cmpint(vm_image_create(&d, bad, &err), ==, -1);
	g_assert_nonnull(strstr(err, "cannot create disk image"));
	free(err);
	g_free(bad);
	g_unlink(path);
	g_free(path);
	g_rmdir(dir);
	g_free(dir);
}

/* Block groups in dumpe2fs's listing of image `raw`, and how many of them are ITABLE_ZEROED. */
static void groups_zeroed(const char *raw, int *groups, int *zeroed)
{
	const char *argv[] = { "dumpe2fs", raw, NULL };
	char *out = NULL, *err = NULL;
	g_assert_cmpint(proc_run(argv, &out, &err), ==, 0);
	*groups = *zeroed = 0;
	char **lines = g_strsplit(out, "\n", -1);
	for (char **l = lines; *l; l++) {
		int g;
		if (sscanf(*l, "Group %d:", &g) != 1)
			continue;
		(*groups)++;
		*zeroed += strstr(*l, "ITABLE_ZEROED") != NULL;
	}
	g_strfreev(lines);
	free(out);
}

/*
 * Every format and allocation of a target disk is formatted the same way, with every inode
 * table zeroed by mke2fs: preallocated raw images were formatted with nodiscard and lazy inode
 * tables, so the guest's ext4lazyinit zeroed them in the background during the runs of
 * raw-full disks only (issue 13, disk-allocation).
 */
static void test_target_create(void)
{
	const char *probe[] = { "dumpe2fs", "-V", NULL },
		   *probe2[] = { "qemu-img", "--version", NULL };
	char *err = NULL;
	if (proc_run(probe, NULL, &err) < 0 || proc_run(probe2, NULL, &err) < 0) {
		g_test_skip(err);
		free(err);
		return;
	}
	char *dir = g_dir_make_tmp("ferry-test-target-XXXXXX", NULL);
	char *raw = g_build_filename(dir, "check.raw", NULL);
	for (int f = DISK_FORMAT_RAW; f <= DISK_FORMAT_QCOW2; f++)
		for (int a = DISK_ALLOC_SPARSE; a <= DISK_ALLOC_FULL; a++) {
			char *path =
			    g_build_filename(dir, f == DISK_FORMAT_RAW ? "t.raw" : "t.qcow2", NULL);
			struct disk_config d = {
				.format = f, .allocation = a, .size = 48 << 20, .path = path
			};
			g_assert_cmpint(vm_target_create(&d, &err), ==, 0);
			const char *check = path;
			if (f != DISK_FORMAT_RAW) {
				const char *cv[] = { "qemu-img", "convert", "-q", "-O",
						     "raw",      path,      raw,  NULL };
				g_assert_cmpint(proc_run(cv, NULL, &err), ==, 0);
				check = raw;
			}
			int groups, zeroed;
			groups_zeroed(check, &groups, &zeroed);
			g_test_message("format %d allocation %d: %d of %d groups zeroed", f, a,
				       zeroed, groups);
			g_assert_cmpint(groups, >, 1);
			g_assert_cmpint(zeroed, ==, groups);
			/* the preallocation survives the formatting (no discard punched it out) */
			if (f == DISK_FORMAT_RAW && a != DISK_ALLOC_SPARSE) {
				struct stat st;
				g_assert_cmpint(stat(path, &st), ==, 0);
				g_assert_cmpint((uint64_t)st.st_blocks * 512, >=, d.size);
			}
			g_unlink(path);
			g_unlink(raw);
			g_free(path);
		}
	g_free(raw);
	g_rmdir(dir);
	g_free(dir);
}

/* The KVM probe's answer is kept per host boot and URI in the cache directory. */
static void test_kvm_probe_remember(void)
{
	g_autofree char *dir = g_dir_make_tmp("ferry-kvmprobe-XXXXXX", NULL);
	g_assert_nonnull(dir);
	g_autofree char *old = g_strdup(g_getenv("FERRY_CACHE_DIR"));
	g_setenv("FERRY_CACHE_DIR", dir, TRUE);
	char *err = NULL;
	virConnectPtr conn = vm_connect("test:///default", &err);
	g_assert_nonnull(conn);
	g_autofree char *boot_id = NULL;
	g_assert_true(g_file_get_contents("/proc/sys/kernel/random/boot_id", &boot_id, NULL, NULL));
	g_strstrip(boot_id);
	g_autofree char *path = g_build_filename(dir, "kvm-probe", NULL);

	vm_kvm_probe_remember(conn, 0);
	g_autofree char *text = NULL;
	g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
	g_autofree char *want0 = g_strdup_printf("%s test:///default 0\n", boot_id);
	g_assert_cmpstr(text, ==, want0);

	vm_kvm_probe_remember(conn, 1);
	g_free(text);
	text = NULL;
	g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
	g_autofree char *want1 = g_strdup_printf("%s test:///default 1\n", boot_id);
	g_assert_cmpstr(text, ==, want1);

	virConnectClose(conn);
	g_assert_cmpint(g_unlink(path), ==, 0);
	g_assert_cmpint(g_rmdir(dir), ==, 0);
	if (old)
		g_setenv("FERRY_CACHE_DIR", old, TRUE);
	else
		g_unsetenv("FERRY_CACHE_DIR");
}

/* Which configurations a saved state can stand for (run.fresh restore): the built-in guest and
 * a guest booted from an image (its root's overlay becomes the restored guests' base), not one
 * with a seed, UEFI, boot-time disks, a share, a tap or extra channels, nor on a remote host. */
static void test_restore_unsupported(void)
{
	struct vm_config c;
	vm_config_init(&c);
	c.kernel = "/k";
	c.initrd = "/i";
	g_assert_null(vm_restore_unsupported(&c, false));
	g_assert_nonnull(strstr(vm_restore_unsupported(&c, true), "remote"));
	c.image = "/root.qcow2";
	g_assert_null(vm_restore_unsupported(&c, false));
	c.kernel = c.initrd = NULL; /* booted by its bootloader */
	g_assert_null(vm_restore_unsupported(&c, false));
	c.seed = "/seed";
	g_assert_nonnull(strstr(vm_restore_unsupported(&c, false), "seed"));
	c.seed = NULL;
	c.firmware = VM_FIRMWARE_UEFI;
	g_assert_nonnull(strstr(vm_restore_unsupported(&c, false), "UEFI"));
	c.firmware = VM_FIRMWARE_BIOS;
	struct disk_config d = { .kind = DISK_KIND_IMAGE, .path = "/t.raw", .bus = DISK_BUS_SATA };
	c.disks = &d;
	c.n_disks = 1;
	g_assert_nonnull(strstr(vm_restore_unsupported(&c, false), "boot-time disks"));
	c.n_disks = 0;
	c.share.host_dir = "/srv";
	g_assert_nonnull(strstr(vm_restore_unsupported(&c, false), "shared folder"));
	c.share.host_dir = NULL;
	c.nic.backend = NIC_BACKEND_PRIVATE;
	g_assert_nonnull(strstr(vm_restore_unsupported(&c, false), "network interface"));
}

/* FERRY_TEST_FAULT's slowdowns: slow=MS at the transfer's start, slow=P% at its end as P% of
 * what the transfer took (so a 20% slowdown stays 20% however loaded the host is), only in the
 * named cell's measured runs. */
static void test_fault_slow(void)
{
	const char *spec = "destroy@x;slow=45@a,b;slow=20%@c";
	struct machine_where w = { .point = MACHINE_DURING_TRANSFER, .cell = "a,b" };
	g_assert_cmpuint(machine_fault_slow_ms(spec, &w), ==, 45);
	w.warmup = true;
	g_assert_cmpuint(machine_fault_slow_ms(spec, &w), ==, 0);
	w.warmup = false;
	w.point = MACHINE_END_TRANSFER;
	w.elapsed_ns = 700000000u;
	g_assert_cmpuint(machine_fault_slow_ms(spec, &w), ==, 0); /* slow=MS acted at the start */
	w.cell = "c";
	g_assert_cmpuint(machine_fault_slow_ms(spec, &w), ==, 140); /* 20% of 700 ms */
	w.elapsed_ns = 2499999u;
	g_assert_cmpuint(machine_fault_slow_ms(spec, &w), ==, 0); /* 0.49999 ms, rounded */
	w.elapsed_ns = 2500000u;
	g_assert_cmpuint(machine_fault_slow_ms(spec, &w), ==, 1);
	w.point = MACHINE_DURING_TRANSFER;
	g_assert_cmpuint(machine_fault_slow_ms(spec, &w), ==, 0); /* slow=P% acts at the end */
	w.cell = "x";
	g_assert_cmpuint(machine_fault_slow_ms(spec, &w), ==, 0); /* destroy is not a delay */
	w.cell = "a";
	g_assert_cmpuint(machine_fault_slow_ms(spec, &w), ==, 0); /* no such cell */
	g_assert_cmpuint(machine_fault_slow_ms("slow@a", &w), ==, 1000);
	g_assert_cmpuint(machine_fault_slow_ms(NULL, &w), ==, 0);
	w.point = MACHINE_BEFORE_TRANSFER;
	g_assert_cmpuint(machine_fault_slow_ms("slow@a", &w), ==, 0);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/vm/restore-unsupported", test_restore_unsupported);
	g_test_add_func("/vm/validate/disk", test_validate);
	g_test_add_func("/vm/validate/vm", test_validate_vm);
	g_test_add_func("/vm/enum-names", test_enum_names);
	g_test_add_func("/vm/image-create", test_image_create);
	g_test_add_func("/vm/target-create", test_target_create);
	g_test_add_func("/vm/kvm-probe-remember", test_kvm_probe_remember);
	g_test_add_func("/vm/fault-slow", test_fault_slow);
	return g_test_run();
}
