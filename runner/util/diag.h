/* SPDX-License-Identifier: MIT */
/*
 * Structured diagnostics. Library code (plan, matrix, ...) collects them; only main-level code
 * prints them, as "ferry: FILE:LINE:COL: message" (and a GitHub Actions annotation when
 * GITHUB_ACTIONS=true).
 */
#pragma once

#include "util.h"

struct diag {
	char *file; /* NULL when the message has no position */
	int line;   /* 1-based; 0 when unknown */
	int col;    /* 1-based; 0 when unknown */
	char *msg;  /* lower-case, no final period, no newline */
};

struct diag_list {
	struct diag *items;
	size_t n, cap;
	size_t max;     /* keep at most this many (0: DIAG_DEFAULT_MAX) */
	size_t dropped; /* how many were not kept because of max */
};

#define DIAG_DEFAULT_MAX 50

/* Add a diagnostic; file may be NULL. Positions are 1-based (add 1 to libyaml marks). */
void diag_add(struct diag_list *l, const char *file, int line, int col, const char *fmt, ...)
    _printf_(5, 6);
void diag_vadd(struct diag_list *l, const char *file, int line, int col, const char *fmt,
	       va_list ap) _printf_(5, 0);
/* Sort by file, line, column (stable), so messages read top to bottom. */
void diag_sort(struct diag_list *l);
void diag_list_clear(struct diag_list *l);
static inline void diag_list_clearp(struct diag_list *l)
{
	diag_list_clear(l);
}
/* Format one diagnostic as "FILE:LINE:COL: msg" (without the program prefix). */
char *diag_format(const struct diag *d);
/* Print every diagnostic with the program prefix, and annotations under GitHub Actions; control
 * characters in messages and file names are escaped (escape_controls()). */
void diag_print(const struct diag_list *l, FILE *out);

/* Whether GitHub Actions runs us (GITHUB_ACTIONS=true): annotations are wanted. */
bool gh_actions(void);
/* Write s escaped as GitHub workflow commands require: '%', '\r', '\n' in data, and also ','
 * ':' in a property value. */
void gh_escape(FILE *out, const char *s, bool property);
/*
 * Print one GitHub workflow command "::LEVEL file=F,line=L,col=C,title=T::MSG" (level "error",
 * "warning" or "notice"; file, title may be NULL, line/col 0 when unknown). Control characters
 * are escaped first (escape_controls()), then GitHub's escaping: '%', CR and LF everywhere,
 * and ',' ':' in the properties.
 */
void gh_annotation(FILE *out, const char *level, const char *file, int line, int col,
		   const char *title, const char *msg);
