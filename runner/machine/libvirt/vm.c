/* SPDX-License-Identifier: MIT */
/* Guests as libvirt domains (vm.h): connection, boot, the KVM probe, destroy. Disk images and
 * boot files are in vm-image.c, the devices of a running guest (disks, channels, NIC) in
 * vm-devices.c. */
#include "vm.h"

#include <errno.h>
#include <pwd.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <libvirt/virterror.h>

#include "agent.h"
#include "cleanup.h"
#include "fs.h"
#include "guest.h"
#include "hoststore.h"
#include "netns.h"
#include "plan-limits.h"
#include "proc.h"
#include "util.h"
#include "vm-impl.h"

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

virDomainPtr vm_domain(const struct vm *vm)
{
	return vm->dom;
}

const char *vm_name(const struct vm *vm)
{
	return vm->name;
}

bool vm_remote(const struct vm *vm)
{
	return vm->hs != NULL;
}

const char *vm_nic_guest_addr(const struct vm *vm)
{
	return vm->guest_addr;
}

const char *vm_nic_no_vhost_reason(const struct vm *vm)
{
	return vm->no_vhost ? "the host has no /dev/vhost-net: QEMU's own virtio-net back end"
			    : NULL;
}

const char *vm_accel_used(const struct vm *vm)
{
	return vm->kvm ? "kvm" : "tcg";
}

double vm_boot_ms(const struct vm *vm)
{
	return vm->boot_ms;
}

double vm_probe_ms(const struct vm *vm)
{
	return vm->probe_ms;
}

const char *vm_console_log(const struct vm *vm)
{
	return vm->console_log;
}

#define CONSOLE_TAIL_BYTES 8191

/* The last bytes of the console log: a local file, or a run volume on a remote host. */
static ssize_t console_bytes(const struct vm *vm, char *buf)
{
	if (vm->hs) {
		_cleanup_free_ char *t =
		    vm->console_vol ? hoststore_tail(vm->hs, vm->console_vol, CONSOLE_TAIL_BYTES)
				    : NULL;
		size_t n = t ? strlen(t) : 0;
		memcpy(buf, t ? t : "", n);
		return (ssize_t)n;
	}
	_cleanup_close_ int fd = vm->console_log ? open(vm->console_log, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0)
		return 0;
	off_t end = lseek(fd, 0, SEEK_END);
	off_t start = end > CONSOLE_TAIL_BYTES ? end - CONSOLE_TAIL_BYTES : 0;
	return pread(fd, buf, CONSOLE_TAIL_BYTES, start);
}

static char *console_tail_of(const struct vm *vm, unsigned max_lines)
{
	char buf[CONSOLE_TAIL_BYTES + 1];
	ssize_t n = console_bytes(vm, buf);
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
	return console_tail_of(vm, max_lines);
}

/* (vm-impl.h) */
char *vm_with_console(char *msg, const struct vm *vm)
{
	_cleanup_free_ char *tail = console_tail_of(vm, VM_ERROR_CONSOLE_LINES);
	char *s = *tail ? xasprintf("%s; serial console (last lines):\n%s", msg, tail)
			: xasprintf("%s; the serial console is empty", msg);
	free(msg);
	return s;
}

