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

#include "commands.h"
#include "merge.h"
#include "results.h"
#include "util.h"

static void merge_usage(FILE *f)
{
	fputs("usage: ferry merge -o FILE RESULTS.json RESULTS.json...\n"
	      "\n"
	      "Join the results files of the shards of one plan (each from 'ferry run' with a\n"
	      "shard K/N) into one results file, as an unsharded run would have written it:\n"
	      "the cells in the plan's order, each with the provenance of the shard (host,\n"
	      "QEMU, guest) that ran it. Refused when the files come from different plans\n"
	      "(plan hash), when two files are the same shard, or when a cell is in two\n"
	      "files. FILE '-' is standard output; a file is replaced atomically. Render it\n"
	      "with 'ferry report'.\n"
	      "Exit: 0 merged, 2 bad input or usage.\n"
	      "\n"
	      "  -o, --output FILE  the merged results file\n",
	      f);
}

int cmd_merge(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *output = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': output = optarg; break;
		case 'h': merge_usage(stdout); return EXIT_OK;
		default: merge_usage(stderr); return EXIT_PLAN;
		}
	}
	if (!output) {
		errorf("merge: missing -o FILE (where the merged results go)");
		merge_usage(stderr);
		return EXIT_PLAN;
	}
	size_t n = (size_t)(argc - optind);
	if (n < 1) {
		errorf("merge: missing the results files to merge");
		merge_usage(stderr);
		return EXIT_PLAN;
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
