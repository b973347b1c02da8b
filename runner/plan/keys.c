/* SPDX-License-Identifier: MIT */
#include "keys.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "plan.h"
#include "units.h"

#include <inttypes.h>

/* enum fields are written through int pointers */
_Static_assert(sizeof(enum plan_bus) == sizeof(int), "enums must be int-sized");
_Static_assert(sizeof(enum plan_metric) == sizeof(int), "enums must be int-sized");

#define V(...)      ((const char *const[]){ __VA_ARGS__, NULL })
#define BIT(x)      (UINT32_C(1) << (x))
#define FIELD(s, f) offsetof(struct s, f)
#define KEYS(a)     .keys = a, .n_keys = ELEMENTSOF(a)

/* The enumerations' spellings; the order is the enum's order in plan.h. */
static const char *const axis_values[] = { "vm", "disk", "dataset", "method", NULL };
static const char *const bus_values[] = { "virtio", "scsi", "sata", "ide", NULL };
static const char *const format_values[] = { "raw", "qcow2", NULL };

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
	  .max = 64,
	  .help = "virtio-net queue pairs; more than 1 needs a tap (set network or bridge): QEMU "
		  "user networking refuses queues" },
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
	  .values = V("builtin", "image"),
	  .help =
	      "builtin boots ferry's own small Linux guest; image boots the disk image named by "
	      "image (implied when image is set)" },
	{ .name = "image",
	  .type = KEY_STRING,
	  .offset = FIELD(plan_vm, image),
	  .help =
	      "a bootable disk image with qemu-guest-agent; booted through a temporary overlay, "
	      "never modified" },
	{ .name = "os",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_vm, os),
	  .def = "linux",
	  .values = V("linux", "windows"),
	  .help = "operating system of an image guest; selects the in-guest commands" },
	{ .name = "vcpus",
	  .type = KEY_UINT,
	  .offset = FIELD(plan_vm, vcpus),
	  .def = "2",
	  .min = 1,
	  .max = 256,
	  .help = "virtual CPUs" },
	{ .name = "memory",
	  .type = KEY_SIZE,
	  .offset = FIELD(plan_vm, memory),
	  .def = "1GiB",
	  .min = UINT64_C(64) << 20,
	  .max = UINT64_C(1) << 42,
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
	  .values = format_values,
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
	  .min = UINT64_C(1) << 20,
	  .max = UINT64_C(1) << 44,
	  .help = "capacity of the image, or the size limit of the tmpfs" },
	{ .name = "bus",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_disk, bus),
	  .def = "virtio",
	  .values = bus_values,
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
	  .max = 10000000,
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

/* ---- methods.NAME ------------------------------------------------------------------------ */

