/* SPDX-License-Identifier: MIT */
/*
 * network: over the VM's NIC, on one of two backends (the vm's `nic: backend`):
 *
 * user (the default): QEMU user networking, restricted (vm.h, VM_USER_NETDEV): the guest reaches
 *   nothing of the host, so a pull is skipped there (rule cell.network-pull-user). A push goes
 *   through a forwarded port on 127.0.0.1 (QEMU HMP hostfwd_add through libvirt) per stream.
 * private: the guest's tap lives in the run's network namespace and the sender's
 *   sockets are created in there (machine_net_socket()): the server listens on the namespace's
 * bridge address (10.0.2.2 again, so the guest side is the same), a push connects to the guest's
 * own address on that network. Nothing on the host's network is touched.
 *
 * direction pull: ferry runs a small HTTP server (threads of this process, one per stream) and the
 *   guest fetches with busybox wget: with `archive:` one archive stream per connection that it
 *   unpacks as it arrives (`wget -O - | tar -x`); without, file by file (a NUL-separated list
 *   walked with xargs -0, then one wget per file), one walker per stream.
 * direction push: the guest listens with `nc -l` (one port per stream) and unpacks, the host
 *   connects and streams the archive (without `archive:` a plain tar: a push is one stream per
 *   connection).
 * `streams: N` splits the dataset into N parts of about equal bytes (netserve_split(); every part
 * has all directories) moved over N TCP connections at once: one flow lands on one NIC queue, so
 * only several flows can use several queues.
 * 127.0.0.1 is open to every local user: the pull server answers only under a per-run random
 * token, and a push starts with a token line the guest checks before it unpacks (netserve.h).
 *
 * What the guest's NIC did is recorded as the cell's "observed" ({"nic": ...}): the queue pairs
 * the guest enabled (/sys/class/net/eth0/queues), per queue the interrupts of the last run
 * (virtio-net's per-queue MSI-X vectors in /proc/interrupts: busybox has no ethtool -S), how many
 * queues carried traffic, and vhost-net or why not. The snapshot before the transfer is taken by
 * the transfer's own guest command (no extra agent round trip in a timed phase); the one after
 * in verify, which is timed but never part of the total.
 *
 * Phases: prepare starts the pull server (or the push forwards), transfer moves the bytes, and
 * its guest command ends with the `sync` (timed there: no finalize, recorded as 0).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "machine.h"
#include "proc.h"
#include "run.h"
#include "util.h"
#include "guestproc.h"
#include "method.h"
#include "archive.h"
#include "stream.h"
#include "netserve.h"
#include "plan-limits.h"
#include "rules.h"

#define HOST_FROM_GUEST "10.0.2.2"
#define PUSH_GUEST_PORT 18090
/* The guest's per-queue interrupt counters of eth0 (virtio-net names its vectors
 * virtioN-input.Q and virtioN-output.Q), written before the transfer, compared in verify. */
#define IRQ_BEFORE "/run/ferry-net-irq.before"
#define IRQ_SNAPSHOT                                                                               \
	"d=$(readlink /sys/class/net/eth0/device 2>/dev/null); d=${d##*/}; "                       \
	"grep -E \" ${d:-none}-(input|output)\\.[0-9]+$\" /proc/interrupts"

enum net_direction { NET_PULL, NET_PUSH };

struct net_opts {
	uint64_t set;
	enum net_direction direction;
	uint64_t streams; /* TCP connections at once */
};

static const struct key_def net_defs[] = {
	{ .name = "direction",
	  .type = KEY_ENUM,
	  .offset = offsetof(struct net_opts, direction),
	  .def = "pull",
	  .values = (const char *const[]){ "pull", "push", NULL },
	  .help = "pull: the guest fetches from a host sender (backend private only: on user "
		  "networking the guest reaches nothing of the host, and the cell is skipped); "
		  "push: the host connects in (through a forwarded port on user networking)" },
	{ .name = "streams",
	  .type = KEY_UINT,
	  .offset = offsetof(struct net_opts, streams),
	  .def = "1",
	  .min = 1,
	  .max = PLAN_NETWORK_STREAMS_MAX,
	  .help = "TCP connections at once, the files split across them (one flow lands on one "
		  "queue: multi-queue needs several)" },
};
METHOD_OPTIONS(net_keys, "network", struct net_opts, net_defs);

