/* SPDX-License-Identifier: MIT */
/* clattn_kv_append: a step's keys and values into a host KV cache, and the
 * checks every append shares (kv_append.h). */
#include <string.h>

#include "core/error.h"
#include "core/kv_append.h"
#include "core/kv_cache.h"
#include "core/kv_type.h"
#include "core/options.h"
#include "core/variants.h"

int kv_append_prepare(const clattn_shape *s, const clattn_options *o, size_t new_len,
                      const clattn_layout *new_layout, int host, int device_lens,
                      struct kv_append_plan *p)
{
    int rc = clattn_shape_check(s);
    if (rc < 0 || (rc = variants_check(s, o, 0)) < 0 || (rc = kv_cache_check(s, o, host)) < 0)
        return rc;
    if (new_len < 1 || new_len > s->kv_len)
        return clattn_fail(CLATTN_EINVAL, "new_len %zu: 1 to the cache's Nk = %zu", new_len,
                           s->kv_len);
    if (o->cu_seqlens_k || o->total_k)
        return clattn_fail(CLATTN_EINVAL, "an append takes a padded or paged cache, not packed "
                           "keys");
    if (!o->kv_lens && !device_lens)
        return clattn_fail(CLATTN_EINVAL, "an append needs the sequences' current lengths "
                           "(kv_lens)");
    for (size_t b = 0; o->kv_lens && b < s->batch; b++)
        if (o->kv_lens[b] > s->kv_len - new_len)
            return clattn_fail(CLATTN_EINVAL, "kv_lens[%zu] = %u + new_len %zu passes the "
                               "cache's Nk = %zu", b, o->kv_lens[b], new_len, s->kv_len);
    /* The pages the append writes, where the table is on the host. */
    const size_t stride = kv_cache_table_stride(s, o);
    for (size_t b = 0; o->page_size && o->block_table && o->kv_lens && b < s->batch; b++)
        for (size_t pos = o->kv_lens[b]; pos < o->kv_lens[b] + new_len; pos++) {
            const int32_t e = o->block_table[b * stride + pos / o->page_size];
            if (e < 0 || (size_t)e >= o->num_pages)
                return clattn_fail(CLATTN_EINVAL, "block_table[%zu][%zu] = %d: the append "
                                   "writes there, outside the %zu pages", b,
                                   pos / o->page_size, (int)e, o->num_pages);
        }
    p->new_len = new_len;
    p->dv = variants_head_dim_v(s, o);
    p->bt_stride = stride;
    const clattn_layout plain = { 0, 0, 0, 0 };
    const clattn_layout *nl = new_layout ? new_layout : &plain;
    struct kv_dims dims;
    kv_cache_dims(s, o, &dims);
    const size_t hk = s->kv_heads, d = s->head_dim;
    if ((rc = layout_resolve(nl, s->batch, hk, new_len, d, s->dtype, "new K", &p->k_new,
                             &p->spans[0])) < 0 ||
        (rc = layout_resolve(nl, s->batch, hk, new_len, p->dv, s->dtype, "new V", &p->v_new,
                             &p->spans[1])) < 0 ||
        (rc = layout_resolve_kv(&o->k_layout, dims.k_batch, hk, dims.k_tokens, d, o->k_type,
                                s->dtype, "K cache", &p->k_cache, &p->spans[2])) < 0 ||
        (rc = layout_resolve_kv(&o->v_layout, dims.k_batch, hk, dims.k_tokens, p->dv,
                                o->v_type, s->dtype, "V cache", &p->v_cache, &p->spans[3])) < 0 ||
        (rc = layout_rows_disjoint(&p->k_cache, dims.k_batch, hk, dims.k_tokens, d,
                                   "K cache")) < 0 ||
        (rc = layout_rows_disjoint(&p->v_cache, dims.k_batch, hk, dims.k_tokens, p->dv,
                                   "V cache")) < 0)
        return rc;
    return CLATTN_OK;
}

uint64_t kv_append_cache_row(const clattn_options *o, const struct kv_append_plan *p,
                             const struct tensor_layout *l, size_t b, size_t hk, size_t pos)
{
    if (o->page_size) {
        const uint64_t page = (uint64_t)o->block_table[b * p->bt_stride + pos / o->page_size];
        return l->offset + page * l->batch + hk * l->head + (pos % o->page_size) * l->token;
    }
    return l->offset + b * l->batch + hk * l->head + pos * l->token;
}

/* Byte address of value index `at` of an array of `type`. */
static size_t byte_of(clattn_kv_type type, clattn_dtype dtype, uint64_t at)
{
    return (size_t)(at / clattn_kv_block_values(type) * clattn_kv_block_bytes(type, dtype));
}

int clattn_kv_append(const clattn_shape *s, const clattn_options *opts, size_t new_len,
                     const clattn_layout *new_layout, const void *k_new, const void *v_new,
                     void *k_cache, void *v_cache)
{
    clattn_clear_error();
    clattn_options o;
    struct kv_append_plan p;
    int rc = options_resolve(opts, &o);
    if (rc < 0 || (rc = kv_append_prepare(s, &o, new_len, new_layout, 1, 0, &p)) < 0)
        return rc;
    CLATTN_CHECK_ARG(k_new && v_new && k_cache && v_cache);
    const size_t e = clattn_dtype_size(s->dtype);
    for (size_t b = 0; b < s->batch; b++)
        for (size_t hk = 0; hk < s->kv_heads; hk++)
            for (size_t t = 0; t < new_len; t++) {
                const size_t pos = o.kv_lens[b] + t;
                const uint64_t kn = p.k_new.offset + b * p.k_new.batch + hk * p.k_new.head +
                                    t * p.k_new.token;
                const uint64_t vn = p.v_new.offset + b * p.v_new.batch + hk * p.v_new.head +
                                    t * p.v_new.token;
                const uint64_t kc = kv_append_cache_row(&o, &p, &p.k_cache, b, hk, pos);
                const uint64_t vc = kv_append_cache_row(&o, &p, &p.v_cache, b, hk, pos);
                if ((rc = clattn_quantize(o.k_type, s->dtype, (const char *)k_new + kn * e, 1,
                                          s->head_dim, kv_cache_scale(&o, 0, hk),
                                          (char *)k_cache + byte_of(o.k_type, s->dtype, kc))) <
                        0 ||
                    (rc = clattn_quantize(o.v_type, s->dtype, (const char *)v_new + vn * e, 1,
                                          p.dv, kv_cache_scale(&o, 1, hk),
                                          (char *)v_cache + byte_of(o.v_type, s->dtype, vc))) < 0)
                    return rc;
            }
    return CLATTN_OK;
}
