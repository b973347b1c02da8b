/* SPDX-License-Identifier: MIT */
/*
 * The VM layer against a real libvirtd and real QEMU (TCG): boot the built-in guest, run
 * commands, push a file, hot-plug and unplug disks found by serial, boot-time SATA and IDE disks,
 * allocation modes, a 9p share, a multi-queue NIC on a tap inside a network namespace this test
 * creates, and a guest destroyed in the middle of an exec. Two guests in all, shared by the
 * checks (TCG boots cost seconds). Skips with the reason when libvirtd or the guest is missing.
 * Boots that fail, and what `ferry doctor --reap` and SIGINT clean up, are in
 * test-vm-failures-e2e.c.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/xpath.h>
#include <openssl/evp.h>

#include "agent.h"
#include "e2e-host.h"
#include "guest.h"
#include "proc.h"
#include "run.h"
#include "util.h"
#include "vm.h"

#define BOOT_TIMEOUT_MS 120000
#define DEV_TIMEOUT_MS  30000
#define EXEC_TIMEOUT_MS 60000

static struct {
	struct e2e_host h; /* root, guest, libvirtd, run directory, run (e2e-host.h) */
	struct vm *a;      /* shared guest: exec, files, hot-plug, 9p */
	struct vm *b;      /* boot-time sata + ide disks, multi-queue NIC */
	char *netns;       /* the namespace holding guest b's tap, or NULL */
	char *mq_skip;     /* why the multi-queue check skips */
} t;

static bool need(void)
{
	return e2e_host_need(&t.h);
}

/* Run a shell line in a guest; must succeed; returns stdout (caller frees). */
static char *sh(struct vm *vm, const char *line)
{
	const char *argv[] = { "/bin/sh", "-c", line, NULL };
	char *out = NULL, *err = NULL;
	if (agent_run(vm_domain(vm), argv, EXEC_TIMEOUT_MS, &out, &err) < 0)
		g_error("guest: %s: %s", line, err);
	return out;
}