#define OPTS(m) METHOD_OPTS(m, struct net_opts)

static void streams_zip(const struct rule_subject *s, struct rule_out *o)
{
	uint64_t n = OPTS(s->method)->streams;
	if (n > 1 && s->method->archive.format == PLAN_ARCHIVE_ZIP)
		plan_rule_fail(o, "streams",
			       "'streams: %" PRIu64 "' needs an archive the guest unpacks as it "
			       "arrives (tar, pax, cpio): zip is unpacked from one file after the "
			       "transfer",
			       n);
}

/*
 * A pull has the guest connect to the host's sender, and a guest on QEMU user networking reaches
 * nothing of the host: ferry runs its slirp restricted (vm.h, VM_USER_NETDEV), since otherwise
 * the guest's 10.0.2.2 is the host's 127.0.0.1 and every local service. A forward the guest
 * could connect out through (guestfwd) is no way either: QEMU would have to spawn a program
 * (libvirt's seccomp sandbox forbids it) or carry one connection at a time through a chardev
 * made at boot. So such a cell is skipped, with the ways that do run.
 */
static void pull_user_net(const struct rule_subject *s, struct rule_out *o)
{
	const struct plan_nic *n = &s->vm->nic;
	if (OPTS(s->method)->direction != NET_PULL || n->backend != PLAN_NIC_USER || n->network ||
	    n->bridge)
		return;
#define PULL_USER_WHY                                                                              \
	"network: 'direction: pull' has the guest connect to the host, and a guest on QEMU user "  \
	"networking reaches nothing of the host (ferry restricts it: otherwise 10.0.2.2 is the "   \
	"host's 127.0.0.1): use 'direction: push' (the host connects in through a forwarded port)"
	if (s->vm->guest != PLAN_GUEST_IMAGE)
		plan_rule_fail(o, "method",
			       PULL_USER_WHY ", or put vm '%s' on ferry's private network "
					     "('nic: {backend: private}')",
			       s->vm->e.name);
	else
		plan_rule_fail(o, "method",
			       PULL_USER_WHY
			       " (ferry's private network, 'nic: {backend: private}', "
			       "takes ferry's built-in and Debian guests only)");
#undef PULL_USER_WHY
}

static const struct plan_rule net_rules[] = {
	{ "method.streams-zip", RULE_METHOD, RULE_ERROR, 0, "network streams above 1 with zip",
	  streams_zip },
	{ "cell.network-pull-user", RULE_CELL, RULE_SKIP, 0,
	  "network direction pull on QEMU user networking (the guest reaches nothing of the "
	  "host there)",
	  pull_user_net },
};

struct network_state {
	struct server srv;
	int fwd_ports[NETSERVE_STREAMS_MAX]; /* push on user networking: the host ends */
	unsigned n_fwd;
	char *fwd_vm; /* the domain the forwards were added to (a cell may get a new VM per run) */
	/* where the guest reaches the pull server: the host's address on the private network
	 * (machine_net_socket(); static), or NULL: HOST_FROM_GUEST on user networking */
	const char *host_addr;
	/* the queues that carried traffic, over the measured runs */
	unsigned used_min, used_max, n_observed;
};

static unsigned streams(const struct method_ctx *ctx)
{
	return OPTS(ctx->method)->streams ? (unsigned)OPTS(ctx->method)->streams : 1;
}

/* The guest's address on the private network, or NULL on user networking. */
static const char *private_addr(const struct method_ctx *ctx)
{
	return machine_guest_net_addr(ctx->machine, ctx->guest);
}

