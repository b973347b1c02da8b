/* SPDX-License-Identifier: MIT */
/* The host's busybox as the built-in guest, for test-stream.c and test-stream-network.c. */
#include <glib.h>
#include <glib/gstdio.h>
#include <unistd.h>

#include "stream-busybox.h"

char *busybox;

/* base/bin with an applet link for every command the guest lines use */
char *applets(const char *base)
{
	char *dir = g_build_filename(base, "bin", NULL);
	g_mkdir(dir, 0755);
	static const char *const names[] = { "sh",  "tar", "cpio",  "unzip", "gzip", "xz",
					     "cat", "rm",  "mkdir", "head",  "dd" };
	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		char *l = g_build_filename(dir, names[i], NULL);
		g_assert_cmpint(symlink(busybox, l), ==, 0);
		g_free(l);
	}
	return dir;
}
