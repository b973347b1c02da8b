/* SPDX-License-Identifier: MIT */
/*
 * The rules table (rules.h): one row per cross-field rule and its check; rules-eval.c evaluates
 * them (while reading, over every cell, at run time). Limits come from plan-limits.h, which the
 * machine layer uses too.
 */
#include "rules-int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "keys.h"
#include "methods/method.h"
#include "plan-limits.h"
#include "plan-parse.h"
#include "units.h"

void plan_rule_fail(struct rule_out *o, const char *key, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = xvasprintf(fmt, ap);
	va_end(ap);
	o->fail(o, key, msg);
}

bool plan_rule_at_run(const struct rule_out *o)
{
	return o->run;
}

#define rule_fail plan_rule_fail

static const char *enum_name(const struct key_table *t, const char *key, int v)
{
	return key_find(t, key)->values[v];
}

/* ---- vms.NAME ------------------------------------------------------------------------------ */

static void vm_image_builtin(const struct rule_subject *s, struct rule_out *o)
{
	if (s->vm->image && s->vm->guest == PLAN_GUEST_BUILTIN)
		rule_fail(o, "image",
			  "'image' cannot be used with 'guest: builtin' (the built-in guest boots "
			  "ferry's own kernel and initramfs)");
	else if (s->vm->image && s->vm->guest == PLAN_GUEST_DEBIAN)
		rule_fail(o, "image",
			  "'image' cannot be used with 'guest: debian' (the Debian guest boots the "
			  "root image 'ferry guest build debian' made)");
}

/* kernel, initrd, cmdline and seed describe how an image boots: image guests only, and the
 * initrd and command line only with a kernel. */
static void vm_kernel_image(const struct rule_subject *s, struct rule_out *o)
{
	const struct plan_vm *vm = s->vm;
	static const char *const keys[] = { "kernel", "initrd", "cmdline", "seed" };
	const char *vals[] = { vm->kernel, vm->initrd, vm->cmdline, vm->seed };
	for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
		if (!vals[i])
			continue;
		if (vm->guest != PLAN_GUEST_IMAGE) {
			rule_fail(o, keys[i],
				  "'%s' needs 'guest: image' (with 'image', the disk it boots)",
				  keys[i]);
			return;
		}
		if (i > 0 && i < 3 && !vm->kernel) {
			rule_fail(o, keys[i], "'%s' needs 'kernel' (direct kernel boot)", keys[i]);
			return;
		}
	}
}

static void vm_image_missing(const struct rule_subject *s, struct rule_out *o)
{
	if (s->vm->guest == PLAN_GUEST_IMAGE && !s->vm->image)
		rule_fail(o, "guest",
			  "'guest: image' needs 'image', the path of a bootable disk image");
}

/* A Windows guest could boot, but no cell could run in it: the target disk is formatted ext4
 * on the host, and every method's guest side (unpack, copy, verify, dd, nc) is a POSIX shell
 * with busybox. Refused where it is written rather than every cell skipped at run time. */
static void vm_os_windows(const struct rule_subject *s, struct rule_out *o)
{
	if (s->vm->os != PLAN_OS_WINDOWS)
		return;
	if (o->run)
		rule_fail(o, "os",
			  "windows guests are not supported: target disks are ext4 and every "
			  "method's guest side is a POSIX shell");
	else
		rule_fail(
		    o, "os",
		    "'os: windows' is not supported: ferry formats target disks ext4 and runs "
		    "every method's guest side in a POSIX shell, neither of which a Windows "
		    "guest has (use a Linux image guest with qemu-guest-agent)");
}

static void vm_memory_mib(const struct rule_subject *s, struct rule_out *o)
{
	if (s->vm->memory % (UINT64_C(1) << 20)) {
		_cleanup_free_ char *m = format_size(s->vm->memory);
		rule_fail(o, "memory",
			  "'memory: %s' must be a whole number of MiB (libvirt sizes guest memory "
			  "in MiB)",
			  m);
	}
}

