/* SPDX-License-Identifier: MIT */
/*
 * The guest's Debian packages: resolve the candidate versions with apt-cache, download the .debs
 * with apt-get (never installed into the host), check them against apt's SHA-256.
 */
#include <errno.h>

#include "guest-build.h"
#include "hash.h"
#include "proc.h"

/* ---- child processes: argv only, never a shell (proc_spawn()) ---- */

int guest_run(char *const argv[], const char *cwd, char **out, char **err)
{
	/* apt prints progress bars and asks nothing when it sees no terminal; keep its messages in
	 * English so they read the same in our errors */
	static const char *const env[] = { "LC_ALL=C", NULL };
	const struct proc_opts opts = { .cwd = cwd, .env = env, .split_stderr = true };
	struct proc_result res;
	_cleanup_free_ char *spawn_err = NULL;

	if (proc_spawn((const char *const *)argv, &opts, &res, &spawn_err) < 0)
		return guest_err(err, -ENOEXEC, "%s", spawn_err);
	if (res.status == 0) {
		if (out)
			*out = TAKE_PTR(res.out);
		proc_result_clear(&res);
		return 0;
	}
	_cleanup_free_ char *line = proc_last_line(res.errout, strlen(res.errout));
	int r = res.status < 0
		    ? guest_err(err, -EINTR, "'%s' was killed by signal %d", argv[0], res.signal)
		    : guest_err(err, -EIO, "'%s %s' failed (exit %d): %s", argv[0],
				argv[1] ? argv[1] : "", res.status, line);
	proc_result_clear(&res);
	return r;
}

/* ---- Debian packages: resolve with apt-cache, download with apt-get ---- */

void pkg_list_clear(struct pkg_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		struct pkg *p = &l->items[i];
		free(p->name);
		free(p->version);
		free(p->arch);
		free(p->sha256);
		free(p->depends);
		free(p->deb);
	}
	free(l->items);
	memset(l, 0, sizeof(*l));
}

struct pkg *pkg_find(struct pkg_list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (STREQ(l->items[i].name, name))
			return &l->items[i];
	return NULL;
}

/* Value of "Field: value" in one control stanza [s, e), malloc'ed, or NULL. */
static char *stanza_field(const char *s, const char *e, const char *field)
{
	size_t fl = strlen(field);
	for (const char *l = s; l < e;) {
		const char *nl = memchr(l, '\n', (size_t)(e - l));
		const char *le = nl ? nl : e;
		if ((size_t)(le - l) > fl + 1 && memcmp(l, field, fl) == 0 && l[fl] == ':') {
			const char *v = l + fl + 1;
			while (v < le && *v == ' ')
				v++;
			return xstrndup(v, (size_t)(le - v));
		}
		l = le + 1;
	}
	return NULL;
}

/* `apt-cache show --no-all-versions NAME...`: the candidate version of each package. */
static int apt_show(struct pkg_list *l, const char *const *names, size_t n, char **err)
{
	_cleanup_free_ char **argv = xcalloc(n + 4, sizeof(char *));
	_cleanup_free_ char *out = NULL;
	size_t k = 0;
	int r;

	argv[k++] = (char *)"apt-cache";
	argv[k++] = (char *)"show";
	argv[k++] = (char *)"--no-all-versions";
	for (size_t i = 0; i < n; i++)
		argv[k++] = (char *)names[i];
	argv[k] = NULL;
	r = guest_run(argv, NULL, &out, err);
	if (r < 0)
		return r;

	for (const char *s = out; *s;) {
		const char *e = strstr(s, "\n\n");
		e = e ? e + 1 : s + strlen(s);
		_cleanup_free_ char *name = stanza_field(s, e, "Package");
		if (name && !pkg_find(l, name)) {
			struct pkg p = { 0 };
			p.name = TAKE_PTR(name);
			p.version = stanza_field(s, e, "Version");
			p.arch = stanza_field(s, e, "Architecture");
			p.sha256 = stanza_field(s, e, "SHA256");
			p.depends = stanza_field(s, e, "Depends");
			if (!p.version || !p.arch || !p.sha256) {
				r = guest_err(err, -EINVAL,
					      "apt-cache show gives no version, architecture or "
					      "SHA256 for '%s'",
					      p.name);
				l->items = xgrow(l->items, &l->cap, l->n + 1, sizeof(*l->items));
				l->items[l->n++] = p;
				return r;
			}
			l->items = xgrow(l->items, &l->cap, l->n + 1, sizeof(*l->items));
			l->items[l->n++] = p;
		}
		s = e;
		while (*s == '\n')
			s++;
	}
	for (size_t i = 0; i < n; i++)
		if (!pkg_find(l, names[i]))
			return guest_err(err, -ENOENT,
					 "package '%s' is not known to apt (run 'apt-get update')",
					 names[i]);
	return 0;
}

