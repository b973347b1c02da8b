/* SPDX-License-Identifier: MIT */
/*
 * The fake machine's guests over a local directory (machine_fake.guests): their boot, reset and
 * end, and the guest operations methods use (machine.h), on a fake_root (fake-guest.h).
 *
 * What stands in for what: a guest command runs in the root's namespace (stdin, stdout, stderr
 * and the timeout as the agent's); a guest file is opened in the guest's root from the host, as
 * the agent opens it (no process); a plugged disk is a loop device of its raw image; a port is
 * a FIFO fed from a unix socket; the guest shares the host's network (its private address is
 * 127.0.0.1, where it also reaches the host), so a port the guest listens on is one on the
 * host's loopback; a share is a bind mount. The target disk is a raw ext4 image on a loop device
 * whatever the plan's format, bus or cache (the fake measures nothing), or a tmpfs. So every guest
 * is as on a private network (nic backend private, which the fake takes for vm2vm, network and smb
 * served_by guest cells): its address and the host's are the loopback, the host's sockets reach it
 * directly (no forwarded port, whatever the backend), and a program the machine runs "in the
 * private network" (net_run, net_spawn: smbclient) runs on the host's. An SMB share the guest would
 * mount (smb served_by host) needs a cifs client, which the fake has not: those cells are
 * skipped with the reason.
 */
#include "fake-int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"
#include "proc.h"
#include "run.h"
#include "util.h"
#include "methods/disk-image.h"
#include "methods/method.h"
#include "methods/share.h"

/* What a housekeeping command (mount, empty) may take. */
#define HOUSEKEEPING_MS 30000u
#define EMPTY_CMD       "rm -rf " MACHINE_LANDING " && mkdir -p " MACHINE_LANDING

static struct fake_guest *fg(struct machine_guest *g)
{
	return (struct fake_guest *)g;
}

/* ---- commands ---- */

static int exec_wait(struct fake_guest *g, struct fake_proc *p, const char *what,
		     unsigned timeout_ms, struct fake_result *res, struct machine_err *e)
{
	_cleanup_free_ char *err = NULL;
	int rc = fake_proc_wait(g->root, p, timeout_ms, res, &err);
	if (rc == 1)
		return machine_err_set(e, MACHINE_ERR_TIMEOUT,
				       "'%s' in the guest did not finish within %u ms", what,
				       timeout_ms);
	if (rc == 2)
		return machine_err_set(e, MACHINE_ERR_INTERRUPTED, "'%s' in the guest: interrupted",
				       what);
	if (rc < 0)
		return machine_err_set(e, MACHINE_ERR_FAILED, "%s", err);
	return 0;
}

static int fake_exec(struct machine *m, struct machine_guest *mg, const char *const *argv,
		     const void *input, size_t input_len, unsigned timeout_ms,
		     struct machine_exec_result *r, struct machine_err *e)
{
	(void)m;
	struct fake_guest *g = fg(mg);
	struct fake_input in = { .buf = input, .len = input_len, .fd = -1 };
	struct fake_proc *p = NULL;
	_cleanup_free_ char *err = NULL;
	if (fake_root_start(g->root, argv, &in, &p, &err) < 0)
		return machine_err_set(e, MACHINE_ERR_FAILED, "%s", err);
	struct fake_result res;
	if (exec_wait(g, p, argv[0], timeout_ms, &res, e) < 0)
		return -1;
	*r = (struct machine_exec_result){ res.status,  res.signal, res.out,
					   res.out_len, res.err,    res.err_len };
	return 0;
}

static struct fake_handle *handle_new(struct fake_guest *g)
{
	g->handles = xrealloc(g->handles, (g->n_handles + 1) * sizeof(*g->handles));
	struct fake_handle *h = &g->handles[g->n_handles++];
	*h = (struct fake_handle){ .id = ++g->next_handle, .in = -1 };
	return h;
}

static struct fake_handle *handle_find(struct fake_guest *g, int64_t id)
{
	for (size_t i = 0; i < g->n_handles; i++)
		if (g->handles[i].id == id)
			return &g->handles[i];
	return NULL;
}

