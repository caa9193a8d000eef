/* SPDX-License-Identifier: MIT */
/* The CPU-shaped fused kernel (cl/fused/cpu.cl): work-group size 1,
 * explicit float16 vectors, no local memory. BM = 16 x RV packed rows per
 * work-item, one row per SIMD lane ("rows across lanes"), or for decoding
 * (at most 8 packed rows per key/value head) BM = DR rows with the keys
 * across the lanes. Tiles measured on a 2-core Zen 4 under PoCL 3.1
 * (docs/CPU_KERNEL.md): BN = 128 and the most row vectors are best or within
 * noise of it at d = 64, 128, 256 in both dtypes; KB and XC move nothing
 * beyond noise; decoding wants BN 128 in fp32 and 32 in fp16. K and V as
 * the cache keeps them (quantized, paged, packed) through
 * cl/include/kv_cache.clh, converted into the float copy of each block
 * that fp16 and bf16 storage already use. */
#include <stdio.h>

#include "core/error.h"
#include "fused/kernel.h"

#define LANES 16
#define MAX_RV 16     /* 256 rows: clattn tune's largest candidate */
#define DEFAULT_RV 8  /* 128 rows: the measured default (docs/CPU_KERNEL.md) */
#define DECODE_ROWS 8
#define KB 8
/* The work-item's private arrays live on the stack of a PoCL worker thread
 * (8 MiB by default): keep them within 1 MiB. */
#define PRIVATE_BUDGET ((size_t)1 << 20)

/* What configure derives: the register blocks (keys of Q K^T, columns of
 * P V; for decoding the columns per exchange). */
struct cpu_own {
    size_t kb, xc;
};
FUSED_PLAN_OWN_CHECK(struct cpu_own);

static size_t max_size(size_t a, size_t b)
{
    return a > b ? a : b;
}

/* The budgets below count the converted K/V block in every dtype:
 * configure sees the shape, not the cache, and a quantized or paged cache
 * is converted in fp32 too. */

/* Q^T, O^T, P^T, and the converted K/V block, rows across lanes; d_v is
 * V's head dimension. */
static size_t private_bytes(size_t rv, size_t bn, size_t d, size_t dv)
{
    return 4 * (rv * (d + dv) * LANES + rv * bn * LANES + bn * max_size(d, dv) + d);
}

/* Q, O, scores (64-byte vectors), P (floats), and the staged K/V block,
 * keys across lanes. */
static size_t decode_private_bytes(size_t dr, size_t bn, size_t d, size_t dv)
{
    const size_t nq = (d + 15) / 16, nv = (dv + 15) / 16;
    return 64 * (dr * (nq + nv) + dr * bn / 16 + bn * max_size(nq, nv)) + 4 * dr * bn;
}

static const char *not_preferred(const struct device_facts *dev, const struct attention_call *c)
{
    (void)c;
    return dev->is_cpu ? NULL : "shaped for CPUs";
}

static const struct fused_tiles candidates[] = {
    { 128, 128, 0 }, { 256, 128, 0 }, { 256, 64, 0 }, { 128, 64, 0 }, { 128, 256, 0 },
    { 64, 128, 0 },  { 32, 128, 0 },  { 16, 128, 0 }, { 8, 128, 0 }, { 8, 32, 0 }, { 4, 128, 0 }, { 4, 32, 0 }, { 2, 128, 0 }, { 1, 128, 0 },
};

static void default_tiles(const struct device_facts *dev, const clattn_shape *s, size_t rows,
                          const struct fused_plan *plan, struct fused_tiles *out)
{
    (void)dev;
    (void)plan;
    if (rows <= DECODE_ROWS) {
        *out = (struct fused_tiles){ rows, s->dtype != CLATTN_F32 ? 32 : 128, 0 };
        return;
    }
    size_t rv = (rows + LANES - 1) / LANES;
    *out = (struct fused_tiles){ LANES * (rv < DEFAULT_RV ? rv : DEFAULT_RV), 128, 0 };
}

