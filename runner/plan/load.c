/* SPDX-License-Identifier: MIT */
/*
 * Plan files: reading them (regular files only, bounded), YAML into one document, includes.
 * A file's `include:` files are merged first, in order, then the file itself; later
 * definitions override earlier ones (named entries whole, run/report key by key, the matrix as
 * a whole, criteria appended). ferry(1) INCLUDES documents this.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "fs.h"
#include "plan-parse.h"
#include "strmap.h"

static char *lower_first(const char *s)
{
	char *t = xstrdup(s);
	if (t[0] >= 'A' && t[0] <= 'Z' && !(t[1] >= 'A' && t[1] <= 'Z'))
		t[0] = (char)(t[0] - 'A' + 'a');
	return t;
}

char *pl_read_file(const char *path, size_t *len, char **err)
{
	/* O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below anyway */
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0) {
		_cleanup_free_ char *e = lower_first(strerror(errno));
		*err = xasprintf("cannot read '%s': %s", path, e);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		*err = xasprintf("cannot read '%s': not a regular file", path);
		return NULL;
	}
	if (st.st_size > PLAN_MAX_FILE) {
		*err = xasprintf("cannot read '%s': larger than %d MiB", path, PLAN_MAX_FILE >> 20);
		return NULL;
	}
	/* bounded while reading too: the file may grow after fstat */
	_cleanup_free_ char *buf = xmalloc(PLAN_MAX_FILE + 2);
	size_t n = 0;
	while (n <= PLAN_MAX_FILE) {
		ssize_t r = read(fd, buf + n, PLAN_MAX_FILE + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			_cleanup_free_ char *e = lower_first(strerror(errno));
			*err = xasprintf("cannot read '%s': %s", path, e);
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > PLAN_MAX_FILE) {
		*err = xasprintf("cannot read '%s': larger than %d MiB", path, PLAN_MAX_FILE >> 20);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return xrealloc(TAKE_PTR(buf), n + 1);
}

char *pl_canonical(const char *path)
{
	char *r = realpath(path, NULL);
	return r ? r : xstrdup(path);
}

static void do_includes(struct ctx *c, yaml_node_t *v)
{
	if (pl_is_null(v))
		return;
	if (v->type != YAML_SEQUENCE_NODE) {
		pl_err_node(c, v, "'include' must be a list of plan files, not %s",
			    pl_node_kind(v));
		return;
	}
	for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top;
	     i++) {
		yaml_node_t *n = pl_node(c, *i);
		if (n->type != YAML_SCALAR_NODE || pl_is_null(n)) {
			pl_err_node(c, n, "'include' lists file paths, not %s", pl_node_kind(n));
			continue;
		}
		_cleanup_free_ char *rel = pl_value_text(c, n);
		if (!rel)
			continue;
		if (!*rel) {
			pl_err_node(c, n, "empty include path");
			continue;
		}
		if (c->n_chain == 1) {
			c->p->include =
			    xrealloc(c->p->include, (c->p->n_include + 1) * sizeof(*c->p->include));
			c->p->include[c->p->n_include++] = xstrdup(rel);
		}
		/* relative to the including file's directory */
		_cleanup_free_ char *path = NULL;
		const char *slash = strrchr(c->file, '/');
		if (rel[0] == '/' || !slash)
			path = xstrdup(rel);
		else
			path = xasprintf("%.*s/%s", (int)(slash - c->file), c->file, rel);

		_cleanup_free_ char *canon = pl_canonical(path);
		for (size_t j = 0; j < c->n_chain; j++) {
			if (!STREQ(c->chain_key[j], canon))
				continue;
			_cleanup_free_ char *chain = xstrdup("");
			for (size_t k = j; k < c->n_chain; k++) {
				char *s = xasprintf("%s%s -> ", chain, c->chain_name[k]);
				free(chain);
				chain = s;
			}
			pl_err_node(c, n, "include cycle: %s%s", chain, path);
			c->incomplete = true;
			goto next;
		}
		if (c->n_chain >= PLAN_MAX_INCLUDE_DEPTH) {
			pl_err_node(c, n, "includes nest deeper than %d files",
				    PLAN_MAX_INCLUDE_DEPTH);
			continue;
		}
		{
			_cleanup_free_ char *err = NULL;
			size_t len = 0;
			/* an include is read and quoted in errors: only a regular file in the
			 * allowed tree (/etc/shadow or /proc/self/environ would be echoed) */
			_cleanup_free_ char *top = xstrdup(c->chain_key[0]);
			char *slash2 = strrchr(top, '/');
			if (slash2)
				*slash2 = '\0';
			_cleanup_free_ char *buf = pl_read_file(path, &len, &err);
			if (buf && input_check("include", path, slash2 ? top : NULL, &err) < 0) {
				free(buf);
				buf = NULL;
			}
			if (!buf) {
				pl_err_node(c, n, "%s", err);
				c->incomplete = true;
				continue;
			}
			pl_load_file(c, path, buf, len, canon);
		}
	next:;
	}
}

