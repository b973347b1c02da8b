/* SPDX-License-Identifier: MIT */
/*
 * Manifests: JSON persistence (jansson), the canonical digest (libcrypto SHA-256), the guest
 * listing parser and the comparison that turns a listing into an integrity verdict.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <string.h>
#include <sys/stat.h>

#include "fs.h"
#include "hash.h"
#include "manifest.h"
#include "util.h"

static const char *const type_names[] = {
	[MANIFEST_FILE] = "file",
	[MANIFEST_DIR] = "dir",
	[MANIFEST_SYMLINK] = "symlink",
};

struct manifest *manifest_new(void)
{
	return xcalloc(1, sizeof(struct manifest));
}

void manifest_free(struct manifest *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		free(m->entries[i].path);
		free(m->entries[i].target);
	}
	free(m->entries);
	for (size_t i = 0; i < m->n_skipped; i++) {
		free(m->skipped[i].path);
		free(m->skipped[i].reason);
	}
	free(m->skipped);
	free(m->spec);
	free(m);
}

struct manifest_entry *manifest_add(struct manifest *m, const char *path, enum manifest_type type,
				    uint64_t size, const unsigned char *sha256, const char *target)
{
	m->entries = xgrow(m->entries, &m->cap, m->n + 1, sizeof(*m->entries));
	struct manifest_entry *e = &m->entries[m->n++];
	*e = (struct manifest_entry){
		.path = xstrdup(path),
		.type = type,
		/* a link's size is its target's length, whatever the caller computed */
		.size = type == MANIFEST_SYMLINK ? (target ? strlen(target) : 0) : size,
		.target = target ? xstrdup(target) : NULL,
	};
	if (sha256)
		memcpy(e->sha256, sha256, 32);
	m->complete = false;
	return e;
}

void manifest_add_skip(struct manifest *m, const char *path, const char *reason)
{
	m->skipped = xgrow(m->skipped, &m->cap_skipped, m->n_skipped + 1, sizeof(*m->skipped));
	m->skipped[m->n_skipped++] = (struct manifest_skip){ xstrdup(path), xstrdup(reason) };
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct manifest_entry *)a)->path,
		      ((const struct manifest_entry *)b)->path);
}

static int skip_cmp(const void *a, const void *b)
{
	return strcmp(((const struct manifest_skip *)a)->path,
		      ((const struct manifest_skip *)b)->path);
}

/* Growable byte buffer for the canonical serialization. */
struct buf {
	char *p;
	size_t n, cap;
};

static void buf_add(struct buf *b, const char *s, size_t len)
{
	b->p = xgrow(b->p, &b->cap, b->n + len + 1, 1);
	memcpy(b->p + b->n, s, len);
	b->n += len;
	b->p[b->n] = '\0';
}

static void buf_adds(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

static void buf_add_escaped(struct buf *b, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '\\': buf_adds(b, "\\\\"); break;
		case '\n': buf_adds(b, "\\n"); break;
		case '\t': buf_adds(b, "\\t"); break;
		default: buf_add(b, s, 1);
		}
	}
}

char *manifest_canonical(const struct manifest *m, size_t *len)
{
	struct buf b = { 0 };
	buf_add(&b, "", 0);
	for (size_t i = 0; i < m->n; i++) {
		const struct manifest_entry *e = &m->entries[i];
		char num[32], hex[65];
		buf_adds(&b, type_names[e->type]);
		snprintf(num, sizeof(num), "\t%llu\t", (unsigned long long)e->size);
		buf_adds(&b, num);
		switch (e->type) {
		case MANIFEST_FILE:
			sha256_hex(e->sha256, hex);
			buf_adds(&b, hex);
			break;
		case MANIFEST_DIR: buf_adds(&b, "-"); break;
		case MANIFEST_SYMLINK: buf_add_escaped(&b, e->target ? e->target : ""); break;
		}
		buf_adds(&b, "\t");
		buf_add_escaped(&b, e->path);
		buf_adds(&b, "\n");
	}
	if (len)
		*len = b.n;
	return b.p;
}

