/* SPDX-License-Identifier: MIT */
/*
 * The machine over libvirt/QEMU (machine.h): a transient domain per guest, owned by the run
 * directory; the target disk created on the host (ext4 by mke2fs, qcow2 by qemu-img) and
 * hot-plugged where the bus allows it, so that a fresh disk is a detach + attach; housekeeping
 * (mount, empty, drop caches) through the guest agent.
 */
#include "machine-libvirt.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/xpath.h>

#include "agent.h"
#include "cleanup.h"
#include "faults.h"
#include "debian.h"
#include "fs.h"
#include "guest.h"
#include "hash.h"
#include "hoststore.h"
#include "proc.h"
#include "saved-states.h"
#include "util.h"
#include "vm-plan.h"
#include "vm.h"

/* Guest commands the machine runs itself (mount, empty, drop caches) get this long. */
#define HOUSEKEEPING_MS 120000u
#define ATTACH_MS       60000u
#define DROP_CMD        "sync && echo 3 > /proc/sys/vm/drop_caches"
#define EMPTY_CMD       "rm -rf " MACHINE_LANDING " && mkdir -p " MACHINE_LANDING
/* Unmount the target (the block method may have unmounted it already: it writes the raw
 * device). */
#define UMOUNT_CMD                                                                                 \
	"if grep -q ' " MACHINE_TARGET_MNT " ' /proc/mounts; then "                                \
	"umount " MACHINE_TARGET_MNT "; fi"
/*
 * For a method that uses the NIC: wait until the guest can reach the host (10.0.2.2 on QEMU user
 * networking). The built-in guest's init configures eth0 before the agent starts; systemd guests
 * start the agent (udev) before systemd-networkd or DHCP has configured it, and a user image may
 * take long for DHCP. Outside the timed phases; a guest without `ip` is taken as it is.
 */
#define NET_WAIT                                                                                   \
	"command -v ip >/dev/null || exit 0; i=0; "                                                \
	"until ip route get 10.0.2.2 >/dev/null 2>&1; do if [ $i -ge 600 ]; then "                 \
	"echo 'no route to 10.0.2.2 within 60 s: the guest did not configure its network card "    \
	"(QEMU user networking: 10.0.2.15/24 or DHCP)' >&2; exit 1; fi; sleep 0.1; i=$((i+1)); "   \
	"done"

static void drop_host_caches(void)
{
	sync();
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return; /* not root: the guest caches are still dropped */
	if (write(fd, "3\n", 2) < 0) {
		/* best effort, like sync */
	}
	close(fd);
}

static int guest_sh(struct lv_guest *g, const char *cmd, char **err)
{
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	return agent_run(vm_domain(g->vm), argv, HOUSEKEEPING_MS, NULL, err);
}

/* Which OS and userland the guest runs, for the results (busybox and GNU/dash alike). */
#define ABOUT_CMD                                                                                  \
	"os=none; if [ -r /etc/os-release ]; then os=\"$(. /etc/os-release; "                      \
	"echo \"${PRETTY_NAME:-${ID:-none}}\")\"; fi; "                                            \
	"if ls --version 2>/dev/null | grep -q GNU; then u=gnu; "                                  \
	"elif ls --help 2>&1 | grep -q BusyBox; then u=busybox; else u=other; fi; "                \
	"printf '%s\\n%s\\n%s\\n%s\\n' \"$os\" \"$u\" \"$(cat /proc/1/comm)\" "                    \
	"\"$(readlink -f /bin/sh)\""

static void about_clear(struct lv_guest *g)
{
	free(g->base.os);
	free(g->base.userland);
	free(g->base.init);
	free(g->base.sh);
	g->base.os = g->base.userland = g->base.init = g->base.sh = NULL;
}

