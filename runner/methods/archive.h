/* SPDX-License-Identifier: MIT */
/*
 * Packing a dataset with libarchive for methods that move one stream (agent-file with
 * `archive:`, disk-image's ISO 9660): entries in manifest order straight from the dataset
 * directory to a write callback, without a temporary archive on disk.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "method.h"

struct archive;

/* Where the packed bytes go: return 0, or -1 with *err set (caller of pack frees). */
typedef int (*pack_sink_fn)(void *userdata, const void *buf, size_t len, char **err);

/*
 * Whether the guest can unpack `a` (`builtin`: the built-in guest, whose busybox has gzip and
 * xz only; otherwise a user image with its own tools): NULL, or a malloc'ed skip reason.
 */
char *pack_guest_support(const struct plan_archive *a, bool builtin);

/*
 * The guest shell command that unpacks FILE into the current directory for `a` (caller frees).
 * file is quoted inside.
 */
char *pack_guest_unpack_cmd(const struct plan_archive *a, const char *file);

/* The archive's file name suffix (".tar.gz", ".cpio", ".zip", ...). */
const char *pack_suffix(const struct plan_archive *a);

/* Configure a new libarchive writer for `a` (format, filter, level). Returns 0 or -1 (*err). */
int pack_setup(struct archive *w, const struct plan_archive *a, char **err);

/*
 * Add every entry of the manifest from dir to the writer w (already opened). Returns 0 or -1
 * (*err).
 */
int pack_entries(struct archive *w, const char *dir, const struct manifest *m, char **err);

/*
 * Pack the dataset as `a` and send every byte to sink in pieces of at most `chunk` bytes
 * (all but the last exactly chunk). Returns 0 or -1 (*err).
 */
int pack_stream(const struct plan_archive *a, const char *dir, const struct manifest *m,
		size_t chunk, pack_sink_fn sink, void *userdata, char **err);
