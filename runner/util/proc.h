/* SPDX-License-Identifier: MIT */
/*
 * Run a helper program (qemu-img, qemu-system-*) with an argv, never through a shell, and
 * capture what it prints.
 */
#pragma once

#include <stddef.h>

/*
 * Run argv[0] (looked up in PATH) with argv, stdin from /dev/null, and wait for it.
 * out: when not NULL, receives stdout and stderr together, NUL-terminated (caller frees).
 * Returns 0 when the program exited with status 0; otherwise -1 with *err set (caller frees) to
 * "'PROG' exited with status N: <last line of its output>" or the spawn error.
 */
int proc_run(const char *const *argv, char **out, char **err);
