/* SPDX-License-Identifier: MIT */
/*
 * ferry doctor: is this host ready to run plans? One line per check, with the fix for each
 * failure. Exit 0 when everything a TCG run needs is fine, EXIT_INFRA otherwise. --reap destroys
 * leftover ferry domains of runs whose process is gone and removes their run directories.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/stat.h>

#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/xpath.h>

#include "cli.h"
#include "commands.h"
#include "fs.h"
#include "guest.h"
#include "hoststore.h"
#include "netns.h"
#include "proc.h"
#include "run.h"
#include "util.h"
#include "vm.h"

/* Below this much free space a run cannot hold its images (bytes). */
#define DOCTOR_MIN_FREE (2ull << 30)

enum level { OK, WARN, FAIL, SKIP };

struct doctor {
	bool failed;
};

static void line(struct doctor *d, enum level l, const char *check, const char *fix,
		 const char *fmt, ...) _printf_(5, 6);

static void line(struct doctor *d, enum level l, const char *check, const char *fix,
		 const char *fmt, ...)
{
	static const char *const tag[] = { "ok  ", "warn", "FAIL", "skip" };
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *msg = xvasprintf(fmt, ap);
	va_end(ap);
	if (fix && l != OK && l != SKIP)
		printf("%s  %-13s %s; fix: %s\n", tag[l], check, msg, fix);
	else
		printf("%s  %-13s %s\n", tag[l], check, msg);
	if (l == FAIL)
		d->failed = true;
}

static char *xpath_string(const char *xml, const char *expr)
{
	xmlDocPtr doc = xmlReadMemory(xml, (int)strlen(xml), "caps.xml", NULL, XML_PARSE_NONET);
	if (!doc)
		return NULL;
	xmlXPathContextPtr ctx = xmlXPathNewContext(doc);
	xmlXPathObjectPtr o = xmlXPathEvalExpression(BAD_CAST expr, ctx);
	char *s = NULL;
	if (o && o->type == XPATH_STRING && o->stringval && *o->stringval)
		s = xstrdup((const char *)o->stringval);
	xmlXPathFreeObject(o);
	xmlXPathFreeContext(ctx);
	xmlFreeDoc(doc);
	return s;
}

/* Whether `qemu -X help` lists word (as a whole word in quotes or at a line start). */
static int qemu_lists(const char *qemu, const char *opt, const char *word, char **err)
{
	const char *argv[] = { qemu, opt, "help", NULL };
	_cleanup_free_ char *out = NULL;
	if (proc_run(argv, &out, err) < 0)
		return -1;
	_cleanup_free_ char *quoted = xasprintf("\"%s\"", word);
	if (strstr(out, quoted))
		return 1;
	for (char *p = out; p; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		size_t n = strlen(word);
		if (strncmp(p, word, n) == 0 && (p[n] == '\n' || p[n] == ' ' || p[n] == '\0'))
			return 1;
	}
	return 0;
}

static void check_free(struct doctor *d, const char *what, const char *dir)
{
	/* the nearest existing ancestor holds what the directory will hold */
	_cleanup_free_ char *p = xstrdup(dir);
	struct statvfs s;
	while (statvfs(p, &s) < 0) {
		char *slash = strrchr(p, '/');
		if (!slash || slash == p) {
			strcpy(p, "/");
			if (statvfs(p, &s) < 0) {
				line(d, FAIL, what, NULL, "cannot stat '%s': %s", dir,
				     strerror(errno));
				return;
			}
			break;
		}
		*slash = '\0';
	}
	uint64_t avail = (uint64_t)s.f_bavail * s.f_frsize;
	if (avail < DOCTOR_MIN_FREE)
		line(d, FAIL, what,
		     "free space there or point FERRY_RUN_DIR/FERRY_CACHE_DIR elsewhere",
		     "%.1f GiB free in '%s', need at least %.0f GiB", (double)avail / (1 << 30),
		     dir, (double)DOCTOR_MIN_FREE / (1 << 30));
	else
		line(d, OK, what, NULL, "%.1f GiB free in '%s'", (double)avail / (1 << 30), dir);
}

