/* SPDX-License-Identifier: MIT */
/*
 * Test-only fault injection for the end-to-end tests, in one place: read from the environment
 * once per run, acted out by the libvirt machine at the points of a run (machine.h). Never set
 * them outside tests.
 *
 *   FERRY_TEST_CORRUPT=RELPATH   before verify of every measured run, overwrite the first bytes of
 *                                RELPATH under the guest landing directory
 *   FERRY_TEST_FAULT=KIND@CELLID[;KIND@CELLID...]
 *                                before the transfer phase of the first run of cell CELLID:
 *                                KIND destroy (destroy the domain), killga (kill qemu-ga in the
 *                                guest and keep it from being respawned), fill (fill the landing
 *                                filesystem); and in every measured run of CELLID, inside
 *                                the timed transfer phase: KIND slow (sleep 1 s), slow=MS
 *                                (sleep MS milliseconds) or slow=P% (at the transfer's end,
 *                                sleep P% of what it took: a slowdown of P% of the transfer
 *                                whatever the host's load), for `ferry compare` tests
 */
#pragma once

#include "machine.h"
#include "vm.h"

struct machine_faults {
	char *corrupt; /* FERRY_TEST_CORRUPT */
	char *fault;   /* FERRY_TEST_FAULT */
};

void machine_faults_from_env(struct machine_faults *f);
void machine_faults_clear(struct machine_faults *f);

/* The test delay spec (FERRY_TEST_FAULT) asks for at w, in ms: slow=MS at
 * MACHINE_DURING_TRANSFER, slow=P% at MACHINE_END_TRANSFER (P% of w->elapsed_ns); 0 for none,
 * and never in a warmup. */
unsigned long machine_fault_slow_ms(const char *spec, const struct machine_where *w);

/* Act out what f asks for at w in the guest vm (nothing when f asks for nothing there). */
void machine_faults_inject(const struct machine_faults *f, struct vm *vm,
			   const struct machine_where *w);
