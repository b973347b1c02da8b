/* SPDX-License-Identifier: MIT */
/*
 * A fake guest's processes (fake-guest.h): the guest's init (fake-init.c) starts them, one message
 * a command over its socket, and says how they ended; they run until they end, time out or are
 * killed with their process group.
 */
#include "fake-guest.h"
#include "fake-guest-int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs.h"
#include "run.h"
#include "util.h"

struct fake_proc {
	pid_t pid;
	int out, err; /* memory files */
	int reply;    /* the init's word on how it ended */
	bool reaped;
	int status;
};

/* One int32 from the init on fd, waiting at most timeout_ms (-1: as long as it takes): 1, 0 at
 * its end of file (the init is gone), -1 when there is none yet. */
static int init_word(int fd, int timeout_ms, int32_t *v)
{
	for (;;) {
		ssize_t n = recv(fd, v, sizeof(*v), MSG_DONTWAIT);
		if (n == (ssize_t)sizeof(*v))
			return 1;
		if (n >= 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN || timeout_ms == 0)
			return errno == EAGAIN ? -1 : 0;
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		if (poll(&pf, 1, timeout_ms) == 0)
			return -1;
	}
}

/*
 * Starts `/bin/sh argv...` in the guest with in, out and err as its stdin, stdout and stderr:
 * the pid, with *reply the socket its end will be told on, or -1 with errno. The guest's init
 * spawns it (fake-init.c): a spawn from here, in a test program under valgrind, was a fork of
 * the whole checked process per command.
 */
static pid_t spawn(const struct fake_root *r, char *const *argv, int in, int out, int err,
		   int *reply)
{
	size_t len = 0;
	for (size_t i = 0; argv[i]; i++)
		len += strlen(argv[i]) + 1;
	char *buf = xmalloc(len), *w = buf;
	for (size_t i = 0; argv[i]; i++)
		w = stpcpy(w, argv[i]) + 1;
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
		free(buf);
		return -1;
	}
	int fds[4] = { in, out, err, sp[1] };
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(fds))];
	} c;
	memset(&c, 0, sizeof(c));
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.b, .msg_controllen = sizeof(c.b)
	};
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(h), fds, sizeof(fds));
	ssize_t n;
	do
		n = sendmsg(r->ctl, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	int e = errno;
	free(buf);
	close(sp[1]);
	int32_t v = 0;
	int got = n < 0 ? -1 : init_word(sp[0], -1, &v);
	if (got != 1 || v <= 0) {
		close(sp[0]);
		errno = n < 0 ? e : got != 1 ? EPIPE : (int)-v;
		return -1;
	}
	*reply = sp[0];
	return (pid_t)v;
}

static int memfile(const char *name, char **err)
{
	int fd = memfd_create(name, MFD_CLOEXEC);
	if (fd < 0)
		*err = xasprintf("fake guest: memfd_create: %s", strerror(errno));
	return fd;
}

/* hangs: the command reads the hung programs too (fake_root_hang()); the fake machine's own
 * housekeeping (fake_root_run()) does not */
static int start(struct fake_root *r, const char *const *argv, const struct fake_input *input,
		 bool hangs, struct fake_proc **out, char **err)
{
	static const struct fake_input none = { .fd = -1 };
	const struct fake_input *inp = input ? input : &none;
	int in = -1, wr = -1;
	if (inp->pipe) {
		/* a socket, so that the writer can send without SIGPIPE (MSG_NOSIGNAL) */
		int p[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) < 0) {
			*err = xasprintf("fake guest: socketpair: %s", strerror(errno));
			return -1;
		}
		in = p[0];
		wr = p[1];
		shutdown(in, SHUT_WR);
	} else if (inp->fd >= 0) {
		if ((in = fcntl(inp->fd, F_DUPFD_CLOEXEC, 0)) < 0) {
			*err = xasprintf("fake guest: stdin: %s", strerror(errno));
			return -1;
		}
	} else if (inp->buf && inp->len) {
		if ((in = memfile("stdin", err)) < 0)
			return -1;
		if (write_all(in, inp->buf, inp->len) < 0 || lseek(in, 0, SEEK_SET) < 0) {
			*err = xasprintf("fake guest: stdin: %s", strerror(errno));
			close(in);
			return -1;
		}
	} else if ((in = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		*err = xasprintf("fake guest: /dev/null: %s", strerror(errno));
		return -1;
	}
	/* through the guest's shell, which reads the profile first (its functions stand in for
	 * what the fake has no kernel for, and make a program hang: fake_root_hang()):
	 * sh -c '. PROFILE; CMD' for a shell command, else sh -c '. PROFILE; "$0" "$@"' ARGV */
	size_t n = 0;
	while (argv[n])
		n++;
	bool shell =
	    n >= 3 && (STREQ(argv[0], "/bin/sh") || STREQ(argv[0], "sh")) && STREQ(argv[1], "-c");
	char **av = xcalloc(n + 4, sizeof(char *));
	av[0] = fake_arg_sh;
	av[1] = fake_arg_c;
	size_t k = 2, first = shell ? 3 : 0;
	const char *pre = hangs ? ". " PROFILE "; . " HANGS "; " : ". " PROFILE "; ";
	av[k++] = shell ? xasprintf("%s%s", pre, argv[2]) : xasprintf("%s\"$0\" \"$@\"", pre);
	for (size_t i = first; i < n; i++)
		av[k++] = xstrdup(argv[i]);
	struct fake_proc *p = xcalloc(1, sizeof(*p));
	p->reply = -1;
	p->out = memfile("stdout", err);
	p->err = p->out >= 0 ? memfile("stderr", err) : -1;
	/* the process is in the guest once this returns (it was born there), and a failure to
	 * enter it or to exec is this call's error */
	p->pid = p->err >= 0 ? spawn(r, av, in, p->out, p->err, &p->reply) : -1;
	int e = errno;
	for (size_t i = 2; i < k; i++)
		free(av[i]);
	free(av);
	close(in);
	if (p->pid < 0) {
		if (p->err >= 0 || p->out >= 0)
			*err =
			    xasprintf("fake guest: cannot start a guest command: %s", strerror(e));
		if (wr >= 0)
			close(wr);
		if (p->out >= 0)
			close(p->out);
		if (p->err >= 0)
			close(p->err);
		free(p);
		return -1;
	}
	if (inp->pipe)
		*inp->pipe = wr;
	*out = p;
	return 0;
}

