/* SPDX-License-Identifier: MIT */
/*
 * The filesystem helpers every part of ferry uses: mkdir -p, files written all or nothing, and
 * a tree removal that cannot be led out of its directory.
 *
 * Output rules (ferry.1, OUTPUT FILES): a file ferry writes is first written to a temporary file
 * created exclusively (O_CREAT|O_EXCL|O_NOFOLLOW, a random name) in the target's own directory,
 * flushed to disk, and renamed over the target; then the directory is flushed too. An existing
 * target is replaced only when it is a regular file: a symbolic link, device, FIFO, socket or
 * directory is refused and left as it is. Nothing is ever written through a symbolic link, and
 * missing parent directories are not created here (callers that want them say so).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * mkdir -p: create path and its missing parents. Every directory it creates gets exactly `mode`
 * whatever the umask (QEMU, running as libvirt-qemu, must traverse ferry's directories); existing
 * ones are left as they are. Returns 0, or -1 with errno set and *err (when not NULL) saying
 * which directory could not be created.
 */
int mkdir_p(const char *path, mode_t mode, char **err);

/*
 * `name` made one safe path component: '/' and '%' percent-encoded ("%2F", "%25"), and an
 * empty name, "." and ".." (and so any name that starts with '.') get their first byte
 * encoded too, so the result never names a parent, the directory itself or a hidden file.
 * Injective: distinct names give distinct components. Caller frees.
 */
char *path_component(const char *name);

/*
 * Create `path` as a new, empty regular file with permission bits `mode` exactly (O_CREAT|
 * O_EXCL|O_NOFOLLOW: an existing name, a symbolic link included, is refused and left alone).
 * Returns the open descriptor (O_RDWR|O_CLOEXEC), or -1 with errno and *err (when not NULL):
 * "PATH: exists as a symbolic link (ferry creates its outputs as new files)".
 */
int file_create_new(const char *path, mode_t mode, char **err);

/*
 * The allowed tree (ferry(1) SECURITY): where a file a plan names for ferry or QEMU to read
 * (kernel, initrd, VM image and its backing files, include) may be: below the working
 * directory, `extra` (the top plan's directory, or NULL), ferry's cache directory,
 * /var/lib/libvirt/images, or a directory of $FERRY_ALLOW_INPUT (colon-separated: the command
 * line's to extend, never a plan's). input_check() resolves every link of `path` and wants a
 * regular file there; it returns 0, or -1 with *err: "WHAT 'PATH' is a block device, not a
 * regular file" or "WHAT 'PATH' is outside the allowed tree (...)". Nothing of the file is read.
 */
int input_check(const char *what, const char *path, const char *extra, char **err);
/* Whether the resolved absolute path `real` is below one of the allowed tree's roots. */
bool input_allowed(const char *real, const char *extra);

/*
 * What kind of file `st` is, as a noun for messages ("a symbolic link", "a character device",
 * "a FIFO", "a socket", "a directory", "a block device", "a regular file").
 */
const char *file_kind(mode_t st_mode);

/*
 * An output file written all or nothing (see the rules above):
 *   struct atomic_file af;
 *   if (atomic_file_open(&af, path, 0644, &err) < 0) ...   (refuses a target that is not a
 *                                                           regular file; nothing is created)
 *   write(af.fd, ...) ...
 *   if (atomic_file_commit(&af, &err) < 0) ...             (fsync, rename, fsync the directory)
 * or atomic_file_abort(&af) to drop it (the target is untouched). After either, af is closed.
 */
struct atomic_file {
	char *path; /* the target, as given */
	int dirfd;  /* the target's directory, held open: the rename happens there */
	char *base; /* the target's name in dirfd */
	char *tmp;  /* the temporary file's name in dirfd, NULL when none */
	int fd;     /* the temporary file, -1 when closed */
};