static void vm_memory_large(const struct rule_subject *s, struct rule_out *o)
{
	if (s->vm->memory > PLAN_MEMORY_WARN) {
		_cleanup_free_ char *m = format_size(s->vm->memory);
		_cleanup_free_ char *w = format_size(PLAN_MEMORY_WARN);
		rule_fail(o, "memory",
			  "vm '%s' asks for %s of memory, more than %s: few hosts have it",
			  s->vm->e.name, m, w);
	}
}

static void nic_network_bridge(const struct rule_subject *s, struct rule_out *o)
{
	if (s->vm->nic.network && s->vm->nic.bridge)
		rule_fail(o, "nic.bridge",
			  "'network' and 'bridge' exclude each other: the NIC attaches to one");
}

static void nic_queues_model(const struct rule_subject *s, struct rule_out *o)
{
	if (s->vm->nic.queues > 1 && s->vm->nic.model != PLAN_NIC_VIRTIO)
		rule_fail(o, "nic.queues",
			  "'queues: %" PRIu64 "' needs model 'virtio' (e1000 has one queue)",
			  s->vm->nic.queues);
}

static void nic_queues_tap(const struct rule_subject *s, struct rule_out *o)
{
	const struct plan_nic *n = &s->vm->nic;
	/* after nic_queues_model: one message about the queues */
	if (n->queues > 1 && n->model == PLAN_NIC_VIRTIO && n->backend == PLAN_NIC_USER &&
	    !n->network && !n->bridge)
		rule_fail(o, "nic.queues",
			  "'queues: %" PRIu64 "' needs a tap device: QEMU user networking refuses "
			  "multiple queues (set 'backend: private')",
			  n->queues);
}

static void nic_queues_vcpus(const struct rule_subject *s, struct rule_out *o)
{
	const struct plan_nic *n = &s->vm->nic;
	/* the guest's virtio-net driver uses min(queues, online CPUs): the rest never carry a
	 * byte, and a plan asking for them would measure something else than it says */
	/* after nic_queues_model and nic_queues_tap: only queues that are otherwise possible */
	bool tap = n->backend == PLAN_NIC_PRIVATE || n->network || n->bridge;
	if (tap && n->model == PLAN_NIC_VIRTIO && n->queues > 1 && n->queues > s->vm->vcpus)
		rule_fail(o, "nic.queues",
			  "'queues: %" PRIu64 "' is more than the vm's %" PRIu64
			  " vcpu%s: the guest uses at most one queue pair per vCPU",
			  n->queues, s->vm->vcpus, s->vm->vcpus == 1 ? "" : "s");
}

static void nic_private_tap(const struct rule_subject *s, struct rule_out *o)
{
	const struct plan_nic *n = &s->vm->nic;
	if (n->backend != PLAN_NIC_PRIVATE)
		return;
	if (n->network || n->bridge)
		rule_fail(o, "nic.backend",
			  "'backend: private' is ferry's own network: it excludes '%s'",
			  n->network ? "network" : "bridge");
	else if (s->vm->guest == PLAN_GUEST_IMAGE)
		rule_fail(
		    o, "nic.backend",
		    "'backend: private' needs ferry's built-in or Debian guest (ferry gives "
		    "the guest its address on the private network itself, with the guest's own "
		    "ip command; an image guest is a user's)");
}

/* ---- disks.NAME ---------------------------------------------------------------------------- */

static void disk_native_cache(const struct rule_subject *s, struct rule_out *o)
{
	const struct plan_disk *d = s->disk;
	if (d->kind == PLAN_DISK_IMAGE && d->io == PLAN_IO_NATIVE && d->cache != PLAN_CACHE_NONE &&
	    d->cache != PLAN_CACHE_DIRECTSYNC)
		rule_fail(
		    o, "io",
		    "'io: native' cannot be used with 'cache: %s': native AIO needs O_DIRECT, "
		    "which only cache 'none' and 'directsync' give (libvirt and QEMU refuse it)",
		    enum_name(&plan_disk_keys, "cache", (int)d->cache));
}

