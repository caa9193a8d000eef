/* SPDX-License-Identifier: MIT */
/* Turning an entry point's arguments into a checked struct attention_call:
 * options, layouts against the caller's buffers, per-sequence lengths. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api/prepare.h"
#include "core/kv_cache.h"
#include "core/variants.h"
#include "fused/fused.h"

int prepare_options(const clattn_shape *shape, const clattn_options *opts)
{
    int rc = clattn_shape_check(shape);
    if (rc < 0 || (rc = variants_check(shape, opts, 0)) < 0 ||
        (rc = kv_cache_check(shape, opts, 0)) < 0)
        return rc;
    if (shape->q_len > INT32_MAX || shape->kv_len > INT32_MAX)
        return clattn_fail(CLATTN_EUNSUPPORTED, "sequence lengths above 2^31 - 1 are not "
                           "supported (Nq=%zu Nk=%zu)", shape->q_len, shape->kv_len);
    if ((unsigned)opts->causal > CLATTN_CAUSAL_BOTTOM_RIGHT)
        return clattn_fail(CLATTN_EINVAL, "unknown causal mode %d", (int)opts->causal);
    if ((unsigned)opts->path > CLATTN_PATH_FUSED)
        return clattn_fail(CLATTN_EINVAL, "unknown path %d", (int)opts->path);
    if (opts->fused_kernel != CLATTN_FUSED_AUTO && !fused_kernel_by_id(opts->fused_kernel))
        return clattn_fail(CLATTN_EINVAL, "unknown fused kernel %d", (int)opts->fused_kernel);
    /* 0 asks for 1/sqrt(d); anything else must be a normal positive float,
     * so that a scale too small for float (1e-50 rounds to 0) is refused
     * instead of silently becoming the default. */
    if (opts->scale != 0 && !(isnormal(opts->scale) && opts->scale > 0))
        return clattn_fail(CLATTN_EINVAL, "scale %g is not a normal positive float (0 asks for "
                           "1/sqrt(d))", (double)opts->scale);
    for (size_t b = 0; opts->kv_lens && b < shape->batch; b++)
        if (opts->kv_lens[b] > shape->kv_len)
            return clattn_fail(CLATTN_EINVAL, "kv_lens[%zu] = %u exceeds Nk = %zu", b,
                               opts->kv_lens[b], shape->kv_len);
    for (size_t b = 0; opts->q_lens && b < shape->batch; b++)
        if (opts->q_lens[b] > shape->q_len)
            return clattn_fail(CLATTN_EINVAL, "q_lens[%zu] = %u exceeds Nq = %zu", b,
                               opts->q_lens[b], shape->q_len);
    return CLATTN_OK;
}

int prepare_layouts(const clattn_shape *s, const clattn_options *opts,
                    struct attention_call *c, uint64_t spans[4])
{
    const size_t h = s->heads, hk = s->kv_heads, nq = s->q_len, nk = s->kv_len, d = s->head_dim;
    const size_t dv = variants_head_dim_v(s, opts);
    /* Packed tensors hold one sequence after another; paged ones pages. */
    if ((c->cu_q && !opts->total_q) || (c->cu_k && !opts->total_k))
        return clattn_fail(CLATTN_EINVAL, "packed offsets in device buffers need total_q / "
                           "total_k, the packed tensors' tokens");
    struct kv_dims dims;
    kv_cache_dims(s, opts, &dims);
    const size_t qb = dims.q_batch, qn = dims.q_tokens, kb = dims.k_batch, kn = dims.k_tokens;
    int rc;
    if ((rc = layout_resolve(&opts->q_layout, qb, h, qn, d, s->dtype, "Q", &c->ql,
                             &spans[0])) < 0 ||
        (rc = layout_resolve_kv(&opts->k_layout, kb, hk, kn, d, opts->k_type, s->dtype, "K",
                                &c->kl, &spans[1])) < 0 ||
        (rc = layout_resolve_kv(&opts->v_layout, kb, hk, kn, dv, opts->v_type, s->dtype, "V",
                                &c->vl, &spans[2])) < 0 ||
        (rc = layout_resolve(&opts->o_layout, qb, h, qn, dv, s->dtype, "O", &c->ol,
                             &spans[3])) < 0 ||
        (rc = layout_rows_disjoint(&c->ol, qb, h, qn, dv, "O")) < 0)
        return rc;
    c->contiguous = layout_is_contiguous(&c->ql, h, nq, d) &&
                    layout_is_contiguous(&c->kl, hk, nk, d) &&
                    layout_is_contiguous(&c->vl, hk, nk, dv) &&
                    layout_is_contiguous(&c->ol, h, nq, dv) && !kv_cache_any(opts);
    /* A packed tensor's sequences are found by their offsets, not by b. */
    if (opts->cu_seqlens_q || c->cu_q)
        c->ql.batch = c->ol.batch = 0;
    if (opts->cu_seqlens_k || c->cu_k)
        c->kl.batch = c->vl.batch = 0;
    c->bt_stride = kv_cache_table_stride(s, opts);
    return CLATTN_OK;
}

