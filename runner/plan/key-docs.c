/* SPDX-License-Identifier: MIT */
/* What the key tables generate besides the parser: the JSON Schema for editors, the PLAN KEYS
 * section of ferry(1), and an entry's values as JSON (ferry expand, results provenance). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "plan.h"
#include "units.h"

/* ---- JSON Schema --------------------------------------------------------------------------- */

/* Values may also be "${VAR}" strings, substituted before they are read. */
#define ENV_PATTERN      "\\$\\{"
#define NUM_PATTERN      "[0-9]+(\\.[0-9]+)?"
#define SIZE_PATTERN     "^ *" NUM_PATTERN " *(([KkMmGgTt][Ii]?)?[Bb])? *$|" ENV_PATTERN
#define DURATION_PATTERN "^ *(" NUM_PATTERN " *(ms|s|m|h) *)+$|" ENV_PATTERN
#define PERCENT_PATTERN  "^ *" NUM_PATTERN " *% *$|" ENV_PATTERN

static json_t *env_string(void)
{
	return json_pack("{s:s, s:s}", "type", "string", "pattern", ENV_PATTERN);
}

static json_t *table_schema(const struct key_table *t);
static json_t *json_own(char *s);

/* A key's help; a discriminator with variants lists its values with what each is ("how the data
 * goes in: disk-image (attach an image holding it), ..."). Caller frees. */
static char *key_help(const struct key_table *t, const struct key_def *k)
{
	if (!t || !t->variants || !t->variants->summary || !STREQ(k->name, t->discriminator))
		return xstrdup(k->help);
	char *h = xasprintf("%s:", k->help);
	for (size_t v = 0; k->values[v]; v++) {
		char *n = xasprintf("%s%s %s (%s)", h, v ? "," : "", k->values[v],
				    t->variants->summary((int)v));
		free(h);
		h = n;
	}
	return h;
}

/* Set property `name`; a name two variants declare differently takes either schema. */
static void merge_prop(json_t *props, const char *name, json_t *s)
{
	json_t *old = json_object_get(props, name);
	if (!old) {
		json_object_set_new(props, name, s);
	} else if (json_equal(old, s)) {
		json_decref(s);
	} else {
		json_t *any = json_object_get(old, "anyOf");
		if (any && json_object_size(old) == 1)
			json_array_append_new(any, s);
		else
			json_object_set_new(props, name, json_pack("{s:[O, o]}", "anyOf", old, s));
	}
}

