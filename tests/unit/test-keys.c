/* SPDX-License-Identifier: MIT */
#include <glib.h>
#include <string.h>

#include "keys.h"
#include "plan.h"

/* Every table passes the self-check: help on every key, unique names, enums with values,
 * defaults that parse and sit in range, nested tables present. */
static void test_tables_check(void)
{
	for (size_t i = 0; i < n_key_tables; i++) {
		char *err = NULL;
		int r = key_table_check(key_tables[i], &err);
		if (r < 0)
			g_test_message("%s", err);
		g_assert_null(err);
		g_assert_cmpint(r, ==, 0);
	}
}

/* The same property spelled out (curl test1139 style): no key without help text. */
static void test_every_key_documented(void)
{
	size_t n = 0;
	for (size_t i = 0; i < n_key_tables; i++) {
		const struct key_table *t = key_tables[i];
		g_assert_nonnull(t->doc);
		for (size_t j = 0; j < t->n_keys; j++) {
			const struct key_def *k = &t->keys[j];
			if (!k->help || strlen(k->help) < 10)
				g_test_message("key '%s.%s' lacks help text", t->name, k->name);
			g_assert_nonnull(k->help);
			g_assert_cmpuint(strlen(k->help), >=, 10);
			n++;
		}
	}
	g_assert_cmpuint(n, >, 80);
}

static void test_enums_and_names(void)
{
	for (size_t i = 0; i < n_key_tables; i++) {
		const struct key_table *t = key_tables[i];
		for (size_t j = 0; j < t->n_keys; j++) {
			const struct key_def *k = &t->keys[j];
			for (size_t l = 0; l < j; l++)
				g_assert_cmpstr(t->keys[l].name, !=, k->name);
			if (k->type == KEY_ENUM) {
				g_assert_nonnull(k->values);
				g_assert_nonnull(k->values[0]);
				for (size_t a = 0; k->values[a]; a++)
					for (size_t b = 0; b < a; b++)
						g_assert_cmpstr(k->values[a], !=, k->values[b]);
			}
			/* every nested table is listed, so checks and docs reach it */
			if (k->sub) {
				bool listed = false;
				for (size_t l = 0; l < n_key_tables; l++)
					listed |= key_tables[l] == k->sub;
				g_assert_true(listed);
			}
		}
	}
}

/* The self-check really rejects faulty rows. */
static void test_check_rejects(void)
{
	static const struct key_def no_help[] = {
		{ .name = "vcpus", .type = KEY_UINT, .help = "" },
	};
	static const struct key_def dup[] = {
		{ .name = "a", .type = KEY_STRING, .help = "the first one" },
		{ .name = "a", .type = KEY_STRING, .help = "the second one" },
	};
	static const struct key_def bad_enum[] = {
		{ .name = "e", .type = KEY_ENUM, .help = "an enum without values" },
	};
	static const struct key_def bad_default[] = {
		{ .name = "n",
		  .type = KEY_UINT,
		  .def = "7",
		  .min = 1,
		  .max = 4,
		  .help = "a default out of range" },
	};
	static const struct key_def upper[] = {
		{ .name = "x", .type = KEY_STRING, .help = "Capitalised help." },
	};
	static const struct {
		struct key_table t;
		const char *msg;
	} cases[] = {
		{ { "t", "doc", no_help, 1, 0, NULL },
		  "key 't.vcpus' needs help text (lower-case start, no final period)" },
		{ { "t", "doc", dup, 2, 0, NULL }, "table 't': duplicate key 'a'" },
		{ { "t", "doc", bad_enum, 1, 0, NULL }, "enum key 't.e' has no allowed values" },
		{ { "t", "doc", bad_default, 1, 0, NULL },
		  "key 't.n': bad default: 'n' must be between 1 and 4, not '7'" },
		{ { "t", "doc", upper, 1, 0, NULL },
		  "key 't.x' needs help text (lower-case start, no final period)" },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char *err = NULL;
		g_assert_cmpint(key_table_check(&cases[i].t, &err), ==, -1);
		g_assert_cmpstr(err, ==, cases[i].msg);
		free(err);
	}
}

