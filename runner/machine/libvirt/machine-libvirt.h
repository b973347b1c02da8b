/* SPDX-License-Identifier: MIT */
/*
 * Inside the libvirt machine (machine-libvirt.c: boot, reset, destroy; guest-ops.c: the guest
 * operations methods use): its machine and guest structs.
 */
#pragma once

#include <stdbool.h>

#include <libvirt/libvirt.h>

#include "debian.h"
#include "faults.h"
#include "guest.h"
#include "hoststore.h"
#include "machine.h"
#include "vm.h"

struct lv_machine {
	struct machine base;
	struct run *run;
	virConnectPtr conn;
	struct guest_files gf;  /* the built-in guest (located at open) */
	char *gf_err;           /* why it could not be located: a builtin VM fails with this */
	struct guest_image deb; /* the Debian guest, located at its first boot */
	int gf_hold, deb_hold;  /* guest_cache_hold() of each, or -1 */
	struct machine_faults faults;
	unsigned n_targets, n_seeds;
	/* the run's empty sparse target images, one per format and size (target_create) */
	struct empty_target {
		enum disk_format format;
		uint64_t size;
		char *path;
	} * empties;
	size_t n_empties;
	/* a remote host: ferry's storage pool there (hoststore.h), else NULL */
	struct hoststore *hs;
	bool builtin_named;         /* the provenance names the built-in guest's files */
	struct saved_states *saved; /* run.fresh restore: per configuration (saved-states.h) */
};

struct lv_guest {
	struct machine_guest base;
	struct machine_config cfg;
	struct vm *vm;
	struct disk_config target;
	char *target_path;
	char *target_dev; /* "/dev/vdb" */
	char *seed_path;  /* the NoCloud seed ISO of an image guest with a seed */
	bool no_cpustats; /* the agent has no guest-get-cpustats: /proc/stat through its files */
	struct lv_guest *peer;      /* booted with it (method_boot_needs.peer), or NULL */
	struct plan_disk peer_disk; /* a peer's own tmpfs (machine_peer_config) */
};

/* Whether the guest's target disk is an image (else tmpfs). */
static inline bool lv_guest_is_image(const struct lv_guest *g)
{
	/* a guest wrapped around a domain booted elsewhere (machine_libvirt_guest_wrap) has no
	   plan disk: its target is an image when it was given one */
	return g->cfg.disk ? g->cfg.disk->kind == PLAN_DISK_IMAGE : g->target.path != NULL;
}

/* machine_ops.describe and .sample (describe.c). */
void machine_libvirt_describe(struct machine *m, struct machine_guest *mg,
			      struct result_provenance *pv);
void machine_libvirt_sample(struct machine *m, struct machine_guest *mg, unsigned what,
			    struct machine_sample *out);

/* The guest operations over the guest agent and libvirt (guest-ops.c). */
extern const struct machine_guest_ops machine_libvirt_guest_ops;

/*
 * A guest of the libvirt machine m for a domain booted outside it (vm_boot), for tests that drive
 * the methods themselves: the guest operations and evict_target work on it (target: the image
 * the caller attached as the target disk, or NULL; target_dev its guest device, or NULL). Free
 * it with machine_libvirt_guest_unwrap(); vm stays the caller's.
 */
struct machine_guest *machine_libvirt_guest_wrap(struct machine *m, struct vm *vm,
						 const struct disk_config *target,
						 const char *target_dev);
void machine_libvirt_guest_unwrap(struct machine_guest *g);
