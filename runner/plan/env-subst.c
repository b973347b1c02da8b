/* SPDX-License-Identifier: MIT */
#include "env-subst.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static bool var_start(char c)
{
	return isalpha((unsigned char)c) || c == '_';
}

static bool var_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

static const char *getenv_lookup(void *ud, const char *name, char **err)
{
	(void)ud;
	(void)err;
	return getenv(name);
}

char *env_subst(const char *s, char **err)
{
	return env_subst_with(s, getenv_lookup, NULL, err);
}

char *env_subst_with(const char *s, env_lookup_fn *lookup, void *ud, char **err)
{
	_cleanup_free_ char *out = NULL;
	size_t n = 0, cap = 0;

	for (const char *p = s; *p;) {
		const char *piece = p;
		size_t len = 1;
		_cleanup_free_ char *name = NULL;

		if (p[0] == '$' && p[1] == '$') {
			len = 1; /* one literal '$' */
			p += 2;
		} else if (p[0] == '$' && p[1] == '{') {
			const char *q = p + 2, *v = q;
			if (!var_start(*q)) {
				const char *close = strchr(q, '}');
				if (!close) {
					*err = xasprintf("unterminated '${' in '%s'", s);
					return NULL;
				}
				*err = xasprintf("invalid variable name '%.*s' in '%s'",
						 (int)(close - q), q, s);
				return NULL;
			}
			while (var_char(*q))
				q++;
			name = xstrndup(v, (size_t)(q - v));
			const char *def = NULL;
			size_t def_len = 0;
			if (q[0] == ':' && q[1] == '-') {
				def = q + 2;
				const char *close = strchr(def, '}');
				if (!close) {
					*err = xasprintf("unterminated '${' in '%s'", s);
					return NULL;
				}
				def_len = (size_t)(close - def);
				q = close;
			}
			if (*q != '}') {
				const char *close = strchr(q, '}');
				if (!close)
					*err = xasprintf("unterminated '${' in '%s'", s);
				else
					*err = xasprintf("invalid variable name '%.*s' in '%s'",
							 (int)(close - v), v, s);
				return NULL;
			}
			p = q + 1;
			_cleanup_free_ char *why = NULL;
			const char *val = lookup(ud, name, &why);
			if (why) {
				*err = TAKE_PTR(why);
				return NULL;
			}
			if (val && (*val || !def)) {
				piece = val;
				len = strlen(val);
			} else if (def) {
				piece = def;
				len = def_len;
			} else {
				*err = xasprintf("environment variable '%s' is not set (write "
						 "'${%s:-DEFAULT}' for a default)",
						 name, name);
				return NULL;
			}
		} else {
			p++;
		}
		out = xgrow(out, &cap, n + len + 1, 1);
		memcpy(out + n, piece, len);
		n += len;
	}
	out = xgrow(out, &cap, n + 1, 1);
	out[n] = '\0';
	return TAKE_PTR(out);
}