static void test_boot_exec(void)
{
	if (!need())
		return;
	struct vm_config c;
	e2e_host_vm_config(&t.h, &c);
	/* q35 here (PCIe native hot-plug), pc for the second guest (ACPI hot-plug, ide) */
	c.machine = VM_MACHINE_Q35;
	char *share = run_path(t.h.run, "share", "hello.txt");
	g_assert_true(g_file_set_contents(share, "hello through 9p\n", -1, NULL));
	g_chmod(share, 0644);
	char *dir = g_path_get_dirname(share);
	c.share = (struct share_config){ dir, "ferryshare", SHARE_MODE_MAPPED, true };
	static const char *const channels[] = { "org.ferry.test" };
	c.channels = channels;
	c.n_channels = 1;
	char *err = NULL;
	if (vm_boot(t.h.run, t.h.conn, &c, BOOT_TIMEOUT_MS, &t.a, &err) < 0)
		g_error("boot: %s", err);
	g_test_message("boot to agent ready: %.0f ms on %s", vm_boot_ms(t.a), vm_accel_used(t.a));
	g_assert_cmpstr(vm_accel_used(t.a), ==, "tcg");
	g_free(dir);
	free(share);

	/* argv without a shell: the argument reaches the program verbatim */
	const char *echo[] = { "/bin/echo", "two  spaces", "$HOME", NULL };
	struct agent_exec_result r;
	if (agent_exec(vm_domain(t.a), echo, NULL, 0, EXEC_TIMEOUT_MS, &r, &err) < 0)
		g_error("exec: %s", err);
	g_assert_cmpint(r.exit_code, ==, 0);
	g_assert_cmpstr(r.out, ==, "two  spaces $HOME\n");
	agent_exec_result_clear(&r);

	/* exit code, stdout and stderr apart, stdin */
	const char *mixed[] = { "/bin/sh", "-c", "cat; echo to-err >&2; exit 7", NULL };
	if (agent_exec(vm_domain(t.a), mixed, "from stdin", 10, EXEC_TIMEOUT_MS, &r, &err) < 0)
		g_error("exec: %s", err);
	g_assert_cmpint(r.exit_code, ==, 7);
	g_assert_cmpstr(r.out, ==, "from stdin");
	g_assert_cmpstr(r.err, ==, "to-err\n");
	agent_exec_result_clear(&r);

	/* agent_run turns a failure into a message carrying the program's stderr */
	const char *fail[] = { "/bin/ls", "/no/such/path", NULL };
	g_assert_cmpint(agent_run(vm_domain(t.a), fail, EXEC_TIMEOUT_MS, NULL, &err), ==, -1);
	g_assert_nonnull(strstr(err, "/no/such/path"));
	free(err);
	err = NULL;
	const char *nothere[] = { "/no/such/program", NULL };
	g_assert_cmpint(agent_exec(vm_domain(t.a), nothere, NULL, 0, EXEC_TIMEOUT_MS, &r, &err), ==,
			-1);
	g_test_message("missing program: %s", err);
	free(err);

	/* a command libvirt 9.0 would corrupt the agent stream with is refused before it is sent */
	char *huge = g_strnfill(200 * 1000, 'x');
	const char *big[] = { "/bin/echo", huge, NULL };
	g_assert_cmpint(agent_exec(vm_domain(t.a), big, NULL, 0, EXEC_TIMEOUT_MS, &r, &err), ==,
			-1);
	g_assert_nonnull(strstr(err, "libvirt can send safely"));
	free(err);
	err = NULL;
	g_free(huge);
	g_assert_cmpint(agent_ping(vm_domain(t.a), 5, &err), ==, 0);

	/* a timeout ends the guest process too */
	const char *slow[] = { "/bin/sh", "-c", "echo $$ > /tmp/slow.pid; exec sleep 600", NULL };
	g_assert_cmpint(agent_exec(vm_domain(t.a), slow, NULL, 0, 1500, &r, &err), ==, -1);
	g_assert_nonnull(strstr(err, "did not finish within 1500 ms"));
	free(err);
	err = NULL;
	char *alive =
	    sh(t.a, "kill -0 $(cat /tmp/slow.pid) 2>/dev/null && echo alive || echo gone");
	g_assert_cmpstr(alive, ==, "gone\n");
	free(alive);

	/* the agent round trip */
	uint64_t t0 = now_ns();
	for (int i = 0; i < 100; i++)
		if (agent_ping(vm_domain(t.a), 5, &err) < 0)
			g_error("ping: %s", err);
	g_test_message("guest-ping round trip: %.2f ms (mean of 100)",
		       (double)(now_ns() - t0) / 1e6 / 100);
}

static void test_push_sha256(void)
{
	if (!need() || !t.a)
		return;
	/* several chunks and a partial one */
	size_t len = 3 * AGENT_CHUNK + 12345;
	guint8 *data = g_malloc(len);
	GRand *rnd = g_rand_new_with_seed(42);
	for (size_t i = 0; i < len; i++)
		data[i] = (guint8)g_rand_int(rnd);
	g_rand_free(rnd);
	char *host = run_path(t.h.run, "tmp", "push.bin");
	g_assert_true(g_file_set_contents(host, (const char *)data, (gssize)len, NULL));
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen;
	g_assert_cmpint(EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL), ==, 1);
	char hex[2 * EVP_MAX_MD_SIZE + 1];
	for (unsigned i = 0; i < mdlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);

	char *err = NULL;
	uint64_t bytes = 0;
	if (agent_push_file(vm_domain(t.a), host, "/tmp/push.bin", &bytes, &err) < 0)
		g_error("push: %s", err);
	g_assert_cmpuint(bytes, ==, len);
	char *out = sh(t.a, "sha256sum /tmp/push.bin");
	g_assert_true(g_str_has_prefix(out, hex));
	free(out);

	/* and read back through guest-file-read */
	char *back = NULL;
	size_t blen = 0;
	if (agent_read_file(vm_domain(t.a), "/tmp/push.bin", 1 << 20, &back, &blen, &err) < 0)
		g_error("read: %s", err);
	g_assert_cmpuint(blen, ==, len);
	g_assert_true(memcmp(back, data, len) == 0);
	free(back);
	g_free(data);
	free(host);
}

