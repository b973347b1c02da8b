/* SPDX-License-Identifier: MIT */
/* The devices of a running guest (vm.h): hot-plugged disks and how the guest sees them, the live
 * definition's channels and NIC, port forwards on user networking. */
#include "vm.h"

#include <string.h>

#include <libvirt/libvirt-qemu.h>
#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xpath.h>

#include "agent.h"
#include "cleanup.h"
#include "hoststore.h"
#include "util.h"
#include "vm-impl.h"

/* ---- disks in the guest ---- */

/*
 * Lists "NAME|SERIAL" for every block device: virtio-blk exposes the serial in sysfs; SCSI and
 * ATA disks (sd_mod) expose VPD page 0x80 (unit serial number): a 4-byte header, then the serial.
 */
/*
 * One "NAME|OPEN|SERIAL" line per block device, OPEN 1 when /dev/NAME opens. With no block
 * device the glob stays literal (the pattern itself), and a disk appearing a moment later made
 * the unquoted tests expand it: the disk was then reported as "*" (and the mount of /dev/ plus a
 * glob failed). Hence the -e test and the quotes. OPEN: a hot-plugged disk is in sysfs, serial
 * and all, before the kernel has made its node and can open it (device_add_disk), and on a
 * loaded host (two TCG guests per core) a mount in between failed (busybox mount's status 255).
 * The open is a redirection of the shell's own `true` (no process; a failed redirection of a
 * regular builtin is a status, where one of a special builtin such as `:` ends dash).
 */
static const char find_script[] =
    "for b in /sys/block/*; do [ -e \"$b\" ] || continue; s=; n=0; "
    "{ true < \"/dev/${b##*/}\"; } 2>/dev/null && n=1; "
    "if [ -r \"$b/serial\" ]; then s=$(cat \"$b/serial\"); "
    "elif [ -r \"$b/device/vpd_pg80\" ]; then s=$(tail -c +5 \"$b/device/vpd_pg80\"); fi; "
    "echo \"${b##*/}|$n|$s\"; done";

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

int vm_find_disk(struct vm *vm, const char *serial, char **dev, char **err)
{
	if (vm->os != VM_OS_LINUX) {
		*err = xasprintf("finding disks by serial is not implemented for '%s' guests",
				 vm_os_names[vm->os]);
		return -1;
	}
	const char *argv[] = { "/bin/sh", "-c", find_script, NULL };
	struct agent_exec_result r;
	if (agent_exec(vm->dom, argv, NULL, 0, 30000, &r, err) < 0)
		return -1;
	int found = 0;
	char *save = NULL;
	for (char *line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *bar = strchr(line, '|');
		if (!bar || (bar[1] != '0' && bar[1] != '1') || bar[2] != '|')
			continue;
		*bar = '\0';
		/* a disk that does not open yet is not there for a caller that opens it */
		if (STREQ(trim(bar + 3), serial) && (!dev || bar[1] == '1')) {
			if (dev)
				*dev = xstrdup(trim(line));
			found = 1;
			break;
		}
	}
	agent_exec_result_clear(&r);
	return found;
}

/* Wait until the guest shows (want=1) or no longer shows (want=0) the disk. */
static int wait_disk(struct vm *vm, const char *serial, int want, unsigned timeout_ms, char **dev,
		     char **err)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
	for (;;) {
		int r = vm_find_disk(vm, serial, want ? dev : NULL, err);
		if (r < 0)
			return -1;
		if (r == want)
			return 0;
		if (run_interrupted()) {
			*err = xasprintf("interrupted while waiting for disk '%s'", serial);
			return -1;
		}
		if (now_ns() >= deadline) {
			*err = vm_with_console(xasprintf("the guest %s disk '%s' within %u ms",
							 want ? "did not see" : "still sees",
							 serial, timeout_ms),
					       vm);
			return -1;
		}
		run_sleep_ms(20);
	}
}

char *vm_disk_wait_command(const char *serial, unsigned timeout_ms)
{
	/* find_script's test per device, with the shell's own read (no process per device and
	 * round: a fork is milliseconds under TCG) where sysfs has the serial as text; the
	 * trailing blanks a VPD page may pad with are cut as trim() does */
	return xasprintf(
	    "d=; i=0; while :; do for b in /sys/block/*; do [ -e \"$b\" ] || continue; s=; "
	    "if [ -r \"$b/serial\" ]; then read -r s < \"$b/serial\"; "
	    "elif [ -r \"$b/device/vpd_pg80\" ]; then s=$(tail -c +5 \"$b/device/vpd_pg80\"); "
	    "fi; s=${s%%%%[ \t\r]*}; if [ \"$s\" = '%s' ] && "
	    "{ true < \"/dev/${b##*/}\"; } 2>/dev/null; then "
	    "d=${b##*/}; break; fi; done; "
	    "[ -z \"$d\" ] || break; i=$((i+1)); if [ $i -gt %u ]; then "
	    "echo \"the guest did not see disk '%s' within %u ms\" >&2; exit 1; fi; "
	    "usleep 5000 2>/dev/null || sleep 0.01; done; ",
	    serial, timeout_ms / 5 + 1, serial, timeout_ms);
}

