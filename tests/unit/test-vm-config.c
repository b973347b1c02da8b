/* SPDX-License-Identifier: MIT */
/*
 * VM configurations without a real hypervisor: the plan entries mapped onto them and the domain
 * XML (parsed back with libxml2 and checked with XPath, then defined and started against
 * libvirt's test:///default driver). Validation, image creation and the KVM probe's memory:
 * test-vm-setup.c.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/xpath.h>

#include "proc.h"
#include "run.h"
#include "vm-plan.h"
#include "util.h"
#include "vm.h"
#include "vm-builtin.h"

struct parsed {
	xmlDocPtr doc;
	xmlXPathContextPtr ctx;
};

static struct parsed parse(const char *xml)
{
	struct parsed p;
	p.doc = xmlReadMemory(xml, (int)strlen(xml), "domain.xml", NULL, XML_PARSE_NONET);
	g_assert_nonnull(p.doc);
	p.ctx = xmlXPathNewContext(p.doc);
	return p;
}

static void parsed_free(struct parsed *p)
{
	xmlXPathFreeContext(p->ctx);
	xmlFreeDoc(p->doc);
}

/* The string value of an XPath expression ("" when nothing matches). */
static char *xs(struct parsed *p, const char *expr)
{
	xmlXPathObjectPtr o = xmlXPathEvalExpression(BAD_CAST expr, p->ctx);
	g_assert_nonnull(o);
	xmlChar *s = xmlXPathCastToString(o);
	char *r = g_strdup((const char *)s);
	xmlFree(s);
	xmlXPathFreeObject(o);
	return r;
}

static double xn(struct parsed *p, const char *expr)
{
	xmlXPathObjectPtr o = xmlXPathEvalExpression(BAD_CAST expr, p->ctx);
	g_assert_nonnull(o);
	double d = xmlXPathCastToNumber(o);
	xmlXPathFreeObject(o);
	return d;
}

#define assert_x(p, expr, want)                                                                    \
	do {                                                                                       \
		char *got_ = xs((p), (expr));                                                      \
		g_assert_cmpstr(got_, ==, (want));                                                 \
		g_free(got_);                                                                      \
	} while (0)

/* The n-th argument (from 1) in <qemu:commandline>, and all of them joined with spaces. */
#define QEMU_CL     "/domain/*[local-name()='commandline']"
#define QEMU_ARG(n) "string(" QEMU_CL "/*[local-name()='arg'][" #n "]/@value)"
static char *qemu_args(struct parsed *p)
{
	GString *s = g_string_new(NULL);
	double n = xn(p, "count(" QEMU_CL "/*[local-name()='arg'])");
	for (int i = 1; i <= (int)n; i++) {
		char *e =
		    g_strdup_printf("string(" QEMU_CL "/*[local-name()='arg'][%d]/@value)", i);
		char *v = xs(p, e);
		g_string_append_printf(s, "%s%s", i > 1 ? " " : "", v);
		g_free(v);
		g_free(e);
	}
	return g_string_free(s, FALSE);
}

/* Define the XML against test:///default and start it as a transient domain too. */
/* The drivers named on the built-in guest's command line follow the devices: none for a bus
 * or NIC the VM does not have. */
static void test_guest_modules(void)
{
	struct vm_config c;
	builtin(&c);
	c.nic.backend = NIC_BACKEND_NONE;
	char *m = vm_guest_modules(&c);
	g_assert_cmpstr(m, ==, "virtio_blk");
	g_free(m);

	c.nic.backend = NIC_BACKEND_USER;
	c.nic.model = NIC_MODEL_E1000;
	c.hotplug_buses = 1u << DISK_BUS_SCSI;
	m = vm_guest_modules(&c);
	g_assert_cmpstr(m, ==, "virtio_blk,virtio_scsi,sd_mod,e1000");
	g_free(m);
	/* a SCSI hot-plug ahead: the controller is in the domain from the boot on */
	g_assert_true(vm_needs_scsi(&c));
	char *err = NULL, *xml = vm_domain_xml(&c, "s", false, NULL, &err);
	g_assert_null(err);
	struct parsed p = parse(xml);
	assert_x(&p, "string(/domain/devices/controller[@type='scsi']/@model)", "virtio-scsi");
	parsed_free(&p);
	free(xml);

	struct disk_config d[2] = {
		{ .kind = DISK_KIND_IMAGE, .bus = DISK_BUS_IDE, .path = "/x.raw" },
		{ .kind = DISK_KIND_IMAGE, .bus = DISK_BUS_SATA, .path = "/y.raw" },
	};
	c.disks = d;
	c.n_disks = 2;
	c.hotplug_buses = 0;
	c.nic.model = NIC_MODEL_VIRTIO;
	g_assert_false(vm_needs_scsi(&c));
	m = vm_guest_modules(&c);
	g_assert_cmpstr(m, ==, "virtio_blk,ahci,sd_mod,ata_piix,virtio_net");
	g_free(m);

	/* a tmpfs "disk" is no device */
	d[0].kind = d[1].kind = DISK_KIND_TMPFS;
	c.nic.backend = NIC_BACKEND_NONE;
	m = vm_guest_modules(&c);
	g_assert_cmpstr(m, ==, "virtio_blk");
	g_free(m);
}

