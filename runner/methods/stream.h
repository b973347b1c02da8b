/* SPDX-License-Identifier: MIT */
/*
 * A dataset as one byte stream, for the methods that move a stream (channel, network, share with
 * `archive:`, block): packed on the host with libarchive straight into a file descriptor (a
 * socket or a file; no temporary archive), or its files' bytes concatenated in manifest order
 * (block). And the guest side: the shell pipeline that unpacks such a stream with the guest's own
 * tools (busybox in the built-in guest: tar, cpio, unzip, gzip, xz; no zstd, no lz4).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "manifest.h"
#include "plan.h"

/*
 * Pack the manifest's entries (read from dir) with libarchive into fd: format and compression
 * from a (format none packs tar). Writes block at most timeout_ms each (the fd may be a socket
 * whose reader died). *bytes receives the bytes written. Returns 0 or -1 with *err (caller frees).
 */
int stream_pack(const struct plan_archive *a, const char *dir, const struct manifest *m, int fd,
		unsigned timeout_ms, uint64_t *bytes, char **err);

/*
 * Write the bytes of every regular file of m (read from dir) one after the other in manifest
 * order into fd (fd < 0: only hash), and their SHA-256 into sha (may be NULL).
 */
int stream_concat(const char *dir, const struct manifest *m, int fd, unsigned timeout_ms,
		  uint64_t *bytes, unsigned char sha[32], char **err);

/*
 * The guest shell command that reads the stream from the output of `source` (a shell command
 * such as "cat /dev/virtio-ports/X"; NULL: from the command's own stdin, without a pipe stage)
 * and unpacks it into guest directory dir. Runs under
 * `set -o pipefail` where the guest's shell has it (METHOD_SH_PIPEFAIL: busybox ash, bash), so a
 * failure anywhere in the pipeline fails it; under dash only the unpacker's status counts (and
 * verify still checks every byte). Caller frees.
 */
char *stream_unpack_command(const struct plan_archive *a, const char *source, const char *dir);

/* Write all of buf to fd; a write blocked for timeout_ms (or an interrupt) is an error. */
int stream_write_all(int fd, const void *buf, size_t len, unsigned timeout_ms, char **err);

/* The words of a stream_* error after the reader took nothing for the timeout: the guest's
 * reader hangs, which is the run's timeout (ERROR_TIMEOUT), not a broken host. */
#define STREAM_STALLED "the reader took no data for"
/* The words of a stream_* error when the run's own deadline passed while bytes were still to
 * send (a reader that takes a byte at a time): a timeout too. */
#define STREAM_DEADLINE "write: the run timeout"
/* ERROR_TIMEOUT when err says the reader stalled or the run's deadline passed, else
 * ERROR_INFRA. */
#define STREAM_ERROR_KIND(err)                                                                     \
	((err) && (strstr((err), STREAM_STALLED) || strstr((err), STREAM_DEADLINE))                \
	     ? ERROR_TIMEOUT                                                                       \
	     : ERROR_INFRA)
