/* SPDX-License-Identifier: MIT */
#include "keys.h"
#include "keys-int.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "plan-limits.h"
#include "plan.h"
#include "units.h"

#include <inttypes.h>

/* enum fields are written through int pointers */
_Static_assert(sizeof(enum plan_bus) == sizeof(int), "enums must be int-sized");
_Static_assert(sizeof(enum metric) == sizeof(int), "enums must be int-sized");

#define BIT(x) (UINT32_C(1) << (x))

/* The enumerations' spellings; the order is the enum's order in plan.h. */
const char *const plan_bus_values[] = { "virtio", "scsi", "sata", "ide", NULL };
const char *const plan_format_values[] = { "raw", "qcow2", NULL };

/* ---- vms.NAME ---------------------------------------------------------------------------- */

static const struct key_def nic_defs[] = {
	{ .name = "model",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_nic, model),
	  .def = "virtio",
	  .values = V("virtio", "e1000"),
	  .help = "emulated network card" },
	{ .name = "queues",
	  .type = KEY_UINT,
	  .offset = FIELD(plan_nic, queues),
	  .def = "1",
	  .min = 1,
	  .max = PLAN_NIC_QUEUES_MAX,
	  .help = "virtio-net queue pairs, at most vcpus; more than 1 needs a tap (backend "
		  "private): QEMU user networking refuses queues" },
	{ .name = "backend",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_nic, backend),
	  .def = "user",
	  .values = V("user", "private"),
	  .help = "user: QEMU user networking (no setup), restricted: the guest reaches nothing "
		  "of the host, the host reaches the guest through forwarded ports; private: a tap "
		  "on a network namespace ferry creates for the run and removes after it (nothing "
		  "on the host's own network); the network method sends from inside it" },
	{ .name = "network",
	  .type = KEY_STRING,
	  .offset = FIELD(plan_nic, network),
	  .help = "libvirt network to attach to instead of QEMU user networking" },
	{ .name = "bridge",
	  .type = KEY_STRING,
	  .offset = FIELD(plan_nic, bridge),
	  .help = "host bridge to attach to instead of QEMU user networking" },
};
const struct key_table plan_nic_keys = {
	.name = "vms.NAME.nic",
	.doc = "the guest's network card",
	KEYS(nic_defs),
	.set_offset = FIELD(plan_nic, set),
};