/*
 * QEMU opens kernels and images as libvirt-qemu, and libvirt chowns the files but not their
 * directories: every existing directory on the way must be traversable by others.
 */
static void check_traversable(struct doctor *d, const char *what, const char *dir)
{
	_cleanup_free_ char *p = xstrdup(dir);
	size_t n = strlen(p);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		char saved = p[i];
		p[i] = '\0';
		struct stat st;
		if (stat(p, &st) == 0 && S_ISDIR(st.st_mode) && !(st.st_mode & S_IXOTH)) {
			_cleanup_free_ char *fix = xasprintf("chmod o+x '%s'", p);
			line(d, FAIL, what, fix,
			     "'%s' is mode %04o: QEMU (libvirt-qemu) cannot reach files under '%s'",
			     p, (unsigned)(st.st_mode & 07777), dir);
			return;
		}
		p[i] = saved;
	}
	line(d, OK, what, NULL, "'%s' is reachable by QEMU (libvirt-qemu)", dir);
}

static void check_leftovers(struct doctor *d, virConnectPtr conn, bool reap)
{
	virDomainPtr *doms = NULL;
	int n = virConnectListAllDomains(conn, &doms, 0);
	if (n < 0) {
		line(d, FAIL, "leftovers", NULL, "cannot list domains: %s",
		     virGetLastErrorMessage());
		return;
	}
	unsigned stale = 0, live = 0, reaped = 0;
	_cleanup_free_ char *names = xstrdup("");
	for (int i = 0; i < n; i++) {
		/* only a domain with ferry's marker is ferry's: a user's domain named like one is
		   not touched */
		const char *name = virDomainGetName(doms[i]);
		long pid;
		if (name && vm_domain_owner(doms[i], NULL, &pid)) {
			if (proc_alive(pid) && pid != (long)getpid()) {
				live++;
			} else if (reap) {
				if (virDomainIsActive(doms[i]) == 1)
					virDomainDestroy(doms[i]);
				if (virDomainIsPersistent(doms[i]) == 1)
					virDomainUndefine(doms[i]);
				reaped++;
			} else {
				stale++;
				char *s = xasprintf("%s%s%s", names, *names ? ", " : "", name);
				free(names);
				names = s;
			}
		}
		virDomainFree(doms[i]);
	}
	free(doms);

	/* run directories whose process is gone */
	unsigned stale_dirs = 0, reaped_dirs = 0;
	DIR *dir = opendir(run_base_dir());
	struct dirent *de;
	while (dir && (de = readdir(dir))) {
		_cleanup_free_ char *fake = xasprintf("ferry-%s-0", de->d_name);
		long pid;
		if (de->d_name[0] == '.' || !run_parse_domain_name(fake, NULL, &pid))
			continue;
		if (proc_alive(pid))
			continue;
		if (reap) {
			_cleanup_free_ char *path = xasprintf("%s/%s", run_base_dir(), de->d_name);
			if (rm_tree(path, NULL) == 0)
				reaped_dirs++;
		} else {
			stale_dirs++;
		}
	}
	if (dir)
		closedir(dir);

	if (reap)
		line(d, OK, "leftovers", NULL,
		     "reaped %u stale domain%s and %u run director%s; %u in use by running ferry",
		     reaped, reaped == 1 ? "" : "s", reaped_dirs, reaped_dirs == 1 ? "y" : "ies",
		     live);
	else if (stale || stale_dirs)
		line(d, WARN, "leftovers", "ferry doctor --reap",
		     "%u stale ferry domain%s%s%s%s and %u stale run director%s in '%s'", stale,
		     stale == 1 ? "" : "s", stale ? " (" : "", names, stale ? ")" : "", stale_dirs,
		     stale_dirs == 1 ? "y" : "ies", run_base_dir());
	else
		line(d, OK, "leftovers", NULL, "no stale ferry domains or run directories%s",
		     live ? " (some in use by running ferry)" : "");
}

