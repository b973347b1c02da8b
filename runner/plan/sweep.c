/* SPDX-License-Identifier: MIT */
/*
 * Sweeps (ferry(1) MATRIX EXPANSION, Sweeps): a matrix key "AXIS.KEY" such as "disk.cache" or
 * "vm.nic.queues" makes a key of the vm, disk, dataset or method entries an axis of the matrix,
 * and include and exclude entries name it like any axis. A value is checked with the entry's own
 * key table when it is read (the messages and limits of the key written in the entry) and kept
 * in the key's canonical spelling, so "1024KiB" and "1MiB" are one value and one cell id.
 *
 * plan_expand() then resolves, for every cell, each entry with the cell's swept keys applied,
 * checks it as if it had been written so (the key applies to the entry's type; the rules
 * table's entry rules), and attaches the resolved entries to the matrix, where plan_cell()
 * finds them. Cells with equal swept values share one resolved entry.
 */
#include <string.h>

#include "plan-parse.h"
#include "strmap.h"

/* the entry rules' scopes are the axes, in the same order */
_Static_assert((int)RULE_VM == (int)PLAN_AXIS_VM && (int)RULE_DISK == (int)PLAN_AXIS_DISK &&
		   (int)RULE_DATASET == (int)PLAN_AXIS_DATASET &&
		   (int)RULE_METHOD == (int)PLAN_AXIS_METHOD,
	       "rule scopes follow the axes");

static const struct key_table *entry_table(enum plan_axis a)
{
	static const struct key_table *const t[PLAN_N_AXES] = { &plan_vm_keys, &plan_disk_keys,
								&plan_dataset_keys,
								&plan_method_keys };
	return t[a];
}

static size_t entry_size(enum plan_axis a)
{
	static const size_t z[PLAN_N_AXES] = { sizeof(struct plan_vm), sizeof(struct plan_disk),
					       sizeof(struct plan_dataset),
					       sizeof(struct plan_method) };
	return z[a];
}

static bool scalar(enum key_type t)
{
	return t == KEY_STRING || t == KEY_BOOL || t == KEY_UINT || t == KEY_FLOAT ||
	       t == KEY_SIZE || t == KEY_DURATION || t == KEY_PERCENT || t == KEY_QUANTITY ||
	       t == KEY_ENUM;
}

bool pl_is_sweep(const char *name)
{
	return strchr(name, '.') != NULL;
}

/* "'P.a', 'P.b' or 'P.c'": the keys of `t` (and of its variants) under prefix P */
static char *key_list(const char *prefix, const struct key_table *t)
{
	const char *names[256];
	size_t nk = key_names(t, names, ELEMENTSOF(names));
	char *s = xstrdup("");
	for (size_t i = 0; i < nk; i++) {
		char *n = xasprintf("%s%s'%s%s'", s,
				    i == 0        ? ""
				    : i + 1 == nk ? " or "
						  : ", ",
				    prefix, names[i]);
		free(s);
		s = n;
	}
	return s;
}

static int bad_axis(const char *name, const char *axis, const char *rest, char **err)
{
	static const char *const axes[] = { "vm", "disk", "dataset", "method" };
	const char *hint = closest_match(axis, axes, ELEMENTSOF(axes));
	if (hint)
		*err = xasprintf("unknown axis '%s' in sweep '%s' (did you mean '%s.%s'?)", axis,
				 name, hint, rest);
	else
		*err =
		    xasprintf("unknown axis '%s' in sweep '%s' (a sweep names a key of an entry: "
			      "vm.KEY, disk.KEY, dataset.KEY or method.KEY)",
			      axis, name);
	return -1;
}

/* The last key of the path resolved: is it one a sweep can set? */
static int check_leaf(const char *name, const struct key_def *k, char **err)
{
	if (scalar(k->type) || (k->type == KEY_MAPPING && k->shorthand))
		return 0;
	if (k->type == KEY_MAPPING) {
		_cleanup_free_ char *prefix = xasprintf("%s.", name);
		_cleanup_free_ char *list = key_list(prefix, k->sub);
		*err = xasprintf("'%s' is a mapping: sweep one of its keys (%s)", name, list);
	} else {
		*err = xasprintf("'%s' cannot be swept: a sweep sets a single value", name);
	}
	return -1;
}