static void attach_find_detach(struct vm *vm, const struct disk_config *d)
{
	char *err = NULL, *dev = NULL;
	if (vm_disk_attach(vm, d, DEV_TIMEOUT_MS, &dev, &err) < 0)
		g_error("attach %s: %s", d->serial, err);
	g_test_message("disk '%s' (%s) is /dev/%s in the guest", d->serial, disk_bus_names[d->bus],
		       dev);
	/* the device found by serial is the one we attached: its size matches */
	char *cmd = g_strdup_printf("cat /sys/block/%s/size", dev);
	char *out = sh(vm, cmd);
	g_assert_cmpuint(g_ascii_strtoull(out, NULL, 10) * 512, ==, d->size);
	g_free(cmd);
	free(out);
	if (d->readonly) {
		cmd = g_strdup_printf("cat /sys/block/%s/ro", dev);
		out = sh(vm, cmd);
		g_assert_cmpstr(out, ==, "1\n");
		g_free(cmd);
		free(out);
	}
	free(dev);
	if (vm_disk_detach(vm, d->serial, DEV_TIMEOUT_MS, &err) < 0)
		g_error("detach %s: %s", d->serial, err);
	g_assert_cmpint(vm_find_disk(vm, d->serial, NULL, &err), ==, 0);
}

static void test_hotplug(void)
{
	if (!need() || !t.a)
		return;
	char *p1 = run_path(t.h.run, "disks", "hv.raw"),
	     *p2 = run_path(t.h.run, "disks", "hs.qcow2");
	struct disk_config v = { .format = DISK_FORMAT_RAW,
				 .size = 32 << 20,
				 .bus = DISK_BUS_VIRTIO,
				 .cache = DISK_CACHE_NONE,
				 .io = DISK_IO_NATIVE,
				 .serial = "ferry-hv",
				 .path = p1 };
	struct disk_config s = { .format = DISK_FORMAT_QCOW2,
				 .size = 48 << 20,
				 .bus = DISK_BUS_SCSI,
				 .readonly = true,
				 .discard = true,
				 .serial = "ferry-hs",
				 .path = p2 };
	char *err = NULL;
	g_assert_cmpint(vm_image_create(&v, p1, &err), ==, 0);
	g_assert_cmpint(vm_image_create(&s, p2, &err), ==, 0);
	attach_find_detach(t.a, &v);
	attach_find_detach(t.a, &s);
	/* again, to show detach left the targets and serials free */
	attach_find_detach(t.a, &v);

	/* sata cannot be hot-plugged: refused with the reason before libvirt is asked */
	struct disk_config sata = v;
	sata.bus = DISK_BUS_SATA;
	g_assert_cmpint(vm_disk_attach(t.a, &sata, DEV_TIMEOUT_MS, NULL, &err), ==, -1);
	g_assert_nonnull(strstr(err, "cannot be hot-plugged"));
	free(err);
	free(p1);
	free(p2);
}

