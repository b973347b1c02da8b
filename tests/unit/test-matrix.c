/* SPDX-License-Identifier: MIT */
/*
 * Matrix expansion, specified by tables: the GitHub docs' examples with their documented
 * combinations and order, the odometer order, exclude/include/zip, errors with positions, the
 * cap, overflow, and shards. Defs are written in the compact notation of matrix-defs.h; a random
 * comparison with GitHub's own algorithm is test-matrix-reference.c.
 */
#include <glib.h>
#include <string.h>

#include "diag.h"
#include "matrix-defs.h"
#include "matrix.h"
#include "util.h"

static const struct expand_case {
	const char *name;
	const char *axes, *zip, *exclude, *include;
	const char *ids;
} expand_cases[] = {
	/* docs "Adding a matrix strategy to your workflow job": the documented job order */
	{ "docs-order", "version=10,12,14;os=ubuntu-latest,windows-latest", NULL, NULL, NULL,
	  "version=10,os=ubuntu-latest\n"
	  "version=10,os=windows-latest\n"
	  "version=12,os=ubuntu-latest\n"
	  "version=12,os=windows-latest\n"
	  "version=14,os=ubuntu-latest\n"
	  "version=14,os=windows-latest" },
	/* docs "Expanding or adding matrix configurations": six combinations, in this order */
	{ "docs-fruit-animal", "fruit=apple,pear;animal=cat,dog", NULL, NULL,
	  "color=green|color=pink,animal=cat|fruit=apple,shape=circle|fruit=banana|"
	  "fruit=banana,animal=cat",
	  "fruit=apple,animal=cat,color=pink,shape=circle\n"
	  "fruit=apple,animal=dog,color=green,shape=circle\n"
	  "fruit=pear,animal=cat,color=pink\n"
	  "fruit=pear,animal=dog,color=green\n"
	  "fruit=banana\n"
	  "fruit=banana,animal=cat" },
	/* docs "Example: Expanding configurations": npm only in the windows-latest/16 job */
	{ "docs-expanding", "os=windows-latest,ubuntu-latest;node=14,16", NULL, NULL,
	  "os=windows-latest,node=16,npm=6",
	  "os=windows-latest,node=14\n"
	  "os=windows-latest,node=16,npm=6\n"
	  "os=ubuntu-latest,node=14\n"
	  "os=ubuntu-latest,node=16" },
	/* docs "Example: Adding configurations": 9 + windows-latest/17 = 10 jobs */
	{ "docs-adding", "os=macos-latest,windows-latest,ubuntu-latest;version=12,14,16", NULL,
	  NULL, "os=windows-latest,version=17",
	  "os=macos-latest,version=12\n"
	  "os=macos-latest,version=14\n"
	  "os=macos-latest,version=16\n"
	  "os=windows-latest,version=12\n"
	  "os=windows-latest,version=14\n"
	  "os=windows-latest,version=16\n"
	  "os=ubuntu-latest,version=12\n"
	  "os=ubuntu-latest,version=14\n"
	  "os=ubuntu-latest,version=16\n"
	  "os=windows-latest,version=17" },
	/* docs include-only matrix: one job per entry */
	{ "docs-include-only", "", NULL, NULL,
	  "site=production,datacenter=site-a|site=staging,datacenter=site-b",
	  "site=production,datacenter=site-a\n"
	  "site=staging,datacenter=site-b" },
	/* docs "Excluding matrix configurations": 12 - 1 - 2 = 9 jobs */
	{ "docs-exclude",
	  "os=macos-latest,windows-latest;version=12,14,16;"
	  "environment=staging,production",
	  NULL, "os=macos-latest,version=12,environment=production|os=windows-latest,version=16",
	  NULL,
	  "os=macos-latest,version=12,environment=staging\n"
	  "os=macos-latest,version=14,environment=staging\n"
	  "os=macos-latest,version=14,environment=production\n"
	  "os=macos-latest,version=16,environment=staging\n"
	  "os=macos-latest,version=16,environment=production\n"
	  "os=windows-latest,version=12,environment=staging\n"
	  "os=windows-latest,version=12,environment=production\n"
	  "os=windows-latest,version=14,environment=staging\n"
	  "os=windows-latest,version=14,environment=production" },
	/* docs fail-fast example: an include contradicting an original value adds a job */
	{ "docs-experimental", "version=6,7,8;experimental=false", NULL, NULL,
	  "version=9,experimental=true",
	  "version=6,experimental=false\n"
	  "version=7,experimental=false\n"
	  "version=8,experimental=false\n"
	  "version=9,experimental=true" },
	/* docs continue-on-error example */
	{ "docs-continue-on-error", "node=13,14;os=macos-latest,ubuntu-latest;experimental=false",
	  NULL, NULL, "node=15,os=ubuntu-latest,experimental=true",
	  "node=13,os=macos-latest,experimental=false\n"
	  "node=13,os=ubuntu-latest,experimental=false\n"
	  "node=14,os=macos-latest,experimental=false\n"
	  "node=14,os=ubuntu-latest,experimental=false\n"
	  "node=15,os=ubuntu-latest,experimental=true" },
	/* "All include combinations are processed after exclude": include adds an excluded one
	 * back (as a cell of its own: it matches no remaining product cell) */
	{ "include-after-exclude", "a=1,2;b=x,y", NULL, "a=1,b=y", "a=1,b=y",
	  "a=1,b=x\n"
	  "a=2,b=x\n"
	  "a=2,b=y\n"
	  "a=1,b=y" },
	/* the odometer: first axis slowest, last axis fastest */
	{ "odometer-3-axes", "vm=small,large;disk=sparse,fixed,raw;method=image,agent", NULL, NULL,
	  NULL,
	  "vm=small,disk=sparse,method=image\n"
	  "vm=small,disk=sparse,method=agent\n"
	  "vm=small,disk=fixed,method=image\n"
	  "vm=small,disk=fixed,method=agent\n"
	  "vm=small,disk=raw,method=image\n"
	  "vm=small,disk=raw,method=agent\n"
	  "vm=large,disk=sparse,method=image\n"
	  "vm=large,disk=sparse,method=agent\n"
	  "vm=large,disk=fixed,method=image\n"
	  "vm=large,disk=fixed,method=agent\n"
	  "vm=large,disk=raw,method=image\n"
	  "vm=large,disk=raw,method=agent" },
	{ "single-axis", "vm=small", NULL, NULL, NULL, "vm=small" },
	/* exclude matches partially: one key removes every cell with that value */
	{ "exclude-partial-one-key", "a=1,2,3;b=x,y", NULL, "a=2", NULL,
	  "a=1,b=x\n"
	  "a=1,b=y\n"
	  "a=3,b=x\n"
	  "a=3,b=y" },
	{ "exclude-partial-two-of-three", "a=1,2;b=x,y;c=p,q", NULL, "a=1,c=q|b=y,c=p", NULL,
	  "a=1,b=x,c=p\n"
	  "a=2,b=x,c=p\n"
	  "a=2,b=x,c=q\n"
	  "a=2,b=y,c=q" },
	/* an exclude value no axis has matches nothing (not an error, as in GitHub) */
	{ "exclude-unknown-value", "a=1,2", NULL, "a=9", NULL, "a=1\na=2" },
	/* include extends the cells it does not contradict ... */
	{ "include-extends-matching", "a=1,2;b=x,y", NULL, NULL, "b=y,note=hi",
	  "a=1,b=x\n"
	  "a=1,b=y,note=hi\n"
	  "a=2,b=x\n"
	  "a=2,b=y,note=hi" },
	/* ... and adds a cell when overwriting an original value is the only way to fit */
	{ "include-never-overwrites-original", "a=1,2;b=x,y", NULL, NULL, "a=1,b=z",
	  "a=1,b=x\n"
	  "a=1,b=y\n"
	  "a=2,b=x\n"
	  "a=2,b=y\n"
	  "a=1,b=z" },
	/* an entry equal to a product cell extends it with nothing and adds no cell */
	{ "include-equal-to-cell", "a=1,2", NULL, NULL, "a=2", "a=1\na=2" },
	/* an include entry without keys extends every cell with nothing (the plan may attach a
	 * `run:` override to it) */
	{ "include-empty-entry", "a=1,2", NULL, NULL, "", "a=1\na=2" },
	/* include-only keys take one global order (first appearance in the include list) */
	{ "include-key-order", "a=1,2", NULL, NULL, "a=1,x=1|y=2|x=3",
	  "a=1,x=3,y=2\n"
	  "a=2,x=3,y=2" },
	{ "include-key-order-partial", "a=1,2", NULL, NULL, "a=1,x=1|y=2|a=2,x=3",
	  "a=1,x=1,y=2\n"
	  "a=2,x=3,y=2" },
	/* a new cell is not extended by later entries; its axis keys follow the axis order */
	{ "include-new-cell-order", "a=1,2;b=x,y", NULL, NULL, "b=z,a=3,k=v|k=w",
	  "a=1,b=x,k=w\n"
	  "a=1,b=y,k=w\n"
	  "a=2,b=x,k=w\n"
	  "a=2,b=y,k=w\n"
	  "a=3,b=z,k=v" },
	/* zip: os and arch advance together, as one axis placed where os stands */
	{ "zip-basic", "os=linux,windows,mac;arch=x86,arm,ppc;mode=m,n", "os+arch", NULL, NULL,
	  "os=linux,arch=x86,mode=m\n"
	  "os=linux,arch=x86,mode=n\n"
	  "os=windows,arch=arm,mode=m\n"
	  "os=windows,arch=arm,mode=n\n"
	  "os=mac,arch=ppc,mode=m\n"
	  "os=mac,arch=ppc,mode=n" },
	/* the group stands where its first axis (in axis order) stands; keys keep axis order */
	{ "zip-placement", "p=1,2;os=a,b;q=u,v;arch=x,y", "arch+os", NULL, NULL,
	  "p=1,os=a,q=u,arch=x\n"
	  "p=1,os=a,q=v,arch=x\n"
	  "p=1,os=b,q=u,arch=y\n"
	  "p=1,os=b,q=v,arch=y\n"
	  "p=2,os=a,q=u,arch=x\n"
	  "p=2,os=a,q=v,arch=x\n"
	  "p=2,os=b,q=u,arch=y\n"
	  "p=2,os=b,q=v,arch=y" },
	{ "zip-two-groups", "a=1,2;b=x,y;c=p,q;d=s,t", "a+b;c+d", NULL, NULL,
	  "a=1,b=x,c=p,d=s\n"
	  "a=1,b=x,c=q,d=t\n"
	  "a=2,b=y,c=p,d=s\n"
	  "a=2,b=y,c=q,d=t" },
	{ "zip-exclude-include", "os=l,w;arch=x,a;n=1,2", "os+arch", "os=w,n=2", "arch=a,big=yes",
	  "os=l,arch=x,n=1\n"
	  "os=l,arch=x,n=2\n"
	  "os=w,arch=a,n=1,big=yes" },
	/* separators and '%' inside keys and values are percent-encoded: ids stay unique */
	{ "escape", "k=a%2Cb,a,b=c%", NULL, NULL, NULL, "k=a%252Cb\nk=a\nk=b%3Dc%25" },
	{ "empty-def", "", NULL, NULL, NULL, "" },
};