static void test_defaults_and_set(void)
{
	struct plan_disk d;
	memset(&d, 0, sizeof(d));
	key_defaults(&plan_disk_keys, &d);
	g_assert_cmpint(d.kind, ==, PLAN_DISK_IMAGE);
	g_assert_cmpint(d.format, ==, PLAN_FORMAT_QCOW2);
	g_assert_cmpint(d.bus, ==, PLAN_BUS_VIRTIO);
	g_assert_cmpuint(d.size, ==, UINT64_C(4) << 30);
	g_assert_cmpuint(d.e.set, ==, 0);
	g_assert_false(key_is_set(&plan_disk_keys, &d, "bus"));

	char *err = NULL;
	const struct key_def *bus = key_find(&plan_disk_keys, "bus");
	g_assert_cmpint(key_set_scalar(bus, &d, "ide", &err), ==, 0);
	key_mark_set(&plan_disk_keys, &d, bus);
	g_assert_cmpint(d.bus, ==, PLAN_BUS_IDE);
	g_assert_true(key_is_set(&plan_disk_keys, &d, "bus"));
	g_assert_false(key_is_set(&plan_disk_keys, &d, "cache"));
	g_assert_cmpint(key_set_scalar(bus, &d, "ida", &err), ==, -1);
	g_assert_cmpstr(err, ==, "invalid bus 'ida' (did you mean 'ide'?)");
	g_clear_pointer(&err, free);
	g_assert_cmpint(key_set_scalar(bus, &d, "usb-stick", &err), ==, -1);
	g_assert_cmpstr(err, ==,
			"invalid bus 'usb-stick' (expected 'virtio', 'scsi', 'sata' or 'ide')");
	g_clear_pointer(&err, free);

	const struct key_def *size = key_find(&plan_disk_keys, "size");
	g_assert_cmpint(key_set_scalar(size, &d, "1KiB", &err), ==, -1);
	g_assert_cmpstr(err, ==, "'size' must be between 1MiB and 16TiB, not '1KiB'");
	g_clear_pointer(&err, free);
	g_assert_cmpint(key_set_scalar(size, &d, "lots", &err), ==, -1);
	g_assert_cmpstr(err, ==,
			"'size': invalid size 'lots': expected a number and a unit (B, KiB, MiB, "
			"GiB, TiB, KB, MB, GB or TB)");
	g_clear_pointer(&err, free);
	key_free(&plan_disk_keys, &d);
}

static void test_suggest(void)
{
	g_assert_cmpstr(key_suggest(&plan_keys, "datsets"), ==, "datasets");
	g_assert_cmpstr(key_suggest(&plan_vm_keys, "vcpu"), ==, "vcpus");
	g_assert_cmpstr(key_suggest(&plan_method_keys, "archve"), ==, "archive");
	g_assert_null(key_suggest(&plan_vm_keys, "zebra"));
}

static void test_schema(void)
{
	json_t *s = key_schema();
	g_assert_nonnull(s);
	g_assert_cmpstr(json_string_value(json_object_get(s, "$schema")), ==,
			"http://json-schema.org/draft-07/schema#");
	json_t *props = json_object_get(s, "properties");
	for (size_t i = 0; i < plan_keys.n_keys; i++)
		g_assert_nonnull(json_object_get(props, plan_keys.keys[i].name));
	json_t *vm = json_object_get(json_object_get(props, "vms"), "additionalProperties");
	json_t *machine = json_object_get(json_object_get(vm, "properties"), "machine");
	g_assert_cmpstr(json_string_value(json_object_get(machine, "default")), ==, "pc");
	g_assert_false(json_is_true(json_object_get(vm, "additionalProperties")));
	json_decref(s);
}

static void test_man(void)
{
	char *m = key_man();
	g_assert_nonnull(strstr(m, ".SS \"vms.NAME\"\n"));
	g_assert_nonnull(strstr(m, ".B vcpus\n(integer) virtual CPUs. Range 1 to 255. Default: "
				   "\\fB2\\fR.\n"));
	g_assert_nonnull(strstr(m, "Only with type \\fBdisk\\-image\\fR."));
	free(m);
}

static void test_values_json(void)
{
	struct plan_disk d;
	memset(&d, 0, sizeof(d));
	key_defaults(&plan_disk_keys, &d);
	d.kind = PLAN_DISK_TMPFS;
	d.size = UINT64_C(256) << 20;
	json_t *o = key_values_json(&plan_disk_keys, &d);
	char *s = json_dumps(o, JSON_COMPACT);
	/* keys that do not apply to a tmpfs disk are left out; sizes read as written */
	g_assert_cmpstr(s, ==, "{\"kind\":\"tmpfs\",\"size\":\"256MiB\"}");
	free(s);
	json_decref(o);

	struct plan_run r;
	memset(&r, 0, sizeof(r));
	key_defaults(&plan_run_keys, &r);
	o = key_values_json(&plan_run_keys, &r);
	s = json_dumps(o, JSON_COMPACT);
	g_assert_cmpstr(
	    s, ==,
	    "{\"boots\":{\"min\":0,\"max\":0},\"until\":\"0%\",\"budget\":\"0s\","
	    "\"repeat\":{\"min\":3,\"max\":10,\"until_cv\":\"0%\",\"budget\":\"0s\"},"
	    "\"warmup\":0,\"order\":\"sequential\",\"seed\":0,\"caches\":\"drop\","
	    "\"vm\":\"per-cell\",\"disk\":\"fresh\",\"fresh\":\"boot\",\"timeout\":\"10m\","
	    "\"cell_timeout\":\"1h\"}");
	free(s);
	json_decref(o);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/keys/check", test_tables_check);
	g_test_add_func("/keys/documented", test_every_key_documented);
	g_test_add_func("/keys/enums-and-names", test_enums_and_names);
	g_test_add_func("/keys/check-rejects", test_check_rejects);
	g_test_add_func("/keys/defaults-and-set", test_defaults_and_set);
	g_test_add_func("/keys/suggest", test_suggest);
	g_test_add_func("/keys/schema", test_schema);
	g_test_add_func("/keys/man", test_man);
	g_test_add_func("/keys/values-json", test_values_json);
	return g_test_run();
}
