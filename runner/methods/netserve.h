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

/* Streams (TCP connections at once) a server serves, and a push opens. */
#define NETSERVE_STREAMS_MAX 64

struct server {
	int lfd;
	int stop[2];
	int port;
	pthread_t
	    threads[NETSERVE_STREAMS_MAX]; /* one per stream: connections are served at once */
	unsigned n_threads;
	bool running;
	char token[NETSERVE_TOKEN_LEN + 1];
	/* what to serve (read-only while the threads run) */
	const struct plan_archive *archive; /* NULL: files one by one */
	const char *dir;
	const struct manifest *m; /* the whole dataset: files are found by index in it */
	struct manifest parts[NETSERVE_STREAMS_MAX]; /* what stream K carries (netserve_split) */
	size_t *part_index[NETSERVE_STREAMS_MAX];    /* their entries' indexes in m */
	unsigned n_parts;
	unsigned timeout_ms;
	/* the threads' outcome (under lock) */
	pthread_mutex_t lock;
	uint64_t bytes;
	unsigned rejected; /* requests without the token (answered 404) */
	char *err;
};

/*
 * Split m into n parts for n streams: every part has all directories (in manifest order, so each
 * stream can create the parents of what it carries; creating an existing directory is harmless),
 * the files and symlinks go to the part with the fewest bytes so far. parts[k].entries is a new
 * array of shallow copies; index (may be NULL) receives per part the entries' indexes in m.
 * Free with netserve_parts_clear().
 */
void netserve_split(const struct manifest *m, unsigned n, struct manifest *parts, size_t **index);
void netserve_parts_clear(struct manifest *parts, size_t **index, unsigned n);

/* A fresh random token (NETSERVE_TOKEN_LEN hex digits) into out. Returns 0 or -1 (errno). */
int netserve_token(char out[NETSERVE_TOKEN_LEN + 1]);

/* Initialise srv (not running); call once before the first server_start(). */
void server_init(struct server *srv);

/* Serve m from dir (archive NULL: files one by one) on a new port with a new token. */
int server_start(struct server *srv, const struct plan_archive *archive, const char *dir,
		 const struct manifest *m, unsigned timeout_ms, char **err);
/*
 * The same for streams connections at once (1..NETSERVE_STREAMS_MAX): the archive of part K is at
 * <token>/stream/K, the file list of part K at <token>/.ferry-list/K (K = 0 also without /K).
 * lfd: a socket to bind and listen on (taken over, e.g. one made in a network namespace) bound to
 * the IPv4 address addr (NULL: 127.0.0.1), or -1 for a new one on 127.0.0.1.
 */
int server_start_streams(struct server *srv, const struct plan_archive *archive, const char *dir,
			 const struct manifest *m, unsigned streams, int lfd, const char *addr,
			 unsigned timeout_ms, char **err);

/* Stop the thread and close the sockets; the outcome (bytes, err) stays. */
void server_stop(struct server *srv);

/* A socket bound to 127.0.0.1 on a free port (listening when listen_too). */
int loopback_socket(bool listen_too, int *port, char **err);

/* End a connection so that every byte reaches the peer: half-close, wait for its close. */
void finish_connection(int c);

/* The guest command that pulls into dir from base ("http://HOST:PORT/<token>"), no archive. */
char *netserve_pull_files_command(const char *base, const char *dir);
/* The same for part `part` of a split (its list is <base>/.ferry-list/<part>). */
char *netserve_pull_part_command(const char *base, unsigned part, const char *dir);

/*
 * One guest shell command that runs the n commands at once and fails when any of them fails
 * (n == 1: the command itself). Caller frees.
 */
char *netserve_parallel_command(char *const *cmds, unsigned n);

/*
 * The guest's source of a pushed stream: listen on port with nc, check the first line is the
 * token, then pass the rest on (for stream_unpack_command()).
 */
char *netserve_push_source(int port, const char *token);
