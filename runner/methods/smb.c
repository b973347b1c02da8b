/* SPDX-License-Identifier: MIT */
/*
 * share driver smb: SMB as the studies used it (000's share, 002's two Azure Files shares, 003's
 * Explorer copy). Samba's smbd serves folders of the run directory from inside the run's private
 * network (machine_net_run(): the namespace the guests' taps are in), and the guest mounts them
 * with its kernel's cifs client (SMB 3.0). Nothing listens on the host's own network.
 *
 * The servers: one smbd per address of the host's end of the private network, started at the
 * first run of the first cell that needs it and kept for the run (cells of several datasets and
 * modes share them); each has its own configuration, private, lock, state, cache and pid
 * directories under <run>/smb/s<N>/ and listens only on its address (bind interfaces only).
 * Server 0 listens on 10.0.2.2, server 1 (to: other-server) on 10.0.2.3. Each serves two shares,
 * `a` and `b` (<run>/smb/s<N>/a and b). A run_defer() callback kills each server's process group
 * when the run closes: after success, failure, SIGINT and SIGTERM alike (before the namespace
 * goes); the run directory holding their files goes with the run.
 *
 * Who writes: every share is `guest only` with `guest account = nobody`, so whatever the guest
 * does on a share smbd does as the unprivileged user nobody (files 0644 at most, no setuid bit, no
 * root-owned file on the host); unix extensions are off and symbolic links are neither followed
 * nor made. Not `force user = nobody` on top: smbd checks access against the NT ACL it derives
 * from the mode bits, where the owner uid 65534 maps to the guest account's SID (<domain>-501),
 * while a forced user's token holds the Unix User SID S-1-22-1-65534 instead; that token matched
 * only the "other" r-x entry, so every create, rename and unlink on a share was refused
 * (NT_STATUS_ACCESS_DENIED in check_parent_access_fsp) and only reads worked. The guest mounts with
 * `sec=none` (a null session: the share needs no password; it reaches only what nobody can). A
 * dataset file is staged into the source share as a hard link only when nobody can read it and
 * cannot write it (the cache's root-owned 0644 files), else copied and owned by nobody.
 *
 * The source is <share a of server 0>/<cell>/src, staged before each run (untimed: 9p exports
 * the dataset itself, which no run pays for), or with `archive:` the archive packed there in
 * prepare (timed, as for 9p). Where the files go (`to:`, study 002):
 *   guest        the landing directory on the guest's target disk (the 9p/virtiofs question)
 *   same-share   <share a of server 0>/<cell>/dst: one mount; a move is a rename on the server
 *   other-share  <share b of server 0>/<cell>/dst: two mounts, one server, one SMB session
 *   other-server <share a of server 1>/<cell>/dst: two mounts, two servers
 * transfer mounts, copies or moves, syncs and unmounts in one guest command (as 9p does).
 * Verification lists the destination in the guest: the landing directory, or the destination
 * share mounted again.
 *
 * Study 000's Copy-Item-Smb copied from the host onto the guest's own share (the guest served
 * C:\). Here the guest is the client and the host the server: a Samba server inside the guest
 * would need Samba's libraries in the built-in guest's initramfs, while the cifs client is the
 * guest kernel's own. The bytes still cross from the host onto the guest's disk over SMB, which
 * is the question 000 asked; who serves is the difference, and the write-up says so. The
 * study's way round, the Debian guest serving and the host's smbclient writing, is
 * `served_by: guest` (smb-guest.c).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "dataset.h"
#include "fs.h"
#include "machine.h"
#include "run.h"
#include "proc.h"
#include "util.h"
#include "method.h"
#include "share.h"
#include "stream.h"
#include "rules.h"
#include "smb.h"

#define GUEST_MNT0 "/mnt/ferry-smb0"
#define GUEST_MNT1 "/mnt/ferry-smb1"

/* ---- the servers ---- */

struct smb_server {
	struct run *run;
	unsigned index;
	char *dir;  /* <run>/smb/s<index> */
	char *addr; /* where it listens */
	long pgid;  /* its process group (smbd -D leads a session of its own); 0: not running */
	struct smb_server *next;
};

static struct smb_server *servers;