static const struct key_def vm_defs[] = {
	{ .name = "guest",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_vm, guest),
	  .def = "builtin",
	  .values = V("builtin", "image", "debian"),
	  .help =
	      "builtin boots ferry's own small Linux guest; image boots the disk image named by "
	      "image (implied when image is set); debian boots the Debian 12 guest with systemd "
	      "that 'ferry guest build debian' made" },
	{ .name = "image",
	  .type = KEY_STRING,
	  .offset = FIELD(plan_vm, image),
	  .help =
	      "a bootable disk image with qemu-guest-agent; booted through a temporary overlay, "
	      "never modified" },
	{ .name = "kernel",
	  .type = KEY_STRING,
	  .offset = FIELD(plan_vm, kernel),
	  .help = "boot the image with this kernel (direct kernel boot, no bootloader); a host "
		  "file, copied into the run directory" },
	{ .name = "initrd",
	  .type = KEY_STRING,
	  .offset = FIELD(plan_vm, initrd),
	  .help = "the initrd for kernel; a host file, copied into the run directory" },
	{ .name = "cmdline",
	  .type = KEY_STRING,
	  .offset = FIELD(plan_vm, cmdline),
	  .help = "the kernel command line for kernel (for example root=/dev/vda1 console=ttyS0)" },
	{ .name = "seed",
	  .type = KEY_STRING,
	  .offset = FIELD(plan_vm, seed),
	  .help = "a cloud-init user-data file: the image boots with a NoCloud seed (a cidata ISO) "
		  "carrying it, e.g. to install or enable qemu-guest-agent" },
	{ .name = "os",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_vm, os),
	  .def = "linux",
	  .values = V("linux", "windows"),
	  .help = "operating system of an image guest; windows is refused (target disks are "
		  "ext4 and every method's guest side is a POSIX shell)" },
	{ .name = "vcpus",
	  .type = KEY_UINT,
	  .offset = FIELD(plan_vm, vcpus),
	  .def = "2",
	  .min = 1,
	  .max = PLAN_VCPUS_MAX,
	  .help = "virtual CPUs" },
	{ .name = "memory",
	  .type = KEY_SIZE,
	  .offset = FIELD(plan_vm, memory),
	  .def = "1GiB",
	  .min = PLAN_MEMORY_MIN,
	  .max = PLAN_MEMORY_MAX,
	  .help = "guest memory" },
	{ .name = "machine",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_vm, machine),
	  .def = "pc",
	  .values = V("pc", "q35"),
	  .help = "QEMU machine type (ide disks exist only on pc)" },
	{ .name = "firmware",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_vm, firmware),
	  .def = "bios",
	  .values = V("bios", "uefi"),
	  .help = "firmware; uefi needs OVMF on the host" },
	{ .name = "accel",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_vm, accel),
	  .def = "auto",
	  .values = V("auto", "kvm", "tcg"),
	  .help = "accelerator; auto probes KVM and falls back to TCG, and the one used is "
		  "recorded" },
	{ .name = "nic",
	  .type = KEY_MAPPING,
	  .offset = FIELD(plan_vm, nic),
	  .sub = &plan_nic_keys,
	  .help = "the network card" },
	{ .name = "boot_timeout",
	  .type = KEY_DURATION,
	  .offset = FIELD(plan_vm, boot_timeout),
	  .def = "2m",
	  .min = NSEC_PER_SEC,
	  .max = 3600 * NSEC_PER_SEC,
	  .help = "how long a boot may take until the guest agent answers" },
};
const struct key_table plan_vm_keys = {
	.name = "vms.NAME",
	.doc = "virtual machines, by name",
	KEYS(vm_defs),
	.set_offset = FIELD(plan_vm, e.set),
};

/* ---- disks.NAME -------------------------------------------------------------------------- */

#define DISK_IMAGE BIT(PLAN_DISK_IMAGE)

static const struct key_def disk_defs[] = {
	{ .name = "kind",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_disk, kind),
	  .def = "image",
	  .values = V("image", "tmpfs"),
	  .help =
	      "image is a disk image attached to the guest; tmpfs lands the data in guest RAM" },
	{ .name = "format",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_disk, format),
	  .def = "qcow2",
	  .values = plan_format_values,
	  .applies = DISK_IMAGE,
	  .help = "image format" },
	{ .name = "allocation",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_disk, allocation),
	  .def = "sparse",
	  .values = V("sparse", "falloc", "full"),
	  .applies = DISK_IMAGE,
	  .help = "sparse grows on first write; falloc and full preallocate (qemu-img "
		  "preallocation)" },
	{ .name = "size",
	  .type = KEY_SIZE,
	  .offset = FIELD(plan_disk, size),
	  .def = "4GiB",
	  .min = PLAN_DISK_SIZE_MIN,
	  .max = PLAN_DISK_SIZE_MAX,
	  .help = "capacity of the image, or the size limit of the tmpfs" },
	{ .name = "bus",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_disk, bus),
	  .def = "virtio",
	  .values = plan_bus_values,
	  .applies = DISK_IMAGE,
	  .help = "virtio is virtio-blk, scsi is virtio-scsi; ide only on machine pc" },
	{ .name = "cache",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_disk, cache),
	  .def = "none",
	  .values = V("none", "writeback", "writethrough", "directsync", "unsafe"),
	  .applies = DISK_IMAGE,
	  .help = "host page cache mode of the image" },
	{ .name = "io",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_disk, io),
	  .def = "threads",
	  .values = V("threads", "native", "io_uring"),
	  .applies = DISK_IMAGE,
	  .help = "host I/O backend; native needs cache none or directsync" },
	{ .name = "discard",
	  .type = KEY_BOOL,
	  .offset = FIELD(plan_disk, discard),
	  .def = "false",
	  .applies = DISK_IMAGE,
	  .help = "pass the guest's discards through to the image (unmap)" },
	{ .name = "filesystem",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_disk, filesystem),
	  .def = "ext4",
	  .values = V("ext4", "vfat", "ntfs"),
	  .applies = DISK_IMAGE,
	  .help = "filesystem the guest puts on the disk before the data lands (ntfs for windows "
		  "guests, which have no ext4)" },
};
const struct key_table plan_disk_keys = {
	.name = "disks.NAME",
	.doc = "guest disks the data lands on, by name",
	KEYS(disk_defs),
	.set_offset = FIELD(plan_disk, e.set),
	.discriminator = "kind",
};

