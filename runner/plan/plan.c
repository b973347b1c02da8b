/* SPDX-License-Identifier: MIT */
/*
 * The plan's public API (plan.h): parse (load.c reads the files, walk.c fills the structs),
 * then what needs the whole plan: names resolved, omitted axes defaulted; cells and their run
 * settings; the expansion with the rules table's checks over every cell.
 */
#include "plan.h"

#include <inttypes.h>
#include <string.h>

#include "plan-parse.h"

static const char *const axis_names[PLAN_N_AXES] = { "vm", "disk", "dataset", "method" };

const char *plan_axis_name(enum plan_axis a)
{
	return a < PLAN_N_AXES ? axis_names[a] : NULL;
}

int pl_axis_from_name(const char *s)
{
	for (int i = 0; i < PLAN_N_AXES; i++)
		if (STREQ(axis_names[i], s))
			return i;
	return -1;
}

void pl_err_pos(struct ctx *c, const char *file, int line, int col, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_vadd(c->diags, file, line, col, fmt, ap);
	va_end(ap);
	c->n_errors++;
}

void pl_warn_node(struct ctx *c, const yaml_node_t *n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_vadd(&c->p->warnings, c->file, (int)n->start_mark.line + 1,
		  (int)n->start_mark.column + 1, fmt, ap);
	va_end(ap);
}

struct plan_pos pl_node_pos(struct ctx *c, const yaml_node_t *n)
{
	return (struct plan_pos){ c->file, (int)n->start_mark.line + 1,
				  (int)n->start_mark.column + 1 };
}

const char *pl_intern_file(struct plan *p, const char *name)
{
	for (size_t i = 0; i < p->n_files; i++)
		if (STREQ(p->files[i], name))
			return p->files[i];
	p->files = xrealloc(p->files, (p->n_files + 1) * sizeof(*p->files));
	p->files[p->n_files] = xstrdup(name);
	return p->files[p->n_files++];
}

/* ---- after every file: defaults that depend on the whole plan, names ---------------------- */

struct section {
	const char *what, *plural;
	size_t n;
	const char *(*name)(const struct plan *p, size_t i);
};

static const char *vm_name(const struct plan *p, size_t i)
{
	return p->vms[i].e.name;
}
static const char *disk_name(const struct plan *p, size_t i)
{
	return p->disks[i].e.name;
}
static const char *dataset_name(const struct plan *p, size_t i)
{
	return p->datasets[i].e.name;
}
static const char *method_name(const struct plan *p, size_t i)
{
	return p->methods[i].e.name;
}

static struct section section_of(const struct plan *p, enum plan_axis a)
{
	switch (a) {
	case PLAN_AXIS_VM: return (struct section){ "vm", "vms", p->n_vms, vm_name };
	case PLAN_AXIS_DISK: return (struct section){ "disk", "disks", p->n_disks, disk_name };
	case PLAN_AXIS_DATASET:
		return (struct section){ "dataset", "datasets", p->n_datasets, dataset_name };
	default: return (struct section){ "method", "methods", p->n_methods, method_name };
	}
}

static bool defined(const struct plan *p, enum plan_axis a, const char *name)
{
	struct section s = section_of(p, a);
	for (size_t i = 0; i < s.n; i++)
		if (STREQ(s.name(p, i), name))
			return true;
	return false;
}

static void check_refs(struct ctx *c)
{
	const struct plan *p = c->p;

	for (size_t i = 0; i < c->n_refs; i++) {
		const struct ref *r = &c->refs[i];
		struct section s = section_of(p, r->axis);
		if (defined(p, r->axis, r->name)) {
			const struct plan_vm *vm = r->private_by ? plan_find_vm(p, r->name) : NULL;
			if (vm && vm->nic.backend != PLAN_NIC_PRIVATE)
				pl_err_at(c, r->pos,
					  "%s names vm '%s', whose NIC is not on ferry's private "
					  "network: set vms.%s.nic.backend to private (both guests "
					  "meet there)",
					  r->private_by, r->name, r->name);
			continue;
		}
		_cleanup_free_ const char **names = xcalloc(s.n + 1, sizeof(*names));
		_cleanup_free_ char *list = xstrdup("");
		for (size_t j = 0; j < s.n; j++) {
			names[j] = s.name(p, j);
			char *l = xasprintf("%s%s'%s'", list, j ? ", " : "", names[j]);
			free(list);
			list = l;
		}
		const char *hint = closest_match(r->name, names, s.n);
		if (hint)
			pl_err_at(c, r->pos, "%s '%s' is not defined (did you mean '%s'?)", s.what,
				  r->name, hint);
		else if (s.n)
			pl_err_at(c, r->pos, "%s '%s' is not defined (defined %s: %s)", s.what,
				  r->name, s.plural, list);
		else
			pl_err_at(c, r->pos, "%s '%s' is not defined (the plan defines no %s)",
				  s.what, r->name, s.plural);
	}
}

