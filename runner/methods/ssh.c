/* SPDX-License-Identifier: MIT */
/*
 * ssh: PowerShell remoting's (Copy-Item -ToSession) Linux counterpart: the host copies the
 * dataset into the guest over ssh with the tool people reach for: `scp` (the classic scp
 * protocol, -O, which OpenSSH's sshd and dropbear both serve), `rsync -a` over ssh, or a tar
 * stream into `ssh GUEST tar -x` (packed by libarchive on the host as it is sent). `cipher`
 * picks the ssh cipher (default: what client and server agree on).
 *
 * The server is the guest's: dropbear in the built-in guest, OpenSSH's sshd in the Debian
 * guest (whichever the guest has; sshd first). Untimed, before prepare of every run: the host
 * makes a fresh host key and a fresh client key (ssh-keygen, ed25519, no passphrase) in the
 * cell's directory of the run, pushes the host key and the client's public key into the guest
 * (/run/ferry-ssh, and for dropbear /root/.ssh/authorized_keys), starts the server on port
 * SSH_GUEST_PORT and waits until it listens. The client trusts exactly that host key (its own
 * known_hosts, StrictHostKeyChecking=yes) and reads no user or system configuration (-F
 * /dev/null). The connection: 127.0.0.1 through QEMU user networking's forwarded port
 * (hostfwd, once per guest); the guest's address where the machine puts the guest on the
 * host's loopback (the fake machine); or, for a guest on ferry's private network, the guest's
 * address there, with the client (and rsync's ssh) run inside the run's network namespace
 * (machine_net_spawn: `ip netns exec`), the only place that address is reached from.
 * transfer: the tool's command on the host, from its start to its end (the handshake included,
 * as a user's copy pays it); finalize: `sync` in the guest. cleanup: the server is killed, the
 * guest's key files and /run/ferry-ssh removed, the host's keys deleted: no key outlives a run.
 * The cleanup then checks in the guest that the server's process and its listener are gone and
 * no key file is left (a run that leaves one fails at cleanup, naming it), and records which
 * server ran and that the check passed in the cell's observed.ssh ({"server": "sshd" or
 * "dropbear", "cleanup_checked": true}).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive.h"
#include "fs.h"
#include "guestproc.h"
#include "machine.h"
#include "method.h"
#include "netserve.h"
#include "proc.h"
#include "rules.h"
#include "ssh.h"
#include "util.h"

#define SSH_GUEST_DIR "/run/ferry-ssh"

enum ssh_tool { SSH_SCP, SSH_RSYNC, SSH_TAR };

struct ssh_opts {
	uint64_t set;
	enum ssh_tool tool;
	int cipher; /* index into ssh_ciphers; 0: the default */
};

static const char *const ssh_ciphers[] = {
	"default",
	"aes128-ctr",
	"aes256-ctr",
	"aes128-gcm@openssh.com",
	"aes256-gcm@openssh.com",
	"chacha20-poly1305@openssh.com",
	NULL,
};

static const struct key_def ssh_defs[] = {
	{ .name = "tool",
	  .type = KEY_ENUM,
	  .offset = offsetof(struct ssh_opts, tool),
	  .def = "scp",
	  .values = (const char *const[]){ "scp", "rsync", "tar", NULL },
	  .help = "scp: scp -O -r of the dataset's entries; rsync: rsync -a over ssh; tar: a tar "
		  "stream into ssh GUEST tar -x" },
	{ .name = "cipher",
	  .type = KEY_ENUM,
	  .offset = offsetof(struct ssh_opts, cipher),
	  .def = "default",
	  .values = ssh_ciphers,
	  .help = "the ssh cipher (ssh -c); default: what the client and the guest's server agree "
		  "on" },
};
METHOD_OPTIONS(ssh_keys, "ssh", struct ssh_opts, ssh_defs);

#define OPTS(ctx) METHOD_OPTS((ctx)->method, struct ssh_opts)

static struct ssh_state *state(struct method_ctx *ctx)
{
	if (!ctx->state)
		ctx->state = xcalloc(1, sizeof(struct ssh_state));
	return ctx->state;
}