/* The run volumes of dead runs in ferry's storage pool on a remote host (hoststore.h). */
static void check_volumes(struct doctor *d, virConnectPtr conn, bool reap)
{
	struct hoststore_leftovers o;
	_cleanup_free_ char *err = NULL;
	/* the current build's guest volumes are kept; those of older builds are pruned (when
	   there is no local build, nothing tells them apart: all are kept) */
	struct guest_files gf = { 0 };
	_cleanup_free_ char *gerr = NULL, *kname = NULL, *iname = NULL;
	if (guest_locate(NULL, &gf, &gerr) == 0) {
		kname = hoststore_guest_volume_name(gf.kernel, "kernel", &gerr);
		iname = hoststore_guest_volume_name(gf.initramfs, "initramfs", &gerr);
	}
	guest_files_clear(&gf);
	const char *keep[] = { kname, iname, NULL };
	int rc = hoststore_leftovers(conn, reap, kname && iname ? keep : NULL, &o, &err);
	if (rc < 0) {
		line(d, FAIL, "volumes", NULL, "%s", err);
		return;
	}
	if (reap)
		line(d, OK, "volumes", NULL,
		     "reaped %u stale run volume%s and %u old guest file%s in pool '" HOSTSTORE_POOL
		     "'; %u in use by running ferry; %u cached guest file%s kept",
		     o.reaped, o.reaped == 1 ? "" : "s", o.guest_reaped,
		     o.guest_reaped == 1 ? "" : "s", o.live, o.guest_files,
		     o.guest_files == 1 ? "" : "s");
	else if (o.stale || o.old_guest_files)
		line(d, WARN, "volumes", "ferry doctor --reap --connect URI",
		     "%u stale run volume%s and %u guest file%s of an older guest build in pool "
		     "'" HOSTSTORE_POOL "'",
		     o.stale, o.stale == 1 ? "" : "s", o.old_guest_files,
		     o.old_guest_files == 1 ? "" : "s");
	else
		line(d, OK, "volumes", NULL, "no stale run volumes in pool '" HOSTSTORE_POOL "'%s",
		     o.pool ? "" : " (no pool yet)");
}

/* The private networks (nic backend private, netns.h) of ferry runs whose process is gone. */
static void check_networks(struct doctor *d, bool reap)
{
	if (geteuid() != 0) {
		line(d, SKIP, "networks", NULL,
		     "not root: ferry's private networks (namespaces, taps) are root's");
		return;
	}
	struct netns_leftovers o;
	_cleanup_free_ char *err = NULL;
	if (netns_leftovers(reap, &o, &err) < 0) {
		line(d, SKIP, "networks", NULL, "%s", err);
		return;
	}
	if (reap)
		line(d, OK, "networks", NULL,
		     "reaped %u stale network namespace%s and %u tap%s; %u in use by running ferry",
		     o.reaped_ns, o.reaped_ns == 1 ? "" : "s", o.reaped_taps,
		     o.reaped_taps == 1 ? "" : "s", o.live);
	else if (o.stale_ns || o.stale_taps)
		line(d, WARN, "networks", "ferry doctor --reap",
		     "%u stale ferry network namespace%s and %u stale tap%s", o.stale_ns,
		     o.stale_ns == 1 ? "" : "s", o.stale_taps, o.stale_taps == 1 ? "" : "s");
	else
		line(d, OK, "networks", NULL, "no stale ferry network namespaces or taps%s",
		     o.live ? " (some in use by running ferry)" : "");
}

static int cmd_doctor(int argc, char **argv);
static const struct cli_option doctor_options[] = {
	{ .name = "reap",
	  .id = 'r',
	  .help = "destroy leftover ferry domains, stale run directories and the private networks "
		  "(namespaces, taps) of dead ferry runs" },
	{ .name = "connect",
	  .id = 'c',
	  .short_name = 'c',
	  .arg = "URI",
	  .value = CLI_WORD,
	  .help = "libvirt URI (default qemu:///system)" },
	CLI_END,
};
const struct cli_command cli_doctor = {
	.name = "doctor",
	.summary = "check that this host can run plans",
	.about = "Check that this host can run ferry plans: one line per check, with the fix.",
	.opts = (const struct cli_option *const[]){ doctor_options, NULL },
	.run = cmd_doctor,
};

