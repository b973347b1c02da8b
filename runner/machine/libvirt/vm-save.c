/* SPDX-License-Identifier: MIT */
/*
 * Saved states of ready guests, and fresh guests started from them (vm.h: vm_save,
 * vm_restore_unsupported, vm_config.restore).
 *
 * libvirt's own restore (virDomainRestoreFlags) starts the saved domain under its saved name and
 * UUID only (libvirt 9.0 refuses an XML with another: "Target domain name ... does not match
 * source"), so one saved state could run as one guest at a time, and it has no auto-destroy. A
 * fresh guest is therefore a new transient domain (virDomainCreateXML with auto-destroy, a new
 * name and UUID, like a boot) whose QEMU waits for an incoming migration (`-incoming defer`);
 * ferry hands it the QEMU migration stream inside libvirt's save file as a file descriptor
 * (getfd + migrate-incoming fd:, through libvirt-qemu), waits until the state is loaded and
 * resumes it. QEMU opens nothing itself (its seccomp sandbox forbids exec: migration anyway).
 */
#include "vm.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <libvirt/libvirt-qemu.h>
#include <libvirt/virterror.h>

#include "agent.h"
#include "cleanup.h"
#include "util.h"
#include "vm-impl.h"

struct vm_saved {
	char *path;
	char *disk;   /* the saved guest's root overlay (vm_saved_disk), or NULL */
	off_t offset; /* where QEMU's migration stream starts in libvirt's save file */
	uint64_t bytes;
};

#define LIBVIRT_SAVE_MAGIC "LibvirtQemudSave"
#define QEMU_VM_MAGIC      "QEVM"
/* libvirt's save header (src/qemu/qemu_saveimage.h): magic, then version, data_len,
 * was_running, compressed, cookieOffset and unused words, then data_len bytes of XML and
 * cookie; the header's size is where the domain XML starts. */
#define SAVE_HEADER_SCAN 1024

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The offset of QEMU's stream in libvirt's save file fd, or -1 with *err. */
static off_t stream_offset(int fd, const char *path, char **err)
{
	unsigned char h[SAVE_HEADER_SCAN];
	ssize_t n = pread(fd, h, sizeof(h), 0);
	const size_t ml = sizeof(LIBVIRT_SAVE_MAGIC) - 1;
	if (n < (ssize_t)(ml + 20) || memcmp(h, LIBVIRT_SAVE_MAGIC, ml) != 0) {
		*err = xasprintf("'%s' is not a libvirt QEMU save file", path);
		return -1;
	}
	uint32_t data_len = le32(h + ml + 4), compressed = le32(h + ml + 12);
	if (compressed != 0) {
		*err = xasprintf("the saved state '%s' is compressed (libvirt's save_image_format "
				 "in qemu.conf): ferry reads only the raw format",
				 path);
		return -1;
	}
	const unsigned char *x = memmem(h, (size_t)n, "<domain", 7);
	if (!x) {
		*err = xasprintf("no domain XML in the header of saved state '%s'", path);
		return -1;
	}
	off_t off = (off_t)(x - h) + (off_t)data_len;
	char magic[4];
	if (pread(fd, magic, 4, off) != 4 || memcmp(magic, QEMU_VM_MAGIC, 4) != 0) {
		*err = xasprintf("no QEMU migration stream at offset %lld of saved state '%s'",
				 (long long)off, path);
		return -1;
	}
	return off;
}

int vm_save(struct vm *vm, const char *path, struct vm_saved **out, char **err)
{
	unlink(path);
	if (virDomainSaveFlags(vm->dom, path, NULL, VIR_DOMAIN_SAVE_PAUSED) < 0) {
		*err = xasprintf("cannot save domain '%s' to '%s': %s", vm->name, path,
				 virGetLastErrorMessage());
		unlink(path);
		return -1;
	}
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		*err = xasprintf("cannot open the saved state '%s': %s", path, strerror(errno));
		unlink(path);
		return -1;
	}
	off_t off = stream_offset(fd, path, err);
	off_t end = off < 0 ? -1 : lseek(fd, 0, SEEK_END);
	if (off < 0 || end < off) {
		if (off >= 0)
			*err = xasprintf("cannot read the saved state '%s'", path);
		unlink(path);
		return -1;
	}
	struct vm_saved *s = xcalloc(1, sizeof(*s));
	s->path = xstrdup(path);
	s->offset = off;
	s->bytes = (uint64_t)(end - off);
	if (vm->overlay) {
		/* the root disk as the saved memory knows it: from now on only a base, never
		   written (each restored guest writes to an overlay of its own over it) */
		s->disk = TAKE_PTR(vm->overlay);
		chmod(s->disk, 0444);
	}
	*out = s;
	return 0;
}

uint64_t vm_saved_bytes(const struct vm_saved *s)
{
	return s->bytes;
}

const char *vm_saved_disk(const struct vm_saved *s)
{
	return s->disk;
}

void vm_saved_free(struct vm_saved *s)
{
	if (!s)
		return;
	unlink(s->path);
	if (s->disk)
		unlink(s->disk);
	free(s->path);
	free(s->disk);
	free(s);
}

