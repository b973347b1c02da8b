/* SPDX-License-Identifier: MIT */
/* What the plan parser's tests share: plans parsed from text, method options set by name. */
#pragma once

#include "plan.h"

/* The plan in text, parsed as the file "mem.yaml" (NULL, and its errors in d, when it fails). */
struct plan *parse(const char *text, struct diag_list *d);
/* Parse `text`, which must fail, and return all messages joined by newlines (free()). */
char *errors_of(const char *text);
/* Sets method m's option key from its text as a plan writes it, which must succeed. */
void set_opt(struct plan_method *m, const char *key, const char *text);
