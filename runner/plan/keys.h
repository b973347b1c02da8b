/* SPDX-License-Identifier: MIT */
/*
 * The plan keys, declared once as data (fio's options table): one table per section. The YAML
 * reader (plan.c), the defaults, the did-you-mean suggestions, the JSON Schema for editors and
 * the PLAN KEYS section of ferry(1) all read these tables; tests/unit/test-keys.c checks them.
 */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

enum key_type {
	KEY_STRING,      /* char *, owned */
	KEY_BOOL,        /* bool */
	KEY_UINT,        /* uint64_t, range [min, max] */
	KEY_FLOAT,       /* double, range [fmin, fmax] */
	KEY_SIZE,        /* uint64_t bytes (units.h), range [min, max] */
	KEY_DURATION,    /* uint64_t ns, range [min, max] */
	KEY_PERCENT,     /* double percent, range [fmin, fmax] */
	KEY_QUANTITY,    /* char *: a number or a number with a unit, read later by its owner */
	KEY_ENUM,        /* an enum (int-sized): the index of the value in `values` */
	KEY_MAPPING,     /* a nested struct described by `sub`; `shorthand` allows a scalar */
	KEY_STRING_LIST, /* char ** with a size_t count at `count_offset` */
	KEY_NAMED,       /* mapping NAME -> entry: array of `elem_size` structs + count */
	KEY_LIST,        /* sequence of mappings: array of `elem_size` structs + count */
	KEY_NAMES,       /* a name or a list of names (matrix axes; parsed by plan.c) */
	KEY_CUSTOM,      /* parsed by plan.c; `schema` gives its JSON Schema */
};

enum key_flags {
	KEY_REQUIRED = 1 << 0,
	/* a KEY_STRING naming a vms entry whose NIC is on ferry's private network (backend
	 * private): an undefined name or another backend is an error at the value, checked once
	 * every file is read (a method's second guest: vm2vm's `from`) */
	KEY_VM_PRIVATE = 1 << 1,
};

struct key_table;
struct plan_entry;

struct key_def {
	const char *name;
	enum key_type type;
	size_t offset;   /* of the field in the table's struct */
	const char *def; /* default in plan syntax ("4GiB", "virtio"); NULL: zero / NULL / none */
	const char *const *values; /* KEY_ENUM: allowed values, NULL-terminated */
	uint64_t min, max; /* KEY_UINT, KEY_SIZE, KEY_DURATION: inclusive range; max 0: no limit */
	double fmin, fmax; /* KEY_FLOAT, KEY_PERCENT: inclusive range; fmax 0: no limit */
	const char *help;  /* one sentence, lower-case start, no final period */
	const struct key_table *sub;    /* KEY_MAPPING, KEY_NAMED, KEY_LIST */
	const char *const *shorthand;   /* KEY_MAPPING: sub keys a scalar value sets, NULL-term. */
	size_t elem_size, count_offset; /* KEY_NAMED, KEY_LIST, KEY_STRING_LIST */
	unsigned flags;                 /* enum key_flags */
	uint32_t applies; /* bit v: allowed when the table's discriminator has value v; 0: always */
	const char *schema; /* KEY_CUSTOM, KEY_NAMES: JSON Schema fragment */
};

/*
 * Keys a discriminator value brings with it, declared by their owner instead of in keys.c:
 * methods.NAME's `type` names a transfer method, and each method declares its own options in
 * its own file (runner/methods/NAME.c, as fio's ioengines carry `.options`). The keys of value v
 * fill a struct of their own, stored at `offset` in the table's object (at most `size` bytes);
 * their offsets and `set` mask are relative to it. The object always holds the struct of its
 * current discriminator value (key_variant_reset()).
 */
struct key_variants {
	const struct key_table *(*keys)(int v); /* value v's own keys; NULL: none */
	/* whether the table's own key k applies to value v (NULL: every key to every value) */
	bool (*applies)(int v, const struct key_def *k);
	const char *(*summary)(int v); /* what value v is, for the discriminator's docs */
	size_t offset, size;
};

struct key_table {
	const char *name; /* the section path in docs: "vms.NAME", "run.repeat" */
	const char *doc;  /* what the section is */
	const struct key_def *keys;
	size_t n_keys;
	size_t set_offset;         /* of the uint64_t `set` mask in the struct */
	const char *discriminator; /* KEY_ENUM key whose value selects `applies`; NULL: none */
	const struct key_variants *variants; /* keys the discriminator's value adds; NULL: none */
};

extern const struct key_table plan_keys;                /* top level */
extern const struct key_table plan_vm_keys;             /* vms.NAME */
extern const struct key_table plan_disk_keys;           /* disks.NAME */
extern const struct key_table plan_dataset_keys;        /* datasets.NAME */
extern const struct key_table plan_method_keys;         /* methods.NAME */
extern const struct key_table plan_matrix_keys;         /* matrix */
extern const struct key_table plan_matrix_include_keys; /* matrix.include[] */
extern const struct key_table plan_run_keys;            /* run */
extern const struct key_table plan_criterion_keys;      /* criteria[] */
extern const struct key_table plan_report_keys;         /* report */
extern const struct key_table plan_nic_keys;            /* vms.NAME.nic */
extern const struct key_table plan_size_range_keys;     /* datasets.NAME.size */
extern const struct key_table plan_dirs_keys;           /* datasets.NAME.dirs */
extern const struct key_table plan_archive_keys;        /* methods.NAME.archive */
extern const struct key_table plan_repeat_keys;         /* run.repeat */
extern const struct key_table plan_boots_keys;          /* run.boots */
extern const struct key_table plan_where_keys;          /* criteria[].where */
extern const struct key_table plan_markdown_keys;       /* report.markdown */
extern const struct key_table plan_exclude_keys;        /* matrix.exclude[] */
extern const struct key_table plan_regression_keys;     /* regression */

