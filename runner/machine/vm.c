/* SPDX-License-Identifier: MIT */
#include "vm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <jansson.h>
#include <libvirt/libvirt-qemu.h>
#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xpath.h>

#include "agent.h"
#include "cleanup.h"
#include "fs.h"
#include "guest.h"
#include "plan-limits.h"
#include "proc.h"
#include "util.h"

const char *const vm_machine_names[] = { "pc", "q35", NULL };
const char *const vm_firmware_names[] = { "bios", "uefi", NULL };
const char *const vm_accel_names[] = { "auto", "kvm", "tcg", NULL };
const char *const vm_os_names[] = { "linux", "windows", NULL };
const char *const nic_model_names[] = { "virtio", "e1000", NULL };
const char *const nic_backend_names[] = { "none", "user", "network", "bridge", "ethernet", NULL };
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

const char *vm_virtiofsd_path(void)
{
	/* Debian/Ubuntu's QEMU 7.x; Fedora and the Rust virtiofsd package */
	static const char *const paths[] = { "/usr/lib/qemu/virtiofsd", "/usr/libexec/virtiofsd" };
	for (size_t i = 0; i < ELEMENTSOF(paths); i++)
		if (access(paths[i], X_OK) == 0)
			return paths[i];
	return NULL;
}

/* ---- validation ---- */

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
	if (!!c->image == !!c->kernel) {
		*why = xstrdup(c->image ? "a VM boots either an image or a kernel, not both"
					: "a VM needs a kernel (the built-in guest) or an image");
		return -1;
	}
	if (c->kernel && !c->initrd) {
		*why = xstrdup("the built-in guest needs an initramfs with its kernel");
		return -1;
	}
	const struct nic_config *n = &c->nic;
	if (n->backend != NIC_BACKEND_NONE) {
		if (n->queues > 1 && n->backend == NIC_BACKEND_USER) {
			*why =
			    xstrdup("nic queues > 1 need a tap backend: libvirt refuses multiqueue "
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
		if ((n->backend == NIC_BACKEND_NETWORK || n->backend == NIC_BACKEND_BRIDGE) &&
		    (!n->source || !*n->source)) {
			*why = xasprintf("nic backend '%s' needs a name",
					 nic_backend_names[n->backend]);
			return -1;
		}
	}
	if (c->share.host_dir) {
		if (c->share.host_dir[0] != '/') {
			*why = xasprintf("share directory '%s' must be an absolute path",
					 c->share.host_dir);
			return -1;
		}
		if (!c->share.tag || !*c->share.tag || strlen(c->share.tag) > 31) {
			*why = xstrdup("a share needs a mount tag of 1 to 31 characters");
			return -1;
		}
		if (c->share.driver == SHARE_DRIVER_VIRTIOFS) {
			/* libvirt 9.0: "virtiofs does not yet support read-only mode" */
			if (c->share.readonly) {
				*why = xstrdup("a virtiofs share cannot be read-only (mount it "
					       "read-only in the guest instead)");
				return -1;
			}
			if (c->share.mode != SHARE_MODE_PASSTHROUGH) {
				*why = xstrdup("a virtiofs share needs accessmode passthrough");
				return -1;
			}
			if (!c->share.virtiofsd || c->share.virtiofsd[0] != '/') {
				*why = xstrdup(
				    "a virtiofs share needs the absolute path of virtiofsd");
				return -1;
			}
		}
	}
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
	unsigned ide = 0;
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
		*why = xstrdup("machine 'pc' has room for 4 ide disks");
		return -1;
	}
	return 0;
}

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