/*
 * Create the temporary file next to `path`, with permission bits `mode` exactly (whatever the
 * umask). Returns 0, or -1 with *err ("PATH: why"; a target that is not a regular file:
 * "PATH: is a symbolic link (ferry replaces only regular files)").
 */
int atomic_file_open(struct atomic_file *af, const char *path, mode_t mode, char **err);
/* Flush the file to disk, check the target is still absent or a regular file, rename the
 * temporary file over it and flush the directory. Returns 0, or -1 with *err ("PATH: why") and
 * the temporary file removed. af is closed either way. */
int atomic_file_commit(struct atomic_file *af, char **err);
/* Close and remove the temporary file; accepts a closed or never-opened (zeroed) af. */
void atomic_file_abort(struct atomic_file *af);

/* Write len bytes to fd, retrying short writes and EINTR; 0 or -1 with errno. */
int write_all(int fd, const void *data, size_t len);
/* fd's bytes from its offset to its end, NUL-terminated (caller frees), *len without the NUL;
 * NULL with errno when a read fails, EFBIG when there are more than max bytes. */
char *fd_read_all(int fd, size_t max, size_t *len);
/* in's bytes from its offset to its end written to out; 0 with *n the bytes, or -1 with errno. */
int fd_copy_all(int in, int out, uint64_t *n);

/* The whole of data as the file `path`, atomically (atomic_file_*). Returns 0 or -1 with *err. */
int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode, char **err);

/*
 * Point the symbolic link `path` at `target` atomically: a link made under a random name in the
 * same directory, renamed over path. path must be absent or a symbolic link (anything else is
 * refused). Returns 0, or -1 with errno and *err (when not NULL).
 */
int symlink_replace(const char *target, const char *path, char **err);

/*
 * rm -rf that cannot be led out of its directory: the tree is walked through directory
 * descriptors (openat with O_NOFOLLOW|O_DIRECTORY, unlinkat), symbolic links are removed, never
 * followed, and a directory on another filesystem (a mount point, a bind mount planted by a
 * guest) is neither entered nor removed. path itself may be a symbolic link: the link is removed.
 * A missing path is success. Returns 0, or -1 with errno set (the first failure; it removes what
 * it can) and *err (when not NULL) naming the entry.
 */
int rm_tree(const char *path, char **err);
/* The same for the entry `name` of the directory dirfd. */
int rm_tree_at(int dirfd, const char *name, char **err);

/*
 * Put the finished directory tmp (built beside it, on the same filesystem) in the place of dir:
 * what dir holds is removed (rm_tree; a failure there shows as the rename's), then tmp is renamed
 * to dir. When that fails tmp is removed too. Returns 0, or -1 with errno set and *err (when not
 * NULL): "cannot rename 'TMP' to 'DIR': ...".
 */
int dir_replace(const char *tmp, const char *dir, char **err);

/*
 * The next extent of data in fd at or after off, up to end (SEEK_DATA, then SEEK_HOLE; on a
 * filesystem without holes the whole rest is data): 1 with [*data, *hole) set (*hole at most
 * end), 0 when only a hole is left before end, -1 with errno. Moves fd's offset.
 */
int fd_next_data(int fd, off_t off, off_t end, off_t *data, off_t *hole);

/*
 * A byte-for-byte copy of the first `size` bytes of in to out (already `size` long, as
 * ftruncate makes it) that keeps in's holes where they are (fd_next_data): the copy's
 * allocation is the source's. read + pwrite, never copy_file_range, which may share the blocks
 * (reflink) and turn a guest's first writes into copy-on-write. Returns 0 or -1 with errno.
 */
int fd_copy_sparse(int in, int out, off_t size);

/*
 * Flush the file at path (an image file, not followed through a symbolic link) and evict its
 * pages from the host's page cache; *resident gets the bytes of it still cached afterwards.
 * Returns 0 or -1 with *err.
 */
int file_cache_evict(const char *path, uint64_t *resident, char **err);
