/* SPDX-License-Identifier: MIT */
/*
 * Issue 24 class 2 against a real libvirtd and QEMU (TCG): a hostile guest on a writable share
 * (mode move: the run's staging directory) of each driver, 9p (accessmode mapped) and virtiofs
 * (ferry-virtiofsd), copies a binary into the share and asks for chmod 4755 and 2755, mknod of
 * a character and a block device, chown to root and to another id, a setgid directory, and
 * chmod 2755 of the staged dataset's directory (ferry made it; the share's id owns it).
 * Afterwards nothing under the staging directory on the host is setuid or setgid, a device, or
 * owned by root or any id but the share's own (9p: libvirt-qemu; virtiofs: SHARE_IDS_BASE's
 * range), the copied binary is there (the guest did write), and after the method's cleanup and
 * the guest's end the staging directory, the domain and its virtiofsd are gone. Skips with the
 * reason when libvirtd, the guest or (virtiofs only) virtiofsd is missing.
 */
#include <dirent.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "dataset.h"
#include "e2e-host.h"
#include "guest.h"
#include "machine-libvirt.h"
#include "machine.h"
#include "manifest.h"
#include "methods/method.h"
#include "run.h"
#include "share-ids.h"
#include "util.h"
#include "vm.h"

#define BOOT_TIMEOUT_MS 120000
#define EXEC_TIMEOUT_MS 120000
#define MNT             "/mnt/ferry-share"

static struct {
	struct e2e_host h; /* root, guest, libvirtd, run directory, run (e2e-host.h) */
	struct plan_vm vm;
	struct plan_disk tmpfs;
	struct plan_dataset pds;
	struct dataset_info info;
	struct manifest *man;
} t;

static char *sh(struct vm *vm, const char *line)
{
	const char *argv[] = { "/bin/sh", "-c", line, NULL };
	char *out = NULL, *err = NULL;
	if (agent_run(vm_domain(vm), argv, EXEC_TIMEOUT_MS, &out, &err) < 0)
		g_error("guest: %s: %s", line, err);
	return out;
}

/* What the guest tries, each step on its own: every step's status is printed. */
#define ATTACK                                                                                     \
	"cp /bin/busybox suid && chmod 4755 suid; echo chmod-4755=$?; "                            \
	"cp /bin/busybox sgid && chmod 2755 sgid; echo chmod-2755=$?; "                            \
	"mknod chr c 1 3; echo mknod-c=$?; mknod blk b 7 0; echo mknod-b=$?; "                     \
	"touch own0 && chown 0:0 own0; echo chown-0=$?; "                                          \
	"touch own1234 && chown 1234:1234 own1234; echo chown-1234=$?; "                           \
	"mkdir dir && chmod 2755 dir; echo mkdir-2755=$?; "                                        \
	"cp /bin/busybox made && chmod 6755 made; echo chmod-6755=$?; "                            \
	"chmod 2755 data; echo chmod-data-2755=$?; ls -ln"

/* The ids the share's files may have on the host: uids [lo, hi], gids [glo, ghi] or galt. */
struct ids {
	uid_t lo, hi;
	gid_t glo, ghi, galt;
};

/* Every entry below dirfd: no setuid/setgid bit, no device, owned by ids (id NULL: any owner,
 * for ferry's staged copy of the dataset, whose links to the cache keep its owner); counts
 * them. */
static void check_tree(int dirfd, const char *shown, const struct ids *id, int depth, unsigned *n)
{
	DIR *d = fdopendir(dirfd);
	g_assert_nonnull(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		struct stat st;
		g_assert_cmpint(fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW), ==, 0);
		char *p = g_strdup_printf("%s/%s", shown, e->d_name);
		bool owner_ok =
		    !id ||
		    (st.st_uid >= id->lo && st.st_uid <= id->hi &&
		     ((st.st_gid >= id->glo && st.st_gid <= id->ghi) || st.st_gid == id->galt));
		if ((st.st_mode & (S_ISUID | S_ISGID)) || S_ISCHR(st.st_mode) ||
		    S_ISBLK(st.st_mode) || !owner_ok)
			g_error("the guest made '%s' mode %o owner %u:%u on the host", p,
				(unsigned)st.st_mode, (unsigned)st.st_uid, (unsigned)st.st_gid);
		(*n)++;
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
			g_assert_cmpint(sub, >=, 0);
			/* the staged dataset (the cell's "data"): hard links keep the cache's owner
			 */
			bool staged = depth == 0 && !strcmp(e->d_name, "data");
			check_tree(sub, p, staged ? NULL : id, depth + 1, n);
		}
		g_free(p);
	}
	closedir(d);
}