static void define_on_test_driver(const char *xml, const char *name)
{
	char *err = NULL;
	virConnectPtr conn = vm_connect("test:///default", &err);
	g_assert_null(err);
	g_assert_nonnull(conn);
	virDomainPtr d = virDomainDefineXML(conn, xml);
	if (!d)
		g_error("test driver refused the XML: %s\n%s", virGetLastErrorMessage(), xml);
	g_assert_cmpstr(virDomainGetName(d), ==, name);
	g_assert_cmpint(virDomainUndefine(d), ==, 0);
	virDomainFree(d);
	d = virDomainCreateXML(conn, xml, 0);
	if (!d)
		g_error("test driver refused to start: %s", virGetLastErrorMessage());
	g_assert_cmpint(virDomainIsActive(d), ==, 1);
	g_assert_cmpint(virDomainIsPersistent(d), ==, 0);
	g_assert_cmpint(virDomainDestroy(d), ==, 0);
	virDomainFree(d);
	virConnectClose(conn);
}

static void test_disk_mapping(void)
{
	struct plan_disk pd = {
		.kind = PLAN_DISK_IMAGE,
		.format = PLAN_FORMAT_QCOW2,
		.allocation = PLAN_ALLOC_FALLOC,
		.size = 1u << 30,
		.bus = PLAN_BUS_SCSI,
		.cache = PLAN_CACHE_DIRECTSYNC,
		.io = PLAN_IO_NATIVE,
		.discard = true,
	};
	struct disk_config d;
	vm_disk_config_from_plan(&pd, "/x.qcow2", "ser", &d);
	g_assert_cmpint(d.kind, ==, DISK_KIND_IMAGE);
	g_assert_cmpint(d.format, ==, DISK_FORMAT_QCOW2);
	g_assert_cmpint(d.allocation, ==, DISK_ALLOC_FALLOC);
	g_assert_cmpuint(d.size, ==, 1u << 30);
	g_assert_cmpint(d.bus, ==, DISK_BUS_SCSI);
	g_assert_cmpint(d.cache, ==, DISK_CACHE_DIRECTSYNC);
	g_assert_cmpint(d.io, ==, DISK_IO_NATIVE);
	g_assert_true(d.discard);
	g_assert_cmpstr(d.path, ==, "/x.qcow2");
	g_assert_cmpstr(d.serial, ==, "ser");
	pd.kind = PLAN_DISK_TMPFS;
	pd.bus = PLAN_BUS_IDE;
	pd.cache = PLAN_CACHE_UNSAFE;
	vm_disk_config_from_plan(&pd, NULL, NULL, &d);
	g_assert_cmpint(d.kind, ==, DISK_KIND_TMPFS);
	g_assert_cmpint(d.bus, ==, DISK_BUS_IDE);
	g_assert_cmpint(d.cache, ==, DISK_CACHE_UNSAFE);
}

static void test_vm_mapping(void)
{
	struct plan_vm pv = {
		.guest = PLAN_GUEST_BUILTIN,
		.vcpus = 2,
		.memory = 512u << 20,
		.machine = PLAN_MACHINE_Q35,
		.accel = PLAN_ACCEL_TCG,
		.nic = { .model = PLAN_NIC_E1000, .queues = 1 },
	};
	struct vm_config c;
	vm_config_from_plan(&pv, "/k", "/i", "console=ttyS0", NULL, &c);
	g_assert_cmpuint(c.vcpus, ==, 2);
	g_assert_cmpuint(c.memory, ==, 512u << 20);
	g_assert_cmpint(c.machine, ==, VM_MACHINE_Q35);
	g_assert_cmpint(c.accel, ==, VM_ACCEL_TCG);
	g_assert_cmpstr(c.kernel, ==, "/k");
	g_assert_cmpstr(c.initrd, ==, "/i");
	g_assert_null(c.image);
	g_assert_cmpint(c.nic.model, ==, NIC_MODEL_E1000);
	g_assert_cmpint(c.nic.backend, ==, NIC_BACKEND_USER);
	pv.guest = PLAN_GUEST_IMAGE;
	char img[] = "/img.qcow2", br[] = "br0";
	pv.image = img;
	pv.nic.bridge = br;
	vm_config_from_plan(&pv, "/k", "/i", "x", NULL, &c);
	g_assert_cmpstr(c.image, ==, "/img.qcow2");
	g_assert_null(c.kernel);
	g_assert_cmpint(c.nic.backend, ==, NIC_BACKEND_BRIDGE);
	g_assert_cmpstr(c.nic.source, ==, "br0");
	/* backend private: the tap is vm_boot()'s to create */
	pv.guest = PLAN_GUEST_BUILTIN;
	pv.image = NULL;
	pv.nic.bridge = NULL;
	pv.nic.backend = PLAN_NIC_PRIVATE;
	pv.nic.queues = 4;
	vm_config_from_plan(&pv, "/k", "/i", "x", NULL, &c);
	g_assert_cmpint(c.nic.backend, ==, NIC_BACKEND_PRIVATE);
	g_assert_cmpuint(c.nic.queues, ==, 4);
	g_assert_null(c.nic.source);
}

