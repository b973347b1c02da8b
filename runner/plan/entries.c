/* SPDX-License-Identifier: MIT */
/* What is read from one entry beyond its keys: the checks across its keys, criteria bounds in
 * the metric's unit, and the names it refers to (resolved once every file is merged). */
#include <inttypes.h>
#include <string.h>

#include "plan-parse.h"
#include "units.h"

void pl_add_ref(struct ctx *c, enum plan_axis axis, const char *name, const yaml_node_t *n,
		bool matrix)
{
	c->refs = xgrow(c->refs, &c->cap_refs, c->n_refs + 1, sizeof(*c->refs));
	c->refs[c->n_refs++] = (struct ref){ axis, xstrdup(name), pl_node_pos(c, n), matrix };
}

static void check_vm(struct ctx *c, struct plan_vm *vm, const yaml_node_t *map,
		     const yaml_node_t *owner)
{
	const struct key_table *t = &plan_vm_keys;
	bool image = key_is_set(t, vm, "image"), guest = key_is_set(t, vm, "guest");

	if (image && !guest)
		vm->guest = PLAN_GUEST_IMAGE;
	if (image && vm->guest == PLAN_GUEST_BUILTIN)
		pl_err_node(
		    c, pl_key_node(c, map, "image", owner),
		    "'image' cannot be used with 'guest: builtin' (the built-in guest boots "
		    "ferry's own kernel and initramfs)");
	if (vm->guest == PLAN_GUEST_IMAGE && !image)
		pl_err_node(c, pl_key_node(c, map, "guest", owner),
			    "'guest: image' needs 'image', the path of a bootable disk image");
	if (vm->guest == PLAN_GUEST_BUILTIN && vm->os == PLAN_OS_WINDOWS)
		pl_err_node(c, pl_key_node(c, map, "os", owner),
			    "'os: windows' needs an 'image' guest (the built-in guest is linux)");

	yaml_node_t *nic = pl_lookup(c, map, "nic", NULL);
	const yaml_node_t *nic_at = pl_key_node(c, map, "nic", owner);
	bool tap = vm->nic.network || vm->nic.bridge;
	if (vm->nic.network && vm->nic.bridge)
		pl_err_node(c, pl_key_node(c, nic, "bridge", nic_at),
			    "'network' and 'bridge' exclude each other: the NIC attaches to one");
	if (vm->nic.queues > 1 && vm->nic.model != PLAN_NIC_VIRTIO)
		pl_err_node(c, pl_key_node(c, nic, "queues", nic_at),
			    "'queues: %" PRIu64 "' needs model 'virtio' (e1000 has one queue)",
			    vm->nic.queues);
	else if (vm->nic.queues > 1 && !tap)
		pl_err_node(c, pl_key_node(c, nic, "queues", nic_at),
			    "'queues: %" PRIu64
			    "' needs a tap device: QEMU user networking refuses "
			    "multiple queues (set 'network' or 'bridge')",
			    vm->nic.queues);
}

static void check_disk(struct ctx *c, struct plan_disk *d, const yaml_node_t *map,
		       const yaml_node_t *owner)
{
	static const char *const cache_names[] = { "none", "writeback", "writethrough",
						   "directsync", "unsafe" };
	if (d->kind == PLAN_DISK_IMAGE && d->io == PLAN_IO_NATIVE && d->cache != PLAN_CACHE_NONE &&
	    d->cache != PLAN_CACHE_DIRECTSYNC)
		pl_err_node(
		    c, pl_key_node(c, map, "io", owner),
		    "'io: native' cannot be used with 'cache: %s': native AIO needs O_DIRECT, "
		    "which only cache 'none' and 'directsync' give (libvirt and QEMU refuse it)",
		    cache_names[d->cache]);
}

