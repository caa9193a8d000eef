/* SPDX-License-Identifier: MIT */
/* The attention variants of clattn_options (softcap, ALiBi, window, sinks,
 * mask, custom snippets, d_v): their checks and the arithmetic every path
 * shares. No OpenCL. */
#ifndef CLATTN_SRC_CORE_VARIANTS_H
#define CLATTN_SRC_CORE_VARIANTS_H

#include <stddef.h>
#include <stdint.h>

#include "clattn/types.h"

/* The largest d_v (clattn_options.head_dim_v). */
#define VARIANTS_HEAD_DIM_V_MAX 512

/* V's and O's head dimension: opts->head_dim_v, or d. */
size_t variants_head_dim_v(const clattn_shape *s, const clattn_options *opts);

/* The mask's strides resolved: elements between batches (0 where the mask
 * has one), heads (likewise) and query rows. */
struct mask_strides {
    uint64_t batch, head, row, offset;
};
void mask_strides_of(const clattn_shape *s, const clattn_mask *m, struct mask_strides *out);

/* Element (b, h, i, j) of the mask, in elements from its start. */
size_t mask_element(const clattn_shape *s, const clattn_mask *m, size_t b, size_t h, size_t i,
                    size_t j);

/* Bytes from the mask's start to the end of its last element. */
int mask_span_bytes(const clattn_shape *s, const clattn_mask *m, uint64_t *bytes);

/* Checks the variants of opts for shape s: softcap finite and >= 0, window
 * sides >= -1, a known mask kind and dtype, mask batch 1 or B and heads 1
 * or H, d_v within VARIANTS_HEAD_DIM_V_MAX; with `host`, the tensors the
 * variants name present in host memory (the reference, the host calls'
 * arrays). CLATTN_EINVAL naming the field. */
int variants_check(const clattn_shape *s, const clattn_options *opts, int host);

/* Whether opts asks for any variant beyond causal masks and lengths. */
int variants_any(const clattn_options *opts);

#endif
