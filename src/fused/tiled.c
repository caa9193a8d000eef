/* SPDX-License-Identifier: MIT */
/* The register-tiled fused kernel (cl/fused/tiled.cl): OpenCL C 1.2, shaped
 * like two GEMMs for GPUs of any vendor. A work-group of NT work-items owns
 * BM packed rows; for S = Q K^T each item holds TMS rows x TNS keys, for
 * O = P V TMO rows x 4 OCO columns, all in registers. The tiles name BM, BN
 * and TMS ("rows per work-item"); the rest follows here. */
#include <stdio.h>

#include "core/error.h"
#include "fused/kernel.h"

/* Floats a work-item may hold in its tiles and operands: past this every
 * GPU we know spills (NVIDIA's limit is 255 registers per thread, with
 * addresses and loop state beside them). */
#define TILE_REGS_MAX 200

static size_t round_up(size_t x, size_t m)
{
    return (x + m - 1) / m * m;
}

/* S work-items sharing a row: 8 keys each from blocks of 64 keys, 4 each
 * below. */
static size_t s_threads_per_row(size_t bn)
{
    return bn >= 64 ? bn / 8 : bn / 4;
}

/* The largest power of two whose square is at most x (at least 1). */
static size_t pow2_sqrt_floor(size_t x)
{
    size_t r = 1;
    while ((2 * r) * (2 * r) <= x)
        r *= 2;
    return r;
}

/* What configure derives, for the build options. */
struct tiled_own {
    size_t txs, tmo, dp;
    int kv_shared;
};
FUSED_PLAN_OWN_CHECK(struct tiled_own);

/* Its parameter: K and V in one local tile in turn, or in two. */
enum { PARAM_KV_SHARED, N_PARAMS };
static const struct param_def param_defs[N_PARAMS] = {
    [PARAM_KV_SHARED] = { "kv_shared", 0, 1, NULL,
                          "1: K and V take turns in one local tile, 0: one tile each (by "
                          "default one only where two do not fit local memory; always two "
                          "on PoCL)" },
};

/* The kernel's derived layout for a plan's tiles. */
struct layout {
    size_t tms, txs, tns, nt;  /* S: rows, items per row, keys per item, items */
    size_t tmo, txo, oco;      /* O: rows per item, items per row, float4 columns */
    size_t dp;                 /* d padded to a multiple of 4 TXO */
    size_t regs;               /* floats held per item */
};

/* The O layout: the output tile BM x DP shared out as squarely as the item
 * count allows (TMO rows x 4 OCO columns, TMO ~ 4 OCO). */
static int derive(size_t bm, size_t bn, size_t tm, size_t d, struct layout *l)
{
    l->tms = tm;
    l->txs = s_threads_per_row(bn);
    if (!l->txs || bn % l->txs || bm % tm)
        return -1;
    l->tns = bn / l->txs;
    l->nt = bm / tm * l->txs;
    const size_t per_item = bm * round_up(d, 4) / l->nt;
    l->tmo = pow2_sqrt_floor(per_item ? per_item : 1);
    while (l->tmo < bm && (bm % l->tmo || l->nt % (bm / l->tmo)))
        l->tmo *= 2;
    if (bm % l->tmo || l->nt % (bm / l->tmo))
        return -1;
    l->txo = l->nt / (bm / l->tmo);
    l->dp = round_up(d, 4 * l->txo);
    l->oco = l->dp / 4 / l->txo;
    /* S tile, O tile, the Q operands, one K float4, the P float4s. */
    l->regs = l->tms * l->tns + 4 * l->tmo * l->oco + 4 * l->tms + 4 + 4 * l->tmo;
    return 0;
}

/* Q, K and V (or K and V in turn) rows of DP + 4 floats, P rows of BN +
 * PPAD, the partial maxima and sums, the rescales and maxima. */
static size_t local_bytes(size_t bm, size_t bn, const struct layout *l, int kv_shared)
{
    const size_t ppad = l->txs < 32 ? l->txs : 4;
    return 16 * (bm + (kv_shared ? 1 : 2) * bn) * (l->dp / 4 + 1) + 4 * bm * (bn + ppad) +
           4 * bm * l->txs + 8 * bm;
}

/* CPUs have their own kernel; decoding (a few packed rows per key/value
 * head) would leave most of a tile's rows empty. */
static const char *not_preferred(const struct device_facts *dev, const struct attention_call *c)
{
    if (dev->is_cpu)
        return "shaped for GPUs";
    const clattn_shape *s = c->shape;
    if (s->heads / s->kv_heads * s->q_len < 32)
        return "fewer than 32 rows per key/value head";
    return NULL;
}

/* In the defaults' order of preference: the largest square micro-tiles
 * first (8 x 8 for both GEMMs), then tiles for devices with less local
 * memory or fewer registers. */
static const struct fused_tiles candidates[] = {
    { 128, 128, 8 }, { 64, 128, 8 }, { 128, 64, 4 }, { 64, 64, 4 },  { 128, 32, 4 },
    { 64, 32, 4 },   { 128, 64, 8 }, { 32, 64, 4 },  { 32, 32, 2 },  { 16, 32, 1 },
};

/* The H200's fastest (docs/PERFORMANCE.md): 128 x 64 with 8 rows per item
 * at d <= 64, 128 x 128 x 8 above (K and V then share a tile); devices
 * that cannot take them fall back to the candidates in order. */
