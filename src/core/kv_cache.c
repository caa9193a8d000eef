/* SPDX-License-Identifier: MIT */
/* The KV cache forms: checks, dimensions, host addressing (kv_cache.h). */
#include <math.h>

#include "core/error.h"
#include "core/kv_cache.h"
#include "core/kv_type.h"
#include "core/variants.h"

int kv_cache_any(const clattn_options *o)
{
    return o->k_type != CLATTN_KV_DTYPE || o->v_type != CLATTN_KV_DTYPE || o->page_size ||
           o->cu_seqlens_q || o->cu_seqlens_k || o->total_q || o->total_k;
}

static int check_type(const clattn_shape *s, clattn_kv_type t, size_t d, const float *scale,
                      int per_head, const char *name)
{
    int rc = kv_type_check(t, name);
    if (rc < 0)
        return rc;
    const size_t per = clattn_kv_block_values(t);
    if (d % per)
        return clattn_fail(CLATTN_EINVAL, "%s: %s stores rows in blocks of %zu values; the "
                           "head dimension %zu is not a multiple", name,
                           clattn_kv_type_name(t, s->dtype), per, d);
    if (t != CLATTN_KV_FP8_E4M3 && scale)
        return clattn_fail(CLATTN_EINVAL, "%s: a scale is for fp8 caches (type %s)", name,
                           clattn_kv_type_name(t, s->dtype));
    for (size_t h = 0; scale && h < (per_head ? s->kv_heads : 1); h++)
        if (!(isfinite(scale[h]) && scale[h] > 0))
            return clattn_fail(CLATTN_EINVAL, "%s scale[%zu] = %g: finite and > 0", name, h,
                               (double)scale[h]);
    return CLATTN_OK;
}

/* Host offsets: cu[0] >= 0, non-decreasing, each length within `max`. */
static int check_offsets(const int32_t *cu, size_t batch, size_t max, const char *name)
{
    if (cu[0] < 0)
        return clattn_fail(CLATTN_EINVAL, "%s[0] = %d is negative", name, (int)cu[0]);
    for (size_t b = 0; b < batch; b++) {
        if (cu[b + 1] < cu[b])
            return clattn_fail(CLATTN_EINVAL, "%s[%zu] = %d is below %s[%zu] = %d", name, b + 1,
                               (int)cu[b + 1], name, b, (int)cu[b]);
        if ((size_t)(cu[b + 1] - cu[b]) > max)
            return clattn_fail(CLATTN_EINVAL, "%s: sequence %zu has %d tokens, past the "
                               "shape's %zu (max_seqlen)", name, b, (int)(cu[b + 1] - cu[b]),
                               max);
    }
    return CLATTN_OK;
}

size_t kv_cache_table_stride(const clattn_shape *s, const clattn_options *o)
{
    if (!o->page_size)
        return 0;
    return o->block_table_stride ? o->block_table_stride
                                 : (s->kv_len + o->page_size - 1) / o->page_size;
}

static int check_pages(const clattn_shape *s, const clattn_options *o, int host)
{
    if (o->num_pages < 1)
        return clattn_fail(CLATTN_EINVAL, "page_size %zu with num_pages 0", o->page_size);
    if (o->page_size > INT32_MAX || o->num_pages > INT32_MAX)
        return clattn_fail(CLATTN_EUNSUPPORTED, "page_size %zu, num_pages %zu: each below "
                           "2^31", o->page_size, o->num_pages);
    const size_t need = (s->kv_len + o->page_size - 1) / o->page_size;
    const size_t stride = kv_cache_table_stride(s, o);
    if (stride < need)
        return clattn_fail(CLATTN_EINVAL, "block_table_stride %zu holds fewer than the %zu "
                           "pages of Nk = %zu keys", stride, need, s->kv_len);
    if (host && !o->block_table)
        return clattn_fail(CLATTN_EINVAL, "paged K/V without a host block_table");
    for (size_t b = 0; o->block_table && b < s->batch; b++) {
        const size_t len = o->kv_lens ? o->kv_lens[b] : s->kv_len;
        for (size_t p = 0; p * o->page_size < len; p++) {
            const int32_t e = o->block_table[b * stride + p];
            if (e < 0 || (size_t)e >= o->num_pages)
                return clattn_fail(CLATTN_EINVAL, "block_table[%zu][%zu] = %d is outside the "
                                   "%zu pages", b, p, (int)e, o->num_pages);
        }
    }
    return CLATTN_OK;
}

