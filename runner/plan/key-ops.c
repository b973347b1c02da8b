/* SPDX-License-Identifier: MIT */
/* Operations over the key tables of keys.c: lookup, set masks, suggestions, defaults, freeing,
 * converting a scalar for a key, and the tables' self-check. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "keys.h"
#include "plan.h"
#include "units.h"

/* ---- table helpers ----------------------------------------------------------------------- */

const struct key_def *key_find(const struct key_table *t, const char *name)
{
	for (size_t i = 0; i < t->n_keys; i++)
		if (STREQ(t->keys[i].name, name))
			return &t->keys[i];
	return NULL;
}

size_t key_index(const struct key_table *t, const struct key_def *k)
{
	return (size_t)(k - t->keys);
}

bool key_is_set(const struct key_table *t, const void *obj, const char *name)
{
	const struct key_def *k = key_find(t, name);
	const uint64_t *set = (const uint64_t *)(const void *)((const char *)obj + t->set_offset);
	return k && (*set & (UINT64_C(1) << key_index(t, k)));
}

void key_mark_set(const struct key_table *t, void *obj, const struct key_def *k)
{
	uint64_t *set = (uint64_t *)(void *)((char *)obj + t->set_offset);
	*set |= UINT64_C(1) << key_index(t, k);
}

const char *key_suggest(const struct key_table *t, const char *word)
{
	const char *names[256];
	return closest_match(word, names, key_names(t, names, ELEMENTSOF(names)));
}

/* ---- variants ------------------------------------------------------------------------------ */

size_t key_n_values(const struct key_def *k)
{
	size_t n = 0;
	while (k->values && k->values[n])
		n++;
	return n;
}

int key_disc(const struct key_table *t, const void *obj)
{
	const struct key_def *dk = t->discriminator ? key_find(t, t->discriminator) : NULL;
	return dk ? *(const int *)(const void *)((const char *)obj + dk->offset) : -1;
}

const struct key_table *key_variant(const struct key_table *t, int v)
{
	if (!t->variants || v < 0)
		return NULL;
	const struct key_def *dk = key_find(t, t->discriminator);
	return (size_t)v < key_n_values(dk) ? t->variants->keys(v) : NULL;
}

void *key_variant_obj(const struct key_table *t, void *obj)
{
	return (char *)obj + t->variants->offset;
}

static bool owns(const struct key_table *t, const struct key_def *k)
{
	return k >= t->keys && k < t->keys + t->n_keys;
}

const struct key_def *key_find_any(const struct key_table *t, int disc, const char *name,
				   const struct key_table **owner)
{
	const struct key_def *k = key_find(t, name);
	*owner = t;
	if (k || !t->variants)
		return k;
	const struct key_table *vt = key_variant(t, disc);
	if (vt && (k = key_find(vt, name))) {
		*owner = vt;
		return k;
	}
	size_t n = key_n_values(key_find(t, t->discriminator));
	for (size_t v = 0; v < n; v++)
		if ((vt = key_variant(t, (int)v)) && (k = key_find(vt, name))) {
			*owner = vt;
			return k;
		}
	return NULL;
}

void key_variant_reset(const struct key_table *t, void *obj, int v)
{
	if (!t->variants)
		return;
	const struct key_table *old = key_variant(t, key_disc(t, obj));
	void *vo = key_variant_obj(t, obj);
	if (old)
		key_free(old, vo);
	memset(vo, 0, t->variants->size);
	const struct key_table *vt = key_variant(t, v);
	if (vt)
		key_defaults(vt, vo);
}

static size_t add_names(const struct key_table *t, const char **names, size_t n, size_t cap)
{
	for (size_t i = 0; i < t->n_keys && n < cap; i++) {
		bool dup = false;
		for (size_t j = 0; j < n && !dup; j++)
			dup = STREQ(names[j], t->keys[i].name);
		if (!dup)
			names[n++] = t->keys[i].name;
	}
	return n;
}

size_t key_names(const struct key_table *t, const char **names, size_t cap)
{
	size_t n = add_names(t, names, 0, cap);
	if (!t->variants)
		return n;
	size_t nv = key_n_values(key_find(t, t->discriminator));
	for (size_t v = 0; v < nv; v++) {
		const struct key_table *vt = key_variant(t, (int)v);
		if (vt)
			n = add_names(vt, names, n, cap);
	}
	return n;
}

/* Whether key k of t (or of a variant of t) applies to discriminator value v. */
static bool applies_to(const struct key_table *t, const struct key_def *k, int v)
{
	if (owns(t, k))
		return (!k->applies || (k->applies & (UINT32_C(1) << v))) &&
		       (!t->variants || !t->variants->applies || t->variants->applies(v, k));
	const struct key_table *vt = key_variant(t, v);
	return vt && key_find(vt, k->name);
}

