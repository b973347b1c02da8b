/* SPDX-License-Identifier: MIT */
/*
 * Run a helper program (qemu-img, qemu-system-*, apt-get, ...) with an argv, never through a
 * shell, and capture what it prints. The one place ferry spawns processes.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct proc_opts {
	const char *cwd;        /* working directory of the child; NULL: ours */
	const char *const *env; /* "NAME=VALUE" entries set on top of our environment
				   (NULL-terminated; NULL: none) */
	bool split_stderr;      /* stdout and stderr captured apart (else together) */
	unsigned timeout_ms;    /* the child is killed after this; 0: PROC_TIMEOUT_DEFAULT_MS */
	int stdin_fd;           /* the child's stdin (e.g. a pipe's read end; the caller keeps and
				   closes it); 0: /dev/null */
};

/* No helper runs longer than this unless its caller says (a Debian guest build takes minutes). */
#define PROC_TIMEOUT_DEFAULT_MS (2u * 60 * 60 * 1000)

struct proc_result {
	int status; /* exit status 0-255, or -1 when killed by a signal */
	int signal; /* the signal when status is -1 */
	char *out;  /* stdout (and stderr unless split), NUL-terminated */
	size_t out_len;
	char *errout; /* stderr when split_stderr, else NULL */
};

/*
 * Run argv[0] (looked up in PATH) with argv, stdin from /dev/null (or opts->stdin_fd), and wait for
 * it; the child runs with SIGPIPE and the other signals ferry handles at their defaults. Returns 0
 * when it ran (whatever its exit status: see res), or -1 with *err set (caller frees) when it could
 * not be started ("cannot run 'PROG': why"), or was killed because it ran past opts->timeout_ms or
 * because a signal interrupted the run (run_interrupted(): SIGTERM is never swallowed while a
 * helper runs). res is filled in either case; free it with proc_result_clear().
 */
int proc_spawn(const char *const *argv, const struct proc_opts *opts, struct proc_result *res,
	       char **err);
void proc_result_clear(struct proc_result *res);

/* The last non-empty line of a program's output: what it says when it fails (caller frees). */
char *proc_last_line(const char *s, size_t n);

/* Whether process pid exists (also when it belongs to another user: EPERM). */
bool proc_alive(long pid);

/*
 * proc_spawn() with the defaults, for programs that must succeed.
 * out: when not NULL, receives stdout and stderr together, NUL-terminated (caller frees).
 * Returns 0 when the program exited with status 0; otherwise -1 with *err set (caller frees) to
 * "'PROG' exited with status N: <last line of its output>" or the spawn error.
 */
int proc_run(const char *const *argv, char **out, char **err);
/* proc_run() with the child killed after timeout_ms (0: PROC_TIMEOUT_DEFAULT_MS): then -1 with
 * "'PROG' did not finish in N ms and was killed" (N: the timeout as given). */
int proc_run_timeout(const char *const *argv, unsigned timeout_ms, char **out, char **err);