/* ---- datasets.NAME ----------------------------------------------------------------------- */

static const struct key_def size_range_defs[] = {
	{ .name = "min",
	  .type = KEY_SIZE,
	  .offset = FIELD(plan_size_range, min),
	  .def = "0",
	  .max = UINT64_C(1) << 40,
	  .help = "smallest file" },
	{ .name = "max",
	  .type = KEY_SIZE,
	  .offset = FIELD(plan_size_range, max),
	  .def = "0",
	  .max = UINT64_C(1) << 40,
	  .help = "largest file" },
	{ .name = "distribution",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_size_range, distribution),
	  .def = "uniform",
	  .values = V("uniform", "lognormal"),
	  .help = "how file sizes spread between min and max" },
};
const struct key_table plan_size_range_keys = {
	.name = "datasets.NAME.size",
	.doc = "file sizes: a size, or a range",
	KEYS(size_range_defs),
	.set_offset = FIELD(plan_size_range, set),
};

static const struct key_def dirs_defs[] = {
	{ .name = "depth",
	  .type = KEY_UINT,
	  .offset = FIELD(plan_dirs, depth),
	  .def = "0",
	  .max = 32,
	  .help = "directory levels below the top; 0 puts every file at the top" },
	{ .name = "fanout",
	  .type = KEY_UINT,
	  .offset = FIELD(plan_dirs, fanout),
	  .def = "4",
	  .min = 1,
	  .max = 10000,
	  .help = "subdirectories per directory" },
};
const struct key_table plan_dirs_keys = {
	.name = "datasets.NAME.dirs",
	.doc = "the shape of the directory tree",
	KEYS(dirs_defs),
	.set_offset = FIELD(plan_dirs, set),
};

static const struct key_def dataset_defs[] = {
	{ .name = "files",
	  .type = KEY_UINT,
	  .offset = FIELD(plan_dataset, files),
	  .def = "1",
	  .min = 1,
	  .max = PLAN_DATASET_FILES_MAX,
	  .help = "number of generated files" },
	{ .name = "size",
	  .type = KEY_MAPPING,
	  .offset = FIELD(plan_dataset, size),
	  .sub = &plan_size_range_keys,
	  .shorthand = V("min", "max"),
	  .help = "size of each file: a size, or {min, max, distribution}" },
	{ .name = "dirs",
	  .type = KEY_MAPPING,
	  .offset = FIELD(plan_dataset, dirs),
	  .sub = &plan_dirs_keys,
	  .help = "spread the files over a directory tree" },
	{ .name = "content",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_dataset, content),
	  .def = "random",
	  .values = V("random", "zeros", "text", "compressible"),
	  .help = "what the bytes look like (matters to compression and sparse images)" },
	{ .name = "ratio",
	  .type = KEY_FLOAT,
	  .offset = FIELD(plan_dataset, ratio),
	  .def = "2",
	  .fmin = 1,
	  .fmax = 100,
	  .help = "target compression ratio of content compressible" },
	{ .name = "seed",
	  .type = KEY_UINT,
	  .offset = FIELD(plan_dataset, seed),
	  .def = "1",
	  .help = "seed of the generator: the same spec and seed give the same bytes" },
	{ .name = "path",
	  .type = KEY_STRING,
	  .offset = FIELD(plan_dataset, path),
	  .help = "use this existing host directory (read, never modified) instead of generated "
		  "files" },
};
const struct key_table plan_dataset_keys = {
	.name = "datasets.NAME",
	.doc = "the data to move, by name",
	KEYS(dataset_defs),
	.set_offset = FIELD(plan_dataset, e.set),
};

