/* SPDX-License-Identifier: MIT */
/* The memory plan of a call with its variant, for the runtime's refusal of
 * a run that will not fit: clattn_model_memory with V and O of head_dim_v
 * columns (0: d) and the mask's buffer (0: none) held beside them. */
#ifndef CLATTN_SRC_MODEL_MEMORY_H
#define CLATTN_SRC_MODEL_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "clattn/model.h"

int model_memory_variant(const clattn_shape *shape, size_t head_dim_v, uint64_t mask_bytes,
                         clattn_path path, uint64_t extra_workspace_bytes,
                         clattn_memory_plan *out);

#endif
