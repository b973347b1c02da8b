/* SPDX-License-Identifier: MIT */
/*
 * VM configurations without a hypervisor (vm.h): the enum names, defaults, and the domain and
 * disk XML (libxml2 tree API). What libvirt/QEMU refuse is refused first in vm-validate.c; the
 * lifecycle (boot, hot-plug, destroy) is in vm.c.
 */
#include "vm.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libxml/tree.h>

#include "cleanup.h"
#include "config.h"
#include "util.h"

const char *const vm_machine_names[] = { "pc", "q35", NULL };
const char *const vm_firmware_names[] = { "bios", "uefi", NULL };
const char *const vm_accel_names[] = { "auto", "kvm", "tcg", NULL };
const char *const vm_os_names[] = { "linux", "windows", NULL };
const char *const nic_model_names[] = { "virtio", "e1000", NULL };
const char *const nic_backend_names[] = { "none",     "user",    "network", "bridge",
					  "ethernet", "private", NULL };
const char *const share_mode_names[] = { "mapped", "passthrough", NULL };
const char *const share_driver_names[] = { "9p", "virtiofs", NULL };
const char *const disk_kind_names[] = { "image", "tmpfs", NULL };
const char *const disk_format_names[] = { "raw", "qcow2", NULL };
const char *const disk_alloc_names[] = { "sparse", "falloc", "full", NULL };
const char *const disk_bus_names[] = { "virtio", "scsi", "sata", "ide", NULL };
const char *const disk_cache_names[] = { "default",    "none",   "writeback", "writethrough",
					 "directsync", "unsafe", NULL };
const char *const disk_io_names[] = { "default", "native", "threads", "io_uring", NULL };

int vm_enum_parse(const char *const *names, const char *s)
{
	for (int i = 0; names[i]; i++)
		if (STREQ(names[i], s))
			return i;
	return -1;
}

void vm_config_init(struct vm_config *c)
{
	*c = (struct vm_config){
		.vcpus = 1,
		.memory = 256ull << 20,
		.machine = VM_MACHINE_PC,
		.firmware = VM_FIRMWARE_BIOS,
		.accel = VM_ACCEL_AUTO,
		.os = VM_OS_LINUX,
		.nic = { .model = NIC_MODEL_VIRTIO, .queues = 1, .backend = NIC_BACKEND_USER },
		.share = { .mode = SHARE_MODE_MAPPED },
	};
}

bool vm_vhost_net_available(void)
{
	return access("/dev/vhost-net", R_OK | W_OK) == 0;
}

/* The host's own virtiofsd (Debian/Ubuntu's QEMU 7.x; Fedora and the Rust virtiofsd package):
 * ferry-virtiofsd looks in the same places */
static bool host_virtiofsd(void)
{
	static const char *const paths[] = { "/usr/lib/qemu/virtiofsd", "/usr/libexec/virtiofsd" };
	for (size_t i = 0; i < ELEMENTSOF(paths); i++)
		if (access(paths[i], X_OK) == 0)
			return true;
	return false;
}

/*
 * ferry-virtiofsd, which libvirt starts in place of virtiofsd (virtiofsd-wrap.c): the build
 * tree's when this binary runs from the build tree it was built in, else the installed one. Never
 * the host's virtiofsd itself: it runs as root, and a guest could make setuid-root files with it.
 */
const char *vm_virtiofsd_path(void)
{
	static char *path;
	static bool done;
	if (done)
		return path;
	done = true;
	if (!host_virtiofsd())
		return NULL;
	_cleanup_free_ char *exe = realpath("/proc/self/exe", NULL);
	_cleanup_free_ char *root = realpath(FERRY_BUILD_DIR, NULL);
	size_t n = root ? strlen(root) : 0;
	char *p = exe && root && strncmp(exe, root, n) == 0 && exe[n] == '/'
		      ? xasprintf("%s/ferry-virtiofsd", root)
		      : xstrdup(FERRY_LIBEXECDIR "/ferry-virtiofsd");
	if (access(p, X_OK) == 0)
		path = p;
	else
		free(p);
	return path;
}

