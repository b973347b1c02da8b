/* SPDX-License-Identifier: MIT */
/*
 * Guests as libvirt domains: the VM and disk configuration, validation of what libvirt/QEMU
 * refuse, domain XML (libxml2 tree API), and the lifecycle: boot a transient domain, wait for the
 * guest agent, create disk images with qemu-img, hot-plug and unplug disks and wait until the
 * guest sees (or loses) them, destroy.
 *
 * Strings inside the config structs are borrowed: the caller keeps them alive while the functions
 * use them. Every error is returned as a message (*err, caller frees) that carries the libvirt
 * message copied at the failing call and, for a guest that failed, the serial console tail.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libvirt/libvirt.h>

#include "devices.h"
#include "run.h"
#include "util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(virConnectPtr, virConnectClose)
DEFINE_TRIVIAL_CLEANUP_FUNC(virDomainPtr, virDomainFree)

enum vm_machine { VM_MACHINE_PC, VM_MACHINE_Q35 };
enum vm_firmware { VM_FIRMWARE_BIOS, VM_FIRMWARE_UEFI };
enum vm_accel { VM_ACCEL_AUTO, VM_ACCEL_KVM, VM_ACCEL_TCG };
enum vm_os { VM_OS_LINUX, VM_OS_WINDOWS };

/* Names of the enum values, indexed by value, as plans spell them (NULL-terminated). */
extern const char *const vm_machine_names[];
extern const char *const vm_firmware_names[];
extern const char *const vm_accel_names[];
extern const char *const vm_os_names[];
extern const char *const nic_model_names[];
extern const char *const nic_backend_names[];
extern const char *const share_mode_names[];
extern const char *const share_driver_names[];
extern const char *const disk_kind_names[];
extern const char *const disk_format_names[];
extern const char *const disk_alloc_names[];
extern const char *const disk_bus_names[];
extern const char *const disk_cache_names[];
extern const char *const disk_io_names[];
/* The index of s in a NULL-terminated names table, or -1. */
int vm_enum_parse(const char *const *names, const char *s);

struct vm_config {
	const char *name; /* domain name; NULL lets vm_boot() name it ferry-<run id>-<n> */
	/* The run that owns the domain, written into its <metadata> (RUN_XMLNS, vm-owner.c) so that
	 * `ferry doctor --reap` can prove the domain is ferry's; NULL: no marker. vm_boot() sets
	 * it. */
	const char *owner_run;
	long owner_pid;
	unsigned vcpus;  /* >= 1 */
	uint64_t memory; /* bytes, >= 64 MiB, a multiple of 1 MiB */
	enum vm_machine machine;
	enum vm_firmware firmware;
	enum vm_accel accel;
	/* the built-in guest: kernel + initramfs + command line (image NULL); with image set, a
	   direct kernel boot of that disk (initrd optional) */
	const char *kernel, *initrd, *cmdline;
	/* a disk image (a user's, or the Debian guest's root), booted through a temporary qcow2
	   overlay (never modified): by its bootloader, or by kernel when that is set */
	const char *image;
	/* image is a user's (guest: image), not ferry's Debian guest: ferry knows nothing of its
	   tools, so it cannot give it an address on the private network */
	bool user_image;
	/* a NoCloud seed (cidata ISO) attached as a CD-ROM: ide on pc, sata on q35 */
	const char *seed;
	enum vm_os os; /* selects the in-guest commands */
	struct nic_config nic;
	struct share_config share;
	const char *const *channels; /* extra virtio-serial port names (unix sockets) */
	size_t n_channels;
	const struct disk_config *disks; /* disks present at boot */
	size_t n_disks;
	/* buses (bits 1 << enum disk_bus) of disks hot-plugged after boot: the built-in guest loads
	 * their drivers at boot (vm_guest_modules()) */
	unsigned hotplug_buses;
	/* a <genid/> (a VM generation ID libvirt makes up per domain): the guest kernel's vmgenid
	 * driver reseeds its random generator when it changes, as after a restore */
	bool genid;
	/* start from this saved state (vm_save) instead of booting: the domain's QEMU loads it as
	 * an incoming migration (vm-save.c); c must be the configuration that was saved */
	const struct vm_saved *restore;
};

/* ferry-virtiofsd (the host's virtiofsd confined to SHARE_IDS_BASE's ids, virtiofsd-wrap.c),
 * or NULL when the host has no virtiofsd or ferry-virtiofsd is not built or installed. */
const char *vm_virtiofsd_path(void);

/* Empty PCIe root ports a q35 domain gets for hot-plugged virtio disks. */
#define VM_Q35_SPARE_PORTS 8

