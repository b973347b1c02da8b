/* SPDX-License-Identifier: MIT */
/* What test-stream.c and test-stream-network.c share: the host's busybox, which plays the
 * built-in guest (the same busybox-static it carries). */
#pragma once

/* The host's busybox (a path), or NULL when it has none; set by main(). */
extern char *busybox;

/* A directory base/bin holding busybox applet links, to run the guest commands with busybox
 * only (g_free()). */
char *applets(const char *base);
