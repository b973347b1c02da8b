/* SPDX-License-Identifier: MIT */
/*
 * YAML -> struct plan. libyaml loads each file as a document; the key tables (keys.c) drive a
 * walk over it that fills the structs, and every fault is collected as a positioned diagnostic
 * so that one pass reports everything. libyaml accepts duplicate keys: the walk rejects them.
 *
 * Includes: a file's `include:` files are merged first, in order, then the file itself; later
 * definitions override earlier ones (named entries whole, run/report key by key, the matrix as
 * a whole, criteria appended). ferry(1) INCLUDES documents this.
 */
#include "plan.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "keys.h"
#include "units.h"

#define MAX_INCLUDE_DEPTH 16
#define MAX_PLAN_FILE     (4 * 1024 * 1024)

static const char *const axis_names[PLAN_N_AXES] = { "vm", "disk", "dataset", "method" };

const char *plan_axis_name(enum plan_axis a)
{
	return a < PLAN_N_AXES ? axis_names[a] : NULL;
}

static int axis_from_name(const char *s)
{
	for (int i = 0; i < PLAN_N_AXES; i++)
		if (STREQ(axis_names[i], s))
			return i;
	return -1;
}

/* A name the plan refers to (matrix, criteria); checked once every file is merged. */
struct ref {
	enum plan_axis axis;
	char *name;
	struct plan_pos pos;
	bool matrix; /* dropped when a later file replaces the matrix */
};

struct ctx {
	struct plan *p;
	struct diag_list *diags;
	size_t n_errors;
	const char *file; /* current file, interned in p->files */
	yaml_document_t *doc;
	struct ref *refs;
	size_t n_refs, cap_refs;
	/* the include chain, for cycle messages: canonical keys and display names */
	char *chain_key[MAX_INCLUDE_DEPTH + 1];
	const char *chain_name[MAX_INCLUDE_DEPTH + 1];
	size_t n_chain;
	bool have_matrix;
	struct plan_pos matrix_pos;
	bool incomplete; /* a file could not be loaded: whole-plan checks would only pile on */
};

_printf_(5, 6) static void err_pos(struct ctx *c, const char *file, int line, int col,
				   const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_vadd(c->diags, file, line, col, fmt, ap);
	va_end(ap);
	c->n_errors++;
}

#define err_node(c, n, ...)                                                                        \
	err_pos((c), (c)->file, (int)(n)->start_mark.line + 1, (int)(n)->start_mark.column + 1,    \
		__VA_ARGS__)
#define err_at(c, pos, ...) err_pos((c), (pos).file, (pos).line, (pos).col, __VA_ARGS__)

static struct plan_pos node_pos(struct ctx *c, const yaml_node_t *n)
{
	return (struct plan_pos){ c->file, (int)n->start_mark.line + 1,
				  (int)n->start_mark.column + 1 };
}

static const char *intern_file(struct plan *p, const char *name)
{
	for (size_t i = 0; i < p->n_files; i++)
		if (STREQ(p->files[i], name))
			return p->files[i];
	p->files = xrealloc(p->files, (p->n_files + 1) * sizeof(*p->files));
	p->files[p->n_files] = xstrdup(name);
	return p->files[p->n_files++];
}

/* ---- YAML node helpers --------------------------------------------------------------------- */

static yaml_node_t *node(struct ctx *c, int id)
{
	return yaml_document_get_node(c->doc, id);
}

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* An empty value (`key:`), `~` or `null`, written plain. */
static bool is_null(const yaml_node_t *n)
{
	if (!n || n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	const char *s = scalar(n);
	return !*s || STREQ(s, "~") || STREQ(s, "null") || STREQ(s, "Null") || STREQ(s, "NULL");
}

static const char *node_kind(const yaml_node_t *n)
{
	if (is_null(n))
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
	err_node(c, v, "'%s' must be %s, not %s", k->name, expected(k), node_kind(v));
}

/* Every mapping the walk visits: keys are single values, and unique. Walks skip the keys
 * reported here (see skip_pair). */
static void check_keys(struct ctx *c, const yaml_node_t *map)
{
	yaml_node_pair_t *b = map->data.mapping.pairs.start, *e = map->data.mapping.pairs.top;

	for (yaml_node_pair_t *i = b; i < e; i++) {
		yaml_node_t *k = node(c, i->key);
		if (!scalar(k)) {
			err_node(c, k, "a key must be a single value, not %s", node_kind(k));
			continue;
		}
		for (yaml_node_pair_t *j = b; j < i; j++) {
			yaml_node_t *kj = node(c, j->key);
			if (scalar(kj) && STREQ(scalar(kj), scalar(k))) {
				err_node(c, k, "duplicate key '%s' (first at line %d, column %d)",
					 scalar(k), (int)kj->start_mark.line + 1,
					 (int)kj->start_mark.column + 1);
				break;
			}
		}
	}
}

/* A pair to skip: a key that is not a single value, or a repeated one (only the first counts,
 * so a duplicate does not pile more messages on). */
static bool skip_pair(struct ctx *c, const yaml_node_t *map, const yaml_node_pair_t *p)
{
	const char *name = scalar(node(c, p->key));
	if (!name)
		return true;
	for (const yaml_node_pair_t *j = map->data.mapping.pairs.start; j < p; j++) {
		const char *other = scalar(node(c, j->key));
		if (other && STREQ(other, name))
			return true;
	}
	return false;
}

/* The value node of `name` in a mapping, or NULL. */
static yaml_node_t *lookup(struct ctx *c, const yaml_node_t *map, const char *name,
			   yaml_node_t **key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *i = map->data.mapping.pairs.start; i < map->data.mapping.pairs.top;
	     i++) {
		yaml_node_t *k = node(c, i->key);
		if (scalar(k) && STREQ(scalar(k), name)) {
			if (key)
				*key = k;
			return node(c, i->value);
		}
	}
	return NULL;
}

/* Where to point at a key of an entry: the key, else the fallback. */
static const yaml_node_t *key_node(struct ctx *c, const yaml_node_t *map, const char *name,
				   const yaml_node_t *fallback)
{
	yaml_node_t *k = NULL;
	lookup(c, map, name, &k);
	return k ? k : fallback;
}

/* ${VAR} substitution of a scalar value; NULL (and an error) when it fails. */
static char *value_text(struct ctx *c, const yaml_node_t *v)
{
	_cleanup_free_ char *err = NULL;
	char *s = env_subst(scalar(v), &err);
	if (!s)
		err_node(c, v, "%s", err);
	return s;
}

static bool valid_name(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '-'))
			return false;
	return true;
}

static void unknown_key(struct ctx *c, const struct key_table *t, const yaml_node_t *k)
{
	const char *hint = key_suggest(t, scalar(k));
	if (hint) {
		err_node(c, k, "unknown key '%s' (did you mean '%s'?)", scalar(k), hint);
		return;
	}
	_cleanup_free_ char *list = xstrdup("");
	for (size_t i = 0; i < t->n_keys; i++) {
		char *l = xasprintf("%s%s%s", list, i ? ", " : "", t->keys[i].name);
		free(list);
		list = l;
	}
	err_node(c, k, "unknown key '%s' (expected one of: %s)", scalar(k), list);
}

/* ---- the table-driven walk ----------------------------------------------------------------- */

static void walk_mapping(struct ctx *c, const struct key_table *t, void *obj,
			 const yaml_node_t *map, const yaml_node_t *owner);
static void check_entry(struct ctx *c, const struct key_table *t, void *obj, const yaml_node_t *map,
			const yaml_node_t *owner);

/* via void *: the offsets come from offsetof, so the fields are aligned */
#define AT(obj, k, type) ((type *)(void *)((char *)(obj) + (k)->offset))

