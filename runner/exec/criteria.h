/* SPDX-License-Identifier: MIT */
/* The plan's criteria against a cell's statistics: a pure function, no I/O. */
#pragma once

#include <stddef.h>

#include "plan.h"
#include "results.h"

/* Whether criterion cr applies to the cell pc (its `where:`). */
bool criterion_applies(const struct plan_criterion *cr, const struct plan_cell *pc);

/*
 * Check the n criteria that apply to cell pc against s. Every one that fails adds an
 * ERROR_CRITERION error to rc naming the criterion's position, the metric, its value in the
 * units of the bound, and the bound. Returns the number of failed criteria.
 */
size_t criteria_check(const struct plan_criterion *cr, size_t n, const struct plan_cell *pc,
		      const struct result_stats *s, struct result_cell *rc);