int vm_disk_plug(struct vm *vm, const struct disk_config *d, unsigned timeout_ms, char **err)
{
	_cleanup_free_ char *why = NULL;
	if (vm_disk_validate(d, vm->machine, true, &why) < 0) {
		*err = TAKE_PTR(why);
		return -1;
	}
	if (!d->serial || !d->path) {
		*err = xstrdup("a hot-plugged disk needs a serial and an image path");
		return -1;
	}
	for (size_t i = 0; i < vm->n_att; i++)
		if (STREQ(vm->att[i].serial, d->serial)) {
			*err = xasprintf("a disk with serial '%s' is already attached", d->serial);
			return -1;
		}
	if (vm->builtin && d->bus == DISK_BUS_SCSI && !vm->scsi_loaded) {
		/* the built-in guest loads the SCSI drivers at boot only for a VM configured with
		   SCSI disks (vm_guest_modules()): load them before the first SCSI hot-plug */
		const char *argv[] = { "modprobe", "-a", "virtio_scsi", "sd_mod", NULL };
		_cleanup_free_ char *e = NULL;
		if (agent_run(vm->dom, argv, timeout_ms, NULL, &e) < 0) {
			*err = xasprintf("cannot load the SCSI drivers in domain '%s': %s",
					 vm->name, e);
			return -1;
		}
		vm->scsi_loaded = true;
	}
	if (d->bus == DISK_BUS_SCSI && !vm->scsi_ctl) {
		/* a VM configured without SCSI disks boots without the controller (vm_needs_scsi())
		 */
		if (virDomainAttachDeviceFlags(vm->dom, vm_scsi_controller_xml,
					       VIR_DOMAIN_AFFECT_LIVE) < 0) {
			*err =
			    xasprintf("cannot attach a virtio-scsi controller to domain '%s': %s",
				      vm->name, virGetLastErrorMessage());
			return -1;
		}
		vm->scsi_ctl = true;
	}
	unsigned *slot = &vm->next[d->bus == DISK_BUS_VIRTIO ? 0 : 1];
	_cleanup_free_ char *target = vm_disk_target_name(d->bus, *slot);
	/* a remote host: the image is uploaded into a run volume, attached by its path there */
	struct disk_config rd = *d;
	_cleanup_free_ char *vol = NULL, *rpath = NULL;
	if (vm->hs) {
		vol = xasprintf("%s.%s.%u", vm->name, d->serial, ++vm->n_uploads);
		struct hoststore_vol v = { .label = vol,
					   .capacity = d->size,
					   .preallocate = d->allocation != DISK_ALLOC_SPARSE };
		if (hoststore_run_volume(vm->hs, &v, d->path, &rpath, err) < 0)
			return -1;
		rd.path = rpath;
	}
	_cleanup_free_ char *xml = vm_disk_xml(&rd, target, err);
	if (!xml || virDomainAttachDeviceFlags(vm->dom, xml, VIR_DOMAIN_AFFECT_LIVE) < 0) {
		if (xml)
			*err = xasprintf("cannot attach disk '%s' to domain '%s': %s", d->serial,
					 vm->name, virGetLastErrorMessage());
		if (vol)
			hoststore_delete(vm->hs, vol);
		return -1;
	}
	(*slot)++;
	vm->att = xgrow(vm->att, &vm->cap_att, vm->n_att + 1, sizeof(*vm->att));
	vm->att[vm->n_att++] =
	    (struct attached){ xstrdup(d->serial), TAKE_PTR(xml), TAKE_PTR(target), TAKE_PTR(vol) };
	return 0;
}

int vm_disk_attach(struct vm *vm, const struct disk_config *d, unsigned timeout_ms, char **dev,
		   char **err)
{
	if (vm_disk_plug(vm, d, timeout_ms, err) < 0)
		return -1;
	return wait_disk(vm, d->serial, 1, timeout_ms, dev, err);
}

/* The string value of an XPath expression over the live domain XML ("" when nothing matches). */
static int live_xpath(struct vm *vm, const char *expr, char **out, char **err)
{
	_cleanup_free_ char *desc = virDomainGetXMLDesc(vm->dom, 0);
	if (!desc) {
		*err = xasprintf("cannot read the definition of domain '%s': %s", vm->name,
				 virGetLastErrorMessage());
		return -1;
	}
	_cleanup_(xmlFreeDocp) xmlDocPtr doc =
	    xmlReadMemory(desc, (int)strlen(desc), "domain.xml", NULL, XML_PARSE_NONET);
	if (!doc) {
		*err = xasprintf("cannot parse the definition of domain '%s'", vm->name);
		return -1;
	}
	xmlXPathContextPtr ctx = xmlXPathNewContext(doc);
	xmlXPathObjectPtr o = xmlXPathEvalExpression(BAD_CAST expr, ctx);
	xmlChar *s = o ? xmlXPathCastToString(o) : NULL;
	*out = xstrdup(s ? (const char *)s : "");
	xmlFree(s);
	xmlXPathFreeObject(o);
	xmlXPathFreeContext(ctx);
	return 0;
}