/* A dependency graph as `apt-cache depends --recurse` prints it. */
struct dep_graph {
	char **from, **to; /* edge i: from[i] depends on to[i] (first alternative only) */
	size_t n, cap, cap2;
};

static void dep_graph_clear(struct dep_graph *g)
{
	strv_free(g->from, g->n);
	strv_free(g->to, g->n);
	memset(g, 0, sizeof(*g));
}

static void dep_graph_parse(struct dep_graph *g, char *text)
{
	_cleanup_free_ char *cur = NULL;
	bool in_alt = false;

	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		if (line[0] != ' ') {
			free(cur);
			cur = xstrdup(line);
			in_alt = false;
			continue;
		}
		char *d = strstr(line, "Depends: ");
		if (!d || !cur)
			continue;
		/* " |Depends: a" then "  Depends: b" means "a | b": keep a; "<x>" is virtual */
		bool alt = d > line && d[-1] == '|';
		if (!in_alt && d[9] != '<') {
			g->from = xgrow(g->from, &g->cap, g->n + 1, sizeof(char *));
			g->to = xgrow(g->to, &g->cap2, g->n + 1, sizeof(char *));
			g->from[g->n] = xstrdup(cur);
			g->to[g->n++] = xstrdup(d + 9);
		}
		in_alt = alt;
	}
}

/*
 * Resolve every package: the kernel the `linux-image-amd64` metapackage depends on (the generic
 * flavour, not -cloud-: that one lacks 9p and AHCI), busybox-static, qemu-guest-agent, the
 * packages of guest_tools and the closure of their library packages (guest_lib_package():
 * dependencies named lib*, Debian's naming for shared libraries, and zlib1g). Two apt-cache runs:
 * each costs about a second where apt keeps no binary cache.
 */
int resolve_packages(struct pkg_list *l, char **kernel_pkg, char **err)
{
	char *argv[] = { (char *)"apt-cache",
			 (char *)"depends",
			 (char *)"--recurse",
			 (char *)"--no-recommends",
			 (char *)"--no-suggests",
			 (char *)"--no-conflicts",
			 (char *)"--no-breaks",
			 (char *)"--no-replaces",
			 (char *)"--no-enhances",
			 (char *)"--no-pre-depends",
			 (char *)"linux-image-amd64",
			 (char *)"qemu-guest-agent",
			 (char *)"dropbear-bin",
			 (char *)"openssh-client",
			 (char *)"rsync",
			 NULL };
	_cleanup_free_ char *out = NULL;
	struct dep_graph g = { 0 };
	char **names = NULL;
	size_t n = 0, cap = 0;
	int r = guest_run(argv, NULL, &out, err);

	if (r < 0)
		return r;
	dep_graph_parse(&g, out);
	for (size_t i = 0; i < g.n && n == 0; i++) {
		const char *t = g.to[i];
		if (STREQ(g.from[i], "linux-image-amd64") && has_prefix(t, "linux-image-") &&
		    t[12] >= '0' && t[12] <= '9' && has_suffix(t, "-amd64") &&
		    !strstr(t, "-cloud-")) {
			names = xgrow(names, &cap, n + 1, sizeof(char *));
			names[n++] = xstrdup(t);
		}
	}
	if (n == 0) {
		dep_graph_clear(&g);
		return guest_err(err, -ENOENT,
				 "'linux-image-amd64' depends on no generic kernel package (run "
				 "'apt-get update')");
	}
	names = xgrow(names, &cap, n + 1, sizeof(char *));
	names[n++] = xstrdup("busybox-static");
	size_t first = n;
	/* the agent and the packages of guest_tools (guest-build.h) */
	names = xgrow(names, &cap, n + 1, sizeof(char *));
	names[n++] = xstrdup("qemu-guest-agent");
	for (size_t i = 0; i < ELEMENTSOF(guest_tools); i++) {
		bool dup = false;
		for (size_t k = first; k < n && !dup; k++)
			dup = STREQ(names[k], guest_tools[i].package);
		if (!dup) {
			names = xgrow(names, &cap, n + 1, sizeof(char *));
			names[n++] = xstrdup(guest_tools[i].package);
		}
	}
	/* breadth first from them over library packages */
	for (size_t q = first; q < n; q++) {
		for (size_t i = 0; i < g.n; i++) {
			if (!STREQ(g.from[i], names[q]) || !guest_lib_package(g.to[i]))
				continue;
			bool dup = false;
			for (size_t k = 0; k < n && !dup; k++)
				dup = STREQ(names[k], g.to[i]);
			if (!dup) {
				names = xgrow(names, &cap, n + 1, sizeof(char *));
				names[n++] = xstrdup(g.to[i]);
			}
		}
	}
	dep_graph_clear(&g);
	r = apt_show(l, (const char *const *)names, n, err);
	if (r >= 0)
		*kernel_pkg = xstrdup(names[0]);
	strv_free(names, n);
	return r;
}