static char *ssh_supports(const struct method_ctx *ctx)
{
	char *why = plan_rules_skip(ctx->plan, ctx->cell);
	if (why)
		return why;
	/* on ferry's private network the client runs inside the run's namespace */
	if (ctx->cell->vm->nic.backend == PLAN_NIC_PRIVATE && ctx->machine &&
	    !machine_can_net_spawn(ctx->machine))
		return xstrdup(
		    "ssh: this machine cannot run the host's ssh client in ferry's private "
		    "network (nic backend private): use user networking");
	static const char *const need[] = { "ssh", "ssh-keygen" };
	for (size_t i = 0; i < ELEMENTSOF(need); i++)
		if (!have_program(need[i]))
			return xasprintf("ssh: the host has no '%s' (openssh-client)", need[i]);
	if (OPTS(ctx)->tool == SSH_SCP && !have_program("scp"))
		return xstrdup("ssh: the host has no 'scp' (openssh-client)");
	if (OPTS(ctx)->tool == SSH_RSYNC && !have_program("rsync"))
		return xstrdup("ssh: the host has no 'rsync' (Debian's rsync)");
	return NULL;
}

static int ssh_add_devices(struct method_ctx *ctx, struct method_boot_needs *needs)
{
	(void)ctx;
	needs->nic = true;
	return 0;
}

/* ---- keys ---- */

static int keygen(struct method_ctx *ctx, const char *path)
{
	const char *argv[] = { "ssh-keygen", "-q",        "-t", "ed25519", "-N", "",
			       "-C",         "ferry-run", "-f", path,      NULL };
	_cleanup_free_ char *err = NULL;
	if (proc_run(argv, NULL, &err) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "ssh: making a key: %s", err);
	return 0;
}

char *ssh_key_path(const struct ssh_state *s, const char *name)
{
	return xasprintf("%s/%s", s->keydir, name);
}

int ssh_make_keys(struct method_ctx *ctx, struct ssh_state *s)
{
	s->keydir = xasprintf("%s/ssh-keys", ctx->cell_dir);
	if (mkdir(s->keydir, 0700) < 0 && errno != EEXIST)
		return method_fail(ctx, ERROR_INFRA, NULL, "ssh: cannot create '%s': %s", s->keydir,
				   strerror(errno));
	_cleanup_free_ char *host = ssh_key_path(s, "host_key");
	_cleanup_free_ char *client = ssh_key_path(s, "client_key");
	if (keygen(ctx, host) < 0 || keygen(ctx, client) < 0)
		return -1;
	_cleanup_free_ char *pub = xasprintf("%s.pub", host);
	size_t len = 0;
	_cleanup_free_ char *hostpub = read_file(pub, &len);
	if (!hostpub || !len)
		return method_fail(ctx, ERROR_INFRA, NULL, "ssh: cannot read '%s'", pub);
	/* "type base64 comment": the known_hosts line keeps type and key */
	char *sp = strchr(hostpub, ' ');
	sp = sp ? strchr(sp + 1, ' ') : NULL;
	if (sp)
		*sp = '\0';
	_cleanup_free_ char *line = s->port == 22
					? xasprintf("%s %s\n", s->addr, hostpub)
					: xasprintf("[%s]:%d %s\n", s->addr, s->port, hostpub);
	_cleanup_free_ char *known = ssh_key_path(s, "known_hosts");
	_cleanup_free_ char *err = NULL;
	if (write_file_atomic(known, line, strlen(line), 0600, &err) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "ssh: %s", err);
	return 0;
}

/* ---- the guest's server ---- */

static int push(struct method_ctx *ctx, const char *host_path, const char *guest_path)
{
	_cleanup_(machine_err_clear) struct machine_err e = { 0 };
	uint64_t n = 0;
	if (machine_guest_push_file(ctx->machine, ctx->guest, host_path, guest_path, 48 * 1024, &n,
				    &e) < 0)
		return method_fail_op(ctx, ERROR_INFRA, &e, e.msg, "ssh: pushing %s into the guest",
				      guest_path);
	return 0;
}

/* The guest's server in the foreground, its log in SSH_GUEST_DIR/log: sshd where the guest
 * has it (Debian), else dropbear (the built-in guest). */
