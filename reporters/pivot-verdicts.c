/* SPDX-License-Identifier: MIT */
/* The pivot's verdicts, worded once (pivot-verdicts.h). */
#include <math.h>
#include <string.h>

#include "pivot-verdicts.h"
#include "reporters.h"

/* The cells of table (group g, column col) with measured runs, in row order; returns how many. */
static size_t table_cells(const struct results *r, const struct layout *l, size_t g,
			  const char *col, size_t *cells)
{
	size_t k = 0;
	for (const size_t *p = md_group_begin(l, g); p < md_group_end(l, g); p++)
		if (STREQ(l->col[*p], col) && md_has_stats(&r->cells[*p]) &&
		    isfinite(r->cells[*p].stats.total.mean))
			cells[k++] = *p;
	return k;
}

static int table_build(const struct results *r, const struct layout *l, size_t g, const char *col,
		       const size_t *cells, size_t k, struct pivot_table *t, char **err)
{
	size_t w = 0;
	for (size_t i = 1; i < k; i++)
		if (r->cells[cells[i]].stats.total.mean < r->cells[cells[w]].stats.total.mean)
			w = i;
	*t = (struct pivot_table){ .winner = cells[w], .n = k - 1 };
	t->title = xasprintf("%s%s%s%s%s%s", l->cols ? l->cols : "", l->cols ? "=" : "",
			     l->cols ? col : "every cell", *l->groups.v[g] ? " (" : "",
			     l->groups.v[g], *l->groups.v[g] ? ")" : "");
	t->cells = xcalloc(k, sizeof(*t->cells));
	t->v = xcalloc(k, sizeof(*t->v));
	t->text = xcalloc(k, sizeof(*t->text));
	_cleanup_free_ struct verdict_pair *pairs = xcalloc(k, sizeof(*pairs));
	for (size_t i = 0, j = 0; i < k; i++) {
		if (i == w)
			continue;
		t->cells[j] = cells[i];
		pairs[j++] = (struct verdict_pair){ &r->cells[cells[w]], &r->cells[cells[i]] };
	}
	if (verdict_pairs(r, pairs, t->n, NULL, t->v, err) < 0)
		return -1;
	for (size_t j = 0; j < t->n; j++) {
		_cleanup_free_ char *a = report_clean_text(l->row[t->winner]);
		_cleanup_free_ char *b = report_clean_text(l->row[t->cells[j]]);
		t->text[j] = verdict_text(&t->v[j], a, b);
	}
	return 0;
}

int pivot_verdicts_build(const struct results *r, const struct layout *l,
			 struct pivot_verdicts *out, char **err)
{
	*out = (struct pivot_verdicts){ 0 };
	size_t cap = 0;
	_cleanup_free_ size_t *cells = xcalloc(r->n_cells + 1, sizeof(*cells));
	for (size_t g = 0; g < l->groups.n; g++) {
		struct strset cols = { 0 };
		for (const size_t *p = md_group_begin(l, g); p < md_group_end(l, g); p++)
			md_strset_add(&cols, l->col[*p]);
		int rc = 0;
		for (size_t c = 0; c < cols.n && rc == 0; c++) {
			size_t k = table_cells(r, l, g, cols.v[c], cells);
			if (k < 2)
				continue;
			out->t = xgrow(out->t, &cap, out->n + 1, sizeof(*out->t));
			rc = table_build(r, l, g, cols.v[c], cells, k, &out->t[out->n++], err);
		}
		md_strset_free(&cols);
		if (rc < 0)
			return -1;
	}
	return 0;
}

void pivot_verdicts_free(struct pivot_verdicts *pv)
{
	for (size_t i = 0; i < pv->n; i++) {
		struct pivot_table *t = &pv->t[i];
		for (size_t j = 0; j < t->n; j++) {
			verdict_clear(&t->v[j]);
			free(t->text ? t->text[j] : NULL);
		}
		free(t->title);
		free(t->cells);
		free(t->v);
		free(t->text);
	}
	free(pv->t);
	*pv = (struct pivot_verdicts){ 0 };
}

void md_write_verdicts(FILE *f, const struct results *r, const struct pivot_verdicts *pv,
		       const struct layout *l)
{
	if (!pv->n)
		return;
	fputs("### Verdicts\n\nEach configuration against the fastest mean of its column, on boot "
	      "means (a boot is the sample), with a 95% interval and false-discovery control over "
	      "the column; a change under 5% is indistinguishable.\n\n",
	      f);
	for (size_t i = 0; i < pv->n; i++) {
		const struct pivot_table *t = &pv->t[i];
		const struct stats_summary *s = &r->cells[t->winner].stats.total;
		fputs("- **", f);
		md_text(f, t->title);
		fputs("**: fastest mean ", f);
		md_text(f, l->row[t->winner]);
		fprintf(f, " (%.3g\xc2\xa0s", s->mean);
		if (isfinite(s->ci_low) && isfinite(s->ci_high))
			fprintf(f, " [95%% CI %.3g to %.3g\xc2\xa0s]", s->ci_low, s->ci_high);
		fputs(")\n", f);
		for (size_t j = 0; j < t->n; j++) {
			fputs("  - ", f);
			md_text(f, t->text[j]);
			fputc('\n', f);
		}
	}
	fputc('\n', f);
}