static void handle_drop(struct fake_guest *g, struct fake_handle *h)
{
	if (h->proc)
		fake_proc_kill(g->root, h->proc);
	if (h->in >= 0)
		close(h->in);
	free(h->path);
	free(h->data);
	*h = g->handles[--g->n_handles];
}

static int fake_spawn(struct machine *m, struct machine_guest *mg, const char *const *argv,
		      int64_t *pid, struct machine_err *e)
{
	(void)m;
	struct fake_guest *g = fg(mg);
	struct fake_proc *p = NULL;
	_cleanup_free_ char *err = NULL;
	if (fake_root_start(g->root, argv, NULL, &p, &err) < 0)
		return machine_err_set(e, MACHINE_ERR_FAILED, "%s", err);
	struct fake_handle *h = handle_new(g);
	h->proc = p;
	*pid = h->id;
	return 0;
}

static int fake_proc_status(struct machine *m, struct machine_guest *mg, int64_t pid,
			    struct machine_proc_status *st, struct machine_err *e)
{
	(void)m;
	struct fake_guest *g = fg(mg);
	struct fake_handle *h = handle_find(g, pid);
	if (!h || !h->proc || h->path)
		return machine_err_set(e, MACHINE_ERR_FAILED, "no guest process %" PRId64, pid);
	if (!fake_proc_done(h->proc))
		return 0;
	struct fake_result res;
	_cleanup_free_ char *err = NULL;
	int rc = fake_proc_wait(g->root, h->proc, 0, &res, &err);
	h->proc = NULL;
	handle_drop(g, h);
	if (rc != 0)
		return machine_err_set(e, MACHINE_ERR_FAILED, "guest process %" PRId64 ": %s", pid,
				       err ? err : "lost");
	*st = (struct machine_proc_status){ .exited = true,
					    .exit_code = res.status,
					    .signal = res.signal,
					    .out = res.out,
					    .err = res.err };
	return 0;
}

static void fake_proc_kill_op(struct machine *m, struct machine_guest *mg, int64_t pid)
{
	(void)m;
	struct fake_guest *g = fg(mg);
	struct fake_handle *h = handle_find(g, pid);
	if (h && !h->path)
		handle_drop(g, h);
}

/* ---- files: opened in the guest's root from the host ---- */

/* The most a guest file read by the fake may hold: what the methods read are small files, and
 * a device without an end (/dev/zero) must not fill the host's memory. */
#define READ_MAX (64u << 20)

static int fake_file_open(struct machine *m, struct machine_guest *mg, const char *path,
			  const char *mode, int64_t *handle, struct machine_err *e)
{
	(void)m;
	struct fake_guest *g = fg(mg);
	int flags = STREQ(mode, "r")   ? O_RDONLY
		    : STREQ(mode, "w") ? O_WRONLY | O_CREAT | O_TRUNC
		    : STREQ(mode, "a") ? O_WRONLY | O_CREAT | O_APPEND
				       : -1;
	if (flags < 0)
		return machine_err_set(e, MACHINE_ERR_FAILED,
				       "the fake guest opens files with r, w or a, not '%s'", mode);
	_cleanup_close_ int fd = fake_root_open(g->root, path, flags);
	if (fd < 0)
		return machine_err_set(e, MACHINE_ERR_FAILED, "cannot open '%s' in the guest: %s",
				       path, strerror(errno));
	char *data = NULL;
	size_t len = 0;
	if (flags == O_RDONLY && !(data = fd_read_all(fd, READ_MAX, &len)))
		return machine_err_set(e, MACHINE_ERR_FAILED, "cannot read '%s' in the guest: %s",
				       path, strerror(errno));
	struct fake_handle *h = handle_new(g);
	h->path = xstrdup(path);
	h->data = data;
	h->len = len;
	if (flags != O_RDONLY) {
		h->in = fd;
		fd = -1;
	}
	*handle = h->id;
	return 0;
}