static void test_expand_table(void)
{
	for (size_t i = 0; i < ELEMENTSOF(expand_cases); i++) {
		const struct expand_case *t = &expand_cases[i];
		struct matrix_def def;
		struct diag_list diags = { 0 };
		build_def(&def, t->axes, t->zip, t->exclude, t->include);
		struct matrix *m = matrix_expand(&def, 0, "t.yaml", &diags);
		g_autofree char *d = joined_diags(&diags);
		g_test_message("case %s", t->name);
		g_assert_cmpstr(d, ==, "");
		g_assert_nonnull(m);
		g_autofree char *ids = joined_ids(m);
		if (strcmp(ids, t->ids) != 0)
			g_test_message("case %s:\n%s", t->name, ids);
		g_assert_cmpstr(ids, ==, t->ids);
		matrix_free(m);
		matrix_def_clear(&def);
		diag_list_clear(&diags);
	}
}

static const struct error_case {
	const char *name;
	const char *axes, *zip, *exclude, *include;
	size_t cap;
	const char *diags;
} error_cases[] = {
	{ "duplicate-axis", "a=1;b=2;a=3", NULL, NULL, NULL, 0,
	  "t.yaml:12:3: duplicate matrix axis 'a' (first defined at line 10)" },
	{ "empty-axis", "a=1;b=", NULL, NULL, NULL, 0,
	  "t.yaml:11:3: matrix axis 'b' has no values" },
	{ "empty-axis-name", "=1", NULL, NULL, NULL, 0, "t.yaml:10:3: empty matrix axis name" },
	{ "duplicate-value", "a=1,2,1", NULL, NULL, NULL, 0,
	  "t.yaml:10:3: duplicate value '1' in matrix axis 'a'" },
	{ "zip-unknown-axis", "os=a,b;arch=x,y", "os+arh", NULL, NULL, 0,
	  "t.yaml:30:5: zip names unknown matrix axis 'arh' (did you mean 'arch'?)" },
	{ "zip-unknown-axis-far", "os=a,b;arch=x,y", "os+zebra", NULL, NULL, 0,
	  "t.yaml:30:5: zip names unknown matrix axis 'zebra'" },
	{ "zip-two-groups", "a=1,2;b=x,y;c=p,q", "a+b;b+c", NULL, NULL, 0,
	  "t.yaml:31:5: axis 'b' is already in the zip group at line 30" },
	{ "zip-twice-in-group", "a=1,2;b=x,y", "a+b+a", NULL, NULL, 0,
	  "t.yaml:30:5: axis 'a' appears twice in one zip group" },
	{ "zip-unequal", "a=1,2,3;b=x,y", "a+b", NULL, NULL, 0,
	  "t.yaml:30:5: zipped axes differ in length: 'a' has 3 values, 'b' has 2" },
	{ "zip-empty", "a=1,2", "", NULL, NULL, 0, "t.yaml:30:5: empty zip group" },
	{ "exclude-unknown-key", "method=a,b;disk=x", NULL, "disk=x,methd=a", NULL, 0,
	  "t.yaml:40:19: exclude names unknown matrix axis 'methd' (did you mean 'method'?)" },
	{ "duplicate-key-in-entry", "a=1,2", NULL, NULL, "x=1,x=2", 0,
	  "t.yaml:60:19: duplicate key 'x' in include entry" },
	/* GitHub: "Matrix exclude filter must not be empty" */
	{ "empty-exclude-entry", "a=1,2", NULL, "", NULL, 0, "t.yaml:40:7: empty exclude entry" },
	{ "all-excluded", "a=1,2;b=x", NULL, "b=x", NULL, 0,
	  "t.yaml:40:7: every matrix cell is excluded" },
	{ "duplicate-include-cell", "fruit=apple,pear;animal=cat,dog", NULL, NULL,
	  "fruit=banana|color=green|fruit=banana", 0,
	  "t.yaml:62:7: include entry adds the cell 'fruit=banana' that the include entry at line "
	  "60 already added" },
	/* key order in an entry does not matter: same parameters, same id */
	{ "duplicate-include-cell-reordered", "a=1", NULL, NULL, "a=2,b=3|b=3,a=2", 0,
	  "t.yaml:61:7: include entry adds the cell 'a=2,b=3' that the include entry at line 60 "
	  "already added" },
	{ "several-errors-at-once", "a=1,1;a=2;c=", "a+zz", "qqq=1", NULL, 0,
	  "t.yaml:10:3: duplicate value '1' in matrix axis 'a'\n"
	  "t.yaml:11:3: duplicate matrix axis 'a' (first defined at line 10)\n"
	  "t.yaml:12:3: matrix axis 'c' has no values\n"
	  "t.yaml:30:5: zip names unknown matrix axis 'zz'\n"
	  "t.yaml:40:9: exclude names unknown matrix axis 'qqq'" },
	/* the cap: the default, one over it, and a raised cap */
	{ "cap-default",
	  "a=0,1,2,3,4,5,6,7,8,9;b=0,1,2,3,4,5,6,7,8,9;"
	  "c=0,1,2,3,4,5,6,7,8,9;d=0,1,2,3,4,5,6,7,8,9;e=0,1",
	  NULL, NULL, NULL, 0,
	  "t.yaml:10:3: matrix expands to 20,000 cells, over the cap of 10,000 (raise it with "
	  "--max-cells)" },
	{ "cap-before-exclude", "a=0,1,2;b=0,1,2", NULL, "a=0", NULL, 8,
	  "t.yaml:10:3: matrix expands to 9 cells before exclude, over the cap of 8 (raise it "
	  "with --max-cells)" },
	{ "cap-with-includes", "a=0,1,2;b=0,1,2", NULL, NULL, "a=7|a=8", 10,
	  "t.yaml:10:3: matrix expands to 11 cells, over the cap of 10 (raise it with "
	  "--max-cells)" },
	/* 20 axes of 10 values: 10^20 overflows 64 bits (max ~1.8 * 10^19) */
	{ "overflow",
	  "a0=0,1,2,3,4,5,6,7,8,9;a1=0,1,2,3,4,5,6,7,8,9;a2=0,1,2,3,4,5,6,7,8,9;"
	  "a3=0,1,2,3,4,5,6,7,8,9;a4=0,1,2,3,4,5,6,7,8,9;a5=0,1,2,3,4,5,6,7,8,9;"
	  "a6=0,1,2,3,4,5,6,7,8,9;a7=0,1,2,3,4,5,6,7,8,9;a8=0,1,2,3,4,5,6,7,8,9;"
	  "a9=0,1,2,3,4,5,6,7,8,9;b0=0,1,2,3,4,5,6,7,8,9;b1=0,1,2,3,4,5,6,7,8,9;"
	  "b2=0,1,2,3,4,5,6,7,8,9;b3=0,1,2,3,4,5,6,7,8,9;b4=0,1,2,3,4,5,6,7,8,9;"
	  "b5=0,1,2,3,4,5,6,7,8,9;b6=0,1,2,3,4,5,6,7,8,9;b7=0,1,2,3,4,5,6,7,8,9;"
	  "b8=0,1,2,3,4,5,6,7,8,9;b9=0,1,2,3,4,5,6,7,8,9",
	  NULL, NULL, NULL, 0,
	  "t.yaml:10:3: matrix expands to more than 18,446,744,073,709,551,615 cells (the product "
	  "of the axis lengths overflows 64 bits), over the cap of 10,000" },
	/* 19 axes of 10 values: 10^19 still fits in 64 bits, so the cap message has the number */
	{ "no-overflow-19-axes",
	  "a0=0,1,2,3,4,5,6,7,8,9;a1=0,1,2,3,4,5,6,7,8,9;a2=0,1,2,3,4,5,6,7,8,9;"
	  "a3=0,1,2,3,4,5,6,7,8,9;a4=0,1,2,3,4,5,6,7,8,9;a5=0,1,2,3,4,5,6,7,8,9;"
	  "a6=0,1,2,3,4,5,6,7,8,9;a7=0,1,2,3,4,5,6,7,8,9;a8=0,1,2,3,4,5,6,7,8,9;"
	  "a9=0,1,2,3,4,5,6,7,8,9;b0=0,1,2,3,4,5,6,7,8,9;b1=0,1,2,3,4,5,6,7,8,9;"
	  "b2=0,1,2,3,4,5,6,7,8,9;b3=0,1,2,3,4,5,6,7,8,9;b4=0,1,2,3,4,5,6,7,8,9;"
	  "b5=0,1,2,3,4,5,6,7,8,9;b6=0,1,2,3,4,5,6,7,8,9;b7=0,1,2,3,4,5,6,7,8,9;"
	  "b8=0,1,2,3,4,5,6,7,8,9",
	  NULL, NULL, NULL, 1000000,
	  "t.yaml:10:3: matrix expands to 10,000,000,000,000,000,000 cells, over the cap of "
	  "1,000,000 (raise it with --max-cells)" },
};