/* A scalar for a scalar-typed key: substitute, convert, store, mark set. */
static bool set_scalar(struct ctx *c, const struct key_table *t, const struct key_def *k, void *obj,
		       const yaml_node_t *v, const struct key_def *msg_key)
{
	/* a plain null is a value only where the key has one of that name (type: null) */
	bool null_value = is_null(v) && k->type == KEY_ENUM && STREQ(scalar(v), "null") &&
			  key_enum_index(k, "null") >= 0;
	if (v->type != YAML_SCALAR_NODE || (is_null(v) && !null_value)) {
		type_error(c, msg_key, v);
		return false;
	}
	_cleanup_free_ char *text = value_text(c, v);
	if (!text)
		return false;
	_cleanup_free_ char *err = NULL;
	struct key_def named = *k;
	named.name = msg_key->name; /* a shorthand value is reported under the key written */
	if (key_set_scalar(&named, obj, text, &err) < 0) {
		err_node(c, v, "%s", err);
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

static void parse_named(struct ctx *c, const struct key_def *k, void *obj, yaml_node_t *v);
static void parse_list(struct ctx *c, const struct key_def *k, void *obj, yaml_node_t *v);
static void parse_matrix(struct ctx *c, yaml_node_t *key, yaml_node_t *v);

static void walk_value(struct ctx *c, const struct key_table *t, const struct key_def *k, void *obj,
		       yaml_node_t *key, yaml_node_t *v)
{
	if (scalar_key(k->type)) {
		set_scalar(c, t, k, obj, v, k);
		return;
	}
	switch (k->type) {
	case KEY_MAPPING:
		if (is_null(v))
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
		walk_mapping(c, k->sub, AT(obj, k, char), v, key);
		key_mark_set(t, obj, k);
		return;
	case KEY_NAMED: parse_named(c, k, obj, v); return;
	case KEY_LIST: parse_list(c, k, obj, v); return;
	case KEY_CUSTOM:
		if (t == &plan_keys && STREQ(k->name, "matrix")) {
			parse_matrix(c, key, v);
			return;
		}
		break;
	default: break;
	}
	/* include (handled before the walk) and matrix-only types never get here */
}

static void walk_mapping(struct ctx *c, const struct key_table *t, void *obj,
			 const yaml_node_t *map, const yaml_node_t *owner)
{
	size_t errors_before = c->n_errors;
	check_keys(c, map);

	/* the discriminator (method type, disk kind) first: it decides which keys apply */
	int disc = -1;
	const struct key_def *dk = t->discriminator ? key_find(t, t->discriminator) : NULL;
	if (dk) {
		yaml_node_t *dkey = NULL, *dv = lookup(c, map, dk->name, &dkey);
		if (dv && set_scalar(c, t, dk, obj, dv, dk))
			disc = *AT(obj, dk, int);
		else if (!dv && !(dk->flags & KEY_REQUIRED))
			disc = *AT(obj, dk, int); /* the default */
	}

	for (yaml_node_pair_t *i = map->data.mapping.pairs.start; i < map->data.mapping.pairs.top;
	     i++) {
		yaml_node_t *kn = node(c, i->key), *v = node(c, i->value);
		const char *name = scalar(kn);
		if (skip_pair(c, map, i))
			continue;
		if (t == &plan_keys && STREQ(name, "include"))
			continue; /* merged before the rest of the file */
		const struct key_def *k = key_find(t, name);
		if (!k) {
			unknown_key(c, t, kn);
			continue;
		}
		if (k == dk)
			continue;
		if (k->applies && disc >= 0 && !(k->applies & (UINT32_C(1) << disc))) {
			_cleanup_free_ char *only = xstrdup("");
			for (size_t j = 0; dk->values[j]; j++) {
				if (!(k->applies & (UINT32_C(1) << j)))
					continue;
				char *s =
				    xasprintf("%s%s%s", only, *only ? ", " : "", dk->values[j]);
				free(only);
				only = s;
			}
			err_node(c, kn, "'%s' does not apply to %s '%s' (only to %s)", name,
				 dk->name, dk->values[disc], only);
			continue;
		}
		walk_value(c, t, k, obj, kn, v);
	}

	for (size_t i = 0; i < t->n_keys; i++) {
		const struct key_def *k = &t->keys[i];
		if ((k->flags & KEY_REQUIRED) && !lookup(c, map, k->name, NULL))
			err_node(c, owner ? owner : map, "missing required key '%s'%s", k->name,
				 STREQ(k->name, "ferry") ? " (the plan language version: "
							   "'ferry: 1')"
							 : "");
	}
	/* checks across keys only when every key read: an invalid value would make them lie */
	if (c->n_errors == errors_before)
		check_entry(c, t, obj, map, owner);
}

static void parse_named(struct ctx *c, const struct key_def *k, void *obj, yaml_node_t *v)
{
	if (is_null(v))
		return;
	if (v->type != YAML_MAPPING_NODE) {
		type_error(c, k, v);
		return;
	}
	check_keys(c, v);
	char **arr = AT(obj, k, char *);
	size_t *n = (size_t *)(void *)((char *)obj + k->count_offset);
	/* "vms" -> "vm" for messages */
	_cleanup_free_ char *what = xstrndup(k->name, strlen(k->name) - 1);

	for (yaml_node_pair_t *i = v->data.mapping.pairs.start; i < v->data.mapping.pairs.top;
	     i++) {
		yaml_node_t *kn = node(c, i->key), *ev = node(c, i->value);
		const char *name = scalar(kn);
		if (skip_pair(c, v, i))
			continue;
		/* a faulty entry is still defined, so references to it do not add messages */
		bool bad = false;
		if (!valid_name(name)) {
			err_node(c, kn,
				 "invalid %s name '%s' (names use only letters, digits, '.', '_' "
				 "and '-')",
				 what, name);
			bad = true;
		}
		if (!is_null(ev) && ev->type != YAML_MAPPING_NODE) {
			err_node(c, ev, "%s '%s' must be a mapping of its settings, not %s", what,
				 name, node_kind(ev));
			bad = true;
		}
		struct plan_entry *e = NULL;
		for (size_t j = 0; j < *n; j++) {
			struct plan_entry *x = (void *)(*arr + j * k->elem_size);
			if (STREQ(x->name, name))
				e = x;
		}
		if (e) {
			/* a later file redefines the entry: it replaces the earlier one whole */
			free(e->name);
			key_free(k->sub, e);
		} else {
			*arr = xrealloc(*arr, (*n + 1) * k->elem_size);
			e = (void *)(*arr + (*n)++ * k->elem_size);
		}
		memset(e, 0, k->elem_size);
		key_defaults(k->sub, e);
		e->name = xstrdup(name);
		e->pos = node_pos(c, kn);
		if (bad)
			continue;
		if (is_null(ev))
			check_entry(c, k->sub, e, NULL, kn);
		else
			walk_mapping(c, k->sub, e, ev, kn);
	}
}

static void parse_list(struct ctx *c, const struct key_def *k, void *obj, yaml_node_t *v)
{
	if (is_null(v))
		return;
	if (v->type != YAML_SEQUENCE_NODE) {
		type_error(c, k, v);
		return;
	}
	char **arr = AT(obj, k, char *);
	size_t *n = (size_t *)(void *)((char *)obj + k->count_offset);
	for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top;
	     i++) {
		yaml_node_t *ev = node(c, *i);
		if (ev->type != YAML_MAPPING_NODE) {
			err_node(c, ev, "each entry of '%s' must be a mapping, not %s", k->name,
				 node_kind(ev));
			continue;
		}
		*arr = xrealloc(*arr, (*n + 1) * k->elem_size);
		void *e = *arr + (*n)++ * k->elem_size;
		memset(e, 0, k->elem_size);
		key_defaults(k->sub, e);
		if (k->sub == &plan_criterion_keys)
			((struct plan_criterion *)e)->pos = node_pos(c, ev);
		walk_mapping(c, k->sub, e, ev, ev);
	}
}

/* ---- checks of one entry, knowable without a host ------------------------------------------ */

static void add_ref(struct ctx *c, enum plan_axis axis, const char *name, const yaml_node_t *n,
		    bool matrix)
{
	c->refs = xgrow(c->refs, &c->cap_refs, c->n_refs + 1, sizeof(*c->refs));
	c->refs[c->n_refs++] = (struct ref){ axis, xstrdup(name), node_pos(c, n), matrix };
}

static void check_vm(struct ctx *c, struct plan_vm *vm, const yaml_node_t *map,
		     const yaml_node_t *owner)
{
	const struct key_table *t = &plan_vm_keys;
	bool image = key_is_set(t, vm, "image"), guest = key_is_set(t, vm, "guest");

	if (image && !guest)
		vm->guest = PLAN_GUEST_IMAGE;
	if (image && vm->guest == PLAN_GUEST_BUILTIN)
		err_node(c, key_node(c, map, "image", owner),
			 "'image' cannot be used with 'guest: builtin' (the built-in guest boots "
			 "ferry's own kernel and initramfs)");
	if (vm->guest == PLAN_GUEST_IMAGE && !image)
		err_node(c, key_node(c, map, "guest", owner),
			 "'guest: image' needs 'image', the path of a bootable disk image");
	if (vm->guest == PLAN_GUEST_BUILTIN && vm->os == PLAN_OS_WINDOWS)
		err_node(c, key_node(c, map, "os", owner),
			 "'os: windows' needs an 'image' guest (the built-in guest is linux)");

	yaml_node_t *nic = lookup(c, map, "nic", NULL);
	const yaml_node_t *nic_at = key_node(c, map, "nic", owner);
	bool tap = vm->nic.network || vm->nic.bridge;
	if (vm->nic.network && vm->nic.bridge)
		err_node(c, key_node(c, nic, "bridge", nic_at),
			 "'network' and 'bridge' exclude each other: the NIC attaches to one");
	if (vm->nic.queues > 1 && vm->nic.model != PLAN_NIC_VIRTIO)
		err_node(c, key_node(c, nic, "queues", nic_at),
			 "'queues: %" PRIu64 "' needs model 'virtio' (e1000 has one queue)",
			 vm->nic.queues);
	else if (vm->nic.queues > 1 && !tap)
		err_node(c, key_node(c, nic, "queues", nic_at),
			 "'queues: %" PRIu64 "' needs a tap device: QEMU user networking refuses "
			 "multiple queues (set 'network' or 'bridge')",
			 vm->nic.queues);
}

static void check_disk(struct ctx *c, struct plan_disk *d, const yaml_node_t *map,
		       const yaml_node_t *owner)
{
	static const char *const cache_names[] = { "none", "writeback", "writethrough",
						   "directsync", "unsafe" };
	if (d->kind == PLAN_DISK_IMAGE && d->io == PLAN_IO_NATIVE && d->cache != PLAN_CACHE_NONE &&
	    d->cache != PLAN_CACHE_DIRECTSYNC)
		err_node(
		    c, key_node(c, map, "io", owner),
		    "'io: native' cannot be used with 'cache: %s': native AIO needs O_DIRECT, "
		    "which only cache 'none' and 'directsync' give (libvirt and QEMU refuse it)",
		    cache_names[d->cache]);
}

static void check_dataset(struct ctx *c, struct plan_dataset *ds, const yaml_node_t *map,
			  const yaml_node_t *owner)
{
	const struct key_table *t = &plan_dataset_keys;
	static const char *const generated[] = {
		"files", "size", "dirs", "content", "ratio", "seed"
	};

	if (ds->path) {
		for (size_t i = 0; i < ELEMENTSOF(generated); i++)
			if (key_is_set(t, ds, generated[i]))
				err_node(c, key_node(c, map, generated[i], owner),
					 "'%s' cannot be used with 'path' (a path dataset is read "
					 "as it is)",
					 generated[i]);
		return;
	}
	if (!key_is_set(t, ds, "size")) {
		err_node(c, owner, "dataset '%s' needs 'size' (the size of each file) or 'path'",
			 ds->e.name);
		return;
	}
	yaml_node_t *size_map = lookup(c, map, "size", NULL);
	if (size_map && size_map->type == YAML_MAPPING_NODE &&
	    !key_is_set(&plan_size_range_keys, &ds->size, "max")) {
		err_node(c, key_node(c, map, "size", owner),
			 "'size' as a range needs 'max' (or write one size: 'size: 4KiB')");
	} else if (ds->size.min > ds->size.max) {
		yaml_node_t *size = lookup(c, map, "size", NULL);
		err_node(c, key_node(c, size, "min", key_node(c, map, "size", owner)),
			 "'size' range is empty: min is larger than max");
	}
	if (key_is_set(t, ds, "ratio") && ds->content != PLAN_CONTENT_COMPRESSIBLE)
		err_node(c, key_node(c, map, "ratio", owner),
			 "'ratio' needs 'content: compressible'");
	uint64_t total;
	if (!mul_u64(ds->files, ds->size.max, &total) || total > (UINT64_C(1) << 44)) {
		_cleanup_free_ char *each = format_size(ds->size.max);
		err_node(c, key_node(c, map, "files", owner),
			 "dataset '%s' is too large: %" PRIu64 " files of up to %s exceed 16TiB",
			 ds->e.name, ds->files, each);
	}
}

static void check_method(struct ctx *c, struct plan_method *m, const yaml_node_t *map,
			 const yaml_node_t *owner)
{
	const struct key_table *t = &plan_method_keys;
	yaml_node_t *archive = lookup(c, map, "archive", NULL);
	const yaml_node_t *archive_at = key_node(c, map, "archive", owner);

	if (m->type == PLAN_METHOD_DISK_IMAGE &&
	    (m->image_bus == PLAN_BUS_SATA || m->image_bus == PLAN_BUS_IDE))
		err_node(c, key_node(c, map, "bus", owner),
			 "'bus: %s' cannot be used by a disk-image method: it hot-plugs its image, "
			 "and only virtio and scsi disks can be hot-plugged",
			 m->image_bus == PLAN_BUS_SATA ? "sata" : "ide");
	if (m->in_place && m->archive.format != PLAN_ARCHIVE_NONE)
		err_node(c, key_node(c, map, "in_place", owner),
			 "'in_place' reads the files where they are on the image, which an archive "
			 "hides: drop 'archive' or 'in_place'");
	if (m->archive.compression != PLAN_COMPRESS_NONE && m->archive.format == PLAN_ARCHIVE_NONE)
		err_node(c, key_node(c, archive, "compression", archive_at),
			 "'compression' needs an archive 'format' (tar, pax, cpio or zip)");
	if (m->archive.level && m->archive.compression == PLAN_COMPRESS_NONE)
		err_node(c, key_node(c, archive, "level", archive_at),
			 "'level' needs a 'compression'");
	if (m->block_size % 512)
		err_node(c, key_node(c, map, "block_size", owner),
			 "'block_size' must be a multiple of 512 for direct I/O");
	if (m->driver == PLAN_SHARE_VIRTIOFS)
		for (size_t i = 0; i < 2; i++) {
			const char *nine = i ? "cache" : "msize";
			if (key_is_set(t, m, nine))
				err_node(c, key_node(c, map, nine, owner),
					 "'%s' is a 9p option: it does not apply to 'driver: "
					 "virtiofs'",
					 nine);
		}
}

static void check_criterion(struct ctx *c, struct plan_criterion *cr, const yaml_node_t *map)
{
	if (!key_is_set(&plan_criterion_keys, cr, "metric"))
		return; /* reported already: missing or invalid; units depend on it */
	if (!cr->min_text && !cr->max_text) {
		err_node(c, map, "criterion needs 'min' or 'max'");
		return;
	}
	for (int i = 0; i < 2; i++) {
		const char *text = i ? cr->max_text : cr->min_text;
		const char *which = i ? "max" : "min";
		if (!text)
			continue;
		const yaml_node_t *v = lookup(c, map, which, NULL);
		_cleanup_free_ char *err = NULL;
		double d = 0;
		int r = 0;
		switch (cr->metric) {
		case PLAN_METRIC_THROUGHPUT: {
			uint64_t b = 0;
			r = parse_throughput(text, &b, &err);
			d = (double)b;
			break;
		}
		case PLAN_METRIC_FILES_PER_S: r = parse_double(text, &d, &err); break;
		case PLAN_METRIC_CV: r = parse_percent(text, &d, &err); break;
		default: {
			uint64_t ns = 0;
			r = parse_duration(text, &ns, &err);
			d = (double)ns;
		}
		}
		if (r < 0) {
			err_node(c, v, "'%s': %s", which, err);
			continue;
		}
		if (i) {
			cr->has_max = true;
			cr->max = d;
		} else {
			cr->has_min = true;
			cr->min = d;
		}
	}
	if (cr->has_min && cr->has_max && cr->min > cr->max)
		err_node(c, lookup(c, map, "min", NULL),
			 "criterion can never pass: 'min' is larger than 'max'");
}

static void check_entry(struct ctx *c, const struct key_table *t, void *obj, const yaml_node_t *map,
			const yaml_node_t *owner)
{
	if (t == &plan_vm_keys) {
		check_vm(c, obj, map, owner);
	} else if (t == &plan_disk_keys) {
		check_disk(c, obj, map, owner);
	} else if (t == &plan_dataset_keys) {
		check_dataset(c, obj, map, owner);
	} else if (t == &plan_method_keys) {
		check_method(c, obj, map, owner);
	} else if (t == &plan_criterion_keys) {
		check_criterion(c, obj, map);
	} else if (t == &plan_repeat_keys) {
		struct plan_repeat *r = obj;
		bool min = key_is_set(t, r, "min"), max = key_is_set(t, r, "max");
		if (min && max && r->min > r->max)
			err_node(c, key_node(c, map, "min", owner),
				 "'repeat' range is empty: min is larger than max");
	} else if (t == &plan_where_keys) {
		struct plan_where *w = obj;
		char *names[PLAN_N_AXES] = { w->vm, w->disk, w->dataset, w->method };
		for (int a = 0; a < PLAN_N_AXES; a++)
			if (names[a])
				add_ref(c, (enum plan_axis)a, names[a],
					lookup(c, map, axis_names[a], NULL), false);
	} else if (t == &plan_markdown_keys) {
		struct plan_markdown *md = obj;
		if (md->rows == md->cols)
			err_node(c, key_node(c, map, "cols", owner),
				 "markdown 'rows' and 'cols' must be different axes (both are "
				 "'%s')",
				 axis_names[md->rows]);
	}
}

/* ---- matrix ------------------------------------------------------------------------------- */

static void matrix_def_free(struct matrix_def *d)
{
	for (size_t i = 0; i < d->n_axes; i++) {
		free(d->axes[i].name);
		for (size_t j = 0; j < d->axes[i].n_values; j++)
			free(d->axes[i].values[j]);
		free(d->axes[i].values);
	}
	free(d->axes);
	for (size_t i = 0; i < d->n_zips; i++) {
		for (size_t j = 0; j < d->zips[i].n_axes; j++)
			free(d->zips[i].axes[j]);
		free(d->zips[i].axes);
	}
	free(d->zips);
	struct matrix_entry *lists[2] = { d->exclude, d->include };
	size_t ns[2] = { d->n_exclude, d->n_include };
	for (int l = 0; l < 2; l++) {
		for (size_t i = 0; i < ns[l]; i++) {
			for (size_t j = 0; j < lists[l][i].n_kv; j++) {
				free(lists[l][i].kv[j].key);
				free(lists[l][i].kv[j].value);
			}
			free(lists[l][i].kv);
		}
		free(lists[l]);
	}
	memset(d, 0, sizeof(*d));
}

static void unknown_axis(struct ctx *c, const yaml_node_t *k, const struct key_table *t)
{
	const char *hint = key_suggest(t, scalar(k));
	if (hint)
		err_node(c, k, "unknown axis '%s' (did you mean '%s'?)", scalar(k), hint);
	else
		err_node(c, k, "unknown axis '%s' (axes are vm, disk, dataset and method)",
			 scalar(k));
}

static void parse_axis(struct ctx *c, enum plan_axis a, yaml_node_t *k, yaml_node_t *v)
{
	struct matrix_def *d = &c->p->matrix;
	struct matrix_axis ax = { .name = xstrdup(axis_names[a]),
				  .line = (int)k->start_mark.line + 1,
				  .col = (int)k->start_mark.column + 1 };
	yaml_node_item_t one = 0, *b, *e;

	if (v->type == YAML_SCALAR_NODE && !is_null(v)) {
		b = &one;
		e = b + 1;
		one = (yaml_node_item_t)(v - c->doc->nodes.start) + 1;
	} else if (v->type == YAML_SEQUENCE_NODE) {
		b = v->data.sequence.items.start;
		e = v->data.sequence.items.top;
	} else {
		err_node(c, v, "axis '%s' must be a name or a list of names, not %s", axis_names[a],
			 node_kind(v));
		free(ax.name);
		return;
	}
	if (b == e)
		err_node(c, v, "axis '%s' is empty: it would make no cells", axis_names[a]);
	for (yaml_node_item_t *i = b; i < e; i++) {
		yaml_node_t *n = node(c, *i);
		if (n->type != YAML_SCALAR_NODE || is_null(n)) {
			err_node(c, n, "axis '%s' values must be names, not %s", axis_names[a],
				 node_kind(n));
			continue;
		}
		char *name = value_text(c, n);
		if (!name)
			continue;
		for (size_t j = 0; j < ax.n_values; j++)
			if (STREQ(ax.values[j], name)) {
				err_node(c, n, "axis '%s' lists '%s' twice", axis_names[a], name);
				break;
			}
		add_ref(c, a, name, n, true);
		ax.values = xrealloc(ax.values, (ax.n_values + 1) * sizeof(*ax.values));
		ax.values[ax.n_values++] = name;
	}
	d->axes = xrealloc(d->axes, (d->n_axes + 1) * sizeof(*d->axes));
	d->axes[d->n_axes++] = ax;
}

/* One exclude or include entry; include entries may carry `run:` overrides. */
static void parse_matrix_entry(struct ctx *c, yaml_node_t *v, bool include, struct matrix_entry *me,
			       struct plan_run *run)
{
	const struct key_table *t = include ? &plan_matrix_include_keys : &plan_exclude_keys;

	me->line = (int)v->start_mark.line + 1;
	me->col = (int)v->start_mark.column + 1;
	check_keys(c, v);
	/* an include entry with only `run:` applies its overrides to every cell; one with
	 * nothing at all is a mistake */
	if (v->data.mapping.pairs.start == v->data.mapping.pairs.top)
		err_node(c, v,
			 include ? "empty include entry: it would extend every cell with nothing"
				 : "empty exclude entry: it would remove every cell");
	for (yaml_node_pair_t *i = v->data.mapping.pairs.start; i < v->data.mapping.pairs.top;
	     i++) {
		yaml_node_t *kn = node(c, i->key), *val = node(c, i->value);
		const char *name = scalar(kn);
		if (skip_pair(c, v, i))
			continue;
		int a = axis_from_name(name);
		if (a < 0 && include && STREQ(name, "run")) {
			if (is_null(val))
				continue;
			if (val->type != YAML_MAPPING_NODE) {
				err_node(c, val, "'run' must be a mapping, not %s", node_kind(val));
				continue;
			}
			walk_mapping(c, &plan_run_keys, run, val, kn);
			continue;
		}
		if (a < 0) {
			unknown_key(c, t, kn);
			continue;
		}
		if (val->type != YAML_SCALAR_NODE || is_null(val)) {
			err_node(c, val, "'%s' must be one %s name, not %s", name, name,
				 node_kind(val));
			continue;
		}
		char *value = value_text(c, val);
		if (!value)
			continue;
		add_ref(c, (enum plan_axis)a, value, val, true);
		me->kv = xrealloc(me->kv, (me->n_kv + 1) * sizeof(*me->kv));
		me->kv[me->n_kv++] =
		    (struct matrix_kv){ xstrdup(name), value, (int)kn->start_mark.line + 1,
					(int)kn->start_mark.column + 1 };
	}
}

static void parse_zip(struct ctx *c, yaml_node_t *v)
{
	struct matrix_def *d = &c->p->matrix;

	if (v->type != YAML_SEQUENCE_NODE) {
		err_node(c, v, "'zip' must be a list of lists of axes, not %s", node_kind(v));
		return;
	}
	for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top;
	     i++) {
		yaml_node_t *g = node(c, *i);
		if (g->type != YAML_SEQUENCE_NODE) {
			err_node(c, g, "each 'zip' group must be a list of axes, not %s",
				 node_kind(g));
			continue;
		}
		struct matrix_zip z = { .line = (int)g->start_mark.line + 1,
					.col = (int)g->start_mark.column + 1 };
		size_t n_items =
		    (size_t)(g->data.sequence.items.top - g->data.sequence.items.start);
		for (yaml_node_item_t *j = g->data.sequence.items.start;
		     j < g->data.sequence.items.top; j++) {
			yaml_node_t *n = node(c, *j);
			const char *s = scalar(n);
			if (!s || axis_from_name(s) < 0) {
				if (s)
					unknown_axis(c, n, &plan_matrix_keys);
				else
					err_node(c, n, "a 'zip' group lists axis names, not %s",
						 node_kind(n));
				continue;
			}
			z.axes = xrealloc(z.axes, (z.n_axes + 1) * sizeof(*z.axes));
			z.axes[z.n_axes++] = xstrdup(s);
		}
		if (n_items < 2)
			err_node(c, g, "a 'zip' group needs at least two axes");
		d->zips = xrealloc(d->zips, (d->n_zips + 1) * sizeof(*d->zips));
		d->zips[d->n_zips++] = z;
	}
}

