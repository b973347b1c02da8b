/* SPDX-License-Identifier: MIT */
#include "diag.h"

#include <string.h>

void diag_vadd(struct diag_list *l, const char *file, int line, int col, const char *fmt,
	       va_list ap)
{
	size_t max = l->max ? l->max : DIAG_DEFAULT_MAX;
	_cleanup_free_ char *msg = xvasprintf(fmt, ap);

	/* the same message at the same place is one error: a YAML value that an anchor shares
	 * (`*a`, `<<: *a`) is checked once per use, and each use would report it again */
	for (size_t i = 0; i < l->n; i++) {
		const struct diag *d = &l->items[i];
		if (d->line == line && d->col == col && STREQ(d->msg, msg) &&
		    STREQ(d->file ? d->file : "", file ? file : ""))
			return;
	}
	if (l->n >= max) {
		l->dropped++;
		return;
	}
	l->items = xgrow(l->items, &l->cap, l->n + 1, sizeof(*l->items));
	l->items[l->n++] = (struct diag){
		.file = file ? xstrdup(file) : NULL,
		.line = line,
		.col = col,
		.msg = TAKE_PTR(msg),
	};
}

void diag_add(struct diag_list *l, const char *file, int line, int col, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_vadd(l, file, line, col, fmt, ap);
	va_end(ap);
}

static int diag_cmp(const struct diag *a, const struct diag *b)
{
	int c = strcmp(a->file ? a->file : "", b->file ? b->file : "");
	if (c)
		return c;
	if (a->line != b->line)
		return a->line < b->line ? -1 : 1;
	if (a->col != b->col)
		return a->col < b->col ? -1 : 1;
	return 0;
}

void diag_sort(struct diag_list *l)
{
	/* insertion sort: stable, and lists are short (capped) */
	for (size_t i = 1; i < l->n; i++) {
		struct diag d = l->items[i];
		size_t j = i;
		while (j > 0 && diag_cmp(&l->items[j - 1], &d) > 0) {
			l->items[j] = l->items[j - 1];
			j--;
		}
		l->items[j] = d;
	}
}

void diag_list_clear(struct diag_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->items[i].file);
		free(l->items[i].msg);
	}
	free(l->items);
	l->items = NULL;
	l->n = l->cap = 0;
	l->dropped = 0;
}

char *diag_format(const struct diag *d)
{
	if (!d->file)
		return xstrdup(d->msg);
	if (d->line <= 0)
		return xasprintf("%s: %s", d->file, d->msg);
	if (d->col <= 0)
		return xasprintf("%s:%d: %s", d->file, d->line, d->msg);
	return xasprintf("%s:%d:%d: %s", d->file, d->line, d->col, d->msg);
}

void gh_escape(FILE *out, const char *s, bool property)
{
	for (; *s; s++) {
		switch (*s) {
		case '%': fputs("%25", out); break;
		case '\r': fputs("%0D", out); break;
		case '\n': fputs("%0A", out); break;
		case ':': fputs(property ? "%3A" : ":", out); break;
		case ',': fputs(property ? "%2C" : ",", out); break;
		default: fputc(*s, out);
		}
	}
}

void gh_annotation(FILE *out, const char *level, const char *file, int line, int col,
		   const char *title, const char *msg)
{
	/* messages and names quote plans and guests: escaped, an annotation stays one line and
	 * cannot forge a workflow command of its own */
	_cleanup_free_ char *cmsg = escape_controls(msg ? msg : "");
	bool sep = false;
	fprintf(out, "::%s", level);
	if (file) {
		_cleanup_free_ char *cfile = escape_controls(file);
		fputs(" file=", out);
		gh_escape(out, cfile, true);
		if (line > 0)
			fprintf(out, ",line=%d", line);
		if (col > 0)
			fprintf(out, ",col=%d", col);
		sep = true;
	}
	if (title) {
		_cleanup_free_ char *ctitle = escape_controls(title);
		fputs(sep ? ",title=" : " title=", out);
		gh_escape(out, ctitle, true);
	}
	fputs("::", out);
	gh_escape(out, cmsg, false);
	fputc('\n', out);
}

bool gh_actions(void)
{
	const char *gha = getenv("GITHUB_ACTIONS");
	return gha && STREQ(gha, "true");
}

void diag_print(const struct diag_list *l, FILE *out)
{
	bool annotate = gh_actions();

	for (size_t i = 0; i < l->n; i++) {
		const struct diag *d = &l->items[i];
		_cleanup_free_ char *s = diag_format(d);
		/* a message quotes the plan (a key, a value): escaped, it stays one line and cannot
		 * forge a line of its own, such as a workflow command "::warning ..." */
		_cleanup_free_ char *clean = escape_controls(s);
		fprintf(out, "ferry: %s\n", clean);
		if (annotate)
			gh_annotation(out, "error", d->file, d->line, d->col, NULL, d->msg);
	}
	if (l->dropped)
		fprintf(out, "ferry: ... and %zu more error%s not shown\n", l->dropped,
			l->dropped == 1 ? "" : "s");
}
