/* SPDX-License-Identifier: MIT */
/* Tensor layouts (see layout.h). */
#include "core/error.h"
#include "core/layout.h"

/* layout_resolve for values stored in blocks of `bv` values of `bb` bytes
 * (1 and the element size for a plain dtype). */
static int resolve_blocks(const clattn_layout *in, size_t batch, size_t heads, size_t n,
                          size_t d, uint64_t bv, uint64_t bb, const char *name,
                          struct tensor_layout *out, uint64_t *span_bytes)
{
    if (in->byte_offset % bb)
        return clattn_fail(CLATTN_EINVAL, "%s: byte offset %zu is not a multiple of the "
                           "%s size %llu", name, in->byte_offset, bv > 1 ? "block" : "element",
                           (unsigned long long)bb);
    if (bv > 1 && (in->token_stride % bv || in->head_stride % bv || in->batch_stride % bv))
        return clattn_fail(CLATTN_EINVAL, "%s: strides (%zu, %zu, %zu) must be multiples of "
                           "the block's %llu values", name, in->batch_stride, in->head_stride,
                           in->token_stride, (unsigned long long)bv);
    out->offset = in->byte_offset / bb * bv;
    out->token = in->token_stride ? in->token_stride : d;
    if (out->token < d)
        return clattn_fail(CLATTN_EINVAL, "%s: token stride %llu is below d = %zu: rows would "
                           "overlap", name, (unsigned long long)out->token, d);
    uint64_t per_head, per_batch, last, span, blocks;
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
    blocks = span / bv + (span % bv != 0);
    ovf |= __builtin_mul_overflow(blocks, bb, span_bytes);
    if (ovf)
        return clattn_fail(CLATTN_EOVERFLOW, "%s: the layout's span overflows 64 bits", name);
    return CLATTN_OK;
}

int layout_resolve(const clattn_layout *in, size_t batch, size_t heads, size_t n, size_t d,
                   clattn_dtype dtype, const char *name, struct tensor_layout *out,
                   uint64_t *span_bytes)
{
    return resolve_blocks(in, batch, heads, n, d, 1, clattn_dtype_size(dtype), name, out,
                          span_bytes);
}

int layout_resolve_kv(const clattn_layout *in, size_t batch, size_t heads, size_t n, size_t d,
                      clattn_kv_type type, clattn_dtype dtype, const char *name,
                      struct tensor_layout *out, uint64_t *span_bytes)
{
    return resolve_blocks(in, batch, heads, n, d, clattn_kv_block_values(type),
                          clattn_kv_block_bytes(type, dtype), name, out, span_bytes);
}

int layout_rows_disjoint(const struct tensor_layout *l, size_t batch, size_t heads, size_t n,
                         size_t d, const char *name)
{
    /* The dimensions with more than one index, by stride: each stride must
     * pass the extent of those below it (the rows nest), the smallest the
     * row itself. A layout whose rows interleave without nesting is refused
     * too: telling it apart needs more than the strides' order. */
    struct dim {
        uint64_t count, stride;
        const char *what;
    } dims[3] = { { batch, l->batch, "batch" }, { heads, l->head, "head" },
                  { n, l->token, "token" } };
    for (int i = 1; i < 3; i++) /* insertion sort by stride */
        for (int j = i; j > 0 && dims[j].stride < dims[j - 1].stride; j--) {
            const struct dim t = dims[j];
            dims[j] = dims[j - 1];
            dims[j - 1] = t;
        }
    uint64_t extent = d; /* elements one index of the dimensions below spans */
    for (int i = 0; i < 3; i++) {
        if (dims[i].count < 2)
            continue;
        if (dims[i].stride < extent)
            return clattn_fail(CLATTN_EINVAL, "%s: %s stride %llu is below the %llu elements "
                               "its rows below span: rows of different (b, h, i) would "
                               "overlap", name, dims[i].what,
                               (unsigned long long)dims[i].stride,
                               (unsigned long long)extent);
        /* (count - 1) stride + extent: within 64 bits, as the span is. */
        extent += (dims[i].count - 1) * dims[i].stride;
    }
    return CLATTN_OK;
}

int layout_is_contiguous(const struct tensor_layout *l, size_t heads, size_t n, size_t d)
{
    return l->offset == 0 && l->token == d && l->head == (uint64_t)n * d &&
           l->batch == (uint64_t)heads * n * d;
}
