/* SPDX-License-Identifier: MIT */
/* Tensor layouts (see layout.h). */
#include "core/error.h"
#include "core/layout.h"

int layout_resolve(const clattn_layout *in, size_t batch, size_t heads, size_t n, size_t d,
                   clattn_dtype dtype, const char *name, struct tensor_layout *out,
                   uint64_t *span_bytes)
{
    const uint64_t e = clattn_dtype_size(dtype);
    if (in->byte_offset % e)
        return clattn_fail(CLATTN_EINVAL, "%s: byte offset %zu is not a multiple of the "
                           "element size %llu", name, in->byte_offset, (unsigned long long)e);
    out->offset = in->byte_offset / e;
    out->token = in->token_stride ? in->token_stride : d;
    if (out->token < d)
        return clattn_fail(CLATTN_EINVAL, "%s: token stride %llu is below d = %zu: rows would "
                           "overlap", name, (unsigned long long)out->token, d);
    uint64_t per_head, per_batch, last, span;
    int ovf = __builtin_mul_overflow((uint64_t)n, out->token, &per_head);
    out->head = in->head_stride ? in->head_stride : per_head;
    ovf |= __builtin_mul_overflow((uint64_t)heads, out->head, &per_batch);
    out->batch = in->batch_stride ? in->batch_stride : per_batch;
    /* The last element: offset + (B-1) sb + (H-1) sh + (N-1) st + d - 1. */
    uint64_t terms[4];
    ovf |= __builtin_mul_overflow((uint64_t)(batch - 1), out->batch, &terms[0]);
    ovf |= __builtin_mul_overflow((uint64_t)(heads - 1), out->head, &terms[1]);
    ovf |= __builtin_mul_overflow((uint64_t)(n - 1), out->token, &terms[2]);
    terms[3] = d - 1;
    last = out->offset;
    for (int i = 0; i < 4; i++)
        ovf |= __builtin_add_overflow(last, terms[i], &last);
    ovf |= __builtin_add_overflow(last, 1, &span);
    ovf |= __builtin_mul_overflow(span, e, span_bytes);
    if (ovf)
        return clattn_fail(CLATTN_EOVERFLOW, "%s: the layout's span overflows 64 bits", name);
    return CLATTN_OK;
}

int layout_is_contiguous(const struct tensor_layout *l, size_t heads, size_t n, size_t d)
{
    return l->offset == 0 && l->token == d && l->head == (uint64_t)n * d &&
           l->batch == (uint64_t)heads * n * d;
}
