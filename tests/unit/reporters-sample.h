/* SPDX-License-Identifier: MIT */
/* What test-reporters.c and test-reporters-markdown.c share: the sample results, cells and runs
 * built by hand, and a report rendered into memory. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "results.h"

/* Quotes, <, ]]>, |, backticks, ESC, non-ASCII and a newline: in names and messages. */
#define HOSTILE "we\"ird <script>alert(1)</script> | ]]> `x` *y* \x1b[1m\xc3\xa9t\xc3\xa9\nline2"

/* The plan text of the sample (any document built here may take it). */
extern const char plan_text[];

/* A run of cell c with these phase times (prepare, transfer, finalize, verify, cleanup), 640 MiB
 * in 10 files, integrity ok or not. */
struct result_run *add_run(struct result_cell *c, bool warmup, double prepare, double transfer,
			   double finalize, double verify, double cleanup, bool ok);
/* The cell vm=VM,dataset=DATASET,method=METHOD with these axes and status, started at start ms
 * (0: never) and finished 31.75 s later. */
struct result_cell *add_cell(struct results *r, const char *vm, const char *dataset,
			     const char *method, enum result_status status, int64_t start);

/*
 * Every case a reporter must handle: passed cells (one the fastest), warmups, an outlier, a
 * failed cell (integrity in one run and a broken criterion for the cell), a regression, an
 * infrastructure error before any run with a serial tail full of colour codes and control
 * characters, a skipped cell, a cell never run, a second vm (a second table), and hostile
 * strings (HOSTILE) in names and messages (results_free()).
 */
struct results *sample(void);

typedef int (*render_fn)(const struct results *, FILE *, char **);
/* report_markdown() with the default options, as a render_fn. */
int render_md(const struct results *r, FILE *f, char **err);
/* What fn writes for r, which must succeed, and its length in *len (free()). */
char *render_to_string(render_fn fn, const struct results *r, size_t *len);
