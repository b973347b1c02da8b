/* SPDX-License-Identifier: MIT */
/*
 * A small open-addressing map from (string, tag) to uint32, for linear-time lookups in the
 * plan reader (duplicate keys, names), the matrix expansion (value ids), the results reader and
 * the reporters. Its hash is seeded per process, so that a crafted file cannot carry precomputed
 * collisions. The map borrows its strings: each must outlive the map.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define STRMAP_NONE UINT32_MAX

struct strmap_slot {
	const char *s; /* NULL: empty */
	uint64_t hash;
	uint32_t tag, val;
};

struct strmap {
	struct strmap_slot *slots;
	size_t cap, n; /* cap: power of two */
};

/* Room for about `expect` entries (it grows as needed). */
void strmap_init(struct strmap *m, size_t expect);
void strmap_free(struct strmap *m);
/* Returns the stored value of (s, tag), or inserts `val` and returns STRMAP_NONE. */
uint32_t strmap_put(struct strmap *m, const char *s, uint32_t tag, uint32_t val);
/* Store `val` for (s, tag), replacing a stored value (and the borrowed string). */
void strmap_set(struct strmap *m, const char *s, uint32_t tag, uint32_t val);
/* The stored value of (s, tag), or STRMAP_NONE. */
uint32_t strmap_get(const struct strmap *m, const char *s, uint32_t tag);