static json_t *key_schema_of(const struct key_table *t, const struct key_def *k)
{
	json_t *s = NULL;

	switch (k->type) {
	case KEY_STRING: s = json_pack("{s:s}", "type", "string"); break;
	case KEY_QUANTITY: s = json_pack("{s:[s,s]}", "type", "string", "number"); break;
	case KEY_BOOL:
		s = json_pack("{s:[{s:s}, o]}", "anyOf", "type", "boolean", env_string());
		break;
	case KEY_UINT: {
		json_t *n =
		    json_pack("{s:s, s:I}", "type", "integer", "minimum", (json_int_t)k->min);
		if (k->max && k->max <= (uint64_t)INT64_MAX)
			json_object_set_new(n, "maximum", json_integer((json_int_t)k->max));
		s = json_pack("{s:[o, o]}", "anyOf", n, env_string());
		break;
	}
	case KEY_FLOAT: {
		json_t *n = json_pack("{s:s, s:f}", "type", "number", "minimum", k->fmin);
		if (k->fmax)
			json_object_set_new(n, "maximum", json_real(k->fmax));
		s = json_pack("{s:[o, o]}", "anyOf", n, env_string());
		break;
	}
	case KEY_SIZE:
		s = json_pack("{s:[{s:s, s:i}, {s:s, s:s}]}", "anyOf", "type", "integer", "minimum",
			      0, "type", "string", "pattern", SIZE_PATTERN);
		break;
	case KEY_DURATION:
		s = json_pack("{s:s, s:s}", "type", "string", "pattern", DURATION_PATTERN);
		break;
	case KEY_PERCENT:
		s = json_pack("{s:s, s:s}", "type", "string", "pattern", PERCENT_PATTERN);
		break;
	case KEY_ENUM: {
		json_t *e = json_array();
		for (size_t i = 0; k->values[i]; i++) {
			json_array_append_new(e, json_string(k->values[i]));
			/* a plain `null` in YAML is the null value, not the string: editors that
			   check a plan against the schema see `type: null` as null, which ferry
			   reads as the name (it reads every scalar as text) */
			if (STREQ(k->values[i], "null"))
				json_array_append_new(e, json_null());
		}
		s = json_pack("{s:[{s:o}, o]}", "anyOf", "enum", e, env_string());
		break;
	}
	case KEY_MAPPING: {
		json_t *obj = table_schema(k->sub);
		if (k->shorthand) {
			json_t *one = key_schema_of(k->sub, key_find(k->sub, k->shorthand[0]));
			json_object_del(one, "description");
			json_object_del(one, "default");
			s = json_pack("{s:[o, o]}", "anyOf", one, obj);
		} else {
			s = obj;
		}
		break;
	}
	case KEY_STRING_LIST:
		s = json_pack("{s:s, s:{s:s}}", "type", "array", "items", "type", "string");
		break;
	case KEY_NAMED:
		s = json_pack("{s:s, s:{s:s}, s:o}", "type", "object", "propertyNames", "pattern",
			      "^[A-Za-z0-9._-]+$", "additionalProperties", table_schema(k->sub));
		break;
	case KEY_LIST:
		s = json_pack("{s:s, s:o}", "type", "array", "items", table_schema(k->sub));
		break;
	case KEY_NAMES:
	case KEY_CUSTOM:
		if (k->schema) {
			s = json_loads(k->schema, 0, NULL);
			if (!s)
				abort(); /* key_table_check() catches this in the unit tests */
		} else {
			s = table_schema(k->sub);
		}
		break;
	}
	json_object_set_new(s, "description", json_own(key_help(t, k)));
	if (k->def) {
		json_t *d;
		if (k->type == KEY_UINT)
			d = json_integer((json_int_t)strtoull(k->def, NULL, 10));
		else if (k->type == KEY_FLOAT)
			d = json_real(strtod(k->def, NULL));
		else if (k->type == KEY_BOOL)
			d = json_boolean(STREQ(k->def, "true"));
		else
			d = json_string(k->def);
		json_object_set_new(s, "default", d);
	}
	return s;
}

static bool sweepable(const struct key_table *t, const struct key_def *k)
{
	if (t->discriminator && STREQ(k->name, t->discriminator))
		return false;
	switch (k->type) {
	case KEY_STRING:
	case KEY_BOOL:
	case KEY_UINT:
	case KEY_FLOAT:
	case KEY_SIZE:
	case KEY_DURATION:
	case KEY_PERCENT:
	case KEY_QUANTITY:
	case KEY_ENUM: return true;
	case KEY_MAPPING: return k->shorthand != NULL;
	default: return false;
	}
}

/* Every key `prefix.KEY` a sweep may name (sweep.c): a value, or (in the matrix) a list; the
 * keys of every variant too (method.streams). */
static void sweep_props(json_t *props, const char *prefix, const struct key_table *t, bool list)
{
	for (size_t i = 0; i < t->n_keys; i++) {
		const struct key_def *k = &t->keys[i];
		_cleanup_free_ char *name = xasprintf("%s.%s", prefix, k->name);
		if (k->type == KEY_MAPPING)
			sweep_props(props, name, k->sub, list);
		if (!sweepable(t, k))
			continue;
		const struct key_def *leaf =
		    k->type == KEY_MAPPING ? key_find(k->sub, k->shorthand[0]) : k;
		json_t *one = key_schema_of(k->type == KEY_MAPPING ? k->sub : t, leaf);
		json_object_del(one, "default");
		json_object_del(one, "description");
		_cleanup_free_ char *help = xasprintf("sweep: %s", k->help);
		json_t *s = list ? json_pack("{s:[o, {s:s, s:O, s:i}]}", "anyOf", one, "type",
					     "array", "items", one, "minItems", 1)
				 : one;
		json_object_set_new(s, "description", json_string(help));
		merge_prop(props, name, s);
	}
	size_t nv = t->variants ? key_n_values(key_find(t, t->discriminator)) : 0;
	for (size_t v = 0; v < nv; v++)
		if (key_variant(t, (int)v))
			sweep_props(props, prefix, key_variant(t, (int)v), list);
}

