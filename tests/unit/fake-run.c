/* SPDX-License-Identifier: MIT */
#include "fake-run.h"

#include <glib/gstdio.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <string.h>

#include "fake-guest.h"
#include "fs.h"

char *fake_dir_make(const char *prefix)
{
	char *tmpl = g_strconcat(prefix, "-XXXXXX", NULL);
	char *dir = g_dir_make_tmp(tmpl, NULL);
	g_assert_nonnull(dir);
	g_free(tmpl);
	char *runs = g_build_filename(dir, "runs", NULL);
	char *cache = g_build_filename(dir, "cache", NULL);
	g_setenv("FERRY_RUN_DIR", runs, TRUE);
	g_setenv("FERRY_CACHE_DIR", cache, TRUE);
	g_free(runs);
	g_free(cache);
	/* a failed assertion ends the guests still alive and removes the folder */
	fake_root_abort_cleanup(dir);
	return dir;
}

void fake_dir_remove(char *dir)
{
	fake_root_abort_cleanup(NULL);
	g_assert_cmpint(rm_tree(dir, NULL), ==, 0);
	g_free(dir);
}

static void collect_line(void *ud, const char *text)
{
	g_ptr_array_add(((struct fake_run *)ud)->lines, g_strdup(text));
}

static void collect_error(void *ud, const char *text)
{
	g_ptr_array_add(((struct fake_run *)ud)->errors, g_strdup(text));
}

void fake_run_init(struct fake_run *t, const char *dir, const char *text,
		   void (*line)(void *ud, const char *text))
{
	memset(t, 0, sizeof(*t));
	t->plan_path = g_build_filename(dir, "plan.yaml", NULL);
	g_assert_true(g_file_set_contents(t->plan_path, text, -1, NULL));
	struct diag_list d = { 0 };
	t->p = plan_parse_file(t->plan_path, &d);
	if (!t->p || d.n) {
		diag_print(&d, stderr);
		g_assert_not_reached();
	}
	t->m = plan_expand(t->p, 0, &d);
	g_assert_nonnull(t->m);
	diag_list_clear(&d);
	t->lines = g_ptr_array_new_with_free_func(g_free);
	t->errors = g_ptr_array_new_with_free_func(g_free);
	t->seen = g_array_new(FALSE, FALSE, sizeof(guint));
	t->o = (struct exec_opts){
		.plan_path = t->plan_path,
		.line = line ? line : collect_line,
		.error = collect_error,
		.ud = t,
		.machine_open = machine_fake_open,
		.machine_data = &t->fake,
	};
	/* the fake guests' image targets: copies of one empty ext4 image per size in dir, made
	 * once for the test program's runs (dir goes at its end) */
	t->fake.templates = dir;
}

void fake_run_exec(struct fake_run *t)
{
	char *err = NULL;
	g_assert_cmpint(exec_plan(t->p, t->m, &t->o, &t->r, &t->res, &err), ==, 0);
	g_assert_null(err);
}

void fake_run_clear(struct fake_run *t)
{
	results_free(t->r);
	matrix_free(t->m);
	plan_free(t->p);
	machine_fake_clear(&t->fake);
	if (t->results_path)
		g_unlink(t->results_path);
	g_free(t->results_path);
	g_unlink(t->plan_path);
	g_free(t->plan_path);
	g_ptr_array_free(t->lines, TRUE);
	g_ptr_array_free(t->errors, TRUE);
	g_array_free(t->seen, TRUE);
}

void fake_run_own_network(void)
{
	if (geteuid() != 0 || unshare(CLONE_NEWNET) < 0)
		return; /* fake_root_support() says why the tests skip */
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = { 0 };
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	if (s >= 0)
		close(s);
}