#define M(t)       BIT(PLAN_METHOD_##t)
#define M_ARCHIVED (M(DISK_IMAGE) | M(AGENT_FILE) | M(CHANNEL) | M(SHARE) | M(NETWORK))

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
	  .values = V("disk-image", "agent-file", "channel", "share", "network", "block", "null"),
	  .flags = KEY_REQUIRED,
	  .help =
	      "how the data goes in: disk-image (attach an image holding it), agent-file (guest "
	      "agent file writes), channel (a virtio-serial pipe), share (a host folder), "
	      "network (over the NIC), block (raw device writes), null (moves nothing, takes "
	      "duration)" },
	{ .name = "archive",
	  .type = KEY_MAPPING,
	  .offset = FIELD(plan_method, archive),
	  .sub = &plan_archive_keys,
	  .shorthand = V("format"),
	  .applies = M_ARCHIVED,
	  .help = "pack first: a format (tar, pax, cpio, zip) or {format, compression, level}" },
	{ .name = "filesystem",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_method, filesystem),
	  .def = "ext4",
	  .values = V("ext4", "iso9660", "vfat"),
	  .applies = M(DISK_IMAGE),
	  .help = "filesystem of the image built on the host" },
	{ .name = "image_format",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_method, image_format),
	  .def = "raw",
	  .values = format_values,
	  .applies = M(DISK_IMAGE),
	  .help = "format of the image built on the host" },
	{ .name = "bus",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_method, image_bus),
	  .def = "virtio",
	  .values = bus_values,
	  .applies = M(DISK_IMAGE),
	  .help = "bus the image is hot-plugged on; only virtio and scsi can be hot-plugged" },
	{ .name = "in_place",
	  .type = KEY_BOOL,
	  .offset = FIELD(plan_method, in_place),
	  .def = "false",
	  .applies = M(DISK_IMAGE),
	  .help = "read the data where it is on the attached image instead of copying it" },
	{ .name = "chunk_size",
	  .type = KEY_SIZE,
	  .offset = FIELD(plan_method, chunk_size),
	  .def = "96KiB",
	  .min = 4096,
	  .max = 128 * 1024,
	  .applies = M(AGENT_FILE),
	  .help = "file data per guest-file-write (libvirt 9.0 corrupts agent commands over about "
		  "175 KB of JSON)" },
	{ .name = "driver",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_method, driver),
	  .def = "9p",
	  .values = V("9p", "virtiofs"),
	  .applies = M(SHARE),
	  .help = "share driver; virtiofs needs virtiofsd on the host" },
	{ .name = "msize",
	  .type = KEY_SIZE,
	  .offset = FIELD(plan_method, msize),
	  .def = "512000",
	  .min = 4096,
	  .max = 1 << 20,
	  .applies = M(SHARE),
	  .help = "9p message size" },
	{ .name = "cache",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_method, cache),
	  .def = "none",
	  .values = V("none", "loose", "mmap"),
	  .applies = M(SHARE),
	  .help = "9p cache mode in the guest" },
	{ .name = "mode",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_method, mode),
	  .def = "copy",
	  .values = V("copy", "move"),
	  .applies = M(SHARE),
	  .help = "copy out of the share, or move (the share is refilled before each run)" },
	{ .name = "direction",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_method, direction),
	  .def = "pull",
	  .values = V("pull", "push"),
	  .applies = M(NETWORK),
	  .help = "pull: the guest fetches from a host sender; push: the host connects in "
		  "through a forwarded port" },
	{ .name = "block_size",
	  .type = KEY_SIZE,
	  .offset = FIELD(plan_method, block_size),
	  .def = "1MiB",
	  .min = 512,
	  .max = UINT64_C(64) << 20,
	  .applies = M(BLOCK),
	  .help = "bytes per direct I/O request (a multiple of 512)" },
	{ .name = "queue_depth",
	  .type = KEY_UINT,
	  .offset = FIELD(plan_method, queue_depth),
	  .def = "1",
	  .min = 1,
	  .max = 1024,
	  .applies = M(BLOCK),
	  .help = "requests in flight" },
	{ .name = "duration",
	  .type = KEY_DURATION,
	  .offset = FIELD(plan_method, duration),
	  .def = "0s",
	  .max = 3600 * NSEC_PER_SEC,
	  .applies = M(NULL),
	  .help = "how long the transfer phase of every run takes (null moves no data)" },
};
const struct key_table plan_method_keys = {
	.name = "methods.NAME",
	.doc = "ways to move the data in, by name",
	KEYS(method_defs),
	.set_offset = FIELD(plan_method, e.set),
	.discriminator = "type",
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

static const struct key_def run_defs[] = {
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
	  .help = "order of runs: cell after cell, round-robin over cells sharing a VM, or "
		  "shuffled (seeded)" },
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
	  .help = "limit per cell, boots included" },
};
const struct key_table plan_run_keys = {
	.name = "run",
	.doc = "how cells are run and repeated",
	KEYS(run_defs),
	.set_offset = FIELD(plan_run, set),
};

/* ---- criteria[] -------------------------------------------------------------------------- */

#define WHERE_DEF(axis)                                                                            \
	{                                                                                          \
		.name = #axis, .type = KEY_STRING, .offset = FIELD(plan_where, axis),              \
		.help = "only cells whose " #axis " is this " #axis " name"                        \
	}
static const struct key_def where_defs[] = {
	WHERE_DEF(vm),
	WHERE_DEF(disk),
	WHERE_DEF(dataset),
	WHERE_DEF(method),
};
const struct key_table plan_where_keys = {
	.name = "criteria[].where",
	.doc = "the cells a criterion applies to",
	KEYS(where_defs),
	.set_offset = FIELD(plan_where, set),
};

static const struct key_def criterion_defs[] = {
	{ .name = "metric",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_criterion, metric),
	  .values = V("throughput", "files_per_s", "total", "phase.prepare", "phase.transfer",
		      "phase.finalize", "phase.verify", "phase.cleanup", "cv"),
	  .flags = KEY_REQUIRED,
	  .help = "what is checked: throughput (a rate like 20MB/s), files_per_s, total or a "
		  "phase's median time (a duration), cv (a percentage)" },
	{ .name = "min",
	  .type = KEY_QUANTITY,
	  .offset = FIELD(plan_criterion, min_text),
	  .help = "lowest acceptable value, in the metric's unit" },
	{ .name = "max",
	  .type = KEY_QUANTITY,
	  .offset = FIELD(plan_criterion, max_text),
	  .help = "highest acceptable value, in the metric's unit" },
	{ .name = "where",
	  .type = KEY_MAPPING,
	  .offset = FIELD(plan_criterion, where),
	  .sub = &plan_where_keys,
	  .help = "apply only to cells with these axis values" },
};
const struct key_table plan_criterion_keys = {
	.name = "criteria[]",
	.doc = "pass/fail thresholds on cell statistics",
	KEYS(criterion_defs),
	.set_offset = FIELD(plan_criterion, set),
};