#define SSH_SERVER_CMD                                                                             \
	"cd " SSH_GUEST_DIR " || exit 1; "                                                         \
	"if [ -x /usr/sbin/sshd ]; then mkdir -p /run/sshd && chmod 0755 /run/sshd && "            \
	"exec /usr/sbin/sshd -D -e -f " SSH_GUEST_DIR "/sshd_config 2>>log; "                      \
	"elif command -v dropbear >/dev/null; then "                                               \
	"dropbearconvert openssh dropbear host_key host_key.db >>log 2>&1 || exit 1; "             \
	"exec dropbear -F -E -s -j -k -p %s -r host_key.db 2>>log; "                               \
	"else echo 'the guest has no ssh server (sshd or dropbear)' >>log; exit 127; fi"

#define SSHD_CONFIG                                                                                \
	"Port %d\n%s%s%sHostKey " SSH_GUEST_DIR "/host_key\nAuthorizedKeysFile " SSH_GUEST_DIR     \
	"/authorized_keys\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"         \
	"KbdInteractiveAuthentication no\nUsePAM no\nPidFile none\nStrictModes no\n"               \
	"Subsystem sftp internal-sftp\n"

int ssh_start_server(struct method_ctx *ctx, struct ssh_state *s)
{
	int port = ssh_listen_port(s);
	_cleanup_free_ char *host = ssh_key_path(s, "host_key");
	_cleanup_free_ char *cpub = ssh_key_path(s, "client_key.pub");
	_cleanup_free_ char *conf = ssh_key_path(s, "sshd_config");
	const char *la = s->listen_addr;
	_cleanup_free_ char *text =
	    xasprintf(SSHD_CONFIG, port, la ? "ListenAddress " : "", la ? la : "", la ? "\n" : "");
	_cleanup_free_ char *where = la ? xasprintf("%s:%d", la, port) : xasprintf("%d", port);
	_cleanup_free_ char *err = NULL;
	if (write_file_atomic(conf, text, strlen(text), 0600, &err) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "ssh: %s", err);
	/* dropbear reads root's own authorized_keys: never one the guest already has */
	if (method_guest_sh(ctx, "ssh: the guest's key directory",
			    "if [ -e /root/.ssh/authorized_keys ] && ! [ -x /usr/sbin/sshd ]; then "
			    "echo 'the guest has its own /root/.ssh/authorized_keys' "
			    ">&2; exit 1; fi; rm -rf " SSH_GUEST_DIR
			    " && mkdir -m 0700 " SSH_GUEST_DIR "",
			    NULL) < 0)
		return -1;
	s->guest_files = true;
	if (push(ctx, host, SSH_GUEST_DIR "/host_key") < 0 ||
	    push(ctx, cpub, SSH_GUEST_DIR "/authorized_keys") < 0 ||
	    push(ctx, conf, SSH_GUEST_DIR "/sshd_config") < 0)
		return -1;
	if (method_guest_sh(
		ctx, "ssh: the guest's key files",
		"chmod 0600 " SSH_GUEST_DIR "/* && if ! [ -x /usr/sbin/sshd ]; then "
		"{ [ -d /root/.ssh ] || { mkdir -m 0700 /root/.ssh && touch " SSH_GUEST_DIR
		"/.made; }; } && cp " SSH_GUEST_DIR "/authorized_keys /root/.ssh/ && "
		"touch " SSH_GUEST_DIR "/.copied && chmod 0600 "
		"/root/.ssh/authorized_keys; fi",
		NULL) < 0)
		return -1;
	_cleanup_free_ char *cmd = xasprintf(SSH_SERVER_CMD, where);
	if (guestproc_start(ctx, "ssh: the guest's server", cmd, &s->server) < 0)
		return -1;
	/* listening: the port in /proc/net/tcp (or tcp6) in state 0A, at most 30 s */
	_cleanup_free_ char *wait = xasprintf(
	    "i=0; while ! grep -qi ':%04X 0\\{8,32\\}:0000 0A' /proc/net/tcp /proc/net/tcp6 "
	    "2>/dev/null; do if [ $i -ge 300 ]; then echo 'the ssh server did not listen on port "
	    "%d within 30 s:' >&2; tail -5 " SSH_GUEST_DIR "/log >&2; exit 1; fi; sleep 0.1; "
	    "i=$((i+1)); done; if [ -x /usr/sbin/sshd ]; then echo sshd; else echo dropbear; fi",
	    port, port);
	_cleanup_free_ char *out = NULL;
	if (method_guest_sh(ctx, "ssh: the guest's server", wait, &out) < 0)
		return -1;
	/* the server SSH_SERVER_CMD chose, by the same test */
	free(s->server_name);
	s->server_name = xstrndup(out, strcspn(out, "\n"));
	return 0;
}

