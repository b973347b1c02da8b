/* SPDX-License-Identifier: MIT */
/*
 * The qemu-guest-agent client: commands through libvirt (virDomainQemuAgentCommand), JSON with
 * jansson, base64 with OpenSSL EVP. libvirt 9.0 corrupts the agent stream for a command over
 * ~200 KB of JSON (GUEST.md), so no command built here is larger than ~130 KB: file writes go in
 * AGENT_CHUNK raw bytes (AGENT_CHUNK * 4/3 of base64), reads likewise.
 * Every function returns 0 on success or -1 with *err set (caller frees) to a message that
 * carries the libvirt or agent error.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <libvirt/libvirt.h>

/* Raw bytes per guest-file-write / guest-file-read: 96 KiB -> 128 KiB of base64. */
#define AGENT_CHUNK (96 * 1024)
/* Largest raw bytes per guest-file-write: 128 KiB -> 174,764 bytes of base64, plus ~70 of JSON. */
#define AGENT_MAX_CHUNK (128 * 1024)
/* Largest command JSON agent_command sends; larger ones are refused before libvirt sees them. */
#define AGENT_MAX_COMMAND (175 * 1000)

/*
 * Send one command {"execute": name, "arguments": args} (args may be NULL; the reference is
 * stolen) and return its "return" member in *ret (new reference; may be NULL when not wanted).
 * timeout_s: seconds libvirt waits for the answer (VIR_DOMAIN_QEMU_AGENT_COMMAND_* or > 0).
 */
/* Decodes base64 text s into a new NUL-terminated buffer (*buf, *len without the NUL; caller
 * frees). Returns false on malformed input. */
bool agent_b64_decode(const char *s, char **buf, size_t *len);

int agent_command(virDomainPtr dom, const char *name, json_t *args, int timeout_s, json_t **ret,
		  char **err);

/* guest-ping with a timeout in seconds. */
int agent_ping(virDomainPtr dom, int timeout_s, char **err);

struct agent_exec_result {
	int exit_code; /* the exit status, or -1 when killed by a signal */
	int signal;    /* the signal that killed it, or 0 */
	char *out;     /* stdout, NUL-terminated (may contain NULs: use out_len) */
	size_t out_len;
	char *err; /* stderr, NUL-terminated */
	size_t err_len;
	/* after agent_exec returned -1: whether the timeout passed (the process was killed) or
	 * a signal interrupted the run (run_interrupted()) */
	bool timed_out, interrupted;
};
void agent_exec_result_clear(struct agent_exec_result *r);

/*
 * Run argv[0] in the guest with argv[1..] (NULL-terminated; no shell: pass "sh", "-c", ... for
 * one), optional input on stdin (input_len bytes, may be 0), capture stdout/stderr and wait up to
 * timeout_ms for it to end (polling guest-exec-status). Returns 0 when the program ran to the end
 * (whatever its exit code, in r->exit_code); -1 with *err when it could not be started, the
 * agent or domain went away, or the timeout passed (the process is then killed with the guest's
 * kill -KILL, on guests that have one).
 */
int agent_exec(virDomainPtr dom, const char *const *argv, const void *input, size_t input_len,
	       unsigned timeout_ms, struct agent_exec_result *r, char **err);

/*
 * Like agent_exec, but a non-zero exit is an error too, whose message carries the program's
 * stderr. out (may be NULL) receives stdout (caller frees).
 */
int agent_run(virDomainPtr dom, const char *const *argv, unsigned timeout_ms, char **out,
	      char **err);

/* guest-file-open: mode as fopen ("r", "w", "a", ...). */
int agent_file_open(virDomainPtr dom, const char *path, const char *mode, int64_t *handle,
		    char **err);
/* Write all of buf in AGENT_CHUNK pieces. */
int agent_file_write(virDomainPtr dom, int64_t handle, const void *buf, size_t len, char **err);
/* Write all of buf in pieces of chunk bytes (1 to AGENT_MAX_CHUNK; 0: AGENT_CHUNK). */
int agent_file_write_chunked(virDomainPtr dom, int64_t handle, const void *buf, size_t len,
			     size_t chunk, char **err);
/*
 * The loop of a file write, apart from the protocol (unit-tested with a hostile agent): send
 * buf in pieces of chunk bytes through send(), which sets *count to the bytes the agent says it
 * wrote. A count other than the piece's size (short, none, more) is an error, as is the run's
 * deadline passing (run_deadline_passed()) or a signal: the commands are bounded by the size
 * and by the run timeout, whatever the agent answers.
 */
typedef int (*agent_write_fn)(void *ud, const void *buf, size_t n, long long *count, char **err);
int agent_write_loop(const void *buf, size_t len, size_t chunk, agent_write_fn send, void *ud,
		     char **err);
/* Read at most max (<= AGENT_CHUNK) bytes into buf; *n gets the count, *eof end of file. */
int agent_file_read(virDomainPtr dom, int64_t handle, void *buf, size_t max, size_t *n, bool *eof,
		    char **err);
int agent_file_close(virDomainPtr dom, int64_t handle, char **err);

/* Copy a host file to a guest path through guest-file-write; *bytes (may be NULL) gets the size. */
int agent_push_file(virDomainPtr dom, const char *host_path, const char *guest_path,
		    uint64_t *bytes, char **err);
/* The same in guest-file-write pieces of chunk bytes (see agent_file_write_chunked()). */
int agent_push_file_chunked(virDomainPtr dom, const char *host_path, const char *guest_path,
			    size_t chunk, uint64_t *bytes, char **err);
/* Read a whole guest file (at most max bytes) into *buf (NUL-terminated; caller frees). */
int agent_read_file(virDomainPtr dom, const char *guest_path, size_t max, char **buf, size_t *len,
		    char **err);