const char *smb_program(const char *name)
{
	static char path[64];
	static const char *const dirs[] = { "/usr/sbin", "/usr/bin" };
	for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
		snprintf(path, sizeof(path), "%s/%s", dirs[i], name);
		if (access(path, X_OK) == 0)
			return path;
	}
	return NULL;
}

/* Whether a process of group pgid still runs: zombies waiting for their reaper do not (smbd -D
 * is reparented to PID 1, which reaps them in its own time). */
bool smb_group_running(long pgid)
{
	if (kill((pid_t)-pgid, 0) < 0 && errno == ESRCH)
		return false;
	_cleanup_(closedirp) DIR *d = opendir("/proc");
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		char path[300], buf[512];
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		/* pid (comm) state ppid pgrp ...: comm may hold anything but ends at the last ')'
		 */
		char *p = strrchr(buf, ')');
		char state;
		long ppid, pgrp;
		if (p && sscanf(p + 1, " %c %ld %ld", &state, &ppid, &pgrp) == 3 && pgrp == pgid &&
		    state != 'Z' && state != 'X')
			return true;
	}
	return false;
}

void smb_server_kill(long pgid)
{
	if (pgid <= 1)
		return;
	kill((pid_t)-pgid, SIGTERM);
	/* smbd ends its children and itself on SIGTERM within milliseconds */
	for (unsigned i = 0; i < 100 && smb_group_running(pgid); i++)
		usleep(20000);
	if (smb_group_running(pgid))
		kill((pid_t)-pgid, SIGKILL);
}

/* run_close(): stop the server (whatever state it reached) and forget it. */
static void server_stop(void *data)
{
	struct smb_server *srv = data;
	smb_server_kill(srv->pgid);
	for (struct smb_server **p = &servers; *p; p = &(*p)->next)
		if (*p == srv) {
			*p = srv->next;
			break;
		}
	free(srv->dir);
	free(srv->addr);
	free(srv);
}

/* What every share is (both sections). */
static const char share_conf[] = "\tread only = no\n"
				 "\tguest ok = yes\n"
				 "\tguest only = yes\n"
				 "\tcreate mask = 0644\n"
				 "\tforce create mode = 0\n"
				 "\tdirectory mask = 0755\n"
				 "\tforce directory mode = 0\n"
				 "\tstore dos attributes = no\n"
				 "\tea support = no\n"
				 "\tmap archive = no\n";

char *smb_config_shares(const char *dir, const char *addr, unsigned index, const char *a,
			const char *b)
{
	/* every path smbd writes is below dir; nothing of /etc/samba or /var/lib/samba is read */
	_cleanup_free_ char *sb = b ? xasprintf("[b]\n\tpath = %s\n%s", b, share_conf) : NULL;
	return xasprintf("[global]\n"
			 "\tserver role = standalone server\n"
			 "\tworkgroup = FERRY\n"
			 "\tnetbios name = FERRY-S%u\n"
			 "\tinterfaces = %s\n"
			 "\tbind interfaces only = yes\n"
			 "\thosts allow = 10.0.2.0/24\n"
			 "\tsmb ports = 445\n"
			 "\tdisable netbios = yes\n"
			 "\tserver min protocol = SMB2_10\n"
			 "\tprivate dir = %s/private\n"
			 "\tbinddns dir = %s/private\n"
			 "\tlock directory = %s/lock\n"
			 "\tstate directory = %s/state\n"
			 "\tcache directory = %s/cache\n"
			 "\tpid directory = %s/pid\n"
			 "\tncalrpc dir = %s/ncalrpc\n"
			 "\tlog file = %s/log.smbd\n"
			 "\tlogging = file\n"
			 "\tmax log size = 0\n"
			 "\tpassdb backend = tdbsam:%s/private/passdb.tdb\n"
			 "\tmap to guest = Bad User\n"
			 "\tguest account = nobody\n"
			 "\tload printers = no\n"
			 "\tprintcap name = /dev/null\n"
			 "\tdisable spoolss = yes\n"
			 "\tunix extensions = no\n"
			 "\twide links = no\n"
			 "\tfollow symlinks = no\n"
			 "\tkernel oplocks = no\n"
			 "\tusershare path =\n"
			 "\tregistry shares = no\n"
			 "[a]\n"
			 "\tpath = %s\n"
			 "%s%s",
			 index, addr, dir, dir, dir, dir, dir, dir, dir, dir, dir, a, share_conf,
			 sb ? sb : "");
}

