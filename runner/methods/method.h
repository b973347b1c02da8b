/* SPDX-License-Identifier: MIT */
/*
 * Transfer methods: the ways data gets into a guest. Each method is one `struct method_ops`
 * (runner/methods/<name>.c) found through method_find(). The executor (runner/exec/) drives them:
 *
 *   supports()                          once per cell, before anything boots: NULL or a skip reason
 *   add_devices()                       before the VM of a cell boots (vm: shared boots once per
 *                                       distinct configuration, so devices added here must depend
 *                                       only on the cell's plan entries: struct method_boot_needs)
 *   per run:
 *     [executor empties the landing directory / re-creates a fresh target disk, drops caches]
 *     before_phase(p)  untimed: optional, right before each of prepare, transfer, finalize
 *     prepare()   timed  PHASE_PREPARE   e.g. build an image, open a socket, start a sender
 *     transfer()  timed  PHASE_TRANSFER  the bytes move into the guest
 *     finalize()  timed  PHASE_FINALIZE  e.g. sync in the guest, unpack, unplug
 *     verify()    timed  PHASE_VERIFY    optional override; default: the executor hashes
 *                                        ctx->landing in the guest against the manifest
 *     cleanup()   timed  PHASE_CLEANUP   ALWAYS called once prepare() was called, even after a
 *                                        failure or an interrupt; must be safe to call on a
 *                                        half-prepared state and must not touch a dead domain
 *                                        longer than needed (check run_interrupted())
 *   free_state()                         once per cell (after the last run), frees ctx->state
 *
 * Every hook returns 0 or -1; on -1 it fills ctx->err (see method_fail()). Hooks never print.
 * total = prepare + transfer + finalize; verify and cleanup are timed but not in the total.
 *
 * Besides its hooks, a method declares what the plan and the executor read before any hook runs,
 * as fio's ioengines carry `.options`: its options (the keys it adds to methods.NAME, with type,
 * allowed values, default and doc), its needs (struct method_needs: disk kinds, NICs, remote
 * hosts, run-directory bytes) and its own rules (validate errors and run-time skip reasons). The
 * plan reader, `ferry schema` (the JSON Schema and ferry(1)'s PLAN KEYS), the rules and the
 * capacity check read them from here; nothing else names a method's options.
 *
 * How to add a method (null.c is the smallest example):
 *   1. runner/methods/NAME.c: its options struct (first member `uint64_t set`), the key rows
 *      (struct key_def, offsets into that struct) and METHOD_OPTIONS(); its needs, its rules if
 *      any, and `const struct method_ops method_NAME` with its name, summary, options, needs
 *      and hooks. Its hooks read the options with METHOD_OPTS(ctx->method, struct NAME_opts).
 *   2. One line in METHOD_REGISTRY (method.c): its symbol and its `type:` name. The position is
 *      the value of plan_method.type and the order of the `type:` values in messages and docs:
 *      add new methods at the end.
 *   3. Its file in runner/meson.build, its tests (tests/unit/test-method-runs.c runs every method
 *      on the fake machine), and `ferry schema > schema/ferry-plan.schema.json` and
 *      `ferry schema --man` into ferry(1)'s PLAN KEYS (tests/docs-sync.sh checks both), plus a
 *      paragraph in ferry(1)'s TRANSFER METHODS.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataset.h"
#include "devices.h"
#include "keys.h"
#include "manifest.h"
#include "plan.h"
#include "results.h"
#include "rules.h"
#include "run.h"

/* What went wrong in a hook: filled by method_fail(); the executor turns it into a result_error
 * of the cell (kind, message, plus the optional diagnostics) and frees it. */
struct method_error {
	enum result_error_kind kind; /* ERROR_INFRA, ERROR_INTEGRITY or ERROR_TIMEOUT */
	char *message;               /* lower-case, no final period: what failed and why */
	char *guest_message; /* optional: the guest's words (a machine_err msg, a command's stderr):
				recorded as the result error's agent message */
	char *libvirt_message; /* optional: the machine's detail at the failing call
				  (struct machine_err: libvirt's last error) */
};

