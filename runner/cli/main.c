/* SPDX-License-Identifier: MIT */
/*
 * ferry: run declarative VM data-transfer test plans.
 * main() only dispatches; each subcommand reads as a pipeline in its own file.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <signal.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "util.h"

static int cmd_help(int argc, char **argv);
static int cmd_completion(int argc, char **argv);

static const struct cli_command cli_help = {
	.name = "help",
	.operands = "[COMMAND]",
	.operand = CLI_COMMAND,
	.summary = "show this help, or the options of one command",
	.about = "Without a command, what 'ferry --help' prints; with one, what 'ferry COMMAND "
		 "--help' prints.",
	.run = cmd_help,
};

static const struct cli_command cli_completion_cmd = {
	.name = "completion",
	.operands = "bash|zsh|fish",
	.operand = CLI_ENUM,
	.operand_values = (const char *const[]){ "bash", "zsh", "fish", NULL },
	.summary = "print the shell completions for bash, zsh or fish",
	.about = "Print a completion script for the shell, generated from the same tables the\n"
		 "commands parse: commands, options, plan files for plan arguments and the values\n"
		 "of the options that take one of a few. To load it:\n"
		 "  bash: source <(ferry completion bash), e.g. in ~/.bashrc\n"
		 "  zsh:  save it as _ferry in a directory of $fpath\n"
		 "  fish: save it as ~/.config/fish/completions/ferry.fish",
	.run = cmd_completion,
};

/* In the order `ferry --help` shows them: the plan workflow (run, validate, expand), then what
 * reads results (report, compare, merge, trend), then the tools (guest, dataset, doctor). */
const struct cli_command *const cli_commands[] = {
	&cli_run,
	&cli_validate,
	&cli_expand,
	&cli_report,
	&cli_compare,
	&cli_merge,
	&cli_trend,
	&cli_calibrate,
	&cli_guest,
	&cli_dataset,
	&cli_doctor,
	&cli_help,
	&cli_completion_cmd,
	/* hidden (no summary): generators for the committed schema and man page sections */
	&cli_schema,
};
const size_t n_cli_commands = ELEMENTSOF(cli_commands);

static void usage(FILE *out)
{
	fputs("usage: ferry [--help] [--version] COMMAND [ARGS]\n"
	      "\n"
	      "Run declarative test plans that move data into real libvirt/QEMU virtual machines.\n"
	      "\n"
	      "Commands:\n",
	      out);
	for (size_t i = 0; i < n_cli_commands; i++)
		if (cli_commands[i]->summary)
			fprintf(out, "  %-10s %s\n", cli_commands[i]->name,
				cli_commands[i]->summary);
	fputs("\n"
	      "Run 'ferry help COMMAND' or 'ferry COMMAND --help' for the options of one command,\n"
	      "and see ferry(1).\n",
	      out);
}

static int cmd_help(int argc, char **argv)
{
	if (argc < 2) {
		usage(stdout);
		return EXIT_OK;
	}
	const struct cli_command *c = cli_find(argv[1]);
	if (!c || argc > 2) {
		if (c)
			errorf("help: one command expected, got '%s' as well", argv[2]);
		else
			errorf("help: unknown command '%s'; see 'ferry --help'", argv[1]);
		return EXIT_PLAN;
	}
	cli_usage(c, stdout);
	return EXIT_OK;
}

static int cmd_completion(int argc, char **argv)
{
	if (argc == 2 && (STREQ(argv[1], "--help") || STREQ(argv[1], "-h")))
		return cli_usage_exit(&cli_completion_cmd, stdout);
	if (argc != 2) {
		errorf("completion: which shell? bash, zsh or fish");
		return cli_usage_exit(&cli_completion_cmd, stderr);
	}
	if (cli_completion(argv[1], stdout) < 0) {
		errorf("completion: unknown shell '%s' (bash, zsh or fish)", argv[1]);
		return EXIT_PLAN;
	}
	if (fflush(stdout) != 0) {
		errorf("cannot write the output: %s", strerror(errno));
		return EXIT_INFRA;
	}
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	int c;

	/* numbers in every output are written in the C locale, whatever the user's */
	setlocale(LC_ALL, "C");
	/*
	 * A reader that goes away (`ferry run ... | head`) must not kill ferry by SIGPIPE before it
	 * has destroyed its domains and removed its run directory: writes fail with EPIPE instead.
	 */
	signal(SIGPIPE, SIG_IGN);

	/* stop at the first non-option: the rest belongs to the subcommand */
	while ((c = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
		switch (c) {
		case 'h': usage(stdout); return EXIT_OK;
		case 'V': printf("ferry %s\n", FERRY_VERSION); return EXIT_OK;
		default: usage(stderr); return EXIT_PLAN;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_PLAN;
	}

	const char *name = argv[optind];
	const struct cli_command *cmd = cli_find(name);
	if (cmd) {
		int first = optind;
		/* subcommands parse their own options from a fresh getopt state */
		optind = 0;
		return cmd->run(argc - first, argv + first);
	}

	const char *names[ELEMENTSOF(cli_commands)];
	for (size_t i = 0; i < n_cli_commands; i++)
		names[i] = cli_commands[i]->name;
	const char *hint = closest_match(name, names, n_cli_commands);
	if (hint)
		errorf("unknown command '%s' (did you mean '%s'?)", name, hint);
	else
		errorf("unknown command '%s'; see 'ferry --help'", name);
	return EXIT_PLAN;
}
