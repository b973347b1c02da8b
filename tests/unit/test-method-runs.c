/* SPDX-License-Identifier: MIT */
/*
 * Every method run by the executor on the fake machine's guests over a local directory
 * (machine_fake.guests, fake-guest.h): the bytes really move into the guest and are verified
 * there. Per method: a clean run verifies; a byte flipped in the guest before verify is caught
 * (ERROR_INTEGRITY naming the path), in a guest with ferry-sum (the built-in guest's XXH3-128
 * lister: the run says it verified by "xxh128"), and for three methods in one without too
 * (SHA-256: the run says "sha256"; the listing command is method_verify_dir()'s whatever the
 * method, so the three are one into the landing place, one moved into it and one into a folder of
 * its own; block has its own check); a guest program that hangs ends the run at its timeout
 * (ERROR_TIMEOUT); and after that failed run the method's cleanup left nothing in the guest (no
 * mount, process, disk or file beyond the start state) and the run left nothing on the host (no
 * loop device, nothing in the run directory). Skipped, with the reason, where the host cannot run
 * fake guests (fake_root_support()) or a cell cannot run on them (the cell's skip reason). The
 * test runs in a network namespace of its own (loopback only), where share's smb served_by guest
 * moves the bytes with the host's smbclient onto the host's smbd run in the fake guest. block's dd
 * reports, guest-copy's cache drops and path datasets with links are in test-method-runs-edges.c;
 * what both run and check is method-case.c.
 */
#include <glib.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "method-case.h"

/* What a test asks: the method entry, the disk, and the fault. */
struct mcase {
	const char *method; /* the method's mapping, e.g. "{type: agent-file}" */
	const char *disk;   /* "t" (tmpfs) or "i" (image) */
	const char *hang;   /* a guest program that hangs, or NULL */
	const char *corrupt;
	/* metrics timed by the guest's clock a clean run reports (NULL-terminated), and the
	 * phase whose host time bounds each */
	const char *const *guest_timed;
	const enum result_phase *guest_phase;
	/* the clean and corrupted runs also in a guest without ferry-sum (SHA-256) */
	bool sha256;
	/* the hang's run timeout in ms (0: 1000): room for steps before the hung program that
	   take long under valgrind (smbd's start), so that the run ends at the program */
	unsigned hang_ms;
};

/* The case's method needs what the fake guest takes from the host: ssh its dropbear. */
static bool skip_unless_case_supported(const struct mcase *c)
{
	if (skip_unless_supported())
		return true;
	if (strstr(c->method, "served_by: guest") &&
	    (access("/usr/sbin/smbd", X_OK) != 0 || access("/usr/bin/smbclient", X_OK) != 0)) {
		g_test_skip("the fake guest's SMB server is the host's smbd, the client the host's "
			    "smbclient (Debian's samba and smbclient), which this host lacks");
		return true;
	}
	if (strstr(c->method, "type: ssh") && access("/usr/sbin/dropbear", X_OK) != 0) {
		g_test_skip("the fake guest's ssh server is the host's dropbear (Debian's "
			    "dropbear-bin), which this host lacks");
		return true;
	}
	return false;
}

/* What the case's clean or corrupted run says it verified by: NULL for a method with its own
 * check (block), else xxh128 in a guest with ferry-sum and sha256 in one without. */
static const char *expected_hash(const struct mcase *c, bool sum)
{
	if (strstr(c->method, "type: block"))
		return NULL;
	return sum ? "xxh128" : "sha256";
}

/* Runs the case's one cell once, in guests with ferry-sum when `sum`; returns the cell (t is the
 * caller's to clear). */
static struct result_cell *run_case_sum(struct fake_run *t, const struct mcase *c,
					unsigned timeout_ms, bool sum)
{
	char *text = g_strdup_printf("%svms: {v: %s}\nmethods: {m: %s}\n"
				     "matrix: {disk: [%s], method: [m]}\n"
				     "run: {repeat: 1, vm: per-cell}\n",
				     plan_head, vm_for(c->method), c->method, c->disk);
	fake_run_init(t, tmp_dir, text, NULL);
	g_free(text);
	/* a bound for a broken case, not a figure the test checks */
	t->p->run.timeout = (timeout_ms ? timeout_ms : 60000) * MS;
	t->fake.guests = true;
	t->fake.hang = c->hang;
	t->fake.corrupt = c->corrupt;
	t->fake.sum = sum ? sum_path : NULL;
	fake_run_exec(t);
	g_assert_cmpuint(t->fake.live, ==, 0);
	assert_host_clean();
	g_assert_cmpuint(t->r->n_cells, ==, 1);
	return &t->r->cells[0];
}

