/* SPDX-License-Identifier: MIT */
/* The method registry and the helpers every method uses. */
#include "method.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "machine.h"
#include "run.h"
#include "util.h"

/*
 * The built-in methods: one line each, its symbol (method_SYM, defined in its own file) and its
 * `type:` name. The position is plan_method.type and the order of the type's values in messages,
 * the schema and ferry(1): append. A plain list, since a weak reference would not pull an object
 * out of the static library.
 */
#define METHOD_REGISTRY(X)                                                                         \
	X(disk_image, "disk-image")                                                                \
	X(agentfile, "agent-file")                                                                 \
	X(channel, "channel")                                                                      \
	X(share, "share")                                                                          \
	X(network, "network")                                                                      \
	X(block, "block")                                                                          \
	X(null, "null")                                                                            \
	X(ssh, "ssh")                                                                              \
	X(vm2vm, "vm2vm")                                                                          \
	X(guest_copy, "guest-copy")

#define DECLARE(sym, name) extern const struct method_ops method_##sym;
METHOD_REGISTRY(DECLARE)
#define ENTRY(sym, name) &method_##sym,
const struct method_ops *const method_registry[] = { METHOD_REGISTRY(ENTRY) };
const size_t method_registry_size = ELEMENTSOF(method_registry);
#define NAME(sym, name) name,
const char *const plan_method_types[] = { METHOD_REGISTRY(NAME) NULL };

const struct method_ops *method_find(int type)
{
	return type >= 0 && (size_t)type < ELEMENTSOF(method_registry) ? method_registry[type]
								       : NULL;
}

const struct method_ops *method_of(const struct plan_method *m)
{
	const struct method_ops *ops = method_find(m->type);
	const struct method_ops *d = ops && ops->driver ? ops->driver(m) : NULL;
	return d ? d : ops;
}

const struct method_ops *method_find_name(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(method_registry); i++)
		if (STREQ(method_registry[i]->name, name))
			return method_registry[i];
	return NULL;
}

/* ---- what the plan reads: methods.NAME's variants (keys.h) ---- */

static const struct key_table *variant_keys(int v)
{
	return method_find(v) ? method_find(v)->options : NULL;
}

static bool variant_applies(int v, const struct key_def *k)
{
	return !STREQ(k->name, "archive") || (method_find(v) && method_find(v)->archive);
}

static const char *variant_summary(int v)
{
	return method_find(v) ? method_find(v)->summary : "";
}

const struct key_variants plan_method_variants = {
	.keys = variant_keys,
	.applies = variant_applies,
	.summary = variant_summary,
	.offset = offsetof(struct plan_method, opts),
	.size = PLAN_METHOD_OPTS_SIZE,
};

const char *plan_method_type_name(const struct plan_method *m)
{
	const struct method_ops *ops = method_of(m);
	return ops ? ops->name : "?";
}

int plan_method_init(struct plan_method *m, const char *name, const char *type)
{
	memset(m, 0, sizeof(*m));
	int v = key_enum_index(key_find(&plan_method_keys, "type"), type);
	if (v < 0)
		return -1;
	key_defaults(&plan_method_keys, m);
	key_variant_reset(&plan_method_keys, m, v);
	m->type = v;
	m->e.name = (char *)name;
	return 0;
}

int plan_method_set(struct plan_method *m, const char *key, const char *text, char **err)
{
	const char *dot = strchr(key, '.');
	_cleanup_free_ char *first = dot ? xstrndup(key, (size_t)(dot - key)) : xstrdup(key);
	const struct key_table *t;
	const struct key_def *k = key_find_any(&plan_method_keys, m->type, first, &t);
	_cleanup_free_ char *na = k ? key_not_applying(&plan_method_keys, k, m->type) : NULL;
	if (!k || na || STREQ(first, "type")) {
		*err = na ? TAKE_PTR(na) : xasprintf("'%s' cannot be set here", first);
		return -1;
	}
	void *obj = t == &plan_method_keys ? (void *)m : key_variant_obj(&plan_method_keys, m);
	if (dot) {
		if (k->type != KEY_MAPPING || !key_find(k->sub, dot + 1)) {
			*err = xasprintf("no key '%s'", key);
			return -1;
		}
		key_mark_set(t, obj, k);
		obj = (char *)obj + k->offset;
		t = k->sub;
		k = key_find(t, dot + 1);
	}
	if (key_set_scalar(k, obj, text, err) < 0)
		return -1;
	key_mark_set(t, obj, k);
	return 0;
}