int key_enum_index(const struct key_def *k, const char *value)
{
	for (int i = 0; k->values && k->values[i]; i++)
		if (STREQ(k->values[i], value))
			return i;
	return -1;
}

char *key_enum_list(const struct key_def *k)
{
	char *s = xstrdup("");
	size_t n = 0;
	while (k->values[n])
		n++;
	for (size_t i = 0; i < n; i++) {
		char *t = xasprintf("%s%s'%s'", s,
				    i == 0       ? ""
				    : i + 1 == n ? " or "
						 : ", ",
				    k->values[i]);
		free(s);
		s = t;
	}
	return s;
}

/* via void *: the offsets come from offsetof, so the fields are aligned */
#define AT(obj, k, type) ((type *)(void *)((char *)(obj) + (k)->offset))

void key_free(const struct key_table *t, void *obj)
{
	const struct key_table *vt = key_variant(t, key_disc(t, obj));
	if (vt)
		key_free(vt, key_variant_obj(t, obj));
	for (size_t i = 0; i < t->n_keys; i++) {
		const struct key_def *k = &t->keys[i];
		switch (k->type) {
		case KEY_STRING:
		case KEY_QUANTITY:
			free(*AT(obj, k, char *));
			*AT(obj, k, char *) = NULL;
			break;
		case KEY_MAPPING: key_free(k->sub, AT(obj, k, char)); break;
		case KEY_STRING_LIST: {
			char **l = *AT(obj, k, char **);
			size_t *n = (size_t *)(void *)((char *)obj + k->count_offset);
			for (size_t j = 0; j < *n; j++)
				free(l[j]);
			free(l);
			*AT(obj, k, char **) = NULL;
			*n = 0;
			break;
		}
		case KEY_NAMED:
		case KEY_LIST: {
			char *arr = *AT(obj, k, char *);
			size_t *n = (size_t *)(void *)((char *)obj + k->count_offset);
			for (size_t j = 0; j < *n; j++) {
				char *e = arr + j * k->elem_size;
				if (k->type == KEY_NAMED)
					free(((struct plan_entry *)(void *)e)->name);
				key_free(k->sub, e);
			}
			free(arr);
			*AT(obj, k, char *) = NULL;
			*n = 0;
			break;
		}
		default: break;
		}
	}
}

char *key_not_applying(const struct key_table *t, const struct key_def *k, int disc)
{
	const struct key_def *dk = t->discriminator ? key_find(t, t->discriminator) : NULL;
	if (!dk || disc < 0 || applies_to(t, k, disc))
		return NULL;
	_cleanup_free_ char *only = xstrdup("");
	for (size_t j = 0; dk->values[j]; j++) {
		if (!applies_to(t, k, (int)j))
			continue;
		char *s = xasprintf("%s%s%s", only, *only ? ", " : "", dk->values[j]);
		free(only);
		only = s;
	}
	return xasprintf("'%s' does not apply to %s '%s' (only to %s)", k->name, dk->name,
			 dk->values[disc], only);
}

void key_clone(const struct key_table *t, void *dst)
{
	const struct key_table *vt = key_variant(t, key_disc(t, dst));
	if (vt)
		key_clone(vt, key_variant_obj(t, dst));
	for (size_t i = 0; i < t->n_keys; i++) {
		const struct key_def *k = &t->keys[i];
		switch (k->type) {
		case KEY_STRING:
		case KEY_QUANTITY:
			if (*AT(dst, k, char *))
				*AT(dst, k, char *) = xstrdup(*AT(dst, k, char *));
			break;
		case KEY_MAPPING: key_clone(k->sub, AT(dst, k, char)); break;
		case KEY_STRING_LIST: {
			char **l = *AT(dst, k, char **);
			size_t n = *(size_t *)(void *)((char *)dst + k->count_offset);
			char **c = n ? xcalloc(n, sizeof(*c)) : NULL;
			for (size_t j = 0; j < n; j++)
				c[j] = xstrdup(l[j]);
			*AT(dst, k, char **) = c;
			break;
		}
		case KEY_NAMED:
		case KEY_LIST:
			*AT(dst, k, char *) = NULL;
			*(size_t *)(void *)((char *)dst + k->count_offset) = 0;
			break;
		default: break;
		}
	}
}

void key_defaults(const struct key_table *t, void *obj)
{
	*(uint64_t *)(void *)((char *)obj + t->set_offset) = 0;
	for (size_t i = 0; i < t->n_keys; i++) {
		const struct key_def *k = &t->keys[i];
		if (k->type == KEY_MAPPING) {
			key_defaults(k->sub, AT(obj, k, char));
			continue;
		}
		if (!k->def)
			continue;
		_cleanup_free_ char *err = NULL;
		/* defaults are checked by key_table_check(); a bad one is a programming error */
		if (key_set_scalar(k, obj, k->def, &err) < 0)
			abort();
	}
	if (t->variants) {
		/* the struct of the value the object has now (the discriminator's default) */
		memset(key_variant_obj(t, obj), 0, t->variants->size);
		const struct key_table *vt = key_variant(t, key_disc(t, obj));
		if (vt)
			key_defaults(vt, key_variant_obj(t, obj));
	}
}

