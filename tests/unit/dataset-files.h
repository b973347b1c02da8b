/* SPDX-License-Identifier: MIT */
/* What test-dataset.c and test-dataset-verify.c share: temporary folders, generated datasets,
 * small files. */
#pragma once

#include <stddef.h>

#include "dataset.h"

/* A new temporary folder (free with rmtree()). */
char *tmpdir(void);
/* Removes the folder d and frees d. */
void rmtree(char *d);
/* The dataset of spec generated into dir, which must succeed. */
struct manifest *gen(const struct dataset_spec *spec, const char *dir);
/* The file's bytes, which must be readable (free()). */
char *slurp(const char *path, size_t *len);
/* Writes s to the file path. */
void write_text(const char *path, const char *s);
