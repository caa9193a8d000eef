/* SPDX-License-Identifier: MIT */
/* Tensor layouts (clattn_layout) resolved to element strides, and the bytes
 * a tensor spans in its buffer. No OpenCL. */
#ifndef CLATTN_SRC_CORE_LAYOUT_H
#define CLATTN_SRC_CORE_LAYOUT_H

#include <stdint.h>

#include "clattn/types.h"

/* A layout in elements with every stride filled in. */
struct tensor_layout {
    uint64_t offset; /* elements before element (0, 0, 0, 0) */
    uint64_t batch, head, token;
};

/* Resolves `in` for a [batch, heads, n, d] tensor of `dtype` named `name`
 * ("Q", "K", ...): strides of 0 take the contiguous ones. *span_bytes gets
 * the bytes from the buffer's start to the end of its last element.
 * CLATTN_EINVAL for a byte offset that is not a multiple of the element
 * size or a token stride below d (rows would overlap), CLATTN_EOVERFLOW when
 * the span does not fit 64 bits. */
int layout_resolve(const clattn_layout *in, size_t batch, size_t heads, size_t n, size_t d,
                   clattn_dtype dtype, const char *name, struct tensor_layout *out,
                   uint64_t *span_bytes);

/* layout_resolve for K or V stored as `type` (clattn_kv_type): strides
 * and offsets in values, the byte offset a multiple of the type's block,
 * the strides of its values per block. */
int layout_resolve_kv(const clattn_layout *in, size_t batch, size_t heads, size_t n, size_t d,
                      clattn_kv_type type, clattn_dtype dtype, const char *name,
                      struct tensor_layout *out, uint64_t *span_bytes);

/* CLATTN_EINVAL, naming the tensor, when two distinct rows (b, h, i) of a
 * [batch, heads, n, d] tensor laid out as `l` (resolved) share an element:
 * an output written through such a layout would lose rows. The rows must
 * nest: ordered by stride, each dimension's stride at least the extent of
 * those below it (dimensions of one index do not count). */
int layout_rows_disjoint(const struct tensor_layout *l, size_t batch, size_t heads, size_t n,
                         size_t d, const char *name);

/* Nonzero when `l` is the contiguous layout of a [.., heads, n, d] tensor. */
int layout_is_contiguous(const struct tensor_layout *l, size_t heads, size_t n, size_t d);

#endif