/* vm, vm.KEY, disk, disk.KEY, ... (an axis the parser refused: last) */
static int axis_rank(const char *name)
{
	const char *dot = strchr(name, '.');
	_cleanup_free_ char *axis = dot ? xstrndup(name, (size_t)(dot - name)) : NULL;
	int a = pl_axis_from_name(dot ? axis : name);
	return a < 0 ? 2 * PLAN_N_AXES : 2 * a + (dot ? 1 : 0);
}

/* Omitted axes: exactly one entry of the kind defines the axis; zero or several is an error. */
static void default_axes(struct ctx *c)
{
	struct plan *p = c->p;
	struct matrix_def *d = &p->matrix;
	struct plan_pos at =
	    c->have_matrix ? c->matrix_pos : (struct plan_pos){ p->files[0], 1, 1 };
	size_t n_new = 0;
	struct matrix_axis added[PLAN_N_AXES];

	if (!p->matrix_file) {
		p->matrix_file = p->files[0];
		p->matrix_pos = at;
	}
	for (int a = 0; a < PLAN_N_AXES; a++) {
		bool present = false;
		for (size_t i = 0; i < d->n_axes; i++)
			if (STREQ(d->axes[i].name, axis_names[a]))
				present = true;
		if (present)
			continue;
		struct section s = section_of(p, (enum plan_axis)a);
		if (s.n == 1) {
			added[n_new] = (struct matrix_axis){ .name = xstrdup(axis_names[a]),
							     .values = xmalloc(sizeof(char *)),
							     .n_values = 1 };
			added[n_new++].values[0] = xstrdup(s.name(p, 0));
		} else if (s.n == 0) {
			pl_err_at(c, at, "the plan defines no %s (it needs at least one in '%s')",
				  s.plural, s.plural);
		} else {
			pl_err_at(
			    c, at,
			    "the matrix has no '%s' axis and %zu %s are defined: list the ones to "
			    "use in 'matrix.%s'",
			    s.what, s.n, s.plural, s.what);
		}
	}
	/* a defaulted axis goes before the first written axis that follows it in vm, disk,
	 * dataset, method order (a sweep of an entry's key right after its axis): one value does
	 * not change the odometer order, and the cell ids read in the usual order when the
	 * written axes do */
	for (size_t i = 0; i < n_new; i++) {
		int a = axis_rank(added[i].name);
		size_t at_index = d->n_axes;
		for (size_t j = 0; j < d->n_axes; j++)
			if (axis_rank(d->axes[j].name) > a) {
				at_index = j;
				break;
			}
		d->axes = xrealloc(d->axes, (d->n_axes + 1) * sizeof(*d->axes));
		memmove(d->axes + at_index + 1, d->axes + at_index,
			(d->n_axes - at_index) * sizeof(*d->axes));
		d->axes[at_index] = added[i];
		d->n_axes++;
	}
}

static void resolve(struct ctx *c)
{
	struct plan *p = c->p;

	if (!p->name) {
		const char *base = strrchr(p->files[0], '/');
		base = base ? base + 1 : p->files[0];
		size_t n = strlen(base);
		if (n > 5 && STREQ(base + n - 5, ".yaml"))
			n -= 5;
		else if (n > 4 && STREQ(base + n - 4, ".yml"))
			n -= 4;
		p->name = xstrndup(base, n);
	}
	/* an explicit min above the default max raises max: `repeat: {min: 20}` means 20 */
	if (!key_is_set(&plan_repeat_keys, &p->run.repeat, "max") &&
	    p->run.repeat.max < p->run.repeat.min)
		p->run.repeat.max = p->run.repeat.min;
	if (c->incomplete)
		return;
	check_refs(c);
	/* "no vms defined" after a faulty vms section would only repeat the fault */
	if (!c->n_errors)
		default_axes(c);
}