/* A caller's buffer must be a buffer of the context's OpenCL context that
 * holds what the shape reads or writes: the kernels do not check bounds. */
int prepare_check_buffer(const clattn_ctx *ctx, cl_mem m, const char *name, uint64_t need)
{
    size_t size = 0;
    cl_context owner = NULL;
    cl_mem_object_type type = 0;
    cl_int err = clGetMemObjectInfo(m, CL_MEM_TYPE, sizeof type, &type, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof size, &size, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(m, CL_MEM_CONTEXT, sizeof owner, &owner, NULL);
    if (err != CL_SUCCESS || type != CL_MEM_OBJECT_BUFFER)
        return clattn_fail(CLATTN_EINVAL, "%s is not an OpenCL buffer (%s)", name,
                           err != CL_SUCCESS ? clattn_cl_status_name(err) : "not a buffer");
    if (owner != ctx->context)
        return clattn_fail(CLATTN_EINVAL, "buffer %s belongs to another OpenCL context", name);
    if (size < need)
        return clattn_fail(CLATTN_EINVAL, "buffer %s holds %zu bytes; the shape and layout "
                           "need %llu", name, size, (unsigned long long)need);
    return CLATTN_OK;
}

int buffer_extent(cl_mem m, const char *name, uint64_t lo, uint64_t hi, int output,
                         struct extent *out)
{
    *out = (struct extent){ name, NULL, lo, hi, output };
    if (!m)
        return CLATTN_OK;
    cl_mem parent = NULL;
    size_t offset = 0;
    cl_int err = clGetMemObjectInfo(m, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent,
                                    NULL);
    if (err == CL_SUCCESS && parent)
        err = clGetMemObjectInfo(m, CL_MEM_OFFSET, sizeof offset, &offset, NULL);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clGetMemObjectInfo(CL_MEM_ASSOCIATED_MEMOBJECT)");
    out->root = parent ? (const void *)parent : (const void *)m;
    out->lo += offset;
    out->hi += offset;
    return CLATTN_OK;
}

/* The byte of a tensor's first element (tensor i of Q, K, V, O). */
static uint64_t first_byte(const struct tensor_layout *l, const clattn_options *o, int i,
                           clattn_dtype dtype)
{
    const clattn_kv_type t = i == 1 ? o->k_type : i == 2 ? o->v_type : CLATTN_KV_DTYPE;
    return l->offset / clattn_kv_block_values(t) * clattn_kv_block_bytes(t, dtype);
}

int prepare_buffers(const clattn_ctx *ctx, const clattn_shape *s, const struct attention_call *c,
                    const uint64_t spans[4])
{
    CLATTN_CHECK_ARG(c->q && c->k && c->v && c->o);
    int rc;
    if ((rc = prepare_check_buffer(ctx, c->q, "Q", spans[0])) < 0 ||
        (rc = prepare_check_buffer(ctx, c->k, "K", spans[1])) < 0 ||
        (rc = prepare_check_buffer(ctx, c->v, "V", spans[2])) < 0 ||
        (rc = prepare_check_buffer(ctx, c->o, "O", spans[3])) < 0)
        return rc;
    const uint64_t rows = (uint64_t)s->batch * s->heads * s->q_len;
    if (c->lse && (rc = prepare_check_buffer(ctx, c->lse, "LSE", rows * 4)) < 0)
        return rc;
    if (c->kv_lens && (rc = prepare_check_buffer(ctx, c->kv_lens, "kv_lens", s->batch * 4)) < 0)
        return rc;
    if (c->q_lens && (rc = prepare_check_buffer(ctx, c->q_lens, "q_lens", s->batch * 4)) < 0)
        return rc;
    const clattn_options *o = c->opts;
    const uint64_t slopes = (uint64_t)(o->alibi_per_sequence ? s->batch : 1) * s->heads * 4;
    uint64_t mask_bytes = 0;
    if (o->mask.kind != CLATTN_MASK_NONE && (rc = mask_span_bytes(s, &o->mask, &mask_bytes)) < 0)
        return rc;
    const uint64_t table = (uint64_t)s->batch * c->bt_stride * 4, offsets = (s->batch + 1) * 4;
    const uint64_t scales = (o->kv_scale_per_head ? s->kv_heads : 1) * 4;
    if ((c->block_table && (rc = prepare_check_buffer(ctx, c->block_table, "block_table", table)) < 0) ||
        (c->cu_q && (rc = prepare_check_buffer(ctx, c->cu_q, "cu_seqlens_q", offsets)) < 0) ||
        (c->cu_k && (rc = prepare_check_buffer(ctx, c->cu_k, "cu_seqlens_k", offsets)) < 0) ||
        (c->k_scale && (rc = prepare_check_buffer(ctx, c->k_scale, "k_scale", scales)) < 0) ||
        (c->v_scale && (rc = prepare_check_buffer(ctx, c->v_scale, "v_scale", scales)) < 0))
        return rc;
    if ((c->alibi_slopes && (rc = prepare_check_buffer(ctx, c->alibi_slopes, "alibi_slopes", slopes)) < 0) ||
        (c->sinks && (rc = prepare_check_buffer(ctx, c->sinks, "sinks", (uint64_t)s->heads * 4)) < 0) ||
        (c->mask && (rc = prepare_check_buffer(ctx, c->mask, "mask", mask_bytes)) < 0))
        return rc;
    /* The kernels read Q, K, V and the lengths while other work-groups write
     * O and the LSE: no output may share memory with anything else. */
    struct extent e[15];
    const struct tensor_layout *l[4] = { &c->ql, &c->kl, &c->vl, &c->ol };
    const cl_mem m[4] = { c->q, c->k, c->v, c->o };
    static const char *const names[4] = { "Q", "K", "V", "O" };
    for (int i = 0; i < 4; i++)
        if ((rc = buffer_extent(m[i], names[i], first_byte(l[i], c->opts, i, s->dtype), spans[i], i == 3,
                                &e[i])) < 0)
            return rc;
    if ((rc = buffer_extent(c->lse, "LSE", 0, rows * 4, 1, &e[4])) < 0 ||
        (rc = buffer_extent(c->kv_lens, "kv_lens", 0, s->batch * 4, 0, &e[5])) < 0 ||
        (rc = buffer_extent(c->q_lens, "q_lens", 0, s->batch * 4, 0, &e[6])) < 0 ||
        (rc = buffer_extent(c->alibi_slopes, "alibi_slopes", 0, slopes, 0, &e[7])) < 0 ||
        (rc = buffer_extent(c->sinks, "sinks", 0, (uint64_t)s->heads * 4, 0, &e[8])) < 0 ||
        (rc = buffer_extent(c->mask, "mask", 0, mask_bytes, 0, &e[9])) < 0 ||
        (rc = buffer_extent(c->block_table, "block_table", 0, table, 0, &e[10])) < 0 ||
        (rc = buffer_extent(c->cu_q, "cu_seqlens_q", 0, offsets, 0, &e[11])) < 0 ||
        (rc = buffer_extent(c->cu_k, "cu_seqlens_k", 0, offsets, 0, &e[12])) < 0 ||
        (rc = buffer_extent(c->k_scale, "k_scale", 0, scales, 0, &e[13])) < 0 ||
        (rc = buffer_extent(c->v_scale, "v_scale", 0, scales, 0, &e[14])) < 0)
        return rc;
    return extents_disjoint(e, 15);
}

int prepare_host_arrays(const clattn_shape *s, const clattn_options *opts,
                        const struct attention_call *c, const uint64_t spans[4],
                        const void *const arrays[4], const float *lse)
{
    const struct tensor_layout *l[4] = { &c->ql, &c->kl, &c->vl, &c->ol };
    static const char *const names[4] = { "Q", "K", "V", "O" };
    struct extent e[7];
    for (int i = 0; i < 4; i++)
        e[i] = extent_host(names[i], arrays[i], first_byte(l[i], c->opts, i, s->dtype), spans[i], i == 3);
    const uint64_t rows = (uint64_t)s->batch * s->heads * s->q_len;
    e[4] = extent_host("LSE", lse, 0, rows * 4, 1);
    e[5] = extent_host("kv_lens", opts->kv_lens, 0, s->batch * 4, 0);
    e[6] = extent_host("q_lens", opts->q_lens, 0, s->batch * 4, 0);
    return extents_disjoint(e, 7); /* the variants' host tensors are copied before any write */
}

/* A device copy of `bytes` of a host array: created (and so copied) now,
 * released by the caller once the call's commands are enqueued. */
int prepare_upload(clattn_ctx *ctx, const void *host, uint64_t bytes, const char *name,
                   cl_mem *out)
{
    cl_int err;
    *out = clCreateBuffer(ctx->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes,
                          (void *)host, &err);
    if (err != CL_SUCCESS) {
        char call[64];
        snprintf(call, sizeof call, "clCreateBuffer(%s)", name);
        return clattn_fail_cl(err, call);
    }
    return CLATTN_OK;
}

/* The device buffer *slot of a call: the caller's, else a copy of `host`
 * (into owned), else none; `needed` refuses none. */
static int device_copy(clattn_ctx *ctx, cl_mem *slot, const void *host, uint64_t bytes,
                       const char *name, int needed, cl_mem *owned)
{
    *owned = NULL;
    if (*slot)
        return CLATTN_OK;
    if (!host)
        return needed ? clattn_fail(CLATTN_EINVAL, "%s: neither a host array in the options "
                                    "nor a device buffer in the extras", name)
                      : CLATTN_OK;
    int rc = prepare_upload(ctx, host, bytes, name, owned);
    if (rc == CLATTN_OK)
        *slot = *owned;
    return rc;
}

int prepare_lens(clattn_ctx *ctx, const clattn_shape *s, const clattn_options *opts,
                 struct attention_call *c, cl_mem owned[PREPARE_OWNED])
{
    for (int i = 0; i < PREPARE_OWNED; i++)
        owned[i] = NULL;
    const uint64_t slopes = (uint64_t)(opts->alibi_per_sequence ? s->batch : 1) * s->heads;
    const uint64_t scales = opts->kv_scale_per_head ? s->kv_heads : 1;
    uint64_t mask_bytes = 0;
    int rc = CLATTN_OK;
    if (opts->mask.kind != CLATTN_MASK_NONE)
        rc = mask_span_bytes(s, &opts->mask, &mask_bytes);
    if (rc < 0 ||
        (rc = device_copy(ctx, &c->kv_lens, opts->kv_lens, s->batch * 4, "kv_lens", 0,
                          &owned[0])) < 0 ||
        (rc = device_copy(ctx, &c->q_lens, opts->q_lens, s->batch * 4, "q_lens", 0,
                          &owned[1])) < 0 ||
        (rc = device_copy(ctx, &c->alibi_slopes, opts->alibi_slopes, slopes * 4,
                          "alibi_slopes", (c->flags & FUSED_F_ALIBI) != 0, &owned[2])) < 0 ||
        (rc = device_copy(ctx, &c->sinks, opts->sinks, (uint64_t)s->heads * 4, "sinks",
                          (c->flags & FUSED_F_SINKS) != 0, &owned[3])) < 0 ||
        (rc = device_copy(ctx, &c->mask, opts->mask.host, mask_bytes, "mask",
                          opts->mask.kind != CLATTN_MASK_NONE, &owned[4])) < 0 ||
        (rc = device_copy(ctx, &c->block_table, opts->block_table,
                          (uint64_t)s->batch * c->bt_stride * 4, "block_table",
                          opts->page_size != 0, &owned[5])) < 0 ||
        (rc = device_copy(ctx, &c->cu_q, opts->cu_seqlens_q, (s->batch + 1) * 4,
                          "cu_seqlens_q", opts->total_q != 0, &owned[6])) < 0 ||
        (rc = device_copy(ctx, &c->cu_k, opts->cu_seqlens_k, (s->batch + 1) * 4,
                          "cu_seqlens_k", opts->total_k != 0, &owned[7])) < 0 ||
        (rc = device_copy(ctx, &c->k_scale, opts->k_scale, scales * 4, "k_scale", 0,
                          &owned[8])) < 0 ||
        (rc = device_copy(ctx, &c->v_scale, opts->v_scale, scales * 4, "v_scale", 0,
                          &owned[9])) < 0) {
        for (int i = 0; i < PREPARE_OWNED; i++)
            if (owned[i])
                clReleaseMemObject(owned[i]);
        return rc;
    }
    return CLATTN_OK;
}

/* Everything a call needs but its buffers and events, in `c`. */
int prepare_call(const clattn_shape *shape, const clattn_options *opts,
                 struct attention_call *c, uint64_t spans[4])
{
    int rc = prepare_options(shape, opts);
    if (rc < 0 || (rc = prepare_layouts(shape, opts, c, spans)) < 0)
        return rc;
    c->shape = shape;
    c->opts = opts;
    c->scale = opts->scale > 0 ? opts->scale : (float)(1.0 / sqrt((double)shape->head_dim));
    c->head_dim_v = variants_head_dim_v(shape, opts);
    c->flags = (opts->causal != CLATTN_CAUSAL_NONE ? FUSED_F_CAUSAL : 0u) |
               (opts->causal == CLATTN_CAUSAL_BOTTOM_RIGHT ? FUSED_F_CAUSAL_BR : 0u) |
               (c->kv_lens || opts->kv_lens ? FUSED_F_KV_LENS : 0u) |
               (c->q_lens || opts->q_lens ? FUSED_F_Q_LENS : 0u) |
               (opts->softcap > 0 ? FUSED_F_SOFTCAP : 0u) |
               (opts->alibi_slopes || c->alibi_slopes ? FUSED_F_ALIBI : 0u) |
               ((opts->alibi_slopes || c->alibi_slopes) && opts->alibi_per_sequence
                    ? FUSED_F_ALIBI_SEQ : 0u) |
               (opts->window_left >= 0 || opts->window_right >= 0 ? FUSED_F_WINDOW : 0u) |
               (opts->sinks || c->sinks ? FUSED_F_SINKS : 0u) |
               (opts->mask.kind == CLATTN_MASK_ADD ? FUSED_F_MASK : 0u) |
               (opts->mask.kind == CLATTN_MASK_BOOL ? FUSED_F_MASK_BOOL : 0u) |
               (opts->score_mod ? FUSED_F_SCORE_MOD : 0u) |
               (opts->mask_mod ? FUSED_F_MASK_MOD : 0u) |
               (opts->page_size ? FUSED_F_PAGED : 0u) |
               (opts->cu_seqlens_q || c->cu_q ? FUSED_F_PACKED_Q : 0u) |
               (opts->cu_seqlens_k || c->cu_k ? FUSED_F_PACKED_K : 0u) |
               (opts->k_type != CLATTN_KV_DTYPE || opts->v_type != CLATTN_KV_DTYPE
                    ? FUSED_F_KV_QUANT : 0u);
    c->causal_off = opts->causal == CLATTN_CAUSAL_BOTTOM_RIGHT
                        ? (int)shape->kv_len - (int)shape->q_len : 0;
    return CLATTN_OK;
}