/*
 * The NIC on user networking is not libvirt's <interface type='user'>: libvirt 9.0 cannot make
 * its slirp restricted (`restrict=on`, which leaves the guest no way to the host's loopback:
 * without it the guest's 10.0.2.2 is the host's 127.0.0.1, every local service included), so
 * the domain gets QEMU's own -netdev user,restrict=on and the NIC's -device through libvirt's
 * QEMU namespace (<qemu:commandline>). libvirt does not know that device's PCI slot, so it is
 * one libvirt's allocation never reaches: on pc the last slot of pci.0 (libvirt fills pci.0
 * from slot 2 up, hot-plugged devices too), on q35 a root port of ferry's own on pcie.0 (libvirt
 * puts its root ports from slot 1 up, and hot-plugs only into the ports it knows). The host
 * still connects into the guest through forwards (vm_hostfwd_add()) on VM_USER_NETDEV.
 */
#define VM_USER_NETDEV   "ferrynet0"
#define VM_USER_NIC      "ferrynic0"
#define VM_USER_NIC_PC   "bus=pci.0,addr=0x1f"
#define VM_USER_PORT     "ferrynicport0"
#define VM_USER_PORT_Q35 "pcie-root-port,id=" VM_USER_PORT ",bus=pcie.0,addr=0x1c,chassis=254"
#define VM_USER_NIC_Q35  "bus=" VM_USER_PORT ",addr=0x0"

/* Defaults: 1 vCPU, 256 MiB, pc, bios, auto, linux, virtio NIC on user networking, no disks. */
void vm_config_init(struct vm_config *c);

/*
 * Refuse what libvirt/QEMU refuse, with the reason: io native without cache none/directsync,
 * readonly or hot-plugged sata/ide, ide on q35, queues > 1 on user networking or e1000, serials
 * the guest cannot report, missing sizes, a read-only or mapped virtiofs share or one without
 * a virtiofsd. Returns 0 or -1 with *why set (caller frees).
 * machine: the machine the disk will be attached to; hotplug: attached to a running guest.
 */
int vm_disk_validate(const struct disk_config *d, enum vm_machine machine, bool hotplug,
		     char **why);
/* The whole VM, including its boot-time disks. Returns 0 or -1 with *why (caller frees). */
int vm_config_validate(const struct vm_config *c, char **why);

/*
 * The domain XML for c (libxml2 tree API). kvm selects <domain type='kvm'> (else 'qemu', TCG);
 * console_log is the file the serial console is written to; c->image (when set) is the path the
 * domain boots from as given (vm_boot passes the overlay). name: the domain name (overrides
 * c->name). Returns the XML (caller frees) or NULL with *err set.
 */
char *vm_domain_xml(const struct vm_config *c, const char *name, bool kvm, const char *console_log,
		    char **err);
/*
 * The kernel modules the built-in guest loads at boot for c's devices, comma-separated, passed as
 * ferry.modules= on its command line (the guest always loads virtio_pci and virtio_console for
 * the agent besides): virtio_blk always (cheap; methods hot-plug virtio disks), the SCSI, SATA or
 * IDE drivers only for disks on those buses (at boot or in c->hotplug_buses), the NIC model's
 * driver only with a NIC. Every driver left out is boot time saved under TCG. Caller frees.
 */
char *vm_guest_modules(const struct vm_config *c);
/* Whether c has SCSI disks, at boot or in c->hotplug_buses: only then does its domain get the
 * virtio-scsi controller at boot. */
bool vm_needs_scsi(const struct vm_config *c);
/* The virtio-scsi controller's XML, hot-plugged before the first SCSI disk of a VM without it. */
extern const char vm_scsi_controller_xml[];
/* The guest target name of the idx-th disk (0-based) on bus: "vda", "sdb", "hdc". Caller frees. */
char *vm_disk_target_name(enum disk_bus bus, unsigned idx);
/* The <disk> element alone, for hot-plug; target is e.g. "vdb". Caller frees. */
char *vm_disk_xml(const struct disk_config *d, const char *target, char **err);

/* Install the quiet libvirt error handler (idempotent); vm_connect calls it. */
void vm_quiet_libvirt(void);
/* Open a libvirt connection (NULL uri: qemu:///system). Returns NULL with *err set. */
virConnectPtr vm_connect(const char *uri, char **err);

/*
 * Create a disk image with qemu-img (argv, no shell): format, size and preallocation from d.
 * Returns 0 or -1 with *err set.
 */
int vm_image_create(const struct disk_config *d, const char *path, char **err);

/*
 * Create the target image d->path (format, size, allocation from d) holding an empty ext4
 * filesystem, formatted the same way for every format and allocation (no discard, inode tables
 * and journal zeroed up front: the guest's ext4lazyinit finds nothing to do). 0 or -1 with *err.
 */
int vm_target_create(const struct disk_config *d, char **err);

