/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the reporters: any bytes that results_parse() accepts are rendered
 * into memory as JUnit, Markdown (also with a small size cap, which drops raw runs), the
 * results JSON, Bencher BMF and github-action-benchmark JSON. No report may carry a control
 * character other than newline and tab (they would reach terminals, CI logs and the step
 * summary). tests/fuzz/replay.c runs the corpus through the same function as a unit test.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "reporters.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void render(enum report_format fmt, const struct results *r, const struct report_opts *o)
{
	char *text = NULL, *err = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		abort();
	int rc = report_render(fmt, r, o, f, &err);
	fclose(f);
	if (rc < 0 && !err)
		abort(); /* a failure always says why */
	for (size_t i = 0; rc == 0 && fmt != REPORT_JSON && i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
			abort(); /* a raw control character in a report */
	}
	free(err);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *err = NULL;
	struct results *r = results_parse((const char *)data, size, &err);
	if (!r) {
		free(err);
		return 0;
	}
	for (int fmt = 0; fmt < REPORT_FORMAT_COUNT; fmt++)
		render((enum report_format)fmt, r, NULL);
	struct report_opts small = { .markdown.max_bytes = 2048 };
	render(REPORT_MARKDOWN, r, &small);
	if (r->n_cells && r->cells[0].n_axes >= 2) {
		struct report_opts axes = { .markdown = { .rows = r->cells[0].axes[1].key,
							  .cols = r->cells[0].axes[0].key } };
		render(REPORT_MARKDOWN, r, &axes);
	}
	results_free(r);
	return 0;
}
