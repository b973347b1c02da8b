/* SPDX-License-Identifier: MIT */
/*
 * Whose a domain is: the run that started it destroys it at its cleanup (run_own, run.h), and
 * its <metadata> marker (RUN_XMLNS) proves it ferry's to `ferry doctor --reap`.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "run.h"
#include "util.h"
#include "vm.h"

struct owned_domain {
	virConnectPtr conn;
	char *name;
};

static int owned_domain_destroy(void *data, char **why)
{
	struct owned_domain *d = data;
	if (virConnectIsAlive(d->conn) != 1) {
		/* libvirtd restarted under us: the domain still runs, ask a new connection */
		_cleanup_free_ char *uri = virConnectGetURI(d->conn);
		virConnectPtr fresh = uri ? virConnectOpen(uri) : NULL;
		if (fresh) {
			virConnectClose(d->conn);
			d->conn = fresh;
		}
	}
	virDomainPtr dom = virDomainLookupByName(d->conn, d->name);
	if (!dom)
		return 0; /* gone already */
	int ret = 0;
	if (virDomainIsActive(dom) == 1 && virDomainDestroy(dom) < 0 &&
	    virDomainIsActive(dom) == 1) {
		*why =
		    xasprintf("cannot destroy domain '%s': %s", d->name, virGetLastErrorMessage());
		ret = -1;
	}
	/* a defined (persistent) domain would survive destroy */
	if (virDomainIsPersistent(dom) == 1)
		virDomainUndefineFlags(dom, VIR_DOMAIN_UNDEFINE_NVRAM);
	virDomainFree(dom);
	return ret;
}

static void owned_domain_release(void *data)
{
	struct owned_domain *d = data;
	virConnectClose(d->conn);
	free(d->name);
	free(d);
}

static const struct run_owned_ops owned_domain_ops = {
	.destroy = owned_domain_destroy,
	.release = owned_domain_release,
};

void vm_own_domain(struct run *r, virConnectPtr conn, const char *name)
{
	struct owned_domain *d = xmalloc(sizeof(*d));
	virConnectRef(conn);
	*d = (struct owned_domain){ conn, xstrdup(name) };
	run_own(r, name, &owned_domain_ops, d);
}

/* A positive pid from its decimal text, or -1. */
static long parse_pid(const char *s)
{
	char *end;
	errno = 0;
	long p = s ? strtol(s, &end, 10) : -1;
	return s && !errno && end != s && !*end && p > 0 ? p : -1;
}

bool vm_domain_owner(virDomainPtr dom, char **run_id, long *pid)
{
	char *xml = virDomainGetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, RUN_XMLNS,
					 VIR_DOMAIN_AFFECT_CURRENT);
	if (!xml)
		return false; /* no marker: not ferry's, whatever its name */
	xmlDocPtr doc = xmlReadMemory(xml, (int)strlen(xml), "metadata.xml", NULL,
				      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	free(xml);
	xmlNodePtr root = doc ? xmlDocGetRootElement(doc) : NULL;
	xmlChar *id = root ? xmlGetProp(root, BAD_CAST "id") : NULL;
	xmlChar *p = root ? xmlGetProp(root, BAD_CAST "pid") : NULL;
	long n = parse_pid((const char *)p);
	bool ok = id && *id && n > 0;
	if (ok && run_id)
		*run_id = xstrdup((const char *)id);
	if (ok && pid)
		*pid = n;
	xmlFree(id);
	xmlFree(p);
	xmlFreeDoc(doc);
	return ok;
}
