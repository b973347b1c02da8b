/* SPDX-License-Identifier: MIT */
/* UTF-8 as RFC 3629 defines it: no overlong forms, no surrogates, nothing above U+10FFFF. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Length (1-4) of the UTF-8 sequence at s (at most n bytes available) and its code point in
 * *cp, or 0 when the bytes there are not a complete valid sequence. */
size_t utf8_decode(const char *s, size_t n, uint32_t *cp);
/* Is the NUL-terminated s valid UTF-8? */
bool utf8_valid(const char *s);
/* A copy of s with every byte that does not start a valid sequence replaced by U+FFFD. */
char *utf8_sanitize(const char *s);
