/* The naive path (see naive.h). */
#include <stdio.h>

#include "context/context.h"
#include "naive/naive.h"
#include "context/program.h"

void naive_gemms(const clattn_shape *s, float scale, cl_mem q, cl_mem k, cl_mem v, cl_mem o,
                 cl_mem scores, cl_mem probs, struct gemm_desc *qk, struct gemm_desc *pv)
{
    const size_t g = s->heads / s->kv_heads, rows = g * s->q_len, d = s->head_dim;
    *qk = (struct gemm_desc){
        .m = rows, .n = s->kv_len, .k = d, .batch = s->batch * s->kv_heads,
        .alpha = scale, .trans_b = 1, .dtype = s->dtype,
        .a = q, .b = k, .c = scores,
        .lda = d, .ldb = d, .ldc = s->kv_len,
        .a_stride = rows * d, .b_stride = s->kv_len * d, .c_stride = rows * s->kv_len,
    };
    *pv = (struct gemm_desc){
        .m = rows, .n = d, .k = s->kv_len, .batch = s->batch * s->kv_heads,
        .alpha = 1.0f, .trans_b = 0, .dtype = s->dtype,
        .a = probs, .b = v, .c = o,
        .lda = s->kv_len, .ldb = d, .ldc = d,
        .a_stride = rows * s->kv_len, .b_stride = s->kv_len * d, .c_stride = rows * d,
    };
}

int naive_gemm_names(clattn_ctx *ctx, const clattn_shape *s, const clattn_options *opts,
                     char *buf, size_t cap)
{
    int params[NAIVE_PARAMS];
    int rc = naive_params_of(opts, params);
    if (rc < 0)
        return rc;
    struct gemm_desc qk, pv;
    naive_gemms(s, 1.0f, NULL, NULL, NULL, NULL, NULL, NULL, &qk, &pv);
    qk.params = pv.params = params;
    const char *a = gemm_choose(ctx, &qk, opts->use_clblast)->name;
    const char *b = gemm_choose(ctx, &pv, opts->use_clblast)->name;
    if (a == b)
        snprintf(buf, cap, "%s", a);
    else
        snprintf(buf, cap, "%s+%s", a, b);
    return CLATTN_OK;
}

/* Whether tensor i (K 1, V 2) is kept as a cache: quantized or paged. */
static int cached(const struct attention_call *c, int i)
{
    const clattn_kv_type t = i == 1 ? c->opts->k_type : c->opts->v_type;
    return t != CLATTN_KV_DTYPE || c->opts->page_size != 0;
}

/* Which tensors go through a contiguous copy: a layout the GEMMs cannot
 * take, or K and V of sequences with their own lengths (a GEMM reads every
 * key; the copy holds zeros past each sequence's). Bit i: Q, K, V, O. */
static unsigned packed_tensors(const struct attention_call *c)
{
    const clattn_shape *s = c->shape;
    const int lens = c->kv_lens || c->opts->kv_lens;
    unsigned m = 0;
    m |= !layout_is_contiguous(&c->ql, s->heads, s->q_len, s->head_dim) << 0;
    m |= (lens || cached(c, 1) ||
          !layout_is_contiguous(&c->kl, s->kv_heads, s->kv_len, s->head_dim)) << 1;
    m |= (lens || cached(c, 2) ||
          !layout_is_contiguous(&c->vl, s->kv_heads, s->kv_len, s->head_dim)) << 2;
    m |= !layout_is_contiguous(&c->ol, s->heads, s->q_len, s->head_dim) << 3;
    return m;
}

/* Bytes of the contiguous copy of tensor i (Q, K, V, O). */
static uint64_t packed_bytes(const clattn_shape *s, int i)
{
    const uint64_t e = clattn_dtype_size(s->dtype);
    return (i == 1 || i == 2 ? clattn_shape_kv_elems(s) : clattn_shape_q_elems(s)) * e;
}

/* The variants the naive path's kernels take (FUSED_F_* bits): a paged or
 * quantized K and V, gathered into a contiguous copy first. */
#define NAIVE_VARIANTS (FUSED_F_PAGED | FUSED_F_KV_QUANT)

