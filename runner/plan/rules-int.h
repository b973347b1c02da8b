/* SPDX-License-Identifier: MIT */
/* Private to rules.c (the rule checks and the table) and rules-eval.c (evaluating them). */
#pragma once

#include "rules.h"

struct rule_out {
	bool run; /* messages for a skip at run time; else for validate */
	const struct plan_rule *rule;
	/* what to do with a fault: `key` is a dotted key path in the entry (entry rules; NULL:
	 * the entry's name) or an axis name (cell rules: the entry to point at) */
	void (*fail)(struct rule_out *o, const char *key, char *msg);
	void *ud;
};

/* Keep the first message in *(char **)o->ud, free the others (skip reasons at run time). */
void rules_keep_first(struct rule_out *o, const char *key, char *msg);