char *key_uint_text(const struct key_def *k, uint64_t v)
{
	switch (k->type) {
	case KEY_SIZE: return format_size(v);
	case KEY_DURATION: return format_duration(v);
	default: return xasprintf("%" PRIu64, v);
	}
}

static int check_urange(const struct key_def *k, uint64_t v, const char *text, char **err)
{
	if (v >= k->min && (k->max == 0 || v <= k->max))
		return 0;
	_cleanup_free_ char *lo = key_uint_text(k, k->min);
	_cleanup_free_ char *hi = key_uint_text(k, k->max);
	if (k->max == 0)
		*err = xasprintf("'%s' must be at least %s, not '%s'", k->name, lo, text);
	else if (k->min == k->max)
		*err = xasprintf("'%s' must be %s, not '%s'", k->name, lo, text);
	else
		*err = xasprintf("'%s' must be between %s and %s, not '%s'", k->name, lo, hi, text);
	return -1;
}

static int check_frange(const struct key_def *k, double v, const char *text, char **err)
{
	const char *pct = k->type == KEY_PERCENT ? "%" : "";
	if (v >= k->fmin && (k->fmax == 0 || v <= k->fmax))
		return 0;
	if (k->fmax == 0)
		*err =
		    xasprintf("'%s' must be at least %g%s, not '%s'", k->name, k->fmin, pct, text);
	else
		*err = xasprintf("'%s' must be between %g%s and %g%s, not '%s'", k->name, k->fmin,
				 pct, k->fmax, pct, text);
	return -1;
}

/* Prefix a units.h message with the key: "'size': invalid size ...". */
static int with_key(const struct key_def *k, char **err)
{
	char *m = xasprintf("'%s': %s", k->name, *err);
	free(*err);
	*err = m;
	return -1;
}

int key_set_scalar(const struct key_def *k, void *obj, const char *text, char **err)
{
	switch (k->type) {
	case KEY_STRING:
	case KEY_QUANTITY:
		free(*AT(obj, k, char *));
		*AT(obj, k, char *) = xstrdup(text);
		return 0;
	case KEY_BOOL: {
		bool b;
		if (parse_bool(text, &b, err) < 0)
			return with_key(k, err);
		*AT(obj, k, bool) = b;
		return 0;
	}
	case KEY_UINT:
	case KEY_SIZE:
	case KEY_DURATION: {
		uint64_t v;
		int r = k->type == KEY_UINT   ? parse_uint(text, &v, err)
			: k->type == KEY_SIZE ? parse_size(text, &v, err)
					      : parse_duration(text, &v, err);
		if (r < 0)
			return with_key(k, err);
		if (check_urange(k, v, text, err) < 0)
			return -1;
		*AT(obj, k, uint64_t) = v;
		return 0;
	}
	case KEY_FLOAT:
	case KEY_PERCENT: {
		double v;
		int r = k->type == KEY_FLOAT ? parse_double(text, &v, err)
					     : parse_percent(text, &v, err);
		if (r < 0)
			return with_key(k, err);
		if (check_frange(k, v, text, err) < 0)
			return -1;
		*AT(obj, k, double) = v;
		return 0;
	}
	case KEY_ENUM: {
		int i = key_enum_index(k, text);
		if (i < 0) {
			size_t n = 0;
			while (k->values[n])
				n++;
			const char *hint = closest_match(text, k->values, n);
			if (hint) {
				*err = xasprintf("invalid %s '%s' (did you mean '%s'?)", k->name,
						 text, hint);
			} else {
				_cleanup_free_ char *list = key_enum_list(k);
				*err =
				    xasprintf("invalid %s '%s' (expected %s)", k->name, text, list);
			}
			return -1;
		}
		*AT(obj, k, int) = i;
		return 0;
	}
	default: *err = xasprintf("'%s' cannot be a single value", k->name); return -1;
	}
}

/* ---- self-check ---------------------------------------------------------------------------- */