int naive_cannot_run(const struct attention_call *c)
{
    if (c->flags & (FUSED_F_PACKED_Q | FUSED_F_PACKED_K))
        return clattn_fail(CLATTN_EUNSUPPORTED, "the naive path takes no packed (varlen) "
                           "batch: the fused path does");
    if (c->flags & FUSED_F_VARIANTS & ~NAIVE_VARIANTS)
        return clattn_fail(CLATTN_EUNSUPPORTED, "the naive path takes no softcap, ALiBi, window, "
                           "sinks, mask or snippets: the fused path does");
    if (c->shape->dtype == CLATTN_BF16)
        return clattn_fail(CLATTN_EUNSUPPORTED, "the naive path takes no bf16 storage");
    if (c->head_dim_v != c->shape->head_dim)
        return clattn_fail(CLATTN_EUNSUPPORTED, "the naive path takes no V head dimension "
                           "other than d");
    return CLATTN_OK;
}

int naive_extra_bytes(clattn_ctx *ctx, const struct attention_call *c, uint64_t *bytes)
{
    const clattn_shape *s = c->shape;
    struct gemm_desc qk, pv;
    uint64_t a = 0, b = 0;
    int params[NAIVE_PARAMS];
    int rc = naive_cannot_run(c);
    if (rc < 0 || (rc = naive_params_of(c->opts, params)) < 0)
        return rc;
    if (rc < 0)
        return rc;
    naive_gemms(s, 1.0f, NULL, NULL, NULL, NULL, NULL, NULL, &qk, &pv);
    qk.params = pv.params = params;
    rc = gemm_temp_bytes(ctx, &qk, c->opts->use_clblast, &a);
    if (rc >= 0)
        rc = gemm_temp_bytes(ctx, &pv, c->opts->use_clblast, &b);
    /* CLBlast frees one GEMM's temporaries before the next allocates. */
    *bytes = a > b ? a : b;
    const unsigned packed = packed_tensors(c);
    for (int i = 0; i < 4; i++)
        if (packed & (1u << i))
            *bytes += packed_bytes(s, i);
    return rc;
}

/* Rows of up to this many scores stay in the CPU softmax's private buffer
 * (64 KiB), read from S once. */
#define SOFTMAX_ROW_CAP 16384

static int enqueue_softmax(clattn_ctx *ctx, const struct attention_call *c, const int *params,
                           cl_mem scores, cl_mem probs)
{
    const clattn_shape *s = c->shape;
    const int cpu = naive_cpu_shaped(ctx, params);
    size_t wg = 256, cpu_rows = 1;
    char shape_opt[48] = "";
    if (cpu) {
        /* Work-items of their own, each a few rows of one head: about 16
         * per core, rounded to a power of two (few builds). */
        const size_t want = 16 * (size_t)(ctx->dev.compute_units ? ctx->dev.compute_units : 1);
        const size_t rows = s->batch * s->heads * s->q_len;
        while (cpu_rows < 64 && cpu_rows < s->q_len && rows / (2 * cpu_rows) >= want)
            cpu_rows *= 2;
        wg = 1;
        snprintf(shape_opt, sizeof shape_opt, " -DCPU_ROWS=%zu -DROW_CAP=%d", cpu_rows,
                 SOFTMAX_ROW_CAP);
    } else {
        while (wg > ctx->dev.max_wg || (wg > 32 && wg / 2 >= s->kv_len))
            wg /= 2; /* short rows need few work-items */
        /* Rows of up to 32 x WG scores stay in registers and S is read
         * once; longer rows stream through three passes. */
        const size_t per_item = (s->kv_len + wg - 1) / wg;
        if (per_item <= 32)
            snprintf(shape_opt, sizeof shape_opt, " -DPER_ITEM=%zu", per_item);
    }
    char opts[256];
    snprintf(opts, sizeof opts, "-DWG=%zu%s%s", wg, s->dtype == CLATTN_F16 ? " -DDTYPE_F16" : "",
             shape_opt);
    variant_options(c->flags & ~FUSED_F_SPLIT, opts, sizeof opts);
    cl_kernel kern;
    int rc = kernel_get(ctx, "naive/softmax.cl", opts, "softmax_rows", &kern);
    if (rc < 0)
        return rc;
    cl_uint nq = (cl_uint)s->q_len, nk = (cl_uint)s->kv_len, heads = (cl_uint)s->heads;
    cl_int off = c->causal_off;
    cl_int err = clSetKernelArg(kern, 0, sizeof(cl_mem), &scores);
    err |= clSetKernelArg(kern, 1, sizeof(cl_mem), &probs);
    err |= clSetKernelArg(kern, 2, sizeof nq, &nq);
    err |= clSetKernelArg(kern, 3, sizeof nk, &nk);
    err |= clSetKernelArg(kern, 4, sizeof heads, &heads);
    err |= clSetKernelArg(kern, 5, sizeof off, &off);
    err |= clSetKernelArg(kern, 6, sizeof(cl_mem), &c->kv_lens);
    err |= clSetKernelArg(kern, 7, sizeof(cl_mem), &c->q_lens);
    err |= clSetKernelArg(kern, 8, sizeof(cl_mem), &c->lse);
    size_t rows = s->batch * s->heads * s->q_len;
    size_t global[2] = { rows * wg, 1 }, local[2] = { wg, 1 };
    if (cpu) {
        global[0] = (s->q_len + cpu_rows - 1) / cpu_rows;
        global[1] = s->batch * s->heads;
    }
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(ctx->queue, kern, cpu ? 2 : 1, NULL, global, local, 0, NULL,
                                     NULL);
    clReleaseKernel(kern);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "softmax_rows");
    return CLATTN_OK;
}

