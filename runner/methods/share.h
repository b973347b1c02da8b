/* SPDX-License-Identifier: MIT */
/* What the share method's drivers have in common (share.c for 9p and virtiofs, smb.c). */
#pragma once

#include "method.h"
#include "plan.h"

/* share's options (share.c declares their keys): the values' order of each enum is its key's */
enum share_drv { SHARE_9P, SHARE_VIRTIOFS, SHARE_SMB };
enum share_cache { SHARE_CACHE_NONE, SHARE_CACHE_LOOSE, SHARE_CACHE_MMAP };
enum share_how { SHARE_COPY, SHARE_MOVE };
/* smb: where the guest copies or moves the source share's files (study 002) */
enum share_to {
	SHARE_TO_GUEST,        /* the landing directory on the guest's target disk */
	SHARE_TO_SAME_SHARE,   /* another folder of the same share */
	SHARE_TO_OTHER_SHARE,  /* a second share of the same server */
	SHARE_TO_OTHER_SERVER, /* a share of a second server (another address) */
};

/* who serves an smb share: the host (the guest copies from it), or the guest (the host copies
 * onto it, study 000's Copy-Item-Smb) */
enum share_by { SHARE_BY_HOST, SHARE_BY_GUEST };

struct share_opts {
	uint64_t set;
	enum share_drv driver;
	uint64_t msize; /* 9p */
	enum share_cache cache;
	enum share_how mode;
	enum share_to to;        /* smb */
	enum share_by served_by; /* smb */
};

#define SHARE_OPTS(m) METHOD_OPTS(m, struct share_opts)

/*
 * What the share method declares, which its driver smb (smb.c's method_share_smb) declares as
 * its own too: the keys, the rules (SHARE_N_RULES of them) and the needs.
 */
extern const struct key_table share_keys;
extern const struct plan_rule share_rules[];
#define SHARE_N_RULES 4
uint64_t share_run_dir_bytes(const struct plan_method *m, uint64_t data);
#define SHARE_NEEDS                                                                                \
	{                                                                                          \
		.remote_why = "share exports a directory of ferry's own filesystem: not on a "     \
			      "remote libvirt host (libvirt has no way to carry a shared folder "  \
			      "over its connection)",                                              \
		.run_dir_bytes = share_run_dir_bytes, .run_dir_files = true                        \
	}
/* The driver smb (smb.c), and with `served_by: guest` (smb-guest.c). */
extern const struct method_ops method_share_smb;
extern const struct method_ops method_share_smb_guest;

/*
 * The guest command that copies or moves what the share holds at `from` (a directory, or with
 * an archive the archive file) into the directory `to`, unpacking an archive, and syncs. Caller
 * frees.
 */
char *share_copy_command(const struct plan_method *m, const char *from, const char *to);

/* The file name extension of m's archive ("tar.gz", "zip"; a static buffer). */
const char *share_archive_ext(const struct plan_archive *a);
