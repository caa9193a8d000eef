/* SPDX-License-Identifier: MIT */
/* clattn_attention_with_kvcache_cl: a decoding step's keys appended to the
 * cache, then attention over the grown cache, in one call (FlashAttention's
 * flash_attn_with_kvcache with k, v and cache_seqlens). */
#include <stdint.h>
#include <stdlib.h>

#include "clattn/clattn.h"
#include "core/abi.h"
#include "core/error.h"

int clattn_attention_with_kvcache_cl(clattn_ctx *ctx, const clattn_shape *shape,
                                     const clattn_options *opts, cl_mem q, cl_mem k_cache,
                                     cl_mem v_cache, cl_mem o, size_t new_len,
                                     const clattn_layout *new_layout, cl_mem k_new,
                                     cl_mem v_new, const clattn_extras *extras, int update_lens,
                                     cl_uint num_wait, const cl_event *wait_list,
                                     cl_event *done, clattn_run_info *info)
{
    clattn_clear_error();
    if (!shape || !opts)
        return clattn_fail(CLATTN_EINVAL, "clattn_attention_with_kvcache_cl: NULL %s",
                           shape ? "opts" : "shape");
    clattn_extras ex = CLATTN_EXTRAS_INIT;
    int rc;
    if (extras && (rc = abi_read(extras, &ex, sizeof ex, ABI_SIZE_THROUGH(clattn_extras, lse),
                                 "extras", "CLATTN_EXTRAS_INIT")) < 0)
        return rc;
    if (new_len == 0) /* nothing to append: the attention alone */
        return clattn_attention_ex_cl(ctx, shape, opts, q, k_cache, v_cache, o, extras, num_wait,
                                      wait_list, done, info);
    /* The attention reads the grown lengths: the host's plus new_len here,
     * the device's as the append advances them. */
    if (ex.kv_lens && !update_lens)
        return clattn_fail(CLATTN_EINVAL, "lengths on the device (extras->kv_lens) are read by "
                           "the attention after the append: ask update_lens to advance them");
    if (!ex.kv_lens && !opts->kv_lens)
        return clattn_fail(CLATTN_EINVAL, "appending needs the sequences' current lengths "
                           "(opts->kv_lens or extras->kv_lens)");
    uint32_t *grown = NULL;
    clattn_options after = *opts;
    if (!ex.kv_lens) {
        if (shape->batch > SIZE_MAX / sizeof *grown ||
            !(grown = malloc(shape->batch * sizeof *grown)))
            return clattn_fail(CLATTN_ENOMEM, "the grown lengths (%zu sequences)", shape->batch);
        for (size_t b = 0; b < shape->batch; b++) {
            if (opts->kv_lens[b] > shape->kv_len || new_len > shape->kv_len - opts->kv_lens[b]) {
                free(grown);
                return clattn_fail(CLATTN_EINVAL, "sequence %zu: %u keys and %zu new pass the "
                                   "cache's %zu", b, opts->kv_lens[b], new_len, shape->kv_len);
            }
            grown[b] = opts->kv_lens[b] + (uint32_t)new_len;
        }
        after.kv_lens = grown;
    }
    /* Refused before the cache is written where the attention would be
     * (the plan reads host tables: with device ones the attention's own
     * checks come after the append). */
    const int device_tables = ex.kv_lens || ex.q_lens || ex.block_table || ex.cu_seqlens_q ||
                              ex.cu_seqlens_k || ex.k_scale || ex.v_scale || ex.alibi_slopes ||
                              ex.sinks || ex.mask;
    rc = device_tables ? CLATTN_OK : clattn_attention_plan(ctx, shape, &after, NULL);
    cl_event appended = NULL;
    if (rc >= 0)
        rc = clattn_kv_append_cl(ctx, shape, opts, new_len, new_layout, k_new, v_new, k_cache,
                                 v_cache, extras, update_lens, num_wait, wait_list, &appended);
    if (rc >= 0)
        rc = clattn_attention_ex_cl(ctx, shape, &after, q, k_cache, v_cache, o, extras, 1,
                                    &appended, done, info);
    if (appended)
        clReleaseEvent(appended);
    free(grown);
    return rc;
}
