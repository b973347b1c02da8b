/* SPDX-License-Identifier: MIT */
/*
 * The rules table: every cross-field compatibility rule of the plan language, one row each
 * (rules.c). `ferry validate` evaluates it (positioned errors and warnings), plan_expand()
 * over every cell, and the executor before each cell (plan_rules_skip(): the reason a cell is
 * skipped). What only the host can tell (a program, a driver, KVM) stays with the method
 * (supports()) or the machine layer, which check it at run time.
 *
 * Kinds of rule:
 *   RULE_ERROR  no host could run it and the plan is wrong: validate refuses the plan
 *   RULE_SKIP   no host can run such a cell (yet), but a plan may list it among others: the cell
 *               is skipped with the reason wherever it runs; a plan whose every cell is skipped
 *               this way is refused by validate
 *   RULE_WARN   valid, but few hosts have it (sizes, see plan-limits.h): validate warns
 */
#pragma once

#include <stdbool.h>

#include "plan.h"
#include "util.h"

enum rule_kind { RULE_ERROR, RULE_SKIP, RULE_WARN };
/* what a rule looks at: one entry (checked once, where it is written) or a cell's entries */
enum rule_scope { RULE_VM, RULE_DISK, RULE_DATASET, RULE_METHOD, RULE_CELL };

enum rule_flags {
	/* an error rule that the executor also checks per cell (a skip there), for cells that
	 * did not come through validate (tests, hand-built plans) */
	RULE_AT_RUN = 1 << 0,
};

/* The entries a rule looks at; an entry rule gets only its own (the others NULL). */
struct rule_subject {
	const struct plan_vm *vm;
	const struct plan_disk *disk;
	const struct plan_dataset *dataset;
	const struct plan_method *method;
};

struct rule_out; /* where a check reports (rules.c) */

struct plan_rule {
	const char *id; /* "scope.what", unique: tests and docs name rules by it */
	enum rule_scope scope;
	enum rule_kind kind;
	unsigned flags;     /* enum rule_flags */
	const char *checks; /* what it checks, one line (ferry(1), tests) */
	/* Report every fault through rule_fail() (rules.c); nothing when the rule holds. */
	void (*check)(const struct rule_subject *s, struct rule_out *o);
};

/* For a rule's check (rules.c, and the methods' own rules in runner/methods/): report a fault
 * at `key`, a dotted key path in the entry (entry rules; NULL: the entry's name) or the axis of
 * the entry to point at (cell rules). */
void plan_rule_fail(struct rule_out *o, const char *key, const char *fmt, ...) _printf_(3, 4);
/* Whether the message is a run-time skip reason (a cell at run time), not validate's error. */
bool plan_rule_at_run(const struct rule_out *o);

extern const struct plan_rule plan_rules[];
extern const size_t n_plan_rules;

/*
 * The reason a cell can never run whatever the host (its first RULE_SKIP, or RULE_AT_RUN
 * error), or NULL. For the executor before a cell, and for methods' supports(). `p` may be
 * NULL; the cell's entries may be NULL (rules about a missing entry then do not apply).
 * The caller frees the result.
 */
char *plan_rules_skip(const struct plan *p, const struct plan_cell *cell);

/* The archive rows alone: why the guest cannot unpack `a` (the built-in guest's busybox or any
 * guest's unzip), or NULL. pack_guest_support() in runner/methods is this. */
char *plan_rules_archive_skip(const struct plan_archive *a, bool builtin);