static char *target_name(enum disk_bus bus, unsigned idx)
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
	prop(dom, "type", kvm ? "kvm" : "qemu");
	add(dom, "name", name);
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

	xmlNodePtr os = add(dom, "os", NULL);
	if (c->firmware == VM_FIRMWARE_UEFI)
		prop(os, "firmware", "efi");
	xmlNodePtr type = add(os, "type", "hvm");
	prop(type, "arch", "x86_64");
	prop(type, "machine", vm_machine_names[c->machine]);
	if (c->kernel) {
		add(os, "kernel", c->kernel);
		add(os, "initrd", c->initrd);
		if (c->cmdline)
			add(os, "cmdline", c->cmdline);
	} else {
		prop(add(os, "boot", NULL), "dev", "hd");
	}
	/* ACPI: PCI hot-plug (acpiphp) needs it */
	xmlNodePtr feat = add(dom, "features", NULL);
	add(feat, "acpi", NULL);
	add(feat, "apic", NULL);
	prop(add(dom, "clock", NULL), "offset", c->os == VM_OS_WINDOWS ? "localtime" : "utc");
	add(dom, "on_poweroff", "destroy");
	/* the built-in guest never reboots on purpose; a user's OS may (updates, installers) */
	add(dom, "on_reboot", c->kernel ? "destroy" : "restart");
	add(dom, "on_crash", "destroy");

	xmlNodePtr dev = add(dom, "devices", NULL);
	xmlNodePtr ctl = add(dev, "controller", NULL);
	prop(ctl, "type", "usb");
	prop(ctl, "model", "none");
	/* explicit, else libvirt adds an lsilogic controller the guest has no driver for */
	ctl = add(dev, "controller", NULL);
	prop(ctl, "type", "scsi");
	prop(ctl, "index", "0");
	prop(ctl, "model", "virtio-scsi");
	if (c->machine == VM_MACHINE_Q35) {
		/*
		 * q35 hot-plugs into empty PCIe root ports only, and libvirt fills the ports it is
		 * given with boot-time devices first: one port per PCIe device (virtio-scsi,
		 * virtio-serial, NIC, share, virtio disks) plus VM_Q35_SPARE_PORTS for hot-plug.
		 */
		unsigned ports = 2 + VM_Q35_SPARE_PORTS + (c->nic.backend != NIC_BACKEND_NONE) +
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

	unsigned next[3] = { 0, 0, 0 }; /* vd, sd, hd */
	if (c->image) {
		/* Windows has no virtio driver out of the box: boot it from SATA */
		struct disk_config boot = {
			.format = DISK_FORMAT_QCOW2,
			.bus = c->os == VM_OS_WINDOWS ? DISK_BUS_SATA : DISK_BUS_VIRTIO,
			.path = c->image,
		};
		unsigned *slot = &next[boot.bus == DISK_BUS_VIRTIO ? 0 : 1];
		_cleanup_free_ char *t = target_name(boot.bus, (*slot)++);
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
	for (size_t i = 0; i < c->n_disks; i++) {
		const struct disk_config *d = &c->disks[i];
		if (d->kind != DISK_KIND_IMAGE)
			continue;
		unsigned *slot = &next[d->bus == DISK_BUS_VIRTIO ? 0
				       : d->bus == DISK_BUS_IDE  ? 2
								 : 1];
		_cleanup_free_ char *t = target_name(d->bus, (*slot)++);
		xmlAddChild(dev, disk_node(d, t));
	}

	if (console_log) {
		xmlNodePtr ser = add(dev, "serial", NULL);
		prop(ser, "type", "file");
		prop(add(ser, "source", NULL), "path", console_log);
		prop(add(ser, "target", NULL), "port", "0");
	}
	add_channel(dev, "org.qemu.guest_agent.0");
	for (size_t i = 0; i < c->n_channels; i++)
		add_channel(dev, c->channels[i]);

	const struct nic_config *n = &c->nic;
	if (n->backend != NIC_BACKEND_NONE) {
		static const char *const iftype[] = { "", "user", "network", "bridge", "ethernet" };
		xmlNodePtr nif = add(dev, "interface", NULL);
		prop(nif, "type", iftype[n->backend]);
		if (n->backend == NIC_BACKEND_NETWORK)
			prop(add(nif, "source", NULL), "network", n->source);
		else if (n->backend == NIC_BACKEND_BRIDGE)
			prop(add(nif, "source", NULL), "bridge", n->source);
		else if (n->backend == NIC_BACKEND_ETHERNET && n->source)
			prop(add(nif, "target", NULL), "dev", n->source);
		prop(add(nif, "model", NULL), "type", nic_model_names[n->model]);
		if (n->queues > 1) {
			xmlNodePtr drv = add(nif, "driver", NULL);
			snprintf(num, sizeof(num), "%u", n->queues);
			prop(drv, "queues", num);
		}
	}
	if (c->share.host_dir) {
		xmlNodePtr fs = add(dev, "filesystem", NULL);
		prop(fs, "type", "mount");
		prop(fs, "accessmode", share_mode_names[c->share.mode]);
		if (c->share.driver == SHARE_DRIVER_VIRTIOFS) {
			/*
			 * libvirt runs virtiofsd as root with its default sandbox (namespaces),
			 * which works on this host as is (Debian 12, libvirt 9.0, QEMU 7.2's
			 * virtiofsd), and kills it with the domain. queue: the size libvirt's
			 * documentation gives for virtiofs.
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
	prop(add(dev, "memballoon", NULL), "model", "none");
	return doc_string(doc, dom);
}

/* ---- libvirt ---- */

static void quiet_error(void *data, virErrorPtr e)
{
	/* errors are copied at the failing call (virGetLastErrorMessage) and returned */
}

void vm_quiet_libvirt(void)
{
	virSetErrorFunc(NULL, quiet_error);
}

virConnectPtr vm_connect(const char *uri, char **err)
{
	vm_quiet_libvirt();
	if (!uri)
		uri = "qemu:///system";
	virConnectPtr c = virConnectOpen(uri);
	if (!c)
		*err = xasprintf("cannot connect to libvirt at '%s': %s", uri,
				 virGetLastErrorMessage());
	return c;
}

int vm_image_create(const struct disk_config *d, const char *path, char **err)
{
	static const char *const prealloc[] = { "off", "falloc", "full" };
	char size[32], opt[64];
	snprintf(size, sizeof(size), "%llu", (unsigned long long)d->size);
	snprintf(opt, sizeof(opt), "preallocation=%s", prealloc[d->allocation]);
	const char *argv[] = { "qemu-img", "create", "-q", "-f", disk_format_names[d->format],
			       "-o",       opt,      path, size, NULL };
	_cleanup_free_ char *e = NULL;
	if (proc_run(argv, NULL, &e) < 0) {
		*err = xasprintf("cannot create disk image '%s': %s", path, e);
		return -1;
	}
	/* QEMU opens it as libvirt-qemu (libvirt chowns it while in use) */
	chmod(path, 0644);
	return 0;
}

struct attached {
	char *serial;
	char *xml;
	char *target;
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
	unsigned next[3];
	struct attached *att;
	size_t n_att, cap_att;
};

virDomainPtr vm_domain(const struct vm *vm)
{
	return vm->dom;
}

const char *vm_name(const struct vm *vm)
{
	return vm->name;
}

const char *vm_accel_used(const struct vm *vm)
{
	return vm->kvm ? "kvm" : "tcg";
}

double vm_boot_ms(const struct vm *vm)
{
	return vm->boot_ms;
}

const char *vm_console_log(const struct vm *vm)
{
	return vm->console_log;
}

static char *console_tail_of(const char *path, unsigned max_lines)
{
	_cleanup_close_ int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0)
		return xstrdup("");
	char buf[8192];
	off_t end = lseek(fd, 0, SEEK_END);
	off_t start = end > (off_t)sizeof(buf) - 1 ? end - (off_t)sizeof(buf) + 1 : 0;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, start);
	if (n <= 0)
		return xstrdup("");
	/* drop carriage returns and other control characters except newline and tab */
	size_t m = 0;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\n' || buf[i] == '\t' || (unsigned char)buf[i] >= 0x20)
			buf[m++] = buf[i];
	while (m > 0 && buf[m - 1] == '\n')
		m--;
	buf[m] = '\0';
	char *p = buf + m;
	unsigned lines = 0;
	while (p > buf) {
		if (p[-1] == '\n' && ++lines == max_lines)
			break;
		p--;
	}
	return xstrdup(p);
}

char *vm_console_tail(const struct vm *vm, unsigned max_lines)
{
	return console_tail_of(vm->console_log, max_lines);
}

/* err + "; console tail:\n" + the last lines of the serial console */
static char *with_console(char *msg, const char *log)
{
	_cleanup_free_ char *tail = console_tail_of(log, VM_ERROR_CONSOLE_LINES);
	char *s = *tail ? xasprintf("%s; serial console (last lines):\n%s", msg, tail)
			: xasprintf("%s; the serial console is empty", msg);
	free(msg);
	return s;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !run_interrupted())
		;
}

/* Wait for guest-ping to answer; the domain going away or a signal ends the wait early. */
static int wait_agent(virDomainPtr dom, const char *name, const char *log, unsigned timeout_ms,
		      char **err)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
	for (;;) {
		_cleanup_free_ char *e = NULL;
		if (agent_ping(dom, 2, &e) == 0)
			return 0;
		if (run_interrupted()) {
			*err = xasprintf("interrupted while domain '%s' was booting", name);
			return -1;
		}
		if (virDomainIsActive(dom) != 1) {
			*err = with_console(xasprintf("domain '%s' stopped before its guest agent "
						      "answered",
						      name),
					    log);
			return -1;
		}
		if (now_ns() >= deadline) {
			*err =
			    with_console(xasprintf("the guest agent of domain '%s' did not answer "
						   "within %u ms (last: %s)",
						   name, timeout_ms, e),
					 log);
			return -1;
		}
		sleep_ms(20);
	}
}