static void test_builtin_xml(void)
{
	struct vm_config c;
	builtin(&c);
	char *err = NULL;
	char *xml = vm_domain_xml(&c, "ferry-r1-0", false, "/run/x/logs/c.log", &err);
	g_assert_null(err);
	g_assert_nonnull(xml);
	struct parsed p = parse(xml);
	assert_x(&p, "string(/domain/@type)", "qemu");
	assert_x(&p, "string(/domain/name)", "ferry-r1-0");
	assert_x(&p, "string(/domain/memory)", "262144");
	assert_x(&p, "string(/domain/memory/@unit)", "KiB");
	assert_x(&p, "string(/domain/vcpu)", "1");
	assert_x(&p, "string(/domain/os/type/@machine)", "pc");
	assert_x(&p, "string(/domain/os/type/@arch)", "x86_64");
	assert_x(&p, "string(/domain/os/kernel)", c.kernel);
	assert_x(&p, "string(/domain/os/initrd)", c.initrd);
	/* the default VM has a virtio NIC on user networking and no disks; TCG with one vCPU */
	assert_x(&p, "string(/domain/os/cmdline)",
		 "console=ttyS0 panic=-1 quiet acpi=noirq noreplace-smp noapictimer "
		 "ferry.modules=virtio_blk,virtio_net");
	g_assert_cmpfloat(xn(&p, "count(/domain/os/@firmware)"), ==, 0);
	g_assert_cmpfloat(xn(&p, "count(/domain/features/acpi)"), ==, 1);
	assert_x(&p, "string(/domain/devices/controller[@type='usb']/@model)", "none");
	/* no SCSI disk: no SCSI controller (vm_disk_attach() hot-plugs it when needed) */
	g_assert_cmpfloat(xn(&p, "count(/domain/devices/controller[@type='scsi'])"), ==, 0);
	assert_x(&p, "string(/domain/devices/memballoon/@model)", "none");
	assert_x(&p, "string(/domain/devices/serial[@type='file']/source/@path)",
		 "/run/x/logs/c.log");
	assert_x(&p, "string(/domain/devices/channel[@type='unix']/target/@name)",
		 "org.qemu.guest_agent.0");
	/* the NIC on user networking is QEMU's restricted slirp, not libvirt's interface
	   (test_user_nic_xml) */
	g_assert_cmpfloat(xn(&p, "count(/domain/devices/interface)"), ==, 0);
	assert_x(&p, QEMU_ARG(2), "user,id=ferrynet0,restrict=on");
	g_assert_cmpfloat(xn(&p, "count(/domain/devices/disk)"), ==, 0);
	g_assert_cmpfloat(xn(&p, "count(/domain/devices/filesystem)"), ==, 0);
	parsed_free(&p);
	define_on_test_driver(xml, "ferry-r1-0");
	free(xml);

	c.accel = VM_ACCEL_KVM;
	xml = vm_domain_xml(&c, "k", true, NULL, &err);
	p = parse(xml);
	assert_x(&p, "string(/domain/@type)", "kvm");
	g_assert_cmpfloat(xn(&p, "count(/domain/devices/serial)"), ==, 0);
	/* KVM: none of the TCG boot trims */
	assert_x(&p, "string(/domain/os/cmdline)",
		 "console=ttyS0 panic=-1 quiet acpi=noirq ferry.modules=virtio_blk,virtio_net");
	parsed_free(&p);
	free(xml);
	c.accel = VM_ACCEL_AUTO;

	/* TCG with two vCPUs keeps the local APIC timer (the HPET would broadcast the tick) */
	c.vcpus = 2;
	xml = vm_domain_xml(&c, "t2", false, NULL, &err);
	p = parse(xml);
	assert_x(&p, "string(/domain/os/cmdline)",
		 "console=ttyS0 panic=-1 quiet acpi=noirq noreplace-smp "
		 "ferry.modules=virtio_blk,virtio_net");
	parsed_free(&p);
	free(xml);
	c.vcpus = 1;

	/* q35 keeps ACPI interrupt routing: its hot-plug needs the SCI routed through ACPI */
	c.machine = VM_MACHINE_Q35;
	xml = vm_domain_xml(&c, "q", false, NULL, &err);
	p = parse(xml);
	assert_x(&p, "string(/domain/os/cmdline)",
		 "console=ttyS0 panic=-1 quiet noreplace-smp noapictimer "
		 "ferry.modules=virtio_blk,virtio_net");
	parsed_free(&p);
	free(xml);
}

