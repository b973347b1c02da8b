/* SPDX-License-Identifier: MIT */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>

#include "run.h"
#include "util.h"

extern char **environ;

char *proc_last_line(const char *s, size_t n)
{
	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
		n--;
	size_t start = n;
	while (start > 0 && s[start - 1] != '\n')
		start--;
	return xstrndup(s + start, n - start);
}

void proc_result_clear(struct proc_result *res)
{
	free(res->out);
	free(res->errout);
	*res = (struct proc_result){ 0 };
}

/* Our environment with `set` ("NAME=VALUE") replacing or adding entries; NULL when set is. */
static char **merged_env(const char *const *set)
{
	size_t n = 0, k = 0, ns = 0;
	if (!set)
		return NULL;
	while (environ[n])
		n++;
	while (set[ns])
		ns++;
	char **env = xcalloc(n + ns + 1, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		bool replaced = false;
		for (size_t j = 0; j < ns && !replaced; j++) {
			size_t l = strcspn(set[j], "=");
			replaced = strncmp(environ[i], set[j], l) == 0 && environ[i][l] == '=';
		}
		if (!replaced)
			env[k++] = environ[i];
	}
	for (size_t j = 0; j < ns; j++)
		env[k++] = (char *)set[j];
	env[k] = NULL;
	return env;
}

struct sink {
	int fd;
	char *buf;
	size_t len, cap;
};

enum stop { STOP_NONE, STOP_TIMEOUT, STOP_SIGNAL };

/* Kill the child for `why` (once). */
static void stop_child(pid_t pid, enum stop *stopped, enum stop why)
{
	if (*stopped == STOP_NONE) {
		*stopped = why;
		kill(pid, SIGKILL);
	}
}

/*
 * Read both pipes until both are closed (one poll loop: neither can fill up and block). The
 * child is killed when the deadline passes or, when `on_signal`, a signal interrupts the run (the
 * run's self-pipe wakes the poll): then the pipes are left (a grandchild may hold them) and
 * *stopped says why.
 */
static void drain(struct sink *s, size_t n, pid_t pid, uint64_t deadline, bool on_signal,
		  enum stop *stopped)
{
	for (;;) {
		struct pollfd p[3];
		size_t np = 0;
		for (size_t i = 0; i < n; i++)
			if (s[i].fd >= 0)
				p[np++] = (struct pollfd){ .fd = s[i].fd, .events = POLLIN };
		if (np == 0)
			return;
		size_t nfd = np;
		if (on_signal && run_signal_fd() >= 0)
			p[nfd++] = (struct pollfd){ .fd = run_signal_fd(), .events = POLLIN };
		if (on_signal && run_interrupted())
			stop_child(pid, stopped, STOP_SIGNAL);
		uint64_t now = now_ns();
		if (now >= deadline)
			stop_child(pid, stopped, STOP_TIMEOUT);
		if (*stopped) {
			for (size_t i = 0; i < n; i++)
				if (s[i].fd >= 0) {
					close(s[i].fd);
					s[i].fd = -1;
				}
			return;
		}
		uint64_t left_ms = (deadline - now) / 1000000u + 1;
		int rc = poll(p, nfd, left_ms > 60000 ? 60000 : (int)left_ms);
		if (rc < 0 && errno != EINTR)
			return;
		if (rc <= 0)
			continue;
		for (size_t k = 0; k < np; k++) {
			if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			struct sink *x = NULL;
			for (size_t i = 0; i < n; i++)
				if (s[i].fd == p[k].fd)
					x = &s[i];
			x->buf = xgrow(x->buf, &x->cap, x->len + 65536 + 1, 1);
			ssize_t r = read(x->fd, x->buf + x->len, x->cap - x->len - 1);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				close(x->fd);
				x->fd = -1;
				continue;
			}
			x->len += (size_t)r;
		}
	}
}

static char *finish(struct sink *s, size_t *len)
{
	s->buf = xgrow(s->buf, &s->cap, s->len + 1, 1);
	s->buf[s->len] = '\0';
	if (len)
		*len = s->len;
	return s->buf;
}