static struct result_cell *run_case(struct fake_run *t, const struct mcase *c, unsigned timeout_ms)
{
	return run_case_sum(t, c, timeout_ms, true);
}

static void check_clean_sum(const struct mcase *c, bool sum)
{
	struct fake_run t;
	struct mcase clean = *c;
	clean.hang = clean.corrupt = NULL;
	struct result_cell *cell = run_case_sum(&t, &clean, 0, sum);
	if (!skipped(cell)) {
		log_errors(cell);
		g_assert_cmpint(cell->status, ==, STATUS_PASSED);
		g_assert_cmpuint(cell->n_runs, ==, 1);
		g_assert_true(cell->runs[0].integrity_ok);
		g_assert_cmpstr(cell->runs[0].verify_hash, ==, expected_hash(c, sum));
		g_assert_cmpuint(cell->runs[0].files, >, 0);
		for (size_t i = 0; c->guest_timed && c->guest_timed[i]; i++) {
			/* a figure of the guest's own clock: there, positive, and not more than the
			 * host's time of the phase that ran the command */
			json_t *v = json_object_get(cell->runs[0].metrics, c->guest_timed[i]);
			g_test_message("%s = %g", c->guest_timed[i], json_number_value(v));
			g_assert_true(json_is_number(v));
			g_assert_cmpfloat(json_number_value(v), >, 0);
			double host = cell->runs[0].phase[c->guest_phase[i]];
			g_assert_cmpfloat(json_number_value(v), <=, host);
		}
		assert_guest_clean(&t);
	}
	fake_run_clear(&t);
}

static void check_clean(const struct mcase *c)
{
	if (skip_unless_case_supported(c))
		return;
	check_clean_sum(c, true);
	if (c->sha256)
		check_clean_sum(c, false);
}

static void check_corrupt_sum(const struct mcase *base, bool sum)
{
	struct mcase c = *base;
	c.hang = NULL;
	if (!c.corrupt)
		c.corrupt = "*";
	struct fake_run t;
	struct result_cell *cell = run_case_sum(&t, &c, 0, sum);
	if (!skipped(cell)) {
		log_errors(cell);
		g_assert_cmpuint(cell->n_errors, ==, 1);
		g_assert_cmpint(cell->errors[0].kind, ==, ERROR_INTEGRITY);
		g_assert_cmpint(cell->errors[0].phase, ==, PHASE_VERIFY);
		g_assert_cmpuint(cell->n_runs, ==, 1);
		g_assert_false(cell->runs[0].integrity_ok);
		g_assert_cmpstr(cell->runs[0].verify_hash, ==, expected_hash(&c, sum));
		/* the message names what was flipped: the file's path below the landing place,
		 * or the device */
		const char *line = strstr(t.fake.log, "corrupt ");
		g_assert_nonnull(line);
		const char *path = strchr(line + 8, ' ') + 1;
		char *what = g_strndup(path, strcspn(path, "\n:"));
		/* below the folder verify listed: the landing place, or the one the case's
		 * absolute corrupt path names */
		const char *dir = c.corrupt[0] == '/' && g_str_has_suffix(c.corrupt, "/*")
				      ? c.corrupt
				      : MACHINE_LANDING "/*";
		size_t dl = strlen(dir) - 1;
		const char *rel = strncmp(what, dir, dl) == 0 ? what + dl : what;
		g_assert_nonnull(strstr(cell->errors[0].message, rel));
		g_free(what);
	}
	fake_run_clear(&t);
}

static void check_corrupt(const struct mcase *base)
{
	if (skip_unless_case_supported(base))
		return;
	check_corrupt_sum(base, true);
	if (base->sha256)
		check_corrupt_sum(base, false);
}

