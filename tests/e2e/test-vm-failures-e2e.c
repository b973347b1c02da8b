/* SPDX-License-Identifier: MIT */
/*
 * The VM layer against a real libvirtd and real QEMU (TCG) where things go wrong: a user image
 * boots through an overlay that goes with its domain when the guest never answers, a guest that
 * dies while booting fails with its serial console's last words, `ferry doctor --reap` destroys
 * what a ferry that is gone left, and SIGINT during `ferry doctor`'s KVM probe leaves nothing.
 * No guest is shared (test-vm-e2e.c has the two that boot). Skips with the reason when libvirtd
 * or the guest is missing.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include <libvirt/virterror.h>

#include "e2e-host.h"
#include "proc.h"
#include "run.h"
#include "util.h"
#include "vm.h"

#define BOOT_TIMEOUT_MS 120000

static struct {
	struct e2e_host h; /* root, guest, libvirtd, run directory, run (e2e-host.h) */
} t;

static bool need(void)
{
	return e2e_host_need(&t.h);
}

static char *file_sha256(const char *path)
{
	gchar *data = NULL;
	gsize len = 0;
	g_assert_true(g_file_get_contents(path, &data, &len, NULL));
	char *hex = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)data, len);
	g_free(data);
	return hex;
}

/* What the overlay watcher of test_image_overlay saw. */
struct overlay_watch {
	const char *dir; /* the run's overlays directory */
	gint stop;
	char *info; /* qemu-img info of the first overlay seen there with a backing file, or NULL */
	char *last; /* the last qemu-img info read there without one, or NULL */
};

/* Polls the overlays directory while the boot runs (the overlay goes with the domain when the
 * boot fails, so it must be read while it exists). A file qemu-img is still writing can be read
 * before its header names the backing file (seen with another test beside this one): the watch
 * goes on until the header names one, or the boot ends. */
static gpointer overlay_watcher(gpointer data)
{
	struct overlay_watch *w = data;
	for (int i = 0; i < 3000 && !g_atomic_int_get(&w->stop) && !w->info; i++) {
		GDir *gd = g_dir_open(w->dir, 0, NULL);
		const char *name = NULL;
		while (gd && (name = g_dir_read_name(gd)) &&
		       !g_str_has_suffix(name, ".overlay.qcow2"))
			;
		char *overlay = name ? g_build_filename(w->dir, name, NULL) : NULL;
		if (gd)
			g_dir_close(gd);
		if (overlay) {
			const char *argv[] = { "qemu-img",      "info",  "-U",
					       "--output=json", overlay, NULL };
			char *out = NULL, *err = NULL;
			if (proc_run(argv, &out, &err) == 0 && out &&
			    strstr(out, "\"backing-filename\"")) {
				w->info = out;
			} else if (out) {
				free(w->last);
				w->last = out;
			}
			free(err);
			g_free(overlay);
		}
		g_usleep(10000);
	}
	return NULL;
}

/*
 * A user image boots through a qcow2 overlay in the run directory, backed by the image, which is
 * never modified; a guest whose agent never answers (this blank image boots nothing) fails with
 * the reason, and its overlay goes with its domain.
 */