/* Wait for guest-ping to answer; the domain going away or a signal ends the wait early. */
static int wait_agent(const struct vm *vm, unsigned timeout_ms, char **err)
{
	virDomainPtr dom = vm->dom;
	const char *name = vm->name;
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
			*err =
			    vm_with_console(xasprintf("domain '%s' stopped before its guest agent "
						      "answered",
						      name),
					    vm);
			return -1;
		}
		if (now_ns() >= deadline) {
			/* what to check: libvirt knows whether anything in the guest opened the
			   agent's port; an empty console means nothing printed to ttyS0 */
			_cleanup_free_ char *tail = console_tail_of(vm, 1);
			bool quiet = !*tail;
			const char *hint =
			    e && strstr(e, "not connected")
				? "nothing in the guest opened the agent's virtio port "
				  "org.qemu.guest_agent.0: is qemu-guest-agent installed and "
				  "started "
				  "(a stock cloud image: a seed whose user-data installs and "
				  "starts it)?"
				: "the agent's port is open but the agent does not answer";
			*err = vm_with_console(
			    xasprintf("the guest agent of domain '%s' did not answer within %u ms "
				      "(last: %s); %s%s",
				      name, timeout_ms, e, hint,
				      quiet ? "; the serial console is empty: does the guest boot "
					      "and print to ttyS0 (console=ttyS0)?"
					    : ""),
			    vm);
			return -1;
		}
		run_sleep_ms(20);
	}
}

/* The built-in guest brings eth0 up as 10.0.2.15 (user networking); on the private network
 * every guest gets its own address, the gateway stays 10.0.2.2 (the bridge in the namespace).
 * The Debian guest's systemd-networkd configures eth0 as 10.0.2.15 too, and when it did so after
 * this command (a boot under TCG whose agent answered first) it dropped ferry's address as a
 * foreign one: it is stopped first, so that eth0 is ferry's alone on the private network. */
static int private_address(struct vm *vm, char **err)
{
	_cleanup_free_ char *cmd = xasprintf(
	    "if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then "
	    "systemctl stop systemd-networkd.socket systemd-networkd.service; fi; "
	    "ip link set eth0 up && ip addr flush dev eth0 && ip addr add %s/24 dev eth0 && "
	    "ip route replace default via " NETNS_HOST_ADDR,
	    vm->guest_addr);
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	_cleanup_free_ char *e = NULL;
	if (agent_run(vm->dom, argv, 30000, NULL, &e) < 0) {
		*err = xasprintf("cannot give the guest of domain '%s' its address %s: %s",
				 vm->name, vm->guest_addr, e);
		return -1;
	}
	return 0;
}

/* The run volumes a remote boot created (hoststore.h): handed to the vm, or deleted. */
struct boot_vols {
	char **labels;
	size_t n, cap;
	struct disk_config *disks; /* c's disks with their paths on the host */
	char **paths;
	size_t n_paths;
};

static void boot_vols_clear(struct boot_vols *b, struct hoststore *hs)
{
	for (size_t i = 0; i < b->n; i++) {
		if (hs)
			hoststore_delete(hs, b->labels[i]);
		free(b->labels[i]);
	}
	free(b->labels);
	for (size_t i = 0; i < b->n_paths; i++)
		free(b->paths[i]);
	free(b->paths);
	free(b->disks);
	*b = (struct boot_vols){ 0 };
}

static char *boot_vol(struct hoststore *hs, struct boot_vols *b, const char *label,
		      uint64_t capacity, bool prealloc, const char *local, char **err)
{
	struct hoststore_vol v = { .label = label, .capacity = capacity, .preallocate = prealloc };
	char *path = NULL;
	if (hoststore_run_volume(hs, &v, local, &path, err) < 0)
		return NULL;
	b->labels = xgrow(b->labels, &b->cap, b->n + 1, sizeof(*b->labels));
	b->labels[b->n++] = xstrdup(label);
	b->paths = xrealloc(b->paths, (b->n_paths + 1) * sizeof(*b->paths));
	b->paths[b->n_paths++] = path;
	return path;
}

/*
 * A remote host (hoststore.h): what the domain needs there becomes volumes of ferry's pool (the
 * built-in guest's kernel and initramfs, cached by content hash; the console log; boot-time
 * disks, uploaded), and cc names their paths on the host. What needs ferry's own filesystem or
 * network is refused with the reason.
 */
