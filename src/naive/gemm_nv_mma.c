/* The tensor-core GEMM (cl/naive/gemm_nv_mma.cl): NVIDIA sm_80+, fp16, a ring of
 * cp.async stages feeding ldmatrix and mma.sync. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context/context.h"
#include "naive/gemm.h"
#include "context/program.h"

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
static const char *cannot_run(const struct device_facts *dev, const struct gemm_desc *g)
{
    if (dev->nv_cc < 80) /* cp.async and ldmatrix: sm_80 */
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

/* The tiles the parameters force over the defaults in *t (0: none forced,
 * 1: some, checked together), or CLATTN_EINVAL. */
static int forced_tiles(const struct device_facts *dev, const int *params,
                        struct nv_gemm_tiles *t)
{
    unsigned *field[] = { &t->bm, &t->bn, &t->bk, &t->warps_m, &t->warps_n, &t->stages };
    int forced = 0;
    for (int i = 0; params && i < 6; i++)
        if (params[NAIVE_NV_BM + i] != PARAM_AUTO) {
            *field[i] = (unsigned)params[NAIVE_NV_BM + i];
            forced = 1;
        }
    if (forced && ((t->bk != 32 && t->bk != 64) || t->warps_m * t->warps_n * 32 > dev->max_wg ||
                   t->bm % (16 * t->warps_m) || t->bn % (16 * t->warps_n) ||
                   nv_gemm_local_bytes(t) > 227 * 1024))
        return clattn_fail(CLATTN_EINVAL, "tensor-core GEMM tile %ux%ux%u, %ux%u warps, %u "
                           "stages: BK 32 or 64, BM a multiple of 16 warps_m, BN of 16 warps_n, "
                           "at most 227 KiB of local memory", t->bm, t->bn, t->bk, t->warps_m,
                           t->warps_n, t->stages);
    return forced;
}

/* The tensor-core GEMM is confirmed once per context by building its
 * default Q K^T variant: a compiler that rejects its PTX sends every GEMM
 * to the next backend. */
static int probe(clattn_ctx *ctx)
{
    struct nv_gemm_tiles t;
    const struct gemm_desc qk = { .m = 128, .n = 128, .k = 128, .trans_b = 1 };
    char opts[160];
    cl_program prog;
    nv_gemm_default_tiles(&qk, &t);
    nv_gemm_options(&t, 1, 1, opts, sizeof opts);
    return program_get(ctx, "naive/gemm_nv_mma.cl", opts, &prog);
}

/* A tile forced by the parameters that is invalid or does not build is
 * reported, not replaced; a default variant that does not build hands on. */
static int enqueue(clattn_ctx *ctx, const struct gemm_desc *g)
{
    struct nv_gemm_tiles t;
    nv_gemm_default_tiles(g, &t);
    const int forced = forced_tiles(&ctx->dev, g->params, &t);
    if (forced < 0)
        return forced;
    /* Whole 16-byte C chunks need 16-byte-aligned C rows. */
    const int c_vec = g->ldc % 8 == 0 && g->c_stride % 8 == 0;
    char opts[160];
    nv_gemm_options(&t, g->trans_b ? 1 : 0, c_vec, opts, sizeof opts);
    cl_kernel kern;
    int rc = kernel_get(ctx, "naive/gemm_nv_mma.cl", opts, "gemm_batched", &kern);
    if (rc < 0 && forced)
        return rc;
    if (rc < 0 && rc != CLATTN_EDEVLOST) {
        clattn_clear_error(); /* the probe built; this variant did not */
        return GEMM_HAND_ON;
    }
    if (rc < 0)
        return rc;
    const size_t threads = 32 * (size_t)t.warps_m * t.warps_n;
    const size_t tiles = ((g->m + t.bm - 1) / t.bm) * ((g->n + t.bn - 1) / t.bn);
    size_t local[2] = { threads, 1 };
    size_t global[2] = { tiles * threads, g->batch };
    return gemm_enqueue_standard(ctx->queue, kern, g, 2, global, local, "gemm_batched nv-mma");
}

const struct gemm_backend gemm_nv_mma = {
    .name = "nv-mma-gemm",
    .cannot_run = cannot_run,
    .probe = probe,
    .enqueue = enqueue,
};

