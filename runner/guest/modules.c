/* SPDX-License-Identifier: MIT */
/*
 * Kernel modules: their .modinfo (name, depends=, alias=), the load order, modules.dep and
 * modules.alias for busybox modprobe, and extracting the wanted ones from the kernel package.
 */
#include <errno.h>

#include "guest-build.h"

/* ------------------------------------------------------------------------------------------ */
/* kernel modules */

/*
 * Dependencies come from each module's .modinfo "depends=" rather than from `busybox depmod` +
 * modules.dep: the .deb ships no modules.dep, and reading one ELF section while the package is
 * streamed needs neither an unpacked tree on disk nor running a program from the package.
 */
int guest_modinfo_parse(const unsigned char *ko, size_t len, struct guest_module *m, char **err)
{
	size_t size = 0, ndeps = 0, cap = 0, naliases = 0, acap = 0;
	const unsigned char *s = elf_section(ko, len, ".modinfo", &size);

	memset(m, 0, sizeof(*m));
	if (!s)
		return guest_err(err, -EINVAL, "no .modinfo section");
	for (size_t off = 0; off < size;) {
		const char *str = (const char *)s + off;
		size_t l = strnlen(str, size - off);
		if (has_prefix(str, "name=") && !m->name) {
			m->name = xstrndup(str + 5, l - 5);
		} else if (has_prefix(str, "alias=") && l > 6) {
			m->aliases = xgrow(m->aliases, &acap, naliases + 2, sizeof(char *));
			m->aliases[naliases++] = xstrndup(str + 6, l - 6);
			m->aliases[naliases] = NULL;
		} else if (has_prefix(str, "depends=")) {
			const char *d = str + 8, *e = str + l;
			while (d < e) {
				size_t k = strcspn(d, ",");
				if ((size_t)(e - d) < k)
					k = (size_t)(e - d);
				if (k > 0) {
					m->deps = xgrow(m->deps, &cap, ndeps + 2, sizeof(char *));
					m->deps[ndeps++] = xstrndup(d, k);
				}
				d += k + 1;
			}
		}
		off += l + 1;
	}
	if (!m->deps)
		m->deps = xcalloc(1, sizeof(char *));
	m->deps[ndeps] = NULL;
	for (size_t i = 0; m->name && m->name[i]; i++)
		if (m->name[i] == '-')
			m->name[i] = '_';
	return 0;
}

void guest_module_clear(struct guest_module *m)
{
	free(m->name);
	free(m->path);
	for (size_t i = 0; m->deps && m->deps[i]; i++)
		free(m->deps[i]);
	free(m->deps);
	for (size_t i = 0; m->aliases && m->aliases[i]; i++)
		free(m->aliases[i]);
	free(m->aliases);
	memset(m, 0, sizeof(*m));
}

static ssize_t module_index(const struct guest_module *mods, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		const char *a = mods[i].name, *b = name;
		/* module names compare with '-' and '_' equal, like modprobe */
		while (*a && *b &&
		       (*a == *b || ((*a == '-' || *a == '_') && (*b == '-' || *b == '_'))))
			a++, b++;
		if (!*a && !*b)
			return (ssize_t)i;
	}
	return -1;
}

enum { UNSEEN, VISITING, DONE };

static int order_visit(const struct guest_module *mods, size_t nmods, size_t i, char *state,
		       size_t *order, size_t *norder, char **err)
{
	if (state[i] == DONE)
		return 0;
	if (state[i] == VISITING)
		return guest_err(err, -ELOOP, "module dependency cycle through '%s'", mods[i].name);
	state[i] = VISITING;
	for (size_t d = 0; mods[i].deps && mods[i].deps[d]; d++) {
		ssize_t j = module_index(mods, nmods, mods[i].deps[d]);
		if (j < 0)
			return guest_err(err, -ENOENT, "module '%s' needed by '%s' not found",
					 mods[i].deps[d], mods[i].name);
		int r = order_visit(mods, nmods, (size_t)j, state, order, norder, err);
		if (r < 0)
			return r;
	}
	state[i] = DONE;
	order[(*norder)++] = i;
	return 0;
}

