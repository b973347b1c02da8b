/* SPDX-License-Identifier: MIT */
/*
 * The machine interface: what the executor asks of the place a cell runs in. A machine boots a
 * guest for a configuration (the plan's vm entry, the target disk the data lands on, and the
 * boot-time devices the cell's method asked for), brings the landing place back to its start
 * state before every run, says whether a guest is still usable after a failure, and destroys it.
 * The executor never talks to libvirt itself, and neither do the methods: what they do in a guest
 * (run a command, write a file, plug a disk, open a channel, reach a port) are the guest
 * operations below (struct machine_guest_ops), one table per machine, as libvirt's own drivers
 * are tables of functions (src/driver-hypervisor.h) with a test driver beside the real ones.
 *
 * Two implementations: machine_libvirt_open() (transient libvirt/QEMU domains, the real thing)
 * and machine_fake_open() (in-process, scriptable, for the executor's and the methods' unit tests).
 */
#pragma once

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "devices.h"
#include "methods/method.h"
#include "plan.h"
#include "proc.h"
#include "results.h"
#include "run.h"

/* The guest directory the data lands in (the target's filesystem is mounted on its parent). */
#define MACHINE_TARGET_MNT "/mnt/target"
#define MACHINE_LANDING    MACHINE_TARGET_MNT "/data"
/* The serial the guest finds the target disk by. */
#define MACHINE_TARGET_SERIAL "ferry-target"
/* Host addresses a run's private network offers (machine_net_host_addr). */
#define MACHINE_NET_HOST_ADDRS 4

/* What to boot: borrowed, valid while the guest lives. */
struct machine_config {
	const struct plan_vm *vm;
	const struct plan_disk *disk;          /* the target disk (tmpfs or image) to boot with */
	const struct method_boot_needs *needs; /* the method's boot-time devices */
	/* run.fresh restore: start the guest from a saved state of this configuration (made by a
	 * boot at the first need) where the machine can, else boot it (machine_guest.fresh_note
	 * says why) */
	bool restore;
};

/*
 * A cell whose method asks for a second guest (method_boot_needs.peer, vm2vm's sender) gets it
 * from machine_boot() with the first: the peer boots first, from its own vm entry (its NIC
 * settings are its own), on the same private network, with a tmpfs of METHOD_GUEST_STAGE_PCT
 * percent of its memory mounted at MACHINE_TARGET_MNT and an empty MACHINE_LANDING in it; it is
 * never restored from a saved state. boot_ms is then both boots' sum. machine_destroy(),
 * machine_healthy(), machine_suspend() and machine_resume() act on both; machine_reset(),
 * machine_sample() and machine_describe() on the cell's guest only. machine_peer() gives it.
 */

/* For implementations: the configuration of c's peer (c->needs->peer), its tmpfs disk in *disk
 * (the entry's name "peer"; valid while *disk lives). */
void machine_peer_config(const struct machine_config *c, struct plan_disk *disk,
			 struct machine_config *out);

/* A booted guest. Implementations embed it first; the executor reads the fields. */
struct machine_guest {
	char *name;      /* e.g. the domain name; caller never frees */
	double boot_ms;  /* from start to the first answer of the guest */
	double probe_ms; /* of the boot: the KVM boot probe it ran first (accel auto), or 0 */
	bool dirty;      /* the landing place holds data of an earlier run */
	bool restored;   /* started from a saved state (machine_config.restore), not booted */
	/* asked to restore but booted: why, the first time for this configuration (else NULL;
	 * the guest owns it) */
	char *fresh_note;
	/* what ran the cell, seen in the guest after boot (NULL when it could not be asked):
	 * os is /etc/os-release's PRETTY_NAME or "none", userland "busybox", "gnu" or "other" (who
	 * answers `ls`), init /proc/1/comm, sh what /bin/sh resolves to */
	char *os, *userland, *init, *sh;
};

/* The start state of a run (machine_reset). */
struct machine_reset {
	/* the run's target disk. When it is not the one the guest's landing place is on (cells of
	 * several disks share a guest: machine_disk_boot_key()), the machine unmounts (tmpfs) or
	 * unmounts and detaches (image) the current target and mounts or plugs a fresh one of this
	 * disk, the start state a boot with it would have given, whatever fresh_disk says. NULL:
	 * the guest's current disk. */
	const struct plan_disk *disk;
	bool fresh_disk;  /* re-create the target disk instead of emptying the landing directory */
	bool drop_caches; /* sync and drop the host's and the guest's page caches */
};

/* Where in a run the executor is (machine_hook): the test fault hooks act there. */
enum machine_point {
	MACHINE_BEFORE_PREPARE,
	MACHINE_BEFORE_TRANSFER,
	MACHINE_BEFORE_FINALIZE,
	MACHINE_BEFORE_VERIFY,
	MACHINE_DURING_TRANSFER, /* after the transfer phase's clock started (a test delay counts)
				  */
	MACHINE_END_TRANSFER,    /* after the method's transfer, before its clock stops (a test
				  * delay counts; elapsed_ns is the phase so far) */
};