static int configure_decode(const clattn_shape *s, struct fused_plan *plan)
{
    const size_t dr = plan->tiles.bm, bn = plan->tiles.bn, d = s->head_dim;
    const size_t dv = plan->head_dim_v;
    if (dr > DECODE_ROWS || bn % 16 || bn == 0 || bn > 1024)
        return clattn_fail(CLATTN_EINVAL, "the CPU decode layout needs BM <= %d and BN a "
                           "multiple of 16 up to 1024 (asked %zux%zu)", DECODE_ROWS, dr, bn);
    if (decode_private_bytes(dr, bn, d, dv) > PRIVATE_BUDGET)
        return clattn_fail(CLATTN_EUNSUPPORTED, "CPU decode tile %zux%zu needs %zu B of private "
                           "memory for d=%zu, d_v=%zu (budget %zu)", dr, bn,
                           decode_private_bytes(dr, bn, d, dv), d, dv, PRIVATE_BUDGET);
    const size_t vectors = (dv + 15) / 16, xch = 16 / dr;
    FUSED_PLAN_OWN(plan, struct cpu_own)->xc = xch < vectors ? xch : vectors;
    return CLATTN_OK;
}

static int configure(const struct device_facts *dev, const clattn_shape *s,
                     struct fused_plan *plan)
{
    (void)dev;
    const size_t bm = plan->tiles.bm, bn = plan->tiles.bn, d = s->head_dim;
    const size_t dv = plan->head_dim_v;
    plan->local = 1;
    if (bm >= 1 && bm < LANES)
        return configure_decode(s, plan);
    if (bm % LANES || bm > MAX_RV * LANES || bn % KB || bn == 0 || bn > 1024)
        return clattn_fail(CLATTN_EINVAL, "the CPU kernel needs BM of 1 to %d, or a multiple "
                           "of %d up to %d, and BN a multiple of %d up to 1024 (asked %zux%zu)",
                           DECODE_ROWS, LANES, MAX_RV * LANES, KB, bm, bn);
    if (private_bytes(bm / LANES, bn, d, dv) > PRIVATE_BUDGET)
        return clattn_fail(CLATTN_EUNSUPPORTED, "CPU tile %zux%zu needs %zu B of private memory "
                           "for d=%zu, d_v=%zu (budget %zu)", bm, bn,
                           private_bytes(bm / LANES, bn, d, dv), d, dv, PRIVATE_BUDGET);
    *FUSED_PLAN_OWN(plan, struct cpu_own) = (struct cpu_own){ KB, dv < 16 ? dv : 16 };
    return CLATTN_OK;
}

static void options(const clattn_shape *s, const struct fused_plan *plan, char *buf, size_t cap)
{
    const char *f16 = ""; /* the storage option comes with the call's */
    const struct cpu_own *own = FUSED_PLAN_OWN(plan, const struct cpu_own);
    if (plan->tiles.bm < LANES)
        snprintf(buf, cap, "-DD=%zu -DDR=%zu -DBN=%zu -DXCH=%zu%s", s->head_dim, plan->tiles.bm,
                 plan->tiles.bn, own->xc, f16);
    else
        snprintf(buf, cap, "-DD=%zu -DBN=%zu -DRV=%zu -DKB=%zu -DXC=%zu%s", s->head_dim,
                 plan->tiles.bn, plan->tiles.bm / LANES, own->kb, own->xc, f16);
}

const struct fused_kernel fused_cpu = {
    .name = "cpu",
    .id = CLATTN_FUSED_CPU,
    .file = "fused/cpu.cl",
    .summary = "shaped for CPUs: float16 vectors, register tiles, no local memory",
    /* Every variant but the snippets: its scores are vectors of 16 rows, and
     * a snippet is a function of one score (the portable kernel takes them).
     * The KV cache's forms included. */
    .variants = FUSED_F_VARIANTS & ~(FUSED_F_SCORE_MOD | FUSED_F_MASK_MOD),
    .dtypes = FUSED_DTYPE(CLATTN_F32) | FUSED_DTYPE(CLATTN_F16) | FUSED_DTYPE(CLATTN_BF16),
    .takes_dv = 1,
    .not_preferred = not_preferred,
    FUSED_CANDIDATES(candidates),
    .default_tiles = default_tiles,
    .configure = configure,
    .options = options,
};
