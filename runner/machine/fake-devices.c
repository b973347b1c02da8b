/* SPDX-License-Identifier: MIT */
/*
 * The devices of a guest over a local directory (fake-guest.h): disks as loop devices with a
 * /sys/block/X/serial, shares bind-mounted into its namespace, channel ports as FIFOs fed from a
 * socket by a relay thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake-guest.h"
#include "fake-guest-int.h"
#include "fs.h"
#include "proc.h"
#include "util.h"

/* ---- disks ---- */

const char *fake_root_disk(const struct fake_root *r, const char *serial)
{
	for (size_t i = 0; i < r->n_disks; i++)
		if (STREQ(r->disks[i].serial, serial))
			return r->disks[i].name;
	return NULL;
}

unsigned fake_root_disks(const struct fake_root *r)
{
	return (unsigned)r->n_disks;
}

/*
 * A loop device over path, as `losetup --find --show [--read-only]` makes it, by its ioctls
 * (loop(4)): no process per disk. A device another process takes between LOOP_CTL_GET_FREE and
 * LOOP_CONFIGURE is skipped for the next free one. 0 with *dev ("/dev/loopN"), or -1 with *err.
 */
static int loop_attach(const char *path, bool ro, char **dev, char **err)
{
	_cleanup_close_ int file = open(path, (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	_cleanup_close_ int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (file < 0 || ctl < 0) {
		*err = xasprintf("loop device for '%s': %s", file < 0 ? path : "/dev/loop-control",
				 strerror(errno));
		return -1;
	}
	for (int attempt = 0; attempt < 16; attempt++) {
		int n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0)
			break;
		_cleanup_free_ char *name = xasprintf("/dev/loop%d", n);
		_cleanup_close_ int lfd = open(name, (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC);
		if (lfd < 0)
			break;
		struct loop_config cfg = { .fd = (uint32_t)file };
		cfg.info.lo_flags = ro ? LO_FLAGS_READ_ONLY : 0;
		if (ioctl(lfd, LOOP_CONFIGURE, &cfg) == 0) {
			*dev = TAKE_PTR(name);
			return 0;
		}
		if (errno != EBUSY)
			break;
	}
	*err = xasprintf("no loop device for '%s': %s", path, strerror(errno));
	return -1;
}

/* Detach a loop device, as `losetup -d`: a busy one (a guest's mount) goes at its last close. */
static int loop_detach(const char *dev, char **err)
{
	_cleanup_close_ int fd = open(dev, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, LOOP_CLR_FD, 0) < 0) {
		if (err)
			*err = xasprintf("detach '%s': %s", dev, strerror(errno));
		return -1;
	}
	return 0;
}

int fake_root_plug(struct fake_root *r, const char *path, const char *serial, bool ro, char **name,
		   char **err)
{
	if (fake_root_disk(r, serial)) {
		*err = xasprintf("a disk with serial '%s' is already plugged", serial);
		return -1;
	}
	if (r->n_disks == MAX_DISKS) {
		*err = xstrdup("the fake guest has no free disk slot");
		return -1;
	}
	_cleanup_free_ char *out = NULL;
	if (loop_attach(path, ro, &out, err) < 0)
		return -1;
	struct stat sb;
	if (stat(out, &sb) < 0 || !S_ISBLK(sb.st_mode)) {
		*err = xasprintf("loop device '%s' is not a block device", out);
		loop_detach(out, NULL);
		return -1;
	}
	/* vdb is the target's (fake-machine's first plug), then vdc, ... */
	_cleanup_free_ char *n = xasprintf("vd%c", 'b' + (int)(r->n_names++ % 25));
	_cleanup_free_ char *node = xasprintf("%s/dev/%s", r->proc_root, n);
	_cleanup_free_ char *sys = xasprintf("%s/sys/block/%s", r->dir, n);
	_cleanup_free_ char *ser = xasprintf("%s/serial", sys);
	_cleanup_free_ char *text = xasprintf("%s\n", serial);
	if (mknod(node, S_IFBLK | 0600, sb.st_rdev) < 0 || mkdir(sys, 0755) < 0 ||
	    write_file_atomic(ser, text, strlen(text), 0444, err) < 0) {
		if (!*err)
			*err = xasprintf("fake guest: cannot make '%s': %s", n, strerror(errno));
		unlink(node);
		rm_tree(sys, NULL);
		loop_detach(out, NULL);
		return -1;
	}
	struct fake_disk *d = &r->disks[r->n_disks++];
	d->serial = xstrdup(serial);
	d->name = xstrdup(n);
	d->loop = TAKE_PTR(out);
	if (name)
		*name = TAKE_PTR(n);
	return 0;
}

int fake_disk_remove(struct fake_root *r, size_t i, char **err)
{
	struct fake_disk *d = &r->disks[i];
	_cleanup_free_ char *node = fake_host_path(r, "/dev/");
	_cleanup_free_ char *full = xasprintf("%s%s", node, d->name);
	_cleanup_free_ char *sys = xasprintf("%s/sys/block/%s", r->dir, d->name);
	unlink(full);
	rm_tree(sys, NULL);
	int rc = loop_detach(d->loop, err);
	free(d->serial);
	free(d->name);
	free(d->loop);
	r->disks[i] = r->disks[--r->n_disks];
	return rc;
}

int fake_root_unplug(struct fake_root *r, const char *serial, char **err)
{
	for (size_t i = 0; i < r->n_disks; i++)
		if (STREQ(r->disks[i].serial, serial))
			return fake_disk_remove(r, i, err);
	*err = xasprintf("no disk with serial '%s' is plugged", serial);
	return -1;
}

/* ---- shares ---- */

int fake_root_share(struct fake_root *r, const char *tag, const char *host_dir, char **err)
{
	if (!*tag || strchr(tag, '/') || strchr(tag, '\'') || STREQ(tag, ".") || STREQ(tag, "..")) {
		*err = xasprintf("the fake guest cannot export a share tagged '%s'", tag);
		return -1;
	}
	_cleanup_free_ char *base = xasprintf("%s" FAKE_SHARES, r->dir);
	_cleanup_free_ char *at = xasprintf("%s/%s", base, tag);
	int st[2];
	if (pipe2(st, O_CLOEXEC) < 0) {
		*err = xasprintf("fake guest: pipe: %s", strerror(errno));
		return -1;
	}
	/* a child joins the namespace (this process may have threads: setns needs one) */
	pid_t pid = fork();
	if (pid == 0) {
		if (setns(r->ns_fd, CLONE_NEWNS) < 0 ||
		    (mkdir(base, 0755) < 0 && errno != EEXIST) || mkdir(at, 0755) < 0 ||
		    mount(host_dir, at, "none", MS_BIND | MS_REC, NULL) < 0) {
			int e = errno;
			(void)!write(st[1], &e, sizeof(e));
		}
		/* an exec, not _exit: a memory checker would count the parent's heap it inherited
		 * as this child's leak */
		char arg_true[] = "true";
		char *const argv[] = { arg_true, NULL };
		char *const envp[] = { NULL };
		execve(BUSYBOX, argv, envp);
		_exit(0);
	}
	int e = errno, child_errno = 0;
	close(st[1]);
	ssize_t n = pid > 0 ? read(st[0], &child_errno, sizeof(child_errno)) : -1;
	close(st[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	if (pid < 0 || n != 0) {
		*err = xasprintf("fake guest: cannot export '%s' as '%s': %s", host_dir, tag,
				 strerror(pid < 0 ? e : child_errno));
		return -1;
	}
	r->boot_mounts++; /* a share is there from boot on, as the machine's device */
	return 0;
}

/* ---- ports ---- */

/* Relay the socket to the FIFO: open it once a reader has, copy until the host's end-of-file,
 * close (the reader's end-of-file). Stops early when asked. */
static void *relay_main(void *arg)
{
	struct fake_port *p = arg;
	/* a reader killed mid-stream: EPIPE for this thread's write, not SIGPIPE for the process */
	sigset_t pipe_sig;
	sigemptyset(&pipe_sig);
	sigaddset(&pipe_sig, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_sig, NULL);
	int fifo = -1;
	while (!atomic_load(&p->stop) &&
	       (fifo = open(p->fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0 && errno == ENXIO)
		usleep(1000);
	if (fifo < 0)
		return NULL;
	fcntl(fifo, F_SETFL, 0);
	char buf[65536];
	while (!atomic_load(&p->stop)) {
		struct pollfd pfd = { .fd = p->sock, .events = POLLIN };
		if (poll(&pfd, 1, 20) <= 0)
			continue;
		ssize_t n = read(p->sock, buf, sizeof(buf));
		if (n <= 0)
			break;
		for (ssize_t off = 0; off < n && !atomic_load(&p->stop);) {
			struct pollfd w = { .fd = fifo, .events = POLLOUT };
			if (poll(&w, 1, 20) <= 0)
				continue;
			ssize_t k = write(fifo, buf + off, (size_t)(n - off));
			if (k < 0 && errno != EINTR && errno != EAGAIN)
				goto out;
			off += k > 0 ? k : 0;
		}
	}
out:
	close(fifo);
	return NULL;
}

void fake_port_end(struct fake_port *p)
{
	if (!p->running)
		return;
	atomic_store(&p->stop, true);
	pthread_join(p->thread, NULL);
	close(p->sock);
	p->sock = -1;
	p->running = false;
}

int fake_root_channel(struct fake_root *r, const char *name, int *fd, char **err)
{
	struct fake_port *p = NULL;
	for (size_t i = 0; i < r->n_ports; i++)
		if (STREQ(r->ports[i].name, name))
			p = &r->ports[i];
	if (!p) {
		if (r->n_ports == MAX_PORTS || strchr(name, '/')) {
			*err = xasprintf("the fake guest cannot have a port '%s'", name);
			return -1;
		}
		p = &r->ports[r->n_ports];
		_cleanup_free_ char *rel = xasprintf("/dev/virtio-ports/%s", name);
		p->fifo = fake_host_path(r, rel);
		if (mkfifo(p->fifo, 0600) < 0) {
			*err = xasprintf("fake guest: mkfifo %s: %s", rel, strerror(errno));
			free(p->fifo);
			p->fifo = NULL;
			return -1;
		}
		p->name = xstrdup(name);
		r->n_ports++;
	}
	fake_port_end(p);
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		*err = xasprintf("fake guest: socketpair: %s", strerror(errno));
		return -1;
	}
	p->sock = sv[1];
	atomic_store(&p->stop, false);
	int e = pthread_create(&p->thread, NULL, relay_main, p);
	if (e != 0) {
		close(sv[0]);
		close(sv[1]);
		*err = xasprintf("fake guest: thread: %s", strerror(e));
		return -1;
	}
	p->running = true;
	*fd = sv[0];
	return 0;
}