/* Append name to the comma-separated list *s unless it is there already. */
static void mods_add(char **s, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = *s; p && *p; p += strcspn(p, ","), p += *p == ',')
		if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return;
	char *t = *s ? xasprintf("%s,%s", *s, name) : xstrdup(name);
	free(*s);
	*s = t;
}

char *vm_guest_modules(const struct vm_config *c)
{
	/* sd_mod: the disk driver of every SCSI-like bus (virtio-scsi, AHCI, PIIX IDE) */
	static const char *const bus_mods[][2] = {
		[DISK_BUS_VIRTIO] = { "virtio_blk", NULL },
		[DISK_BUS_SCSI] = { "virtio_scsi", "sd_mod" },
		[DISK_BUS_SATA] = { "ahci", "sd_mod" },
		[DISK_BUS_IDE] = { "ata_piix", "sd_mod" },
	};
	unsigned buses = c->hotplug_buses | 1u << DISK_BUS_VIRTIO;
	for (size_t i = 0; i < c->n_disks; i++)
		if (c->disks[i].kind == DISK_KIND_IMAGE)
			buses |= 1u << c->disks[i].bus;
	char *s = NULL;
	for (size_t b = 0; b < ELEMENTSOF(bus_mods); b++)
		for (size_t k = 0; k < 2 && (buses & (1u << b)); k++)
			if (bus_mods[b][k])
				mods_add(&s, bus_mods[b][k]);
	if (c->nic.backend != NIC_BACKEND_NONE)
		mods_add(&s, c->nic.model == NIC_MODEL_E1000 ? "e1000" : "virtio_net");
	return s;
}

bool vm_needs_scsi(const struct vm_config *c)
{
	if (c->hotplug_buses & (1u << DISK_BUS_SCSI))
		return true;
	for (size_t i = 0; i < c->n_disks; i++)
		if (c->disks[i].kind == DISK_KIND_IMAGE && c->disks[i].bus == DISK_BUS_SCSI)
			return true;
	return false;
}

const char vm_scsi_controller_xml[] = "<controller type='scsi' index='0' model='virtio-scsi'/>";

/* ---- domain XML (libxml2 tree API) ---- */

static xmlNodePtr add(xmlNodePtr parent, const char *name, const char *text)
{
	return xmlNewTextChild(parent, NULL, BAD_CAST name, text ? BAD_CAST text : NULL);
}

static void prop(xmlNodePtr node, const char *name, const char *value)
{
	xmlNewProp(node, BAD_CAST name, BAD_CAST value);
}

static char *doc_string(xmlDocPtr doc, xmlNodePtr root)
{
	xmlChar *buf = NULL;
	int len = 0;
	xmlDocSetRootElement(doc, root);
	xmlDocDumpFormatMemory(doc, &buf, &len, 1);
	char *s = xstrndup((const char *)buf, (size_t)len);
	xmlFree(buf);
	return s;
}

/* Target device names: vda.., sda.. (scsi and sata share the namespace), hda.. */
static const char *target_prefix(enum disk_bus bus)
{
	switch (bus) {
	case DISK_BUS_VIRTIO: return "vd";
	case DISK_BUS_IDE: return "hd";
	default: return "sd";
	}
}

char *vm_disk_target_name(enum disk_bus bus, unsigned idx)
{
	if (idx < 26)
		return xasprintf("%s%c", target_prefix(bus), 'a' + idx);
	return xasprintf("%s%c%c", target_prefix(bus), 'a' + idx / 26 - 1, 'a' + idx % 26);
}