static void check_dataset(struct ctx *c, struct plan_dataset *ds, const yaml_node_t *map,
			  const yaml_node_t *owner)
{
	const struct key_table *t = &plan_dataset_keys;
	static const char *const generated[] = {
		"files", "size", "dirs", "content", "ratio", "seed"
	};

	if (ds->path) {
		for (size_t i = 0; i < ELEMENTSOF(generated); i++)
			if (key_is_set(t, ds, generated[i]))
				pl_err_node(
				    c, pl_key_node(c, map, generated[i], owner),
				    "'%s' cannot be used with 'path' (a path dataset is read "
				    "as it is)",
				    generated[i]);
		return;
	}
	if (!key_is_set(t, ds, "size")) {
		pl_err_node(c, owner, "dataset '%s' needs 'size' (the size of each file) or 'path'",
			    ds->e.name);
		return;
	}
	yaml_node_t *size_map = pl_lookup(c, map, "size", NULL);
	if (size_map && size_map->type == YAML_MAPPING_NODE &&
	    !key_is_set(&plan_size_range_keys, &ds->size, "max")) {
		pl_err_node(c, pl_key_node(c, map, "size", owner),
			    "'size' as a range needs 'max' (or write one size: 'size: 4KiB')");
	} else if (ds->size.min > ds->size.max) {
		yaml_node_t *size = pl_lookup(c, map, "size", NULL);
		pl_err_node(c, pl_key_node(c, size, "min", pl_key_node(c, map, "size", owner)),
			    "'size' range is empty: min is larger than max");
	}
	if (key_is_set(t, ds, "ratio") && ds->content != PLAN_CONTENT_COMPRESSIBLE)
		pl_err_node(c, pl_key_node(c, map, "ratio", owner),
			    "'ratio' needs 'content: compressible'");
	uint64_t total;
	if (!mul_u64(ds->files, ds->size.max, &total) || total > (UINT64_C(1) << 44)) {
		_cleanup_free_ char *each = format_size(ds->size.max);
		pl_err_node(c, pl_key_node(c, map, "files", owner),
			    "dataset '%s' is too large: %" PRIu64 " files of up to %s exceed 16TiB",
			    ds->e.name, ds->files, each);
	}
}

static void check_method(struct ctx *c, struct plan_method *m, const yaml_node_t *map,
			 const yaml_node_t *owner)
{
	const struct key_table *t = &plan_method_keys;
	yaml_node_t *archive = pl_lookup(c, map, "archive", NULL);
	const yaml_node_t *archive_at = pl_key_node(c, map, "archive", owner);

	if (m->type == PLAN_METHOD_DISK_IMAGE &&
	    (m->image_bus == PLAN_BUS_SATA || m->image_bus == PLAN_BUS_IDE))
		pl_err_node(
		    c, pl_key_node(c, map, "bus", owner),
		    "'bus: %s' cannot be used by a disk-image method: it hot-plugs its image, "
		    "and only virtio and scsi disks can be hot-plugged",
		    m->image_bus == PLAN_BUS_SATA ? "sata" : "ide");
	if (m->in_place && m->archive.format != PLAN_ARCHIVE_NONE)
		pl_err_node(
		    c, pl_key_node(c, map, "in_place", owner),
		    "'in_place' reads the files where they are on the image, which an archive "
		    "hides: drop 'archive' or 'in_place'");
	if (m->archive.compression != PLAN_COMPRESS_NONE && m->archive.format == PLAN_ARCHIVE_NONE)
		pl_err_node(c, pl_key_node(c, archive, "compression", archive_at),
			    "'compression' needs an archive 'format' (tar, pax, cpio or zip)");
	if (m->archive.level && m->archive.compression == PLAN_COMPRESS_NONE)
		pl_err_node(c, pl_key_node(c, archive, "level", archive_at),
			    "'level' needs a 'compression'");
	if (m->block_size % 512)
		pl_err_node(c, pl_key_node(c, map, "block_size", owner),
			    "'block_size' must be a multiple of 512 for direct I/O");
	if (m->driver == PLAN_SHARE_VIRTIOFS)
		for (size_t i = 0; i < 2; i++) {
			const char *nine = i ? "cache" : "msize";
			if (key_is_set(t, m, nine))
				pl_err_node(c, pl_key_node(c, map, nine, owner),
					    "'%s' is a 9p option: it does not apply to 'driver: "
					    "virtiofs'",
					    nine);
		}
}