/* ---- methods.NAME: type and archive; each method's own options are declared in its own file
 * (runner/methods/NAME.c), found through plan_method_variants ---------------------------- */

static const struct key_def archive_defs[] = {
	{ .name = "format",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_archive, format),
	  .def = "none",
	  .values = V("none", "tar", "pax", "cpio", "zip"),
	  .help = "pack the dataset into one archive on the host (none: files one by one)" },
	{ .name = "compression",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_archive, compression),
	  .def = "none",
	  .values = V("none", "gzip", "zstd", "lz4", "xz"),
	  .help = "compress the archive" },
	{ .name = "level",
	  .type = KEY_UINT,
	  .offset = FIELD(plan_archive, level),
	  .def = "0",
	  .max = 22,
	  .help = "compression level; 0 is the compressor's default" },
};
const struct key_table plan_archive_keys = {
	.name = "methods.NAME.archive",
	.doc = "packing on the host, unpacking in the guest",
	KEYS(archive_defs),
	.set_offset = FIELD(plan_archive, set),
};

static const struct key_def method_defs[] = {
	{ .name = "type",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_method, type),
	  .values = plan_method_types,
	  .flags = KEY_REQUIRED,
	  .help = "how the data goes in" },
	{ .name = "archive",
	  .type = KEY_MAPPING,
	  .offset = FIELD(plan_method, archive),
	  .sub = &plan_archive_keys,
	  .shorthand = V("format"),
	  .help = "pack first: a format (tar, pax, cpio, zip) or {format, compression, level}" },
};
const struct key_table plan_method_keys = {
	.name = "methods.NAME",
	.doc = "ways to move the data in, by name",
	KEYS(method_defs),
	.set_offset = FIELD(plan_method, e.set),
	.discriminator = "type",
	.variants = &plan_method_variants,
};

/* ---- run --------------------------------------------------------------------------------- */

static const struct key_def repeat_defs[] = {
	{ .name = "min",
	  .type = KEY_UINT,
	  .offset = FIELD(plan_repeat, min),
	  .def = "3",
	  .min = 1,
	  .max = 100000,
	  .help = "measured runs per cell, at least" },
	{ .name = "max",
	  .type = KEY_UINT,
	  .offset = FIELD(plan_repeat, max),
	  .def = "10",
	  .min = 1,
	  .max = 100000,
	  .help = "measured runs per cell, at most (while until_cv is "
		  "not reached)" },
	{ .name = "until_cv",
	  .type = KEY_PERCENT,
	  .offset = FIELD(plan_repeat, until_cv),
	  .def = "0%",
	  .fmax = 1000,
	  .help = "keep repeating until the coefficient of variation of the total is at most this; "
		  "0% stops at min" },
	{ .name = "budget",
	  .type = KEY_DURATION,
	  .offset = FIELD(plan_repeat, budget),
	  .def = "0s",
	  .help = "stop repeating a cell after this much measured time; 0s: no budget" },
};
const struct key_table plan_repeat_keys = {
	.name = "run.repeat",
	.doc = "how many measured runs",
	KEYS(repeat_defs),
	.set_offset = FIELD(plan_repeat, set),
};

static const struct key_def boots_defs[] = {
	{ .name = "min",
	  .type = KEY_UINT,
	  .offset = FIELD(plan_boots, min),
	  .def = "0",
	  .max = 10000,
	  .help =
	      "blocks at least: each boots every VM configuration of the plan once (fresh guest, "
	      "fresh target disk) in a seeded shuffled order, and the cells sharing it take "
	      "their runs in that boot; 0: no blocks (run.vm and run.repeat decide)" },
	{ .name = "max",
	  .type = KEY_UINT,
	  .offset = FIELD(plan_boots, max),
	  .def = "0",
	  .max = 10000,
	  .help = "blocks at most, while run.until is not reached; 0: as many as min" },
};
const struct key_table plan_boots_keys = {
	.name = "run.boots",
	.doc = "how many blocks of boots",
	KEYS(boots_defs),
	.set_offset = FIELD(plan_boots, set),
};

