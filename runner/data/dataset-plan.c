/* SPDX-License-Identifier: MIT */
/* A plan's dataset entry onto a dataset specification (dataset-plan.h). */
#include "dataset-plan.h"

void dataset_spec_from_plan(const struct plan_dataset *p, struct dataset_spec *s)
{
	*s = (struct dataset_spec){ 0 };
	if (p->path) {
		s->path = p->path;
		return;
	}
	s->files = p->files;
	s->size_min = p->size.min;
	s->size_max = p->size.max;
	if (p->size.min == p->size.max)
		s->dist = DATASET_DIST_FIXED;
	else
		s->dist = p->size.distribution == PLAN_DIST_LOGNORMAL ? DATASET_DIST_LOGNORMAL
								      : DATASET_DIST_UNIFORM;
	s->depth = (unsigned)p->dirs.depth;
	s->fanout = (unsigned)p->dirs.fanout;
	s->content = p->content == PLAN_CONTENT_ZEROS          ? DATASET_CONTENT_ZEROS
		     : p->content == PLAN_CONTENT_TEXT         ? DATASET_CONTENT_TEXT
		     : p->content == PLAN_CONTENT_COMPRESSIBLE ? DATASET_CONTENT_COMPRESSIBLE
							       : DATASET_CONTENT_RANDOM;
	s->ratio = p->ratio;
	s->seed = p->seed;
}
