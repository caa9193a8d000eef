/* SPDX-License-Identifier: MIT */
/* Appending a step's keys and values to a KV cache: the checks and
 * layouts the host (kv_append.c) and the device (api/kv_append_cl.c,
 * cl/api/kv_append.cl) share. No OpenCL. */
#ifndef CLATTN_SRC_CORE_KV_APPEND_H
#define CLATTN_SRC_CORE_KV_APPEND_H

#include "clattn/types.h"
#include "core/layout.h"

/* Where everything is: the new K and V ([B, Hkv, new_len, d] by their
 * layout) and the caches (their layouts as stored: pages or sequences). */
struct kv_append_plan {
    size_t new_len, dv, bt_stride;
    struct tensor_layout k_new, v_new, k_cache, v_cache;
    uint64_t spans[4]; /* bytes of k_new, v_new, k_cache, v_cache */
};

/* Checks shape, options (resolved) and new_len for an append (`host`: the
 * lengths and tables in host memory, each length + new_len within Nk) and
 * fills the plan. CLATTN_EINVAL naming the argument. */
int kv_append_prepare(const clattn_shape *s, const clattn_options *o, size_t new_len,
                      const clattn_layout *new_layout, int host, int device_lens,
                      struct kv_append_plan *plan);

/* The value index of the row of cache position `pos` of (b, hk) in a cache
 * of layout l (pages through the host block table). */
uint64_t kv_append_cache_row(const clattn_options *o, const struct kv_append_plan *p,
                             const struct tensor_layout *l, size_t b, size_t hk, size_t pos);

#endif
