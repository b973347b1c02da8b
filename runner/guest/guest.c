/* SPDX-License-Identifier: MIT */
/*
 * The built-in guest: download Debian packages, unpack the pieces with libarchive, write a
 * reproducible newc initramfs and (when the kernel allows) an uncompressed PVH vmlinux.
 * See guest.h for the layout and the contract with the VM code.
 */
#include "config.h"

#include "guest.h"

#include <archive.h>
#include <archive_entry.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <zlib.h>

#include "util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct archive *, archive_read_free)

/*
 * The kernel command line: serial console for logs, no reboot loop on panic, quiet boot (every
 * console line costs time under TCG). The crypto self-tests (cryptomgr, and the SP800-108 KDF
 * test that runs on its own as an initcall; the KDF functions stay available) took 1-1.5 s of a
 * TCG boot measured with initcall_debug, and rodata=off skips write-protecting the kernel image
 * and the page-table walk that checks it (~0.2 s of QEMU CPU per boot): none of that serves a
 * throwaway test guest.
 */
#define GUEST_CMDLINE                                                                              \
	"console=ttyS0 panic=-1 quiet cryptomgr.notests initcall_blacklist=crypto_kdf108_init "    \
	"rodata=off"

/*
 * Modules the guest loads before the agent starts, in this order (dependencies are put in front
 * as needed): the device drivers, because nothing would load them later (there is no udev) and
 * a disk given at boot must be visible once the agent answers.
 */
static const char *const guest_modules_boot[] = {
	"virtio_pci", "virtio_console", "virtio_blk", "virtio_net", "virtio_scsi",
	"e1000",      "sd_mod",         "sr_mod",     "ata_piix",   "ahci",
};

/*
 * Modules loaded in the background (nice 19) once the agent runs: the filesystems. Loading them
 * costs about a second of boot under TCG; the kernel also loads them on demand through
 * /sbin/modprobe (busybox, reading the modules.dep and modules.alias written here) when a mount
 * comes first. crc32c_generic is a soft dependency of ext4/jbd2 (metadata checksums) that
 * depends= does not list; nls_cp437 and nls_ascii are vfat's default codepage and iocharset in
 * Debian's config. virtiofs (share driver virtiofs) pulls in fuse, a module in Debian's 6.1
 * kernel (CONFIG_FUSE_FS=m, CONFIG_VIRTIO_FS=m).
 */
static const char *const guest_modules_later[] = {
	"crc32c_generic", "ext4",  "nls_cp437",    "nls_ascii", "nls_utf8",
	"vfat",           "isofs", "9pnet_virtio", "9p",        "virtiofs",
};

/* The fixture files installed into the initramfs: name in fixtures/guest, path, mode. */
static const struct {
	const char *name, *path;
	unsigned mode;
} guest_fixtures[] = {
	{ "group", "etc/group", 0644 },        { "init", "init", 0755 },
	{ "inittab", "etc/inittab", 0644 },    { "mdev.conf", "etc/mdev.conf", 0644 },
	{ "passwd", "etc/passwd", 0644 },      { "qga.sh", "etc/qga.sh", 0755 },
	{ "shutdown", "sbin/shutdown", 0755 }, { "vport-link.sh", "etc/vport-link.sh", 0755 },
};

/* ------------------------------------------------------------------------------------------ */
/* small helpers */

static int set_err(char **err, int code, const char *fmt, ...) _printf_(3, 4);
static int set_err(char **err, int code, const char *fmt, ...)
{
	va_list ap;
	if (err) {
		/* format first: callers may pass the previous *err as an argument */
		va_start(ap, fmt);
		char *m = xvasprintf(fmt, ap);
		va_end(ap);
		free(*err);
		*err = m;
	}
	return code;
}

static void sha256_hex(const void *data, size_t len, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL))
		abort();
	for (unsigned i = 0; i < mdlen; i++)
		sprintf(out + 2 * i, "%02x", md[i]);
	out[2 * mdlen] = '\0';
}

static int sha256_file(const char *path, char out[65], uint64_t *size, char **err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	unsigned char buf[1 << 16], md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	uint64_t total = 0;
	EVP_MD_CTX *ctx;
	ssize_t n;

	if (fd < 0)
		return set_err(err, -errno, "cannot open '%s': %s", path, strerror(errno));
	ctx = EVP_MD_CTX_new();
	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL))
		abort();
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		EVP_DigestUpdate(ctx, buf, (size_t)n);
		total += (uint64_t)n;
	}
	if (n < 0) {
		int e = errno;
		EVP_MD_CTX_free(ctx);
		return set_err(err, -e, "cannot read '%s': %s", path, strerror(e));
	}
	EVP_DigestFinal_ex(ctx, md, &mdlen);
	EVP_MD_CTX_free(ctx);
	for (unsigned i = 0; i < mdlen; i++)
		sprintf(out + 2 * i, "%02x", md[i]);
	out[2 * mdlen] = '\0';
	if (size)
		*size = total;
	return 0;
}

/* mkdir -p with mode 0755 on every level it creates (QEMU as libvirt-qemu must traverse them). */
static int mkdir_p(const char *path, char **err)
{
	_cleanup_free_ char *p = xstrdup(path);

	for (char *s = p + 1;; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			if (mkdir(p, 0755) < 0 && errno != EEXIST)
				return set_err(err, -errno, "cannot create directory '%s': %s", p,
					       strerror(errno));
			*s = c;
			if (!c)
				break;
		}
	}
	return 0;
}

/* Write a file atomically (temporary name + rename), mode 0644 whatever the umask. */
static int write_file_atomic(const char *path, const void *data, size_t len, char **err)
{
	_cleanup_free_ char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	const unsigned char *p = data;

	if (fd < 0)
		return set_err(err, -errno, "cannot create '%s': %s", tmp, strerror(errno));
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			close(fd);
			unlink(tmp);
			return set_err(err, -e, "cannot write '%s': %s", tmp, strerror(e));
		}
		p += n;
		len -= (size_t)n;
	}
	if (fchmod(fd, 0644) < 0 || close(fd) < 0 || rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return set_err(err, -e, "cannot write '%s': %s", path, strerror(e));
	}
	return 0;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* ------------------------------------------------------------------------------------------ */
/* child processes: argv only, never a shell */

/*
 * Run argv[0] (looked up in PATH) in directory cwd (NULL: ours) with stdin from /dev/null;
 * collect stdout into *out (may be NULL to discard) and stderr into *errout. Returns the exit
 * status (0-255), or a negative errno when it could not run or was killed.
 */
static int run_child(char *const argv[], const char *cwd, char **out, char **errout)
{
	int po[2], pe[2];
	pid_t pid;
	char *bufs[2] = { NULL, NULL };
	size_t lens[2] = { 0, 0 }, caps[2] = { 0, 0 };
	int status;

	if (pipe2(po, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(pe, O_CLOEXEC) < 0) {
		int e = errno;
		close(po[0]);
		close(po[1]);
		return -e;
	}
	pid = fork();
	if (pid < 0) {
		int e = errno;
		close(po[0]);
		close(po[1]);
		close(pe[0]);
		close(pe[1]);
		return -e;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0)
			_exit(127);
		if (cwd && chdir(cwd) < 0)
			_exit(127);
		/* apt prints progress bars and asks nothing when it sees no terminal; keep its
		 * messages in English so they read the same in our errors */
		setenv("LC_ALL", "C", 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);

	struct pollfd fds[2] = { { po[0], POLLIN, 0 }, { pe[0], POLLIN, 0 } };
	int open_fds = 2;
	while (open_fds > 0) {
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < 2; i++) {
			if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			bufs[i] = xgrow(bufs[i], &caps[i], lens[i] + 65536 + 1, 1);
			ssize_t n = read(fds[i].fd, bufs[i] + lens[i], caps[i] - lens[i] - 1);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				close(fds[i].fd);
				fds[i].fd = -1;
				open_fds--;
				continue;
			}
			lens[i] += (size_t)n;
		}
	}
	for (int i = 0; i < 2; i++) {
		if (fds[i].fd >= 0)
			close(fds[i].fd);
		bufs[i] = xgrow(bufs[i], &caps[i], lens[i] + 1, 1);
		bufs[i][lens[i]] = '\0';
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			free(bufs[0]);
			free(bufs[1]);
			return -errno;
		}
	}
	if (out)
		*out = bufs[0];
	else
		free(bufs[0]);
	if (errout)
		*errout = bufs[1];
	else
		free(bufs[1]);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return -EINTR;
}

/* The last non-empty line of a command's stderr, for error messages. */
static char *last_line(const char *text)
{
	const char *end = text + strlen(text);
	while (end > text && (end[-1] == '\n' || end[-1] == ' '))
		end--;
	const char *start = end;
	while (start > text && start[-1] != '\n')
		start--;
	return xstrndup(start, (size_t)(end - start));
}

static int run_checked(char *const argv[], const char *cwd, char **out, char **err)
{
	_cleanup_free_ char *errout = NULL;
	int r = run_child(argv, cwd, out, &errout);

	if (r == 0)
		return 0;
	if (out) {
		free(*out);
		*out = NULL;
	}
	if (r == 127 || r < 0)
		return set_err(err, -ENOEXEC, "cannot run '%s'%s%s", argv[0], errout ? ": " : "",
			       errout ? errout : "");
	_cleanup_free_ char *line = last_line(errout ? errout : "");
	return set_err(err, -EIO, "'%s %s' failed (exit %d): %s", argv[0], argv[1] ? argv[1] : "",
		       r, line);
}

/* ------------------------------------------------------------------------------------------ */
/* Debian packages: resolve with apt-cache, download with apt-get, read with libarchive */

struct pkg {
	char *name, *version, *arch, *sha256, *depends;
	char *deb; /* path of the downloaded file */
};

struct pkg_list {
	struct pkg *items;
	size_t n, cap;
};

static void pkg_list_clear(struct pkg_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		struct pkg *p = &l->items[i];
		free(p->name);
		free(p->version);
		free(p->arch);
		free(p->sha256);
		free(p->depends);
		free(p->deb);
	}
	free(l->items);
	memset(l, 0, sizeof(*l));
}

