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

void naive_gemm_names(clattn_ctx *ctx, const clattn_shape *s, int use_clblast, char *buf,
                      size_t cap)
{
    struct gemm_desc qk, pv;
    naive_gemms(s, 1.0f, NULL, NULL, NULL, NULL, NULL, NULL, &qk, &pv);
    const char *a = gemm_choose(ctx, &qk, use_clblast)->name;
    const char *b = gemm_choose(ctx, &pv, use_clblast)->name;
    if (a == b)
        snprintf(buf, cap, "%s", a);
    else
        snprintf(buf, cap, "%s+%s", a, b);
}

int naive_extra_bytes(clattn_ctx *ctx, const clattn_shape *s, int use_clblast, uint64_t *bytes)
{
    struct gemm_desc qk, pv;
    uint64_t a = 0, b = 0;
    naive_gemms(s, 1.0f, NULL, NULL, NULL, NULL, NULL, NULL, &qk, &pv);
    int rc = gemm_temp_bytes(ctx, &qk, use_clblast, &a);
    if (rc >= 0)
        rc = gemm_temp_bytes(ctx, &pv, use_clblast, &b);
    /* CLBlast frees one GEMM's temporaries before the next allocates. */
    *bytes = a > b ? a : b;
    return rc;
}

static int enqueue_softmax(clattn_ctx *ctx, const struct attention_call *c, cl_mem scores,
                           cl_mem probs)
{
    const clattn_shape *s = c->shape;
    size_t wg = 256;
    while (wg > ctx->dev.max_wg || (wg > 32 && wg / 2 >= s->kv_len))
        wg /= 2; /* short rows need few work-items */
    /* Rows of up to 32 x WG scores stay in registers and S is read once;
     * longer rows stream through three passes. */
    const size_t per_item = (s->kv_len + wg - 1) / wg;
    char per_item_opt[32] = "";
    if (per_item <= 32)
        snprintf(per_item_opt, sizeof per_item_opt, " -DPER_ITEM=%zu", per_item);
    char opts[128];
    snprintf(opts, sizeof opts, "-DWG=%zu -DCAUSAL=%d%s%s", wg, c->causal,
             s->dtype == CLATTN_F16 ? " -DDTYPE_F16" : "", per_item_opt);
    cl_kernel kern;
    int rc = kernel_get(ctx, "softmax.cl", opts, "softmax_rows", &kern);
    if (rc < 0)
        return rc;
    cl_uint nq = (cl_uint)s->q_len, nk = (cl_uint)s->kv_len;
    cl_int off = c->causal_off;
    cl_int err = clSetKernelArg(kern, 0, sizeof(cl_mem), &scores);
    err |= clSetKernelArg(kern, 1, sizeof(cl_mem), &probs);
    err |= clSetKernelArg(kern, 2, sizeof nq, &nq);
    err |= clSetKernelArg(kern, 3, sizeof nk, &nk);
    err |= clSetKernelArg(kern, 4, sizeof off, &off);
    size_t rows = s->batch * s->heads * s->q_len;
    size_t global = rows * wg;
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(ctx->queue, kern, 1, NULL, &global, &wg, 0, NULL, NULL);
    clReleaseKernel(kern);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "softmax_rows");
    return CLATTN_OK;
}

/* The S and P buffers stay with the context between calls (as a framework's
 * caching allocator keeps them): allocating 2 x 8 GiB per call would time the
 * allocator, not attention. A larger request replaces them; the in-order
 * queue keeps one call's use ahead of the next one's. */
static int scratch_get(clattn_ctx *ctx, int which, size_t bytes, cl_mem *out)
{
    if (ctx->naive.scratch[which] && ctx->naive.scratch_bytes[which] >= bytes) {
        *out = ctx->naive.scratch[which];
        return CLATTN_OK;
    }
    if (ctx->naive.scratch[which]) {
        clReleaseMemObject(ctx->naive.scratch[which]);
        ctx->naive.scratch[which] = NULL;
        ctx->naive.scratch_bytes[which] = 0;
    }
    cl_int err;
    cl_mem m = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, which ? "clCreateBuffer(P)" : "clCreateBuffer(S)");
    ctx->naive.scratch[which] = *out = m;
    ctx->naive.scratch_bytes[which] = bytes;
    return CLATTN_OK;
}

void naive_state_release(struct naive_state *n)
{
    for (int i = 0; i < 2; i++) {
        if (n->scratch[i])
            clReleaseMemObject(n->scratch[i]);
        n->scratch[i] = NULL;
        n->scratch_bytes[i] = 0;
    }
}

int naive_enqueue(clattn_ctx *ctx, const struct attention_call *c)
{
    const clattn_shape *s = c->shape;
    const size_t bytes = s->batch * s->heads * s->q_len * s->kv_len * clattn_dtype_size(s->dtype);
    const int blas = c->opts->use_clblast;
    cl_mem scores = NULL, probs = NULL;
    cl_int err;
    int rc;

    char names[48];
    naive_gemm_names(ctx, s, blas, names, sizeof names);
    snprintf(c->info->kernel, sizeof c->info->kernel, "naive/%s", names);
    if (c->num_wait) {
        /* CLBlast takes no wait list: block the in-order queue instead. */
        err = clEnqueueBarrierWithWaitList(ctx->queue, c->num_wait, c->wait_list, NULL);
        if (err != CL_SUCCESS)
            return clattn_fail_cl(err, "clEnqueueBarrierWithWaitList");
    }
    if ((rc = scratch_get(ctx, 0, bytes, &scores)) < 0 ||
        (rc = scratch_get(ctx, 1, bytes, &probs)) < 0) {
        /* Nothing half-held after a failure: an allocation that failed once
         * would otherwise pin the other buffer's memory. */
        naive_state_release(&ctx->naive);
        return rc;
    }
    c->info->allocated_bytes = 2 * (uint64_t)bytes;

    struct gemm_desc qk, pv;
    naive_gemms(s, c->scale, c->q, c->k, c->v, c->o, scores, probs, &qk, &pv);
    rc = gemm_enqueue(ctx, &qk, blas);
    if (rc >= 0)
        rc = enqueue_softmax(ctx, c, scores, probs);
    if (rc >= 0)
        rc = gemm_enqueue(ctx, &pv, blas);
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
