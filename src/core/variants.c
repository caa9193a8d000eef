/* SPDX-License-Identifier: MIT */
/* The attention variants' checks and shared arithmetic (see variants.h). */
#include <math.h>

#include "core/error.h"
#include "core/variants.h"

size_t variants_head_dim_v(const clattn_shape *s, const clattn_options *opts)
{
    return opts->head_dim_v ? opts->head_dim_v : s->head_dim;
}

static size_t mask_batches(const clattn_mask *m)
{
    return m->batch > 1 ? m->batch : 1;
}

static size_t mask_heads(const clattn_mask *m)
{
    return m->heads > 1 ? m->heads : 1;
}

void mask_strides_of(const clattn_shape *s, const clattn_mask *m, struct mask_strides *out)
{
    const size_t e = m->kind == CLATTN_MASK_BOOL ? 1 : clattn_dtype_size(m->dtype);
    out->row = m->layout.token_stride ? m->layout.token_stride : s->kv_len;
    const uint64_t per_head = out->row * s->q_len;
    out->head = mask_heads(m) == 1 ? 0 : m->layout.head_stride ? m->layout.head_stride : per_head;
    const uint64_t per_batch = (uint64_t)mask_heads(m) * per_head;
    out->batch = mask_batches(m) == 1 ? 0
                 : m->layout.batch_stride ? m->layout.batch_stride : per_batch;
    out->offset = e ? m->layout.byte_offset / e : 0;
}

size_t mask_element(const clattn_shape *s, const clattn_mask *m, size_t b, size_t h, size_t i,
                    size_t j)
{
    struct mask_strides st;
    mask_strides_of(s, m, &st);
    return (size_t)(st.offset + b * st.batch + h * st.head + i * st.row + j);
}

int mask_span_bytes(const clattn_shape *s, const clattn_mask *m, uint64_t *bytes)
{
    struct mask_strides st;
    mask_strides_of(s, m, &st);
    const uint64_t e = m->kind == CLATTN_MASK_BOOL ? 1 : clattn_dtype_size(m->dtype);
    uint64_t last = st.offset, t;
    int ovf = 0;
    ovf |= __builtin_mul_overflow((uint64_t)(mask_batches(m) - 1), st.batch, &t);
    ovf |= __builtin_add_overflow(last, t, &last);
    ovf |= __builtin_mul_overflow((uint64_t)(mask_heads(m) - 1), st.head, &t);
    ovf |= __builtin_add_overflow(last, t, &last);
    ovf |= __builtin_mul_overflow((uint64_t)(s->q_len - 1), st.row, &t);
    ovf |= __builtin_add_overflow(last, t, &last);
    ovf |= __builtin_add_overflow(last, (uint64_t)s->kv_len, &last);
    ovf |= __builtin_mul_overflow(last, e, bytes);
    return ovf ? clattn_fail(CLATTN_EOVERFLOW, "mask: its span overflows 64 bits") : CLATTN_OK;
}

int variants_any(const clattn_options *o)
{
    return o->softcap > 0 || o->alibi_slopes || o->window_left >= 0 || o->window_right >= 0 ||
           o->sinks || o->mask.kind != CLATTN_MASK_NONE || o->score_mod || o->mask_mod;
}

int variants_check(const clattn_shape *s, const clattn_options *o, int host)
{
    if (!(isfinite(o->softcap) && o->softcap >= 0))
        return clattn_fail(CLATTN_EINVAL, "softcap %g: a finite value >= 0 (0: none)",
                           (double)o->softcap);
    if (o->window_left < -1 || o->window_right < -1)
        return clattn_fail(CLATTN_EINVAL, "window (%d, %d): each side -1 (unbounded) or >= 0",
                           (int)o->window_left, (int)o->window_right);
    if (o->head_dim_v > VARIANTS_HEAD_DIM_V_MAX)
        return clattn_fail(CLATTN_EUNSUPPORTED, "head_dim_v %zu > %d", o->head_dim_v,
                           VARIANTS_HEAD_DIM_V_MAX);
    const clattn_mask *m = &o->mask;
    if ((unsigned)m->kind > CLATTN_MASK_BOOL)
        return clattn_fail(CLATTN_EINVAL, "unknown mask kind %d", (int)m->kind);
    if (m->kind == CLATTN_MASK_NONE)
        return CLATTN_OK;
    if (m->kind == CLATTN_MASK_ADD && m->dtype != CLATTN_F32 && m->dtype != CLATTN_F16 &&
        m->dtype != CLATTN_BF16)
        return clattn_fail(CLATTN_EINVAL, "an additive mask of dtype %d: fp32, fp16 or bf16",
                           (int)m->dtype);
    if (m->batch > 1 && m->batch != s->batch)
        return clattn_fail(CLATTN_EINVAL, "mask batch %zu: 1 or B = %zu", m->batch, s->batch);
    if (m->heads > 1 && m->heads != s->heads)
        return clattn_fail(CLATTN_EINVAL, "mask heads %zu: 1 or H = %zu", m->heads, s->heads);
    const size_t e = m->kind == CLATTN_MASK_BOOL ? 1 : clattn_dtype_size(m->dtype);
    if (m->layout.byte_offset % e)
        return clattn_fail(CLATTN_EINVAL, "mask byte offset %zu: a multiple of %zu",
                           m->layout.byte_offset, e);
    if (m->layout.token_stride && m->layout.token_stride < s->kv_len)
        return clattn_fail(CLATTN_EINVAL, "mask row stride %zu is below Nk = %zu",
                           m->layout.token_stride, s->kv_len);
    uint64_t span;
    int rc = mask_span_bytes(s, m, &span);
    if (rc < 0)
        return rc;
    if (host && !m->host)
        return clattn_fail(CLATTN_EINVAL, "mask.host is NULL: a host call needs the mask in "
                           "host memory");
    return CLATTN_OK;
}

int clattn_alibi_slopes(float max_bias, size_t heads, float *slopes)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(slopes && heads >= 1);
    CLATTN_CHECK_ARG(isfinite(max_bias) && max_bias > 0);
    /* n: the largest power of two at most heads (ggml's n_head_log2). */
    size_t n = 1;
    while (n * 2 <= heads)
        n *= 2;
    const double m0 = pow(2.0, -(double)max_bias / (double)n);
    const double m1 = pow(2.0, -(double)max_bias / 2.0 / (double)n);
    for (size_t h = 0; h < heads; h++)
        slopes[h] = (float)(h < n ? pow(m0, (double)(h + 1)) : pow(m1, (double)(2 * (h - n) + 1)));
    return CLATTN_OK;
}
