/* SPDX-License-Identifier: MIT */
/*
 * The Debian guest (debian.h): debootstrap into a build directory, a few files and unit links
 * written into the tree, the initrd remade with only the modules a virtio root needs, then
 * `mke2fs -d` and `qemu-img convert` into the keyed cache directory.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "debian.h"
#include "fs.h"
#include "guest-build.h"
#include "hash.h"
#include "proc.h"

/* What goes into the image besides minbase: systemd as init (with udev), the agent, the kernel,
 * and the tools the methods' guest commands use (archives, wget and nc, ss, mkfs). */
static const char *const debian_packages[] = {
	"systemd-sysv",
	"udev",
	"qemu-guest-agent",
	"linux-image-amd64",
	"kmod",
	"e2fsprogs",
	"iproute2",
	"tar",
	"gzip",
	"xz-utils",
	"zstd",
	"lz4",
	"cpio",
	"unzip",
	"cifs-utils",
	"wget",
	"netcat-openbsd",
	"dosfstools",
	/* the ssh method's server and rsync; fio, the peer ferry's guest-timed block figures
	   are checked against (bench/fio-agree.sh) */
	"openssh-server",
	"rsync",
	"fio",
	/* vm2vm tool smb: the receiver's server (started per run, its units masked below) */
	"samba",
};

/* Files written into the root, after debootstrap: path, content. */
static const struct {
	const char *path, *text;
} debian_files[] = {
	{ "etc/fstab", "LABEL=" GUEST_DEBIAN_LABEL " / ext4 defaults 0 0\n" },
	{ "etc/hostname", "ferry-debian\n" },
	{ "etc/hosts", "127.0.0.1 localhost\n127.0.1.1 ferry-debian\n" },
	/* QEMU user networking, like the built-in guest: no DHCP wait */
	{ "etc/systemd/network/80-ferry.network",
	  "[Match]\nName=eth0\n\n[Network]\nAddress=10.0.2.15/24\nGateway=10.0.2.2\n"
	  "DNS=10.0.2.3\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n" },
	/* an initrd with what mounting a virtio (or SATA/SCSI) ext4 root needs instead of
	   MODULES=most (~3x larger, and every module in it is probed under TCG) */
	{ "etc/initramfs-tools/conf.d/ferry.conf", "MODULES=list\n" },
	{ "etc/initramfs-tools/modules",
	  "virtio_pci\nvirtio_blk\nvirtio_scsi\nsd_mod\nahci\ncrc32c_generic\next4\n" },
};

/* Units that only cost boot time in a throwaway test guest. */
static const char *const debian_masked[] = {
	"apt-daily.timer",
	"apt-daily-upgrade.timer",
	"dpkg-db-backup.timer",
	"e2scrub_all.timer",
	"e2scrub_reap.service",
	"fstrim.timer",
	"systemd-networkd-wait-online.service",
	/* the ssh method starts its own sshd with host keys made per run (the image keeps none) */
	"ssh.service",
	"ssh.socket",
	/* vm2vm tool smb starts its own smbd with a configuration of its own per run */
	"smbd.service",
	"nmbd.service",
	"samba-ad-dc.service",
};

#define DEBIAN_CMDLINE                                                                             \
	"root=LABEL=" GUEST_DEBIAN_LABEL " rw console=ttyS0 panic=-1 quiet net.ifnames=0 "         \
	"cryptomgr.notests"
#define DEBIAN_ROOT_SIZE "2G"

void guest_image_clear(struct guest_image *g)
{
	if (!g)
		return;
	free(g->dir);
	free(g->root);
	free(g->kernel);
	free(g->initrd);
	free(g->cmdline);
	free(g->kernel_version);
	memset(g, 0, sizeof(*g));
}

/* ---- the mirror, from the host's apt sources ---- */

static bool word_in(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; *p;) {
		p += strspn(p, " \t");
		size_t len = strcspn(p, " \t\n");
		if (len == n && strncmp(p, word, n) == 0)
			return true;
		p += len;
		if (*p == '\n')
			break;
	}
	return false;
}

static char *first_word(const char *s)
{
	s += strspn(s, " \t");
	return xstrndup(s, strcspn(s, " \t\n"));
}