char *report_pivot_summary(const struct results *r, const struct report_markdown_opts *o,
			   char **err)
{
	static const struct report_markdown_opts defaults = { 0 };
	struct layout l = { 0 };
	struct pivot_verdicts pv = { 0 };
	char *text = NULL;
	size_t len = 0;
	if (md_layout_build(&l, r, o ? o : &defaults, err) < 0 ||
	    pivot_verdicts_build(r, &l, &pv, err) < 0) {
		pivot_verdicts_free(&pv);
		md_layout_free(&l, r->n_cells);
		return NULL;
	}
	struct report_locale loc;
	report_locale_enter(&loc);
	FILE *f = open_memstream(&text, &len);
	for (size_t i = 0; f && i < pv.n; i++) {
		const struct pivot_table *t = &pv.t[i];
		const struct stats_summary *s = &r->cells[t->winner].stats.total;
		_cleanup_free_ char *title = report_clean_text(t->title);
		_cleanup_free_ char *win = report_clean_text(l.row[t->winner]);
		fprintf(f, "%s: fastest mean %s (%.3g s", title, win, s->mean);
		if (isfinite(s->ci_low) && isfinite(s->ci_high))
			fprintf(f, " [95%% CI %.3g to %.3g s]", s->ci_low, s->ci_high);
		fputs(")", f);
		for (size_t j = 0; j < t->n; j++)
			fprintf(f, "; %s", t->text[j]);
		fputc('\n', f);
	}
	if (f)
		fclose(f);
	report_locale_leave(&loc);
	pivot_verdicts_free(&pv);
	md_layout_free(&l, r->n_cells);
	if (!text)
		*err = xstrdup("out of memory");
	return text;
}

static json_t *verdict_json(const struct results *r, const struct pivot_table *t, size_t j)
{
	const struct verdict *v = &t->v[j];
	json_t *o = json_object();
	json_object_set_new(o, "table", results_json_string(t->title, report_clean_text));
	json_object_set_new(o, "metric", json_string("total"));
	json_object_set_new(o, "a", results_json_string(r->cells[t->winner].id, report_clean_text));
	json_object_set_new(o, "b",
			    results_json_string(r->cells[t->cells[j]].id, report_clean_text));
	json_object_set_new(o, "verdict", json_string(verdict_kind_name(v->kind)));
	json_object_set_new(o, "gain", results_json_number(v->gain));
	json_object_set_new(o, "ci_low", results_json_number(v->gain_low));
	json_object_set_new(o, "ci_high", results_json_number(v->gain_high));
	json_object_set_new(o, "level", results_json_number(2 * v->confidence - 1));
	json_object_set_new(o, "threshold", results_json_number(v->threshold));
	json_object_set_new(o, "paired", json_boolean(v->paired));
	json_object_set_new(o, "boots_a", json_integer((json_int_t)v->boots_a));
	json_object_set_new(o, "boots_b", json_integer((json_int_t)v->boots_b));
	json_object_set_new(o, "runs_a", json_integer((json_int_t)v->runs_a));
	json_object_set_new(o, "runs_b", json_integer((json_int_t)v->runs_b));
	json_object_set_new(o, "p_a_better", results_json_number(v->p_a_better));
	json_object_set_new(o, "p_b_better", results_json_number(v->p_b_better));
	json_object_set_new(o, "more_boots",
			    v->more_boots > 0 ? json_integer(v->more_boots) : json_null());
	json_object_set_new(o, "note", results_json_string(v->note, report_clean_text));
	json_object_set_new(o, "text", results_json_string(t->text[j], report_clean_text));
	return o;
}

json_t *report_verdicts_json(const struct results *r, const struct report_markdown_opts *o,
			     char **err)
{
	static const struct report_markdown_opts defaults = { 0 };
	struct layout l = { 0 };
	struct pivot_verdicts pv = { 0 };
	json_t *a = NULL;
	struct report_locale loc;
	report_locale_enter(&loc); /* the words in the C locale */
	if (md_layout_build(&l, r, o ? o : &defaults, err) == 0 &&
	    pivot_verdicts_build(r, &l, &pv, err) == 0) {
		a = json_array();
		for (size_t i = 0; i < pv.n; i++)
			for (size_t j = 0; j < pv.t[i].n; j++)
				json_array_append_new(a, verdict_json(r, &pv.t[i], j));
	}
	report_locale_leave(&loc);
	pivot_verdicts_free(&pv);
	md_layout_free(&l, r->n_cells);
	return a;
}
