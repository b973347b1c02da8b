/* SPDX-License-Identifier: MIT */
/*
 * The devices a guest is configured with, as plain data: the target and extra disks, the NIC and
 * the shared folder. Methods ask for them (struct method_boot_needs) and read the target disk's
 * (struct method_ctx); the libvirt driver (libvirt/vm.h) turns them into domain XML. Nothing here
 * depends on libvirt.
 *
 * Strings inside the config structs are borrowed: the caller keeps them alive while they are used.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

enum nic_model { NIC_MODEL_VIRTIO, NIC_MODEL_E1000 };
enum nic_backend {
	NIC_BACKEND_NONE, /* no network interface at all */
	/* QEMU user networking (slirp), the default, restricted: the guest reaches nothing of the
	 * host (no 10.0.2.2 -> 127.0.0.1); the host reaches the guest's ports it forwards */
	NIC_BACKEND_USER,
	NIC_BACKEND_NETWORK,  /* a libvirt network named by source */
	NIC_BACKEND_BRIDGE,   /* a host bridge named by source */
	NIC_BACKEND_ETHERNET, /* a tap libvirt creates (source: its name, or NULL for vnetN) */
	/* ferry's private network of the run (netns.h): vm_boot() creates the tap, libvirt attaches
	 * it unmanaged (source: its name, set by vm_boot), then it moves into the namespace */
	NIC_BACKEND_PRIVATE,
};
enum share_mode { SHARE_MODE_MAPPED, SHARE_MODE_PASSTHROUGH };
enum share_driver { SHARE_DRIVER_9P, SHARE_DRIVER_VIRTIOFS };

enum disk_kind { DISK_KIND_IMAGE, DISK_KIND_TMPFS };
enum disk_format { DISK_FORMAT_RAW, DISK_FORMAT_QCOW2 };
enum disk_alloc { DISK_ALLOC_SPARSE, DISK_ALLOC_FALLOC, DISK_ALLOC_FULL };
enum disk_bus { DISK_BUS_VIRTIO, DISK_BUS_SCSI, DISK_BUS_SATA, DISK_BUS_IDE };
enum disk_cache {
	DISK_CACHE_DEFAULT, /* hypervisor default (QEMU: writeback); not written to the XML */
	DISK_CACHE_NONE,
	DISK_CACHE_WRITEBACK,
	DISK_CACHE_WRITETHROUGH,
	DISK_CACHE_DIRECTSYNC,
	DISK_CACHE_UNSAFE,
};
enum disk_io { DISK_IO_DEFAULT, DISK_IO_NATIVE, DISK_IO_THREADS, DISK_IO_IO_URING };

/* Longest <serial> the guest can report back (virtio-blk: 20 bytes, ATA: 20 characters). */
#define DISK_SERIAL_MAX 20

struct disk_config {
	enum disk_kind kind;        /* tmpfs: data lands in guest RAM; no image, not in the XML */
	enum disk_format format;    /* raw | qcow2 */
	enum disk_alloc allocation; /* qemu-img preallocation: sparse=off, falloc, full */
	uint64_t size;              /* bytes (image kind) */
	enum disk_bus bus;          /* virtio | scsi (virtio-scsi) | sata | ide (pc only) */
	enum disk_cache cache;
	enum disk_io io;
	bool discard;       /* discard='unmap': guest TRIM frees host blocks */
	bool readonly;      /* virtio and scsi only */
	const char *serial; /* how the guest finds the disk; [A-Za-z0-9_.+-], <= 20 characters */
	const char *path;   /* the image file (an absolute path QEMU can read as libvirt-qemu) */
};

struct nic_config {
	enum nic_model model;
	unsigned queues; /* 0 or 1: single queue; > 1 needs a tap (ethernet/network/bridge) */
	enum nic_backend backend;
	const char *source; /* network or bridge name; tap name for ethernet (optional) */
	bool vhost; /* private, virtio: <driver name='vhost'> (the host has /dev/vhost-net), else
		       QEMU's own virtio-net back end (name='qemu') */
};

struct share_config {
	const char *host_dir; /* NULL: no share */
	const char *tag;      /* mount tag the guest uses: mount -t 9p|virtiofs TAG DIR */
	enum share_mode mode; /* mapped (guest writes work) | passthrough; virtiofs: passthrough */
	bool readonly;        /* 9p only: libvirt 9.0 refuses a read-only virtiofs share */
	/*
	 * 9p (QEMU's own virtio-9p device) or virtiofs: libvirt starts ferry-virtiofsd for the
	 * domain and stops it with it (virtiofsd confined to the ids of share-ids.h); the domain
	 * gets shared memory backing (memfd), which vhost-user needs so that virtiofsd can reach
	 * the guest's RAM.
	 */
	enum share_driver driver;
	const char *virtiofsd; /* virtiofs: ferry-virtiofsd's path (vm_virtiofsd_path()) */
};
