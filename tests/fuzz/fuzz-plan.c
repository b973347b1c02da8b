/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the plan parser: any bytes go through plan_parse_buffer() (YAML with
 * its limits, key tables, units, ${VAR}, names, the matrix section, the trust checks, the
 * rules table) and, when they parse, through plan_expand() with a small cap and the rules
 * table's skip reason of every cell. Built with -fsanitize=fuzzer only with -Dfuzzing=true;
 * tests/fuzz/replay.c runs the corpus through the same function as an ordinary unit test.
 */
#include <stddef.h>
#include <stdint.h>

#include "matrix.h"
#include "plan.h"
#include "rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct diag_list diags = { 0 };
	/* a directory that does not exist: relative includes fail the same way every time */
	struct plan *p = plan_parse_buffer("/nonexistent-ferry-fuzz/fuzz.yaml", (const char *)data,
					   size, &diags);

	if (p) {
		/* a small cap keeps each input fast; the cap itself is part of what is tested */
		struct matrix *m = plan_expand(p, 1000, &diags);
		if (m) {
			for (size_t i = 0; i < matrix_n_cells(m); i++) {
				struct plan_cell cell;
				plan_cell(p, m, i, &cell);
				/* what the executor asks before each cell */
				free(plan_rules_skip(p, &cell));
			}
			matrix_free(m);
		}
		plan_free(p);
	}
	for (size_t i = 0; i < diags.n; i++)
		free(diag_format(&diags.items[i]));
	diag_list_clear(&diags);
	return 0;
}