static int fake_file_write(struct machine *m, struct machine_guest *mg, int64_t handle,
			   const void *buf, size_t len, size_t chunk, struct machine_err *e)
{
	(void)m;
	(void)chunk; /* no round trips to count: one stream */
	struct fake_handle *h = handle_find(fg(mg), handle);
	if (!h || h->in < 0)
		return machine_err_set(e, MACHINE_ERR_FAILED, "no guest file %" PRId64 " to write",
				       handle);
	if (write_all(h->in, buf, len) < 0)
		return machine_err_set(e, MACHINE_ERR_FAILED, "cannot write '%s' in the guest: %s",
				       h->path, strerror(errno));
	return 0;
}

static int fake_file_read(struct machine *m, struct machine_guest *mg, int64_t handle, void *buf,
			  size_t max, size_t *n, bool *eof, struct machine_err *e)
{
	(void)m;
	struct fake_handle *h = handle_find(fg(mg), handle);
	if (!h || !h->path || h->in >= 0)
		return machine_err_set(e, MACHINE_ERR_FAILED, "no guest file %" PRId64 " to read",
				       handle);
	*n = h->len - h->off < max ? h->len - h->off : max;
	if (*n)
		memcpy(buf, h->data + h->off, *n);
	h->off += *n;
	*eof = h->off == h->len;
	return 0;
}

static int fake_file_close(struct machine *m, struct machine_guest *mg, int64_t handle,
			   struct machine_err *e)
{
	(void)m;
	struct fake_guest *g = fg(mg);
	struct fake_handle *h = handle_find(g, handle);
	if (!h || !h->path)
		return machine_err_set(e, MACHINE_ERR_FAILED, "no guest file %" PRId64 " to close",
				       handle);
	int rc = 0;
	if (h->in >= 0 && close(h->in) < 0)
		rc = machine_err_set(e, MACHINE_ERR_FAILED, "cannot write '%s' in the guest: %s",
				     h->path, strerror(errno));
	h->in = -1;
	handle_drop(g, h);
	return rc;
}