static json_t *table_schema(const struct key_table *t)
{
	json_t *props = json_object(), *req = json_array();

	for (size_t i = 0; i < t->n_keys; i++) {
		const struct key_def *k = &t->keys[i];
		json_object_set_new(props, k->name, key_schema_of(t, k));
		if (k->flags & KEY_REQUIRED)
			json_array_append_new(req, json_string(k->name));
	}
	/* the keys of every variant (each method's own options): which type they go with is
	 * the plan reader's check and ferry(1)'s, not the schema's */
	size_t nv = t->variants ? key_n_values(key_find(t, t->discriminator)) : 0;
	for (size_t v = 0; v < nv; v++) {
		const struct key_table *vt = key_variant(t, (int)v);
		for (size_t i = 0; vt && i < vt->n_keys; i++)
			merge_prop(props, vt->keys[i].name, key_schema_of(vt, &vt->keys[i]));
	}
	if (t == &plan_matrix_keys || t == &plan_exclude_keys || t == &plan_matrix_include_keys) {
		static const struct key_table *const entries[] = { &plan_vm_keys, &plan_disk_keys,
								   &plan_dataset_keys,
								   &plan_method_keys };
		for (int a = 0; a < PLAN_N_AXES; a++)
			sweep_props(props, plan_axis_name((enum plan_axis)a), entries[a],
				    t == &plan_matrix_keys);
	}
	json_t *s = json_pack("{s:s, s:s, s:o, s:b}", "type", "object", "description", t->doc,
			      "properties", props, "additionalProperties", 0);
	if (json_array_size(req))
		json_object_set_new(s, "required", req);
	else
		json_decref(req);
	return s;
}

json_t *key_schema(void)
{
	json_t *s = table_schema(&plan_keys);
	json_t *top = json_pack(
	    "{s:s, s:s, s:s}", "$schema", "http://json-schema.org/draft-07/schema#", "$id",
	    "https://github.com/ferry/ferry/schema/ferry-plan.schema.json", "title", "ferry plan");
	json_object_update(top, s);
	json_decref(s);
	json_object_set_new(
	    top, "description",
	    json_string("a ferry test plan (generated from runner/plan/keys*.c and the methods' "
			"options in runner/methods/ by "
			"'ferry schema'; see ferry(1))"));
	return top;
}

/* ---- man page ------------------------------------------------------------------------------ */

struct buf {
	char *s;
	size_t n, cap;
};

static void bputs(struct buf *b, const char *s)
{
	size_t l = strlen(s);
	b->s = xgrow(b->s, &b->cap, b->n + l + 1, 1);
	memcpy(b->s + b->n, s, l + 1);
	b->n += l;
}

_printf_(2, 3) static void bprintf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *s = xvasprintf(fmt, ap);
	va_end(ap);
	bputs(b, s);
}

/* roff: a backslash is \e, and '-' is \- so that copied keys and values stay ASCII hyphens */
static void bputs_roff(struct buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			bputs(b, "\\e");
		else if (*s == '-')
			bputs(b, "\\-");
		else {
			char c[2] = { *s, 0 };
			bputs(b, c);
		}
	}
}

static const char *type_name(const struct key_def *k)
{
	switch (k->type) {
	case KEY_STRING: return "string";
	case KEY_BOOL: return "boolean";
	case KEY_UINT: return "integer";
	case KEY_FLOAT: return "number";
	case KEY_SIZE: return "size";
	case KEY_DURATION: return "duration";
	case KEY_PERCENT: return "percentage";
	case KEY_QUANTITY: return "quantity";
	case KEY_ENUM: return "enum";
	case KEY_MAPPING: return k->shorthand ? "scalar or mapping" : "mapping";
	case KEY_STRING_LIST: return "list of strings";
	case KEY_NAMED: return "mapping of names";
	case KEY_LIST: return "list of mappings";
	case KEY_NAMES: return "name or list of names";
	case KEY_CUSTOM: return k->sub ? "mapping" : "list of lists";
	}
	return "value";
}