static int remote_config(struct hoststore *hs, const char *name, struct vm_config *cc,
			 struct boot_vols *b, char **log, char **err)
{
	if (cc->image || cc->seed) {
		*err =
		    xstrdup("a guest booted from an image (guest: image or debian) cannot run on "
			    "a remote host: only the built-in guest is uploaded there");
		return -1;
	}
	if (cc->share.host_dir) {
		*err = xstrdup("a shared folder needs the host's filesystem: not on a remote host");
		return -1;
	}
	if (cc->nic.backend == NIC_BACKEND_PRIVATE) {
		*err = xstrdup("the private network needs the host's network namespaces: not on a "
			       "remote host");
		return -1;
	}
	char *kpath = NULL, *ipath = NULL;
	if (cc->kernel) {
		if (hoststore_guest_file(hs, cc->kernel, "kernel", &kpath, err) < 0)
			return -1;
		b->paths = xrealloc(b->paths, (b->n_paths + 1) * sizeof(*b->paths));
		b->paths[b->n_paths++] = kpath;
		cc->kernel = kpath;
	}
	if (cc->initrd) {
		if (hoststore_guest_file(hs, cc->initrd, "initramfs", &ipath, err) < 0)
			return -1;
		b->paths = xrealloc(b->paths, (b->n_paths + 1) * sizeof(*b->paths));
		b->paths[b->n_paths++] = ipath;
		cc->initrd = ipath;
	}
	_cleanup_free_ char *clabel = xasprintf("%s.console.log", name);
	char *cpath = boot_vol(hs, b, clabel, 0, false, NULL, err);
	if (!cpath)
		return -1;
	free(*log);
	*log = xstrdup(cpath);
	b->disks = xcalloc(cc->n_disks + 1, sizeof(*b->disks));
	for (size_t i = 0; i < cc->n_disks; i++) {
		b->disks[i] = cc->disks[i];
		if (cc->disks[i].kind != DISK_KIND_IMAGE || !cc->disks[i].path)
			continue;
		_cleanup_free_ char *label = xasprintf("%s.disk-%zu", name, i);
		char *p =
		    boot_vol(hs, b, label, cc->disks[i].size,
			     cc->disks[i].allocation != DISK_ALLOC_SPARSE, cc->disks[i].path, err);
		if (!p)
			return -1;
		b->disks[i].path = p;
	}
	cc->disks = b->disks;
	return 0;
}

/* The files a custom image boots from (c->image): a qcow2 overlay over it in the run directory
 * (restored from a saved state: over the saved guest's root, vm_saved_disk), and copies of its
 * direct kernel boot's kernel and initrd, which cc then names. The paths are the caller's
 * (*overlay, *kcopy, *icopy) also on failure. */
static int image_files(struct run *run, const char *name, const struct vm_config *c,
		       struct vm_config *cc, char **overlay, char **kcopy, char **icopy, char **err)
{
	/* a custom guest's files come from the plan: regular files in the allowed tree */
	if (input_check("image", c->image, NULL, err) < 0 ||
	    (c->kernel && input_check("kernel", c->kernel, NULL, err) < 0) ||
	    (c->initrd && input_check("initrd", c->initrd, NULL, err) < 0))
		return -1;
	char abs[PATH_MAX];
	const char *saved = c->restore ? vm_saved_disk(c->restore) : NULL;
	if (saved) {
		/* ferry's own file, checked when the saved guest booted from the plan's image */
		snprintf(abs, sizeof(abs), "%s", saved);
	} else if (!realpath(c->image, abs)) {
		*err = xasprintf("cannot find image '%s': %s", c->image, strerror(errno));
		return -1;
	}
	_cleanup_free_ char *fmt = saved ? xstrdup("qcow2") : vm_image_format(run, abs, err);
	if (!fmt)
		return -1;
	_cleanup_free_ char *oname = xasprintf("%s.overlay.qcow2", name);
	*overlay = run_path(run, "overlays", oname);
	const char *argv[] = { "qemu-img", "create", "-q", "-f",     "qcow2", "-b",
			       abs,        "-F",     fmt,  *overlay, NULL };
	_cleanup_free_ char *e = NULL;
	if (proc_run(argv, NULL, &e) < 0) {
		*err = xasprintf("cannot create an overlay for image '%s': %s", c->image, e);
		return -1;
	}
	chmod(*overlay, 0644);
	cc->image = *overlay;
	if (!c->kernel)
		return 0;
	_cleanup_free_ char *kn = xasprintf("%s.kernel", name);
	*kcopy = run_path(run, "overlays", kn);
	if (vm_copy_boot_file("kernel", c->kernel, *kcopy, err) < 0)
		return -1;
	cc->kernel = *kcopy;
	if (c->initrd) {
		_cleanup_free_ char *in = xasprintf("%s.initrd", name);
		*icopy = run_path(run, "overlays", in);
		if (vm_copy_boot_file("initrd", c->initrd, *icopy, err) < 0)
			return -1;
		cc->initrd = *icopy;
	}
	return 0;
}

