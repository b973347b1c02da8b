/* SPDX-License-Identifier: MIT */
/* The built-in guest's VM configuration, for test-vm-config.c and test-vm-setup.c. */
#pragma once

#include "vm.h"

static inline void builtin(struct vm_config *c)
{
	vm_config_init(c);
	c->kernel = "/var/cache/ferry/guest/vmlinux";
	c->initrd = "/var/cache/ferry/guest/initrd.cpio";
	c->cmdline = "console=ttyS0 panic=-1 quiet";
}