/* One-line form: "deb [options] URI SUITE COMPONENT..." */
static char *mirror_from_list(const char *text, const char *suite)
{
	for (const char *line = text; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		const char *p = line + strspn(line, " \t");
		if (strncmp(p, "deb", 3) != 0 || (p[3] != ' ' && p[3] != '\t'))
			continue;
		p += 3;
		p += strspn(p, " \t");
		if (*p == '[') {
			const char *end = strchr(p, ']');
			const char *nl = strchr(p, '\n');
			if (!end || (nl && end > nl))
				continue;
			p = end + 1;
			p += strspn(p, " \t");
		}
		_cleanup_free_ char *uri = first_word(p);
		p += strlen(uri);
		_cleanup_free_ char *s = first_word(p);
		if (*uri && STREQ(s, suite))
			return TAKE_PTR(uri);
	}
	return NULL;
}

/* deb822 form: stanzas separated by blank lines with Types:, URIs:, Suites: fields. */
static char *mirror_from_sources(const char *text, const char *suite)
{
	const char *p = text;
	while (*p) {
		_cleanup_free_ char *types = NULL, *uris = NULL, *suites = NULL;
		bool enabled = true;
		while (*p && *p != '\n') {
			const char *eol = strchr(p, '\n');
			size_t len = eol ? (size_t)(eol - p) : strlen(p);
			_cleanup_free_ char *line = xstrndup(p, len);
			const char *colon = strchr(line, ':');
			if (line[0] != '#' && colon) {
				char *v = xstrdup(colon + 1);
				if (has_prefix(line, "Types:"))
					free(types), types = v;
				else if (has_prefix(line, "URIs:"))
					free(uris), uris = v;
				else if (has_prefix(line, "Suites:"))
					free(suites), suites = v;
				else {
					if (has_prefix(line, "Enabled:"))
						enabled = !word_in(v, "no");
					free(v);
				}
			}
			p += len + (eol != NULL);
		}
		while (*p == '\n')
			p++;
		if (enabled && types && uris && suites && word_in(types, "deb") &&
		    word_in(suites, suite)) {
			char *u = first_word(uris);
			if (*u)
				return u;
			free(u);
		}
	}
	return NULL;
}

char *guest_debian_mirror(const char *etc_apt, const char *suite, char **err)
{
	_cleanup_free_ char *main_list = xasprintf("%s/sources.list", etc_apt);
	_cleanup_free_ char *dname = xasprintf("%s/sources.list.d", etc_apt);
	_cleanup_free_ char *text = read_file(main_list, NULL);
	char *uri = text ? mirror_from_list(text, suite) : NULL;
	if (uri)
		return uri;
	struct dirent **names = NULL;
	int n = scandir(dname, &names, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		const char *nm = names[i]->d_name;
		if (!uri && (has_suffix(nm, ".list") || has_suffix(nm, ".sources"))) {
			_cleanup_free_ char *path = xasprintf("%s/%s", dname, nm);
			_cleanup_free_ char *t = read_file(path, NULL);
			if (t)
				uri = has_suffix(nm, ".list") ? mirror_from_list(t, suite)
							      : mirror_from_sources(t, suite);
		}
		free(names[i]);
	}
	free(names);
	if (!uri)
		guest_err(err, -ENOENT,
			  "no apt source for Debian '%s' in '%s' (the Debian guest is made from "
			  "the archive the host's apt uses)",
			  suite, etc_apt);
	return uri;
}

/* ---- the build ---- */

static void progress(const struct guest_build_opts *o, const char *fmt, ...) _printf_(2, 3);
static void progress(const struct guest_build_opts *o, const char *fmt, ...)
{
	if (!o->progress)
		return;
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *m = xvasprintf(fmt, ap);
	va_end(ap);
	o->progress(o->userdata, m);
}

/* The host's candidate versions of the packages: "name version" lines (part of the key). */
static int candidate_versions(char **out, char **err)
{
	size_t n = ELEMENTSOF(debian_packages);
	char **argv = xcalloc(n + 3, sizeof(*argv));
	argv[0] = (char *)"apt-cache";
	argv[1] = (char *)"policy";
	for (size_t i = 0; i < n; i++)
		argv[i + 2] = (char *)debian_packages[i];
	_cleanup_free_ char *text = NULL;
	int r = guest_run(argv, NULL, &text, err);
	free(argv);
	if (r < 0)
		return r;
	char *acc = NULL, *name = NULL;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		if (line[0] != ' ' && has_suffix(line, ":")) {
			free(name);
			name = xstrndup(line, strlen(line) - 1);
		} else if (name && strstr(line, "Candidate:")) {
			_cleanup_free_ char *v = first_word(strstr(line, "Candidate:") + 10);
			guest_append(&acc, "%s %s\n", name, v);
		}
	}
	free(name);
	*out = acc ? acc : xstrdup("");
	return 0;
}