static void test_expand_errors(void)
{
	for (size_t i = 0; i < ELEMENTSOF(error_cases); i++) {
		const struct error_case *t = &error_cases[i];
		struct matrix_def def;
		struct diag_list diags = { 0 };
		build_def(&def, t->axes, t->zip, t->exclude, t->include);
		g_test_message("case %s", t->name);
		struct matrix *m = matrix_expand(&def, t->cap, "t.yaml", &diags);
		g_assert_null(m);
		diag_sort(&diags);
		g_autofree char *d = joined_diags(&diags);
		g_assert_cmpstr(d, ==, t->diags);
		matrix_def_clear(&def);
		diag_list_clear(&diags);
	}
}

/* A def with `n_axes` axes; axis i has lens[i] values "v0".."vN". */
static void build_sized(struct matrix_def *def, const size_t *lens, size_t n_axes)
{
	*def = (struct matrix_def){ 0 };
	for (size_t i = 0; i < n_axes; i++) {
		char name[16], val[32];
		snprintf(name, sizeof(name), "x%zu", i);
		struct matrix_axis *ax = matrix_def_add_axis(def, name, 10 + (int)i, 3);
		for (size_t j = 0; j < lens[i]; j++) {
			snprintf(val, sizeof(val), "v%zu", j);
			matrix_axis_add_value(ax, val);
		}
	}
}