static void parse_matrix(struct ctx *c, yaml_node_t *key, yaml_node_t *v)
{
	struct plan *p = c->p;
	struct matrix_def *d = &p->matrix;

	/* a later file's matrix replaces an included one whole */
	matrix_def_free(d);
	free(p->include_run);
	p->include_run = NULL;
	size_t keep = 0;
	for (size_t i = 0; i < c->n_refs; i++) {
		if (c->refs[i].matrix)
			free(c->refs[i].name);
		else
			c->refs[keep++] = c->refs[i];
	}
	c->n_refs = keep;
	c->have_matrix = true;
	c->matrix_pos = node_pos(c, key);
	p->matrix_pos = c->matrix_pos;
	p->matrix_file = c->file;

	if (is_null(v))
		return;
	if (v->type != YAML_MAPPING_NODE) {
		err_node(c, v, "'matrix' must be a mapping, not %s", node_kind(v));
		return;
	}
	check_keys(c, v);
	for (yaml_node_pair_t *i = v->data.mapping.pairs.start; i < v->data.mapping.pairs.top;
	     i++) {
		yaml_node_t *kn = node(c, i->key), *val = node(c, i->value);
		const char *name = scalar(kn);
		if (skip_pair(c, v, i))
			continue;
		int a = axis_from_name(name);
		if (a >= 0) {
			parse_axis(c, (enum plan_axis)a, kn, val);
		} else if (STREQ(name, "zip")) {
			parse_zip(c, val);
		} else if (STREQ(name, "exclude") || STREQ(name, "include")) {
			bool inc = STREQ(name, "include");
			if (is_null(val))
				continue;
			if (val->type != YAML_SEQUENCE_NODE) {
				err_node(c, val, "'%s' must be a list of mappings, not %s", name,
					 node_kind(val));
				continue;
			}
			for (yaml_node_item_t *j = val->data.sequence.items.start;
			     j < val->data.sequence.items.top; j++) {
				yaml_node_t *ev = node(c, *j);
				if (ev->type != YAML_MAPPING_NODE) {
					err_node(c, ev, "each '%s' entry must be a mapping, not %s",
						 name, node_kind(ev));
					continue;
				}
				struct matrix_entry me = { 0 };
				if (inc) {
					p->include_run =
					    xrealloc(p->include_run,
						     (d->n_include + 1) * sizeof(*p->include_run));
					struct plan_run *r = &p->include_run[d->n_include];
					memset(r, 0, sizeof(*r));
					key_defaults(&plan_run_keys, r);
					parse_matrix_entry(c, ev, true, &me, r);
					d->include = xrealloc(d->include, (d->n_include + 1) *
									      sizeof(*d->include));
					d->include[d->n_include++] = me;
				} else {
					parse_matrix_entry(c, ev, false, &me, NULL);
					d->exclude = xrealloc(d->exclude, (d->n_exclude + 1) *
									      sizeof(*d->exclude));
					d->exclude[d->n_exclude++] = me;
				}
			}
		} else {
			unknown_axis(c, kn, &plan_matrix_keys);
		}
	}
}

