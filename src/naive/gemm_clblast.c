/* CLBlast's strided-batched GEMMs, where the library was built with it. */
#include "context/context.h"
#include "naive/gemm.h"

#ifdef CLATTN_HAVE_CLBLAST
#include <clblast_c.h>

static const char *cannot_run(const struct device_facts *dev, const struct gemm_desc *g)
{
    /* CLBlast refuses half precision unless the device advertises
     * cl_khr_fp16 (NVIDIA computes half but does not advertise it). */
    if (g->dtype == CLATTN_F16 && !dev->fp16_advertised)
        return "CLBlast's half precision needs cl_khr_fp16";
    return NULL;
}

static int clblast_fail(CLBlastStatusCode st, const char *call)
{
    if (st == CLBlastNoHalfPrecision)
        return clattn_fail(CLATTN_EUNSUPPORTED, "%s: CLBlast has no half precision here", call);
    if (st > -1000) /* CLBlast passes OpenCL errors through unchanged */
        return clattn_fail_cl((cl_int)st, call);
    return clattn_fail(CLATTN_ECL, "%s -> CLBlast status %d", call, (int)st);
}

static int temp_bytes(clattn_ctx *ctx, const struct gemm_desc *g, uint64_t *bytes)
{
    size_t one = 0;
    CLBlastTranspose tb = g->trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastStatusCode st = g->dtype == CLATTN_F16
        ? CLBlastHGemmTempBufferSize(CLBlastLayoutRowMajor, CLBlastTransposeNo, tb, g->m, g->n,
                                     g->k, 0, g->lda, 0, g->ldb, 0, g->ldc, &ctx->queue, &one)
        : CLBlastSGemmTempBufferSize(CLBlastLayoutRowMajor, CLBlastTransposeNo, tb, g->m, g->n,
                                     g->k, 0, g->lda, 0, g->ldb, 0, g->ldc, &ctx->queue, &one);
    if (st != CLBlastSuccess)
        return clblast_fail(st, "CLBlastXGemmTempBufferSize");
    /* The strided-batched indirect kernel pads every batch entry: count the
     * single-GEMM figure once per batch entry, an upper bound. */
    if (__builtin_mul_overflow((uint64_t)one, (uint64_t)g->batch, bytes))
        return clattn_fail(CLATTN_EOVERFLOW, "CLBlast temporary buffer size");
    return CLATTN_OK;
}

static int enqueue(clattn_ctx *ctx, const struct gemm_desc *g)
{
    /* CLBlast's returned event belongs to its last helper kernel, so we ask
     * for none: ordering comes from the in-order queue. */
    CLBlastTranspose tb = g->trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastStatusCode st;
    if (g->dtype == CLATTN_F16) {
        cl_half alpha = clattn_f32_to_f16(g->alpha), beta = 0;
        st = CLBlastHgemmStridedBatched(CLBlastLayoutRowMajor, CLBlastTransposeNo, tb, g->m,
                                        g->n, g->k, alpha, g->a, 0, g->lda, g->a_stride, g->b, 0,
                                        g->ldb, g->b_stride, beta, g->c, 0, g->ldc, g->c_stride,
                                        g->batch, &ctx->queue, NULL);
    } else {
        st = CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, CLBlastTransposeNo, tb, g->m,
                                        g->n, g->k, g->alpha, g->a, 0, g->lda, g->a_stride, g->b,
                                        0, g->ldb, g->b_stride, 0.0f, g->c, 0, g->ldc,
                                        g->c_stride, g->batch, &ctx->queue, NULL);
    }
    return st == CLBlastSuccess ? CLATTN_OK : clblast_fail(st, "CLBlastXgemmStridedBatched");
}

const struct gemm_backend gemm_clblast = {
    .name = "clblast",
    .cannot_run = cannot_run,
    .temp_bytes = temp_bytes,
    .enqueue = enqueue,
};

#else

static const char *cannot_run(const struct device_facts *dev, const struct gemm_desc *g)
{
    (void)dev;
    (void)g;
    return "the library was built without CLBlast";
}

static int enqueue(clattn_ctx *ctx, const struct gemm_desc *g)
{
    (void)ctx;
    (void)g;
    return GEMM_HAND_ON;
}

const struct gemm_backend gemm_clblast = {
    .name = "clblast",
    .cannot_run = cannot_run,
    .enqueue = enqueue,
};

#endif