/* Where the client connects: the machine's loopback address of the guest, or a forward. */
static int route(struct method_ctx *ctx, struct ssh_state *s)
{
	const char *addr = machine_guest_net_addr(ctx->machine, ctx->guest);
	if (addr) {
		/* the fake machine's guests are on the host's loopback; a guest on the private
		   network is reached from inside the run's namespace (machine_net_spawn) */
		s->in_netns = strncmp(addr, "127.", 4) != 0;
		if (s->in_netns && !machine_can_net_spawn(ctx->machine))
			return method_fail(
			    ctx, ERROR_INFRA, NULL,
			    "ssh: the guest is on ferry's private network (%s), "
			    "where this machine cannot run the host's ssh client: use "
			    "user networking",
			    addr);
		s->addr = addr;
		s->port = SSH_GUEST_PORT;
		return 0;
	}
	s->in_netns = false;
	s->addr = "127.0.0.1";
	if (s->fwd_guest && STREQ(s->fwd_guest, ctx->guest->name)) {
		s->port = s->fwd_port;
		return 0;
	}
	_cleanup_free_ char *err = NULL;
	int port = 0;
	int fd = loopback_socket(false, &port, &err);
	if (fd < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "ssh: %s", err);
	close(fd);
	_cleanup_(machine_err_clear) struct machine_err e = { 0 };
	if (machine_guest_hostfwd(ctx->machine, ctx->guest, port, SSH_GUEST_PORT, &e) < 0)
		return method_fail_op(ctx, ERROR_INFRA, &e, NULL, "ssh: %s", e.msg);
	free(s->fwd_guest);
	s->fwd_guest = xstrdup(ctx->guest->name);
	s->fwd_port = s->port = port;
	return 0;
}

static int ssh_before_phase(struct method_ctx *ctx, enum result_phase p)
{
	if (p != PHASE_PREPARE)
		return 0;
	if (OPTS(ctx)->tool == SSH_SCP &&
	    method_refuse_links(ctx, "ssh: scp copies what a symbolic link points to",
				"which may be outside the dataset; use tool rsync or tar, or a "
				"dataset without links") < 0)
		return -1;
	struct ssh_state *s = state(ctx);
	if (route(ctx, s) < 0 || ssh_make_keys(ctx, s) < 0)
		return -1;
	return ssh_start_server(ctx, s);
}

/* ---- the client ---- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The ssh options every tool passes (argv pieces; the strings are s's or static). */
struct client {
	char *strs[8];
	const char *argv[64];
	size_t n;
};

static void client_clear(struct client *c)
{
	for (size_t i = 0; i < ELEMENTSOF(c->strs); i++)
		free(c->strs[i]);
}

static void add(struct client *c, const char *a)
{
	c->argv[c->n++] = a;
}

/* -F /dev/null, the run's key and known_hosts, no prompt, the cipher; port_flag "-p" or "-P" */
static void ssh_options(struct client *c, const struct method_ctx *ctx, const struct ssh_state *s,
			const char *port_flag)
{
	c->strs[0] = ssh_key_path(s, "client_key");
	c->strs[1] = xasprintf("UserKnownHostsFile=%s/known_hosts", s->keydir);
	c->strs[2] = xasprintf("%d", s->port);
	add(c, "-F");
	add(c, "/dev/null");
	add(c, "-i");
	add(c, c->strs[0]);
	add(c, "-o");
	add(c, c->strs[1]);
	static const char *const fixed[] = { "GlobalKnownHostsFile=/dev/null",
					     "StrictHostKeyChecking=yes",
					     "IdentitiesOnly=yes",
					     "BatchMode=yes",
					     "ConnectTimeout=30",
					     "LogLevel=ERROR" };
	for (size_t i = 0; i < ELEMENTSOF(fixed); i++) {
		add(c, "-o");
		add(c, fixed[i]);
	}
	add(c, port_flag);
	add(c, c->strs[2]);
	if (OPTS(ctx)->cipher) {
		add(c, "-c");
		add(c, ssh_ciphers[OPTS(ctx)->cipher]);
	}
}

/* rsync's -e: the same options as one command line (rsync splits it at spaces and honours
 * single quotes, so a path holding one is refused). */