static struct plan *parse(const char *name, const char *buf, size_t len, const char *canon,
			  const struct plan_options *o, struct diag_list *diags)
{
	static const struct plan_options none = { 0 };
	struct ctx c = { .diags = diags, .o = o ? o : &none };
	struct plan *p = xcalloc(1, sizeof(*p));

	c.p = p;
	key_defaults(&plan_keys, p);
	pl_intern_file(p, name);
	pl_load_file(&c, name, buf, len, canon);
	resolve(&c);

	for (size_t i = 0; i < c.n_refs; i++) {
		free(c.refs[i].name);
		free(c.refs[i].private_by);
	}
	free(c.refs);
	if (c.n_errors) {
		diag_sort(diags);
		plan_free(p);
		return NULL;
	}
	diag_sort(&p->warnings);
	return p;
}

struct plan *plan_load_buffer(const char *name, const char *buf, size_t len,
			      const struct plan_options *o, struct diag_list *diags)
{
	_cleanup_free_ char *canon = pl_canonical(name);
	return parse(name, buf, len, canon, o, diags);
}

struct plan *plan_parse_buffer(const char *name, const char *buf, size_t len,
			       struct diag_list *diags)
{
	return plan_load_buffer(name, buf, len, NULL, diags);
}

struct plan *plan_load(const char *path, const struct plan_options *o, struct diag_list *diags)
{
	_cleanup_free_ char *err = NULL;
	size_t len = 0;
	_cleanup_free_ char *buf = pl_read_file(path, &len, &err);

	if (!buf) {
		diag_add(diags, NULL, 0, 0, "%s", err);
		return NULL;
	}
	return plan_load_buffer(path, buf, len, o, diags);
}

struct plan *plan_parse_file(const char *path, struct diag_list *diags)
{
	return plan_load(path, NULL, diags);
}

const char *plan_report_path(const struct plan_report *r, int f)
{
	if (f < 0 || f >= REPORT_FORMAT_COUNT)
		return NULL;
	return f == REPORT_MARKDOWN ? r->markdown.path : r->paths[f];
}

void plan_free(struct plan *p)
{
	if (!p)
		return;
	key_free(&plan_keys, p);
	matrix_def_clear(&p->matrix);
	free(p->include_run);
	for (size_t i = 0; i < p->n_files; i++)
		free(p->files[i]);
	free(p->files);
	diag_list_clear(&p->warnings);
	free(p);
}

#define FIND(arr, n)                                                                               \
	for (size_t i = 0; i < p->n; i++)                                                          \
		if (STREQ(p->arr[i].e.name, name))                                                 \
			return &p->arr[i];                                                         \
	return NULL

const struct plan_vm *plan_find_vm(const struct plan *p, const char *name)
{
	FIND(vms, n_vms);
}
const struct plan_disk *plan_find_disk(const struct plan *p, const char *name)
{
	FIND(disks, n_disks);
}
const struct plan_dataset *plan_find_dataset(const struct plan *p, const char *name)
{
	FIND(datasets, n_datasets);
}
const struct plan_method *plan_find_method(const struct plan *p, const char *name)
{
	FIND(methods, n_methods);
}

static void apply_table(const struct key_table *t, void *dst, const void *src)
{
	uint64_t set = *(const uint64_t *)(const void *)((const char *)src + t->set_offset);

	for (size_t i = 0; i < t->n_keys; i++) {
		const struct key_def *k = &t->keys[i];
		if (!(set & (UINT64_C(1) << i)))
			continue;
		const char *s = (const char *)src + k->offset;
		char *d = (char *)dst + k->offset;
		switch (k->type) {
		case KEY_MAPPING: apply_table(k->sub, d, s); break;
		case KEY_BOOL: memcpy(d, s, sizeof(bool)); break;
		case KEY_ENUM: memcpy(d, s, sizeof(int)); break;
		case KEY_UINT:
		case KEY_SIZE:
		case KEY_DURATION: memcpy(d, s, sizeof(uint64_t)); break;
		case KEY_FLOAT:
		case KEY_PERCENT: memcpy(d, s, sizeof(double)); break;
		case KEY_STRING:
		case KEY_QUANTITY: {
			char **dp = (char **)(void *)d;
			free(*dp);
			*dp = *(char *const *)(const void *)s
				  ? xstrdup(*(char *const *)(const void *)s)
				  : NULL;
			break;
		}
		default: continue; /* lists are not overridable */
		}
		key_mark_set(t, dst, k);
	}
}

