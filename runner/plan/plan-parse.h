/* SPDX-License-Identifier: MIT */
/*
 * Private to runner/plan: the state of one plan_load() and the helpers its files share.
 *
 *   load.c            files: opening (regular files only, bounded), YAML events -> one document
 *                     with limits on depth and nodes, includes
 *   walk.c            the table-driven walk over a document that fills the structs (keys.c)
 *   matrix-section.c  the plan's `matrix:` section -> struct matrix_def
 *   entries.c         what is read from one entry beyond its keys (criteria bounds, references)
 *   trust.c           what a plan may name: connection URIs, report paths, ${VAR}s
 *   rules.c           the rules table: cross-field compatibility (validate errors, skips)
 *   plan.c            the public API: parse, resolve names and default axes, cells, expand
 */
#pragma once

#include <stdarg.h>
#include <yaml.h>

#include "keys.h"
#include "plan-limits.h"
#include "plan.h"
#include "rules.h"

/* A name the plan refers to (matrix, criteria); checked once every file is merged. */
struct ref {
	enum plan_axis axis;
	char *name;
	struct plan_pos pos;
	bool matrix; /* dropped when a later file replaces the matrix */
	/* a vm that must be on ferry's private network (KEY_VM_PRIVATE): the key that names it
	 * ("methods.m.from"), else NULL */
	char *private_by;
};

struct ctx {
	struct plan *p;
	const struct plan_options *o; /* never NULL (defaults when the caller gave none) */
	struct diag_list *diags;
	size_t n_errors;
	const char *file; /* current file, interned in p->files */
	yaml_document_t *doc;
	struct ref *refs;
	size_t n_refs, cap_refs;
	/* the include chain, for cycle messages: canonical keys and display names */
	char *chain_key[PLAN_MAX_INCLUDE_DEPTH + 1];
	const char *chain_name[PLAN_MAX_INCLUDE_DEPTH + 1];
	size_t n_chain;
	bool have_matrix;
	struct plan_pos matrix_pos;
	bool incomplete; /* a file could not be loaded: whole-plan checks would only pile on */
	size_t n_nodes;  /* YAML nodes of every file so far (aliases count what they repeat) */
};

_printf_(5, 6) void pl_err_pos(struct ctx *c, const char *file, int line, int col, const char *fmt,
			       ...);
_printf_(3, 4) void pl_warn_node(struct ctx *c, const yaml_node_t *n, const char *fmt, ...);

#define pl_err_node(c, n, ...)                                                                     \
	pl_err_pos((c), (c)->file, (int)(n)->start_mark.line + 1, (int)(n)->start_mark.column + 1, \
		   __VA_ARGS__)
#define pl_err_at(c, pos, ...) pl_err_pos((c), (pos).file, (pos).line, (pos).col, __VA_ARGS__)

struct plan_pos pl_node_pos(struct ctx *c, const yaml_node_t *n);
const char *pl_intern_file(struct plan *p, const char *name);
int pl_axis_from_name(const char *s);

/* ---- YAML nodes (walk.c) ---- */
yaml_node_t *pl_node(struct ctx *c, int id);
const char *pl_scalar(const yaml_node_t *n);
/* An empty value (`key:`), `~` or `null`, written plain. */
bool pl_is_null(const yaml_node_t *n);
/* "a mapping", "a list", "a single value", "an empty value": for messages */
const char *pl_node_kind(const yaml_node_t *n);
/* Mapping `id` of `d` with its YAML merge keys ('<<: *a', '<<: [*a, *b]') resolved
 * (merge-keys.c): `id` when it has none, else the id of a new mapping. Errors are reported. */
int pl_resolve_merges(struct ctx *c, yaml_document_t *d, int id);
/*
 * Every mapping the walk visits: keys must be single values, and unique (in linear time).
 * Returns one flag per pair (owned by the caller): true for a pair to skip, a key that is not
 * a single value or a repeated one (only the first counts, so a duplicate does not pile more
 * messages on).
 */
bool *pl_check_keys(struct ctx *c, const yaml_node_t *map);
/* The value node of `name` in a mapping, or NULL; *key gets the key node. */
yaml_node_t *pl_lookup(struct ctx *c, const yaml_node_t *map, const char *name, yaml_node_t **key);
/* Where to point at a key of an entry: the key, else the fallback. */
const yaml_node_t *pl_key_node(struct ctx *c, const yaml_node_t *map, const char *name,
			       const yaml_node_t *fallback);