/* The brief's message shape with a product that is not a round number; checked before
 * allocating (12,345,678 cells of 3 axes would otherwise take ~150 MB). */
static void test_cap_message(void)
{
	static const size_t lens[] = { 2 * 3 * 3, 47, 14593 }; /* 18 * 47 * 14593 = 12,345,678 */
	struct matrix_def def;
	struct diag_list diags = { 0 };
	build_sized(&def, lens, ELEMENTSOF(lens));
	g_assert_null(matrix_expand(&def, 0, "t.yaml", &diags));
	g_assert_cmpuint(diags.n, ==, 1);
	g_assert_cmpstr(diags.items[0].msg, ==,
			"matrix expands to 12,345,678 cells, over the cap of 10,000 (raise it with "
			"--max-cells)");
	diag_list_clear(&diags);
	matrix_def_clear(&def);
}

/* Exactly the cap passes; the default cap is MATRIX_DEFAULT_CAP. */
static void test_cap_exact(void)
{
	static const size_t lens[] = { 100, 100 };
	struct matrix_def def;
	struct diag_list diags = { 0 };
	build_sized(&def, lens, ELEMENTSOF(lens));
	struct matrix *m = matrix_expand(&def, 0, "t.yaml", &diags);
	g_assert_nonnull(m);
	g_assert_cmpuint(matrix_n_cells(m), ==, MATRIX_DEFAULT_CAP);
	g_assert_cmpstr(matrix_cell_id(m, 0), ==, "x0=v0,x1=v0");
	g_assert_cmpstr(matrix_cell_id(m, 1), ==, "x0=v0,x1=v1");
	g_assert_cmpstr(matrix_cell_id(m, 100), ==, "x0=v1,x1=v0");
	g_assert_cmpstr(matrix_cell_id(m, 9999), ==, "x0=v99,x1=v99");
	matrix_free(m);
	g_assert_null(matrix_expand(&def, 9999, "t.yaml", &diags));
	g_assert_cmpuint(diags.n, ==, 1);
	g_assert_null(matrix_expand(&def, 9999, "t.yaml", NULL)); /* diags are optional */
	diag_list_clear(&diags);
	matrix_def_clear(&def);
}

