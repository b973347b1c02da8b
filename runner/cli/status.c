/* SPDX-License-Identifier: MIT */
#include "status.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

static volatile sig_atomic_t winch = 1; /* the width is to be read (again) */
static unsigned columns = 80;

static void on_winch(int sig)
{
	(void)sig;
	winch = 1;
}

unsigned term_columns(void)
{
	if (winch) {
		winch = 0;
		struct winsize ws;
		if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
			columns = ws.ws_col;
	}
	return columns;
}

void term_status_init(struct term_status *t)
{
	static bool watching;
	*t = (struct term_status){ .live = isatty(STDERR_FILENO) == 1 };
	if (!t->live || watching)
		return;
	/* SA_RESTART: a resize never interrupts a read or a wait of the run */
	struct sigaction sa = { .sa_handler = on_winch, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGWINCH, &sa, NULL) == 0)
		watching = true;
}

size_t term_fit(const char *s, unsigned cols)
{
	size_t i = 0;
	unsigned used = 0;
	while (s[i]) {
		unsigned char b = (unsigned char)s[i];
		size_t len = b < 0x80 ? 1 : b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
		unsigned w = 1;
		if (len == 3) /* U+0800..U+FFFF: wide from U+1100 (Hangul, CJK, ...) */
			w = (((b & 0x0fu) << 4) | (((unsigned char)s[i + 1] & 0x3cu) >> 2)) >= 0x11
				? 2
				: 1;
		else if (len == 4)
			w = 2;
		for (size_t k = 1; k < len; k++)
			if (!s[i + k]) /* a cut sequence: stop before it */
				return i;
		if (used + w > cols)
			break;
		used += w;
		i += len;
	}
	return i;
}

/*
 * What erases the line drawn, with the cursor at its start (where each draw leaves it). A
 * terminal that reflows its lines when it is narrowed (tmux, VTE, kitty) wraps the line drawn
 * at the old width into several rows and keeps the cursor at its start: the rows below it are
 * erased too (nothing else is ever below the status line), the cursor saved and restored around
 * that (\0337, \0338) since moving down stops at the bottom row. Erasing to the end of the
 * screen (\033[J) would do it in one go, but tmux pushes the screen into its history when that
 * happens at the top left corner, a copy of the line each time.
 */
static char *erase(const struct term_status *t, unsigned cols)
{
	unsigned rows = 1;
	if (t->drawn && t->cols > cols) /* the line was at most t->cols - 1 columns */
		rows = (t->cols - 1 + cols - 1) / cols;
	if (rows < 2)
		return xstrdup("\r\033[K");
	size_t n = 0;
	char *s = xcalloc(16 + 6 * rows, 1);
	n += (size_t)sprintf(s + n, "\r\033[K\0337");
	for (unsigned r = 1; r < rows; r++)
		n += (size_t)sprintf(s + n, "\033[B\033[K");
	sprintf(s + n, "\0338");
	return s;
}

void term_status_draw(struct term_status *t, const char *text)
{
	if (!t->live)
		return;
	_cleanup_free_ char *clean = escape_controls(text);
	/* one column short of the width: a line that fills the last column wraps on some
	 * terminals as soon as anything follows */
	unsigned cols = term_columns();
	size_t n = term_fit(clean, cols > 1 ? cols - 1 : 1);
	_cleanup_free_ char *before = erase(t, cols);
	/* auto-wrap off while the line is written (\033[?7l ... \033[?7h): a terminal narrowed
	 * after the width was read (its SIGWINCH not seen yet) cuts the line instead of wrapping
	 * it into a row the next draw would not erase; the cursor is left at the line's start,
	 * where a reflow keeps it. One write, so the terminal never stays without auto-wrap. */
	fprintf(stderr, "%s\033[?7l%.*s\033[?7h\r", before, (int)n, clean);
	fflush(stderr);
	t->drawn = true;
	t->cols = cols;
}

void term_status_clear(struct term_status *t)
{
	if (t->drawn) {
		_cleanup_free_ char *e = erase(t, term_columns());
		fputs(e, stderr);
	}
	t->drawn = false;
}

void term_status_line(struct term_status *t, const char *text)
{
	term_status_clear(t);
	_cleanup_free_ char *clean = escape_controls(text);
	fprintf(stderr, "ferry: %s\n", clean);
}

bool term_status_due(struct term_status *t, unsigned ms)
{
	uint64_t now = now_ns();
	if (t->last_ns && now - t->last_ns < (uint64_t)ms * 1000000u)
		return false;
	t->last_ns = now;
	return true;
}

struct term_ticker {
	struct term_status *t;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *text;
	uint64_t t0;
	bool stop;
};

static void ticker_draw(struct term_ticker *k)
{
	unsigned long s = (unsigned long)((now_ns() - k->t0) / 1000000000u);
	_cleanup_free_ char *line = xasprintf("[%lus] %s", s, k->text ? k->text : "");
	term_status_draw(k->t, line);
}

static void *ticker_main(void *arg)
{
	struct term_ticker *k = arg;
	pthread_mutex_lock(&k->mu);
	while (!k->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		if (pthread_cond_timedwait(&k->cv, &k->mu, &ts) == ETIMEDOUT && !k->stop)
			ticker_draw(k);
	}
	pthread_mutex_unlock(&k->mu);
	return NULL;
}

struct term_ticker *term_ticker_start(struct term_status *t)
{
	if (!t->live)
		return NULL;
	struct term_ticker *k = xcalloc(1, sizeof(*k));
	*k = (struct term_ticker){ .t = t, .t0 = now_ns() };
	pthread_mutex_init(&k->mu, NULL);
	pthread_cond_init(&k->cv, NULL);
	/* signals stay with the main thread, which handles them (an interrupted build) */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = pthread_create(&k->thread, NULL, ticker_main, k);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		pthread_cond_destroy(&k->cv);
		pthread_mutex_destroy(&k->mu);
		free(k);
		return NULL;
	}
	return k;
}

void term_ticker_set(struct term_ticker *k, const char *text)
{
	if (!k)
		return;
	pthread_mutex_lock(&k->mu);
	free(k->text);
	k->text = xstrdup(text);
	ticker_draw(k);
	pthread_mutex_unlock(&k->mu);
}

void term_ticker_stop(struct term_ticker *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&k->mu);
	k->stop = true;
	pthread_cond_signal(&k->cv);
	pthread_mutex_unlock(&k->mu);
	pthread_join(k->thread, NULL);
	term_status_clear(k->t);
	pthread_cond_destroy(&k->cv);
	pthread_mutex_destroy(&k->mu);
	free(k->text);
	free(k);
}