void plan_run_apply(struct plan_run *run, const struct plan_run *over)
{
	apply_table(&plan_run_keys, run, over);
	if (!key_is_set(&plan_repeat_keys, &over->repeat, "max") &&
	    run->repeat.max < run->repeat.min)
		run->repeat.max = run->repeat.min;
}

/* ---- cells ----------------------------------------------------------------------------------- */

void plan_cell(const struct plan *p, const struct matrix *m, size_t i, struct plan_cell *out)
{
	const char *v;

	memset(out, 0, sizeof(*out));
	out->id = matrix_cell_id(m, i);
	if ((v = matrix_cell_get(m, i, "vm")))
		out->vm = plan_find_vm(p, v);
	if ((v = matrix_cell_get(m, i, "disk")))
		out->disk = plan_find_disk(p, v);
	if ((v = matrix_cell_get(m, i, "dataset")))
		out->dataset = plan_find_dataset(p, v);
	if ((v = matrix_cell_get(m, i, "method")))
		out->method = plan_find_method(p, v);
	for (int a = 0; a < PLAN_N_AXES; a++) {
		const void *e = pl_sweep_entry(m, i, (enum plan_axis)a);
		if (!e)
			continue;
		switch (a) {
		case PLAN_AXIS_VM: out->vm = e; break;
		case PLAN_AXIS_DISK: out->disk = e; break;
		case PLAN_AXIS_DATASET: out->dataset = e; break;
		default: out->method = e; break;
		}
	}
	out->run = p->run;
	size_t n = 0;
	const size_t *inc = matrix_cell_includes(m, i, &n);
	for (size_t j = 0; j < n; j++)
		plan_run_apply(&out->run, &p->include_run[inc[j]]);
}

/* The Markdown report pivots on matrix keys: the axes, sweeps and keys include entries add. */
static size_t check_pivot(const struct plan *p, const struct matrix *m, struct diag_list *diags)
{
	const struct plan_markdown *md = &p->report.markdown;
	const char *which[2] = { "rows", "cols" }, *key[2] = { md->rows, md->cols };
	const struct plan_pos *pos[2] = { &md->rows_pos, &md->cols_pos };
	size_t errors = 0;

	for (int i = 0; i < 2; i++) {
		bool found = false;
		for (size_t k = 0; k < matrix_n_keys(m) && !found; k++)
			found = STREQ(matrix_key(m, k), key[i]);
		if (found)
			continue;
		const struct plan_pos *at = pos[i]->line ? pos[i] : &p->matrix_pos;
		diag_add(diags, at->file, at->line, at->col,
			 "markdown %s '%s' is not a key of the matrix (a sweep must be an axis or "
			 "be added by an include entry)",
			 which[i], key[i]);
		errors++;
	}
	return errors;
}

struct matrix *plan_expand(const struct plan *p, size_t cap, struct diag_list *diags)
{
	struct matrix *m = matrix_expand(&p->matrix, cap, p->matrix_file, diags);
	size_t errors = 0;

	if (!m)
		return NULL;
	errors += pl_sweep_cells(p, m, diags);

	size_t n = matrix_n_cells(m);
	for (size_t i = 0; i < n; i++) {
		size_t n_inc = 0;
		const size_t *inc = matrix_cell_includes(m, i, &n_inc);
		if (!n_inc)
			continue; /* product cells always have all four axes (see default_axes) */
		struct plan_cell cell;
		plan_cell(p, m, i, &cell);
		const void *have[PLAN_N_AXES] = { cell.vm, cell.disk, cell.dataset, cell.method };
		_cleanup_free_ char *missing = NULL;
		for (int a = 0; a < PLAN_N_AXES; a++) {
			if (have[a])
				continue;
			char *s =
			    xasprintf("%s%s%s", missing ? missing : "", missing ? " and no " : "",
				      plan_axis_name((enum plan_axis)a));
			free(missing);
			missing = s;
		}
		if (!missing)
			continue;
		/* only an include entry can make such a cell: point at the last one */
		const struct matrix_entry *e = &p->matrix.include[inc[n_inc - 1]];
		diag_add(
		    diags, p->matrix_file, e->line, e->col,
		    "this include entry adds cell '%s', which has no %s (an entry that matches "
		    "no cell adds one, and a cell needs a vm, a disk, a dataset and a method)",
		    cell.id, missing);
		errors++;
	}
	errors += check_pivot(p, m, diags);
	errors += pl_check_cells(p, m, diags);
	if (errors) {
		diag_sort(diags);
		matrix_free(m);
		return NULL;
	}
	return m;
}
