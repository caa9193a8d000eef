/*
 * The fused path: tile choice from the device's local memory and work-group
 * limits, and the launch of cl/fused.cl.
 */
#include <stdio.h>

#include "paths.h"

/* Local bytes of cl/fused.cl for a tile: Q (BM x DP), K or V (BN x (DP+1)),
 * scores (BM x (BN+1)), all float. */
static size_t fused_local_bytes(size_t bm, size_t bn, size_t dp)
{
    return 4 * (bm * dp + bn * (dp + 1) + bm * (bn + 1));
}

static size_t round_up(size_t x, size_t m)
{
    return (x + m - 1) / m * m;
}

int clattn_fused_config(const clattn_ctx *ctx, const clattn_shape *s,
                        const clattn_options *opts, struct fused_config *cfg)
{
    /* Larger tiles reuse each K/V load over more queries; the first that
     * fits the device wins. BN must be a multiple of TPR. */
    static const size_t tiles[][2] = {
        { 64, 64 }, { 64, 32 }, { 32, 32 }, { 32, 16 }, { 16, 16 }, { 16, 8 }, { 8, 8 }, { 4, 4 },
    };
    if (opts->fused_kernel == CLATTN_FUSED_NV_MMA)
        return clattn_fail(CLATTN_EUNSUPPORTED, "the NVIDIA tensor-core fused kernel is not "
                                                "available in this build");
    const size_t max_wg = ctx->max_wg < 256 ? ctx->max_wg : 256;
    /* Leave room for what the compiler itself keeps in local memory. */
    const size_t budget = ctx->local_mem > 1024 ? ctx->local_mem - 1024 : ctx->local_mem;
    for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
        size_t bm = tiles[i][0], bn = tiles[i][1];
        size_t tpr = max_wg / bm;
        if (tpr > bn)
            tpr = bn;
        if (tpr == 0 || bn % tpr)
            continue;
        size_t dp = round_up(s->head_dim, tpr);
        if (fused_local_bytes(bm, bn, dp) > budget)
            continue;
        *cfg = (struct fused_config){ CLATTN_FUSED_PORTABLE, bm, bn, tpr, dp };
        return CLATTN_OK;
    }
    return clattn_fail(CLATTN_EUNSUPPORTED, "no fused tile fits %llu B of local memory for d=%zu",
                       (unsigned long long)ctx->local_mem, s->head_dim);
}

int clattn_fused_tiles(clattn_ctx *ctx, const clattn_shape *shape, const clattn_options *opts,
                       size_t *block_m, size_t *block_n, clattn_fused_kernel *kernel)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(ctx && shape && block_m && block_n);
    clattn_options defaults;
    if (!opts) {
        clattn_default_options(&defaults);
        opts = &defaults;
    }
    int rc = clattn_shape_check(shape);
    if (rc < 0)
        return rc;
    struct fused_config cfg;
    rc = clattn_fused_config(ctx, shape, opts, &cfg);
    if (rc < 0)
        return rc;
    *block_m = cfg.block_m;
    *block_n = cfg.block_n;
    if (kernel)
        *kernel = cfg.kernel;
    return CLATTN_OK;
}

int clattn_fused_enqueue(clattn_ctx *ctx, const struct attention_call *c)
{
    const clattn_shape *s = c->shape;
    struct fused_config cfg;
    int rc = clattn_fused_config(ctx, s, c->opts, &cfg);
    if (rc < 0)
        return rc;
    char opts[192];
    snprintf(opts, sizeof opts, "-cl-mad-enable -DD=%zu -DDP=%zu -DBM=%zu -DBN=%zu -DTPR=%zu "
             "-DCAUSAL=%d%s", s->head_dim, cfg.padded_dim, cfg.block_m, cfg.block_n,
             cfg.threads_per_row, c->opts->causal != CLATTN_CAUSAL_NONE,
             s->dtype == CLATTN_F16 ? " -DDTYPE_F16" : "");
    snprintf(c->info->kernel, sizeof c->info->kernel, "fused/portable %zux%zu",
             cfg.block_m, cfg.block_n);
    cl_kernel kern;
    rc = clattn_kernel_get(ctx, "fused.cl", opts, "attention_fused", &kern);
    if (rc < 0)
        return rc;
    const size_t n_qblocks = (s->q_len + cfg.block_m - 1) / cfg.block_m;
    cl_uint nq = (cl_uint)s->q_len, nk = (cl_uint)s->kv_len, heads = (cl_uint)s->heads;
    cl_uint group = (cl_uint)(s->heads / s->kv_heads), nqb = (cl_uint)n_qblocks;
    cl_float scale_log2 = c->scale * 1.44269504088896341f; /* exp(x) = exp2(x log2 e) */
    cl_int off = c->causal_off;
    cl_int err = 0;
    int i = 0;
    err |= clSetKernelArg(kern, i++, sizeof(cl_mem), &c->q);
    err |= clSetKernelArg(kern, i++, sizeof(cl_mem), &c->k);
    err |= clSetKernelArg(kern, i++, sizeof(cl_mem), &c->v);
    err |= clSetKernelArg(kern, i++, sizeof(cl_mem), &c->o);
    err |= clSetKernelArg(kern, i++, sizeof nq, &nq);
    err |= clSetKernelArg(kern, i++, sizeof nk, &nk);
    err |= clSetKernelArg(kern, i++, sizeof heads, &heads);
    err |= clSetKernelArg(kern, i++, sizeof group, &group);
    err |= clSetKernelArg(kern, i++, sizeof nqb, &nqb);
    err |= clSetKernelArg(kern, i++, sizeof scale_log2, &scale_log2);
    err |= clSetKernelArg(kern, i++, sizeof off, &off);
    size_t local = cfg.block_m * cfg.threads_per_row;
    size_t global = n_qblocks * s->batch * s->heads * local;
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(ctx->queue, kern, 1, NULL, &global, &local, c->num_wait,
                                     c->wait_list, c->done);
    clReleaseKernel(kern);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "attention_fused");
    return CLATTN_OK;
}
