/* SPDX-License-Identifier: MIT */
/*
 * smbd in a guest, and share driver smb with `served_by: guest`: study 000's Copy-Item-Smb, the
 * host copying onto the guest's own SMB share (C:\ shared read-write) over the network.
 *
 * The server (smb_guest_serve(), also vm2vm tool smb's receiver): Samba's smbd, which only ferry's
 * Debian guest carries (its units masked: nothing starts it but this), started with `smbd -D` and
 * one share `a` of one directory, on the guest's private address only, guest-only as the user
 * nobody (smb.c's configuration); every file of its own under SMB_GUEST_DIR. It is ready once
 * `ss` sees it listen on that address. smb_guest_unserve() ends its process group (smbd -D leads
 * a session of its own) and removes its files.
 *
 * The driver: the cell's vm is the Debian guest on ferry's private network (a built-in or image
 * guest is skipped with the reason); the host is the client, Samba's userspace smbclient run
 * inside the run's private network namespace (machine_net_spawn(): `ip netns exec`), the only
 * place that reaches the guest's address. Not a host cifs mount: that needs the host kernel's
 * cifs module (this project's CI host has no modules at all) and a mount namespace of its own,
 * where smbclient is a process that ends with the copy. Per phase:
 *   before prepare (untimed): the dataset linked or copied into the cell's host directory (once
 *     per cell: smbclient reads it there, below a root-only run directory, where no path of the
 *     user's tree can be swapped for a link), then smbd started in the guest for the run,
 *     serving the landing directory, or with `archive:` an incoming directory beside it on the
 *     target disk;
 *   prepare: with `archive:`, the dataset packed into one file on the host (as share's pack);
 *   transfer: smbclient from the host into the share: `prompt OFF; recurse ON; mput *` (a create,
 *     write and close per file, directories made as it goes), or `put` of the one archive;
 *   finalize: in the guest, the archive unpacked into the landing directory and removed (as
 *     Copy-Item-Smb-Compress expanded the zip on the guest), then `sync`;
 *   verify: the executor's, of the landing directory;
 *   cleanup: smbd stopped and its files and the incoming directory removed in the guest, the
 *     archive removed on the host; the staged copy goes with the cell (free_state).
 * smbclient is killed when the run's timeout passes or the run is interrupted (proc_spawn()).
 * Symbolic links are refused (no unix extensions: SMB carries none), and so are names SMB cannot
 * hold (\ : * ? " < > | and control characters), which smbclient would skip with exit status 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset.h"
#include "fs.h"
#include "machine.h"
#include "method.h"
#include "proc.h"
#include "rules.h"
#include "run.h"
#include "share.h"
#include "smb.h"
#include "stream.h"
#include "util.h"

/* the guest's smbd files (configuration, private, lock, state, pid, log) */
#define SMB_GUEST_DIR "/run/ferry-smbd"
/* served_by guest with an archive: where the host puts it, on the target disk beside the landing
 * directory (as the study's zip went onto C:\ and was expanded there) */
#define SMB_GUEST_INCOMING MACHINE_TARGET_MNT "/ferry-smb-in"

/* ---- smbd in a guest ---- */

static int guest_sh(struct method_ctx *ctx, const char *who, const char *what, const char *cmd)
{
	_cleanup_free_ char *w = xasprintf("%s: %s", who, what);
	return method_guest_sh(ctx, w, cmd, NULL);
}

