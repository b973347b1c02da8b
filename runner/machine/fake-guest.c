/* SPDX-License-Identifier: MIT */
/*
 * A guest over a local directory (fake-guest.h). The holder is forked here (it makes the
 * namespace between fork and exec, with system calls only: the caller may have threads); guest
 * commands are spawned from a thread in the guest (spawn()), not through util/proc.c.
 */
#include "fake-guest.h"
#include "fake-guest-int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <poll.h>
#include <unistd.h>

#include "fs.h"
#include "proc.h"
#include "run.h"
#include "util.h"

#define PROFILE "/etc/ferry-fake.sh"
#define HANGS   "/etc/ferry-fake-hang.sh"
/* execve()'s vectors take char *: writable copies of the constants */
static char arg_sh[] = "sh", arg_c[] = "-c", arg_hold[] = "read x";
static char env_path[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin", env_home[] = "HOME=/root",
	    env_lc[] = "LC_ALL=C";

struct fake_proc {
	pid_t pid;
	int out, err; /* memory files */
	bool reaped;
	int status;
};

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
 * block method's timed dd), as the built-in guest carries them.
 * Each is bound read-only at its own path, with the host's /usr/lib and /usr/lib64 (their libraries
 * and the dynamic loader) read-only under /usr of the root and /lib, /lib64 linking there, as on a
 * merged-/usr Debian.
 */
static const char *const host_programs[] = { "/usr/sbin/dropbear", "/usr/bin/dropbearconvert",
					     "/usr/bin/dbclient",  "/usr/bin/scp",
					     "/usr/bin/rsync",     "/usr/bin/dd" };
static const char *const host_lib_dirs[] = { "/usr/lib", "/usr/lib64" };
/* and ferry-sum (the built-in guest's verify lister) at /usr/bin/ferry-sum, when given */
#define SUM_PATH     "/usr/bin/ferry-sum"
#define N_HOST_BINDS (ELEMENTSOF(host_programs) + ELEMENTSOF(host_lib_dirs) + 1)

/* What the holder binds: host path and root path pairs, NULL where the host lacks it. */
static void host_binds(const char *dir, const char *sum, char *src[N_HOST_BINDS],
		       char *dst[N_HOST_BINDS])
{
	size_t n = 0;
	src[n] = sum ? xstrdup(sum) : NULL;
	dst[n++] = sum ? xasprintf("%s" SUM_PATH, dir) : NULL;
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
	if (sum && root_file(sp, "", 0, 0755, err) < 0)
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
	static const char passwd[] = "root:x:0:0:root:/root:/bin/sh\n", group[] = "root:x:0:\n";
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

/* In the holder, between fork and exec: the namespace, its mounts, the chroot. */
static void holder_main(const char *dir, char *const paths[], char *const src[], char *const dst[],
			int hold, int status)
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
	if (mkdir("/dev/virtio-ports", 0755) < 0 || dup2(hold, 0) < 0)
		goto fail;
	close(hold);
	char *const argv[] = { arg_sh, arg_c, arg_hold, NULL };
	char *const envp[] = { env_path, NULL };
	execve("/bin/sh", argv, envp);
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
	if (pipe2(hold, O_CLOEXEC) == 0 && pipe2(st, O_CLOEXEC) == 0)
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
	r->hold_fd = hold[1];
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
	*out = r;
	return 0;
}

/* ---- processes ---- */

/*
 * A guest command is spawned, not forked: fork() copied the whole calling process (the test
 * program, or ferry) for every command only to throw the copy away at the exec. posix_spawn()
 * cannot join a namespace between its clone and the exec, so a short-lived thread joins the
 * guest first (its own root and cwd after unshare(CLONE_FS), then setns and chroot, which
 * affect that thread only) and spawns from there: the child inherits the thread's mount
 * namespace and root. A thread per command, not one per guest: a thread that has left the
 * process's root is no place for anything else of the process to run.
 */
struct spawn_req {
	const struct fake_root *r;
	char *const *argv;
	int in, out, err;
	pid_t pid;
	int error; /* errno, or 0 */
};