static void test_allocation(void)
{
	if (!need() || !t.a)
		return;
	const uint64_t size = 64 << 20;
	uint64_t allocated[3];
	for (int a = DISK_ALLOC_SPARSE; a <= DISK_ALLOC_FULL; a++) {
		char *name = g_strdup_printf("alloc-%s.raw", disk_alloc_names[a]);
		char *path = run_path(t.h.run, "disks", name);
		char *serial = g_strdup_printf("ferry-%s", disk_alloc_names[a]);
		struct disk_config d = { .format = DISK_FORMAT_RAW,
					 .allocation = a,
					 .size = size,
					 .bus = DISK_BUS_VIRTIO,
					 .serial = serial,
					 .path = path };
		char *err = NULL;
		if (vm_image_create(&d, path, &err) < 0)
			g_error("%s", err);
		struct stat st;
		g_assert_cmpint(stat(path, &st), ==, 0);
		g_assert_cmpuint((uint64_t)st.st_size, ==, size);
		allocated[a] = (uint64_t)st.st_blocks * 512;
		g_test_message("allocation %s: %" G_GUINT64_FORMAT " bytes on the host",
			       disk_alloc_names[a], allocated[a]);
		/* every mode boots into the guest the same way */
		attach_find_detach(t.a, &d);
		g_free(name);
		g_free(serial);
		free(path);
	}
	g_assert_cmpuint(allocated[DISK_ALLOC_SPARSE], <, size / 16);
	g_assert_cmpuint(allocated[DISK_ALLOC_FALLOC], >=, size);
	g_assert_cmpuint(allocated[DISK_ALLOC_FULL], >=, size);

	/* qcow2 full preallocation allocates the data clusters too */
	char *q = run_path(t.h.run, "disks", "full.qcow2");
	struct disk_config d = { .format = DISK_FORMAT_QCOW2,
				 .allocation = DISK_ALLOC_FULL,
				 .size = size };
	char *err = NULL;
	g_assert_cmpint(vm_image_create(&d, q, &err), ==, 0);
	struct stat st;
	g_assert_cmpint(stat(q, &st), ==, 0);
	g_assert_cmpuint((uint64_t)st.st_blocks * 512, >=, size);
	free(q);
}

static void test_9p(void)
{
	if (!need() || !t.a)
		return;
	char *out = sh(t.a, "mkdir -p /mnt/9p && mount -t 9p -o trans=virtio,version=9p2000.L,ro "
			    "ferryshare /mnt/9p && cat /mnt/9p/hello.txt; umount /mnt/9p");
	g_assert_cmpstr(out, ==, "hello through 9p\n");
	free(out);
}

/* An extra virtio-serial channel carries bytes; a forwarded host port reaches the guest. */
static void test_channel_hostfwd(void)
{
	if (!need() || !t.a)
		return;
	char *err = NULL, *path = NULL;
	if (vm_channel_path(t.a, "org.ferry.test", &path, &err) < 0)
		g_error("%s", err);
	struct stat st;
	g_assert_cmpint(stat(path, &st), ==, 0);
	g_assert_true(S_ISSOCK(st.st_mode));
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	g_strlcpy(sun.sun_path, path, sizeof(sun.sun_path));
	g_assert_cmpint(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), ==, 0);
	g_assert_cmpint(write(fd, "through the channel", 19), ==, 19);
	/* the host keeps its end open until the guest has read everything (GUEST.md) */
	char *out =
	    sh(t.a, "i=0; while [ ! -e /dev/virtio-ports/org.ferry.test ] && [ $i -lt 50 ]; "
		    "do usleep 100000; i=$((i+1)); done; "
		    "head -c 19 /dev/virtio-ports/org.ferry.test");
	g_assert_cmpstr(out, ==, "through the channel");
	free(out);
	close(fd);
	free(path);
	g_assert_cmpint(vm_channel_path(t.a, "org.ferry.none", &path, &err), ==, -1);
	free(err);
	err = NULL;

	/* a free loopback port, then forward it to the guest's 8090 */
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t slen = sizeof(sin);
	g_assert_cmpint(bind(l, (struct sockaddr *)&sin, sizeof(sin)), ==, 0);
	g_assert_cmpint(getsockname(l, (struct sockaddr *)&sin, &slen), ==, 0);
	close(l);
	int port = ntohs(sin.sin_port);
	if (vm_hostfwd_add(t.a, port, 8090, &err) < 0)
		g_error("%s", err);
	free(sh(t.a, "nc -l -p 8090 </dev/null >/tmp/got 2>&1 & echo started"));
	bool got = false;
	for (int i = 0; i < 100 && !got; i++) {
		int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (connect(c, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
		    write(c, "through hostfwd\n", 16) == 16) {
			shutdown(c, SHUT_WR);
			char buf[16];
			/* wait for the guest side to close */
			while (read(c, buf, sizeof(buf)) > 0)
				;
			out = sh(t.a, "cat /tmp/got");
			got = STREQ(out, "through hostfwd\n");
			free(out);
		}
		close(c);
		if (!got)
			g_usleep(100 * 1000);
	}
	g_assert_true(got);
	/* a port already forwarded is refused with QEMU's reason */
	g_assert_cmpint(vm_hostfwd_add(t.a, port, 8091, &err), ==, -1);
	g_test_message("second forward: %s", err);
	free(err);
}