char *smb_config(const char *dir, const char *addr, unsigned index)
{
	_cleanup_free_ char *a = xasprintf("%s/a", dir);
	_cleanup_free_ char *b = xasprintf("%s/b", dir);
	return smb_config_shares(dir, addr, index, a, b);
}

/* The last bytes (at most sizeof buf - 1) of the file path, NUL-terminated; "" when unreadable. */
static void read_tail(const char *path, char *buf, size_t size)
{
	buf[0] = '\0';
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return;
	off_t off = st.st_size > (off_t)size - 1 ? st.st_size - (off_t)size + 1 : 0;
	ssize_t n = pread(fd, buf, size - 1, off);
	buf[n > 0 ? n : 0] = '\0';
}

/* Whether something accepts a TCP connection on addr:445 in the private network. */
static bool server_listens(struct method_ctx *ctx, const char *addr)
{
	int fd = -1;
	const char *host = NULL;
	struct machine_err e = { 0 };
	if (machine_net_socket(ctx->machine, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, &fd, &host, &e) <
	    0) {
		machine_err_clear(&e);
		return false;
	}
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(445) };
	bool ok = inet_pton(AF_INET, addr, &sa.sin_addr) == 1 &&
		  connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

static int mkdir_nobody(const char *path, const struct passwd *pw)
{
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -1;
	return pw ? lchown(path, pw->pw_uid, pw->pw_gid) : 0;
}

/* The server's directories and configuration, then `smbd -D` in the private network; waits
 * until its pid file names it. */
static int server_start(struct method_ctx *ctx, struct smb_server *srv)
{
	static const char *const subs[] = { "private", "lock", "state", "cache", "pid", "ncalrpc" };
	const struct passwd *pw = getpwnam("nobody");
	_cleanup_free_ char *root = xasprintf("%s/smb", run_dir(ctx->run));
	if ((mkdir(root, 0755) < 0 && errno != EEXIST) || mkdir(srv->dir, 0755) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "share: smb: mkdir '%s': %s", srv->dir,
				   strerror(errno));
	for (size_t i = 0; i < ELEMENTSOF(subs); i++) {
		_cleanup_free_ char *d = xasprintf("%s/%s", srv->dir, subs[i]);
		if (mkdir(d, 0700) < 0)
			return method_fail(ctx, ERROR_INFRA, NULL, "share: smb: mkdir '%s': %s", d,
					   strerror(errno));
	}
	for (const char *s = "ab"; *s; s++) {
		_cleanup_free_ char *d = xasprintf("%s/%c", srv->dir, *s);
		if (mkdir_nobody(d, pw) < 0)
			return method_fail(ctx, ERROR_INFRA, NULL, "share: smb: mkdir '%s': %s", d,
					   strerror(errno));
	}
	_cleanup_free_ char *conf = xasprintf("%s/smb.conf", srv->dir);
	_cleanup_free_ char *text = smb_config(srv->dir, srv->addr, srv->index);
	_cleanup_free_ char *err = NULL;
	if (write_file_atomic(conf, text, strlen(text), 0644, &err) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "share: smb: %s", err);
	const char *argv[] = { smb_program("smbd"), "-D", "-s", conf, NULL };
	struct machine_err e = { 0 };
	_cleanup_free_ char *out = NULL;
	if (machine_net_run(ctx->machine, argv, &out, &e) < 0) {
		int r = method_fail_op(ctx, ERROR_INFRA, &e, NULL,
				       "share: smb: cannot start smbd: %s", e.msg);
		machine_err_clear(&e);
		return r;
	}
	/* the daemon writes its pid once it listens */
	_cleanup_free_ char *pidfile = xasprintf("%s/pid/smbd.pid", srv->dir);
	char buf[2048];
	for (unsigned i = 0; i < 1500 && !run_interrupted(); i++) {
		read_tail(pidfile, buf, 32);
		long p = strtol(buf, NULL, 10);
		if (p > 1) {
			srv->pgid = p;
			break;
		}
		usleep(20000);
	}
	/* then until it accepts a connection: the pid file comes before the listening socket */
	for (unsigned i = 0; srv->pgid && i < 1500 && !run_interrupted(); i++) {
		if (server_listens(ctx, srv->addr))
			return 0;
		usleep(20000);
	}
	_cleanup_free_ char *log = xasprintf("%s/log.smbd", srv->dir);
	read_tail(log, buf, sizeof(buf));
	_cleanup_free_ char *last = proc_last_line(buf, strlen(buf));
	return method_fail(ctx, ERROR_INFRA, last, "share: smb: smbd on %s did not %s within 30 s",
			   srv->addr, srv->pgid ? "accept a connection" : "write its pid file");
}