static void test_image_overlay(void)
{
	if (!need())
		return;
	char *image = g_build_filename(t.h.base, "user-image.qcow2", NULL);
	struct disk_config d = { .format = DISK_FORMAT_QCOW2, .size = 16 << 20 };
	char *err = NULL;
	g_assert_cmpint(vm_image_create(&d, image, &err), ==, 0);
	char *before = file_sha256(image);
	struct vm_config c;
	vm_config_init(&c);
	c.image = image;
	c.accel = VM_ACCEL_TCG;
	c.nic.backend = NIC_BACKEND_NONE;
	char *dir = g_build_filename(run_dir(t.h.run), "overlays", NULL);
	struct overlay_watch w = { .dir = dir };
	GThread *th = g_thread_new("overlay-watch", overlay_watcher, &w);
	struct vm *vm = NULL;
	g_assert_cmpint(vm_boot(t.h.run, t.h.conn, &c, 3000, &vm, &err), ==, -1);
	g_atomic_int_set(&w.stop, 1);
	g_thread_join(th);
	g_assert_null(vm);
	g_test_message("%s", err);
	g_assert_nonnull(strstr(err, "did not answer within 3000 ms"));
	free(err);
	char *after = file_sha256(image);
	g_assert_cmpstr(before, ==, after);
	/* while it booted, the overlay was in the run directory, backed by the user's image */
	if (!w.info)
		g_test_message("no overlay with a backing file seen; the last read: %s",
			       w.last ? w.last : "(none)");
	free(w.last);
	g_assert_nonnull(w.info);
	char *want = g_strdup_printf("\"backing-filename\": \"%s\"", image);
	g_assert_nonnull(strstr(w.info, want));
	g_free(want);
	free(w.info);
	/* and it went with the domain */
	GDir *gd = g_dir_open(dir, 0, NULL);
	const char *name = NULL;
	while (gd && (name = g_dir_read_name(gd)))
		g_assert_false(g_str_has_suffix(name, ".overlay.qcow2"));
	if (gd)
		g_dir_close(gd);
	g_free(dir);
	g_free(before);
	g_free(after);
	g_unlink(image);
	g_free(image);
}

/* A guest that dies while booting fails the boot at once, with the serial console's last words. */
static void test_boot_failure_console(void)
{
	if (!need())
		return;
	char *junk = run_path(t.h.run, "tmp", "not-an-initramfs");
	g_assert_true(g_file_set_contents(junk, "this is not a cpio archive\n", -1, NULL));
	g_chmod(junk, 0644);
	struct vm_config c;
	e2e_host_vm_config(&t.h, &c);
	c.initrd = junk;
	c.nic.backend = NIC_BACKEND_NONE;
	struct vm *vm = NULL;
	char *err = NULL;
	g_assert_cmpint(vm_boot(t.h.run, t.h.conn, &c, BOOT_TIMEOUT_MS, &vm, &err), ==, -1);
	g_test_message("%s", err);
	g_assert_nonnull(strstr(err, "stopped before its guest agent answered"));
	g_assert_nonnull(strstr(err, "serial console (last lines):"));
	g_assert_nonnull(strstr(err, "Kernel panic"));
	free(err);
	free(junk);
}

/* `ferry doctor --reap` destroys a domain and a run directory whose ferry process is gone. */
/*
 * doctor --reap destroys a domain with ferry's marker whose process is gone and its run
 * directory, and leaves alone a user's domain merely named like ferry's (no marker).
 */
static void test_doctor_reap(void)
{
	if (!need())
		return;
	const char *ferry = g_getenv("FERRY");
	if (!ferry) {
		g_test_skip("FERRY (the ferry binary) is not set: run through meson test");
		return;
	}
	/* a pid above any pid_max (at most 2^22) is never alive */
	const char *stale = "ferry-20000101T000000-2147483646-0";
	const char *lookalike = "ferry-20000101T000000-2147483646-1";
	struct vm_config c;
	e2e_host_vm_config(&t.h, &c);
	c.nic.backend = NIC_BACKEND_NONE;
	char *err = NULL;
	virDomainPtr d[2];
	for (int i = 0; i < 2; i++) {
		c.owner_run = i == 0 ? "20000101T000000-2147483646" : NULL; /* the marker */
		c.owner_pid = 2147483646;
		char *xml = vm_domain_xml(&c, i == 0 ? stale : lookalike, false, NULL, &err);
		g_assert_nonnull(xml);
		d[i] = virDomainCreateXML(t.h.conn, xml, 0);
		if (!d[i])
			g_error("%s", virGetLastErrorMessage());
		/* should the reap fail (or wrongly succeed), the test's own run removes them */
		vm_own_domain(t.h.run, t.h.conn, i == 0 ? stale : lookalike);
		free(xml);
	}
	char *dir = g_build_filename(t.h.runs, "20000101T000000-2147483646", "logs", NULL);
	g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);

	char *argv[] = { (char *)ferry, (char *)"doctor", (char *)"--reap", NULL };
	char *out = NULL;
	int status;
	GError *gerr = NULL;
	if (!g_spawn_sync(NULL, argv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out, NULL,
			  &status, &gerr))
		g_error("%s", gerr->message);
	g_test_message("%s", out);
	g_assert_nonnull(strstr(out, "reaped 1 stale domain and 1 run directory"));
	g_assert_cmpint(virDomainIsActive(d[0]), !=, 1);
	g_assert_cmpint(virDomainIsActive(d[1]), ==, 1); /* the look-alike is not ferry's */
	g_assert_false(g_file_test(dir, G_FILE_TEST_EXISTS));
	virDomainDestroy(d[1]);
	virDomainFree(d[0]);
	virDomainFree(d[1]);
	g_free(out);
	g_free(dir);
}

