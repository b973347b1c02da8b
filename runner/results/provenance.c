/* SPDX-License-Identifier: MIT */
/* Provenance of the host a run happened on (results_gather_host() in results.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "results.h"

/* The value of the first "key<spaces>:" line in a /proc file, or NULL. */
static char *proc_field(const char *path, const char *key)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0, kl = strlen(key);

	if (!f)
		return NULL;
	while (getline(&line, &cap, f) > 0) {
		if (strncmp(line, key, kl) != 0)
			continue;
		char *p = line + kl;
		p += strspn(p, " \t");
		if (*p != ':')
			continue;
		p++;
		p += strspn(p, " \t");
		p[strcspn(p, "\n")] = '\0';
		return xstrdup(p);
	}
	return NULL;
}

int results_gather_host(struct result_provenance *p, char **err)
{
	_cleanup_free_ char *problems = NULL;
	char host[256];
	struct utsname u;

#define PROBLEM(...)                                                                               \
	do {                                                                                       \
		_cleanup_free_ char *m_ = xasprintf(__VA_ARGS__);                                  \
		char *n_ = problems ? xasprintf("%s; %s", problems, m_) : xstrdup(m_);             \
		free(problems);                                                                    \
		problems = n_;                                                                     \
	} while (0)

	free(p->ferry_version);
	p->ferry_version = xstrdup(FERRY_VERSION);

	free(p->hostname);
	p->hostname = NULL;
	if (gethostname(host, sizeof(host)) == 0) {
		host[sizeof(host) - 1] = '\0';
		p->hostname = xstrdup(host);
	} else {
		PROBLEM("gethostname: %s", strerror(errno));
	}

	free(p->host_kernel);
	p->host_kernel = NULL;
	if (uname(&u) == 0)
		p->host_kernel =
		    xasprintf("%s %s %s %s", u.sysname, u.release, u.version, u.machine);
	else
		PROBLEM("uname: %s", strerror(errno));

	/* not every architecture has "model name" (some only "Hardware" or "cpu model"): absent
	 * means unknown, not an error */
	free(p->cpu_model);
	p->cpu_model = proc_field("/proc/cpuinfo", "model name");
	if (!p->cpu_model)
		p->cpu_model = proc_field("/proc/cpuinfo", "Hardware");

	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	p->cpu_count = ncpu > 0 ? (unsigned)ncpu : 0;

	_cleanup_free_ char *mem = proc_field("/proc/meminfo", "MemTotal");
	unsigned long long kib;
	p->memory_bytes = 0;
	if (mem && sscanf(mem, "%llu kB", &kib) == 1)
		p->memory_bytes = (uint64_t)kib * 1024;
	else
		PROBLEM("cannot read MemTotal from '/proc/meminfo'");
#undef PROBLEM

	if (problems) {
		*err = TAKE_PTR(problems);
		return -1;
	}
	return 0;
}

char *result_dataset_text(const struct result_dataset *d)
{
	_cleanup_free_ char *spec =
	    d->spec ? json_dumps(d->spec, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY |
					      JSON_REAL_PRECISION(9))
		    : NULL;
	return xasprintf("%s%s%s%s%s", d->name ? d->name : "?", spec ? " " : "", spec ? spec : "",
			 d->manifest_sha256 ? ", manifest sha256 " : "",
			 d->manifest_sha256 ? d->manifest_sha256 : "");
}