/* Server index of the run, started at the first need. NULL with ctx->err. */
static struct smb_server *server_get(struct method_ctx *ctx, unsigned index)
{
	for (struct smb_server *s = servers; s; s = s->next) {
		if (s->run != ctx->run || s->index != index)
			continue;
		if (!s->pgid)
			method_fail(ctx, ERROR_INFRA, NULL,
				    "share: smb: server %u of this run did not start earlier",
				    index);
		return s->pgid ? s : NULL;
	}
	struct smb_server *srv = xcalloc(1, sizeof(*srv));
	srv->run = ctx->run;
	srv->index = index;
	srv->dir = xasprintf("%s/smb/s%u", run_dir(ctx->run), index);
	srv->next = servers;
	servers = srv;
	run_defer(ctx->run, server_stop, srv);
	struct machine_err e = { 0 };
	if (machine_net_host_addr(ctx->machine, index, &srv->addr, &e) < 0) {
		method_fail_op(ctx, ERROR_INFRA, &e, NULL, "share: smb: %s", e.msg);
		machine_err_clear(&e);
		return NULL;
	}
	return server_start(ctx, srv) < 0 ? NULL : srv;
}

/* ---- a cell's shares ---- */

struct smb_state {
	char *cell;      /* the cell's folder name on the shares: c<FNV-1a of the cell id> */
	char *src_root;  /* host: the share folder holding <cell>/src (server 0, share a) */
	char *dst_root;  /* host: the share folder holding <cell>/dst (NULL: to guest) */
	char *src_addr;  /* server 0's address */
	char *dst_addr;  /* the destination's server (NULL: to guest) */
	char dst_share;  /* 'a' or 'b' */
	char *guest_src; /* guest: the directory or archive to copy from */
	char *guest_dst; /* guest: where the files go */
	bool mounted;    /* a guest command that mounts may have left the shares mounted */
};

static struct smb_state *state(struct method_ctx *ctx)
{
	if (!ctx->state)
		ctx->state = xcalloc(1, sizeof(struct smb_state));
	return ctx->state;
}

static bool to_share(const struct method_ctx *ctx)
{
	return SHARE_OPTS(ctx->method)->to != SHARE_TO_GUEST;
}

/* Whether the destination is a second mount (another share or server). */
static bool two_mounts(const struct method_ctx *ctx)
{
	return SHARE_OPTS(ctx->method)->to == SHARE_TO_OTHER_SHARE ||
	       SHARE_OPTS(ctx->method)->to == SHARE_TO_OTHER_SERVER;
}

static char *smb_supports(const struct method_ctx *ctx)
{
	char *why = plan_rules_skip(ctx->plan, ctx->cell);
	if (why)
		return why;
	if (!smb_program("smbd"))
		return xstrdup("share: driver smb needs Samba's smbd on the host (Debian package "
			       "samba), and there is none");
	if (ctx->machine && !machine_can_net_run(ctx->machine))
		return xstrdup("share: driver smb needs a machine that runs a server in the run's "
			       "private network (libvirt on this host)");
	if (!getpwnam("nobody"))
		return xstrdup(
		    "share: driver smb writes as the user nobody, which this host lacks");
	return NULL;
}

static int smb_add_devices(struct method_ctx *ctx, struct method_boot_needs *needs)
{
	(void)ctx;
	needs->nic = true; /* the cell's vm is on the private network (rule cell.smb-private) */
	return 0;
}