int pl_sweep_resolve(const char *name, struct sweep_key *sk, char **err)
{
	memset(sk, 0, sizeof(*sk));
	const char *dot = strchr(name, '.');
	_cleanup_free_ char *axis = xstrndup(name, (size_t)(dot - name));
	int a = pl_axis_from_name(axis);
	if (a < 0)
		return bad_axis(name, axis, dot + 1, err);
	sk->axis = (enum plan_axis)a;
	const struct key_table *t = entry_table(sk->axis);
	for (const char *seg = dot + 1;;) {
		const char *end = strchr(seg, '.');
		_cleanup_free_ char *s = end ? xstrndup(seg, (size_t)(end - seg)) : xstrdup(seg);
		_cleanup_free_ char *prefix = xstrndup(name, (size_t)(seg - name));
		const struct key_table *owner = t;
		/* below the entry: the keys of the entry's own table or of one of its variants */
		const struct key_def *k =
		    sk->n == 0 ? key_find_any(t, -1, s, &owner) : key_find(t, s);
		if (!k) {
			const char *hint = *s ? key_suggest(t, s) : NULL;
			_cleanup_free_ char *list = key_list(prefix, t);
			if (hint)
				*err = xasprintf("unknown key '%s' in sweep '%s' (did you mean "
						 "'%s%s'?)",
						 s, name, prefix, hint);
			else
				*err = xasprintf("unknown key '%s' in sweep '%s' (expected %s)", s,
						 name, list);
			return -1;
		}
		if (t->discriminator && STREQ(k->name, t->discriminator)) {
			*err = xasprintf("'%s' cannot be swept: it decides which keys apply (list "
					 "one %s per %s in 'matrix.%s')",
					 name, plan_axis_name(sk->axis), k->name,
					 plan_axis_name(sk->axis));
			return -1;
		}
		if (sk->n == SWEEP_MAX_DEPTH || (end && k->type != KEY_MAPPING)) {
			*err = xasprintf("unknown key '%s' in sweep '%s' ('%s%s' has no keys)",
					 end + 1, name, prefix, s);
			return -1;
		}
		sk->variant |= owner != t;
		sk->table[sk->n] = owner;
		sk->key[sk->n++] = k;
		if (!end)
			return check_leaf(name, k, err);
		t = k->sub;
		seg = end + 1;
	}
}

/* Set the leaf key of `sk` in `obj`, the leaf's own struct (a shorthand mapping: every key
 * the shorthand sets, under the name written). */
static int set_leaf(const struct sweep_key *sk, void *obj, const char *text, char **err)
{
	const struct key_def *k = sk->key[sk->n - 1];
	if (k->type != KEY_MAPPING) {
		if (key_set_scalar(k, obj, text, err) < 0)
			return -1;
		key_mark_set(sk->table[sk->n - 1], obj, k);
		return 0;
	}
	void *sub = (char *)obj + k->offset;
	for (size_t i = 0; k->shorthand[i]; i++) {
		struct key_def named = *key_find(k->sub, k->shorthand[i]);
		named.name = k->name; /* reported under the key written, as in an entry */
		if (key_set_scalar(&named, sub, text, err) < 0)
			return -1;
		key_mark_set(k->sub, sub, key_find(k->sub, k->shorthand[i]));
	}
	key_mark_set(sk->table[sk->n - 1], obj, k);
	return 0;
}

int pl_sweep_value(const struct sweep_key *sk, const char *text, char **canon, char **err)
{
	/* scratch room for the leaf's struct: every table's struct fits in one of these */
	union {
		struct plan_vm vm;
		struct plan_disk disk;
		struct plan_dataset dataset;
		struct plan_method method;
	} u;
	const struct key_def *k = sk->key[sk->n - 1];
	const struct key_table *t = sk->table[sk->n - 1];

	memset(&u, 0, sizeof(u));
	int r = set_leaf(sk, &u, text, err);
	if (r == 0)
		*canon = k->type == KEY_MAPPING ? key_value_text(key_find(k->sub, k->shorthand[0]),
								 (const char *)&u + k->offset)
						: key_value_text(k, &u);
	key_free(t, &u);
	return r;
}