/* A hot-plug element alone, for disks[1] (a SCSI disk); disks[4] (tmpfs) has none. */
static void check_disk_hotplug(const struct disk_config *disks)
{
	/* a hot-plug element alone */
	char *err = NULL;
	char *xml = vm_disk_xml(&disks[1], "sdc", &err);
	g_assert_null(err);
	struct parsed p = parse(xml);
	assert_x(&p, "name(/*)", "disk");
	assert_x(&p, "string(/disk/target/@dev)", "sdc");
	assert_x(&p, "string(/disk/serial)", "scsi0");
	parsed_free(&p);
	free(xml);
	g_assert_null(vm_disk_xml(&disks[4], "vdz", &err));
	g_assert_nonnull(err);
	free(err);
}

static void test_disks_xml(void)
{
	struct vm_config c;
	builtin(&c);
	const struct disk_config disks[] = {
		{ .format = DISK_FORMAT_QCOW2,
		  .bus = DISK_BUS_VIRTIO,
		  .cache = DISK_CACHE_NONE,
		  .io = DISK_IO_NATIVE,
		  .discard = true,
		  .readonly = true,
		  .serial = "ro-virtio",
		  .path = "/r/a.qcow2",
		  .size = 1 << 20 },
		{ .format = DISK_FORMAT_RAW,
		  .bus = DISK_BUS_SCSI,
		  .cache = DISK_CACHE_WRITEBACK,
		  .io = DISK_IO_THREADS,
		  .serial = "scsi0",
		  .path = "/r/b.raw" },
		{ .format = DISK_FORMAT_RAW,
		  .bus = DISK_BUS_SATA,
		  .cache = DISK_CACHE_UNSAFE,
		  .io = DISK_IO_IO_URING,
		  .serial = "sata0",
		  .path = "/r/c.raw" },
		{ .format = DISK_FORMAT_RAW,
		  .bus = DISK_BUS_IDE,
		  .cache = DISK_CACHE_DIRECTSYNC,
		  .io = DISK_IO_NATIVE,
		  .serial = "ide0",
		  .path = "/r/d.raw" },
		{ .kind = DISK_KIND_TMPFS },
		{ .format = DISK_FORMAT_QCOW2,
		  .bus = DISK_BUS_VIRTIO,
		  .cache = DISK_CACHE_WRITETHROUGH,
		  .serial = "v2",
		  .path = "/r/e.qcow2" },
	};
	c.disks = disks;
	c.n_disks = ELEMENTSOF(disks);
	char *err = NULL;
	char *xml = vm_domain_xml(&c, "ferry-r1-1", false, "/l", &err);
	g_assert_null(err);
	struct parsed p = parse(xml);
	/* tmpfs lives in guest RAM: no disk element */
	g_assert_cmpfloat(xn(&p, "count(/domain/devices/disk)"), ==, 5);
	/* a SCSI disk at boot: the virtio-scsi controller */
	assert_x(&p, "string(/domain/devices/controller[@type='scsi']/@model)", "virtio-scsi");
	/* each disk's attributes: serial, path below the disk element, value */
	static const char *const attrs[][3] = {
		{ "ro-virtio", "/@type", "file" },
		{ "ro-virtio", "/@device", "disk" },
		{ "ro-virtio", "/driver/@name", "qemu" },
		{ "ro-virtio", "/driver/@type", "qcow2" },
		{ "ro-virtio", "/driver/@cache", "none" },
		{ "ro-virtio", "/driver/@io", "native" },
		{ "ro-virtio", "/driver/@discard", "unmap" },
		{ "ro-virtio", "/source/@file", "/r/a.qcow2" },
		{ "ro-virtio", "/target/@dev", "vda" },
		{ "ro-virtio", "/target/@bus", "virtio" },
		{ "scsi0", "/target/@bus", "scsi" },
		{ "scsi0", "/target/@dev", "sda" },
		{ "scsi0", "/driver/@type", "raw" },
		{ "scsi0", "/driver/@cache", "writeback" },
		{ "scsi0", "/driver/@io", "threads" },
		{ "sata0", "/target/@bus", "sata" },
		{ "sata0", "/target/@dev", "sdb" },
		{ "sata0", "/driver/@io", "io_uring" },
		{ "sata0", "/driver/@cache", "unsafe" },
		{ "ide0", "/target/@bus", "ide" },
		{ "ide0", "/target/@dev", "hda" },
		{ "ide0", "/driver/@cache", "directsync" },
		{ "v2", "/target/@dev", "vdb" },
		{ "v2", "/driver/@cache", "writethrough" },
	};
	for (size_t i = 0; i < ELEMENTSOF(attrs); i++) {
		char *e = g_strdup_printf("string(/domain/devices/disk[serial='%s']%s)",
					  attrs[i][0], attrs[i][1]);
		assert_x(&p, e, attrs[i][2]);
		g_free(e);
	}
	g_assert_cmpfloat(xn(&p, "count(/domain/devices/disk[serial='ro-virtio']/readonly)"), ==,
			  1);
	g_assert_cmpfloat(xn(&p, "count(/domain/devices/disk[serial='v2']/driver/@io)"), ==, 0);
	g_assert_cmpfloat(xn(&p, "count(/domain/devices/disk[serial='v2']/driver/@discard)"), ==,
			  0);
	g_assert_cmpfloat(xn(&p, "count(/domain/devices/disk[serial='v2']/readonly)"), ==, 0);
	parsed_free(&p);
	define_on_test_driver(xml, "ferry-r1-1");
	free(xml);

	check_disk_hotplug(disks);
}

