/* SPDX-License-Identifier: MIT */
/*
 * A guest over a local directory (fake-guest.h). The holder is forked here (it makes the
 * namespace between fork and exec, with system calls only: the caller may have threads) and
 * becomes the guest's init, ferry-fake-init (fake-init.c), which starts its commands
 * (fake-proc.c).
 */
#include "fake-guest.h"
#include "fake-guest-int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs.h"
#include "proc.h"
#include "run.h"
#include "util.h"

char fake_arg_sh[] = "sh", fake_arg_c[] = "-c",
     fake_env_path[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
static char arg_init[] = "ferry-fake-init";

/* ferry-fake-init beside the running program (the build tree's tests/ directory, where the
 * programs that use fake guests are), once per process. */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static char init_path[4096];

static void init_find(void)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return;
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (!slash)
		return;
	*slash = '\0';
	int k = snprintf(init_path, sizeof(init_path), "%s/%s", self, arg_init);
	if (k < 0 || (size_t)k >= sizeof(init_path) || access(init_path, X_OK) != 0)
		init_path[0] = '\0';
}

const char *fake_root_support(void)
{
	if (geteuid() != 0)
		return "a fake guest needs root (mount namespaces, chroot, loop devices)";
	if (access(BUSYBOX, X_OK) != 0)
		return "a fake guest needs a static busybox at " BUSYBOX " (busybox-static)";
	if (access("/dev/loop-control", R_OK | W_OK) != 0)
		return "a fake guest's disks need loop devices (/dev/loop-control)";
	if (access("/proc/self/ns/mnt", R_OK) != 0)
		return "a fake guest needs mount namespaces (/proc/self/ns/mnt)";
	pthread_once(&init_once, init_find);
	if (!init_path[0])
		return "a fake guest needs ferry-fake-init beside the program that runs it (the "
		       "build "
		       "tree's tests/)";
	return NULL;
}

const char *fake_root_dir(const struct fake_root *r)
{
	return r->dir;
}

char *fake_host_path(const struct fake_root *r, const char *p)
{
	return xasprintf("%s%s", r->proc_root, p);
}

/* fake_root_open()'s thread: its own filesystem context (unshare CLONE_FS), rooted in the guest's
 * root, where it opens the path as a guest process would; the descriptor table is the
 * process's. (Not openat2's RESOLVE_IN_ROOT: valgrind 3.19, which runs the unit tests, does not
 * know that system call.) */
struct root_open {
	const char *root, *path;
	int flags;
	int fd, error;
};

static void *root_open_thread(void *arg)
{
	struct root_open *o = arg;
	o->fd = -1;
	if (unshare(CLONE_FS) < 0 || chroot(o->root) < 0 || chdir("/") < 0)
		o->error = errno;
	else if ((o->fd = open(o->path, o->flags | O_CLOEXEC | O_NOCTTY, 0644)) < 0)
		o->error = errno;
	return NULL;
}

int fake_root_open(struct fake_root *r, const char *path, int flags)
{
	struct root_open o = { .root = r->proc_root, .path = path, .flags = flags };
	pthread_t t;
	int e = pthread_create(&t, NULL, root_open_thread, &o);
	if (e != 0) {
		errno = e;
		return -1;
	}
	pthread_join(t, NULL);
	if (o.fd < 0)
		errno = o.error;
	return o.fd;
}

/*
 * The guest shell's profile. busybox's shell runs its own applets before anything in PATH, so
 * what stands in for a guest kernel's feature is a shell function: `mount -t 9p|virtiofs TAG
 * DIR` binds the host folder the machine exported under TAG (fake_root_share()) on DIR,
 * read-only with -o ...,ro; every other mount is busybox's. Hung programs are appended.
 */
#define PROFILE_TEXT                                                                               \
	"mount() {\n"                                                                              \
	"  case \" $* \" in *' -t 9p '*|*' -t virtiofs '*) ;; *) command mount \"$@\"; return;; "  \
	"esac\n"                                                                                   \
	"  _t=; _o=; _a=; _b=\n"                                                                   \
	"  while [ $# -gt 0 ]; do case $1 in -t) _t=$2; shift 2;; -o) _o=$2; shift 2;; "           \
	"*) if [ -z \"$_a\" ]; then _a=$1; else _b=$1; fi; shift;; esac; done\n"                   \
	"  [ -d " FAKE_SHARES "/\"$_a\" ] || { echo \"mount: no $_t share tagged '$_a'\" >&2; "    \
	"return 32; }\n"                                                                           \
	"  command mount --bind " FAKE_SHARES "/\"$_a\" \"$_b\" || return\n"                       \
	"  case \",$_o,\" in *,ro,*) command mount -o remount,bind,ro \"$_b\";; esac\n"            \
	"}\n"

