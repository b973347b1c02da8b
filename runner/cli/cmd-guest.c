/* SPDX-License-Identifier: MIT */
/*
 * `ferry guest build|info|path [builtin|debian]`: build the built-in guest from Debian packages
 * (or the Debian guest with debootstrap), show what is in it, print what a VM boots.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "debian.h"
#include "guest.h"
#include "util.h"

static int cmd_guest(int argc, char **argv);
static const char *const guest_names[] = { "builtin", "debian", NULL };
static const struct cli_option guest_cache_option[] = {
	{ .name = "cache-dir",
	  .id = 'C',
	  .short_name = 'C',
	  .arg = "DIR",
	  .value = CLI_DIR,
	  .help = "the cache instead of the default" },
	CLI_END,
};
static const struct cli_option guest_build_options[] = {
	{ .name = "force",
	  .id = 'f',
	  .short_name = 'f',
	  .help = "build again even when the cache is up to date" },
	CLI_END,
};
static const struct cli_option guest_info_options[] = {
	{ .name = "json", .id = 'j', .short_name = 'j', .help = "as JSON" },
	CLI_END,
};
#define GUEST_SUB(sub, ...)                                                                        \
	{                                                                                          \
		.name = "guest " sub, .operands = "[builtin|debian]", .operand = CLI_ENUM,         \
		.operand_values = guest_names, .opts = (const struct cli_option *const[])          \
		{                                                                                  \
			guest_cache_option, __VA_ARGS__                                            \
		}                                                                                  \
	}
static const struct cli_command cli_guest_build = GUEST_SUB("build", guest_build_options, NULL);
static const struct cli_command cli_guest_info = GUEST_SUB("info", guest_info_options, NULL);
static const struct cli_command cli_guest_path = GUEST_SUB("path", NULL);
const struct cli_command cli_guest = {
	.name = "guest",
	.summary = "build the built-in or the Debian guest, show what is in it",
	.about =
	    "Build the built-in guest (Debian kernel, busybox, qemu-guest-agent) from Debian\n"
	    "packages into the cache, show what is in it, or print the kernel and initramfs a VM\n"
	    "boots. 'debian' is the Debian guest (guest: debian): Debian 12 with systemd made by\n"
	    "debootstrap (as root) from the archive the host's apt sources name, booted from its\n"
	    "own kernel and initrd. The cache is $FERRY_CACHE_DIR, else /var/cache/ferry as root,\n"
	    "else $XDG_CACHE_HOME/ferry.",
	.subs = (const struct cli_command *const[]){ &cli_guest_build, &cli_guest_info,
						     &cli_guest_path, NULL },
	.run = cmd_guest,
};

static void print_progress(void *userdata, const char *msg)
{
	fprintf(stderr, "guest: %s\n", msg);
}

static int guest_build_cmd(const char *cache, bool force)
{
	struct guest_build_opts o = {
		.cache_dir = cache,
		.force = force,
		.progress = print_progress,
	};
	struct guest_files g;
	_cleanup_free_ char *err = NULL;
	bool rebuilt = false;
	uint64_t t0 = now_ns();
	int r = guest_build(&o, &g, &rebuilt, &err);

	if (r < 0) {
		errorf("guest build: %s", err);
		return EXIT_INFRA;
	}
	fprintf(stderr, "guest: %s in %.1f s\n", rebuilt ? "built" : "up to date (cached)",
		(double)(now_ns() - t0) / 1e9);
	printf("kernel: %s%s\ninitramfs: %s\n", g.kernel, g.pvh ? " (PVH)" : " (bzImage)",
	       g.initramfs);
	guest_files_clear(&g);
	return EXIT_OK;
}

static int debian_build_cmd(const char *cache, bool force)
{
	struct guest_build_opts o = {
		.cache_dir = cache,
		.force = force,
		.progress = print_progress,
	};
	struct guest_image g;
	_cleanup_free_ char *err = NULL;
	bool rebuilt = false;
	uint64_t t0 = now_ns();
	int r = guest_debian_build(&o, &g, &rebuilt, &err);

	if (r < 0) {
		errorf("guest build debian: %s", err);
		return EXIT_INFRA;
	}
	fprintf(stderr, "guest: %s in %.1f s\n", rebuilt ? "built" : "up to date (cached)",
		(double)(now_ns() - t0) / 1e9);
	printf("root: %s\nkernel: %s\ninitrd: %s\n", g.root, g.kernel, g.initrd);
	guest_image_clear(&g);
	return EXIT_OK;
}

static int debian_info_cmd(const char *cache, bool as_json)
{
	_cleanup_free_ char *err = NULL, *text = NULL;
	if (guest_debian_manifest(cache, &text, &err) < 0) {
		errorf("guest info debian: %s", err);
		return EXIT_INFRA;
	}
	if (as_json) {
		printf("%s\n", text);
		return EXIT_OK;
	}
	json_t *m = json_loads(text, 0, NULL);
	size_t idx;
	json_t *v;
	printf("directory:      %s\n", json_string_value(json_object_get(m, "dir")));
	printf("suite:          %s\n", json_string_value(json_object_get(m, "suite")));
	printf("mirror:         %s\n", json_string_value(json_object_get(m, "mirror")));
	printf("kernel version: %s\n", json_string_value(json_object_get(m, "kernel_version")));
	static const char *const files[] = { "root", "kernel", "initrd" };
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		json_t *f = json_object_get(m, files[i]);
		_cleanup_free_ char *size =
		    human_size((uint64_t)json_integer_value(json_object_get(f, "size")));
		printf("%-15s %s, %s\n", files[i], json_string_value(json_object_get(f, "file")),
		       size);
	}
	printf("cmdline:        %s\n", json_string_value(json_object_get(m, "cmdline")));
	printf("packages:       %zu\n", json_array_size(json_object_get(m, "packages")));
	json_array_foreach(json_object_get(m, "packages"), idx, v)
	    printf("  %-28s %s\n", json_string_value(json_object_get(v, "name")),
		   json_string_value(json_object_get(v, "version")));
	json_decref(m);
	return EXIT_OK;
}

static int debian_path_cmd(const char *cache)
{
	_cleanup_free_ char *err = NULL;
	struct guest_image g;
	if (guest_debian_locate(cache, &g, &err) < 0) {
		errorf("guest path debian: %s", err);
		return EXIT_INFRA;
	}
	printf("%s\n%s\n%s\n", g.kernel, g.initrd, g.root);
	guest_image_clear(&g);
	return EXIT_OK;
}

/* A file's size in the manifest for people, and in bytes. */
static char *size_text(const json_t *file)
{
	json_int_t n = json_integer_value(json_object_get(file, "size"));
	_cleanup_free_ char *h = human_size((uint64_t)n);
	return xasprintf("%s (%lld bytes)", h, (long long)n);
}