/* Whether libvirt's live definition still has a disk with this target. */
static int libvirt_has_target(struct vm *vm, const char *target, char **err)
{
	_cleanup_free_ char *expr =
	    xasprintf("count(/domain/devices/disk/target[@dev='%s'])", target);
	_cleanup_free_ char *n = NULL;
	if (live_xpath(vm, expr, &n, err) < 0)
		return -1;
	return !STREQ(n, "0");
}

int vm_channel_path(struct vm *vm, const char *name, char **path, char **err)
{
	if (strchr(name, '\'')) {
		*err = xasprintf("no channel '%s'", name);
		return -1;
	}
	_cleanup_free_ char *expr =
	    xasprintf("string(/domain/devices/channel[target/@name='%s']/source/@path)", name);
	_cleanup_free_ char *p = NULL;
	if (live_xpath(vm, expr, &p, err) < 0)
		return -1;
	if (!*p) {
		*err = xasprintf("domain '%s' has no channel '%s'", vm->name, name);
		return -1;
	}
	*path = TAKE_PTR(p);
	return 0;
}

int vm_nic_device(struct vm *vm, char **dev, char **err)
{
	_cleanup_free_ char *d = NULL;
	if (live_xpath(vm, "string(/domain/devices/interface[1]/target/@dev)", &d, err) < 0)
		return -1;
	if (!*d) {
		*err = xasprintf("the NIC of domain '%s' has no host device", vm->name);
		return -1;
	}
	*dev = TAKE_PTR(d);
	return 0;
}

int vm_hostfwd_add(struct vm *vm, int host_port, int guest_port, char **err)
{
	if (!vm->user_nic) {
		*err = xasprintf("domain '%s' has no user-networking NIC to forward a port to",
				 vm->name);
		return -1;
	}
	_cleanup_free_ char *cmd =
	    xasprintf("hostfwd_add " VM_USER_NETDEV " tcp:127.0.0.1:%d-:%d", host_port, guest_port);
	_cleanup_free_ char *reply = NULL;
	if (virDomainQemuMonitorCommand(vm->dom, cmd, &reply, VIR_DOMAIN_QEMU_MONITOR_COMMAND_HMP) <
	    0) {
		*err = xasprintf("cannot forward port %d to domain '%s': %s", host_port, vm->name,
				 virGetLastErrorMessage());
		return -1;
	}
	/* HMP answers errors as text */
	if (reply && *reply && strspn(reply, "\r\n ") != strlen(reply)) {
		size_t n = strcspn(reply, "\r\n");
		*err = xasprintf("cannot forward port %d to domain '%s': %.*s", host_port, vm->name,
				 (int)n, reply);
		return -1;
	}
	return 0;
}

int vm_disk_detach(struct vm *vm, const char *serial, unsigned timeout_ms, char **err)
{
	size_t i;
	for (i = 0; i < vm->n_att; i++)
		if (STREQ(vm->att[i].serial, serial))
			break;
	if (i == vm->n_att) {
		*err = xasprintf("no disk with serial '%s' was attached", serial);
		return -1;
	}
	struct attached a = vm->att[i];
	if (virDomainDetachDeviceFlags(vm->dom, a.xml, VIR_DOMAIN_AFFECT_LIVE) < 0) {
		*err = xasprintf("cannot detach disk '%s' from domain '%s': %s", serial, vm->name,
				 virGetLastErrorMessage());
		return -1;
	}
	/* libvirt finishes the removal asynchronously: wait before the image may be reused */
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
	for (;;) {
		int has = libvirt_has_target(vm, a.target, err);
		if (has < 0)
			return -1;
		if (!has)
			break;
		if (now_ns() >= deadline) {
			*err = xasprintf("libvirt still lists disk '%s' after %u ms", serial,
					 timeout_ms);
			return -1;
		}
		run_sleep_ms(10);
	}
	/*
	 * libvirt drops the disk once QEMU reported it deleted. A virtio disk (a PCI device) QEMU
	 * deletes when the guest ejects the slot, which the guest does after it removed the block
	 * device: the guest no longer shows it. A SCSI disk QEMU deletes at once, maybe before the
	 * guest processed the unplug: the guest is asked.
	 */
	if (strncmp(a.target, "vd", 2) != 0 && wait_disk(vm, serial, 0, timeout_ms, NULL, err) < 0)
		return -1;
	if (a.vol && vm->hs)
		hoststore_delete(vm->hs, a.vol);
	free(a.vol);
	free(a.serial);
	free(a.xml);
	free(a.target);
	memmove(&vm->att[i], &vm->att[i + 1], (vm->n_att - i - 1) * sizeof(*vm->att));
	vm->n_att--;
	return 0;
}