/* ---- files and includes -------------------------------------------------------------------- */

static void load_file(struct ctx *c, const char *name, const char *buf, size_t len,
		      const char *canon);

static char *lower_first(const char *s)
{
	char *t = xstrdup(s);
	if (t[0] >= 'A' && t[0] <= 'Z' && !(t[1] >= 'A' && t[1] <= 'Z'))
		t[0] = (char)(t[0] - 'A' + 'a');
	return t;
}

/* Read a plan file: regular files only (never a device or a FIFO), bounded in size. */
static char *read_plan_file(const char *path, size_t *len, char **err)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	struct stat st;

	if (!f || fstat(fileno(f), &st) < 0) {
		_cleanup_free_ char *e = lower_first(strerror(errno));
		*err = xasprintf("cannot read '%s': %s", path, e);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		*err = xasprintf("cannot read '%s': not a regular file", path);
		return NULL;
	}
	/* bounded while reading too: some files (in /proc) say 0 bytes and never end */
	_cleanup_free_ char *buf = xmalloc(MAX_PLAN_FILE + 2);
	size_t n = fread(buf, 1, MAX_PLAN_FILE + 1, f);
	if (ferror(f)) {
		_cleanup_free_ char *e = lower_first(strerror(errno ? errno : EIO));
		*err = xasprintf("cannot read '%s': %s", path, e);
		return NULL;
	}
	if (n > MAX_PLAN_FILE) {
		*err = xasprintf("cannot read '%s': larger than %d MiB", path, MAX_PLAN_FILE >> 20);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return xrealloc(TAKE_PTR(buf), n + 1);
}