int proc_spawn(const char *const *argv, const struct proc_opts *opts, struct proc_result *res,
	       char **err)
{
	static const struct proc_opts defaults = { 0 };
	const struct proc_opts *o = opts ? opts : &defaults;
	int out[2] = { -1, -1 }, errp[2] = { -1, -1 };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	pid_t pid;
	int rc, status;

	*res = (struct proc_result){ 0 };
	if (pipe2(out, O_CLOEXEC) < 0 || (o->split_stderr && pipe2(errp, O_CLOEXEC) < 0)) {
		int e = errno;
		for (int i = 0; i < 2; i++) {
			if (out[i] >= 0)
				close(out[i]);
		}
		*err = xasprintf("cannot create a pipe: %s", strerror(e));
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	if (o->stdin_fd > 0)
		posix_spawn_file_actions_adddup2(&fa, o->stdin_fd, 0);
	else
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, o->split_stderr ? errp[1] : out[1], 2);
	if (o->cwd)
		posix_spawn_file_actions_addchdir_np(&fa, o->cwd);
	/* the child starts with no signal blocked and every signal at its default action */
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	_cleanup_free_ char **env = merged_env(o->env);
	/* A signal kills the helpers it interrupts. A helper started after it is the cleanup's
	 * (ip netns del, qemu-img, umount): it runs to its end, under its timeout and the second
	 * signal's deadline (run.h), or the cleanup would leave what it was started to remove.
	 * Which of the two it is is decided before it starts: a signal it sends or causes itself
	 * may arrive before posix_spawnp returns (run-dir's proc-timeout hung so under load). */
	bool on_signal = !run_interrupted();
	rc = posix_spawnp(&pid, argv[0], &fa, &attr, (char *const *)argv, env ? env : environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(out[1]);
	if (errp[1] >= 0)
		close(errp[1]);
	if (rc != 0) {
		close(out[0]);
		if (errp[0] >= 0)
			close(errp[0]);
		*err = xasprintf("cannot run '%s': %s", argv[0], strerror(rc));
		return -1;
	}
	struct sink s[2] = { { .fd = out[0] }, { .fd = errp[0] } };
	uint64_t limit = o->timeout_ms ? o->timeout_ms : PROC_TIMEOUT_DEFAULT_MS;
	enum stop stopped = STOP_NONE;
	drain(s, o->split_stderr ? 2 : 1, pid, now_ns() + limit * 1000000u, on_signal, &stopped);
	res->out = finish(&s[0], &res->out_len);
	if (o->split_stderr)
		res->errout = finish(&s[1], NULL);
	/* EINTR is retried, but a signal that interrupts the run kills the child first: the
	 * wait never swallows SIGTERM */
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			*err = xasprintf("cannot wait for '%s': %s", argv[0], strerror(errno));
			proc_result_clear(res);
			return -1;
		}
		if (on_signal && run_interrupted())
			stop_child(pid, &stopped, STOP_SIGNAL);
	}
	if (stopped) {
		*err = stopped == STOP_TIMEOUT
			   ? xasprintf("'%s' did not finish in %llu ms and was killed", argv[0],
				       (unsigned long long)limit)
			   : xasprintf("'%s' was killed: ferry was interrupted", argv[0]);
		proc_result_clear(res);
		return -1;
	}
	if (WIFEXITED(status)) {
		res->status = WEXITSTATUS(status);
	} else {
		res->status = -1;
		res->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	}
	return 0;
}

int proc_run(const char *const *argv, char **out, char **err)
{
	return proc_run_timeout(argv, 0, out, err);
}

int proc_run_timeout(const char *const *argv, unsigned timeout_ms, char **out, char **err)
{
	struct proc_result res;
	const struct proc_opts o = { .timeout_ms = timeout_ms };

	if (proc_spawn(argv, &o, &res, err) < 0)
		return -1;
	if (res.status != 0) {
		_cleanup_free_ char *line = proc_last_line(res.out, res.out_len);
		if (res.status > 0)
			*err =
			    xasprintf("'%s' exited with status %d: %s", argv[0], res.status, line);
		else
			*err = xasprintf("'%s' was killed by signal %d", argv[0], res.signal);
		proc_result_clear(&res);
		return -1;
	}
	if (out)
		*out = TAKE_PTR(res.out);
	proc_result_clear(&res);
	return 0;
}

bool proc_alive(long pid)
{
	return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}