int manifest_finish(struct manifest *m, char **err)
{
	/* qsort and memcpy want non-NULL pointers even for 0 elements */
	if (m->n)
		qsort(m->entries, m->n, sizeof(*m->entries), entry_cmp);
	if (m->n_skipped)
		qsort(m->skipped, m->n_skipped, sizeof(*m->skipped), skip_cmp);
	m->files = m->bytes = 0;
	for (size_t i = 0; i < m->n; i++) {
		if (i > 0 && STREQ(m->entries[i - 1].path, m->entries[i].path)) {
			*err = xasprintf("duplicate path '%s' in manifest", m->entries[i].path);
			return -1;
		}
		if (m->entries[i].type == MANIFEST_FILE) {
			m->files++;
			m->bytes += m->entries[i].size;
		}
	}
	size_t len;
	_cleanup_free_ char *c = manifest_canonical(m, &len);
	sha256_buf(c, len, m->digest);
	m->complete = true;
	return 0;
}

const struct manifest_entry *manifest_find(const struct manifest *m, const char *path)
{
	struct manifest_entry key = { .path = (char *)path };
	return m->n ? bsearch(&key, m->entries, m->n, sizeof(*m->entries), entry_cmp) : NULL;
}

int manifest_save(const struct manifest *m, const char *path, char **err)
{
	_cleanup_(json_decrefp) json_t *root = json_object();
	json_t *entries = json_array(), *skipped = json_array();
	char hex[65];

	json_object_set_new(root, "format", json_string("ferry-manifest"));
	json_object_set_new(root, "version", json_integer(1));
	if (m->spec)
		json_object_set_new(root, "spec", json_string(m->spec));
	json_object_set_new(root, "files", json_integer((json_int_t)m->files));
	json_object_set_new(root, "bytes", json_integer((json_int_t)m->bytes));
	sha256_hex(m->digest, hex);
	json_object_set_new(root, "digest", json_string(hex));
	for (size_t i = 0; i < m->n; i++) {
		const struct manifest_entry *e = &m->entries[i];
		json_t *o = json_object();
		json_t *p = json_string(e->path);
		if (!p) {
			json_decref(o);
			json_decref(entries);
			json_decref(skipped);
			*err = xasprintf("path '%s' is not valid UTF-8", e->path);
			return -1;
		}
		json_object_set_new(o, "path", p);
		json_object_set_new(o, "type", json_string(type_names[e->type]));
		if (e->type == MANIFEST_FILE) {
			json_object_set_new(o, "size", json_integer((json_int_t)e->size));
			sha256_hex(e->sha256, hex);
			json_object_set_new(o, "sha256", json_string(hex));
		} else if (e->type == MANIFEST_SYMLINK) {
			json_t *t = json_string(e->target);
			json_object_set_new(o, "target", t ? t : json_string(""));
		}
		json_array_append_new(entries, o);
	}
	json_object_set_new(root, "entries", entries);
	for (size_t i = 0; i < m->n_skipped; i++) {
		json_t *o = json_object();
		json_t *p = json_string(m->skipped[i].path);
		/* a skipped name may be the very reason (not UTF-8): keep a lossy stand-in */
		json_object_set_new(o, "path", p ? p : json_string("(not valid UTF-8)"));
		json_object_set_new(o, "reason", json_string(m->skipped[i].reason));
		json_array_append_new(skipped, o);
	}
	json_object_set_new(root, "skipped", skipped);
	json_object_set_new(root, "complete", json_boolean(m->complete));

	_cleanup_free_ char *text = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	if (!text) {
		*err = xasprintf("%s: cannot serialize the manifest", path);
		return -1;
	}
	size_t len = strlen(text);
	text[len] = '\n'; /* replace the NUL: the file ends with a newline */
	return write_file_atomic(path, text, len + 1, 0644, err);
}