static char *key_text(const char *mirror, const char *versions)
{
	char *t = xasprintf("ferry debian guest %d\nsuite %s\nmirror %s\ncmdline %s\nsize %s\n",
			    GUEST_DEBIAN_FORMAT_VERSION, GUEST_DEBIAN_SUITE, mirror, DEBIAN_CMDLINE,
			    DEBIAN_ROOT_SIZE);
	for (size_t i = 0; i < ELEMENTSOF(debian_packages); i++)
		guest_append(&t, "package %s\n", debian_packages[i]);
	for (size_t i = 0; i < ELEMENTSOF(debian_files); i++)
		guest_append(&t, "file %s\n%s\n", debian_files[i].path, debian_files[i].text);
	for (size_t i = 0; i < ELEMENTSOF(debian_masked); i++)
		guest_append(&t, "mask %s\n", debian_masked[i]);
	guest_append(&t, "versions\n%s", versions);
	return t;
}

static int chroot_run(const char *root, const char *const *args, char **out, char **err)
{
	size_t n = 0;
	while (args[n])
		n++;
	char **argv = xcalloc(n + 3, sizeof(*argv));
	argv[0] = (char *)"chroot";
	argv[1] = (char *)root;
	for (size_t i = 0; i < n; i++)
		argv[i + 2] = (char *)args[i];
	int r = guest_run(argv, NULL, out, err);
	free(argv);
	return r;
}

/* Copy a file of the tree out of it, world-readable (QEMU opens it as libvirt-qemu). */
static int copy_out(const char *from, const char *to, char **err)
{
	size_t len = 0;
	_cleanup_free_ char *data = read_file(from, &len);
	if (!data)
		return guest_err(err, -errno, "cannot read '%s': %s", from, strerror(errno));
	return guest_write_file(to, data, len, 0644, err);
}

/* The one kernel debootstrap installed: its version from /boot/vmlinuz-KVER. */
static int find_kernel(const char *root, char **kver, char **err)
{
	_cleanup_free_ char *boot = xasprintf("%s/boot", root);
	_cleanup_(closedirp) DIR *d = opendir(boot);
	struct dirent *de;
	if (!d)
		return guest_err(err, -errno, "cannot open '%s': %s", boot, strerror(errno));
	while ((de = readdir(d))) {
		if (has_prefix(de->d_name, "vmlinuz-")) {
			free(*kver);
			*kver = xstrdup(de->d_name + strlen("vmlinuz-"));
		}
	}
	if (!*kver)
		return guest_err(err, -ENOENT, "no kernel in '%s' after debootstrap", boot);
	return 0;
}

static int configure_root(const struct guest_build_opts *o, const char *root, const char *kver,
			  char **err)
{
	int r = 0;
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(debian_files); i++) {
		_cleanup_free_ char *p = xasprintf("%s/%s", root, debian_files[i].path);
		_cleanup_free_ char *dir = xstrdup(p);
		*strrchr(dir, '/') = '\0';
		r = guest_make_dir(dir, err);
		if (r >= 0)
			r = guest_write_file(p, debian_files[i].text, strlen(debian_files[i].text),
					     0644, err);
	}
	/* systemctl works on a tree without a running systemd: it only writes the links */
	if (r >= 0) {
		const char *en[] = { "systemctl", "enable", "--quiet", "systemd-networkd.service",
				     NULL };
		r = chroot_run(root, en, NULL, err);
	}
	if (r >= 0) {
		const char **mask = xcalloc(ELEMENTSOF(debian_masked) + 4, sizeof(*mask));
		mask[0] = "systemctl";
		mask[1] = "mask";
		mask[2] = "--quiet";
		for (size_t i = 0; i < ELEMENTSOF(debian_masked); i++)
			mask[i + 3] = debian_masked[i];
		r = chroot_run(root, mask, NULL, err);
		free(mask);
	}
	if (r >= 0) {
		progress(o, "making the initrd (update-initramfs, MODULES=list)");
		const char *ui[] = { "update-initramfs", "-c", "-k", kver, NULL };
		r = chroot_run(root, ui, NULL, err);
	}
	/* openssh-server's postinst made host keys: no key outlives a run, so none is baked in */
	if (r >= 0) {
		const char *keys[] = { "sh", "-c", "rm -f /etc/ssh/ssh_host_*", NULL };
		r = chroot_run(root, keys, NULL, err);
	}
	/* what debootstrap downloaded is kept in the cache's debs/, not in the image */
	if (r >= 0) {
		const char *clean[] = { "apt-get", "clean", NULL };
		r = chroot_run(root, clean, NULL, err);
	}
	return r;
}

