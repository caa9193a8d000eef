/* SPDX-License-Identifier: MIT */
/* Shapes and dtypes: validation and element counts. */
#include "core/error.h"

size_t clattn_dtype_size(clattn_dtype dtype)
{
    switch (dtype) {
    case CLATTN_F32: return 4;
    case CLATTN_F16: return 2;
    case CLATTN_BF16: return 2;
    }
    return 0;
}

int clattn_shape_check(const clattn_shape *s)
{
    clattn_clear_error();
    size_t n, e;
    if (!s)
        return clattn_fail(CLATTN_EINVAL, "shape is NULL");
    if (!s->batch || !s->heads || !s->kv_heads || !s->q_len || !s->kv_len || !s->head_dim)
        return clattn_fail(CLATTN_EINVAL,
                           "every size must be >= 1 (B=%zu H=%zu Hkv=%zu Nq=%zu Nk=%zu d=%zu)",
                           s->batch, s->heads, s->kv_heads, s->q_len, s->kv_len, s->head_dim);
    if (s->heads % s->kv_heads)
        return clattn_fail(CLATTN_EINVAL, "H=%zu is not a multiple of Hkv=%zu", s->heads,
                           s->kv_heads);
    if (s->head_dim > CLATTN_HEAD_DIM_MAX)
        return clattn_fail(CLATTN_EUNSUPPORTED, "head dim d=%zu > %d", s->head_dim,
                           CLATTN_HEAD_DIM_MAX);
    e = clattn_dtype_size(s->dtype);
    if (!e)
        return clattn_fail(CLATTN_EINVAL, "unknown dtype %d", (int)s->dtype);
    /* Every byte count the library forms is at most B*H*max(Nq,Nk)*max(Nk,d)*4;
     * check the pieces so that none of them wraps. */
    size_t len = s->q_len > s->kv_len ? s->q_len : s->kv_len;
    size_t inner = s->kv_len > s->head_dim ? s->kv_len : s->head_dim;
    if (mul_overflows(s->batch, s->heads, &n) || mul_overflows(n, len, &n) ||
        mul_overflows(n, inner, &n) || mul_overflows(n, 4, &n) || n > (SIZE_MAX >> 2))
        return clattn_fail(CLATTN_EOVERFLOW,
                           "shape B=%zu H=%zu Nq=%zu Nk=%zu d=%zu overflows size_t", s->batch,
                           s->heads, s->q_len, s->kv_len, s->head_dim);
    return CLATTN_OK;
}

/* 0 for NULL: these return counts, not codes, so a valid shape is the
 * caller's to check (clattn_shape_check); what they can check is the pointer. */
size_t clattn_shape_q_elems(const clattn_shape *s)
{
    return s ? s->batch * s->heads * s->q_len * s->head_dim : 0;
}

size_t clattn_shape_kv_elems(const clattn_shape *s)
{
    return s ? s->batch * s->kv_heads * s->kv_len * s->head_dim : 0;
}
