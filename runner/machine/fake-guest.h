/* SPDX-License-Identifier: MIT */
/*
 * A guest over a local directory, for the fake machine (machine-fake.h): the guest's commands
 * really run, so that a method's unit test moves real bytes through it in milliseconds.
 *
 * The guest is a root directory with the host's static busybox as its userland (/bin/sh, tar,
 * cp, dd, sha256sum, nc, wget, ...), in a mount namespace of its own: a holder process made the
 * namespace (private mounts: /proc, a tmpfs /dev, /tmp and /run, busybox bound read-only),
 * chrooted into the root and became the guest's init (ferry-fake-init, fake-init.c, found beside
 * the running program); every guest command is a child of that init, started at this process's
 * request, so a mount one command makes is there for the next (as in a real guest) and all of
 * them vanish with the namespace. What stands in for the virtual hardware:
 * - a plugged disk is a loop device of the image (raw only) with a node in the guest's /dev and
 *   its serial in the guest's /sys/block/NAME/serial, where a Linux guest's sysfs has it;
 * - a virtio-serial port is a FIFO in /dev/virtio-ports/ fed by a relay thread from a unix
 *   socket whose other end the host writes (so the host sees a socket, as from QEMU: its send
 *   queue empties only as the guest reads, and the guest sees end-of-file after the last byte);
 * - a guest port is a port on the host's loopback (the guest shares the host's network);
 * - a shared host folder is bound into the guest's namespace by the mount command itself.
 * What it cannot do (no loop devices, no namespaces, no busybox, no ferry-fake-init)
 * fake_root_support() says.
 *
 * It runs as root only (mount namespaces, chroot, loop devices). Every process it starts is in
 * the guest's namespace and killed by fake_root_destroy(), which also detaches the loop
 * devices and removes the root directory.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Where the guest finds the folders the machine exports (fake_root_share()). */
#define FAKE_SHARES "/run/ferry-shares"

struct fake_root;

/* NULL when this host can run fake guests, else why not (a static string). */
const char *fake_root_support(void);

/* A new guest whose root is the new directory dir (it must not exist), with the host's ferry-sum
 * at sum (NULL: none) as its /usr/bin/ferry-sum. 0 or -1 with *err. */
int fake_root_boot(const char *dir, const char *sum, struct fake_root **out, char **err);
/* Kill every process of the guest, detach its disks, end its namespace, remove its root. */
void fake_root_destroy(struct fake_root *r);
/*
 * For a test program: when it aborts (a failed assertion: SIGABRT), end every guest still alive
 * as fake_root_destroy() would (their processes, loop devices and roots), remove the folder dir
 * (its scratch folder; NULL: none), then abort. Without it the guests' processes and loop devices
 * outlive the program. Call again to change dir.
 */
void fake_root_abort_cleanup(const char *dir);
/* The host path of the guest's root directory. */
const char *fake_root_dir(const struct fake_root *r);

/* A guest process started by fake_root_start(). */
struct fake_proc;

/* What a guest process reads on stdin: len bytes of buf (copied), or a dup of the host's fd,
 * or, when pipe is not NULL, a pipe whose write end *pipe gets (the caller closes it to end the
 * input; a stream socket: send() it with MSG_NOSIGNAL); else (all zero but fd -1) /dev/null. */
struct fake_input {
	const void *buf;
	size_t len;
	int fd;
	int *pipe;
};

/*
 * Start argv (argv[0] found in the guest's PATH) in the guest, in a process group of its own,
 * with stdin from input (NULL: /dev/null); stdout and stderr are kept in memory files.
 */
int fake_root_start(struct fake_root *r, const char *const *argv, const struct fake_input *input,
		    struct fake_proc **out, char **err);
/* fake_root_start of `/bin/sh -c cmd`. */
int fake_root_start_sh(struct fake_root *r, const char *cmd, const struct fake_input *input,
		       struct fake_proc **out, char **err);

struct fake_result {
	int status; /* exit status, or -1 when killed by a signal */
	int signal;
	char *out, *err; /* NUL-terminated (caller frees with fake_result_clear) */
	size_t out_len, err_len;
};
void fake_result_clear(struct fake_result *res);