static int guest_info_cmd(const char *cache, bool as_json)
{
	_cleanup_free_ char *err = NULL, *text = NULL;
	int r = guest_manifest(cache, &text, &err);

	if (r < 0) {
		errorf("guest info: %s", err);
		return EXIT_INFRA;
	}
	if (as_json) {
		printf("%s\n", text);
		return EXIT_OK;
	}
	json_t *m = json_loads(text, 0, NULL);
	json_t *k = json_object_get(m, "kernel"), *i = json_object_get(m, "initramfs");
	_cleanup_free_ char *ks = size_text(k), *is = size_text(i);
	size_t idx;
	json_t *v;

	printf("directory:      %s\n", json_string_value(json_object_get(m, "dir")));
	printf("kernel version: %s\n", json_string_value(json_object_get(m, "kernel_version")));
	printf("kernel:         %s, %s\n", json_string_value(json_object_get(k, "path")), ks);
	printf("boot:           %s\n", json_is_true(json_object_get(m, "pvh")) ? "PVH" : "bzImage");
	printf("                %s\n", json_string_value(json_object_get(m, "kernel_source")));
	printf("initramfs:      %s, %s, %lld entries\n",
	       json_string_value(json_object_get(i, "path")), is,
	       (long long)json_integer_value(json_object_get(i, "entries")));
	printf("initramfs sha256: %s\n", json_string_value(json_object_get(i, "sha256")));
	printf("cmdline:        %s\n", json_string_value(json_object_get(m, "cmdline")));
	printf("packages:\n");
	json_array_foreach(json_object_get(m, "packages"), idx, v)
	    printf("  %-28s %s\n", json_string_value(json_object_get(v, "name")),
		   json_string_value(json_object_get(v, "version")));
	printf("modules (load order):");
	json_array_foreach(json_object_get(m, "modules"), idx, v)
	    printf("%s%s", idx % 8 ? " " : "\n  ", json_string_value(v));
	printf("\nlibraries:");
	json_array_foreach(json_object_get(m, "libraries"), idx, v)
	    printf("%s%s", idx % 6 ? " " : "\n  ", json_string_value(v));
	printf("\nbusybox applets: %lld\n",
	       (long long)json_integer_value(json_object_get(m, "applets")));
	json_decref(m);
	return EXIT_OK;
}

static int guest_path_cmd(const char *cache)
{
	_cleanup_free_ char *err = NULL;
	struct guest_files g;
	int r = guest_locate(cache, &g, &err);

	if (r < 0) {
		errorf("guest path: %s", err);
		return EXIT_INFRA;
	}
	printf("%s\n%s\n", g.kernel, g.initramfs);
	guest_files_clear(&g);
	return EXIT_OK;
}

static int cmd_guest(int argc, char **argv)
{
	static const char *const actions[] = { "build", "info", "path" };
	const char *cache = NULL;
	bool force = false, as_json = false;
	int c;

	while ((c = cli_getopt(&cli_guest, argc, argv)) != -1) {
		switch (c) {
		case 'C': cache = optarg; break;
		case 'f': force = true; break;
		case 'j': as_json = true; break;
		case 'h': return cli_usage_exit(&cli_guest, stdout);
		default: return cli_usage_exit(&cli_guest, stderr);
		}
	}
	if (optind != argc - 1 && optind != argc - 2) {
		return cli_usage_exit(&cli_guest, stderr);
	}
	const char *action = argv[optind];
	const char *which = optind == argc - 2 ? argv[optind + 1] : "builtin";
	bool debian = STREQ(which, "debian");
	if (!debian && !STREQ(which, "builtin")) {
		errorf("unknown guest '%s' (builtin or debian)", which);
		return EXIT_PLAN;
	}
	if (STREQ(action, "build") && !as_json)
		return debian ? debian_build_cmd(cache, force) : guest_build_cmd(cache, force);
	if (STREQ(action, "info") && !force)
		return debian ? debian_info_cmd(cache, as_json) : guest_info_cmd(cache, as_json);
	if (STREQ(action, "path") && !force && !as_json)
		return debian ? debian_path_cmd(cache) : guest_path_cmd(cache);

	bool known = false;
	for (size_t i = 0; i < ELEMENTSOF(actions); i++)
		known |= STREQ(actions[i], action);
	if (known) {
		errorf("guest %s: option not valid here; see 'ferry guest --help'", action);
		return EXIT_PLAN;
	}
	const char *hint = closest_match(action, actions, ELEMENTSOF(actions));
	if (hint)
		errorf("unknown guest action '%s' (did you mean '%s'?)", action, hint);
	else
		errorf("unknown guest action '%s'; see 'ferry guest --help'", action);
	return EXIT_PLAN;
}