/* debootstrap of the suite with the guest's packages into root (its time into m), the .debs
 * kept in debdir. */
static int debootstrap(const struct guest_build_opts *o, const char *root, const char *debdir,
		       const char *mirror, json_t *m, char **err)
{
	_cleanup_free_ char *include = NULL;
	for (size_t i = 0; i < ELEMENTSOF(debian_packages); i++)
		guest_append(&include, "%s%s", i ? "," : "--include=", debian_packages[i]);
	_cleanup_free_ char *cache_opt = xasprintf("--cache-dir=%s", debdir);
	char *const boot[] = { (char *)"debootstrap",
			       (char *)"--variant=minbase",
			       include,
			       cache_opt,
			       (char *)GUEST_DEBIAN_SUITE,
			       (char *)root,
			       (char *)mirror,
			       NULL };
	uint64_t t0 = now_ns();
	progress(o, "debootstrap %s from %s (about a minute)", GUEST_DEBIAN_SUITE, mirror);
	/* INITRD=No: the kernel's postinst makes no initrd (MODULES=most, the slowest step);
	   configure_root() makes the one the guest boots */
	static const char *const env[] = { "LC_ALL=C", "INITRD=No", NULL };
	const struct proc_opts po = { .env = env, .split_stderr = true };
	struct proc_result res;
	_cleanup_free_ char *spawn_err = NULL;
	int r = 0;
	if (proc_spawn((const char *const *)boot, &po, &res, &spawn_err) < 0) {
		r = guest_err(err, -ENOEXEC, "%s", spawn_err);
	} else {
		if (res.status != 0) {
			_cleanup_free_ char *line = proc_last_line(res.errout, strlen(res.errout));
			r = guest_err(err, -EIO, "debootstrap failed (exit %d): %s", res.status,
				      line);
		}
		proc_result_clear(&res);
	}
	if (r < 0) {
		_cleanup_free_ char *log = xasprintf("%s/debootstrap/debootstrap.log", root);
		return guest_err(err, r, "%s (see '%s'; debootstrap needs root)", *err, log);
	}
	json_object_set_new(m, "debootstrap_s", json_real((double)(now_ns() - t0) / 1e9));
	return 0;
}

/* The kernel and initrd of version kver out of root's /boot into dir. */
static int copy_kernel(const char *root, const char *kver, const char *dir, char **err)
{
	_cleanup_free_ char *k = xasprintf("%s/boot/vmlinuz-%s", root, kver);
	_cleanup_free_ char *i = xasprintf("%s/boot/initrd.img-%s", root, kver);
	_cleanup_free_ char *kd = xasprintf("%s/vmlinuz", dir);
	_cleanup_free_ char *id = xasprintf("%s/initrd.img", dir);
	int r = copy_out(k, kd, err);
	if (r >= 0)
		r = copy_out(i, id, err);
	return r;
}

/* The packages installed in root (name and version, from dpkg-query) and the kernel version,
 * into the manifest m. */
static int record_packages(const char *root, const char *kver, json_t *m, char **err)
{
	_cleanup_free_ char *pkgs = NULL;
	const char *q[] = { "dpkg-query", "-W", "-f", "${Package} ${Version}\\n", NULL };
	int r = chroot_run(root, q, &pkgs, err);
	if (r < 0)
		return r;
	json_t *pa = json_array();
	for (char *line = strtok(pkgs, "\n"); line; line = strtok(NULL, "\n")) {
		char *sp = strchr(line, ' ');
		if (!sp)
			continue;
		*sp = '\0';
		json_array_append_new(pa, json_pack("{s:s, s:s}", "name", line, "version", sp + 1));
	}
	json_object_set_new(m, "packages", pa);
	json_object_set_new(m, "kernel_version", json_string(kver));
	return 0;
}

/* The root image dir/root.qcow2 from the tree root (mke2fs -d, then qemu-img convert); the raw
 * image and the tree are removed either way. */
