/* SPDX-License-Identifier: MIT */
/*
 * The table-driven walk: a YAML document -> struct plan, through the key tables of keys.c.
 * Every fault is collected as a positioned diagnostic so that one pass reports everything.
 * libyaml accepts duplicate keys: the walk rejects them (in linear time, see pl_check_keys).
 */
#include <string.h>

#include "plan-parse.h"
#include "strmap.h"
#include "units.h"

yaml_node_t *pl_node(struct ctx *c, int id)
{
	return yaml_document_get_node(c->doc, id);
}

const char *pl_scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* An empty value (`key:`), `~` or `null`, written plain. */
bool pl_is_null(const yaml_node_t *n)
{
	if (!n || n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	const char *s = pl_scalar(n);
	return !*s || STREQ(s, "~") || STREQ(s, "null") || STREQ(s, "Null") || STREQ(s, "NULL");
}

const char *pl_node_kind(const yaml_node_t *n)
{
	if (pl_is_null(n))
		return "an empty value";
	switch (n->type) {
	case YAML_MAPPING_NODE: return "a mapping";
	case YAML_SEQUENCE_NODE: return "a list";
	default: return "a single value";
	}
}

static const char *expected(const struct key_def *k)
{
	switch (k->type) {
	case KEY_STRING: return "a string";
	case KEY_BOOL: return "true or false";
	case KEY_UINT: return "an integer";
	case KEY_FLOAT: return "a number";
	case KEY_SIZE: return "a size";
	case KEY_DURATION: return "a duration";
	case KEY_PERCENT: return "a percentage";
	case KEY_QUANTITY: return "a number with its unit";
	case KEY_ENUM: return "a single value";
	case KEY_MAPPING: return k->shorthand ? "a single value or a mapping" : "a mapping";
	case KEY_STRING_LIST: return "a list of strings";
	case KEY_NAMED: return "a mapping of names";
	case KEY_LIST: return "a list of mappings";
	case KEY_NAMES: return "a name or a list of names";
	case KEY_CUSTOM: return k->sub ? "a mapping" : "a list";
	}
	return "a value";
}

static void type_error(struct ctx *c, const struct key_def *k, const yaml_node_t *v)
{
	pl_err_node(c, v, "'%s' must be %s, not %s", k->name, expected(k), pl_node_kind(v));
}

bool *pl_check_keys(struct ctx *c, const yaml_node_t *map)
{
	yaml_node_pair_t *b = map->data.mapping.pairs.start, *e = map->data.mapping.pairs.top;
	size_t n = (size_t)(e - b);
	bool *skip = xcalloc(n + 1, sizeof(*skip));
	struct strmap seen;

	strmap_init(&seen, n);
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *k = pl_node(c, b[i].key);
		if (!pl_scalar(k)) {
			pl_err_node(c, k, "a key must be a single value, not %s", pl_node_kind(k));
			skip[i] = true;
			continue;
		}
		uint32_t first = strmap_put(&seen, pl_scalar(k), 0, (uint32_t)i);
		if (first == STRMAP_NONE)
			continue;
		yaml_node_t *kj = pl_node(c, b[first].key);
		pl_err_node(c, k, "duplicate key '%s' (first at line %d, column %d)", pl_scalar(k),
			    (int)kj->start_mark.line + 1, (int)kj->start_mark.column + 1);
		skip[i] = true;
	}
	strmap_free(&seen);
	return skip;
}

/* The value node of `name` in a mapping, or NULL. */
yaml_node_t *pl_lookup(struct ctx *c, const yaml_node_t *map, const char *name, yaml_node_t **key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *i = map->data.mapping.pairs.start; i < map->data.mapping.pairs.top;
	     i++) {
		yaml_node_t *k = pl_node(c, i->key);
		if (pl_scalar(k) && STREQ(pl_scalar(k), name)) {
			if (key)
				*key = k;
			return pl_node(c, i->value);
		}
	}
	return NULL;
}

/* Where to point at a key of an entry: the key, else the fallback. */
const yaml_node_t *pl_key_node(struct ctx *c, const yaml_node_t *map, const char *name,
			       const yaml_node_t *fallback)
{
	yaml_node_t *k = NULL;
	pl_lookup(c, map, name, &k);
	return k ? k : fallback;
}

static bool pl_valid_name(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '-'))
			return false;
	return true;
}

