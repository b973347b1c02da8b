/* SPDX-License-Identifier: MIT */
/* The method tests' shared cell runs and checks (method-case.h). */
#include "method-case.h"

#include <glib.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "fake-guest.h"

char *tmp_dir;
char *sum_path;

/*
 * The vm of a method's cells: a network pull on ferry's private network, since on user
 * networking the guest reaches nothing of the host and the cell is skipped (rule
 * cell.network-pull-user); the fake machine's guests are on the loopback either way
 * (fake-ops.c). smb served_by guest on the Debian guest (the only one with smbd: its skip
 * reason elsewhere) on the private network, as its rules ask.
 */
const char *vm_for(const char *method)
{
	if (strstr(method, "served_by: guest"))
		return "{guest: debian, nic: {backend: private}}";
	return strstr(method, "type: network") && !strstr(method, "direction: push")
		   ? "{guest: builtin, nic: {backend: private}}"
		   : "{guest: builtin}";
}

const char *const plan_head =
    "ferry: 1\n"
    "name: m\n"
    "disks: {t: {kind: tmpfs, size: 64MiB}, i: {format: raw, size: 64MiB}}\n"
    "datasets: {s: {files: 9, size: {min: 1KiB, max: 40KiB}, dirs: {depth: 1, fanout: 3}, "
    "seed: 3}}\n";

bool skip_unless_supported(void)
{
	const char *why = fake_root_support();
	if (why)
		g_test_skip(why);
	return why != NULL;
}

/* Nothing of the run is left on the host: the run directories are gone and no loop device
 * refers to a file below tmp_dir. */
void assert_host_clean(void)
{
	char *runs = g_build_filename(tmp_dir, "runs", NULL);
	GDir *d = g_dir_open(runs, 0, NULL);
	const char *name;
	while (d && (name = g_dir_read_name(d))) {
		g_test_message("left in the run directory: %s", name);
		g_assert_not_reached();
	}
	if (d)
		g_dir_close(d);
	g_free(runs);
	/* no loop device is left over a file of this test (what `losetup -a` lists, from /sys) */
	GDir *sys = g_dir_open("/sys/block", 0, NULL);
	g_assert_nonnull(sys);
	while ((name = g_dir_read_name(sys))) {
		char *bf = g_strdup_printf("/sys/block/%s/loop/backing_file", name), *text = NULL;
		if (g_file_get_contents(bf, &text, NULL, NULL)) {
			if (strstr(text, tmp_dir))
				g_test_message("loop device %s left over %s", name, text);
			g_assert_null(strstr(text, tmp_dir));
		}
		g_free(text);
		g_free(bf);
	}
	g_dir_close(sys);
}

/* The cell's skip reason as the test's, when it was skipped. */
bool skipped(const struct result_cell *cell)
{
	if (cell->status != STATUS_SKIPPED)
		return false;
	g_test_skip(cell->skip_reason);
	return true;
}

void log_errors(const struct result_cell *cell)
{
	for (size_t i = 0; i < cell->n_errors; i++)
		g_test_message("error: %s [%s]", cell->errors[i].message,
			       cell->errors[i].agent_message ? cell->errors[i].agent_message : "");
}

/* The guest's last "left" line: what the cleanup of the failed run left in it. */
void assert_guest_clean(const struct fake_run *t)
{
	const char *log = t->fake.log ? t->fake.log : "";
	const char *last = NULL;
	for (const char *p = log; (p = strstr(p, "left ")); p++)
		last = p;
	g_assert_nonnull(last);
	char *line = g_strndup(last, strcspn(last, "\n"));
	g_test_message("%s", line);
	g_assert_nonnull(strstr(line, " mounts=0 procs=0 disks=0 files="));
	g_assert_true(g_str_has_suffix(line, "files="));
	g_free(line);
}

void method_case_init(int *argc, char ***argv, const char *prefix)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* as ferry's main: a writer whose reader went away (ssh killed at a timeout, its packer
	 * still writing) gets EPIPE, not SIGPIPE for the whole test process */
	signal(SIGPIPE, SIG_IGN);
	g_test_init(argc, argv, NULL);
	fake_run_own_network();
	tmp_dir = fake_dir_make(prefix);
	sum_path = g_build_filename(g_getenv("FERRY_BUILD_DIR") ? g_getenv("FERRY_BUILD_DIR") : ".",
				    "ferry-sum", NULL);
}

int method_case_run(void)
{
	int rc = g_test_run();
	fake_dir_remove(tmp_dir);
	g_free(sum_path);
	return rc;
}