static bool valid_key_name(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

static bool scalar_type(enum key_type t)
{
	return t == KEY_STRING || t == KEY_BOOL || t == KEY_UINT || t == KEY_FLOAT ||
	       t == KEY_SIZE || t == KEY_DURATION || t == KEY_PERCENT || t == KEY_QUANTITY ||
	       t == KEY_ENUM;
}

/* Each value's own keys: a well-formed table whose names are not the table's own, with a
 * `set` mask inside the value's struct. */
static int variants_check(const struct key_table *t, const struct key_def *disc, char **err)
{
	if (!disc || disc->type != KEY_ENUM) {
		*err = xasprintf("table '%s' has variants but no enum discriminator", t->name);
		return -1;
	}
	for (size_t v = 0; disc->values[v]; v++) {
		const struct key_table *vt = t->variants->keys((int)v);
		if (!vt)
			continue;
		if (key_table_check(vt, err) < 0)
			return -1;
		if (vt->set_offset + sizeof(uint64_t) > t->variants->size) {
			*err =
			    xasprintf("table '%s': its 'set' mask is outside the %zu bytes of its "
				      "struct",
				      vt->name, t->variants->size);
			return -1;
		}
		for (size_t i = 0; i < vt->n_keys; i++)
			if (key_find(t, vt->keys[i].name) || vt->keys[i].applies) {
				*err = xasprintf("table '%s': key '%s' is one of '%s' or has "
						 "'applies'",
						 vt->name, vt->keys[i].name, t->name);
				return -1;
			}
	}
	return 0;
}

int key_table_check(const struct key_table *t, char **err)
{
	const struct key_def *disc = t->discriminator ? key_find(t, t->discriminator) : NULL;

	if (t->variants && variants_check(t, disc, err) < 0)
		return -1;

	if (!t->doc || !*t->doc) {
		*err = xasprintf("table '%s' has no doc", t->name);
		return -1;
	}
	if (t->n_keys > 64) {
		*err = xasprintf("table '%s' has more than 64 keys", t->name);
		return -1;
	}
	if (t->discriminator && (!disc || disc->type != KEY_ENUM)) {
		*err = xasprintf("table '%s': discriminator '%s' is not an enum key", t->name,
				 t->discriminator);
		return -1;
	}
	for (size_t i = 0; i < t->n_keys; i++) {
		const struct key_def *k = &t->keys[i];
		if (!valid_key_name(k->name)) {
			*err = xasprintf("table '%s': invalid key name '%s'", t->name, k->name);
			return -1;
		}
		for (size_t j = 0; j < i; j++)
			if (STREQ(t->keys[j].name, k->name)) {
				*err =
				    xasprintf("table '%s': duplicate key '%s'", t->name, k->name);
				return -1;
			}
		size_t hl = k->help ? strlen(k->help) : 0;
		/* lower-case start, except acronyms ("QEMU machine type") */
		bool capital = hl > 1 && k->help[0] >= 'A' && k->help[0] <= 'Z' &&
			       k->help[1] >= 'a' && k->help[1] <= 'z';
		if (hl == 0 || k->help[hl - 1] == '.' || capital) {
			*err = xasprintf("key '%s.%s' needs help text (lower-case start, no final "
					 "period)",
					 t->name, k->name);
			return -1;
		}
		if (k->type == KEY_ENUM && (!k->values || !k->values[0])) {
			*err =
			    xasprintf("enum key '%s.%s' has no allowed values", t->name, k->name);
			return -1;
		}
		if ((k->type == KEY_MAPPING || k->type == KEY_NAMED || k->type == KEY_LIST) &&
		    !k->sub) {
			*err = xasprintf("key '%s.%s' has no nested table", t->name, k->name);
			return -1;
		}
		if ((k->type == KEY_NAMES || (k->type == KEY_CUSTOM && !k->sub)) && !k->schema) {
			*err = xasprintf("key '%s.%s' has no schema", t->name, k->name);
			return -1;
		}
		if (k->applies && !disc) {
			*err = xasprintf("key '%s.%s' has 'applies' but its table no discriminator",
					 t->name, k->name);
			return -1;
		}
		if ((k->flags & KEY_REQUIRED) && k->def) {
			*err = xasprintf("required key '%s.%s' has a default", t->name, k->name);
			return -1;
		}
		for (size_t j = 0; k->shorthand && k->shorthand[j]; j++)
			if (k->type != KEY_MAPPING || !key_find(k->sub, k->shorthand[j])) {
				*err = xasprintf("key '%s.%s': shorthand '%s' is not a nested key",
						 t->name, k->name, k->shorthand[j]);
				return -1;
			}
		if (k->def) {
			if (!scalar_type(k->type)) {
				*err = xasprintf("key '%s.%s': only scalar keys have defaults",
						 t->name, k->name);
				return -1;
			}
			/* parse the default into scratch memory laid out like the real struct */
			_cleanup_free_ char *scratch = xcalloc(1, k->offset + 64);
			_cleanup_free_ char *e = NULL;
			if (key_set_scalar(k, scratch, k->def, &e) < 0) {
				*err =
				    xasprintf("key '%s.%s': bad default: %s", t->name, k->name, e);
				return -1;
			}
			if (k->type == KEY_STRING || k->type == KEY_QUANTITY)
				free(*AT(scratch, k, char *));
		}
	}
	return 0;
}