/* QEMU as libvirt finds it, and what ferry uses of it: 9p, UEFI firmware, user networking. */
static void check_qemu(struct doctor *d, virConnectPtr conn)
{
	_cleanup_free_ char *caps =
	    virConnectGetDomainCapabilities(conn, NULL, "x86_64", NULL, "qemu", 0);
	_cleanup_free_ char *qemu =
	    caps ? xpath_string(caps, "string(/domainCapabilities/path)") : NULL;
	if (!qemu) {
		line(d, FAIL, "qemu", "apt-get install qemu-system-x86",
		     "libvirt finds no x86_64 QEMU: %s",
		     caps ? "no emulator path" : virGetLastErrorMessage());
		return;
	}
	line(d, OK, "qemu", NULL, "'%s'", qemu);
	_cleanup_free_ char *e = NULL;
	int r = qemu_lists(qemu, "-device", "virtio-9p-pci", &e);
	if (r == 1)
		line(d, OK, "9p", NULL, "QEMU has virtio-9p-pci (shares work)");
	else
		line(d, WARN, "9p", "install a QEMU built with virtfs (Debian's is)",
		     "%s: share cells will be skipped", r < 0 ? e : "QEMU has no virtio-9p-pci");
	free(e);
	e = NULL;
	/* firmware autoselection lists 'efi' only when OVMF and its descriptors exist */
	_cleanup_free_ char *q35 =
	    virConnectGetDomainCapabilities(conn, NULL, "x86_64", "q35", "qemu", 0);
	_cleanup_free_ char *efi =
	    q35 ? xpath_string(q35, "string(/domainCapabilities/os/enum[@name='firmware']"
				    "/value[.='efi'])")
		: NULL;
	if (efi)
		line(d, OK, "uefi", NULL, "OVMF found: firmware 'uefi' works");
	else
		line(d, WARN, "uefi", "apt-get install ovmf",
		     "no UEFI firmware: VMs with firmware 'uefi' will fail to start");
	r = qemu_lists(qemu, "-netdev", "user", &e);
	if (r == 1)
		line(d, OK, "user-net", NULL, "QEMU has user networking (slirp)");
	else
		line(d, FAIL, "user-net", "install a QEMU built with slirp (Debian's is)", "%s",
		     r < 0 ? e : "QEMU has no user networking");
}

/* The built guest; fills *g with its kernel, initrd and command line. Returns whether found. */
static bool check_guest(struct doctor *d, struct guest_files *gf, struct vm_config *g)
{
	_cleanup_free_ char *gerr = NULL;
	vm_config_init(g);
	if (guest_locate(NULL, gf, &gerr) < 0) {
		line(d, FAIL, "guest", "ferry guest build (scripts/setup.sh does it)", "%s", gerr);
		return false;
	}
	g->kernel = gf->kernel;
	g->initrd = gf->initramfs;
	g->cmdline = gf->cmdline;
	line(d, OK, "guest", NULL, "kernel %s%s in '%s'", gf->kernel_version,
	     gf->pvh ? " (PVH vmlinux)" : "", gf->dir);
	return true;
}

/* The run directory, ferry's pool on a remote host, and a KVM guest booted in a run of its own
 * (g: the built guest, or NULL). Returns -1, or the exit status when a signal interrupted the
 * probe (the run is closed then). */