static void check_criterion(struct ctx *c, struct plan_criterion *cr, const yaml_node_t *map)
{
	if (!key_is_set(&plan_criterion_keys, cr, "metric"))
		return; /* reported already: missing or invalid; units depend on it */
	if (!cr->min_text && !cr->max_text) {
		pl_err_node(c, map, "criterion needs 'min' or 'max'");
		return;
	}
	for (int i = 0; i < 2; i++) {
		const char *text = i ? cr->max_text : cr->min_text;
		const char *which = i ? "max" : "min";
		if (!text)
			continue;
		const yaml_node_t *v = pl_lookup(c, map, which, NULL);
		_cleanup_free_ char *err = NULL;
		double d = 0;
		int r = 0;
		switch (cr->metric) {
		case PLAN_METRIC_THROUGHPUT: {
			uint64_t b = 0;
			r = parse_throughput(text, &b, &err);
			d = (double)b;
			break;
		}
		case PLAN_METRIC_FILES_PER_S: r = parse_double(text, &d, &err); break;
		case PLAN_METRIC_CV: r = parse_percent(text, &d, &err); break;
		default: {
			uint64_t ns = 0;
			r = parse_duration(text, &ns, &err);
			d = (double)ns;
		}
		}
		if (r < 0) {
			pl_err_node(c, v, "'%s': %s", which, err);
			continue;
		}
		if (i) {
			cr->has_max = true;
			cr->max = d;
		} else {
			cr->has_min = true;
			cr->min = d;
		}
	}
	if (cr->has_min && cr->has_max && cr->min > cr->max)
		pl_err_node(c, pl_lookup(c, map, "min", NULL),
			    "criterion can never pass: 'min' is larger than 'max'");
}

void pl_check_entry(struct ctx *c, const struct key_table *t, void *obj, const yaml_node_t *map,
		    const yaml_node_t *owner)
{
	if (t == &plan_vm_keys) {
		check_vm(c, obj, map, owner);
	} else if (t == &plan_disk_keys) {
		check_disk(c, obj, map, owner);
	} else if (t == &plan_dataset_keys) {
		check_dataset(c, obj, map, owner);
	} else if (t == &plan_method_keys) {
		check_method(c, obj, map, owner);
	} else if (t == &plan_criterion_keys) {
		check_criterion(c, obj, map);
	} else if (t == &plan_repeat_keys) {
		struct plan_repeat *r = obj;
		bool min = key_is_set(t, r, "min"), max = key_is_set(t, r, "max");
		if (min && max && r->min > r->max)
			pl_err_node(c, pl_key_node(c, map, "min", owner),
				    "'repeat' range is empty: min is larger than max");
	} else if (t == &plan_where_keys) {
		struct plan_where *w = obj;
		char *names[PLAN_N_AXES] = { w->vm, w->disk, w->dataset, w->method };
		for (int a = 0; a < PLAN_N_AXES; a++)
			if (names[a])
				pl_add_ref(
				    c, (enum plan_axis)a, names[a],
				    pl_lookup(c, map, plan_axis_name((enum plan_axis)a), NULL),
				    false);
	} else if (t == &plan_markdown_keys) {
		struct plan_markdown *md = obj;
		if (md->rows == md->cols)
			pl_err_node(c, pl_key_node(c, map, "cols", owner),
				    "markdown 'rows' and 'cols' must be different axes (both are "
				    "'%s')",
				    plan_axis_name(md->rows));
	}
}
