/* SPDX-License-Identifier: MIT */
/* The register-tiled fused kernel (cl/fused_tiled.cl): OpenCL C 1.2, shaped
 * like a GEMM for GPUs of any vendor. A work-group of (BM / TM) x TX
 * work-items owns BM packed rows; each work-item a TM x (BN / TX) tile of
 * scores and TM rows x DP / TX columns of the output, in registers. */
#include <stdio.h>

#include "core/error.h"
#include "fused/kernel.h"

/* Registers a work-item may hold in its two tiles: past this every GPU we
 * know spills (NVIDIA's limit is 255 per thread, with addresses and loop
 * state beside them). */
#define TILE_REGS_MAX 192

static size_t round_up(size_t x, size_t m)
{
    return (x + m - 1) / m * m;
}

/* Work-items sharing a row: 8 for blocks of 32 or 64 keys (4 or 8 scores
 * each), 16 from 128 keys, 4 for 16. */
static size_t threads_per_row(size_t bn)
{
    return bn >= 128 ? 16 : bn >= 32 ? 8 : 4;
}

/* Q, K and V rows of DP + 4 floats, P rows of BN + 8, the TX partial
 * maxima and sums of each row. */
static size_t local_bytes(size_t bm, size_t bn, size_t dp, size_t tx)
{
    return 16 * (bm + 2 * bn) * (dp / 4 + 1) + 4 * bm * (bn + 8) + 4 * bm * tx;
}

static const char *cannot_run(const struct device_facts *dev, const struct attention_call *c)
{
    (void)dev;
    (void)c;
    return NULL; /* OpenCL C 1.2: any device; the tiles decide the rest */
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

/* In the defaults' order of preference: 64 x 64 with 4 rows per work-item
 * (128 work-items, ~120 KiB of local memory at d = 128), then smaller
 * tiles for devices with 64 KiB or less. */
static const struct fused_tiles candidates[] = {
    { 64, 64, 4 },  { 128, 64, 4 }, { 128, 64, 8 }, { 64, 128, 4 }, { 64, 64, 2 },
    { 64, 32, 4 },  { 128, 32, 4 }, { 64, 32, 2 },  { 32, 64, 2 },  { 32, 32, 2 },
    { 32, 32, 1 },  { 16, 32, 1 },
};

static int configure(const struct device_facts *dev, const clattn_shape *s,
                     struct fused_plan *plan)
{
    const size_t bm = plan->tiles.bm, bn = plan->tiles.bn;
    if (!plan->tiles.tm)
        plan->tiles.tm = bm >= 16 ? bm / 16 : 1;
    const size_t tm = plan->tiles.tm, tx = threads_per_row(bn);
    const size_t max_wg = dev->max_wg < 1024 ? dev->max_wg : 1024;
    const size_t budget = dev->local_mem > 1024 ? dev->local_mem - 1024 : dev->local_mem;
    if (bm == 0 || bn < 16 || bn > 256 || bn % tx || bm % tm)
        return clattn_fail(CLATTN_EINVAL, "tiled tile %zux%zux%zu: BN must be a multiple of %zu "
                           "from 16 to 256 and BM a multiple of TM", bm, bn, tm, tx);
    const size_t nt = bm / tm * tx, dp = round_up(s->head_dim, 4 * tx);
    const size_t regs = tm * (bn / tx) + tm * dp / tx;
    /* PoCL 3.1 (LLVM 15) miscompiles TM = 8: the state of every work-item's
     * first row comes out as garbage (oclgrind runs the same source right;
     * removing any of several unroll pragmas hides it). clattn tune's check
     * found it; refuse it there rather than hand back wrong results. */
    if (dev->is_pocl && tm >= 8)
        return clattn_fail(CLATTN_EUNSUPPORTED, "tiled tile %zux%zux%zu: PoCL miscompiles 8 or "
                           "more rows per work-item", bm, bn, tm);
    if (nt > max_wg)
        return clattn_fail(CLATTN_EUNSUPPORTED, "tiled tile %zux%zux%zu: %zu work-items per "
                           "group, the device takes %zu", bm, bn, tm, nt, max_wg);
    if (regs > TILE_REGS_MAX)
        return clattn_fail(CLATTN_EUNSUPPORTED, "tiled tile %zux%zux%zu holds %zu floats per "
                           "work-item at d=%zu (at most %d)", bm, bn, tm, regs, s->head_dim,
                           TILE_REGS_MAX);
    if (local_bytes(bm, bn, dp, tx) > budget)
        return clattn_fail(CLATTN_EUNSUPPORTED, "tiled tile %zux%zux%zu needs %zu B of local "
                           "memory for d=%zu; the device has %llu B", bm, bn, tm,
                           local_bytes(bm, bn, dp, tx), s->head_dim,
                           (unsigned long long)budget);
    plan->tx = tx;
    plan->padded_dim = dp;
    plan->local = nt;
    return CLATTN_OK;
}

static void options(const clattn_shape *s, const struct fused_plan *plan, char *buf, size_t cap)
{
    snprintf(buf, cap, "-DD=%zu -DDP=%zu -DBM=%zu -DBN=%zu -DTM=%zu -DTX=%zu%s", s->head_dim,
             plan->padded_dim, plan->tiles.bm, plan->tiles.bn, plan->tiles.tm, plan->tx,
             s->dtype == CLATTN_F16 ? " -DDTYPE_F16" : "");
}

const struct fused_kernel fused_tiled = {
    .name = "tiled",
    .id = CLATTN_FUSED_TILED,
    .file = "fused_tiled.cl",
    .summary = "register-tiled like a GEMM, OpenCL C 1.2: GPUs of any vendor",
    .cannot_run = cannot_run,
    .not_preferred = not_preferred,
    .candidates = candidates,
    .n_candidates = sizeof candidates / sizeof candidates[0],
    .configure = configure,
    .options = options,
};