void pl_unknown_key(struct ctx *c, const struct key_table *t, const yaml_node_t *k)
{
	const char *hint = key_suggest(t, pl_scalar(k));
	if (hint) {
		pl_err_node(c, k, "unknown key '%s' (did you mean '%s'?)", pl_scalar(k), hint);
		return;
	}
	const char *names[256];
	size_t n = key_names(t, names, ELEMENTSOF(names));
	_cleanup_free_ char *list = xstrdup("");
	for (size_t i = 0; i < n; i++) {
		char *l = xasprintf("%s%s%s", list, i ? ", " : "", names[i]);
		free(list);
		list = l;
	}
	pl_err_node(c, k, "unknown key '%s' (expected one of: %s)", pl_scalar(k), list);
}

/* ---- the table-driven walk ----------------------------------------------------------------- */

/* via void *: the offsets come from offsetof, so the fields are aligned */
#define AT(obj, k, type) ((type *)(void *)((char *)(obj) + (k)->offset))

/* A scalar for a scalar-typed key: substitute, convert, store, mark set. */
static bool set_scalar(struct ctx *c, const struct key_table *t, const struct key_def *k, void *obj,
		       const yaml_node_t *v, const struct key_def *msg_key)
{
	/* a plain null is a value only where the key has one of that name (type: null) */
	bool null_value = pl_is_null(v) && k->type == KEY_ENUM &&
			  STREQ((const char *)v->data.scalar.value, "null") &&
			  key_enum_index(k, "null") >= 0;
	if (v->type != YAML_SCALAR_NODE || (pl_is_null(v) && !null_value)) {
		type_error(c, msg_key, v);
		return false;
	}
	_cleanup_free_ char *text = pl_value_text(c, v);
	if (!text)
		return false;
	_cleanup_free_ char *err = NULL;
	struct key_def named = *k;
	named.name = msg_key->name; /* a shorthand value is reported under the key written */
	if (key_set_scalar(&named, obj, text, &err) < 0) {
		pl_err_node(c, v, "%s", err);
		return false;
	}
	key_mark_set(t, obj, k);
	return true;
}

static bool scalar_key(enum key_type t)
{
	return t == KEY_STRING || t == KEY_BOOL || t == KEY_UINT || t == KEY_FLOAT ||
	       t == KEY_SIZE || t == KEY_DURATION || t == KEY_PERCENT || t == KEY_QUANTITY ||
	       t == KEY_ENUM;
}

static void pl_parse_named(struct ctx *c, const struct key_def *k, void *obj, yaml_node_t *v);
static void pl_parse_list(struct ctx *c, const struct key_def *k, void *obj, yaml_node_t *v);

/* A list of strings (or one string): every item a scalar. */
static void parse_strings(struct ctx *c, const struct key_table *t, const struct key_def *k,
			  void *obj, yaml_node_t *v)
{
	char ***l = (char ***)(void *)AT(obj, k, char);
	size_t *n = (size_t *)(void *)((char *)obj + k->count_offset);
	yaml_node_item_t *b = NULL, *e = NULL;
	if (v->type == YAML_SEQUENCE_NODE) {
		b = v->data.sequence.items.start;
		e = v->data.sequence.items.top;
	} else if (!pl_scalar(v)) {
		type_error(c, k, v);
		return;
	}
	size_t count = b ? (size_t)(e - b) : 1;
	for (size_t i = 0; i < count; i++) {
		yaml_node_t *item = b ? pl_node(c, b[i]) : v;
		const char *s = pl_scalar(item);
		if (!s) {
			type_error(c, k, item);
			continue;
		}
		*l = xrealloc(*l, (*n + 1) * sizeof(**l));
		(*l)[(*n)++] = xstrdup(s);
	}
	key_mark_set(t, obj, k);
}

static void walk_value(struct ctx *c, const struct key_table *t, const struct key_def *k, void *obj,
		       yaml_node_t *key, yaml_node_t *v)
{
	if (scalar_key(k->type)) {
		set_scalar(c, t, k, obj, v, k);
		return;
	}
	switch (k->type) {
	case KEY_MAPPING:
		if (pl_is_null(v))
			return;
		if (v->type == YAML_SCALAR_NODE && k->shorthand) {
			bool ok = true;
			for (size_t i = 0; ok && k->shorthand[i]; i++)
				ok = set_scalar(c, k->sub, key_find(k->sub, k->shorthand[i]),
						AT(obj, k, char), v, k);
			if (ok)
				key_mark_set(t, obj, k);
			return;
		}
		if (v->type != YAML_MAPPING_NODE) {
			type_error(c, k, v);
			return;
		}
		pl_walk_mapping(c, k->sub, AT(obj, k, char), v, key);
		key_mark_set(t, obj, k);
		return;
	case KEY_NAMED: pl_parse_named(c, k, obj, v); return;
	case KEY_LIST: pl_parse_list(c, k, obj, v); return;
	case KEY_STRING_LIST:
		if (t != &plan_keys) { /* the top level's include is read before the walk */
			parse_strings(c, t, k, obj, v);
			return;
		}
		break;
	case KEY_CUSTOM:
		if (t == &plan_keys && STREQ(k->name, "matrix")) {
			pl_parse_matrix(c, key, v);
			return;
		}
		break;
	default: break;
	}
	/* include (handled before the walk) and matrix-only types never get here */
}