/*
 * Programs of the host the guest runs as its own, where the host has them: the ssh method's
 * server (dropbear, dropbearconvert: Debian's dropbear-bin), vm2vm's client (dbclient, the same
 * package), the remote ends of scp -O and rsync over ssh, and coreutils' dd at /usr/bin/dd (the
 * block method's timed dd), as the built-in guest carries them; and Samba's smbd with the ss and
 * bash its start and stop use (share driver smb served_by guest), as the Debian guest carries
 * them.
 * Each is bound read-only at its own path, with the host's /usr/lib and /usr/lib64 (their libraries
 * and the dynamic loader) read-only under /usr of the root and /lib, /lib64 linking there, as on a
 * merged-/usr Debian.
 */
static const char *const host_programs[] = { "/usr/sbin/dropbear", "/usr/bin/dropbearconvert",
					     "/usr/bin/dbclient",  "/usr/bin/scp",
					     "/usr/bin/rsync",     "/usr/bin/dd",
					     "/usr/sbin/smbd",     "/usr/bin/ss",
					     "/usr/bin/bash" };
static const char *const host_lib_dirs[] = { "/usr/lib", "/usr/lib64" };
/* and ferry-sum (the built-in guest's verify lister) at /usr/bin/ferry-sum, when given */
#define SUM_PATH "/usr/bin/ferry-sum"
/* and the guest's init (fake-init.c), bound at its path in the root: exec'd by path, not by a
 * descriptor, which a memory checker's exec takes for the host's path */
#define INIT_PATH    "/usr/sbin/ferry-fake-init"
#define N_HOST_BINDS (ELEMENTSOF(host_programs) + ELEMENTSOF(host_lib_dirs) + 2)

/* What the holder binds: host path and root path pairs, NULL where the host lacks it. */
static void host_binds(const char *dir, const char *sum, char *src[N_HOST_BINDS],
		       char *dst[N_HOST_BINDS])
{
	size_t n = 0;
	src[n] = sum ? xstrdup(sum) : NULL;
	dst[n++] = sum ? xasprintf("%s" SUM_PATH, dir) : NULL;
	src[n] = xstrdup(init_path);
	dst[n++] = xasprintf("%s" INIT_PATH, dir);
	for (size_t i = 0; i < ELEMENTSOF(host_lib_dirs); i++, n++) {
		bool have = access(host_lib_dirs[i], X_OK) == 0;
		src[n] = have ? xstrdup(host_lib_dirs[i]) : NULL;
		dst[n] = have ? xasprintf("%s%s", dir, host_lib_dirs[i]) : NULL;
	}
	for (size_t i = 0; i < ELEMENTSOF(host_programs); i++, n++) {
		bool have = access(host_programs[i], X_OK) == 0;
		src[n] = have ? xstrdup(host_programs[i]) : NULL;
		dst[n] = have ? xasprintf("%s%s", dir, host_programs[i]) : NULL;
	}
}

/* A new file of the root: written, not synced. The root lives as long as the guest and goes
 * with it; write_file_atomic() synced each file and its directory, 22 fsyncs a boot on the
 * host's disk. */