static const struct key_def run_defs[] = {
	{ .name = "boots",
	  .type = KEY_MAPPING,
	  .offset = FIELD(plan_run, boots),
	  .sub = &plan_boots_keys,
	  .shorthand = V("min", "max"),
	  .help = "blocks: N, or {min, max}; a boot is the sample (top level only)" },
	{ .name = "runs_per_boot",
	  .type = KEY_QUANTITY,
	  .offset = FIELD(plan_run, runs_per_boot),
	  .help = "measured runs of each cell in each boot of a block: N (1 to 100), or auto (the "
		  "default): a pilot of the first 2 blocks measures the within- and between-boot "
		  "variance and the costs of a boot and of a run, and sets it by Kalibera and "
		  "Jones (top level only)" },
	{ .name = "until",
	  .type = KEY_PERCENT,
	  .offset = FIELD(plan_run, until),
	  .def = "0%",
	  .fmax = 1000,
	  .help = "add blocks until the 95% confidence interval of every cell's boot mean, and "
		  "of every comparison of cells that differ in one axis, has at most this "
		  "relative half-width; 0%: run the boots max blocks (top level only)" },
	{ .name = "budget",
	  .type = KEY_DURATION,
	  .offset = FIELD(plan_run, budget),
	  .def = "0s",
	  .help = "start no new block after this much wall time of blocks (min blocks always "
		  "run); 0s: none (top level only)" },
	{ .name = "repeat",
	  .type = KEY_MAPPING,
	  .offset = FIELD(plan_run, repeat),
	  .sub = &plan_repeat_keys,
	  .shorthand = V("min", "max"),
	  .help = "measured runs per cell: N, or {min, max, until_cv, budget}" },
	{ .name = "warmup",
	  .type = KEY_UINT,
	  .offset = FIELD(plan_run, warmup),
	  .def = "0",
	  .max = 100,
	  .help = "runs per cell before the measured ones, not counted" },
	{ .name = "order",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_run, order),
	  .def = "sequential",
	  .values = V("sequential", "interleaved", "shuffled"),
	  .help = "order of runs: cell after cell, round-robin over the cells (sharing a VM: "
		  "those of one target disk at a time; or across VMs under vm: per-cell or "
		  "per-run), or shuffled (seeded)" },
	{ .name = "seed",
	  .type = KEY_UINT,
	  .offset = FIELD(plan_run, seed),
	  .def = "0",
	  .help = "seed of the shuffled order" },
	{ .name = "caches",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_run, caches),
	  .def = "drop",
	  .values = V("drop", "keep"),
	  .help = "sync and drop host and guest caches before each measured run, or keep them" },
	{ .name = "vm",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_run, vm),
	  .def = "per-cell",
	  .values = V("per-cell", "per-run", "shared"),
	  .help = "boot a VM per cell, per run, or once per VM configuration (shared)" },
	{ .name = "disk",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_run, disk),
	  .def = "fresh",
	  .values = V("fresh", "reuse"),
	  .help =
	      "re-create the target disk before each run (first write), or reuse it (rewrite)" },
	{ .name = "fresh",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_run, fresh),
	  .def = "boot",
	  .values = V("boot", "restore"),
	  .help = "how a fresh guest starts: boot it, or restore a state saved once per VM "
		  "configuration after its first boot (boot where it cannot be saved)" },
	{ .name = "timeout",
	  .type = KEY_DURATION,
	  .offset = FIELD(plan_run, timeout),
	  .def = "10m",
	  .min = NSEC_PER_SEC,
	  .help = "limit per run" },
	{ .name = "cell_timeout",
	  .type = KEY_DURATION,
	  .offset = FIELD(plan_run, cell_timeout),
	  .def = "1h",
	  .min = NSEC_PER_SEC,
	  .help = "limit per cell, boots included; with run.boots, over the cell's own runs in all "
		  "blocks" },
};
const struct key_table plan_run_keys = {
	.name = "run",
	.doc = "how cells are run and repeated",
	KEYS(run_defs),
	.set_offset = FIELD(plan_run, set),
};

