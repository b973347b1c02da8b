/* SPDX-License-Identifier: MIT */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "env-subst.h"
#include "units.h"
#include "util.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define TiB (UINT64_C(1) << 40)

struct ucase {
	const char *in;
	uint64_t out;
	const char *err; /* NULL: must succeed */
};

static void run_u64(const struct ucase *cases, size_t n,
		    int (*fn)(const char *, uint64_t *, char **))
{
	for (size_t i = 0; i < n; i++) {
		uint64_t v = 0;
		char *err = NULL;
		int r = fn(cases[i].in, &v, &err);
		if (cases[i].err) {
			g_assert_cmpint(r, ==, -1);
			g_assert_cmpstr(err, ==, cases[i].err);
			free(err);
		} else {
			if (r != 0)
				g_test_message("'%s': %s", cases[i].in, err);
			g_assert_cmpint(r, ==, 0);
			g_assert_null(err);
			g_assert_cmpuint(v, ==, cases[i].out);
		}
	}
}

static void test_size(void)
{
	static const struct ucase cases[] = {
		{ "0", 0, NULL },
		{ "512", 512, NULL },
		{ "1B", 1, NULL },
		{ "4KiB", 4 * KiB, NULL },
		{ "4 KiB", 4 * KiB, NULL },
		{ " 64MiB ", 64 * MiB, NULL },
		{ "1GiB", GiB, NULL },
		{ "2TiB", 2 * TiB, NULL },
		{ "1KB", 1000, NULL },
		{ "1MB", 1000000, NULL },
		{ "3GB", UINT64_C(3000000000), NULL },
		{ "1TB", UINT64_C(1000000000000), NULL },
		{ "1kib", KiB, NULL },
		{ "1.5GiB", GiB + GiB / 2, NULL },
		{ "0.5KiB", 512, NULL },
		{ "16777215TiB", UINT64_C(16777215) * TiB, NULL },
		{ "18446744073709551615", UINT64_MAX, NULL },
		{ "18446744073709551616", 0, "size '18446744073709551616' is too large" },
		{ "16777216TiB", 0, "size '16777216TiB' is too large (the limit is 2^64-1 bytes)" },
		{ "99999999999999999999GiB", 0, "size '99999999999999999999GiB' is too large" },
		{ "1.3B", 0, "invalid size '1.3B': not a whole number of bytes" },
		{ "-1MiB", 0, "invalid size '-1MiB': must not be negative" },
		{ "", 0,
		  "invalid size '': expected a number and a unit (B, KiB, MiB, GiB, TiB, KB, MB, "
		  "GB or TB)" },
		{ "MiB", 0,
		  "invalid size 'MiB': expected a number and a unit (B, KiB, MiB, GiB, TiB, KB, "
		  "MB, "
		  "GB or TB)" },
		{ "4GX", 0, "invalid size '4GX': unknown unit 'GX' (did you mean 'GB'?)" },
		{ "4 parsecs", 0,
		  "invalid size '4 parsecs': unknown unit 'parsecs' (use B, KiB, MiB, GiB, TiB, "
		  "KB, "
		  "MB, GB or TB)" },
		{ "1..5MiB", 0,
		  "invalid size '1..5MiB': unknown unit '..5MiB' (use B, KiB, MiB, GiB, TiB, KB, "
		  "MB, "
		  "GB or TB)" },
	};
	run_u64(cases, ELEMENTSOF(cases), parse_size);
}

