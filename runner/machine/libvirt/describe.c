/* SPDX-License-Identifier: MIT */
/*
 * What the libvirt machine tells about itself and its guests (machine.h describe and sample):
 * versions, the remote host's facts and the built-in guest's hashes for the provenance; the
 * target image's allocation and the QEMU process's and the guest's CPU time around a run.
 */
#include "machine-libvirt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>
#include <libxml/parser.h>
#include <libxml/xpath.h>

#include "agent.h"
#include "cleanup.h"
#include "fs.h"
#include "hash.h"
#include "util.h"

static char *file_sha256(const char *path)
{
	size_t len;
	_cleanup_free_ char *buf = read_file(path, &len);
	if (!buf)
		return NULL;
	char hex[SHA256_HEX];
	sha256_buf_hex(buf, len, hex);
	return xstrdup(hex);
}

static char *version_string(unsigned long v)
{
	return xasprintf("%lu.%lu.%lu", v / 1000000, v / 1000 % 1000, v % 1000);
}

/* The string value of an XPath expression over an XML text, or NULL. */
static char *xml_string(const char *xml, const char *expr)
{
	_cleanup_(xmlFreeDocp) xmlDocPtr doc =
	    xml ? xmlReadMemory(xml, (int)strlen(xml), "caps.xml", NULL, XML_PARSE_NONET) : NULL;
	if (!doc)
		return NULL;
	_cleanup_(xmlXPathFreeContextp) xmlXPathContextPtr ctx = xmlXPathNewContext(doc);
	_cleanup_(xmlXPathFreeObjectp) xmlXPathObjectPtr o =
	    xmlXPathEvalExpression(BAD_CAST expr, ctx);
	xmlChar *t = o ? xmlXPathCastToString(o) : NULL;
	char *r = t && *t ? xstrdup((const char *)t) : NULL;
	xmlFree(t);
	return r;
}

/*
 * A remote host's facts, from libvirt: its hostname, CPU (vendor and libvirt's name of its model,
 * count), memory. libvirt does not report the host's kernel, so that says so.
 */
static void describe_remote_host(struct lv_machine *lm, struct result_provenance *pv)
{
	char *h = virConnectGetHostname(lm->conn);
	if (h) {
		free(pv->hostname);
		pv->hostname = h;
	}
	_cleanup_free_ char *caps = virConnectGetCapabilities(lm->conn);
	_cleanup_free_ char *vendor = xml_string(caps, "string(/capabilities/host/cpu/vendor)");
	_cleanup_free_ char *model = xml_string(caps, "string(/capabilities/host/cpu/model)");
	_cleanup_free_ char *uri = virConnectGetURI(lm->conn);
	free(pv->cpu_model);
	pv->cpu_model = xasprintf("%s%s%s (libvirt's CPU model name)", vendor ? vendor : "",
				  vendor ? " " : "", model ? model : "unknown");
	virNodeInfo ni;
	if (virNodeGetInfo(lm->conn, &ni) == 0) {
		pv->cpu_count = ni.cpus;
		pv->memory_bytes = (uint64_t)ni.memory * 1024;
	}
	free(pv->host_kernel);
	pv->host_kernel = xasprintf("unknown: remote libvirt host %s (libvirt does not report "
				    "the host's kernel)",
				    uri ? uri : "");
}

void machine_libvirt_describe(struct machine *m, struct machine_guest *mg,
			      struct result_provenance *pv)
{
	struct lv_machine *lm = (struct lv_machine *)m;
	struct lv_guest *g = (struct lv_guest *)mg;
	if (g) {
		if (!pv->accelerator && g->vm)
			pv->accelerator = xstrdup(vm_accel_used(g->vm));
		/* the built-in guest's files, named once a VM booted it: a plan of Debian guests
		   or images only must not name them */
		if (g->cfg.vm->guest == PLAN_GUEST_BUILTIN && lm->gf.kernel && !lm->builtin_named) {
			lm->builtin_named = true;
			free(pv->guest_kernel_sha256);
			pv->guest_kernel_sha256 = file_sha256(lm->gf.kernel);
			free(pv->guest_initramfs_sha256);
			pv->guest_initramfs_sha256 = xstrdup(lm->gf.initramfs_sha256);
		}
		return;
	}
	if (lm->hs)
		describe_remote_host(lm, pv);
	unsigned long v = 0;
	if (virConnectGetVersion(lm->conn, &v) == 0) {
		free(pv->qemu_version);
		pv->qemu_version = version_string(v);
	}
	if (virConnectGetLibVersion(lm->conn, &v) == 0) {
		free(pv->libvirt_version);
		pv->libvirt_version = version_string(v);
	}
}

