/* SPDX-License-Identifier: MIT */
/*
 * The command line, declared once as data (curl's tool_getparam.c, fio's options table): every
 * command is a `struct cli_command` with its option rows. The getopt tables (cli_getopt()), the
 * usage and per-option help (`ferry CMD --help`, `ferry help CMD`), the shell completions
 * (`ferry completion bash|zsh|fish`, completion.c) and the SYNOPSIS of ferry(1) (`ferry schema
 * --man-synopsis`) are all generated from these rows; tests/docs-commands.sh checks the OPTIONS
 * section of ferry.1 against the help they print.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* What an option's argument or a command's operand is, for the completions. */
enum cli_value {
	CLI_NONE,    /* no argument */
	CLI_WORD,    /* free text: nothing to complete */
	CLI_FILE,    /* a file */
	CLI_DIR,     /* a directory */
	CLI_PLAN,    /* a plan file (*.yaml) */
	CLI_RESULTS, /* a results file (*.json) or a directory of them */
	CLI_ENUM,    /* one of `values` */
	CLI_COMMAND, /* the name of a ferry command */
};

enum cli_flags {
	CLI_REPEAT = 1 << 0,   /* may be given more than once ("[--var NAME=VALUE]...") */
	CLI_REQUIRED = 1 << 1, /* shown without brackets in the synopsis */
	CLI_OPERAND = 1 << 2,  /* shown in the command's operands text, not among the options */
};

struct cli_option {
	const char *name; /* the long name, without "--" */
	int id;           /* what cli_getopt() returns: the short letter, or a value >= 0x100 */
	char short_name;  /* 0: long only */
	const char *arg;  /* the argument in help ("FILE", "K/N"); NULL: none (or `values`) */
	enum cli_value value;
	const char *const *values; /* CLI_ENUM: the allowed values, NULL-terminated */
	unsigned flags;            /* enum cli_flags */
	const char *help;          /* one line or more, lower-case start, no final period */
};
#define CLI_END                                                                                    \
	{                                                                                          \
		0                                                                                  \
	}

struct cli_command {
	const char *name;     /* "run", "dataset gen" */
	const char *operands; /* the operands in the synopsis: "PLAN", "RESULTS.json..." */
	enum cli_value operand;
	const char *const *operand_values; /* CLI_ENUM operands, NULL-terminated */
	const char *summary;               /* one line for `ferry --help`; NULL: hidden */
	const char *about;                 /* the paragraph after the synopsis */
	/* the option rows: a NULL-terminated list of CLI_END-terminated arrays (shared, own) */
	const struct cli_option *const *opts;
	/* subcommands ("dataset gen"), NULL-terminated; their usage is the parent's */
	const struct cli_command *const *subs;
	int (*run)(int argc, char **argv);
};

/* Every command, in the order `ferry --help` shows them (main.c). */
extern const struct cli_command *const cli_commands[];
extern const size_t n_cli_commands;

/* The command named name ("run"), or NULL. */
const struct cli_command *cli_find(const char *name);

/*
 * getopt_long() over the rows of cmd (and of its subcommands: one parser for them all), with
 * --help (-h) added: returns the next option's id, 'h' for --help, '?' for a bad option (getopt
 * printed why), -1 after the last.
 */
int cli_getopt(const struct cli_command *cmd, int argc, char **argv);

/* The synopsis, the about text and every option with its help. */
void cli_usage(const struct cli_command *cmd, FILE *out);
/* cli_usage() of cmd to out; returns EXIT_OK for stdout, EXIT_PLAN otherwise. */
int cli_usage_exit(const struct cli_command *cmd, FILE *out);

/* Calls fn for every option row of cmd (its own lists, then its subcommands'), each name once.
 */
void cli_each_option(const struct cli_command *cmd,
		     void (*fn)(const struct cli_option *o, void *ud), void *ud);

/* The ferry(1) SYNOPSIS body of every command (roff), for scripts/update-docs.sh. */
void cli_man_synopsis(FILE *out);

/* The completion script for shell "bash", "zsh" or "fish"; -1 for another shell. */
int cli_completion(const char *shell, FILE *out);

/* Shared rows: the plan options (cmd-plan.c) and --shard, the report formats (one per row of
 * reporters/formats.h), --baseline-window (parsed by cli_parse_window()). */
extern const struct cli_option cli_plan_options[];
extern const struct cli_option cli_shard_option[];
extern const struct cli_option cli_report_options[];
extern const struct cli_option cli_window_option[];
enum { OPT_WINDOW = 0x1200 };
/* --baseline-window N: 1 to 10000; prints the error. */
int cli_parse_window(const char *arg, size_t *out);