struct machine_where {
	enum machine_point point;
	const char *cell;   /* the cell id */
	unsigned run_index; /* 0-based over the cell's runs, warmups first */
	bool warmup;
	unsigned timeout_ms; /* the run's timeout */
	uint64_t elapsed_ns; /* MACHINE_END_TRANSFER: the transfer phase's time so far */
};

/* What the executor measures of a guest around a run (machine_sample): counters and levels read
 * at one moment; NAN where the machine cannot tell (a tmpfs target has no image). */
struct machine_sample {
	double alloc_bytes; /* host bytes allocated by the target image file (st_blocks x 512) */
	double cpu_qemu_s;  /* CPU time of the QEMU process so far, user + system, all threads */
	double cpu_guest_s; /* the guest's non-idle CPU time so far (its /proc/stat, all CPUs) */
};
enum machine_sample_what {
	MACHINE_SAMPLE_ALLOC = 1, /* alloc_bytes */
	MACHINE_SAMPLE_CPU = 2,   /* cpu_qemu_s, cpu_guest_s */
};

struct machine;

/* ---- guest operations: what a method does in a booted guest ----
 *
 * Every operation takes the machine and the guest (ctx->machine, ctx->guest: machine_bind()) and
 * returns 0 on success or -1 with *e filled (struct machine_err; the caller frees it with
 * machine_err_clear()). The operations never print and never exit. Guest paths are absolute.
 * A machine without some operation leaves its member NULL: the wrapper then fails with
 * MACHINE_ERR_UNSUPPORTED ("this machine cannot ...").
 */

/* Why a guest operation failed. */
enum machine_err_kind {
	MACHINE_ERR_FAILED = 1,  /* the guest, its agent or the host refused or broke down */
	MACHINE_ERR_TIMEOUT,     /* it did not end within its timeout (a command was killed) */
	MACHINE_ERR_INTERRUPTED, /* a signal ended the run meanwhile (run_interrupted()) */
	MACHINE_ERR_UNSUPPORTED, /* this machine has no such operation */
};