static void test_duration(void)
{
	static const struct ucase cases[] = {
		{ "0s", 0, NULL },
		{ "500ms", 500 * NSEC_PER_MSEC, NULL },
		{ "1s", NSEC_PER_SEC, NULL },
		{ "1.5s", 1500 * NSEC_PER_MSEC, NULL },
		{ "10m", 600 * NSEC_PER_SEC, NULL },
		{ "2h", 7200 * NSEC_PER_SEC, NULL },
		{ "1h30m", 5400 * NSEC_PER_SEC, NULL },
		{ "1m 30s", 90 * NSEC_PER_SEC, NULL },
		{ "5124095h", UINT64_C(5124095) * 3600 * NSEC_PER_SEC, NULL },
		{ "5124096h", 0, "duration '5124096h' is too large" },
		{ "10", 0, "invalid duration '10': missing unit (ms, s, m or h)" },
		{ "10 parsecs", 0,
		  "invalid duration '10 parsecs': unknown unit 'parsecs' (use ms, s, m or h)" },
		{ "10sec", 0, "invalid duration '10sec': unknown unit 'sec' (use ms, s, m or h)" },
		{ "10mn", 0, "invalid duration '10mn': unknown unit 'mn' (did you mean 'ms'?)" },
		{ "-1s", 0, "invalid duration '-1s': must not be negative" },
		{ "", 0, "invalid duration '': expected a number and a unit (ms, s, m or h)" },
		{ "1m x", 0, "invalid duration '1m x': unexpected 'x'" },
	};
	run_u64(cases, ELEMENTSOF(cases), parse_duration);
}

static void test_throughput(void)
{
	static const struct ucase cases[] = {
		{ "20MB/s", 20000000, NULL },
		{ "1GiB/s", GiB, NULL },
		{ "1.5 MiB/s", MiB + MiB / 2, NULL },
		{ "100KB/s", 100000, NULL },
		{ "20MB", 0,
		  "invalid throughput '20MB': expected a size per second, like '20MB/s' or "
		  "'1GiB/s'" },
		{ "20/s", 0,
		  "invalid throughput '20/s': missing unit (B, KiB, MiB, GiB, TiB, KB, MB, GB or "
		  "TB)" },
		{ "20MX/s", 0,
		  "invalid throughput '20MX/s': unknown unit 'MX' (did you mean 'MB'?)" },
		{ "99999999TB/s", 0,
		  "throughput '99999999TB/s' is too large (the limit is 2^64-1 bytes)" },
	};
	run_u64(cases, ELEMENTSOF(cases), parse_throughput);
}

static void test_uint(void)
{
	static const struct ucase cases[] = {
		{ "0", 0, NULL },
		{ "42", 42, NULL },
		{ "+7", 7, NULL },
		{ "18446744073709551615", UINT64_MAX, NULL },
		{ "18446744073709551616", 0, "integer '18446744073709551616' is too large" },
		{ "-3", 0, "invalid integer '-3': must not be negative" },
		{ "two", 0, "invalid integer 'two': expected a whole number" },
		{ "1.5", 0, "invalid integer '1.5': expected a whole number" },
	};
	run_u64(cases, ELEMENTSOF(cases), parse_uint);
}

static void test_percent_double_bool(void)
{
	double d;
	bool b;
	char *err = NULL;

	g_assert_cmpint(parse_percent("5%", &d, &err), ==, 0);
	g_assert_cmpfloat(d, ==, 5.0);
	g_assert_cmpint(parse_percent(" 2.5 % ", &d, &err), ==, 0);
	g_assert_cmpfloat(d, ==, 2.5);
	g_assert_cmpint(parse_percent("5", &d, &err), ==, -1);
	g_assert_cmpstr(err, ==, "invalid percentage '5': expected a number and '%', like '5%'");
	g_clear_pointer(&err, free);
	g_assert_cmpint(parse_percent("x%", &d, &err), ==, -1);
	g_assert_cmpstr(err, ==, "invalid percentage 'x%': expected a number");
	g_clear_pointer(&err, free);
	g_assert_cmpint(parse_percent("-5%", &d, &err), ==, -1);
	g_assert_cmpstr(err, ==, "invalid percentage '-5%': must not be negative");
	g_clear_pointer(&err, free);

	g_assert_cmpint(parse_double("1.25", &d, &err), ==, 0);
	g_assert_cmpfloat(d, ==, 1.25);
	g_assert_cmpint(parse_double("1e3", &d, &err), ==, -1);
	g_assert_cmpstr(err, ==, "invalid number '1e3': expected a number");
	g_clear_pointer(&err, free);

	g_assert_cmpint(parse_bool("true", &b, &err), ==, 0);
	g_assert_true(b);
	g_assert_cmpint(parse_bool("false", &b, &err), ==, 0);
	g_assert_false(b);
	g_assert_cmpint(parse_bool("yes", &b, &err), ==, -1);
	g_assert_cmpstr(err, ==, "invalid boolean 'yes': expected true or false");
	free(err);
}