/* ---- report ------------------------------------------------------------------------------ */

static const struct key_def markdown_defs[] = {
	{ .name = "path",
	  .type = KEY_STRING,
	  .offset = FIELD(plan_markdown, path),
	  .help = "where to write the Markdown report" },
	{ .name = "rows",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_markdown, rows),
	  .def = "method",
	  .values = axis_values,
	  .help = "axis whose values are the table's rows" },
	{ .name = "cols",
	  .type = KEY_ENUM,
	  .offset = FIELD(plan_markdown, cols),
	  .def = "dataset",
	  .values = axis_values,
	  .help = "axis whose values are the table's columns" },
};
const struct key_table plan_markdown_keys = {
	.name = "report.markdown",
	.doc = "the Markdown report",
	KEYS(markdown_defs),
	.set_offset = FIELD(plan_markdown, set),
};

static const struct key_def report_defs[] = {
	{ .name = "junit",
	  .type = KEY_STRING,
	  .offset = FIELD(plan_report, junit),
	  .help = "where to write JUnit XML" },
	{ .name = "markdown",
	  .type = KEY_MAPPING,
	  .offset = FIELD(plan_report, markdown),
	  .sub = &plan_markdown_keys,
	  .shorthand = V("path"),
	  .help = "where to write Markdown: a path, or {path, rows, cols}" },
	{ .name = "json",
	  .type = KEY_STRING,
	  .offset = FIELD(plan_report, json),
	  .help = "where to write the JSON results" },
	{ .name = "bmf",
	  .type = KEY_STRING,
	  .offset = FIELD(plan_report, bmf),
	  .help = "where to write Bencher Metric Format JSON" },
	{ .name = "gab",
	  .type = KEY_STRING,
	  .offset = FIELD(plan_report, gab),
	  .help = "where to write github-action-benchmark JSON (customSmallerIsBetter)" },
};
const struct key_table plan_report_keys = {
	.name = "report",
	.doc = "report files written at the end of a run",
	KEYS(report_defs),
	.set_offset = FIELD(plan_report, set),
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
	.doc = "cells to remove (an entry matches partially)",
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
	.doc = "cells to extend or add, after exclude",
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
		    "\"string\", \"enum\": [\"vm\", \"disk\", \"dataset\", \"method\"]}}}",
	  .help = "groups of axes that advance together instead of multiplying (equal lengths)" },
};
const struct key_table plan_matrix_keys = {
	.name = "matrix",
	.doc = "which combinations (cells) run",
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
};
const struct key_table plan_keys = {
	.name = "",
	.doc = "a plan file",
	KEYS(top_defs),
	.set_offset = FIELD(plan, set),
};

const struct key_table *const key_tables[] = {
	&plan_keys,         &plan_vm_keys,         &plan_nic_keys,       &plan_disk_keys,
	&plan_dataset_keys, &plan_size_range_keys, &plan_dirs_keys,      &plan_method_keys,
	&plan_archive_keys, &plan_matrix_keys,     &plan_exclude_keys,   &plan_matrix_include_keys,
	&plan_run_keys,     &plan_repeat_keys,     &plan_criterion_keys, &plan_where_keys,
	&plan_report_keys,  &plan_markdown_keys,
};
const size_t n_key_tables = ELEMENTSOF(key_tables);

/* ---- table helpers ----------------------------------------------------------------------- */

const struct key_def *key_find(const struct key_table *t, const char *name)
{
	for (size_t i = 0; i < t->n_keys; i++)
		if (STREQ(t->keys[i].name, name))
			return &t->keys[i];
	return NULL;
}

size_t key_index(const struct key_table *t, const struct key_def *k)
{
	return (size_t)(k - t->keys);
}

bool key_is_set(const struct key_table *t, const void *obj, const char *name)
{
	const struct key_def *k = key_find(t, name);
	const uint64_t *set = (const uint64_t *)(const void *)((const char *)obj + t->set_offset);
	return k && (*set & (UINT64_C(1) << key_index(t, k)));
}

void key_mark_set(const struct key_table *t, void *obj, const struct key_def *k)
{
	uint64_t *set = (uint64_t *)(void *)((char *)obj + t->set_offset);
	*set |= UINT64_C(1) << key_index(t, k);
}

