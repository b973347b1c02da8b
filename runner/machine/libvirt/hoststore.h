/* SPDX-License-Identifier: MIT */
/*
 * A libvirt host that does not share ferry's filesystem (a remote host): everything a domain
 * needs there is a volume of ferry's storage pool on that host, created, written and removed
 * through the libvirt storage API (the remote protocol carries the bytes: virStorageVolUpload,
 * virStorageVolDownload), never a path of ferry's own filesystem.
 *
 *  - The pool: a directory pool named HOSTSTORE_POOL at HOSTSTORE_POOL_DIR, defined, built and
 *    started on first use (persistent, so that it survives ferry and `ferry doctor --reap` can
 *    find it; it is not autostarted).
 *  - The built-in guest's kernel and initramfs: "guest-<first 16 hex digits of SHA-256>-<what>",
 *    uploaded once and reused by every later run with the same bytes; a companion volume
 *    "<name>.ok" (empty) is created only after the upload finished, so a half-uploaded volume
 *    (ferry killed mid-upload) is never booted: it is replaced.
 *  - A run's volumes (target disks, disk-image media, console logs):
 *    "ferry-<run id>-<label>", deleted when they are no longer needed, and all that are left at
 *    the run's cleanup (run_defer); `ferry doctor --reap --connect URI` deletes those of runs
 *    whose ferry process is gone and that no domain on the host uses.
 *
 * Which connections are remote: hoststore_uri_remote().
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <libvirt/libvirt.h>

#include "run.h"

#define HOSTSTORE_POOL     "ferry"
#define HOSTSTORE_POOL_DIR "/var/lib/libvirt/images/ferry"

struct hoststore;

/*
 * Whether a libvirt URI names a host that does not share ferry's filesystem: a URI with a host
 * name ("qemu+ssh://lab-1/system", "qemu+tcp://127.0.0.1/system", "qemu://host/system") or a
 * remote transport (+ssh, +libssh, +libssh2, +tcp, +tls, +ext) is remote; "qemu:///system",
 * "qemu+unix:///system" and a NULL uri are local. ferry run --storage overrides it.
 */
bool hoststore_uri_remote(const char *uri);

/*
 * Open (define, build and start when needed) ferry's pool on conn, for run r (may be NULL:
 * doctor). With r, the run's volumes left at run_close() are deleted then, and the store is freed
 * there; without, free it with hoststore_free(). Returns NULL with *err set.
 */
struct hoststore *hoststore_open(virConnectPtr conn, struct run *r, char **err);
void hoststore_free(struct hoststore *hs);

/* The store registered for conn (hoststore_open with a run), or NULL: a local connection. */
struct hoststore *hoststore_find(virConnectPtr conn);

/*
 * The built-in guest's file at local_path (kernel or initramfs; what: "kernel", "initramfs")
 * on the host: uploaded when no complete volume with its content hash is there. *remote_path
 * receives the volume's path on the host (caller frees).
 */
int hoststore_guest_file(struct hoststore *hs, const char *local_path, const char *what,
			 char **remote_path, char **err);

/*
 * How a run volume is created. libvirt sees every volume as raw: the bytes uploaded into it are
 * the image (raw or qcow2) as ferry built it locally, and the domain XML names the image's format.
 */
struct hoststore_vol {
	const char *label; /* unique in the run: the volume is "ferry-<run id>-<label>" */
	uint64_t capacity; /* bytes; at least the uploaded file's size */
	bool preallocate;  /* allocation = capacity (libvirt fallocates the file) */
};

/*
 * Create a run volume as v says and, when local_path is not NULL, upload that file into it
 * (holes are skipped: a sparse stream; a preallocated volume keeps its allocation under them,
 * and a fully preallocated image's zeros are data, so they are written). *remote_path receives its
 * path on the host (caller frees). Returns 0 or -1 with *err (the volume is deleted again on
 * failure).
 */
int hoststore_run_volume(struct hoststore *hs, const struct hoststore_vol *v,
			 const char *local_path, char **remote_path, char **err);
/* Delete a run volume by label (nothing when it is gone). */
void hoststore_delete(struct hoststore *hs, const char *label);
/* The last max bytes of a run volume (a console log), or NULL. Caller frees. */
char *hoststore_tail(struct hoststore *hs, const char *label, size_t max);

/*
 * The name of the guest volume a local built-in guest file (kernel or initramfs; what:
 * "kernel", "initramfs") is uploaded as: "guest-<first 16 hex digits of SHA-256>-<what>".
 * Returns NULL with *err (caller frees both).
 */
char *hoststore_guest_volume_name(const char *local_path, const char *what, char **err);

/* What `ferry doctor` found of ferry's on the host. */
struct hoststore_leftovers {
	bool pool;                /* the pool exists */
	unsigned guest_files;     /* cached guest volumes kept (the current build's, in use, or all
				     when the current build is not known) */
	unsigned old_guest_files; /* cached guest volumes of another build, not in use by a
				     domain */
	unsigned guest_reaped;    /* of those, deleted (reap) */
	unsigned stale;           /* run volumes of runs that are over */
	unsigned live;            /* run volumes of runs still in progress */
	unsigned reaped;          /* stale run volumes deleted (reap) */
};

/*
 * Look at (and with reap, delete the stale of) ferry's run volumes on conn. A run volume is
 * stale when no domain on the host belongs to its run and its ferry process (the pid of the run
 * id, on this machine) is gone. The cached guest volumes: with keep (the names of the current
 * build's, hoststore_guest_volume_name(); NULL-terminated), the others that no domain on the
 * host boots from are old, and reap deletes them (and their .ok markers); without keep, all
 * are kept. With reap, an empty pool is removed too (undefined). Returns 0 or -1 with *err.
 */
int hoststore_leftovers(virConnectPtr conn, bool reap, const char *const *keep,
			struct hoststore_leftovers *out, char **err);