/* ---- resolving cells ------------------------------------------------------------------------ */

struct resolved {
	enum plan_axis axis;
	char *key; /* the strmap's key: axis, entry name and swept pairs */
	struct plan_entry *e;
};

struct sweep_set {
	struct strmap index;
	struct resolved *v;
	size_t n, cap;
	uint32_t *cell;     /* per cell and axis: index into v plus one, 0: the entry as written */
	struct strmap msgs; /* messages reported, once each */
	char **msg;
	size_t n_msg, cap_msg;
};

static void sweep_set_free(void *data)
{
	struct sweep_set *s = data;
	if (!s)
		return;
	strmap_free(&s->index);
	strmap_free(&s->msgs);
	for (size_t i = 0; i < s->n; i++) {
		key_free(entry_table(s->v[i].axis), s->v[i].e);
		free(s->v[i].e->name);
		free(s->v[i].e->sweep);
		free(s->v[i].e);
		free(s->v[i].key);
	}
	for (size_t i = 0; i < s->n_msg; i++)
		free(s->msg[i]);
	free(s->msg);
	free(s->v);
	free(s->cell);
	free(s);
}

/* ',', '=', '%' and control bytes as %XX, as in cell ids (matrix.h) */
static void append_enc(char **out, const char *s)
{
	size_t n = strlen(*out);
	char *o = xrealloc(*out, n + 3 * strlen(s) + 1);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == ',' || ch == '=' || ch == '%' || ch < 0x20 || ch == 0x7f)
			n += (size_t)sprintf(o + n, "%%%02X", ch);
		else
			o[n++] = (char)ch;
	}
	o[n] = 0;
	*out = o;
}

/* SEP key=value, each encoded */
static void append_pair(char **out, const char *sep, const char *k, const char *v)
{
	char *o = xasprintf("%s%s", *out, sep);
	free(*out);
	*out = o;
	append_enc(out, k);
	o = xasprintf("%s=", *out);
	free(*out);
	*out = o;
	append_enc(out, v);
}

/* Where the cell's value of `key` is set: its axis, else the last include entry naming it. */
static struct plan_pos param_pos(const struct plan *p, const struct matrix *m, size_t cell,
				 const char *key)
{
	const struct matrix_def *d = &p->matrix;
	struct plan_pos at = { p->matrix_file, p->matrix_pos.line, p->matrix_pos.col };
	for (size_t i = 0; i < d->n_axes; i++)
		if (STREQ(d->axes[i].name, key)) {
			at.line = d->axes[i].line;
			at.col = d->axes[i].col;
			return at;
		}
	size_t n = 0;
	const size_t *inc = matrix_cell_includes(m, cell, &n);
	for (size_t j = n; j-- > 0;) {
		const struct matrix_entry *e = &d->include[inc[j]];
		for (size_t k = 0; k < e->n_kv; k++)
			if (STREQ(e->kv[k].key, key) && e->kv[k].line) {
				at.line = e->kv[k].line;
				at.col = e->kv[k].col;
				return at;
			}
	}
	return at;
}

struct check {
	struct sweep_set *s;
	const struct plan *p;
	const struct matrix *m;
	size_t cell;
	enum plan_axis axis;
	const size_t *params; /* the cell's params of this axis */
	size_t n_params;
	struct diag_list *diags;
	size_t errors;
};

/* Report `msg` (owned) once, at the swept key `key` names (a key path in the entry), else at
 * the first swept key of the entry. */