static char *canonical(const char *path)
{
	char *r = realpath(path, NULL);
	return r ? r : xstrdup(path);
}

static void do_includes(struct ctx *c, yaml_node_t *v)
{
	if (is_null(v))
		return;
	if (v->type != YAML_SEQUENCE_NODE) {
		err_node(c, v, "'include' must be a list of plan files, not %s", node_kind(v));
		return;
	}
	for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top;
	     i++) {
		yaml_node_t *n = node(c, *i);
		if (n->type != YAML_SCALAR_NODE || is_null(n)) {
			err_node(c, n, "'include' lists file paths, not %s", node_kind(n));
			continue;
		}
		_cleanup_free_ char *rel = value_text(c, n);
		if (!rel)
			continue;
		if (!*rel) {
			err_node(c, n, "empty include path");
			continue;
		}
		if (c->n_chain == 1) {
			c->p->include =
			    xrealloc(c->p->include, (c->p->n_include + 1) * sizeof(*c->p->include));
			c->p->include[c->p->n_include++] = xstrdup(rel);
		}
		/* relative to the including file's directory */
		_cleanup_free_ char *path = NULL;
		const char *slash = strrchr(c->file, '/');
		if (rel[0] == '/' || !slash)
			path = xstrdup(rel);
		else
			path = xasprintf("%.*s/%s", (int)(slash - c->file), c->file, rel);

		_cleanup_free_ char *canon = canonical(path);
		for (size_t j = 0; j < c->n_chain; j++) {
			if (!STREQ(c->chain_key[j], canon))
				continue;
			_cleanup_free_ char *chain = xstrdup("");
			for (size_t k = j; k < c->n_chain; k++) {
				char *s = xasprintf("%s%s -> ", chain, c->chain_name[k]);
				free(chain);
				chain = s;
			}
			err_node(c, n, "include cycle: %s%s", chain, path);
			c->incomplete = true;
			goto next;
		}
		if (c->n_chain >= MAX_INCLUDE_DEPTH) {
			err_node(c, n, "includes nest deeper than %d files", MAX_INCLUDE_DEPTH);
			continue;
		}
		{
			_cleanup_free_ char *err = NULL;
			size_t len = 0;
			_cleanup_free_ char *buf = read_plan_file(path, &len, &err);
			if (!buf) {
				err_node(c, n, "%s", err);
				c->incomplete = true;
				continue;
			}
			load_file(c, path, buf, len, canon);
		}
	next:;
	}
}

