/* SPDX-License-Identifier: MIT */
/*
 * `ferry merge RESULTS... -o OUT`: join the results files of the shards of one plan into the
 * file an unsharded run would have written (results/merge.h), written atomically.
 * Pipeline: options -> read every input (any bad one fails before anything is written) ->
 * merge (same plan, no cell twice) -> write.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "merge.h"
#include "results.h"
#include "util.h"

static int cmd_merge(int argc, char **argv);
static const struct cli_option merge_options[] = {
	{ .name = "output",
	  .id = 'o',
	  .short_name = 'o',
	  .arg = "FILE",
	  .value = CLI_FILE,
	  .flags = CLI_REQUIRED,
	  .help = "the merged results file" },
	CLI_END,
};
const struct cli_command cli_merge = {
	.name = "merge",
	.operands = "RESULTS.json RESULTS.json...",
	.operand = CLI_RESULTS,
	.summary = "join the results files of a sharded run into one",
	.about = "Join the results files of the shards of one plan (each from 'ferry run' with a\n"
		 "shard K/N) into one results file, as an unsharded run would have written it:\n"
		 "the cells in the plan's order, each with the provenance of the shard (host,\n"
		 "QEMU, guest) that ran it. Refused when the files come from different plans\n"
		 "(plan hash), when two files are the same shard, or when a cell is in two\n"
		 "files. FILE '-' is standard output; a file is replaced atomically. Render it\n"
		 "with 'ferry report'.\n"
		 "Exit: 0 merged, 2 bad input or usage.",
	.opts = (const struct cli_option *const[]){ merge_options, NULL },
	.run = cmd_merge,
};

static int cmd_merge(int argc, char **argv)
{
	const char *output = NULL;
	int c;

	while ((c = cli_getopt(&cli_merge, argc, argv)) != -1) {
		switch (c) {
		case 'o': output = optarg; break;
		case 'h': return cli_usage_exit(&cli_merge, stdout);
		default: return cli_usage_exit(&cli_merge, stderr);
		}
	}
	if (!output) {
		errorf("merge: missing -o FILE (where the merged results go)");
		return cli_usage_exit(&cli_merge, stderr);
	}
	size_t n = (size_t)(argc - optind);
	if (n < 1) {
		errorf("merge: missing the results files to merge");
		return cli_usage_exit(&cli_merge, stderr);
	}

	const char *const *names = (const char *const *)(argv + optind);
	struct results **in;
	{
		_cleanup_free_ char *err = NULL;
		in = results_read_all(names, n, &err);
		if (!in) {
			errorf("merge: %s", err);
			return EXIT_PLAN;
		}
	}

	_cleanup_free_ char *err = NULL, *warning = NULL;
	_cleanup_(results_freep) struct results *m = results_merge(in, names, n, &warning, &err);
	results_free_array(in, n);
	if (!m) {
		errorf("merge: %s", err);
		return EXIT_PLAN;
	}
	if (warning)
		warnf("merge: %s", warning);

	int rc;
	if (STREQ(output, "-"))
		rc = results_dump(m, stdout, &err);
	else
		rc = results_write(m, output, &err);
	if (rc < 0) {
		errorf("merge: %s", err);
		return EXIT_PLAN;
	}
	return EXIT_OK;
}
