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

/* The memory plan of a call as the runtime checks it: model_memory_variant
 * with the call's KV cache on the fused path (opts' types, pages, packed
 * tensors as stored, kv_cache_dims; the block table, fp8 scales and
 * packed offsets held beside them); the naive path and a plain cache as
 * model_memory_variant with opts->head_dim_v. */
int model_memory_options(const clattn_shape *shape, const clattn_options *opts,
                         uint64_t mask_bytes, clattn_path path, uint64_t extra_workspace_bytes,
                         clattn_memory_plan *out);

#endif