static void disk_size_sectors(const struct rule_subject *s, struct rule_out *o)
{
	if (s->disk->kind == PLAN_DISK_IMAGE && s->disk->size % 512) {
		_cleanup_free_ char *z = format_size(s->disk->size);
		rule_fail(o, "size", "'size: %s' must be a multiple of 512 bytes (disk sectors)",
			  z);
	}
}

static void disk_full_large(const struct rule_subject *s, struct rule_out *o)
{
	const struct plan_disk *d = s->disk;
	if (d->kind == PLAN_DISK_IMAGE && d->allocation != PLAN_ALLOC_SPARSE &&
	    d->size > PLAN_DISK_FULL_WARN) {
		_cleanup_free_ char *z = format_size(d->size);
		_cleanup_free_ char *w = format_size(PLAN_DISK_FULL_WARN);
		rule_fail(o, "size",
			  "disk '%s' writes out %s of image ('allocation: %s'), more than %s: "
			  "check the host's free space",
			  d->e.name, z,
			  enum_name(&plan_disk_keys, "allocation", (int)d->allocation), w);
	}
}

static void disk_target_fs(const struct rule_subject *s, struct rule_out *o)
{
	const struct plan_disk *d = s->disk;
	if (d->kind != PLAN_DISK_IMAGE || d->filesystem == PLAN_DISK_FS_EXT4)
		return;
	rule_fail(o, "filesystem", "%s",
		  d->filesystem == PLAN_DISK_FS_VFAT
		      ? "vfat target disks are not supported yet: ferry formats targets ext4 on "
			"the host"
		      : "ntfs target disks are not supported: ferry formats targets ext4 on the "
			"host");
}

/* ---- datasets.NAME ------------------------------------------------------------------------- */

static void dataset_path_generated(const struct rule_subject *s, struct rule_out *o)
{
	static const char *const generated[] = {
		"files", "size", "dirs", "content", "ratio", "seed"
	};
	if (!s->dataset->path)
		return;
	for (size_t i = 0; i < ELEMENTSOF(generated); i++)
		if (key_is_set(&plan_dataset_keys, s->dataset, generated[i]))
			rule_fail(
			    o, generated[i],
			    "'%s' cannot be used with 'path' (a path dataset is read as it is)",
			    generated[i]);
}

static bool generated(const struct plan_dataset *ds)
{
	return !ds->path && key_is_set(&plan_dataset_keys, ds, "size");
}

static void dataset_size(const struct rule_subject *s, struct rule_out *o)
{
	const struct plan_dataset *ds = s->dataset;
	if (!ds->path && !key_is_set(&plan_dataset_keys, ds, "size"))
		rule_fail(o, NULL, "dataset '%s' needs 'size' (the size of each file) or 'path'",
			  ds->e.name);
}

static void dataset_size_range(const struct rule_subject *s, struct rule_out *o)
{
	const struct plan_dataset *ds = s->dataset;
	if (!generated(ds))
		return;
	/* a single size sets min and max: without max, it was written as a mapping */
	if (!key_is_set(&plan_size_range_keys, &ds->size, "max"))
		rule_fail(o, "size",
			  "'size' as a range needs 'max' (or write one size: 'size: 4KiB')");
	else if (ds->size.min > ds->size.max)
		rule_fail(o, "size.min", "'size' range is empty: min is larger than max");
}

static void dataset_ratio(const struct rule_subject *s, struct rule_out *o)
{
	const struct plan_dataset *ds = s->dataset;
	if (generated(ds) && key_is_set(&plan_dataset_keys, ds, "ratio") &&
	    ds->content != PLAN_CONTENT_COMPRESSIBLE)
		rule_fail(o, "ratio", "'ratio' needs 'content: compressible'");
}

