/* SPDX-License-Identifier: MIT */
/*
 * The mapping of a plan's vm and disk entries onto the VM layer's configurations (vm.h), in one
 * place. Strings are borrowed from the plan entries and the arguments.
 */
#pragma once

#include "plan.h"
#include "vm.h"

/*
 * vm entry -> vm_config. kernel, initrd, cmdline: the files of the guest ferry built for
 * `guest: builtin` or `guest: debian` (root: the Debian guest's root image, NULL otherwise); an
 * image guest takes image, kernel, initrd and cmdline from the entry (the seed ISO is the
 * caller's to set: it is built from the entry's user-data).
 */
void vm_config_from_plan(const struct plan_vm *p, const char *kernel, const char *initrd,
			 const char *cmdline, const char *root, struct vm_config *c);
/* disk entry -> disk_config of the target disk (image kind: path and serial as given). */
void vm_disk_config_from_plan(const struct plan_disk *p, const char *path, const char *serial,
			      struct disk_config *c);
/* plan enums -> vm enums */
enum disk_format vm_disk_format_from_plan(enum plan_disk_format f);
enum disk_bus vm_disk_bus_from_plan(enum plan_bus b);