static xmlNodePtr disk_node(const struct disk_config *d, const char *target)
{
	static const char *const bus_xml[] = { "virtio", "scsi", "sata", "ide" };
	xmlNodePtr disk = xmlNewNode(NULL, BAD_CAST "disk");
	prop(disk, "type", "file");
	prop(disk, "device", "disk");
	xmlNodePtr drv = add(disk, "driver", NULL);
	prop(drv, "name", "qemu");
	prop(drv, "type", disk_format_names[d->format]);
	if (d->cache != DISK_CACHE_DEFAULT)
		prop(drv, "cache", disk_cache_names[d->cache]);
	if (d->io != DISK_IO_DEFAULT)
		prop(drv, "io", disk_io_names[d->io]);
	if (d->discard)
		prop(drv, "discard", "unmap");
	prop(add(disk, "source", NULL), "file", d->path ? d->path : "");
	xmlNodePtr t = add(disk, "target", NULL);
	prop(t, "dev", target);
	prop(t, "bus", bus_xml[d->bus]);
	if (d->serial)
		add(disk, "serial", d->serial);
	if (d->readonly)
		add(disk, "readonly", NULL);
	return disk;
}

char *vm_disk_xml(const struct disk_config *d, const char *target, char **err)
{
	if (d->kind != DISK_KIND_IMAGE || !d->path) {
		*err = xstrdup("only an image disk with a path can be attached");
		return NULL;
	}
	_cleanup_(xmlFreeDocp) xmlDocPtr doc = xmlNewDoc(BAD_CAST "1.0");
	return doc_string(doc, disk_node(d, target));
}

static void add_channel(xmlNodePtr devices, const char *name)
{
	xmlNodePtr ch = add(devices, "channel", NULL);
	prop(ch, "type", "unix");
	prop(add(ch, "source", NULL), "mode", "bind");
	xmlNodePtr t = add(ch, "target", NULL);
	prop(t, "type", "virtio");
	prop(t, "name", name);
}

/* The domain's <qemu:commandline> (libvirt's QEMU namespace), made at the first use. */
static xmlNodePtr qemu_commandline(xmlNodePtr dom)
{
	static const char ns[] = "http://libvirt.org/schemas/domain/qemu/1.0";
	xmlNsPtr q = xmlSearchNsByHref(dom->doc, dom, BAD_CAST ns);
	if (!q)
		q = xmlNewNs(dom, BAD_CAST ns, BAD_CAST "qemu");
	for (xmlNodePtr n = dom->children; n; n = n->next)
		if (n->ns == q && xmlStrEqual(n->name, BAD_CAST "commandline"))
			return n;
	return xmlNewChild(dom, q, BAD_CAST "commandline", NULL);
}

/* One argument on QEMU's command line. */
static void qemu_arg(xmlNodePtr cl, const char *value)
{
	prop(xmlNewChild(cl, cl->ns, BAD_CAST "arg", NULL), "value", value);
}

/* QEMU waits for the saved state as an incoming migration (vm-save.c): `-incoming defer`
 * through libvirt's QEMU namespace. libvirt starts the domain as usual; the loaded guest stays
 * paused (it was saved paused) until vm_incoming() resumes it. */
static void add_incoming(xmlNodePtr dom)
{
	xmlNodePtr cl = qemu_commandline(dom);
	qemu_arg(cl, "-incoming");
	qemu_arg(cl, "defer");
}

/* The domain's identity and size: type, name, ferry's owner marker, memory, vCPUs. */
static void xml_head(xmlNodePtr dom, const struct vm_config *c, const char *name, bool kvm)
{
	prop(dom, "type", kvm ? "kvm" : "qemu");
	add(dom, "name", name);
	if (c->genid)
		add(dom, "genid", NULL);
	if (c->owner_run) {
		char pid[32];
		snprintf(pid, sizeof(pid), "%ld", c->owner_pid);
		xmlNodePtr owner =
		    xmlNewChild(add(dom, "metadata", NULL), NULL, BAD_CAST "run", NULL);
		xmlSetNs(owner, xmlNewNs(owner, BAD_CAST RUN_XMLNS, BAD_CAST "ferry"));
		prop(owner, "id", c->owner_run);
		prop(owner, "pid", pid);
	}
	char num[32];
	snprintf(num, sizeof(num), "%llu", (unsigned long long)(c->memory >> 10));
	prop(add(dom, "memory", num), "unit", "KiB");
	snprintf(num, sizeof(num), "%u", c->vcpus);
	if (c->share.host_dir && c->share.driver == SHARE_DRIVER_VIRTIOFS) {
		/* vhost-user: virtiofsd maps the guest's RAM, so it must be shareable memory */
		xmlNodePtr mb = add(dom, "memoryBacking", NULL);
		prop(add(mb, "source", NULL), "type", "memfd");
		prop(add(mb, "access", NULL), "mode", "shared");
	}
	add(dom, "vcpu", num);
}