/* The discriminator (method type, disk kind) first: it decides which keys apply. Returns its
 * value, or -1 when it is missing or invalid. A table with variants gets the struct of the value
 * read (key_variant_reset()). */
static int read_discriminator(struct ctx *c, const struct key_table *t, void *obj,
			      const yaml_node_t *map)
{
	const struct key_def *dk = t->discriminator ? key_find(t, t->discriminator) : NULL;
	if (!dk)
		return -1;
	yaml_node_t *dkey = NULL, *dv = pl_lookup(c, map, dk->name, &dkey);
	int old = *AT(obj, dk, int);
	if (dv && set_scalar(c, t, dk, obj, dv, dk)) {
		int v = *AT(obj, dk, int);
		*AT(obj, dk, int) = old;
		key_variant_reset(t, obj, v);
		*AT(obj, dk, int) = v;
		return v;
	}
	if (!dv && !(dk->flags & KEY_REQUIRED))
		return old; /* the default */
	return -1;
}

/* A key of value `disc`'s own table `vt`; with no valid value, the key of the first value that
 * has it, checked in scratch memory (the messages a plan gets about its value stay the same
 * whatever its type says). */
static void walk_variant_value(struct ctx *c, const struct key_table *t, const struct key_table *vt,
			       int disc, void *obj, yaml_node_t *kn, yaml_node_t *v)
{
	const struct key_def *k = key_find(vt, pl_scalar(kn));
	if (disc >= 0) {
		walk_value(c, vt, k, key_variant_obj(t, obj), kn, v);
		return;
	}
	_cleanup_free_ char *scratch = xcalloc(1, t->variants->size);
	key_defaults(vt, scratch);
	walk_value(c, vt, k, scratch, kn, v);
	key_free(vt, scratch);
}

void pl_walk_mapping(struct ctx *c, const struct key_table *t, void *obj, const yaml_node_t *map,
		     const yaml_node_t *owner)
{
	size_t errors_before = c->n_errors;
	_cleanup_free_ bool *skip = pl_check_keys(c, map);

	int disc = read_discriminator(c, t, obj, map);
	const struct key_def *dk = t->discriminator ? key_find(t, t->discriminator) : NULL;

	for (yaml_node_pair_t *i = map->data.mapping.pairs.start; i < map->data.mapping.pairs.top;
	     i++) {
		yaml_node_t *kn = pl_node(c, i->key), *v = pl_node(c, i->value);
		const char *name = pl_scalar(kn);
		if (skip[i - map->data.mapping.pairs.start])
			continue;
		if (t == &plan_keys && STREQ(name, "include"))
			continue; /* merged before the rest of the file */
		const struct key_table *kt;
		const struct key_def *k = key_find_any(t, disc, name, &kt);
		if (!k) {
			pl_unknown_key(c, t, kn);
			continue;
		}
		if (k == dk)
			continue;
		_cleanup_free_ char *na = disc >= 0 ? key_not_applying(t, k, disc) : NULL;
		if (na) {
			pl_err_node(c, kn, "%s", na);
			continue;
		}
		if (kt == t)
			walk_value(c, t, k, obj, kn, v);
		else
			walk_variant_value(c, t, kt, disc, obj, kn, v);
	}

	for (size_t i = 0; i < t->n_keys; i++) {
		const struct key_def *k = &t->keys[i];
		if ((k->flags & KEY_REQUIRED) && !pl_lookup(c, map, k->name, NULL))
			pl_err_node(c, owner ? owner : map, "missing required key '%s'%s", k->name,
				    STREQ(k->name, "ferry") ? " (the plan language version: "
							      "'ferry: 1')"
							    : "");
	}
	/* the discriminator's value's own required keys (vm2vm's `from`) */
	const struct key_table *vt = disc >= 0 ? key_variant(t, disc) : NULL;
	for (size_t i = 0; vt && i < vt->n_keys; i++) {
		const struct key_def *k = &vt->keys[i];
		if ((k->flags & KEY_REQUIRED) && !pl_lookup(c, map, k->name, NULL))
			pl_err_node(c, owner ? owner : map, "missing required key '%s'", k->name);
	}
	/* checks across keys only when every key read: an invalid value would make them lie */
	if (c->n_errors == errors_before)
		pl_check_entry(c, t, obj, map, owner);
}

