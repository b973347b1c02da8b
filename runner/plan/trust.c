/* SPDX-License-Identifier: MIT */
/*
 * What a plan may name, and what only the command line may (ferry(1) SECURITY). A plan may
 * come from a pull request and run as root in CI, so:
 *  - `connect:` names only a local libvirt URI without transport or parameters: transports
 *    (qemu+ssh, qemu+ext) and parameters (?command=, ?socket=) can make libvirt run programs;
 *  - ${VAR} reads FERRY_* variables, others only when --allow-env or --var names them, so a
 *    plan cannot copy a secret of the environment into names that flow into every report;
 *  - report paths stay below the working directory unless --allow-output names another place.
 * Each refusal is an error at the value, saying which option allows it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan-parse.h"
#include "env-subst.h"

#define VAR_PREFIX "FERRY_"

/* ---- ${VAR} ---- */

static const char *plan_lookup(void *ud, const char *name, char **why)
{
	const struct plan_options *o = ud;
	size_t n = strlen(name);

	for (size_t i = o->n_vars; i-- > 0;) /* the last --var of a name wins */
		if (!strncmp(o->vars[i], name, n) && o->vars[i][n] == '=')
			return o->vars[i] + n + 1;
	if (!strncmp(name, VAR_PREFIX, strlen(VAR_PREFIX)))
		return getenv(name);
	for (size_t i = 0; i < o->n_allow_env; i++)
		if (STREQ(o->allow_env[i], name))
			return getenv(name);
	*why = xasprintf("a plan may read only FERRY_* variables, not '%s' (allow it on the "
			 "command line with --allow-env %s or --var %s=VALUE)",
			 name, name, name);
	return NULL;
}

char *pl_value_text(struct ctx *c, const yaml_node_t *v)
{
	_cleanup_free_ char *err = NULL;
	char *s = env_subst_with(pl_scalar(v), plan_lookup, (void *)c->o, &err);
	if (!s)
		pl_err_node(c, v, "%s", err);
	return s;
}

/* ---- connect ---- */

/* "scheme:///system" or "scheme:///session" with a scheme of letters and digits (no
 * "+transport", no host, no "?parameters"), or the test driver's built-in "test:///default":
 * any other path names a file the driver reads (test:///etc/shadow loads /etc/shadow as XML and
 * quotes it in its error). */
static bool local_uri(const char *s)
{
	const char *p = s;
	while ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9'))
		p++;
	if (p == s || strncmp(p, ":///", 4))
		return false;
	p += 4;
	if (!strncmp(s, "test:", 5))
		return STREQ(p, "default");
	return STREQ(p, "system") || STREQ(p, "session");
}

/* ---- report paths ---- */

/* `path` made absolute (relative to the working directory) with "." and ".." resolved as
 * text; NULL when the working directory is unknown (resolved() below follows the links). */
static char *lexical_abs(const char *path)
{
	_cleanup_free_ char *cwd = path[0] == '/' ? xstrdup("") : getcwd(NULL, 0);
	if (!cwd)
		return NULL;
	_cleanup_free_ char *all = xasprintf("%s/%s", cwd, path);
	char *out = xmalloc(strlen(all) + 2);
	size_t n = 0;
	for (char *save = NULL, *part = strtok_r(all, "/", &save); part;
	     part = strtok_r(NULL, "/", &save)) {
		if (STREQ(part, "."))
			continue;
		if (STREQ(part, "..")) {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--; /* the slash */
			continue;
		}
		out[n++] = '/';
		size_t l = strlen(part);
		memcpy(out + n, part, l);
		n += l;
	}
	if (!n)
		out[n++] = '/';
	out[n] = '\0';
	return out;
}

/* Whether `path` (lexically absolute) is `dir` or below it. */
static bool below(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 1) /* "/" */
		return true;
	return !strncmp(path, dir, n) && (path[n] == '/' || !path[n]);
}

/*
 * `path` as the kernel resolves it: the longest prefix that exists through realpath() (every
 * symbolic link followed, "out -> /etc" becomes "/etc"), then the components that do not exist
 * yet, which may not hold "..". NULL when that fails: such a path is allowed nowhere.
 */
