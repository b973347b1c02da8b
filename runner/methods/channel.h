/* SPDX-License-Identifier: MIT */
/*
 * The host end of ferry's own virtio-serial port, shared by the channel and block methods (both
 * ask for the same port, so their cells can share a VM).
 *
 * The trap (GUEST.md): bytes the host wrote but QEMU had not yet taken from the socket are lost
 * when the host closes early. QEMU only reads from the socket what the guest has room for and
 * hands it straight to the guest's queue, so once the socket's send queue is empty (SIOCOUTQ 0)
 * everything is in the guest; only then does the host close, and the guest's reader sees the end
 * of the stream after the last byte.
 */
#pragma once

#include "method.h"

/* The port name; the guest reads /dev/virtio-ports/CHANNEL_PORT. */
#define CHANNEL_PORT      "ferry.channel"
#define CHANNEL_GUEST_DEV "/dev/virtio-ports/" CHANNEL_PORT

/*
 * The guest command that reads the whole stream from the port to stdout. A read while the
 * guest does not yet know the host is connected returns end-of-file at once, so it first waits
 * (up to ~5 s) for debugfs's host_connected of the port to say 1 (skipped where the guest has
 * no debugfs). CHANNEL_GUEST_WAIT is the wait alone (for a reader that opens the port itself).
 */
#define CHANNEL_GUEST_WAIT                                                                         \
	"d=/sys/kernel/debug/virtio-ports; "                                                       \
	"[ -d $d ] || mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null; "                    \
	"p=$(readlink " CHANNEL_GUEST_DEV "); p=$d/${p##*/}; i=0; "                                \
	"while [ -f $p ] && ! grep -q '^host_connected: 1' $p && [ $i -lt 500 ]; do "              \
	"i=$((i + 1)); usleep 10000; done"
#define CHANNEL_GUEST_READ CHANNEL_GUEST_WAIT "; dd if=" CHANNEL_GUEST_DEV " bs=65536 2>/dev/null"

/* Add the port to the boot-time devices (once). */
int channel_add_port(struct method_ctx *ctx, struct method_boot_needs *needs);

/* Connect to the host end of the port (non-blocking fd in *fd). Returns 0 or -1 (ctx->err). */
int channel_connect(struct method_ctx *ctx, int *fd);

/*
 * Wait until the guest has taken every byte written to fd (the socket's send queue is empty),
 * then close fd (*fd = -1). Returns 0 or -1 (ctx->err) after ctx->timeout_ms.
 */
int channel_drain_close(struct method_ctx *ctx, int *fd);
