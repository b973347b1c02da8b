/* SPDX-License-Identifier: MIT */
/*
 * ferry-fake-init: a fake guest's first process (fake-guest.c). The holder execs it in the
 * guest's mount namespace and root, and from then on it starts the guest's commands for the
 * process that owns the guest and tells it how they ended.
 *
 * Why a process of its own: the owner is a test program, often under valgrind, which runs every
 * fork or vfork of its client as a fork of its whole process (its shadow memory included): a
 * guest command spawned from there cost more in copying page tables than the command itself.
 * Here a command is a message, and the fork is a small static program's.
 *
 * On the SOCK_SEQPACKET socket at fd 0 (its end of file ends the guest):
 *   request: the command's argv, NUL-terminated strings, with four descriptors (SCM_RIGHTS):
 *     its stdin, stdout and stderr, and a reply socket;
 *   reply, on the reply socket: an int32 pid, or minus an errno when it did not start; later
 *     an int32 wait status when it ended, its process group killed first (what it left
 *     running in its group ends with it); then the reply socket is closed.
 * It is a child subreaper: what a command leaves behind outside its group is reaped here, not
 * by the host's init. Every command runs `/bin/sh` in a process group of its own, with every
 * signal at its default action and none blocked.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* the longest request: a command line as long as Linux takes for an exec (ARG_MAX of an 8 MiB
 * stack is 2 MiB), twice over; fake-guest.c sizes the socket's send buffer to it */
#define MAX_MSG (4u << 20)

static char env_path[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin", env_home[] = "HOME=/root",
	    env_lc[] = "LC_ALL=C";

struct child {
	pid_t pid;
	int reply;
};

static struct child *kids;
static size_t n_kids, cap_kids;
static char msg[MAX_MSG + 1];

static void reply(int fd, int32_t v)
{
	(void)!send(fd, &v, sizeof(v), MSG_NOSIGNAL);
}

/* In the child: the command, or its errno on ep and exit 127. */
static void child(char **argv, const int fds[3], int ep)
{
	static char *envp[] = { env_path, env_home, env_lc, NULL };
	sigset_t none;
	sigemptyset(&none);
	setpgid(0, 0);
	/* what the owner ignored (ferry ignores SIGPIPE) survived its fork and our exec */
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int i = 0; i < 3; i++)
		if (dup2(fds[i], i) < 0)
			goto fail;
	execve("/bin/sh", argv, envp);
fail:;
	int e = errno;
	(void)!write(ep, &e, sizeof(e));
	_exit(127);
}

/* Starts the command of one request: its pid, or minus an errno. */
static int32_t start(char *buf, size_t len, const int fds[3])
{
	size_t argc = 0;
	for (size_t i = 0; i < len; i++)
		argc += buf[i] == '\0';
	if (len == 0 || buf[len - 1] != '\0')
		return -EINVAL;
	char **argv = calloc(argc + 1, sizeof(char *));
	if (!argv)
		return -ENOMEM;
	for (size_t i = 0, k = 0; k < argc; k++) {
		argv[k] = buf + i;
		i += strlen(buf + i) + 1;
	}
	int ep[2];
	if (pipe2(ep, O_CLOEXEC) < 0) {
		free(argv);
		return -errno;
	}
	pid_t pid = fork();
	if (pid == 0)
		child(argv, fds, ep[1]);
	int32_t r = pid < 0 ? -errno : pid;
	free(argv);
	close(ep[1]);
	if (pid > 0) {
		/* also here, so that a kill of the group right after the reply reaches it */
		setpgid(pid, pid);
		int e;
		if (read(ep[0], &e, sizeof(e)) == (ssize_t)sizeof(e)) {
			waitpid(pid, NULL, 0);
			r = -e;
		}
	}
	close(ep[0]);
	return r;
}

/* One request: 0 at the owner's end of file (or a broken socket), else 1. */
static int request(void)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(4 * sizeof(int))];
	} c;
	struct iovec iov = { .iov_base = msg, .iov_len = MAX_MSG };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.b, .msg_controllen = sizeof(c.b)
	};
	ssize_t n = recvmsg(0, &m, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : 0;
	if (n == 0)
		return 0;
	int fds[4] = { -1, -1, -1, -1 }, nfd = 0;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
			size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < k; i++) {
				int fd;
				memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
				if (nfd < 4)
					fds[nfd++] = fd;
				else
					close(fd);
			}
		}
	if (nfd == 4) {
		int32_t r =
		    m.msg_flags & (MSG_TRUNC | MSG_CTRUNC) ? -E2BIG : start(msg, (size_t)n, fds);
		reply(fds[3], r);
		if (r > 0 && n_kids == cap_kids) {
			size_t cap = cap_kids ? 2 * cap_kids : 16;
			struct child *k = realloc(kids, cap * sizeof(*k));
			if (!k) {
				kill(-r, SIGKILL);
				r = -ENOMEM;
			} else {
				kids = k;
				cap_kids = cap;
			}
		}
		if (r > 0) {
			kids[n_kids++] = (struct child){ .pid = r, .reply = fds[3] };
			fds[3] = -1;
		}
	}
	for (int i = 0; i < nfd; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return 1;
}

/* Reaps every ended child: a command's group is killed before its leader is reaped (while its
 * pid still names the group), and its owner gets the wait status. */
static void reap(void)
{
	for (;;) {
		siginfo_t si;
		si.si_pid = 0;
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
			return;
		size_t i = 0;
		while (i < n_kids && kids[i].pid != si.si_pid)
			i++;
		if (i < n_kids)
			kill(-si.si_pid, SIGKILL);
		int status = 0;
		if (waitpid(si.si_pid, &status, 0) != si.si_pid)
			return;
		if (i < n_kids) {
			reply(kids[i].reply, status);
			close(kids[i].reply);
			kids[i] = kids[--n_kids];
		}
	}
}

int main(void)
{
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0 || prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		return 1;
	struct pollfd pf[2] = { { .fd = 0, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };
	for (;;) {
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[1].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				;
			reap();
		}
		if (pf[0].revents && !request())
			break;
	}
	/* the owner let go of the guest: nothing of it goes on */
	for (size_t i = 0; i < n_kids; i++)
		kill(-kids[i].pid, SIGKILL);
	return 0;
}
