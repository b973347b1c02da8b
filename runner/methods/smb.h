/* SPDX-License-Identifier: MIT */
/* share driver smb (smb.c): what its unit tests check. */
#pragma once

#include <stdbool.h>

struct manifest;
struct method_ctx;
struct plan_method;
struct plan_vm;

/* The smb.conf of server `index`, whose files live in dir, listening on addr, its shares a and
 * b the folders dir/a and dir/b. Caller frees. */
char *smb_config(const char *dir, const char *addr, unsigned index);
/* The same with share a the folder a and share b the folder b (NULL: no share b). */
char *smb_config_shares(const char *dir, const char *addr, unsigned index, const char *a,
			const char *b);
/* The guest command that mounts share `share` ('a' or 'b') of the server at addr on dir. */
char *smb_mount_command(const char *addr, char share, const char *dir);
/* Stop the smbd whose process group is pgid: SIGTERM, then SIGKILL after 2 s; returns once
 * none runs or after the SIGKILL (safe with 0). */
void smb_server_kill(long pgid);
/* Samba's program name in /usr/sbin or /usr/bin (a static buffer), or NULL. */
const char *smb_program(const char *name);
/* Whether a process of group pgid runs (a zombie does not). */
bool smb_group_running(long pgid);

/*
 * smbd in the cell's guest (smb-guest.c; the Debian guest carries it): one share `a` of the
 * guest's directory dir (made, owned by nobody), listening on addr only; returns once it
 * listens. who begins its messages ("vm2vm"). 0, or -1 with ctx->err.
 */
int smb_guest_serve(struct method_ctx *ctx, const char *who, const char *addr, const char *dir);
/* That smbd stopped (its process group: SIGTERM, SIGKILL after 2 s) and its files removed. */
int smb_guest_unserve(struct method_ctx *ctx, const char *who);

/* share driver smb served by the guest: the skip reason for the cell's vm (NULL: none). */
char *smb_push_skip_reason(const struct plan_vm *vm);
/* The first path of m that SMB cannot name, or NULL. */
const char *smb_name_invalid(const struct manifest *m);
/* smbclient's options before //ADDR/a -c COMMANDS: no configuration file of the host's, a null
 * session (no password), SMB 3 */
#define SMB_PUSH_OPTS "-s", "/dev/null", "-N", "-m", "SMB3"
/* smbclient's -c commands for method m: every name in them is ferry's. Caller frees. */
char *smb_push_command(const struct plan_method *m);