static void *spawn_main(void *arg)
{
	struct spawn_req *q = arg;
	if (unshare(CLONE_FS) < 0 || setns(q->r->ns_fd, CLONE_NEWNS) < 0 || chroot(q->r->dir) < 0 ||
	    chdir("/") < 0) {
		q->error = errno;
		return NULL;
	}
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, q->in, 0);
	posix_spawn_file_actions_adddup2(&fa, q->out, 1);
	posix_spawn_file_actions_adddup2(&fa, q->err, 2);
	/* no signal blocked, every signal at its default action (SIGPIPE too, which ferry
	 * ignores), in a process group of its own */
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
					    POSIX_SPAWN_SETPGROUP);
	char *const envp[] = { env_path, env_home, env_lc, NULL };
	q->error = posix_spawn(&q->pid, "/bin/sh", &fa, &attr, q->argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	return NULL;
}

/* Spawns `/bin/sh argv...` in the guest with in, out and err as its stdin, stdout and stderr:
 * the pid, or -1 with errno. */
static pid_t spawn(const struct fake_root *r, char *const *argv, int in, int out, int err)
{
	struct spawn_req q = { .r = r, .argv = argv, .in = in, .out = out, .err = err, .pid = -1 };
	pthread_t th;
	int e = pthread_create(&th, NULL, spawn_main, &q);
	if (e == 0)
		e = pthread_join(th, NULL);
	if (e == 0)
		e = q.error;
	if (e != 0) {
		errno = e;
		return -1;
	}
	return q.pid;
}

static int memfile(const char *name, char **err)
{
	int fd = memfd_create(name, MFD_CLOEXEC);
	if (fd < 0)
		*err = xasprintf("fake guest: memfd_create: %s", strerror(errno));
	return fd;
}

/* hangs: the command reads the hung programs too (fake_root_hang()); the fake machine's own
 * housekeeping (fake_root_run()) does not */
static int start(struct fake_root *r, const char *const *argv, const struct fake_input *input,
		 bool hangs, struct fake_proc **out, char **err)
{
	static const struct fake_input none = { .fd = -1 };
	const struct fake_input *inp = input ? input : &none;
	int in = -1, wr = -1;
	if (inp->pipe) {
		/* a socket, so that the writer can send without SIGPIPE (MSG_NOSIGNAL) */
		int p[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) < 0) {
			*err = xasprintf("fake guest: socketpair: %s", strerror(errno));
			return -1;
		}
		in = p[0];
		wr = p[1];
		shutdown(in, SHUT_WR);
	} else if (inp->fd >= 0) {
		if ((in = fcntl(inp->fd, F_DUPFD_CLOEXEC, 0)) < 0) {
			*err = xasprintf("fake guest: stdin: %s", strerror(errno));
			return -1;
		}
	} else if (inp->buf && inp->len) {
		if ((in = memfile("stdin", err)) < 0)
			return -1;
		if (write_all(in, inp->buf, inp->len) < 0 || lseek(in, 0, SEEK_SET) < 0) {
			*err = xasprintf("fake guest: stdin: %s", strerror(errno));
			close(in);
			return -1;
		}
	} else if ((in = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		*err = xasprintf("fake guest: /dev/null: %s", strerror(errno));
		return -1;
	}
	/* through the guest's shell, which reads the profile first (its functions stand in for
	 * what the fake has no kernel for, and make a program hang: fake_root_hang()):
	 * sh -c '. PROFILE; CMD' for a shell command, else sh -c '. PROFILE; "$0" "$@"' ARGV */
	size_t n = 0;
	while (argv[n])
		n++;
	bool shell =
	    n >= 3 && (STREQ(argv[0], "/bin/sh") || STREQ(argv[0], "sh")) && STREQ(argv[1], "-c");
	char **av = xcalloc(n + 4, sizeof(char *));
	av[0] = arg_sh;
	av[1] = arg_c;
	size_t k = 2, first = shell ? 3 : 0;
	const char *pre = hangs ? ". " PROFILE "; . " HANGS "; " : ". " PROFILE "; ";
	av[k++] = shell ? xasprintf("%s%s", pre, argv[2]) : xasprintf("%s\"$0\" \"$@\"", pre);
	for (size_t i = first; i < n; i++)
		av[k++] = xstrdup(argv[i]);
	struct fake_proc *p = xcalloc(1, sizeof(*p));
	p->out = memfile("stdout", err);
	p->err = p->out >= 0 ? memfile("stderr", err) : -1;
	/* the process is in the guest once this returns (it was born there), and a failure to
	 * enter it or to exec is this call's error */
	p->pid = p->err >= 0 ? spawn(r, av, in, p->out, p->err) : -1;
	int e = errno;
	for (size_t i = 2; i < k; i++)
		free(av[i]);
	free(av);
	close(in);
	if (p->pid < 0) {
		if (p->err >= 0 || p->out >= 0)
			*err =
			    xasprintf("fake guest: cannot start a guest command: %s", strerror(e));
		if (wr >= 0)
			close(wr);
		if (p->out >= 0)
			close(p->out);
		if (p->err >= 0)
			close(p->err);
		free(p);
		return -1;
	}
	/* also here, as the child does: a memory checker may run the spawn as a fork that
	 * returns before the child's exec, and a kill right after must reach the group */
	setpgid(p->pid, p->pid);
	if (inp->pipe)
		*inp->pipe = wr;
	*out = p;
	return 0;
}