/* Whether a process's command line names path (virtiofsd's -o source=...). */
static bool process_names(const char *path)
{
	DIR *d = opendir("/proc");
	bool found = false;
	struct dirent *e;
	while (d && !found && (e = readdir(d))) {
		char *f = g_strdup_printf("/proc/%s/cmdline", e->d_name);
		gchar *text = NULL;
		gsize len = 0;
		if (e->d_name[0] >= '1' && e->d_name[0] <= '9' &&
		    g_file_get_contents(f, &text, &len, NULL)) {
			for (gsize i = 0; i + 1 < len; i++)
				if (!text[i])
					text[i] = ' ';
			found = len && strstr(text, path);
		}
		g_free(text);
		g_free(f);
	}
	if (d)
		closedir(d);
	return found;
}

static void attack(const char *driver)
{
	if (!e2e_host_need(&t.h))
		return;
	bool vfs = !strcmp(driver, "virtiofs");
	if (vfs && !machine_has_virtiofs(t.h.m)) {
		g_test_skip("no virtiofsd on this host (or ferry-virtiofsd not built)");
		return;
	}
	struct plan_method m;
	char *err = NULL;
	g_assert_cmpint(plan_method_init(&m, vfs ? "vfs-move" : "9p-move", "share"), ==, 0);
	if (plan_method_set(&m, "driver", driver, &err) < 0 ||
	    plan_method_set(&m, "mode", "move", &err) < 0)
		g_error("%s", err);
	struct plan_cell cell = {
		.id = m.e.name, .vm = &t.vm, .disk = &t.tmpfs, .dataset = &t.pds, .method = &m
	};
	struct method_ctx ctx = { .cell = &cell,
				  .method = &m,
				  .disk = &t.tmpfs,
				  .pds = &t.pds,
				  .dataset_dir = t.info.dir,
				  .manifest = t.man,
				  .run = t.h.run,
				  .machine = t.h.m,
				  .timeout_ms = EXEC_TIMEOUT_MS };
	const struct method_ops *ops = method_find_name("share");
	struct method_boot_needs n = { 0 };
	if (ops->add_devices(&ctx, &n) < 0 || ops->prepare(&ctx) < 0)
		g_error("share: %s", ctx.err.message);
	struct vm_config c;
	vm_config_init(&c);
	c.kernel = t.h.guest.kernel;
	c.initrd = t.h.guest.initramfs;
	c.cmdline = t.h.guest.cmdline;
	c.accel = VM_ACCEL_TCG;
	c.nic.backend = NIC_BACKEND_NONE;
	c.share = (struct share_config){ n.share_dir,      n.share_tag,    n.share_mode,
					 n.share_readonly, n.share_driver, vm_virtiofsd_path() };
	struct vm *vm = NULL;
	if (vm_boot(t.h.run, t.h.conn, &c, BOOT_TIMEOUT_MS, &vm, &err) < 0)
		g_error("boot: %s", err);
	/* the staged cell directory: the one directory below the share's root */
	char *cell_dir = NULL;
	GDir *gd = g_dir_open(n.share_dir, 0, NULL);
	const char *name = gd ? g_dir_read_name(gd) : NULL;
	g_assert_nonnull(name);
	cell_dir = g_build_filename(n.share_dir, name, NULL);
	char *cmd = g_strdup_printf(
	    "for i in $(seq 300); do grep -qw %s /proc/filesystems && break; sleep 0.1; done; "
	    "mkdir -p " MNT " && mount -t %s %s %s " MNT " && cd " MNT "/%s && { " ATTACK
	    "; }; cd / && umount " MNT,
	    vfs ? "virtiofs" : "9p", vfs ? "virtiofs" : "9p",
	    vfs ? "" : "-o trans=virtio,version=9p2000.L", n.share_tag, name);
	char *out = sh(vm, cmd);
	g_test_message("%s guest:\n%s", driver, out);
	g_assert_nonnull(strstr(out, "chmod-4755="));
	/* the host: only the share's own ids, no setuid/setgid bit, no device */
	struct passwd *pw = getpwnam("libvirt-qemu");
	if (!vfs && !pw)
		g_error("no user libvirt-qemu: QEMU's 9p server may run as root here");
	struct ids id = { SHARE_IDS_BASE, SHARE_IDS_BASE + SHARE_IDS_COUNT - 1, SHARE_IDS_BASE,
			  SHARE_IDS_BASE + SHARE_IDS_COUNT - 1, SHARE_IDS_BASE };
	/* 9p: QEMU's user, its primary group (ferry's staging) or its own group (QEMU's files) */
	struct group *gr = getgrnam("libvirt-qemu");
	if (!vfs)
		id = (struct ids){ pw->pw_uid, pw->pw_uid, pw->pw_gid, pw->pw_gid,
				   gr ? gr->gr_gid : pw->pw_gid };
	unsigned seen = 0;
	check_tree(open(cell_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW), cell_dir, &id, 0, &seen);
	/* the guest did write: the copied binary is there, a plain file of the share's id */
	char *suid = g_build_filename(cell_dir, "suid", NULL);
	struct stat st;
	g_assert_cmpint(lstat(suid, &st), ==, 0);
	g_assert_true(S_ISREG(st.st_mode));
	g_assert_cmpint(st.st_size, >, 0);
	g_test_message("%s: %u entries checked; suid is mode %o owner %u", driver, seen,
		       (unsigned)st.st_mode, (unsigned)st.st_uid);
	/* nothing left behind: the staging by the method's cleanup, virtiofsd with the domain */
	ops->cleanup(&ctx);
	ops->free_state(&ctx);
	method_error_clear(&ctx.err);
	g_assert_false(g_file_test(cell_dir, G_FILE_TEST_EXISTS));
	vm_destroy(vm);
	for (int i = 0; i < 100 && process_names(n.share_dir); i++)
		g_usleep(100000);
	g_assert_false(process_names(n.share_dir));
	free(n.share_dir);
	free(n.share_tag);
	g_free(suid), g_free(cmd), g_free(out), g_free(cell_dir);
	if (gd)
		g_dir_close(gd);
	plan_method_clear(&m);
}

static void test_9p(void)
{
	attack("9p");
}

static void test_virtiofs(void)
{
	attack("virtiofs");
}

static void setup(void)
{
	char *err = NULL;
	t.vm.guest = PLAN_GUEST_BUILTIN;
	t.vm.os = PLAN_OS_LINUX;
	t.vm.vcpus = 1;
	t.tmpfs.kind = PLAN_DISK_TMPFS;
	e2e_host_open(&t.h, "share-guard", "qemu:///system", E2E_MACHINE);
	char *cache = g_build_filename(t.h.base, "cache", NULL);
	struct dataset_spec spec = { .files = 2, .size_min = 4096, .size_max = 4096, .seed = 1 };
	t.pds.e.name = (char *)"two";
	struct dataset_get_opts o = { .cache_dir = cache };
	if (dataset_get(&spec, &o, &t.info, &t.man, &err) < 0)
		g_error("dataset: %s", err);
	g_free(cache);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	setup();
	g_test_add_func("/share-guard-e2e/9p", test_9p);
	g_test_add_func("/share-guard-e2e/virtiofs", test_virtiofs);
	int r = g_test_run();
	dataset_info_clear(&t.info);
	manifest_free(t.man);
	e2e_host_close(&t.h);
	return r;
}