const char *key_suggest(const struct key_table *t, const char *word)
{
	const char *names[64];
	size_t n = t->n_keys < ELEMENTSOF(names) ? t->n_keys : ELEMENTSOF(names);
	for (size_t i = 0; i < n; i++)
		names[i] = t->keys[i].name;
	return closest_match(word, names, n);
}

int key_enum_index(const struct key_def *k, const char *value)
{
	for (int i = 0; k->values && k->values[i]; i++)
		if (STREQ(k->values[i], value))
			return i;
	return -1;
}

char *key_enum_list(const struct key_def *k)
{
	char *s = xstrdup("");
	size_t n = 0;
	while (k->values[n])
		n++;
	for (size_t i = 0; i < n; i++) {
		char *t = xasprintf("%s%s'%s'", s,
				    i == 0       ? ""
				    : i + 1 == n ? " or "
						 : ", ",
				    k->values[i]);
		free(s);
		s = t;
	}
	return s;
}

/* via void *: the offsets come from offsetof, so the fields are aligned */
#define AT(obj, k, type) ((type *)(void *)((char *)(obj) + (k)->offset))

void key_free(const struct key_table *t, void *obj)
{
	for (size_t i = 0; i < t->n_keys; i++) {
		const struct key_def *k = &t->keys[i];
		switch (k->type) {
		case KEY_STRING:
		case KEY_QUANTITY:
			free(*AT(obj, k, char *));
			*AT(obj, k, char *) = NULL;
			break;
		case KEY_MAPPING: key_free(k->sub, AT(obj, k, char)); break;
		case KEY_STRING_LIST: {
			char **l = *AT(obj, k, char **);
			size_t *n = (size_t *)(void *)((char *)obj + k->count_offset);
			for (size_t j = 0; j < *n; j++)
				free(l[j]);
			free(l);
			*AT(obj, k, char **) = NULL;
			*n = 0;
			break;
		}
		case KEY_NAMED:
		case KEY_LIST: {
			char *arr = *AT(obj, k, char *);
			size_t *n = (size_t *)(void *)((char *)obj + k->count_offset);
			for (size_t j = 0; j < *n; j++) {
				char *e = arr + j * k->elem_size;
				if (k->type == KEY_NAMED)
					free(((struct plan_entry *)(void *)e)->name);
				key_free(k->sub, e);
			}
			free(arr);
			*AT(obj, k, char *) = NULL;
			*n = 0;
			break;
		}
		default: break;
		}
	}
}

void key_defaults(const struct key_table *t, void *obj)
{
	*(uint64_t *)(void *)((char *)obj + t->set_offset) = 0;
	for (size_t i = 0; i < t->n_keys; i++) {
		const struct key_def *k = &t->keys[i];
		if (k->type == KEY_MAPPING) {
			key_defaults(k->sub, AT(obj, k, char));
			continue;
		}
		if (!k->def)
			continue;
		_cleanup_free_ char *err = NULL;
		/* defaults are checked by key_table_check(); a bad one is a programming error */
		if (key_set_scalar(k, obj, k->def, &err) < 0)
			abort();
	}
}

static char *range_text(const struct key_def *k, uint64_t v)
{
	switch (k->type) {
	case KEY_SIZE: return format_size(v);
	case KEY_DURATION: return format_duration(v);
	default: return xasprintf("%" PRIu64, v);
	}
}

static int check_urange(const struct key_def *k, uint64_t v, const char *text, char **err)
{
	if (v >= k->min && (k->max == 0 || v <= k->max))
		return 0;
	_cleanup_free_ char *lo = range_text(k, k->min);
	_cleanup_free_ char *hi = range_text(k, k->max);
	if (k->max == 0)
		*err = xasprintf("'%s' must be at least %s, not '%s'", k->name, lo, text);
	else if (k->min == k->max)
		*err = xasprintf("'%s' must be %s, not '%s'", k->name, lo, text);
	else
		*err = xasprintf("'%s' must be between %s and %s, not '%s'", k->name, lo, hi, text);
	return -1;
}

static int check_frange(const struct key_def *k, double v, const char *text, char **err)
{
	const char *pct = k->type == KEY_PERCENT ? "%" : "";
	if (v >= k->fmin && (k->fmax == 0 || v <= k->fmax))
		return 0;
	if (k->fmax == 0)
		*err =
		    xasprintf("'%s' must be at least %g%s, not '%s'", k->name, k->fmin, pct, text);
	else
		*err = xasprintf("'%s' must be between %g%s and %g%s, not '%s'", k->name, k->fmin,
				 pct, k->fmax, pct, text);
	return -1;
}

/* Prefix a units.h message with the key: "'size': invalid size ...". */
static int with_key(const struct key_def *k, char **err)
{
	char *m = xasprintf("'%s': %s", k->name, *err);
	free(*err);
	*err = m;
	return -1;
}