/* Every id is unique (checked with a hash set over a 3-axis product with include and zip). */
static void test_ids_unique(void)
{
	struct matrix_def def;
	struct diag_list diags = { 0 };
	build_def(&def, "a=1,2,3,4;b=x,y,z,w;c=p,q,r;d=1,2,3,4", "b+d", "a=2,c=q",
		  "c=r,extra=1|a=9|a=9,b=x|extra=2,b=y");
	struct matrix *m = matrix_expand(&def, 0, NULL, &diags);
	g_assert_nonnull(m);
	g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
	for (size_t c = 0; c < matrix_n_cells(m); c++)
		g_assert_true(g_hash_table_add(seen, (gpointer)matrix_cell_id(m, c)));
	g_assert_cmpuint(g_hash_table_size(seen), ==, 4 * 4 * 3 - 4 + 2);
	matrix_free(m);
	matrix_def_clear(&def);
}

/* Parameters and include indexes of the docs' fruit/animal example. */
static void test_accessors(void)
{
	struct matrix_def def;
	struct diag_list diags = { 0 };
	build_def(&def, "fruit=apple,pear;animal=cat,dog", NULL, NULL,
		  "color=green|color=pink,animal=cat|fruit=apple,shape=circle|fruit=banana|"
		  "fruit=banana,animal=cat");
	struct matrix *m = matrix_expand(&def, 0, "t.yaml", &diags);
	/* the def may be cleared before the matrix is used: the matrix owns copies */
	matrix_def_clear(&def);
	g_assert_nonnull(m);
	g_assert_cmpuint(matrix_n_cells(m), ==, 6);

	static const struct {
		size_t cell;
		const char *kv; /* "k=v k=v" */
		const char *includes;
	} cases[] = {
		{ 0, "fruit=apple animal=cat color=pink shape=circle", "0 1 2" },
		{ 1, "fruit=apple animal=dog color=green shape=circle", "0 2" },
		{ 2, "fruit=pear animal=cat color=pink", "0 1" },
		{ 3, "fruit=pear animal=dog color=green", "0" },
		{ 4, "fruit=banana", "3" },
		{ 5, "fruit=banana animal=cat", "4" },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		size_t c = cases[i].cell, n;
		GString *kv = g_string_new(NULL), *inc = g_string_new(NULL);
		for (size_t p = 0; p < matrix_cell_n_params(m, c); p++) {
			const char *k = matrix_cell_key(m, c, p), *v = matrix_cell_value(m, c, p);
			g_string_append_printf(kv, "%s%s=%s", p ? " " : "", k, v);
			g_assert_cmpstr(matrix_cell_get(m, c, k), ==, v);
		}
		const size_t *ix = matrix_cell_includes(m, c, &n);
		for (size_t j = 0; j < n; j++)
			g_string_append_printf(inc, "%s%zu", j ? " " : "", ix[j]);
		g_assert_cmpstr(kv->str, ==, cases[i].kv);
		g_assert_cmpstr(inc->str, ==, cases[i].includes);
		g_string_free(kv, TRUE);
		g_string_free(inc, TRUE);
	}
	g_assert_null(matrix_cell_get(m, 3, "shape"));
	g_assert_null(matrix_cell_get(m, 4, "animal"));
	g_assert_null(matrix_cell_get(m, 0, "nope"));
	g_assert_null(matrix_cell_key(m, 4, 1));
	/* all keys: axes, then include-only keys in order of first appearance */
	g_assert_cmpuint(matrix_n_keys(m), ==, 4);
	g_assert_cmpstr(matrix_key(m, 0), ==, "fruit");
	g_assert_cmpstr(matrix_key(m, 1), ==, "animal");
	g_assert_cmpstr(matrix_key(m, 2), ==, "color");
	g_assert_cmpstr(matrix_key(m, 3), ==, "shape");
	matrix_free(m);
	matrix_free(NULL);
}

