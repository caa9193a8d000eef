/*
 * The fused path: which kernel runs (NVIDIA tensor cores or the portable
 * one), its tiles from the device's limits (or the caller's), and the launch.
 * Both kernels take the same arguments.
 */
#include <stdio.h>
#include <string.h>

#include "paths.h"

/* Local bytes of cl/fused.cl for a tile: Q (BM x DP), K or V (BN x (DP+1)),
 * scores (BM x (BN+1)), all float. */
static size_t portable_local_bytes(size_t bm, size_t bn, size_t dp)
{
    return 4 * (bm * dp + bn * (dp + 1) + bm * (bn + 1));
}

static size_t round_up(size_t x, size_t m)
{
    return (x + m - 1) / m * m;
}

static int portable_config(clattn_ctx *ctx, const clattn_shape *s,
                           const clattn_options *opts, struct fused_config *cfg)
{
    size_t tuned_m = 0, tuned_n = 0;
    if (!opts->block_m && !opts->block_n)
        clattn_tuned_tiles(ctx, CLATTN_FUSED_PORTABLE, s->dtype, s->head_dim,
                           opts->causal != CLATTN_CAUSAL_NONE, &tuned_m, &tuned_n);
    /* Larger tiles reuse each K/V load over more queries; the first that
     * fits the device wins. BN must be a multiple of TPR. */
    static const size_t tiles[][2] = {
        { 64, 64 }, { 64, 32 }, { 32, 32 }, { 32, 16 }, { 16, 16 }, { 16, 8 }, { 8, 8 }, { 4, 4 },
    };
    const size_t max_wg = ctx->max_wg < 256 ? ctx->max_wg : 256;
    /* Leave room for what the compiler itself keeps in local memory. */
    const size_t budget = ctx->local_mem > 1024 ? ctx->local_mem - 1024 : ctx->local_mem;
    for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
        /* Asked-for or tuned tiles are the only candidate. */
        size_t bm = opts->block_m ? opts->block_m : tuned_m ? tuned_m : tiles[i][0];
        size_t bn = opts->block_n ? opts->block_n : tuned_n ? tuned_n : tiles[i][1];
        size_t tpr = max_wg / bm;
        if (tpr > bn)
            tpr = bn;
        if (tpr == 0 || bn % tpr)
            continue;
        size_t dp = round_up(s->head_dim, tpr);
        if (portable_local_bytes(bm, bn, dp) > budget)
            continue;
        *cfg = (struct fused_config){ CLATTN_FUSED_PORTABLE, bm, bn, tpr, dp, 0, 0 };
        return CLATTN_OK;
    }
    return clattn_fail(CLATTN_EUNSUPPORTED, "no portable fused tile %s%zux%zu fits %llu B of "
                       "local memory and %zu work-items for d=%zu",
                       opts->block_m || opts->block_n ? "(asked " : "(", opts->block_m,
                       opts->block_n, (unsigned long long)ctx->local_mem, ctx->max_wg,
                       s->head_dim);
}

/* Tensor-core tiles per head dim when `clattn tune` has not run: the fastest
 * measured on an H200 (B=4 H=16 N=4096 fp16, docs/PERFORMANCE.md), causal or
 * not. BM = 128 is two 16-row tiles per warp for d <= 128 (4 warps), one
 * per warp at d = 256 (8 warps), whose accumulators would not fit twice. */
static void nv_mma_default_tiles(size_t d, size_t *bm, size_t *bn)
{
    *bm = 128;
    *bn = d == 128 ? 64 : 128;
}

/* Local bytes of cl/fused_nv_mma.cl: Q (BM rows), K and V (BN rows each). */
static size_t nv_mma_local_bytes(size_t bm, size_t bn, size_t d)
{
    return (bm + 2 * bn) * d * 2;
}

/* Why the tensor-core kernel cannot run this case, or NULL if it can. */
static const char *nv_mma_unsuitable(const clattn_ctx *ctx, const clattn_shape *s)
{
    if (!ctx->is_nvidia || ctx->nv_cc < 80)
        return "needs an NVIDIA device of compute capability 8.0 or newer";
    if (s->dtype != CLATTN_F16)
        return "needs fp16 storage";
    if (s->head_dim != 64 && s->head_dim != 128 && s->head_dim != 256)
        return "needs d = 64, 128 or 256";
    return NULL;
}