/* SIGINT while `ferry doctor` boot-probes KVM: its domain and run directory are gone after. */
static void test_sigint_cleanup(void)
{
	if (!need())
		return;
	const char *ferry = g_getenv("FERRY");
	if (!ferry) {
		g_test_skip("FERRY (the ferry binary) is not set: run through meson test");
		return;
	}
	if (access("/dev/kvm", R_OK | W_OK) < 0) {
		g_test_skip("no /dev/kvm: ferry doctor does not boot a probe domain to interrupt");
		return;
	}
	char *argv[] = { (char *)ferry, (char *)"doctor", NULL };
	GPid pid;
	GError *gerr = NULL;
	if (!g_spawn_async(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL,
			   NULL, NULL, &pid, &gerr))
		g_error("%s", gerr->message);
	/* wait for the probe domain of that process */
	bool seen = false;
	for (int i = 0; i < 600 && !seen; i++) {
		virDomainPtr *doms = NULL;
		int n = virConnectListAllDomains(t.h.conn, &doms, 0);
		for (int j = 0; j < n; j++) {
			long p = 0;
			if (run_parse_domain_name(virDomainGetName(doms[j]), NULL, &p) &&
			    p == (long)pid)
				seen = true;
			virDomainFree(doms[j]);
		}
		free(doms);
		if (waitpid(pid, NULL, WNOHANG) == pid) {
			g_test_skip("ferry doctor ended before its KVM probe could be interrupted");
			g_spawn_close_pid(pid);
			return;
		}
		if (!seen)
			g_usleep(50 * 1000);
	}
	g_assert_true(seen);
	g_assert_cmpint(kill(pid, SIGINT), ==, 0);
	int status;
	g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
	g_spawn_close_pid(pid);
	g_assert_true(WIFEXITED(status));
	g_assert_cmpint(WEXITSTATUS(status), ==, 130);
	virDomainPtr *doms = NULL;
	int n = virConnectListAllDomains(t.h.conn, &doms, 0);
	for (int j = 0; j < n; j++) {
		long p = 0;
		g_assert_false(run_parse_domain_name(virDomainGetName(doms[j]), NULL, &p) &&
			       p == (long)pid);
		virDomainFree(doms[j]);
	}
	free(doms);
	/* its run directory (named after its pid) is gone too */
	GDir *dir = g_dir_open(t.h.runs, 0, NULL);
	const char *e;
	char *suffix = g_strdup_printf("-%ld", (long)pid);
	while ((e = g_dir_read_name(dir)))
		g_assert_false(g_str_has_suffix(e, suffix));
	g_dir_close(dir);
	g_free(suffix);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	e2e_host_open(&t.h, "vm-failures", "qemu:///system", 0);
	/* the user image of test_image_overlay is made here: allowed as a user allows theirs */
	g_setenv("FERRY_ALLOW_INPUT", t.h.base, TRUE);
	g_test_add_func("/vm-e2e/image-overlay", test_image_overlay);
	g_test_add_func("/vm-e2e/boot-failure-console", test_boot_failure_console);
	g_test_add_func("/vm-e2e/doctor-reap", test_doctor_reap);
	g_test_add_func("/vm-e2e/sigint-cleanup", test_sigint_cleanup);
	int r = g_test_run();
	e2e_host_close(&t.h);
	return r;
}