char *plan_method_get(const struct plan_method *m, const char *key)
{
	const char *dot = strchr(key, '.');
	_cleanup_free_ char *first = dot ? xstrndup(key, (size_t)(dot - key)) : xstrdup(key);
	const struct key_table *t;
	const struct key_def *k = key_find_any(&plan_method_keys, m->type, first, &t);
	_cleanup_free_ char *na = k ? key_not_applying(&plan_method_keys, k, m->type) : NULL;
	if (!k || na)
		return NULL;
	const char *obj = t == &plan_method_keys ? (const char *)m
						 : (const char *)m + plan_method_variants.offset;
	if (dot) {
		if (k->type != KEY_MAPPING || !key_find(k->sub, dot + 1))
			return NULL;
		obj += k->offset;
		k = key_find(k->sub, dot + 1);
	}
	return key_value_text(k, obj);
}

void plan_method_clear(struct plan_method *m)
{
	key_free(&plan_method_keys, m);
}

void method_error_clear(struct method_error *e)
{
	free(e->message);
	free(e->guest_message);
	free(e->libvirt_message);
	memset(e, 0, sizeof(*e));
	e->kind = ERROR_INFRA;
}

int method_fail(struct method_ctx *ctx, enum result_error_kind kind, const char *guest_message,
		const char *fmt, ...)
{
	va_list ap;
	method_error_clear(&ctx->err);
	ctx->err.kind = kind;
	va_start(ap, fmt);
	ctx->err.message = xvasprintf(fmt, ap);
	va_end(ap);
	if (guest_message && *guest_message)
		ctx->err.guest_message = xstrdup(guest_message);
	return -1;
}

int method_fail_op(struct method_ctx *ctx, enum result_error_kind kind, const struct machine_err *e,
		   const char *guest_message, const char *fmt, ...)
{
	va_list ap;
	method_error_clear(&ctx->err);
	/* a guest operation that timed out (its own timeout, or the run's deadline) is the run's
	   timeout whatever the method calls the failure */
	ctx->err.kind =
	    e && e->kind == MACHINE_ERR_TIMEOUT && kind == ERROR_INFRA ? ERROR_TIMEOUT : kind;
	va_start(ap, fmt);
	ctx->err.message = xvasprintf(fmt, ap);
	va_end(ap);
	if (guest_message && *guest_message)
		ctx->err.guest_message = xstrdup(guest_message);
	if (e && e->detail)
		ctx->err.libvirt_message = xstrdup(e->detail);
	return -1;
}

int method_guest_sh(struct method_ctx *ctx, const char *what, const char *cmd, char **out)
{
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct machine_exec_result r;
	_cleanup_(machine_err_clear) struct machine_err e = { 0 };
	if (machine_guest_exec(ctx->machine, ctx->guest, argv, NULL, 0, ctx->timeout_ms, &r, &e) <
	    0) {
		int kind = e.kind == MACHINE_ERR_TIMEOUT ? ERROR_TIMEOUT : ERROR_INFRA;
		return method_fail_op(ctx, kind, &e, e.msg, "%s: guest agent failed", what);
	}
	if (r.exit_code != 0) {
		int rc = method_fail(ctx, ERROR_INFRA, r.err,
				     "%s: guest command exited with status %d", what, r.exit_code);
		machine_exec_result_clear(&r);
		return rc;
	}
	if (out)
		*out = TAKE_PTR(r.out);
	machine_exec_result_clear(&r);
	return 0;
}

/*
 * The guest's CLOCK_MONOTONIC in nanoseconds as a shell function that sets ferry_t: the kernel's
 * /proc/timer_list ("now at N nsecs", its third line; busybox date has no %N), else date +%s%N
 * (a format: %% doubled) (coreutils; the realtime clock). The file is read with the shell's own
 * read, in the shell itself: a reading that started a process (awk in $(...), as it did) put
 * that process's start inside the timed interval, which on the Debian guest under TCG took most
 * of a 16 MiB dd's time (bench/RESULTS-fio-agree.md: ferry's MB/s 0.34-0.42 of dd's own).
 */