static int load_entry(json_t *o, struct manifest *m, size_t i, char **err)
{
	const char *path = NULL, *type = NULL, *sha = NULL, *target = NULL;
	json_int_t size = 0;
	json_error_t jerr;
	if (json_unpack_ex(o, &jerr, 0, "{s:s, s:s, s?I, s?s, s?s}", "path", &path, "type", &type,
			   "size", &size, "sha256", &sha, "target", &target) < 0) {
		*err = xasprintf("entry %zu: %s", i, jerr.text);
		return -1;
	}
	unsigned char digest[32];
	if (STREQ(type, "file")) {
		if (!sha || strlen(sha) != 64 || sha256_parse(sha, digest) < 0 || size < 0) {
			*err =
			    xasprintf("entry '%s': file needs a size and a 64-digit sha256", path);
			return -1;
		}
		manifest_add(m, path, MANIFEST_FILE, (uint64_t)size, digest, NULL);
	} else if (STREQ(type, "dir")) {
		manifest_add(m, path, MANIFEST_DIR, 0, NULL, NULL);
	} else if (STREQ(type, "symlink")) {
		if (!target) {
			*err = xasprintf("entry '%s': symlink needs a target", path);
			return -1;
		}
		manifest_add(m, path, MANIFEST_SYMLINK, strlen(target), NULL, target);
	} else {
		*err = xasprintf("entry '%s': unknown type '%s'", path, type);
		return -1;
	}
	return 0;
}

int manifest_load(const char *path, struct manifest **out, char **err)
{
	json_error_t jerr;
	_cleanup_(json_decrefp) json_t *root = json_load_file(path, 0, &jerr);
	if (!root) {
		*err = xasprintf("%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
		return -1;
	}
	const char *format = NULL, *spec = NULL, *digest = NULL;
	json_int_t version = 0;
	json_t *entries = NULL, *skipped = NULL;
	int complete = 0;
	if (json_unpack_ex(root, &jerr, 0, "{s:s, s:I, s?s, s:s, s:o, s?o, s?b}", "format", &format,
			   "version", &version, "spec", &spec, "digest", &digest, "entries",
			   &entries, "skipped", &skipped, "complete", &complete) < 0) {
		*err = xasprintf("%s: %s", path, jerr.text);
		return -1;
	}
	if (!STREQ(format, "ferry-manifest") || version != 1) {
		*err = xasprintf("%s: not a ferry manifest version 1", path);
		return -1;
	}
	if (!json_is_array(entries) || (skipped && !json_is_array(skipped))) {
		*err = xasprintf("%s: 'entries' and 'skipped' must be arrays", path);
		return -1;
	}

	struct manifest *m = manifest_new();
	if (spec)
		m->spec = xstrdup(spec);
	size_t i;
	json_t *o;
	json_array_foreach(entries, i, o)
	{
		_cleanup_free_ char *e = NULL;
		if (load_entry(o, m, i, &e) < 0) {
			*err = xasprintf("%s: %s", path, e);
			manifest_free(m);
			return -1;
		}
	}
	json_array_foreach(skipped, i, o)
	{
		const char *p = NULL, *r = NULL;
		if (json_unpack(o, "{s:s, s:s}", "path", &p, "reason", &r) == 0)
			manifest_add_skip(m, p, r);
	}
	for (i = 1; i < m->n; i++) {
		if (strcmp(m->entries[i - 1].path, m->entries[i].path) >= 0) {
			*err = xasprintf("%s: entries not sorted by path at '%s'", path,
					 m->entries[i].path);
			manifest_free(m);
			return -1;
		}
	}
	_cleanup_free_ char *e = NULL;
	if (manifest_finish(m, &e) < 0) {
		*err = xasprintf("%s: %s", path, e);
		manifest_free(m);
		return -1;
	}
	unsigned char want[32];
	if (strlen(digest) != 64 || sha256_parse(digest, want) < 0 ||
	    memcmp(want, m->digest, 32) != 0) {
		*err = xasprintf("%s: digest does not match the entries", path);
		manifest_free(m);
		return -1;
	}
	m->complete = complete;
	*out = m;
	return 0;
}

/* ---- guest listing ---- */

const char *verify_hash_name(enum verify_hash h)
{
	return h == VERIFY_HASH_SHA256 ? "sha256" : h == VERIFY_HASH_XXH128 ? "xxh128" : NULL;
}

bool manifest_has_xxh128(const struct manifest *m)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->entries[i].type == MANIFEST_FILE && !m->entries[i].has_xxh128)
			return false;
	return true;
}

