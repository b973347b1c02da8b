/* SPDX-License-Identifier: MIT */
#include <glib.h>
#include <string.h>

#include "diag.h"
#include "util.h"

static void test_distance(void)
{
	static const struct {
		const char *a, *b;
		size_t d;
	} cases[] = {
		{ "", "", 0 },
		{ "dataset", "dataset", 0 },
		{ "datset", "dataset", 1 },
		{ "kitten", "sitting", 3 },
		{ "", "abc", 3 },
		{ "abc", "", 3 },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++)
		g_assert_cmpuint(string_distance(cases[i].a, cases[i].b), ==, cases[i].d);
}

static void test_closest(void)
{
	const char *const keys[] = { "datasets", "disks", "methods", "matrix", "vms" };
	g_assert_cmpstr(closest_match("datsets", keys, ELEMENTSOF(keys)), ==, "datasets");
	g_assert_cmpstr(closest_match("matrx", keys, ELEMENTSOF(keys)), ==, "matrix");
	g_assert_null(closest_match("zebra", keys, ELEMENTSOF(keys)));
}

static void test_overflow(void)
{
	uint64_t r;
	g_assert_true(mul_u64(1u << 20, 1u << 20, &r));
	g_assert_cmpuint(r, ==, UINT64_C(1) << 40);
	g_assert_false(mul_u64(UINT64_MAX, 2, &r));
	g_assert_false(add_u64(UINT64_MAX, 1, &r));
}

static void test_diag(void)
{
	struct diag_list l = { .max = 2 };
	diag_add(&l, "b.yaml", 3, 1, "third %d", 3);
	diag_add(&l, "b.yaml", 1, 5, "first");
	diag_add(&l, "b.yaml", 9, 9, "dropped");
	diag_sort(&l);
	g_assert_cmpuint(l.n, ==, 2);
	g_assert_cmpuint(l.dropped, ==, 1);
	char *s = diag_format(&l.items[0]);
	g_assert_cmpstr(s, ==, "b.yaml:1:5: first");
	free(s);
	diag_list_clear(&l);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/util/distance", test_distance);
	g_test_add_func("/util/closest", test_closest);
	g_test_add_func("/util/overflow", test_overflow);
	g_test_add_func("/util/diag", test_diag);
	return g_test_run();
}
