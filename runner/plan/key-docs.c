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

#define BIT(x) (UINT32_C(1) << (x))

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

static json_t *key_schema_of(const struct key_def *k)
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
			json_t *one = key_schema_of(key_find(k->sub, k->shorthand[0]));
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
	json_object_set_new(s, "description", json_string(k->help));
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

/* Every key `prefix.KEY` a sweep may name (sweep.c): a value, or (in the matrix) a list. */
static void sweep_props(json_t *props, const char *prefix, const struct key_table *t, bool list)
{
	for (size_t i = 0; i < t->n_keys; i++) {
		const struct key_def *k = &t->keys[i];
		_cleanup_free_ char *name = xasprintf("%s.%s", prefix, k->name);
		if (k->type == KEY_MAPPING)
			sweep_props(props, name, k->sub, list);
		if (!sweepable(t, k))
			continue;
		json_t *one =
		    key_schema_of(k->type == KEY_MAPPING ? key_find(k->sub, k->shorthand[0]) : k);
		json_object_del(one, "default");
		json_object_del(one, "description");
		_cleanup_free_ char *help = xasprintf("sweep: %s", k->help);
		json_t *s = list ? json_pack("{s:[o, {s:s, s:O, s:i}]}", "anyOf", one, "type",
					     "array", "items", one, "minItems", 1)
				 : one;
		json_object_set_new(s, "description", json_string(help));
		json_object_set_new(props, name, s);
	}
}

static json_t *table_schema(const struct key_table *t)
{
	json_t *props = json_object(), *req = json_array();

	for (size_t i = 0; i < t->n_keys; i++) {
		const struct key_def *k = &t->keys[i];
		json_object_set_new(props, k->name, key_schema_of(k));
		if (k->flags & KEY_REQUIRED)
			json_array_append_new(req, json_string(k->name));
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
	json_object_set_new(top, "description",
			    json_string("a ferry test plan (generated from runner/plan/keys.c by "
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

static void man_table(struct buf *b, const struct key_table *t)
{
	const struct key_def *disc = t->discriminator ? key_find(t, t->discriminator) : NULL;

	bputs(b, ".SS \"");
	bputs_roff(b, t->name[0] ? t->name : "top level");
	bputs(b, "\"\n");
	bputs_roff(b, t->doc);
	bputs(b, "\n");
	for (size_t i = 0; i < t->n_keys; i++) {
		const struct key_def *k = &t->keys[i];
		bputs(b, ".TP\n.B ");
		bputs_roff(b, k->name);
		bputs(b, "\n(");
		bputs(b, type_name(k));
		if (k->flags & KEY_REQUIRED)
			bputs(b, ", required");
		bputs(b, ") ");
		bputs_roff(b, k->help);
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
			bprintf(b, " Range %g%s to %g%s.", k->fmin,
				k->type == KEY_PERCENT ? "%" : "", k->fmax,
				k->type == KEY_PERCENT ? "%" : "");
		if (k->def) {
			bputs(b, " Default: \\fB");
			bputs_roff(b, k->def);
			bputs(b, "\\fR.");
		}
		if (k->applies && disc) {
			bputs(b, " Only with ");
			bputs_roff(b, disc->name);
			bool first = true;
			for (size_t j = 0; disc->values[j]; j++) {
				if (!(k->applies & BIT(j)))
					continue;
				bputs(b, first ? " \\fB" : ", \\fB");
				bputs_roff(b, disc->values[j]);
				bputs(b, "\\fR");
				first = false;
			}
			bputs(b, ".");
		}
		bputs(b, "\n");
	}
}

char *key_man(void)
{
	struct buf b = { 0 };
	bputs(&b, ".\\\" PLAN KEYS: generated by 'ferry schema \\-\\-man' from runner/plan/keys.c; "
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
	const struct key_def *dk = t->discriminator ? key_find(t, t->discriminator) : NULL;
	int disc = dk ? *(const int *)(const void *)((const char *)obj + dk->offset) : -1;

	for (size_t i = 0; i < t->n_keys; i++) {
		const struct key_def *k = &t->keys[i];
		const void *f = (const char *)obj + k->offset;
		json_t *v = NULL;
		if (k->applies && disc >= 0 && !(k->applies & BIT(disc)))
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
	return o;
}