static void check_hang(const struct mcase *base)
{
	if (skip_unless_case_supported(base))
		return;
	struct mcase c = *base;
	c.corrupt = NULL;
	struct fake_run t;
	unsigned ms = c.hang_ms ? c.hang_ms : 1000;
	struct result_cell *cell = run_case(&t, &c, ms);
	if (!skipped(cell)) {
		log_errors(cell);
		g_assert_cmpint(cell->status, ==, STATUS_ERROR);
		g_assert_cmpuint(cell->n_errors, >=, 1);
		g_assert_cmpint(cell->errors[0].kind, ==, ERROR_TIMEOUT);
		g_assert_cmpint(cell->errors[0].run, ==, 0);
		/* the method's own timeout, at the phase it was in, not the executor's */
		g_assert_cmpint(cell->errors[0].phase, >=, 0);
		char *both = g_strdup_printf(
		    "%s %s", cell->errors[0].message,
		    cell->errors[0].agent_message ? cell->errors[0].agent_message : "");
		char *limit = g_strdup_printf("%u ms", ms);
		g_assert_nonnull(strstr(both, limit));
		g_free(limit);
		g_free(both);
		/* the cleanup after the failed run ran and left the guest as it booted */
		g_assert_false(isnan(cell->runs[0].phase[PHASE_CLEANUP]));
		assert_guest_clean(&t);
	}
	fake_run_clear(&t);
}

/* ---- the cases ---- */

static const struct mcase agent_files = { "{type: agent-file}", "t", "sync", NULL, NULL, NULL,
					  .sha256 = true };
static const struct mcase agent_tar = { "{type: agent-file, archive: tar}", "i", "tar", NULL };
static const struct mcase channel = { "{type: channel}", "t", "tar", NULL };
static const struct mcase channel_gz = {
	"{type: channel, archive: {format: tar, compression: gzip}}", "i", "tar", NULL
};
static const struct mcase image = { "{type: disk-image, filesystem: ext4}", "t", "cp", NULL };
static const struct mcase image_in_place = { "{type: disk-image, in_place: true}", "i", "find",
					     NULL };
static const struct mcase image_iso = { "{type: disk-image, filesystem: iso9660}", "t", "cp",
					NULL };
static const struct mcase share_copy = { "{type: share}", "t", "cp", NULL };
static const struct mcase share_move = {
	"{type: share, mode: move}", "i", "mv", NULL, NULL, NULL, .sha256 = true
};
static const struct mcase share_tar = { "{type: share, archive: tar}", "t", "tar", NULL };
static const struct mcase share_virtiofs = { "{type: share, driver: virtiofs}", "t", "cp", NULL };
static const struct mcase net_pull = { "{type: network}", "t", "wget", NULL };
static const struct mcase net_pull_tar = { "{type: network, archive: tar, streams: 2}", "i", "tar",
					   NULL };
static const struct mcase net_push = { "{type: network, direction: push}", "t", "tar", NULL };
/* ssh: the fake guest's server is the host's dropbear (fake-guest.c binds it); the hang is the
 * guest's sync, which ends every ssh run */
static const struct mcase ssh_scp = { "{type: ssh, tool: scp}", "t", "sync", NULL };
static const struct mcase ssh_rsync = { "{type: ssh, tool: rsync, cipher: aes128-ctr}", "t", "sync",
					NULL };
static const struct mcase ssh_tar = {
	"{type: ssh, tool: tar, cipher: chacha20-poly1305@openssh.com}", "i", "sync", NULL
};
/* share driver smb served_by guest: the fake guest's smbd is the host's (fake-guest.c binds it),
 * the host's smbclient copies onto it; the hang is the guest's sync (per file) or its tar (the
 * archive unpacked in the guest) */
static const struct mcase smb_push = { "{type: share, driver: smb, served_by: guest}", "t", "sync",
				       NULL, .hang_ms = 3000 };