static void yaml_error(struct ctx *c, yaml_parser_t *ps)
{
	const yaml_mark_t *m = &ps->problem_mark;
	const char *problem = ps->problem ? ps->problem : "cannot parse";

	if (ps->error == YAML_READER_ERROR) {
		/* reader errors carry a byte offset, not a mark */
		pl_err_pos(c, c->file, 0, 0, "invalid YAML: %s at byte %zu", problem,
			   ps->problem_offset);
		return;
	}
	if (ps->context)
		pl_err_pos(c, c->file, (int)m->line + 1, (int)m->column + 1, "invalid YAML: %s %s",
			   problem, ps->context);
	else
		pl_err_pos(c, c->file, (int)m->line + 1, (int)m->column + 1, "invalid YAML: %s",
			   problem);
}

/* ---- YAML events -> one document, bounded ------------------------------------------------ */

/*
 * libyaml's own loader (yaml_parser_load) has no limits: 200k nested '[' keep it busy for
 * minutes, and aliases let a small file stand for a huge tree. So the document is composed here
 * from the parser's events, with a limit on nesting (checked as each collection opens, before
 * the scanner sees much of what follows) and on nodes, where an alias counts every node it
 * repeats (so walking the document stays linear in what the limit allows).
 */
struct frame {
	int id;
	int key;     /* mapping: the key node waiting for its value; 0: none */
	size_t size; /* nodes in this collection so far, itself included */
	char *anchor;
};

struct composer {
	struct ctx *c;
	yaml_document_t *doc;
	struct frame stack[PLAN_MAX_DEPTH];
	size_t depth;
	size_t *sizes; /* per node id: the nodes of its tree (what an alias to it repeats) */
	size_t cap_sizes;
	struct strmap anchors;
	char **names; /* the anchors' names, which the map borrows */
	size_t n_names, cap_names;
	int root;
};

static void set_size(struct composer *k, int id, size_t size)
{
	k->sizes = xgrow(k->sizes, &k->cap_sizes, (size_t)id + 1, sizeof(*k->sizes));
	k->sizes[id] = size;
}

static void add_anchor(struct composer *k, const yaml_char_t *anchor, int id)
{
	if (!anchor)
		return;
	char *name = xstrdup((const char *)anchor);
	k->names = xgrow(k->names, &k->cap_names, k->n_names + 1, sizeof(*k->names));
	k->names[k->n_names++] = name;
	strmap_set(&k->anchors, name, 0, (uint32_t)id); /* a later anchor of a name wins */
}

/* Hang node `id` (a tree of `size` nodes) on the open collection, or make it the root. */
static void attach(struct composer *k, int id, size_t size)
{
	if (!k->depth) {
		k->root = id;
		return;
	}
	struct frame *f = &k->stack[k->depth - 1];
	yaml_node_t *parent = yaml_document_get_node(k->doc, f->id);
	f->size += size;
	if (parent->type == YAML_SEQUENCE_NODE) {
		if (!yaml_document_append_sequence_item(k->doc, f->id, id))
			abort();
	} else if (!f->key) {
		f->key = id;
	} else {
		if (!yaml_document_append_mapping_pair(k->doc, f->id, f->key, id))
			abort();
		f->key = 0;
	}
}