static void test_env(void)
{
	static const struct {
		const char *in, *out, *err;
	} cases[] = {
		{ "plain", "plain", NULL },
		{ "${FERRY_T_SET}", "value", NULL },
		{ "a-${FERRY_T_SET}-b", "a-value-b", NULL },
		{ "${FERRY_T_SET:-other}", "value", NULL },
		{ "${FERRY_T_UNSET:-4GiB}", "4GiB", NULL },
		{ "${FERRY_T_EMPTY:-dflt}", "dflt", NULL },
		{ "${FERRY_T_EMPTY}", "", NULL },
		{ "${FERRY_T_UNSET:-}", "", NULL },
		{ "$$HOME", "$HOME", NULL },
		{ "cost: $5", "cost: $5", NULL },
		{ "$${FERRY_T_SET}", "${FERRY_T_SET}", NULL },
		{ "${FERRY_T_SET}${FERRY_T_SET}", "valuevalue", NULL },
		{ "${FERRY_T_UNSET}", NULL,
		  "environment variable 'FERRY_T_UNSET' is not set (write "
		  "'${FERRY_T_UNSET:-DEFAULT}' "
		  "for a default)" },
		{ "${FERRY_T_SET", NULL, "unterminated '${' in '${FERRY_T_SET'" },
		{ "${FERRY_T_UNSET:-x", NULL, "unterminated '${' in '${FERRY_T_UNSET:-x'" },
		{ "${1X}", NULL, "invalid variable name '1X' in '${1X}'" },
		{ "${A-B}", NULL, "invalid variable name 'A-B' in '${A-B}'" },
		{ "${}", NULL, "invalid variable name '' in '${}'" },
	};
	g_setenv("FERRY_T_SET", "value", TRUE);
	g_setenv("FERRY_T_EMPTY", "", TRUE);
	g_unsetenv("FERRY_T_UNSET");
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char *err = NULL;
		char *s = env_subst(cases[i].in, &err);
		g_assert_cmpstr(s, ==, cases[i].out);
		g_assert_cmpstr(err, ==, cases[i].err);
		free(s);
		free(err);
	}
}

static void test_format(void)
{
	static const struct {
		uint64_t v;
		const char *size, *duration;
	} cases[] = {
		{ 0, "0", "0s" },
		{ 512, "512", "512ns" },
		{ 1000, "1KB", "1000ns" },
		{ 1024, "1KiB", "1024ns" },
		{ 64 * MiB, "64MiB", NULL },
		{ 1536, "1536", NULL },
		{ 1500 * NSEC_PER_MSEC, NULL, "1500ms" },
		{ 90 * NSEC_PER_SEC, NULL, "90s" },
		{ 600 * NSEC_PER_SEC, NULL, "10m" },
		{ 3600 * NSEC_PER_SEC, NULL, "1h" },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		if (cases[i].size) {
			char *s = format_size(cases[i].v);
			g_assert_cmpstr(s, ==, cases[i].size);
			uint64_t back;
			char *err = NULL;
			g_assert_cmpint(parse_size(s, &back, &err), ==, 0);
			g_assert_cmpuint(back, ==, cases[i].v);
			free(s);
		}
		if (cases[i].duration && !strstr(cases[i].duration, "ns")) {
			char *s = format_duration(cases[i].v);
			g_assert_cmpstr(s, ==, cases[i].duration);
			uint64_t back;
			char *err = NULL;
			g_assert_cmpint(parse_duration(s, &back, &err), ==, 0);
			g_assert_cmpuint(back, ==, cases[i].v);
			free(s);
		}
	}
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/units/size", test_size);
	g_test_add_func("/units/duration", test_duration);
	g_test_add_func("/units/throughput", test_throughput);
	g_test_add_func("/units/uint", test_uint);
	g_test_add_func("/units/percent-double-bool", test_percent_double_bool);
	g_test_add_func("/units/env", test_env);
	g_test_add_func("/units/format", test_format);
	return g_test_run();
}