/* ${VAR} substitution of a scalar value under the trust options; NULL (and an error) on fault
 * (trust.c). */
char *pl_value_text(struct ctx *c, const yaml_node_t *v);
void pl_unknown_key(struct ctx *c, const struct key_table *t, const yaml_node_t *k);
void pl_walk_mapping(struct ctx *c, const struct key_table *t, void *obj, const yaml_node_t *map,
		     const yaml_node_t *owner);

/* ---- entries.c ---- */
void pl_add_ref(struct ctx *c, enum plan_axis axis, const char *name, const yaml_node_t *n,
		bool matrix);
/* What a vm's keys imply (`image` implies `guest: image`). */
void pl_resolve_vm(struct plan_vm *vm);
/* Checks of one entry after its keys were read without error; `map` may be NULL (an entry
 * written `name:` with no settings), `owner` is the node to point at then. */
void pl_check_entry(struct ctx *c, const struct key_table *t, void *obj, const yaml_node_t *map,
		    const yaml_node_t *owner);

/* ---- rules.c ---- */
/* The entry rules of `scope` over one entry that was read without error (errors and warnings
 * at the key each rule names). */
void pl_check_entry_rules(struct ctx *c, enum rule_scope scope, const void *entry,
			  const yaml_node_t *map, const yaml_node_t *owner);
/* The entry error rules of `scope` over an entry a sweep resolved: each fault goes to
 * fail(ud, key path in the entry or NULL, message), which owns the message. */
void pl_entry_rules_each(enum rule_scope scope, const void *entry,
			 void (*fail)(void *ud, const char *key, char *msg), void *ud);
/* The cell rules over every complete cell of `m`, and whether any cell can run at all; returns
 * the number of errors added. */
size_t pl_check_cells(const struct plan *p, const struct matrix *m, struct diag_list *diags);

/* ---- sweep.c ---- */
#define SWEEP_MAX_DEPTH 4
/* A sweep key "AXIS.KEY[.KEY]" resolved through the entry's key tables. */
struct sweep_key {
	enum plan_axis axis;
	size_t n;                                       /* keys below the entry */
	const struct key_table *table[SWEEP_MAX_DEPTH]; /* the table of each key */
	const struct key_def *key[SWEEP_MAX_DEPTH];
	/* key[0] is one of a discriminator value's own keys (a method's option, struct
	 * key_variants): an entry of another value may have it under the same name, or not */
	bool variant;
};
/* Whether a matrix key names a sweep (it has a '.'), not an axis of entries. */
bool pl_is_sweep(const char *name);
/* Resolve `name`; -1 with the message in *err for an unknown axis or key (with did-you-mean),
 * a key that decides which keys apply (type, kind), a mapping, or a list. */
int pl_sweep_resolve(const char *name, struct sweep_key *sk, char **err);
/* Check `text` as the swept key's value exactly as the entry's table would (the same messages
 * and limits); *canon gets the value as the key's canonical text ("1MiB" for "1024KiB"). */
int pl_sweep_value(const struct sweep_key *sk, const char *text, char **canon, char **err);
/* Resolve every cell's swept entries, check them (the key applies to the entry's type, the
 * entry rules), attach them to `m` for plan_cell(); returns the number of errors added. */
size_t pl_sweep_cells(const struct plan *p, struct matrix *m, struct diag_list *diags);
/* The resolved entry of `axis` in cell `i`, or NULL when the cell sweeps none of its keys. */
const void *pl_sweep_entry(const struct matrix *m, size_t i, enum plan_axis axis);

/* ---- matrix-section.c ---- */
void pl_parse_matrix(struct ctx *c, yaml_node_t *key, yaml_node_t *v);

/* ---- load.c ---- */
/* Read a plan file: regular files only (never a device or a FIFO, without blocking on one),
 * at most PLAN_MAX_FILE bytes. */
char *pl_read_file(const char *path, size_t *len, char **err);
char *pl_canonical(const char *path);
void pl_load_file(struct ctx *c, const char *name, const char *buf, size_t len, const char *canon);

/* ---- trust.c ---- */
/* `connect:` and report paths of the top level, after the walk read them. */
void pl_check_trust(struct ctx *c, const yaml_node_t *root);