/* backend private: ferry's own tap, unmanaged; the virtio back end named, queues when > 1 */
static void test_nic_private_xml(void)
{
	static const struct {
		enum nic_model model;
		unsigned queues;
		bool vhost;
		const char *driver, *queues_attr;
	} cases[] = {
		{ NIC_MODEL_VIRTIO, 4, false, "qemu", "4" },
		{ NIC_MODEL_VIRTIO, 1, true, "vhost", "" },
		{ NIC_MODEL_E1000, 1, false, "", "" },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct vm_config c;
		builtin(&c);
		c.vcpus = 4;
		c.nic = (struct nic_config){ cases[i].model, cases[i].queues, NIC_BACKEND_PRIVATE,
					     "fy42n0", cases[i].vhost };
		char *err = NULL;
		char *xml = vm_domain_xml(&c, "n", false, "/l", &err);
		g_assert_null(err);
		struct parsed p = parse(xml);
		assert_x(&p, "string(/domain/devices/interface/@type)", "ethernet");
		assert_x(&p, "string(/domain/devices/interface/target/@dev)", "fy42n0");
		assert_x(&p, "string(/domain/devices/interface/target/@managed)", "no");
		assert_x(&p, "string(/domain/devices/interface/driver/@name)", cases[i].driver);
		assert_x(&p, "string(/domain/devices/interface/driver/@queues)",
			 cases[i].queues_attr);
		g_assert_cmpfloat(xn(&p, "count(/domain/devices/interface/source)"), ==, 0);
		parsed_free(&p);
		free(xml);
	}
	/* without its tap (vm_boot makes it) there is no domain, and no image guest either */
	struct vm_config c;
	builtin(&c);
	c.nic = (struct nic_config){ NIC_MODEL_VIRTIO, 1, NIC_BACKEND_PRIVATE, NULL, false };
	char *err = NULL;
	g_assert_null(vm_domain_xml(&c, "n", false, "/l", &err));
	g_assert_nonnull(strstr(err, "tap"));
	free(err);
	err = NULL;
	c.kernel = c.initrd = c.cmdline = NULL;
	c.image = "/srv/img.qcow2";
	c.user_image = true;
	c.nic.source = "fy42n0";
	g_assert_cmpint(vm_config_validate(&c, &err), ==, -1);
	g_assert_nonnull(strstr(err, "built-in or Debian guest"));
	free(err);
	err = NULL;
	/* ferry's Debian guest boots from its root image too, and gets its address as the
	   built-in guest does */
	c.user_image = false;
	c.kernel = "/k";
	c.cmdline = "root=LABEL=ferry-root";
	g_assert_cmpint(vm_config_validate(&c, &err), ==, 0);
}

