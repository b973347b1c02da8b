/* SPDX-License-Identifier: MIT */
/* The metric table (metrics.h) as data. */
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* each unit kind's spelling, as literals: a table entry read from another array is not a
 * constant initializer in C11 (GCC accepts it, clang does not) */
#define UNIT_NAME_RATE    "B/s"
#define UNIT_NAME_FILES   "files/s"
#define UNIT_NAME_TIME    "s"
#define UNIT_NAME_SIZE    "B"
#define UNIT_NAME_PERCENT "%"

const struct metric_def metric_defs[METRIC_COUNT] = {
#define METRIC_ROW(id, name_, unit_, kind_, higher, doc_)                                          \
	[METRIC_##id] = { .name = name_,                                                           \
			  .unit = UNIT_NAME_##unit_,                                               \
			  .unit_kind = METRIC_##unit_,                                             \
			  .kind = METRIC_##kind_,                                                  \
			  .higher_better = higher,                                                 \
			  .doc = doc_ },
	METRICS(METRIC_ROW)
#undef METRIC_ROW
};

int metric_find(const char *name)
{
	for (int i = 0; i < METRIC_COUNT; i++)
		if (STREQ(metric_defs[i].name, name))
			return i;
	return -1;
}

char *metric_man(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		abort();
	fputs(".\\\" METRICS: generated from runner/results/metrics.h by `ferry schema "
	      "--man-metrics`\n"
	      ".\\\" (scripts/update-docs.sh); edit the table, not this list\n",
	      f);
	for (int i = 0; i < METRIC_COUNT; i++) {
		const struct metric_def *d = &metric_defs[i];
		fprintf(f, ".TP\n.B %s \" (%s, %s is better%s)\"\n%s.\n", d->name, d->unit,
			d->higher_better ? "higher" : "lower",
			d->kind == METRIC_RUN ? ", per run" : "", d->doc);
	}
	fputs(".\\\" end of generated METRICS\n", f);
	fclose(f);
	return text;
}
