/* SPDX-License-Identifier: MIT */
/*
 * smbd in a guest: vm2vm tool smb's receiver serves its landing directory with it.
 *
 * smb_guest_serve(): Samba's smbd, which only ferry's
 * Debian guest carries (its units masked: nothing starts it but this), started with `smbd -D` and
 * one share `a` of one directory, on the guest's private address only, guest-only as the user
 * nobody (smb.c's configuration); every file of its own under SMB_GUEST_DIR. It is ready once
 * `ss` sees it listen on that address. smb_guest_unserve() ends its process group (smbd -D leads
 * a session of its own) and removes its files.
 */
#include <string.h>
#include <unistd.h>

#include "fs.h"
#include "machine.h"
#include "method.h"
#include "smb.h"
#include "util.h"

/* the guest's smbd files (configuration, private, lock, state, pid, log) */
#define SMB_GUEST_DIR "/run/ferry-smbd"

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
