/* SPDX-License-Identifier: MIT */
/*
 * Values with units (sizes, durations, rates, percentages) and plain numbers and booleans, as
 * plans and command-line options write them: parsed once and overflow-checked, and formatted
 * back exactly. ${VAR} substitution in plan values is plan/env-subst.h.
 *
 * Every parser takes the text of one scalar and returns 0 with the value, or -1 with a message
 * in *err (lower-case, no final period, the offending text in quotes; the caller frees it and
 * adds the position). Surrounding blanks are ignored; a blank between number and unit is allowed.
 */
#pragma once

#include <stdint.h>

#include "util.h"

#define NSEC_PER_MSEC UINT64_C(1000000)
#define NSEC_PER_SEC  UINT64_C(1000000000)

/*
 * Size in bytes: a plain integer is bytes; units B, KiB, MiB, GiB, TiB (powers of 1024) and
 * KB, MB, GB, TB (powers of 1000), case-insensitive. A decimal fraction is allowed when the
 * result is a whole number of bytes ("1.5GiB").
 */
int parse_size(const char *s, uint64_t *bytes, char **err);

/*
 * Duration: one or more NUMBER UNIT groups, units ms, s, m, h ("500ms", "1.5s", "1h30m").
 * A unit is required. The result is in nanoseconds.
 */
int parse_duration(const char *s, uint64_t *ns, char **err);

/* Percentage: a number followed by '%' ("5%", "2.5%"); the result is the number (5.0). */
int parse_percent(const char *s, double *percent, char **err);

/* Throughput in bytes per second: a size with a unit followed by "/s" ("20MB/s", "1GiB/s"). */
int parse_throughput(const char *s, uint64_t *bytes_per_s, char **err);

/* Unsigned decimal integer (no sign, no unit), overflow-checked. */
int parse_uint(const char *s, uint64_t *v, char **err);

/* Finite decimal number ("2", "1.5"). */
int parse_double(const char *s, double *v, char **err);

/* Boolean: true or false (YAML 1.2 core schema). */
int parse_bool(const char *s, bool *v, char **err);

/* Shortest exact rendering of a size ("64MiB", "1000KB", "1536"), in a static-free new string. */
char *format_size(uint64_t bytes);
/* Shortest exact rendering of a duration in ns ("10m", "1500ms", "90s"). */
char *format_duration(uint64_t ns);
