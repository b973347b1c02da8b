/* SPDX-License-Identifier: MIT */
/* disk-image's options (disk-image.c declares their keys). Public only for the fake machine,
 * which says from them which images its loop devices can plug (machine/fake-ops.c). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"

/* filesystem: the order of its values */
enum di_fs { DI_FS_EXT4, DI_FS_ISO9660, DI_FS_VFAT };

struct di_opts {
	uint64_t set;
	enum di_fs filesystem;
	enum plan_disk_format image_format;
	enum plan_bus image_bus;
	bool in_place;
};