struct machine_err {
	enum machine_err_kind kind;
	/* What failed and why, in the machine's words, lower-case, no final period (e.g. "'/bin/sh'
	 * in the guest did not finish within 500 ms", "cannot open '/x' in the guest: ..."). */
	char *msg;
	/* Optional: the machine's own diagnostic at the failing call (libvirt: its last error
	 * message), recorded as the cell error's libvirt_message. NULL when there is none. */
	char *detail;
};
/* Free msg and detail and zero e (safe on a zeroed e, and twice). */
void machine_err_clear(struct machine_err *e);
/* Fill e (kind, msg from fmt; detail NULL); returns -1, for implementations. */
int machine_err_set(struct machine_err *e, enum machine_err_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* What a guest command that ran to its end left (machine_guest_exec). */
struct machine_exec_result {
	int exit_code; /* its exit status, or -1 when a signal killed it */
	int signal;    /* the signal that killed it, or 0 */
	char *out;     /* stdout, NUL-terminated (may hold NULs: out_len counts them) */
	size_t out_len;
	char *err; /* stderr, NUL-terminated */
	size_t err_len;
};
/* Free out and err and zero r (safe on a zeroed r). */
void machine_exec_result_clear(struct machine_exec_result *r);

/* A guest process started without waiting (machine_guest_spawn), as one poll found it. */
struct machine_proc_status {
	bool exited;
	int exit_code; /* exited: its status, or -1 when a signal killed it */
	int signal;    /* exited: the signal that killed it, or 0 */
	char *out;     /* exited: stdout and stderr, NUL-terminated (caller frees) */
	char *err;
};
void machine_proc_status_clear(struct machine_proc_status *st);

/* Largest and default raw bytes per guest file write (machine_guest_file_write's chunk): what
 * one guest-agent command carries (libvirt/agent.h). */
#define MACHINE_FILE_CHUNK_MAX     (128 * 1024)
#define MACHINE_FILE_CHUNK_DEFAULT (96 * 1024)

struct machine_guest_ops {
	/*
	 * Run argv[0] with argv[1..] (NULL-terminated, no shell: pass "/bin/sh", "-c", CMD for
	 * one) in the guest, input_len bytes of input on its stdin (at most
	 * MACHINE_FILE_CHUNK_DEFAULT; 0: none), and wait up to timeout_ms for it to end. Returns 0
	 * when it ran to its end, whatever its exit status (*r filled; caller clears it), or -1
	 * with *e: it could not start, the guest went away (FAILED), the timeout passed (TIMEOUT:
	 * the process was killed), a signal interrupted the run (INTERRUPTED). *r is zeroed then.
	 */
	int (*exec)(struct machine *m, struct machine_guest *g, const char *const *argv,
		    const void *input, size_t input_len, unsigned timeout_ms,
		    struct machine_exec_result *r, struct machine_err *e);
	/* Start argv in the guest with its output captured and return at once: *pid names it for
	 * proc_status and proc_kill. The caller must collect it (proc_status until exited, or
	 * proc_kill). */
	int (*spawn)(struct machine *m, struct machine_guest *g, const char *const *argv,
		     int64_t *pid, struct machine_err *e);
	/* Poll pid once: *st says whether it exited (then its status and output; the machine
	 * forgets pid). -1 with *e when the machine cannot tell. */
	int (*proc_status)(struct machine *m, struct machine_guest *g, int64_t pid,
			   struct machine_proc_status *st, struct machine_err *e);
	/* Kill pid and every process it started, and forget it (best effort, for cleanup paths:
	 * no error). */
	void (*proc_kill)(struct machine *m, struct machine_guest *g, int64_t pid);

	/* Open a guest file: mode as fopen's ("r", "w", "a"). *handle names it until file_close. */
	int (*file_open)(struct machine *m, struct machine_guest *g, const char *path,
			 const char *mode, int64_t *handle, struct machine_err *e);
	/* Write all len bytes of buf to handle in pieces of chunk bytes (1 to
	 * MACHINE_FILE_CHUNK_MAX; 0: MACHINE_FILE_CHUNK_DEFAULT): a piece is one guest round trip.
	 */
	int (*file_write)(struct machine *m, struct machine_guest *g, int64_t handle,
			  const void *buf, size_t len, size_t chunk, struct machine_err *e);
	/* Read at most max (<= MACHINE_FILE_CHUNK_DEFAULT) bytes into buf: *n gets the count, *eof
	 * whether the file ended. */
	int (*file_read)(struct machine *m, struct machine_guest *g, int64_t handle, void *buf,
			 size_t max, size_t *n, bool *eof, struct machine_err *e);
	/* Close handle (also after a failed write). */
	int (*file_close)(struct machine *m, struct machine_guest *g, int64_t handle,
			  struct machine_err *e);
	/* Copy the host file host_path to guest_path (created or truncated) in pieces of chunk
	 * bytes (as file_write); *bytes (may be NULL) gets its size. */
	int (*push_file)(struct machine *m, struct machine_guest *g, const char *host_path,
			 const char *guest_path, size_t chunk, uint64_t *bytes,
			 struct machine_err *e);
	/* Read the whole guest file path, at most max bytes, into *buf (NUL-terminated; caller
	 * frees), *len its size without the NUL. */
	int (*read_file)(struct machine *m, struct machine_guest *g, const char *path, size_t max,
			 char **buf, size_t *len, struct machine_err *e);

	/*
	 * Plug disk d (its image at d->path, which the caller created) into the running guest
	 * without waiting for the guest to show it: the caller waits inside its own guest command
	 * (disk_wait_command). The disk counts as plugged (disk_unplug removes it). timeout_ms
	 * bounds what plugging needs first (e.g. a SCSI driver load).
	 */
	int (*disk_plug)(struct machine *m, struct machine_guest *g, const struct disk_config *d,
			 unsigned timeout_ms, struct machine_err *e);
	/* Plug d and wait up to timeout_ms until the guest shows a block device with d->serial:
	 * *dev (may be NULL) gets its name ("vdb", "sda"; caller frees). */
	int (*disk_attach)(struct machine *m, struct machine_guest *g, const struct disk_config *d,
			   unsigned timeout_ms, char **dev, struct machine_err *e);
	/*
	 * A guest shell prefix that waits until a block device with this serial shows and leaves
	 * its name ("vdb") in $d, or exits 1 with a message after about timeout_ms. serial:
	 * letters, digits, '-' and '_'. Caller frees. Never NULL.
	 */
	char *(*disk_wait_command)(struct machine *m, const char *serial, unsigned timeout_ms);
	/* Unplug the disk with this serial and wait up to timeout_ms until the guest no longer
	 * shows it. */
	int (*disk_unplug)(struct machine *m, struct machine_guest *g, const char *serial,
			   unsigned timeout_ms, struct machine_err *e);

	/* Connect to the host end of the guest's byte channel named name (a virtio-serial port,
	 * guest side /dev/virtio-ports/NAME, asked for in method_boot_needs.channels): *fd is a
	 * blocking stream socket (caller closes); bytes written reach the guest's port. */
	int (*channel_open)(struct machine *m, struct machine_guest *g, const char *name, int *fd,
			    struct machine_err *e);

	/* Forward 127.0.0.1:host_port on the host to guest_port of a guest on user networking
	 * (the caller picked a free port), so the host can connect into the guest. */
	int (*hostfwd)(struct machine *m, struct machine_guest *g, int host_port, int guest_port,
		       struct machine_err *e);
	/* The guest's address on the run's private network (its NIC on a network only the run's
	 * guests and the host's end of it reach), or NULL when it has none (user networking). */
	const char *(*net_guest_addr)(struct machine *m, struct machine_guest *g);
	/*
	 * A socket(domain, type, 0) on the host's end of the run's private network, where the
	 * guests of net_guest_addr reach it (bind it to *host_addr to listen for them, or connect
	 * from it to a guest's address): *fd (caller closes), *host_addr the host's address there
	 * (static). -1 with *e when the run has no private network.
	 */
	int (*net_socket)(struct machine *m, int domain, int type, int *fd, const char **host_addr,
			  struct machine_err *e);
	/*
	 * The host's address number index on the run's private network (0: the one net_socket
	 * gives; index < MACHINE_NET_HOST_ADDRS), added to the host's end there at the first call,
	 * so that a second server of the run can listen on an address of its own. *addr (caller
	 * frees). -1 with *e when the run has no private network.
	 */
	int (*net_host_addr)(struct machine *m, unsigned index, char **addr, struct machine_err *e);
	/*
	 * Run argv (argv[0] from PATH, at most 24 arguments) on the host inside the run's private
	 * network and wait for it, its output in *out (may be NULL; caller frees): a server that
	 * puts itself into the background there (smbd -D) reaches the guests of net_guest_addr
	 * and nothing else; its caller stops it. -1 with *e when it could not run or exited
	 * non-zero.
	 */
	int (*net_run)(struct machine *m, const char *const *argv, char **out,
		       struct machine_err *e);
	/*
	 * proc_spawn(argv, o, r) on the host inside the run's private network: a client that
	 * reaches the guests of net_guest_addr there (ssh, with a stdin pipe and a timeout). -1
	 * with *e when it could not be started or ran past o->timeout_ms (e->msg says which); its
	 * exit status is r's.
	 */
	int (*net_spawn)(struct machine *m, const char *const *argv, const struct proc_opts *o,
			 struct proc_result *r, struct machine_err *e);
	/* Why the guest's NIC moves packets without the host kernel's vhost-net (e.g. the host
	 * has no /dev/vhost-net), or NULL when it uses it (static string). */
	const char *(*nic_no_vhost_reason)(struct machine *m, struct machine_guest *g);

	/* Whether the host can export a directory over virtiofs (has virtiofsd); g may be NULL
	 * (before boot). */
	bool (*has_virtiofs)(struct machine *m);
	/* Whether a 9p share in accessmode mapped shows the guest only what the host holds in
	 * QEMU's mapped form (security_model=mapped-xattr: a symbolic link is a regular file with
	 * its target and a user.virtfs.mode xattr; a host symlink there cannot be read). NULL or
	 * false: the machine shows the host's files as they are (the fake machine's bind mount). */
	bool (*share_maps_links)(struct machine *m);
};

struct machine_ops {
	const char *name;
	/* Boot a guest for c. Returns 0 with *out set, or -1 with *err (and maybe *detail: the
	 * libvirt message; caller frees both). */
	int (*boot)(struct machine *m, const struct machine_config *c, struct machine_guest **out,
		    char **err, char **detail);
	/* Bring the landing place to the start state r asks for, on r->disk. 0 or -1 with *err
	 * (after a failed switch of disks the guest is not healthy()). */
	int (*reset)(struct machine *m, struct machine_guest *g, const struct machine_reset *r,
		     char **err);
	/* What of target disk d a guest's boot configuration holds, as a key (caller frees), or
	 * NULL when d is part of it (a disk on a bus that cannot be hot-plugged). A disk the
	 * machine mounts or plugs only after boot (tmpfs, a hot-pluggable image) gives a key that
	 * is the same for every disk it can switch a running guest to (machine_reset's disk): ""
	 * when the boot configuration holds nothing of it, else e.g. the driver its bus loads at
	 * boot. Under run.vm shared, cells whose disks give equal keys (and that agree on the rest
	 * of the configuration) share one guest. May be NULL: every disk is part of the boot. */
	char *(*disk_boot_key)(struct machine *m, const struct plan_disk *d);
	/* Destroy the guest and free g. Safe with NULL. */
	void (*destroy)(struct machine *m, struct machine_guest *g);
	/* After a failure: whether the guest still answers (false: destroy it). */
	bool (*healthy)(struct machine *m, struct machine_guest *g);
	/* The last lines of the guest's console (caller frees), or NULL. */
	char *(*console_tail)(struct machine *m, struct machine_guest *g, unsigned lines);
	/* Provenance: versions, accelerator, guest hashes, into pv (host facts are the caller's).
	 */
	void (*describe)(struct machine *m, struct machine_guest *g, struct result_provenance *pv);
	/* Fill what a method needs of the host (g NULL: before boot) or of guest g. */
	void (*bind)(struct machine *m, struct machine_guest *g, struct method_ctx *ctx);
	/* Whether a cell's method can run on this machine at all (NULL: yes), else the skip
	 * reason (caller frees): e.g. share and network need the host's own filesystem and
	 * network, which a remote libvirt host does not share. May be NULL. */
	char *(*supports)(struct machine *m, const struct plan_cell *pc);
	/* Read what `what` (enum machine_sample_what bits) asks into *out; what cannot be read is
	 * NAN. May be NULL (nothing measurable). */
	void (*sample)(struct machine *m, struct machine_guest *g, unsigned what,
		       struct machine_sample *out);
	/* After a run: delete its data on the target and hand the freed blocks back to the host
	 * (fstrim; blkdiscard when the target is not mounted), where the target disk allows
	 * discard. Returns 1 when done, 0 when it does not apply, -1 with *err. May be NULL. */
	int (*reclaim)(struct machine *m, struct machine_guest *g, char **err);
	/* Flush and evict the host's cached pages of guest g's target disk image (the block
	 * method, between a write and its read-back, so that the read comes from the device);
	 * *resident gets the bytes of it still cached. 0, or -1 with *err. May be NULL: the
	 * machine cannot (machine_evict_target() says so). */
	int (*evict_target)(struct machine *m, struct machine_guest *g, uint64_t *resident,
			    char **err);
	/* Drop guest g's page cache and the host's, as machine_reset() does for run.caches drop:
	 * for a method whose untimed work before its timed copy filled them (guest-copy's read
	 * direction). 0, or -1 with *err. May be NULL: the machine cannot. */
	int (*drop_caches)(struct machine *m, struct machine_guest *g, char **err);
	/* Pause guest g: its vCPUs stop, its memory (and page cache) stays, so it takes no CPU
	 * while another guest of an interleaved unit measures (ferry(1) run.order). 0, or -1 with
	 * *err. May be NULL: the machine cannot; the executor then boots a guest per run. */
	int (*suspend)(struct machine *m, struct machine_guest *g, char **err);
	/* Resume a suspended guest and wait until it answers again. 0, or -1 with *err. */
	int (*resume)(struct machine *m, struct machine_guest *g, char **err);
	/* The physical memory of the host the guests run on, in bytes; 0 when unknown. May be
	 * NULL. */
	uint64_t (*host_memory)(struct machine *m);
	/* Called at each point of every run (test fault injection; the fake's script). */
	void (*hook)(struct machine *m, struct machine_guest *g, const struct machine_where *w);
	/* After a failure: whether the connection to the host still works (a lost libvirt
	 * connection is the host's fault, not the cell's), else false with *why (caller frees).
	 * May be NULL (always alive). */
	bool (*alive)(struct machine *m, char **why);
	void (*close)(struct machine *m);
	/* The second guest booted with g (method_boot_needs.peer), or NULL. Methods run the guest
	 * operations on it as on g. May be NULL: the machine boots no second guest. */
	struct machine_guest *(*peer)(struct machine *m, struct machine_guest *g);
	/* What methods do in its guests (above). May be NULL: no method but null runs. */
	const struct machine_guest_ops *guest;
};

/* Implementations embed it first. */
struct machine {
	const struct machine_ops *ops;
};

/* Opens a machine for a run (exec_opts.machine_open). Returns NULL with *err set. */
typedef struct machine *(*machine_open_fn)(struct run *run, const char *uri, void *data,
					   char **err);

/* Whether the libvirt host shares ferry's filesystem (ferry run --storage). */
enum machine_storage {
	MACHINE_STORAGE_AUTO,    /* decided from the URI: hoststore_uri_remote() */
	MACHINE_STORAGE_LOCAL,   /* files ferry creates are paths the host opens */
	MACHINE_STORAGE_VOLUMES, /* everything goes through ferry's storage pool on the host */
};

/* The options of machine_libvirt_open (its data; NULL: all defaults). */
struct machine_libvirt_opts {
	enum machine_storage storage;
};

/* libvirt/QEMU (machine-libvirt.c): uri NULL means qemu:///system; data: NULL or a struct
 * machine_libvirt_opts. */
struct machine *machine_libvirt_open(struct run *run, const char *uri, void *data, char **err);

/* Thin wrappers, so call sites read as verbs. */
static inline int machine_boot(struct machine *m, const struct machine_config *c,
			       struct machine_guest **out, char **err, char **detail)
{
	return m->ops->boot(m, c, out, err, detail);
}
static inline struct machine_guest *machine_peer(struct machine *m, struct machine_guest *g)
{
	return m && g && m->ops->peer ? m->ops->peer(m, g) : NULL;
}
static inline int machine_reset(struct machine *m, struct machine_guest *g,
				const struct machine_reset *r, char **err)
{
	return m->ops->reset(m, g, r, err);
}
static inline char *machine_disk_boot_key(struct machine *m, const struct plan_disk *d)
{
	return m->ops->disk_boot_key ? m->ops->disk_boot_key(m, d) : NULL;
}
/* Whether a and b are the same disk of the plan: the same entry with the same swept values. */
static inline bool machine_disk_same(const struct plan_disk *a, const struct plan_disk *b)
{
	if (a == b)
		return true;
	if (!a || !b || strcmp(a->e.name, b->e.name) != 0)
		return false;
	return a->e.sweep && b->e.sweep ? strcmp(a->e.sweep, b->e.sweep) == 0
					: !a->e.sweep && !b->e.sweep;
}
static inline void machine_destroy(struct machine *m, struct machine_guest *g)
{
	if (g)
		m->ops->destroy(m, g);
}
static inline bool machine_healthy(struct machine *m, struct machine_guest *g)
{
	return m->ops->healthy(m, g);
}
static inline char *machine_console_tail(struct machine *m, struct machine_guest *g, unsigned lines)
{
	return m->ops->console_tail ? m->ops->console_tail(m, g, lines) : NULL;
}
static inline void machine_describe(struct machine *m, struct machine_guest *g,
				    struct result_provenance *pv)
{
	m->ops->describe(m, g, pv);
}
static inline void machine_bind(struct machine *m, struct machine_guest *g, struct method_ctx *ctx)
{
	ctx->machine = m;
	ctx->guest = g;
	m->ops->bind(m, g, ctx);
}
static inline char *machine_supports(struct machine *m, const struct plan_cell *pc)
{
	return m->ops->supports ? m->ops->supports(m, pc) : NULL;
}
static inline void machine_sample(struct machine *m, struct machine_guest *g, unsigned what,
				  struct machine_sample *out)
{
	*out = (struct machine_sample){ NAN, NAN, NAN };
	if (m->ops->sample && g)
		m->ops->sample(m, g, what, out);
}
static inline int machine_reclaim(struct machine *m, struct machine_guest *g, char **err)
{
	return m->ops->reclaim && g ? m->ops->reclaim(m, g, err) : 0;
}
static inline int machine_evict_target(struct machine *m, struct machine_guest *g,
				       uint64_t *resident, char **err)
{
	if (!m || !m->ops->evict_target) {
		*err = xstrdup("this machine cannot evict the host's cache of the target disk");
		return -1;
	}
	return m->ops->evict_target(m, g, resident, err);
}
static inline int machine_drop_caches(struct machine *m, struct machine_guest *g, char **err)
{
	if (!m || !m->ops->drop_caches || !g) {
		*err = xstrdup("this machine cannot drop the caches");
		return -1;
	}
	return m->ops->drop_caches(m, g, err);
}
static inline bool machine_can_suspend(struct machine *m)
{
	return m->ops->suspend && m->ops->resume;
}
static inline int machine_suspend(struct machine *m, struct machine_guest *g, char **err)
{
	return m->ops->suspend(m, g, err);
}
static inline int machine_resume(struct machine *m, struct machine_guest *g, char **err)
{
	return m->ops->resume(m, g, err);
}
static inline uint64_t machine_host_memory(struct machine *m)
{
	return m->ops->host_memory ? m->ops->host_memory(m) : 0;
}
static inline void machine_hook(struct machine *m, struct machine_guest *g,
				const struct machine_where *w)
{
	if (m->ops->hook)
		m->ops->hook(m, g, w);
}
static inline bool machine_alive(struct machine *m, char **why)
{
	return m->ops->alive ? m->ops->alive(m, why) : true;
}
static inline void machine_close(struct machine *m)
{
	if (m)
		m->ops->close(m);
}

/* ---- the guest operations as verbs (struct machine_guest_ops); each fails with
 * MACHINE_ERR_UNSUPPORTED on a machine without it, and with MACHINE_ERR_FAILED without a guest */

/* The operations of m, or NULL after filling *e for `what` ("run a guest command"). */
/* timeout_ms, or what is left of the run's deadline when less (run_deadline_clamp_ms()). */
unsigned machine_timeout_ms(unsigned timeout_ms);
const struct machine_guest_ops *machine_guest_ops_for(struct machine *m, struct machine_guest *g,
						      bool has_op, const char *what,
						      struct machine_err *e);
/*
 * The guest operations below all go through here: unsupported, no guest, or the run's deadline
 * passed (run_set_deadline(): a guest that answers a byte at a time or never cannot hold a run
 * past its timeout; MACHINE_ERR_TIMEOUT "cannot write a guest file: the run timeout passed").
 */
#define MACHINE_GUEST_OP_(m, g, op, what, e)                                                       \
	machine_guest_ops_for((m), (g), (m) && (m)->ops->guest && (m)->ops->guest->op, (what), (e))

/* Run argv in the guest (the op `exec`), its timeout cut to what is left of the run's deadline. */
int machine_guest_exec(struct machine *m, struct machine_guest *g, const char *const *argv,
		       const void *input, size_t input_len, unsigned timeout_ms,
		       struct machine_exec_result *r, struct machine_err *e);
/*
 * machine_guest_exec without input where a non-zero exit is an error too (FAILED), whose msg
 * carries the program's stderr ("'/bin/sh' in the guest exited with status 1: ..."). out (may be
 * NULL) receives stdout (caller frees).
 */
int machine_guest_run(struct machine *m, struct machine_guest *g, const char *const *argv,
		      unsigned timeout_ms, char **out, struct machine_err *e);
/* machine_guest_run of `/bin/sh -c cmd`. */
int machine_guest_sh(struct machine *m, struct machine_guest *g, const char *cmd,
		     unsigned timeout_ms, char **out, struct machine_err *e);

static inline int machine_guest_spawn(struct machine *m, struct machine_guest *g,
				      const char *const *argv, int64_t *pid, struct machine_err *e)
{
	const struct machine_guest_ops *o =
	    MACHINE_GUEST_OP_(m, g, spawn, "start a guest command", e);
	return o ? o->spawn(m, g, argv, pid, e) : -1;
}
static inline int machine_guest_proc_status(struct machine *m, struct machine_guest *g, int64_t pid,
					    struct machine_proc_status *st, struct machine_err *e)
{
	*st = (struct machine_proc_status){ 0 };
	const struct machine_guest_ops *o =
	    MACHINE_GUEST_OP_(m, g, proc_status, "poll a guest command", e);
	return o ? o->proc_status(m, g, pid, st, e) : -1;
}
static inline void machine_guest_proc_kill(struct machine *m, struct machine_guest *g, int64_t pid)
{
	if (m && g && m->ops->guest && m->ops->guest->proc_kill)
		m->ops->guest->proc_kill(m, g, pid);
}
static inline int machine_guest_file_open(struct machine *m, struct machine_guest *g,
					  const char *path, const char *mode, int64_t *handle,
					  struct machine_err *e)
{
	const struct machine_guest_ops *o =
	    MACHINE_GUEST_OP_(m, g, file_open, "open a guest file", e);
	return o ? o->file_open(m, g, path, mode, handle, e) : -1;
}
static inline int machine_guest_file_write(struct machine *m, struct machine_guest *g,
					   int64_t handle, const void *buf, size_t len,
					   size_t chunk, struct machine_err *e)
{
	const struct machine_guest_ops *o =
	    MACHINE_GUEST_OP_(m, g, file_write, "write a guest file", e);
	return o ? o->file_write(m, g, handle, buf, len, chunk, e) : -1;
}
static inline int machine_guest_file_read(struct machine *m, struct machine_guest *g,
					  int64_t handle, void *buf, size_t max, size_t *n,
					  bool *eof, struct machine_err *e)
{
	const struct machine_guest_ops *o =
	    MACHINE_GUEST_OP_(m, g, file_read, "read a guest file", e);
	return o ? o->file_read(m, g, handle, buf, max, n, eof, e) : -1;
}
static inline int machine_guest_file_close(struct machine *m, struct machine_guest *g,
					   int64_t handle, struct machine_err *e)
{
	const struct machine_guest_ops *o =
	    MACHINE_GUEST_OP_(m, g, file_close, "close a guest file", e);
	return o ? o->file_close(m, g, handle, e) : -1;
}
static inline int machine_guest_push_file(struct machine *m, struct machine_guest *g,
					  const char *host_path, const char *guest_path,
					  size_t chunk, uint64_t *bytes, struct machine_err *e)
{
	const struct machine_guest_ops *o =
	    MACHINE_GUEST_OP_(m, g, push_file, "copy a file into the guest", e);
	return o ? o->push_file(m, g, host_path, guest_path, chunk, bytes, e) : -1;
}
static inline int machine_guest_read_file(struct machine *m, struct machine_guest *g,
					  const char *path, size_t max, char **buf, size_t *len,
					  struct machine_err *e)
{
	const struct machine_guest_ops *o =
	    MACHINE_GUEST_OP_(m, g, read_file, "read a guest file", e);
	return o ? o->read_file(m, g, path, max, buf, len, e) : -1;
}
static inline int machine_guest_disk_plug(struct machine *m, struct machine_guest *g,
					  const struct disk_config *d, unsigned timeout_ms,
					  struct machine_err *e)
{
	const struct machine_guest_ops *o =
	    MACHINE_GUEST_OP_(m, g, disk_plug, "plug a disk into the guest", e);
	return o ? o->disk_plug(m, g, d, machine_timeout_ms(timeout_ms), e) : -1;
}
static inline int machine_guest_disk_attach(struct machine *m, struct machine_guest *g,
					    const struct disk_config *d, unsigned timeout_ms,
					    char **dev, struct machine_err *e)
{
	const struct machine_guest_ops *o =
	    MACHINE_GUEST_OP_(m, g, disk_attach, "plug a disk into the guest", e);
	return o ? o->disk_attach(m, g, d, machine_timeout_ms(timeout_ms), dev, e) : -1;
}
/* NULL only on a machine without disks (then plugging fails too). */
static inline char *machine_guest_disk_wait_command(struct machine *m, const char *serial,
						    unsigned timeout_ms)
{
	return m && m->ops->guest && m->ops->guest->disk_wait_command
		   ? m->ops->guest->disk_wait_command(m, serial, timeout_ms)
		   : NULL;
}
static inline int machine_guest_disk_unplug(struct machine *m, struct machine_guest *g,
					    const char *serial, unsigned timeout_ms,
					    struct machine_err *e)
{
	const struct machine_guest_ops *o =
	    MACHINE_GUEST_OP_(m, g, disk_unplug, "unplug a disk from the guest", e);
	return o ? o->disk_unplug(m, g, serial, machine_timeout_ms(timeout_ms), e) : -1;
}
static inline int machine_guest_channel_open(struct machine *m, struct machine_guest *g,
					     const char *name, int *fd, struct machine_err *e)
{
	const struct machine_guest_ops *o =
	    MACHINE_GUEST_OP_(m, g, channel_open, "open a guest channel", e);
	return o ? o->channel_open(m, g, name, fd, e) : -1;
}
static inline int machine_guest_hostfwd(struct machine *m, struct machine_guest *g, int host_port,
					int guest_port, struct machine_err *e)
{
	const struct machine_guest_ops *o =
	    MACHINE_GUEST_OP_(m, g, hostfwd, "forward a host port into the guest", e);
	return o ? o->hostfwd(m, g, host_port, guest_port, e) : -1;
}
static inline const char *machine_guest_net_addr(struct machine *m, struct machine_guest *g)
{
	return m && g && m->ops->guest && m->ops->guest->net_guest_addr
		   ? m->ops->guest->net_guest_addr(m, g)
		   : NULL;
}
static inline int machine_net_socket(struct machine *m, int domain, int type, int *fd,
				     const char **host_addr, struct machine_err *e)
{
	if (!m || !m->ops->guest || !m->ops->guest->net_socket) {
		machine_err_set(e, MACHINE_ERR_UNSUPPORTED, "this machine has no private network");
		return -1;
	}
	return m->ops->guest->net_socket(m, domain, type, fd, host_addr, e);
}
static inline int machine_net_host_addr(struct machine *m, unsigned index, char **addr,
					struct machine_err *e)
{
	if (!m || !m->ops->guest || !m->ops->guest->net_host_addr)
		return machine_err_set(e, MACHINE_ERR_UNSUPPORTED,
				       "this machine has no private network");
	return m->ops->guest->net_host_addr(m, index, addr, e);
}
static inline bool machine_can_net_run(struct machine *m)
{
	return m && m->ops->guest && m->ops->guest->net_run && m->ops->guest->net_host_addr;
}
static inline int machine_net_run(struct machine *m, const char *const *argv, char **out,
				  struct machine_err *e)
{
	if (!machine_can_net_run(m))
		return machine_err_set(e, MACHINE_ERR_UNSUPPORTED,
				       "this machine cannot run a program in a private network");
	return m->ops->guest->net_run(m, argv, out, e);
}
static inline bool machine_can_net_spawn(struct machine *m)
{
	return m && m->ops->guest && m->ops->guest->net_spawn;
}
static inline int machine_net_spawn(struct machine *m, const char *const *argv,
				    const struct proc_opts *o, struct proc_result *r,
				    struct machine_err *e)
{
	if (!machine_can_net_spawn(m))
		return machine_err_set(e, MACHINE_ERR_UNSUPPORTED,
				       "this machine cannot run a program in a private network");
	return m->ops->guest->net_spawn(m, argv, o, r, e);
}
static inline const char *machine_guest_nic_no_vhost_reason(struct machine *m,
							    struct machine_guest *g)
{
	return m && g && m->ops->guest && m->ops->guest->nic_no_vhost_reason
		   ? m->ops->guest->nic_no_vhost_reason(m, g)
		   : NULL;
}
static inline bool machine_share_maps_links(struct machine *m)
{
	return m && m->ops->guest && m->ops->guest->share_maps_links &&
	       m->ops->guest->share_maps_links(m);
}
static inline bool machine_has_virtiofs(struct machine *m)
{
	return m && m->ops->guest && m->ops->guest->has_virtiofs && m->ops->guest->has_virtiofs(m);
}