static char *network_supports(const struct method_ctx *ctx)
{
	/* Windows guests, libvirt networks and bridges, archives: the plan's rules table (rules.c)
	 */
	char *why = plan_rules_skip(ctx->plan, ctx->cell);
	if (why || ctx->cell->vm->nic.backend != PLAN_NIC_PRIVATE)
		return why;
	/* the private network: namespaces, taps and bridges need CAP_NET_ADMIN (root) */
	if (geteuid() != 0)
		return xstrdup(
		    "network: nic backend private creates a network namespace and a tap: "
		    "it needs root (CAP_NET_ADMIN)");
	if (access("/dev/net/tun", R_OK | W_OK) != 0)
		return xasprintf("network: nic backend private needs /dev/net/tun: %s",
				 strerror(errno));
	const char *argv[] = { "ip", "-V", NULL };
	_cleanup_free_ char *err = NULL;
	if (proc_run(argv, NULL, &err) < 0)
		return xasprintf("network: nic backend private needs iproute2's ip: %s", err);
	return NULL;
}

static int network_add_devices(struct method_ctx *ctx, struct method_boot_needs *needs)
{
	needs->nic = true;
	return 0;
}

static struct network_state *state(struct method_ctx *ctx)
{
	if (!ctx->state) {
		struct network_state *s = xcalloc(1, sizeof(*s));
		server_init(&s->srv);
		ctx->state = s;
	}
	return ctx->state;
}

/* ---- the phases ---- */

static const struct plan_archive *pull_archive(const struct method_ctx *ctx)
{
	return ctx->method->archive.format != PLAN_ARCHIVE_NONE ? &ctx->method->archive : NULL;
}

static int network_prepare(struct method_ctx *ctx)
{
	struct network_state *s = state(ctx);
	_cleanup_free_ char *err = NULL;
	if (OPTS(ctx->method)->direction == NET_PULL) {
		int lfd = -1;
		const char *host_addr = NULL;
		if (private_addr(ctx)) {
			/* the listening socket belongs to the run's namespace: only the guests
			   there reach it */
			_cleanup_(machine_err_clear) struct machine_err e = { 0 };
			if (machine_net_socket(ctx->machine, AF_INET, SOCK_STREAM | SOCK_CLOEXEC,
					       &lfd, &host_addr, &e) < 0)
				return method_fail_op(ctx, ERROR_INFRA, &e, NULL, "network: %s",
						      e.msg);
		}
		s->host_addr = host_addr;
		if (server_start_streams(&s->srv, pull_archive(ctx), ctx->dataset_dir,
					 ctx->manifest, streams(ctx), lfd, host_addr,
					 ctx->timeout_ms, &err) < 0)
			return method_fail(ctx, ERROR_INFRA, NULL, "network: %s", err);
		return 0;
	}
	if (private_addr(ctx))
		return 0; /* the host connects to the guest's address directly */
	if (s->n_fwd == streams(ctx) && s->fwd_vm && STREQ(s->fwd_vm, ctx->guest->name))
		return 0;
	/* free ports on 127.0.0.1, handed to QEMU's forwards (QEMU binds them itself) */
	s->n_fwd = 0;
	for (unsigned k = 0; k < streams(ctx); k++) {
		int port = 0;
		int fd = loopback_socket(false, &port, &err);
		if (fd < 0)
			return method_fail(ctx, ERROR_INFRA, NULL, "network: %s", err);
		close(fd);
		_cleanup_(machine_err_clear) struct machine_err e = { 0 };
		if (machine_guest_hostfwd(ctx->machine, ctx->guest, port, PUSH_GUEST_PORT + (int)k,
					  &e) < 0)
			return method_fail_op(ctx, ERROR_INFRA, &e, NULL, "network: %s", e.msg);
		s->fwd_ports[s->n_fwd++] = port;
	}
	free(s->fwd_vm);
	s->fwd_vm = xstrdup(ctx->guest->name);
	return 0;
}

/* The guest's command: the interrupt snapshot, the n stream commands at once, then the sync
 * that makes the bytes durable, all in one guest command (each guest command is an agent round
 * trip, ~0.1 s under TCG, that a user's copy would not pay). */