#define GUEST_CLOCK_FN                                                                             \
	"ferry_ns() { ferry_t=; while read -r a b c d; do if [ \"$a $b\" = 'now at' ]; then "      \
	"ferry_t=$c; break; fi; done 2>/dev/null </proc/timer_list; case \"$ferry_t\" in "         \
	"''|*[!0-9]*) ferry_t=$(date +%%s%%N 2>/dev/null);; esac; }; "
#define GUEST_CLOCK_MARK "ferry-guest-clock "

/* The guest's two clock readings at the end of out (taken off it): seconds between them. */
static int guest_clock_take(char *out, double *seconds)
{
	char *m = NULL;
	for (char *p = out; (p = strstr(p, GUEST_CLOCK_MARK)); p++)
		if (p == out || p[-1] == '\n')
			m = p;
	if (!m)
		return -1;
	char *end = NULL;
	errno = 0;
	unsigned long long t0 = strtoull(m + strlen(GUEST_CLOCK_MARK), &end, 10);
	if (errno || *end != ' ')
		return -1;
	const char *s1 = end + 1;
	unsigned long long t1 = strtoull(s1, &end, 10);
	if (errno || end == s1 || (*end && *end != '\n') || t1 < t0)
		return -1;
	/* the newline the wrapper printed before the mark is not the command's */
	if (m > out && m[-1] == '\n')
		m--;
	*m = '\0';
	*seconds = (double)(t1 - t0) / 1e9;
	return 0;
}

int method_guest_timed_sh(struct method_ctx *ctx, const char *what, const char *cmd, char **out,
			  double *seconds)
{
	_cleanup_free_ char *wrapped =
	    xasprintf(GUEST_CLOCK_FN "ferry_ns; t0=$ferry_t; (%s); r=$?; ferry_ns; echo; "
				     "echo \"" GUEST_CLOCK_MARK "$t0 $ferry_t\"; exit $r",
		      cmd);
	_cleanup_free_ char *o = NULL;
	if (method_guest_sh(ctx, what, wrapped, &o) < 0)
		return -1;
	if (guest_clock_take(o, seconds) < 0)
		return method_fail(
		    ctx, ERROR_INFRA, NULL,
		    "%s: the guest has no nanosecond clock (neither /proc/timer_list "
		    "nor date +%%N) to time the command with",
		    what);
	if (out)
		*out = TAKE_PTR(o);
	return 0;
}

/* One line of dd's report: "N byte[s] [(...)] copied, S s|seconds, ..." (method.h). */
static bool dd_report_line(const char *l, size_t len, uint64_t *bytes, double *seconds)
{
	_cleanup_free_ char *line = xstrndup(l, len);
	const char *p = line;
	if (*p < '0' || *p > '9')
		return false;
	errno = 0;
	char *end = NULL;
	unsigned long long b = strtoull(p, &end, 10);
	if (errno)
		return false;
	p = end;
	if (strncmp(p, " bytes", 6) == 0)
		p += 6;
	else if (strncmp(p, " byte", 5) == 0)
		p += 5;
	else
		return false;
	if (strncmp(p, " (", 2) == 0) {
		const char *c = strchr(p, ')');
		if (!c)
			return false;
		p = c + 1;
	}
	if (strncmp(p, " copied, ", 9) != 0)
		return false;
	p += 9;
	/* the seconds: digits, a decimal point and an exponent only (a locale's decimal comma,
	 * "Infinity" or "inf" is no figure) */
	size_t n = strspn(p, "0123456789.eE+-");
	if (n == 0 || (p[n] != ' ' && p[n] != ','))
		return false;
	_cleanup_free_ char *num = xstrndup(p, n);
	errno = 0;
	double s = strtod(num, &end);
	if (errno || *end || !isfinite(s))
		return false;
	p += n;
	if (strncmp(p, " s,", 3) != 0 && strncmp(p, " seconds,", 9) != 0)
		return false;
	*bytes = b;
	*seconds = s;
	return true;
}

