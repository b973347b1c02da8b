/* SPDX-License-Identifier: MIT */
/*
 * A live status line on standard error (status.c): on a terminal, one line that each draw
 * replaces, cut to the terminal's width (read again after SIGWINCH) so that it never wraps and
 * leaves copies behind; elsewhere nothing, and the callers print plain lines instead.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct term_status {
	bool live;        /* standard error is a terminal */
	bool drawn;       /* a status line is on the screen */
	unsigned cols;    /* the terminal's width when it was drawn */
	uint64_t last_ns; /* when term_status_due() last said yes */
};

/* live when standard error is a terminal; then SIGWINCH is watched (once per process). */
void term_status_init(struct term_status *t);
/* Replace the line with text (control characters escaped, cut to the width); nothing when
 * not live. */
void term_status_draw(struct term_status *t, const char *text);
/* Remove the line, before anything else is printed. */
void term_status_clear(struct term_status *t);
/* Print "ferry: text" on a line of its own (the status line removed first). */
void term_status_line(struct term_status *t, const char *text);
/* Whether at least ms milliseconds went by since it last said yes: for draws that would
 * otherwise come faster than anyone reads them. */
bool term_status_due(struct term_status *t, unsigned ms);
/* The columns of the terminal on standard error (80 when it says nothing). */
unsigned term_columns(void);
/* How many bytes of s fill at most cols columns (UTF-8; a code point from U+1100 up may be
 * wide, so it counts 2). */
size_t term_fit(const char *s, unsigned cols);

/*
 * A status line that also shows the time since it started and ticks once a second while
 * nothing else redraws it, for long steps the program cannot report from inside (a download,
 * debootstrap, a sync): "[12s] TEXT". A thread of its own draws it, only on a terminal.
 */
struct term_ticker;
/* Start ticking on t when t is live; NULL otherwise (the other calls accept NULL). */
struct term_ticker *term_ticker_start(struct term_status *t);
/* Show text from now on (drawn at once). */
void term_ticker_set(struct term_ticker *k, const char *text);
/* Stop the thread and remove the line. */
void term_ticker_stop(struct term_ticker *k);