/* Set attribute attr of the elements an XPath selects, in an XML text; returns the new text. */
static char *xml_set(const char *xml, const char *xpath, const char *attr, const char *value)
{
	xmlDocPtr doc = xmlReadMemory(xml, (int)strlen(xml), "d.xml", NULL, XML_PARSE_NONET);
	xmlXPathContextPtr ctx = xmlXPathNewContext(doc);
	xmlXPathObjectPtr o = xmlXPathEvalExpression(BAD_CAST xpath, ctx);
	g_assert_true(o && o->nodesetval && o->nodesetval->nodeNr > 0);
	for (int i = 0; i < o->nodesetval->nodeNr; i++)
		xmlSetProp(o->nodesetval->nodeTab[i], BAD_CAST attr, BAD_CAST value);
	xmlChar *buf = NULL;
	int len = 0;
	xmlDocDumpMemory(doc, &buf, &len);
	char *r = g_strndup((const char *)buf, (gsize)len);
	xmlFree(buf);
	xmlXPathFreeObject(o);
	xmlXPathFreeContext(ctx);
	xmlFreeDoc(doc);
	return r;
}

/* What vm_*_validate refuses, libvirt/QEMU refuse too: send it past validation and see. */
static void expect_create_refused(const char *xml, const char *what)
{
	virDomainPtr d = virDomainCreateXML(t.h.conn, xml, 0);
	if (d) {
		virDomainDestroy(d);
		virDomainFree(d);
		g_error("libvirt started a domain with %s", what);
	}
	g_test_message("%s: libvirt says: %s", what, virGetLastErrorMessage());
}