static char *with_snapshot(char **cmds, unsigned n)
{
	_cleanup_free_ char *par = netserve_parallel_command(cmds, n);
	return xasprintf("{ " IRQ_SNAPSHOT "; } > " IRQ_BEFORE " 2>/dev/null; ( %s ) && sync", par);
}

static void free_cmds(char **cmds, unsigned n)
{
	for (unsigned k = 0; k < n; k++)
		free(cmds[k]);
}

static int pull(struct method_ctx *ctx, struct network_state *s)
{
	unsigned n = streams(ctx);
	char *cmds[NETSERVE_STREAMS_MAX] = { 0 };
	_cleanup_free_ char *base =
	    xasprintf("http://%s:%d/%s", s->host_addr ? s->host_addr : HOST_FROM_GUEST, s->srv.port,
		      s->srv.token);
	for (unsigned k = 0; k < n; k++) {
		if (s->srv.archive) {
			_cleanup_free_ char *src = xasprintf("wget -q -O - %s/stream/%u", base, k);
			cmds[k] = stream_unpack_command(s->srv.archive, src, ctx->landing);
		} else {
			cmds[k] = netserve_pull_part_command(base, k, ctx->landing);
		}
	}
	_cleanup_free_ char *cmd = with_snapshot(cmds, n);
	free_cmds(cmds, n);
	int rc = method_guest_sh(ctx, "network: pull", cmd, NULL);
	server_stop(&s->srv);
	if (rc < 0)
		return -1;
	if (s->srv.err)
		return method_fail(ctx, STREAM_ERROR_KIND(s->srv.err), NULL, "network: sender: %s",
				   s->srv.err);
	ctx->bytes = s->srv.bytes;
	return 0;
}

/* How many of the push ports the guest listens on yet. */
static unsigned guest_listening(struct method_ctx *ctx, unsigned n)
{
	_cleanup_free_ char *cmd = xasprintf("{ ss -ltn 2>/dev/null || netstat -ltn 2>/dev/null; } "
					     "| awk '{n=split($4,a,\":\"); p=a[n]+0; "
					     "if (p>=%d && p<%d) c++} END {print c+0}'",
					     PUSH_GUEST_PORT, PUSH_GUEST_PORT + (int)n);
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct machine_exec_result r;
	_cleanup_(machine_err_clear) struct machine_err e = { 0 };
	if (machine_guest_exec(ctx->machine, ctx->guest, argv, NULL, 0, 20000, &r, &e) < 0)
		return 0;
	unsigned got = r.exit_code == 0 && r.out ? (unsigned)strtoul(r.out, NULL, 10) : 0;
	machine_exec_result_clear(&r);
	return got;
}

struct push_stream {
	struct method_ctx *ctx;
	const struct plan_archive *a;
	const struct manifest *part;
	const char *token;
	int fd; /* connected */
	pthread_t thread;
	uint64_t bytes;
	char *err;
};

static void *push_main(void *arg)
{
	struct push_stream *p = arg;
	/* the token line first: the guest unpacks nothing from a connection without it */
	char line[NETSERVE_TOKEN_LEN + 2];
	snprintf(line, sizeof(line), "%s\n", p->token);
	if (stream_write_all(p->fd, line, NETSERVE_TOKEN_LEN + 1, p->ctx->timeout_ms, &p->err) <
		0 ||
	    stream_pack(p->a, p->ctx->dataset_dir, p->part, p->fd, p->ctx->timeout_ms, &p->bytes,
			&p->err) < 0) {
		close(p->fd);
		p->fd = -1;
		return NULL;
	}
	finish_connection(p->fd);
	p->fd = -1;
	return NULL;
}

/* A connection to the guest's stream k: into the namespace to the guest's address, or through
 * the forward on 127.0.0.1. */