char *manifest_guest_command(const char *dir, bool symlinks, bool fast)
{
	struct buf b = { 0 };
	_cleanup_free_ char *qdir = shell_quote(dir);
	buf_adds(&b, "cd -- ");
	buf_adds(&b, qdir);
	if (fast) {
		buf_adds(&b, " && if command -v ferry-sum >/dev/null 2>&1; then ferry-sum");
		buf_adds(&b, symlinks ? " -l; else" : "; else");
	} else {
		buf_adds(&b, " &&");
	}
	buf_adds(&b, " find . -type f -exec sha256sum {} +");
	if (symlinks)
		buf_adds(&b,
			 " && find . -type l -exec sh -c 'for l; do printf \"symlink %s\\t%s\\n\" "
			 "\"$(readlink \"$l\")\" \"$l\"; done' sh {} +");
	if (fast)
		buf_adds(&b, "; fi");
	return b.p;
}

void listing_clear(struct listing *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->entries[i].path);
		free(l->entries[i].target);
	}
	free(l->entries);
	*l = (struct listing){ 0 };
}

/* "./a/b" -> "a/b"; GNU escapes undone when `escaped`. */
static char *listing_path(const char *s, size_t n, bool escaped)
{
	if (n >= 2 && s[0] == '.' && s[1] == '/') {
		s += 2;
		n -= 2;
	}
	char *p = xmalloc(n + 1), *q = p;
	for (size_t i = 0; i < n; i++) {
		if (escaped && s[i] == '\\' && i + 1 < n) {
			i++;
			*q++ = s[i] == 'n' ? '\n' : s[i];
		} else {
			*q++ = s[i];
		}
	}
	*q = '\0';
	return p;
}

int listing_parse(const char *text, size_t len, struct listing *out, char **err)
{
	size_t lineno = 0;
	const char *end = text + len;
	/* CRLF line ends only when every line has one (a Windows guest's listing); otherwise a
	   carriage return before the newline is the end of a file name ("a\r" is a valid name) */
	bool crlf = false;
	for (const char *s = text; s < end;) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		if (!nl)
			break;
		crlf = nl > s && nl[-1] == '\r';
		if (!crlf)
			break;
		s = nl + 1;
	}
	for (const char *s = text; s < end;) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *eol = nl ? nl : end;
		size_t n = (size_t)(eol - s);
		lineno++;
		if (crlf && n > 0 && s[n - 1] == '\r')
			n--;
		if (n == 0) {
			s = eol + 1;
			continue;
		}
		out->entries = xgrow(out->entries, &out->cap, out->n + 1, sizeof(*out->entries));
		struct listing_entry *e = &out->entries[out->n];
		*e = (struct listing_entry){ 0 };
		if (n > 8 && memcmp(s, "symlink ", 8) == 0) {
			const char *tab = memchr(s + 8, '\t', n - 8);
			if (!tab) {
				*err = xasprintf("listing line %zu: symlink line without a tab",
						 lineno);
				return -1;
			}
			e->symlink = true;
			e->target = xstrndup(s + 8, (size_t)(tab - s - 8));
			e->path = listing_path(tab + 1, (size_t)(s + n - tab - 1), false);
		} else {
			/* GNU sha256sum starts a line with '\' when it escaped the name */
			bool escaped = s[0] == '\\';
			const char *h = s + escaped;
			size_t hn = n - escaped, k = 0;
			while (k < hn && k <= 64 && hex_digit_value(h[k]) >= 0)
				k++;
			enum verify_hash hash = k == 64   ? VERIFY_HASH_SHA256
						: k == 32 ? VERIFY_HASH_XXH128
							  : VERIFY_HASH_NONE;
			if (hash == VERIFY_HASH_NONE || hn < k + 3 || h[k] != ' ' ||
			    (h[k + 1] != ' ' && h[k + 1] != '*')) {
				_cleanup_free_ char *line = xstrndup(s, n > 80 ? 80 : n);
				*err = xasprintf("listing line %zu: expected '<sha256>  <path>' or "
						 "'<xxh128>  <path>', got '%s'",
						 lineno, line);
				return -1;
			}
			if (out->hash != VERIFY_HASH_NONE && out->hash != hash) {
				*err =
				    xasprintf("listing line %zu: a %s line in a %s listing", lineno,
					      verify_hash_name(hash), verify_hash_name(out->hash));
				return -1;
			}
			out->hash = hash;
			if (hash == VERIFY_HASH_SHA256)
				sha256_parse(h, e->sha256);
			else
				xxh128_parse(h, e->xxh128);
			e->path = listing_path(h + k + 2, hn - k - 2, escaped);
		}
		out->n++;
		s = eol + 1;
	}
	return 0;
}

