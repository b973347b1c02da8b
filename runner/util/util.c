/* SPDX-License-Identifier: MIT */
#include "util.h"

#include <limits.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "fs.h"
#include "utf8.h"

static _noreturn_ void oom(void)
{
	fputs("ferry: out of memory\n", stderr);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
	if (!p)
		oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *xgrow(void *p, size_t *cap, size_t need, size_t size)
{
	size_t c = *cap;

	if (need <= c)
		return p;
	if (c < 8)
		c = 8;
	while (c < need) {
		if (c > SIZE_MAX / 2)
			oom();
		c *= 2;
	}
	if (size && c > SIZE_MAX / size)
		oom();
	*cap = c;
	return xrealloc(p, c * size);
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *xvasprintf(const char *fmt, va_list ap)
{
	char *p;
	if (vasprintf(&p, fmt, ap) < 0)
		oom();
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;

	va_start(ap, fmt);
	p = xvasprintf(fmt, ap);
	va_end(ap);
	return p;
}

bool mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	return !__builtin_mul_overflow(a, b, out);
}

bool add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	return !__builtin_add_overflow(a, b, out);
}

char *escape_controls(const char *s)
{
	size_t n = strlen(s);
	/* the longest escape, "\u009b", is 6 bytes for 2 input bytes; "\xNN" 4 for 1 */
	char *out = xmalloc(4 * n + 1), *o = out;

	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		uint32_t cp = 0;
		size_t l = c < 0x80 ? 1 : utf8_decode(s + i, n - i, &cp);
		if (c == '\n' || c == '\r' || c == '\t') {
			*o++ = '\\';
			*o++ = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
			i++;
		} else if (c < 0x20 || c == 0x7f || l == 0) {
			/* C0 controls (ESC), DEL, and bytes that are not UTF-8 (a terminal may read
			 * a lone 0x9b as CSI) */
			o += sprintf(o, "\\x%02x", c);
			i++;
		} else if (l == 2 && cp >= 0x80 && cp <= 0x9f) {
			o += sprintf(o, "\\u%04x", (unsigned)cp); /* C1 controls */
			i += l;
		} else {
			memcpy(o, s + i, l);
			o += l;
			i += l;
		}
	}
	*o = '\0';
	return out;
}

static void vmsg(const char *prefix, const char *fmt, va_list ap)
{
	_cleanup_free_ char *m = xvasprintf(fmt, ap);
	/* a message may carry text from a plan, a results file or a guest: control characters are
	 * shown escaped so that it stays one line and cannot forge another (a CI "::warning") */
	_cleanup_free_ char *clean = escape_controls(m);
	/* one write per message so parallel output does not interleave mid-line */
	fprintf(stderr, "ferry: %s%s\n", prefix, clean);
}

void errorf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

void warnf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

size_t string_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	_cleanup_free_ size_t *row = xcalloc(lb + 1, sizeof(*row));

	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
			size_t best = diag + cost;
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

const char *closest_match(const char *word, const char *const *candidates, size_t n)
{
	const char *best = NULL;
	size_t best_d = SIZE_MAX;
	size_t wl = strlen(word);
	/* allow roughly one edit per three characters, at least one, at most three */
	size_t limit = wl / 3;

	if (limit < 1)
		limit = 1;
	if (limit > 3)
		limit = 3;
	for (size_t i = 0; i < n; i++) {
		size_t d = string_distance(word, candidates[i]);
		if (d < best_d) {
			best_d = d;
			best = candidates[i];
		}
	}
	return best_d <= limit ? best : NULL;
}

unsigned ns_to_ms(uint64_t ns)
{
	uint64_t ms = ns / 1000000u;
	return ms > UINT_MAX ? UINT_MAX : ms == 0 ? 1 : (unsigned)ms;
}

uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

char *read_file(const char *path, size_t *len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;
	char *buf = fd < 0 ? NULL : fd_read_all(fd, SIZE_MAX, &n);
	if (buf && len)
		*len = n;
	return buf;
}

int hex_digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

char *ferry_cache_dir(void)
{
	const char *e = getenv("FERRY_CACHE_DIR");
	if (e && *e)
		return xstrdup(e);
	if (geteuid() == 0)
		return xstrdup("/var/cache/ferry");
	e = getenv("XDG_CACHE_HOME");
	if (e && *e)
		return xasprintf("%s/ferry", e);
	e = getenv("HOME");
	return xasprintf("%s/.cache/ferry", e && *e ? e : "/tmp");
}

bool have_program(const char *name)
{
	const char *path = getenv("PATH");
	_cleanup_free_ char *dup = xstrdup(path ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
	for (char *s = NULL, *d = strtok_r(dup, ":", &s); d; d = strtok_r(NULL, ":", &s)) {
		_cleanup_free_ char *p = xasprintf("%s/%s", d, name);
		if (access(p, X_OK) == 0)
			return true;
	}
	return false;
}

char *shell_quote(const char *s)
{
	size_t n = 3;
	for (const char *p = s; *p; p++)
		n += *p == '\'' ? 4 : 1;
	char *out = xmalloc(n), *o = out;
	*o++ = '\'';
	for (const char *p = s; *p; p++) {
		if (*p == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else {
			*o++ = *p;
		}
	}
	*o++ = '\'';
	*o = '\0';
	return out;
}

char *human_size(uint64_t bytes)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)bytes;
	size_t u = 0;
	while (v >= 1024 && u + 1 < ELEMENTSOF(unit)) {
		v /= 1024;
		u++;
	}
	double r = (double)(long long)(v * 10 + 0.5) / 10;
	if (r == (double)(long long)r)
		return xasprintf("%lld%s", (long long)r, unit[u]);
	return xasprintf("%.1f%s", r, unit[u]);
}