int key_set_scalar(const struct key_def *k, void *obj, const char *text, char **err)
{
	switch (k->type) {
	case KEY_STRING:
	case KEY_QUANTITY:
		free(*AT(obj, k, char *));
		*AT(obj, k, char *) = xstrdup(text);
		return 0;
	case KEY_BOOL: {
		bool b;
		if (parse_bool(text, &b, err) < 0)
			return with_key(k, err);
		*AT(obj, k, bool) = b;
		return 0;
	}
	case KEY_UINT:
	case KEY_SIZE:
	case KEY_DURATION: {
		uint64_t v;
		int r = k->type == KEY_UINT   ? parse_uint(text, &v, err)
			: k->type == KEY_SIZE ? parse_size(text, &v, err)
					      : parse_duration(text, &v, err);
		if (r < 0)
			return with_key(k, err);
		if (check_urange(k, v, text, err) < 0)
			return -1;
		*AT(obj, k, uint64_t) = v;
		return 0;
	}
	case KEY_FLOAT:
	case KEY_PERCENT: {
		double v;
		int r = k->type == KEY_FLOAT ? parse_double(text, &v, err)
					     : parse_percent(text, &v, err);
		if (r < 0)
			return with_key(k, err);
		if (check_frange(k, v, text, err) < 0)
			return -1;
		*AT(obj, k, double) = v;
		return 0;
	}
	case KEY_ENUM: {
		int i = key_enum_index(k, text);
		if (i < 0) {
			size_t n = 0;
			while (k->values[n])
				n++;
			const char *hint = closest_match(text, k->values, n);
			if (hint) {
				*err = xasprintf("invalid %s '%s' (did you mean '%s'?)", k->name,
						 text, hint);
			} else {
				_cleanup_free_ char *list = key_enum_list(k);
				*err =
				    xasprintf("invalid %s '%s' (expected %s)", k->name, text, list);
			}
			return -1;
		}
		*AT(obj, k, int) = i;
		return 0;
	}
	default: *err = xasprintf("'%s' cannot be a single value", k->name); return -1;
	}
}

/* ---- self-check ---------------------------------------------------------------------------- */