static void report(struct check *c, const char *key, char *msg)
{
	if (strmap_put(&c->s->msgs, msg, 0, 0) != STRMAP_NONE) {
		free(msg);
		return;
	}
	c->s->msg = xgrow(c->s->msg, &c->s->cap_msg, c->s->n_msg + 1, sizeof(*c->s->msg));
	c->s->msg[c->s->n_msg++] = msg;
	size_t at = c->params[0];
	size_t prefix = strlen(plan_axis_name(c->axis)) + 1;
	for (size_t i = 0; key && i < c->n_params; i++) {
		const char *k = matrix_cell_key(c->m, c->cell, c->params[i]) + prefix;
		size_t n = strlen(k);
		/* the swept key itself, or a mapping above it ("size" for "size.min") */
		if (!strncmp(k, key, n) && (key[n] == 0 || key[n] == '.'))
			at = c->params[i];
	}
	struct plan_pos pos = param_pos(c->p, c->m, c->cell, matrix_cell_key(c->m, c->cell, at));
	diag_add(c->diags, pos.file, pos.line, pos.col, "%s (first in cell '%s')", msg,
		 matrix_cell_id(c->m, c->cell));
	c->errors++;
}

static void rule_fault(void *ud, const char *key, char *msg)
{
	report(ud, key, msg);
}

/* Point a variant key of `sk` at the key of that name of entry e's own value (a method's own
 * option): 0, or -1 when e's value has none. */
static int variant_key(const struct key_table *t, const void *e, struct sweep_key *sk)
{
	const struct key_table *vt = key_variant(t, key_disc(t, e));
	const struct key_def *k = vt ? key_find(vt, sk->key[0]->name) : NULL;
	if (!k)
		return -1;
	sk->table[0] = vt;
	sk->key[0] = k;
	for (size_t j = 1; j < sk->n; j++) {
		sk->table[j] = sk->key[j - 1]->sub;
		sk->key[j] = sk->table[j] ? key_find(sk->table[j], sk->key[j]->name) : NULL;
		if (!sk->key[j])
			return -1;
	}
	return 0;
}

/* The entry `base` with the cell's swept keys of its axis applied, checked; owned by `s`. */
static struct plan_entry *resolve(struct check *c, const struct plan_entry *base, char *key)
{
	const struct key_table *t = entry_table(c->axis);
	size_t z = entry_size(c->axis);
	struct plan_entry *e = xmalloc(z);

	memcpy(e, base, z);
	key_clone(t, e);
	e->name = xstrdup(base->name);
	e->sweep = xstrdup("");
	e->pos = param_pos(c->p, c->m, c->cell, matrix_cell_key(c->m, c->cell, c->params[0]));
	for (size_t i = 0; i < c->n_params; i++) {
		const char *k = matrix_cell_key(c->m, c->cell, c->params[i]);
		const char *v = matrix_cell_value(c->m, c->cell, c->params[i]);
		struct sweep_key sk;
		_cleanup_free_ char *err = NULL;
		void *obj = e;
		/* keys and values were checked when read: this cannot fail */
		if (pl_sweep_resolve(k, &sk, &err) < 0)
			abort();
		append_pair(&e->sweep, i ? "," : "", k, v);
		if (sk.variant && variant_key(t, e, &sk) < 0)
			continue; /* not a key of the entry's type: reported below */
		if (sk.variant)
			obj = key_variant_obj(t, e);
		for (size_t j = 0; j + 1 < sk.n; j++) {
			key_mark_set(sk.table[j], obj, sk.key[j]);
			obj = (char *)obj + sk.key[j]->offset;
		}
		if (set_leaf(&sk, obj, v, &err) < 0) {
			/* a value read for another type's key of this name */
			if (!sk.variant)
				abort();
			report(c, sk.key[0]->name, TAKE_PTR(err));
		}
	}
	if (c->axis == PLAN_AXIS_VM)
		pl_resolve_vm((struct plan_vm *)(void *)e);
	/* a swept key of another type than the entry's (a method's block_size on agent-file) */
	const struct key_def *dk = t->discriminator ? key_find(t, t->discriminator) : NULL;
	int disc = dk ? *(const int *)(const void *)((const char *)e + dk->offset) : -1;
	size_t errors = c->errors;
	for (size_t i = 0; i < c->n_params; i++) {
		struct sweep_key sk;
		_cleanup_free_ char *err = NULL;
		if (pl_sweep_resolve(matrix_cell_key(c->m, c->cell, c->params[i]), &sk, &err) < 0)
			abort();
		char *na = key_not_applying(t, sk.key[0], disc);
		if (na)
			report(c, sk.key[0]->name, na);
	}
	if (c->errors == errors)
		pl_entry_rules_each((enum rule_scope)c->axis, e, rule_fault, c);
	struct sweep_set *s = c->s;
	s->v = xgrow(s->v, &s->cap, s->n + 1, sizeof(*s->v));
	s->v[s->n] = (struct resolved){ c->axis, key, e };
	strmap_put(&s->index, key, 0, (uint32_t)s->n);
	s->n++;
	return e;
}