static int listing_cmp(const void *a, const void *b)
{
	return strcmp(((const struct listing_entry *)a)->path,
		      ((const struct listing_entry *)b)->path);
}

void verify_result_clear(struct verify_result *res)
{
	for (size_t i = 0; i < VERIFY_FIRST; i++) {
		free(res->first_missing[i]);
		free(res->first_extra[i]);
		free(res->first_different[i]);
	}
	free(res->message);
	*res = (struct verify_result){ 0 };
}

static void note(char **first, size_t *n_first, size_t *count, const char *path)
{
	if (*n_first < VERIFY_FIRST)
		first[(*n_first)++] = xstrdup(path);
	(*count)++;
}

static void describe(struct buf *b, size_t count, const char *what, char **first, size_t n_first)
{
	char num[32];
	snprintf(num, sizeof(num), "%zu ", count);
	buf_adds(b, num);
	buf_adds(b, what);
	if (n_first == 0)
		return;
	buf_adds(b, " (");
	for (size_t i = 0; i < n_first; i++) {
		if (i)
			buf_adds(b, ", ");
		buf_adds(b, first[i]);
	}
	if (count > n_first)
		buf_adds(b, ", ...");
	buf_adds(b, ")");
}

void manifest_verify(const struct manifest *m, const struct listing *l,
		     const struct verify_opts *opts, struct verify_result *res)
{
	bool symlinks = opts && opts->symlinks;
	*res = (struct verify_result){ 0 };

	/* sort a copy of the listing so the comparison is one merge pass */
	struct listing_entry *v = xcalloc(l->n ? l->n : 1, sizeof(*v));
	if (l->n) {
		memcpy(v, l->entries, l->n * sizeof(*v));
		qsort(v, l->n, sizeof(*v), listing_cmp);
	}

	size_t i = 0, j = 0, files = 0;
	while (i < m->n || j < l->n) {
		const struct manifest_entry *e = i < m->n ? &m->entries[i] : NULL;
		const struct listing_entry *g = j < l->n ? &v[j] : NULL;
		if (e && (e->type == MANIFEST_DIR || (e->type == MANIFEST_SYMLINK && !symlinks))) {
			/* not compared; a listed file where the link was is the vehicle
			 * dereferencing it, which the caller accepted by not comparing links */
			if (g && STREQ(g->path, e->path))
				j++;
			i++;
			continue;
		}
		if (g && g->symlink && !symlinks) {
			j++;
			continue;
		}
		if (g && j > 0 && STREQ(g->path, v[j - 1].path)) {
			j++; /* listed twice: find output never does that; ignore the copy */
			continue;
		}
		int c = !e ? 1 : !g ? -1 : strcmp(e->path, g->path);
		if (c < 0) {
			note(res->first_missing, &res->n_first_missing, &res->missing, e->path);
			i++;
		} else if (c > 0) {
			note(res->first_extra, &res->n_first_extra, &res->extra, g->path);
			j++;
		} else {
			bool same;
			if (e->type == MANIFEST_SYMLINK)
				same = g->symlink && STREQ(e->target, g->target);
			else if (l->hash == VERIFY_HASH_XXH128)
				same = !g->symlink && e->has_xxh128 &&
				       memcmp(e->xxh128, g->xxh128, sizeof(e->xxh128)) == 0;
			else
				same = !g->symlink && memcmp(e->sha256, g->sha256, 32) == 0;
			if (!same)
				note(res->first_different, &res->n_first_different, &res->different,
				     e->path);
			files++;
			i++;
			j++;
		}
	}
	free(v);

	res->ok = !res->missing && !res->extra && !res->different;
	res->hash = l->hash;
	struct buf b = { 0 };
	if (res->ok) {
		char num[64];
		snprintf(num, sizeof(num), "integrity: ok (%zu files)", files);
		buf_adds(&b, num);
	} else {
		buf_adds(&b, "integrity: ");
		describe(&b, res->different, "different", res->first_different,
			 res->n_first_different);
		buf_adds(&b, ", ");
		describe(&b, res->missing, "missing", res->first_missing, res->n_first_missing);
		buf_adds(&b, ", ");
		describe(&b, res->extra, "extra", res->first_extra, res->n_first_extra);
	}
	res->message = b.p;
}
