/* SPDX-License-Identifier: MIT */
/*
 * What libvirt and QEMU refuse in a VM configuration, refused first with the reason (vm.h:
 * vm_disk_validate(), vm_config_validate()). The XML is in vm-config.c.
 */
#include "vm.h"

#include <string.h>

#include "cleanup.h"
#include "plan-limits.h"
#include "util.h"

static bool serial_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > DISK_SERIAL_MAX)
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '.' || *p == '+' || *p == '-'))
			return false;
	return true;
}

int vm_disk_validate(const struct disk_config *d, enum vm_machine machine, bool hotplug, char **why)
{
	if (d->kind == DISK_KIND_TMPFS)
		return 0;
	const char *bus = disk_bus_names[d->bus];
	bool ata = d->bus == DISK_BUS_SATA || d->bus == DISK_BUS_IDE;
	if (d->bus == DISK_BUS_IDE && machine == VM_MACHINE_Q35) {
		*why = xstrdup("bus 'ide' does not exist on machine 'q35' (use 'sata', or machine "
			       "'pc')");
		return -1;
	}
	if (ata && hotplug) {
		*why = xasprintf("bus '%s' cannot be hot-plugged (QEMU: the bus does not support "
				 "hotplugging): attach it at boot, or use 'virtio' or 'scsi'",
				 bus);
		return -1;
	}
	if (ata && d->readonly) {
		*why = xasprintf("read-only '%s' disks are not supported by QEMU (use 'virtio' or "
				 "'scsi')",
				 bus);
		return -1;
	}
	if (d->io == DISK_IO_NATIVE && d->cache != DISK_CACHE_NONE &&
	    d->cache != DISK_CACHE_DIRECTSYNC) {
		*why = xasprintf("io 'native' needs cache 'none' or 'directsync', not '%s' "
				 "(libvirt and QEMU refuse native I/O without O_DIRECT)",
				 disk_cache_names[d->cache]);
		return -1;
	}
	if (d->serial && !serial_ok(d->serial)) {
		*why =
		    xasprintf("disk serial '%s' must be 1 to %d characters of A-Z a-z 0-9 _ . + -",
			      d->serial, DISK_SERIAL_MAX);
		return -1;
	}
	if (!d->path && d->size == 0) {
		*why = xstrdup("a disk image needs a size");
		return -1;
	}
	if (d->size % 512 != 0) {
		*why = xasprintf("disk size %llu is not a multiple of 512 bytes",
				 (unsigned long long)d->size);
		return -1;
	}
	return 0;
}

/* The NIC's backend, model and queues. */
static int nic_validate(const struct vm_config *c, char **why)
{
	const struct nic_config *n = &c->nic;
	if (n->backend == NIC_BACKEND_NONE)
		return 0;
	if (n->queues > 1 && n->backend == NIC_BACKEND_USER) {
		*why = xstrdup("nic queues > 1 need a tap backend: libvirt refuses multiqueue "
			       "on user networking (name a network or bridge)");
		return -1;
	}
	if (n->queues > 1 && n->model != NIC_MODEL_VIRTIO) {
		*why = xasprintf("nic queues > 1 need model 'virtio', not '%s'",
				 nic_model_names[n->model]);
		return -1;
	}
	if (n->queues > 256) {
		*why = xstrdup("nic queues must be at most 256");
		return -1;
	}
	if (n->backend == NIC_BACKEND_PRIVATE && c->user_image) {
		*why =
		    xstrdup("nic backend 'private' needs ferry's built-in or Debian guest (ferry "
			    "sets the guest's address on the private network itself, with the "
			    "guest's own ip command)");
		return -1;
	}
	if ((n->backend == NIC_BACKEND_NETWORK || n->backend == NIC_BACKEND_BRIDGE) &&
	    (!n->source || !*n->source)) {
		*why = xasprintf("nic backend '%s' needs a name", nic_backend_names[n->backend]);
		return -1;
	}
	return 0;
}

