/* SPDX-License-Identifier: MIT */
#include "strmap.h"

#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "util.h"

/*
 * A per-process random seed: the strings come from plans and results files, which may come from
 * anyone, and a fixed hash would let a crafted file put every key in one bucket (quadratic
 * probing). Nothing iterates the map, so the seed changes no output.
 */
static uint64_t seed(void)
{
	static uint64_t s;
	if (s == 0) {
		uint64_t r = 0;
		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			r = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
		}
		s = r | 1;
	}
	return s;
}

static uint64_t hash_str(const char *s, uint32_t tag)
{
	/* FNV-1a from a seeded basis, then a seeded final mix so the low bits (the bucket) depend
	   on every byte and on the seed */
	uint64_t k = seed();
	uint64_t h = (1469598103934665603ull ^ k) ^ ((uint64_t)tag * 0x9e3779b97f4a7c15ull);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		h ^= *p;
		h *= 1099511628211ull;
	}
	h ^= k >> 7;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

void strmap_init(struct strmap *m, size_t expect)
{
	size_t cap = 16;
	while (cap < expect * 2)
		cap *= 2;
	m->slots = xcalloc(cap, sizeof(*m->slots));
	m->cap = cap;
	m->n = 0;
}

void strmap_free(struct strmap *m)
{
	free(m->slots);
	m->slots = NULL;
	m->cap = m->n = 0;
}

static struct strmap_slot *strmap_find_slot(struct strmap_slot *slots, size_t cap, const char *s,
					    uint32_t tag, uint64_t h)
{
	for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1)) {
		struct strmap_slot *sl = &slots[i];
		if (!sl->s || (sl->hash == h && sl->tag == tag && STREQ(sl->s, s)))
			return sl;
	}
}

uint32_t strmap_put(struct strmap *m, const char *s, uint32_t tag, uint32_t val)
{
	uint64_t h = hash_str(s, tag);
	struct strmap_slot *sl = strmap_find_slot(m->slots, m->cap, s, tag, h);

	if (sl->s)
		return sl->val;
	if ((m->n + 1) * 2 > m->cap) {
		size_t ncap = m->cap * 2;
		struct strmap_slot *ns = xcalloc(ncap, sizeof(*ns));
		for (size_t i = 0; i < m->cap; i++)
			if (m->slots[i].s)
				*strmap_find_slot(ns, ncap, m->slots[i].s, m->slots[i].tag,
						  m->slots[i].hash) = m->slots[i];
		free(m->slots);
		m->slots = ns;
		m->cap = ncap;
		sl = strmap_find_slot(m->slots, m->cap, s, tag, h);
	}
	*sl = (struct strmap_slot){ .s = s, .hash = h, .tag = tag, .val = val };
	m->n++;
	return STRMAP_NONE;
}

void strmap_set(struct strmap *m, const char *s, uint32_t tag, uint32_t val)
{
	if (strmap_put(m, s, tag, val) == STRMAP_NONE)
		return;
	struct strmap_slot *sl = strmap_find_slot(m->slots, m->cap, s, tag, hash_str(s, tag));
	sl->s = s;
	sl->val = val;
}

uint32_t strmap_get(const struct strmap *m, const char *s, uint32_t tag)
{
	const struct strmap_slot *sl = strmap_find_slot(m->slots, m->cap, s, tag, hash_str(s, tag));
	return sl->s ? sl->val : STRMAP_NONE;
}