static void test_nic_share_channels_xml(void)
{
	static const struct {
		enum nic_backend backend;
		enum nic_model model;
		unsigned queues;
		const char *source;
		const char *type, *src_attr, *src_value;
	} nics[] = {
		{ NIC_BACKEND_USER, NIC_MODEL_E1000, 1, NULL, "user", NULL, NULL },
		{ NIC_BACKEND_NETWORK, NIC_MODEL_VIRTIO, 4, "default", "network", "network",
		  "default" },
		{ NIC_BACKEND_BRIDGE, NIC_MODEL_VIRTIO, 2, "br0", "bridge", "bridge", "br0" },
		{ NIC_BACKEND_ETHERNET, NIC_MODEL_VIRTIO, 4, "ferrytap0", "ethernet", NULL, NULL },
		{ NIC_BACKEND_ETHERNET, NIC_MODEL_VIRTIO, 4, NULL, "ethernet", NULL, NULL },
	};
	const char *const chans[] = { "org.ferry.data", "org.ferry.ctl" };
	for (size_t i = 0; i < ELEMENTSOF(nics); i++) {
		struct vm_config c;
		builtin(&c);
		c.vcpus = 2;
		c.memory = 1ull << 30;
		c.machine = VM_MACHINE_Q35;
		c.nic = (struct nic_config){ nics[i].model, nics[i].queues, nics[i].backend,
					     nics[i].source };
		c.share = (struct share_config){ "/srv/share", "hostshare", SHARE_MODE_PASSTHROUGH,
						 true };
		c.channels = chans;
		c.n_channels = ELEMENTSOF(chans);
		char *err = NULL;
		char *xml = vm_domain_xml(&c, "n", false, "/l", &err);
		g_assert_null(err);
		struct parsed p = parse(xml);
		assert_x(&p, "string(/domain/os/type/@machine)", "q35");
		assert_x(&p, "string(/domain/memory)", "1048576");
		assert_x(&p, "string(/domain/vcpu)", "2");
		/* q35: a root port per PCIe device (scsi, serial, NIC libvirt knows, share) +
		 * spares for hot-plug, each with its own index (the user NIC brings its own) */
		unsigned ports = 3 + (nics[i].backend != NIC_BACKEND_USER) + VM_Q35_SPARE_PORTS;
		g_assert_cmpfloat(
		    xn(&p, "count(/domain/devices/controller[@model='pcie-root-port'])"), ==,
		    ports);
		g_assert_cmpfloat(
		    xn(&p,
		       "count(/domain/devices/controller[@model='pcie-root-port'][@index > 0])"),
		    ==, ports);
		if (nics[i].backend == NIC_BACKEND_USER) {
			g_assert_cmpfloat(xn(&p, "count(/domain/devices/interface)"), ==, 0);
			assert_x(&p, QEMU_ARG(6),
				 "e1000,netdev=ferrynet0,id=ferrynic0,bus=ferrynicport0,addr=0x0");
			parsed_free(&p);
			define_on_test_driver(xml, "n");
			free(xml);
			continue;
		}
		assert_x(&p, "count(" QEMU_CL ")", "0");
		assert_x(&p, "string(/domain/devices/interface/@type)", nics[i].type);
		assert_x(&p, "string(/domain/devices/interface/model/@type)",
			 nic_model_names[nics[i].model]);
		char *q = g_strdup_printf("%u", nics[i].queues);
		assert_x(&p, "string(/domain/devices/interface/driver/@queues)",
			 nics[i].queues > 1 ? q : "");
		g_free(q);
		if (nics[i].src_attr) {
			char *e = g_strdup_printf("string(/domain/devices/interface/source/@%s)",
						  nics[i].src_attr);
			assert_x(&p, e, nics[i].src_value);
			g_free(e);
		}
		assert_x(&p, "string(/domain/devices/interface/target/@dev)",
			 nics[i].backend == NIC_BACKEND_ETHERNET && nics[i].source ? nics[i].source
										   : "");
		assert_x(&p, "string(/domain/devices/filesystem/@type)", "mount");
		assert_x(&p, "string(/domain/devices/filesystem/@accessmode)", "passthrough");
		assert_x(&p, "string(/domain/devices/filesystem/source/@dir)", "/srv/share");
		assert_x(&p, "string(/domain/devices/filesystem/target/@dir)", "hostshare");
		g_assert_cmpfloat(xn(&p, "count(/domain/devices/filesystem/readonly)"), ==, 1);
		g_assert_cmpfloat(xn(&p, "count(/domain/devices/channel)"), ==, 3);
		assert_x(&p, "string(/domain/devices/channel[target/@name='org.ferry.data']/@type)",
			 "unix");
		assert_x(&p, "string(/domain/devices/channel[3]/target/@name)", "org.ferry.ctl");
		parsed_free(&p);
		if (nics[i].backend == NIC_BACKEND_ETHERNET)
			define_on_test_driver(xml, "n");
		free(xml);
	}
	struct vm_config c;
	builtin(&c);
	c.nic.backend = NIC_BACKEND_NONE;
	char *err = NULL;
	char *xml = vm_domain_xml(&c, "nonic", false, "/l", &err);
	struct parsed p = parse(xml);
	g_assert_cmpfloat(xn(&p, "count(/domain/devices/interface)"), ==, 0);
	g_assert_cmpfloat(xn(&p, "count(" QEMU_CL ")"), ==, 0);
	parsed_free(&p);
	free(xml);
}

/*
 * The NIC on user networking (issue 24 class 7): QEMU's slirp with restrict=on, so the guest
 * reaches nothing of the host's loopback, and the NIC on a PCI slot libvirt never allocates
 * (pc: pci.0's last; q35: a root port of its own on pcie.0), in the one <qemu:commandline> that
 * also carries a restore's -incoming; libvirt gets no <interface>, and its q35 root ports do
 * not count the NIC.
 */
