/* SPDX-License-Identifier: MIT */
/* Shorthands for the files that declare key tables (keys.c, keys-output.c). */
#pragma once

#include <stddef.h>

#include "keys.h"

#define V(...)      ((const char *const[]){ __VA_ARGS__, NULL })
#define FIELD(s, f) offsetof(struct s, f)
#define KEYS(a)     .keys = a, .n_keys = ELEMENTSOF(a)