static void test_libvirt_agrees(void)
{
	if (!need() || !t.a)
		return;
	char *path = run_path(t.h.run, "disks", "refused.raw");
	struct disk_config d = { .format = DISK_FORMAT_RAW,
				 .size = 8 << 20,
				 .serial = "ferry-no",
				 .path = path,
				 .cache = DISK_CACHE_WRITEBACK,
				 .io = DISK_IO_NATIVE };
	char *err = NULL;
	g_assert_cmpint(vm_image_create(&d, path, &err), ==, 0);
	char *why = NULL;
	g_assert_cmpint(vm_disk_validate(&d, VM_MACHINE_Q35, true, &why), ==, -1);
	free(why);
	/* vm_disk_xml builds without validating: hand it to libvirt directly */
	char *xml = vm_disk_xml(&d, "vdz", &err);
	g_assert_cmpint(virDomainAttachDeviceFlags(vm_domain(t.a), xml, VIR_DOMAIN_AFFECT_LIVE), ==,
			-1);
	g_test_message("writeback + native: libvirt says: %s", virGetLastErrorMessage());
	free(xml);
	d.cache = DISK_CACHE_NONE;
	d.bus = DISK_BUS_SATA;
	xml = vm_disk_xml(&d, "sdz", &err);
	g_assert_cmpint(virDomainAttachDeviceFlags(vm_domain(t.a), xml, VIR_DOMAIN_AFFECT_LIVE), ==,
			-1);
	g_test_message("sata hot-plug: libvirt says: %s", virGetLastErrorMessage());
	free(xml);
	/* the guest has not seen any of them */
	g_assert_cmpint(vm_find_disk(t.a, "ferry-no", NULL, &err), ==, 0);

	/* boot-time refusals: valid XML, then the one attribute validation would refuse */
	struct vm_config c;
	e2e_host_vm_config(&t.h, &c);
	c.nic = (struct nic_config){ NIC_MODEL_VIRTIO, 4, NIC_BACKEND_ETHERNET, NULL };
	xml = vm_domain_xml(&c, "ferry-refused-queues", false, NULL, &err);
	char *bad = xml_set(xml, "/domain/devices/interface", "type", "user");
	expect_create_refused(bad, "queues on user networking");
	g_free(bad);
	free(xml);

	e2e_host_vm_config(&t.h, &c);
	struct disk_config ide = { .format = DISK_FORMAT_RAW, .bus = DISK_BUS_IDE, .path = path };
	c.disks = &ide;
	c.n_disks = 1;
	xml = vm_domain_xml(&c, "ferry-refused-ide", false, NULL, &err);
	bad = xml_set(xml, "/domain/os/type", "machine", "q35");
	expect_create_refused(bad, "ide on q35");
	g_free(bad);
	free(xml);

	ide.bus = DISK_BUS_SATA;
	xml = vm_domain_xml(&c, "ferry-refused-ro-sata", false, NULL, &err);
	xmlDocPtr doc = xmlReadMemory(xml, (int)strlen(xml), "d.xml", NULL, XML_PARSE_NONET);
	xmlXPathContextPtr ctx = xmlXPathNewContext(doc);
	xmlXPathObjectPtr o = xmlXPathEvalExpression(BAD_CAST "/domain/devices/disk", ctx);
	xmlNewChild(o->nodesetval->nodeTab[0], NULL, BAD_CAST "readonly", NULL);
	xmlChar *buf = NULL;
	int len = 0;
	xmlDocDumpMemory(doc, &buf, &len);
	expect_create_refused((const char *)buf, "read-only sata");
	xmlFree(buf);
	xmlXPathFreeObject(o);
	xmlXPathFreeContext(ctx);
	xmlFreeDoc(doc);
	free(xml);
	free(path);
}

/* Guest b: boot-time SATA and IDE disks, and a 4-queue NIC on a tap when the host allows. */
static void netns_delete(void *data)
{
	const char *argv[] = { "ip", "netns", "delete", data, NULL };
	char *err = NULL;
	proc_run(argv, NULL, &err);
	free(err);
	free(data);
}

static char *prepare_netns(void)
{
	if (access("/dev/net/tun", R_OK | W_OK) < 0)
		return g_strdup("no /dev/net/tun: the host cannot give a tap");
	char *name = g_strdup_printf("ferry-e2e-%ld", (long)getpid());
	const char *argv[] = { "ip", "netns", "add", name, NULL };
	char *err = NULL;
	if (proc_run(argv, NULL, &err) < 0) {
		char *why = g_strdup_printf("cannot create a network namespace: %s", err);
		free(err);
		g_free(name);
		return why;
	}
	t.netns = name;
	run_defer(t.h.run, netns_delete, xstrdup(name));
	return NULL;
}

