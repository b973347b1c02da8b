/* SPDX-License-Identifier: MIT */
/*
 * Report files written all or nothing, through the one atomic writer (atomic_file_*() in fs.h):
 * a temporary file created exclusively next to the target, renamed over it at the end; only a
 * regular file is ever replaced.
 */
#include <errno.h>
#include <string.h>

#include "reporters.h"

int report_output_open(struct report_output *o, const char *path, char **err)
{
	*o = (struct report_output){ .af = { .dirfd = -1, .fd = -1 } };
	if (STREQ(path, "-")) {
		o->path = xstrdup(path);
		o->f = stdout;
		return 0;
	}
	if (atomic_file_open(&o->af, path, 0644, err) < 0)
		return -1;
	o->f = fdopen(o->af.fd, "w");
	if (!o->f) {
		*err = xasprintf("%s: %s", path, strerror(errno));
		atomic_file_abort(&o->af);
		return -1;
	}
	o->path = xstrdup(path);
	return 0;
}

int report_output_commit(struct report_output *o, char **err)
{
	int rc = 0;
	if (!o->f)
		return 0;
	if (o->af.fd < 0) {
		if (fflush(o->f) != 0 || ferror(o->f)) {
			*err = xasprintf("standard output: %s", strerror(errno));
			rc = -1;
		}
		o->f = NULL;
		free(o->path);
		o->path = NULL;
		return rc;
	}
	/* the FILE owns the descriptor: flush it, then hand a duplicate to the atomic writer */
	int e = 0;
	const char *what = NULL;
	if (fflush(o->f) != 0 || ferror(o->f))
		what = "write", e = errno;
	int fd = what ? -1 : dup(o->af.fd);
	if (!what && fd < 0)
		what = "dup", e = errno;
	fclose(o->f);
	o->f = NULL;
	o->af.fd = fd;
	if (what) {
		*err = xasprintf("%s: %s: %s", o->path, what, e ? strerror(e) : "i/o error");
		atomic_file_abort(&o->af);
		rc = -1;
	} else if (atomic_file_commit(&o->af, err) < 0) {
		rc = -1;
	}
	free(o->path);
	o->path = NULL;
	return rc;
}

void report_output_abort(struct report_output *o)
{
	if (o->f && o->af.fd >= 0) {
		fclose(o->f); /* closes af.fd */
		o->af.fd = -1;
	}
	atomic_file_abort(&o->af);
	free(o->path);
	*o = (struct report_output){ .af = { .dirfd = -1, .fd = -1 } };
}

static const char *const format_names[REPORT_FORMAT_COUNT] = {
	[REPORT_JUNIT] = "junit", [REPORT_MARKDOWN] = "markdown", [REPORT_JSON] = "json",
	[REPORT_BMF] = "bmf",     [REPORT_GAB] = "gab",
};

const char *report_format_name(enum report_format f)
{
	return f < REPORT_FORMAT_COUNT ? format_names[f] : "?";
}

int report_render(enum report_format f, const struct results *r,
		  const struct report_markdown_opts *md, FILE *out, char **err)
{
	switch (f) {
	case REPORT_JUNIT: return report_junit(r, out, err);
	case REPORT_MARKDOWN: return report_markdown(r, md, out, err);
	case REPORT_JSON: return report_json(r, out, err);
	case REPORT_BMF: return report_bmf(r, out, err);
	case REPORT_GAB: return report_gab(r, out, err);
	default: *err = xstrdup("unknown report format"); return -1;
	}
}

int report_set_open(struct report_set *s, char **err)
{
	size_t to_stdout = 0;
	for (int i = 0; i < REPORT_FORMAT_COUNT; i++)
		to_stdout += s->paths[i] && STREQ(s->paths[i], "-");
	if (to_stdout > 1) {
		*err = xstrdup("only one report can go to standard output ('-')");
		return -1;
	}
	for (int i = 0; i < REPORT_FORMAT_COUNT; i++) {
		if (s->paths[i] && report_output_open(&s->out[i], s->paths[i], err) < 0) {
			report_set_abort(s);
			return -1;
		}
	}
	return 0;
}

void report_set_abort(struct report_set *s)
{
	for (int i = 0; i < REPORT_FORMAT_COUNT; i++)
		report_output_abort(&s->out[i]);
}

int report_set_write(struct report_set *s, const struct results *r, char **err, char **warning)
{
	const char *summary = getenv("GITHUB_STEP_SUMMARY");
	bool want_summary = s->step_summary && summary && *summary;
	char *text[REPORT_FORMAT_COUNT] = { 0 };
	size_t len[REPORT_FORMAT_COUNT] = { 0 };
	int rc = 0;

	for (int i = 0; i < REPORT_FORMAT_COUNT && rc == 0; i++) {
		/* Markdown is also rendered for the step summary, and to check rows and cols */
		bool md = want_summary || s->markdown.rows || s->markdown.cols;
		if (!s->out[i].f && !(i == REPORT_MARKDOWN && md))
			continue;
		FILE *m = open_memstream(&text[i], &len[i]);
		if (!m) {
			*err = xasprintf("%s report: cannot allocate a buffer: %s", format_names[i],
					 strerror(errno));
			rc = -1;
			break;
		}
		_cleanup_free_ char *e = NULL;
		rc = report_render((enum report_format)i, r, &s->markdown, m, &e);
		fclose(m);
		if (rc < 0)
			*err = xasprintf("%s report: %s", format_names[i], e);
	}
	for (int i = 0; i < REPORT_FORMAT_COUNT; i++) {
		if (!s->out[i].f)
			continue;
		if (rc < 0) {
			report_output_abort(&s->out[i]);
			continue;
		}
		fwrite(text[i], 1, len[i], s->out[i].f);
		if (report_output_commit(&s->out[i], err) < 0)
			rc = -1;
	}
	if (rc == 0 && want_summary) {
		_cleanup_free_ char *e = NULL;
		if (report_step_summary_append(text[REPORT_MARKDOWN], len[REPORT_MARKDOWN], &e) < 0)
			*warning = xasprintf("cannot append to GITHUB_STEP_SUMMARY: %s", e);
	}
	for (int i = 0; i < REPORT_FORMAT_COUNT; i++)
		free(text[i]);
	return rc;
}