/* The format of an image, from `qemu-img info --output=json`. */
static char *image_format(const char *path, char **err)
{
	const char *argv[] = { "qemu-img", "info", "-U", "--output=json", path, NULL };
	_cleanup_free_ char *out = NULL, *e = NULL;
	if (proc_run(argv, &out, &e) < 0) {
		*err = xasprintf("cannot read image '%s': %s", path, e);
		return NULL;
	}
	_cleanup_(json_decrefp) json_t *j = json_loads(out, 0, NULL);
	const char *fmt = json_string_value(json_object_get(j, "format"));
	if (!fmt) {
		*err = xasprintf("cannot read the format of image '%s'", path);
		return NULL;
	}
	return xstrdup(fmt);
}

static int boot_domain(struct run *run, virConnectPtr conn, const struct vm_config *c, bool kvm,
		       unsigned timeout_ms, struct vm **out, char **err)
{
	_cleanup_free_ char *name = c->name ? xstrdup(c->name) : run_domain_name(run);
	_cleanup_free_ char *logname = xasprintf("%s.console.log", name);
	_cleanup_free_ char *log = run_path(run, "logs", logname);
	_cleanup_free_ char *overlay = NULL;
	struct vm_config cc = *c;

	if (c->image) {
		char abs[PATH_MAX];
		if (!realpath(c->image, abs)) {
			*err = xasprintf("cannot find image '%s': %s", c->image, strerror(errno));
			return -1;
		}
		_cleanup_free_ char *fmt = image_format(abs, err);
		if (!fmt)
			return -1;
		_cleanup_free_ char *oname = xasprintf("%s.overlay.qcow2", name);
		overlay = run_path(run, "overlays", oname);
		const char *argv[] = { "qemu-img", "create", "-q", "-f",    "qcow2", "-b",
				       abs,        "-F",     fmt,  overlay, NULL };
		_cleanup_free_ char *e = NULL;
		if (proc_run(argv, NULL, &e) < 0) {
			*err =
			    xasprintf("cannot create an overlay for image '%s': %s", c->image, e);
			return -1;
		}
		chmod(overlay, 0644);
		cc.image = overlay;
	}
	cc.owner_run = run_id(run);
	cc.owner_pid = (long)getpid();
	_cleanup_free_ char *xml = vm_domain_xml(&cc, name, kvm, log, err);
	if (!xml)
		return -1;
	uint64_t t0 = now_ns();
	/* auto-destroy: a ferry killed by SIGKILL or an abort leaves no running domain */
	virDomainPtr dom = virDomainCreateXML(conn, xml, VIR_DOMAIN_START_AUTODESTROY);
	if (!dom) {
		*err = xasprintf("cannot start domain '%s': %s", name, virGetLastErrorMessage());
		return -1;
	}
	run_own_domain(run, conn, name);
	struct vm *vm = xcalloc(1, sizeof(*vm));
	virConnectRef(conn);
	vm->conn = conn;
	vm->dom = dom;
	vm->run = run;
	vm->name = TAKE_PTR(name);
	vm->console_log = TAKE_PTR(log);
	vm->machine = c->machine;
	vm->os = c->os;
	vm->kvm = kvm;
	/* hot-plugged targets follow the boot-time ones */
	if (c->image)
		vm->next[c->os == VM_OS_WINDOWS ? 1 : 0]++;
	for (size_t i = 0; i < c->n_disks; i++)
		if (c->disks[i].kind == DISK_KIND_IMAGE)
			vm->next[c->disks[i].bus == DISK_BUS_VIRTIO ? 0
				 : c->disks[i].bus == DISK_BUS_IDE  ? 2
								    : 1]++;
	if (wait_agent(dom, vm->name, vm->console_log, timeout_ms, err) < 0) {
		vm_destroy(vm);
		return -1;
	}
	vm->boot_ms = (double)(now_ns() - t0) / 1e6;
	*out = vm;
	return 0;
}