static bool count_nodes(struct composer *k, const yaml_mark_t *at, size_t n)
{
	struct ctx *c = k->c;
	c->n_nodes += n;
	if (c->n_nodes <= PLAN_MAX_NODES)
		return true;
	pl_err_pos(c, c->file, (int)at->line + 1, (int)at->column + 1,
		   "the plan is too large: more than %d YAML nodes (keys, values and list items, "
		   "with what aliases repeat)",
		   PLAN_MAX_NODES);
	return false;
}

static bool too_deep(struct ctx *c, size_t depth, const yaml_mark_t *at)
{
	if (depth < PLAN_MAX_DEPTH)
		return false;
	pl_err_pos(c, c->file, (int)at->line + 1, (int)at->column + 1,
		   "mappings and lists nest deeper than %d levels", PLAN_MAX_DEPTH);
	return true;
}

/* One node event of the first document. Returns false on a fault (reported). */
static bool compose(struct composer *k, yaml_event_t *ev)
{
	struct ctx *c = k->c;
	yaml_document_t *d = k->doc;
	int id;

	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		if (!count_nodes(k, &ev->start_mark, 1))
			return false;
		id = yaml_document_add_scalar(d, NULL, ev->data.scalar.value,
					      (int)ev->data.scalar.length, ev->data.scalar.style);
		if (!id)
			abort();
		yaml_document_get_node(d, id)->start_mark = ev->start_mark;
		yaml_document_get_node(d, id)->end_mark = ev->end_mark;
		set_size(k, id, 1);
		add_anchor(k, ev->data.scalar.anchor, id);
		attach(k, id, 1);
		return true;
	case YAML_ALIAS_EVENT: {
		uint32_t to = strmap_get(&k->anchors, (const char *)ev->data.alias.anchor, 0);
		if (to == STRMAP_NONE) {
			pl_err_pos(c, c->file, (int)ev->start_mark.line + 1,
				   (int)ev->start_mark.column + 1,
				   "invalid YAML: found undefined alias '%s'",
				   (const char *)ev->data.alias.anchor);
			return false;
		}
		if (!count_nodes(k, &ev->start_mark, k->sizes[to]))
			return false;
		attach(k, (int)to, k->sizes[to]);
		return true;
	}
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT: {
		if (too_deep(c, k->depth, &ev->start_mark) || !count_nodes(k, &ev->start_mark, 1))
			return false;
		bool seq = ev->type == YAML_SEQUENCE_START_EVENT;
		id = seq ? yaml_document_add_sequence(d, NULL, ev->data.sequence_start.style)
			 : yaml_document_add_mapping(d, NULL, ev->data.mapping_start.style);
		if (!id)
			abort();
		yaml_document_get_node(d, id)->start_mark = ev->start_mark;
		const yaml_char_t *anchor =
		    seq ? ev->data.sequence_start.anchor : ev->data.mapping_start.anchor;
		k->stack[k->depth++] = (struct frame){
			.id = id, .size = 1, .anchor = anchor ? xstrdup((const char *)anchor) : NULL
		};
		return true;
	}
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT: {
		struct frame f = k->stack[--k->depth];
		yaml_document_get_node(d, f.id)->end_mark = ev->end_mark;
		if (ev->type == YAML_MAPPING_END_EVENT)
			f.id = pl_resolve_merges(c, d, f.id);
		set_size(k, f.id, f.size);
		/* registered when complete: an alias inside its own anchor is undefined */
		add_anchor(k, (const yaml_char_t *)f.anchor, f.id);
		free(f.anchor);
		attach(k, f.id, f.size);
		return true;
	}
	default: return true;
	}
}

static void composer_free(struct composer *k)
{
	while (k->depth)
		free(k->stack[--k->depth].anchor);
	free(k->sizes);
	strmap_free(&k->anchors);
	for (size_t i = 0; i < k->n_names; i++)
		free(k->names[i]);
	free(k->names);
}

/*
 * The first document of the stream into `doc` (initialized here; *root 0 when the stream has
 * none). Returns false when it could not be read (reported).
 */
