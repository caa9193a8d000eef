/* Strided-batched GEMM for the naive path: CLBlast where it serves the case,
 * the built-in cl/gemm.cl kernel otherwise. */
#include <stdio.h>

#include "paths.h"

#ifdef CLATTN_HAVE_CLBLAST
#include <clblast_c.h>
#endif

int clattn_gemm_clblast_ok(const clattn_ctx *ctx, clattn_dtype dtype)
{
#ifdef CLATTN_HAVE_CLBLAST
    /* CLBlast refuses half precision unless the device advertises
     * cl_khr_fp16 (NVIDIA computes half but does not advertise it). */
    return dtype == CLATTN_F32 || ctx->has_fp16;
#else
    (void)ctx;
    (void)dtype;
    return 0;
#endif
}

#ifdef CLATTN_HAVE_CLBLAST
static int clblast_fail(CLBlastStatusCode st, const char *call)
{
    if (st == CLBlastNoHalfPrecision)
        return clattn_fail(CLATTN_EUNSUPPORTED, "%s: CLBlast has no half precision here", call);
    if (st > -1000) /* CLBlast passes OpenCL errors through unchanged */
        return clattn_fail_cl((cl_int)st, call);
    return clattn_fail(CLATTN_ECL, "%s -> CLBlast status %d", call, (int)st);
}
#endif

int clattn_gemm_temp_bytes(clattn_ctx *ctx, const struct gemm_desc *g, int use_clblast,
                           uint64_t *bytes)
{
    *bytes = 0;
#ifdef CLATTN_HAVE_CLBLAST
    if (!use_clblast)
        return CLATTN_OK;
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
#else
    (void)ctx;
    (void)g;
    (void)use_clblast;
#endif
    return CLATTN_OK;
}

static int enqueue_builtin(clattn_ctx *ctx, const struct gemm_desc *g)
{
    char opts[128];
    snprintf(opts, sizeof opts, "-cl-mad-enable -DTRANS_B=%d%s", g->trans_b ? 1 : 0,
             g->dtype == CLATTN_F16 ? " -DDTYPE_F16" : "");
    cl_kernel kern;
    int rc = clattn_kernel_get(ctx, "gemm.cl", opts, "gemm_batched", &kern);
    if (rc < 0)
        return rc;
    cl_uint M = (cl_uint)g->m, N = (cl_uint)g->n, K = (cl_uint)g->k;
    cl_uint lda = (cl_uint)g->lda, ldb = (cl_uint)g->ldb, ldc = (cl_uint)g->ldc;
    cl_ulong zero = 0, as = g->a_stride, bs = g->b_stride, cs = g->c_stride;
    cl_int err = 0;
    int i = 0;
    err |= clSetKernelArg(kern, i++, sizeof M, &M);
    err |= clSetKernelArg(kern, i++, sizeof N, &N);
    err |= clSetKernelArg(kern, i++, sizeof K, &K);
    err |= clSetKernelArg(kern, i++, sizeof g->alpha, &g->alpha);
    err |= clSetKernelArg(kern, i++, sizeof(cl_mem), &g->a);
    err |= clSetKernelArg(kern, i++, sizeof zero, &zero);
    err |= clSetKernelArg(kern, i++, sizeof lda, &lda);
    err |= clSetKernelArg(kern, i++, sizeof as, &as);
    err |= clSetKernelArg(kern, i++, sizeof(cl_mem), &g->b);
    err |= clSetKernelArg(kern, i++, sizeof zero, &zero);
    err |= clSetKernelArg(kern, i++, sizeof ldb, &ldb);
    err |= clSetKernelArg(kern, i++, sizeof bs, &bs);
    err |= clSetKernelArg(kern, i++, sizeof(cl_mem), &g->c);
    err |= clSetKernelArg(kern, i++, sizeof zero, &zero);
    err |= clSetKernelArg(kern, i++, sizeof ldc, &ldc);
    err |= clSetKernelArg(kern, i++, sizeof cs, &cs);
    if (err != CL_SUCCESS) {
        clReleaseKernel(kern);
        return clattn_fail_cl(err, "clSetKernelArg(gemm_batched)");
    }
    size_t local[3] = { 16, 16, 1 };
    size_t global[3] = { (g->n + 63) / 64 * 16, (g->m + 63) / 64 * 16, g->batch };
    err = clEnqueueNDRangeKernel(ctx->queue, kern, 3, NULL, global, local, 0, NULL, NULL);
    clReleaseKernel(kern);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clEnqueueNDRangeKernel(gemm_batched)");
    return CLATTN_OK;
}

int clattn_gemm_enqueue(clattn_ctx *ctx, const struct gemm_desc *g, int use_clblast)
{
    if (g->m > UINT32_MAX || g->n > UINT32_MAX || g->k > UINT32_MAX)
        return clattn_fail(CLATTN_EUNSUPPORTED, "GEMM dimension exceeds 2^32");
#ifdef CLATTN_HAVE_CLBLAST
    if (use_clblast) {
        /* CLBlast's returned event belongs to its last helper kernel, so we
         * ask for none: ordering comes from the in-order queue. */
        CLBlastTranspose tb = g->trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
        CLBlastStatusCode st;
        if (g->dtype == CLATTN_F16) {
            cl_half alpha = clattn_f32_to_f16(g->alpha), beta = 0;
            st = CLBlastHgemmStridedBatched(CLBlastLayoutRowMajor, CLBlastTransposeNo, tb, g->m,
                                            g->n, g->k, alpha, g->a, 0, g->lda, g->a_stride,
                                            g->b, 0, g->ldb, g->b_stride, beta, g->c, 0, g->ldc,
                                            g->c_stride, g->batch, &ctx->queue, NULL);
        } else {
            st = CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, CLBlastTransposeNo, tb, g->m,
                                            g->n, g->k, g->alpha, g->a, 0, g->lda, g->a_stride,
                                            g->b, 0, g->ldb, g->b_stride, 0.0f, g->c, 0, g->ldc,
                                            g->c_stride, g->batch, &ctx->queue, NULL);
        }
        if (st != CLBlastSuccess)
            return clblast_fail(st, "CLBlastXgemmStridedBatched");
        return CLATTN_OK;
    }
#else
    (void)use_clblast;
#endif
    return enqueue_builtin(ctx, g);
}