static void pl_parse_named(struct ctx *c, const struct key_def *k, void *obj, yaml_node_t *v)
{
	if (pl_is_null(v))
		return;
	if (v->type != YAML_MAPPING_NODE) {
		type_error(c, k, v);
		return;
	}
	_cleanup_free_ bool *skip = pl_check_keys(c, v);
	char **arr = AT(obj, k, char *);
	size_t *n = (size_t *)(void *)((char *)obj + k->count_offset);
	/* "vms" -> "vm" for messages */
	_cleanup_free_ char *what = xstrndup(k->name, strlen(k->name) - 1);
	/* the entries so far (from included files too), by name: a later file replaces one */
	struct strmap names;
	strmap_init(&names, *n + (size_t)(v->data.mapping.pairs.top - v->data.mapping.pairs.start));
	for (size_t j = 0; j < *n; j++)
		strmap_put(&names, ((struct plan_entry *)(void *)(*arr + j * k->elem_size))->name,
			   0, (uint32_t)j);

	for (yaml_node_pair_t *i = v->data.mapping.pairs.start; i < v->data.mapping.pairs.top;
	     i++) {
		yaml_node_t *kn = pl_node(c, i->key), *ev = pl_node(c, i->value);
		const char *name = pl_scalar(kn);
		if (skip[i - v->data.mapping.pairs.start])
			continue;
		/* a faulty entry is still defined, so references to it do not add messages */
		bool bad = false;
		if (!pl_valid_name(name)) {
			pl_err_node(
			    c, kn,
			    "invalid %s name '%s' (names use only letters, digits, '.', '_' "
			    "and '-')",
			    what, name);
			bad = true;
		}
		if (!pl_is_null(ev) && ev->type != YAML_MAPPING_NODE) {
			pl_err_node(c, ev, "%s '%s' must be a mapping of its settings, not %s",
				    what, name, pl_node_kind(ev));
			bad = true;
		}
		struct plan_entry *e;
		char *keep = NULL; /* the map points at the name: keep the string */
		uint32_t j = strmap_get(&names, name, 0);
		if (j != STRMAP_NONE) {
			/* a later file redefines the entry: it replaces the earlier one whole */
			e = (void *)(*arr + j * k->elem_size);
			keep = e->name;
			key_free(k->sub, e);
		} else {
			*arr = xrealloc(*arr, (*n + 1) * k->elem_size);
			e = (void *)(*arr + *n * k->elem_size);
		}
		memset(e, 0, k->elem_size);
		key_defaults(k->sub, e);
		e->name = keep ? keep : xstrdup(name);
		if (!keep)
			strmap_put(&names, e->name, 0, (uint32_t)(*n)++);
		e->pos = pl_node_pos(c, kn);
		if (bad)
			continue;
		if (pl_is_null(ev))
			pl_check_entry(c, k->sub, e, NULL, kn);
		else
			pl_walk_mapping(c, k->sub, e, ev, kn);
	}
	strmap_free(&names);
}

static void pl_parse_list(struct ctx *c, const struct key_def *k, void *obj, yaml_node_t *v)
{
	if (pl_is_null(v))
		return;
	if (v->type != YAML_SEQUENCE_NODE) {
		type_error(c, k, v);
		return;
	}
	char **arr = AT(obj, k, char *);
	size_t *n = (size_t *)(void *)((char *)obj + k->count_offset);
	for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top;
	     i++) {
		yaml_node_t *ev = pl_node(c, *i);
		if (ev->type != YAML_MAPPING_NODE) {
			pl_err_node(c, ev, "each entry of '%s' must be a mapping, not %s", k->name,
				    pl_node_kind(ev));
			continue;
		}
		*arr = xrealloc(*arr, (*n + 1) * k->elem_size);
		void *e = *arr + (*n)++ * k->elem_size;
		memset(e, 0, k->elem_size);
		key_defaults(k->sub, e);
		if (k->sub == &plan_criterion_keys)
			((struct plan_criterion *)e)->pos = pl_node_pos(c, ev);
		pl_walk_mapping(c, k->sub, e, ev, ev);
	}
}
