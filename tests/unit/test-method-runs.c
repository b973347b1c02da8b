/* SPDX-License-Identifier: MIT */
/*
 * Every method run by the executor on the fake machine's guests over a local directory
 * (machine_fake.guests, fake-guest.h): the bytes really move into the guest and are verified
 * there. Per method: a clean run verifies; a byte flipped in the guest before verify is caught
 * (ERROR_INTEGRITY naming the path); both in a guest with ferry-sum (the built-in guest's
 * XXH3-128 lister: the run says it verified by "xxh128") and in one without (SHA-256); a guest
 * program that hangs ends the run at its timeout (ERROR_TIMEOUT); and after that failed run the
 * method's cleanup left nothing in the guest (no mount, process, disk or file beyond the start
 * state) and the run left nothing on the host (no loop device, nothing in the run directory).
 * Skipped, with the reason, where the host cannot run fake guests (fake_root_support()) or a cell
 * cannot run on them (the cell's skip reason). The test runs in a network namespace of its own
 * (loopback only).
 */
#include <glib.h>
#include <signal.h>
#include <math.h>
#include <glib/gstdio.h>
#include <net/if.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fake-guest.h"
#include "fake-run.h"
#include "fs.h"
#include "proc.h"
#include "util.h"

#define MS 1000000ull

static char *tmp_dir;

/*
 * The vm of a method's cells: a network pull on ferry's private network, since on user
 * networking the guest reaches nothing of the host and the cell is skipped (rule
 * cell.network-pull-user); the fake machine's guests are on the loopback either way
 * (fake-ops.c).
 */
static const char *vm_for(const char *method)
{
	return strstr(method, "type: network") && !strstr(method, "direction: push")
		   ? "{guest: builtin, nic: {backend: private}}"
		   : "{guest: builtin}";
}

static const char *const plan_head =
    "ferry: 1\n"
    "name: m\n"
    "disks: {t: {kind: tmpfs, size: 64MiB}, i: {format: raw, size: 64MiB}}\n"
    "datasets: {s: {files: 9, size: {min: 1KiB, max: 40KiB}, dirs: {depth: 1, fanout: 3}, "
    "seed: 3}}\n";

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
};

static bool skip_unless_supported(void)
{
	const char *why = fake_root_support();
	if (why)
		g_test_skip(why);
	return why != NULL;
}

/* The case's method needs what the fake guest takes from the host: ssh its dropbear. */
static bool skip_unless_case_supported(const struct mcase *c)
{
	if (skip_unless_supported())
		return true;
	if (strstr(c->method, "type: ssh") && access("/usr/sbin/dropbear", X_OK) != 0) {
		g_test_skip("the fake guest's ssh server is the host's dropbear (Debian's "
			    "dropbear-bin), which this host lacks");
		return true;
	}
	return false;
}

/* Nothing of the run is left on the host: the run directories are gone and no loop device
 * refers to a file below tmp_dir. */
static void assert_host_clean(void)
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

/* The build tree's ferry-sum, which a guest of run_case() gets with `sum` (a path of tmp_dir's
 * lifetime). */
static char *sum_path;

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

/* The cell's skip reason as the test's, when it was skipped. */
static bool skipped(const struct result_cell *cell)
{
	if (cell->status != STATUS_SKIPPED)
		return false;
	g_test_skip(cell->skip_reason);
	return true;
}

static void log_errors(const struct result_cell *cell)
{
	for (size_t i = 0; i < cell->n_errors; i++)
		g_test_message("error: %s [%s]", cell->errors[i].message,
			       cell->errors[i].agent_message ? cell->errors[i].agent_message : "");
}

/* The guest's last "left" line: what the cleanup of the failed run left in it. */
static void assert_guest_clean(const struct fake_run *t)
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
	check_corrupt_sum(base, false);
}