static int kvm_cached = -1;
static char *kvm_why;

static void free_kvm_why(void)
{
	free(kvm_why);
	kvm_why = NULL;
}

int vm_probe_kvm(struct run *run, virConnectPtr conn, const struct vm_config *c,
		 unsigned timeout_ms, char **why)
{
	if (kvm_cached >= 0) {
		*why = kvm_why ? xstrdup(kvm_why) : NULL;
		return kvm_cached;
	}
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	_cleanup_free_ char *reason = NULL, *gerr = NULL;
	struct guest_files gf = { 0 };
	int usable = 0;
	if (fd < 0) {
		reason = xasprintf("cannot open /dev/kvm: %s", strerror(errno));
	} else {
		close(fd);
		_cleanup_free_ char *caps =
		    virConnectGetDomainCapabilities(conn, NULL, "x86_64", NULL, "kvm", 0);
		if (!caps) {
			reason = xasprintf("libvirt offers no KVM domains: %s",
					   virGetLastErrorMessage());
		} else if ((!c || !c->kernel) && guest_locate(NULL, &gf, &gerr) < 0) {
			reason = xasprintf("not probed: a boot probe needs the built-in guest: %s",
					   gerr);
		} else {
			/* /dev/kvm can open and still hang every guest: boot one to be sure */
			struct vm_config p;
			vm_config_init(&p);
			p.kernel = c && c->kernel ? c->kernel : gf.kernel;
			p.initrd = c && c->kernel ? c->initrd : gf.initramfs;
			p.cmdline = c && c->kernel ? c->cmdline : gf.cmdline;
			p.accel = VM_ACCEL_KVM;
			p.nic.backend = NIC_BACKEND_NONE;
			struct vm *vm = NULL;
			_cleanup_free_ char *e = NULL;
			if (boot_domain(run, conn, &p, true, timeout_ms, &vm, &e) == 0) {
				usable = 1;
				vm_destroy(vm);
			} else {
				if (run_interrupted()) {
					guest_files_clear(&gf);
					*why = TAKE_PTR(e);
					return -1;
				}
				/* the console tail is noise here: a hung KVM guest prints nothing
				 */
				reason =
				    xasprintf("a KVM guest did not answer guest-ping within %u ms",
					      timeout_ms);
			}
		}
	}
	guest_files_clear(&gf);
	kvm_cached = usable;
	free(kvm_why);
	kvm_why = TAKE_PTR(reason);
	static bool registered;
	if (!registered) {
		registered = true;
		atexit(free_kvm_why);
	}
	*why = kvm_why ? xstrdup(kvm_why) : NULL;
	return usable;
}