static char *resolved(const char *path)
{
	_cleanup_free_ char *head = xstrdup(*path ? path : ".");
	_cleanup_free_ char *tail = xstrdup("");
	for (;;) {
		char *r = realpath(head, NULL);
		if (r) {
			char *out = *tail ? xasprintf("%s%s%s", r, STREQ(r, "/") ? "" : "/", tail)
					  : xstrdup(r);
			free(r);
			return out;
		}
		if (errno != ENOENT)
			return NULL;
		char *slash = strrchr(head, '/');
		const char *leaf = slash ? slash + 1 : head;
		if (STREQ(leaf, ".."))
			return NULL;
		char *t = *leaf ? xasprintf("%s%s%s", leaf, *tail ? "/" : "", tail) : xstrdup(tail);
		free(tail);
		tail = t;
		if (!slash) {
			free(head);
			head = xstrdup(".");
		} else if (slash == head) {
			head[1] = '\0';
		} else {
			*slash = '\0';
		}
	}
}

/* Where path is against dir: below it lexically and as the kernel resolves both (symbolic
 * links in the working tree, say a committed "out -> /etc", lead nowhere outside). */
enum place { INSIDE, OUTSIDE, LINKED_OUT };

static enum place place_in(const char *path, const char *dir)
{
	_cleanup_free_ char *abs = lexical_abs(path), *dabs = lexical_abs(dir);
	if (!abs || !dabs || !below(abs, dabs))
		return OUTSIDE;
	_cleanup_free_ char *rp = resolved(path), *rd = resolved(dir);
	return rp && rd && below(rp, rd) ? INSIDE : LINKED_OUT;
}

static const char *const place_why[] = {
	[INSIDE] = "inside",
	[OUTSIDE] = "outside the working directory",
	[LINKED_OUT] = "reached through a symbolic link that leads out of the working directory",
};

static enum place allowed_output(const struct plan_options *o, const char *path)
{
	enum place p = place_in(path, ".");
	for (size_t i = 0; p != INSIDE && i < o->n_allow_output; i++)
		if (place_in(path, o->allow_output[i]) == INSIDE)
			p = INSIDE;
	return p;
}

static void check_report_path(struct ctx *c, const yaml_node_t *v, const char *key)
{
	if (!v || v->type != YAML_SCALAR_NODE || pl_is_null(v))
		return;
	/* the value as the walk read it (substituted); a faulty one was reported there */
	_cleanup_free_ char *err = NULL;
	_cleanup_free_ char *path = env_subst_with(pl_scalar(v), plan_lookup, (void *)c->o, &err);
	enum place where = path && *path && !STREQ(path, "-") ? allowed_output(c->o, path) : INSIDE;
	if (where == INSIDE)
		return;
	pl_err_node(c, v,
		    "report path '%s' is %s: a plan writes reports only below it (allow more on "
		    "the command line with --allow-output DIR, or name the file with --%s)",
		    path, place_why[where], key);
}

void pl_check_trust(struct ctx *c, const yaml_node_t *root)
{
	yaml_node_t *v = pl_lookup(c, root, "connect", NULL);
	if (v && v->type == YAML_SCALAR_NODE && !pl_is_null(v)) {
		_cleanup_free_ char *err = NULL;
		_cleanup_free_ char *uri =
		    env_subst_with(pl_scalar(v), plan_lookup, (void *)c->o, &err);
		if (uri && !local_uri(uri))
			pl_err_node(c, v,
				    "'connect: %s' is refused in a plan: a plan names only a local "
				    "URI without transport or parameters, such as 'qemu:///system' "
				    "(give this one on the command line with --connect)",
				    uri);
	}

	/* a baseline is read: a plan may name one only below the working directory (a results
	 * file elsewhere on the host is the command line's to name, with --baseline) */
	yaml_node_t *bl = pl_lookup(c, root, "baseline", NULL);
	if (bl && bl->type == YAML_SCALAR_NODE && !pl_is_null(bl)) {
		_cleanup_free_ char *err = NULL;
		_cleanup_free_ char *path =
		    env_subst_with(pl_scalar(bl), plan_lookup, (void *)c->o, &err);
		enum place where = path ? place_in(path, ".") : INSIDE;
		if (where != INSIDE)
			pl_err_node(c, bl,
				    "baseline '%s' is %s: a plan reads a baseline only below it "
				    "(name it on the command line with --baseline FILE)",
				    path, place_why[where]);
	}

	yaml_node_t *report = pl_lookup(c, root, "report", NULL);
	if (!report || report->type != YAML_MAPPING_NODE)
		return;
	for (int i = 0; i < REPORT_FORMAT_COUNT; i++) {
		const char *key = plan_report_keys.keys[i].name;
		yaml_node_t *rv = pl_lookup(c, report, key, NULL);
		if (rv && rv->type == YAML_MAPPING_NODE)
			rv = pl_lookup(c, rv, "path", NULL);
		check_report_path(c, rv, key);
	}
}