static void check_hang(const struct mcase *base)
{
	if (skip_unless_case_supported(base))
		return;
	struct mcase c = *base;
	c.corrupt = NULL;
	struct fake_run t;
	struct result_cell *cell = run_case(&t, &c, 1000);
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
		g_assert_nonnull(strstr(both, "1000 ms"));
		g_free(both);
		/* the cleanup after the failed run ran and left the guest as it booted */
		g_assert_false(isnan(cell->runs[0].phase[PHASE_CLEANUP]));
		assert_guest_clean(&t);
	}
	fake_run_clear(&t);
}

/* ---- the cases ---- */

static const struct mcase agent_files = { "{type: agent-file}", "t", "sync", NULL };
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
static const struct mcase share_move = { "{type: share, mode: move}", "i", "mv", NULL };
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
				      gc_phases };
static const struct mcase gc_read_tar = { "{type: guest-copy, direction: read, tool: tar}",
					  "i",
					  "tar",
					  "/mnt/ferry-gc-src/back/*",
					  gc_read_timed,
					  gc_phases };

/*
 * block's guest-timed figures are dd's own report (method_dd_report()), not a clock around the
 * command: with the guest's /usr/bin/dd printing a report the test chose (busybox's dd moves the
 * bytes, machine_fake.dd_report), guest_write_time and guest_read_time are exactly its seconds
 * and the throughputs its bytes over them (not its rounded rate); with queue_depth 2, the bytes
 * of both writers over the slower one's seconds (each writer prints the same report here). A
 * report that is missing (busybox's two record lines), garbage, or of the wrong byte count fails
 * the run with a message naming it. The stream is 2 MiB: two blocks of 1 MiB.
 */
static struct result_cell *run_dd_report(struct fake_run *t, const char *method, const char *report)
{
	char *text = g_strdup_printf("ferry: 1\nname: m\nvms: {v: {guest: builtin}}\n"
				     "disks: {i: {format: raw, size: 64MiB}}\n"
				     "datasets: {s: {files: 1, size: 2MiB, seed: 3}}\n"
				     "methods: {m: %s}\nmatrix: {disk: [i], method: [m]}\n"
				     "run: {repeat: 1, vm: per-cell}\n",
				     method);
	fake_run_init(t, tmp_dir, text, NULL);
	g_free(text);
	t->p->run.timeout = 60000 * MS;
	t->fake.guests = true;
	t->fake.sum = sum_path;
	t->fake.dd_report = report;
	fake_run_exec(t);
	g_assert_cmpuint(t->fake.live, ==, 0);
	assert_host_clean();
	g_assert_cmpuint(t->r->n_cells, ==, 1);
	return &t->r->cells[0];
}

static void check_dd_figures(const char *method, const char *report, double seconds, double bytes)
{
	if (skip_unless_supported())
		return;
	struct fake_run t;
	struct result_cell *cell = run_dd_report(&t, method, report);
	if (!skipped(cell)) {
		log_errors(cell);
		g_assert_cmpint(cell->status, ==, STATUS_PASSED);
		g_assert_true(cell->runs[0].integrity_ok);
		json_t *m = cell->runs[0].metrics;
		static const char *const times[] = { "guest_write_time", "guest_read_time" };
		static const char *const rates[] = { "guest_write_throughput",
						     "guest_read_throughput" };
		for (size_t i = 0; i < 2; i++) {
			g_test_message("%s = %g, %s = %g", times[i],
				       json_number_value(json_object_get(m, times[i])), rates[i],
				       json_number_value(json_object_get(m, rates[i])));
			g_assert_cmpfloat(json_number_value(json_object_get(m, times[i])), ==,
					  seconds);
			g_assert_cmpfloat(json_number_value(json_object_get(m, rates[i])), ==,
					  bytes / seconds);
		}
		assert_guest_clean(&t);
	}
	fake_run_clear(&t);
}

static void test_dd_gnu(void)
{
	check_dd_figures("{type: block}",
			 "2+0 records in\n2+0 records out\n2097152 bytes (2.1 MB, 2.0 MiB) copied, "
			 "0.5 s, 4.2 MB/s\n",
			 0.5, 2097152);
}

