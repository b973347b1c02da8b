/* SPDX-License-Identifier: MIT */
/* Images on the host (vm.h): target images made and copied, a plan's image checked down its
 * backing chain, a custom guest's kernel and initrd copied into the run directory. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cleanup.h"
#include "fs.h"
#include "proc.h"
#include "util.h"
#include "vm-impl.h"

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

/*
 * The target image with an empty ext4 filesystem, without root or mounting. Every format and
 * allocation is formatted the same way: no discard (on a preallocated image it would punch the
 * preallocation back out) and the inode tables and journal zeroed by mke2fs here, before the
 * run, so no group is left for the guest kernel's ext4lazyinit thread to zero in the background
 * while a run is timed (mke2fs marks a group ITABLE_ZEROED only when it zeroed it itself or
 * discarded a device that reads back zeros, which made lazy init a preallocated-raw-only cost).
 */
int vm_target_create(const struct disk_config *d, char **err)
{
	static const char ext[] = "nodiscard,lazy_itable_init=0,lazy_journal_init=0";
	_cleanup_free_ char *size = xasprintf("%" PRIu64 "k", d->size / 1024);
	unlink(d->path);
	if (d->format == DISK_FORMAT_RAW) {
		if (vm_image_create(d, d->path, err) < 0)
			return -1;
		const char *argv[] = { "mke2fs", "-q", "-F", "-t",    "ext4", "-m",
				       "0",      "-E", ext,  d->path, size,   NULL };
		return proc_run(argv, NULL, err);
	}
	/* qcow2: formatted as a sparse raw file, converted with the preallocation asked for */
	_cleanup_free_ char *raw = xasprintf("%s.raw", d->path);
	unlink(raw);
	struct disk_config sparse = *d;
	sparse.format = DISK_FORMAT_RAW;
	sparse.allocation = DISK_ALLOC_SPARSE;
	if (vm_image_create(&sparse, raw, err) < 0)
		return -1;
	const char *mk[] = { "mke2fs", "-q", "-F", "-t", "ext4", "-m",
			     "0",      "-E", ext,  raw,  size,   NULL };
	if (proc_run(mk, NULL, err) < 0) {
		unlink(raw);
		return -1;
	}
	static const char *const pre[] = { "preallocation=off", "preallocation=falloc",
					   "preallocation=full" };
	const char *cv[] = { "qemu-img", "convert",          "-q", "-f",    "raw", "-O", "qcow2",
			     "-o",       pre[d->allocation], raw,  d->path, NULL };
	int rc = proc_run(cv, NULL, err);
	unlink(raw);
	return rc;
}

