/* Strided-batched GEMM for the naive path: CLBlast where it serves the case;
 * otherwise the tensor-core cl/gemm_nv_mma.cl kernel where nv_gemm_unsuitable
 * allows it and it builds, else the portable cl/gemm.cl kernel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Both built-in kernels take cl/gemm.cl's arguments. */
static cl_int set_gemm_args(cl_kernel kern, const struct gemm_desc *g)
{
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
    return err;
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
    cl_int err = set_gemm_args(kern, g);
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

/* ---- The tensor-core GEMM (cl/gemm_nv_mma.cl) ---- */

/* A work-group tile of the tensor-core kernel: BM x BN of C in K steps of
 * BK, WARPS_M x WARPS_N warps, a ring of STAGES copies in local memory. */
struct nv_gemm_tiles {
    unsigned bm, bn, bk, warps_m, warps_n, stages;
};

/* Local bytes of a tile: the pipeline ring, or the C tile staged through
 * the same memory at the end, whichever is larger. */
static size_t nv_gemm_local_bytes(const struct nv_gemm_tiles *t)
{
    size_t ring = (size_t)t->stages * t->bk * (t->bm + t->bn) * 2, c = (size_t)t->bm * t->bn * 2;
    return ring > c ? ring : c;
}

/* What CLATTN_NV_GEMM asks for, a knob for comparing and tuning on the
 * device: unset, "0" or "off" (every GEMM on the portable kernel), or
 * BMxBNxBK:WMxWN:STAGES (e.g. 128x128x64:2x4:2), a tile for every GEMM. */
enum { NV_GEMM_ENV_UNSET, NV_GEMM_ENV_OFF, NV_GEMM_ENV_TILE };

/* Returns one of the above (the tile in *t) or CLATTN_EINVAL for a tile the
 * kernel cannot take. */
static int nv_gemm_env(const clattn_ctx *ctx, struct nv_gemm_tiles *t)
{
    const char *env = getenv("CLATTN_NV_GEMM");
    if (!env || !*env)
        return NV_GEMM_ENV_UNSET;
    if (!strcmp(env, "0") || !strcmp(env, "off"))
        return NV_GEMM_ENV_OFF;
    char tail;
    if (sscanf(env, "%ux%ux%u:%ux%u:%u%c", &t->bm, &t->bn, &t->bk, &t->warps_m, &t->warps_n,
               &t->stages, &tail) != 6 ||
        (t->bk != 32 && t->bk != 64) || !t->warps_m || !t->warps_n ||
        t->warps_m * t->warps_n * 32 > ctx->max_wg || t->bm % (16 * t->warps_m) ||
        t->bn % (16 * t->warps_n) || !t->bm || !t->bn || t->stages < 2 || t->stages > 8 ||
        nv_gemm_local_bytes(t) > 227 * 1024)
        return clattn_fail(CLATTN_EINVAL, "CLATTN_NV_GEMM=\"%.64s\": expected 0, off or "
                           "BMxBNxBK:WMxWN:STAGES with BK 32 or 64, BM a multiple of 16 WM, "
                           "BN of 16 WN, 2 to 8 stages, at most 227 KiB of local memory", env);
    return NV_GEMM_ENV_TILE;
}

/* Default tiles, 128 x 128 in 8 warps of 64 x 32 (4 x 4 mma tiles each, 122
 * registers, two groups per SM), K steps of 32 in two stages: 32 KiB of
 * local memory. On the H200 two stages beat three (the seed's naive path at
 * N = 4096: 20.4 ms against 23.1, docs/PERFORMANCE.md). P V with d <= 64 has
 * N <= 64: 128 x 64 in 8 warps of 32 x 32 leaves no half-empty tiles. */
static void nv_gemm_default_tiles(const struct gemm_desc *g, struct nv_gemm_tiles *t)
{
    if (g->n <= 64)
        *t = (struct nv_gemm_tiles){ 128, 64, 32, 4, 2, 2 };
    else
        *t = (struct nv_gemm_tiles){ 128, 128, 32, 2, 4, 2 };
}

static void nv_gemm_options(const struct nv_gemm_tiles *t, int trans_b, int c_vec, char *buf,
                            size_t size)
{
    snprintf(buf, size, "-DTRANS_B=%d -DBM=%u -DBN=%u -DBK=%u -DWARPS_M=%u -DWARPS_N=%u "
             "-DSTAGES=%u -DC_VEC=%d", trans_b, t->bm, t->bn, t->bk, t->warps_m, t->warps_n,
             t->stages, c_vec);
}

/* Why the tensor-core GEMM cannot run `g`, or NULL if it can. */
static const char *nv_gemm_unsuitable(const clattn_ctx *ctx, const struct gemm_desc *g)
{
    if (!ctx->is_nvidia || ctx->nv_cc < 80) /* cp.async and ldmatrix: sm_80 */
        return "needs an NVIDIA device of compute capability 8.0 or newer";
    if (g->dtype != CLATTN_F16)
        return "needs fp16 storage";
    /* cp.async copies 16 bytes from a 16-byte-aligned address: every row of
     * A and B must start on one (buffer bases are aligned by OpenCL). */
    if (g->lda % 8 || g->ldb % 8 || g->a_stride % 8 || g->b_stride % 8)
        return "needs lda, ldb and the A and B batch strides to be multiples of 8 elements";
    /* Tile origins are 32-bit in the kernel; the batch is grid dimension 1
     * (at most 65535 groups on NVIDIA). */
    if (g->m > INT32_MAX || g->n > INT32_MAX || g->k > INT32_MAX || g->batch > 65535)
        return "needs M, N, K below 2^31 and a batch of at most 65535";
    return NULL;
}

/* The tensor-core GEMM is confirmed once per context by building its
 * default Q K^T variant: a compiler that rejects its PTX (or
 * CLATTN_NV_GEMM=0) sends every GEMM to the portable kernel. */
static int nv_gemm_probe(clattn_ctx *ctx)
{
    if (ctx->nv_gemm_state == 0) {
        struct nv_gemm_tiles t;
        if (nv_gemm_env(ctx, &t) == NV_GEMM_ENV_OFF) {
            ctx->nv_gemm_state = -1;
            return 0;
        }
        const struct gemm_desc qk = { .m = 128, .n = 128, .k = 128, .trans_b = 1 };
        char opts[160];
        cl_program prog;
        nv_gemm_default_tiles(&qk, &t);
        nv_gemm_options(&t, 1, 1, opts, sizeof opts);
        int rc = clattn_program_get(ctx, "gemm_nv_mma.cl", opts, &prog);
        ctx->nv_gemm_state = rc < 0 ? -1 : 1;
        clattn_clear_error();
    }
    return ctx->nv_gemm_state > 0;
}

static int nv_gemm_chosen(clattn_ctx *ctx, const struct gemm_desc *g)
{
    return !nv_gemm_unsuitable(ctx, g) && nv_gemm_probe(ctx);
}

/* Returns 1 if enqueued, 0 if the default variant does not build here (the
 * caller runs the portable kernel), or an error: a tile forced through
 * CLATTN_NV_GEMM that is invalid or does not build is reported, not
 * replaced. */
static int enqueue_nv_mma(clattn_ctx *ctx, const struct gemm_desc *g)
{
    struct nv_gemm_tiles t;
    int env = nv_gemm_env(ctx, &t);
    if (env < 0)
        return env;
    if (env != NV_GEMM_ENV_TILE)
        nv_gemm_default_tiles(g, &t);
    /* Whole 16-byte C chunks need 16-byte-aligned C rows. */
    const int c_vec = g->ldc % 8 == 0 && g->c_stride % 8 == 0;
    char opts[160];
    nv_gemm_options(&t, g->trans_b ? 1 : 0, c_vec, opts, sizeof opts);
    cl_kernel kern;
    int rc = clattn_kernel_get(ctx, "gemm_nv_mma.cl", opts, "gemm_batched", &kern);
    if (rc < 0 && env == NV_GEMM_ENV_TILE)
        return rc;
    if (rc < 0) {
        /* The probe built; this variant did not. Nothing else changes. */
        ctx->nv_gemm_state = -1;
        clattn_clear_error();
        return 0;
    }
    cl_int err = set_gemm_args(kern, g);
    if (err != CL_SUCCESS) {
        clReleaseKernel(kern);
        return clattn_fail_cl(err, "clSetKernelArg(gemm_batched nv-mma)");
    }
    const size_t threads = 32 * (size_t)t.warps_m * t.warps_n;
    const size_t tiles = ((g->m + t.bm - 1) / t.bm) * ((g->n + t.bn - 1) / t.bn);
    size_t local[2] = { threads, 1 };
    size_t global[2] = { tiles * threads, g->batch };
    err = clEnqueueNDRangeKernel(ctx->queue, kern, 2, NULL, global, local, 0, NULL, NULL);
    clReleaseKernel(kern);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clEnqueueNDRangeKernel(gemm_batched nv-mma)");
    return 1;
}

const char *clattn_naive_gemm_name(clattn_ctx *ctx, const clattn_shape *s, int use_clblast)
{
    if (use_clblast)
        return "clblast";
    struct gemm_desc qk, pv;
    clattn_naive_gemms(s, 1.0f, NULL, NULL, NULL, NULL, NULL, NULL, &qk, &pv);
    const int nv_qk = nv_gemm_chosen(ctx, &qk), nv_pv = nv_gemm_chosen(ctx, &pv);
    if (nv_qk && nv_pv)
        return "nv-mma-gemm";
    if (nv_qk)
        return "nv-mma-gemm+builtin-gemm";
    if (nv_pv)
        return "builtin-gemm+nv-mma-gemm";
    return "builtin-gemm";
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
    if (nv_gemm_chosen(ctx, g)) {
        int rc = enqueue_nv_mma(ctx, g);
        if (rc != 0)
            return rc < 0 ? rc : CLATTN_OK;
    }
    return enqueue_builtin(ctx, g);
}