int kv_cache_check(const clattn_shape *s, const clattn_options *o, int host)
{
    const size_t dv = variants_head_dim_v(s, o);
    int rc;
    if ((rc = check_type(s, o->k_type, s->head_dim, o->k_scale, o->kv_scale_per_head, "K")) <
            0 ||
        (rc = check_type(s, o->v_type, dv, o->v_scale, o->kv_scale_per_head, "V")) < 0)
        return rc;
    if (o->page_size && (rc = check_pages(s, o, host)) < 0)
        return rc;
    if (!o->page_size && (o->block_table || o->num_pages || o->block_table_stride))
        return clattn_fail(CLATTN_EINVAL, "a block table or num_pages without page_size");
    if (o->cu_seqlens_k && (o->page_size || o->kv_lens))
        return clattn_fail(CLATTN_EINVAL, "packed keys (cu_seqlens_k) take neither pages nor "
                           "kv_lens");
    if (o->cu_seqlens_q && o->q_lens)
        return clattn_fail(CLATTN_EINVAL, "packed queries (cu_seqlens_q) take no q_lens");
    if (o->cu_seqlens_q && (rc = check_offsets(o->cu_seqlens_q, s->batch, s->q_len,
                                               "cu_seqlens_q")) < 0)
        return rc;
    if (o->cu_seqlens_k && (rc = check_offsets(o->cu_seqlens_k, s->batch, s->kv_len,
                                               "cu_seqlens_k")) < 0)
        return rc;
    if (o->cu_seqlens_q && o->total_q && (size_t)o->cu_seqlens_q[s->batch] > o->total_q)
        return clattn_fail(CLATTN_EINVAL, "cu_seqlens_q[B] = %d is past total_q = %zu",
                           (int)o->cu_seqlens_q[s->batch], o->total_q);
    if (o->cu_seqlens_k && o->total_k && (size_t)o->cu_seqlens_k[s->batch] > o->total_k)
        return clattn_fail(CLATTN_EINVAL, "cu_seqlens_k[B] = %d is past total_k = %zu",
                           (int)o->cu_seqlens_k[s->batch], o->total_k);
    if (host && ((o->total_q && !o->cu_seqlens_q) || (o->total_k && !o->cu_seqlens_k)))
        return clattn_fail(CLATTN_EINVAL, "total_q / total_k without host cu_seqlens");
    if (host && o->k_type == CLATTN_KV_DTYPE && o->v_type == CLATTN_KV_DTYPE &&
        o->kv_scale_per_head)
        return clattn_fail(CLATTN_EINVAL, "kv_scale_per_head without an fp8 cache");
    return CLATTN_OK;
}

void kv_cache_dims(const clattn_shape *s, const clattn_options *o, struct kv_dims *out)
{
    out->q_batch = s->batch;
    out->q_tokens = s->q_len;
    out->k_batch = s->batch;
    out->k_tokens = s->kv_len;
    if (o->cu_seqlens_q || o->total_q) {
        out->q_batch = 1;
        out->q_tokens = o->total_q ? o->total_q : (size_t)o->cu_seqlens_q[s->batch];
    }
    if (o->cu_seqlens_k || o->total_k) {
        out->k_batch = 1;
        out->k_tokens = o->total_k ? o->total_k : (size_t)o->cu_seqlens_k[s->batch];
    }
    if (o->page_size) {
        out->k_batch = o->num_pages;
        out->k_tokens = o->page_size;
    }
    /* An empty packed tensor still has one (unread) token of room. */
    if (!out->q_tokens)
        out->q_tokens = 1;
    if (!out->k_tokens)
        out->k_tokens = 1;
}

void kv_cache_seq(const clattn_shape *s, const clattn_options *o, size_t b, struct kv_seq *out)
{
    out->q_len = o->q_lens ? o->q_lens[b] : s->q_len;
    out->kv_len = o->kv_lens ? o->kv_lens[b] : s->kv_len;
    out->q_first = out->k_first = 0;
    if (o->cu_seqlens_q) {
        out->q_first = (size_t)o->cu_seqlens_q[b];
        out->q_len = (size_t)(o->cu_seqlens_q[b + 1] - o->cu_seqlens_q[b]);
    }
    if (o->cu_seqlens_k) {
        out->k_first = (size_t)o->cu_seqlens_k[b];
        out->kv_len = (size_t)(o->cu_seqlens_k[b + 1] - o->cu_seqlens_k[b]);
    }
}

uint64_t kv_cache_row(const clattn_shape *s, const clattn_options *o, int keys, size_t b,
                      size_t heads, size_t head, size_t t, size_t d)
{
    struct kv_dims dims;
    struct kv_seq seq;
    kv_cache_dims(s, o, &dims);
    kv_cache_seq(s, o, b, &seq);
    if (keys && o->page_size) {
        const size_t stride = kv_cache_table_stride(s, o);
        const uint64_t page = (uint64_t)o->block_table[b * stride + t / o->page_size];
        return ((page * heads + head) * o->page_size + t % o->page_size) * d;
    }
    const size_t tokens = keys ? dims.k_tokens : dims.q_tokens;
    const size_t first = keys ? seq.k_first : seq.q_first;
    const size_t bb = (keys ? dims.k_batch : dims.q_batch) > 1 ? b : 0;
    return (((uint64_t)bb * heads + head) * tokens + first + t) * d;
}

float kv_cache_scale(const clattn_options *o, int v, size_t hk)
{
    const float *scale = v ? o->v_scale : o->k_scale;
    return scale ? scale[o->kv_scale_per_head ? hk : 0] : 1.0f;
}