int guest_module_order(const struct guest_module *mods, size_t nmods, const char *const *wanted,
		       size_t nwanted, size_t **order, size_t *norder, char **err)
{
	_cleanup_free_ char *state = xcalloc(nmods ? nmods : 1, 1);
	_cleanup_free_ size_t *o = xcalloc(nmods ? nmods : 1, sizeof(size_t));
	size_t n = 0;

	for (size_t w = 0; w < nwanted; w++) {
		ssize_t i = module_index(mods, nmods, wanted[w]);
		if (i < 0)
			return guest_err(err, -ENOENT, "module '%s' not found", wanted[w]);
		int r = order_visit(mods, nmods, (size_t)i, state, o, &n, err);
		if (r < 0)
			return r;
	}
	*order = TAKE_PTR(o);
	*norder = n;
	return 0;
}

/* A module's bytes as the guest's insmod needs them: decompressed when the package ships .ko.xz
 * (this Debian 6.1 kernel ships plain .ko, later ones compress). */
static int module_bytes(struct archive *a, struct archive_entry *e, const char *path,
			unsigned char **data, size_t *len, char **err)
{
	int r = entry_read_all(a, e, data, len, err);
	if (r < 0 || !has_suffix(path, ".ko.xz"))
		return r;
	unsigned char *plain;
	size_t plen;
	r = guest_xz_decompress(*data, *len, &plain, &plen, err);
	free(*data);
	*data = NULL;
	if (r < 0)
		return guest_err(err, r, "module '%s': %s", path, *err);
	*data = plain;
	*len = plen;
	return 0;
}

static int kernel_pass1(void *ud, struct archive *a, struct archive_entry *e, const char *path,
			char **err)
{
	struct build *b = ud;
	_cleanup_free_ char *vmlinuz = xasprintf("boot/vmlinuz-%s", b->kver);
	_cleanup_free_ char *moddir = xasprintf("lib/modules/%s/", b->kver);

	if (archive_entry_filetype(e) != AE_IFREG)
		return 0;
	if (STREQ(path, vmlinuz))
		return entry_read_all(a, e, &b->vmlinuz, &b->vmlinuz_len, err);
	if (!has_prefix(path, moddir) || !(has_suffix(path, ".ko") || has_suffix(path, ".ko.xz")))
		return 0;

	_cleanup_free_ unsigned char *data = NULL;
	size_t len;
	int r = module_bytes(a, e, path, &data, &len, err);
	if (r < 0)
		return r;
	struct guest_module m;
	r = guest_modinfo_parse(data, len, &m, err);
	if (r < 0)
		return guest_err(err, r, "module '%s': %s", path, *err);
	m.path = xstrdup(path + strlen(moddir));
	m.compressed = has_suffix(path, ".xz");
	if (!m.name) {
		const char *base = strrchr(path, '/') + 1;
		m.name = xstrndup(base, strcspn(base, "."));
		for (char *c = m.name; *c; c++)
			if (*c == '-')
				*c = '_';
	}
	b->mods = xgrow(b->mods, &b->capmods, b->nmods + 1, sizeof(*b->mods));
	b->mods[b->nmods++] = m;
	return 0;
}

static int kernel_pass2(void *ud, struct archive *a, struct archive_entry *e, const char *path,
			char **err)
{
	struct build *b = ud;
	_cleanup_free_ char *moddir = xasprintf("lib/modules/%s/", b->kver);

	if (archive_entry_filetype(e) != AE_IFREG || !has_prefix(path, moddir))
		return 0;
	const char *rel = path + strlen(moddir);
	for (size_t i = 0; i < b->nneed; i++) {
		if (!STREQ(b->need[i], rel))
			continue;
		unsigned char *data;
		size_t len;
		int r = module_bytes(a, e, path, &data, &len, err);
		if (r < 0)
			return r;
		_cleanup_free_ char *dest = xstrdup(path);
		if (has_suffix(dest, ".xz"))
			dest[strlen(dest) - 3] = '\0';
		tree_add_file_take(&b->tree, dest, 0644, data, len);
		/* stop decompressing the package once every module is out */
		return ++b->found == b->nneed ? 1 : 0;
	}
	return 0;
}

/* One modules.dep line in depmod's format: the module, then every module it needs, transitively,
 * the one to load last first (modprobe loads them from the end). */