int fake_root_start(struct fake_root *r, const char *const *argv, const struct fake_input *input,
		    struct fake_proc **out, char **err)
{
	return start(r, argv, input, true, out, err);
}

int fake_root_start_sh(struct fake_root *r, const char *cmd, const struct fake_input *input,
		       struct fake_proc **out, char **err)
{
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	return fake_root_start(r, argv, input, out, err);
}

static char *slurp(int fd, size_t *len)
{
	off_t n = lseek(fd, 0, SEEK_END);
	if (n < 0)
		n = 0;
	char *buf = xmalloc((size_t)n + 1);
	ssize_t got = pread(fd, buf, (size_t)n, 0);
	*len = got > 0 ? (size_t)got : 0;
	buf[*len] = '\0';
	return buf;
}

static void proc_free(struct fake_proc *p)
{
	close(p->reply);
	close(p->out);
	close(p->err);
	free(p);
}

/* Whether p ended, waiting at most timeout_ms for it (-1: as long as it takes). The init killed
 * its group before it reaped p (what p left running ends with it) and said so once the group
 * was gone (fake-init.c). */
static bool done_within(struct fake_proc *p, int timeout_ms)
{
	if (p->reaped)
		return true;
	int32_t st = 0;
	int got = init_word(p->reply, timeout_ms, &st);
	if (got < 0)
		return false;
	/* without a word the init is gone, and with it the guest's processes */
	p->status = got == 1 ? st : SIGKILL;
	p->reaped = true;
	return true;
}

bool fake_proc_done(struct fake_proc *p)
{
	return done_within(p, 0);
}

void fake_proc_kill(struct fake_root *r, struct fake_proc *p)
{
	(void)r;
	if (!fake_proc_done(p)) {
		kill(-p->pid, SIGKILL);
		done_within(p, -1);
	}
	proc_free(p);
}

int fake_proc_wait(struct fake_root *r, struct fake_proc *p, unsigned timeout_ms,
		   struct fake_result *res, char **err)
{
	(void)err;
	memset(res, 0, sizeof(*res));
	uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000u;
	/* woken by the init's word, or every 16 ms for a Ctrl-C and the clock */
	while (!done_within(p, 16)) {
		if (run_interrupted() || now_ns() >= end) {
			fake_proc_kill(r, p);
			return run_interrupted() ? 2 : 1;
		}
	}
	res->status = WIFEXITED(p->status) ? WEXITSTATUS(p->status) : -1;
	res->signal = WIFSIGNALED(p->status) ? WTERMSIG(p->status) : 0;
	res->out = slurp(p->out, &res->out_len);
	res->err = slurp(p->err, &res->err_len);
	proc_free(p);
	return 0;
}

void fake_result_clear(struct fake_result *res)
{
	free(res->out);
	free(res->err);
	memset(res, 0, sizeof(*res));
}

int fake_root_run(struct fake_root *r, const char *cmd, const void *input, size_t len,
		  unsigned timeout_ms, struct fake_result *res, char **err)
{
	struct fake_input in = { .buf = input, .len = len, .fd = -1 };
	struct fake_proc *p = NULL;
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	if (start(r, argv, &in, false, &p, err) < 0)
		return -1;
	return fake_proc_wait(r, p, timeout_ms, res, err);
}

/* Calls fn(pid, ud) for every process in the guest's namespace but its init (the holder). */
static int each_proc(const struct fake_root *r, void (*fn)(pid_t pid, void *ud), void *ud)
{
	DIR *d = opendir("/proc");
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || pid == r->holder)
			continue;
		char path[64];
		struct stat sb;
		snprintf(path, sizeof(path), "/proc/%ld/ns/mnt", pid);
		if (stat(path, &sb) < 0 || sb.st_ino != r->ns_ino)
			continue;
		n++;
		if (fn)
			fn((pid_t)pid, ud);
	}
	closedir(d);
	return n;
}

int fake_root_procs(const struct fake_root *r)
{
	return each_proc(r, NULL, NULL);
}

static void kill_one(pid_t pid, void *ud)
{
	(void)ud;
	kill(pid, SIGKILL);
}

void fake_procs_kill_all(const struct fake_root *r)
{
	for (int round = 0; round < 50 && each_proc(r, kill_one, NULL) > 0; round++)
		usleep(2000);
}