static int root_file(const char *path, const char *data, size_t len, mode_t mode, char **err)
{
	_cleanup_close_ int fd = file_create_new(path, mode, err);
	if (fd < 0)
		return -1;
	if (write_all(fd, data, len) < 0) {
		*err = xasprintf("fake guest: write '%s': %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* The mount points of host_binds() in the root, and root's passwd entry (dropbear's login). */
static int root_make_host(const char *dir, const char *sum, char **err)
{
	_cleanup_free_ char *sp = xasprintf("%s" SUM_PATH, dir);
	_cleanup_free_ char *ip = xasprintf("%s" INIT_PATH, dir);
	if ((sum && root_file(sp, "", 0, 0755, err) < 0) || root_file(ip, "", 0, 0755, err) < 0)
		return -1;
	for (size_t i = 0; i < ELEMENTSOF(host_lib_dirs); i++) {
		_cleanup_free_ char *p = xasprintf("%s%s", dir, host_lib_dirs[i]);
		_cleanup_free_ char *l = xasprintf("%s/%s", dir, host_lib_dirs[i] + 5);
		if (mkdir_p(p, 0755, err) < 0)
			return -1;
		if (symlink(host_lib_dirs[i] + 1, l) < 0) {
			*err = xasprintf("fake guest: symlink '%s': %s", l, strerror(errno));
			return -1;
		}
	}
	for (size_t i = 0; i < ELEMENTSOF(host_programs); i++) {
		_cleanup_free_ char *p = xasprintf("%s%s", dir, host_programs[i]);
		if (access(host_programs[i], X_OK) == 0 && root_file(p, "", 0, 0755, err) < 0)
			return -1;
	}
	_cleanup_free_ char *pw = xasprintf("%s/etc/passwd", dir);
	_cleanup_free_ char *gr = xasprintf("%s/etc/group", dir);
	/* and nobody, smbd's guest account */
	static const char passwd[] = "root:x:0:0:root:/root:/bin/sh\n"
				     "nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
			  group[] = "root:x:0:\nnogroup:x:65534:\n";
	if (root_file(pw, passwd, strlen(passwd), 0644, err) < 0 ||
	    root_file(gr, group, strlen(group), 0644, err) < 0)
		return -1;
	return 0;
}

/*
 * busybox's applet names, asked once per process (`busybox --list`): each root then gets its
 * links by symlink(2), as `busybox --install -s` would make them, without a process per guest.
 */
static pthread_once_t applets_once = PTHREAD_ONCE_INIT;
static char *applets_text; /* "[\n[[\nacpid\n..." or NULL */
static char *applets_err;

static void applets_load(void)
{
	const char *argv[] = { BUSYBOX, "--list", NULL };
	if (proc_run(argv, &applets_text, &applets_err) < 0) {
		free(applets_text);
		applets_text = NULL;
	}
}

/* Loads the applet list (before the fork that needs it): 0, or -1 with *err. */
static int applets_ready(char **err)
{
	pthread_once(&applets_once, applets_load);
	if (applets_text)
		return 0;
	*err =
	    xasprintf("fake guest: %s --list: %s", BUSYBOX, applets_err ? applets_err : "failed");
	return -1;
}

/* In the holder, between fork and exec (system calls only): a link to /usr/bin/busybox for
 * every applet in the directory dfd, as `busybox --install -s` makes them. */
static int applet_links(int dfd)
{
	char name[64];
	for (const char *p = applets_text; *p;) {
		size_t n = strcspn(p, "\n");
		if (n > 0 && n < sizeof(name)) {
			memcpy(name, p, n);
			name[n] = '\0';
			if (!memchr(name, '/', n) && symlinkat("/usr/bin/busybox", dfd, name) < 0)
				return -1;
		}
		p += n + (p[n] == '\n');
	}
	return 0;
}

/* The directories of the root, made on the host before the guest starts. */
static int root_make(const char *dir, const char *sum, char **err)
{
	static const char *const dirs[] = { "bin", "usr/bin", "usr/sbin", "proc",      "dev", "tmp",
					    "run", "mnt",     "etc",      "sys/block", "root" };
	for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
		_cleanup_free_ char *p = xasprintf("%s/%s", dir, dirs[i]);
		if (mkdir_p(p, 0755, err) < 0)
			return -1;
	}
	if (root_make_host(dir, sum, err) < 0)
		return -1;
	_cleanup_free_ char *bb = xasprintf("%s/usr/bin/busybox", dir);
	_cleanup_close_ int fd = open(bb, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	_cleanup_free_ char *sbin = xasprintf("%s/sbin", dir);
	if (fd < 0 || symlink("bin", sbin) < 0) {
		*err = xasprintf("fake guest: cannot make '%s': %s", dir, strerror(errno));
		return -1;
	}
	_cleanup_free_ char *prof = xasprintf("%s" PROFILE, dir);
	_cleanup_free_ char *hangs = xasprintf("%s" HANGS, dir);
	if (root_file(prof, PROFILE_TEXT, strlen(PROFILE_TEXT), 0644, err) < 0 ||
	    root_file(hangs, "", 0, 0644, err) < 0)
		return -1;
	return 0;
}

/* In the holder, between fork and exec: the namespace, its mounts, the chroot, then the guest's
 * init with ctl as its fd 0. */
static void holder_main(const char *dir, char *const paths[], char *const src[], char *const dst[],
			int ctl, int status)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount(BUSYBOX, paths[0], "none", MS_BIND, NULL) < 0 ||
	    mount("none", paths[0], "none", MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0 ||
	    mount("proc", paths[1], "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ||
	    mount("tmpfs", paths[2], "tmpfs", MS_NOSUID, "mode=0755") < 0 ||
	    mount("tmpfs", paths[3], "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0 ||
	    mount("tmpfs", paths[4], "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0 ||
	    mount("tmpfs", paths[5], "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
		goto fail;
	/* every applet as a link to /usr/bin/busybox (Debian's busybox installs them so), on a
	 * tmpfs of the namespace: no inode on the host's disk per link and guest */
	int bin = open(paths[5], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (bin < 0 || applet_links(bin) < 0)
		goto fail;
	close(bin);
	for (size_t i = 0; i < N_HOST_BINDS; i++)
		if (src[i] &&
		    (mount(src[i], dst[i], "none", MS_BIND | MS_REC, NULL) < 0 ||
		     mount("none", dst[i], "none", MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0))
			goto fail;
	if (chroot(dir) < 0 || chdir("/") < 0)
		goto fail;
	static const struct {
		const char *path;
		unsigned minor;
	} nodes[] = { { "/dev/null", 3 },
		      { "/dev/zero", 5 },
		      { "/dev/full", 7 },
		      { "/dev/random", 8 },
		      { "/dev/urandom", 9 } };
	for (size_t i = 0; i < ELEMENTSOF(nodes); i++)
		if (mknod(nodes[i].path, S_IFCHR | 0666, makedev(1, nodes[i].minor)) < 0)
			goto fail;
	if (mkdir("/dev/virtio-ports", 0755) < 0 || dup2(ctl, 0) < 0)
		goto fail;
	close(ctl);
	char *const argv[] = { arg_init, NULL };
	char *const envp[] = { fake_env_path, NULL };
	execve(INIT_PATH, argv, envp);
fail:;
	int e = errno;
	(void)!write(status, &e, sizeof(e));
	_exit(127);
}

static bool ascii_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static void root_free(struct fake_root *r)
{
	free(r->dir);
	free(r->proc_root);
	free(r);
}

/*
 * The guests alive in this process and the folder to remove with them, for a test that dies
 * with guests running (fake_root_abort_cleanup()). Guests are booted and destroyed by one thread
 * at a time in the programs that use them; the lock keeps the list whole anyway.
 */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fake_root **live;
static size_t n_live;
static char *abort_dir;

static void live_add(struct fake_root *r)
{
	pthread_mutex_lock(&live_lock);
	live = xrealloc(live, (n_live + 1) * sizeof(*live));
	live[n_live++] = r;
	pthread_mutex_unlock(&live_lock);
}

static void live_remove(struct fake_root *r)
{
	pthread_mutex_lock(&live_lock);
	for (size_t i = 0; i < n_live; i++)
		if (live[i] == r) {
			live[i] = live[--n_live];
			break;
		}
	pthread_mutex_unlock(&live_lock);
}

/* SIGABRT (a failed assertion): every live guest ended as fake_root_destroy() ends it, the folder
 * removed, then the abort goes on. Not async-signal-safe: an assertion aborts from the test's
 * own code, not from inside malloc. */
static void abort_handler(int sig)
{
	for (size_t i = n_live; i > 0; i--)
		fake_root_destroy(live[i - 1]);
	if (abort_dir)
		rm_tree(abort_dir, NULL);
	signal(sig, SIG_DFL);
	raise(sig);
}

void fake_root_abort_cleanup(const char *dir)
{
	free(abort_dir);
	abort_dir = dir ? xstrdup(dir) : NULL;
	struct sigaction sa = { .sa_handler = abort_handler };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGABRT, &sa, NULL);
}

int fake_root_boot(const char *dir, const char *sum, struct fake_root **out, char **err)
{
	const char *why = fake_root_support();
	if (why) {
		*err = xstrdup(why);
		return -1;
	}
	if (mkdir(dir, 0755) < 0) {
		*err = xasprintf("fake guest: mkdir '%s': %s", dir, strerror(errno));
		return -1;
	}
	if (sum && access(sum, X_OK) < 0) {
		*err = xasprintf("fake guest: cannot use ferry-sum '%s': %s", sum, strerror(errno));
		return -1;
	}
	if (applets_ready(err) < 0 || root_make(dir, sum, err) < 0) {
		rm_tree(dir, NULL);
		return -1;
	}
	static const char *const sub[] = { "usr/bin/busybox", "proc", "dev", "tmp", "run", "bin" };
	char *paths[ELEMENTSOF(sub)];
	for (size_t i = 0; i < ELEMENTSOF(sub); i++)
		paths[i] = xasprintf("%s/%s", dir, sub[i]);
	char *src[N_HOST_BINDS], *dst[N_HOST_BINDS];
	host_binds(dir, sum, src, dst);
	int hold[2] = { -1, -1 }, st[2] = { -1, -1 };
	pid_t pid = -1;
	/* a request is one message, as long as the command line (fake-init.c's MAX_MSG) */
	int sndbuf = (4 << 20) + (64 << 10);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, hold) == 0 &&
	    setsockopt(hold[1], SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) == 0 &&
	    pipe2(st, O_CLOEXEC) == 0)
		pid = fork();
	if (pid == 0)
		holder_main(dir, paths, src, dst, hold[0], st[1]);
	int e = errno, child_errno = 0;
	for (size_t i = 0; i < ELEMENTSOF(sub); i++)
		free(paths[i]);
	for (size_t i = 0; i < N_HOST_BINDS; i++) {
		free(src[i]);
		free(dst[i]);
	}
	if (hold[0] >= 0)
		close(hold[0]);
	if (st[1] >= 0)
		close(st[1]);
	ssize_t n = pid > 0 && st[0] >= 0 ? read(st[0], &child_errno, sizeof(child_errno)) : -1;
	if (st[0] >= 0)
		close(st[0]);
	if (pid < 0 || n != 0) {
		if (pid > 0)
			waitpid(pid, NULL, 0);
		if (hold[1] >= 0)
			close(hold[1]);
		rm_tree(dir, NULL);
		*err = xasprintf("fake guest: cannot start its namespace: %s",
				 strerror(n > 0 ? child_errno : e));
		return -1;
	}
	struct fake_root *r = xcalloc(1, sizeof(*r));
	r->dir = xstrdup(dir);
	r->holder = pid;
	r->ctl = hold[1];
	r->proc_root = xasprintf("/proc/%d/root", (int)pid);
	_cleanup_free_ char *ns = xasprintf("/proc/%d/ns/mnt", (int)pid);
	struct stat sb;
	r->ns_fd = open(ns, O_RDONLY | O_CLOEXEC);
	if (r->ns_fd < 0 || fstat(r->ns_fd, &sb) < 0) {
		*err = xasprintf("fake guest: %s: %s", ns, strerror(errno));
		fake_root_destroy(r);
		return -1;
	}
	r->ns_ino = sb.st_ino;
	r->boot_mounts = fake_root_mounts(r);
	live_add(r);
	*out = r;
	return 0;
}

int fake_root_mounts(const struct fake_root *r)
{
	_cleanup_free_ char *path = xasprintf("/proc/%d/mounts", (int)r->holder);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	int n = 0;
	while (getline(&text, &len, f) > 0)
		n++;
	fclose(f);
	return n - r->boot_mounts;
}

int fake_root_mounted(const struct fake_root *r, const char *mnt, char **err)
{
	_cleanup_free_ char *path = xasprintf("/proc/%d/mounts", (int)r->holder);
	FILE *f = fopen(path, "re");
	if (!f) {
		*err = xasprintf("fake guest: %s: %s", path, strerror(errno));
		return -1;
	}
	_cleanup_free_ char *line = NULL;
	size_t cap = 0, n = strlen(mnt);
	int found = 0;
	while (!found && getline(&line, &cap, f) > 0) {
		const char *sp = strchr(line, ' ');
		found = sp && strncmp(sp + 1, mnt, n) == 0 && sp[1 + n] == ' ';
	}
	fclose(f);
	return found;
}

/* visit(ud, &path, sb) for every entry under dirfd (guest path `guest`), depth first, going
 * into every directory but prune (NULL: none); visit may take the path (TAKE_PTR). */
static void walk_under(int dirfd, const char *guest, const char *prune, unsigned depth,
		       void (*visit)(void *ud, char **path, const struct stat *sb), void *ud)
{
	DIR *d = depth < 64 ? fdopendir(dirfd) : NULL;
	if (!d) {
		close(dirfd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		_cleanup_free_ char *p = xasprintf("%s/%s", guest, e->d_name);
		struct stat sb;
		if (fstatat(dirfd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		bool dir = S_ISDIR(sb.st_mode);
		if (dir && (!prune || strcmp(p, prune) != 0)) {
			int sub = openat(dirfd, e->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				walk_under(sub, p, prune, depth + 1, visit, ud);
		}
		visit(ud, &p, &sb);
	}
	closedir(d);
}

/* fake_root_files()'s visit: "PATH," appended for an entry that is not a directory */
static void list_file(void *ud, char **path, const struct stat *sb)
{
	char **list = ud;
	if (S_ISDIR(sb->st_mode))
		return;
	char *more = xasprintf("%s%s,", *list ? *list : "", *path);
	free(*list);
	*list = more;
}

/* The walk under the guest directory dir, when the host can open it. */
static void walk_guest(const struct fake_root *r, const char *dir, const char *prune,
		       void (*visit)(void *ud, char **path, const struct stat *sb), void *ud)
{
	_cleanup_free_ char *host = fake_host_path(r, dir);
	int fd = open(host, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		walk_under(fd, dir, prune, 0, visit, ud);
}

char *fake_root_files(const struct fake_root *r, const char *const *dirs, const char *prune)
{
	char *list = NULL;
	for (size_t i = 0; dirs[i]; i++)
		walk_guest(r, dirs[i], prune, list_file, &list);
	return list ? list : xstrdup("");
}

/* fake_root_first_file()'s visit: the least regular file's path in byte order */
static void least_file(void *ud, char **path, const struct stat *sb)
{
	char **best = ud;
	if (S_ISREG(sb->st_mode) && (!*best || strcmp(*path, *best) < 0)) {
		free(*best);
		*best = TAKE_PTR(*path);
	}
}

char *fake_root_first_file(const struct fake_root *r, const char *dir)
{
	char *best = NULL;
	walk_guest(r, dir, NULL, least_file, &best);
	return best;
}

/* ---- hung programs ---- */

int fake_root_hang(struct fake_root *r, const char *prog, char **err)
{
	for (const char *c = prog; *c; c++)
		if (!ascii_alnum(*c) && *c != '_' && *c != '-') {
			*err = xasprintf("fake guest: '%s' is no program name", prog);
			return -1;
		}
	_cleanup_free_ char *prof = xasprintf("%s" HANGS, r->dir);
	_cleanup_free_ char *fn = xasprintf("%s() { sleep 2147483647; }\n", prog);
	int fd = open(prof, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0 || write_all(fd, fn, strlen(fn)) < 0) {
		*err = xasprintf("fake guest: %s: %s", HANGS, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

void fake_root_destroy(struct fake_root *r)
{
	if (!r)
		return;
	live_remove(r);
	for (size_t i = 0; i < r->n_ports; i++) {
		fake_port_end(&r->ports[i]);
		free(r->ports[i].name);
		free(r->ports[i].fifo);
	}
	/* every process in the namespace, then the holder: the namespace and its mounts go */
	fake_procs_kill_all(r);
	while (r->n_disks) {
		_cleanup_free_ char *e = NULL;
		fake_disk_remove(r, r->n_disks - 1, &e);
	}
	if (r->ns_fd >= 0)
		close(r->ns_fd);
	close(r->ctl);
	waitpid(r->holder, NULL, 0);
	rm_tree(r->dir, NULL);
	root_free(r);
}