/* The spellings of enum plan_bus and enum plan_disk_format, in their order (plan.h), for the
 * keys of disks and of methods that name a bus or an image format. */
extern const char *const plan_bus_values[];
extern const char *const plan_format_values[];

/* Every table, parents before children, for checks and generators (methods.NAME's variants,
 * each method's options, are reached through plan_method_keys). */
extern const struct key_table *const key_tables[];
extern const size_t n_key_tables;

const struct key_def *key_find(const struct key_table *t, const char *name);

/* ---- tables with variants (struct key_variants) ---- */
/* The discriminator's value in `obj`, or -1 when the table has none. */
int key_disc(const struct key_table *t, const void *obj);
/* How many values the discriminator has. */
size_t key_n_values(const struct key_def *k);
/* The keys value `v` adds to `t` (NULL: none), and where their struct is in `obj`. */
const struct key_table *key_variant(const struct key_table *t, int v);
void *key_variant_obj(const struct key_table *t, void *obj);
/*
 * Key `name` of `t` for discriminator value `disc` (-1: unknown): one of t's own, else one of
 * the keys of value disc, else (so that a message can say which values have it) the first
 * value's that has it. *owner is the table it belongs to (t or a variant). NULL: none has it.
 */
const struct key_def *key_find_any(const struct key_table *t, int disc, const char *name,
				   const struct key_table **owner);
/* Free the struct of obj's current discriminator value and fill it with the defaults of value
 * `v`, which the caller then stores as the discriminator (or has stored already). */
void key_variant_reset(const struct key_table *t, void *obj, int v);
/* Every key name of `t` and of its variants, each once, in table order; returns the count. */
size_t key_names(const struct key_table *t, const char **names, size_t cap);
/* Index of `k` in `t` (its bit in the `set` mask). */
size_t key_index(const struct key_table *t, const struct key_def *k);
bool key_is_set(const struct key_table *t, const void *obj, const char *name);
void key_mark_set(const struct key_table *t, void *obj, const struct key_def *k);

/* The closest key name to `word` in `t`, or NULL. */
const char *key_suggest(const struct key_table *t, const char *word);

/* Index of `value` in an enum's values, or -1. */
int key_enum_index(const struct key_def *k, const char *value);
/* "a, b or c" for messages. */
char *key_enum_list(const struct key_def *k);
/* A KEY_UINT, KEY_SIZE or KEY_DURATION value as a plan would write it ("4GiB", "10m", "3"). */
char *key_uint_text(const struct key_def *k, uint64_t v);

/* Why key `k` of `t` (or of one of its variants) is not allowed when the table's discriminator
 * has value `disc` ("'msize' does not apply to type 'block' (only to share)"), or NULL when it
 * is. */
char *key_not_applying(const struct key_table *t, const struct key_def *k, int disc);
/* Free what the table's fields own in `obj` (strings, lists, nested entries). */
void key_free(const struct key_table *t, void *obj);
/* Make `dst`, a byte copy of an object of table `t`, own copies of what the source owned
 * (strings, string lists, nested mappings); named entries and lists of mappings are not
 * copied (dst gets none). */
void key_clone(const struct key_table *t, void *dst);

/*
 * Self-check of a table and its children: names unique and valid, help present, enums have
 * values, defaults in range, nested tables present. Returns 0 or -1 with a message in *err.
 */
int key_table_check(const struct key_table *t, char **err);

/* The JSON Schema (draft-07) for a plan file, generated from the tables. */
json_t *key_schema(void);
/* The PLAN KEYS section of ferry(1), in roff, generated from the tables. */
char *key_man(void);

/* Apply every default of `t` (recursively into nested mappings) to `obj`; clears `set`. */
void key_defaults(const struct key_table *t, void *obj);

/*
 * Convert a scalar (after ${VAR} substitution) for a key of a scalar type and store it in `obj`,
 * range-checked. Returns 0, or -1 with a message in *err ("'vcpus' must be between 1 and 64,
 * not 100"). Does not mark the key set.
 */
int key_set_scalar(const struct key_def *k, void *obj, const char *text, char **err);

/*
 * The values of `obj`'s scalar keys (and nested mappings) as a JSON object, written as a plan
 * would write them: sizes "4GiB", durations "10m", percentages "5%", enums by name. Unset
 * strings are left out.
 */
json_t *key_values_json(const struct key_table *t, const void *obj);
/* {"name": the entry's name, and key_values_json() of it}. */
json_t *key_entry_json(const struct key_table *t, const struct plan_entry *e);
/* The value of scalar key `k` of `obj` as a plan would write it (the same text as
 * key_values_json(): "4GiB", "10m", "5%", "true", an enum's name); NULL for other types. */
char *key_value_text(const struct key_def *k, const void *obj);