/*
 * The target image d->path as a copy of template_path, an image vm_target_create made for the
 * same format and size with sparse allocation: the same bytes and the same holes (the
 * filesystem's UUID included) in a few milliseconds instead of mke2fs + qemu-img. 0 or -1.
 */
int vm_target_copy(const char *template_path, const struct disk_config *d, char **err);

struct vm;

/*
 * Boot c as a transient domain owned by run (destroyed at run_close on every exit path; started
 * with VIR_DOMAIN_START_AUTODESTROY, so libvirt destroys it when ferry's connection closes, also
 * when ferry is killed; marked with the run's id and pid in its <metadata>) and wait
 * up to timeout_ms for the guest agent to answer guest-ping. accel auto uses KVM only when the
 * boot probe (vm_probe_kvm; its answer kept per host boot, see vm_kvm_probe_remember) proved it
 * works, else TCG. An image boots from a qcow2 overlay in the run directory; the kernel and
 * initrd of an image's direct kernel boot are copied into it first (regular files only), so
 * libvirt relabels only ferry's copies. Returns 0 with
 * *out set, or -1 with *err set (with the console tail when the guest did not come up).
 */
int vm_boot(struct run *run, virConnectPtr conn, const struct vm_config *c, unsigned timeout_ms,
	    struct vm **out, char **err);
/*
 * Saved states (vm-save.c). vm_save saves the running guest vm (virDomainSaveFlags; the domain
 * is gone afterwards: vm_destroy it) to path, a file of the run directory, and gives the state
 * (*out; vm_saved_free removes its file). A vm_boot() of the same configuration with
 * restore set starts a new domain (a new name and UUID, auto-destroy, like a boot) from it;
 * vm_boot_ms() is then the time from virDomainCreateXML to the first answered guest-ping.
 * Afterwards its clock is set from the host's and its random pool gets fresh bytes
 * (vm_restore_refresh, called by vm_boot). A guest booted from an image (c->image) keeps its
 * root's overlay of the moment of the save as a read-only base, and every restored guest boots
 * from an overlay of its own over it: a fresh disk whose contents are the ones the saved memory
 * knows (vm_saved_disk).
 */
struct vm_saved;
int vm_save(struct vm *vm, const char *path, struct vm_saved **out, char **err);
void vm_saved_free(struct vm_saved *s);
/* The bytes of QEMU's state in the file. */
uint64_t vm_saved_bytes(const struct vm_saved *s);
/* The saved guest's root disk (a qcow2 file of the run directory, read-only from the save on),
 * or NULL when it booted without an image. */
const char *vm_saved_disk(const struct vm_saved *s);
/* Why c cannot be saved and restored (remote: the domain runs on a remote host), or NULL. */
const char *vm_restore_unsupported(const struct vm_config *c, bool remote);
/* (vm.c) Load s into vm's QEMU, started with `-incoming defer`, and resume it. */
int vm_incoming(struct vm *vm, const struct vm_saved *s, unsigned timeout_ms, char **err);
/* (vm.c) After a restore: the host's time, fresh randomness. */
int vm_restore_refresh(struct vm *vm, char **err);

/* Destroy the domain (if still there) and free vm. Safe with NULL, and after run_close(). */
void vm_destroy(struct vm *vm);

/*
 * Register the domain name (on conn) with run, to be destroyed at run_close() (vm-owner.c);
 * conn gets a reference (virConnectRef). A domain already gone then is fine. The caller that
 * destroys it itself forgets it with run_disown(run, name).
 */
void vm_own_domain(struct run *run, virConnectPtr conn, const char *name);

/* The XML namespace of the marker in a ferry domain's <metadata>: <ferry:run id="RUN ID"
 * pid="PID"/>. Only a domain with it is ferry's; its name proves nothing. */
#define RUN_XMLNS "https://github.com/ferry/ferry/xmlns/run/1"

/*
 * Whether dom carries ferry's marker (RUN_XMLNS) in its live or persistent metadata: then true
 * with *run_id (caller frees; may be NULL) and *pid of the ferry process that started it.
 */
bool vm_domain_owner(virDomainPtr dom, char **run_id, long *pid);

virDomainPtr vm_domain(const struct vm *vm);
const char *vm_name(const struct vm *vm);
/* The accelerator the domain runs on: "kvm" or "tcg". */
const char *vm_accel_used(const struct vm *vm);
/* Milliseconds from virDomainCreateXML to the first answered guest-ping. */
double vm_boot_ms(const struct vm *vm);
/* Of that boot: the KVM boot probe vm_boot() ran first (accel auto, not remembered), or 0. */
double vm_probe_ms(const struct vm *vm);
/* The serial console log path and its last max_lines lines (caller frees; "" when empty). */
const char *vm_console_log(const struct vm *vm);
/* Console lines an error carries: a kernel panic with its call trace fits. */
#define VM_ERROR_CONSOLE_LINES 25
char *vm_console_tail(const struct vm *vm, unsigned max_lines);