static int make_root_image(const struct guest_build_opts *o, const char *dir, const char *root,
			   char **err)
{
	progress(o, "making the root image (mke2fs -d, qemu-img convert)");
	_cleanup_free_ char *raw = xasprintf("%s/root.raw", dir);
	_cleanup_free_ char *qcow = xasprintf("%s/root.qcow2", dir);
	char *const mk[] = { (char *)"mke2fs",
			     (char *)"-q",
			     (char *)"-F",
			     (char *)"-t",
			     (char *)"ext4",
			     (char *)"-m",
			     (char *)"0",
			     (char *)"-L",
			     (char *)GUEST_DEBIAN_LABEL,
			     (char *)"-d",
			     (char *)root,
			     raw,
			     (char *)DEBIAN_ROOT_SIZE,
			     NULL };
	int r = guest_run(mk, NULL, NULL, err);
	if (r >= 0) {
		char *const cv[] = { (char *)"qemu-img",
				     (char *)"convert",
				     (char *)"-q",
				     (char *)"-f",
				     (char *)"raw",
				     (char *)"-O",
				     (char *)"qcow2",
				     raw,
				     qcow,
				     NULL };
		r = guest_run(cv, NULL, NULL, err);
	}
	unlink(raw);
	if (r >= 0 && chmod(qcow, 0644) < 0)
		r = guest_err(err, -errno, "cannot chmod '%s': %s", qcow, strerror(errno));
	(void)rm_tree(root, NULL);
	return r;
}