/*
 * The boot probe costs up to VM_KVM_PROBE_TIMEOUT_MS when KVM hangs, in every process that uses
 * accel auto. Its answer holds until the host reboots (or its KVM setup changes, which ferry
 * doctor re-probes), so it is kept in the cache directory keyed by the kernel's boot id and the
 * libvirt URI. The file is one line: "BOOT_ID URI 0|1".
 */
static char *kvm_probe_key(virConnectPtr conn)
{
	_cleanup_free_ char *boot_id = read_file("/proc/sys/kernel/random/boot_id", NULL);
	_cleanup_free_ char *uri = virConnectGetURI(conn);
	if (!boot_id || !uri)
		return NULL;
	boot_id[strcspn(boot_id, "\n")] = '\0';
	return xasprintf("%s %s", boot_id, uri);
}

static char *kvm_probe_file(void)
{
	_cleanup_free_ char *dir = ferry_cache_dir();
	return xasprintf("%s/kvm-probe", dir);
}

static int kvm_probe_remembered(virConnectPtr conn)
{
	_cleanup_free_ char *key = kvm_probe_key(conn);
	_cleanup_free_ char *path = kvm_probe_file();
	_cleanup_free_ char *text = read_file(path, NULL);
	if (!key || !text)
		return -1;
	size_t kl = strlen(key);
	if (strncmp(text, key, kl) != 0 || text[kl] != ' ' ||
	    (text[kl + 1] != '0' && text[kl + 1] != '1'))
		return -1;
	return text[kl + 1] - '0';
}

