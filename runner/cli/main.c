/* SPDX-License-Identifier: MIT */
/*
 * ferry: run declarative VM data-transfer test plans.
 * main() only dispatches; each subcommand reads as a pipeline in its own file.
 */
#include "config.h"

#include <getopt.h>
#include <locale.h>
#include <signal.h>
#include <string.h>

#include "commands.h"
#include "util.h"

static int cmd_help(int argc, char **argv);

static const struct command commands[] = {
	/*
	 * In the order `ferry --help` shows them: the plan workflow (run, validate, expand), then
	 * what reads results (report, compare, merge), then the tools (guest, dataset, doctor).
	 */
	{ "run", cmd_run, "run a plan: every cell, timed, verified, reported" },
	{ "validate", cmd_validate, "check plan files without running anything" },
	{ "expand", cmd_expand, "list the cells of a plan with their resolved settings" },
	{ "report", cmd_report, "render a results file as JUnit, Markdown or JSON" },
	{ "compare", cmd_compare, "did it get slower? a noise-aware verdict per cell" },
	{ "merge", cmd_merge, "join the results files of a sharded run into one" },
	{ "trend", cmd_trend, "the history of every cell over many runs, with changes" },
	{ "guest", cmd_guest, "build the built-in or the Debian guest, show what is in it" },
	{ "dataset", cmd_dataset, "generate, scan and verify datasets" },
	{ "doctor", cmd_doctor, "check that this host can run plans" },
	{ "help", cmd_help, "show this help" },
	/* hidden (no summary): generators for the committed schema and man page section */
	{ "schema", cmd_schema, NULL },
};

static void usage(FILE *out)
{
	fputs("usage: ferry [--help] [--version] COMMAND [ARGS]\n"
	      "\n"
	      "Run declarative test plans that move data into real libvirt/QEMU virtual machines.\n"
	      "\n"
	      "Commands:\n",
	      out);
	for (size_t i = 0; i < ELEMENTSOF(commands); i++)
		if (commands[i].summary)
			fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fputs("\n"
	      "Run 'ferry COMMAND --help' for the options of one command, and see ferry(1).\n",
	      out);
}

static int cmd_help(int argc, char **argv)
{
	usage(stdout);
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
	for (size_t i = 0; i < ELEMENTSOF(commands); i++) {
		if (STREQ(commands[i].name, name)) {
			int first = optind;
			/* subcommands parse their own options from a fresh getopt state */
			optind = 0;
			return commands[i].run(argc - first, argv + first);
		}
	}

	const char *names[ELEMENTSOF(commands) + 1];
	for (size_t i = 0; i < ELEMENTSOF(commands); i++)
		names[i] = commands[i].name;
	const char *hint = closest_match(name, names, ELEMENTSOF(commands));
	if (hint)
		errorf("unknown command '%s' (did you mean '%s'?)", name, hint);
	else
		errorf("unknown command '%s'; see 'ferry --help'", name);
	return EXIT_PLAN;
}
