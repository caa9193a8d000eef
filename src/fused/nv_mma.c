/* SPDX-License-Identifier: MIT */
/* The tensor-core fused kernel (cl/fused/nv_mma.cl): NVIDIA sm_80+, fp16,
 * inline PTX mma.sync / ldmatrix / cp.async. A work-group of WARPS warps owns
 * BM = 16 x MT x WARPS query rows. */
#include <stdio.h>

#include "core/error.h"
#include "fused/kernel.h"
#include "fused/nv_mma.h"

/* cp.async copies 16-byte chunks of Q, K and V rows, and O is written in
 * half2 words: every row must start on such a boundary. */
static int aligned(const struct tensor_layout *l, uint64_t elems)
{
    return l->offset % elems == 0 && l->batch % elems == 0 && l->head % elems == 0 &&
           l->token % elems == 0;
}

const char *nv_mma_cannot_run(const struct device_facts *dev, const struct attention_call *c)
{
    const clattn_shape *s = c->shape;
    if (dev->nv_cc < 80)
        return "needs an NVIDIA device of compute capability 8.0 or newer";
    if (s->dtype != CLATTN_F16 && s->dtype != CLATTN_BF16)
        return "needs fp16 or bf16 storage";
    if (s->head_dim != 64 && s->head_dim != 128 && s->head_dim != 256)
        return "needs d = 64, 128 or 256";
    if (!aligned(&c->ql, 8) || !aligned(&c->kl, 8) || !aligned(&c->vl, 8) || !aligned(&c->ol, 2))
        return "needs Q, K and V rows on 16-byte boundaries and O rows on 4-byte ones "
               "(offsets and strides multiples of 8 and 2 elements)";
    return NULL;
}


/* What configure derives: warps per group, 16-row tiles per warp. */
struct nv_mma_own {
    size_t warps, m_tiles;
};
FUSED_PLAN_OWN_CHECK(struct nv_mma_own);

/* Local bytes: Q (BM rows), K and V (BN rows each), fp16. */
static size_t local_bytes(size_t bm, size_t bn, size_t d)
{
    return (bm + 2 * bn) * d * 2;
}

static const struct fused_tiles candidates[] = {
    { 64, 32, 0 }, { 64, 64, 0 }, { 64, 128, 0 }, { 128, 32, 0 }, { 128, 64, 0 }, { 128, 128, 0 },
    { 256, 32, 0 }, { 256, 64, 0 }, { 16, 64, 0 }, { 16, 128, 0 }, { 32, 64, 0 },
};

/* The fastest measured on an H200 (B=4 H=16 N=4096 fp16, docs/PERFORMANCE.md),
 * causal or not. BM = 128 is two 16-row tiles per warp for d <= 128 (4
 * warps), one per warp at d = 256 (8 warps), whose accumulators would not
 * fit twice. */
static void default_tiles(const struct device_facts *dev, const clattn_shape *s, size_t rows,
                          const struct fused_plan *plan, struct fused_tiles *out)
{
    (void)dev;
    (void)plan;
    out->bm = 128;
    out->bn = s->head_dim == 128 ? 64 : 128;
    /* Decoding: as few 16-row tiles as the packed rows need. */
    if (rows <= 16)
        out->bm = 16;
    else if (rows <= 32)
        out->bm = 32;
    else if (rows <= 64)
        out->bm = 64;
}

static int configure(const struct device_facts *dev, const clattn_shape *s,
                     struct fused_plan *plan)
{
    const size_t bm = plan->tiles.bm, bn = plan->tiles.bn, d = s->head_dim;
    if (bm % 16 || bm == 0 || bm > 256 || (bm > 32 && bm % 64) || bn % 16 || bn == 0 ||
        bn > 256)
        return clattn_fail(CLATTN_EINVAL, "tensor-core tiles need BM of 16, 32 or a multiple of "
                           "64 up to 256, and BN a multiple of 16 up to 256 (asked %zux%zu)", bm,
                           bn);
    /* Static local arrays: the SM's opt-in shared memory, not the 48 KiB
     * NVIDIA reports. */
    if (local_bytes(bm, bn, d) > dev->static_local_mem)
        return clattn_fail(CLATTN_EUNSUPPORTED, "tensor-core tile %zux%zu needs %zu B of local "
                           "memory for d=%zu; the device takes %llu B", bm, bn,
                           local_bytes(bm, bn, d), d, (unsigned long long)dev->static_local_mem);
    /* Two 16-row tiles per warp halve local-memory reads per mma, when the
     * accumulators of both fit in registers (d <= 128). */
    struct nv_mma_own *own = FUSED_PLAN_OWN(plan, struct nv_mma_own);
    own->m_tiles = d <= 128 && bm % 128 == 0 ? 2 : 1;
    own->warps = bm / (16 * own->m_tiles);
    plan->local = own->warps * 32;
    return CLATTN_OK;
}

static void options(const clattn_shape *s, const struct fused_plan *plan, char *buf, size_t cap)
{
    const struct nv_mma_own *own = FUSED_PLAN_OWN(plan, const struct nv_mma_own);
    snprintf(buf, cap, "-DCLATTN_NV_TANH=1 -DD=%zu -DBN=%zu -DWARPS=%zu -DMT=%zu", s->head_dim, plan->tiles.bn,
             own->warps, own->m_tiles);
}

static const clattn_shape probe_shape = { 1, 1, 1, 64, 64, 64, CLATTN_F16 };

const struct fused_kernel fused_nv_mma = {
    .name = "nv-mma",
    .id = CLATTN_FUSED_NV_MMA,
    .file = "fused/nv_mma.cl",
    .summary = "NVIDIA tensor cores (sm_80+): mma.sync, ldmatrix, cp.async; fp16, d = 64/128/256",
    .variants = FUSED_F_VARIANTS & ~FUSED_F_CACHE,
    .dtypes = FUSED_DTYPE(CLATTN_F16) | FUSED_DTYPE(CLATTN_BF16), /* mma.sync takes both */
    .cannot_run = nv_mma_cannot_run,
    .probe_shape = &probe_shape,
    FUSED_CANDIDATES(candidates),
    .default_tiles = default_tiles,
    .configure = configure,
    .options = options,
};