static void yaml_error(struct ctx *c, yaml_parser_t *ps)
{
	const yaml_mark_t *m = &ps->problem_mark;
	const char *problem = ps->problem ? ps->problem : "cannot parse";

	if (ps->error == YAML_READER_ERROR) {
		/* reader errors carry a byte offset, not a mark */
		err_pos(c, c->file, 0, 0, "invalid YAML: %s at byte %zu", problem,
			ps->problem_offset);
		return;
	}
	if (ps->context)
		err_pos(c, c->file, (int)m->line + 1, (int)m->column + 1, "invalid YAML: %s %s",
			problem, ps->context);
	else
		err_pos(c, c->file, (int)m->line + 1, (int)m->column + 1, "invalid YAML: %s",
			problem);
}

static void load_file(struct ctx *c, const char *name, const char *buf, size_t len,
		      const char *canon)
{
	const char *saved_file = c->file;
	yaml_document_t *saved_doc = c->doc;
	yaml_parser_t ps;
	yaml_document_t doc;
	bool have_doc = false;

	c->file = intern_file(c->p, name);
	c->chain_key[c->n_chain] = xstrdup(canon);
	c->chain_name[c->n_chain] = c->file;
	c->n_chain++;

	if (!yaml_parser_initialize(&ps))
		abort();
	yaml_parser_set_input_string(&ps, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&ps, &doc)) {
		yaml_error(c, &ps);
		c->incomplete = true;
		goto out;
	}
	have_doc = true;
	c->doc = &doc;

	yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (!root || is_null(root)) {
		err_pos(c, c->file, 1, 1, "empty plan (a plan starts with 'ferry: 1')");
		c->incomplete = true;
		goto out;
	}
	{
		/* one document per file: a second one is almost always a stray '---' */
		yaml_document_t next;
		if (!yaml_parser_load(&ps, &next)) {
			yaml_error(c, &ps);
			goto out;
		}
		yaml_node_t *r2 = yaml_document_get_root_node(&next);
		if (r2)
			err_pos(c, c->file, (int)r2->start_mark.line + 1,
				(int)r2->start_mark.column + 1,
				"a plan file holds one YAML document; this is a second one");
		yaml_document_delete(&next);
	}
	if (root->type != YAML_MAPPING_NODE) {
		err_node(c, root, "a plan must be a mapping of sections, not %s", node_kind(root));
		c->incomplete = true;
		goto out;
	}

	yaml_node_t *inc = lookup(c, root, "include", NULL);
	if (inc)
		do_includes(c, inc);
	walk_mapping(c, &plan_keys, c->p, root, root);

out:
	if (have_doc)
		yaml_document_delete(&doc);
	yaml_parser_delete(&ps);
	c->n_chain--;
	free(c->chain_key[c->n_chain]);
	c->file = saved_file;
	c->doc = saved_doc;
}

/* ---- after every file: defaults that depend on the whole plan, names ---------------------- */

struct section {
	const char *what, *plural;
	size_t n;
	const char *(*name)(const struct plan *p, size_t i);
};

static const char *vm_name(const struct plan *p, size_t i)
{
	return p->vms[i].e.name;
}
static const char *disk_name(const struct plan *p, size_t i)
{
	return p->disks[i].e.name;
}
static const char *dataset_name(const struct plan *p, size_t i)
{
	return p->datasets[i].e.name;
}
static const char *method_name(const struct plan *p, size_t i)
{
	return p->methods[i].e.name;
}

static struct section section_of(const struct plan *p, enum plan_axis a)
{
	switch (a) {
	case PLAN_AXIS_VM: return (struct section){ "vm", "vms", p->n_vms, vm_name };
	case PLAN_AXIS_DISK: return (struct section){ "disk", "disks", p->n_disks, disk_name };
	case PLAN_AXIS_DATASET:
		return (struct section){ "dataset", "datasets", p->n_datasets, dataset_name };
	default: return (struct section){ "method", "methods", p->n_methods, method_name };
	}
}

static bool defined(const struct plan *p, enum plan_axis a, const char *name)
{
	struct section s = section_of(p, a);
	for (size_t i = 0; i < s.n; i++)
		if (STREQ(s.name(p, i), name))
			return true;
	return false;
}

static void check_refs(struct ctx *c)
{
	const struct plan *p = c->p;

	for (size_t i = 0; i < c->n_refs; i++) {
		const struct ref *r = &c->refs[i];
		struct section s = section_of(p, r->axis);
		if (defined(p, r->axis, r->name))
			continue;
		_cleanup_free_ const char **names = xcalloc(s.n + 1, sizeof(*names));
		_cleanup_free_ char *list = xstrdup("");
		for (size_t j = 0; j < s.n; j++) {
			names[j] = s.name(p, j);
			char *l = xasprintf("%s%s'%s'", list, j ? ", " : "", names[j]);
			free(list);
			list = l;
		}
		const char *hint = closest_match(r->name, names, s.n);
		if (hint)
			err_at(c, r->pos, "%s '%s' is not defined (did you mean '%s'?)", s.what,
			       r->name, hint);
		else if (s.n)
			err_at(c, r->pos, "%s '%s' is not defined (defined %s: %s)", s.what,
			       r->name, s.plural, list);
		else
			err_at(c, r->pos, "%s '%s' is not defined (the plan defines no %s)", s.what,
			       r->name, s.plural);
	}
}