static void default_tiles(const struct device_facts *dev, const clattn_shape *s, size_t rows,
                          const struct fused_plan *plan, struct fused_tiles *out)
{
    (void)dev;
    (void)plan;
    (void)rows;
    *out = s->head_dim <= 64 ? (struct fused_tiles){ 128, 64, 8 }
                             : (struct fused_tiles){ 128, 128, 8 };
}

static int configure(const struct device_facts *dev, const clattn_shape *s,
                     struct fused_plan *plan)
{
    const size_t bm = plan->tiles.bm, bn = plan->tiles.bn;
    if (!plan->tiles.tm)
        plan->tiles.tm = bm >= 16 ? bm / 16 : 1;
    const size_t tm = plan->tiles.tm;
    struct layout l;
    if (bm == 0 || bn < 16 || bn > 256 || bn % 4 || derive(bm, bn, tm, s->head_dim, &l))
        return clattn_fail(CLATTN_EINVAL, "tiled tile %zux%zux%zu: BN must be a multiple of 4 "
                           "from 16 to 256 (of 8 from 64) and TM divide BM", bm, bn, tm);
    const size_t max_wg = dev->max_wg < 1024 ? dev->max_wg : 1024;
    /* The tiles are static __local arrays: NVIDIA takes far more of them
     * than the 48 KiB it reports. Leave room for what the compiler adds. */
    const size_t budget = dev->static_local_mem > 1024 ? dev->static_local_mem - 1024
                                                       : dev->static_local_mem;
    /* PoCL 3.1 (LLVM 15) miscompiled 8 rows per work-item in the first
     * version of this kernel: the state of every item's first row came out
     * as garbage (oclgrind ran the same source right; removing any of
     * several unroll pragmas hid it). clattn tune's check found it; it is
     * refused there rather than trusted. */
    if (dev->is_pocl && tm >= 8)
        return clattn_fail(CLATTN_EUNSUPPORTED, "tiled tile %zux%zux%zu: PoCL miscompiles 8 or "
                           "more rows per work-item", bm, bn, tm);
    if (l.nt > max_wg)
        return clattn_fail(CLATTN_EUNSUPPORTED, "tiled tile %zux%zux%zu: %zu work-items per "
                           "group, the device takes %zu", bm, bn, tm, l.nt, max_wg);
    if (l.regs > TILE_REGS_MAX)
        return clattn_fail(CLATTN_EUNSUPPORTED, "tiled tile %zux%zux%zu holds %zu floats per "
                           "work-item at d=%zu (at most %d)", bm, bn, tm, l.regs, s->head_dim,
                           TILE_REGS_MAX);
    int shared = plan->params[PARAM_KV_SHARED];
    if (shared == PARAM_AUTO)
        shared = local_bytes(bm, bn, &l, 0) > budget;
    /* PoCL 3.1 drops the stores into the shared tile (every score reads 0;
     * right with -cl-opt-disable and under oclgrind): K and V apart there. */
    if (dev->is_pocl && shared)
        return clattn_fail(CLATTN_EUNSUPPORTED, "tiled tile %zux%zux%zu: PoCL miscompiles K "
                           "and V in one local tile", bm, bn, tm);
    if (local_bytes(bm, bn, &l, shared) > budget)
        return clattn_fail(CLATTN_EUNSUPPORTED, "tiled tile %zux%zux%zu needs %zu B of local "
                           "memory for d=%zu; the device has %llu B", bm, bn, tm,
                           local_bytes(bm, bn, &l, shared), s->head_dim,
                           (unsigned long long)budget);
    *FUSED_PLAN_OWN(plan, struct tiled_own) = (struct tiled_own){ l.txs, l.tmo, l.dp, shared };
    plan->local = l.nt;
    return CLATTN_OK;
}

static void options(const clattn_shape *s, const struct fused_plan *plan, char *buf, size_t cap)
{
    const struct tiled_own *own = FUSED_PLAN_OWN(plan, const struct tiled_own);
    snprintf(buf, cap, "-DD=%zu -DDP=%zu -DBM=%zu -DBN=%zu -DTMS=%zu -DTXS=%zu -DTMO=%zu "
             "-DKV_SHARED=%d", s->head_dim, own->dp, plan->tiles.bm, plan->tiles.bn,
             plan->tiles.tm, own->txs, own->tmo, own->kv_shared);
}

const struct fused_kernel fused_tiled = {
    .name = "tiled",
    .id = CLATTN_FUSED_TILED,
    .file = "fused/tiled.cl",
    .summary = "register-tiled like a GEMM, OpenCL C 1.2: GPUs of any vendor",
    /* Every variant, snippets and the KV cache's forms included (built
     * from source: quantized and paged K/V through cl/include/kv_cache.clh,
     * packed batches); V's head dimension is d: its tiles and layouts are
     * cut to one d. */
    .variants = FUSED_F_VARIANTS,
    .dtypes = FUSED_DTYPE(CLATTN_F32) | FUSED_DTYPE(CLATTN_F16) | FUSED_DTYPE(CLATTN_BF16),
    .not_preferred = not_preferred,
    FUSED_CANDIDATES(candidates),
    .default_tiles = default_tiles,
    FUSED_PARAMS(param_defs),
    .configure = configure,
    .options = options,
};