static void test_ata_boot_disks(void)
{
	if (!need())
		return;
	char *ps = run_path(t.h.run, "disks", "sata.raw"),
	     *pi = run_path(t.h.run, "disks", "ide.qcow2");
	struct disk_config disks[] = {
		{ .format = DISK_FORMAT_RAW,
		  .allocation = DISK_ALLOC_FALLOC,
		  .size = 16 << 20,
		  .bus = DISK_BUS_SATA,
		  .cache = DISK_CACHE_WRITEBACK,
		  .serial = "ferry-sata",
		  .path = ps },
		{ .format = DISK_FORMAT_QCOW2,
		  .size = 24 << 20,
		  .bus = DISK_BUS_IDE,
		  .cache = DISK_CACHE_NONE,
		  .io = DISK_IO_NATIVE,
		  .serial = "ferry-ide",
		  .path = pi },
	};
	char *err = NULL;
	for (size_t i = 0; i < ELEMENTSOF(disks); i++)
		g_assert_cmpint(vm_image_create(&disks[i], disks[i].path, &err), ==, 0);
	struct vm_config c;
	e2e_host_vm_config(&t.h, &c);
	c.disks = disks;
	c.n_disks = ELEMENTSOF(disks);
	t.mq_skip = prepare_netns();
	if (!t.mq_skip) {
		c.nic = (struct nic_config){ NIC_MODEL_VIRTIO, 4, NIC_BACKEND_ETHERNET, NULL };
	}
	if (vm_boot(t.h.run, t.h.conn, &c, BOOT_TIMEOUT_MS, &t.b, &err) < 0)
		g_error("boot: %s", err);
	g_test_message("second guest: boot to agent ready %.0f ms", vm_boot_ms(t.b));
	for (size_t i = 0; i < ELEMENTSOF(disks); i++) {
		char *dev = NULL;
		int r = vm_find_disk(t.b, disks[i].serial, &dev, &err);
		if (r != 1)
			g_error("disk '%s' not found in the guest: %s", disks[i].serial,
				r < 0 ? err : "no such serial");
		g_test_message("boot-time %s disk '%s' is /dev/%s", disk_bus_names[disks[i].bus],
			       disks[i].serial, dev);
		char *cmd = g_strdup_printf("cat /sys/block/%s/size", dev);
		char *out = sh(t.b, cmd);
		g_assert_cmpuint(g_ascii_strtoull(out, NULL, 10) * 512, ==, disks[i].size);
		free(out);
		g_free(cmd);
		free(dev);
	}
	/* hot-plug on 'pc' goes through ACPI (acpiphp), not PCIe */
	char *pv = run_path(t.h.run, "disks", "pc-hotplug.raw");
	struct disk_config v = { .format = DISK_FORMAT_RAW,
				 .size = 8 << 20,
				 .bus = DISK_BUS_VIRTIO,
				 .serial = "ferry-pc-hv",
				 .path = pv };
	g_assert_cmpint(vm_image_create(&v, pv, &err), ==, 0);
	attach_find_detach(t.b, &v);
	free(pv);
	free(ps);
	free(pi);
}

static void test_multiqueue_tap(void)
{
	if (!need() || !t.b)
		return;
	if (t.mq_skip) {
		g_test_skip(t.mq_skip);
		return;
	}
	char *tap = NULL, *err = NULL;
	if (vm_nic_device(t.b, &tap, &err) < 0)
		g_error("%s", err);
	/* the tap's host end goes into our namespace: nothing on the host network sees it */
	const char *move[] = { "ip", "link", "set", tap, "netns", t.netns, NULL };
	if (proc_run(move, NULL, &err) < 0)
		g_error("%s", err);
	const char *addr[] = { "ip",  "-n", t.netns, "addr", "add", "192.168.250.1/24",
			       "dev", tap,  NULL };
	const char *up[] = { "ip", "-n", t.netns, "link", "set", tap, "up", NULL };
	if (proc_run(addr, NULL, &err) < 0 || proc_run(up, NULL, &err) < 0)
		g_error("%s", err);
	/* 4 queue pairs: a vector per rx/tx virtqueue + the config vector (the control queue has
	 * no callback, so no vector), and the MQ feature bit */
	char *out = sh(t.b, "d=$(readlink -f /sys/class/net/eth0/device); "
			    "f=$(cat $d/features); echo ${f:22:1}; ls $d/../msi_irqs | wc -l");
	g_test_message("guest eth0: MQ feature bit, MSI-X vectors: %s", out);
	char **l = g_strsplit(out, "\n", -1);
	g_assert_cmpstr(l[0], ==, "1");
	g_assert_cmpint(atoi(l[1]), ==, 2 * 4 + 1);
	g_strfreev(l);
	free(out);
	/* traffic over the tap, to the namespace only */
	out = sh(t.b, "ip link set eth0 up && ip addr add 192.168.250.2/24 dev eth0 && "
		      "ping -c 3 -W 5 192.168.250.1 >/dev/null && echo reachable");
	g_assert_cmpstr(out, ==, "reachable\n");
	free(out);
	free(tap);
}