int vm_target_copy(const char *template_path, const struct disk_config *d, char **err)
{
	_cleanup_close_ int in = open(template_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (in < 0 || fstat(in, &st) < 0) {
		*err = xasprintf("cannot read the empty target image '%s': %s", template_path,
				 strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		*err = xasprintf("the empty target image '%s' is %s, not a regular file",
				 template_path, file_kind(st.st_mode));
		return -1;
	}
	unlink(d->path);
	/* O_EXCL: a new file of ferry's, never through a symlink someone left at the path */
	_cleanup_close_ int out =
	    open(d->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (out < 0 || ftruncate(out, st.st_size) < 0 || fd_copy_sparse(in, out, st.st_size) < 0) {
		*err = xasprintf("cannot copy the empty target image to '%s': %s", d->path,
				 strerror(errno));
		if (out >= 0)
			unlink(d->path);
		return -1;
	}
	/* QEMU opens it as libvirt-qemu (libvirt chowns it while in use) */
	fchmod(out, 0644);
	return 0;
}

/* qemu-img info of one image, without opening its backing file (qemu-img info opens only
 * the image named); a FIFO or a hang is cut off by the timeout. */
#define IMAGE_INFO_TIMEOUT_MS 60000u
#define IMAGE_CHAIN_MAX       16

static json_t *image_info(const char *path, char **err)
{
	const char *argv[] = { "qemu-img", "info", "-U", "--output=json", path, NULL };
	_cleanup_free_ char *out = NULL, *e = NULL;
	if (proc_run_timeout(argv, IMAGE_INFO_TIMEOUT_MS, &out, &e) < 0) {
		*err = xasprintf("cannot read image '%s': %s", path, e);
		return NULL;
	}
	json_t *j = json_loads(out, 0, NULL);
	if (!json_is_object(j)) {
		json_decref(j);
		*err = xasprintf("cannot read image '%s': qemu-img info printed no object", path);
	}
	return json_is_object(j) ? j : NULL;
}

/* A file of an image's chain as it was before libvirt relabelled it (dynamic ownership makes
 * it libvirt-qemu's): put back when the run ends. */
struct owner_restore {
	char *path;
	uid_t uid;
	gid_t gid;
	mode_t mode;
};

static void owner_restore(void *data)
{
	struct owner_restore *o = data;
	int fd = open(o->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		if ((st.st_uid != o->uid || st.st_gid != o->gid) && fchown(fd, o->uid, o->gid) < 0)
			(void)0; /* nothing to report at cleanup: the file stays as libvirt left it
				  */
		if ((st.st_mode & 07777) != o->mode && fchmod(fd, o->mode) < 0)
			(void)0;
	}
	if (fd >= 0)
		close(fd);
	free(o->path);
	free(o);
}

static void remember_owner(struct run *run, const char *path)
{
	char *real = realpath(path, NULL);
	struct stat st;
	if (!real || stat(real, &st) < 0) {
		free(real);
		return;
	}
	struct owner_restore *o = xmalloc(sizeof(*o));
	*o = (struct owner_restore){ real, st.st_uid, st.st_gid, st.st_mode & 07777 };
	run_defer(run, owner_restore, o);
}

/*
 * The format of an image a plan names, its whole backing chain checked first, one file at a
 * time before qemu-img opens it: each a regular file in the allowed tree (input_check), no
 * json: or protocol backing (qemu-img would open a TCP connection as root), at most
 * IMAGE_CHAIN_MAX deep. Each file's owner and mode are put back when the run ends.
 */
char *vm_image_format(struct run *run, const char *path, char **err)
{
	_cleanup_free_ char *cur = xstrdup(path), *fmt = NULL;
	for (unsigned depth = 0;; depth++) {
		if (depth >= IMAGE_CHAIN_MAX) {
			*err = xasprintf("image '%s': backing chain deeper than %d files", path,
					 IMAGE_CHAIN_MAX);
			return NULL;
		}
		if (input_check(depth ? "backing file" : "image", cur, NULL, err) < 0) {
			if (depth) {
				char *e = xasprintf("image '%s': %s", path, *err);
				free(*err);
				*err = e;
			}
			return NULL;
		}
		remember_owner(run, cur);
		_cleanup_(json_decrefp) json_t *j = image_info(cur, err);
		if (!j)
			return NULL;
		const char *f = json_string_value(json_object_get(j, "format"));
		if (!f) {
			*err = xasprintf("cannot read the format of image '%s'", cur);
			return NULL;
		}
		if (!fmt)
			fmt = xstrdup(f);
		const char *b = json_string_value(json_object_get(j, "full-backing-filename"));
		if (!b)
			b = json_string_value(json_object_get(j, "backing-filename"));
		if (!b)
			return TAKE_PTR(fmt);
		if (strchr(b, ':') && b[0] != '/') {
			*err = xasprintf("image '%s': backing file '%s' is not a local file (ferry "
					 "refuses json: and protocol backing files)",
					 path, b);
			return NULL;
		}
		free(cur);
		cur = xstrdup(b);
	}
}

/* Kernels and initrds of a Linux distribution stay well below this. */
#define BOOT_FILE_MAX (UINT64_C(1) << 30)

/*
 * Copy the kernel or initrd `src` (a plan names it: untrusted) to dst in the run directory,
 * world-readable: only a regular file is read (a FIFO or device is refused before any read, so
 * it cannot hang or feed the guest a device), and libvirt relabels ferry's copy, never the
 * user's file.
 */
int vm_copy_boot_file(const char *what, const char *src, const char *dst, char **err)
{
	_cleanup_close_ int fd = open(src, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		*err = xasprintf("cannot open %s '%s': %s", what, src, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		*err = xasprintf("%s '%s' is %s, not a regular file", what, src,
				 file_kind(st.st_mode));
		return -1;
	}
	if ((uint64_t)st.st_size > BOOT_FILE_MAX) {
		*err = xasprintf("%s '%s' is larger than 1 GiB", what, src);
		return -1;
	}
	struct atomic_file af;
	_cleanup_free_ char *e = NULL;
	/* 0600, QEMU's user's: a kernel or initrd may be anything readable to root, and other
	 * local users must not read the copy */
	if (atomic_file_open(&af, dst, 0600, &e) < 0) {
		*err = xasprintf("cannot copy %s '%s': %s", what, src, e);
		return -1;
	}
	struct passwd *pw = getpwnam("libvirt-qemu");
	if (pw && fchown(af.fd, pw->pw_uid, pw->pw_gid) < 0 && errno != EPERM) {
		int e2 = errno;
		atomic_file_abort(&af);
		*err = xasprintf("cannot copy %s '%s': chown: %s", what, src, strerror(e2));
		return -1;
	}
	char buf[65536];
	ssize_t n;
	uint64_t total = 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0 && total <= BOOT_FILE_MAX) {
		total += (uint64_t)n;
		if (write_all(af.fd, buf, (size_t)n) < 0)
			break;
	}
	if (n != 0 || total > BOOT_FILE_MAX) {
		int e2 = n < 0 ? errno : EIO;
		atomic_file_abort(&af);
		*err = xasprintf("cannot copy %s '%s': %s", what, src, strerror(e2));
		return -1;
	}
	if (atomic_file_commit(&af, &e) < 0) {
		*err = xasprintf("cannot copy %s '%s': %s", what, src, e);
		return -1;
	}
	return 0;
}
