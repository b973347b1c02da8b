/* SPDX-License-Identifier: MIT */
/*
 * vm2vm: a copy from one guest to another, as study 003 copied 1,000 small files between two
 * VMs and changed the receiver's NIC queues. The cell's vm is the receiver (its NIC settings are
 * the matrix's vm axis); `from` names the vm entry of the sender, whose NIC settings are its
 * own. The machine boots the sender with the receiver, fresh for every boot of the cell's guest
 * (method_boot_needs.peer: both guests of a block are its sample), and both on ferry's private
 * network, where they reach each other and nothing else (the plan refuses either vm on another
 * NIC backend).
 *
 * Untimed, before prepare:
 * - the dataset is staged in the sender's RAM (a tmpfs of its own, machine.h), once per boot of
 *   the sender: packed on the host, pushed through the agent, unpacked there;
 * - the receiver's ssh server starts as the ssh method starts it (ssh.h: per-run host and
 *   client keys made on the host, dropbear in the built-in guest, sshd where the guest has it),
 *   listening on VM2VM_PORT of its private address;
 * - the sender gets the client key (converted by its own dropbearconvert), a known_hosts naming
 *   exactly the receiver's host key, and a wrapper that runs dropbear's client dbclient with
 *   them (scp's -S program, also the tar pipe's).
 * transfer: the sender's command from its start to its end, timed on the host: `tar -c |
 *   ssh RECEIVER tar -x` (one stream), or `scp -O -r` (per file: a create, write and close on
 *   the receiver for each, the per-file cost 003 measured). finalize: `sync` in the receiver.
 * verify: the receiver's landing place against the manifest (every byte, every file); then the
 *   queue pairs each guest's eth0 has enabled are the cell's "observed" ({"receiver":
 *   {"queues_enabled": N}, "sender": {"vm": NAME, "queues_enabled": M}}; -1: cannot tell).
 * cleanup: the receiver's server and key files, the sender's key directory and the host's keys
 *   go after every run; the staged copy goes with the sender's domain.
 *
 * tool smb: per-file over SMB, as 003 copied: before each run the receiver starts Samba's smbd
 * (only the Debian guest has it: a receiver of another guest kind is skipped with the reason)
 * with one share, its landing place, listening only on its private address, guest-only as the
 * user nobody (smb_guest_serve(), smb-guest.c); transfer is the
 * sender's mount of that share with its kernel's cifs client, `cp -a` of the staged tree (a
 * create, write and close on the receiver per file) and the unmount; cleanup stops the smbd
 * (its process group) and removes its files. No ssh keys are made for it.
 *
 * Not here: a Debian sender for tar and scp (its guest has no dbclient): such a sender is
 * skipped with the reason.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive.h"
#include "fs.h"
#include "machine.h"
#include "method.h"
#include "rules.h"
#include "smb.h"
#include "ssh.h"
#include "util.h"

/* The receiver's server port (not the ssh method's, so that their fake-guest tests, which share
 * the host's loopback, can run side by side). */
#define VM2VM_PORT 2224
/* The sender's client files: the key, .ssh/known_hosts (HOME is here), the wrapper */
#define VM2VM_DIR "/run/ferry-vm2vm"
/* tool smb: where the sender mounts the receiver's share */
#define V2V_SMB_MNT "/mnt/ferry-v2v"

enum v2v_tool { VM2VM_TAR, VM2VM_SCP, VM2VM_SMB };

struct v2v_opts {
	uint64_t set;
	enum v2v_tool tool;
	char *from;
};

static const struct key_def v2v_defs[] = {
	{ .name = "tool",
	  .type = KEY_ENUM,
	  .offset = offsetof(struct v2v_opts, tool),
	  .def = "tar",
	  .values = (const char *const[]){ "tar", "scp", "smb", NULL },
	  .help = "tar: one tar stream from the sender into ssh RECEIVER tar -x; scp: scp -O -r, "
		  "a create and close on the receiver per file; smb: cp -a onto the receiver's "
		  "share, served by smbd in the receiver (a Debian guest), mounted with the "
		  "sender's cifs" },
	{ .name = "from",
	  .type = KEY_STRING,
	  .offset = offsetof(struct v2v_opts, from),
	  .flags = KEY_REQUIRED | KEY_VM_PRIVATE,
	  .help = "the vm entry of the sender, booted with the cell's vm (the receiver) on ferry's "
		  "private network, its NIC settings its own" },
};
METHOD_OPTIONS(v2v_keys, "vm2vm", struct v2v_opts, v2v_defs);