void vm_kvm_probe_remember(virConnectPtr conn, int usable)
{
	_cleanup_free_ char *key = kvm_probe_key(conn);
	_cleanup_free_ char *path = kvm_probe_file();
	if (!key || usable < 0)
		return;
	_cleanup_free_ char *text = xasprintf("%s %d\n", key, usable ? 1 : 0);
	/* no cache directory yet: the next process probes again */
	(void)write_file_atomic(path, text, strlen(text), 0644, NULL);
}

int vm_boot(struct run *run, virConnectPtr conn, const struct vm_config *c, unsigned timeout_ms,
	    struct vm **out, char **err)
{
	_cleanup_free_ char *why = NULL;
	if (vm_config_validate(c, &why) < 0) {
		*err = TAKE_PTR(why);
		return -1;
	}
	bool kvm = c->accel == VM_ACCEL_KVM;
	if (c->accel == VM_ACCEL_AUTO) {
		int r = kvm_probe_remembered(conn);
		if (r < 0) {
			r = vm_probe_kvm(run, conn, c, VM_KVM_PROBE_TIMEOUT_MS, &why);
			if (r < 0) {
				*err = TAKE_PTR(why);
				return -1;
			}
			vm_kvm_probe_remember(conn, r);
		}
		kvm = r == 1;
	}
	return boot_domain(run, conn, c, kvm, timeout_ms, out, err);
}

void vm_destroy(struct vm *vm)
{
	if (!vm)
		return;
	if (vm->dom) {
		if (virDomainIsActive(vm->dom) == 1)
			virDomainDestroy(vm->dom);
		virDomainFree(vm->dom);
	}
	run_disown_domain(vm->run, vm->name);
	virConnectClose(vm->conn);
	for (size_t i = 0; i < vm->n_att; i++) {
		free(vm->att[i].serial);
		free(vm->att[i].xml);
		free(vm->att[i].target);
	}
	free(vm->att);
	free(vm->name);
	free(vm->console_log);
	free(vm);
}

/* ---- disks in the guest ---- */

/*
 * Lists "NAME|SERIAL" for every block device: virtio-blk exposes the serial in sysfs; SCSI and
 * ATA disks (sd_mod) expose VPD page 0x80 (unit serial number): a 4-byte header, then the serial.
 */
/*
 * One "NAME|SERIAL" line per block device. With no block device the glob stays literal
 * (the pattern itself), and a disk appearing a moment later made the unquoted tests expand it: the
 * disk was then reported as "*" (and the mount of /dev/ plus a glob failed). Hence the -e test and
 * the quotes.
 */
static const char find_script[] =
    "for b in /sys/block/*; do [ -e \"$b\" ] || continue; s=; "
    "if [ -r \"$b/serial\" ]; then s=$(cat \"$b/serial\"); "
    "elif [ -r \"$b/device/vpd_pg80\" ]; then s=$(tail -c +5 \"$b/device/vpd_pg80\"); fi; "
    "echo \"${b##*/}|$s\"; done";

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

int vm_find_disk(struct vm *vm, const char *serial, char **dev, char **err)
{
	if (vm->os != VM_OS_LINUX) {
		*err = xasprintf("finding disks by serial is not implemented for '%s' guests",
				 vm_os_names[vm->os]);
		return -1;
	}
	const char *argv[] = { "/bin/sh", "-c", find_script, NULL };
	struct agent_exec_result r;
	if (agent_exec(vm->dom, argv, NULL, 0, 30000, &r, err) < 0)
		return -1;
	int found = 0;
	char *save = NULL;
	for (char *line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *bar = strchr(line, '|');
		if (!bar)
			continue;
		*bar = '\0';
		if (STREQ(trim(bar + 1), serial)) {
			if (dev)
				*dev = xstrdup(trim(line));
			found = 1;
			break;
		}
	}
	agent_exec_result_clear(&r);
	return found;
}

