/* SPDX-License-Identifier: MIT */
/* Helpers the dataset files (dataset.c, generate.c, scan.c, cache.c) share; not for elsewhere. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "dataset.h"

/* *err = "cannot WHAT 'PATH': strerror(errno)"; returns -1. */
int dataset_err_errno(char **err, const char *what, const char *path);

/* The number of leaf directories of spec's tree (1 without one). */
uint64_t dataset_leaves(const struct dataset_spec *spec);

/* Directory path of leaf `leaf` down to `level` levels ("dir1/dir0"), or "" at level 0. */
char *dataset_leaf_dir(const struct dataset_spec *spec, uint64_t leaf, unsigned level);

/* Whether generation was cancelled: o->cancelled(), else run_interrupted(). */
bool dataset_gen_cancelled(const struct dataset_gen_opts *o);