/*
 * Wait up to timeout_ms for p to end and free it; returns 0 with *res filled, 1 on timeout or
 * 2 on an interrupt (run_interrupted(); the process group is then killed, *res empty), or -1
 * with *err.
 */
int fake_proc_wait(struct fake_root *r, struct fake_proc *p, unsigned timeout_ms,
		   struct fake_result *res, char **err);
/* Whether p has ended (without waiting). */
bool fake_proc_done(struct fake_proc *p);
/* Kill p's process group, reap it and free p. */
void fake_proc_kill(struct fake_root *r, struct fake_proc *p);

/* `sh -c cmd` with len bytes of input, waited for (fake_proc_wait); no hung programs. */
int fake_root_run(struct fake_root *r, const char *cmd, const void *input, size_t len,
		  unsigned timeout_ms, struct fake_result *res, char **err);

/*
 * path opened as the guest's root would open it (open(2)'s flags; a file it creates is 0644), from
 * the host: in the root's directory in the guest's mount namespace, with every mount the guest
 * made, each component and link resolved inside the root (by a thread chrooted there). As the
 * agent's guest-file-open opens a file: without a process in the guest. A descriptor, or -1
 * with errno.
 */
int fake_root_open(struct fake_root *r, const char *path, int flags);

/*
 * Plug the raw image at path as a disk with this serial: a loop device (read-only when ro) with
 * the node /dev/NAME in the guest and NAME's serial in its /sys/block. *name gets NAME ("vdc";
 * caller frees) when name is not NULL. 0 or -1 with *err.
 */
int fake_root_plug(struct fake_root *r, const char *path, const char *serial, bool ro, char **name,
		   char **err);
/* Unplug the disk with this serial (its node and loop device go; a guest mount of it keeps the
 * loop device until it is unmounted). 0 or -1 with *err. */
int fake_root_unplug(struct fake_root *r, const char *serial, char **err);
/* The guest's device name of the disk with this serial, or NULL. */
const char *fake_root_disk(const struct fake_root *r, const char *serial);

/*
 * Open the port /dev/virtio-ports/NAME (made at the first open): *fd gets the host's end, a
 * connected unix stream socket. An earlier connection to the same port is ended. 0 or -1.
 */
int fake_root_channel(struct fake_root *r, const char *name, int *fd, char **err);

/*
 * Export host_dir to the guest under tag, as a machine's 9p or virtiofs device: the guest's
 * `mount -t 9p|virtiofs TAG DIR` (its shell's profile) binds it on DIR. 0 or -1 with *err.
 */
int fake_root_share(struct fake_root *r, const char *tag, const char *host_dir, char **err);
/* Make the guest program prog (a name, e.g. "tar") hang: every later guest command started with
 * fake_root_start() that runs it through the guest's shell blocks there until it is killed
 * (fake_root_run(), the machine's own housekeeping, is not affected). 0 or -1 with *err. */
int fake_root_hang(struct fake_root *r, const char *prog, char **err);

/* Processes in the guest's namespace now (its init not counted), or -1 when it is gone. */
int fake_root_procs(const struct fake_root *r);
/* Disks plugged now (the target included). */
unsigned fake_root_disks(const struct fake_root *r);
/* Mounts in the guest now besides those it boots with (/proc, /dev, /tmp, /run, /bin, busybox). */
int fake_root_mounts(const struct fake_root *r);
/* Whether mnt is a mount point in the guest now (its /proc/mounts): 1, 0, or -1 with *err. */
int fake_root_mounted(const struct fake_root *r, const char *mnt, char **err);
/* Every entry that is not a directory under the guest paths dirs (NULL-ended), but not under
 * the directory prune, as "PATH,PATH," ("" for none): read from the host, no guest process. */
char *fake_root_files(const struct fake_root *r, const char *const *dirs, const char *prune);
/* The first regular file below the guest directory dir in byte order of its path (as `find DIR
 * -type f | sort | head -n 1` names it), or NULL for none: read from the host, no guest process. */
char *fake_root_first_file(const struct fake_root *r, const char *dir);