static const struct plan_entry *find_entry(const struct plan *p, enum plan_axis a, const char *name)
{
	switch (a) {
	case PLAN_AXIS_VM: return (const struct plan_entry *)(const void *)plan_find_vm(p, name);
	case PLAN_AXIS_DISK:
		return (const struct plan_entry *)(const void *)plan_find_disk(p, name);
	case PLAN_AXIS_DATASET:
		return (const struct plan_entry *)(const void *)plan_find_dataset(p, name);
	default: return (const struct plan_entry *)(const void *)plan_find_method(p, name);
	}
}

/* The resolved entry of one axis of cell `i` (the params of that axis in c->params). */
static uint32_t cell_axis(struct check *c)
{
	const char *name = matrix_cell_get(c->m, c->cell, plan_axis_name(c->axis));
	const struct plan_entry *base = name ? find_entry(c->p, c->axis, name) : NULL;
	if (!base)
		return 0; /* a cell an include entry left incomplete: plan_expand() says so */
	/* the strmap key: axis, entry name, then each swept pair, length-prefixed */
	char *key = xasprintf("%d:%zu:%s", (int)c->axis, strlen(name), name);
	for (size_t i = 0; i < c->n_params; i++) {
		const char *k = matrix_cell_key(c->m, c->cell, c->params[i]);
		const char *v = matrix_cell_value(c->m, c->cell, c->params[i]);
		char *n = xasprintf("%s|%zu:%s%zu:%s", key, strlen(k), k, strlen(v), v);
		free(key);
		key = n;
	}
	uint32_t j = strmap_get(&c->s->index, key, 0);
	if (j != STRMAP_NONE) {
		free(key);
		return j + 1;
	}
	resolve(c, base, key);
	return (uint32_t)c->s->n;
}

size_t pl_sweep_cells(const struct plan *p, struct matrix *m, struct diag_list *diags)
{
	size_t n = matrix_n_cells(m), n_keys = matrix_n_keys(m);
	bool any = false;

	for (size_t k = 0; k < n_keys && !any; k++)
		any = pl_is_sweep(matrix_key(m, k));
	if (!any)
		return 0;
	struct sweep_set *s = xcalloc(1, sizeof(*s));
	strmap_init(&s->index, 16);
	strmap_init(&s->msgs, 8);
	s->cell = xcalloc(n * PLAN_N_AXES + 1, sizeof(*s->cell));
	_cleanup_free_ size_t *params = xcalloc(n_keys + 1, sizeof(*params));
	struct check c = { .s = s, .p = p, .m = m, .params = params, .diags = diags };
	for (size_t i = 0; i < n; i++) {
		c.cell = i;
		for (int a = 0; a < PLAN_N_AXES; a++) {
			const char *axis = plan_axis_name((enum plan_axis)a);
			size_t len = strlen(axis);
			c.axis = (enum plan_axis)a;
			c.n_params = 0;
			for (size_t j = 0; j < matrix_cell_n_params(m, i); j++) {
				const char *k = matrix_cell_key(m, i, j);
				if (!strncmp(k, axis, len) && k[len] == '.')
					params[c.n_params++] = j;
			}
			if (c.n_params)
				s->cell[i * PLAN_N_AXES + (size_t)a] = cell_axis(&c);
		}
	}
	matrix_attach(m, s, sweep_set_free);
	return c.errors;
}

const void *pl_sweep_entry(const struct matrix *m, size_t i, enum plan_axis axis)
{
	const struct sweep_set *s = matrix_attached(m);
	uint32_t j = s ? s->cell[i * PLAN_N_AXES + (size_t)axis] : 0;
	return j ? s->v[j - 1].e : NULL;
}
