/* SPDX-License-Identifier: MIT */
/*
 * `ferry merge`: the results files of the shards of one plan (`ferry run --shard K/N`) joined
 * into the results file an unsharded run would have written: the same cells in the plan's
 * expansion order, each keeping its runs and statistics, and the provenance of every shard
 * (results.origins; each cell's origin names the shard and host that ran it).
 */
#pragma once

#include <stddef.h>

#include "results.h"

/*
 * Merge n results files (names[i] is how messages name in[i]). Refused, with *err naming the
 * files (and the cell) involved, when a file has no plan hash or another plan's, when two files
 * claim the same shard, or when a cell is in two files. The cells are moved out of the inputs
 * (which stay the caller's to free, without cells). The merged file's plan is the inputs'; its
 * top-level provenance is the first shard's with the earliest start and the latest end; its
 * shard is 0/0. *warning (may be NULL) says what is merged but probably not meant, such as
 * shards of K/N that are missing. Returns the merged model, or NULL with *err.
 */
struct results *results_merge(struct results *const *in, const char *const *names, size_t n,
			      char **warning, char **err);