/* ---- matrix (parsed by plan.c, keys declared here for checks, docs and schema) ----------- */

#define NAMES_SCHEMA                                                                               \
	"{\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"array\", \"items\": {\"type\": "        \
	"\"string\"}}]}"
#define AXIS_DEF(axis, what)                                                                       \
	{                                                                                          \
		.name = #axis, .type = KEY_NAMES, .schema = NAMES_SCHEMA,                          \
		.help =                                                                            \
		    "axis: the " what " names to combine (a name or a list); may be omitted when " \
		    "exactly one is defined"                                                       \
	}
#define ENTRY_DEF(axis)                                                                            \
	{                                                                                          \
		.name = #axis, .type = KEY_STRING, .help = "the cell's " #axis " name"             \
	}

static const struct key_def exclude_defs[] = {
	ENTRY_DEF(vm),
	ENTRY_DEF(disk),
	ENTRY_DEF(dataset),
	ENTRY_DEF(method),
};
const struct key_table plan_exclude_keys = {
	.name = "matrix.exclude[]",
	.doc = "cells to remove (an entry matches partially); it may also name swept keys "
	       "AXIS.KEY (MATRIX EXPANSION, Sweeps)",
	KEYS(exclude_defs),
};

static const struct key_def include_defs[] = {
	ENTRY_DEF(vm),
	ENTRY_DEF(disk),
	ENTRY_DEF(dataset),
	ENTRY_DEF(method),
	{ .name = "run",
	  .type = KEY_MAPPING,
	  .sub = &plan_run_keys,
	  .help = "run settings for the cells this entry extends or adds (override run key by "
		  "key)" },
};
const struct key_table plan_matrix_include_keys = {
	.name = "matrix.include[]",
	.doc = "cells to extend or add, after exclude; it may also name or add swept keys "
	       "AXIS.KEY (MATRIX EXPANSION, Sweeps)",
	KEYS(include_defs),
};

static const struct key_def matrix_defs[] = {
	AXIS_DEF(vm, "vm"),
	AXIS_DEF(disk, "disk"),
	AXIS_DEF(dataset, "dataset"),
	AXIS_DEF(method, "method"),
	{ .name = "exclude",
	  .type = KEY_LIST,
	  .sub = &plan_exclude_keys,
	  .help = "remove every cell matching one of these entries" },
	{ .name = "include",
	  .type = KEY_LIST,
	  .sub = &plan_matrix_include_keys,
	  .help = "extend matching cells, or add a cell, after exclude" },
	{ .name = "zip",
	  .type = KEY_CUSTOM,
	  .schema = "{\"type\": \"array\", \"items\": {\"type\": \"array\", \"items\": {\"type\": "
		    "\"string\", \"pattern\": \"^(vm|disk|dataset|method)(\\\\.[a-z0-9_]+)*$\"}}}",
	  .help = "groups of axes that advance together instead of multiplying (equal lengths)" },
};
const struct key_table plan_matrix_keys = {
	.name = "matrix",
	.doc = "which combinations (cells) run; besides these keys, AXIS.KEY (disk.cache, "
	       "vm.nic.queues) sweeps a key of the entries: its value or list of values "
	       "(MATRIX EXPANSION, Sweeps)",
	KEYS(matrix_defs),
};

/* ---- top level --------------------------------------------------------------------------- */

