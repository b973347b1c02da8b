/* SPDX-License-Identifier: MIT */
/*
 * The saved states of one machine (saved-states.c): per VM configuration, one guest booted to
 * agent ready and saved (vm_save) at the first need, from which later fresh guests of that
 * configuration are restored (run.fresh restore), or why that configuration boots instead.
 */
#pragma once

#include <stdbool.h>

#include <libvirt/libvirt.h>

#include "run.h"
#include "vm.h"

struct saved_states;

/*
 * The saved state of configuration c, made at its first need (a boot, then vm_save into the run
 * directory; the run's removal takes the file with it, saved_states_free before), or NULL when c
 * boots instead: *why (caller frees) says why, and *first whether this is the first time for c
 * (the reason is news). remote: the domain runs on a remote libvirt host.
 */
const struct vm_saved *saved_state_for(struct saved_states **ss, struct run *run,
				       virConnectPtr conn, const struct vm_config *c, bool remote,
				       unsigned timeout_ms, char **why, bool *first);
/* Remove every saved state file and free ss. Safe with NULL. */
void saved_states_free(struct saved_states *ss);