/* matrix_cell_find() returns every cell's index from its id, and SIZE_MAX for ids that are
 * close to real ones but not equal. */
static void test_find(void)
{
	static const struct {
		const char *axes, *zip, *exclude, *include;
		const char *missing; /* '\n'-separated ids that must not be found */
	} cases[] = {
		{ "fruit=apple,pear;animal=cat,dog", NULL, NULL,
		  "color=green|color=pink,animal=cat|fruit=apple,shape=circle|fruit=banana|"
		  "fruit=banana,animal=cat",
		  "fruit=apple,animal=cat\n"
		  "fruit=apple,animal=cat,color=green,shape=circle\n"
		  "animal=cat,fruit=apple,color=pink,shape=circle\n"
		  "fruit=kiwi,animal=cat\n"
		  "fruit=banana,animal=dog\n"
		  "fruit=apple\n"
		  "\n"
		  "garbage\n"
		  "fruit=%zz,animal=cat\n"
		  "fruit=apple,animal=cat,color=pink,shape=circle," },
		{ "os=l,w,m;arch=x,a,p;n=1,2,3", "os+arch", "os=w,n=2",
		  /* the last entry pairs os and arch against the zip: found past a product cell
		   * with the same os and n */
		  "arch=a,big=yes|os=q|os=l,arch=a,n=1",
		  "os=l,arch=a,n=2\n"
		  "os=w,arch=a,n=2\n"
		  "os=w,arch=a,n=1\n"
		  "os=q,arch=x" },
		{ "k=a%2Cb,a,b=c%;z=1,2", NULL, NULL, NULL, "k=a%2Cb,z=1\nk=b=c%,z=1" },
		{ "", NULL, NULL, "site=a,dc=1|site=b|", "site=a\nsite=b,dc=1" },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct matrix_def def;
		struct diag_list diags = { 0 };
		build_def(&def, cases[i].axes, cases[i].zip, cases[i].exclude, cases[i].include);
		struct matrix *m = matrix_expand(&def, 0, NULL, &diags);
		g_assert_nonnull(m);
		for (size_t c = 0; c < matrix_n_cells(m); c++)
			g_assert_cmpuint(matrix_cell_find(m, matrix_cell_id(m, c)), ==, c);
		g_auto(GStrv) missing = g_strsplit(cases[i].missing, "\n", -1);
		for (size_t j = 0; missing[j]; j++) {
			g_test_message("case %zu: '%s'", i, missing[j]);
			g_assert_cmpuint(matrix_cell_find(m, missing[j]), ==, SIZE_MAX);
		}
		matrix_free(m);
		matrix_def_clear(&def);
	}
}