static void dataset_total(const struct rule_subject *s, struct rule_out *o, bool warn)
{
	const struct plan_dataset *ds = s->dataset;
	uint64_t total;
	if (!generated(ds))
		return;
	bool over = !mul_u64(ds->files, ds->size.max, &total);
	_cleanup_free_ char *each = format_size(ds->size.max);
	if (!warn && (over || total > PLAN_DATASET_MAX)) {
		_cleanup_free_ char *max = format_size(PLAN_DATASET_MAX);
		rule_fail(o, "files",
			  "dataset '%s' is too large: %" PRIu64 " files of up to %s exceed %s",
			  ds->e.name, ds->files, each, max);
	} else if (warn && !over && total > PLAN_DATASET_WARN && total <= PLAN_DATASET_MAX) {
		_cleanup_free_ char *t = format_size(total);
		_cleanup_free_ char *w = format_size(PLAN_DATASET_WARN);
		rule_fail(o, "files",
			  "dataset '%s' generates up to %s (%" PRIu64 " files of up to %s), more "
			  "than %s: check the host's free space",
			  ds->e.name, t, ds->files, each, w);
	}
}

static void dataset_too_large(const struct rule_subject *s, struct rule_out *o)
{
	dataset_total(s, o, false);
}

static void dataset_large(const struct rule_subject *s, struct rule_out *o)
{
	dataset_total(s, o, true);
}

/* ---- methods.NAME -------------------------------------------------------------------------- */

static void method_compression_format(const struct rule_subject *s, struct rule_out *o)
{
	const struct plan_archive *a = &s->method->archive;
	if (a->compression != PLAN_COMPRESS_NONE && a->format == PLAN_ARCHIVE_NONE)
		rule_fail(o, "archive.compression",
			  "'compression' needs an archive 'format' (tar, pax, cpio or zip)");
}

static void method_level_compression(const struct rule_subject *s, struct rule_out *o)
{
	const struct plan_archive *a = &s->method->archive;
	if (a->level && a->compression == PLAN_COMPRESS_NONE)
		rule_fail(o, "archive.level", "'level' needs a 'compression'");
}

static const char *const compression_names[] = { "none", "gzip", "zstd", "lz4", "xz" };

static void method_zip_compression(const struct rule_subject *s, struct rule_out *o)
{
	const struct plan_archive *a = &s->method->archive;
	if (a->format == PLAN_ARCHIVE_ZIP && a->compression != PLAN_COMPRESS_NONE &&
	    a->compression != PLAN_COMPRESS_GZIP)
		rule_fail(o, "archive.compression",
			  "zip with %s compression: the guest's unzip reads stored and deflated "
			  "entries only (use compression none or gzip)",
			  compression_names[a->compression]);
}

/* ---- cells: what a method needs (struct method_needs in its own file) --------------------- */

static const struct method_needs *needs_of(const struct plan_method *m)
{
	const struct method_ops *ops = method_of(m);
	return ops ? &ops->needs : NULL;
}

static void cell_method_disk(const struct rule_subject *s, struct rule_out *o)
{
	const struct method_needs *n = needs_of(s->method);
	if (!n || !n->disk_kinds || (n->disk_kinds & (1u << s->disk->kind)))
		return;
	const struct key_def *kind = key_find(&plan_disk_keys, "kind");
	_cleanup_free_ char *want = xstrdup("");
	for (size_t i = 0; kind->values[i]; i++) {
		if (!(n->disk_kinds & (1u << i)))
			continue;
		char *w = xasprintf("%s%s%s", want, *want ? " or " : "", kind->values[i]);
		free(want);
		want = w;
	}
	const char *has = kind->values[s->disk->kind];
	if (o->run)
		rule_fail(o, "method", "%s: %s and needs a%s %s disk, not %s",
			  plan_method_type_name(s->method), n->disk_why,
			  strchr("aeiou", want[0]) ? "n" : "", want, has);
	else
		rule_fail(o, "method",
			  "method '%s' (type %s) %s, and disk '%s' is a %s, which has none",
			  s->method->e.name, plan_method_type_name(s->method), n->disk_why,
			  s->disk->e.name, has);
}

