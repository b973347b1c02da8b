/* SPDX-License-Identifier: MIT */
/* A plan's dataset entry onto a dataset specification (dataset.h). */
#pragma once

#include "dataset.h"
#include "plan.h"

/* dataset entry -> dataset_spec (borrowing p's path). */
void dataset_spec_from_plan(const struct plan_dataset *p, struct dataset_spec *s);