int fake_root_start(struct fake_root *r, const char *const *argv, const struct fake_input *input,
		    struct fake_proc **out, char **err)
{
	return start(r, argv, input, true, out, err);
}

int fake_root_start_sh(struct fake_root *r, const char *cmd, const struct fake_input *input,
		       struct fake_proc **out, char **err)
{
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	return fake_root_start(r, argv, input, out, err);
}

static char *slurp(int fd, size_t *len)
{
	off_t n = lseek(fd, 0, SEEK_END);
	if (n < 0)
		n = 0;
	char *buf = xmalloc((size_t)n + 1);
	ssize_t got = pread(fd, buf, (size_t)n, 0);
	*len = got > 0 ? (size_t)got : 0;
	buf[*len] = '\0';
	return buf;
}

static void proc_free(struct fake_proc *p)
{
	close(p->out);
	close(p->err);
	free(p);
}

/* Whether a process of group pgid is still more than a zombie. A zombie has let go of its
 * files, mounts and namespace (the guest's checks no longer see it); what is left is its
 * parent's wait, which for the group's orphans is the host's init's, whenever that reaps. */
static bool group_alive(pid_t pgid)
{
	if (kill(-pgid, 0) < 0)
		return false;
	DIR *d = opendir("/proc");
	if (!d)
		return true;
	bool alive = false;
	struct dirent *e;
	while (!alive && (e = readdir(d))) {
		char *end, path[64], buf[512];
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		/* "PID (COMM) STATE PPID PGRP ...": COMM may hold spaces and parentheses */
		char state;
		long ppid, pgrp;
		const char *rp = strrchr(buf, ')');
		if (rp && sscanf(rp + 1, " %c %ld %ld", &state, &ppid, &pgrp) == 3 &&
		    pgrp == (long)pgid && state != 'Z' && state != 'X')
			alive = true;
	}
	closedir(d);
	return alive;
}

/* Wait (a little) until the killed group pgid has no process left but zombies: polling
 * kill(-pgid, 0) alone waited for the host's init to reap the orphans, 2000 naps of 0.1 ms
 * after every hung command. */
static void group_gone(pid_t pgid)
{
	for (int i = 0; i < 2000 && group_alive(pgid); i++)
		usleep(100);
}