static const struct mcase smb_push_tar = {
	"{type: share, driver: smb, served_by: guest, archive: tar}", "i", "tar", NULL,
	.hang_ms = 3000
};
static const char *const block_timed[] = { "guest_write_time", "guest_read_time", NULL };
static const enum result_phase block_phases[] = { PHASE_TRANSFER, PHASE_FINALIZE };
static const struct mcase block = {
	"{type: block}", "i", "dd", "target", block_timed, block_phases
};
static const struct mcase block_qd = { "{type: block, queue_depth: 2, block_size: 4KiB}",
				       "i",
				       "dd",
				       "target",
				       block_timed,
				       block_phases };

/* guest-copy: the copy runs in the guest between its disks; the read direction's copy lands on
 * the source disk's `back` folder, where the corrupted byte is flipped */
static const char *const gc_write_timed[] = { "guest_write_time", NULL };
static const char *const gc_read_timed[] = { "guest_read_time", NULL };
static const enum result_phase gc_phases[] = { PHASE_TRANSFER };
static const struct mcase gc_write = { "{type: guest-copy}", "i",      "cp", NULL,
				       gc_write_timed,       gc_phases };
static const struct mcase gc_write_tar = {
	"{type: guest-copy, tool: tar}", "i", "tar", NULL, gc_write_timed, gc_phases
};
static const struct mcase gc_read = { "{type: guest-copy, direction: read}",
				      "i",
				      "cp",
				      "/mnt/ferry-gc-src/back/*",
				      gc_read_timed,
				      gc_phases,
				      .sha256 = true };
static const struct mcase gc_read_tar = { "{type: guest-copy, direction: read, tool: tar}",
					  "i",
					  "tar",
					  "/mnt/ferry-gc-src/back/*",
					  gc_read_timed,
					  gc_phases };

/*
 * ssh's cleanup checks that what it started is gone, and says what is not: here a process left
 * running in the server's key directory (as a server that outlived its kill would be) fails the
 * run at cleanup, naming it; a clean run records which server ran and that the check passed
 * (observed.ssh).
 */
static void test_ssh_left(void)
{
	if (skip_unless_case_supported(&ssh_scp))
		return;
	struct fake_run t;
	struct mcase c = ssh_scp;
	c.hang = c.corrupt = NULL;
	char *text = g_strdup_printf("%svms: {v: {guest: builtin}}\nmethods: {m: %s}\n"
				     "matrix: {disk: [%s], method: [m]}\n"
				     "run: {repeat: 1, vm: per-cell}\n",
				     plan_head, c.method, c.disk);
	fake_run_init(&t, tmp_dir, text, NULL);
	g_free(text);
	t.p->run.timeout = 60000 * MS;
	t.fake.guests = true;
	t.fake.sum = sum_path;
	/* a session of its own, waited for (field 6 of its stat is its session): the fake ends
	 * what a command leaves in its process group */
	t.fake.before_verify_sh =
	    "cd /run/ferry-ssh && { setsid sleep 600 </dev/null >/dev/null 2>&1 & } && "
	    "while read -r a b c d e f g </proc/$!/stat && [ \"$f\" != $! ]; do sleep 0.01; done";
	fake_run_exec(&t);
	g_assert_cmpuint(t.fake.live, ==, 0);
	assert_host_clean();
	struct result_cell *cell = &t.r->cells[0];
	if (!skipped(cell)) {
		log_errors(cell);
		g_assert_cmpint(cell->status, ==, STATUS_ERROR);
		g_assert_cmpuint(cell->n_errors, ==, 1);
		g_assert_cmpint(cell->errors[0].phase, ==, PHASE_CLEANUP);
		g_assert_nonnull(strstr(cell->errors[0].message, "ssh: cleanup"));
		g_assert_nonnull(cell->errors[0].agent_message);
		g_assert_nonnull(strstr(cell->errors[0].agent_message,
					"the guest's ssh server left a process in /run/ferry-ssh"));
		g_assert_null(json_object_get(cell->observed, "ssh"));
		/* the cell's line on the terminal ends with what the guest said */
		bool said = false;
		for (guint i = 0; i < t.lines->len; i++) {
			const char *l = g_ptr_array_index(t.lines, i);
			said = said || (strstr(l, ", cleanup: ssh: cleanup: ") &&
					strstr(l, "; the guest said: ") &&
					strstr(l, "left a process in /run/ferry-ssh"));
		}
		g_assert_true(said);
	}
	fake_run_clear(&t);
}

