/* SPDX-License-Identifier: MIT */
/* What vm.c (boot, destroy), vm-image.c (images on the host) and vm-devices.c (a running guest's
 * devices) share: struct vm, and the image checks and copies a boot makes. */
#pragma once

#include <stdbool.h>

#include <libvirt/libvirt.h>

#include "vm.h"

struct attached {
	char *serial;
	char *xml;
	char *target;
	char *vol; /* remote host: the run volume holding the image (hoststore.h), or NULL */
};

struct vm {
	virConnectPtr conn;
	virDomainPtr dom;
	struct run *run;
	char *name;
	char *console_log;
	enum vm_machine machine;
	enum vm_os os;
	bool kvm;
	double boot_ms;
	double probe_ms; /* the KVM probe vm_boot() ran before the boot, or 0 */
	unsigned next[3];
	/* the built-in guest, and whether its SCSI drivers are loaded (vm_guest_modules()) */
	bool builtin, scsi_loaded;
	bool scsi_ctl;    /* the domain has its virtio-scsi controller */
	char *tap;        /* private NIC: ferry's tap (netns.h), removed with the domain */
	char *guest_addr; /* private NIC: the guest's address there */
	bool no_vhost;    /* private virtio NIC without vhost-net */
	bool user_nic;    /* a NIC on user networking: VM_USER_NETDEV (vm.h) */
	struct attached *att;
	size_t n_att, cap_att;
	/* a remote host (hoststore.h): the console log is a run volume there, and so are the
	 * boot-time disks (boot_vols) and hot-plugged images (attached.vol) */
	struct hoststore *hs;
	char *console_vol;
	unsigned n_uploads;
	char **boot_vols;
	size_t n_boot_vols;
	/* a guest booted from an image: its root's qcow2 overlay in the run directory, removed
	 * with the domain unless a saved state took it (vm_save: the base of the restored guests'
	 * overlays), or NULL */
	char *overlay;
};

/* msg + the last lines of the guest's serial console (a local file, or a volume on a remote
 * host); frees msg */
char *vm_with_console(char *msg, const struct vm *vm);

/* The format of the image a plan names, its backing chain checked file by file (vm-image.c);
 * each file's owner and mode are put back when run ends. Caller frees; NULL with *err. */
char *vm_image_format(struct run *run, const char *path, char **err);
/* The kernel or initrd src (what: which, for messages) copied to dst, a file of the run
 * directory: regular files only, at most 1 GiB. 0 or -1 with *err. */
int vm_copy_boot_file(const char *what, const char *src, const char *dst, char **err);
