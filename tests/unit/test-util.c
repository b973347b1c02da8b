/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>

#include "diag.h"
#include "hash.h"
#include "proc.h"
#include "utf8.h"
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

static void test_sha256(void)
{
	char hex[SHA256_HEX];
	unsigned char md[SHA256_BYTES], back[SHA256_BYTES];

	/* FIPS 180-2 vectors */
	sha256_buf_hex("", 0, hex);
	g_assert_cmpstr(hex, ==,
			"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	sha256_buf_hex("abc", 3, hex);
	g_assert_cmpstr(hex, ==,
			"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha256_buf("abc", 3, md);
	g_assert_cmpint(sha256_parse(hex, back), ==, 0);
	g_assert_cmpmem(md, sizeof(md), back, sizeof(back));
	g_assert_cmpint(sha256_parse("zz", back), ==, -1);

	/* a file, through a descriptor, with its size */
	_cleanup_free_ char *dir = g_dir_make_tmp("ferry-test-util-XXXXXX", NULL);
	_cleanup_free_ char *path = g_build_filename(dir, "f", NULL);
	g_assert_true(g_file_set_contents(path, "hello\n", -1, NULL));
	uint64_t size = 0;
	g_assert_cmpint(sha256_file_hex(path, hex, &size), ==, 0);
	g_assert_cmpstr(hex, ==,
			"5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
	g_assert_cmpuint(size, ==, 6);
	g_unlink(path);
	g_assert_cmpint(sha256_file_hex(path, hex, NULL), ==, -1);
	g_assert_cmpint(errno, ==, ENOENT);
	g_rmdir(dir);
}

static void test_utf8(void)
{
	static const struct {
		const char *s;
		bool valid;
		const char *sanitized;
	} cases[] = {
		{ "", true, "" },
		{ "plain", true, "plain" },
		{ "gr\xc3\xbc\xc3\x9f \xe2\x82\xac \xf0\x9f\x98\x80", true, NULL },
		{ "\xc0\xaf", false, "\xef\xbf\xbd\xef\xbf\xbd" }, /* overlong '/' */
		{ "\xed\xa0\x80", false, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" }, /* surrogate */
		{ "\xf4\x90\x80\x80", false, NULL },                 /* above U+10FFFF */
		{ "a\xe2\x82", false, "a\xef\xbf\xbd\xef\xbf\xbd" }, /* truncated */
		{ "\xff", false, "\xef\xbf\xbd" },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		g_assert_cmpint(utf8_valid(cases[i].s), ==, cases[i].valid);
		_cleanup_free_ char *clean = utf8_sanitize(cases[i].s);
		g_assert_true(utf8_valid(clean));
		if (cases[i].sanitized)
			g_assert_cmpstr(clean, ==, cases[i].sanitized);
		else if (cases[i].valid)
			g_assert_cmpstr(clean, ==, cases[i].s);
	}
	uint32_t cp;
	g_assert_cmpuint(utf8_decode("\xe2\x82\xac", 3, &cp), ==, 3);
	g_assert_cmpuint(cp, ==, 0x20ac);
	g_assert_cmpuint(utf8_decode("\xe2\x82\xac", 2, &cp), ==, 0); /* only 2 bytes available */
}

static void test_escape_controls(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "plain text: 'x'", "plain text: 'x'" },
		{ "a\nb", "a\\nb" },
		{ "x\n::warning file=a::forged", "x\\n::warning file=a::forged" },
		{ "cr\rlf\ttab", "cr\\rlf\\ttab" },
		{ "\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m" },
		{ "bel\x07 del\x7f", "bel\\x07 del\\x7f" },
		{ "c1 \xc2\x9b csi", "c1 \\u009b csi" }, /* U+009B, C1 CSI */
		{ "raw \x9b byte", "raw \\x9b byte" },   /* not UTF-8 */
		{ "gr\xc3\xbc\xc3\x9f \xe2\x82\xac", "gr\xc3\xbc\xc3\x9f \xe2\x82\xac" }, /* kept */
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_free_ char *e = escape_controls(cases[i].in);
		g_assert_cmpstr(e, ==, cases[i].out);
		g_assert_null(strpbrk(e, "\n\r\x1b"));
	}
}

/* diag_print() of a message quoting a plan key that holds a newline and a workflow command. */
static void test_diag_print_escapes(void)
{
	struct diag_list l = { 0 };
	diag_add(&l, "p\n.yaml", 4, 3, "invalid vm name '%s'",
		 "x\n::warning file=a.c::forged\x1b[2J");
	for (int gha = 0; gha < 2; gha++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		g_setenv("GITHUB_ACTIONS", gha ? "true" : "false", TRUE);
		diag_print(&l, f);
		fclose(f);
		g_assert_null(strchr(buf, '\x1b'));
		g_assert_null(strchr(buf, '\r'));
		gchar **lines = g_strsplit(buf, "\n", -1);
		guint n = g_strv_length(lines);
		g_assert_cmpuint(n, ==,
				 gha ? 3 : 2); /* one line per diagnostic (+ annotation), "" */
		g_assert_true(g_str_has_prefix(
		    lines[0], "ferry: p\\n.yaml:4:3: invalid vm name 'x\\n::warning"));
		if (gha)
			g_assert_true(
			    g_str_has_prefix(lines[1], "::error file=p\\n.yaml,line=4,col=3::"));
		g_strfreev(lines);
		free(buf);
	}
	g_unsetenv("GITHUB_ACTIONS");
	diag_list_clear(&l);
}

static void test_proc(void)
{
	_cleanup_free_ char *err = NULL, *out = NULL;
	struct proc_result res;

	/* argv, never a shell: the metacharacters arrive as they are */
	const char *const echo[] = { "printf", "%s|", "a b", "$(id)", ";", NULL };
	g_assert_cmpint(proc_run(echo, &out, &err), ==, 0);
	g_assert_cmpstr(out, ==, "a b|$(id)|;|");

	/* stdout and stderr apart, the exit status, the working directory, the environment */
	static const char *const env[] = { "FERRY_TEST_VAR=set", "LC_ALL=C", NULL };
	const struct proc_opts o = { .cwd = "/", .env = env, .split_stderr = true };
	const char *const sh[] = { "sh", "-c", "pwd; echo $FERRY_TEST_VAR; echo oops >&2; exit 3",
				   NULL };
	g_assert_cmpint(proc_spawn(sh, &o, &res, &err), ==, 0);
	g_assert_cmpint(res.status, ==, 3);
	g_assert_cmpstr(res.out, ==, "/\nset\n");
	g_assert_cmpstr(res.errout, ==, "oops\n");
	proc_result_clear(&res);

	/* a failing program: its last line in the message */
	const char *const f[] = { "sh", "-c", "echo first; echo 'the reason' >&2; exit 2", NULL };
	g_assert_cmpint(proc_run(f, NULL, &err), ==, -1);
	g_assert_cmpstr(err, ==, "'sh' exited with status 2: the reason");
	free(err);
	err = NULL;
	/* killed by a signal */
	const char *const k[] = { "sh", "-c", "kill -TERM $$", NULL };
	g_assert_cmpint(proc_spawn(k, NULL, &res, &err), ==, 0);
	g_assert_cmpint(res.status, ==, -1);
	g_assert_cmpint(res.signal, ==, SIGTERM);
	proc_result_clear(&res);
	/* a program that does not exist */
	const char *const none[] = { "ferry-no-such-program", NULL };
	if (proc_spawn(none, NULL, &res, &err) == 0) {
		/* where the spawn cannot report exec failures (under valgrind), the child exits 127
		 */
		g_assert_cmpint(res.status, ==, 127);
		proc_result_clear(&res);
	} else {
		g_assert_cmpstr(err, ==,
				"cannot run 'ferry-no-such-program': No such file or directory");
	}
	/* SIGPIPE ignored here (as ferry does) is at its default in the child */
	free(err);
	err = NULL;
	signal(SIGPIPE, SIG_IGN);
	const char *const st[] = { "grep", "^SigIgn:", "/proc/self/status", NULL };
	g_assert_cmpint(proc_spawn(st, NULL, &res, &err), ==, 0);
	g_assert_cmpint(res.status, ==, 0);
	unsigned long long ign = strtoull(res.out + strlen("SigIgn:"), NULL, 16);
	g_assert_cmpuint(ign & (1ull << (SIGPIPE - 1)), ==, 0);
	proc_result_clear(&res);
	signal(SIGPIPE, SIG_DFL);
}

/* One shell quoter for everyone: a quote inside ends the quoting, escapes itself, resumes. */
static void test_shell_quote(void)
{
	char *q = shell_quote("it's a /dir");
	g_assert_cmpstr(q, ==, "'it'\\''s a /dir'");
	free(q);
	q = shell_quote("");
	g_assert_cmpstr(q, ==, "''");
	free(q);
	q = shell_quote("$(rm -rf /) `x` \"y\"");
	g_assert_cmpstr(q, ==, "'$(rm -rf /) `x` \"y\"'");
	free(q);
}

/* Sizes for people: whole numbers bare, else one decimal, powers of 1024. */
static void test_human_size(void)
{
	static const struct {
		uint64_t bytes;
		const char *text;
	} cases[] = {
		{ 0, "0B" },
		{ 900, "900B" },
		{ 1024, "1KiB" },
		{ 1536, "1.5KiB" },
		{ UINT64_C(512) << 20, "512MiB" },
		{ UINT64_C(80530636800) / 1000 * 1000, "75GiB" },
		{ UINT64_C(84396900000), "78.6GiB" },
		{ UINT64_C(16) << 40, "16TiB" },
		{ UINT64_MAX, "16EiB" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		char *t = human_size(cases[i].bytes);
		g_assert_cmpstr(t, ==, cases[i].text);
		free(t);
	}
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/util/distance", test_distance);
	g_test_add_func("/util/closest", test_closest);
	g_test_add_func("/util/overflow", test_overflow);
	g_test_add_func("/util/diag", test_diag);
	g_test_add_func("/util/diag/print-escapes", test_diag_print_escapes);
	g_test_add_func("/util/escape-controls", test_escape_controls);
	g_test_add_func("/util/sha256", test_sha256);
	g_test_add_func("/util/utf8", test_utf8);
	g_test_add_func("/util/proc", test_proc);
	g_test_add_func("/util/shell-quote", test_shell_quote);
	g_test_add_func("/util/human-size", test_human_size);
	return g_test_run();
}
