/* SPDX-License-Identifier: MIT */
/*
 * The host end of a virtio-serial channel (vm_channel_open in vm.h). On the local host it is the
 * unix socket libvirt created for the port. On a remote host that socket is not reachable: the
 * port is opened through libvirt (virDomainOpenChannel streams it over the connection) and a
 * thread pumps a local socketpair into that stream, so the caller sees the same kind of file
 * descriptor either way.
 *
 * The trap of closing early (GUEST.md: bytes QEMU had not yet taken from its socket are lost when
 * the host end closes) exists on the remote host too, but its socket's send queue cannot be seen
 * from here. So after the caller closed its end, the pump keeps the stream open until the guest's
 * virtio-serial driver has received every byte sent (bytes_received of the port in the guest's
 * debugfs, read through the guest agent), and only then finishes the stream.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <libvirt/virterror.h>

#include "agent.h"
#include "run.h"
#include "util.h"
#include "vm.h"

/* How long the pump waits for the guest to take the last bytes after the caller closed. */
#define DRAIN_TIMEOUT_MS 600000u

struct pump {
	virDomainPtr dom;
	virStreamPtr st;
	int fd; /* the pump's end of the socketpair (closed by the reaper) */
	char *name;
	char *vm;           /* the domain's name */
	atomic_bool done;   /* the pump thread has ended */
	atomic_bool cancel; /* end now: do not wait for the guest */
	uint64_t base;      /* the port's bytes_received when the stream opened */
	pthread_t thread;
	struct pump *next;
};

static struct pump *pumps;
static pthread_mutex_t pumps_lock = PTHREAD_MUTEX_INITIALIZER;

static int local_open(struct vm *vm, const char *name, int *fd, char **err)
{
	_cleanup_free_ char *path = NULL;
	if (vm_channel_path(vm, name, &path, err) < 0)
		return -1;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		*err = xasprintf("socket path '%s' too long", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		if (s >= 0)
			close(s);
		*err = xasprintf("connect '%s': %s", path, strerror(e));
		return -1;
	}
	*fd = s;
	return 0;
}

/* The guest's count of bytes its port received from the host (debugfs). */
static int port_received(virDomainPtr dom, const char *name, uint64_t *n, char **err)
{
	_cleanup_free_ char *cmd = xasprintf(
	    "d=/sys/kernel/debug/virtio-ports; "
	    "[ -d $d ] || mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null; "
	    "p=$(readlink /dev/virtio-ports/%s) && sed -n 's/^bytes_received: //p' $d/${p##*/}",
	    name);
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	_cleanup_free_ char *out = NULL, *e = NULL;
	if (agent_run(dom, argv, 30000, &out, &e) < 0 || !out || !*out) {
		*err = xasprintf("cannot read how many bytes the guest's port '%s' received (its "
				 "debugfs entry): %s",
				 name, e ? e : "no answer");
		return -1;
	}
	*n = strtoull(out, NULL, 10);
	return 0;
}

static void *pump_main(void *arg)
{
	struct pump *p = arg;
	char buf[65536];
	uint64_t sent = 0;
	bool ok = true;
	for (;;) {
		ssize_t n = read(p->fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ok = n == 0;
			break;
		}
		for (ssize_t off = 0; off < n;) {
			int w = virStreamSend(p->st, buf + off, (size_t)(n - off));
			if (w < 0) {
				ok = false;
				break;
			}
			off += w;
		}
		if (!ok)
			break;
		sent += (uint64_t)n;
	}
	/* the caller closed its end: wait until the guest holds every byte, then end the stream
	 * (the guest's reader sees end-of-file after the last byte) */
	uint64_t deadline = now_ns() + (uint64_t)DRAIN_TIMEOUT_MS * 1000000u;
	while (ok && !atomic_load(&p->cancel)) {
		uint64_t got = 0;
		_cleanup_free_ char *e = NULL;
		if (port_received(p->dom, p->name, &got, &e) < 0) {
			ok = false;
			break;
		}
		if (got - p->base >= sent)
			break;
		if (run_interrupted() || now_ns() >= deadline) {
			ok = false;
			break;
		}
		struct timespec ts = { 0, 50 * 1000000L };
		nanosleep(&ts, NULL);
	}
	if (!ok || atomic_load(&p->cancel) || virStreamFinish(p->st) < 0)
		virStreamAbort(p->st);
	atomic_store(&p->done, true);
	return NULL;
}

static int remote_open(struct vm *vm, const char *name, int *fd, char **err)
{
	virDomainPtr dom = vm_domain(vm);
	uint64_t base = 0;
	if (port_received(dom, name, &base, err) < 0)
		return -1;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		*err = xasprintf("socketpair: %s", strerror(errno));
		return -1;
	}
	virStreamPtr st = virStreamNew(virDomainGetConnect(dom), 0);
	if (!st || virDomainOpenChannel(dom, name, st, 0) < 0) {
		*err = xasprintf("cannot open channel '%s' of domain '%s' through libvirt: %s",
				 name, vm_name(vm), virGetLastErrorMessage());
		if (st)
			virStreamFree(st);
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	struct pump *p = xcalloc(1, sizeof(*p));
	virDomainRef(dom);
	p->dom = dom;
	p->st = st;
	p->fd = sv[1];
	p->name = xstrdup(name);
	p->vm = xstrdup(vm_name(vm));
	p->base = base;
	if (pthread_create(&p->thread, NULL, pump_main, p) != 0) {
		*err = xstrdup("cannot start the channel's pump thread");
		virStreamAbort(st);
		virStreamFree(st);
		virDomainFree(dom);
		free(p->name);
		free(p->vm);
		free(p);
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	pthread_mutex_lock(&pumps_lock);
	p->next = pumps;
	pumps = p;
	pthread_mutex_unlock(&pumps_lock);
	*fd = sv[0];
	return 0;
}

int vm_channel_open(struct vm *vm, const char *name, int *fd, char **err)
{
	vm_channel_reap(vm, false);
	return vm_remote(vm) ? remote_open(vm, name, fd, err) : local_open(vm, name, fd, err);
}

void vm_channel_reap(struct vm *vm, bool all)
{
	const char *name = vm ? vm_name(vm) : NULL;
	pthread_mutex_lock(&pumps_lock);
	for (struct pump **pp = &pumps; *pp;) {
		struct pump *p = *pp;
		bool mine = !name || STREQ(p->vm, name);
		if (!mine || (!all && !atomic_load(&p->done))) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		pthread_mutex_unlock(&pumps_lock);
		if (!atomic_load(&p->done)) {
			atomic_store(&p->cancel, true);
			shutdown(p->fd, SHUT_RDWR); /* ends its read: it aborts the stream */
		}
		pthread_join(p->thread, NULL);
		close(p->fd);
		virStreamFree(p->st);
		virDomainFree(p->dom);
		free(p->name);
		free(p->vm);
		free(p);
		pthread_mutex_lock(&pumps_lock);
		pp = &pumps;
	}
	pthread_mutex_unlock(&pumps_lock);
}
