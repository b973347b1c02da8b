/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the results reader: any bytes go through results_parse() (size and
 * depth limits, JSON, every field's type) and, when they parse, back through the one writer
 * (results_dump() into memory), which must read again, and through the --resume check against
 * itself, which must accept. Built with -fsanitize=fuzzer only with -Dfuzzing=true;
 * tests/fuzz/replay.c runs the corpus through the same function as an ordinary unit test.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "results.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *err = NULL;
	struct results *r = results_parse((const char *)data, size, &err);
	if (!r) {
		if (!err)
			abort(); /* a refusal always says why */
		free(err);
		return 0;
	}

	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		abort();
	if (results_dump(r, f, &err) < 0)
		abort(); /* whatever the reader accepts, the writer writes */
	fclose(f);
	struct results *back = results_parse(text, len, &err);
	if (!back)
		abort(); /* and reads back */
	if (r->plan.sha256 && results_check_resume(r, back, &err) < 0)
		abort(); /* a file with a plan hash resumes itself */
	results_free(back);
	free(text);
	results_free(r);
	return 0;
}
