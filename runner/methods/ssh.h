/* SPDX-License-Identifier: MIT */
/*
 * The guest's ssh server as the ssh method starts it (ssh.c), for the methods whose client is
 * elsewhere: vm2vm's client runs in a second guest (vm2vm.c). The server runs in ctx->guest.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "method.h"

/* Where the guest's server listens unless ssh_state.listen_port says otherwise. */
#define SSH_GUEST_PORT 2222

struct ssh_state {
	char *keydir;    /* host: the run's keys (cell_dir/ssh-keys), NULL when none */
	char *fwd_guest; /* the guest the forward was made for (ssh.c) */
	int fwd_port;
	int port;                /* where the client connects */
	const char *addr;        /* static */
	int listen_port;         /* where the guest's server listens; 0: SSH_GUEST_PORT */
	const char *listen_addr; /* the guest's address it listens on (static); NULL: all */
	int64_t server;          /* guest pid of the server, 0: none */
	bool guest_files;        /* keys pushed into the guest */
	bool in_netns;           /* the client runs in the run's private network (ssh.c) */
	char *server_name;       /* "sshd" or "dropbear": the server started, NULL: none */
};

static inline int ssh_listen_port(const struct ssh_state *s)
{
	return s->listen_port ? s->listen_port : SSH_GUEST_PORT;
}

/* The file `name` of s's key directory (caller frees). */
char *ssh_key_path(const struct ssh_state *s, const char *name);
/* Fresh host and client keys (ssh-keygen, ed25519, no passphrase: host_key, client_key and
 * their .pub) in cell_dir/ssh-keys, and an OpenSSH known_hosts naming exactly the host key for
 * s->addr and s->port. Fails ctx. */
int ssh_make_keys(struct method_ctx *ctx, struct ssh_state *s);
/* Push the host key and the client's public key into ctx->guest, start its server (sshd, else
 * dropbear) on ssh_listen_port(s) (of listen_addr when set) and wait until it listens. Fails ctx.
 */
int ssh_start_server(struct method_ctx *ctx, struct ssh_state *s);
/* Kill the server, remove the guest's key files and the host's keys, and check in the guest
 * that the server's process, its listener and the key files are gone (the guest is left alone
 * after an interrupt). 0, or -1 with ctx's error naming what is left; the host's keys are
 * removed either way. *checked (may be NULL): whether the guest was checked and found clean. */
int ssh_stop_server(struct method_ctx *ctx, struct ssh_state *s, bool *checked);
/* Remove the host's keys and free what s holds (not s). */
void ssh_state_clear(struct ssh_state *s);