/* What vm knows of its guest from the configuration it booted (c as planned, cc as booted). */
static void vm_guest_facts(struct vm *vm, const struct vm_config *c, const struct vm_config *cc,
			   bool kvm)
{
	vm->no_vhost = cc->nic.backend == NIC_BACKEND_PRIVATE &&
		       cc->nic.model == NIC_MODEL_VIRTIO && !cc->nic.vhost;
	vm->user_nic = cc->nic.backend == NIC_BACKEND_USER;
	vm->machine = c->machine;
	vm->os = c->os;
	vm->kvm = kvm;
	vm->builtin = c->kernel != NULL;
	_cleanup_free_ char *mods = vm->builtin ? vm_guest_modules(cc) : NULL;
	vm->scsi_loaded = mods && strstr(mods, "virtio_scsi");
	vm->scsi_ctl = vm_needs_scsi(cc);
	/* hot-plugged targets follow the boot-time ones */
	if (c->image)
		vm->next[c->os == VM_OS_WINDOWS ? 1 : 0]++;
	if (c->seed)
		vm->next[c->machine == VM_MACHINE_Q35 ? 1 : 2]++;
	for (size_t i = 0; i < c->n_disks; i++)
		if (c->disks[i].kind == DISK_KIND_IMAGE)
			vm->next[c->disks[i].bus == DISK_BUS_VIRTIO ? 0
				 : c->disks[i].bus == DISK_BUS_IDE  ? 2
								    : 1]++;
}

/* The started domain until its guest answers (t0: when it was started): the tap moves into the
 * private network, a saved state is loaded, the agent answers, the guest gets its address.
 * On failure vm is destroyed. */
static int vm_come_up(struct vm *vm, const struct vm_config *c, struct netns *ns, uint64_t t0,
		      unsigned timeout_ms, char **err)
{
	/* QEMU holds the tap's descriptors now: its host end moves into the namespace */
	if (vm->tap && netns_tap_adopt(ns, vm->tap, err) < 0)
		goto fail;
	if ((c->restore && vm_incoming(vm, c->restore, timeout_ms, err) < 0) ||
	    wait_agent(vm, timeout_ms, err) < 0)
		goto fail;
	vm->boot_ms = (double)(now_ns() - t0) / 1e6;
	if (c->restore && vm_restore_refresh(vm, err) < 0)
		goto fail;
	if (vm->guest_addr && private_address(vm, err) < 0)
		goto fail;
	return 0;
fail:
	vm_destroy(vm);
	return -1;
}

/* A boot in the making: what boot_domain() prepared, the vm's once the domain started. */
struct boot {
	char *name, *log;
	char *overlay;          /* an image's root overlay (image_files), or NULL */
	char *tap, *guest_addr; /* the private network's (netns.h), or NULL */
	struct netns *ns;
	struct hoststore *hs; /* a remote host's pool, or NULL */
	struct boot_vols bv;  /* the volumes made there */
};

static void boot_clear(struct boot *b)
{
	free(b->name);
	free(b->log);
	free(b->overlay);
	free(b->tap);
	free(b->guest_addr);
}

