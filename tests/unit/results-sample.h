/* SPDX-License-Identifier: MIT */
/* What test-results-model.c and test-results-cells.c share: the sample results document. */
#pragma once

#include <glib.h>

#include "results.h"

#define assert_near(a, b, eps) g_assert_cmpfloat_with_epsilon((a), (b), (eps))

/* A document that uses every field: every status, every error kind, warmups, a phase that did
 * not run (NAN), undefined statistics (n = 1), hostile strings, nested resolved parameters
 * (results_free()). `test-results-model --write-sample PATH` writes it. */
struct results *sample(void);