static int push_connect(struct method_ctx *ctx, struct network_state *s, unsigned k, char **err)
{
	const char *addr = private_addr(ctx);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int c;
	if (addr) {
		struct machine_err e = { 0 };
		const char *host_addr;
		if (machine_net_socket(ctx->machine, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, &c,
				       &host_addr, &e) < 0) {
			*err = TAKE_PTR(e.msg);
			machine_err_clear(&e);
			return -1;
		}
		inet_pton(AF_INET, addr, &sa.sin_addr);
		sa.sin_port = htons((uint16_t)(PUSH_GUEST_PORT + k));
	} else {
		c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sa.sin_port = htons((uint16_t)s->fwd_ports[k]);
	}
	if (c < 0 || connect(c, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		if (c >= 0)
			close(c);
		char a[INET_ADDRSTRLEN] = "?";
		inet_ntop(AF_INET, &sa.sin_addr, a, sizeof(a));
		*err = xasprintf("connect %s:%d: %s", a, ntohs(sa.sin_port), strerror(e));
		return -1;
	}
	struct timeval tv = { 1, 0 };
	setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return c;
}

static int push(struct method_ctx *ctx, struct network_state *s)
{
	static const struct plan_archive tar = { .format = PLAN_ARCHIVE_TAR };
	const struct plan_archive *a =
	    ctx->method->archive.format != PLAN_ARCHIVE_NONE ? &ctx->method->archive : &tar;
	unsigned n = streams(ctx);
	char token[NETSERVE_TOKEN_LEN + 1];
	if (netserve_token(token) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "network: random token: %s",
				   strerror(errno));
	char *cmds[NETSERVE_STREAMS_MAX] = { 0 };
	for (unsigned k = 0; k < n; k++) {
		_cleanup_free_ char *src = netserve_push_source(PUSH_GUEST_PORT + (int)k, token);
		cmds[k] = stream_unpack_command(a, src, ctx->landing);
	}
	_cleanup_free_ char *cmd = with_snapshot(cmds, n);
	free_cmds(cmds, n);
	int64_t pid = 0;
	if (guestproc_start(ctx, "network: push", cmd, &pid) < 0)
		return -1;
	uint64_t end = now_ns() + (uint64_t)ctx->timeout_ms * 1000000u;
	while (guest_listening(ctx, n) < n) {
		if (run_interrupted() || now_ns() >= end) {
			guestproc_kill(ctx, pid);
			return method_fail(ctx, ERROR_TIMEOUT, NULL,
					   "network: the guest did not listen on ports %d-%d "
					   "within %u ms",
					   PUSH_GUEST_PORT, PUSH_GUEST_PORT + (int)n - 1,
					   ctx->timeout_ms);
		}
		struct timespec ts = { 0, 20 * 1000000L };
		nanosleep(&ts, NULL);
	}
	struct manifest parts[NETSERVE_STREAMS_MAX];
	netserve_split(ctx->manifest, n, parts, NULL);
	struct push_stream ps[NETSERVE_STREAMS_MAX];
	unsigned started = 0;
	_cleanup_free_ char *err = NULL;
	for (unsigned k = 0; k < n; k++) {
		ps[k] = (struct push_stream){
			.ctx = ctx, .a = a, .part = &parts[k], .token = token, .fd = -1
		};
		ps[k].fd = push_connect(ctx, s, k, &err);
		if (ps[k].fd < 0)
			break;
		int r = pthread_create(&ps[k].thread, NULL, push_main, &ps[k]);
		if (r != 0) {
			close(ps[k].fd);
			err = xasprintf("thread: %s", strerror(r));
			break;
		}
		started++;
	}
	uint64_t bytes = 0;
	for (unsigned k = 0; k < started; k++) {
		pthread_join(ps[k].thread, NULL);
		bytes += ps[k].bytes;
		if (ps[k].err && !err)
			err = TAKE_PTR(ps[k].err);
		free(ps[k].err);
	}
	netserve_parts_clear(parts, NULL, n);
	if (err) {
		guestproc_kill(ctx, pid);
		return method_fail(ctx, STREAM_ERROR_KIND(err), NULL, "network: push: %s", err);
	}
	if (guestproc_wait(ctx, "network: push", pid, NULL) < 0)
		return -1;
	ctx->bytes = bytes;
	return 0;
}

static int network_transfer(struct method_ctx *ctx)
{
	struct network_state *s = state(ctx);
	return OPTS(ctx->method)->direction == NET_PULL ? pull(ctx, s) : push(ctx, s);
}

/* ---- what the NIC did ---- */

#define QUEUES_SEEN_MAX 256

struct irq_counts {
	uint64_t rx[QUEUES_SEEN_MAX], tx[QUEUES_SEEN_MAX];
	unsigned n; /* queues seen: 1 + the highest index */
};

/* Sum the per-CPU counts of "N: c0 c1 ... PCI-MSI ... virtioK-input.Q" lines into c. */
static void parse_irqs(const char *text, struct irq_counts *c)
{
	_cleanup_free_ char *copy = xstrdup(text);
	char *save = NULL;
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *colon = strchr(l, ':');
		char *name = strrchr(l, ' ');
		if (!colon || !name)
			continue;
		name++;
		char *dash = strrchr(name, '-');
		char *dot = strrchr(name, '.');
		if (!dash || !dot || dot < dash)
			continue;
		bool rx = strncmp(dash + 1, "input.", 6) == 0;
		bool tx = strncmp(dash + 1, "output.", 7) == 0;
		char *end;
		unsigned long q = strtoul(dot + 1, &end, 10);
		if ((!rx && !tx) || *end || q >= QUEUES_SEEN_MAX)
			continue;
		uint64_t sum = 0;
		for (char *p = colon + 1;;) {
			while (*p == ' ' || *p == '\t')
				p++;
			if (*p < '0' || *p > '9')
				break;
			sum += strtoull(p, &p, 10);
		}
		(rx ? c->rx : c->tx)[q] += sum;
		if (q + 1 > c->n)
			c->n = (unsigned)q + 1;
	}
}