/* Wait until the guest shows (want=1) or no longer shows (want=0) the disk. */
static int wait_disk(struct vm *vm, const char *serial, int want, unsigned timeout_ms, char **dev,
		     char **err)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
	for (;;) {
		int r = vm_find_disk(vm, serial, want ? dev : NULL, err);
		if (r < 0)
			return -1;
		if (r == want)
			return 0;
		if (run_interrupted()) {
			*err = xasprintf("interrupted while waiting for disk '%s'", serial);
			return -1;
		}
		if (now_ns() >= deadline) {
			*err = with_console(xasprintf("the guest %s disk '%s' within %u ms",
						      want ? "did not see" : "still sees", serial,
						      timeout_ms),
					    vm->console_log);
			return -1;
		}
		sleep_ms(20);
	}
}

int vm_disk_attach(struct vm *vm, const struct disk_config *d, unsigned timeout_ms, char **dev,
		   char **err)
{
	_cleanup_free_ char *why = NULL;
	if (vm_disk_validate(d, vm->machine, true, &why) < 0) {
		*err = TAKE_PTR(why);
		return -1;
	}
	if (!d->serial || !d->path) {
		*err = xstrdup("a hot-plugged disk needs a serial and an image path");
		return -1;
	}
	for (size_t i = 0; i < vm->n_att; i++)
		if (STREQ(vm->att[i].serial, d->serial)) {
			*err = xasprintf("a disk with serial '%s' is already attached", d->serial);
			return -1;
		}
	unsigned *slot = &vm->next[d->bus == DISK_BUS_VIRTIO ? 0 : 1];
	_cleanup_free_ char *target = target_name(d->bus, *slot);
	_cleanup_free_ char *xml = vm_disk_xml(d, target, err);
	if (!xml)
		return -1;
	if (virDomainAttachDeviceFlags(vm->dom, xml, VIR_DOMAIN_AFFECT_LIVE) < 0) {
		*err = xasprintf("cannot attach disk '%s' to domain '%s': %s", d->serial, vm->name,
				 virGetLastErrorMessage());
		return -1;
	}
	(*slot)++;
	vm->att = xgrow(vm->att, &vm->cap_att, vm->n_att + 1, sizeof(*vm->att));
	vm->att[vm->n_att++] =
	    (struct attached){ xstrdup(d->serial), TAKE_PTR(xml), TAKE_PTR(target) };
	return wait_disk(vm, d->serial, 1, timeout_ms, dev, err);
}

/* The string value of an XPath expression over the live domain XML ("" when nothing matches). */
static int live_xpath(struct vm *vm, const char *expr, char **out, char **err)
{
	_cleanup_free_ char *desc = virDomainGetXMLDesc(vm->dom, 0);
	if (!desc) {
		*err = xasprintf("cannot read the definition of domain '%s': %s", vm->name,
				 virGetLastErrorMessage());
		return -1;
	}
	_cleanup_(xmlFreeDocp) xmlDocPtr doc =
	    xmlReadMemory(desc, (int)strlen(desc), "domain.xml", NULL, XML_PARSE_NONET);
	if (!doc) {
		*err = xasprintf("cannot parse the definition of domain '%s'", vm->name);
		return -1;
	}
	xmlXPathContextPtr ctx = xmlXPathNewContext(doc);
	xmlXPathObjectPtr o = xmlXPathEvalExpression(BAD_CAST expr, ctx);
	xmlChar *s = o ? xmlXPathCastToString(o) : NULL;
	*out = xstrdup(s ? (const char *)s : "");
	xmlFree(s);
	xmlXPathFreeObject(o);
	xmlXPathFreeContext(ctx);
	return 0;
}

/* Whether libvirt's live definition still has a disk with this target. */
static int libvirt_has_target(struct vm *vm, const char *target, char **err)
{
	_cleanup_free_ char *expr =
	    xasprintf("count(/domain/devices/disk/target[@dev='%s'])", target);
	_cleanup_free_ char *n = NULL;
	if (live_xpath(vm, expr, &n, err) < 0)
		return -1;
	return !STREQ(n, "0");
}

