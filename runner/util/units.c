/* SPDX-License-Identifier: MIT */
#include "units.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <strings.h>

__extension__ typedef unsigned __int128 u128;

/* A decimal number as mantissa / 10^scale; digits only, at most one '.', no sign. */
struct decimal {
	uint64_t mant;
	unsigned scale;
};

static const char *skip_blank(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* Parse digits[.digits] at *p; advances *p. Returns 0, -1 (no number), -2 (too many digits). */
static int scan_decimal(const char **p, struct decimal *d)
{
	const char *s = *p;
	bool any = false, dot = false;

	d->mant = 0;
	d->scale = 0;
	for (;; s++) {
		if (isdigit((unsigned char)*s)) {
			if (!mul_u64(d->mant, 10, &d->mant) ||
			    !add_u64(d->mant, (uint64_t)(*s - '0'), &d->mant))
				return -2;
			if (dot)
				d->scale++;
			any = true;
		} else if (*s == '.' && !dot && isdigit((unsigned char)s[1]) && any) {
			dot = true;
		} else {
			break;
		}
	}
	if (!any)
		return -1;
	if (d->scale > 18)
		return -2;
	*p = s;
	return 0;
}

static uint64_t pow10u(unsigned n)
{
	uint64_t r = 1;
	while (n--)
		r *= 10;
	return r;
}

static bool blank_only(const char *s)
{
	return *skip_blank(s) == '\0';
}

/* Trim surrounding blanks into a new string, for unit comparison. */
static char *trimmed(const char *s)
{
	s = skip_blank(s);
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	return xstrndup(s, n);
}

struct unit {
	const char *name;
	uint64_t mult;
};

static const struct unit size_units[] = {
	{ "B", 1 },
	{ "KiB", UINT64_C(1) << 10 },
	{ "MiB", UINT64_C(1) << 20 },
	{ "GiB", UINT64_C(1) << 30 },
	{ "TiB", UINT64_C(1) << 40 },
	{ "KB", UINT64_C(1000) },
	{ "MB", UINT64_C(1000000) },
	{ "GB", UINT64_C(1000000000) },
	{ "TB", UINT64_C(1000000000000) },
};

static const char *const size_unit_names[] = { "B",  "KiB", "MiB", "GiB", "TiB",
					       "KB", "MB",  "GB",  "TB" };

static char *unknown_unit(const char *what, const char *s, const char *unit,
			  const char *const *names, size_t n, const char *list)
{
	const char *hint = closest_match(unit, names, n);
	if (hint)
		return xasprintf("invalid %s '%s': unknown unit '%s' (did you mean '%s'?)", what, s,
				 unit, hint);
	return xasprintf("invalid %s '%s': unknown unit '%s' (use %s)", what, s, unit, list);
}

#define SIZE_UNIT_LIST "B, KiB, MiB, GiB, TiB, KB, MB, GB or TB"

/* The size parser behind parse_size and parse_throughput; `what` names the kind for messages. */
static int size_common(const char *what, const char *full, const char *s, bool need_unit,
		       uint64_t *out, char **err)
{
	struct decimal d;
	const char *p = skip_blank(s);

	if (*p == '-') {
		*err = xasprintf("invalid %s '%s': must not be negative", what, full);
		return -1;
	}
	int r = scan_decimal(&p, &d);
	if (r == -1) {
		*err = xasprintf("invalid %s '%s': expected a number and a unit (%s)", what, full,
				 SIZE_UNIT_LIST);
		return -1;
	}
	if (r == -2) {
		*err = xasprintf("%s '%s' is too large", what, full);
		return -1;
	}
	_cleanup_free_ char *unit = trimmed(p);
	uint64_t mult = 0;
	if (!*unit) {
		if (need_unit) {
			*err = xasprintf("invalid %s '%s': missing unit (%s)", what, full,
					 SIZE_UNIT_LIST);
			return -1;
		}
		mult = 1;
	} else {
		for (size_t i = 0; i < ELEMENTSOF(size_units); i++)
			if (strcasecmp(unit, size_units[i].name) == 0)
				mult = size_units[i].mult;
		if (!mult) {
			*err = unknown_unit(what, full, unit, size_unit_names,
					    ELEMENTSOF(size_unit_names), SIZE_UNIT_LIST);
			return -1;
		}
	}
	u128 v = (u128)d.mant * mult;
	uint64_t div = pow10u(d.scale);
	if (v % div) {
		*err = xasprintf("invalid %s '%s': not a whole number of bytes", what, full);
		return -1;
	}
	v /= div;
	if (v > UINT64_MAX) {
		*err = xasprintf("%s '%s' is too large (the limit is 2^64-1 bytes)", what, full);
		return -1;
	}
	*out = (uint64_t)v;
	return 0;
}

int parse_size(const char *s, uint64_t *bytes, char **err)
{
	return size_common("size", s, s, false, bytes, err);
}

int parse_throughput(const char *s, uint64_t *bytes_per_s, char **err)
{
	_cleanup_free_ char *t = trimmed(s);
	size_t n = strlen(t);

	if (n < 2 || t[n - 2] != '/' || (t[n - 1] != 's' && t[n - 1] != 'S')) {
		*err = xasprintf("invalid throughput '%s': expected a size per second, like "
				 "'20MB/s' or '1GiB/s'",
				 s);
		return -1;
	}
	t[n - 2] = '\0';
	return size_common("throughput", s, t, true, bytes_per_s, err);
}

static const struct unit duration_units[] = {
	{ "ms", NSEC_PER_MSEC },
	{ "s", NSEC_PER_SEC },
	{ "m", 60 * NSEC_PER_SEC },
	{ "h", 3600 * NSEC_PER_SEC },
};
static const char *const duration_unit_names[] = { "ms", "s", "m", "h" };

int parse_duration(const char *s, uint64_t *ns, char **err)
{
	const char *p = skip_blank(s);
	u128 total = 0;
	bool any = false;

	if (*p == '-') {
		*err = xasprintf("invalid duration '%s': must not be negative", s);
		return -1;
	}
	while (*p) {
		struct decimal d;
		int r = scan_decimal(&p, &d);
		if (r == -2) {
			*err = xasprintf("duration '%s' is too large", s);
			return -1;
		}
		if (r == -1) {
			if (!any)
				*err =
				    xasprintf("invalid duration '%s': expected a number and a unit "
					      "(ms, s, m or h)",
					      s);
			else
				*err = xasprintf("invalid duration '%s': unexpected '%s'", s, p);
			return -1;
		}
		p = skip_blank(p);
		const char *u = p;
		while (isalpha((unsigned char)*p))
			p++;
		_cleanup_free_ char *unit = xstrndup(u, (size_t)(p - u));
		if (!*unit) {
			*err = xasprintf("invalid duration '%s': missing unit (ms, s, m or h)", s);
			return -1;
		}
		uint64_t mult = 0;
		for (size_t i = 0; i < ELEMENTSOF(duration_units); i++)
			if (STREQ(unit, duration_units[i].name))
				mult = duration_units[i].mult;
		if (!mult) {
			*err = unknown_unit("duration", s, unit, duration_unit_names,
					    ELEMENTSOF(duration_unit_names), "ms, s, m or h");
			return -1;
		}
		/* sub-nanosecond fractions are dropped: no clock here resolves them */
		total += (u128)d.mant * mult / pow10u(d.scale);
		if (total > UINT64_MAX) {
			*err = xasprintf("duration '%s' is too large", s);
			return -1;
		}
		any = true;
		p = skip_blank(p);
	}
	if (!any) {
		*err = xasprintf(
		    "invalid duration '%s': expected a number and a unit (ms, s, m or h)", s);
		return -1;
	}
	*ns = (uint64_t)total;
	return 0;
}

/* Strictly a decimal number (digits, optional fraction), then strtod in the C locale. */
static int number_common(const char *what, const char *full, const char *s, double *v, char **err)
{
	const char *p = skip_blank(s);
	struct decimal d;

	if (*p == '-') {
		*err = xasprintf("invalid %s '%s': must not be negative", what, full);
		return -1;
	}
	const char *start = p;
	if (scan_decimal(&p, &d) == -1 || !blank_only(p)) {
		*err = xasprintf("invalid %s '%s': expected a number", what, full);
		return -1;
	}
	_cleanup_free_ char *num = xstrndup(start, (size_t)(p - start));
	errno = 0;
	*v = strtod(num, NULL);
	if (errno || !isfinite(*v)) {
		*err = xasprintf("%s '%s' is out of range", what, full);
		return -1;
	}
	return 0;
}

int parse_percent(const char *s, double *percent, char **err)
{
	_cleanup_free_ char *t = trimmed(s);
	size_t n = strlen(t);

	if (n == 0 || t[n - 1] != '%') {
		*err =
		    xasprintf("invalid percentage '%s': expected a number and '%%', like '5%%'", s);
		return -1;
	}
	t[n - 1] = '\0';
	return number_common("percentage", s, t, percent, err);
}

int parse_double(const char *s, double *v, char **err)
{
	return number_common("number", s, s, v, err);
}

int parse_uint(const char *s, uint64_t *v, char **err)
{
	const char *p = skip_blank(s);
	uint64_t r = 0;
	bool any = false;

	if (*p == '-') {
		*err = xasprintf("invalid integer '%s': must not be negative", s);
		return -1;
	}
	if (*p == '+')
		p++;
	for (; isdigit((unsigned char)*p); p++) {
		if (!mul_u64(r, 10, &r) || !add_u64(r, (uint64_t)(*p - '0'), &r)) {
			*err = xasprintf("integer '%s' is too large", s);
			return -1;
		}
		any = true;
	}
	if (!any || !blank_only(p)) {
		*err = xasprintf("invalid integer '%s': expected a whole number", s);
		return -1;
	}
	*v = r;
	return 0;
}

int parse_bool(const char *s, bool *v, char **err)
{
	_cleanup_free_ char *t = trimmed(s);

	if (STREQ(t, "true")) {
		*v = true;
		return 0;
	}
	if (STREQ(t, "false")) {
		*v = false;
		return 0;
	}
	*err = xasprintf("invalid boolean '%s': expected true or false", s);
	return -1;
}

char *format_size(uint64_t bytes)
{
	static const struct unit pref[] = {
		{ "TiB", UINT64_C(1) << 40 },      { "GiB", UINT64_C(1) << 30 },
		{ "MiB", UINT64_C(1) << 20 },      { "KiB", UINT64_C(1) << 10 },
		{ "TB", UINT64_C(1000000000000) }, { "GB", UINT64_C(1000000000) },
		{ "MB", UINT64_C(1000000) },       { "KB", UINT64_C(1000) },
	};
	if (bytes)
		for (size_t i = 0; i < ELEMENTSOF(pref); i++)
			if (bytes % pref[i].mult == 0)
				return xasprintf("%" PRIu64 "%s", bytes / pref[i].mult,
						 pref[i].name);
	return xasprintf("%" PRIu64, bytes);
}

char *format_duration(uint64_t ns)
{
	static const struct unit pref[] = {
		{ "h", 3600 * NSEC_PER_SEC },
		{ "m", 60 * NSEC_PER_SEC },
		{ "s", NSEC_PER_SEC },
		{ "ms", NSEC_PER_MSEC },
	};
	if (ns)
		for (size_t i = 0; i < ELEMENTSOF(pref); i++)
			if (ns % pref[i].mult == 0)
				return xasprintf("%" PRIu64 "%s", ns / pref[i].mult, pref[i].name);
	if (ns % NSEC_PER_MSEC == 0)
		return xstrdup("0s");
	/* not representable exactly in plan units: show milliseconds with a fraction */
	return xasprintf("%.6gms", (double)ns / 1e6);
}