/* A keyless include entry extends every product cell: its index is in every cell's list, so a
 * `run:` override the parser keeps for it applies everywhere. */
static void test_keyless_include(void)
{
	struct matrix_def def;
	struct diag_list diags = { 0 };
	size_t n;
	build_def(&def, "a=1,2", NULL, NULL, "a=2,x=y|");
	struct matrix *m = matrix_expand(&def, 0, NULL, &diags);
	g_assert_nonnull(m);
	g_assert_cmpuint(matrix_n_cells(m), ==, 2);
	const size_t *ix = matrix_cell_includes(m, 0, &n);
	g_assert_cmpuint(n, ==, 1);
	g_assert_cmpuint(ix[0], ==, 1);
	ix = matrix_cell_includes(m, 1, &n);
	g_assert_cmpuint(n, ==, 2);
	g_assert_cmpuint(ix[0], ==, 0);
	g_assert_cmpuint(ix[1], ==, 1);
	g_assert_cmpstr(matrix_cell_id(m, 1), ==, "a=2,x=y");
	matrix_free(m);
	matrix_def_clear(&def);
}

static void test_def_clear(void)
{
	struct matrix_def def = { 0 };
	matrix_def_clear(&def);
	build_def(&def, "a=1,2;b=x", "a+b", "a=1", "c=3");
	matrix_def_clear(&def);
	g_assert_null(def.axes);
	g_assert_cmpuint(def.n_axes, ==, 0);
	g_assert_cmpuint(def.n_include, ==, 0);
	matrix_def_clear(&def);
}

