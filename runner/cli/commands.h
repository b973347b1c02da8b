/* SPDX-License-Identifier: MIT */
/*
 * Subcommands. Each takes the argv that follows the subcommand name (argv[0] is the subcommand)
 * and returns a process exit status.
 */
#pragma once

enum ferry_exit {
	EXIT_OK = 0,
	EXIT_FAILED = 1, /* a criterion or regression failed */
	EXIT_PLAN = 2,   /* plan or usage errors */
	EXIT_INFRA = 3,  /* infrastructure errors (libvirt, guest, host) */
	EXIT_SIGINT = 130,
	EXIT_SIGTERM = 143,
};

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

/* One declaration per subcommand; keep alphabetical so parallel work merges cleanly. */
int cmd_dataset(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_expand(int argc, char **argv);
int cmd_guest(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_schema(int argc, char **argv);
int cmd_validate(int argc, char **argv);