static void observe_nic(struct method_ctx *ctx, struct network_state *s)
{
	const struct plan_nic *pn = &ctx->cell->vm->nic;
	const char *cmd = "cat " IRQ_BEFORE " 2>/dev/null; echo ---; " IRQ_SNAPSHOT
			  "; echo ---; ls /sys/class/net/eth0/queues 2>/dev/null | grep -c '^rx-'";
	_cleanup_free_ char *out = NULL;
	json_t *nic = json_object();
	json_object_set_new(nic, "backend",
			    json_string(pn->backend == PLAN_NIC_PRIVATE ? "private" : "user"));
	json_object_set_new(nic, "model",
			    json_string(pn->model == PLAN_NIC_E1000 ? "e1000" : "virtio"));
	json_object_set_new(nic, "queues", json_integer((json_int_t)pn->queues));
	json_object_set_new(nic, "streams", json_integer((json_int_t)streams(ctx)));
	const char *novhost = pn->backend != PLAN_NIC_PRIVATE
				  ? "QEMU user networking (slirp) has no vhost-net"
			      : pn->model != PLAN_NIC_VIRTIO
				  ? "only virtio-net uses vhost-net"
				  : machine_guest_nic_no_vhost_reason(ctx->machine, ctx->guest);
	json_object_set_new(nic, "vhost", json_boolean(!novhost));
	if (novhost)
		json_object_set_new(nic, "vhost_reason", json_string(novhost));
	/* a failure to read the counters costs the observation, not the run */
	_cleanup_(machine_err_clear) struct machine_err e = { 0 };
	char *sep1 = NULL, *sep2 = NULL;
	if (machine_guest_sh(ctx->machine, ctx->guest, cmd, 30000, &out, &e) < 0 ||
	    !(sep1 = strstr(out, "---\n")) || !(sep2 = strstr(sep1 + 4, "---\n"))) {
		json_object_set_new(
		    nic, "error",
		    json_string(e.msg ? e.msg : "cannot read the guest's NIC counters"));
	} else {
		*sep1 = *sep2 = '\0';
		struct irq_counts before = { 0 }, after = { 0 };
		parse_irqs(out, &before);
		parse_irqs(sep1 + 4, &after);
		json_object_set_new(nic, "queues_enabled",
				    json_integer(strtol(sep2 + 4, NULL, 10)));
		if (after.n == 0) {
			/* e1000 and other single-vector NICs: no per-queue counters */
			json_object_set_new(nic, "per_queue_counters", json_false());
		} else {
			json_t *rx = json_array(), *tx = json_array();
			unsigned used = 0, rx_used = 0, tx_used = 0;
			for (unsigned q = 0; q < after.n; q++) {
				uint64_t dr =
				    after.rx[q] -
				    (after.rx[q] >= before.rx[q] ? before.rx[q] : after.rx[q]);
				uint64_t dt =
				    after.tx[q] -
				    (after.tx[q] >= before.tx[q] ? before.tx[q] : after.tx[q]);
				json_array_append_new(rx, json_integer((json_int_t)dr));
				json_array_append_new(tx, json_integer((json_int_t)dt));
				used += dr > 0 || dt > 0;
				rx_used += dr > 0;
				tx_used += dt > 0;
			}
			json_object_set_new(nic, "per_queue_counters", json_true());
			json_object_set_new(nic, "rx_interrupts", rx);
			json_object_set_new(nic, "tx_interrupts", tx);
			json_object_set_new(nic, "queues_used", json_integer(used));
			json_object_set_new(nic, "rx_queues_used", json_integer(rx_used));
			json_object_set_new(nic, "tx_queues_used", json_integer(tx_used));
			if (!ctx->warmup) {
				if (s->n_observed == 0 || used < s->used_min)
					s->used_min = used;
				if (used > s->used_max)
					s->used_max = used;
				s->n_observed++;
			}
			if (s->n_observed) {
				json_object_set_new(nic, "queues_used_min",
						    json_integer(s->used_min));
				json_object_set_new(nic, "queues_used_max",
						    json_integer(s->used_max));
			}
		}
	}
	json_decref(ctx->observed);
	ctx->observed = json_pack("{s:o}", "nic", nic);
}