static int check_kvm(struct doctor *d, virConnectPtr conn, bool remote, const struct vm_config *g)
{
	_cleanup_free_ char *rerr = NULL;
	struct run *run = run_open(&rerr);
	if (run && remote) {
		/* a remote host boots the probe from ferry's storage pool there (ferry(1) REMOTE
		 * HOSTS); freed by run_close */
		_cleanup_free_ char *herr = NULL;
		if (hoststore_open(conn, run, &herr))
			line(d, OK, "pool", NULL,
			     "storage pool '" HOSTSTORE_POOL "' ready at " HOSTSTORE_POOL_DIR
			     " on the remote host");
		else
			line(d, FAIL, "pool", "check the host's libvirt storage driver", "%s",
			     herr);
	}
	if (!run) {
		line(d, FAIL, "run-dir", "create it or set FERRY_RUN_DIR", "%s", rerr);
		return -1;
	}
	_cleanup_free_ char *why = NULL;
	int r = vm_probe_kvm(run, conn, g, VM_KVM_PROBE_TIMEOUT_MS, &why);
	if (r < 0 && run_interrupted()) {
		/* Ctrl-C during the probe: the run's domain and directory go first */
		int sig = run_interrupted();
		run_close(run, NULL);
		return sig == SIGINT ? EXIT_SIGINT : EXIT_SIGTERM;
	}
	vm_kvm_probe_remember(conn, r);
	if (r == 1)
		line(d, OK, "kvm", NULL, "a KVM guest booted: accel auto uses KVM");
	else
		line(d, WARN, "kvm",
		     "check /dev/kvm (group kvm, 0660) and nested virtualization; TCG works "
		     "without it",
		     "%s: accel auto uses TCG", why ? why : "unusable");
	_cleanup_free_ char *cerr = NULL;
	if (run_close(run, &cerr) < 0)
		line(d, FAIL, "run-dir", NULL, "%s", cerr);
	return -1;
}

static int cmd_doctor(int argc, char **argv)
{
	const char *uri = NULL;
	bool reap = false;
	int c;
	while ((c = cli_getopt(&cli_doctor, argc, argv)) != -1) {
		switch (c) {
		case 'r': reap = true; break;
		case 'c': uri = optarg; break;
		case 'h': return cli_usage_exit(&cli_doctor, stdout);
		default: return cli_usage_exit(&cli_doctor, stderr);
		}
	}
	if (optind < argc) {
		errorf("unexpected argument '%s'", argv[optind]);
		return EXIT_PLAN;
	}

	struct doctor d = { 0 };
	_cleanup_free_ char *err = NULL;
	const char *u = uri ? uri : "qemu:///system";
	virConnectPtr conn = vm_connect(u, &err);
	if (!conn) {
		line(&d, FAIL, "libvirtd", "start it: libvirtd -d (or run scripts/setup.sh)", "%s",
		     err);
		line(&d, SKIP, "qemu", NULL, "needs libvirtd");
		return EXIT_INFRA;
	}
	unsigned long ver = 0;
	virConnectGetLibVersion(conn, &ver);
	line(&d, OK, "libvirtd", NULL, "'%s' reachable (libvirt %lu.%lu.%lu)", u, ver / 1000000,
	     ver / 1000 % 1000, ver % 1000);
	check_qemu(&d, conn);

	struct guest_files gf = { 0 };
	struct vm_config g;
	bool have_guest = check_guest(&d, &gf, &g);
	bool remote = hoststore_uri_remote(u);
	int sig_exit = check_kvm(&d, conn, remote, have_guest ? &g : NULL);
	if (sig_exit >= 0) {
		virConnectClose(conn);
		guest_files_clear(&gf);
		errorf("interrupted");
		return sig_exit;
	}

	guest_files_clear(&gf);
	check_traversable(&d, "run-dir", run_base_dir());
	check_free(&d, "run-dir-free", run_base_dir());
	_cleanup_free_ char *cache = guest_default_cache_dir();
	check_traversable(&d, "cache-dir", cache);
	check_free(&d, "cache-free", cache);
	check_leftovers(&d, conn, reap);
	if (remote)
		check_volumes(&d, conn, reap);
	else
		check_networks(&d, reap);
	virConnectClose(conn);
	return d.failed ? EXIT_INFRA : EXIT_OK;
}