const char *vm_restore_unsupported(const struct vm_config *c, bool remote)
{
	if (remote)
		return "a remote libvirt host: ferry hands QEMU the saved state as a file "
		       "descriptor, which only a local connection carries";
	if (c->seed)
		return "a NoCloud seed (a CD-ROM attached at boot) is part of the guest's device "
		       "state";
	if (c->firmware == VM_FIRMWARE_UEFI)
		return "UEFI firmware keeps its variables in a file of each domain";
	if (c->n_disks)
		return "boot-time disks (a target on sata or ide, or a method's disks) are part "
		       "of the guest's device state";
	if (c->share.host_dir)
		return "a shared folder (9p blocks migration once mounted; virtiofs has no "
		       "migration in QEMU 7.2)";
	if (c->nic.backend != NIC_BACKEND_NONE && c->nic.backend != NIC_BACKEND_USER)
		return "a network interface other than QEMU user networking (a tap of its own "
		       "per guest)";
	if (c->n_channels)
		return "extra virtio-serial channels (their host ends are per domain)";
	return NULL;
}

/* A QMP command through libvirt-qemu; *ret gets its "return" member (new reference). */
static int qmp(struct vm *vm, const char *cmd, int *fd, json_t **ret, char **err)
{
	char *res = NULL;
	int rc = fd ? virDomainQemuMonitorCommandWithFiles(vm->dom, cmd, 1, fd, NULL, NULL, &res, 0)
		    : virDomainQemuMonitorCommand(vm->dom, cmd, &res, 0);
	if (rc < 0) {
		*err = xasprintf("QEMU of domain '%s' refused %s: %s", vm->name, cmd,
				 virGetLastErrorMessage());
		return -1;
	}
	_cleanup_free_ char *r = res;
	_cleanup_(json_decrefp) json_t *j = json_loads(r, 0, NULL);
	json_t *v = json_object_get(j, "return");
	if (!v) {
		*err = xasprintf("QEMU of domain '%s' answered %s with: %s", vm->name, cmd, r);
		return -1;
	}
	if (ret)
		*ret = json_incref(v);
	return 0;
}

int vm_incoming(struct vm *vm, const struct vm_saved *s, unsigned timeout_ms, char **err)
{
	_cleanup_close_ int fd = open(s->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || lseek(fd, s->offset, SEEK_SET) != s->offset) {
		*err = xasprintf("cannot open the saved state '%s': %s", s->path, strerror(errno));
		return -1;
	}
	if (qmp(vm, "{\"execute\":\"getfd\",\"arguments\":{\"fdname\":\"ferry-state\"}}", &fd, NULL,
		err) < 0 ||
	    qmp(vm, "{\"execute\":\"migrate-incoming\",\"arguments\":{\"uri\":\"fd:ferry-state\"}}",
		NULL, NULL, err) < 0)
		return -1;
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
	for (;;) {
		_cleanup_(json_decrefp) json_t *st = NULL;
		if (qmp(vm, "{\"execute\":\"query-migrate\"}", NULL, &st, err) < 0)
			return -1;
		const char *status = json_string_value(json_object_get(st, "status"));
		if (status && strcmp(status, "completed") == 0)
			break;
		if (status && strcmp(status, "failed") == 0) {
			const char *why = json_string_value(json_object_get(st, "error-desc"));
			*err = xasprintf("domain '%s' could not load the saved state '%s': %s",
					 vm->name, s->path, why ? why : "migration failed");
			return -1;
		}
		if (run_interrupted()) {
			*err = xasprintf("interrupted while domain '%s' loaded its saved state",
					 vm->name);
			return -1;
		}
		if (now_ns() >= deadline) {
			*err = xasprintf("domain '%s' did not load its saved state within %u ms",
					 vm->name, timeout_ms);
			return -1;
		}
		run_sleep_ms(5);
	}
	/* the state was saved paused (virDomainSaveFlags stops the guest first) */
	if (virDomainResume(vm->dom) < 0) {
		*err = xasprintf("cannot resume restored domain '%s': %s", vm->name,
				 virGetLastErrorMessage());
		return -1;
	}
	return 0;
}

/* Bytes of host randomness the agent writes into the restored guest's /dev/urandom. */
#define RESEED_BYTES 64

int vm_restore_refresh(struct vm *vm, char **err)
{
	/* the guest's clock stood at the moment of the save: the host's time now (guest-set-time;
	   the agent runs hwclock -w after setting it) */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (virDomainSetTime(vm->dom, (long long)ts.tv_sec, (unsigned)ts.tv_nsec, 0) < 0) {
		*err = xasprintf("cannot set the clock of restored domain '%s': %s", vm->name,
				 virGetLastErrorMessage());
		return -1;
	}
	/* every guest restored from one state has the same random pool: mix the host's bytes in
	   (the kernel's vmgenid driver reseeds the CRNG from the pool when the domain's <genid>
	   changed, which a restore into a new domain does) */
	unsigned char seed[RESEED_BYTES];
	if (getrandom(seed, sizeof(seed), 0) != (ssize_t)sizeof(seed)) {
		*err = xasprintf("cannot read the host's randomness: %s", strerror(errno));
		return -1;
	}
	const char *argv[] = { "/bin/sh", "-c", "cat > /dev/urandom", NULL };
	struct agent_exec_result r = { 0 };
	_cleanup_free_ char *e = NULL;
	int rc = agent_exec(vm->dom, argv, seed, sizeof(seed), 30000, &r, &e);
	explicit_bzero(seed, sizeof(seed));
	if (rc < 0 || r.exit_code != 0) {
		*err = xasprintf("cannot reseed the random pool of restored domain '%s': %s",
				 vm->name, rc < 0 ? e : r.err);
		agent_exec_result_clear(&r);
		return -1;
	}
	agent_exec_result_clear(&r);
	return 0;
}