/* %g seconds, as GNU dd prints a short time */
static void test_dd_gnu_exp(void)
{
	check_dd_figures("{type: block}",
			 "2+0 records in\n2+0 records out\n2097152 bytes (2.1 MB, 2.0 MiB) copied, "
			 "6.25e-05 s, 33.6 GB/s\n",
			 6.25e-05, 2097152);
}

static void test_dd_busybox(void)
{
	check_dd_figures("{type: block}",
			 "2+0 records in\n2+0 records out\n2097152 bytes (2.0MB) copied, 0.250000 "
			 "seconds, 8.0MB/s\n",
			 0.25, 2097152);
}

/* two writers of one block each: both reports' bytes over the slower's seconds */
static void test_dd_qd2(void)
{
	check_dd_figures("{type: block, queue_depth: 2}",
			 "1+0 records in\n1+0 records out\n1048576 bytes (1.0 MB, 1.0 MiB) copied, "
			 "0.5 s, 2.1 MB/s\n",
			 0.5, 2097152);
}

static void check_dd_refused(const char *report, const char *want)
{
	if (skip_unless_supported())
		return;
	struct fake_run t;
	struct result_cell *cell = run_dd_report(&t, "{type: block}", report);
	if (!skipped(cell)) {
		log_errors(cell);
		g_assert_cmpint(cell->status, ==, STATUS_ERROR);
		g_assert_cmpuint(cell->n_errors, ==, 1);
		g_assert_cmpint(cell->errors[0].phase, ==, PHASE_TRANSFER);
		g_assert_nonnull(
		    strstr(cell->errors[0].message, "block: write: the dd of blocks 0 on"));
		g_assert_nonnull(strstr(cell->errors[0].message, want));
		/* no guess in its place */
		g_assert_null(json_object_get(cell->runs[0].metrics, "guest_write_throughput"));
		g_assert_null(json_object_get(cell->runs[0].metrics, "guest_write_time"));
		g_assert_false(isnan(cell->runs[0].phase[PHASE_CLEANUP]));
		assert_guest_clean(&t);
	}
	fake_run_clear(&t);
}

/* Debian's busybox dd: the records only */
static void test_dd_missing(void)
{
	check_dd_refused("2+0 records in\n2+0 records out\n",
			 "dd printed no \"N bytes ... copied, S s\" line on its standard error "
			 "(busybox's dd, built without its third status line, prints only the "
			 "records): '2+0 records in|2+0 records out|'");
}

static void test_dd_garbage(void)
{
	check_dd_refused("dd: warning: something odd\nfast, 3 GB/s\n",
			 "dd printed no \"N bytes ... copied, S s\" line");
}

/* a locale's decimal comma is no figure (block runs dd under LC_ALL=C) */
static void test_dd_comma(void)
{
	check_dd_refused("2097152 bytes (2,1 MB, 2,0 MiB) copied, 0,5 s, 4,2 MB/s\n",
			 "dd printed no \"N bytes ... copied, S s\" line");
}

static void test_dd_zero_time(void)
{
	check_dd_refused("2097152 bytes (2.1 MB, 2.0 MiB) copied, 0 s, Infinity B/s\n",
			 "dd reported 2097152 bytes copied in 0 s: no time to divide by");
}

static void test_dd_short(void)
{
	check_dd_refused("1048576 bytes (1.0 MB, 1.0 MiB) copied, 0.5 s, 2.1 MB/s\n",
			 "reported 1048576 bytes copied, not the 2097152 of its 2 blocks");
}

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

/* guest-copy drops the caches its untimed work filled, as the plan asks: once more than the
 * executor's reset per run, and not under caches keep */
