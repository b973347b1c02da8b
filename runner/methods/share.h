/* SPDX-License-Identifier: MIT */
/* What the share method's drivers have in common (share.c for 9p and virtiofs, smb.c). */
#pragma once

#include "plan.h"

/*
 * The guest command that copies or moves what the share holds at `from` (a directory, or with
 * an archive the archive file) into the directory `to`, unpacking an archive, and syncs. Caller
 * frees.
 */
char *share_copy_command(const struct plan_method *m, const char *from, const char *to);

/* The file name extension of m's archive ("tar.gz", "zip"; a static buffer). */
const char *share_archive_ext(const struct plan_archive *a);