/*
 * Extra boot-time devices a method asks for. add_devices() appends to these; the executor owns the
 * arrays and the strings (strdup what you put in; the executor frees them) and copies them into
 * the guest configuration it boots. Two cells whose method_boot_needs are equal (and whose VM/disk
 * entries are equal) can share a VM under `vm: shared`.
 */
struct method_boot_needs {
	/* share: host directory exported with this mount tag (NULL: none), over 9p or virtiofs. */
	char *share_dir;
	char *share_tag;
	enum share_mode share_mode;
	bool share_readonly; /* 9p only (see struct share_config) */
	enum share_driver share_driver;
	/* extra virtio-serial ports by name (guest: /dev/virtio-ports/NAME). */
	char **channels;
	size_t n_channels;
	/* the VM needs a NIC (network method); model/queues come from the plan's vm entry. */
	bool nic;
	/* a second guest of this vm entry (borrowed from the plan), booted with the cell's guest
	 * and destroyed with it, on the same private network, with a tmpfs landing place of its
	 * own (vm2vm's sender: machine_peer()); NULL: none */
	const struct plan_vm *peer;
	/* boot-time disks besides the target disk, e.g. a raw target for `block` on sata/ide that
	 * cannot be hot-plugged. path must exist before boot (create it in add_devices()). */
	struct disk_config *disks;
	size_t n_disks;
};

/* Everything a method receives. The executor fills it; members marked (method) are the method's. */
struct machine;
struct machine_guest;

struct method_ctx {
	/* ---- the cell ---- */
	const struct plan *plan;
	const struct plan_cell *cell;     /* the cell's entries and resolved run settings */
	const struct plan_method *method; /* == cell->method */
	const struct plan_disk *disk;     /* == cell->disk: the disk the data lands on */
	const struct plan_dataset *pds;   /* == cell->dataset */
	const struct dataset_spec *spec;  /* the dataset in dataset.h terms */
	const char *dataset_dir;          /* host directory holding the dataset (read-only!) */
	const struct manifest *manifest;  /* what every run is verified against */

	/* ---- the host side ---- */
	struct run *run;      /* run directory and cleanup registry: run_path(), run_defer() */
	const char *cell_dir; /* a scratch directory for this cell inside the run directory,
				 created by the executor, removed with the run */
	/* The machine and guest (NULL before boot: in supports() and add_devices()) the cell runs
	 * on, set by machine_bind(): everything a method does in the guest or asks of the host
	 * goes through them (machine.h: machine_guest_exec(), machine_evict_target(), ...). */
	struct machine *machine;
	struct machine_guest *guest;

	/* ---- the guest (NULL in supports() and add_devices()) ---- */
	/* Guest directory the data must land in: the target disk's filesystem mounted there, or a
	 * tmpfs (disk kind tmpfs). Exists and is empty at the start of every run. */
	const char *landing;
	/* Guest block device of the target disk ("/dev/vdb"), NULL for tmpfs. While a run is in
	 * progress it is mounted on `landing`; the `block` method may unmount it in prepare()
	 * (the executor re-creates/re-mounts the filesystem before the next run). */
	const char *target_dev;
	/* The target disk as configured on the host (image path, bus, serial), NULL for tmpfs. */
	const struct disk_config *target_disk;

	/* ---- limits ---- */
	unsigned timeout_ms; /* what a single guest command may take (from the run timeout) */
	unsigned run_index;  /* 0-based over all runs of the cell, warmups first */
	bool warmup;

	/* ---- what the run moved: set by the method in transfer()/finalize() (defaults: the
	 * manifest's files and bytes, set by the executor before prepare()) ---- */
	uint64_t bytes, files;

	/* ---- what the run measured: named metrics of this run (result_metric_defs in results.h,
	 * e.g. write_throughput), set with method_metric(); owned by the executor, which empties it
	 * before prepare() and records it (with its own alloc_* and cpu_* metrics) in the run ----
	 */
	json_t *metrics;
	/* ---- what verify compared by: "sha256" or "xxh128" (verify_hash_name()), set by
	 * method_verify_dir(); NULL before it ran. The executor empties it before prepare() and
	 * records it in the run ---- */
	const char *verify_hash;

	/* ---- what the method saw: (method) a JSON object or NULL, owned by the method (free it in
	 * free_state()); the executor records a copy as the cell's "observed" after every run ----
	 */
	json_t *observed;