/* Omitted axes: exactly one entry of the kind defines the axis; zero or several is an error. */
static void default_axes(struct ctx *c)
{
	struct plan *p = c->p;
	struct matrix_def *d = &p->matrix;
	struct plan_pos at =
	    c->have_matrix ? c->matrix_pos : (struct plan_pos){ p->files[0], 1, 1 };
	size_t n_new = 0;
	struct matrix_axis added[PLAN_N_AXES];

	if (!p->matrix_file) {
		p->matrix_file = p->files[0];
		p->matrix_pos = at;
	}
	for (int a = 0; a < PLAN_N_AXES; a++) {
		bool present = false;
		for (size_t i = 0; i < d->n_axes; i++)
			if (STREQ(d->axes[i].name, axis_names[a]))
				present = true;
		if (present)
			continue;
		struct section s = section_of(p, (enum plan_axis)a);
		if (s.n == 1) {
			added[n_new] = (struct matrix_axis){ .name = xstrdup(axis_names[a]),
							     .values = xmalloc(sizeof(char *)),
							     .n_values = 1 };
			added[n_new++].values[0] = xstrdup(s.name(p, 0));
		} else if (s.n == 0) {
			err_at(c, at, "the plan defines no %s (it needs at least one in '%s')",
			       s.plural, s.plural);
		} else {
			err_at(
			    c, at,
			    "the matrix has no '%s' axis and %zu %s are defined: list the ones to "
			    "use in 'matrix.%s'",
			    s.what, s.n, s.plural, s.what);
		}
	}
	/* a defaulted axis goes before the first written axis that follows it in vm, disk,
	 * dataset, method order: one value does not change the odometer order, and the cell ids
	 * read in the usual order when the written axes do */
	for (size_t i = 0; i < n_new; i++) {
		int a = axis_from_name(added[i].name);
		size_t at_index = d->n_axes;
		for (size_t j = 0; j < d->n_axes; j++)
			if (axis_from_name(d->axes[j].name) > a) {
				at_index = j;
				break;
			}
		d->axes = xrealloc(d->axes, (d->n_axes + 1) * sizeof(*d->axes));
		memmove(d->axes + at_index + 1, d->axes + at_index,
			(d->n_axes - at_index) * sizeof(*d->axes));
		d->axes[at_index] = added[i];
		d->n_axes++;
	}
}

static void resolve(struct ctx *c)
{
	struct plan *p = c->p;

	if (!p->name) {
		const char *base = strrchr(p->files[0], '/');
		base = base ? base + 1 : p->files[0];
		size_t n = strlen(base);
		if (n > 5 && STREQ(base + n - 5, ".yaml"))
			n -= 5;
		else if (n > 4 && STREQ(base + n - 4, ".yml"))
			n -= 4;
		p->name = xstrndup(base, n);
	}
	/* an explicit min above the default max raises max: `repeat: {min: 20}` means 20 */
	if (!key_is_set(&plan_repeat_keys, &p->run.repeat, "max") &&
	    p->run.repeat.max < p->run.repeat.min)
		p->run.repeat.max = p->run.repeat.min;
	if (c->incomplete)
		return;
	check_refs(c);
	/* "no vms defined" after a faulty vms section would only repeat the fault */
	if (!c->n_errors)
		default_axes(c);
}

static struct plan *parse(const char *name, const char *buf, size_t len, const char *canon,
			  struct diag_list *diags)
{
	struct ctx c = { .diags = diags };
	struct plan *p = xcalloc(1, sizeof(*p));

	c.p = p;
	key_defaults(&plan_keys, p);
	intern_file(p, name);
	load_file(&c, name, buf, len, canon);
	resolve(&c);

	for (size_t i = 0; i < c.n_refs; i++)
		free(c.refs[i].name);
	free(c.refs);
	if (c.n_errors) {
		diag_sort(diags);
		plan_free(p);
		return NULL;
	}
	return p;
}

struct plan *plan_parse_buffer(const char *name, const char *buf, size_t len,
			       struct diag_list *diags)
{
	_cleanup_free_ char *canon = canonical(name);
	return parse(name, buf, len, canon, diags);
}

struct plan *plan_parse_file(const char *path, struct diag_list *diags)
{
	_cleanup_free_ char *err = NULL;
	size_t len = 0;
	_cleanup_free_ char *buf = read_plan_file(path, &len, &err);

	if (!buf) {
		diag_add(diags, NULL, 0, 0, "%s", err);
		return NULL;
	}
	return plan_parse_buffer(path, buf, len, diags);
}

void plan_free(struct plan *p)
{
	if (!p)
		return;
	key_free(&plan_keys, p);
	matrix_def_free(&p->matrix);
	free(p->include_run);
	for (size_t i = 0; i < p->n_files; i++)
		free(p->files[i]);
	free(p->files);
	free(p);
}

#define FIND(arr, n)                                                                               \
	for (size_t i = 0; i < p->n; i++)                                                          \
		if (STREQ(p->arr[i].e.name, name))                                                 \
			return &p->arr[i];                                                         \
	return NULL

const struct plan_vm *plan_find_vm(const struct plan *p, const char *name)
{
	FIND(vms, n_vms);
}
const struct plan_disk *plan_find_disk(const struct plan *p, const char *name)
{
	FIND(disks, n_disks);
}
const struct plan_dataset *plan_find_dataset(const struct plan *p, const char *name)
{
	FIND(datasets, n_datasets);
}
const struct plan_method *plan_find_method(const struct plan *p, const char *name)
{
	FIND(methods, n_methods);
}

static void apply_table(const struct key_table *t, void *dst, const void *src)
{
	uint64_t set = *(const uint64_t *)(const void *)((const char *)src + t->set_offset);

	for (size_t i = 0; i < t->n_keys; i++) {
		const struct key_def *k = &t->keys[i];
		if (!(set & (UINT64_C(1) << i)))
			continue;
		const char *s = (const char *)src + k->offset;
		char *d = (char *)dst + k->offset;
		switch (k->type) {
		case KEY_MAPPING: apply_table(k->sub, d, s); break;
		case KEY_BOOL: memcpy(d, s, sizeof(bool)); break;
		case KEY_ENUM: memcpy(d, s, sizeof(int)); break;
		case KEY_UINT:
		case KEY_SIZE:
		case KEY_DURATION: memcpy(d, s, sizeof(uint64_t)); break;
		case KEY_FLOAT:
		case KEY_PERCENT: memcpy(d, s, sizeof(double)); break;
		case KEY_STRING:
		case KEY_QUANTITY: {
			char **dp = (char **)(void *)d;
			free(*dp);
			*dp = *(char *const *)(const void *)s
				  ? xstrdup(*(char *const *)(const void *)s)
				  : NULL;
			break;
		}
		default: continue; /* lists are not overridable */
		}
		key_mark_set(t, dst, k);
	}
}

void plan_run_apply(struct plan_run *run, const struct plan_run *over)
{
	apply_table(&plan_run_keys, run, over);
	if (!key_is_set(&plan_repeat_keys, &over->repeat, "max") &&
	    run->repeat.max < run->repeat.min)
		run->repeat.max = run->repeat.min;
}

/* ---- cells ----------------------------------------------------------------------------------- */

void plan_cell(const struct plan *p, const struct matrix *m, size_t i, struct plan_cell *out)
{
	const char *v;

	memset(out, 0, sizeof(*out));
	out->id = matrix_cell_id(m, i);
	if ((v = matrix_cell_get(m, i, "vm")))
		out->vm = plan_find_vm(p, v);
	if ((v = matrix_cell_get(m, i, "disk")))
		out->disk = plan_find_disk(p, v);
	if ((v = matrix_cell_get(m, i, "dataset")))
		out->dataset = plan_find_dataset(p, v);
	if ((v = matrix_cell_get(m, i, "method")))
		out->method = plan_find_method(p, v);
	out->run = p->run;
	size_t n = 0;
	const size_t *inc = matrix_cell_includes(m, i, &n);
	for (size_t j = 0; j < n; j++)
		plan_run_apply(&out->run, &p->include_run[inc[j]]);
}