/* Boot cc (c with the paths of this boot) as the transient domain b->name and wait for its
 * guest. On failure what b made is removed. */
static int start_domain(struct run *run, virConnectPtr conn, const struct vm_config *c,
			const struct vm_config *cc, bool kvm, struct boot *b, unsigned timeout_ms,
			struct vm **out, char **err)
{
	_cleanup_free_ char *xml = vm_domain_xml(cc, b->name, kvm, b->log, err);
	virDomainPtr dom = NULL;
	uint64_t t0 = now_ns();
	/* auto-destroy: a ferry killed by SIGKILL or an abort leaves no running domain */
	if (xml && !(dom = virDomainCreateXML(conn, xml, VIR_DOMAIN_START_AUTODESTROY)))
		*err = xasprintf("cannot start domain '%s': %s", b->name, virGetLastErrorMessage());
	if (!dom) {
		if (b->tap)
			netns_tap_remove(b->ns, b->tap);
		boot_vols_clear(&b->bv, b->hs);
		return -1;
	}
	vm_own_domain(run, conn, b->name);
	struct vm *vm = xcalloc(1, sizeof(*vm));
	/* before the boot volumes are cleared: on a remote host cc->disks is theirs */
	vm_guest_facts(vm, c, cc, kvm);
	vm->tap = TAKE_PTR(b->tap);
	vm->hs = b->hs;
	if (b->hs) {
		/* the first label is the console log's */
		vm->console_vol = b->bv.n ? xstrdup(b->bv.labels[0]) : NULL;
		vm->boot_vols = TAKE_PTR(b->bv.labels);
		vm->n_boot_vols = b->bv.n;
		b->bv.n = 0;
		boot_vols_clear(&b->bv, NULL);
	}
	vm->guest_addr = TAKE_PTR(b->guest_addr);
	vm->overlay = TAKE_PTR(b->overlay);
	virConnectRef(conn);
	vm->conn = conn;
	vm->dom = dom;
	vm->run = run;
	vm->name = TAKE_PTR(b->name);
	vm->console_log = TAKE_PTR(b->log);
	if (vm_come_up(vm, c, b->ns, t0, timeout_ms, err) < 0)
		return -1;
	*out = vm;
	return 0;
}