/* <os>: the machine, the firmware and the kernel with its command line, or the boot disk. */
static xmlNodePtr xml_os(xmlNodePtr dom, const struct vm_config *c, bool kvm)
{
	xmlNodePtr os = add(dom, "os", NULL);
	if (c->firmware == VM_FIRMWARE_UEFI)
		prop(os, "firmware", "efi");
	xmlNodePtr type = add(os, "type", "hvm");
	prop(type, "arch", "x86_64");
	prop(type, "machine", vm_machine_names[c->machine]);
	if (c->kernel) {
		add(os, "kernel", c->kernel);
		if (c->initrd)
			add(os, "initrd", c->initrd);
		if (c->image) {
			/* an image's own kernel (the Debian guest, a user's): its command line as
			   given */
			if (c->cmdline)
				add(os, "cmdline", c->cmdline);
		} else {
			/*
			 * the drivers the devices need (the built-in guest's init reads it).
			 * acpi=noirq on pc: PCI interrupts through the PIIX router instead of
			 * ACPI's link devices, whose AML the kernel ran for every PCI device it
			 * enabled (~0.11 s each under TCG, "ACPI: \_SB_.LNKB: Enabled at IRQ 10");
			 * virtio uses MSI-X, and pc's ACPI hot-plug still gets its SCI. Not on q35:
			 * there the SCI stays on the XT-PIC and hot-plugged disks never appear.
			 *
			 * Under TCG only (KVM boots fast without them, and keeps its TSC-deadline
			 * timer): noreplace-smp keeps the LOCK prefixes of a one-vCPU kernel
			 * instead of patching ~9000 of them out through text_poke (0.11-0.15 s of
			 * "alternatives" before "Freeing SMP alternatives memory"; a locked
			 * instruction costs TCG about what an unlocked one does). noapictimer with
			 * one vCPU: the HPET drives the tick (one-shot, high-resolution timers
			 * stay active) and the kernel skips the local APIC timer calibration,
			 * which counts HZ/10 ticks, 0.1 s of wall time, whatever the host does
			 * (TCG has no TSC-deadline timer that would skip it; with more vCPUs the
			 * HPET would have to broadcast the tick to all of them, so they keep it).
			 */
			_cleanup_free_ char *mods = vm_guest_modules(c);
			_cleanup_free_ char *cmdline =
			    xasprintf("%s%s%s%s%sferry.modules=%s", c->cmdline ? c->cmdline : "",
				      c->cmdline && *c->cmdline ? " " : "",
				      c->machine == VM_MACHINE_PC ? "acpi=noirq " : "",
				      kvm ? "" : "noreplace-smp ",
				      !kvm && c->vcpus == 1 ? "noapictimer " : "", mods);
			add(os, "cmdline", cmdline);
		}
	} else {
		prop(add(os, "boot", NULL), "dev", "hd");
	}
	return os;
}

