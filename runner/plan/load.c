/* SPDX-License-Identifier: MIT */
/*
 * Plan files: reading them (regular files only, bounded), YAML into one document, includes.
 * A file's `include:` files are merged first, in order, then the file itself; later
 * definitions override earlier ones (named entries whole, run/report key by key, the matrix as
 * a whole, criteria appended). ferry(1) INCLUDES documents this.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "plan-parse.h"

static char *lower_first(const char *s)
{
	char *t = xstrdup(s);
	if (t[0] >= 'A' && t[0] <= 'Z' && !(t[1] >= 'A' && t[1] <= 'Z'))
		t[0] = (char)(t[0] - 'A' + 'a');
	return t;
}

/* Read a plan file: regular files only (never a device or a FIFO), bounded in size. */
char *pl_read_file(const char *path, size_t *len, char **err)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	struct stat st;

	if (!f || fstat(fileno(f), &st) < 0) {
		_cleanup_free_ char *e = lower_first(strerror(errno));
		*err = xasprintf("cannot read '%s': %s", path, e);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		*err = xasprintf("cannot read '%s': not a regular file", path);
		return NULL;
	}
	/* bounded while reading too: some files (in /proc) say 0 bytes and never end */
	_cleanup_free_ char *buf = xmalloc(PLAN_MAX_FILE + 2);
	size_t n = fread(buf, 1, PLAN_MAX_FILE + 1, f);
	if (ferror(f)) {
		_cleanup_free_ char *e = lower_first(strerror(errno ? errno : EIO));
		*err = xasprintf("cannot read '%s': %s", path, e);
		return NULL;
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
			_cleanup_free_ char *buf = pl_read_file(path, &len, &err);
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

void pl_load_file(struct ctx *c, const char *name, const char *buf, size_t len, const char *canon)
{
	const char *saved_file = c->file;
	yaml_document_t *saved_doc = c->doc;
	yaml_parser_t ps;
	yaml_document_t doc;
	bool have_doc = false;

	c->file = pl_intern_file(c->p, name);
	c->chain_key[c->n_chain] = xstrdup(canon);
	c->chain_name[c->n_chain] = c->file;
	c->n_chain++;

	if (!yaml_parser_initialize(&ps))
		abort();
	yaml_parser_set_input_string(&ps, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&ps, &doc)) {
		yaml_error(c, &ps);
		c->incomplete = true;
		goto out;
	}
	have_doc = true;
	c->doc = &doc;

	yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (!root || pl_is_null(root)) {
		pl_err_pos(c, c->file, 1, 1, "empty plan (a plan starts with 'ferry: 1')");
		c->incomplete = true;
		goto out;
	}
	{
		/* one document per file: a second one is almost always a stray '---' */
		yaml_document_t next;
		if (!yaml_parser_load(&ps, &next)) {
			yaml_error(c, &ps);
			goto out;
		}
		yaml_node_t *r2 = yaml_document_get_root_node(&next);
		if (r2)
			pl_err_pos(c, c->file, (int)r2->start_mark.line + 1,
				   (int)r2->start_mark.column + 1,
				   "a plan file holds one YAML document; this is a second one");
		yaml_document_delete(&next);
	}
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

out:
	if (have_doc)
		yaml_document_delete(&doc);
	yaml_parser_delete(&ps);
	c->n_chain--;
	free(c->chain_key[c->n_chain]);
	c->file = saved_file;
	c->doc = saved_doc;
}
