/* SPDX-License-Identifier: MIT */
#include "dataset-files.h"

#include <glib.h>
#include <stdio.h>
#include <stdlib.h>

#include "fs.h"
#include "util.h"

char *tmpdir(void)
{
	GError *e = NULL;
	char *d = g_dir_make_tmp("ferry-test-dataset-XXXXXX", &e);
	g_assert_no_error(e);
	char *r = xstrdup(d);
	g_free(d);
	return r;
}

void rmtree(char *d)
{
	g_assert_cmpint(rm_tree(d, NULL), ==, 0);
	free(d);
}

struct manifest *gen(const struct dataset_spec *spec, const char *dir)
{
	struct manifest *m = NULL;
	char *err = NULL;
	struct dataset_gen_opts o = { .no_sync = true };
	if (dataset_generate(spec, dir, &o, &m, &err) < 0)
		g_error("generate: %s", err);
	return m;
}

char *slurp(const char *path, size_t *len)
{
	char *s = read_file(path, len);
	g_assert_nonnull(s);
	return s;
}

void write_text(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");
	g_assert_nonnull(f);
	fputs(s, f);
	g_assert_cmpint(fclose(f), ==, 0);
}