/* user + nice + system + irq + softirq of /proc/stat's "cpu" line, in USER_HZ (100 on Linux);
 * NAN when the agent cannot read it */
static double proc_stat_cpu_s(virDomainPtr dom)
{
	_cleanup_free_ char *buf = NULL, *err = NULL;
	size_t len = 0;
	if (agent_read_file(dom, "/proc/stat", 64 * 1024, &buf, &len, &err) < 0)
		return NAN;
	unsigned long long v[7] = { 0 };
	if (sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
		   &v[5], &v[6]) != 7)
		return NAN;
	return (double)(v[0] + v[1] + v[2] + v[5] + v[6]) / 100.0;
}

/*
 * The same sum from guest-get-cpustats (qemu-guest-agent 7.1 and later: /proc/stat's "cpuN"
 * lines in milliseconds, checked against /proc/stat on a live built-in guest), one agent
 * command instead of the three of a file read; NAN when the agent has no such command or
 * answered something else.
 */
static double cpustats_cpu_s(virDomainPtr dom)
{
	_cleanup_(json_decrefp) json_t *ret = NULL;
	_cleanup_free_ char *err = NULL;
	if (agent_command(dom, "guest-get-cpustats", NULL, 30, &ret, &err) < 0 ||
	    !json_is_array(ret) || json_array_size(ret) == 0)
		return NAN;
	static const char *const busy[] = { "user", "nice", "system", "irq", "softirq" };
	double sum = 0;
	size_t i;
	json_t *c;
	json_array_foreach(ret, i, c)
	{
		json_t *type = json_object_get(c, "type");
		if (!json_is_string(type) || strcmp(json_string_value(type), "linux") != 0)
			return NAN;
		for (size_t k = 0; k < ELEMENTSOF(busy); k++) {
			json_t *v = json_object_get(c, busy[k]);
			if (!json_is_integer(v))
				return NAN;
			sum += (double)json_integer_value(v);
		}
	}
	return sum / 1000.0;
}

/* The guest's non-idle CPU seconds (user + nice + system + irq + softirq); NAN when the agent
 * cannot tell. */
static double guest_cpu_s(struct lv_guest *g)
{
	virDomainPtr dom = vm_domain(g->vm);
	if (!g->no_cpustats) {
		double s = cpustats_cpu_s(dom);
		if (!isnan(s))
			return s;
		g->no_cpustats = true; /* asked once per guest */
	}
	return proc_stat_cpu_s(dom);
}

void machine_libvirt_sample(struct machine *m, struct machine_guest *mg, unsigned what,
			    struct machine_sample *out)
{
	(void)m;
	struct lv_guest *g = (struct lv_guest *)mg;
	struct stat st;
	if ((what & MACHINE_SAMPLE_ALLOC) && lv_guest_is_image(g) && g->target_path &&
	    stat(g->target_path, &st) == 0)
		out->alloc_bytes = (double)st.st_blocks * 512.0;
	if (!(what & MACHINE_SAMPLE_CPU) || !g->vm)
		return;
	/* libvirt's cpuTime of a QEMU domain: the QEMU process's user + system time (its
	   cgroup's, or /proc/PID/stat's), every thread */
	virDomainInfo info;
	if (virDomainGetInfo(vm_domain(g->vm), &info) == 0)
		out->cpu_qemu_s = (double)info.cpuTime / 1e9;
	out->cpu_guest_s = guest_cpu_s(g);
}