static void test_user_nic_xml(void)
{
	static const char netdev[] = "-netdev user,id=ferrynet0,restrict=on";
	static const struct {
		enum vm_machine machine;
		enum nic_model model;
		const char *device;
	} cases[] = {
		{ VM_MACHINE_PC, NIC_MODEL_VIRTIO,
		  "-device virtio-net-pci,netdev=ferrynet0,id=ferrynic0,bus=pci.0,addr=0x1f" },
		{ VM_MACHINE_PC, NIC_MODEL_E1000,
		  "-device e1000,netdev=ferrynet0,id=ferrynic0,bus=pci.0,addr=0x1f" },
		{ VM_MACHINE_Q35, NIC_MODEL_VIRTIO,
		  "-device pcie-root-port,id=ferrynicport0,bus=pcie.0,addr=0x1c,chassis=254 "
		  "-device "
		  "virtio-net-pci,netdev=ferrynet0,id=ferrynic0,bus=ferrynicport0,addr=0x0" },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		for (int restore = 0; restore < 2; restore++) {
			struct vm_config c;
			builtin(&c);
			c.machine = cases[i].machine;
			c.nic.model = cases[i].model;
			/* only its presence matters to the XML (vm-save.c loads it) */
			c.restore = restore ? (const struct vm_saved *)&c : NULL;
			char *err = NULL;
			char *xml = vm_domain_xml(&c, "u", false, NULL, &err);
			g_assert_null(err);
			struct parsed p = parse(xml);
			g_assert_cmpfloat(xn(&p, "count(/domain/devices/interface)"), ==, 0);
			g_assert_cmpfloat(xn(&p, "count(" QEMU_CL ")"), ==, 1);
			assert_x(&p, "namespace-uri(" QEMU_CL ")",
				 "http://libvirt.org/schemas/domain/qemu/1.0");
			char *want = g_strdup_printf("%s %s%s", netdev, cases[i].device,
						     restore ? " -incoming defer" : "");
			char *got = qemu_args(&p);
			g_assert_cmpstr(got, ==, want);
			g_free(got);
			g_free(want);
			g_assert_cmpfloat(
			    xn(&p, "count(/domain/devices/controller[@model='pcie-root-port'])"),
			    ==, c.machine == VM_MACHINE_Q35 ? 2 + VM_Q35_SPARE_PORTS : 0);
			parsed_free(&p);
			free(xml);
		}
	}
}

/* A virtiofs share: shared memory backing, the vhost-user-fs device with its virtiofsd, never
 * <readonly/> (libvirt 9.0 refuses it); a 9p share has neither memoryBacking nor driver. */
static void test_virtiofs_xml(void)
{
	for (int q35 = 0; q35 < 2; q35++) {
		struct vm_config c;
		builtin(&c);
		c.machine = q35 ? VM_MACHINE_Q35 : VM_MACHINE_PC;
		c.share = (struct share_config){ .host_dir = "/srv/data",
						 .tag = "fs0",
						 .mode = SHARE_MODE_PASSTHROUGH,
						 .driver = SHARE_DRIVER_VIRTIOFS,
						 .virtiofsd = "/usr/lib/qemu/virtiofsd" };
		char *err = NULL;
		char *xml = vm_domain_xml(&c, "vfs", false, "/l", &err);
		g_assert_null(err);
		struct parsed p = parse(xml);
		assert_x(&p, "string(/domain/memoryBacking/source/@type)", "memfd");
		assert_x(&p, "string(/domain/memoryBacking/access/@mode)", "shared");
		g_assert_cmpfloat(xn(&p, "count(/domain/devices/filesystem)"), ==, 1);
		assert_x(&p, "string(/domain/devices/filesystem/@type)", "mount");
		assert_x(&p, "string(/domain/devices/filesystem/@accessmode)", "passthrough");
		assert_x(&p, "string(/domain/devices/filesystem/driver/@type)", "virtiofs");
		assert_x(&p, "string(/domain/devices/filesystem/driver/@queue)", "1024");
		assert_x(&p, "string(/domain/devices/filesystem/binary/@path)",
			 "/usr/lib/qemu/virtiofsd");
		assert_x(&p, "string(/domain/devices/filesystem/source/@dir)", "/srv/data");
		assert_x(&p, "string(/domain/devices/filesystem/target/@dir)", "fs0");
		g_assert_cmpfloat(xn(&p, "count(/domain/devices/filesystem/readonly)"), ==, 0);
		/* the vhost-user-fs device takes a root port like 9p's (besides virtio-serial's
		   and virtio-scsi's; the user NIC brings its own) */
		if (q35)
			g_assert_cmpfloat(
			    xn(&p, "count(/domain/devices/controller[@model='pcie-root-port'])"),
			    ==, 3 + VM_Q35_SPARE_PORTS);
		parsed_free(&p);
		free(xml);

		/* the same share over 9p */
		c.share.driver = SHARE_DRIVER_9P;
		xml = vm_domain_xml(&c, "nine", false, "/l", &err);
		g_assert_null(err);
		p = parse(xml);
		g_assert_cmpfloat(xn(&p, "count(/domain/memoryBacking)"), ==, 0);
		g_assert_cmpfloat(xn(&p, "count(/domain/devices/filesystem/driver)"), ==, 0);
		g_assert_cmpfloat(xn(&p, "count(/domain/devices/filesystem/binary)"), ==, 0);
		assert_x(&p, "string(/domain/devices/filesystem/target/@dir)", "fs0");
		parsed_free(&p);
		free(xml);
	}
}

