/* SPDX-License-Identifier: MIT */
/* ${VAR} substitution in plan values (used by trust.c). */
#pragma once

/*
 * Substitute ${VAR} and ${VAR:-default} (default also when VAR is set but empty, as in the
 * shell) in `s`; "$$" is a literal '$'; a '$' followed by anything else is kept as is. VAR is
 * [A-Za-z_][A-Za-z0-9_]*. Returns a new string, or NULL with *err for an unset variable without
 * a default, an unterminated "${" or a bad variable name.
 */
char *env_subst(const char *s, char **err);
/*
 * The same with the values from `lookup` instead of getenv(): it returns the value, or NULL
 * for an unset variable, or NULL with a message in *why for one it refuses (which fails the
 * substitution with that message, default or not).
 */
typedef const char *env_lookup_fn(void *ud, const char *name, char **why);
char *env_subst_with(const char *s, env_lookup_fn *lookup, void *ud, char **err);