/* The workspace stays with the context between calls (kept_buffer.h). */
static int scratch_get(clattn_ctx *ctx, int which, size_t bytes, cl_mem *out)
{
    static const char *const names[NAIVE_SCRATCH] = {
        "clCreateBuffer(S)", "clCreateBuffer(P)", "clCreateBuffer(Q copy)",
        "clCreateBuffer(K copy)", "clCreateBuffer(V copy)", "clCreateBuffer(O copy)",
    };
    return kept_buffer_get(ctx->context, &ctx->naive.scratch[which], bytes, 0, names[which],
                           out);
}

void naive_state_release(struct naive_state *n)
{
    for (int i = 0; i < NAIVE_SCRATCH; i++)
        kept_buffer_release(&n->scratch[i]);
}

/* Copies tensor i (Q, K, V) of the caller's layout into `dst`, contiguous,
 * or (unpack) `src` contiguous into O's layout; K or V kept as a cache
 * (quantized, paged) is gathered and dequantized into it (gather_kv). */
static int repack(clattn_ctx *ctx, const struct attention_call *c, int i, cl_mem src,
                  cl_mem dst, int unpack)
{
    const clattn_shape *s = c->shape;
    const clattn_options *o = c->opts;
    const struct tensor_layout *l[4] = { &c->ql, &c->kl, &c->vl, &c->ol };
    const int kv = i == 1 || i == 2, lens = kv && c->kv_lens != NULL;
    const int cache = kv && !unpack && cached(c, i);
    char opts[192];
    int n_opts = snprintf(opts, sizeof opts, "-DUNPACK=%d -DLENS=%d%s", unpack, lens,
                          s->dtype == CLATTN_F16 ? " -DDTYPE_F16" : "");
    if (cache)
        snprintf(opts + n_opts, sizeof opts - (size_t)n_opts,
                 " -DCACHE_TYPE=%d -DPAGED=%d -DPAGE_SIZE=%zu -DKV_SCALE_HEAD=%d",
                 (int)(i == 1 ? o->k_type : o->v_type), o->page_size != 0,
                 o->page_size ? o->page_size : 1, o->kv_scale_per_head != 0);
    cl_kernel kern;
    int rc = kernel_get(ctx, "naive/repack.cl", opts, cache ? "gather_kv" : "repack", &kern);
    if (rc < 0)
        return rc;
    cl_ulong off = l[i]->offset, sb = l[i]->batch, sh = l[i]->head, st = l[i]->token;
    cl_uint heads = (cl_uint)(kv ? s->kv_heads : s->heads);
    cl_uint n = (cl_uint)(kv ? s->kv_len : s->q_len), d = (cl_uint)s->head_dim;
    cl_ulong count = kv ? clattn_shape_kv_elems(s) : clattn_shape_q_elems(s);
    cl_mem lens_buf = lens ? c->kv_lens : NULL;
    cl_int err = 0;
    cl_uint a = 0;
    err |= clSetKernelArg(kern, a++, sizeof src, &src);
    err |= clSetKernelArg(kern, a++, sizeof dst, &dst);
    err |= clSetKernelArg(kern, a++, sizeof off, &off);
    err |= clSetKernelArg(kern, a++, sizeof sb, &sb);
    err |= clSetKernelArg(kern, a++, sizeof sh, &sh);
    err |= clSetKernelArg(kern, a++, sizeof st, &st);
    err |= clSetKernelArg(kern, a++, sizeof heads, &heads);
    err |= clSetKernelArg(kern, a++, sizeof n, &n);
    err |= clSetKernelArg(kern, a++, sizeof d, &d);
    err |= clSetKernelArg(kern, a++, sizeof count, &count);
    err |= clSetKernelArg(kern, a++, sizeof lens_buf, &lens_buf);
    if (cache) {
        const cl_uint bt_stride = (cl_uint)c->bt_stride, n_pages = (cl_uint)o->num_pages;
        const cl_mem scales = i == 1 ? c->k_scale : c->v_scale;
        err |= clSetKernelArg(kern, a++, sizeof c->block_table, &c->block_table);
        err |= clSetKernelArg(kern, a++, sizeof bt_stride, &bt_stride);
        err |= clSetKernelArg(kern, a++, sizeof n_pages, &n_pages);
        err |= clSetKernelArg(kern, a++, sizeof scales, &scales);
    }
    /* A grid-stride loop: enough work-items to fill any device. */
    size_t global = count < (1u << 20) ? (size_t)count : (size_t)1 << 20;
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(ctx->queue, kern, 1, NULL, &global, NULL, 0, NULL, NULL);
    clReleaseKernel(kern);
    return err == CL_SUCCESS ? CLATTN_OK : clattn_fail_cl(err, "repack");
}