/*
 * Whether KVM really works: boots the built-in guest as a KVM domain (c's kernel/initrd/cmdline
 * when c has a kernel, else the one guest_locate() finds; other settings are ignored) and waits
 * up to timeout_ms for guest-ping. The first answer is cached for the
 * process. Returns 1 usable, 0 not usable (*why says why; caller frees), -1 on error (*why).
 */
int vm_probe_kvm(struct run *run, virConnectPtr conn, const struct vm_config *c,
		 unsigned timeout_ms, char **why);
#define VM_KVM_PROBE_TIMEOUT_MS 8000
/*
 * Remember a probe's answer (1 usable, 0 not) for this host boot and libvirt URI in the cache
 * directory ("kvm-probe"), so that vm_boot() with accel auto does not probe again in every
 * process. ferry doctor always probes and refreshes it.
 */
void vm_kvm_probe_remember(virConnectPtr conn, int usable);

/*
 * Hot-plug d (its image at d->path) into the running guest (virDomainAttachDeviceFlags LIVE) and
 * wait up to timeout_ms until the guest shows a block device with d->serial. *dev receives the
 * guest device name (e.g. "vdb", "sda"; caller frees) when dev is not NULL.
 */
int vm_disk_attach(struct vm *vm, const struct disk_config *d, unsigned timeout_ms, char **dev,
		   char **err);
/*
 * Hot-plug d as vm_disk_attach() does, without waiting for the guest to show it: the caller
 * waits inside its own guest command (vm_disk_wait_command()), which saves the agent round
 * trips of polling from the host. The disk counts as attached (vm_disk_detach() unplugs it).
 * timeout_ms bounds the SCSI driver load before a first SCSI hot-plug.
 */
int vm_disk_plug(struct vm *vm, const struct disk_config *d, unsigned timeout_ms, char **err);
/*
 * A POSIX shell prefix (Linux guests) that waits until a block device with this serial shows
 * (virtio sysfs serial, SCSI/ATA VPD page 0x80, as vm_find_disk()) and leaves its name ("vdb")
 * in $d, or exits 1 with a message after about timeout_ms. serial: letters, digits, '-', '_'
 * (what the callers generate; not quoted further). Caller frees.
 */
char *vm_disk_wait_command(const char *serial, unsigned timeout_ms);
/* Unplug the disk with this serial and wait until the guest no longer shows it. */
int vm_disk_detach(struct vm *vm, const char *serial, unsigned timeout_ms, char **err);
/*
 * Find the guest block device whose serial is serial (virtio: /sys/block/X/serial, SCSI/ATA:
 * VPD page 0x80 in /sys/block/X/device/vpd_pg80). Returns 1 found (*dev set), 0 not found,
 * -1 error.
 */
int vm_find_disk(struct vm *vm, const char *serial, char **dev, char **err);

/* The host end (a unix socket libvirt created) of the virtio-serial channel named name. */
int vm_channel_path(struct vm *vm, const char *name, char **path, char **err);
/*
 * Connect to the host end of the virtio-serial channel named name (vm-channel.c): *fd is a
 * stream socket (blocking) whose bytes reach the guest's port. On the local host it is the unix
 * socket libvirt created; on a remote host (vm_remote) a socketpair pumped into
 * virDomainOpenChannel's stream by a thread, which after the caller closed *fd ends the stream
 * only once the guest has received every byte. Returns 0 or -1 with *err.
 */
int vm_channel_open(struct vm *vm, const char *name, int *fd, char **err);
/* End the channel pumps of vm that are done (all: every one, at once; vm NULL: of every vm). */
void vm_channel_reap(struct vm *vm, bool all);
/* Whether the domain runs on a remote host (hoststore.h): its files are volumes there. */
bool vm_remote(const struct vm *vm);
/* The guest's address on the private network (NIC backend private), or NULL on any other. */
const char *vm_nic_guest_addr(const struct vm *vm);
/* Why the NIC runs without vhost-net (private virtio NIC on a host without /dev/vhost-net), or
 * NULL when it uses vhost-net or is not such a NIC. */
const char *vm_nic_no_vhost_reason(const struct vm *vm);
/* Whether the host has vhost-net (/dev/vhost-net opens read-write). */
bool vm_vhost_net_available(void);
/* The host device of the first NIC (the tap, e.g. "vnet3"; caller frees). */
int vm_nic_device(struct vm *vm, char **dev, char **err);
/*
 * Forward 127.0.0.1:host_port on the host to guest_port in a guest on user networking (QEMU
 * HMP hostfwd_add on VM_USER_NETDEV through libvirt-qemu), so the host can connect into the
 * guest. The only way in: the guest cannot connect out to the host.
 */
int vm_hostfwd_add(struct vm *vm, int host_port, int guest_port, char **err);
