/* SPDX-License-Identifier: MIT */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>

#include "util.h"

extern char **environ;

/* The last non-empty line of a program's output: what it says when it fails. */
static char *last_line(const char *s, size_t n)
{
	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
		n--;
	size_t start = n;
	while (start > 0 && s[start - 1] != '\n')
		start--;
	return xstrndup(s + start, n - start);
}

int proc_run(const char *const *argv, char **out, char **err)
{
	int pipefd[2];
	posix_spawn_file_actions_t fa;
	pid_t pid;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int rc, status;

	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		*err = xasprintf("cannot create a pipe: %s", strerror(errno));
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
	rc = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (rc != 0) {
		close(pipefd[0]);
		*err = xasprintf("cannot run '%s': %s", argv[0], strerror(rc));
		return -1;
	}
	for (;;) {
		buf = xgrow(buf, &cap, len + 4096 + 1, 1);
		ssize_t r = read(pipefd[0], buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(pipefd[0]);
	buf = xgrow(buf, &cap, len + 1, 1);
	buf[len] = '\0';
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			*err = xasprintf("cannot wait for '%s': %s", argv[0], strerror(errno));
			free(buf);
			return -1;
		}
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		_cleanup_free_ char *line = last_line(buf, len);
		if (WIFEXITED(status))
			*err = xasprintf("'%s' exited with status %d: %s", argv[0],
					 WEXITSTATUS(status), line);
		else
			*err = xasprintf("'%s' was killed by signal %d", argv[0], WTERMSIG(status));
		free(buf);
		return -1;
	}
	if (out)
		*out = buf;
	else
		free(buf);
	return 0;
}