/* The tensor-core kernel is confirmed once per context by building it: a
 * compiler that rejects its PTX sends every call to the portable kernel. */
static int nv_mma_probe(clattn_ctx *ctx)
{
    if (ctx->nv_mma_state == 0) {
        cl_program prog;
        int rc = clattn_program_get(ctx, "fused_nv_mma.cl",
                                    "-DD=64 -DBN=64 -DWARPS=4 -DMT=1 -DCAUSAL=0", &prog);
        ctx->nv_mma_state = rc < 0 ? -1 : 1;
        if (rc < 0)
            snprintf(ctx->nv_mma_failure, sizeof ctx->nv_mma_failure, "%.255s",
                     clattn_last_error_detail());
        clattn_clear_error();
    }
    return ctx->nv_mma_state > 0;
}

static int nv_mma_config(clattn_ctx *ctx, const clattn_shape *s,
                         const clattn_options *opts, struct fused_config *cfg)
{
    size_t bm, bn;
    if (!clattn_tuned_tiles(ctx, CLATTN_FUSED_NV_MMA, s->dtype, s->head_dim,
                            opts->causal != CLATTN_CAUSAL_NONE, &bm, &bn))
        nv_mma_default_tiles(s->head_dim, &bm, &bn);
    if (opts->block_m)
        bm = opts->block_m;
    if (opts->block_n)
        bn = opts->block_n;
    if (bm % 64 || bm > 256 || bn % 16 || bn == 0 || bn > 256)
        return clattn_fail(CLATTN_EINVAL, "tensor-core tiles need BM a multiple of 64 up to 256 "
                           "and BN a multiple of 16 up to 256 (asked %zux%zu)", bm, bn);
    /* Static local arrays may exceed the reported 48 KiB on NVIDIA, up to
     * the SM's 227 KiB. */
    if (nv_mma_local_bytes(bm, bn, s->head_dim) > 227 * 1024)
        return clattn_fail(CLATTN_EUNSUPPORTED, "tensor-core tile %zux%zu needs %zu B of local "
                           "memory for d=%zu", bm, bn, nv_mma_local_bytes(bm, bn, s->head_dim),
                           s->head_dim);
    /* Two 16-row tiles per warp halve local-memory reads per mma, when the
     * accumulators of both fit in registers (d <= 128). */
    size_t m_tiles = s->head_dim <= 128 && bm % 128 == 0 ? 2 : 1;
    *cfg = (struct fused_config){ CLATTN_FUSED_NV_MMA, bm, bn, 0, s->head_dim,
                                  bm / (16 * m_tiles), m_tiles };
    return CLATTN_OK;
}

int clattn_fused_config(clattn_ctx *ctx, const clattn_shape *s, const clattn_options *opts,
                        struct fused_config *cfg)
{
    const char *why = nv_mma_unsuitable(ctx, s);
    if (opts->fused_kernel == CLATTN_FUSED_NV_MMA) {
        if (why)
            return clattn_fail(CLATTN_EUNSUPPORTED, "tensor-core fused kernel: %s", why);
        if (!nv_mma_probe(ctx))
            return clattn_fail(CLATTN_EUNSUPPORTED, "tensor-core fused kernel does not build "
                               "here: %s", ctx->nv_mma_failure);
        return nv_mma_config(ctx, s, opts, cfg);
    }
    if (opts->fused_kernel == CLATTN_FUSED_AUTO && !why && nv_mma_probe(ctx))
        return nv_mma_config(ctx, s, opts, cfg);
    return portable_config(ctx, s, opts, cfg);
}

/* The checks and the choice both public queries start from. */
static int query_config(clattn_ctx *ctx, const clattn_shape *shape, const clattn_options *opts,
                        struct fused_config *cfg)
{
    int rc = clattn_shape_check(shape);
    return rc < 0 ? rc : clattn_fused_config(ctx, shape, opts, cfg);
}