static char *rsync_rsh(struct method_ctx *ctx, const struct ssh_state *s)
{
	struct client c = { 0 };
	ssh_options(&c, ctx, s, "-p");
	char *line = xstrdup("ssh");
	for (size_t i = 0; i < c.n; i++) {
		char *q = xasprintf("%s '%s'", line, c.argv[i]);
		free(line);
		line = q;
	}
	client_clear(&c);
	return line;
}

static int run_client(struct method_ctx *ctx, const char *const *argv, int stdin_fd)
{
	const struct proc_opts o = { .split_stderr = true,
				     .timeout_ms = ctx->timeout_ms,
				     .stdin_fd = stdin_fd };
	struct proc_result r = { 0 }; /* cleared below also when it never started */
	_cleanup_free_ char *err = NULL;
	const struct ssh_state *s = ctx->state;
	int started;
	if (s && s->in_netns) {
		_cleanup_(machine_err_clear) struct machine_err e = { 0 };
		started = machine_net_spawn(ctx->machine, argv, &o, &r, &e);
		if (started < 0)
			err = e.msg ? xstrdup(e.msg)
				    : xstrdup("cannot run it in the private network");
	} else {
		started = proc_spawn(argv, &o, &r, &err);
	}
	if (started < 0) {
		proc_result_clear(&r);
		bool timeout = err && strstr(err, "did not finish");
		return method_fail(ctx, timeout ? ERROR_TIMEOUT : ERROR_INFRA, NULL, "ssh: %s: %s",
				   argv[0], err);
	}
	int rc = 0;
	if (r.status != 0) {
		_cleanup_free_ char *line = proc_last_line(r.errout, strlen(r.errout));
		rc = method_fail(ctx, ERROR_INFRA, r.errout, "ssh: %s exited with status %d: %s",
				 argv[0], r.status, line);
	}
	proc_result_clear(&r);
	return rc;
}

/* The names in dir but . and .., sorted. Returns 0 or -1 with *err. */
static int list_dir(const char *dir, char ***names, size_t *n, char **err)
{
	DIR *d = opendir(dir);
	if (!d) {
		*err = xasprintf("cannot open '%s': %s", dir, strerror(errno));
		return -1;
	}
	size_t cap = 0;
	*names = NULL;
	*n = 0;
	for (struct dirent *de; (de = readdir(d));) {
		if (STREQ(de->d_name, ".") || STREQ(de->d_name, ".."))
			continue;
		*names = xgrow(*names, &cap, *n + 1, sizeof(char *));
		(*names)[(*n)++] = xstrdup(de->d_name);
	}
	closedir(d);
	if (*n)
		qsort(*names, *n, sizeof(char *), cmp_str);
	return 0;
}

/* scp -O -r of every top-level entry of the dataset into the landing directory */
static int scp_copy(struct method_ctx *ctx, struct ssh_state *s, const char *dest)
{
	struct client c = { 0 };
	add(&c, "scp");
	add(&c, "-O");
	add(&c, "-r");
	add(&c, "-p");
	add(&c, "-q");
	ssh_options(&c, ctx, s, "-P");
	_cleanup_free_ char **names = NULL;
	size_t n = 0;
	_cleanup_free_ char *err = NULL;
	if (list_dir(ctx->dataset_dir, &names, &n, &err) < 0) {
		client_clear(&c);
		return method_fail(ctx, ERROR_INFRA, NULL, "ssh: %s", err);
	}
	const char **argv = xcalloc(c.n + n + 2, sizeof(*argv));
	memcpy(argv, c.argv, c.n * sizeof(*argv));
	for (size_t i = 0; i < n; i++)
		argv[c.n + i] = xasprintf("%s/%s", ctx->dataset_dir, names[i]);
	argv[c.n + n] = dest;
	int rc = n ? run_client(ctx, argv, 0) : 0;
	for (size_t i = 0; i < n; i++) {
		free((char *)argv[c.n + i]);
		free(names[i]);
	}
	free(argv);
	client_clear(&c);
	return rc;
}

static int rsync_copy(struct method_ctx *ctx, struct ssh_state *s, const char *dest)
{
	if (strchr(s->keydir, '\''))
		return method_fail(ctx, ERROR_INFRA, NULL,
				   "ssh: rsync cannot pass the key path '%s' (it holds a quote)",
				   s->keydir);
	_cleanup_free_ char *rsh = rsync_rsh(ctx, s);
	_cleanup_free_ char *src = xasprintf("%s/", ctx->dataset_dir);
	const char *argv[] = { "rsync", "-a", "-e", rsh, src, dest, NULL };
	return run_client(ctx, argv, 0);
}