/* Staged as a hard link only what nobody can read and cannot write. */
static bool nobody_may_link(const struct stat *st, void *userdata)
{
	const struct passwd *pw = userdata;
	if (!pw || st->st_uid == pw->pw_uid)
		return false;
	bool group = st->st_gid == pw->pw_gid;
	bool readable = (st->st_mode & S_IROTH) || (group && (st->st_mode & S_IRGRP));
	bool writable = (st->st_mode & S_IWOTH) || (group && (st->st_mode & S_IWGRP));
	return readable && !writable;
}

/* Open a share folder of the host (a directory nobody may write in: never through a link). */
static int open_root(struct method_ctx *ctx, const char *root)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		method_fail(ctx, ERROR_INFRA, NULL, "share: smb: open '%s': %s", root,
			    strerror(errno));
	return fd;
}

/* <root>/<cell> emptied and made again, owned by nobody; returns its fd or -1. */
static int fresh_cell_dir(struct method_ctx *ctx, const char *root)
{
	struct smb_state *s = state(ctx);
	_cleanup_close_ int rfd = open_root(ctx, root);
	if (rfd < 0)
		return -1;
	_cleanup_free_ char *err = NULL;
	const struct passwd *pw = getpwnam("nobody");
	if (rm_tree_at(rfd, s->cell, &err) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "share: smb: cannot empty '%s/%s': %s",
				   root, s->cell, err);
	int fd = -1;
	if (mkdirat(rfd, s->cell, 0755) < 0 ||
	    (fd = openat(rfd, s->cell, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    (pw && fchown(fd, pw->pw_uid, pw->pw_gid) < 0)) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return method_fail(ctx, ERROR_INFRA, NULL, "share: smb: mkdir '%s/%s': %s", root,
				   s->cell, strerror(e));
	}
	return fd;
}

static int mkdir_nobody_at(struct method_ctx *ctx, int dirfd, const char *name)
{
	const struct passwd *pw = getpwnam("nobody");
	_cleanup_close_ int fd = -1;
	if (mkdirat(dirfd, name, 0755) < 0 ||
	    (fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    (pw && fchown(fd, pw->pw_uid, pw->pw_gid) < 0))
		return method_fail(ctx, ERROR_INFRA, NULL, "share: smb: mkdir '%s': %s", name,
				   strerror(errno));
	return 0;
}

static bool has_symlinks(const struct manifest *m)
{
	for (size_t i = 0; m && i < m->n; i++)
		if (m->entries[i].type == MANIFEST_SYMLINK)
			return true;
	return false;
}

/* Where this cell's files come from and go to, on the host and in the guest. */
static int cell_paths(struct method_ctx *ctx)
{
	struct smb_state *s = state(ctx);
	if (s->src_root && (!to_share(ctx) || s->dst_root))
		return 0; /* (a server that failed to start fails every run of the cell) */
	free(s->cell);
	free(s->src_root);
	free(s->src_addr);
	free(s->guest_dst);
	s->src_root = s->src_addr = s->guest_dst = NULL;
	uint64_t h = 1469598103934665603ull;
	for (const char *p = ctx->cell->id ? ctx->cell->id : ""; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	s->cell = xasprintf("c%016llx", (unsigned long long)h);
	struct smb_server *s0 = server_get(ctx, 0);
	if (!s0)
		return -1;
	s->src_root = xasprintf("%s/a", s0->dir);
	s->src_addr = xstrdup(s0->addr);
	if (!to_share(ctx)) {
		s->guest_dst = xstrdup(ctx->landing);
		return 0;
	}
	struct smb_server *d = s0;
	s->dst_share = 'a';
	if (SHARE_OPTS(ctx->method)->to == SHARE_TO_OTHER_SERVER && !(d = server_get(ctx, 1)))
		return -1;
	if (SHARE_OPTS(ctx->method)->to == SHARE_TO_OTHER_SHARE)
		s->dst_share = 'b';
	s->dst_root = xasprintf("%s/%c", d->dir, s->dst_share);
	s->dst_addr = xstrdup(d->addr);
	s->guest_dst = xasprintf("%s/%s/dst", two_mounts(ctx) ? GUEST_MNT1 : GUEST_MNT0, s->cell);
	return 0;
}

/*
 * Untimed, before prepare: start the servers (first run), put a fresh copy of the dataset into
 * the source share (a move takes it away; a copy's destination may hold the previous run's
 * files) and an empty destination folder, as 9p starts every run from the exported dataset.
 */
static int smb_before_phase(struct method_ctx *ctx, enum result_phase p)
{
	if (p != PHASE_PREPARE)
		return 0;
	if (has_symlinks(ctx->manifest))
		return method_fail(
		    ctx, ERROR_INFRA, NULL,
		    "share: smb: the dataset holds symbolic links, which SMB without "
		    "unix extensions does not carry");
	struct smb_state *s = state(ctx);
	if (cell_paths(ctx) < 0)
		return -1;
	_cleanup_close_ int cfd = fresh_cell_dir(ctx, s->src_root);
	if (cfd < 0)
		return -1;
	if (to_share(ctx)) {
		_cleanup_close_ int dfd = SHARE_OPTS(ctx->method)->to == SHARE_TO_SAME_SHARE
					      ? -1
					      : fresh_cell_dir(ctx, s->dst_root);
		if (SHARE_OPTS(ctx->method)->to != SHARE_TO_SAME_SHARE && dfd < 0)
			return -1;
		if (mkdir_nobody_at(ctx, dfd >= 0 ? dfd : cfd, "dst") < 0)
			return -1;
	}
	free(s->guest_src);
	s->guest_src = NULL;
	if (ctx->method->archive.format != PLAN_ARCHIVE_NONE)
		return mkdir_nobody_at(ctx, cfd, "src"); /* prepare packs into it */
	struct passwd *pw = getpwnam("nobody");
	struct dataset_copy_opts o = {
		.may_link = nobody_may_link,
		.userdata = pw,
		.cancelled = method_copy_cancelled,
		.chown = pw != NULL,
		.uid = pw ? pw->pw_uid : 0,
		.gid = pw ? pw->pw_gid : 0,
	};
	_cleanup_free_ char *shown = xasprintf("%s/%s/src", s->src_root, s->cell);
	_cleanup_free_ char *err = NULL;
	if (dataset_copy_at(ctx->dataset_dir, ctx->manifest, cfd, "src", shown, &o, NULL, &err) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "share: smb: %s", err);
	s->guest_src = xasprintf("%s/%s/src", GUEST_MNT0, s->cell);
	return 0;
}

/* With an archive: pack the dataset into the source share (timed, as 9p's pack). */
static int smb_prepare(struct method_ctx *ctx)
{
	struct smb_state *s = state(ctx);
	const struct plan_method *m = ctx->method;
	if (m->archive.format == PLAN_ARCHIVE_NONE)
		return 0;
	_cleanup_close_ int rfd = open_root(ctx, s->src_root);
	_cleanup_free_ char *sub = xasprintf("%s/src", s->cell);
	_cleanup_close_ int sfd =
	    rfd < 0 ? -1 : openat(rfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	const char *ext = share_archive_ext(&m->archive);
	_cleanup_free_ char *leaf = xasprintf("data.%s", ext);
	_cleanup_close_ int fd =
	    sfd < 0 ? -1
		    : openat(sfd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "share: smb: create '%s/%s/%s': %s",
				   s->src_root, sub, leaf, strerror(errno));
	uint64_t bytes;
	_cleanup_free_ char *err = NULL;
	if (stream_pack(&m->archive, ctx->dataset_dir, ctx->manifest, fd, ctx->timeout_ms, &bytes,
			&err) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "share: smb: packing: %s", err);
	struct passwd *pw = getpwnam("nobody");
	if (pw && fchown(fd, pw->pw_uid, pw->pw_gid) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "share: smb: chown: %s",
				   strerror(errno));
	ctx->bytes = bytes;
	s->guest_src = xasprintf("%s/%s/src/%s", GUEST_MNT0, s->cell, leaf);
	return 0;
}

char *smb_mount_command(const char *addr, char share, const char *dir)
{
	/* sec=none: a null session (no user, no password), which smbd serves as the guest
	 * account nobody (smb_config(): map to guest, guest only) */
	return xasprintf("mkdir -p %s && mount -t cifs //%s/%c %s -o ip=%s,sec=none,vers=3.0", dir,
			 addr, share, dir, addr);
}

static char *mounts_command(struct method_ctx *ctx)
{
	struct smb_state *s = state(ctx);
	_cleanup_free_ char *m0 = smb_mount_command(s->src_addr, 'a', GUEST_MNT0);
	_cleanup_free_ char *m1 =
	    two_mounts(ctx) ? smb_mount_command(s->dst_addr, s->dst_share, GUEST_MNT1) : NULL;
	return xasprintf("%s%s%s%s", METHOD_GUEST_MODULE_WAIT("cifs"), m0, m1 ? " && " : "",
			 m1 ? m1 : "");
}

static const char umounts[] = "cd / && umount " GUEST_MNT0 " && { ! grep -q ' " GUEST_MNT1
			      " ' /proc/mounts || umount " GUEST_MNT1 "; }";

/* Mount, copy or move, sync and unmount in one guest command (share.c says why). */
static int smb_transfer(struct method_ctx *ctx)
{
	struct smb_state *s = state(ctx);
	const struct plan_method *m = ctx->method;
	_cleanup_free_ char *mounts = mounts_command(ctx);
	_cleanup_free_ char *copy = share_copy_command(m, s->guest_src, s->guest_dst);
	_cleanup_free_ char *all = xasprintf("%s && { %s; } && %s", mounts, copy, umounts);
	s->mounted = true;
	if (method_guest_sh(
		ctx, SHARE_OPTS(m)->mode == SHARE_MOVE ? "share: smb: move" : "share: smb: copy",
		all, NULL) < 0)
		return -1;
	s->mounted = false;
	return 0;
}

/* The destination as the guest sees it: the landing directory, or the share mounted again. */
static int smb_verify(struct method_ctx *ctx)
{
	struct smb_state *s = state(ctx);
	if (!to_share(ctx))
		return method_verify_dir(ctx, ctx->landing, false);
	_cleanup_free_ char *mounts = mounts_command(ctx);
	s->mounted = true;
	if (method_guest_sh(ctx, "share: smb: mount for verification", mounts, NULL) < 0)
		return -1;
	if (method_verify_dir(ctx, s->guest_dst, false) < 0)
		return -1;
	if (method_guest_sh(ctx, "share: smb: unmount", umounts, NULL) < 0)
		return -1;
	s->mounted = false;
	return 0;
}

static int smb_cleanup(struct method_ctx *ctx)
{
	struct smb_state *s = state(ctx);
	if (s->mounted && ctx->guest && !run_interrupted()) {
		/* best effort: a failed run may have left one or both mounted */
		if (method_guest_sh(ctx, "share: smb: unmount",
				    "cd / && umount " GUEST_MNT0 " 2>/dev/null; umount " GUEST_MNT1
				    " 2>/dev/null; true",
				    NULL) < 0)
			method_error_clear(&ctx->err);
	}
	s->mounted = false;
	return 0;
}

/* The cell's folders on the shares go with the cell (the servers stay for the run). */
static void remove_cell_dir(const char *root, const char *cell)
{
	if (!root || !cell)
		return;
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		rm_tree_at(fd, cell, NULL);
		close(fd);
	}
}

static void smb_free_state(struct method_ctx *ctx)
{
	struct smb_state *s = ctx->state;
	if (s) {
		remove_cell_dir(s->src_root, s->cell);
		remove_cell_dir(s->dst_root, s->cell);
		free(s->cell);
		free(s->src_root);
		free(s->dst_root);
		free(s->src_addr);
		free(s->dst_addr);
		free(s->guest_src);
		free(s->guest_dst);
		free(s);
	}
	ctx->state = NULL;
}

const struct method_ops method_share_smb = {
	.name = "share",
	.summary = "a host folder",
	.options = &share_keys,
	.archive = true,
	.needs = SHARE_NEEDS,
	.rules = share_rules,
	.n_rules = SHARE_N_RULES,
	.supports = smb_supports,
	.add_devices = smb_add_devices,
	.before_phase = smb_before_phase,
	.prepare = smb_prepare,
	.transfer = smb_transfer,
	.verify = smb_verify,
	.cleanup = smb_cleanup,
	.free_state = smb_free_state,
};