static int fake_push_file(struct machine *m, struct machine_guest *mg, const char *host_path,
			  const char *guest_path, size_t chunk, uint64_t *bytes,
			  struct machine_err *e)
{
	(void)m;
	(void)chunk;
	struct fake_guest *g = fg(mg);
	_cleanup_close_ int fd = open(host_path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return machine_err_set(e, MACHINE_ERR_FAILED, "cannot open '%s': %s", host_path,
				       strerror(errno));
	_cleanup_close_ int out = fake_root_open(g->root, guest_path, O_WRONLY | O_CREAT | O_TRUNC);
	if (out < 0)
		return machine_err_set(e, MACHINE_ERR_FAILED, "cannot open '%s' in the guest: %s",
				       guest_path, strerror(errno));
	uint64_t n = 0;
	int rc = fd_copy_all(fd, out, &n);
	if (close(out) < 0)
		rc = -1;
	out = -1;
	if (rc < 0)
		return machine_err_set(e, MACHINE_ERR_FAILED, "cannot write '%s' in the guest: %s",
				       guest_path, strerror(errno));
	if (bytes)
		*bytes = n;
	return 0;
}

static int fake_read_file(struct machine *m, struct machine_guest *mg, const char *path, size_t max,
			  char **buf, size_t *len, struct machine_err *e)
{
	int64_t h;
	if (fake_file_open(m, mg, path, "r", &h, e) < 0)
		return -1;
	struct fake_handle *fh = handle_find(fg(mg), h);
	int rc = 0;
	if (fh->len > max)
		rc = machine_err_set(e, MACHINE_ERR_FAILED,
				     "'%s' in the guest is larger than %zu bytes", path, max);
	else {
		*buf = TAKE_PTR(fh->data);
		*len = fh->len;
	}
	handle_drop(fg(mg), fh);
	return rc;
}

/* ---- disks, ports, network ---- */

static int fake_disk_attach(struct machine *m, struct machine_guest *mg,
			    const struct disk_config *d, unsigned timeout_ms, char **dev,
			    struct machine_err *e)
{
	(void)m;
	(void)timeout_ms;
	if (d->kind != DISK_KIND_IMAGE || d->format != DISK_FORMAT_RAW || !d->path || !d->serial)
		return machine_err_set(e, MACHINE_ERR_FAILED,
				       "the fake machine plugs raw images with a serial only");
	_cleanup_free_ char *err = NULL;
	if (fake_root_plug(fg(mg)->root, d->path, d->serial, d->readonly, dev, &err) < 0)
		return machine_err_set(e, MACHINE_ERR_FAILED, "%s", err);
	return 0;
}

static int fake_disk_plug(struct machine *m, struct machine_guest *mg, const struct disk_config *d,
			  unsigned timeout_ms, struct machine_err *e)
{
	return fake_disk_attach(m, mg, d, timeout_ms, NULL, e);
}

/* The serial in the guest's /sys/block/NAME/serial, as a virtio disk's. */
static char *fake_disk_wait_command(struct machine *m, const char *serial, unsigned timeout_ms)
{
	(void)m;
	return xasprintf("d=; i=0; while :; do for b in /sys/block/*; do s=; "
			 "[ -r \"$b/serial\" ] && read -r s < \"$b/serial\"; "
			 "if [ \"$s\" = '%s' ]; then d=${b##*/}; break; fi; done; "
			 "[ -z \"$d\" ] || break; i=$((i+1)); if [ $i -gt %u ]; then "
			 "echo \"the guest did not see disk '%s' within %u ms\" >&2; exit 1; fi; "
			 "usleep 5000; done; ",
			 serial, timeout_ms / 5 + 1, serial, timeout_ms);
}

static int fake_disk_unplug(struct machine *m, struct machine_guest *mg, const char *serial,
			    unsigned timeout_ms, struct machine_err *e)
{
	(void)m;
	(void)timeout_ms;
	_cleanup_free_ char *err = NULL;
	if (fake_root_unplug(fg(mg)->root, serial, &err) < 0)
		return machine_err_set(e, MACHINE_ERR_FAILED, "%s", err);
	return 0;
}

static int fake_channel_open(struct machine *m, struct machine_guest *mg, const char *name, int *fd,
			     struct machine_err *e)
{
	(void)m;
	_cleanup_free_ char *err = NULL;
	if (fake_root_channel(fg(mg)->root, name, fd, &err) < 0)
		return machine_err_set(e, MACHINE_ERR_FAILED, "%s", err);
	return 0;
}

/* The guest is on the host's network: its "private" address is the loopback. */
static const char *fake_net_guest_addr(struct machine *m, struct machine_guest *g)
{
	(void)m;
	(void)g;
	return "127.0.0.1";
}

static int fake_net_socket(struct machine *m, int domain, int type, int *fd, const char **host_addr,
			   struct machine_err *e)
{
	(void)m;
	int s = socket(domain, type, 0);
	if (s < 0)
		return machine_err_set(e, MACHINE_ERR_FAILED, "socket: %s", strerror(errno));
	*fd = s;
	*host_addr = "127.0.0.1";
	return 0;
}

/* The host's addresses on the guests' network: the loopback's 127.0.0.1, .2, ... (all the
 * host's own: every one reaches the guests, which share the host's network). */
static int fake_net_host_addr(struct machine *m, unsigned index, char **addr, struct machine_err *e)
{
	(void)m;
	if (index > 252)
		return machine_err_set(e, MACHINE_ERR_FAILED,
				       "the fake machine has no host address %u", index);
	*addr = xasprintf("127.0.0.%u", index + 1);
	return 0;
}

/* A program on the host's network, which the fake's guests share: run where the caller runs. */
static int fake_net_run(struct machine *m, const char *const *argv, char **out,
			struct machine_err *e)
{
	(void)m;
	_cleanup_free_ char *err = NULL;
	if (proc_run(argv, out, &err) < 0)
		return machine_err_set(e, MACHINE_ERR_FAILED, "%s", err);
	return 0;
}

static int fake_net_spawn(struct machine *m, const char *const *argv, const struct proc_opts *o,
			  struct proc_result *r, struct machine_err *e)
{
	(void)m;
	_cleanup_free_ char *err = NULL;
	*r = (struct proc_result){ 0 };
	if (proc_spawn(argv, o, r, &err) < 0)
		return machine_err_set(e, MACHINE_ERR_FAILED, "%s", err);
	return 0;
}

static const char *fake_no_vhost(struct machine *m, struct machine_guest *g)
{
	(void)m;
	(void)g;
	return "the fake machine's guest has no network card";
}

const struct machine_guest_ops fake_guest_ops = {
	.exec = fake_exec,
	.spawn = fake_spawn,
	.proc_status = fake_proc_status,
	.proc_kill = fake_proc_kill_op,
	.file_open = fake_file_open,
	.file_write = fake_file_write,
	.file_read = fake_file_read,
	.file_close = fake_file_close,
	.push_file = fake_push_file,
	.read_file = fake_read_file,
	.disk_plug = fake_disk_plug,
	.disk_attach = fake_disk_attach,
	.disk_wait_command = fake_disk_wait_command,
	.disk_unplug = fake_disk_unplug,
	.channel_open = fake_channel_open,
	.net_guest_addr = fake_net_guest_addr,
	.net_socket = fake_net_socket,
	.net_host_addr = fake_net_host_addr,
	.net_run = fake_net_run,
	.net_spawn = fake_net_spawn,
	.nic_no_vhost_reason = fake_no_vhost,
};

/* ---- boot, reset, end ---- */

/* A guest shell command that must succeed. */
static int guest_sh(struct fake_guest *g, const char *cmd, char **out, char **err)
{
	struct fake_result res;
	int rc = fake_root_run(g->root, cmd, NULL, 0, HOUSEKEEPING_MS, &res, err);
	if (rc > 0)
		*err = xasprintf("fake guest %u: '%s' did not finish", g->number, cmd);
	if (rc != 0)
		return -1;
	if (res.status != 0) {
		*err = xasprintf("fake guest %u: '%s' exited with status %d: %s", g->number, cmd,
				 res.status, res.err);
		fake_result_clear(&res);
		return -1;
	}
	if (out)
		*out = TAKE_PTR(res.out);
	fake_result_clear(&res);
	return 0;
}

/* A new empty ext4 image of `size` bytes at path, mke2fs'd. */
static int ext4_image(const char *path, uint64_t size, char **err)
{
	unlink(path);
	_cleanup_close_ int fd = file_create_new(path, 0644, err);
	if (fd < 0 || ftruncate(fd, (off_t)size) < 0) {
		if (fd >= 0)
			*err = xasprintf("fake target '%s': %s", path, strerror(errno));
		return -1;
	}
	const char *mk[] = { "mke2fs", "-q", "-F", "-t", "ext4", "-m", "0", path, NULL };
	return proc_run(mk, NULL, err);
}

/* A new empty ext4 target image at path: a copy of the size's template in `templates` (made
 * there at the first need), or its own mke2fs without templates. */
static int target_image(const char *templates, const char *path, uint64_t size, char **err)
{
	if (!templates)
		return ext4_image(path, size, err);
	_cleanup_free_ char *tpl = xasprintf("%s/empty-%" PRIu64 ".ext4", templates, size);
	if (access(tpl, F_OK) != 0) {
		_cleanup_free_ char *tmp = xasprintf("%s.new", tpl);
		if (ext4_image(tmp, size, err) < 0) {
			unlink(tmp);
			return -1;
		}
		if (rename(tmp, tpl) < 0) {
			*err = xasprintf("fake target template '%s': %s", tpl, strerror(errno));
			unlink(tmp);
			return -1;
		}
	}
	_cleanup_close_ int in = open(tpl, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	unlink(path);
	_cleanup_close_ int out = in < 0 ? -1 : file_create_new(path, 0644, NULL);
	if (out < 0 || ftruncate(out, (off_t)size) < 0 ||
	    fd_copy_sparse(in, out, (off_t)size) < 0) {
		*err = xasprintf("fake target '%s' from '%s': %s", path, tpl, strerror(errno));
		return -1;
	}
	return 0;
}

/* A new ext4 target image of d plugged as the target and mounted on the landing place. */
static int target_new(struct fake_machine *fm, struct fake_guest *g, const struct plan_disk *d,
		      char **err)
{
	if (!g->target_path) {
		_cleanup_free_ char *name = xasprintf("target-%u.raw", g->number);
		g->target_path = run_path(fm->run, "fake", name);
	}
	if (target_image(fm->f->templates, g->target_path, d->size, err) < 0)
		return -1;
	g->target = (struct disk_config){ .kind = DISK_KIND_IMAGE,
					  .format = DISK_FORMAT_RAW,
					  .size = d->size,
					  .serial = MACHINE_TARGET_SERIAL,
					  .path = g->target_path };
	_cleanup_free_ char *dev = NULL;
	if (fake_root_plug(g->root, g->target_path, MACHINE_TARGET_SERIAL, false, &dev, err) < 0)
		return -1;
	free(g->target_dev);
	g->target_dev = xasprintf("/dev/%s", dev);
	_cleanup_free_ char *cmd =
	    xasprintf("mkdir -p " MACHINE_TARGET_MNT " && mount -t ext4 %s " MACHINE_TARGET_MNT
		      " && mkdir -p " MACHINE_LANDING,
		      g->target_dev);
	return guest_sh(g, cmd, NULL, err);
}

/* Unmount the target (the block method may have) and unplug and delete its image. */
static int target_end(struct fake_guest *g, char **err)
{
	int mounted = fake_root_mounted(g->root, MACHINE_TARGET_MNT, err);
	if (mounted < 0 || (mounted && guest_sh(g, "umount " MACHINE_TARGET_MNT, NULL, err) < 0))
		return -1;
	if (g->target_path) {
		if (fake_root_disk(g->root, MACHINE_TARGET_SERIAL) &&
		    fake_root_unplug(g->root, MACHINE_TARGET_SERIAL, err) < 0)
			return -1;
		unlink(g->target_path);
		free(g->target_path);
		g->target_path = NULL;
		free(g->target_dev);
		g->target_dev = NULL;
	}
	return 0;
}

static int target_mount(struct fake_machine *fm, struct fake_guest *g, const struct plan_disk *d,
			char **err)
{
	if (d && d->kind == PLAN_DISK_IMAGE)
		return target_new(fm, g, d, err);
	_cleanup_free_ char *cmd =
	    xasprintf("mkdir -p " MACHINE_TARGET_MNT " && mount -t tmpfs -o size=%" PRIu64
		      "k tmpfs " MACHINE_TARGET_MNT " && mkdir -p " MACHINE_LANDING,
		      (d ? d->size : 64u << 20) / 1024);
	return guest_sh(g, cmd, NULL, err);
}

int fake_real_boot(struct fake_machine *fm, struct fake_guest *g, const struct machine_config *c,
		   char **err)
{
	struct machine_fake *f = fm->f;
	_cleanup_free_ char *name = xasprintf("guest-%u", g->number);
	_cleanup_free_ char *dir = run_path(fm->run, "fake", name);
	if (fake_root_boot(dir, f->sum, &g->root, err) < 0)
		return -1;
	const struct method_boot_needs *n = c->needs;
	int rc = f->hang ? fake_root_hang(g->root, f->hang, err) : 0;
	if (rc == 0 && f->dd_report) {
		/* a script of the root's own, bound over the host's dd in its place (one mount
		 * for another: the guest's start state is unchanged), or at its path where the
		 * host has no dd to bind */
		_cleanup_free_ char *report = shell_quote(f->dd_report);
		_cleanup_free_ char *script =
		    xasprintf("#!/bin/sh\n/usr/bin/busybox dd \"$@\" 2>/dev/null || exit\nprintf "
			      "'%%s' %s >&2\n",
			      report);
		_cleanup_free_ char *q = shell_quote(script);
		_cleanup_free_ char *cmd = xasprintf(
		    "printf '%%s' %s >/etc/ferry-fake-dd && chmod 0755 /etc/ferry-fake-dd && "
		    "if umount /usr/bin/dd 2>/dev/null; then mount --bind /etc/ferry-fake-dd "
		    "/usr/bin/dd; else cp /etc/ferry-fake-dd /usr/bin/dd; fi",
		    q);
		rc = guest_sh(g, cmd, NULL, err);
	}
	if (rc == 0 && n && n->share_dir)
		rc = fake_root_share(g->root, n->share_tag, n->share_dir, err);
	for (size_t i = 0; rc == 0 && n && i < n->n_disks; i++) {
		struct machine_err e = { 0 };
		if (fake_disk_attach(&fm->base, &g->base, &n->disks[i], 0, NULL, &e) < 0) {
			*err = TAKE_PTR(e.msg);
			machine_err_clear(&e);
			rc = -1;
		}
	}
	if (rc == 0)
		rc = target_mount(fm, g, c->disk, err);
	if (rc < 0) {
		fake_root_destroy(g->root);
		g->root = NULL;
		if (g->target_path)
			unlink(g->target_path);
	}
	return rc;
}

int fake_real_reset(struct fake_machine *fm, struct fake_guest *g, const struct plan_disk *d,
		    bool fresh, char **err)
{
	fake_real_leftovers(fm, g);
	const struct plan_disk *cur = g->disk;
	bool image = cur && cur->kind == PLAN_DISK_IMAGE;
	/* a raw-written target (block) has no filesystem left: a fresh one, as a boot gives */
	int mounted = fake_root_mounted(g->root, MACHINE_TARGET_MNT, err);
	if (mounted < 0)
		return -1;
	bool is_mounted = mounted;
	if (d || (image && (fresh || !is_mounted))) {
		if (target_end(g, err) < 0)
			return -1;
		return target_mount(fm, g, d ? d : cur, err);
	}
	if (!g->base.dirty)
		return 0;
	return guest_sh(g, EMPTY_CMD, NULL, err);
}

void fake_real_leftovers(struct fake_machine *fm, struct fake_guest *g)
{
	if (!g->root)
		return;
	/* read from the host, as the guest's `find /tmp /run ! -type d` and /proc/mounts would
	 * show them; the landing place's own mount is the start state */
	static const char *const dirs[] = { "/tmp", "/run", NULL };
	_cleanup_free_ char *files = fake_root_files(g->root, dirs, FAKE_SHARES);
	int mounts = fake_root_mounts(g->root);
	_cleanup_free_ char *mnt_err = NULL;
	int target = fake_root_mounted(g->root, MACHINE_TARGET_MNT, &mnt_err);
	if (target > 0)
		mounts--;
	unsigned disks = fake_root_disks(g->root) - (g->target_path ? 1 : 0);
	fake_logf(fm->f, "left %u mounts=%d procs=%d disks=%u files=%s", g->number, mounts,
		  fake_root_procs(g->root), disks, files ? files : "?");
}

void fake_real_destroy(struct fake_machine *fm, struct fake_guest *g)
{
	fake_real_leftovers(fm, g);
	for (size_t i = g->n_handles; i-- > 0;)
		handle_drop(g, &g->handles[i]);
	free(g->handles);
	fake_root_destroy(g->root);
	g->root = NULL;
	if (g->target_path)
		unlink(g->target_path);
	free(g->target_path);
	free(g->target_dev);
}

/* Flip the first byte of the raw image at path, on the host (what a guest reading its device
 * with direct I/O reads next). */
/* fd's first byte complemented in place, synced: 0 or -1 with *err naming what. */
static int flip_fd(int fd, const char *what, char **err)
{
	unsigned char b;
	if (fd < 0 || pread(fd, &b, 1, 0) != 1) {
		*err = xasprintf("'%s': %s", what, fd < 0 ? strerror(errno) : "cannot read a byte");
		return -1;
	}
	b = (unsigned char)~b;
	if (pwrite(fd, &b, 1, 0) != 1 || fsync(fd) < 0) {
		*err = xasprintf("'%s': %s", what, strerror(errno));
		return -1;
	}
	return 0;
}

void fake_real_corrupt(struct fake_machine *fm, struct fake_guest *g, const char *path)
{
	_cleanup_free_ char *full = NULL, *err = NULL;
	size_t len = strlen(path);
	if (STREQ(path, "*") || (path[0] == '/' && len > 2 && STREQ(path + len - 2, "/*"))) {
		/* the first regular file below the landing place (or below the folder an absolute
		 * path ending in "*" names), in name order */
		_cleanup_free_ char *dir =
		    STREQ(path, "*") ? xstrdup(MACHINE_LANDING) : xstrndup(path, len - 2);
		if (!(full = fake_root_first_file(g->root, dir))) {
			fake_logf(fm->f, "corrupt %u *: no file below %s", g->number, dir);
			return;
		}
	} else if (STREQ(path, "target")) {
		full = xstrdup(g->target_dev ? g->target_dev : "(no target device)");
	} else {
		full = path[0] == '/' ? xstrdup(path) : xasprintf(MACHINE_LANDING "/%s", path);
	}
	/* the byte's complement written in place, as the guest would (a file through the guest's
	 * mounts, opened in its root; the target device: the medium under it, synced past the page
	 * cache) */
	int rc;
	if (g->target_dev && STREQ(full, g->target_dev)) {
		_cleanup_close_ int fd = open(g->target_path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		rc = flip_fd(fd, g->target_path, &err);
	} else {
		_cleanup_close_ int fd = fake_root_open(g->root, full, O_RDWR | O_NOFOLLOW);
		rc = flip_fd(fd, full, &err);
	}
	fake_logf(fm->f, "corrupt %u %s%s%s", g->number, full, rc < 0 ? ": " : "",
		  rc < 0 ? err : "");
}

void fake_real_sh(struct fake_machine *fm, struct fake_guest *g, const char *cmd)
{
	_cleanup_free_ char *err = NULL;
	int rc = guest_sh(g, cmd, NULL, &err);
	fake_logf(fm->f, "sh %u%s%s", g->number, rc < 0 ? ": " : "", rc < 0 ? err : "");
}

static bool host_has_fs(const char *fs)
{
	_cleanup_free_ char *line = NULL;
	size_t len = 0;
	FILE *f = fopen("/proc/filesystems", "re");
	bool found = false;
	while (f && !found && getline(&line, &len, f) > 0) {
		line[strcspn(line, "\n")] = '\0';
		const char *name = strrchr(line, '\t');
		found = STREQ(name ? name + 1 : line, fs);
	}
	if (f)
		fclose(f);
	return found;
}

char *fake_real_supports(struct fake_machine *fm, const struct plan_cell *pc)
{
	(void)fm;
	/* guests share the host's network (a test's own namespace, loopback only): two of them
	   reach each other there as on a private network, and so do the network method's sender
	   and its guest (its address and the host's are the loopback: machine_net_socket() above),
	   and smbclient and the guest's smbd (smb served_by guest); the guest's cifs mount of the
	   host's smbd (smb served_by host) needs a cifs client, which the fake has not */
	const struct method_ops *ops = method_of(pc->method);
	if (pc->vm->nic.backend == PLAN_NIC_PRIVATE && ops != method_find_name("vm2vm") &&
	    ops != method_find_name("network") && ops != &method_share_smb_guest)
		return xstrdup("the fake machine's guests share the host's network: no private "
			       "network");
	if (pc->disk && pc->disk->kind == PLAN_DISK_IMAGE &&
	    pc->disk->filesystem != PLAN_DISK_FS_EXT4)
		return xstrdup("the fake machine's target disks are ext4");
	if (method_of(pc->method) == method_find_name("disk-image")) {
		static const char *const fs[] = { "ext4", "iso9660", "vfat" };
		const struct di_opts *o = METHOD_OPTS(pc->method, struct di_opts);
		const char *want = fs[o->filesystem];
		if (!host_has_fs(want))
			return xasprintf("the host kernel has no %s filesystem, which the fake "
					 "guest (the host's kernel) mounts the image with",
					 want);
		if (o->image_format == PLAN_FORMAT_QCOW2)
			return xstrdup("the fake machine plugs raw images only (a loop device), "
				       "not qcow2");
	}
	return NULL;
}