static bool valid_key_name(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

static bool scalar_type(enum key_type t)
{
	return t == KEY_STRING || t == KEY_BOOL || t == KEY_UINT || t == KEY_FLOAT ||
	       t == KEY_SIZE || t == KEY_DURATION || t == KEY_PERCENT || t == KEY_QUANTITY ||
	       t == KEY_ENUM;
}

int key_table_check(const struct key_table *t, char **err)
{
	const struct key_def *disc = t->discriminator ? key_find(t, t->discriminator) : NULL;

	if (!t->doc || !*t->doc) {
		*err = xasprintf("table '%s' has no doc", t->name);
		return -1;
	}
	if (t->n_keys > 64) {
		*err = xasprintf("table '%s' has more than 64 keys", t->name);
		return -1;
	}
	if (t->discriminator && (!disc || disc->type != KEY_ENUM)) {
		*err = xasprintf("table '%s': discriminator '%s' is not an enum key", t->name,
				 t->discriminator);
		return -1;
	}
	for (size_t i = 0; i < t->n_keys; i++) {
		const struct key_def *k = &t->keys[i];
		if (!valid_key_name(k->name)) {
			*err = xasprintf("table '%s': invalid key name '%s'", t->name, k->name);
			return -1;
		}
		for (size_t j = 0; j < i; j++)
			if (STREQ(t->keys[j].name, k->name)) {
				*err =
				    xasprintf("table '%s': duplicate key '%s'", t->name, k->name);
				return -1;
			}
		size_t hl = k->help ? strlen(k->help) : 0;
		/* lower-case start, except acronyms ("QEMU machine type") */
		bool capital = hl > 1 && k->help[0] >= 'A' && k->help[0] <= 'Z' &&
			       k->help[1] >= 'a' && k->help[1] <= 'z';
		if (hl == 0 || k->help[hl - 1] == '.' || capital) {
			*err = xasprintf("key '%s.%s' needs help text (lower-case start, no final "
					 "period)",
					 t->name, k->name);
			return -1;
		}
		if (k->type == KEY_ENUM && (!k->values || !k->values[0])) {
			*err =
			    xasprintf("enum key '%s.%s' has no allowed values", t->name, k->name);
			return -1;
		}
		if ((k->type == KEY_MAPPING || k->type == KEY_NAMED || k->type == KEY_LIST) &&
		    !k->sub) {
			*err = xasprintf("key '%s.%s' has no nested table", t->name, k->name);
			return -1;
		}
		if ((k->type == KEY_NAMES || (k->type == KEY_CUSTOM && !k->sub)) && !k->schema) {
			*err = xasprintf("key '%s.%s' has no schema", t->name, k->name);
			return -1;
		}
		if (k->applies && !disc) {
			*err = xasprintf("key '%s.%s' has 'applies' but its table no discriminator",
					 t->name, k->name);
			return -1;
		}
		if ((k->flags & KEY_REQUIRED) && k->def) {
			*err = xasprintf("required key '%s.%s' has a default", t->name, k->name);
			return -1;
		}
		for (size_t j = 0; k->shorthand && k->shorthand[j]; j++)
			if (k->type != KEY_MAPPING || !key_find(k->sub, k->shorthand[j])) {
				*err = xasprintf("key '%s.%s': shorthand '%s' is not a nested key",
						 t->name, k->name, k->shorthand[j]);
				return -1;
			}
		if (k->def) {
			if (!scalar_type(k->type)) {
				*err = xasprintf("key '%s.%s': only scalar keys have defaults",
						 t->name, k->name);
				return -1;
			}
			/* parse the default into scratch memory laid out like the real struct */
			_cleanup_free_ char *scratch = xcalloc(1, k->offset + 64);
			_cleanup_free_ char *e = NULL;
			if (key_set_scalar(k, scratch, k->def, &e) < 0) {
				*err =
				    xasprintf("key '%s.%s': bad default: %s", t->name, k->name, e);
				return -1;
			}
			if (k->type == KEY_STRING || k->type == KEY_QUANTITY)
				free(*AT(scratch, k, char *));
		}
	}
	return 0;
}

/* ---- JSON Schema --------------------------------------------------------------------------- */

/* Values may also be "${VAR}" strings, substituted before they are read. */
#define ENV_PATTERN      "\\$\\{"
#define NUM_PATTERN      "[0-9]+(\\.[0-9]+)?"
#define SIZE_PATTERN     "^ *" NUM_PATTERN " *(([KkMmGgTt][Ii]?)?[Bb])? *$|" ENV_PATTERN
#define DURATION_PATTERN "^ *(" NUM_PATTERN " *(ms|s|m|h) *)+$|" ENV_PATTERN
#define PERCENT_PATTERN  "^ *" NUM_PATTERN " *% *$|" ENV_PATTERN

static json_t *env_string(void)
{
	return json_pack("{s:s, s:s}", "type", "string", "pattern", ENV_PATTERN);
}

static json_t *table_schema(const struct key_table *t);

static json_t *key_schema_of(const struct key_def *k)
{
	json_t *s = NULL;

	switch (k->type) {
	case KEY_STRING: s = json_pack("{s:s}", "type", "string"); break;
	case KEY_QUANTITY: s = json_pack("{s:[s,s]}", "type", "string", "number"); break;
	case KEY_BOOL:
		s = json_pack("{s:[{s:s}, o]}", "anyOf", "type", "boolean", env_string());
		break;
	case KEY_UINT: {
		json_t *n =
		    json_pack("{s:s, s:I}", "type", "integer", "minimum", (json_int_t)k->min);
		if (k->max && k->max <= (uint64_t)INT64_MAX)
			json_object_set_new(n, "maximum", json_integer((json_int_t)k->max));
		s = json_pack("{s:[o, o]}", "anyOf", n, env_string());
		break;
	}
	case KEY_FLOAT: {
		json_t *n = json_pack("{s:s, s:f}", "type", "number", "minimum", k->fmin);
		if (k->fmax)
			json_object_set_new(n, "maximum", json_real(k->fmax));
		s = json_pack("{s:[o, o]}", "anyOf", n, env_string());
		break;
	}
	case KEY_SIZE:
		s = json_pack("{s:[{s:s, s:i}, {s:s, s:s}]}", "anyOf", "type", "integer", "minimum",
			      0, "type", "string", "pattern", SIZE_PATTERN);
		break;
	case KEY_DURATION:
		s = json_pack("{s:s, s:s}", "type", "string", "pattern", DURATION_PATTERN);
		break;
	case KEY_PERCENT:
		s = json_pack("{s:s, s:s}", "type", "string", "pattern", PERCENT_PATTERN);
		break;
	case KEY_ENUM: {
		json_t *e = json_array();
		for (size_t i = 0; k->values[i]; i++)
			json_array_append_new(e, json_string(k->values[i]));
		s = json_pack("{s:[{s:o}, o]}", "anyOf", "enum", e, env_string());
		break;
	}
	case KEY_MAPPING: {
		json_t *obj = table_schema(k->sub);
		if (k->shorthand) {
			json_t *one = key_schema_of(key_find(k->sub, k->shorthand[0]));
			json_object_del(one, "description");
			json_object_del(one, "default");
			s = json_pack("{s:[o, o]}", "anyOf", one, obj);
		} else {
			s = obj;
		}
		break;
	}
	case KEY_STRING_LIST:
		s = json_pack("{s:s, s:{s:s}}", "type", "array", "items", "type", "string");
		break;
	case KEY_NAMED:
		s = json_pack("{s:s, s:{s:s}, s:o}", "type", "object", "propertyNames", "pattern",
			      "^[A-Za-z0-9._-]+$", "additionalProperties", table_schema(k->sub));
		break;
	case KEY_LIST:
		s = json_pack("{s:s, s:o}", "type", "array", "items", table_schema(k->sub));
		break;
	case KEY_NAMES:
	case KEY_CUSTOM:
		if (k->schema) {
			s = json_loads(k->schema, 0, NULL);
			if (!s)
				abort(); /* key_table_check() catches this in the unit tests */
		} else {
			s = table_schema(k->sub);
		}
		break;
	}
	json_object_set_new(s, "description", json_string(k->help));
	if (k->def) {
		json_t *d;
		if (k->type == KEY_UINT)
			d = json_integer((json_int_t)strtoull(k->def, NULL, 10));
		else if (k->type == KEY_FLOAT)
			d = json_real(strtod(k->def, NULL));
		else if (k->type == KEY_BOOL)
			d = json_boolean(STREQ(k->def, "true"));
		else
			d = json_string(k->def);
		json_object_set_new(s, "default", d);
	}
	return s;
}

static json_t *table_schema(const struct key_table *t)
{
	json_t *props = json_object(), *req = json_array();

	for (size_t i = 0; i < t->n_keys; i++) {
		const struct key_def *k = &t->keys[i];
		json_object_set_new(props, k->name, key_schema_of(k));
		if (k->flags & KEY_REQUIRED)
			json_array_append_new(req, json_string(k->name));
	}
	json_t *s = json_pack("{s:s, s:s, s:o, s:b}", "type", "object", "description", t->doc,
			      "properties", props, "additionalProperties", 0);
	if (json_array_size(req))
		json_object_set_new(s, "required", req);
	else
		json_decref(req);
	return s;
}

json_t *key_schema(void)
{
	json_t *s = table_schema(&plan_keys);
	json_t *top = json_pack(
	    "{s:s, s:s, s:s}", "$schema", "http://json-schema.org/draft-07/schema#", "$id",
	    "https://github.com/ferry/ferry/schema/ferry-plan.schema.json", "title", "ferry plan");
	json_object_update(top, s);
	json_decref(s);
	json_object_set_new(top, "description",
			    json_string("a ferry test plan (generated from runner/plan/keys.c by "
					"'ferry schema'; see ferry(1))"));
	return top;
}

/* ---- man page ------------------------------------------------------------------------------ */

struct buf {
	char *s;
	size_t n, cap;
};

static void bputs(struct buf *b, const char *s)
{
	size_t l = strlen(s);
	b->s = xgrow(b->s, &b->cap, b->n + l + 1, 1);
	memcpy(b->s + b->n, s, l + 1);
	b->n += l;
}

_printf_(2, 3) static void bprintf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *s = xvasprintf(fmt, ap);
	va_end(ap);
	bputs(b, s);
}