/* The buffers the GEMMs read and write: the caller's, or contiguous copies
 * (slots 2..5) of the tensors packed_tensors names, Q, K and V filled now. */
static int operands(clattn_ctx *ctx, const struct attention_call *c, cl_mem out[4])
{
    const cl_mem given[4] = { c->q, c->k, c->v, c->o };
    const unsigned packed = packed_tensors(c);
    for (int i = 0; i < 4; i++) {
        out[i] = given[i];
        if (!(packed & (1u << i)))
            continue;
        int rc = scratch_get(ctx, 2 + i, packed_bytes(c->shape, i), &out[i]);
        if (rc < 0 || (i < 3 && (rc = repack(ctx, c, i, given[i], out[i], 0)) < 0))
            return rc;
    }
    return CLATTN_OK;
}

int naive_enqueue(clattn_ctx *ctx, const struct attention_call *c)
{
    const clattn_shape *s = c->shape;
    const size_t bytes = s->batch * s->heads * s->q_len * s->kv_len * clattn_dtype_size(s->dtype);
    const int blas = c->opts->use_clblast;
    cl_mem scores = NULL, probs = NULL, ops[4];
    cl_int err;
    int params[NAIVE_PARAMS];
    int rc = naive_cannot_run(c);
    if (rc < 0 || (rc = naive_params_of(c->opts, params)) < 0)
        return rc;

    char names[48];
    if ((rc = naive_gemm_names(ctx, s, c->opts, names, sizeof names)) < 0)
        return rc;
    snprintf(c->info->kernel, sizeof c->info->kernel, "naive/%s", names);
    c->info->splits = 1;
    if (c->num_wait) {
        /* CLBlast takes no wait list: block the in-order queue instead. */
        err = clEnqueueBarrierWithWaitList(ctx->queue, c->num_wait, c->wait_list, NULL);
        if (err != CL_SUCCESS)
            return clattn_fail_cl(err, "clEnqueueBarrierWithWaitList");
    }
    if ((rc = scratch_get(ctx, 0, bytes, &scores)) < 0 ||
        (rc = scratch_get(ctx, 1, bytes, &probs)) < 0 || (rc = operands(ctx, c, ops)) < 0) {
        /* Nothing half-held after a failure: an allocation that failed once
         * would otherwise pin the other buffers' memory. */
        naive_state_release(&ctx->naive);
        return rc;
    }
    for (int i = 0; i < NAIVE_SCRATCH; i++)
        c->info->allocated_bytes += ctx->naive.scratch[i].bytes;

    struct gemm_desc qk, pv;
    naive_gemms(s, c->scale, ops[0], ops[1], ops[2], ops[3], scores, probs, &qk, &pv);
    qk.params = pv.params = params;
    rc = gemm_enqueue(ctx, &qk, blas);
    if (rc >= 0)
        rc = enqueue_softmax(ctx, c, params, scores, probs);
    if (rc >= 0)
        rc = gemm_enqueue(ctx, &pv, blas);
    if (rc >= 0 && ops[3] != c->o)
        rc = repack(ctx, c, 3, ops[3], c->o, 1);
    if (rc >= 0 && c->done) {
        err = clEnqueueMarkerWithWaitList(ctx->queue, 0, NULL, c->done);
        if (err != CL_SUCCESS)
            rc = clattn_fail_cl(err, "clEnqueueMarkerWithWaitList");
    }
    /* Drivers that allocate on first use (NVIDIA) fail here rather than at
     * clCreateBuffer: do not keep buffers that could not be backed. */
    if (rc < 0)
        naive_state_release(&ctx->naive);
    return rc;
}