bool fake_proc_done(struct fake_proc *p)
{
	if (p->reaped)
		return true;
	/* ended: what it left running in its group (a `cmd &` it did not wait for) ends with it,
	 * killed before the leader is reaped, while its pid still names the group */
	siginfo_t si = { 0 };
	if (waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
		return false;
	kill(-p->pid, SIGKILL);
	p->reaped = waitpid(p->pid, &p->status, 0) == p->pid;
	group_gone(p->pid);
	return true;
}

void fake_proc_kill(struct fake_root *r, struct fake_proc *p)
{
	(void)r;
	kill(-p->pid, SIGKILL);
	if (!p->reaped)
		waitpid(p->pid, &p->status, 0);
	group_gone(p->pid);
	proc_free(p);
}

int fake_proc_wait(struct fake_root *r, struct fake_proc *p, unsigned timeout_ms,
		   struct fake_result *res, char **err)
{
	(void)err;
	memset(res, 0, sizeof(*res));
	uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000u;
	unsigned nap = 1;
	while (!fake_proc_done(p)) {
		if (run_interrupted() || now_ns() >= end) {
			fake_proc_kill(r, p);
			return run_interrupted() ? 2 : 1;
		}
		run_sleep_ms(nap);
		if (nap < 16)
			nap *= 2;
	}
	res->status = WIFEXITED(p->status) ? WEXITSTATUS(p->status) : -1;
	res->signal = WIFSIGNALED(p->status) ? WTERMSIG(p->status) : 0;
	res->out = slurp(p->out, &res->out_len);
	res->err = slurp(p->err, &res->err_len);
	proc_free(p);
	return 0;
}

void fake_result_clear(struct fake_result *res)
{
	free(res->out);
	free(res->err);
	memset(res, 0, sizeof(*res));
}

int fake_root_run(struct fake_root *r, const char *cmd, const void *input, size_t len,
		  unsigned timeout_ms, struct fake_result *res, char **err)
{
	struct fake_input in = { .buf = input, .len = len, .fd = -1 };
	struct fake_proc *p = NULL;
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	if (start(r, argv, &in, false, &p, err) < 0)
		return -1;
	return fake_proc_wait(r, p, timeout_ms, res, err);
}

/* Calls fn(pid, ud) for every process in the guest's namespace but the holder. */
static int each_proc(const struct fake_root *r, void (*fn)(pid_t pid, void *ud), void *ud)
{
	DIR *d = opendir("/proc");
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || pid == r->holder)
			continue;
		char path[64];
		struct stat sb;
		snprintf(path, sizeof(path), "/proc/%ld/ns/mnt", pid);
		if (stat(path, &sb) < 0 || sb.st_ino != r->ns_ino)
			continue;
		n++;
		if (fn)
			fn((pid_t)pid, ud);
	}
	closedir(d);
	return n;
}

int fake_root_procs(const struct fake_root *r)
{
	return each_proc(r, NULL, NULL);
}

static void kill_one(pid_t pid, void *ud)
{
	(void)ud;
	kill(pid, SIGKILL);
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

/* Appends "GUEST_PATH," for every entry under dirfd that is not a directory, depth first. */
static void files_under(int dirfd, const char *guest, const char *prune, char **list,
			unsigned depth)
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
		if (!S_ISDIR(sb.st_mode)) {
			char *more = xasprintf("%s%s,", *list ? *list : "", p);
			free(*list);
			*list = more;
		} else if (!prune || strcmp(p, prune) != 0) {
			int sub = openat(dirfd, e->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				files_under(sub, p, prune, list, depth + 1);
		}
	}
	closedir(d);
}

char *fake_root_files(const struct fake_root *r, const char *const *dirs, const char *prune)
{
	char *list = NULL;
	for (size_t i = 0; dirs[i]; i++) {
		_cleanup_free_ char *host = fake_host_path(r, dirs[i]);
		int fd = open(host, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			files_under(fd, dirs[i], prune, &list, 0);
	}
	return list ? list : xstrdup("");
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
	for (size_t i = 0; i < r->n_ports; i++) {
		fake_port_end(&r->ports[i]);
		free(r->ports[i].name);
		free(r->ports[i].fifo);
	}
	/* every process in the namespace, then the holder: the namespace and its mounts go */
	for (int round = 0; round < 50 && each_proc(r, kill_one, NULL) > 0; round++)
		usleep(2000);
	while (r->n_disks) {
		_cleanup_free_ char *e = NULL;
		fake_disk_remove(r, r->n_disks - 1, &e);
	}
	if (r->ns_fd >= 0)
		close(r->ns_fd);
	close(r->hold_fd);
	waitpid(r->holder, NULL, 0);
	rm_tree(r->dir, NULL);
	root_free(r);
}