static void test_ssh_observed(void)
{
	if (skip_unless_case_supported(&ssh_tar))
		return;
	struct fake_run t;
	struct mcase c = ssh_tar;
	c.hang = c.corrupt = NULL;
	struct result_cell *cell = run_case(&t, &c, 0);
	if (!skipped(cell)) {
		log_errors(cell);
		g_assert_cmpint(cell->status, ==, STATUS_PASSED);
		json_t *o = json_object_get(cell->observed, "ssh");
		g_assert_nonnull(o);
		/* the fake guest has the host's dropbear and no sshd */
		g_assert_cmpstr(json_string_value(json_object_get(o, "server")), ==, "dropbear");
		g_assert_true(json_is_true(json_object_get(o, "cleanup_checked")));
		assert_guest_clean(&t);
	}
	fake_run_clear(&t);
}

#define CASES(X)                                                                                   \
	X("agent-file/files", agent_files)                                                         \
	X("agent-file/tar", agent_tar)                                                             \
	X("channel/tar", channel)                                                                  \
	X("channel/tar-gz", channel_gz)                                                            \
	X("disk-image/ext4", image)                                                                \
	X("disk-image/iso9660", image_iso)                                                         \
	X("share/9p-copy", share_copy)                                                             \
	X("share/9p-move", share_move)                                                             \
	X("share/9p-tar", share_tar)                                                               \
	X("share/virtiofs", share_virtiofs)                                                        \
	X("network/pull", net_pull)                                                                \
	X("network/pull-tar-2", net_pull_tar)                                                      \
	X("network/push", net_push)                                                                \
	X("ssh/scp", ssh_scp)                                                                      \
	X("ssh/rsync", ssh_rsync)                                                                  \
	X("ssh/tar", ssh_tar)                                                                      \
	X("share/smb-push", smb_push)                                                              \
	X("share/smb-push-tar", smb_push_tar)                                                      \
	X("block/dd", block)                                                                       \
	X("block/qd2", block_qd)                                                                   \
	X("guest-copy/write-cp", gc_write)                                                         \
	X("guest-copy/write-tar", gc_write_tar)                                                    \
	X("guest-copy/read-cp", gc_read)                                                           \
	X("guest-copy/read-tar", gc_read_tar)

static void test_in_place(void)
{
	check_clean(&image_in_place);
}

static void test_in_place_hang(void)
{
	check_hang(&image_in_place);
}

static void test_null(void)
{
	if (skip_unless_supported())
		return;
	struct fake_run t;
	struct mcase c = { "{type: null}", "t", NULL, NULL };
	struct result_cell *cell = run_case(&t, &c, 0);
	g_assert_cmpint(cell->status, ==, STATUS_PASSED);
	assert_guest_clean(&t);
	fake_run_clear(&t);
}

#define DEFINE(name, c)                                                                            \
	static void test_##c##_clean(void)                                                         \
	{                                                                                          \
		check_clean(&c);                                                                   \
	}                                                                                          \
	static void test_##c##_corrupt(void)                                                       \
	{                                                                                          \
		check_corrupt(&c);                                                                 \
	}                                                                                          \
	static void test_##c##_hang(void)                                                          \
	{                                                                                          \
		check_hang(&c);                                                                    \
	}
#define ADD(name, c)                                                                               \
	g_test_add_func("/method-runs/" name "/clean", test_##c##_clean);                          \
	g_test_add_func("/method-runs/" name "/corrupt", test_##c##_corrupt);                      \
	g_test_add_func("/method-runs/" name "/hang", test_##c##_hang);

CASES(DEFINE)

int main(int argc, char **argv)
{
	method_case_init(&argc, &argv, "ferry-test-method-runs");
	CASES(ADD)
	g_test_add_func("/method-runs/disk-image/in-place/clean", test_in_place);
	g_test_add_func("/method-runs/disk-image/in-place/hang", test_in_place_hang);
	g_test_add_func("/method-runs/null/clean", test_null);
	g_test_add_func("/method-runs/ssh/cleanup-left", test_ssh_left);
	g_test_add_func("/method-runs/ssh/cleanup-observed", test_ssh_observed);
	return method_case_run();
}
