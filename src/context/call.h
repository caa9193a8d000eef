/* SPDX-License-Identifier: MIT */
/* One attention call as the entry points hand it to a path: the checked
 * shape and options, the caller's buffers and their resolved layouts, and
 * the optional extras. Paths only enqueue. */
#ifndef CLATTN_SRC_CONTEXT_CALL_H
#define CLATTN_SRC_CONTEXT_CALL_H

#include "clattn/clattn.h"
#include "core/layout.h"
#include "core/variant.h"

struct fused_plan; /* src/fused/kernel.h */

struct attention_call {
    const clattn_shape *shape;
    const clattn_options *opts;
    float scale;            /* resolved: never 0 */
    size_t head_dim_v;      /* resolved: V's and O's head dimension */
    unsigned flags;         /* the variant: FUSED_F_* of cl/include/fused_variant.h
                             * (mask, LSE out, per-sequence lengths) */
    int causal_off;         /* the bottom-right offset without per-sequence
                             * lengths: Nk - Nq, else 0 */
    cl_mem q, k, v, o;
    struct tensor_layout ql, kl, vl, ol;
    int contiguous;         /* every layout is the contiguous one */
    cl_mem lse;             /* fp32 [B, H, Nq] out, or NULL */
    cl_mem kv_lens, q_lens; /* uint32 [B], or NULL */
    cl_mem alibi_slopes, sinks, mask; /* the variants' device tensors, or NULL */
    cl_mem block_table;     /* int32 [B, stride] of a paged cache, or NULL */
    cl_mem cu_q, cu_k;      /* int32 [B + 1] packed offsets, or NULL */
    cl_mem k_scale, v_scale; /* fp8's fp32 scales, or NULL */
    size_t bt_stride;       /* the block table's row stride (resolved) */
    cl_uint num_wait;
    const cl_event *wait_list;
    cl_event *done;         /* may be NULL */
    clattn_run_info *info;  /* never NULL here */
    /* Room for the fused path's plan (or NULL): the path choice, which
     * needs the plan's workspace, fills it (its kernel set), and the
     * enqueue then runs that plan rather than planning again. */
    struct fused_plan *fused_plan;
};

#endif
