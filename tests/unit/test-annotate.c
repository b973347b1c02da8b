/* SPDX-License-Identifier: MIT */
/*
 * GitHub annotations of a run (report_annotations(), gh_annotation()): one "::error" per error
 * of a failed or errored cell, pointing where the locator says, with GitHub's escaping of '%',
 * CR and LF in the message and of ',' and ':' in the properties; none for passed, skipped or
 * pending cells; capped.
 */
#include <glib.h>
#include <string.h>

#include "diag.h"
#include "reporters.h"
#include "results.h"
#include "util.h"

static char *capture_annotations(const struct results *r, report_locate_fn fn, size_t max,
				 size_t *shown)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	*shown = report_annotations(r, fn, NULL, max, f);
	fclose(f);
	return text;
}

/* criteria at line 20 of the plan, everything else at line 7 */
static void locate(void *ud, const struct result_cell *c, const struct result_error *e,
		   struct report_where *w)
{
	w->file = "plans/p,1.yaml";
	w->line = e && e->kind == ERROR_CRITERION ? 20 : 7;
	w->col = 5;
}

static struct results *sample(void)
{
	struct results *r = results_new();
	results_set_plan(r, "p", "plans/p.yaml", "x", 1);
	results_add_cell(r, "method=ok")->status = STATUS_PASSED;
	results_add_cell(r, "method=skip")->status = STATUS_SKIPPED;
	results_add_cell(r, "method=later")->status = STATUS_PENDING;
	struct result_cell *c = results_add_cell(r, "method=a,dataset=b:c");
	c->status = STATUS_FAILED;
	result_cell_add_error(c, ERROR_CRITERION,
			      "criterion plans/p.yaml:20: throughput is 5 MB/s, expected >= 20 "
			      "MB/s (100%% of the bound)");
	result_cell_add_error(c, ERROR_INTEGRITY, "2 files differ\r\n::warning forged");
	c = results_add_cell(r, "method=boot");
	c->status = STATUS_ERROR;
	result_cell_add_error(c, ERROR_INFRA, "guest did not boot");
	results_add_cell(r, "method=bare")->status = STATUS_FAILED; /* no error recorded */
	return r;
}

static void test_lines(void)
{
	struct results *r = sample();
	size_t shown;
	char *text = capture_annotations(r, locate, 50, &shown);
	g_assert_cmpuint(shown, ==, 4);
	const char *want =
	    "::error file=plans/p%2C1.yaml,line=20,col=5,title=ferry%3A criterion failed%3A "
	    "method=a%2Cdataset=b%3Ac::cell method=a,dataset=b:c: criterion plans/p.yaml:20: "
	    "throughput is 5 MB/s, expected >= 20 MB/s (100%25 of the bound)\n"
	    /* CR and LF are escaped before GitHub's escaping: the forged command stays inside */
	    "::error file=plans/p%2C1.yaml,line=7,col=5,title=ferry%3A data not intact%3A "
	    "method=a%2Cdataset=b%3Ac::cell method=a,dataset=b:c: 2 files differ\\r\\n::warning "
	    "forged\n"
	    "::error file=plans/p%2C1.yaml,line=7,col=5,title=ferry%3A infrastructure error%3A "
	    "method=boot::cell method=boot: guest did not boot\n"
	    "::error file=plans/p%2C1.yaml,line=7,col=5,title=ferry%3A failed%3A "
	    "method=bare::cell method=bare: failed\n";
	g_assert_cmpstr(text, ==, want);
	free(text);

	/* without a locator: the plan file of the results, no line */
	text = capture_annotations(r, NULL, 50, &shown);
	g_assert_true(g_str_has_prefix(text, "::error file=plans/p.yaml,title=ferry%3A criterion"));
	free(text);

	/* capped: the rest is counted in one warning */
	text = capture_annotations(r, locate, 1, &shown);
	g_assert_cmpuint(shown, ==, 1);
	g_assert_nonnull(strstr(text, "\n::warning title=ferry::3 more failures not annotated (at "
				      "most 1)\n"));
	free(text);
	results_free(r);
}

/* The escaping alone: every character GitHub decodes is encoded, in data and properties. */
static void test_escaping(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	gh_annotation(f, "warning", NULL, 0, 0, "a,b:c%d", "50% a,b:c");
	gh_annotation(f, "error", "f:1", 3, 0, NULL, "m");
	fclose(f);
	g_assert_cmpstr(text, ==,
			"::warning title=a%2Cb%3Ac%25d::50%25 a,b:c\n"
			"::error file=f%3A1,line=3::m\n");
	free(text);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/annotate/lines", test_lines);
	g_test_add_func("/annotate/escaping", test_escaping);
	return g_test_run();
}