/* roff: a backslash is \e, and '-' is \- so that copied keys and values stay ASCII hyphens */
static void bputs_roff(struct buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			bputs(b, "\\e");
		else if (*s == '-')
			bputs(b, "\\-");
		else {
			char c[2] = { *s, 0 };
			bputs(b, c);
		}
	}
}

static const char *type_name(const struct key_def *k)
{
	switch (k->type) {
	case KEY_STRING: return "string";
	case KEY_BOOL: return "boolean";
	case KEY_UINT: return "integer";
	case KEY_FLOAT: return "number";
	case KEY_SIZE: return "size";
	case KEY_DURATION: return "duration";
	case KEY_PERCENT: return "percentage";
	case KEY_QUANTITY: return "quantity";
	case KEY_ENUM: return "enum";
	case KEY_MAPPING: return k->shorthand ? "scalar or mapping" : "mapping";
	case KEY_STRING_LIST: return "list of strings";
	case KEY_NAMED: return "mapping of names";
	case KEY_LIST: return "list of mappings";
	case KEY_NAMES: return "name or list of names";
	case KEY_CUSTOM: return k->sub ? "mapping" : "list of lists";
	}
	return "value";
}

static void man_table(struct buf *b, const struct key_table *t)
{
	const struct key_def *disc = t->discriminator ? key_find(t, t->discriminator) : NULL;

	bputs(b, ".SS \"");
	bputs_roff(b, t->name[0] ? t->name : "top level");
	bputs(b, "\"\n");
	bputs_roff(b, t->doc);
	bputs(b, "\n");
	for (size_t i = 0; i < t->n_keys; i++) {
		const struct key_def *k = &t->keys[i];
		bputs(b, ".TP\n.B ");
		bputs_roff(b, k->name);
		bputs(b, "\n(");
		bputs(b, type_name(k));
		if (k->flags & KEY_REQUIRED)
			bputs(b, ", required");
		bputs(b, ") ");
		bputs_roff(b, k->help);
		bputs(b, ".");
		if (k->type == KEY_ENUM) {
			bputs(b, " One of");
			for (size_t j = 0; k->values[j]; j++) {
				bputs(b, j == 0 ? " \\fB" : ", \\fB");
				bputs_roff(b, k->values[j]);
				bputs(b, "\\fR");
			}
			bputs(b, ".");
		}
		if (k->type == KEY_UINT || k->type == KEY_SIZE || k->type == KEY_DURATION) {
			_cleanup_free_ char *lo = range_text(k, k->min);
			_cleanup_free_ char *hi = range_text(k, k->max);
			if (k->max && k->min == k->max)
				bprintf(b, " Must be %s.", lo);
			else if (k->max)
				bprintf(b, " Range %s to %s.", lo, hi);
			else if (k->min)
				bprintf(b, " At least %s.", lo);
		}
		if ((k->type == KEY_FLOAT || k->type == KEY_PERCENT) && k->fmax)
			bprintf(b, " Range %g%s to %g%s.", k->fmin,
				k->type == KEY_PERCENT ? "%" : "", k->fmax,
				k->type == KEY_PERCENT ? "%" : "");
		if (k->def) {
			bputs(b, " Default: \\fB");
			bputs_roff(b, k->def);
			bputs(b, "\\fR.");
		}
		if (k->applies && disc) {
			bputs(b, " Only with ");
			bputs_roff(b, disc->name);
			bool first = true;
			for (size_t j = 0; disc->values[j]; j++) {
				if (!(k->applies & BIT(j)))
					continue;
				bputs(b, first ? " \\fB" : ", \\fB");
				bputs_roff(b, disc->values[j]);
				bputs(b, "\\fR");
				first = false;
			}
			bputs(b, ".");
		}
		bputs(b, "\n");
	}
}