int smb_guest_serve(struct method_ctx *ctx, const char *who, const char *addr, const char *dir)
{
	_cleanup_free_ char *qdir = shell_quote(dir);
	_cleanup_free_ char *mk = xasprintf(
	    "[ -x /usr/sbin/smbd ] || { echo 'the guest has no /usr/sbin/smbd (Samba): "
	    "rebuild the Debian guest (ferry guest build debian)' >&2; exit 1; } && "
	    "rm -rf " SMB_GUEST_DIR " && mkdir -p " SMB_GUEST_DIR "/private " SMB_GUEST_DIR
	    "/lock " SMB_GUEST_DIR "/state " SMB_GUEST_DIR "/cache " SMB_GUEST_DIR
	    "/pid " SMB_GUEST_DIR "/ncalrpc && chmod 0700 " SMB_GUEST_DIR
	    "/private && mkdir -p %s && chown nobody %s",
	    qdir, qdir);
	if (guest_sh(ctx, who, "smbd's directories in the guest", mk) < 0)
		return -1;
	_cleanup_free_ char *conf = smb_config_shares(SMB_GUEST_DIR, addr, 0, dir, NULL);
	_cleanup_free_ char *host = xasprintf("%s/guest-smb.conf", ctx->cell_dir);
	_cleanup_free_ char *err = NULL;
	if (write_file_atomic(host, conf, strlen(conf), 0600, &err) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "%s: %s", who, err);
	_cleanup_(machine_err_clear) struct machine_err e = { 0 };
	int rc = machine_guest_push_file(ctx->machine, ctx->guest, host, SMB_GUEST_DIR "/smb.conf",
					 48 * 1024, NULL, &e);
	unlink(host);
	if (rc < 0)
		return method_fail_op(ctx, ERROR_INFRA, &e, e.msg,
				      "%s: pushing smb.conf into the guest", who);
	/* smbd -D detaches (its own session); ready once it listens on the address */
	_cleanup_free_ char *run = xasprintf(
	    "/usr/sbin/smbd -D -s " SMB_GUEST_DIR "/smb.conf </dev/null >" SMB_GUEST_DIR
	    "/start.log 2>&1 || { tail -n 12 " SMB_GUEST_DIR "/log.smbd >&2; cat " SMB_GUEST_DIR
	    "/start.log >&2; exit 1; }; i=0; "
	    "while ! ss -Hltn 'sport = :445' | grep -qF '%s:445'; do i=$((i+1)); "
	    "if [ $i -gt 500 ]; then echo 'smbd does not listen on %s:445 after 10 s' >&2; "
	    "ip -4 -o addr show dev eth0 >&2; "
	    "tail -n 40 " SMB_GUEST_DIR "/log.smbd >&2; exit 1; fi; sleep 0.02; done",
	    addr, addr);
	return guest_sh(ctx, who, "starting smbd in the guest", run);
}

/* SIGTERM to the process group, SIGKILL after 2 s */
#define SMBD_STOP                                                                                  \
	"bash -c 'p=$(cat " SMB_GUEST_DIR "/pid/smbd.pid 2>/dev/null) || p=; "                     \
	"if [ -n \"$p\" ] && kill -TERM -- -$p 2>/dev/null; then i=0; "                            \
	"while kill -0 -- -$p 2>/dev/null; do i=$((i+1)); "                                        \
	"if [ $i -eq 100 ]; then kill -KILL -- -$p 2>/dev/null; fi; "                              \
	"if [ $i -gt 200 ]; then echo \"smbd ($p) does not end\" >&2; exit 1; fi; "                \
	"sleep 0.02; done; fi' && rm -rf " SMB_GUEST_DIR

int smb_guest_unserve(struct method_ctx *ctx, const char *who)
{
	return guest_sh(ctx, who, "stopping smbd in the guest", SMBD_STOP);
}

/* ---- share driver smb, served by the guest ---- */

#define WHO "share: smb"

struct push_state {
	char *staged;  /* host: the cell's copy of the dataset (per file), or NULL */
	char *archive; /* host: this run's archive, or NULL */
	const char *addr;
	bool serving; /* smbd may run in the guest */
};

static struct push_state *state(struct method_ctx *ctx)
{
	if (!ctx->state)
		ctx->state = xcalloc(1, sizeof(struct push_state));
	return ctx->state;
}

static bool archived(const struct method_ctx *ctx)
{
	return ctx->method->archive.format != PLAN_ARCHIVE_NONE;
}

char *smb_push_skip_reason(const struct plan_vm *vm)
{
	if (vm->guest != PLAN_GUEST_DEBIAN)
		return xasprintf("share: served_by guest needs Samba's smbd in the guest, which "
				 "only ferry's Debian guest carries (vm '%s' is not guest: debian)",
				 vm->e.name);
	return NULL;
}