static int dep_line(const struct build *b, size_t mi, char **line, char **err)
{
	const char *name = b->mods[mi].name;
	size_t *order = NULL, n = 0;
	int r = guest_module_order(b->mods, b->nmods, &name, 1, &order, &n, err);

	if (r < 0)
		return r;
	char *l = xasprintf("%s:", b->mods[mi].path);
	for (size_t i = n - 1; i-- > 0;) {
		char *t = xasprintf("%s %s", l, b->mods[order[i]].path);
		free(l);
		l = t;
	}
	free(order);
	*line = l;
	return 0;
}

int add_kernel(struct build *b, const struct pkg *kpkg, char **err)
{
	int r;
	size_t *order = NULL, norder = 0, nboot = 0;
	const char *wanted[ELEMENTSOF(guest_modules_boot) + ELEMENTSOF(guest_modules_later)];

	build_progress(b, "reading modules of %s %s", kpkg->name, kpkg->version);
	r = deb_walk(kpkg->deb, kernel_pass1, b, err);
	if (r < 0)
		return r;
	if (!b->vmlinuz)
		return guest_err(err, -ENOENT, "'%s' holds no boot/vmlinuz-%s", kpkg->deb, b->kver);
	/* the modules are written without .xz: modprobe and the lists name them so */
	for (size_t i = 0; i < b->nmods; i++)
		if (has_suffix(b->mods[i].path, ".xz"))
			b->mods[i].path[strlen(b->mods[i].path) - 3] = '\0';

	/* one order over both lists, so the boot set is a prefix of it */
	memcpy(wanted, guest_modules_boot, sizeof(guest_modules_boot));
	memcpy(wanted + ELEMENTSOF(guest_modules_boot), guest_modules_later,
	       sizeof(guest_modules_later));
	r = guest_module_order(b->mods, b->nmods, guest_modules_boot,
			       ELEMENTSOF(guest_modules_boot), &order, &nboot, err);
	free(order);
	if (r >= 0)
		r = guest_module_order(b->mods, b->nmods, wanted, ELEMENTSOF(wanted), &order,
				       &norder, err);
	if (r < 0)
		return r;

	_cleanup_free_ char *boot = NULL, *later = NULL, *dep = NULL, *alias = NULL;
	b->modules = json_array();
	b->modules_boot = json_array();
	b->need = xcalloc(norder ? norder : 1, sizeof(char *));
	for (size_t i = 0; i < norder && r >= 0; i++) {
		const struct guest_module *m = &b->mods[order[i]];
		_cleanup_free_ char *line = NULL;
		guest_append(i < nboot ? &boot : &later, "/lib/modules/%s/%s\n", b->kver, m->path);
		json_array_append_new(b->modules, json_string(m->name));
		if (i < nboot)
			json_array_append_new(b->modules_boot, json_string(m->name));
		r = dep_line(b, order[i], &line, err);
		if (r >= 0)
			guest_append(&dep, "%s\n", line);
		for (size_t k = 0; m->aliases && m->aliases[k]; k++)
			guest_append(&alias, "alias %s %s\n", m->aliases[k], m->name);
		b->need[b->nneed++] = xasprintf(
		    "%s%s", m->path, has_suffix(m->path, ".ko") && m->compressed ? ".xz" : "");
	}
	free(order);
	if (r < 0)
		return r;
	_cleanup_free_ char *depf = xasprintf("lib/modules/%s/modules.dep", b->kver);
	_cleanup_free_ char *aliasf = xasprintf("lib/modules/%s/modules.alias", b->kver);
	guest_tree_add_file(&b->tree, "etc/modules.load", 0644, boot, boot ? strlen(boot) : 0);
	guest_tree_add_file(&b->tree, "etc/modules.later", 0644, later, later ? strlen(later) : 0);
	guest_tree_add_file(&b->tree, depf, 0644, dep, dep ? strlen(dep) : 0);
	guest_tree_add_file(&b->tree, aliasf, 0644, alias, alias ? strlen(alias) : 0);

	build_progress(b, "extracting %zu modules", b->nneed);
	r = deb_walk(kpkg->deb, kernel_pass2, b, err);
	if (r < 0)
		return r;
	if (b->found != b->nneed)
		return guest_err(err, -ENOENT, "only %zu of %zu modules found in '%s'", b->found,
				 b->nneed, kpkg->deb);
	return 0;
}