static bool load_document(struct ctx *c, yaml_parser_t *ps, yaml_document_t *doc, int *root)
{
	struct composer k = { .c = c, .doc = doc };
	yaml_event_t ev;
	bool ok = true, in_doc = false, done = false;

	if (!yaml_document_initialize(doc, NULL, NULL, NULL, 1, 1))
		abort();
	strmap_init(&k.anchors, 8);
	while (ok && !done) {
		if (!yaml_parser_parse(ps, &ev)) {
			yaml_error(c, ps);
			ok = false;
			break;
		}
		switch (ev.type) {
		case YAML_DOCUMENT_START_EVENT: in_doc = true; break;
		case YAML_DOCUMENT_END_EVENT:
		case YAML_STREAM_END_EVENT: done = true; break;
		default:
			if (in_doc)
				ok = compose(&k, &ev);
		}
		yaml_event_delete(&ev);
	}
	*root = k.root;
	composer_free(&k);
	return ok;
}

/* After the first document: a second one (almost always a stray '---') is an error at its
 * root; a fault inside it is reported as such instead. Nesting is bounded here too. */
static void check_second_document(struct ctx *c, yaml_parser_t *ps)
{
	yaml_event_t ev;
	bool in_doc = false, have_root = false;
	yaml_mark_t root = { 0 };
	size_t depth = 0;

	for (;;) {
		if (!yaml_parser_parse(ps, &ev)) {
			yaml_error(c, ps);
			return;
		}
		yaml_event_type_t type = ev.type;
		yaml_mark_t at = ev.start_mark;
		yaml_event_delete(&ev);
		if (type == YAML_STREAM_END_EVENT)
			return;
		if (type == YAML_DOCUMENT_START_EVENT) {
			in_doc = true;
			continue;
		}
		if (type == YAML_DOCUMENT_END_EVENT)
			break;
		if (!in_doc)
			continue;
		if (!have_root) {
			root = at;
			have_root = true;
		}
		if (type == YAML_SEQUENCE_START_EVENT || type == YAML_MAPPING_START_EVENT) {
			if (too_deep(c, depth, &at))
				return;
			depth++;
		} else if (type == YAML_SEQUENCE_END_EVENT || type == YAML_MAPPING_END_EVENT) {
			depth--;
		}
	}
	if (have_root)
		pl_err_pos(c, c->file, (int)root.line + 1, (int)root.column + 1,
			   "a plan file holds one YAML document; this is a second one");
}

void pl_load_file(struct ctx *c, const char *name, const char *buf, size_t len, const char *canon)
{
	const char *saved_file = c->file;
	yaml_document_t *saved_doc = c->doc;
	yaml_parser_t ps;
	yaml_document_t doc;
	int root_id = 0;

	c->file = pl_intern_file(c->p, name);
	c->chain_key[c->n_chain] = xstrdup(canon);
	c->chain_name[c->n_chain] = c->file;
	c->n_chain++;

	if (!yaml_parser_initialize(&ps))
		abort();
	yaml_parser_set_input_string(&ps, (const unsigned char *)buf, len);
	bool loaded = load_document(c, &ps, &doc, &root_id);
	c->doc = &doc;
	if (!loaded) {
		c->incomplete = true;
		goto out;
	}

	yaml_node_t *root = root_id ? yaml_document_get_node(&doc, root_id) : NULL;
	if (!root || pl_is_null(root)) {
		pl_err_pos(c, c->file, 1, 1, "empty plan (a plan starts with 'ferry: 1')");
		c->incomplete = true;
		goto out;
	}
	check_second_document(c, &ps);
	if (root->type != YAML_MAPPING_NODE) {
		pl_err_node(c, root, "a plan must be a mapping of sections, not %s",
			    pl_node_kind(root));
		c->incomplete = true;
		goto out;
	}

	yaml_node_t *inc = pl_lookup(c, root, "include", NULL);
	if (inc)
		do_includes(c, inc);
	pl_walk_mapping(c, &plan_keys, c->p, root, root);
	pl_check_trust(c, root);

out:
	yaml_document_delete(&doc);
	yaml_parser_delete(&ps);
	c->n_chain--;
	free(c->chain_key[c->n_chain]);
	c->file = saved_file;
	c->doc = saved_doc;
}