/* A 100-cell matrix split into N = 1..7 shards: every cell in exactly one, sizes within 1. */
static void test_shards_partition(void)
{
	static const size_t lens[] = { 10, 10 };
	struct matrix_def def;
	struct diag_list diags = { 0 };
	build_sized(&def, lens, ELEMENTSOF(lens));
	struct matrix *m = matrix_expand(&def, 0, NULL, &diags);
	g_assert_nonnull(m);
	size_t cells = matrix_n_cells(m);
	g_assert_cmpuint(cells, ==, 100);
	for (unsigned n = 1; n <= 7; n++) {
		size_t min = SIZE_MAX, max = 0, total = 0;
		for (unsigned k = 1; k <= n; k++) {
			size_t size = 0;
			for (size_t c = 0; c < cells; c++)
				size += shard_contains(c, k, n);
			min = size < min ? size : min;
			max = size > max ? size : max;
			total += size;
		}
		for (size_t c = 0; c < cells; c++) {
			unsigned owners = 0;
			for (unsigned k = 1; k <= n; k++)
				owners += shard_contains(c, k, n);
			g_assert_cmpuint(owners, ==, 1);
		}
		g_assert_cmpuint(total, ==, cells);
		g_assert_cmpuint(max - min, <=, 1);
	}
	/* pinned: round-robin */
	g_assert_true(shard_contains(0, 1, 3));
	g_assert_true(shard_contains(4, 2, 3));
	g_assert_false(shard_contains(4, 1, 3));
	g_assert_false(shard_contains(0, 0, 3));
	g_assert_false(shard_contains(0, 4, 3));
	g_assert_false(shard_contains(0, 1, 0));
	matrix_free(m);
	matrix_def_clear(&def);
}

static void test_shard_parse(void)
{
	static const struct {
		const char *in;
		unsigned k, n;
		const char *err;
	} cases[] = {
		{ "1/1", 1, 1, NULL },
		{ "3/7", 3, 7, NULL },
		{ "7/7", 7, 7, NULL },
		{ "4294967295/4294967295", 4294967295u, 4294967295u, NULL },
		{ "0/3", 0, 0, "invalid shard '0/3': K must be between 1 and 3" },
		{ "4/3", 0, 0, "invalid shard '4/3': K must be between 1 and 3" },
		{ "1/0", 0, 0, "invalid shard '1/0': the shard count N must be at least 1" },
		{ "abc", 0, 0, "invalid shard 'abc': expected K/N with 1 <= K <= N, e.g. '1/4'" },
		{ "", 0, 0, "invalid shard '': expected K/N with 1 <= K <= N, e.g. '1/4'" },
		{ "1/", 0, 0, "invalid shard '1/': expected K/N with 1 <= K <= N, e.g. '1/4'" },
		{ "/3", 0, 0, "invalid shard '/3': expected K/N with 1 <= K <= N, e.g. '1/4'" },
		{ "1/3x", 0, 0, "invalid shard '1/3x': expected K/N with 1 <= K <= N, e.g. '1/4'" },
		{ "-1/3", 0, 0, "invalid shard '-1/3': expected K/N with 1 <= K <= N, e.g. '1/4'" },
		{ "+1/3", 0, 0, "invalid shard '+1/3': expected K/N with 1 <= K <= N, e.g. '1/4'" },
		{ " 1/3", 0, 0, "invalid shard ' 1/3': expected K/N with 1 <= K <= N, e.g. '1/4'" },
		{ "1/3/5", 0, 0,
		  "invalid shard '1/3/5': expected K/N with 1 <= K <= N, e.g. '1/4'" },
		{ "1/4294967296", 0, 0,
		  "invalid shard '1/4294967296': numbers must be at most 4294967295" },
		{ "99999999999999999999999/3", 0, 0,
		  "invalid shard '99999999999999999999999/3': numbers must be at most 4294967295" },
	};
	unsigned k0 = 0, n0 = 0;
	g_assert_cmpint(shard_parse("0/1", &k0, &n0, NULL), ==, -1); /* err is optional */
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		unsigned k = 0, n = 0;
		char *err = NULL;
		int r = shard_parse(cases[i].in, &k, &n, &err);
		if (cases[i].err) {
			g_assert_cmpint(r, ==, -1);
			g_assert_cmpstr(err, ==, cases[i].err);
			free(err);
		} else {
			g_assert_cmpint(r, ==, 0);
			g_assert_null(err);
			g_assert_cmpuint(k, ==, cases[i].k);
			g_assert_cmpuint(n, ==, cases[i].n);
		}
	}
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/matrix/expand", test_expand_table);
	g_test_add_func("/matrix/errors", test_expand_errors);
	g_test_add_func("/matrix/cap-message", test_cap_message);
	g_test_add_func("/matrix/cap-exact", test_cap_exact);
	g_test_add_func("/matrix/ids-unique", test_ids_unique);
	g_test_add_func("/matrix/accessors", test_accessors);
	g_test_add_func("/matrix/find", test_find);
	g_test_add_func("/matrix/keyless-include", test_keyless_include);
	g_test_add_func("/matrix/def-clear", test_def_clear);
	g_test_add_func("/matrix/shards", test_shards_partition);
	g_test_add_func("/matrix/shard-parse", test_shard_parse);
	return g_test_run();
}