/* The shared folder: an absolute directory, a tag, what virtiofs needs. */
static int share_validate(const struct share_config *s, char **why)
{
	if (!s->host_dir)
		return 0;
	if (s->host_dir[0] != '/') {
		*why = xasprintf("share directory '%s' must be an absolute path", s->host_dir);
		return -1;
	}
	if (!s->tag || !*s->tag || strlen(s->tag) > 31) {
		*why = xstrdup("a share needs a mount tag of 1 to 31 characters");
		return -1;
	}
	if (s->driver != SHARE_DRIVER_VIRTIOFS)
		return 0;
	/* libvirt 9.0: "virtiofs does not yet support read-only mode" */
	if (s->readonly) {
		*why = xstrdup("a virtiofs share cannot be read-only (mount it read-only in the "
			       "guest instead)");
		return -1;
	}
	if (s->mode != SHARE_MODE_PASSTHROUGH) {
		*why = xstrdup("a virtiofs share needs accessmode passthrough");
		return -1;
	}
	if (!s->virtiofsd || s->virtiofsd[0] != '/') {
		*why = xstrdup("a virtiofs share needs the absolute path of virtiofsd");
		return -1;
	}
	return 0;
}

/* The channel names: allowed characters, not the agent's, each once. */
static int channels_validate(const struct vm_config *c, char **why)
{
	for (size_t i = 0; i < c->n_channels; i++) {
		if (!c->channels[i] || !*c->channels[i] ||
		    STREQ(c->channels[i], "org.qemu.guest_agent.0")) {
			*why = xasprintf("channel name '%s' is empty or taken by the guest agent",
					 c->channels[i] ? c->channels[i] : "");
			return -1;
		}
		if (strspn(c->channels[i], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
					   "0123456789._-") != strlen(c->channels[i])) {
			*why = xasprintf("channel name '%s' may hold only A-Z a-z 0-9 . _ -",
					 c->channels[i]);
			return -1;
		}
		for (size_t j = 0; j < i; j++)
			if (STREQ(c->channels[i], c->channels[j])) {
				*why = xasprintf("channel '%s' is named twice", c->channels[i]);
				return -1;
			}
	}
	return 0;
}

/* The boot-time disks: each valid with its image, serials once, room on the IDE bus. */
static int disks_validate(const struct vm_config *c, char **why)
{
	unsigned ide = c->seed && c->machine == VM_MACHINE_PC; /* the seed's CD-ROM */
	for (size_t i = 0; i < c->n_disks; i++) {
		const struct disk_config *d = &c->disks[i];
		_cleanup_free_ char *w = NULL;
		if (vm_disk_validate(d, c->machine, false, &w) < 0) {
			*why = xasprintf("disk %zu: %s", i + 1, w);
			return -1;
		}
		if (d->kind == DISK_KIND_IMAGE && !d->path) {
			*why = xasprintf("disk %zu: a boot-time disk needs its image path", i + 1);
			return -1;
		}
		if (d->kind == DISK_KIND_IMAGE && d->bus == DISK_BUS_IDE)
			ide++;
		for (size_t j = 0; j < i && d->serial; j++)
			if (c->disks[j].serial && STREQ(c->disks[j].serial, d->serial)) {
				*why = xasprintf("disk serial '%s' is used twice", d->serial);
				return -1;
			}
	}
	if (ide > 4) {
		*why = xstrdup("machine 'pc' has room for 4 ide disks (a seed takes one)");
		return -1;
	}
	return 0;
}

int vm_config_validate(const struct vm_config *c, char **why)
{
	if (c->vcpus < 1 || c->vcpus > PLAN_VCPUS_MAX) {
		*why =
		    xasprintf("vcpus must be between 1 and %u, not %u", PLAN_VCPUS_MAX, c->vcpus);
		return -1;
	}
	if (c->memory < PLAN_MEMORY_MIN || c->memory % (1u << 20) != 0) {
		*why = xstrdup("memory must be at least 64 MiB and a multiple of 1 MiB");
		return -1;
	}
	if (!c->image && !c->kernel) {
		*why = xstrdup("a VM needs a kernel (the built-in guest) or an image");
		return -1;
	}
	if ((c->initrd || c->cmdline) && !c->kernel) {
		*why = xstrdup("an initrd or a kernel command line needs a kernel");
		return -1;
	}
	if (c->seed && !c->image) {
		*why = xstrdup("a NoCloud seed goes with an image guest");
		return -1;
	}
	if (c->kernel && !c->image && !c->initrd) {
		*why = xstrdup("the built-in guest needs an initramfs with its kernel");
		return -1;
	}
	if (nic_validate(c, why) < 0 || share_validate(&c->share, why) < 0 ||
	    channels_validate(c, why) < 0 || disks_validate(c, why) < 0)
		return -1;
	return 0;
}
