/* SPDX-License-Identifier: MIT */
/* The portable fused kernel (cl/fused/portable.cl): OpenCL C 1.2, any device. A
 * work-group owns BM query rows; TPR work-items share each row. */
#include <stdio.h>

#include "core/error.h"
#include "fused/kernel.h"

/* What configure derives: work-items per row, d and d_v rounded up to a
 * multiple of it. */
struct portable_own {
    size_t tpr, dp, dvp;
};
FUSED_PLAN_OWN_CHECK(struct portable_own);

/* Local bytes of cl/fused/portable.cl for a tile: Q (BM x DP), K or V (BN x
 * (max(DP, DVP) + 1)), scores (BM x (BN+1)), all float. */
static size_t local_bytes(size_t bm, size_t bn, size_t dp, size_t dvp)
{
    return 4 * (bm * dp + bn * ((dp > dvp ? dp : dvp) + 1) + bm * (bn + 1));
}

static size_t round_up(size_t x, size_t m)
{
    return (x + m - 1) / m * m;
}

/* Decoding packs few rows per (sequence, key/value head): a tile of that
 * many rows (a power of two, at least 4) with more work-items per row; else
 * the candidates' first fit. */
static void default_tiles(const struct device_facts *dev, const clattn_shape *s, size_t rows,
                          const struct fused_plan *plan, struct fused_tiles *out)
{
    (void)dev;
    (void)plan;
    (void)s;
    size_t bm = 4;
    while (bm < rows && bm < 64)
        bm *= 2;
    *out = (struct fused_tiles){ bm, 64, 0 };
}

/* Larger tiles reuse each K/V load over more queries; the defaults take the
 * first that fits the device. */
static const struct fused_tiles candidates[] = {
    { 64, 64, 0 }, { 64, 32, 0 }, { 32, 32, 0 }, { 32, 16, 0 }, { 16, 16, 0 }, { 16, 8, 0 }, { 8, 8, 0 }, { 4, 4, 0 },
};

static int configure(const struct device_facts *dev, const clattn_shape *s,
                     struct fused_plan *plan)
{
    const size_t bm = plan->tiles.bm, bn = plan->tiles.bn;
    const size_t max_wg = dev->max_wg < 256 ? dev->max_wg : 256;
    /* Leave room for what the compiler itself keeps in local memory. */
    const size_t budget = dev->local_mem > 1024 ? dev->local_mem - 1024 : dev->local_mem;
    if (bm == 0 || bn == 0 || bm > max_wg || bn > 1024)
        return clattn_fail(CLATTN_EINVAL, "portable tile %zux%zu: BM must be 1..%zu and BN "
                           "1..1024", bm, bn, max_wg);
    /* BN must be a multiple of the work-items per row. */
    size_t tpr = max_wg / bm;
    if (tpr > bn)
        tpr = bn;
    if (bn % tpr)
        return clattn_fail(CLATTN_EINVAL, "portable tile %zux%zu: BN must be a multiple of the "
                           "%zu work-items per row", bm, bn, tpr);
    const size_t dp = round_up(s->head_dim, tpr), dvp = round_up(plan->head_dim_v, tpr);
    if (local_bytes(bm, bn, dp, dvp) > budget)
        return clattn_fail(CLATTN_EUNSUPPORTED, "portable tile %zux%zu needs %zu B of local "
                           "memory for d=%zu; the device has %llu B", bm, bn,
                           local_bytes(bm, bn, dp, dvp), s->head_dim, (unsigned long long)budget);
    *FUSED_PLAN_OWN(plan, struct portable_own) = (struct portable_own){ tpr, dp, dvp };
    plan->local = bm * tpr;
    return CLATTN_OK;
}

static void options(const clattn_shape *s, const struct fused_plan *plan, char *buf, size_t cap)
{
    const struct portable_own *own = FUSED_PLAN_OWN(plan, const struct portable_own);
    snprintf(buf, cap, "-cl-mad-enable -DD=%zu -DDP=%zu -DDVP=%zu -DBM=%zu -DBN=%zu -DTPR=%zu",
             s->head_dim, own->dp, own->dvp, plan->tiles.bm, plan->tiles.bn, own->tpr);
}

const struct fused_kernel fused_portable = {
    .name = "portable",
    .id = CLATTN_FUSED_PORTABLE,
    .file = "fused/portable.cl",
    .summary = "OpenCL C 1.2 tiles with an online softmax, any device",
    .variants = FUSED_F_VARIANTS,
    .dtypes = FUSED_DTYPE(CLATTN_F32) | FUSED_DTYPE(CLATTN_F16) | FUSED_DTYPE(CLATTN_BF16),
    .takes_dv = 1,
    FUSED_CANDIDATES(candidates),
    .default_tiles = default_tiles,
    .configure = configure,
    .options = options,
};