/* Whether k is the table's own key or value v's own key itself: two values' keys of one name
 * (ssh's and vm2vm's `tool`) are two keys, each documented with its own value. */
static bool variant_holds(const struct key_table *t, const struct key_def *k, int v)
{
	if (k >= t->keys && k < t->keys + t->n_keys)
		return true;
	const struct key_table *vt = key_variant(t, v);
	return vt && k >= vt->keys && k < vt->keys + vt->n_keys;
}

/* One key's paragraph; `t` is its table (a variant's for a value's own key), `parent` the table
 * whose discriminator says which values it applies to (NULL: always). */
static void man_key(struct buf *b, const struct key_table *t, const struct key_def *k,
		    const struct key_table *parent)
{
	const struct key_def *disc =
	    parent && parent->discriminator ? key_find(parent, parent->discriminator) : NULL;

	bputs(b, ".TP\n.B ");
	bputs_roff(b, k->name);
	bputs(b, "\n(");
	bputs(b, type_name(k));
	if (k->flags & KEY_REQUIRED)
		bputs(b, ", required");
	bputs(b, ") ");
	_cleanup_free_ char *help = key_help(t, k);
	bputs_roff(b, help);
	bputs(b, ".");
	if (k->type == KEY_ENUM) {
		bputs(b, " One of");
		for (size_t j = 0; k->values[j]; j++) {
			bputs(b, j == 0 ? " \\fB" : ", \\fB");
			bputs_roff(b, k->values[j]);
			bputs(b, "\\fR");
		}
		bputs(b, ".");
	}
	if (k->type == KEY_UINT || k->type == KEY_SIZE || k->type == KEY_DURATION) {
		_cleanup_free_ char *lo = key_uint_text(k, k->min);
		_cleanup_free_ char *hi = key_uint_text(k, k->max);
		if (k->max && k->min == k->max)
			bprintf(b, " Must be %s.", lo);
		else if (k->max)
			bprintf(b, " Range %s to %s.", lo, hi);
		else if (k->min)
			bprintf(b, " At least %s.", lo);
	}
	if ((k->type == KEY_FLOAT || k->type == KEY_PERCENT) && k->fmax)
		bprintf(b, " Range %g%s to %g%s.", k->fmin, k->type == KEY_PERCENT ? "%" : "",
			k->fmax, k->type == KEY_PERCENT ? "%" : "");
	if (k->def) {
		bputs(b, " Default: \\fB");
		bputs_roff(b, k->def);
		bputs(b, "\\fR.");
	}
	if (disc && k != disc) {
		/* the values it applies to, when not all */
		struct buf only = { 0 };
		size_t n = 0, all = key_n_values(disc);
		bputs(&only, "");
		for (size_t j = 0; j < all; j++) {
			_cleanup_free_ char *na = key_not_applying(parent, k, (int)j);
			if (na || !variant_holds(parent, k, (int)j))
				continue;
			bputs(&only, n++ ? ", \\fB" : " \\fB");
			bputs_roff(&only, disc->values[j]);
			bputs(&only, "\\fR");
		}
		if (n < all) {
			bputs(b, " Only with ");
			bputs_roff(b, disc->name);
			bputs(b, only.s);
			bputs(b, ".");
		}
		free(only.s);
	}
	bputs(b, "\n");
}

static void man_table(struct buf *b, const struct key_table *t)
{
	bputs(b, ".SS \"");
	bputs_roff(b, t->name[0] ? t->name : "top level");
	bputs(b, "\"\n");
	bputs_roff(b, t->doc);
	bputs(b, "\n");
	for (size_t i = 0; i < t->n_keys; i++)
		man_key(b, t, &t->keys[i], t->discriminator ? t : NULL);
	/* then each value's own keys, in the values' order */
	size_t nv = t->variants ? key_n_values(key_find(t, t->discriminator)) : 0;
	for (size_t v = 0; v < nv; v++) {
		const struct key_table *vt = key_variant(t, (int)v);
		for (size_t i = 0; vt && i < vt->n_keys; i++)
			man_key(b, vt, &vt->keys[i], t);
	}
}