static int boot_domain(struct run *run, virConnectPtr conn, const struct vm_config *c, bool kvm,
		       unsigned timeout_ms, struct vm **out, char **err)
{
	_cleanup_(boot_clear) struct boot b = { 0 };
	b.name = c->name ? xstrdup(c->name) : run_domain_name(run);
	_cleanup_free_ char *logname = xasprintf("%s.console.log", b.name);
	b.log = run_path(run, "logs", logname);
	_cleanup_free_ char *kcopy = NULL, *icopy = NULL;
	struct vm_config cc = *c;

	if (c->image && image_files(run, b.name, c, &cc, &b.overlay, &kcopy, &icopy, err) < 0)
		return -1;
	cc.owner_run = run_id(run);
	cc.owner_pid = (long)getpid();
	b.hs = hoststore_find(conn);
	if (b.hs && remote_config(b.hs, b.name, &cc, &b.bv, &b.log, err) < 0) {
		boot_vols_clear(&b.bv, b.hs);
		return -1;
	}
	/* the private network: ferry's tap, still in the root namespace, down, no address */
	if (cc.nic.backend == NIC_BACKEND_PRIVATE) {
		b.ns = netns_of_run(run, err);
		if (!b.ns || netns_tap_create(b.ns, cc.nic.queues, &b.tap, &b.guest_addr, err) < 0)
			return -1;
		cc.nic.source = b.tap;
		cc.nic.vhost = cc.nic.model == NIC_MODEL_VIRTIO && vm_vhost_net_available();
	}
	return start_domain(run, conn, c, &cc, kvm, &b, timeout_ms, out, err);
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
	/* a remote host's /dev/kvm is not ferry's to open: its capabilities and a boot tell */
	int fd = hoststore_find(conn) ? INT_MAX : open("/dev/kvm", O_RDWR | O_CLOEXEC);
	_cleanup_free_ char *reason = NULL, *gerr = NULL;
	struct guest_files gf = { 0 };
	int usable = 0;
	if (fd < 0) {
		reason = xasprintf("cannot open /dev/kvm: %s", strerror(errno));
	} else {
		if (fd != INT_MAX)
			close(fd);
		_cleanup_free_ char *caps =
		    virConnectGetDomainCapabilities(conn, NULL, "x86_64", NULL, "kvm", 0);
		if (!caps) {
			reason = xasprintf("libvirt offers no KVM domains: %s",
					   virGetLastErrorMessage());
		} else if ((!c || !c->kernel || c->image) && guest_locate(NULL, &gf, &gerr) < 0) {
			reason = xasprintf("not probed: a boot probe needs the built-in guest: %s",
					   gerr);
		} else {
			/* /dev/kvm can open and still hang every guest: boot one to be sure */
			struct vm_config p;
			vm_config_init(&p);
			/* an image's own kernel needs its disk: probe with the built-in guest */
			bool own = c && c->kernel && !c->image;
			p.kernel = own ? c->kernel : gf.kernel;
			p.initrd = own ? c->initrd : gf.initramfs;
			p.cmdline = own ? c->cmdline : gf.cmdline;
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
	uint64_t probe_ns = 0;
	if (c->accel == VM_ACCEL_AUTO) {
		int r = kvm_probe_remembered(conn);
		if (r < 0) {
			uint64_t t = now_ns();
			r = vm_probe_kvm(run, conn, c, VM_KVM_PROBE_TIMEOUT_MS, &why);
			probe_ns = now_ns() - t;
			if (r < 0) {
				*err = TAKE_PTR(why);
				return -1;
			}
			vm_kvm_probe_remember(conn, r);
		}
		kvm = r == 1;
	}
	if (boot_domain(run, conn, c, kvm, timeout_ms, out, err) < 0)
		return -1;
	(*out)->probe_ms = (double)probe_ns / 1e6;
	return 0;
}

void vm_destroy(struct vm *vm)
{
	if (!vm)
		return;
	if (vm->dom) {
		if (virDomainIsActive(vm->dom) == 1)
			virDomainDestroy(vm->dom);
		vm_channel_reap(vm, true);
		virDomainFree(vm->dom);
	}
	run_disown(vm->run, vm->name);
	if (vm->tap) {
		/* nothing when run_close removed the whole private network already */
		struct netns *ns = netns_find(vm->run);
		if (ns)
			netns_tap_remove(ns, vm->tap);
		free(vm->tap);
	}
	free(vm->guest_addr);
	for (size_t i = 0; i < vm->n_boot_vols; i++) {
		/* nothing when run_close deleted the run's volumes already */
		struct hoststore *hs = hoststore_find(vm->conn);
		if (hs)
			hoststore_delete(hs, vm->boot_vols[i]);
		free(vm->boot_vols[i]);
	}
	free(vm->boot_vols);
	free(vm->console_vol);
	for (size_t i = 0; i < vm->n_att; i++) {
		struct hoststore *hs = vm->att[i].vol ? hoststore_find(vm->conn) : NULL;
		if (hs)
			hoststore_delete(hs, vm->att[i].vol);
		free(vm->att[i].vol);
		free(vm->att[i].serial);
		free(vm->att[i].xml);
		free(vm->att[i].target);
	}
	virConnectClose(vm->conn);
	free(vm->att);
	if (vm->overlay) {
		/* the domain is gone: nothing reads its root's overlay any more */
		unlink(vm->overlay);
		free(vm->overlay);
	}
	free(vm->name);
	free(vm->console_log);
	free(vm);
}