static void cell_method_nic(const struct rule_subject *s, struct rule_out *o)
{
	const struct method_needs *n = needs_of(s->method);
	const struct plan_nic *nic = &s->vm->nic;
	if (n && n->nic_why && (nic->network || nic->bridge))
		rule_fail(o, "method", "%s: NICs on a %s ('%s') are not supported: %s",
			  plan_method_type_name(s->method),
			  nic->network ? "libvirt network" : "bridge",
			  nic->network ? nic->network : nic->bridge, n->nic_why);
}

/* ---- cells: what entries cannot do together ------------------------------------------------ */

static void cell_ide_q35(const struct rule_subject *s, struct rule_out *o)
{
	if (s->vm->machine == PLAN_MACHINE_Q35 && s->disk->kind == PLAN_DISK_IMAGE &&
	    s->disk->bus == PLAN_BUS_IDE)
		rule_fail(
		    o, "disk",
		    "disk '%s' uses bus 'ide', which vm '%s' (machine q35) does not have: ide "
		    "exists only on machine pc",
		    s->disk->e.name, s->vm->e.name);
}

/* What a Linux guest lacks: mkfs.ntfs (the built-in and Debian guests). */
static void cell_guest_ntfs(const struct rule_subject *s, struct rule_out *o)
{
	const struct plan_disk *d = s->disk;
	if (s->vm->guest == PLAN_GUEST_IMAGE || d->kind != PLAN_DISK_IMAGE ||
	    d->filesystem != PLAN_DISK_FS_NTFS)
		return;
	rule_fail(o, "disk", "disk '%s' cannot be used with vm '%s' (os linux): %s", d->e.name,
		  s->vm->e.name,
		  s->vm->guest == PLAN_GUEST_BUILTIN
		      ? "the built-in guest cannot format ntfs (use ext4 or vfat)"
		      : "the Debian guest has no mkfs.ntfs (use ext4 or vfat)");
}

static void cell_busybox_compression(const struct rule_subject *s, struct rule_out *o)
{
	const struct plan_archive *a = &s->method->archive;
	/* a user image may have zstd and lz4; the built-in guest's busybox has gzip and xz */
	if (s->vm->guest == PLAN_GUEST_BUILTIN && a->format != PLAN_ARCHIVE_NONE &&
	    a->format != PLAN_ARCHIVE_ZIP &&
	    (a->compression == PLAN_COMPRESS_ZSTD || a->compression == PLAN_COMPRESS_LZ4))
		rule_fail(o, "method",
			  "the built-in guest's busybox cannot decompress %s (it has gzip and xz)",
			  compression_names[a->compression]);
}

/* ---- the table ----------------------------------------------------------------------------- */