int method_dd_report(const char *text, uint64_t *bytes, double *seconds, char **err)
{
	bool found = false;
	uint64_t b = 0;
	double s = 0;
	for (const char *l = text ? text : ""; *l;) {
		size_t len = strcspn(l, "\n");
		uint64_t lb;
		double ls;
		if (dd_report_line(l, len, &lb, &ls)) {
			found = true;
			b = lb;
			s = ls;
		}
		l += len + (l[len] == '\n');
	}
	if (!found) {
		const char *src = text ? text : "";
		_cleanup_free_ char *t = xstrndup(src, strnlen(src, 300));
		for (char *c = t; *c; c++) /* the guest's text: one printable line */
			if (*c == '\n')
				*c = '|';
			else if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
				*c = '?';
		/* the records and nothing else: what Debian's busybox dd prints */
		bool records = text && strstr(text, "records out") && !strstr(text, "copied");
		*err = xasprintf("dd printed no \"N bytes ... copied, S s\" line on its standard "
				 "error%s: '%s'",
				 records ? " (busybox's dd, built without its third status line, "
					   "prints only the records)"
					 : "",
				 t);
		return -1;
	}
	if (!(s > 0)) {
		*err = xasprintf("dd reported %llu bytes copied in %g s: no time to divide by",
				 (unsigned long long)b, s);
		return -1;
	}
	*bytes = b;
	*seconds = s;
	return 0;
}

/* FERRY_VERIFY_HASH=sha256: verify with SHA-256 even where the guest has ferry-sum. */
static bool verify_sha256_forced(void)
{
	const char *e = getenv("FERRY_VERIFY_HASH");
	return e && STREQ(e, "sha256");
}

int method_verify_dir(struct method_ctx *ctx, const char *dir, bool symlinks)
{
	/* XXH3-128 where the guest has ferry-sum and the manifest has the XXH3-128s (always, from
	 * the executor: dataset_add_xxh128()); SHA-256 otherwise, in the same guest command */
	bool fast = manifest_has_xxh128(ctx->manifest) && !verify_sha256_forced();
	_cleanup_free_ char *cmd = manifest_guest_command(dir, symlinks, fast);
	_cleanup_free_ char *out = NULL;
	if (method_guest_sh(ctx, "verify", cmd, &out) < 0)
		return -1;
	struct listing l = { 0 };
	_cleanup_free_ char *err = NULL;
	if (listing_parse(out, strlen(out), &l, &err) < 0) {
		listing_clear(&l);
		return method_fail(ctx, ERROR_INFRA, NULL, "verify: %s", err);
	}
	struct verify_opts vo = { .symlinks = symlinks };
	struct verify_result res = { 0 };
	manifest_verify(ctx->manifest, &l, &vo, &res);
	ctx->verify_hash = verify_hash_name(res.hash);
	int rc = 0;
	if (!res.ok)
		rc = method_fail(ctx, ERROR_INTEGRITY, NULL, "%s", res.message);
	verify_result_clear(&res);
	listing_clear(&l);
	return rc;
}

void method_metric(struct method_ctx *ctx, const char *name, double value)
{
	if (!isfinite(value))
		return;
	if (!ctx->metrics)
		ctx->metrics = json_object();
	json_object_set_new(ctx->metrics, name, json_real(value));
}

void method_rate(struct method_ctx *ctx, const char *name, uint64_t bytes, double seconds)
{
	if (bytes > 0 && seconds > 0)
		method_metric(ctx, name, (double)bytes / seconds);
}

bool method_copy_cancelled(void *userdata)
{
	(void)userdata;
	return run_interrupted() != 0;
}

int method_refuse_links(struct method_ctx *ctx, const char *what, const char *hint)
{
	const struct manifest *m = ctx->manifest;
	size_t n = 0, first = 0;
	for (size_t i = 0; m && i < m->n; i++)
		if (m->entries[i].type == MANIFEST_SYMLINK && n++ == 0)
			first = i;
	if (!n)
		return 0;
	return method_fail(ctx, ERROR_INFRA, NULL, "%s, and dataset '%s' has %zu ('%s' first): %s",
			   what, ctx->pds->e.name, n, m->entries[first].path, hint);
}
