/* SPDX-License-Identifier: MIT */
/*
 * Results files as bytes and files (results.h): untrusted input, since a results file handed to
 * `ferry report` or `--resume` may come from anywhere. Only a regular file is read, at most
 * RESULTS_MAX_BYTES, nested at most RESULTS_MAX_DEPTH levels (checked before jansson recurses);
 * the model is then built from the tree by json-read.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "results.h"

/* The nesting of arrays and objects in JSON text, scanned a piece at a time (strings skipped):
 * jansson recurses per level, and a results file is never deeper than a few levels. */
struct depth_scan {
	size_t depth, deepest;
	bool in_str, escaped;
};

static void depth_scan(struct depth_scan *d, const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		char c = buf[i];
		if (d->escaped) {
			d->escaped = false;
		} else if (d->in_str) {
			if (c == '\\')
				d->escaped = true;
			else if (c == '"')
				d->in_str = false;
		} else if (c == '"') {
			d->in_str = true;
		} else if (c == '[' || c == '{') {
			if (++d->depth > d->deepest)
				d->deepest = d->depth;
		} else if ((c == ']' || c == '}') && d->depth > 0) {
			d->depth--;
		}
	}
}

static char *too_deep(void)
{
	return xasprintf("nested more than %d levels deep (not a ferry results file)",
			 RESULTS_MAX_DEPTH);
}

static char *jansson_error(const json_error_t *jerr)
{
	return jerr->line > 0 ? xasprintf("%d:%d: %s", jerr->line, jerr->column, jerr->text)
			      : xstrdup(jerr->text);
}

struct results *results_parse(const char *buf, size_t len, char **err)
{
	json_error_t jerr;

	if (len > RESULTS_MAX_BYTES) {
		*err = xasprintf("too large: %zu bytes (a results file has at most %d MiB)", len,
				 RESULTS_MAX_BYTES >> 20);
		return NULL;
	}
	struct depth_scan d = { 0 };
	depth_scan(&d, buf, len);
	if (d.deepest > RESULTS_MAX_DEPTH) {
		*err = too_deep();
		return NULL;
	}
	_cleanup_(json_decrefp) json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		*err = jansson_error(&jerr);
		return NULL;
	}
	return results_from_json_consume(root, err);
}

/* The file opened for reading, refusing what is not a regular file (a FIFO would block the
 * read) or is larger than a results file may be; -1 with *err ("why", without the path). */
static int open_regular(const char *path, char **err)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		*err = xstrdup(strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		*err = xstrdup(S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
		close(fd);
		return -1;
	}
	if (st.st_size > RESULTS_MAX_BYTES) {
		*err = xasprintf("too large: %lld bytes (a results file has at most %d MiB)",
				 (long long)st.st_size, RESULTS_MAX_BYTES >> 20);
		close(fd);
		return -1;
	}
	return fd;
}

/* jansson's reader, fed from the file a buffer at a time, so the file's text is never whole in
 * memory next to its tree; the limits (size, depth) are checked on each piece before jansson
 * parses it. */
struct feed {
	int fd;
	size_t total;
	struct depth_scan depth;
	char *why; /* why the feed stopped (then jansson's own error is not the story) */
};

static size_t feed_cb(void *buffer, size_t buflen, void *data)
{
	struct feed *f = data;
	ssize_t n;
	do
		n = read(f->fd, buffer, buflen);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		f->why = xstrdup(strerror(errno));
		return (size_t)-1;
	}
	f->total += (size_t)n;
	if (f->total > RESULTS_MAX_BYTES) {
		f->why = xasprintf("too large (a results file has at most %d MiB)",
				   RESULTS_MAX_BYTES >> 20);
		return (size_t)-1;
	}
	depth_scan(&f->depth, buffer, (size_t)n);
	if (f->depth.deepest > RESULTS_MAX_DEPTH) {
		f->why = too_deep();
		return (size_t)-1;
	}
	return (size_t)n;
}

struct results *results_read(const char *path, char **err)
{
	_cleanup_free_ char *why = NULL;
	struct feed f = { .fd = open_regular(path, &why) };
	if (f.fd < 0) {
		*err = xasprintf("%s: %s", path, why);
		return NULL;
	}
	json_error_t jerr;
	json_t *root = json_load_callback(feed_cb, &f, JSON_REJECT_DUPLICATES, &jerr);
	close(f.fd);
	struct results *r = NULL;
	if (!root) {
		why = f.why ? f.why : jansson_error(&jerr);
		f.why = NULL;
	} else {
		free(f.why);
		/* the tree is consumed cell by cell as the model is built */
		r = results_from_json_consume(root, &why);
		json_decref(root);
	}
	if (!r) {
		/* a JSON syntax error starts with LINE:COL */
		*err = xasprintf("%s%s%s", path, why[0] >= '0' && why[0] <= '9' ? ":" : ": ", why);
		return NULL;
	}
	return r;
}

struct results **results_read_all(const char *const *paths, size_t n, char **err)
{
	struct results **rs = xcalloc(n ? n : 1, sizeof(*rs));
	for (size_t i = 0; i < n; i++) {
		rs[i] = results_read(paths[i], err);
		if (!rs[i]) {
			results_free_array(rs, n);
			return NULL;
		}
	}
	return rs;
}