	/* ---- method-private ---- */
	void *state; /* (method) anything; kept across the runs of a cell; free in free_state() */
	struct method_error err; /* (method) filled on failure by method_fail() */
};

/* Fill ctx->err with a formatted message (kind and optional diagnostics); returns -1. */
/*
 * For a method whose tool copies what a symbolic link points to (mcopy -s, scp -r): a `path:`
 * dataset's `sub/link -> /etc/shadow` would put a host file into the guest (issue 24 class 6).
 * Such a dataset is refused, not moved without its links (a cell that leaves entries out
 * measures another dataset than it names): fails ctx with "WHAT, and dataset 'd' has N ('first'
 * first): HINT" and returns -1 when the manifest has a link, else returns 0.
 */
int method_refuse_links(struct method_ctx *ctx, const char *what, const char *hint);
/* dataset_copy_opts.cancelled for a method's staging copy: true once the run is interrupted. */
bool method_copy_cancelled(void *userdata);

int method_fail(struct method_ctx *ctx, enum result_error_kind kind, const char *guest_message,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/*
 * The same after a failed guest operation e (machine.h): e's detail becomes the error's
 * libvirt_message. guest_message as in method_fail (often e->msg). e is left to the caller.
 */
struct machine_err;
int method_fail_op(struct method_ctx *ctx, enum result_error_kind kind, const struct machine_err *e,
		   const char *guest_message, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Clear ctx->err (the executor does it before every hook). */
void method_error_clear(struct method_error *e);

/*
 * What a method needs from the cell and the host, as data: the rules table turns each into a
 * validate error or a skip reason (rules.c, "cell.method-*"), the machines and the capacity
 * check read them. Every field's zero value is "no need".
 */
struct method_needs {
	/* The disk kinds the data may land on: bits (1 << PLAN_DISK_x); 0: every kind. disk_why
	 * says what the method does that the other kinds cannot take ("writes a raw device"). */
	unsigned disk_kinds;
	const char *disk_why;
	/* NULL: any NIC. Else the method reaches the guest only through QEMU user networking or
	 * ferry's private network, and this says why; a cell whose vm's NIC is on a libvirt
	 * network or a host bridge is skipped. */
	const char *nic_why;
	/* NULL: it runs on a remote libvirt host (--connect qemu+ssh://...); else why not (the
	 * libvirt machine skips the cell there). */
	const char *remote_why;
	/* The bytes the method builds or copies in the run directory for one cell whose dataset
	 * has `data` bytes (ferry(1) CAPACITY AND CACHE); NULL: nothing. */
	uint64_t (*run_dir_bytes)(const struct plan_method *m, uint64_t data);
	/* Whether those bytes are the dataset's files one by one (each an inode of the run
	 * directory's filesystem, counted by the capacity check), not one image or archive. */
	bool run_dir_files;
	/* The bytes the method stages in the guest's RAM, in a tmpfs of at most
	 * METHOD_GUEST_STAGE_PCT percent of it, for one cell whose dataset has `data` bytes (the
	 * capacity check refuses a cell whose VM's memory cannot hold them); `files` is its number
	 * of files; NULL: nothing. */
	uint64_t (*guest_ram_bytes)(const struct plan_method *m, uint64_t data, uint64_t files);
	/* It writes the dataset's bytes to the raw target device, not into its filesystem: the
	 * target holds them when its size does (the capacity check). */
	bool target_raw;
};

/* The share of a guest's RAM a method's staging tmpfs may take (`mount -t tmpfs -o size=N%`). */
#define METHOD_GUEST_STAGE_PCT 90

/* A method's options: its struct `st` (first member `uint64_t set`), the rows `defs` with
 * offsets into it, under the static table `var` (the plan reader fills the struct in
 * plan_method.opts, which it must fit). */
#define METHOD_OPTIONS(var, method, st, defs) METHOD_OPTIONS_TABLE(static, var, method, st, defs)
/* The same with the table's storage class given (empty: a table another file names, as smb.c
 * names share's). */
#define METHOD_OPTIONS_TABLE(storage, var, method, st, defs)                                       \
	_Static_assert(sizeof(st) <= PLAN_METHOD_OPTS_SIZE, "options fit in plan_method.opts");    \
	storage const struct key_table var = {                                                     \
		.name = "methods.NAME (type " method ")",                                          \
		.doc = "the options of type " method,                                              \
		.keys = defs,                                                                      \
		.n_keys = ELEMENTSOF(defs),                                                        \
		.set_offset = offsetof(st, set),                                                   \
	}
/* The method's options of entry m, as its own struct type. */
#define METHOD_OPTS(m, st) ((const st *)(const void *)(m)->opts.bytes)

struct method_ops {
	/* The plan's `type:` spelling, e.g. "agent-file" (the registry line in method.c repeats
	 * it: tests/unit/test-methods.c checks they agree). */
	const char *name;
	/* What it is, for ferry(1) and the schema: "a virtio-serial pipe". */
	const char *summary;
	/* Its own keys of methods.NAME (METHOD_OPTIONS()); NULL: none. */
	const struct key_table *options;
	/* Whether it takes `archive:` (packed on the host, unpacked in the guest). */
	bool archive;
	struct method_needs needs;
	/* Its own rules (scope RULE_METHOD or RULE_CELL), checked only for its entries and cells,
	 * before the rules table's of the same scope. */
	const struct plan_rule *rules;
	size_t n_rules;
	/* Optional: the method that runs entry m when one of its options picks another
	 * implementation (share's driver smb: smb.c), NULL for this one. method_of() asks it; the
	 * other's declarations (options, needs, rules) must be this method's. */
	const struct method_ops *(*driver)(const struct plan_method *m);

	/*
	 * Whether this cell can run on this host: static checks of the combination (method options
	 * x disk x vm) and host capabilities (a tool or virtiofsd missing, ...). Returns NULL when
	 * it can, else a malloc'ed skip reason ("vfat images need mkfs.vfat (dosfstools)"), which
	 * the cell records as its skip reason. ctx has no vm/dom/landing yet. May be NULL (always
	 * ok).
	 */
	char *(*supports)(const struct method_ctx *ctx);

	/* Add boot-time devices (see struct method_boot_needs). May be NULL. Returns 0 or -1. */
	int (*add_devices)(struct method_ctx *ctx, struct method_boot_needs *needs);

	/*
	 * Optional untimed work right before the timed phase `p` (PHASE_PREPARE, PHASE_TRANSFER
	 * or PHASE_FINALIZE), counted in no phase and no total: what the question does not ask
	 * about, e.g. staging data in the guest before a device write, or evicting the host's
	 * cached pages of the target between a write and its read-back. A failure fails the run
	 * in phase p; cleanup() is still called. May be NULL.
	 */
	int (*before_phase)(struct method_ctx *ctx, enum result_phase p);

	/* The timed phases. prepare and finalize may be NULL (phase recorded as 0). */
	int (*prepare)(struct method_ctx *ctx);
	int (*transfer)(struct method_ctx *ctx);
	int (*finalize)(struct method_ctx *ctx);
	/*
	 * Optional verification override (NULL: the executor lists ctx->landing in the guest with
	 * manifest_guest_command() and compares with manifest_verify()). A mismatch is
	 * method_fail(ctx, ERROR_INTEGRITY, ...) naming the first paths.
	 */
	int (*verify)(struct method_ctx *ctx);
	/* Always called after prepare() was called (success or not). May be NULL. */
	int (*cleanup)(struct method_ctx *ctx);
	/* Free ctx->state; called once per cell. May be NULL. */
	void (*free_state)(struct method_ctx *ctx);
};

/* The method of a type (plan_method.type), or NULL when there is none. */
const struct method_ops *method_find(int type);
/* The method of an entry (never NULL for an entry the plan reader made). */
const struct method_ops *method_of(const struct plan_method *m);
/* The method named `name` ("agent-file"), or NULL. */
const struct method_ops *method_find_name(const char *name);
/* The methods, in the registry's order. */
extern const struct method_ops *const method_registry[];
extern const size_t method_registry_size;

/* ---- helpers for methods (methods/method.c) ---- */

/*
 * Run a shell command line in the guest (sh -c CMD) with the ctx timeout; non-zero exit is an
 * error whose message names `what` and carries stderr as guest_message. out may be NULL.
 */
int method_guest_sh(struct method_ctx *ctx, const char *what, const char *cmd, char **out);

/*
 * The same, timed by the guest's own clock: the guest reads its CLOCK_MONOTONIC right before and
 * right after cmd (in a subshell) and *seconds is the difference, free of the agent's round trip
 * and the host's polling of the command's status (the study's "timed in the guest"). Fails when
 * the guest has no nanosecond clock to read. out (may be NULL) gets cmd's own output.
 */
int method_guest_timed_sh(struct method_ctx *ctx, const char *what, const char *cmd, char **out,
			  double *seconds);

/*
 * dd's own report of what it copied and how long it took, from the standard error of one dd
 * process: the byte count and the seconds of its last "N bytes ... copied, S s, R/s" line.
 * GNU coreutils prints "16777216 bytes (17 MB, 16 MiB) copied, 0.0523 s, 321 MB/s" (also "1 byte
 * copied, ..." and "512 bytes copied, ..." without the parenthesis, and S as %g, e.g.
 * "9.6283e-05"; run it under LC_ALL=C for the decimal point); busybox built with
 * FEATURE_DD_THIRD_STATUS_LINE prints "16777216 bytes (16.0MB) copied, 0.052300 seconds,
 * 320.8MB/s". Debian's busybox is built without that line and prints only the records, which is
 * no report: -1. 0 with *bytes and *seconds (positive and finite), or -1 with *err saying what
 * is missing or wrong.
 */
int method_dd_report(const char *text, uint64_t *bytes, double *seconds, char **err);

/*
 * The default verification: list `dir` in the guest (manifest_guest_command()), compare with
 * ctx->manifest and fail with ERROR_INTEGRITY naming the first missing, extra or different
 * paths. symlinks: compare symbolic links too (off for vehicles that cannot carry them). The
 * files are compared by XXH3-128 where the guest has ferry-sum (the built-in guest) and the
 * manifest has the XXH3-128s, else by SHA-256 (FERRY_VERIFY_HASH=sha256: always); which one
 * goes to ctx->verify_hash.
 */
int method_verify_dir(struct method_ctx *ctx, const char *dir, bool symlinks);

/*
 * A guest shell prefix that waits (at most 30 s) until the built-in guest has loaded the module
 * `mod` (a string literal, or "%s" inside a format: its file name without .ko, e.g. "ext4",
 * "isofs", "9p", "virtiofs"): the filesystems load behind the agent (see guest.h), and a mount
 * racing that load fails with "No such device". Only that module is waited for, not all of them:
 * the guest marks each one in /run/ferry-modules/ (and the end in /run/ferry-modules-loaded,
 * which guests built before the marks also write). Only the built-in guest (the one with
 * /etc/vport-link.sh, its own init's helper) loads behind the agent: other guests (Debian, users'
 * images) load modules on demand through kmod and do not wait.
 */
#define METHOD_GUEST_MODULE_WAIT(mod)                                                              \
	"i=0; while [ -e /etc/vport-link.sh ] && [ ! -e /run/ferry-modules-loaded ] && "           \
	"[ ! -e /run/ferry-modules/" mod " ] && [ $i -lt 1500 ]; do usleep 20000; i=$((i+1)); "    \
	"done; "

/*
 * A guest shell prefix that turns on pipefail where the shell has it (busybox ash, bash) and
 * goes on without it where it has not (dash, Debian's /bin/sh): `set -o pipefail` alone makes
 * dash exit. Without it the bytes are still checked by verify.
 */
#define METHOD_SH_PIPEFAIL "(set -o pipefail) 2>/dev/null && set -o pipefail; "

/*
 * Report a metric of the current run (a name of result_metric_defs; a non-finite value is not
 * recorded). Reporting it again replaces the value.
 */
void method_metric(struct method_ctx *ctx, const char *name, double value);

/*
 * Report bytes / seconds as the rate metric `name` (e.g. "write_throughput"), when both are
 * positive: a command that took no measurable time gives no rate rather than an infinite one.
 */
void method_rate(struct method_ctx *ctx, const char *name, uint64_t bytes, double seconds);

/* Methods quote guest shell words with util.h's shell_quote(). */
#include "util.h"