/* Not being able to ask is no failure of the boot: the fields stay NULL. */
static void guest_about(struct lv_guest *g)
{
	const char *argv[] = { "/bin/sh", "-c", ABOUT_CMD, NULL };
	_cleanup_free_ char *out = NULL, *err = NULL;
	about_clear(g);
	if (agent_run(vm_domain(g->vm), argv, HOUSEKEEPING_MS, &out, &err) < 0 || !out)
		return;
	char **f[] = { &g->base.os, &g->base.userland, &g->base.init, &g->base.sh };
	char *p = out;
	for (size_t i = 0; i < ELEMENTSOF(f) && *p; i++) {
		size_t n = strcspn(p, "\n");
		*f[i] = xstrndup(p, n);
		p += n + (p[n] == '\n');
	}
}

static bool hotpluggable(const struct disk_config *d)
{
	return d->bus == DISK_BUS_VIRTIO || d->bus == DISK_BUS_SCSI;
}

/*
 * Mount the landing place; drop: then sync and drop the guest's caches in the same command. An
 * image target is waited for in the same guest command too (just plugged, or there since boot):
 * one agent round trip for wait, mount and drop, each ~0.1 s under TCG.
 */
static int mount_target(struct lv_guest *g, bool drop, char **err)
{
	_cleanup_free_ char *cmd = NULL;
	const char *then = drop ? " && " DROP_CMD : "";
	if (!lv_guest_is_image(g)) {
		/* tmpfs is built into the kernel: no module to wait for */
		cmd = xasprintf("mkdir -p " MACHINE_TARGET_MNT " && mount -t tmpfs -o size=%" PRIu64
				"k tmpfs " MACHINE_TARGET_MNT " && mkdir -p " MACHINE_LANDING "%s",
				g->cfg.disk->size / 1024, then);
		return guest_sh(g, cmd, err);
	}
	_cleanup_free_ char *wait = vm_disk_wait_command(MACHINE_TARGET_SERIAL, ATTACH_MS);
	cmd = xasprintf("%s" METHOD_GUEST_MODULE_WAIT(
			    "ext4") "mkdir -p " MACHINE_TARGET_MNT
				    " && mount -t ext4 \"/dev/$d\" " MACHINE_TARGET_MNT
				    " && mkdir -p " MACHINE_LANDING " && echo \"$d\"%s",
			wait, then);
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	_cleanup_free_ char *out = NULL;
	if (agent_run(vm_domain(g->vm), argv, HOUSEKEEPING_MS, &out, err) < 0)
		return -1;
	out[strcspn(out, "\n")] = '\0';
	free(g->target_dev);
	g->target_dev = xasprintf("/dev/%s", out);
	return 0;
}

static void lv_teardown(struct lv_guest *g)
{
	vm_destroy(g->vm);
	g->vm = NULL;
	g->base.dirty = false;
}

/* The domain's configuration: the vm entry, the target disk where it cannot be hot-plugged, the
 * method's devices. */
static void domain_config(struct lv_machine *lm, struct lv_guest *g, struct vm_config *c,
			  struct disk_config *disks)
{
	const struct method_boot_needs *n = g->cfg.needs;
	if (g->cfg.vm->guest == PLAN_GUEST_DEBIAN)
		vm_config_from_plan(g->cfg.vm, lm->deb.kernel, lm->deb.initrd, lm->deb.cmdline,
				    lm->deb.root, c);
	else
		vm_config_from_plan(g->cfg.vm, lm->gf.kernel, lm->gf.initramfs, lm->gf.cmdline,
				    NULL, c);
	c->seed = g->seed_path;
	size_t nd = 0;
	/* hot-pluggable buses are attached after boot, so that vm.c knows the disk and a fresh
	   disk can be swapped in by detach + attach */
	if (lv_guest_is_image(g) && !hotpluggable(&g->target))
		disks[nd++] = g->target;
	else if (lv_guest_is_image(g))
		c->hotplug_buses |= 1u << g->target.bus;
	for (size_t i = 0; i < n->n_disks; i++)
		disks[nd++] = n->disks[i];
	c->disks = disks;
	c->n_disks = nd;
	c->share.host_dir = n->share_dir;
	c->share.tag = n->share_tag;
	c->share.mode = n->share_mode;
	c->share.readonly = n->share_readonly;
	c->share.driver = n->share_driver;
	c->share.virtiofsd = vm_virtiofsd_path();
	c->channels = (const char *const *)n->channels;
	c->n_channels = n->n_channels;
}

