/* SPDX-License-Identifier: MIT */
/* --shard K/N: parsing and the deterministic split of cells (see matrix.h). */
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "matrix.h"

/* ---- shards ---- */

/* Parse a decimal unsigned without sign, spaces or overflow; returns the end or NULL. */
static const char *parse_uint(const char *s, unsigned *out, bool *too_big)
{
	unsigned long long v = 0;
	const char *p = s;
	*too_big = false;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (unsigned)(*p - '0');
		if (v > UINT_MAX) {
			*too_big = true;
			v = UINT_MAX;
		}
	}
	if (p == s)
		return NULL;
	*out = (unsigned)v;
	return p;
}

/* Set *err (when wanted) and fail. */
_printf_(2, 3) static int shard_error(char **err, const char *fmt, ...)
{
	va_list ap;
	if (err) {
		va_start(ap, fmt);
		*err = xvasprintf(fmt, ap);
		va_end(ap);
	}
	return -1;
}

int shard_parse(const char *s, unsigned *k, unsigned *n, char **err)
{
	unsigned kk, nn;
	bool big_k, big_n = false;
	const char *p = parse_uint(s, &kk, &big_k);

	if (!p || *p != '/' || !(p = parse_uint(p + 1, &nn, &big_n)) || *p)
		return shard_error(
		    err, "invalid shard '%s': expected K/N with 1 <= K <= N, e.g. '1/4'", s);
	if (big_k || big_n)
		return shard_error(err, "invalid shard '%s': numbers must be at most %u", s,
				   UINT_MAX);
	if (nn == 0)
		return shard_error(err, "invalid shard '%s': the shard count N must be at least 1",
				   s);
	if (kk < 1 || kk > nn)
		return shard_error(err, "invalid shard '%s': K must be between 1 and %u", s, nn);
	*k = kk;
	*n = nn;
	return 0;
}

bool shard_contains(size_t index, unsigned k, unsigned n)
{
	if (n == 0 || k < 1 || k > n)
		return false;
	return index % n == k - 1;
}