struct pair_seen {
	const void *a, *b;
};

/* Report each incompatible pair of entries once, not once per cell. */
static bool first_time(struct pair_seen **seen, size_t *n, size_t *cap, const void *a,
		       const void *b)
{
	for (size_t i = 0; i < *n; i++)
		if ((*seen)[i].a == a && (*seen)[i].b == b)
			return false;
	*seen = xgrow(*seen, cap, *n + 1, sizeof(**seen));
	(*seen)[(*n)++] = (struct pair_seen){ a, b };
	return true;
}

/* What a guest's OS cannot do, whatever the host: Windows has no tmpfs, no ext4 and no 9p
 * client; the built-in (Linux) guest has no mkfs.ntfs. */
static size_t check_guest_os(const struct plan_cell *cell, struct diag_list *diags,
			     struct pair_seen **seen, size_t *n_seen, size_t *cap_seen)
{
	const struct plan_vm *vm = cell->vm;
	const struct plan_disk *d = cell->disk;
	const struct plan_method *me = cell->method;
	const char *what = NULL;
	const struct plan_entry *at = NULL;

	if (vm->os != PLAN_OS_WINDOWS) {
		if (vm->guest == PLAN_GUEST_BUILTIN && d->kind == PLAN_DISK_IMAGE &&
		    d->filesystem == PLAN_DISK_FS_NTFS) {
			what = "the built-in guest cannot format ntfs (use ext4 or vfat)";
			at = &d->e;
		}
	} else if (d->kind == PLAN_DISK_TMPFS) {
		what = "tmpfs is a Linux filesystem";
		at = &d->e;
	} else if (d->kind == PLAN_DISK_IMAGE && d->filesystem == PLAN_DISK_FS_EXT4) {
		what = "Windows cannot format or mount ext4 (use filesystem ntfs or vfat)";
		at = &d->e;
	} else if (me->type == PLAN_METHOD_DISK_IMAGE && me->filesystem == PLAN_IMAGE_FS_EXT4) {
		what = "Windows cannot mount an ext4 image (use filesystem iso9660 or vfat)";
		at = &me->e;
	} else if (me->type == PLAN_METHOD_SHARE && me->driver == PLAN_SHARE_9P) {
		what = "Windows has no 9p client (use driver virtiofs)";
		at = &me->e;
	}
	if (!what || !first_time(seen, n_seen, cap_seen, vm, at))
		return 0;
	diag_add(diags, at->pos.file, at->pos.line, at->pos.col,
		 "%s '%s' cannot be used with vm '%s' (os %s): %s (first in cell '%s')",
		 at == &d->e ? "disk" : "method", at->name, vm->e.name,
		 vm->os == PLAN_OS_WINDOWS ? "windows" : "linux", what, cell->id);
	return 1;
}

struct matrix *plan_expand(const struct plan *p, size_t cap, struct diag_list *diags)
{
	struct matrix *m = matrix_expand(&p->matrix, cap, p->matrix_file, diags);
	size_t errors = 0;

	if (!m)
		return NULL;

	/* which checks can fire at all: most plans skip the per-cell loop entirely */
	bool q35 = false, ide = false, tmpfs = false, block = false, windows = false;
	bool ext4 = false, ninep = false, ntfs = false, builtin = false;
	for (size_t i = 0; i < p->n_vms; i++) {
		q35 |= p->vms[i].machine == PLAN_MACHINE_Q35;
		windows |= p->vms[i].os == PLAN_OS_WINDOWS;
		builtin |= p->vms[i].guest == PLAN_GUEST_BUILTIN;
	}
	for (size_t i = 0; i < p->n_disks; i++) {
		const struct plan_disk *d = &p->disks[i];
		ide |= d->kind == PLAN_DISK_IMAGE && d->bus == PLAN_BUS_IDE;
		tmpfs |= d->kind == PLAN_DISK_TMPFS;
		ext4 |= d->kind == PLAN_DISK_IMAGE && d->filesystem == PLAN_DISK_FS_EXT4;
		ntfs |= d->kind == PLAN_DISK_IMAGE && d->filesystem == PLAN_DISK_FS_NTFS;
	}
	for (size_t i = 0; i < p->n_methods; i++) {
		const struct plan_method *me = &p->methods[i];
		block |= me->type == PLAN_METHOD_BLOCK;
		ext4 |= me->type == PLAN_METHOD_DISK_IMAGE && me->filesystem == PLAN_IMAGE_FS_EXT4;
		ninep |= me->type == PLAN_METHOD_SHARE && me->driver == PLAN_SHARE_9P;
	}
	bool os_checks = (windows && (tmpfs || ext4 || ninep)) || (builtin && ntfs);
	bool pairs = (q35 && ide) || (tmpfs && block) || os_checks;

	_cleanup_free_ struct pair_seen *seen = NULL;
	size_t n_seen = 0, cap_seen = 0;
	size_t n = matrix_n_cells(m);
	for (size_t i = 0; i < n; i++) {
		size_t n_inc = 0;
		matrix_cell_includes(m, i, &n_inc);
		if (!pairs && !n_inc)
			continue; /* product cells always have all four axes (see default_axes) */
		struct plan_cell cell;
		plan_cell(p, m, i, &cell);
		const void *have[PLAN_N_AXES] = { cell.vm, cell.disk, cell.dataset, cell.method };
		_cleanup_free_ char *missing = NULL;
		for (int a = 0; a < PLAN_N_AXES; a++) {
			if (have[a])
				continue;
			char *s = xasprintf("%s%s%s", missing ? missing : "",
					    missing ? " and no " : "", axis_names[a]);
			free(missing);
			missing = s;
		}
		if (missing) {
			/* only an include entry can make such a cell: point at the last one */
			const size_t *inc = matrix_cell_includes(m, i, &n_inc);
			const struct matrix_entry *e = &p->matrix.include[inc[n_inc - 1]];
			diag_add(
			    diags, p->matrix_file, e->line, e->col,
			    "this include entry adds cell '%s', which has no %s (an entry that "
			    "matches no cell adds one, and a cell needs a vm, a disk, a dataset "
			    "and a method)",
			    cell.id, missing);
			errors++;
			continue;
		}
		if (cell.vm->machine == PLAN_MACHINE_Q35 && cell.disk->kind == PLAN_DISK_IMAGE &&
		    cell.disk->bus == PLAN_BUS_IDE &&
		    first_time(&seen, &n_seen, &cap_seen, cell.vm, cell.disk)) {
			diag_add(
			    diags, cell.disk->e.pos.file, cell.disk->e.pos.line,
			    cell.disk->e.pos.col,
			    "disk '%s' uses bus 'ide', which vm '%s' (machine q35) does not have: "
			    "ide exists only on machine pc (first in cell '%s')",
			    cell.disk->e.name, cell.vm->e.name, cell.id);
			errors++;
		}
		if (cell.disk->kind == PLAN_DISK_TMPFS && cell.method->type == PLAN_METHOD_BLOCK &&
		    first_time(&seen, &n_seen, &cap_seen, cell.method, cell.disk)) {
			diag_add(diags, cell.method->e.pos.file, cell.method->e.pos.line,
				 cell.method->e.pos.col,
				 "method '%s' (type block) writes a raw device, and disk '%s' is a "
				 "tmpfs, which has none (first in cell '%s')",
				 cell.method->e.name, cell.disk->e.name, cell.id);
			errors++;
		}
		if (os_checks)
			errors += check_guest_os(&cell, diags, &seen, &n_seen, &cap_seen);
	}
	if (errors) {
		diag_sort(diags);
		matrix_free(m);
		return NULL;
	}
	return m;
}
