/* SPDX-License-Identifier: MIT */
/*
 * The Debian guest's pieces that run without root or network: the mirror taken from apt
 * sources (one-line and deb822 forms), and the NoCloud seed ISO (read back with libarchive,
 * its volume id read from the primary volume descriptor).
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "debian.h"
#include "util.h"

static char *tmpdir(void)
{
	char *d = g_dir_make_tmp("ferry-debian-XXXXXX", NULL);
	g_assert_nonnull(d);
	return d;
}

static void put(const char *dir, const char *name, const char *text)
{
	g_autofree char *p = g_build_filename(dir, name, NULL);
	g_autofree char *parent = g_path_get_dirname(p);
	g_assert_cmpint(g_mkdir_with_parents(parent, 0755), ==, 0);
	g_assert_true(g_file_set_contents(p, text, -1, NULL));
}

static void rm_rf(const char *dir)
{
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", dir);
	g_assert_cmpint(system(cmd), ==, 0);
}

static void test_mirror(void)
{
	g_autofree char *d = tmpdir();
	char *err = NULL;

	/* nothing: an error that names the suite and the place */
	g_assert_null(guest_debian_mirror(d, "bookworm", &err));
	g_assert_nonnull(strstr(err, "'bookworm'"));
	g_free(err);
	err = NULL;

	/* deb822 in sources.list.d: the security suite and a disabled stanza do not count */
	put(d, "sources.list.d/debian.sources",
	    "# comment\nTypes: deb\nURIs: http://security.example/debian-security\n"
	    "Suites: bookworm-security\nComponents: main\n\n"
	    "Types: deb\nURIs: http://off.example/debian\nSuites: bookworm\nEnabled: no\n\n"
	    "Types: deb-src deb\nURIs: http://mirror.example/debian\n"
	    "Suites: bookworm bookworm-updates\nComponents: main\n");
	char *m = guest_debian_mirror(d, "bookworm", &err);
	g_assert_cmpstr(m, ==, "http://mirror.example/debian");
	free(m);

	/* the one-line sources.list comes first; options in brackets are skipped */
	put(d, "sources.list",
	    "deb-src http://src.example/debian bookworm main\n"
	    "deb [arch=amd64 signed-by=/k.gpg] http://one.example/debian bookworm main\n");
	m = guest_debian_mirror(d, "bookworm", &err);
	g_assert_cmpstr(m, ==, "http://one.example/debian");
	free(m);
	/* another suite is not taken for this one */
	g_assert_null(guest_debian_mirror(d, "trixie", &err));
	free(err);
	rm_rf(d);
}

/* The volume identifier of an ISO 9660 image: 32 bytes at offset 40 of the primary volume
 * descriptor (sector 16), padded with spaces. */
static char *iso_volume_id(const char *path)
{
	gchar *data = NULL;
	gsize len = 0;
	g_assert_true(g_file_get_contents(path, &data, &len, NULL));
	g_assert_cmpuint(len, >, 16 * 2048 + 72);
	const unsigned char *pvd = (const unsigned char *)data + 16 * 2048;
	g_assert_cmpint(pvd[0], ==, 1);
	g_assert_cmpmem(pvd + 1, 5, "CD001", 5);
	char *id = g_strndup((const char *)pvd + 40, 32);
	g_strchomp(id);
	g_free(data);
	return id;
}

static void test_seed(void)
{
	g_autofree char *d = tmpdir();
	g_autofree char *iso = g_build_filename(d, "seed.iso", NULL);
	const char *ud = "#cloud-config\npackages: [qemu-guest-agent]\nruncmd:\n"
			 "  - [systemctl, start, qemu-guest-agent]\n";
	char *err = NULL;

	g_assert_cmpint(guest_seed_write(iso, "ferry-0123", ud, strlen(ud), &err), ==, 0);
	g_assert_null(err);
	g_autofree char *vol = iso_volume_id(iso);
	g_assert_cmpstr(vol, ==, "CIDATA"); /* ISO 9660 d-characters: upper case */

	/* libarchive reads the names back in lower case (Rock Ridge) with their content */
	struct archive *a = archive_read_new();
	archive_read_support_format_iso9660(a);
	g_assert_cmpint(archive_read_open_filename(a, iso, 10240), ==, ARCHIVE_OK);
	struct archive_entry *e;
	unsigned seen = 0;
	while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
		const char *name = archive_entry_pathname(e);
		char buf[4096];
		la_ssize_t n = archive_read_data(a, buf, sizeof(buf) - 1);
		g_assert_cmpint(n, >=, 0);
		buf[n] = '\0';
		if (g_str_equal(name, "user-data")) {
			g_assert_cmpstr(buf, ==, ud);
			seen |= 1;
		} else if (g_str_equal(name, "meta-data")) {
			g_assert_nonnull(strstr(buf, "instance-id: ferry-0123\n"));
			g_assert_nonnull(strstr(buf, "local-hostname: "));
			seen |= 2;
		} else if (!g_str_equal(name, ".")) { /* the root directory */
			g_error("unexpected entry '%s'", name);
		}
	}
	g_assert_cmpuint(seen, ==, 3);
	archive_read_free(a);

	/* a path that is a symbolic link is refused, not written through */
	g_autofree char *link = g_build_filename(d, "link.iso", NULL);
	g_assert_cmpint(symlink(iso, link), ==, 0);
	g_assert_cmpint(guest_seed_write(link, "x", "", 0, &err), <, 0);
	g_assert_nonnull(strstr(err, "symbolic link"));
	free(err);
	rm_rf(d);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/guest-debian/mirror", test_mirror);
	g_test_add_func("/guest-debian/seed", test_seed);
	return g_test_run();
}