/* The file name `apt-get download` gives a package: name_version_arch.deb, ':' as %3a. */
static char *deb_file_name(const struct pkg *p)
{
	size_t len = strlen(p->version);
	_cleanup_free_ char *v = xmalloc(3 * len + 1);
	char *o = v;
	for (const char *s = p->version; *s; s++) {
		if (*s == ':') {
			memcpy(o, "%3a", 3);
			o += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
	return xasprintf("%s_%s_%s.deb", p->name, v, p->arch);
}

/* Is the .deb there with the SHA-256 apt's index gives? */
static bool deb_ok(const struct pkg *p)
{
	char hex[SHA256_HEX];
	if (access(p->deb, R_OK) < 0)
		return false;
	if (sha256_file_hex(p->deb, hex, NULL) < 0)
		return false;
	return STREQ(hex, p->sha256);
}

int download_packages(struct pkg_list *l, const char *debdir, guest_progress_fn progress, void *ud,
		      char **err)
{
	_cleanup_free_ char **argv = xcalloc(l->n + 6, sizeof(char *));
	_cleanup_free_ char **specs = xcalloc(l->n + 1, sizeof(char *));
	size_t k = 0, nspec = 0;
	int r;

	argv[k++] = (char *)"apt-get";
	argv[k++] = (char *)"download";
	argv[k++] = (char *)"-q";
	if (geteuid() == 0) {
		/* apt drops to user _apt for downloads, which cannot write into a root-owned cache
		 * directory; the files are checked against the index's SHA-256 afterwards anyway */
		argv[k++] = (char *)"-o";
		argv[k++] = (char *)"APT::Sandbox::User=root";
	}
	for (size_t i = 0; i < l->n; i++) {
		struct pkg *p = &l->items[i];
		_cleanup_free_ char *fn = deb_file_name(p);
		free(p->deb);
		p->deb = xasprintf("%s/%s", debdir, fn);
		if (deb_ok(p))
			continue;
		unlink(p->deb);
		specs[nspec] = xasprintf("%s=%s", p->name, p->version);
		argv[k++] = specs[nspec++];
	}
	argv[k] = NULL;
	if (nspec == 0)
		return 0;
	if (progress) {
		_cleanup_free_ char *m =
		    xasprintf("downloading %zu packages into %s", nspec, debdir);
		progress(ud, m);
	}
	r = guest_run(argv, debdir, NULL, err);
	for (size_t i = 0; i < nspec; i++)
		free(specs[i]);
	if (r < 0)
		return r;
	for (size_t i = 0; i < l->n; i++) {
		struct pkg *p = &l->items[i];
		chmod(p->deb, 0644);
		if (!deb_ok(p))
			return guest_err(err, -EIO,
					 "downloaded '%s' is missing or does not match the SHA-256 "
					 "of apt's index",
					 p->deb);
	}
	return 0;
}