static void test_image_xml(void)
{
	struct vm_config c;
	vm_config_init(&c);
	c.image = "/r/overlays/x.qcow2";
	c.firmware = VM_FIRMWARE_UEFI;
	c.machine = VM_MACHINE_Q35;
	char *err = NULL;
	char *xml = vm_domain_xml(&c, "img", false, "/l", &err);
	g_assert_null(err);
	struct parsed p = parse(xml);
	assert_x(&p, "string(/domain/os/@firmware)", "efi");
	g_assert_cmpfloat(xn(&p, "count(/domain/os/kernel)"), ==, 0);
	assert_x(&p, "string(/domain/devices/disk[1]/source/@file)", c.image);
	assert_x(&p, "string(/domain/devices/disk[1]/driver/@type)", "qcow2");
	assert_x(&p, "string(/domain/devices/disk[1]/target/@bus)", "virtio");
	assert_x(&p, "string(/domain/devices/disk[1]/boot/@order)", "1");
	assert_x(&p, "string(/domain/on_reboot)", "restart");
	assert_x(&p, "string(/domain/clock/@offset)", "utc");
	parsed_free(&p);
	free(xml);

	c.os = VM_OS_WINDOWS;
	c.firmware = VM_FIRMWARE_BIOS;
	xml = vm_domain_xml(&c, "win", false, "/l", &err);
	p = parse(xml);
	assert_x(&p, "string(/domain/devices/disk[1]/target/@bus)", "sata");
	assert_x(&p, "string(/domain/clock/@offset)", "localtime");
	parsed_free(&p);
	define_on_test_driver(xml, "win");
	free(xml);
}

/* An image booted by its own kernel (the Debian guest, a user's direct kernel boot) with a
 * NoCloud seed on a CD-ROM: ide on pc, sata on q35, after the boot disk. */
static void test_kernel_image_xml(void)
{
	struct vm_config c;
	vm_config_init(&c);
	c.image = "/r/overlays/x.qcow2";
	c.kernel = "/r/overlays/x.kernel";
	c.cmdline = "root=LABEL=ferry-root console=ttyS0";
	c.seed = "/r/overlays/seed-1.iso";
	char *err = NULL;
	char *xml = vm_domain_xml(&c, "kimg", false, "/l", &err);
	g_assert_null(err);
	struct parsed p = parse(xml);
	assert_x(&p, "string(/domain/os/kernel)", c.kernel);
	g_assert_cmpfloat(xn(&p, "count(/domain/os/initrd)"), ==, 0);
	assert_x(&p, "string(/domain/os/cmdline)", c.cmdline);
	assert_x(&p, "string(/domain/devices/disk[1]/source/@file)", c.image);
	assert_x(&p, "string(/domain/devices/disk[1]/target/@dev)", "vda");
	assert_x(&p, "string(/domain/devices/disk[2]/@device)", "cdrom");
	assert_x(&p, "string(/domain/devices/disk[2]/source/@file)", c.seed);
	assert_x(&p, "string(/domain/devices/disk[2]/target/@bus)", "ide");
	g_assert_cmpfloat(xn(&p, "count(/domain/devices/disk[2]/readonly)"), ==, 1);
	assert_x(&p, "string(/domain/on_reboot)", "restart");
	parsed_free(&p);
	define_on_test_driver(xml, "kimg");
	free(xml);

	c.machine = VM_MACHINE_Q35;
	c.initrd = "/r/overlays/x.initrd";
	xml = vm_domain_xml(&c, "kimg", false, "/l", &err);
	g_assert_null(err);
	p = parse(xml);
	assert_x(&p, "string(/domain/os/initrd)", c.initrd);
	assert_x(&p, "string(/domain/devices/disk[2]/target/@bus)", "sata");
	assert_x(&p, "string(/domain/devices/disk[2]/target/@dev)", "sda");
	parsed_free(&p);
	free(xml);

	/* an initrd needs a kernel; the image alone boots by its bootloader */
	c.kernel = NULL;
	g_assert_cmpint(vm_config_validate(&c, &err), ==, -1);
	g_assert_nonnull(strstr(err, "needs a kernel"));
	free(err);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/vm/disk-mapping", test_disk_mapping);
	g_test_add_func("/vm/vm-mapping", test_vm_mapping);
	g_test_add_func("/vm/xml/builtin", test_builtin_xml);
	g_test_add_func("/vm/xml/disks", test_disks_xml);
	g_test_add_func("/vm/xml/nic-share-channels", test_nic_share_channels_xml);
	g_test_add_func("/vm/xml/nic-private", test_nic_private_xml);
	g_test_add_func("/vm/xml/user-nic", test_user_nic_xml);
	g_test_add_func("/vm/xml/virtiofs", test_virtiofs_xml);
	g_test_add_func("/vm/xml/image", test_image_xml);
	g_test_add_func("/vm/xml/kernel-image", test_kernel_image_xml);
	g_test_add_func("/vm/guest-modules", test_guest_modules);
	int r = g_test_run();
	xmlCleanupParser();
	return r;
}