static char *push_supports(const struct method_ctx *ctx)
{
	char *why = plan_rules_skip(ctx->plan, ctx->cell);
	if (why || (why = smb_push_skip_reason(ctx->cell->vm)))
		return why;
	if (!smb_program("smbclient"))
		return xstrdup("share: served_by guest copies with Samba's smbclient on the host "
			       "(Debian package smbclient), and there is none");
	if (ctx->machine && !machine_can_net_spawn(ctx->machine))
		return xstrdup("share: served_by guest needs a machine that runs a client in the "
			       "run's private network (libvirt on this host)");
	return NULL;
}

static int push_add_devices(struct method_ctx *ctx, struct method_boot_needs *needs)
{
	(void)ctx;
	needs->nic = true; /* on the private network (rule cell.smb-private) */
	return 0;
}

const char *smb_name_invalid(const struct manifest *m)
{
	for (size_t i = 0; m && i < m->n; i++)
		for (const char *p = m->entries[i].path; *p; p++)
			if ((unsigned char)*p < 0x20 || strchr("\\:*?\"<>|", *p))
				return m->entries[i].path;
	return NULL;
}

static bool link_always(const struct stat *st, void *userdata)
{
	(void)st;
	(void)userdata;
	return true; /* smbclient only reads it */
}

/* The dataset into <cell>/smb-push (hard links where it can), once per cell. */
static int stage(struct method_ctx *ctx, struct push_state *s)
{
	if (s->staged)
		return 0;
	_cleanup_free_ char *shown = xasprintf("%s/smb-push", ctx->cell_dir);
	_cleanup_close_ int dfd =
	    open(ctx->cell_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_free_ char *err = NULL;
	if (dfd < 0 || rm_tree_at(dfd, "smb-push", &err) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, WHO ": cannot empty '%s': %s", shown,
				   err ? err : strerror(errno));
	const struct dataset_copy_opts o = { .may_link = link_always,
					     .cancelled = method_copy_cancelled };
	if (dataset_copy_at(ctx->dataset_dir, ctx->manifest, dfd, "smb-push", shown, &o, NULL,
			    &err) < 0) {
		rm_tree(shown, NULL);
		return method_fail(ctx, ERROR_INFRA, NULL, WHO ": %s", err);
	}
	s->staged = TAKE_PTR(shown);
	return 0;
}

static int push_before_phase(struct method_ctx *ctx, enum result_phase p)
{
	if (p != PHASE_PREPARE)
		return 0;
	if (method_refuse_links(ctx, WHO ": SMB makes no symbolic links",
				"(Samba serves with unix extensions off); use a dataset without "
				"links") < 0)
		return -1;
	const char *bad = smb_name_invalid(ctx->manifest);
	if (bad)
		return method_fail(ctx, ERROR_INFRA, NULL,
				   WHO ": SMB cannot name '%s' (no \\ : * ? \" < > | or control "
				       "characters in a name)",
				   bad);
	struct push_state *s = state(ctx);
	s->addr = machine_guest_net_addr(ctx->machine, ctx->guest);
	if (!s->addr)
		return method_fail(ctx, ERROR_INFRA, NULL,
				   WHO ": the guest has no address on the private network");
	if (!archived(ctx) && stage(ctx, s) < 0)
		return -1;
	s->serving = true;
	return smb_guest_serve(ctx, WHO, s->addr,
			       archived(ctx) ? SMB_GUEST_INCOMING : ctx->landing);
}

/* With an archive: the dataset packed into one file of the cell's host directory (timed). */
static int push_prepare(struct method_ctx *ctx)
{
	struct push_state *s = state(ctx);
	if (!archived(ctx))
		return 0;
	free(s->archive);
	s->archive =
	    xasprintf("%s/data.%s", ctx->cell_dir, share_archive_ext(&ctx->method->archive));
	unlink(s->archive);
	_cleanup_close_ int fd =
	    open(s->archive, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, WHO ": create '%s': %s", s->archive,
				   strerror(errno));
	uint64_t bytes;
	_cleanup_free_ char *err = NULL;
	if (stream_pack(&ctx->method->archive, ctx->dataset_dir, ctx->manifest, fd, ctx->timeout_ms,
			&bytes, &err) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, WHO ": packing: %s", err);
	ctx->bytes = bytes;
	return 0;
}

char *smb_push_command(const struct plan_method *m)
{
	if (m->archive.format == PLAN_ARCHIVE_NONE)
		return xstrdup("prompt OFF; recurse ON; mput *");
	const char *ext = share_archive_ext(&m->archive);
	return xasprintf("put data.%s data.%s", ext, ext);
}

/* smbclient inside the run's private network, from the staged tree or the archive's directory:
 * every name on its command line is ferry's own. */
static int push_transfer(struct method_ctx *ctx)
{
	struct push_state *s = state(ctx);
	_cleanup_free_ char *cmd = smb_push_command(ctx->method);
	_cleanup_free_ char *service = xasprintf("//%s/a", s->addr);
	const char *argv[] = { smb_program("smbclient"), SMB_PUSH_OPTS, service, "-c", cmd, NULL };
	const struct proc_opts o = { .cwd = archived(ctx) ? ctx->cell_dir : s->staged,
				     .timeout_ms = ctx->timeout_ms };
	struct proc_result r = { 0 };
	_cleanup_(machine_err_clear) struct machine_err e = { 0 };
	if (machine_net_spawn(ctx->machine, argv, &o, &r, &e) < 0) {
		proc_result_clear(&r);
		bool timeout = e.msg && strstr(e.msg, "did not finish");
		return method_fail(ctx, timeout ? ERROR_TIMEOUT : ERROR_INFRA, NULL,
				   WHO ": smbclient: %s", e.msg ? e.msg : "cannot run it");
	}
	/* mput goes on after a file it could not create, and exits 0 */
	const char *nt = r.out ? strstr(r.out, "NT_STATUS_") : NULL;
	int rc = 0;
	if (r.status != 0 || nt) {
		_cleanup_free_ char *line =
		    nt ? proc_last_line(nt, strcspn(nt, "\n"))
		       : proc_last_line(r.out ? r.out : "", r.out ? r.out_len : 0);
		rc = method_fail(ctx, ERROR_INFRA, r.out,
				 WHO ": smbclient exited with status %d: %s", r.status, line);
	}
	proc_result_clear(&r);
	return rc;
}

/* The archive unpacked into the landing directory and removed (with an archive), then sync. */
static int push_finalize(struct method_ctx *ctx)
{
	if (!archived(ctx))
		return method_guest_sh(ctx, WHO ": sync", "sync", NULL);
	_cleanup_free_ char *file =
	    xasprintf(SMB_GUEST_INCOMING "/data.%s", share_archive_ext(&ctx->method->archive));
	_cleanup_free_ char *unpack = share_copy_command(ctx->method, file, ctx->landing);
	_cleanup_free_ char *cmd = xasprintf("%s && rm -f %s", unpack, file);
	return method_guest_sh(ctx, WHO ": unpacking in the guest", cmd, NULL);
}

static int push_cleanup(struct method_ctx *ctx)
{
	struct push_state *s = state(ctx);
	int rc = 0;
	if (s->serving && ctx->guest && !run_interrupted()) {
		rc = smb_guest_unserve(ctx, WHO);
		if (rc == 0 && archived(ctx))
			rc = method_guest_sh(ctx, WHO ": removing the incoming directory",
					     "rm -rf " SMB_GUEST_INCOMING, NULL);
	}
	s->serving = false;
	if (s->archive)
		unlink(s->archive);
	return rc;
}

static void push_free_state(struct method_ctx *ctx)
{
	struct push_state *s = ctx->state;
	if (s) {
		if (s->staged)
			rm_tree(s->staged, NULL);
		if (s->archive)
			unlink(s->archive);
		free(s->staged);
		free(s->archive);
		free(s);
	}
	ctx->state = NULL;
}

const struct method_ops method_share_smb_guest = {
	.name = "share",
	.summary = "a host folder",
	.options = &share_keys,
	.archive = true,
	.needs = SHARE_NEEDS,
	.rules = share_rules,
	.n_rules = SHARE_N_RULES,
	.supports = push_supports,
	.add_devices = push_add_devices,
	.before_phase = push_before_phase,
	.prepare = push_prepare,
	.transfer = push_transfer,
	.finalize = push_finalize,
	.cleanup = push_cleanup,
	.free_state = push_free_state,
};