static void check_gc_drops(const char *caches, unsigned want)
{
	if (skip_unless_supported())
		return;
	char *text = g_strdup_printf("%svms: {v: {guest: builtin}}\n"
				     "methods: {m: {type: guest-copy, direction: read}}\n"
				     "matrix: {disk: [i], method: [m]}\n"
				     "run: {repeat: 1, vm: per-cell, caches: %s}\n",
				     plan_head, caches);
	struct fake_run t;
	fake_run_init(&t, tmp_dir, text, NULL);
	g_free(text);
	t.p->run.timeout = 60000 * MS;
	t.fake.guests = true;
	fake_run_exec(&t);
	assert_host_clean();
	struct result_cell *cell = &t.r->cells[0];
	if (!skipped(cell)) {
		log_errors(cell);
		g_assert_cmpint(cell->status, ==, STATUS_PASSED);
		g_assert_cmpuint(t.fake.drops, ==, want);
	}
	fake_run_clear(&t);
}

static void test_gc_drops(void)
{
	check_gc_drops("drop", 2);
	check_gc_drops("keep", 0);
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

/*
 * Issue 24 class 6: a `path:` dataset with a link inside that points out of it (sub/link ->
 * a secret file next to the tree). Every method that reads a path dataset carries the link as a
 * link (verify compares links and their targets, so a followed link is an integrity error), and
 * vfat, which cannot hold one (mcopy -s followed it), refuses the dataset before anything is
 * built, naming the link.
 */
static void check_path_links(const char *method, bool vfat, const char *refusal)
{
	if (!vfat && skip_unless_supported())
		return;
	char *tree = g_build_filename(tmp_dir, "linked-tree", NULL);
	char *secret = g_build_filename(tmp_dir, "secret", NULL);
	if (!g_file_test(tree, G_FILE_TEST_EXISTS)) {
		char *sub = g_build_filename(tree, "sub", NULL);
		g_assert_cmpint(g_mkdir_with_parents(sub, 0755), ==, 0);
		char *a = g_build_filename(tree, "a.txt", NULL),
		     *b = g_build_filename(sub, "b.txt", NULL);
		char *l = g_build_filename(sub, "link", NULL);
		g_assert_true(g_file_set_contents(a, "a\n", -1, NULL));
		g_assert_true(g_file_set_contents(b, "b\n", -1, NULL));
		g_assert_true(g_file_set_contents(secret, "secret-do-not-copy\n", -1, NULL));
		g_assert_cmpint(symlink(secret, l), ==, 0);
		g_free(a), g_free(b), g_free(l), g_free(sub);
	}
	char *text = g_strdup_printf("ferry: 1\nname: m\nvms: {v: %s}\n"
				     "disks: {t: {kind: tmpfs, size: 64MiB}}\n"
				     "datasets: {s: {path: '%s'}}\n"
				     "methods: {m: %s}\nmatrix: {disk: [t], method: [m]}\n"
				     "run: {repeat: 1, vm: per-cell}\n",
				     vm_for(method), tree, method);
	struct fake_run t;
	fake_run_init(&t, tmp_dir, text, NULL);
	g_free(text);
	t.p->run.timeout = 60000 * MS;
	/* vfat: the fake machine without guests (this host's kernel may have no vfat to mount
	   the image with, and the refusal comes before any guest) */
	t.fake.guests = !vfat;
	fake_run_exec(&t);
	g_assert_cmpuint(t.fake.live, ==, 0);
	assert_host_clean();
	struct result_cell *cell = &t.r->cells[0];
	if (!skipped(cell)) {
		log_errors(cell);
		if (refusal) {
			g_assert_cmpint(cell->status, ==, STATUS_ERROR);
			if (vfat) /* refused before the image is built */
				g_assert_cmpuint(cell->n_runs, ==, 0);
			g_assert_cmpuint(cell->n_errors, ==, 1);
			g_assert_nonnull(strstr(cell->errors[0].message, refusal));
			g_assert_null(strstr(cell->errors[0].message, "secret"));
		} else {
			g_assert_cmpint(cell->status, ==, STATUS_PASSED);
			g_assert_true(cell->runs[0].integrity_ok);
		}
	}
	fake_run_clear(&t);
	g_free(tree), g_free(secret);
}

/* scp -r copies what a link points to: refused before anything is sent */
static void test_links_scp(void)
{
	check_path_links("{type: ssh, tool: scp}", false,
			 "ssh: scp copies what a symbolic link points to, and dataset 's' has 1 "
			 "('sub/link' first)");
}

static void test_links_vfat(void)
{
	check_path_links(
	    "{type: disk-image, filesystem: vfat}", true,
	    "vfat cannot hold symbolic links, and dataset 's' has 1 ('sub/link' first)");
}

#define LINK_CASES(X)                                                                              \
	X(ext4, "{type: disk-image, filesystem: ext4}")                                            \
	X(iso9660, "{type: disk-image, filesystem: iso9660}")                                      \
	X(agent_files, "{type: agent-file}")                                                       \
	X(agent_tar, "{type: agent-file, archive: tar}")                                           \
	X(channel, "{type: channel}")                                                              \
	X(share_9p, "{type: share, driver: 9p}")                                                   \
	X(share_move, "{type: share, driver: 9p, mode: move}")                                     \
	X(net_pull, "{type: network}")                                                             \
	X(net_pull_tar, "{type: network, archive: tar}")                                           \
	X(ssh_rsync, "{type: ssh, tool: rsync}")                                                   \
	X(ssh_tar, "{type: ssh, tool: tar}")
#define LINK_DEFINE(c, m)                                                                          \
	static void test_links_##c(void)                                                           \
	{                                                                                          \
		check_path_links(m, false, NULL);                                                  \
	}
LINK_CASES(LINK_DEFINE)
#define LINK_ADD(c, m) g_test_add_func("/method-runs/path-links/" #c, test_links_##c);

/* The test's own network namespace with its loopback up: the guests' ports are there. */
static void own_network(void)
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
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* as ferry's main: a writer whose reader went away (ssh killed at a timeout, its packer
	 * still writing) gets EPIPE, not SIGPIPE for the whole test process */
	signal(SIGPIPE, SIG_IGN);
	g_test_init(&argc, &argv, NULL);
	own_network();
	tmp_dir = fake_dir_make("ferry-test-method-runs");
	sum_path = g_build_filename(g_getenv("FERRY_BUILD_DIR") ? g_getenv("FERRY_BUILD_DIR") : ".",
				    "ferry-sum", NULL);
	CASES(ADD)
	g_test_add_func("/method-runs/disk-image/in-place/clean", test_in_place);
	g_test_add_func("/method-runs/disk-image/in-place/hang", test_in_place_hang);
	g_test_add_func("/method-runs/null/clean", test_null);
	g_test_add_func("/method-runs/ssh/cleanup-left", test_ssh_left);
	g_test_add_func("/method-runs/ssh/cleanup-observed", test_ssh_observed);
	g_test_add_func("/method-runs/block/dd-report/gnu", test_dd_gnu);
	g_test_add_func("/method-runs/block/dd-report/gnu-exponent", test_dd_gnu_exp);
	g_test_add_func("/method-runs/block/dd-report/busybox", test_dd_busybox);
	g_test_add_func("/method-runs/block/dd-report/qd2", test_dd_qd2);
	g_test_add_func("/method-runs/block/dd-report/missing", test_dd_missing);
	g_test_add_func("/method-runs/block/dd-report/garbage", test_dd_garbage);
	g_test_add_func("/method-runs/block/dd-report/comma", test_dd_comma);
	g_test_add_func("/method-runs/block/dd-report/zero-time", test_dd_zero_time);
	g_test_add_func("/method-runs/block/dd-report/short", test_dd_short);
	g_test_add_func("/method-runs/guest-copy/drops", test_gc_drops);
	g_test_add_func("/method-runs/path-links/vfat", test_links_vfat);
	g_test_add_func("/method-runs/path-links/scp", test_links_scp);
	LINK_CASES(LINK_ADD)
	int rc = g_test_run();
	fake_dir_remove(tmp_dir);
	g_free(sum_path);
	return rc;
}