static int network_verify(struct method_ctx *ctx)
{
	if (method_verify_dir(ctx, ctx->landing, true) < 0)
		return -1;
	observe_nic(ctx, state(ctx));
	return 0;
}

static int network_cleanup(struct method_ctx *ctx)
{
	server_stop(&state(ctx)->srv);
	/* the interrupt snapshot the transfer left in the guest (best effort: the guest may be
	 * gone after a failure) */
	if (ctx->guest && !run_interrupted()) {
		_cleanup_(machine_err_clear) struct machine_err e = { 0 };
		machine_guest_sh(ctx->machine, ctx->guest, "rm -f " IRQ_BEFORE, 30000, NULL, &e);
	}
	return 0;
}

static void network_free_state(struct method_ctx *ctx)
{
	struct network_state *s = ctx->state;
	if (s) {
		server_stop(&s->srv);
		free(s->srv.err);
		free(s->fwd_vm);
		free(s);
	}
	ctx->state = NULL;
	json_decref(ctx->observed);
	ctx->observed = NULL;
}

const struct method_ops method_network = {
	.name = "network",
	.summary = "over the NIC",
	.options = &net_keys,
	.archive = true,
	.needs = { .nic_why = "ferry's sender reaches a guest through user networking or its own "
			      "private network (nic backend private)",
		   .remote_why = "network streams from a sender on ferry's own loopback, which a "
				 "guest on a remote libvirt host cannot reach" },
	.rules = net_rules,
	.n_rules = ELEMENTSOF(net_rules),
	.supports = network_supports,
	.add_devices = network_add_devices,
	.prepare = network_prepare,
	.transfer = network_transfer,
	.verify = network_verify,
	.cleanup = network_cleanup,
	.free_state = network_free_state,
};
