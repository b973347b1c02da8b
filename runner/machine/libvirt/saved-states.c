/* SPDX-License-Identifier: MIT */
/* The saved states of one machine (saved-states.h). */
#include "saved-states.h"

#include <inttypes.h>
#include <string.h>

#include "cleanup.h"
#include "util.h"

struct saved_state {
	char *key;          /* the configuration: its domain XML under a fixed name */
	struct vm_saved *s; /* NULL: it boots instead, for why */
	char *why;
};

struct saved_states {
	struct saved_state *v;
	size_t n;
};

/* The configuration as a key: the domain XML of c under a fixed name and console path, and
 * the accelerator asked for (auto resolves the same way within a process). */
static char *config_key(const struct vm_config *c, char **err)
{
	struct vm_config k = *c;
	k.name = NULL;
	k.owner_run = NULL;
	k.restore = NULL;
	k.genid = true;
	_cleanup_free_ char *xml = vm_domain_xml(&k, "ferry-saved", false, "/dev/null", err);
	return xml ? xasprintf("%d\n%s", (int)c->accel, xml) : NULL;
}

/* Boot c, and save it once its agent answers. */
static struct vm_saved *save_new(struct run *run, virConnectPtr conn, const struct vm_config *c,
				 unsigned timeout_ms, size_t n, char **err)
{
	struct vm_config t = *c;
	t.genid = true;
	t.restore = NULL;
	struct vm *vm = NULL;
	if (vm_boot(run, conn, &t, timeout_ms, &vm, err) < 0)
		return NULL;
	_cleanup_free_ char *name = xasprintf("state-%zu.save", n + 1);
	_cleanup_free_ char *path = run_path(run, "saved", name);
	struct vm_saved *s = NULL;
	int rc = vm_save(vm, path, &s, err);
	vm_destroy(vm);
	return rc == 0 ? s : NULL;
}

const struct vm_saved *saved_state_for(struct saved_states **ss, struct run *run,
				       virConnectPtr conn, const struct vm_config *c, bool remote,
				       unsigned timeout_ms, char **why, bool *first)
{
	*first = false;
	_cleanup_free_ char *e = NULL;
	_cleanup_free_ char *key = config_key(c, &e);
	if (!key) {
		*why = TAKE_PTR(e);
		return NULL;
	}
	if (!*ss)
		*ss = xcalloc(1, sizeof(**ss));
	struct saved_states *s = *ss;
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i].key, key) == 0) {
			if (!s->v[i].s)
				*why = xstrdup(s->v[i].why);
			return s->v[i].s;
		}
	const char *no = vm_restore_unsupported(c, remote);
	struct vm_saved *st = no ? NULL : save_new(run, conn, c, timeout_ms, s->n, &e);
	s->v = xrealloc(s->v, (s->n + 1) * sizeof(*s->v));
	s->v[s->n++] = (struct saved_state){
		.key = TAKE_PTR(key),
		.s = st,
		.why = st   ? NULL
		       : no ? xstrdup(no)
			    : xasprintf("saving a booted guest failed: %s", e),
	};
	if (!st) {
		*why = xstrdup(s->v[s->n - 1].why);
		*first = true;
	}
	return st;
}

void saved_states_free(struct saved_states *ss)
{
	if (!ss)
		return;
	for (size_t i = 0; i < ss->n; i++) {
		vm_saved_free(ss->v[i].s);
		free(ss->v[i].key);
		free(ss->v[i].why);
	}
	free(ss->v);
	free(ss);
}