/* The controllers: no USB, virtio-scsi when needed, q35's PCIe root ports. */
static void xml_controllers(xmlNodePtr dev, const struct vm_config *c)
{
	char num[32];
	xmlNodePtr ctl = add(dev, "controller", NULL);
	prop(ctl, "type", "usb");
	prop(ctl, "model", "none");
	/*
	 * The SCSI controller only for a VM with SCSI disks (at boot or in c->hotplug_buses): every
	 * PCI device costs boot time under TCG (QEMU sets it up, the guest probes it), and
	 * vm_disk_attach() hot-plugs the controller before a first SCSI disk of a VM without one.
	 * Explicit, else libvirt adds an lsilogic controller the guest has no driver for.
	 */
	if (vm_needs_scsi(c)) {
		ctl = add(dev, "controller", NULL);
		prop(ctl, "type", "scsi");
		prop(ctl, "index", "0");
		prop(ctl, "model", "virtio-scsi");
	}
	if (c->machine == VM_MACHINE_Q35) {
		/*
		 * q35 hot-plugs into empty PCIe root ports only, and libvirt fills the ports it is
		 * given with boot-time devices first: one port per PCIe device (virtio-scsi,
		 * virtio-serial, a NIC libvirt knows, share, virtio disks) plus VM_Q35_SPARE_PORTS
		 * for hot-plug (a virtio-scsi controller hot-plugged later takes the port left for
		 * it). The NIC on user networking brings a root port of its own (xml_user_nic()).
		 */
		unsigned ports =
		    2 + VM_Q35_SPARE_PORTS +
		    (c->nic.backend != NIC_BACKEND_NONE && c->nic.backend != NIC_BACKEND_USER) +
		    (c->share.host_dir != NULL) + (c->image != NULL);
		for (size_t i = 0; i < c->n_disks; i++)
			ports += c->disks[i].kind == DISK_KIND_IMAGE &&
				 (c->disks[i].bus == DISK_BUS_VIRTIO);
		for (unsigned i = 1; i <= ports; i++) {
			ctl = add(dev, "controller", NULL);
			prop(ctl, "type", "pci");
			snprintf(num, sizeof(num), "%u", i);
			prop(ctl, "index", num);
			prop(ctl, "model", "pcie-root-port");
		}
	}
}

/* The disks: the boot image (its boot order replaces <os>'s <boot>), the seed CD-ROM and the
 * boot-time disks, each on the next target name of its bus. */
static void xml_disks(xmlNodePtr dev, xmlNodePtr os, const struct vm_config *c)
{
	unsigned next[3] = { 0, 0, 0 }; /* vd, sd, hd */
	if (c->image) {
		/* Windows has no virtio driver out of the box: boot it from SATA */
		struct disk_config boot = {
			.format = DISK_FORMAT_QCOW2,
			.bus = c->os == VM_OS_WINDOWS ? DISK_BUS_SATA : DISK_BUS_VIRTIO,
			.path = c->image,
		};
		unsigned *slot = &next[boot.bus == DISK_BUS_VIRTIO ? 0 : 1];
		_cleanup_free_ char *t = vm_disk_target_name(boot.bus, (*slot)++);
		xmlNodePtr n = disk_node(&boot, t);
		prop(add(n, "boot", NULL), "order", "1");
		xmlAddChild(dev, n);
		/* <boot dev> and per-device boot order are exclusive */
		xmlNodePtr b = os->children;
		while (b && !xmlStrEqual(b->name, BAD_CAST "boot"))
			b = b->next;
		if (b) {
			xmlUnlinkNode(b);
			xmlFreeNode(b);
		}
	}
	if (c->seed) {
		/* cloud-init's NoCloud source finds it by its volume id (cidata) */
		enum disk_bus bus = c->machine == VM_MACHINE_Q35 ? DISK_BUS_SATA : DISK_BUS_IDE;
		unsigned *slot = &next[bus == DISK_BUS_IDE ? 2 : 1];
		_cleanup_free_ char *t = vm_disk_target_name(bus, (*slot)++);
		xmlNodePtr cd = add(dev, "disk", NULL);
		prop(cd, "type", "file");
		prop(cd, "device", "cdrom");
		xmlNodePtr drv = add(cd, "driver", NULL);
		prop(drv, "name", "qemu");
		prop(drv, "type", "raw");
		prop(add(cd, "source", NULL), "file", c->seed);
		xmlNodePtr tg = add(cd, "target", NULL);
		prop(tg, "dev", t);
		prop(tg, "bus", bus == DISK_BUS_IDE ? "ide" : "sata");
		add(cd, "readonly", NULL);
	}
	for (size_t i = 0; i < c->n_disks; i++) {
		const struct disk_config *d = &c->disks[i];
		if (d->kind != DISK_KIND_IMAGE)
			continue;
		unsigned *slot = &next[d->bus == DISK_BUS_VIRTIO ? 0
				       : d->bus == DISK_BUS_IDE  ? 2
								 : 1];
		_cleanup_free_ char *t = vm_disk_target_name(d->bus, (*slot)++);
		xmlAddChild(dev, disk_node(d, t));
	}
}