char *key_man(void)
{
	struct buf b = { 0 };
	bputs(&b, ".\\\" PLAN KEYS: generated by 'ferry schema \\-\\-man' from runner/plan/keys.c; "
		  "do not edit\n");
	for (size_t i = 0; i < n_key_tables; i++)
		man_table(&b, key_tables[i]);
	bputs(&b, ".\\\" end of generated PLAN KEYS\n");
	return b.s;
}

/* ---- values as JSON ------------------------------------------------------------------------ */

/* A JSON string from a string we own and free. */
static json_t *json_own(char *s)
{
	json_t *j = json_string(s);
	free(s);
	return j;
}

json_t *key_values_json(const struct key_table *t, const void *obj)
{
	json_t *o = json_object();
	const struct key_def *dk = t->discriminator ? key_find(t, t->discriminator) : NULL;
	int disc = dk ? *(const int *)(const void *)((const char *)obj + dk->offset) : -1;

	for (size_t i = 0; i < t->n_keys; i++) {
		const struct key_def *k = &t->keys[i];
		const void *f = (const char *)obj + k->offset;
		json_t *v = NULL;
		if (k->applies && disc >= 0 && !(k->applies & BIT(disc)))
			continue; /* an option of another method type or disk kind */
		switch (k->type) {
		case KEY_STRING:
		case KEY_QUANTITY: {
			const char *s = *(char *const *)f;
			if (s)
				v = json_string(s);
			break;
		}
		case KEY_BOOL: v = json_boolean(*(const bool *)f); break;
		case KEY_UINT: v = json_integer((json_int_t) * (const uint64_t *)f); break;
		case KEY_FLOAT: v = json_real(*(const double *)f); break;
		case KEY_SIZE: v = json_own(format_size(*(const uint64_t *)f)); break;
		case KEY_DURATION: v = json_own(format_duration(*(const uint64_t *)f)); break;
		case KEY_PERCENT: v = json_own(xasprintf("%g%%", *(const double *)f)); break;
		case KEY_ENUM: v = json_string(k->values[*(const int *)f]); break;
		case KEY_MAPPING: v = key_values_json(k->sub, f); break;
		default: break;
		}
		if (v)
			json_object_set_new(o, k->name, v);
	}
	return o;
}