/* debootstrap, the configuration, the kernel files and the root image into dir. */
static int build_into(const struct guest_build_opts *o, const char *dir, const char *debdir,
		      const char *mirror, json_t *m, char **err)
{
	_cleanup_free_ char *root = xasprintf("%s/rootfs", dir);
	int r = debootstrap(o, root, debdir, mirror, m, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *kver = NULL;
	r = find_kernel(root, &kver, err);
	if (r >= 0)
		r = configure_root(o, root, kver, err);
	if (r >= 0)
		r = copy_kernel(root, kver, dir, err);
	if (r >= 0)
		r = record_packages(root, kver, m, err);
	if (r < 0)
		return r;
	return make_root_image(o, dir, root, err);
}

static int file_size_json(json_t *m, const char *dir, const char *name, const char *key, char **err)
{
	_cleanup_free_ char *p = xasprintf("%s/%s", dir, name);
	struct stat st;
	if (stat(p, &st) < 0)
		return guest_err(err, -errno, "cannot stat '%s': %s", p, strerror(errno));
	json_object_set_new(m, key,
			    json_pack("{s:s, s:I}", "file", name, "size", (json_int_t)st.st_size));
	return 0;
}

static bool output_intact(const char *dir)
{
	_cleanup_free_ char *mp = xasprintf("%s/manifest.json", dir);
	json_t *m = json_load_file(mp, 0, NULL);
	bool ok = m != NULL;
	const char *files[] = { "root", "kernel", "initrd" };
	for (size_t i = 0; ok && i < ELEMENTSOF(files); i++) {
		json_t *f = json_object_get(m, files[i]);
		const char *name = json_string_value(json_object_get(f, "file"));
		struct stat st;
		_cleanup_free_ char *p = name ? xasprintf("%s/%s", dir, name) : NULL;
		ok = p && stat(p, &st) == 0 &&
		     st.st_size == (off_t)json_integer_value(json_object_get(f, "size"));
	}
	json_decref(m);
	return ok;
}

int guest_debian_build(const struct guest_build_opts *opts, struct guest_image *out, bool *rebuilt,
		       char **err)
{
	_cleanup_free_ char *cache =
	    opts->cache_dir ? xstrdup(opts->cache_dir) : guest_default_cache_dir();
	_cleanup_free_ char *gdir = xasprintf("%s/guest-debian", cache);
	_cleanup_free_ char *debdir = xasprintf("%s/debs", gdir);
	int r;

	memset(out, 0, sizeof(*out));
	if (rebuilt)
		*rebuilt = false;
	r = guest_make_dir(cache, err);
	if (r >= 0)
		r = guest_make_dir(gdir, err);
	if (r >= 0)
		r = guest_make_dir(debdir, err);
	if (r < 0)
		return r;
	_cleanup_close_ int lock = guest_cache_lock(
	    gdir, opts, "waiting for another 'ferry guest build debian' on this cache", err);
	if (lock < 0)
		return lock;
	_cleanup_free_ char *mirror = guest_debian_mirror("/etc/apt", GUEST_DEBIAN_SUITE, err);
	if (!mirror)
		return -ENOENT;
	_cleanup_free_ char *versions = NULL;
	r = candidate_versions(&versions, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *text = key_text(mirror, versions);
	char key[65];
	sha256_buf_hex(text, strlen(text), key);
	key[32] = '\0';
	_cleanup_free_ char *dir = xasprintf("%s/%s", gdir, key);

	if (opts->force || !output_intact(dir)) {
		if (geteuid() != 0)
			return guest_err(err, -EPERM,
					 "building the Debian guest needs root (debootstrap and "
					 "chroot); run 'ferry guest build debian' as root");
		_cleanup_free_ char *tmp = NULL;
		r = guest_cache_build_dir(gdir, &tmp, err);
		if (r < 0)
			return r;
		uint64_t t0 = now_ns();
		_cleanup_(json_decrefp) json_t *m = json_pack(
		    "{s:i, s:s, s:s, s:s, s:s, s:s}", "format", GUEST_DEBIAN_FORMAT_VERSION, "key",
		    key, "suite", GUEST_DEBIAN_SUITE, "mirror", mirror, "cmdline", DEBIAN_CMDLINE,
		    "label", GUEST_DEBIAN_LABEL);
		r = build_into(opts, tmp, debdir, mirror, m, err);
		if (r >= 0)
			r = file_size_json(m, tmp, "root.qcow2", "root", err);
		if (r >= 0)
			r = file_size_json(m, tmp, "vmlinuz", "kernel", err);
		if (r >= 0)
			r = file_size_json(m, tmp, "initrd.img", "initrd", err);
		if (r >= 0) {
			json_object_set_new(m, "build_s", json_real((double)(now_ns() - t0) / 1e9));
			_cleanup_free_ char *js =
			    json_dumps(m, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
			_cleanup_free_ char *mp = xasprintf("%s/manifest.json", tmp);
			r = guest_write_file(mp, js, strlen(js), 0644, err);
		}
		if (r >= 0 && dir_replace(tmp, dir, err) < 0)
			r = -errno;
		if (r < 0) {
			(void)rm_tree(tmp, NULL);
			return r;
		}
		if (rebuilt)
			*rebuilt = true;
		guest_cache_prune(gdir, key);
	}
	r = guest_cache_point(gdir, key, err);
	if (r < 0)
		return r;
	return guest_debian_locate(cache, out, err);
}

static int load_manifest(const char *cache_dir, char **dirp, json_t **mp, char **err)
{
	return guest_cache_current(cache_dir, "guest-debian", "Debian guest",
				   "run 'ferry guest build debian' as root",
				   "run 'ferry guest build debian --force'", dirp, mp, err);
}

int guest_debian_locate(const char *cache_dir, struct guest_image *out, char **err)
{
	_cleanup_free_ char *dir = NULL;
	_cleanup_(json_decrefp) json_t *m = NULL;
	memset(out, 0, sizeof(*out));
	int r = load_manifest(cache_dir, &dir, &m, err);
	if (r < 0)
		return r;
	if (!output_intact(dir))
		return guest_err(err, -EBADMSG,
				 "the Debian guest in '%s' is incomplete or damaged (run 'ferry "
				 "guest build debian --force')",
				 dir);
	const char *cmdline = json_string_value(json_object_get(m, "cmdline"));
	const char *kver = json_string_value(json_object_get(m, "kernel_version"));
	if (!cmdline || !kver)
		return guest_err(err, -EBADMSG,
				 "'%s/manifest.json' lacks fields (run 'ferry guest build debian "
				 "--force')",
				 dir);
	out->root = xasprintf("%s/root.qcow2", dir);
	out->kernel = xasprintf("%s/vmlinuz", dir);
	out->initrd = xasprintf("%s/initrd.img", dir);
	out->cmdline = xstrdup(cmdline);
	out->kernel_version = xstrdup(kver);
	out->dir = TAKE_PTR(dir);
	return 0;
}

int guest_debian_manifest(const char *cache_dir, char **json, char **err)
{
	_cleanup_free_ char *dir = NULL;
	_cleanup_(json_decrefp) json_t *m = NULL;
	struct guest_image g;
	int r = guest_debian_locate(cache_dir, &g, err);
	if (r < 0)
		return r;
	guest_image_clear(&g);
	r = load_manifest(cache_dir, &dir, &m, err);
	if (r < 0)
		return r;
	json_object_set_new(m, "dir", json_string(dir));
	*json = json_dumps(m, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	return 0;
}