/* tar: libarchive packs into a pipe on a thread while ssh runs tar -x in the guest */
struct packer {
	pthread_t thread;
	int fd;
	const struct method_ctx *ctx;
	char *err;
	int rc;
};

static int pipe_sink(void *ud, const void *buf, size_t len, char **err)
{
	struct packer *p = ud;
	if (write_all(p->fd, buf, len) < 0) {
		*err = xasprintf("writing into ssh: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void *packer_main(void *arg)
{
	struct packer *p = arg;
	const struct plan_archive tar = { .format = PLAN_ARCHIVE_TAR };
	p->rc = pack_stream(&tar, p->ctx->dataset_dir, p->ctx->manifest, 1 << 16, pipe_sink, p,
			    &p->err);
	close(p->fd);
	return NULL;
}

static int tar_copy(struct method_ctx *ctx, struct ssh_state *s)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "ssh: pipe: %s", strerror(errno));
	struct packer p = { .fd = fds[1], .ctx = ctx };
	if (pthread_create(&p.thread, NULL, packer_main, &p) != 0) {
		close(fds[0]);
		close(fds[1]);
		return method_fail(ctx, ERROR_INFRA, NULL, "ssh: cannot start the packer");
	}
	struct client c = { 0 };
	add(&c, "ssh");
	ssh_options(&c, ctx, s, "-p");
	add(&c, "-l");
	add(&c, "root");
	add(&c, s->addr);
	_cleanup_free_ char *land = shell_quote(ctx->landing);
	c.strs[3] = xasprintf("tar -x -f - -C %s", land);
	add(&c, c.strs[3]);
	add(&c, NULL);
	int rc = run_client(ctx, c.argv, fds[0]);
	/* ssh is gone: a packer still writing gets EPIPE (SIGPIPE is ignored by ferry) */
	close(fds[0]);
	pthread_join(p.thread, NULL);
	client_clear(&c);
	if (rc == 0 && p.rc < 0)
		rc = method_fail(ctx, ERROR_INFRA, NULL, "ssh: packing: %s", p.err);
	free(p.err);
	return rc;
}

static int ssh_transfer(struct method_ctx *ctx)
{
	struct ssh_state *s = state(ctx);
	_cleanup_free_ char *dest = xasprintf("root@%s:%s/", s->addr, ctx->landing);
	switch (OPTS(ctx)->tool) {
	case SSH_SCP: return scp_copy(ctx, s, dest);
	case SSH_RSYNC: return rsync_copy(ctx, s, dest);
	case SSH_TAR: return tar_copy(ctx, s);
	}
	return method_fail(ctx, ERROR_INFRA, NULL, "ssh: unknown tool");
}

static int ssh_finalize(struct method_ctx *ctx)
{
	return method_guest_sh(ctx, "ssh: sync", "sync", NULL);
}

/* scp copies what a symbolic link points to, not the link (a dataset with links is refused
 * before it: ssh_before_phase) */
static int ssh_verify(struct method_ctx *ctx)
{
	return method_verify_dir(ctx, ctx->landing, OPTS(ctx)->tool != SSH_SCP);
}

static void remove_keys(struct ssh_state *s)
{
	if (!s->keydir)
		return;
	(void)rm_tree(s->keydir, NULL);
	free(s->keydir);
	s->keydir = NULL;
}

/* The cleanup's waits between its checks, in seconds (5 s in all; "0" ends the checks). Doubling
 * from 50 ms: a server that goes at once is seen by the first or second check, and one that does
 * not go costs ten checks (a few processes in the guest each, slow under TCG) instead of 51. */
#define SSH_CLEANUP_WAITS "0.05 0.1 0.2 0.4 0.8 1 1 1 0.45 0"

/*
 * The cleanup's guest command: the server killed before it (guestproc_kill), root's
 * authorized_keys removed where the start copied it there, the key directory removed; then
 * checked, waiting at most 5 s (SSH_CLEANUP_WAITS) for the server to go: no process left in the key
 * directory (the server started there, and sshd's per-connection children inherit it:
 * SSH_SERVER_CMD), nothing listening on its port, the key directory, sshd's /run/sshd and a copied
 * authorized_keys gone. Prints "gone" when all of that holds, else says on stderr what is left and
 * fails. Format: the port twice.
 */
#define SSH_CLEANUP_CMD                                                                            \
	"c=; [ -e " SSH_GUEST_DIR "/.copied ] && c=1; if [ -n \"$c\" ]; then rm -f "               \
	"/root/.ssh/authorized_keys; fi; if [ -e " SSH_GUEST_DIR "/.made ]; then rmdir "           \
	"/root/.ssh; fi; rm -rf " SSH_GUEST_DIR " /run/sshd; left=; "                              \
	"for d in " SSH_CLEANUP_WAITS "; do left=; "                                               \
	"if ls -l /proc/[0-9]*/cwd 2>/dev/null | grep -q -- '-> " SSH_GUEST_DIR "'; then "         \
	"left=\"$left, a process in " SSH_GUEST_DIR "\"; fi; "                                     \
	"if grep -qi ':%04X 0\\{8,32\\}:0000 0A' /proc/net/tcp /proc/net/tcp6 2>/dev/null; then "  \
	"left=\"$left, a listener on port %d\"; fi; [ -z \"$left\" ] || [ $d = 0 ] && break; "     \
	"sleep $d; done; for f in " SSH_GUEST_DIR " /run/sshd; do [ -e $f ] && "                   \
	"left=\"$left, $f\"; done; if [ -n \"$c\" ] && [ -e /root/.ssh/authorized_keys ]; then "   \
	"left=\"$left, /root/.ssh/authorized_keys\"; fi; if [ -n \"$left\" ]; then echo "          \
	"\"the guest's ssh server left${left#,}\" >&2; exit 1; fi; echo gone"

int ssh_stop_server(struct method_ctx *ctx, struct ssh_state *s, bool *checked)
{
	int rc = 0;
	if (checked)
		*checked = false;
	if (ctx->guest && !run_interrupted()) {
		if (s->server)
			guestproc_kill(ctx, s->server);
		if (s->guest_files || s->server) {
			int port = ssh_listen_port(s);
			_cleanup_free_ char *cmd = xasprintf(SSH_CLEANUP_CMD, port, port);
			_cleanup_free_ char *out = NULL;
			rc = method_guest_sh(ctx, "ssh: cleanup", cmd, &out);
			if (rc == 0 && checked)
				*checked = true;
		}
	}
	s->server = 0;
	s->guest_files = false;
	free(s->server_name);
	s->server_name = NULL;
	remove_keys(s);
	return rc;
}

static int ssh_cleanup(struct method_ctx *ctx)
{
	struct ssh_state *s = state(ctx);
	_cleanup_free_ char *server = s->server_name ? xstrdup(s->server_name) : NULL;
	bool checked = false;
	int rc = ssh_stop_server(ctx, s, &checked);
	if (checked && server) {
		/* which server ran, and that the check found it gone with its keys */
		if (!ctx->observed)
			ctx->observed = json_object();
		json_object_set_new(ctx->observed, "ssh",
				    json_pack("{s:s,s:b}", "server", server, "cleanup_checked", 1));
	}
	return rc;
}

void ssh_state_clear(struct ssh_state *s)
{
	remove_keys(s);
	free(s->server_name);
	s->server_name = NULL;
	free(s->fwd_guest);
	s->fwd_guest = NULL;
}

static void ssh_free_state(struct method_ctx *ctx)
{
	if (ctx->state)
		ssh_state_clear(ctx->state);
	free(ctx->state);
	ctx->state = NULL;
	json_decref(ctx->observed);
	ctx->observed = NULL;
}

const struct method_ops method_ssh = {
	.name = "ssh",
	.summary = "scp, rsync or tar over ssh into the guest's own server",
	.options = &ssh_keys,
	.needs = { .remote_why = "the ssh client connects to a port forwarded on ferry's own "
				 "loopback, which a remote libvirt host does not share" },
	.supports = ssh_supports,
	.add_devices = ssh_add_devices,
	.before_phase = ssh_before_phase,
	.transfer = ssh_transfer,
	.finalize = ssh_finalize,
	.verify = ssh_verify,
	.cleanup = ssh_cleanup,
	.free_state = ssh_free_state,
};