int clattn_fused_tiles(clattn_ctx *ctx, const clattn_shape *shape, const clattn_options *opts,
                       size_t *block_m, size_t *block_n, clattn_fused_kernel *kernel)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(ctx && shape && block_m && block_n);
    clattn_options defaults;
    opts = clattn_options_or_default(opts, &defaults);
    struct fused_config cfg;
    int rc = query_config(ctx, shape, opts, &cfg);
    if (rc < 0)
        return rc;
    *block_m = cfg.block_m;
    *block_n = cfg.block_n;
    if (kernel)
        *kernel = cfg.kernel;
    return CLATTN_OK;
}

int clattn_describe_kernels(clattn_ctx *ctx, const clattn_shape *shape,
                            const clattn_options *opts, char *fused, size_t fused_cap,
                            char *naive, size_t naive_cap)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(ctx && shape);
    CLATTN_CHECK_ARG(fused || !fused_cap);
    CLATTN_CHECK_ARG(naive || !naive_cap);
    clattn_options defaults;
    opts = clattn_options_or_default(opts, &defaults);
    struct fused_config cfg;
    int rc = query_config(ctx, shape, opts, &cfg);
    if (rc < 0)
        return rc;
    if (fused && fused_cap)
        snprintf(fused, fused_cap, "fused/%s %zux%zu",
                 cfg.kernel == CLATTN_FUSED_NV_MMA ? "nv-mma" : "portable", cfg.block_m,
                 cfg.block_n);
    if (naive && naive_cap) {
        int blas = opts->use_clblast && clattn_gemm_clblast_ok(ctx, shape->dtype);
        snprintf(naive, naive_cap, "naive/%s", clattn_naive_gemm_name(ctx, shape, blas));
    }
    return CLATTN_OK;
}

int clattn_fused_enqueue(clattn_ctx *ctx, const struct attention_call *c)
{
    const clattn_shape *s = c->shape;
    const int causal = c->opts->causal != CLATTN_CAUSAL_NONE;
    struct fused_config cfg;
    int rc = clattn_fused_config(ctx, s, c->opts, &cfg);
    if (rc < 0)
        return rc;
    char opts[192];
    const char *file;
    size_t local;
    if (cfg.kernel == CLATTN_FUSED_NV_MMA) {
        file = "fused_nv_mma.cl";
        local = cfg.warps * 32;
        snprintf(opts, sizeof opts, "-DD=%zu -DBN=%zu -DWARPS=%zu -DMT=%zu -DCAUSAL=%d",
                 s->head_dim, cfg.block_n, cfg.warps, cfg.m_tiles, causal);
        snprintf(c->info->kernel, sizeof c->info->kernel, "fused/nv-mma %zux%zu", cfg.block_m,
                 cfg.block_n);
    } else {
        file = "fused.cl";
        local = cfg.block_m * cfg.threads_per_row;
        snprintf(opts, sizeof opts, "-cl-mad-enable -DD=%zu -DDP=%zu -DBM=%zu -DBN=%zu "
                 "-DTPR=%zu -DCAUSAL=%d%s", s->head_dim, cfg.padded_dim, cfg.block_m,
                 cfg.block_n, cfg.threads_per_row, causal,
                 s->dtype == CLATTN_F16 ? " -DDTYPE_F16" : "");
        snprintf(c->info->kernel, sizeof c->info->kernel, "fused/portable %zux%zu",
                 cfg.block_m, cfg.block_n);
    }
    if (c->opts->fused_kernel == CLATTN_FUSED_AUTO && cfg.kernel == CLATTN_FUSED_PORTABLE &&
        ctx->nv_mma_state < 0 && !c->info->note[0])
        snprintf(c->info->note, sizeof c->info->note, "tensor-core kernel unavailable: %.120s",
                 ctx->nv_mma_failure);
    cl_kernel kern;
    rc = clattn_kernel_get(ctx, file, opts, "attention_fused", &kern);
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
    size_t global = n_qblocks * s->batch * s->heads * local;
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(ctx->queue, kern, 1, NULL, &global, &local, c->num_wait,
                                     c->wait_list, c->done);
    clReleaseKernel(kern);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "attention_fused");
    return CLATTN_OK;
}