#define OPTS(ctx) METHOD_OPTS((ctx)->method, struct v2v_opts)

struct v2v_state {
	struct ssh_state ssh; /* the receiver's server */
	char *staged;         /* the sender (guest name) the dataset is staged in, or NULL */
	bool sender_files;    /* VM2VM_DIR made in the sender */
	bool smbd;            /* tool smb: the receiver's smbd may run (smb_guest_serve()) */
	bool mounted;         /* tool smb: the sender may have the share mounted */
	const char *addr;     /* the receiver's private address */
};

static struct v2v_state *state(struct method_ctx *ctx)
{
	if (!ctx->state)
		ctx->state = xcalloc(1, sizeof(struct v2v_state));
	return ctx->state;
}

/* The receiver is the cell's vm: it must be where the sender reaches it. */
static void receiver_private(const struct rule_subject *s, struct rule_out *o)
{
	if (s->vm->nic.backend == PLAN_NIC_PRIVATE)
		return;
	plan_rule_fail(o, "vm",
		       "method '%s' (type vm2vm) copies into vm '%s' from another guest on ferry's "
		       "private network: set vms.%s.nic.backend to private",
		       s->method->e.name, s->vm->e.name, s->vm->e.name);
}

static const struct plan_rule v2v_rules[] = {
	{ "cell.vm2vm-private", RULE_CELL, RULE_ERROR, RULE_AT_RUN,
	  "a vm2vm method on a receiving vm without nic backend private", receiver_private },
};

static char *v2v_supports(const struct method_ctx *ctx)
{
	char *why = plan_rules_skip(ctx->plan, ctx->cell);
	if (why)
		return why;
	const char *from = OPTS(ctx)->from;
	const struct plan_vm *s = ctx->plan && from ? plan_find_vm(ctx->plan, from) : NULL;
	if (!s)
		return xasprintf("vm2vm: the plan has no vm '%s' to send from", from ? from : "");
	if (s->nic.backend != PLAN_NIC_PRIVATE)
		return xasprintf("vm2vm: the sender vm '%s' is not on ferry's private network",
				 from);
	if (OPTS(ctx)->tool == VM2VM_SMB) {
		/* the built-in guest's kernel server, ksmbd, cannot serve (share.c's man page
		   section says why), and Samba's smbd is not in its initramfs */
		if (ctx->cell->vm->guest != PLAN_GUEST_DEBIAN)
			return xasprintf(
			    "vm2vm: tool smb needs Samba's smbd in the receiver, which "
			    "only ferry's Debian guest carries (vm '%s' is not "
			    "guest: debian)",
			    ctx->cell->vm->e.name);
		if (s->guest == PLAN_GUEST_IMAGE)
			return xasprintf("vm2vm: tool smb mounts the share with the sender's cifs "
					 "client, which ferry's built-in and Debian guests have "
					 "(vm '%s' is an image guest)",
					 from);
		return NULL;
	}
	if (s->guest != PLAN_GUEST_BUILTIN)
		return xasprintf(
		    "vm2vm: the sender runs dropbear's client dbclient, which only the "
		    "built-in guest carries (vm '%s' is not guest: builtin)",
		    from);
	if (!have_program("ssh-keygen"))
		return xstrdup("vm2vm: the host has no 'ssh-keygen' (openssh-client) to make the "
			       "run's keys");
	return NULL;
}

static int v2v_add_devices(struct method_ctx *ctx, struct method_boot_needs *needs)
{
	needs->nic = true;
	needs->peer = plan_find_vm(ctx->plan, OPTS(ctx)->from);
	return needs->peer
		   ? 0
		   : method_fail(ctx, ERROR_INFRA, NULL, "vm2vm: no vm '%s'", OPTS(ctx)->from);
}

/* ---- the sender ---- */

static int sender_sh(struct method_ctx *ctx, struct machine_guest *sender, const char *what,
		     const char *cmd)
{
	_cleanup_(machine_err_clear) struct machine_err e = { 0 };
	if (machine_guest_sh(ctx->machine, sender, cmd, ctx->timeout_ms, NULL, &e) < 0)
		return method_fail_op(ctx,
				      e.kind == MACHINE_ERR_TIMEOUT ? ERROR_TIMEOUT : ERROR_INFRA,
				      &e, e.msg, "vm2vm: %s in the sender", what);
	return 0;
}

