/* SPDX-License-Identifier: MIT */
/*
 * The drift canary (ferry(1) COMPARE, docs/gate.md): in every block, right after each boot, a
 * fixed reference workload on the host (SHA-256 of a fixed 4 MiB buffer, four times, through
 * libcrypto) and one in the guest (a fixed busybox shell loop, timed on the host around the guest
 * command), each in seconds. Every run of that boot records both (canary_host, canary_guest), so
 * `ferry compare` can tell a slower host from slower code: the workloads never change, so their
 * change between two results files is the host's (and the guest's) change of speed.
 */
#include <stdlib.h>

#include "exec-int.h"
#include "hash.h"

#define CANARY_BYTES  (4u << 20)
#define CANARY_ROUNDS 4
/* about 0.3 s under TCG on an idle host; a fixed count of shell arithmetic (no I/O, no clock) */
#define CANARY_GUEST "i=0; while [ $i -lt 1000 ]; do i=$((i+1)); done; echo $i"
#define CANARY_MS    60000u

static double host_canary(void)
{
	static unsigned char *buf;
	if (!buf) {
		buf = xmalloc(CANARY_BYTES);
		uint32_t s = 0x9e3779b9u; /* xorshift32: the same bytes in every run */
		for (size_t i = 0; i < CANARY_BYTES; i++) {
			s ^= s << 13, s ^= s >> 17, s ^= s << 5;
			buf[i] = (unsigned char)s;
		}
	}
	unsigned char out[SHA256_BYTES];
	uint64_t t0 = now_ns();
	for (int i = 0; i < CANARY_ROUNDS; i++)
		sha256_buf(buf, CANARY_BYTES, out);
	return secs(now_ns() - t0);
}

void canary_measure(struct exec *x, struct xgroup *g)
{
	g->canary_host = g->canary_guest = 0;
	if (x->block <= 0 || !g->guest || x->o->no_canary)
		return;
	g->canary_host = host_canary();
	_cleanup_(machine_err_clear) struct machine_err e = { 0 };
	_cleanup_free_ char *out = NULL;
	uint64_t t0 = now_ns();
	if (machine_guest_sh(x->machine, g->guest, CANARY_GUEST, CANARY_MS, &out, &e) == 0)
		g->canary_guest = secs(now_ns() - t0);
	else if (x->o->verbose)
		progress_line(x->o, "the guest canary did not run: %s", e.msg ? e.msg : "?");
}