int vm_channel_path(struct vm *vm, const char *name, char **path, char **err)
{
	if (strchr(name, '\'')) {
		*err = xasprintf("no channel '%s'", name);
		return -1;
	}
	_cleanup_free_ char *expr =
	    xasprintf("string(/domain/devices/channel[target/@name='%s']/source/@path)", name);
	_cleanup_free_ char *p = NULL;
	if (live_xpath(vm, expr, &p, err) < 0)
		return -1;
	if (!*p) {
		*err = xasprintf("domain '%s' has no channel '%s'", vm->name, name);
		return -1;
	}
	*path = TAKE_PTR(p);
	return 0;
}

int vm_nic_device(struct vm *vm, char **dev, char **err)
{
	_cleanup_free_ char *d = NULL;
	if (live_xpath(vm, "string(/domain/devices/interface[1]/target/@dev)", &d, err) < 0)
		return -1;
	if (!*d) {
		*err = xasprintf("the NIC of domain '%s' has no host device", vm->name);
		return -1;
	}
	*dev = TAKE_PTR(d);
	return 0;
}

int vm_hostfwd_add(struct vm *vm, int host_port, int guest_port, char **err)
{
	_cleanup_free_ char *alias = NULL;
	if (live_xpath(vm, "string(/domain/devices/interface[@type='user'][1]/alias/@name)", &alias,
		       err) < 0)
		return -1;
	if (!*alias) {
		*err = xasprintf("domain '%s' has no user-networking NIC to forward a port to",
				 vm->name);
		return -1;
	}
	/* libvirt names the QEMU netdev of NIC alias "netN" "hostnetN" */
	_cleanup_free_ char *cmd =
	    xasprintf("hostfwd_add host%s tcp:127.0.0.1:%d-:%d", alias, host_port, guest_port);
	_cleanup_free_ char *reply = NULL;
	if (virDomainQemuMonitorCommand(vm->dom, cmd, &reply, VIR_DOMAIN_QEMU_MONITOR_COMMAND_HMP) <
	    0) {
		*err = xasprintf("cannot forward port %d to domain '%s': %s", host_port, vm->name,
				 virGetLastErrorMessage());
		return -1;
	}
	/* HMP answers errors as text */
	if (reply && *reply && strspn(reply, "\r\n ") != strlen(reply)) {
		size_t n = strcspn(reply, "\r\n");
		*err = xasprintf("cannot forward port %d to domain '%s': %.*s", host_port, vm->name,
				 (int)n, reply);
		return -1;
	}
	return 0;
}

int vm_disk_detach(struct vm *vm, const char *serial, unsigned timeout_ms, char **err)
{
	size_t i;
	for (i = 0; i < vm->n_att; i++)
		if (STREQ(vm->att[i].serial, serial))
			break;
	if (i == vm->n_att) {
		*err = xasprintf("no disk with serial '%s' was attached", serial);
		return -1;
	}
	struct attached a = vm->att[i];
	if (virDomainDetachDeviceFlags(vm->dom, a.xml, VIR_DOMAIN_AFFECT_LIVE) < 0) {
		*err = xasprintf("cannot detach disk '%s' from domain '%s': %s", serial, vm->name,
				 virGetLastErrorMessage());
		return -1;
	}
	if (wait_disk(vm, serial, 0, timeout_ms, NULL, err) < 0)
		return -1;
	/* libvirt finishes the removal asynchronously: wait before the image may be reused */
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
	for (;;) {
		int has = libvirt_has_target(vm, a.target, err);
		if (has < 0)
			return -1;
		if (!has)
			break;
		if (now_ns() >= deadline) {
			*err = xasprintf("libvirt still lists disk '%s' after %u ms", serial,
					 timeout_ms);
			return -1;
		}
		sleep_ms(10);
	}
	free(a.serial);
	free(a.xml);
	free(a.target);
	memmove(&vm->att[i], &vm->att[i + 1], (vm->n_att - i - 1) * sizeof(*vm->att));
	vm->n_att--;
	return 0;
}
