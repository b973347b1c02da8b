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
 *     running in its group ends with it) and gone (ended()); then the reply socket is closed.
 * It is a child subreaper: what a command leaves behind outside its group is reaped here, not
 * by the host's init. Every command runs `/bin/sh` in a process group of its own, with every
 * signal at its default action and none blocked.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
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

/* Starts the command of one request: its pid, or minus an errno. posix_spawn(), not fork():
 * a fork copied this process's page tables for every command, only to drop them at the exec. */
static int32_t start(char *buf, size_t len, const int fds[3])
{
	static char *envp[] = { env_path, env_home, env_lc, NULL };
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
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	posix_spawn_file_actions_init(&fa);
	for (int i = 0; i < 3; i++)
		posix_spawn_file_actions_adddup2(&fa, fds[i], i);
	/* in a process group of its own, no signal blocked, every signal at its default action
	 * (what the owner ignored, as ferry ignores SIGPIPE, survived its fork and this exec) */
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
					    POSIX_SPAWN_SETPGROUP);
	pid_t pid = -1;
	int e = posix_spawn(&pid, "/bin/sh", &fa, &attr, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	free(argv);
	return e ? -e : pid;
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

/* Commands that ended, their groups killed, whose owners are not told yet (ended()). */
static struct ended {
	pid_t pid;
	int reply;
	int status;
} * ends;
static size_t n_ends, cap_ends;

/* Reaps every ended child: a command's group is killed before its leader is reaped (while its
 * pid still names the group), and the command goes to ends; an orphan is just reaped. */
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
		if (i == n_kids)
			continue;
		if (n_ends == cap_ends) {
			size_t cap = cap_ends ? 2 * cap_ends : 16;
			struct ended *e = realloc(ends, cap * sizeof(*e));
			if (!e) {
				/* no room to wait for its group: told now */
				reply(kids[i].reply, status);
				close(kids[i].reply);
				kids[i] = kids[--n_kids];
				continue;
			}
			ends = e;
			cap_ends = cap;
		}
		ends[n_ends++] =
		    (struct ended){ .pid = si.si_pid, .reply = kids[i].reply, .status = status };
		kids[i] = kids[--n_kids];
	}
}

/*
 * Tells the owners of the ended commands, each once nothing of its group is left (at most
 * 0.2 s): the killed members die at their own pace, and those orphaned by the kill are this
 * subreaper's to reap, so an owner that hears of the end finds no process of it in the guest.
 */
static void ended(void)
{
	while (n_ends) {
		struct ended e = ends[--n_ends];
		for (int i = 0; i < 2000; i++) {
			reap();
			if (kill(-e.pid, 0) < 0)
				break;
			usleep(100);
		}
		reply(e.reply, e.status);
		close(e.reply);
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
			ended();
		}
		if (pf[0].revents && !request())
			break;
	}
	/* the owner let go of the guest: nothing of it goes on */
	for (size_t i = 0; i < n_kids; i++)
		kill(-kids[i].pid, SIGKILL);
	return 0;
}