char *key_man(void)
{
	struct buf b = { 0 };
	bputs(&b,
	      ".\\\" PLAN KEYS: generated by 'ferry schema \\-\\-man' from runner/plan/keys*.c and "
	      "runner/methods/; "
	      "do not edit\n");
	for (size_t i = 0; i < n_key_tables; i++)
		man_table(&b, key_tables[i]);
	bputs(&b, ".\\\" end of generated PLAN KEYS\n");
	return b.s;
}

/* ---- values as JSON ------------------------------------------------------------------------ */

/* A JSON string from a string we own and free. */
static json_t *json_own(char *s)
{
	json_t *j = json_string(s);
	free(s);
	return j;
}

char *key_value_text(const struct key_def *k, const void *obj)
{
	const void *f = (const char *)obj + k->offset;
	switch (k->type) {
	case KEY_STRING:
	case KEY_QUANTITY: {
		const char *s = *(char *const *)f;
		return s ? xstrdup(s) : NULL;
	}
	case KEY_BOOL: return xstrdup(*(const bool *)f ? "true" : "false");
	case KEY_UINT:
	case KEY_SIZE:
	case KEY_DURATION: return key_uint_text(k, *(const uint64_t *)f);
	case KEY_FLOAT:
	case KEY_PERCENT: {
		/* the shortest text that reads back as the same number */
		double v = *(const double *)f;
		char *t = xasprintf("%.15g", v);
		if (strtod(t, NULL) != v) {
			free(t);
			t = xasprintf("%.17g", v);
		}
		if (k->type == KEY_FLOAT)
			return t;
		char *pct = xasprintf("%s%%", t);
		free(t);
		return pct;
	}
	case KEY_ENUM: return xstrdup(k->values[*(const int *)f]);
	default: return NULL;
	}
}

json_t *key_values_json(const struct key_table *t, const void *obj)
{
	json_t *o = json_object();
	int disc = key_disc(t, obj);

	for (size_t i = 0; i < t->n_keys; i++) {
		const struct key_def *k = &t->keys[i];
		const void *f = (const char *)obj + k->offset;
		json_t *v = NULL;
		_cleanup_free_ char *na = disc >= 0 ? key_not_applying(t, k, disc) : NULL;
		if (na)
			continue; /* an option of another method type or disk kind */
		switch (k->type) {
		case KEY_STRING:
		case KEY_QUANTITY: {
			const char *s = *(char *const *)f;
			if (s)
				v = json_string(s);
			break;
		}
		case KEY_BOOL: v = json_boolean(*(const bool *)f); break;
		case KEY_UINT: v = json_integer((json_int_t) * (const uint64_t *)f); break;
		case KEY_FLOAT: v = json_real(*(const double *)f); break;
		case KEY_SIZE: v = json_own(format_size(*(const uint64_t *)f)); break;
		case KEY_DURATION: v = json_own(format_duration(*(const uint64_t *)f)); break;
		case KEY_PERCENT: v = json_own(xasprintf("%g%%", *(const double *)f)); break;
		case KEY_ENUM: v = json_string(k->values[*(const int *)f]); break;
		case KEY_MAPPING: v = key_values_json(k->sub, f); break;
		default: break;
		}
		if (v)
			json_object_set_new(o, k->name, v);
	}
	const struct key_table *vt = key_variant(t, disc);
	if (vt) {
		/* the value's own keys (a method's options) */
		json_t *vo = key_values_json(vt, (const char *)obj + t->variants->offset);
		json_object_update(o, vo);
		json_decref(vo);
	}
	return o;
}

/* An entry as the results and `ferry expand` record it: its name and every key's value. */
json_t *key_entry_json(const struct key_table *t, const struct plan_entry *e)
{
	json_t *o = json_pack("{s:s}", "name", e->name);
	json_t *v = key_values_json(t, e);
	json_object_update(o, v);
	json_decref(v);
	return o;
}