/*
 * The NIC on user networking: QEMU's slirp with restrict=on and the NIC on a PCI slot of its
 * own, in <qemu:commandline> (vm.h, VM_USER_NETDEV). Same model as libvirt's interface would
 * have; queues above 1 were refused (nic_validate()); the MAC is QEMU's default, alone on its
 * slirp network.
 */
static void xml_user_nic(xmlNodePtr dom, const struct vm_config *c)
{
	xmlNodePtr cl = qemu_commandline(dom);
	qemu_arg(cl, "-netdev");
	qemu_arg(cl, "user,id=" VM_USER_NETDEV ",restrict=on");
	if (c->machine == VM_MACHINE_Q35) {
		qemu_arg(cl, "-device");
		qemu_arg(cl, VM_USER_PORT_Q35);
	}
	_cleanup_free_ char *dev =
	    xasprintf("%s,netdev=" VM_USER_NETDEV ",id=" VM_USER_NIC ",%s",
		      c->nic.model == NIC_MODEL_E1000 ? "e1000" : "virtio-net-pci",
		      c->machine == VM_MACHINE_Q35 ? VM_USER_NIC_Q35 : VM_USER_NIC_PC);
	qemu_arg(cl, "-device");
	qemu_arg(cl, dev);
}

/* The network interface on a tap, a libvirt network or a bridge (user networking:
 * xml_user_nic()). 0, or -1 with *err. */
static int xml_nic(xmlNodePtr dev, const struct vm_config *c, char **err)
{
	char num[32];
	const struct nic_config *n = &c->nic;
	if (n->backend == NIC_BACKEND_NONE || n->backend == NIC_BACKEND_USER)
		return 0;
	static const char *const iftype[] = { "", "", "network", "bridge", "ethernet", "ethernet" };
	xmlNodePtr nif = add(dev, "interface", NULL);
	prop(nif, "type", iftype[n->backend]);
	if (n->backend == NIC_BACKEND_NETWORK)
		prop(add(nif, "source", NULL), "network", n->source);
	else if (n->backend == NIC_BACKEND_BRIDGE)
		prop(add(nif, "source", NULL), "bridge", n->source);
	else if (n->backend == NIC_BACKEND_ETHERNET && n->source)
		prop(add(nif, "target", NULL), "dev", n->source);
	if (n->backend == NIC_BACKEND_PRIVATE) {
		/* ferry's own tap (netns.h): libvirt opens it, never configures it */
		if (!n->source) {
			*err = xstrdup("a private NIC needs its tap");
			return -1;
		}
		xmlNodePtr t = add(nif, "target", NULL);
		prop(t, "dev", n->source);
		prop(t, "managed", "no");
	}
	prop(add(nif, "model", NULL), "type", nic_model_names[n->model]);
	bool priv_virtio = n->backend == NIC_BACKEND_PRIVATE && n->model == NIC_MODEL_VIRTIO;
	if (n->queues > 1 || priv_virtio) {
		xmlNodePtr drv = add(nif, "driver", NULL);
		/* explicit on the private network: the results say which back end ran */
		if (priv_virtio)
			prop(drv, "name", n->vhost ? "vhost" : "qemu");
		if (n->queues > 1) {
			snprintf(num, sizeof(num), "%u", n->queues);
			prop(drv, "queues", num);
		}
	}
	return 0;
}

