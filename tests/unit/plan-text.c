/* SPDX-License-Identifier: MIT */
/* Plans parsed from text, for test-plan.c, test-plan-merge.c and test-plan-rules.c. */
#include <glib.h>
#include <string.h>

#include "plan-text.h"

struct plan *parse(const char *text, struct diag_list *d)
{
	return plan_parse_buffer("mem.yaml", text, strlen(text), d);
}

/* Parse `text`, which must fail, and return all messages joined by newlines. */
char *errors_of(const char *text)
{
	struct diag_list d = { 0 };
	struct plan *p = parse(text, &d);
	g_assert_null(p);
	g_assert_cmpuint(d.n, >, 0);
	GString *s = g_string_new(NULL);
	for (size_t i = 0; i < d.n; i++) {
		char *m = diag_format(&d.items[i]);
		g_string_append_printf(s, "%s%s", i ? "\n" : "", m);
		free(m);
	}
	diag_list_clear(&d);
	return g_string_free(s, FALSE);
}

void set_opt(struct plan_method *m, const char *key, const char *text)
{
	char *err = NULL;
	if (plan_method_set(m, key, text, &err) < 0)
		g_error("%s: %s", key, err);
}
