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

/* The writers that predate the table's one signature. */
static int report_junit_write(const struct results *r, const struct report_opts *o, FILE *out,
			      char **err)
{
	return report_junit_layout(r, o ? &o->markdown : NULL, out, err);
}
static int report_markdown_write(const struct results *r, const struct report_opts *o, FILE *out,
				 char **err)
{
	return report_markdown(r, o ? &o->markdown : NULL, out, err);
}
static int report_json_write(const struct results *r, const struct report_opts *o, FILE *out,
			     char **err)
{
	return report_json_layout(r, o ? &o->markdown : NULL, out, err);
}
static int report_bmf_write(const struct results *r, const struct report_opts *o, FILE *out,
			    char **err)
{
	return report_bmf(r, out, err);
}
static int report_gab_write(const struct results *r, const struct report_opts *o, FILE *out,
			    char **err)
{
	return report_gab(r, out, err);
}
static int report_html_write(const struct results *r, const struct report_opts *o, FILE *out,
			     char **err)
{
	return report_html(r, o ? &o->markdown : NULL, out, err);
}

const struct report_format_def report_formats[REPORT_FORMAT_COUNT] = {
#define REPORT_FORMAT_ROW(id, name_, suffix_, writer, plan, doc_)                                  \
	[REPORT_##id] = { .name = name_, .suffix = suffix_, .write = writer, .doc = doc_ },
	REPORT_FORMATS(REPORT_FORMAT_ROW)
#undef REPORT_FORMAT_ROW
};

const char *report_format_name(enum report_format f)
{
	return (unsigned)f < REPORT_FORMAT_COUNT ? report_formats[f].name : "?";
}

int report_format_find(const char *name)
{
	for (int i = 0; i < REPORT_FORMAT_COUNT; i++)
		if (STREQ(report_formats[i].name, name))
			return i;
	return -1;
}

int report_render(enum report_format f, const struct results *r, const struct report_opts *o,
		  FILE *out, char **err)
{
	if ((unsigned)f >= REPORT_FORMAT_COUNT) {
		*err = xstrdup("unknown report format");
		return -1;
	}
	return report_formats[f].write(r, o, out, err);
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

/* Render one format straight into its output (the temporary file, or standard output). */
static int render_into(struct report_set *s, enum report_format f, const struct results *r,
		       char **err)
{
	_cleanup_free_ char *e = NULL;
	if (report_render(f, r, &s->opts, s->out[f].f, &e) < 0) {
		*err = xasprintf("%s report: %s", report_formats[f].name, e);
		return -1;
	}
	return 0;
}

static int write_text(struct report_output *o, const char *text, size_t len, char **err)
{
	if (fwrite(text, 1, len, o->f) != len) {
		*err = xasprintf("%s: %s", o->path, strerror(errno));
		return -1;
	}
	return 0;
}

int report_set_write(struct report_set *s, const struct results *r, char **err, char **warning)
{
	const char *summary = getenv("GITHUB_STEP_SUMMARY");
	bool want_summary = s->step_summary && summary && *summary;
	_cleanup_free_ char *md = NULL;
	size_t md_len = 0;
	int rc = 0;

	/*
	 * Markdown first, into memory: it is the one report whose rendering can fail on the input
	 * (an unknown --rows axis), it is needed for the step summary too, and it is capped
	 * (REPORT_MARKDOWN_MAX), so the buffer does not grow with the cells.
	 */
	bool md_wanted = want_summary || s->opts.markdown.rows || s->opts.markdown.cols ||
			 s->out[REPORT_MARKDOWN].f;
	if (md_wanted) {
		FILE *m = open_memstream(&md, &md_len);
		if (!m) {
			*err = xasprintf("markdown report: cannot allocate a buffer: %s",
					 strerror(errno));
			rc = -1;
		} else {
			_cleanup_free_ char *e = NULL;
			rc = report_render(REPORT_MARKDOWN, r, &s->opts, m, &e);
			fclose(m);
			if (rc < 0)
				*err = xasprintf("markdown report: %s", e);
		}
	}

	/*
	 * The others stream into their temporary files, so that memory does not grow with the
	 * size of a report; a failure leaves every target untouched, because nothing is renamed
	 * into place before all have rendered. Standard output, which cannot be taken back, is
	 * written last.
	 */
	int to_stdout = -1;
	for (int i = 0; i < REPORT_FORMAT_COUNT && rc == 0; i++) {
		if (!s->out[i].f)
			continue;
		if (s->out[i].af.fd < 0)
			to_stdout = i;
		else if (i == REPORT_MARKDOWN)
			rc = write_text(&s->out[i], md, md_len, err);
		else
			rc = render_into(s, (enum report_format)i, r, err);
	}
	if (rc == 0 && to_stdout == REPORT_MARKDOWN)
		rc = write_text(&s->out[to_stdout], md, md_len, err);
	else if (rc == 0 && to_stdout >= 0)
		rc = render_into(s, (enum report_format)to_stdout, r, err);

	for (int i = 0; i < REPORT_FORMAT_COUNT; i++) {
		if (!s->out[i].f)
			continue;
		if (rc < 0)
			report_output_abort(&s->out[i]);
		else if (report_output_commit(&s->out[i], err) < 0)
			rc = -1;
	}
	if (rc == 0 && want_summary) {
		_cleanup_free_ char *e = NULL;
		if (report_step_summary_append(md, md_len, &e) < 0)
			*warning = xasprintf("cannot append to GITHUB_STEP_SUMMARY: %s", e);
	}
	return rc;
}
