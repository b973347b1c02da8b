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
	const char *names[64];
	size_t n = t->n_keys < ELEMENTSOF(names) ? t->n_keys : ELEMENTSOF(names);
	for (size_t i = 0; i < n; i++)
		names[i] = t->keys[i].name;
	return closest_match(word, names, n);
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
	if (!dk || !k->applies || disc < 0 || (k->applies & (UINT32_C(1) << disc)))
		return NULL;
	_cleanup_free_ char *only = xstrdup("");
	for (size_t j = 0; dk->values[j]; j++) {
		if (!(k->applies & (UINT32_C(1) << j)))
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

int key_table_check(const struct key_table *t, char **err)
{
	const struct key_def *disc = t->discriminator ? key_find(t, t->discriminator) : NULL;

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