static const struct key_def top_defs[] = {
	{ .name = "ferry",
	  .type = KEY_UINT,
	  .offset = FIELD(plan, version),
	  .min = 1,
	  .max = 1,
	  .flags = KEY_REQUIRED,
	  .help = "version of the plan language; must be 1 (in every file, included ones too)" },
	{ .name = "name",
	  .type = KEY_STRING,
	  .offset = FIELD(plan, name),
	  .help = "name of the plan in reports; defaults to the file name without .yaml" },
	{ .name = "description",
	  .type = KEY_STRING,
	  .offset = FIELD(plan, description),
	  .help = "what the plan answers, for reports" },
	{ .name = "connect",
	  .type = KEY_STRING,
	  .offset = FIELD(plan, connect),
	  .def = "qemu:///system",
	  .help = "libvirt connection URI (--connect overrides it)" },
	{ .name = "include",
	  .type = KEY_STRING_LIST,
	  .offset = FIELD(plan, include),
	  .count_offset = FIELD(plan, n_include),
	  .help = "plan files merged into this one, relative to this file (merge rules: PLAN FILE "
		  "FORMAT, Includes)" },
	{ .name = "vms",
	  .type = KEY_NAMED,
	  .offset = FIELD(plan, vms),
	  .sub = &plan_vm_keys,
	  .elem_size = sizeof(struct plan_vm),
	  .count_offset = FIELD(plan, n_vms),
	  .help = "virtual machines, by name" },
	{ .name = "disks",
	  .type = KEY_NAMED,
	  .offset = FIELD(plan, disks),
	  .sub = &plan_disk_keys,
	  .elem_size = sizeof(struct plan_disk),
	  .count_offset = FIELD(plan, n_disks),
	  .help = "guest disks the data lands on, by name" },
	{ .name = "datasets",
	  .type = KEY_NAMED,
	  .offset = FIELD(plan, datasets),
	  .sub = &plan_dataset_keys,
	  .elem_size = sizeof(struct plan_dataset),
	  .count_offset = FIELD(plan, n_datasets),
	  .help = "datasets to move, by name" },
	{ .name = "methods",
	  .type = KEY_NAMED,
	  .offset = FIELD(plan, methods),
	  .sub = &plan_method_keys,
	  .elem_size = sizeof(struct plan_method),
	  .count_offset = FIELD(plan, n_methods),
	  .help = "transfer methods, by name" },
	{ .name = "matrix",
	  .type = KEY_CUSTOM,
	  .sub = &plan_matrix_keys,
	  .help = "the cells: axes vm, disk, dataset, method, with exclude, include and zip" },
	{ .name = "run",
	  .type = KEY_MAPPING,
	  .offset = FIELD(plan, run),
	  .sub = &plan_run_keys,
	  .help = "how cells are run and repeated" },
	{ .name = "criteria",
	  .type = KEY_LIST,
	  .offset = FIELD(plan, criteria),
	  .sub = &plan_criterion_keys,
	  .elem_size = sizeof(struct plan_criterion),
	  .count_offset = FIELD(plan, n_criteria),
	  .help = "pass/fail thresholds" },
	{ .name = "report",
	  .type = KEY_MAPPING,
	  .offset = FIELD(plan, report),
	  .sub = &plan_report_keys,
	  .help = "report files" },
	{ .name = "baseline",
	  .type = KEY_STRING,
	  .offset = FIELD(plan, baseline),
	  .help = "results file, or directory of results files, that every run compares itself "
		  "with (below the working directory; --baseline overrides it)" },
	{ .name = "regression",
	  .type = KEY_MAPPING,
	  .offset = FIELD(plan, regression),
	  .sub = &plan_regression_keys,
	  .help = "how the run is compared with its baseline: {threshold, confidence, rule, "
		  "window}" },
};
const struct key_table plan_keys = {
	.name = "",
	.doc = "a plan file",
	KEYS(top_defs),
	.set_offset = FIELD(plan, set),
};

const struct key_table *const key_tables[] = {
	&plan_keys,         &plan_vm_keys,         &plan_nic_keys,      &plan_disk_keys,
	&plan_dataset_keys, &plan_size_range_keys, &plan_dirs_keys,     &plan_method_keys,
	&plan_archive_keys, &plan_matrix_keys,     &plan_exclude_keys,  &plan_matrix_include_keys,
	&plan_run_keys,     &plan_boots_keys,      &plan_repeat_keys,   &plan_criterion_keys,
	&plan_where_keys,   &plan_report_keys,     &plan_markdown_keys, &plan_regression_keys,
};
const size_t n_key_tables = ELEMENTSOF(key_tables);