static struct pkg *pkg_find(struct pkg_list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (STREQ(l->items[i].name, name))
			return &l->items[i];
	return NULL;
}

/* Value of "Field: value" in one control stanza [s, e), malloc'ed, or NULL. */
static char *stanza_field(const char *s, const char *e, const char *field)
{
	size_t fl = strlen(field);
	for (const char *l = s; l < e;) {
		const char *nl = memchr(l, '\n', (size_t)(e - l));
		const char *le = nl ? nl : e;
		if ((size_t)(le - l) > fl + 1 && memcmp(l, field, fl) == 0 && l[fl] == ':') {
			const char *v = l + fl + 1;
			while (v < le && *v == ' ')
				v++;
			return xstrndup(v, (size_t)(le - v));
		}
		l = le + 1;
	}
	return NULL;
}

/* `apt-cache show --no-all-versions NAME...`: the candidate version of each package. */
static int apt_show(struct pkg_list *l, const char *const *names, size_t n, char **err)
{
	_cleanup_free_ char **argv = xcalloc(n + 4, sizeof(char *));
	_cleanup_free_ char *out = NULL;
	size_t k = 0;
	int r;

	argv[k++] = (char *)"apt-cache";
	argv[k++] = (char *)"show";
	argv[k++] = (char *)"--no-all-versions";
	for (size_t i = 0; i < n; i++)
		argv[k++] = (char *)names[i];
	argv[k] = NULL;
	r = run_checked(argv, NULL, &out, err);
	if (r < 0)
		return r;

	for (const char *s = out; *s;) {
		const char *e = strstr(s, "\n\n");
		e = e ? e + 1 : s + strlen(s);
		_cleanup_free_ char *name = stanza_field(s, e, "Package");
		if (name && !pkg_find(l, name)) {
			struct pkg p = { 0 };
			p.name = TAKE_PTR(name);
			p.version = stanza_field(s, e, "Version");
			p.arch = stanza_field(s, e, "Architecture");
			p.sha256 = stanza_field(s, e, "SHA256");
			p.depends = stanza_field(s, e, "Depends");
			if (!p.version || !p.arch || !p.sha256) {
				r = set_err(err, -EINVAL,
					    "apt-cache show gives no version, architecture or "
					    "SHA256 for '%s'",
					    p.name);
				l->items = xgrow(l->items, &l->cap, l->n + 1, sizeof(*l->items));
				l->items[l->n++] = p;
				return r;
			}
			l->items = xgrow(l->items, &l->cap, l->n + 1, sizeof(*l->items));
			l->items[l->n++] = p;
		}
		s = e;
		while (*s == '\n')
			s++;
	}
	for (size_t i = 0; i < n; i++)
		if (!pkg_find(l, names[i]))
			return set_err(err, -ENOENT,
				       "package '%s' is not known to apt (run 'apt-get update')",
				       names[i]);
	return 0;
}

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* A dependency graph as `apt-cache depends --recurse` prints it. */
struct dep_graph {
	char **from, **to; /* edge i: from[i] depends on to[i] (first alternative only) */
	size_t n, cap, cap2;
};

static void dep_graph_clear(struct dep_graph *g)
{
	strv_free(g->from, g->n);
	strv_free(g->to, g->n);
	memset(g, 0, sizeof(*g));
}

static void dep_graph_parse(struct dep_graph *g, char *text)
{
	_cleanup_free_ char *cur = NULL;
	bool in_alt = false;

	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		if (line[0] != ' ') {
			free(cur);
			cur = xstrdup(line);
			in_alt = false;
			continue;
		}
		char *d = strstr(line, "Depends: ");
		if (!d || !cur)
			continue;
		/* " |Depends: a" then "  Depends: b" means "a | b": keep a; "<x>" is virtual */
		bool alt = d > line && d[-1] == '|';
		if (!in_alt && d[9] != '<') {
			g->from = xgrow(g->from, &g->cap, g->n + 1, sizeof(char *));
			g->to = xgrow(g->to, &g->cap2, g->n + 1, sizeof(char *));
			g->from[g->n] = xstrdup(cur);
			g->to[g->n++] = xstrdup(d + 9);
		}
		in_alt = alt;
	}
}

/*
 * Resolve every package: the kernel the `linux-image-amd64` metapackage depends on (the generic
 * flavour, not -cloud-: that one lacks 9p and AHCI), busybox-static, qemu-guest-agent and the
 * closure of its library packages (dependencies named lib*: Debian's naming for shared
 * libraries). Two apt-cache runs: each costs about a second where apt keeps no binary cache.
 */
static int resolve_packages(struct pkg_list *l, char **kernel_pkg, char **err)
{
	char *argv[] = { (char *)"apt-cache",
			 (char *)"depends",
			 (char *)"--recurse",
			 (char *)"--no-recommends",
			 (char *)"--no-suggests",
			 (char *)"--no-conflicts",
			 (char *)"--no-breaks",
			 (char *)"--no-replaces",
			 (char *)"--no-enhances",
			 (char *)"--no-pre-depends",
			 (char *)"linux-image-amd64",
			 (char *)"qemu-guest-agent",
			 NULL };
	_cleanup_free_ char *out = NULL;
	struct dep_graph g = { 0 };
	char **names = NULL;
	size_t n = 0, cap = 0;
	int r = run_checked(argv, NULL, &out, err);

	if (r < 0)
		return r;
	dep_graph_parse(&g, out);
	for (size_t i = 0; i < g.n && n == 0; i++) {
		const char *t = g.to[i];
		if (STREQ(g.from[i], "linux-image-amd64") && has_prefix(t, "linux-image-") &&
		    t[12] >= '0' && t[12] <= '9' && has_suffix(t, "-amd64") &&
		    !strstr(t, "-cloud-")) {
			names = xgrow(names, &cap, n + 1, sizeof(char *));
			names[n++] = xstrdup(t);
		}
	}
	if (n == 0) {
		dep_graph_clear(&g);
		return set_err(err, -ENOENT,
			       "'linux-image-amd64' depends on no generic kernel package (run "
			       "'apt-get update')");
	}
	names = xgrow(names, &cap, n + 2, sizeof(char *));
	names[n++] = xstrdup("busybox-static");
	names[n++] = xstrdup("qemu-guest-agent");
	/* breadth first from qemu-guest-agent over lib* packages */
	for (size_t q = n - 1; q < n; q++) {
		for (size_t i = 0; i < g.n; i++) {
			if (!STREQ(g.from[i], names[q]) || !has_prefix(g.to[i], "lib"))
				continue;
			bool dup = false;
			for (size_t k = 0; k < n && !dup; k++)
				dup = STREQ(names[k], g.to[i]);
			if (!dup) {
				names = xgrow(names, &cap, n + 1, sizeof(char *));
				names[n++] = xstrdup(g.to[i]);
			}
		}
	}
	dep_graph_clear(&g);
	r = apt_show(l, (const char *const *)names, n, err);
	if (r >= 0)
		*kernel_pkg = xstrdup(names[0]);
	strv_free(names, n);
	return r;
}