/* A user-data file is small: cloud-init's own limit for a NoCloud seed is far below this. */
#define SEED_USER_DATA_MAX (UINT64_C(1) << 20)

/* The NoCloud seed of an image guest: the plan's user-data file (untrusted: a regular file
 * only, read without blocking) in a cidata ISO in the run directory. */
static int make_seed(struct lv_machine *lm, struct lv_guest *g, char **err)
{
	const char *src = g->cfg.vm->seed;
	_cleanup_close_ int fd = open(src, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		*err = xasprintf("cannot open seed '%s': %s", src, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > SEED_USER_DATA_MAX) {
		*err = xasprintf("seed '%s' is %s, not a regular file of at most 1 MiB", src,
				 S_ISREG(st.st_mode) ? "larger" : file_kind(st.st_mode));
		return -1;
	}
	_cleanup_free_ char *data = xmalloc((size_t)st.st_size + 1);
	size_t got = 0;
	ssize_t n;
	while (got < (size_t)st.st_size && (n = read(fd, data + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)n;
	char sum[SHA256_HEX];
	sha256_buf_hex(data, got, sum);
	sum[16] = '\0';
	_cleanup_free_ char *id = xasprintf("ferry-%s", sum);
	_cleanup_free_ char *name = xasprintf("seed-%u.iso", ++lm->n_seeds);
	_cleanup_free_ char *path = run_path(lm->run, "overlays", name);
	_cleanup_free_ char *e = NULL;
	if (guest_seed_write(path, id, data, got, &e) < 0) {
		*err = TAKE_PTR(e);
		return -1;
	}
	g->seed_path = TAKE_PTR(path);
	return 0;
}

/* What the guest boots from, found (or built, for a seed) before its first boot. */
static int guest_ready(struct lv_machine *lm, struct lv_guest *g, char **err)
{
	switch (g->cfg.vm->guest) {
	case PLAN_GUEST_BUILTIN:
		if (!lm->gf.kernel) {
			*err = xstrdup(lm->gf_err ? lm->gf_err : "no built-in guest");
			return -1;
		}
		return 0;
	case PLAN_GUEST_DEBIAN:
		if (lm->deb.root)
			return 0;
		if (guest_debian_locate(NULL, &lm->deb, err) < 0)
			return -1;
		lm->deb_hold = guest_cache_hold(lm->deb.dir);
		return 0;
	case PLAN_GUEST_IMAGE: return g->cfg.vm->seed && !g->seed_path ? make_seed(lm, g, err) : 0;
	}
	return 0;
}

/*
 * A new target image at g->target.path. A sparse one is a copy of the run's empty image of its
 * format and size, made by vm_target_create at the first need (in the run directory, removed
 * with it): the same bytes as a new mke2fs + qemu-img convert but for the filesystem's UUID and
 * hash seed, which stay the same from run to run (one target is attached at a time; nothing in
 * the guest keys on them). A preallocated image is made anew: a copy would write what falloc
 * only reserves.
 */
static int target_create(struct lv_machine *lm, const struct disk_config *d, char **err)
{
	if (d->allocation != DISK_ALLOC_SPARSE)
		return vm_target_create(d, err);
	for (size_t i = 0; i < lm->n_empties; i++)
		if (lm->empties[i].format == d->format && lm->empties[i].size == d->size)
			return vm_target_copy(lm->empties[i].path, d, err);
	_cleanup_free_ char *name = xasprintf("empty-%zu.%s", lm->n_empties + 1,
					      d->format == DISK_FORMAT_QCOW2 ? "qcow2" : "raw");
	char *path = run_path(lm->run, "disks", name);
	struct disk_config e = *d;
	e.path = path;
	if (vm_target_create(&e, err) < 0) {
		unlink(path);
		free(path);
		return -1;
	}
	lm->empties = xrealloc(lm->empties, (lm->n_empties + 1) * sizeof(*lm->empties));
	lm->empties[lm->n_empties++] =
	    (struct empty_target){ .format = d->format, .size = d->size, .path = path };
	return vm_target_copy(path, d, err);
}

/* A new target image of g's disk (g->target; its file named at the first need). */
static int target_new(struct lv_machine *lm, struct lv_guest *g, char **err)
{
	if (!g->target_path) {
		_cleanup_free_ char *name =
		    xasprintf("target-%u.%s", ++lm->n_targets,
			      g->cfg.disk->format == PLAN_FORMAT_QCOW2 ? "qcow2" : "raw");
		g->target_path = run_path(lm->run, "disks", name);
	}
	vm_disk_config_from_plan(g->cfg.disk, g->target_path, MACHINE_TARGET_SERIAL, &g->target);
	return target_create(lm, &g->target, err);
}

/* Boot g's domain with a new target disk and mount the landing place. */
static int lv_boot_into(struct lv_machine *lm, struct lv_guest *g, char **err)
{
	if (guest_ready(lm, g, err) < 0)
		return -1;
	if (lv_guest_is_image(g) && target_new(lm, g, err) < 0)
		return -1;
	struct vm_config c;
	_cleanup_free_ struct disk_config *disks =
	    xcalloc(g->cfg.needs->n_disks + 1, sizeof(*disks));
	domain_config(lm, g, &c, disks);
	unsigned boot_ms = ns_to_ms(g->cfg.vm->boot_timeout);
	free(g->base.fresh_note);
	g->base.fresh_note = NULL;
	if (g->cfg.restore) {
		_cleanup_free_ char *why = NULL;
		bool first = false;
		c.restore = saved_state_for(&lm->saved, lm->run, lm->conn, &c, lm->hs != NULL,
					    boot_ms, &why, &first);
		c.genid = c.restore != NULL;
		if (first)
			g->base.fresh_note = TAKE_PTR(why);
	}
	g->base.restored = c.restore != NULL;
	if (vm_boot(lm->run, lm->conn, &c, boot_ms, &g->vm, err) < 0)
		return -1;
	free(g->base.name);
	g->base.name = xstrdup(vm_name(g->vm));
	g->base.boot_ms = vm_boot_ms(g->vm);
	g->base.probe_ms = vm_probe_ms(g->vm);
	if (lv_guest_is_image(g) && hotpluggable(&g->target) &&
	    vm_disk_plug(g->vm, &g->target, ATTACH_MS, err) < 0) {
		lv_teardown(g);
		return -1;
	}
	if (mount_target(g, false, err) < 0) {
		lv_teardown(g);
		return -1;
	}
	if (g->cfg.needs->nic && c.nic.backend == NIC_BACKEND_USER &&
	    guest_sh(g, NET_WAIT, err) < 0) {
		lv_teardown(g);
		return -1;
	}
	guest_about(g);
	g->base.dirty = false;
	return 0;
}

static void lv_free(struct lv_guest *g)
{
	if (g->peer)
		lv_free(g->peer);
	g->peer = NULL;
	lv_teardown(g);
	if (g->target_path)
		unlink(g->target_path);
	free(g->target_path);
	free(g->target_dev);
	if (g->seed_path)
		unlink(g->seed_path);
	free(g->seed_path);
	free(g->base.name);
	free(g->base.fresh_note);
	about_clear(g);
	free(g);
}

static int lv_boot(struct machine *m, const struct machine_config *c, struct machine_guest **out,
		   char **err, char **detail)
{
	struct lv_machine *lm = (struct lv_machine *)m;
	struct lv_guest *g = xcalloc(1, sizeof(*g));
	g->cfg = *c;
	/* the peer first (machine.h), from its own vm entry; lv_free() ends it with g */
	if (c->needs && c->needs->peer) {
		g->peer = xcalloc(1, sizeof(*g->peer));
		machine_peer_config(c, &g->peer->peer_disk, &g->peer->cfg);
	}
	if ((g->peer && lv_boot_into(lm, g->peer, err) < 0) || lv_boot_into(lm, g, err) < 0) {
		const char *lv = virGetLastErrorMessage();
		*detail = lv ? xstrdup(lv) : NULL;
		lv_free(g);
		return -1;
	}
	if (g->peer)
		g->base.boot_ms += g->peer->base.boot_ms;
	*out = &g->base;
	return 0;
}

static struct machine_guest *lv_peer(struct machine *m, struct machine_guest *mg)
{
	(void)m;
	struct lv_guest *g = (struct lv_guest *)mg;
	return g->peer ? &g->peer->base : NULL;
}

/*
 * A fresh target disk: swap it by detach + plug (the guest waits for it in the mount command),
 * or boot anew where the bus cannot; drop: the guest's caches dropped after the mount.
 */
static int fresh_disk(struct lv_machine *lm, struct lv_guest *g, bool drop, char **err)
{
	if (!hotpluggable(&g->target)) {
		lv_teardown(g);
		if (lv_boot_into(lm, g, err) < 0)
			return -1;
		return drop ? guest_sh(g, DROP_CMD, err) : 0;
	}
	if (guest_sh(g, UMOUNT_CMD, err) < 0)
		return -1;
	if (vm_disk_detach(g->vm, MACHINE_TARGET_SERIAL, ATTACH_MS, err) < 0)
		return -1;
	if (target_create(lm, &g->target, err) < 0)
		return -1;
	if (vm_disk_plug(g->vm, &g->target, ATTACH_MS, err) < 0)
		return -1;
	return mount_target(g, drop, err);
}

/* Whether plan disk d is a target that a running guest can take: a tmpfs, or an image on a bus
 * that can be hot-plugged. */
static bool plan_disk_pluggable(const struct plan_disk *d)
{
	if (d->kind != PLAN_DISK_IMAGE)
		return true;
	struct disk_config c;
	vm_disk_config_from_plan(d, NULL, NULL, &c);
	return hotpluggable(&c);
}

/*
 * What of target disk d the domain's boot configuration holds (machine_disk_boot_key()): a tmpfs
 * is mounted after boot and an image on a hot-pluggable bus plugged after boot (lv_boot_into), so
 * neither is in the domain's configuration; only the bus's drivers are (domain_config's
 * hotplug_buses): none for virtio, whose driver the guest loads always and whose PCI slots
 * every domain has (vm_guest_modules(), VM_Q35_SPARE_PORTS), the virtio-scsi controller and
 * drivers for scsi. A disk on sata or ide is attached at boot: NULL.
 */
static char *lv_disk_boot_key(struct machine *m, const struct plan_disk *d)
{
	(void)m;
	if (d->kind != PLAN_DISK_IMAGE)
		return xstrdup("");
	struct disk_config c;
	vm_disk_config_from_plan(d, NULL, NULL, &c);
	if (!hotpluggable(&c))
		return NULL;
	return xstrdup(c.bus == DISK_BUS_SCSI ? "scsi" : "");
}

/*
 * The landing place on disk d instead of the guest's current target (machine_reset's disk): the
 * current target unmounted (tmpfs) or unmounted, detached and deleted (image), then a new one of
 * d plugged and mounted, the start state a boot with d gives (lv_boot_into); drop: the guest's
 * caches dropped after the mount. Only between disks a running guest can take
 * (lv_disk_boot_key()). A switch that fails half-way leaves no usable guest: the domain is
 * destroyed, so that healthy() says so and the executor boots a new one.
 */
static int switch_disk(struct lv_machine *lm, struct lv_guest *g, const struct plan_disk *d,
		       bool drop, char **err)
{
	if (!plan_disk_pluggable(g->cfg.disk) || !plan_disk_pluggable(d)) {
		*err =
		    xasprintf("cannot switch the target of '%s' from disk '%s' to '%s': a disk on "
			      "a bus that cannot be hot-plugged is part of the boot configuration",
			      g->base.name, g->cfg.disk->e.name, d->e.name);
		return -1;
	}
	if (guest_sh(g, UMOUNT_CMD, err) < 0)
		goto fail;
	if (lv_guest_is_image(g)) {
		if (vm_disk_detach(g->vm, MACHINE_TARGET_SERIAL, ATTACH_MS, err) < 0)
			goto fail;
		unlink(g->target_path);
		free(g->target_path);
		g->target_path = NULL; /* its name says its format */
		memset(&g->target, 0, sizeof(g->target));
	}
	free(g->target_dev);
	g->target_dev = NULL;
	g->cfg.disk = d;
	if (lv_guest_is_image(g) &&
	    (target_new(lm, g, err) < 0 || vm_disk_plug(g->vm, &g->target, ATTACH_MS, err) < 0))
		goto fail;
	if (mount_target(g, drop, err) < 0)
		goto fail;
	return 0;
fail:
	lv_teardown(g);
	return -1;
}

/*
 * Bring the landing place to its start state (empty, or a fresh disk, or one of another disk)
 * and drop the guest's caches when asked; one guest command where possible, since each costs
 * ~0.1 s under TCG.
 */
static int lv_reset(struct machine *m, struct machine_guest *mg, const struct machine_reset *r,
		    char **err)
{
	struct lv_machine *lm = (struct lv_machine *)m;
	struct lv_guest *g = (struct lv_guest *)mg;
	int rc;
	if (r->disk && !machine_disk_same(r->disk, g->cfg.disk)) {
		rc = switch_disk(lm, g, r->disk, r->drop_caches, err);
		if (rc == 0)
			g->base.dirty = false;
	} else if (!g->base.dirty) {
		rc = r->drop_caches ? guest_sh(g, DROP_CMD, err) : 0;
	} else if (r->fresh_disk && lv_guest_is_image(g)) {
		if (fresh_disk(lm, g, r->drop_caches, err) < 0)
			return -1;
		g->base.dirty = false;
		rc = 0;
	} else {
		rc = guest_sh(g, r->drop_caches ? EMPTY_CMD " && " DROP_CMD : EMPTY_CMD, err);
		if (rc == 0)
			g->base.dirty = false;
	}
	if (rc == 0 && r->drop_caches)
		drop_host_caches();
	return rc;
}

static int lv_drop_caches(struct machine *m, struct machine_guest *mg, char **err)
{
	(void)m;
	if (guest_sh((struct lv_guest *)mg, DROP_CMD, err) < 0)
		return -1;
	drop_host_caches();
	return 0;
}

static void lv_destroy(struct machine *m, struct machine_guest *mg)
{
	(void)m;
	lv_free((struct lv_guest *)mg);
}

/* After a failure: is the guest still usable? */
static bool lv_healthy(struct machine *m, struct machine_guest *mg)
{
	(void)m;
	struct lv_guest *g = (struct lv_guest *)mg;
	if (!g->vm || (g->peer && !lv_healthy(m, &g->peer->base)))
		return false;
	virDomainPtr d = vm_domain(g->vm);
	if (virDomainIsActive(d) != 1)
		return false;
	for (int i = 0; i < 5; i++) {
		_cleanup_free_ char *err = NULL;
		if (agent_ping(d, 2, &err) == 0)
			return true;
		if (i == 4 || run_interrupted())
			return false;
		sleep(1);
	}
	return false;
}

/* Pause the domain (virDomainSuspend): its vCPUs stop and QEMU keeps its memory, so the guest's
 * page cache survives until it resumes. */
static int lv_suspend(struct machine *m, struct machine_guest *mg, char **err)
{
	(void)m;
	struct lv_guest *g = (struct lv_guest *)mg;
	if (!g->vm) {
		*err = xasprintf("cannot suspend '%s': it has no domain", mg->name);
		return -1;
	}
	if (g->peer && lv_suspend(m, &g->peer->base, err) < 0)
		return -1;
	if (virDomainSuspend(vm_domain(g->vm)) < 0) {
		const char *lv = virGetLastErrorMessage();
		*err = xasprintf("cannot suspend '%s': %s", mg->name, lv ? lv : "unknown error");
		return -1;
	}
	return 0;
}

/* Resume a paused domain and wait for its agent; its clock is set from the host's again (best
 * effort: the guest's clock stood still while it was paused). */
static int lv_resume(struct machine *m, struct machine_guest *mg, char **err)
{
	(void)m;
	struct lv_guest *g = (struct lv_guest *)mg;
	if (!g->vm) {
		*err = xasprintf("cannot resume '%s': it has no domain", mg->name);
		return -1;
	}
	if (g->peer && lv_resume(m, &g->peer->base, err) < 0)
		return -1;
	virDomainPtr d = vm_domain(g->vm);
	if (virDomainResume(d) < 0) {
		const char *lv = virGetLastErrorMessage();
		*err = xasprintf("cannot resume '%s': %s", mg->name, lv ? lv : "unknown error");
		return -1;
	}
	_cleanup_free_ char *perr = NULL;
	for (int i = 0; agent_ping(d, 2, &perr) < 0; i++) {
		if (i == 9 || run_interrupted()) {
			*err = xasprintf("'%s' does not answer after resume: %s", mg->name,
					 perr ? perr : "no answer");
			return -1;
		}
		free(perr);
		perr = NULL;
		sleep(1);
	}
	(void)virDomainSetTime(d, 0, 0, VIR_DOMAIN_TIME_SYNC);
	return 0;
}

static uint64_t lv_host_memory(struct machine *m)
{
	struct lv_machine *lm = (struct lv_machine *)m;
	virNodeInfo ni;
	return virNodeGetInfo(lm->conn, &ni) == 0 ? (uint64_t)ni.memory * 1024 : 0;
}

static char *lv_console_tail(struct machine *m, struct machine_guest *mg, unsigned lines)
{
	(void)m;
	struct lv_guest *g = (struct lv_guest *)mg;
	return g->vm ? vm_console_tail(g->vm, lines) : NULL;
}

static void lv_bind(struct machine *m, struct machine_guest *mg, struct method_ctx *ctx)
{
	(void)m;
	struct lv_guest *g = (struct lv_guest *)mg;
	if (!g)
		return;
	ctx->landing = MACHINE_LANDING;
	ctx->target_dev = g->target_dev;
	ctx->target_disk = lv_guest_is_image(g) ? &g->target : NULL;
}

static int lv_evict_target(struct machine *m, struct machine_guest *mg, uint64_t *resident,
			   char **err)
{
	(void)m;
	struct lv_guest *g = (struct lv_guest *)mg;
	if (!g || !lv_guest_is_image(g)) {
		*err = xstrdup("the guest has no target disk image");
		return -1;
	}
	return file_cache_evict(g->target.path, resident, err);
}

/* What a remote host cannot do: ferry's filesystem and loopback are not the host's. */
static char *lv_supports(struct machine *m, const struct plan_cell *pc)
{
	struct lv_machine *lm = (struct lv_machine *)m;
	if (!lm->hs)
		return NULL;
	/* what the method says it cannot do there (its struct method_needs) */
	const struct method_ops *ops = method_of(pc->method);
	if (ops && ops->needs.remote_why)
		return xstrdup(ops->needs.remote_why);
	if (pc->vm->guest != PLAN_GUEST_BUILTIN)
		return xstrdup("only the built-in guest is uploaded to a remote libvirt host "
			       "(guest: image and debian boot from files of ferry's filesystem)");
	return NULL;
}

/* Delete the landing place's data and trim the filesystem; a target the block method wrote raw
 * (not mounted) is discarded whole. Only where the image passes discards through. */
#define RECLAIM_CMD                                                                                \
	"if grep -q ' " MACHINE_TARGET_MNT " ' /proc/mounts; then rm -rf " MACHINE_LANDING         \
	" && mkdir -p " MACHINE_LANDING " && sync && fstrim " MACHINE_TARGET_MNT "; "              \
	"else blkdiscard %s; fi && sync"

static int lv_reclaim(struct machine *m, struct machine_guest *mg, char **err)
{
	(void)m;
	struct lv_guest *g = (struct lv_guest *)mg;
	if (!lv_guest_is_image(g) || !g->target.discard || !g->vm || !g->target_dev)
		return 0;
	_cleanup_free_ char *cmd = xasprintf(RECLAIM_CMD, g->target_dev);
	return guest_sh(g, cmd, err) < 0 ? -1 : 1;
}

static void lv_hook(struct machine *m, struct machine_guest *mg, const struct machine_where *w)
{
	struct lv_machine *lm = (struct lv_machine *)m;
	struct lv_guest *g = (struct lv_guest *)mg;
	if (g->vm)
		machine_faults_inject(&lm->faults, g->vm, w);
}

/* A connection libvirt closed (the remote end went away, keepalive gave up) is the host's
 * failure, not the cell's. */
static bool lv_alive(struct machine *m, char **why)
{
	struct lv_machine *lm = (struct lv_machine *)m;
	if (virConnectIsAlive(lm->conn) == 1)
		return true;
	_cleanup_free_ char *uri = virConnectGetURI(lm->conn);
	*why = xasprintf("the libvirt connection%s%s%s was lost", uri ? " to '" : "",
			 uri ? uri : "", uri ? "'" : "");
	return false;
}

/* Let go of the guests this run held against a build's prune (guest_cache_hold()). */
static void unhold(struct lv_machine *lm)
{
	if (lm->gf_hold >= 0)
		close(lm->gf_hold);
	if (lm->deb_hold >= 0)
		close(lm->deb_hold);
	lm->gf_hold = lm->deb_hold = -1;
}

static void lv_close(struct machine *m)
{
	struct lv_machine *lm = (struct lv_machine *)m;
	for (size_t i = 0; i < lm->n_empties; i++) {
		unlink(lm->empties[i].path);
		free(lm->empties[i].path);
	}
	free(lm->empties);
	saved_states_free(lm->saved);
	virConnectClose(lm->conn);
	guest_files_clear(&lm->gf);
	free(lm->gf_err);
	guest_image_clear(&lm->deb);
	unhold(lm);
	machine_faults_clear(&lm->faults);
	free(lm);
}

static const struct machine_ops libvirt_ops = {
	.name = "libvirt",
	.boot = lv_boot,
	.reset = lv_reset,
	.disk_boot_key = lv_disk_boot_key,
	.destroy = lv_destroy,
	.suspend = lv_suspend,
	.resume = lv_resume,
	.host_memory = lv_host_memory,
	.healthy = lv_healthy,
	.console_tail = lv_console_tail,
	.describe = machine_libvirt_describe,
	.bind = lv_bind,
	.supports = lv_supports,
	.sample = machine_libvirt_sample,
	.reclaim = lv_reclaim,
	.evict_target = lv_evict_target,
	.drop_caches = lv_drop_caches,
	.hook = lv_hook,
	.alive = lv_alive,
	.close = lv_close,
	.peer = lv_peer,
	.guest = &machine_libvirt_guest_ops,
};

struct machine *machine_libvirt_open(struct run *run, const char *uri, void *data, char **err)
{
	(void)data;
	struct lv_machine *lm = xcalloc(1, sizeof(*lm));
	lm->base.ops = &libvirt_ops;
	lm->run = run;
	/* a plan may use only the Debian guest or images: the built-in one is needed (and its
	   absence an error) only when a VM boots it */
	lm->gf_hold = lm->deb_hold = -1;
	if (guest_locate(NULL, &lm->gf, &lm->gf_err) == 0)
		lm->gf_hold = guest_cache_hold(lm->gf.dir);
	lm->conn = vm_connect(uri, err);
	if (!lm->conn) {
		guest_files_clear(&lm->gf);
		unhold(lm);
		free(lm);
		return NULL;
	}
	const struct machine_libvirt_opts *o = data;
	enum machine_storage st = o ? o->storage : MACHINE_STORAGE_AUTO;
	if (st == MACHINE_STORAGE_VOLUMES ||
	    (st == MACHINE_STORAGE_AUTO && hoststore_uri_remote(uri))) {
		/* freed by run_close(), after the domains that use its volumes */
		lm->hs = hoststore_open(lm->conn, run, err);
		if (!lm->hs) {
			virConnectClose(lm->conn);
			guest_files_clear(&lm->gf);
			unhold(lm);
			free(lm);
			return NULL;
		}
	}
	machine_faults_from_env(&lm->faults);
	return &lm->base;
}