const struct plan_rule plan_rules[] = {
	{ "vm.image-builtin", RULE_VM, RULE_ERROR, 0, "'image' with 'guest: builtin'",
	  vm_image_builtin },
	{ "vm.image-missing", RULE_VM, RULE_ERROR, 0, "'guest: image' without 'image'",
	  vm_image_missing },
	{ "vm.kernel-image", RULE_VM, RULE_ERROR, 0,
	  "kernel, initrd, cmdline or seed without 'guest: image', initrd or cmdline without "
	  "kernel",
	  vm_kernel_image },
	{ "vm.os-windows", RULE_VM, RULE_ERROR, RULE_AT_RUN,
	  "'os: windows' (no target disk or method guest side for it)", vm_os_windows },
	{ "vm.memory-mib", RULE_VM, RULE_ERROR, 0,
	  "memory is a whole number of MiB (vm_config_validate() refused it at boot)",
	  vm_memory_mib },
	{ "vm.memory-large", RULE_VM, RULE_WARN, 0, "memory above PLAN_MEMORY_WARN",
	  vm_memory_large },
	{ "vm.nic-network-bridge", RULE_VM, RULE_ERROR, 0, "nic 'network' and 'bridge' together",
	  nic_network_bridge },
	{ "vm.nic-queues-model", RULE_VM, RULE_ERROR, 0, "nic queues above 1 with model e1000",
	  nic_queues_model },
	{ "vm.nic-queues-tap", RULE_VM, RULE_ERROR, 0, "nic queues above 1 on QEMU user networking",
	  nic_queues_tap },
	{ "vm.nic-queues-vcpus", RULE_VM, RULE_ERROR, 0, "nic queues above the vm's vcpus",
	  nic_queues_vcpus },
	{ "vm.nic-private", RULE_VM, RULE_ERROR, 0,
	  "nic backend private with network, bridge or an image guest", nic_private_tap },
	{ "disk.native-cache", RULE_DISK, RULE_ERROR, 0,
	  "'io: native' with a cache mode other than none or directsync", disk_native_cache },
	{ "disk.size-sectors", RULE_DISK, RULE_ERROR, 0,
	  "an image disk's size is a multiple of 512 (vm_disk_validate() refused it at boot)",
	  disk_size_sectors },
	{ "disk.full-large", RULE_DISK, RULE_WARN, 0,
	  "a preallocated image above PLAN_DISK_FULL_WARN", disk_full_large },
	{ "disk.target-filesystem", RULE_DISK, RULE_SKIP, 0,
	  "target disks are formatted ext4 (vfat not yet, ntfs needs Windows)", disk_target_fs },
	{ "dataset.path-generated", RULE_DATASET, RULE_ERROR, 0,
	  "keys of generated files with 'path'", dataset_path_generated },
	{ "dataset.size", RULE_DATASET, RULE_ERROR, 0, "a dataset has 'size' or 'path'",
	  dataset_size },
	{ "dataset.size-range", RULE_DATASET, RULE_ERROR, 0,
	  "a size range has 'max' and min <= max", dataset_size_range },
	{ "dataset.ratio", RULE_DATASET, RULE_ERROR, 0, "'ratio' without 'content: compressible'",
	  dataset_ratio },
	{ "dataset.too-large", RULE_DATASET, RULE_ERROR, 0,
	  "files times size at most PLAN_DATASET_MAX", dataset_too_large },
	{ "dataset.large", RULE_DATASET, RULE_WARN, 0, "files times size above PLAN_DATASET_WARN",
	  dataset_large },
	{ "method.compression-format", RULE_METHOD, RULE_ERROR, 0,
	  "compression without an archive format", method_compression_format },
	{ "method.level-compression", RULE_METHOD, RULE_ERROR, 0, "'level' without compression",
	  method_level_compression },
	{ "method.zip-compression", RULE_METHOD, RULE_SKIP, 0,
	  "zip archives compressed other than none or gzip", method_zip_compression },
	{ "cell.method-disk", RULE_CELL, RULE_ERROR, RULE_AT_RUN,
	  "a method on a disk kind it cannot land data on (its needs.disk_kinds)",
	  cell_method_disk },
	{ "cell.method-nic", RULE_CELL, RULE_SKIP, 0,
	  "a method that reaches the guest over user or private networking only (its "
	  "needs.nic_why) on a libvirt network or host bridge NIC",
	  cell_method_nic },
	{ "cell.ide-q35", RULE_CELL, RULE_ERROR, 0, "an ide disk on a q35 vm", cell_ide_q35 },
	{ "cell.guest-ntfs", RULE_CELL, RULE_ERROR, 0,
	  "ntfs target disks on the built-in or Debian guest (no mkfs.ntfs)", cell_guest_ntfs },
	{ "cell.busybox-compression", RULE_CELL, RULE_SKIP, 0,
	  "zstd or lz4 archives on the built-in guest", cell_busybox_compression },
};
const size_t n_plan_rules = ELEMENTSOF(plan_rules);

char *plan_rules_archive_skip(const struct plan_archive *a, bool builtin)
{
	struct plan_method m = { .type = -1, .archive = *a };
	struct plan_vm vm = { .guest = builtin ? PLAN_GUEST_BUILTIN : PLAN_GUEST_IMAGE };
	struct rule_subject s = { .vm = &vm, .method = &m };
	char *why = NULL;
	struct rule_out o = { .run = true, .fail = rules_keep_first, .ud = &why };

	method_zip_compression(&s, &o);
	if (!why)
		cell_busybox_compression(&s, &o);
	return why;
}