/* The file name `apt-get download` gives a package: name_version_arch.deb, ':' as %3a. */
static char *deb_file_name(const struct pkg *p)
{
	size_t len = strlen(p->version);
	_cleanup_free_ char *v = xmalloc(3 * len + 1);
	char *o = v;
	for (const char *s = p->version; *s; s++) {
		if (*s == ':') {
			memcpy(o, "%3a", 3);
			o += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
	return xasprintf("%s_%s_%s.deb", p->name, v, p->arch);
}

/* Is the .deb there with the SHA-256 apt's index gives? */
static bool deb_ok(const struct pkg *p)
{
	char hex[65];
	if (access(p->deb, R_OK) < 0)
		return false;
	if (sha256_file(p->deb, hex, NULL, NULL) < 0)
		return false;
	return STREQ(hex, p->sha256);
}

static int download_packages(struct pkg_list *l, const char *debdir, guest_progress_fn progress,
			     void *ud, char **err)
{
	_cleanup_free_ char **argv = xcalloc(l->n + 6, sizeof(char *));
	_cleanup_free_ char **specs = xcalloc(l->n + 1, sizeof(char *));
	size_t k = 0, nspec = 0;
	int r;

	argv[k++] = (char *)"apt-get";
	argv[k++] = (char *)"download";
	argv[k++] = (char *)"-q";
	if (geteuid() == 0) {
		/* apt drops to user _apt for downloads, which cannot write into a root-owned cache
		 * directory; the files are checked against the index's SHA-256 afterwards anyway */
		argv[k++] = (char *)"-o";
		argv[k++] = (char *)"APT::Sandbox::User=root";
	}
	for (size_t i = 0; i < l->n; i++) {
		struct pkg *p = &l->items[i];
		_cleanup_free_ char *fn = deb_file_name(p);
		free(p->deb);
		p->deb = xasprintf("%s/%s", debdir, fn);
		if (deb_ok(p))
			continue;
		unlink(p->deb);
		specs[nspec] = xasprintf("%s=%s", p->name, p->version);
		argv[k++] = specs[nspec++];
	}
	argv[k] = NULL;
	if (nspec == 0)
		return 0;
	if (progress) {
		_cleanup_free_ char *m =
		    xasprintf("downloading %zu packages into %s", nspec, debdir);
		progress(ud, m);
	}
	r = run_checked(argv, debdir, NULL, err);
	for (size_t i = 0; i < nspec; i++)
		free(specs[i]);
	if (r < 0)
		return r;
	for (size_t i = 0; i < l->n; i++) {
		struct pkg *p = &l->items[i];
		chmod(p->deb, 0644);
		if (!deb_ok(p))
			return set_err(err, -EIO,
				       "downloaded '%s' is missing or does not match the SHA-256 "
				       "of apt's index",
				       p->deb);
	}
	return 0;
}

/* Reading the data.tar.* member of a .deb (an ar archive) as a nested libarchive stream. */
static la_ssize_t outer_read(struct archive *a, void *ud, const void **buf)
{
	struct archive *outer = ud;
	size_t size;
	la_int64_t off;
	int r = archive_read_data_block(outer, buf, &size, &off);

	if (r == ARCHIVE_EOF)
		return 0;
	if (r != ARCHIVE_OK) {
		archive_set_error(a, archive_errno(outer), "%s", archive_error_string(outer));
		return -1;
	}
	return (la_ssize_t)size;
}

/* Called for each member of data.tar: path without "./"; return 0 to go on, 1 to stop, < 0 to
 * fail (having set *err). */
typedef int (*deb_entry_fn)(void *ud, struct archive *a, struct archive_entry *e, const char *path,
			    char **err);

static int deb_walk(const char *deb, deb_entry_fn fn, void *ud, char **err)
{
	_cleanup_(archive_read_freep) struct archive *outer = archive_read_new();
	struct archive_entry *e;
	int r;

	archive_read_support_format_ar(outer);
	if (archive_read_open_filename(outer, deb, 1 << 16) != ARCHIVE_OK)
		return set_err(err, -EIO, "cannot open '%s': %s", deb, archive_error_string(outer));
	while ((r = archive_read_next_header(outer, &e)) == ARCHIVE_OK) {
		if (!has_prefix(archive_entry_pathname(e), "data.tar"))
			continue;
		_cleanup_(archive_read_freep) struct archive *in = archive_read_new();
		archive_read_support_filter_all(in);
		archive_read_support_format_tar(in);
		if (archive_read_open(in, outer, NULL, outer_read, NULL) != ARCHIVE_OK)
			return set_err(err, -EIO, "cannot read '%s': %s", deb,
				       archive_error_string(in));
		while ((r = archive_read_next_header(in, &e)) == ARCHIVE_OK) {
			const char *path = archive_entry_pathname(e);
			while (path[0] == '.' && path[1] == '/')
				path += 2;
			while (path[0] == '/')
				path++;
			r = fn(ud, in, e, path, err);
			if (r < 0)
				return r;
			if (r > 0)
				return 0;
		}
		if (r != ARCHIVE_EOF)
			return set_err(err, -EIO, "cannot read '%s': %s", deb,
				       archive_error_string(in));
		return 0;
	}
	return set_err(err, -EINVAL, "'%s' has no data.tar member", deb);
}

static int entry_read_all(struct archive *a, struct archive_entry *e, unsigned char **buf,
			  size_t *len, char **err)
{
	la_int64_t size = archive_entry_size(e);
	unsigned char *b;
	size_t got = 0;

	if (size < 0 || (uint64_t)size > SIZE_MAX - 1)
		return set_err(err, -EFBIG, "member '%s' has a bad size",
			       archive_entry_pathname(e));
	b = xmalloc((size_t)size + 1);
	while (got < (size_t)size) {
		la_ssize_t n = archive_read_data(a, b + got, (size_t)size - got);
		if (n <= 0) {
			free(b);
			return set_err(err, -EIO, "cannot read member '%s': %s",
				       archive_entry_pathname(e),
				       n < 0 ? archive_error_string(a) : "short");
		}
		got += (size_t)n;
	}
	b[got] = 0;
	*buf = b;
	*len = got;
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* the initramfs tree and its cpio writer */

static struct guest_entry *tree_slot(struct guest_tree *t, const char *path)
{
	for (size_t i = 0; i < t->n; i++) {
		if (STREQ(t->items[i].path, path)) {
			struct guest_entry *e = &t->items[i];
			free(e->data);
			free(e->target);
			e->data = NULL;
			e->target = NULL;
			e->size = 0;
			return e;
		}
	}
	t->items = xgrow(t->items, &t->cap, t->n + 1, sizeof(*t->items));
	struct guest_entry *e = &t->items[t->n++];
	memset(e, 0, sizeof(*e));
	e->path = xstrdup(path);
	return e;
}

static void tree_parents(struct guest_tree *t, const char *path)
{
	_cleanup_free_ char *p = xstrdup(path);
	char *slash = strrchr(p, '/');

	if (!slash)
		return;
	*slash = '\0';
	for (size_t i = 0; i < t->n; i++)
		if (STREQ(t->items[i].path, p))
			return;
	tree_parents(t, p);
	struct guest_entry *e = tree_slot(t, p);
	e->type = GUEST_DIR;
	e->mode = 0755;
}

void guest_tree_add_dir(struct guest_tree *t, const char *path, unsigned mode)
{
	tree_parents(t, path);
	struct guest_entry *e = tree_slot(t, path);
	e->type = GUEST_DIR;
	e->mode = mode;
}

void guest_tree_add_file(struct guest_tree *t, const char *path, unsigned mode, const void *data,
			 size_t size)
{
	tree_parents(t, path);
	struct guest_entry *e = tree_slot(t, path);
	e->type = GUEST_FILE;
	e->mode = mode;
	e->data = xmalloc(size);
	if (size)
		memcpy(e->data, data, size);
	e->size = size;
}

/* Take ownership of data (malloc'ed) instead of copying: modules and libraries are large. */
static void tree_add_file_take(struct guest_tree *t, const char *path, unsigned mode,
			       unsigned char *data, size_t size)
{
	tree_parents(t, path);
	struct guest_entry *e = tree_slot(t, path);
	e->type = GUEST_FILE;
	e->mode = mode;
	e->data = data;
	e->size = size;
}

void guest_tree_add_symlink(struct guest_tree *t, const char *path, const char *target)
{
	tree_parents(t, path);
	struct guest_entry *e = tree_slot(t, path);
	e->type = GUEST_SYMLINK;
	e->mode = 0777;
	e->target = xstrdup(target);
}

void guest_tree_add_chardev(struct guest_tree *t, const char *path, unsigned mode, unsigned major,
			    unsigned minor)
{
	tree_parents(t, path);
	struct guest_entry *e = tree_slot(t, path);
	e->type = GUEST_CHARDEV;
	e->mode = mode;
	e->rdev_major = major;
	e->rdev_minor = minor;
}

void guest_tree_clear(struct guest_tree *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->items[i].path);
		free(t->items[i].data);
		free(t->items[i].target);
	}
	free(t->items);
	memset(t, 0, sizeof(*t));
}

static int entry_cmp(const void *a, const void *b)
{
	const struct guest_entry *const *x = a, *const *y = b;
	return strcmp((*x)->path, (*y)->path);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct archive *, archive_write_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct archive_entry *, archive_entry_free)

int guest_cpio_write(const struct guest_tree *t, const char *path, int64_t mtime, char **err)
{
	_cleanup_(archive_write_freep) struct archive *a = archive_write_new();
	_cleanup_free_ const struct guest_entry **sorted = xcalloc(t->n, sizeof(*sorted));

	for (size_t i = 0; i < t->n; i++)
		sorted[i] = &t->items[i];
	qsort(sorted, t->n, sizeof(*sorted), entry_cmp);

	if (archive_write_set_format_cpio_newc(a) != ARCHIVE_OK ||
	    archive_write_add_filter_none(a) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
	    archive_write_open_filename(a, path) != ARCHIVE_OK)
		return set_err(err, -EIO, "cannot create '%s': %s", path, archive_error_string(a));

	for (size_t i = 0; i < t->n; i++) {
		const struct guest_entry *g = sorted[i];
		_cleanup_(archive_entry_freep) struct archive_entry *e = archive_entry_new();

		if (i > 0 && STREQ(sorted[i - 1]->path, g->path))
			return set_err(err, -EEXIST, "duplicate initramfs entry '%s'", g->path);
		archive_entry_set_pathname(e, g->path);
		archive_entry_set_uid(e, 0);
		archive_entry_set_gid(e, 0);
		archive_entry_set_mtime(e, (time_t)mtime, 0);
		/* fixed inode numbers in entry order: the writer would otherwise take what it
		 * is given, and no two runs would agree */
		archive_entry_set_ino64(e, (la_int64_t)i + 1);
		archive_entry_set_dev(e, 0);
		switch (g->type) {
		case GUEST_DIR:
			archive_entry_set_filetype(e, AE_IFDIR);
			archive_entry_set_nlink(e, 2);
			archive_entry_set_size(e, 0);
			break;
		case GUEST_FILE:
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_nlink(e, 1);
			archive_entry_set_size(e, (la_int64_t)g->size);
			break;
		case GUEST_SYMLINK:
			archive_entry_set_filetype(e, AE_IFLNK);
			archive_entry_set_nlink(e, 1);
			archive_entry_set_symlink(e, g->target);
			archive_entry_set_size(e, 0);
			break;
		case GUEST_CHARDEV:
			archive_entry_set_filetype(e, AE_IFCHR);
			archive_entry_set_nlink(e, 1);
			archive_entry_set_rdevmajor(e, g->rdev_major);
			archive_entry_set_rdevminor(e, g->rdev_minor);
			archive_entry_set_size(e, 0);
			break;
		}
		archive_entry_set_perm(e, g->mode & 07777);
		if (archive_write_header(a, e) != ARCHIVE_OK)
			return set_err(err, -EIO, "cannot write '%s' into '%s': %s", g->path, path,
				       archive_error_string(a));
		if (g->type == GUEST_FILE && g->size > 0) {
			la_ssize_t n = archive_write_data(a, g->data, g->size);
			if (n < 0 || (size_t)n != g->size)
				return set_err(err, -EIO, "cannot write '%s' into '%s': %s",
					       g->path, path, archive_error_string(a));
		}
	}
	if (archive_write_close(a) != ARCHIVE_OK)
		return set_err(err, -EIO, "cannot write '%s': %s", path, archive_error_string(a));
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* the kernel: XZ payload of the bzImage, ELF checks */

static const unsigned char xz_magic[6] = { 0xfd, '7', 'z', 'X', 'Z', 0x00 };

ssize_t guest_find_xz(const unsigned char *buf, size_t len)
{
	const unsigned char *p =
	    len >= sizeof(xz_magic) ? memmem(buf, len, xz_magic, sizeof(xz_magic)) : NULL;
	return p ? (ssize_t)(p - buf) : -1;
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * Length of the XZ stream that starts at buf (with the magic), or 0 when no valid footer is
 * found. libarchive's xz reader decodes concatenated streams and fails on anything after the
 * stream (a bzImage keeps the decompressed size and code there), so the stream must be cut at its
 * end. The end is the first 12-byte stream footer ("YZ" magic, 4-byte aligned) whose CRC32 over
 * Backward Size + Stream Flags holds, whose flags equal the header's and whose Backward Size
 * points at an Index indicator byte (0x00).
 */
static size_t xz_stream_length(const unsigned char *buf, size_t len)
{
	if (len < 24 || memcmp(buf, xz_magic, sizeof(xz_magic)) != 0)
		return 0;
	for (size_t p = 12; p + 12 <= len; p += 4) {
		const unsigned char *f = buf + p;
		if (f[10] != 'Y' || f[11] != 'Z' || f[8] != buf[6] || f[9] != buf[7])
			continue;
		if ((uint32_t)crc32(0, f + 4, 6) != le32(f))
			continue;
		uint64_t index_size = ((uint64_t)le32(f + 4) + 1) * 4;
		if (index_size > p - 12 || buf[p - index_size] != 0x00)
			continue;
		return p + 12;
	}
	return 0;
}

int guest_xz_decompress(const unsigned char *buf, size_t len, unsigned char **out, size_t *outlen,
			char **err)
{
	_cleanup_(archive_read_freep) struct archive *a = archive_read_new();
	struct archive_entry *e;
	size_t slen = xz_stream_length(buf, len);
	unsigned char *o = NULL;
	size_t n = 0, cap = 0;

	if (slen == 0)
		return set_err(err, -EINVAL, "no complete XZ stream found");
	archive_read_support_filter_xz(a);
	archive_read_support_format_raw(a);
	if (archive_read_open_memory(a, buf, slen) != ARCHIVE_OK ||
	    archive_read_next_header(a, &e) != ARCHIVE_OK)
		return set_err(err, -EIO, "cannot decompress XZ stream: %s",
			       archive_error_string(a));
	for (;;) {
		o = xgrow(o, &cap, n + (1 << 20), 1);
		la_ssize_t r = archive_read_data(a, o + n, cap - n);
		if (r == 0)
			break;
		if (r < 0) {
			free(o);
			return set_err(err, -EIO, "cannot decompress XZ stream: %s",
				       archive_error_string(a));
		}
		n += (size_t)r;
	}
	*out = o;
	*outlen = n;
	return 0;
}

/* The ELF header, when buf is a well-formed little-endian x86-64 ELF64 with in-range tables. */
static const Elf64_Ehdr *elf64(const unsigned char *buf, size_t len)
{
	const Elf64_Ehdr *h = (const void *)buf;

	if (len < sizeof(*h) || memcmp(buf, ELFMAG, SELFMAG) != 0 || buf[EI_CLASS] != ELFCLASS64 ||
	    buf[EI_DATA] != ELFDATA2LSB)
		return NULL;
	/* the buffers come from malloc (16-byte aligned): the casts below are aligned when the
	 * table offsets are */
	if (h->e_phnum &&
	    (h->e_phoff % 8 || h->e_phentsize != sizeof(Elf64_Phdr) || h->e_phoff > len ||
	     (uint64_t)h->e_phnum * sizeof(Elf64_Phdr) > len - h->e_phoff))
		return NULL;
	if (h->e_shnum &&
	    (h->e_shoff % 8 || h->e_shentsize != sizeof(Elf64_Shdr) || h->e_shoff > len ||
	     (uint64_t)h->e_shnum * sizeof(Elf64_Shdr) > len - h->e_shoff ||
	     h->e_shstrndx >= h->e_shnum))
		return NULL;
	return h;
}

static bool range_ok(uint64_t off, uint64_t size, size_t len)
{
	return off <= len && size <= len - off;
}

/* Does one SHT_NOTE/PT_NOTE area hold a "Xen" note of type XEN_ELFNOTE_PHYS32_ENTRY? */
static bool notes_have_pvh(const unsigned char *p, uint64_t size)
{
	uint64_t off = 0;
	while (off + 12 <= size) {
		uint32_t namesz = le32(p + off), descsz = le32(p + off + 4),
			 type = le32(p + off + 8);
		uint64_t name_off = off + 12;
		uint64_t desc_off = name_off + (((uint64_t)namesz + 3) & ~(uint64_t)3);
		uint64_t next = desc_off + (((uint64_t)descsz + 3) & ~(uint64_t)3);
		if (next > size)
			return false;
		/* XEN_ELFNOTE_PHYS32_ENTRY from xen/include/public/elfnote.h */
		if (type == 18 && namesz == 4 && memcmp(p + name_off, "Xen", 4) == 0)
			return true;
		off = next;
	}
	return false;
}

bool guest_elf_has_pvh(const unsigned char *buf, size_t len)
{
	const Elf64_Ehdr *h = elf64(buf, len);

	if (!h)
		return false;
	const Elf64_Phdr *ph = (const void *)(buf + h->e_phoff);
	for (unsigned i = 0; i < h->e_phnum; i++)
		if (ph[i].p_type == PT_NOTE && range_ok(ph[i].p_offset, ph[i].p_filesz, len) &&
		    notes_have_pvh(buf + ph[i].p_offset, ph[i].p_filesz))
			return true;
	return false;
}

/* The bytes of section `name` of an ELF64 (NULL when absent or out of range). */
static const unsigned char *elf_section(const unsigned char *buf, size_t len, const char *name,
					size_t *size, const Elf64_Shdr **shdr)
{
	const Elf64_Ehdr *h = elf64(buf, len);
	if (!h || !h->e_shnum)
		return NULL;
	const Elf64_Shdr *sh = (const void *)(buf + h->e_shoff);
	const Elf64_Shdr *strs = &sh[h->e_shstrndx];
	if (!range_ok(strs->sh_offset, strs->sh_size, len))
		return NULL;
	for (unsigned i = 0; i < h->e_shnum; i++) {
		if (sh[i].sh_name >= strs->sh_size)
			continue;
		const char *n = (const char *)buf + strs->sh_offset + sh[i].sh_name;
		size_t maxn = strs->sh_size - sh[i].sh_name;
		if (strnlen(n, maxn) == maxn || !STREQ(n, name))
			continue;
		if (sh[i].sh_type == SHT_NOBITS || !range_ok(sh[i].sh_offset, sh[i].sh_size, len))
			return NULL;
		*size = sh[i].sh_size;
		if (shdr)
			*shdr = &sh[i];
		return buf + sh[i].sh_offset;
	}
	return NULL;
}

/* DT_NEEDED names of a shared object or executable (through .dynamic and its string table). */
static int elf_needed(const unsigned char *buf, size_t len, char ***names, size_t *n, char **err)
{
	const Elf64_Ehdr *h = elf64(buf, len);
	size_t cap = 0;

	*names = NULL;
	*n = 0;
	if (!h)
		return set_err(err, -EINVAL, "not an x86-64 ELF file");
	const Elf64_Shdr *sh = (const void *)(buf + h->e_shoff);
	for (unsigned i = 0; i < h->e_shnum; i++) {
		if (sh[i].sh_type != SHT_DYNAMIC)
			continue;
		if (sh[i].sh_link >= h->e_shnum || sh[i].sh_offset % 8 ||
		    !range_ok(sh[i].sh_offset, sh[i].sh_size, len))
			return set_err(err, -EINVAL, "bad .dynamic section");
		const Elf64_Shdr *str = &sh[sh[i].sh_link];
		if (!range_ok(str->sh_offset, str->sh_size, len))
			return set_err(err, -EINVAL, "bad dynamic string table");
		const Elf64_Dyn *d = (const void *)(buf + sh[i].sh_offset);
		for (size_t k = 0; k < sh[i].sh_size / sizeof(*d) && d[k].d_tag != DT_NULL; k++) {
			if (d[k].d_tag != DT_NEEDED || d[k].d_un.d_val >= str->sh_size)
				continue;
			const char *s = (const char *)buf + str->sh_offset + d[k].d_un.d_val;
			size_t maxn = str->sh_size - d[k].d_un.d_val;
			*names = xgrow(*names, &cap, *n + 1, sizeof(char *));
			(*names)[(*n)++] = xstrndup(s, strnlen(s, maxn));
		}
	}
	return 0;
}

/* PT_INTERP of an executable ("/lib64/ld-linux-x86-64.so.2"), malloc'ed, or NULL. */
static char *elf_interp(const unsigned char *buf, size_t len)
{
	const Elf64_Ehdr *h = elf64(buf, len);
	if (!h)
		return NULL;
	const Elf64_Phdr *ph = (const void *)(buf + h->e_phoff);
	for (unsigned i = 0; i < h->e_phnum; i++)
		if (ph[i].p_type == PT_INTERP && range_ok(ph[i].p_offset, ph[i].p_filesz, len))
			return xstrndup(
			    (const char *)buf + ph[i].p_offset,
			    strnlen((const char *)buf + ph[i].p_offset, ph[i].p_filesz));
	return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* kernel modules */

/*
 * Dependencies come from each module's .modinfo "depends=" rather than from `busybox depmod` +
 * modules.dep: the .deb ships no modules.dep, and reading one ELF section while the package is
 * streamed needs neither an unpacked tree on disk nor running a program from the package.
 */
int guest_modinfo_parse(const unsigned char *ko, size_t len, struct guest_module *m, char **err)
{
	size_t size = 0, ndeps = 0, cap = 0, naliases = 0, acap = 0;
	const unsigned char *s = elf_section(ko, len, ".modinfo", &size, NULL);

	memset(m, 0, sizeof(*m));
	if (!s)
		return set_err(err, -EINVAL, "no .modinfo section");
	for (size_t off = 0; off < size;) {
		const char *str = (const char *)s + off;
		size_t l = strnlen(str, size - off);
		if (has_prefix(str, "name=") && !m->name) {
			m->name = xstrndup(str + 5, l - 5);
		} else if (has_prefix(str, "alias=") && l > 6) {
			m->aliases = xgrow(m->aliases, &acap, naliases + 2, sizeof(char *));
			m->aliases[naliases++] = xstrndup(str + 6, l - 6);
			m->aliases[naliases] = NULL;
		} else if (has_prefix(str, "depends=")) {
			const char *d = str + 8, *e = str + l;
			while (d < e) {
				size_t k = strcspn(d, ",");
				if ((size_t)(e - d) < k)
					k = (size_t)(e - d);
				if (k > 0) {
					m->deps = xgrow(m->deps, &cap, ndeps + 2, sizeof(char *));
					m->deps[ndeps++] = xstrndup(d, k);
				}
				d += k + 1;
			}
		}
		off += l + 1;
	}
	if (!m->deps)
		m->deps = xcalloc(1, sizeof(char *));
	m->deps[ndeps] = NULL;
	for (size_t i = 0; m->name && m->name[i]; i++)
		if (m->name[i] == '-')
			m->name[i] = '_';
	return 0;
}

void guest_module_clear(struct guest_module *m)
{
	free(m->name);
	free(m->path);
	for (size_t i = 0; m->deps && m->deps[i]; i++)
		free(m->deps[i]);
	free(m->deps);
	for (size_t i = 0; m->aliases && m->aliases[i]; i++)
		free(m->aliases[i]);
	free(m->aliases);
	memset(m, 0, sizeof(*m));
}

static ssize_t module_index(const struct guest_module *mods, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		const char *a = mods[i].name, *b = name;
		/* module names compare with '-' and '_' equal, like modprobe */
		while (*a && *b &&
		       (*a == *b || ((*a == '-' || *a == '_') && (*b == '-' || *b == '_'))))
			a++, b++;
		if (!*a && !*b)
			return (ssize_t)i;
	}
	return -1;
}

enum { UNSEEN, VISITING, DONE };

static int order_visit(const struct guest_module *mods, size_t nmods, size_t i, char *state,
		       size_t *order, size_t *norder, char **err)
{
	if (state[i] == DONE)
		return 0;
	if (state[i] == VISITING)
		return set_err(err, -ELOOP, "module dependency cycle through '%s'", mods[i].name);
	state[i] = VISITING;
	for (size_t d = 0; mods[i].deps && mods[i].deps[d]; d++) {
		ssize_t j = module_index(mods, nmods, mods[i].deps[d]);
		if (j < 0)
			return set_err(err, -ENOENT, "module '%s' needed by '%s' not found",
				       mods[i].deps[d], mods[i].name);
		int r = order_visit(mods, nmods, (size_t)j, state, order, norder, err);
		if (r < 0)
			return r;
	}
	state[i] = DONE;
	order[(*norder)++] = i;
	return 0;
}

int guest_module_order(const struct guest_module *mods, size_t nmods, const char *const *wanted,
		       size_t nwanted, size_t **order, size_t *norder, char **err)
{
	_cleanup_free_ char *state = xcalloc(nmods ? nmods : 1, 1);
	_cleanup_free_ size_t *o = xcalloc(nmods ? nmods : 1, sizeof(size_t));
	size_t n = 0;

	for (size_t w = 0; w < nwanted; w++) {
		ssize_t i = module_index(mods, nmods, wanted[w]);
		if (i < 0)
			return set_err(err, -ENOENT, "module '%s' not found", wanted[w]);
		int r = order_visit(mods, nmods, (size_t)i, state, o, &n, err);
		if (r < 0)
			return r;
	}
	*order = TAKE_PTR(o);
	*norder = n;
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* building the guest */

struct libfile {
	char *path; /* inside the package, e.g. "usr/lib/x86_64-linux-gnu/libglib-2.0.so.0" */
	unsigned char *data;
	size_t size;
	char *target; /* symlink target, or NULL for a regular file */
};

struct build {
	const struct guest_build_opts *opts;
	char *kver;
	char *kernel_pkg;
	struct pkg_list pkgs;
	struct guest_tree tree;
	/* kernel pass 1 */
	unsigned char *vmlinuz;
	size_t vmlinuz_len;
	struct guest_module *mods;
	size_t nmods, capmods;
	/* kernel pass 2: modules still to extract (paths relative to lib/modules/KVER) */
	char **need;
	size_t nneed, found;
	/* shared libraries of the lib* packages */
	struct libfile *libs;
	size_t nlibs, caplibs;
	/* what went in, for the manifest */
	json_t *modules, *modules_boot, *libraries;
	size_t applets;
};

static void build_clear(struct build *b)
{
	free(b->kver);
	free(b->kernel_pkg);
	pkg_list_clear(&b->pkgs);
	guest_tree_clear(&b->tree);
	free(b->vmlinuz);
	for (size_t i = 0; i < b->nmods; i++)
		guest_module_clear(&b->mods[i]);
	free(b->mods);
	strv_free(b->need, b->nneed);
	for (size_t i = 0; i < b->nlibs; i++) {
		free(b->libs[i].path);
		free(b->libs[i].data);
		free(b->libs[i].target);
	}
	free(b->libs);
	json_decref(b->modules);
	json_decref(b->modules_boot);
	json_decref(b->libraries);
}

static void progress(struct build *b, const char *fmt, ...) _printf_(2, 3);
static void progress(struct build *b, const char *fmt, ...)
{
	va_list ap;
	if (!b->opts->progress)
		return;
	va_start(ap, fmt);
	_cleanup_free_ char *m = xvasprintf(fmt, ap);
	va_end(ap);
	b->opts->progress(b->opts->userdata, m);
}

/* A module's bytes as the guest's insmod needs them: decompressed when the package ships .ko.xz
 * (this Debian 6.1 kernel ships plain .ko, later ones compress). */
static int module_bytes(struct archive *a, struct archive_entry *e, const char *path,
			unsigned char **data, size_t *len, char **err)
{
	int r = entry_read_all(a, e, data, len, err);
	if (r < 0 || !has_suffix(path, ".ko.xz"))
		return r;
	unsigned char *plain;
	size_t plen;
	r = guest_xz_decompress(*data, *len, &plain, &plen, err);
	free(*data);
	*data = NULL;
	if (r < 0)
		return set_err(err, r, "module '%s': %s", path, *err);
	*data = plain;
	*len = plen;
	return 0;
}

static int kernel_pass1(void *ud, struct archive *a, struct archive_entry *e, const char *path,
			char **err)
{
	struct build *b = ud;
	_cleanup_free_ char *vmlinuz = xasprintf("boot/vmlinuz-%s", b->kver);
	_cleanup_free_ char *moddir = xasprintf("lib/modules/%s/", b->kver);

	if (archive_entry_filetype(e) != AE_IFREG)
		return 0;
	if (STREQ(path, vmlinuz))
		return entry_read_all(a, e, &b->vmlinuz, &b->vmlinuz_len, err);
	if (!has_prefix(path, moddir) || !(has_suffix(path, ".ko") || has_suffix(path, ".ko.xz")))
		return 0;

	_cleanup_free_ unsigned char *data = NULL;
	size_t len;
	int r = module_bytes(a, e, path, &data, &len, err);
	if (r < 0)
		return r;
	struct guest_module m;
	r = guest_modinfo_parse(data, len, &m, err);
	if (r < 0)
		return set_err(err, r, "module '%s': %s", path, *err);
	m.path = xstrdup(path + strlen(moddir));
	m.compressed = has_suffix(path, ".xz");
	if (!m.name) {
		const char *base = strrchr(path, '/') + 1;
		m.name = xstrndup(base, strcspn(base, "."));
		for (char *c = m.name; *c; c++)
			if (*c == '-')
				*c = '_';
	}
	b->mods = xgrow(b->mods, &b->capmods, b->nmods + 1, sizeof(*b->mods));
	b->mods[b->nmods++] = m;
	return 0;
}

static int kernel_pass2(void *ud, struct archive *a, struct archive_entry *e, const char *path,
			char **err)
{
	struct build *b = ud;
	_cleanup_free_ char *moddir = xasprintf("lib/modules/%s/", b->kver);

	if (archive_entry_filetype(e) != AE_IFREG || !has_prefix(path, moddir))
		return 0;
	const char *rel = path + strlen(moddir);
	for (size_t i = 0; i < b->nneed; i++) {
		if (!STREQ(b->need[i], rel))
			continue;
		unsigned char *data;
		size_t len;
		int r = module_bytes(a, e, path, &data, &len, err);
		if (r < 0)
			return r;
		_cleanup_free_ char *dest = xstrdup(path);
		if (has_suffix(dest, ".xz"))
			dest[strlen(dest) - 3] = '\0';
		tree_add_file_take(&b->tree, dest, 0644, data, len);
		/* stop decompressing the package once every module is out */
		return ++b->found == b->nneed ? 1 : 0;
	}
	return 0;
}

/* One modules.dep line in depmod's format: the module, then every module it needs, transitively,
 * the one to load last first (modprobe loads them from the end). */
static int dep_line(const struct build *b, size_t mi, char **line, char **err)
{
	const char *name = b->mods[mi].name;
	size_t *order = NULL, n = 0;
	int r = guest_module_order(b->mods, b->nmods, &name, 1, &order, &n, err);

	if (r < 0)
		return r;
	char *l = xasprintf("%s:", b->mods[mi].path);
	for (size_t i = n - 1; i-- > 0;) {
		char *t = xasprintf("%s %s", l, b->mods[order[i]].path);
		free(l);
		l = t;
	}
	free(order);
	*line = l;
	return 0;
}

static void append(char **s, const char *fmt, ...) _printf_(2, 3);
static void append(char **s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *m = xvasprintf(fmt, ap);
	va_end(ap);
	char *t = xasprintf("%s%s", *s ? *s : "", m);
	free(*s);
	*s = t;
}

static int add_kernel(struct build *b, const struct pkg *kpkg, char **err)
{
	int r;
	size_t *order = NULL, norder = 0, nboot = 0;
	const char *wanted[ELEMENTSOF(guest_modules_boot) + ELEMENTSOF(guest_modules_later)];

	progress(b, "reading modules of %s %s", kpkg->name, kpkg->version);
	r = deb_walk(kpkg->deb, kernel_pass1, b, err);
	if (r < 0)
		return r;
	if (!b->vmlinuz)
		return set_err(err, -ENOENT, "'%s' holds no boot/vmlinuz-%s", kpkg->deb, b->kver);
	/* the modules are written without .xz: modprobe and the lists name them so */
	for (size_t i = 0; i < b->nmods; i++)
		if (has_suffix(b->mods[i].path, ".xz"))
			b->mods[i].path[strlen(b->mods[i].path) - 3] = '\0';

	/* one order over both lists, so the boot set is a prefix of it */
	memcpy(wanted, guest_modules_boot, sizeof(guest_modules_boot));
	memcpy(wanted + ELEMENTSOF(guest_modules_boot), guest_modules_later,
	       sizeof(guest_modules_later));
	r = guest_module_order(b->mods, b->nmods, guest_modules_boot,
			       ELEMENTSOF(guest_modules_boot), &order, &nboot, err);
	free(order);
	if (r >= 0)
		r = guest_module_order(b->mods, b->nmods, wanted, ELEMENTSOF(wanted), &order,
				       &norder, err);
	if (r < 0)
		return r;

	_cleanup_free_ char *boot = NULL, *later = NULL, *dep = NULL, *alias = NULL;
	b->modules = json_array();
	b->modules_boot = json_array();
	b->need = xcalloc(norder ? norder : 1, sizeof(char *));
	for (size_t i = 0; i < norder && r >= 0; i++) {
		const struct guest_module *m = &b->mods[order[i]];
		_cleanup_free_ char *line = NULL;
		append(i < nboot ? &boot : &later, "/lib/modules/%s/%s\n", b->kver, m->path);
		json_array_append_new(b->modules, json_string(m->name));
		if (i < nboot)
			json_array_append_new(b->modules_boot, json_string(m->name));
		r = dep_line(b, order[i], &line, err);
		if (r >= 0)
			append(&dep, "%s\n", line);
		for (size_t k = 0; m->aliases && m->aliases[k]; k++)
			append(&alias, "alias %s %s\n", m->aliases[k], m->name);
		b->need[b->nneed++] = xasprintf(
		    "%s%s", m->path, has_suffix(m->path, ".ko") && m->compressed ? ".xz" : "");
	}
	free(order);
	if (r < 0)
		return r;
	_cleanup_free_ char *depf = xasprintf("lib/modules/%s/modules.dep", b->kver);
	_cleanup_free_ char *aliasf = xasprintf("lib/modules/%s/modules.alias", b->kver);
	guest_tree_add_file(&b->tree, "etc/modules.load", 0644, boot, boot ? strlen(boot) : 0);
	guest_tree_add_file(&b->tree, "etc/modules.later", 0644, later, later ? strlen(later) : 0);
	guest_tree_add_file(&b->tree, depf, 0644, dep, dep ? strlen(dep) : 0);
	guest_tree_add_file(&b->tree, aliasf, 0644, alias, alias ? strlen(alias) : 0);

	progress(b, "extracting %zu modules", b->nneed);
	r = deb_walk(kpkg->deb, kernel_pass2, b, err);
	if (r < 0)
		return r;
	if (b->found != b->nneed)
		return set_err(err, -ENOENT, "only %zu of %zu modules found in '%s'", b->found,
			       b->nneed, kpkg->deb);
	return 0;
}

/* Write the kernel a VM boots: the uncompressed vmlinux when it has a PVH entry, else the
 * bzImage. *why says which and why. */
static int write_kernel(struct build *b, const char *dir, bool *pvh, char **why, char **err)
{
	_cleanup_free_ char *path = xasprintf("%s/kernel", dir);
	_cleanup_free_ unsigned char *vmlinux = NULL;
	_cleanup_free_ char *xerr = NULL;
	size_t len = 0;
	ssize_t off = guest_find_xz(b->vmlinuz, b->vmlinuz_len);

	*pvh = false;
	if (off < 0) {
		*why = xstrdup("bzImage: no XZ payload in the bzImage");
	} else if (guest_xz_decompress(b->vmlinuz + off, b->vmlinuz_len - (size_t)off, &vmlinux,
				       &len, &xerr) < 0) {
		*why = xasprintf("bzImage: the XZ payload does not decompress: %s", xerr);
	} else if (!guest_elf_has_pvh(vmlinux, len)) {
		*why = xstrdup("bzImage: the decompressed payload is not an ELF with a PVH entry "
			       "note");
	} else {
		*pvh = true;
		*why =
		    xstrdup("vmlinux from the bzImage's XZ payload, booted through its PVH entry "
			    "(XEN_ELFNOTE_PHYS32_ENTRY)");
		return write_file_atomic(path, vmlinux, len, err);
	}
	return write_file_atomic(path, b->vmlinuz, b->vmlinuz_len, err);
}

struct find_file {
	const char *path;
	unsigned char *data;
	size_t len;
};

static int find_file_cb(void *ud, struct archive *a, struct archive_entry *e, const char *path,
			char **err)
{
	struct find_file *f = ud;
	if (!STREQ(path, f->path) || archive_entry_filetype(e) != AE_IFREG)
		return 0;
	int r = entry_read_all(a, e, &f->data, &f->len, err);
	return r < 0 ? r : 1;
}

static int deb_file(const struct pkg *p, const char *path, unsigned char **data, size_t *len,
		    char **err)
{
	struct find_file f = { path, NULL, 0 };
	int r = deb_walk(p->deb, find_file_cb, &f, err);
	if (r < 0)
		return r;
	if (!f.data)
		return set_err(err, -ENOENT, "'%s' holds no '%s'", p->deb, path);
	*data = f.data;
	*len = f.len;
	return 0;
}

static int add_busybox(struct build *b, const struct pkg *p, const char *tmpdir, char **err)
{
	unsigned char *data;
	size_t len;
	int r = deb_file(p, "bin/busybox", &data, &len, err);

	if (r < 0)
		return r;
	/* the applet list comes from the binary itself (it is static: it runs on the host);
	 * the package ships no list of links */
	_cleanup_free_ char *bb = xasprintf("%s/busybox", tmpdir);
	r = write_file_atomic(bb, data, len, err);
	if (r < 0) {
		free(data);
		return r;
	}
	chmod(bb, 0755);
	char *argv[] = { bb, (char *)"--list-full", NULL };
	_cleanup_free_ char *out = NULL;
	r = run_checked(argv, NULL, &out, err);
	unlink(bb);
	if (r < 0) {
		free(data);
		return r;
	}
	tree_add_file_take(&b->tree, "bin/busybox", 0755, data, len);
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		while (*line == '/')
			line++;
		if (!*line || STREQ(line, "bin/busybox") || strstr(line, ".."))
			continue;
		guest_tree_add_symlink(&b->tree, line, "/bin/busybox");
		b->applets++;
	}
	return 0;
}

static bool lib_dir(const char *path)
{
	static const char *const dirs[] = { "lib/x86_64-linux-gnu/", "usr/lib/x86_64-linux-gnu/",
					    "lib64/" };
	for (size_t i = 0; i < ELEMENTSOF(dirs); i++)
		if (has_prefix(path, dirs[i]) && !strchr(path + strlen(dirs[i]), '/'))
			return true;
	return false;
}

static int lib_collect(void *ud, struct archive *a, struct archive_entry *e, const char *path,
		       char **err)
{
	struct build *b = ud;
	mode_t type = archive_entry_filetype(e);

	if (!lib_dir(path) || !strstr(path, ".so") || (type != AE_IFREG && type != AE_IFLNK))
		return 0;
	struct libfile f = { xstrdup(path), NULL, 0, NULL };
	if (type == AE_IFLNK) {
		f.target = xstrdup(archive_entry_symlink(e));
	} else {
		int r = entry_read_all(a, e, &f.data, &f.size, err);
		if (r < 0) {
			free(f.path);
			return r;
		}
	}
	b->libs = xgrow(b->libs, &b->caplibs, b->nlibs + 1, sizeof(*b->libs));
	b->libs[b->nlibs++] = f;
	return 0;
}

/* The regular file a library name resolves to in the collected packages, following symlinks. */
static const struct libfile *lib_find(const struct build *b, const char *name)
{
	_cleanup_free_ char *want = xstrdup(name);

	for (int hops = 0; hops < 16; hops++) {
		const struct libfile *hit = NULL;
		if (strchr(want, '/')) {
			const char *w = want;
			while (*w == '/')
				w++;
			for (size_t i = 0; i < b->nlibs && !hit; i++) {
				const char *p = b->libs[i].path;
				/* packages not yet merged into /usr: /lib and /usr/lib are one */
				if (STREQ(p, w) || (has_prefix(p, "usr/") && STREQ(p + 4, w)) ||
				    (has_prefix(w, "usr/") && STREQ(p, w + 4)))
					hit = &b->libs[i];
			}
		} else {
			for (size_t i = 0; i < b->nlibs && !hit; i++) {
				const char *base = strrchr(b->libs[i].path, '/') + 1;
				if (STREQ(base, want) && !has_prefix(b->libs[i].path, "lib64/"))
					hit = &b->libs[i];
			}
		}
		if (!hit)
			return NULL;
		if (!hit->target)
			return hit;
		char *next;
		if (hit->target[0] == '/') {
			next = xstrdup(hit->target);
		} else {
			const char *slash = strrchr(hit->path, '/');
			next =
			    xasprintf("%.*s/%s", (int)(slash - hit->path), hit->path, hit->target);
		}
		free(want);
		want = next;
	}
	return NULL;
}

/* qemu-ga, the libraries it needs (DT_NEEDED, transitively) and the dynamic loader. */
static int add_agent(struct build *b, const struct pkg *qga, char **err)
{
	unsigned char *data;
	size_t len;
	int r = deb_file(qga, "usr/sbin/qemu-ga", &data, &len, err);

	if (r < 0)
		return r;
	tree_add_file_take(&b->tree, "usr/sbin/qemu-ga", 0755, data, len);
	_cleanup_free_ char *interp = elf_interp(data, len);
	if (!interp)
		return set_err(err, -EINVAL, "qemu-ga has no program interpreter");

	for (size_t i = 0; i < b->pkgs.n; i++) {
		const struct pkg *p = &b->pkgs.items[i];
		if (!has_prefix(p->name, "lib"))
			continue;
		r = deb_walk(p->deb, lib_collect, b, err);
		if (r < 0)
			return r;
	}

	/* worklist of sonames, starting with qemu-ga's */
	char **queue = NULL;
	size_t nq = 0;
	r = elf_needed(data, len, &queue, &nq, err);
	if (r < 0)
		return set_err(err, r, "qemu-ga: %s", *err);
	b->libraries = json_array();
	for (size_t qi = 0; qi < nq; qi++) {
		_cleanup_free_ char *dest = xasprintf("lib/x86_64-linux-gnu/%s", queue[qi]);
		bool seen = false;
		for (size_t k = 0; k < qi && !seen; k++)
			seen = STREQ(queue[k], queue[qi]);
		if (seen)
			continue;
		const struct libfile *f = lib_find(b, queue[qi]);
		if (!f) {
			r = set_err(err, -ENOENT,
				    "library '%s' needed by qemu-ga is in none of the downloaded "
				    "packages",
				    queue[qi]);
			strv_free(queue, nq);
			return r;
		}
		guest_tree_add_file(&b->tree, dest, 0755, f->data, f->size);
		json_array_append_new(b->libraries, json_string(queue[qi]));
		char **more;
		size_t nmore;
		r = elf_needed(f->data, f->size, &more, &nmore, err);
		if (r < 0) {
			r = set_err(err, r, "'%s': %s", f->path, *err);
			strv_free(queue, nq);
			return r;
		}
		queue = xrealloc(queue, (nq + nmore) * sizeof(char *));
		if (nmore)
			memcpy(queue + nq, more, nmore * sizeof(char *));
		nq += nmore;
		free(more);
	}
	strv_free(queue, nq);

	/* the loader at the path the binary names, as a link to the real file */
	const struct libfile *ld = lib_find(b, interp);
	if (!ld)
		return set_err(err, -ENOENT, "dynamic loader '%s' not found in libc6", interp);
	const char *base = strrchr(ld->path, '/') + 1;
	_cleanup_free_ char *lddest = xasprintf("lib/x86_64-linux-gnu/%s", base);
	_cleanup_free_ char *ldtarget = xasprintf("/%s", lddest);
	guest_tree_add_file(&b->tree, lddest, 0755, ld->data, ld->size);
	if (!STREQ(interp + 1, lddest))
		guest_tree_add_symlink(&b->tree, interp + 1, ldtarget);
	bool listed = false;
	size_t i;
	json_t *v;
	json_array_foreach(b->libraries, i, v) listed |= STREQ(json_string_value(v), base);
	if (!listed)
		json_array_append_new(b->libraries, json_string(base));
	return 0;
}

struct fixture {
	char *data;
	size_t len;
};

static char *default_fixtures_dir(void)
{
	_cleanup_free_ char *src = xasprintf("%s/fixtures/guest", FERRY_SOURCE_DIR);
	if (access(src, R_OK) == 0)
		return TAKE_PTR(src);
	return xasprintf("%s/guest", FERRY_DATADIR);
}

/* The text the cache key hashes: every input that changes the output bytes. */
static char *key_text(const struct build *b, const struct fixture *fx, int64_t mtime)
{
	char *t = xasprintf("ferry-guest format=%d\ncmdline=%s\nmtime=%lld\n", GUEST_FORMAT_VERSION,
			    GUEST_CMDLINE, (long long)mtime);
	for (size_t i = 0; i < b->pkgs.n; i++) {
		const struct pkg *p = &b->pkgs.items[i];
		char *n = xasprintf("%spackage %s %s %s %s\n", t, p->name, p->version, p->arch,
				    p->sha256);
		free(t);
		t = n;
	}
	for (size_t i = 0; i < ELEMENTSOF(guest_fixtures); i++) {
		char hex[65];
		sha256_hex(fx[i].data, fx[i].len, hex);
		char *n = xasprintf("%sfixture %s %s\n", t, guest_fixtures[i].name, hex);
		free(t);
		t = n;
	}
	for (size_t i = 0; i < ELEMENTSOF(guest_modules_boot); i++)
		append(&t, "module boot %s\n", guest_modules_boot[i]);
	for (size_t i = 0; i < ELEMENTSOF(guest_modules_later); i++)
		append(&t, "module later %s\n", guest_modules_later[i]);
	return t;
}

static int64_t source_date_epoch(void)
{
	const char *s = getenv("SOURCE_DATE_EPOCH");
	char *end;
	if (!s || !*s)
		return 0;
	long long v = strtoll(s, &end, 10);
	return (*end || v < 0) ? 0 : (int64_t)v;
}

/* Is the keyed output there with the sizes and hashes its manifest records? */
static bool output_intact(const char *dir)
{
	_cleanup_free_ char *mpath = xasprintf("%s/manifest.json", dir);
	_cleanup_(json_decrefp) json_t *m = json_load_file(mpath, 0, NULL);
	static const char *const files[] = { "kernel", "initramfs" };

	if (!m)
		return false;
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		json_t *f = json_object_get(m, files[i]);
		const char *name = json_string_value(json_object_get(f, "file"));
		const char *sum = json_string_value(json_object_get(f, "sha256"));
		json_int_t size = json_integer_value(json_object_get(f, "size"));
		char hex[65];
		uint64_t got;
		if (!name || !sum || strchr(name, '/'))
			return false;
		_cleanup_free_ char *p = xasprintf("%s/%s", dir, name);
		if (sha256_file(p, hex, &got, NULL) < 0 || !STREQ(hex, sum) ||
		    got != (uint64_t)size)
			return false;
	}
	return true;
}

static int point_current(const char *guestdir, const char *key, char **err)
{
	_cleanup_free_ char *cur = xasprintf("%s/current", guestdir);
	_cleanup_free_ char *tmp = xasprintf("%s/current.tmp.%ld", guestdir, (long)getpid());

	unlink(tmp);
	if (symlink(key, tmp) < 0 || rename(tmp, cur) < 0) {
		int e = errno;
		unlink(tmp);
		return set_err(err, -e, "cannot update '%s': %s", cur, strerror(e));
	}
	return 0;
}

static void remove_dir_files(const char *dir)
{
	static const char *const names[] = { "kernel", "initramfs.cpio", "manifest.json",
					     "busybox" };
	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		_cleanup_free_ char *p = xasprintf("%s/%s", dir, names[i]);
		unlink(p);
	}
	rmdir(dir);
}

static int build_into(struct build *b, const char *dir, const char *key, const struct fixture *fx,
		      int64_t mtime, char **err)
{
	static const char *const dirs[] = { "bin",  "dev",     "etc",      "lib64", "mnt",
					    "proc", "root",    "run",      "sbin",  "sys",
					    "tmp",  "usr/bin", "usr/sbin", "var" };
	const struct pkg *kpkg = pkg_find(&b->pkgs, b->kernel_pkg);
	const struct pkg *bb = pkg_find(&b->pkgs, "busybox-static");
	const struct pkg *qga = pkg_find(&b->pkgs, "qemu-guest-agent");
	int r;

	for (size_t i = 0; i < ELEMENTSOF(dirs); i++)
		guest_tree_add_dir(&b->tree, dirs[i], 0755);
	guest_tree_add_dir(&b->tree, "tmp", 01777);
	/* the kernel opens /dev/console for init's stdio before /init could mount devtmpfs */
	guest_tree_add_chardev(&b->tree, "dev/console", 0600, 5, 1);

	progress(b, "unpacking busybox-static %s", bb->version);
	r = add_busybox(b, bb, dir, err);
	if (r < 0)
		return r;
	progress(b, "unpacking qemu-guest-agent %s and its libraries", qga->version);
	r = add_agent(b, qga, err);
	if (r < 0)
		return r;
	r = add_kernel(b, kpkg, err);
	if (r < 0)
		return r;
	/* after busybox: a fixture replaces an applet link of the same path */
	for (size_t i = 0; i < ELEMENTSOF(guest_fixtures); i++)
		guest_tree_add_file(&b->tree, guest_fixtures[i].path, guest_fixtures[i].mode,
				    fx[i].data, fx[i].len);

	bool pvh;
	_cleanup_free_ char *why = NULL;
	progress(b, "extracting the kernel");
	r = write_kernel(b, dir, &pvh, &why, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *cpio = xasprintf("%s/initramfs.cpio", dir);
	progress(b, "writing the initramfs (%zu entries)", b->tree.n);
	r = guest_cpio_write(&b->tree, cpio, mtime, err);
	if (r < 0)
		return r;
	if (chmod(cpio, 0644) < 0)
		return set_err(err, -errno, "cannot chmod '%s': %s", cpio, strerror(errno));

	char ksum[65], isum[65];
	uint64_t ksize, isize;
	_cleanup_free_ char *kpath = xasprintf("%s/kernel", dir);
	r = sha256_file(kpath, ksum, &ksize, err);
	if (r < 0)
		return r;
	r = sha256_file(cpio, isum, &isize, err);
	if (r < 0)
		return r;

	_cleanup_(json_decrefp) json_t *m = json_object();
	json_t *pkgs = json_array();
	for (size_t i = 0; i < b->pkgs.n; i++) {
		const struct pkg *p = &b->pkgs.items[i];
		json_array_append_new(pkgs, json_pack("{s:s, s:s, s:s}", "name", p->name, "version",
						      p->version, "sha256", p->sha256));
	}
	json_object_set_new(m, "format", json_integer(GUEST_FORMAT_VERSION));
	json_object_set_new(m, "key", json_string(key));
	json_object_set_new(m, "kernel_version", json_string(b->kver));
	json_object_set_new(m, "cmdline", json_string(GUEST_CMDLINE));
	json_object_set_new(m, "pvh", json_boolean(pvh));
	json_object_set_new(m, "kernel_source", json_string(why));
	json_object_set_new(m, "kernel",
			    json_pack("{s:s, s:I, s:s}", "file", "kernel", "size",
				      (json_int_t)ksize, "sha256", ksum));
	json_object_set_new(m, "initramfs",
			    json_pack("{s:s, s:I, s:s, s:I, s:I}", "file", "initramfs.cpio", "size",
				      (json_int_t)isize, "sha256", isum, "entries",
				      (json_int_t)b->tree.n, "mtime", (json_int_t)mtime));
	json_object_set_new(m, "packages", pkgs);
	json_object_set_new(m, "modules", json_incref(b->modules));
	json_object_set_new(m, "modules_at_boot", json_incref(b->modules_boot));
	json_object_set_new(m, "libraries", json_incref(b->libraries));
	json_object_set_new(m, "applets", json_integer((json_int_t)b->applets));
	_cleanup_free_ char *text = json_dumps(m, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	_cleanup_free_ char *mpath = xasprintf("%s/manifest.json", dir);
	size_t tl = strlen(text);
	text = xrealloc(text, tl + 2);
	text[tl] = '\n';
	text[tl + 1] = '\0';
	return write_file_atomic(mpath, text, tl + 1, err);
}

char *guest_default_cache_dir(void)
{
	return ferry_cache_dir();
}

static bool is_key_name(const char *s)
{
	return strlen(s) == 32 && strspn(s, "0123456789abcdef") == 32;
}

/*
 * After a new build: remove downloaded packages it does not use (older kernels are ~70 MB each)
 * and built guests other than the new one and the one `current` named until now (a VM that
 * located it a moment ago may still be starting from it).
 */
static void prune_cache(const struct pkg_list *l, const char *guestdir, const char *debdir,
			const char *key)
{
	_cleanup_free_ char *cur = xasprintf("%s/current", guestdir);
	char prev[64] = "";
	ssize_t n = readlink(cur, prev, sizeof(prev) - 1);
	DIR *d = opendir(guestdir);
	struct dirent *de;

	prev[n > 0 ? n : 0] = '\0';
	while (d && (de = readdir(d))) {
		if (!is_key_name(de->d_name) || STREQ(de->d_name, key) || STREQ(de->d_name, prev))
			continue;
		_cleanup_free_ char *dir = xasprintf("%s/%s", guestdir, de->d_name);
		remove_dir_files(dir);
	}
	if (d)
		closedir(d);

	d = opendir(debdir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		bool keep = !has_suffix(de->d_name, ".deb");
		for (size_t i = 0; i < l->n && !keep; i++) {
			const char *base = strrchr(l->items[i].deb, '/');
			keep = base && STREQ(base + 1, de->d_name);
		}
		if (!keep)
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

/* mkdir -p, then make the leaf world-readable and traversable whatever the umask. */
static int make_dir(const char *path, char **err)
{
	int r = mkdir_p(path, err);
	if (r < 0)
		return r;
	if (chmod(path, 0755) < 0)
		return set_err(err, -errno, "cannot chmod '%s': %s", path, strerror(errno));
	return 0;
}

int guest_build(const struct guest_build_opts *opts, struct guest_files *out, bool *rebuilt,
		char **err)
{
	_cleanup_free_ char *cache =
	    opts->cache_dir ? xstrdup(opts->cache_dir) : guest_default_cache_dir();
	_cleanup_free_ char *fixdir =
	    opts->fixtures_dir ? xstrdup(opts->fixtures_dir) : default_fixtures_dir();
	_cleanup_free_ char *guestdir = xasprintf("%s/guest", cache);
	_cleanup_free_ char *debdir = xasprintf("%s/debs", guestdir);
	struct fixture fx[ELEMENTSOF(guest_fixtures)] = { { 0 } };
	struct build b = { .opts = opts };
	int64_t mtime = source_date_epoch();
	int r;

	if (rebuilt)
		*rebuilt = false;
	r = make_dir(cache, err);
	if (r >= 0)
		r = make_dir(guestdir, err);
	if (r >= 0)
		r = make_dir(debdir, err);
	/* one build at a time per cache: concurrent apt-get downloads into one directory would
	 * overwrite each other's files (the lock goes with the descriptor) */
	_cleanup_free_ char *lockpath = xasprintf("%s/.lock", guestdir);
	_cleanup_close_ int lock = r < 0 ? -1 : open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (r >= 0 && lock < 0)
		r = set_err(err, -errno, "cannot open '%s': %s", lockpath, strerror(errno));
	if (r >= 0) {
		if (flock(lock, LOCK_EX | LOCK_NB) < 0) {
			progress(&b, "waiting for another 'ferry guest build' on this cache");
			while (flock(lock, LOCK_EX) < 0 && errno == EINTR)
				;
		}
	}
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(guest_fixtures); i++) {
		_cleanup_free_ char *p = xasprintf("%s/%s", fixdir, guest_fixtures[i].name);
		fx[i].data = read_file(p, &fx[i].len);
		if (!fx[i].data)
			r = set_err(err, -errno, "cannot read guest fixture '%s': %s", p,
				    strerror(errno));
	}
	if (r >= 0) {
		progress(&b, "resolving packages with apt-cache");
		r = resolve_packages(&b.pkgs, &b.kernel_pkg, err);
	}
	if (r >= 0) {
		b.kver = xstrdup(b.kernel_pkg + strlen("linux-image-"));
		_cleanup_free_ char *text = key_text(&b, fx, mtime);
		char key[65];
		sha256_hex(text, strlen(text), key);
		key[32] = '\0'; /* 128 bits name a cache entry well enough */
		_cleanup_free_ char *dir = xasprintf("%s/%s", guestdir, key);

		if (opts->force || !output_intact(dir)) {
			_cleanup_free_ char *tmp = xasprintf("%s.tmp.%ld", dir, (long)getpid());
			remove_dir_files(tmp);
			r = download_packages(&b.pkgs, debdir, opts->progress, opts->userdata, err);
			if (r >= 0)
				r = make_dir(tmp, err);
			if (r >= 0)
				r = build_into(&b, tmp, key, fx, mtime, err);
			if (r >= 0) {
				remove_dir_files(dir);
				if (rename(tmp, dir) < 0)
					r = set_err(err, -errno, "cannot rename '%s' to '%s': %s",
						    tmp, dir, strerror(errno));
			}
			if (r < 0)
				remove_dir_files(tmp);
			else if (rebuilt)
				*rebuilt = true;
			if (r >= 0)
				prune_cache(&b.pkgs, guestdir, debdir, key);
		}
		if (r >= 0)
			r = point_current(guestdir, key, err);
	}
	for (size_t i = 0; i < ELEMENTSOF(guest_fixtures); i++)
		free(fx[i].data);
	build_clear(&b);
	if (r < 0)
		return r;
	return guest_locate(cache, out, err);
}

/* ------------------------------------------------------------------------------------------ */
/* finding what was built */

void guest_files_clear(struct guest_files *g)
{
	if (!g)
		return;
	free(g->dir);
	free(g->kernel);
	free(g->initramfs);
	free(g->cmdline);
	free(g->kernel_version);
	free(g->initramfs_sha256);
	memset(g, 0, sizeof(*g));
}

static int load_manifest(const char *cache_dir, char **dirp, json_t **mp, char **err)
{
	_cleanup_free_ char *cache = cache_dir ? xstrdup(cache_dir) : guest_default_cache_dir();
	_cleanup_free_ char *cur = xasprintf("%s/guest/current", cache);
	_cleanup_free_ char *dir = realpath(cur, NULL);
	json_error_t je;

	if (!dir) {
		if (errno == ENOENT)
			return set_err(err, -ENOENT,
				       "no built-in guest in '%s' (run 'ferry guest build')",
				       cache);
		return set_err(err, -errno, "cannot resolve '%s': %s", cur, strerror(errno));
	}
	_cleanup_free_ char *mpath = xasprintf("%s/manifest.json", dir);
	json_t *m = json_load_file(mpath, 0, &je);
	if (!m)
		return set_err(err, -EBADMSG,
			       "cannot read '%s': %s (run 'ferry guest build --force')", mpath,
			       je.text);
	*dirp = TAKE_PTR(dir);
	*mp = m;
	return 0;
}

int guest_locate(const char *cache_dir, struct guest_files *out, char **err)
{
	_cleanup_free_ char *dir = NULL;
	_cleanup_(json_decrefp) json_t *m = NULL;
	int r = load_manifest(cache_dir, &dir, &m, err);
	struct guest_files g = { 0 };

	memset(out, 0, sizeof(*out));
	if (r < 0)
		return r;
	const char *cmdline = json_string_value(json_object_get(m, "cmdline"));
	const char *kver = json_string_value(json_object_get(m, "kernel_version"));
	const char *kfile =
	    json_string_value(json_object_get(json_object_get(m, "kernel"), "file"));
	json_t *ini = json_object_get(m, "initramfs");
	const char *ifile = json_string_value(json_object_get(ini, "file"));
	const char *isum = json_string_value(json_object_get(ini, "sha256"));
	if (!cmdline || !kver || !kfile || !ifile || !isum)
		return set_err(err, -EBADMSG,
			       "'%s/manifest.json' lacks fields (run 'ferry guest build --force')",
			       dir);
	g.dir = xstrdup(dir);
	g.kernel = xasprintf("%s/%s", dir, kfile);
	g.initramfs = xasprintf("%s/%s", dir, ifile);
	g.cmdline = xstrdup(cmdline);
	g.kernel_version = xstrdup(kver);
	g.initramfs_sha256 = xstrdup(isum);
	g.pvh = json_is_true(json_object_get(m, "pvh"));

	const char *paths[] = { g.kernel, g.initramfs };
	json_t *objs[] = { json_object_get(m, "kernel"), ini };
	for (size_t i = 0; i < 2; i++) {
		struct stat st;
		json_int_t want = json_integer_value(json_object_get(objs[i], "size"));
		if (stat(paths[i], &st) < 0) {
			r = set_err(err, -errno, "cannot use '%s': %s (run 'ferry guest build')",
				    paths[i], strerror(errno));
			guest_files_clear(&g);
			return r;
		}
		if (st.st_size != (off_t)want) {
			r = set_err(err, -EBADMSG,
				    "'%s' has %lld bytes, the manifest says %lld (run 'ferry guest "
				    "build --force')",
				    paths[i], (long long)st.st_size, (long long)want);
			guest_files_clear(&g);
			return r;
		}
	}
	*out = g;
	return 0;
}

int guest_manifest(const char *cache_dir, char **json, char **err)
{
	_cleanup_free_ char *dir = NULL;
	_cleanup_(json_decrefp) json_t *m = NULL;
	struct guest_files g;
	int r = guest_locate(cache_dir, &g, err);

	if (r < 0)
		return r;
	r = load_manifest(cache_dir, &dir, &m, err);
	if (r < 0) {
		guest_files_clear(&g);
		return r;
	}
	json_object_set_new(m, "dir", json_string(g.dir));
	json_object_set_new(json_object_get(m, "kernel"), "path", json_string(g.kernel));
	json_object_set_new(json_object_get(m, "initramfs"), "path", json_string(g.initramfs));
	guest_files_clear(&g);
	*json = json_dumps(m, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	return 0;
}