/* The shared folder (9p or virtiofs), when there is one. */
static void xml_share(xmlNodePtr dev, const struct vm_config *c)
{
	if (c->share.host_dir) {
		xmlNodePtr fs = add(dev, "filesystem", NULL);
		prop(fs, "type", "mount");
		prop(fs, "accessmode", share_mode_names[c->share.mode]);
		if (c->share.driver == SHARE_DRIVER_VIRTIOFS) {
			/*
			 * libvirt starts ferry-virtiofsd as root, which runs virtiofsd in a user
			 * namespace of unprivileged ids without setuid bits or devices
			 * (virtiofsd-wrap.c) with its default sandbox (namespaces), and kills it
			 * with the domain. queue: the size libvirt's documentation gives.
			 */
			xmlNodePtr drv = add(fs, "driver", NULL);
			prop(drv, "type", "virtiofs");
			prop(drv, "queue", "1024");
			prop(add(fs, "binary", NULL), "path", c->share.virtiofsd);
		}
		prop(add(fs, "source", NULL), "dir", c->share.host_dir);
		prop(add(fs, "target", NULL), "dir", c->share.tag);
		if (c->share.readonly)
			add(fs, "readonly", NULL);
	}
}

char *vm_domain_xml(const struct vm_config *c, const char *name, bool kvm, const char *console_log,
		    char **err)
{
	_cleanup_free_ char *why = NULL;
	if (vm_config_validate(c, &why) < 0) {
		*err = TAKE_PTR(why);
		return NULL;
	}
	if (!name)
		name = c->name;
	if (!name) {
		*err = xstrdup("the domain needs a name");
		return NULL;
	}
	_cleanup_(xmlFreeDocp) xmlDocPtr doc = xmlNewDoc(BAD_CAST "1.0");
	xmlNodePtr dom = xmlNewNode(NULL, BAD_CAST "domain");
	xmlDocSetRootElement(doc, dom); /* owned by doc from here: an early return frees it */
	xml_head(dom, c, name, kvm);
	xmlNodePtr os = xml_os(dom, c, kvm);
	/* ACPI: PCI hot-plug (acpiphp) needs it */
	xmlNodePtr feat = add(dom, "features", NULL);
	add(feat, "acpi", NULL);
	add(feat, "apic", NULL);
	prop(add(dom, "clock", NULL), "offset", c->os == VM_OS_WINDOWS ? "localtime" : "utc");
	add(dom, "on_poweroff", "destroy");
	/* the built-in guest never reboots on purpose; a user's OS may (updates, installers) */
	add(dom, "on_reboot", c->kernel && !c->image ? "destroy" : "restart");
	add(dom, "on_crash", "destroy");
	xmlNodePtr dev = add(dom, "devices", NULL);
	xml_controllers(dev, c);
	xml_disks(dev, os, c);
	if (console_log) {
		xmlNodePtr ser = add(dev, "serial", NULL);
		prop(ser, "type", "file");
		prop(add(ser, "source", NULL), "path", console_log);
		prop(add(ser, "target", NULL), "port", "0");
	}
	add_channel(dev, "org.qemu.guest_agent.0");
	for (size_t i = 0; i < c->n_channels; i++)
		add_channel(dev, c->channels[i]);
	if (xml_nic(dev, c, err) < 0)
		return NULL;
	if (c->nic.backend == NIC_BACKEND_USER)
		xml_user_nic(dom, c);
	xml_share(dev, c);
	prop(add(dev, "memballoon", NULL), "model", "none");
	if (c->restore)
		add_incoming(dom);
	return doc_string(doc, dom);
}
