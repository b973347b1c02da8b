/* SPDX-License-Identifier: MIT */
/*
 * Small helpers every part of ferry uses: visible ownership (systemd-style cleanup attributes),
 * allocation that cannot return NULL, and the one place that prints the "ferry: " prefix.
 */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f)   __attribute__((cleanup(f)))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_     __attribute__((noreturn))
#define _unused_       __attribute__((unused))

static inline void freep(void *p)
{
	free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

static inline void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

/* Hand ownership out of a _cleanup_ variable: returns the pointer and NULLs the variable. */
#define TAKE_PTR(p)                                                                                \
	__extension__({                                                                            \
		__typeof__(p) _take_ = (p);                                                        \
		(p) = NULL;                                                                        \
		_take_;                                                                            \
	})

/* Define `funcp(type *)` calling `func(*p)` when *p is not NULL, for use with _cleanup_. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                                    \
	static inline void func##p(type *p)                                                        \
	{                                                                                          \
		if (*p)                                                                            \
			func(*p);                                                                  \
	}

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define STREQ(a, b)   (strcmp((a), (b)) == 0)

/* Allocation: ferry treats out-of-memory as fatal (prints and aborts). */
void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
/* Grow an array of `size`-byte elements so that it holds at least `need`; returns it. */
void *xgrow(void *p, size_t *cap, size_t need, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) _printf_(1, 2);
char *xvasprintf(const char *fmt, va_list ap) _printf_(1, 0);

/* Overflow-checked arithmetic; return false on overflow. */
bool mul_u64(uint64_t a, uint64_t b, uint64_t *out);
bool add_u64(uint64_t a, uint64_t b, uint64_t *out);

/*
 * The program's own messages: "ferry: <msg>\n" on stderr. Callers never pass "\n". Control
 * characters in the message are printed escaped (escape_controls()), so one message is one line.
 */
void errorf(const char *fmt, ...) _printf_(1, 2);
void warnf(const char *fmt, ...) _printf_(1, 2);

/*
 * s with control characters shown visibly, for messages: LF, CR, TAB as \n, \r, \t (backslash
 * and letter), other C0 controls (ESC), DEL and bytes that are not UTF-8 as \xNN, C1 controls
 * (U+0080-U+009F) as \u00NN. Everything else (printable ASCII, valid UTF-8) is kept. Caller frees.
 */
char *escape_controls(const char *s);

/* s in single quotes for a POSIX shell ('\'' for a quote inside), one word whatever it holds.
 * Caller frees. */
char *shell_quote(const char *s);

/* Whether an executable `name` is in $PATH (else the usual system directories). */
bool have_program(const char *name);

/* A size for people: "16TiB", "78.6GiB", "512MiB", "900B" (powers of 1024, one decimal when it
 * is not whole). Caller frees. */
char *human_size(uint64_t bytes);

/* Levenshtein distance (fio parse.c string_distance), for "did you mean" suggestions. */
size_t string_distance(const char *a, const char *b);
/* The candidate closest to `word` if it is close enough to be a plausible typo, else NULL. */
const char *closest_match(const char *word, const char *const *candidates, size_t n);

/* The value of a hex digit, or -1. */
int hex_digit_value(char c);

/*
 * The cache directory (built-in guest, datasets): $FERRY_CACHE_DIR, else /var/cache/ferry for
 * root, else $XDG_CACHE_HOME/ferry or ~/.cache/ferry. Caller frees.
 */
char *ferry_cache_dir(void);

/* Monotonic clock in nanoseconds. */
uint64_t now_ns(void);
/* ns as a timeout in ms for an API that takes an unsigned: at least 1 (0 would mean "no
 * wait" or "forever"), at most UINT_MAX. */
unsigned ns_to_ms(uint64_t ns);

/* Read a whole file into a NUL-terminated buffer; returns NULL and sets errno on failure. */
char *read_file(const char *path, size_t *len);