static gpointer destroy_later(gpointer data)
{
	g_usleep(1500 * 1000);
	virDomainDestroy(vm_domain(data));
	return NULL;
}

static void test_destroy_mid_exec(void)
{
	if (!need() || !t.a)
		return;
	GThread *th = g_thread_new("destroy", destroy_later, t.a);
	const char *argv[] = { "/bin/sleep", "60", NULL };
	struct agent_exec_result r;
	char *err = NULL;
	g_assert_cmpint(agent_exec(vm_domain(t.a), argv, NULL, 0, EXEC_TIMEOUT_MS, &r, &err), ==,
			-1);
	g_thread_join(th);
	g_test_message("exec interrupted by destroy: %s", err);
	g_assert_nonnull(strstr(err, "'/bin/sleep' in the guest: "));
	free(err);

	/* nothing of the run is left: no domain named after it, no run directory */
	char *prefix = g_strdup_printf("ferry-%s-", run_id(t.h.run));
	char *dir = g_strdup(run_dir(t.h.run));
	/* closing the run first is fine: it destroys guest b, and vm_destroy then only frees */
	g_assert_cmpint(run_close(t.h.run, &err), ==, 0);
	t.h.run = NULL;
	vm_destroy(t.a);
	vm_destroy(t.b);
	t.a = t.b = NULL;
	virDomainPtr *doms = NULL;
	int n = virConnectListAllDomains(t.h.conn, &doms, 0);
	g_assert_cmpint(n, >=, 0);
	for (int i = 0; i < n; i++) {
		g_assert_false(g_str_has_prefix(virDomainGetName(doms[i]), prefix));
		virDomainFree(doms[i]);
	}
	free(doms);
	g_assert_false(g_file_test(dir, G_FILE_TEST_EXISTS));
	if (t.netns) {
		char *path = g_strdup_printf("/run/netns/%s", t.netns);
		g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
		g_free(path);
	}
	g_free(prefix);
	g_free(dir);
}

static void setup(void)
{
	e2e_host_open(&t.h, "vm", "qemu:///system, network namespaces", 0);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	setup();
	/* run in this order: the checks share two guests, and the last one ends the run */
	g_test_add_func("/vm-e2e/boot-exec", test_boot_exec);
	g_test_add_func("/vm-e2e/push-sha256", test_push_sha256);
	g_test_add_func("/vm-e2e/hotplug-virtio-scsi", test_hotplug);
	g_test_add_func("/vm-e2e/allocation", test_allocation);
	g_test_add_func("/vm-e2e/9p-share", test_9p);
	g_test_add_func("/vm-e2e/channel-hostfwd", test_channel_hostfwd);
	g_test_add_func("/vm-e2e/libvirt-agrees", test_libvirt_agrees);
	g_test_add_func("/vm-e2e/sata-ide-boot-disks", test_ata_boot_disks);
	g_test_add_func("/vm-e2e/multiqueue-tap", test_multiqueue_tap);
	g_test_add_func("/vm-e2e/destroy-mid-exec", test_destroy_mid_exec);
	int r = g_test_run();
	vm_destroy(t.a);
	vm_destroy(t.b);
	g_free(t.mq_skip);
	g_free(t.netns);
	e2e_host_close(&t.h);
	return r;
}