static int sender_push(struct method_ctx *ctx, struct machine_guest *sender, const char *host,
		       const char *guest)
{
	_cleanup_(machine_err_clear) struct machine_err e = { 0 };
	if (machine_guest_push_file(ctx->machine, sender, host, guest, 48 * 1024, NULL, &e) < 0)
		return method_fail_op(ctx, ERROR_INFRA, &e, e.msg,
				      "vm2vm: pushing %s into the sender", guest);
	return 0;
}

static int file_sink(void *ud, const void *buf, size_t len, char **err)
{
	if (write_all(*(int *)ud, buf, len) < 0) {
		*err = xasprintf("writing the staging archive: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* The dataset into the sender's landing place (its tmpfs), once per boot of the sender. */
static int stage(struct method_ctx *ctx, struct v2v_state *s, struct machine_guest *sender)
{
	if (s->staged && STREQ(s->staged, sender->name))
		return 0;
	_cleanup_free_ char *tar = xasprintf("%s/vm2vm-stage.tar", ctx->cell_dir);
	int fd = open(tar, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "vm2vm: cannot create '%s': %s", tar,
				   strerror(errno));
	const struct plan_archive a = { .format = PLAN_ARCHIVE_TAR };
	_cleanup_free_ char *err = NULL;
	int rc = pack_stream(&a, ctx->dataset_dir, ctx->manifest, 1 << 16, file_sink, &fd, &err);
	close(fd);
	if (rc < 0) {
		unlink(tar);
		return method_fail(ctx, ERROR_INFRA, NULL, "vm2vm: packing the dataset: %s", err);
	}
	rc = sender_push(ctx, sender, tar, MACHINE_TARGET_MNT "/stage.tar");
	unlink(tar);
	if (rc < 0 || sender_sh(ctx, sender, "staging the dataset",
				"rm -rf " MACHINE_LANDING " && mkdir -p " MACHINE_LANDING
				" && tar -xf " MACHINE_TARGET_MNT "/stage.tar -C " MACHINE_LANDING
				" && rm -f " MACHINE_TARGET_MNT "/stage.tar && sync") < 0)
		return -1;
	free(s->staged);
	s->staged = xstrdup(sender->name);
	return 0;
}

/* dbclient with the run's key and known_hosts, for scp's -S (which passes OpenSSH's options
 * first: dropped, the port and user are ours) and for the tar pipe: `ssh HOST COMMAND` */
#define WRAPPER                                                                                    \
	"#!/bin/sh\n"                                                                              \
	"while [ $# -gt 0 ]; do case $1 in --) shift; break;; -p|-l|-o) shift 2;; -*) shift;; "    \
	"*) break;; esac; done\n"                                                                  \
	"HOME=" VM2VM_DIR " exec dbclient -i " VM2VM_DIR "/client.db -p %d -l root \"$@\"\n"

static int write_host(struct method_ctx *ctx, const char *path, const char *text)
{
	_cleanup_free_ char *err = NULL;
	if (write_file_atomic(path, text, strlen(text), 0600, &err) < 0)
		return method_fail(ctx, ERROR_INFRA, NULL, "vm2vm: %s", err);
	return 0;
}

/* The client key, known_hosts ("ADDR TYPE KEY": dbclient matches the address, not the port)
 * and the wrapper into the sender's VM2VM_DIR. */
static int sender_client(struct method_ctx *ctx, struct v2v_state *s, struct machine_guest *sender)
{
	_cleanup_free_ char *pub = ssh_key_path(&s->ssh, "host_key.pub");
	size_t len = 0;
	_cleanup_free_ char *hostpub = read_file(pub, &len);
	if (!hostpub || !len)
		return method_fail(ctx, ERROR_INFRA, NULL, "vm2vm: cannot read '%s'", pub);
	char *sp = strchr(hostpub, ' ');
	sp = sp ? strchr(sp + 1, ' ') : NULL;
	if (sp)
		*sp = '\0';
	hostpub[strcspn(hostpub, "\n")] = '\0';
	_cleanup_free_ char *known = ssh_key_path(&s->ssh, "vm2vm-known_hosts");
	_cleanup_free_ char *wrap = ssh_key_path(&s->ssh, "vm2vm-ssh");
	_cleanup_free_ char *line = xasprintf("%s %s\n", s->ssh.addr, hostpub);
	_cleanup_free_ char *script = xasprintf(WRAPPER, VM2VM_PORT);
	_cleanup_free_ char *key = ssh_key_path(&s->ssh, "client_key");
	if (write_host(ctx, known, line) < 0 || write_host(ctx, wrap, script) < 0)
		return -1;
	s->sender_files = true;
	if (sender_sh(ctx, sender, "the client's directory",
		      "rm -rf " VM2VM_DIR " && mkdir -m 0700 " VM2VM_DIR " " VM2VM_DIR
		      "/.ssh") < 0 ||
	    sender_push(ctx, sender, key, VM2VM_DIR "/client_key") < 0 ||
	    sender_push(ctx, sender, known, VM2VM_DIR "/.ssh/known_hosts") < 0 ||
	    sender_push(ctx, sender, wrap, VM2VM_DIR "/ssh") < 0)
		return -1;
	return sender_sh(ctx, sender, "the client's key",
			 "cd " VM2VM_DIR " && dropbearconvert openssh dropbear client_key "
			 "client.db >/dev/null 2>&1 && rm -f client_key && chmod 0600 client.db "
			 ".ssh/known_hosts && chmod 0700 ssh");
}

static struct machine_guest *sender_of(struct method_ctx *ctx)
{
	struct machine_guest *g = machine_peer(ctx->machine, ctx->guest);
	if (!g)
		method_fail(ctx, ERROR_INFRA, NULL,
			    "vm2vm: the machine booted no sender with the receiver");
	return g;
}

static int v2v_before_phase(struct method_ctx *ctx, enum result_phase p)
{
	if (p != PHASE_PREPARE)
		return 0;
	if (OPTS(ctx)->tool == VM2VM_SCP &&
	    method_refuse_links(ctx, "vm2vm: scp copies what a symbolic link points to",
				"which may be outside the dataset; use tool tar, or a dataset "
				"without links") < 0)
		return -1;
	if (OPTS(ctx)->tool == VM2VM_SMB &&
	    method_refuse_links(ctx, "vm2vm: smb makes no symbolic links",
				"(Samba serves with unix extensions off, as share driver smb); "
				"use tool tar, or a dataset without links") < 0)
		return -1;
	struct v2v_state *s = state(ctx);
	struct machine_guest *sender = sender_of(ctx);
	if (!sender)
		return -1;
	const char *addr = machine_guest_net_addr(ctx->machine, ctx->guest);
	if (!addr)
		return method_fail(ctx, ERROR_INFRA, NULL,
				   "vm2vm: the receiver has no address on the private network");
	s->addr = addr;
	if (OPTS(ctx)->tool == VM2VM_SMB) {
		if (stage(ctx, s, sender) < 0)
			return -1;
		s->smbd = true;
		return smb_guest_serve(ctx, "vm2vm", addr, ctx->landing);
	}
	s->ssh.addr = s->ssh.listen_addr = addr;
	s->ssh.port = s->ssh.listen_port = VM2VM_PORT;
	if (stage(ctx, s, sender) < 0 || ssh_make_keys(ctx, &s->ssh) < 0 ||
	    ssh_start_server(ctx, &s->ssh) < 0)
		return -1;
	return sender_client(ctx, s, sender);
}

/* ---- the copy ---- */

/* The sender's entries at the top of its landing place as "$@" (dot files too), then scp. */
#define SCP_CMD                                                                                    \
	"cd " MACHINE_LANDING " && set -- && for f in * .[!.]* ..?*; do "                          \
	"if [ -e \"$f\" ] || [ -L \"$f\" ]; then set -- \"$@\" \"$f\"; fi; done && "               \
	"if [ $# -gt 0 ]; then scp -O -r -p -q -S " VM2VM_DIR "/ssh -P %d \"$@\" root@%s:%s/; fi"
#define TAR_CMD                                                                                    \
	METHOD_SH_PIPEFAIL "cd " MACHINE_LANDING " && tar -cf - . | " VM2VM_DIR                    \
			   "/ssh %s tar -xf - -C %s"

static int v2v_transfer(struct method_ctx *ctx)
{
	struct v2v_state *s = state(ctx);
	struct machine_guest *sender = sender_of(ctx);
	if (!sender)
		return -1;
	_cleanup_free_ char *land = shell_quote(ctx->landing);
	if (OPTS(ctx)->tool == VM2VM_SMB) {
		/* per file, as share driver smb copies: mount, cp -a, unmount in one command */
		_cleanup_free_ char *mount = smb_mount_command(s->addr, 'a', V2V_SMB_MNT);
		_cleanup_free_ char *smb =
		    xasprintf(METHOD_GUEST_MODULE_WAIT("cifs") "%s && cp -a " MACHINE_LANDING
							       "/. " V2V_SMB_MNT
							       "/ && cd / && umount " V2V_SMB_MNT,
			      mount);
		s->mounted = true;
		if (sender_sh(ctx, sender, "cp -a onto the receiver's SMB share", smb) < 0)
			return -1;
		s->mounted = false;
		return 0;
	}
	_cleanup_free_ char *cmd = OPTS(ctx)->tool == VM2VM_SCP
				       ? xasprintf(SCP_CMD, VM2VM_PORT, s->ssh.addr, ctx->landing)
				       : xasprintf(TAR_CMD, s->ssh.addr, land);
	return sender_sh(ctx, sender, OPTS(ctx)->tool == VM2VM_SCP ? "scp" : "tar over ssh", cmd);
}

static int v2v_finalize(struct method_ctx *ctx)
{
	return method_guest_sh(ctx, "vm2vm: sync", "sync", NULL);
}

/* The queue pairs g's eth0 has enabled (-1: cannot tell; a failure costs the observation, not
 * the run). */
static json_int_t queues_enabled(struct method_ctx *ctx, struct machine_guest *g)
{
	_cleanup_(machine_err_clear) struct machine_err e = { 0 };
	_cleanup_free_ char *out = NULL;
	if (!g ||
	    machine_guest_sh(ctx->machine, g, "ls /sys/class/net/eth0/queues | grep -c '^rx-'",
			     30000, &out, &e) < 0)
		return -1;
	return strtol(out, NULL, 10);
}

/* scp copies what a link points to (a dataset with links is refused before it); then what each
 * guest's NIC has enabled, as the plan asked of each (observed) */
static int v2v_verify(struct method_ctx *ctx)
{
	if (method_verify_dir(ctx, ctx->landing, OPTS(ctx)->tool == VM2VM_TAR) < 0)
		return -1;
	struct machine_guest *sender = machine_peer(ctx->machine, ctx->guest);
	json_decref(ctx->observed);
	ctx->observed = json_pack("{s:{s:I}, s:{s:s, s:I}}", "receiver", "queues_enabled",
				  queues_enabled(ctx, ctx->guest), "sender", "vm", OPTS(ctx)->from,
				  "queues_enabled", queues_enabled(ctx, sender));
	return 0;
}

static int v2v_cleanup(struct method_ctx *ctx)
{
	struct v2v_state *s = state(ctx);
	int rc = ssh_stop_server(ctx, &s->ssh, NULL);
	struct machine_guest *sender = machine_peer(ctx->machine, ctx->guest);
	if (s->mounted && sender && !run_interrupted()) {
		/* a transfer that failed between its mount and its unmount */
		_cleanup_(machine_err_clear) struct machine_err e = { 0 };
		(void)machine_guest_sh(ctx->machine, sender,
				       "cd / && { ! grep -q ' " V2V_SMB_MNT " ' /proc/mounts || "
				       "umount -f " V2V_SMB_MNT "; }",
				       ctx->timeout_ms, NULL, &e);
	}
	s->mounted = false;
	if (s->smbd && ctx->guest && !run_interrupted() && smb_guest_unserve(ctx, "vm2vm") < 0)
		rc = -1;
	s->smbd = false;
	if (s->sender_files && sender && !run_interrupted()) {
		_cleanup_(machine_err_clear) struct machine_err e = { 0 };
		(void)machine_guest_sh(ctx->machine, sender, "rm -rf " VM2VM_DIR, ctx->timeout_ms,
				       NULL, &e);
	}
	s->sender_files = false;
	return rc;
}

static void v2v_free_state(struct method_ctx *ctx)
{
	struct v2v_state *s = ctx->state;
	if (s) {
		free(s->staged);
		ssh_state_clear(&s->ssh);
	}
	json_decref(ctx->observed);
	ctx->observed = NULL;
	free(s);
	ctx->state = NULL;
}

const struct method_ops method_vm2vm = {
	.name = "vm2vm",
	.summary = "a copy from a second guest (the sender) into the cell's guest over ssh or SMB",
	.options = &v2v_keys,
	.needs = { .nic_why = "the sender reaches the receiver on ferry's private network",
		   .remote_why = "the two guests meet on ferry's private network, a namespace of "
				 "ferry's own host" },
	.rules = v2v_rules,
	.n_rules = ELEMENTSOF(v2v_rules),
	.supports = v2v_supports,
	.add_devices = v2v_add_devices,
	.before_phase = v2v_before_phase,
	.transfer = v2v_transfer,
	.finalize = v2v_finalize,
	.verify = v2v_verify,
	.cleanup = v2v_cleanup,
	.free_state = v2v_free_state,
};
