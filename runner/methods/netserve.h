/* SPDX-License-Identifier: MIT */
/*
 * The host side of the network method, apart from libvirt so that tests drive it with the host's
 * busybox playing the guest: the pull server (HTTP/1.0 on 127.0.0.1, a thread of this process)
 * and the guest command lines of a pull and of a push.
 *
 * 127.0.0.1 is open to every local user, so both directions carry a per-run random token (32 hex
 * digits from the kernel's CSPRNG): the pull server answers only URLs under /<token>/ (anything
 * else gets 404 and nothing of the dataset), and a push starts with "<token>\n", which the guest
 * checks before it unpacks a byte (another local user who connects to the forward first gets
 * nothing and injects nothing).
 *
 * Without `archive:` a pull fetches a file list and then file by file. The list is one record per
 * entry, NUL-terminated, "<type><index>/<path>" (type d, f or l; index into the manifest), walked
 * by `xargs -0` and plain parameter expansion: names with blanks, a carriage return or a leading
 * '-' arrive as they are, and the server looks entries up by index, not by name.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "manifest.h"
#include "plan.h"

#define NETSERVE_TOKEN_LEN 32

struct server {
	int lfd;
	int stop[2];
	int port;
	pthread_t thread;
	bool running;
	char token[NETSERVE_TOKEN_LEN + 1];
	/* what to serve (read-only while the thread runs) */
	const struct plan_archive *archive; /* NULL: files one by one */
	const char *dir;
	const struct manifest *m;
	unsigned timeout_ms;
	/* the thread's outcome */
	uint64_t bytes;
	unsigned rejected; /* requests without the token (answered 404) */
	char *err;
};

/* A fresh random token (NETSERVE_TOKEN_LEN hex digits) into out. Returns 0 or -1 (errno). */
int netserve_token(char out[NETSERVE_TOKEN_LEN + 1]);

/* Initialise srv (not running); call once before the first server_start(). */
void server_init(struct server *srv);

/* Serve m from dir (archive NULL: files one by one) on a new port with a new token. */
int server_start(struct server *srv, const struct plan_archive *archive, const char *dir,
		 const struct manifest *m, unsigned timeout_ms, char **err);

/* Stop the thread and close the sockets; the outcome (bytes, err) stays. */
void server_stop(struct server *srv);

/* A socket bound to 127.0.0.1 on a free port (listening when listen_too). */
int loopback_socket(bool listen_too, int *port, char **err);

/* End a connection so that every byte reaches the peer: half-close, wait for its close. */
void finish_connection(int c);

/* The guest command that pulls into dir from base ("http://HOST:PORT/<token>"), no archive. */
char *netserve_pull_files_command(const char *base, const char *dir);

/*
 * The guest's source of a pushed stream: listen on port with nc, check the first line is the
 * token, then pass the rest on (for stream_unpack_command()).
 */
char *netserve_push_source(int port, const char *token);
