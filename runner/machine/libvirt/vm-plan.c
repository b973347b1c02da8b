/* SPDX-License-Identifier: MIT */
/* Plan entries onto VM and disk configurations (vm-plan.h). */
#include "vm-plan.h"

enum disk_format vm_disk_format_from_plan(enum plan_disk_format f)
{
	return f == PLAN_FORMAT_QCOW2 ? DISK_FORMAT_QCOW2 : DISK_FORMAT_RAW;
}

enum disk_bus vm_disk_bus_from_plan(enum plan_bus b)
{
	switch (b) {
	case PLAN_BUS_SCSI: return DISK_BUS_SCSI;
	case PLAN_BUS_SATA: return DISK_BUS_SATA;
	case PLAN_BUS_IDE: return DISK_BUS_IDE;
	default: return DISK_BUS_VIRTIO;
	}
}

void vm_config_from_plan(const struct plan_vm *p, const char *kernel, const char *initrd,
			 const char *cmdline, const char *root, struct vm_config *c)
{
	vm_config_init(c);
	c->vcpus = (unsigned)p->vcpus;
	c->memory = p->memory;
	c->machine = p->machine == PLAN_MACHINE_Q35 ? VM_MACHINE_Q35 : VM_MACHINE_PC;
	c->firmware = p->firmware == PLAN_FIRMWARE_UEFI ? VM_FIRMWARE_UEFI : VM_FIRMWARE_BIOS;
	c->accel = p->accel == PLAN_ACCEL_KVM   ? VM_ACCEL_KVM
		   : p->accel == PLAN_ACCEL_TCG ? VM_ACCEL_TCG
						: VM_ACCEL_AUTO;
	c->os = p->os == PLAN_OS_WINDOWS ? VM_OS_WINDOWS : VM_OS_LINUX;
	if (p->guest == PLAN_GUEST_IMAGE) {
		c->image = p->image;
		c->user_image = true;
		c->kernel = p->kernel;
		c->initrd = p->initrd;
		c->cmdline = p->cmdline;
	} else {
		c->kernel = kernel;
		c->initrd = initrd;
		c->cmdline = cmdline;
		if (p->guest == PLAN_GUEST_DEBIAN)
			c->image = root;
	}
	c->nic.model = p->nic.model == PLAN_NIC_E1000 ? NIC_MODEL_E1000 : NIC_MODEL_VIRTIO;
	c->nic.queues = (unsigned)p->nic.queues;
	if (p->nic.backend == PLAN_NIC_PRIVATE) {
		c->nic.backend = NIC_BACKEND_PRIVATE;
	} else if (p->nic.network) {
		c->nic.backend = NIC_BACKEND_NETWORK;
		c->nic.source = p->nic.network;
	} else if (p->nic.bridge) {
		c->nic.backend = NIC_BACKEND_BRIDGE;
		c->nic.source = p->nic.bridge;
	} else {
		c->nic.backend = NIC_BACKEND_USER;
	}
}

void vm_disk_config_from_plan(const struct plan_disk *p, const char *path, const char *serial,
			      struct disk_config *c)
{
	static const enum disk_cache caches[] = {
		[PLAN_CACHE_NONE] = DISK_CACHE_NONE,
		[PLAN_CACHE_WRITEBACK] = DISK_CACHE_WRITEBACK,
		[PLAN_CACHE_WRITETHROUGH] = DISK_CACHE_WRITETHROUGH,
		[PLAN_CACHE_DIRECTSYNC] = DISK_CACHE_DIRECTSYNC,
		[PLAN_CACHE_UNSAFE] = DISK_CACHE_UNSAFE,
	};
	static const enum disk_io ios[] = {
		[PLAN_IO_THREADS] = DISK_IO_THREADS,
		[PLAN_IO_NATIVE] = DISK_IO_NATIVE,
		[PLAN_IO_URING] = DISK_IO_IO_URING,
	};
	*c = (struct disk_config){
		.kind = p->kind == PLAN_DISK_TMPFS ? DISK_KIND_TMPFS : DISK_KIND_IMAGE,
		.format = vm_disk_format_from_plan(p->format),
		.allocation = p->allocation == PLAN_ALLOC_FULL     ? DISK_ALLOC_FULL
			      : p->allocation == PLAN_ALLOC_FALLOC ? DISK_ALLOC_FALLOC
								   : DISK_ALLOC_SPARSE,
		.size = p->size,
		.bus = vm_disk_bus_from_plan(p->bus),
		.cache = caches[p->cache],
		.io = ios[p->io],
		.discard = p->discard,
		.serial = serial,
		.path = path,
	};
}
