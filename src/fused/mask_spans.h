/* SPDX-License-Identifier: MIT */
/* The key span of each row tile under a call's mask_mod and mask tensor
 * (cl/fused/mask_spans.cl). A mask_mod's alone is evaluated on the device
 * once per (snippet, shape, tile rows) and kept in the context, so that
 * the calls of one shape reuse it, as FlexAttention's create_block_mask is
 * made once and passed to each call; with a mask tensor, whose values a
 * caller may change between calls, each call evaluates its own before the
 * kernel reads the mask (one more read of the mask over the keys outside
 * the spans, against the blocks the kernel then skips). The kernels made
 * at build time (nv-wgmma) take no spans. */
#ifndef CLATTN_SRC_FUSED_MASK_SPANS_H
#define CLATTN_SRC_FUSED_MASK_SPANS_H

#include <stddef.h>
#include <stdint.h>

#include "clattn/clattn.h"
#include "context/kept_buffer.h"

struct attention_call;
struct fused_plan;

/* Spans kept per context; the oldest goes when a new one needs its place. */
#define MASK_SPANS_KEPT 8

struct mask_span_entry {
    char *snippet;                     /* the mask_mod's text (NULL: empty) */
    size_t batch, kv_heads, group, n_q, n_k, bm;
    cl_mem spans;                      /* uint [B, Hkv, tiles, 2] */
};

struct mask_span_cache {
    struct mask_span_entry entries[MASK_SPANS_KEPT];
    unsigned next;                /* the entry a new span takes */
    struct kept_buffer per_call;  /* the spans of a call with a mask tensor */
};

/* The spans of call `c` under plan's row tiles in *out (the cache keeps
 * the reference), enqueued before the call's kernel on the context's
 * in-order queue when new (after the call's wait list where they read its
 * mask); NULL without a mask_mod or mask, or for a kernel made at build
 * time. */
int mask_spans_get(clattn_ctx *ctx, const struct attention_call *c, const struct fused_plan *plan,
                   cl_mem *out);

void mask_span_cache_release(struct mask_span_cache *cache);

#endif
