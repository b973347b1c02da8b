/* SPDX-License-Identifier: MIT */
/*
 * ferry-virtiofsd: what libvirt starts (as root, <binary path=...>) in place of virtiofsd for
 * ferry's virtiofs shares. QEMU 7.2's C virtiofsd has no id mapping and runs as root: a guest
 * could make root-owned files, devices and setuid-root binaries on the host (issue 24 class 2).
 * This wrapper runs the host's virtiofsd with the same arguments, in the same process (libvirt's
 * pid file and its kill at the domain's end reach virtiofsd itself), after:
 * - a new user namespace whose ids 0..65535 are the host's SHARE_IDS_BASE.. (share-ids.h): every
 *   file the guest makes belongs to an id no account owns, devices cannot be made (mknod of a
 *   device needs CAP_MKNOD in the host's namespace), and files of other host ids are only
 *   readable as their modes allow anyone;
 * - a seccomp filter that answers EPERM to every chmod, create, mkdir or mknod asking for a
 *   setuid or setgid bit, and to mknod of a character or block device (a user namespace may
 *   make the 0:0 "whiteout" device); openat2, whose mode the filter cannot read, is ENOSYS.
 * The namespace's maps are written by a child that stays in the host's namespace (a process
 * cannot map ids of its parent namespace into its own one before it has them), as util-linux's
 * unshare does with newuidmap, which this host does not have.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "share-ids.h"

#if defined(__x86_64__)
#define FILTER_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define FILTER_ARCH AUDIT_ARCH_AARCH64
#endif

/* The low 32 bits of argument i (modes are ints; the kernel reads only those). */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ARG_LOW(i) ((unsigned)(offsetof(struct seccomp_data, args) + 8 * (i)))
#else
#define ARG_LOW(i) ((unsigned)(offsetof(struct seccomp_data, args) + 8 * (i) + 4))
#endif
#define ALLOW   BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define DENY(e) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (e))
#define LOAD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
/* nr(..., mode in argument i, ...): EPERM with a setuid or setgid bit in the mode */
#define NO_SETID(nr, i)                                                                            \
	LOAD_NR, BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 4),                                  \
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(i)),                                        \
	    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, S_ISUID | S_ISGID, 0, 1), DENY(EPERM), ALLOW
/* mknod: no setuid/setgid bit, no character or block device */
#define NO_DEVICE(nr, i)                                                                           \
	LOAD_NR, BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 7),                                  \
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(i)),                                        \
	    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, S_ISUID | S_ISGID, 4, 0),                         \
	    BPF_STMT(BPF_ALU | BPF_AND | BPF_K, S_IFMT),                                           \
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, S_IFCHR, 2, 0),                                    \
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, S_IFBLK, 1, 0), ALLOW, DENY(EPERM)

static int no_setid_filter(void)
{
#ifdef FILTER_ARCH
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FILTER_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		LOAD_NR,
		/* x86-64's x32 calls (nr | 0x40000000) would pass every check below */
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1),
		DENY(EPERM),
		NO_SETID(__NR_fchmod, 1),
		NO_SETID(__NR_fchmodat, 2),
		NO_SETID(__NR_openat, 3),
		NO_SETID(__NR_mkdirat, 2),
		NO_DEVICE(__NR_mknodat, 2),
#ifdef __NR_chmod
		NO_SETID(__NR_chmod, 1),
		NO_SETID(__NR_open, 2),
		NO_SETID(__NR_creat, 1),
		NO_SETID(__NR_mkdir, 1),
		NO_DEVICE(__NR_mknod, 1),
#endif
#ifdef __NR_fchmodat2
		NO_SETID(__NR_fchmodat2, 2),
#endif
		LOAD_NR,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 437 /* openat2 */, 0, 1),
		DENY(ENOSYS),
		ALLOW,
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	return (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
#else
	errno = ENOSYS; /* an architecture the filter does not know: no virtiofs */
	return -1;
#endif
}

static const char *real_virtiofsd(void)
{
	static const char *const paths[] = { "/usr/lib/qemu/virtiofsd", "/usr/libexec/virtiofsd" };
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (access(paths[i], X_OK) == 0)
			return paths[i];
	return NULL;
}

static int write_map(pid_t pid, const char *which)
{
	char path[64], line[64];
	snprintf(path, sizeof(path), "/proc/%ld/%s", (long)pid, which);
	int n = snprintf(line, sizeof(line), "0 %u %u\n", SHARE_IDS_BASE, SHARE_IDS_COUNT);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int r = write(fd, line, (size_t)n) == n ? 0 : -1;
	close(fd);
	return r;
}

/* This process into a new user namespace, its maps written by a child of the host's. */
static int enter_namespace(void)
{
	int go[2];
	if (pipe2(go, O_CLOEXEC) < 0)
		return -1;
	pid_t self = getpid();
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		_exit(write_map(self, "uid_map") < 0 || write_map(self, "gid_map") < 0 ? 2 : 0);
	}
	close(go[0]);
	int r = unshare(CLONE_NEWUSER);
	int e = errno;
	if (r == 0 && write(go[1], "x", 1) != 1)
		r = -1, e = errno;
	close(go[1]); /* the child ends at end-of-file when unshare failed */
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (r < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		errno = r < 0 ? e : EPERM;
		return -1;
	}
	/* the namespace's root: the host's SHARE_IDS_BASE */
	if (setresgid(0, 0, 0) < 0 || setgroups(0, NULL) < 0 || setresuid(0, 0, 0) < 0)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	(void)argc;
	const char *real = real_virtiofsd();
	if (!real) {
		fprintf(stderr, "ferry-virtiofsd: no virtiofsd (/usr/lib/qemu/virtiofsd, "
				"/usr/libexec/virtiofsd)\n");
		return 127;
	}
	if (enter_namespace() < 0) {
		fprintf(stderr, "ferry-virtiofsd: cannot enter a user namespace: %s\n",
			strerror(errno));
		return 126;
	}
	if (no_setid_filter() < 0) {
		fprintf(stderr, "ferry-virtiofsd: cannot install the seccomp filter: %s\n",
			strerror(errno));
		return 126;
	}
	argv[0] = (char *)real;
	execv(real, argv);
	fprintf(stderr, "ferry-virtiofsd: cannot run %s: %s\n", real, strerror(errno));
	return 127;
}
