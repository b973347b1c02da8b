/* SPDX-License-Identifier: MIT */
/*
 * What every reporter needs: the C numeric locale around formatting, text made safe for XML 1.0
 * (which also makes it safe to escape for Markdown), tails of long logs, timestamps, and the
 * GitHub step summary.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <string.h>
#include <time.h>

#include "reporters.h"
#include "utf8.h"

void report_locale_enter(struct report_locale *l)
{
	/* uselocale() is per thread and leaves the process locale alone, so a caller that set
	 * de_DE for its own messages keeps it; snprintf("%.3f") then writes a dot */
	l->c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
	l->old = l->c ? uselocale(l->c) : (locale_t)0;
}

void report_locale_leave(struct report_locale *l)
{
	if (l->c) {
		uselocale(l->old);
		freelocale(l->c);
		l->c = (locale_t)0;
	}
}

char *report_clean_text(const char *str)
{
	if (!str)
		return xstrdup("");
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strlen(str);
	/* each input byte gives at most 4 output bytes ("\\xNN") */
	char *out = xmalloc(4 * n + 1);
	size_t o = 0;

	for (size_t i = 0; i < n;) {
		uint32_t cp = 0;
		if (s[i] == '\r' && s[i + 1] == '\n') {
			/* serial consoles end lines with CR LF; XML would keep the CR as &#13; */
			i++;
			continue;
		}
		if (s[i] == '\n' || s[i] == '\t') {
			out[o++] = (char)s[i++];
			continue;
		}
		/* a line that starts with "::" would be a workflow command in a CI log (GitHub's
		 * "::stop-commands::" ends annotation processing): its first ':' is escaped */
		if (s[i] == ':' && s[i + 1] == ':' && (i == 0 || s[i - 1] == '\n')) {
			o += (size_t)sprintf(out + o, "\\x3a");
			i++;
			continue;
		}
		/* every other control shows as its escape (escape_controls()), never vanishes */
		size_t len = s[i] < 0x80 ? 1 : utf8_decode(str + i, n - i, &cp);
		if (cp == 0xfffe || cp == 0xffff) { /* not characters in XML */
			o += (size_t)sprintf(out + o, "\\u%04x", (unsigned)cp);
			i += len;
			continue;
		}
		bool ctl = s[i] < 0x20 || s[i] == 0x7f || len == 0 || (len == 2 && cp <= 0x9f);
		if (ctl) {
			size_t l = len ? len : 1;
			_cleanup_free_ char *piece = xstrndup(str + i, l);
			_cleanup_free_ char *esc = escape_controls(piece);
			size_t el = strlen(esc);
			memcpy(out + o, esc, el);
			o += el;
			i += l;
			continue;
		}
		memcpy(out + o, s + i, len);
		o += len;
		i += len;
	}
	out[o] = '\0';
	return out;
}

const char *report_text_tail(const char *s, size_t max, bool *truncated)
{
	size_t n = strlen(s);
	*truncated = n > max;
	if (n <= max)
		return s;
	const char *p = s + n - max;
	/* start at the next line when it is close, so the first line is not a fragment */
	const char *nl = memchr(p, '\n', max);
	if (nl && (size_t)(nl - p) < 256 && nl[1])
		return nl + 1;
	while ((*p & 0xc0) == 0x80)
		p++;
	return p;
}

char *report_format_timestamp(int64_t ms, char *buf, size_t size)
{
	time_t t = (time_t)(ms >= 0 ? ms / 1000 : 0);
	struct tm tm;
	if (!gmtime_r(&t, &tm) || strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		snprintf(buf, size, "1970-01-01T00:00:00");
	return buf;
}

int report_step_summary_append(const char *text, size_t len, char **err)
{
	const char *path = getenv("GITHUB_STEP_SUMMARY");
	if (!path || !*path)
		return 0;
	/* appended to, never through a symbolic link, and only a regular file (a FIFO would block,
	 * a device is not a summary) */
	int fd =
	    open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
	if (fd < 0) {
		*err = xasprintf("%s: %s", path,
				 errno == ELOOP ? "is a symbolic link (not followed)"
						: strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		*err = xasprintf("%s: not a regular file", path);
		close(fd);
		return -1;
	}
	size_t done = 0;
	while (done < len) {
		ssize_t w = write(fd, text + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			*err = xasprintf("%s: %s", path, w < 0 ? strerror(errno) : "short write");
			close(fd);
			return -1;
		}
		done += (size_t)w;
	}
	if (close(fd) < 0) {
		*err = xasprintf("%s: %s", path, strerror(errno));
		return -1;
	}
	return 1;
}
