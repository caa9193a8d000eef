/* SPDX-License-Identifier: MIT */
/* The tensor-core decode kernel (cl/fused/nv_decode.cl): NVIDIA sm_80+,
 * fp16, a few packed rows per KV head against many keys. One warp per
 * work-group, BM = 16 x MT packed rows; K and V straight into registers
 * (one 16-row tile of 16-key blocks, d <= 128) or through a ring of STAGES
 * local buffers. AUTO takes it when the packed rows of a KV head fit one
 * group; wider (prefill) shapes read K and V fewer times with nv-mma. */
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "fused/kernel.h"
#include "fused/nv_mma.h"

/* Ring bytes to aim for: 3 stages of 32 keys at d = 128, four groups per
 * Hopper SM. The H200's sweep (docs/PERFORMANCE.md) found 2 to 8 stages and
 * 16 to 64 keys within a few percent of each other; this one was fastest on
 * four of the five decode shapes. */
#define RING_BYTES (48 * 1024)
#define STAGES_MAX 8

static size_t block_bytes(size_t bn, size_t d)
{
    return 2 * bn * d * 2; /* K and V, fp16 */
}

static size_t local_bytes(size_t bm, size_t bn, size_t d, size_t stages)
{
    return bm * d * 2 + stages * block_bytes(bn, d);
}

/* CLATTN_NV_DECODE_STAGES=<2..8> sets the ring depth, for measuring it. */
static size_t ring_stages(size_t bn, size_t d)
{
    const char *env = getenv("CLATTN_NV_DECODE_STAGES");
    if (env && atoi(env) >= 2 && atoi(env) <= STAGES_MAX)
        return (size_t)atoi(env);
    size_t stages = RING_BYTES / block_bytes(bn, d);
    return stages < 2 ? 2 : stages > STAGES_MAX ? STAGES_MAX : stages;
}

/* Measurement switches: CLATTN_NV_DECODE_DIRECT=0|1 K and V through the
 * local ring or into registers (16x16 tiles up to d = 128),
 * CLATTN_NV_DECODE_MERGE=0|1 leaves a split's chunks
 * to cl/fused/combine.cl (a second launch) or merges them in the kernel whatever
 * their count, CLATTN_NV_DECODE_STEAL=0|1 one chunk per group or chunks
 * taken in turn, CLATTN_NV_DECODE_CB=<1..64> the blocks of a chunk taken. */
static int env_flag(const char *name, int otherwise)
{
    const char *env = getenv(name);
    return env && (env[0] == '0' || env[0] == '1') ? env[0] == '1' : otherwise;
}

/* K and V go straight into registers (cl/fused/nv_decode.cl's DIRECT) for
 * one 16-row tile of 16-key blocks up to d = 128: the H200 streams one warp's
 * loads into registers at 4.46-4.51 TB/s, into local memory at 4.33 at most
 * by any copy and 4.15-4.16 by the ring's own in the same call
 * (tests/perf/probe_stream, docs/PERFORMANCE.md). The next block's
 * fragments and the accumulators take 255 registers (NVIDIA's compiler,
 * call 6 of docs/h200/2026-12-01f): 8 groups per SM. */
#define DIRECT_BN 16
#define DIRECT_GROUPS_PER_CU 8

static int direct_wanted(size_t bm, size_t d)
{
    return bm == 16 && d <= 128 && env_flag("CLATTN_NV_DECODE_DIRECT", 1);
}

static size_t max_rows(size_t d)
{
    return d <= 128 ? 32 : 16; /* two 16-row tiles' accumulators fit up to d = 128 */
}

static const char *not_preferred(const struct device_facts *dev, const struct attention_call *c)
{
    (void)dev;
    const clattn_shape *s = c->shape;
    if (s->heads / s->kv_heads * s->q_len > max_rows(s->head_dim))
        return "its rows would take several groups per KV head: nv-mma's tiles read K and V "
               "fewer times";
    return NULL;
}

static const struct fused_tiles candidates[] = {
    { 16, 32, 0 }, { 16, 16, 0 }, { 16, 64, 0 }, { 16, 128, 0 }, { 32, 32, 0 }, { 32, 64, 0 },
};

static void default_tiles(const struct device_facts *dev, const clattn_shape *s, size_t rows,
                          struct fused_tiles *out)
{
    (void)dev;
    out->bm = rows <= 16 || s->head_dim > 128 ? 16 : 32;
    out->bn = direct_wanted(out->bm, s->head_dim) ? DIRECT_BN : 32;
    out->tm = 0;
}

static int configure(const struct device_facts *dev, const clattn_shape *s,
                     struct fused_plan *plan)
{
    const size_t bm = plan->tiles.bm, bn = plan->tiles.bn, d = s->head_dim;
    if ((bm != 16 && bm != 32) || (bm == 32 && d > 128) || bn % 16 || bn == 0 || bn > 128)
        return clattn_fail(CLATTN_EINVAL, "decode tiles need BM = 16 (or 32 up to d = 128) and "
                           "BN a multiple of 16 up to 128 (asked %zux%zu for d=%zu)", bm, bn, d);
    plan->kv_in_registers = bn == DIRECT_BN && direct_wanted(bm, d);
    const size_t stages = plan->kv_in_registers ? 2 : ring_stages(bn, d);
    if (local_bytes(bm, bn, d, plan->kv_in_registers ? 0 : stages) > dev->static_local_mem)
        return clattn_fail(CLATTN_EUNSUPPORTED, "decode tile %zux%zu with %zu stages needs %zu B "
                           "of local memory for d=%zu; the device takes %llu B", bm, bn, stages,
                           local_bytes(bm, bn, d, stages), d,
                           (unsigned long long)dev->static_local_mem);
    plan->m_tiles = bm / 16;
    plan->warps = 1;
    plan->local = 32;
    plan->stages = stages;
    plan->padded_dim = d;
    return CLATTN_OK;
}

/* Groups resident per SM: local memory bounds them (each reserves 1 KiB
 * more), and an SM holds at most 32. */
static size_t groups_per_cu(const struct device_facts *dev, const clattn_shape *s,
                            const struct fused_plan *plan)
{
    if (plan->kv_in_registers)
        return DIRECT_GROUPS_PER_CU;
    const size_t bytes = local_bytes(plan->tiles.bm, plan->tiles.bn, s->head_dim, plan->stages);
    const size_t n = (size_t)(dev->static_local_mem + 1024) / (bytes + 1024);
    return n < 1 ? 1 : n > 32 ? 32 : n;
}

static void options(const clattn_shape *s, const struct fused_plan *plan, char *buf, size_t cap)
{
    snprintf(buf, cap, "-DD=%zu -DBN=%zu -DMT=%zu -DSTAGES=%zu -DMERGE=%d -DSTEAL=%d -DDIRECT=%d",
             s->head_dim, plan->tiles.bn, plan->m_tiles, plan->stages, plan->merges_chunks,
             plan->steals_chunks, plan->kv_in_registers);
}

/* Chunks the kernel merges itself by default: one warp, a lane per
 * chunk, MERGE_BATCH chunks' partial O in flight at a time
 * (cl/include/nv_chunk_merge.clh); past this many, cl/fused/combine.cl's row per
 * work-group finishes sooner (66 chunks: 0.1629 ms merged against 0.1499,
 * call 6 of docs/h200/2026-12-01d). The kernel merges at most
 * MERGE_SPLITS_LIMIT (a lane of its warp per chunk), whatever the switch
 * says. */
#define MERGE_SPLITS_DEFAULT 16
#define MERGE_SPLITS_LIMIT 32

/* With a split, the groups of a row tile take its key chunks in turn
 * (faster groups take more), chunks of CB blocks, CHUNK_KEYS keys, at
 * least the ring's STAGES - 1 blocks (the kernel's walk keeps its copies
 * within one chunk of its math). Smaller chunks even out the groups' ends:
 * on the H200 at B = 8 (call 4 of docs/h200/2026-12-01d), 2 blocks of 32
 * keys ran 0.6-1.2% faster than 8 and 0.6-4.8% faster than 16 at Nk =
 * 4096, 16384 and 65536. */
#define CHUNK_KEYS 64
static void plan_chunks(struct fused_plan *plan, size_t blocks)
{
    const size_t splits = plan->splits, floor_cb = plan->stages - 1;
    size_t cb = CHUNK_KEYS / plan->tiles.bn;
    const char *env = getenv("CLATTN_NV_DECODE_CB"); /* for measuring it */
    if (env && atoi(env) >= 1 && atoi(env) <= 64)
        cb = (size_t)atoi(env);
    cb = cb < floor_cb ? floor_cb : cb;
    plan->steals_chunks = env_flag("CLATTN_NV_DECODE_STEAL", 1) && (blocks + cb - 1) / cb > splits;
    if (plan->steals_chunks)
        plan->split_keys = cb * plan->tiles.bn;
    plan->merges_chunks = env_flag("CLATTN_NV_DECODE_MERGE", splits <= MERGE_SPLITS_DEFAULT) &&
                          splits <= MERGE_SPLITS_LIMIT;
}

static const clattn_shape probe_shape = { 1, 4, 1, 1, 64, 64, CLATTN_F16 };

const struct fused_kernel fused_nv_decode = {
    .name = "nv-decode",
    .id = CLATTN_FUSED_NV_DECODE,
    .file = "fused/nv_decode.cl",
    .summary = "NVIDIA tensor cores (sm_80+) for decoding: one warp per KV head's packed rows, "
               "K/V into registers (d <= 128) or through a cp.async ring; fp16, d = 64/128/256",
    .cannot_run = nv_mma_cannot_run,
    .not_preferred = not_preferred,
    .probe_shape = &probe_shape,
    .candidates = candidates,
    .n_candidates = sizeof candidates / sizeof candidates[0],
    .default_tiles = default_tiles,
    .configure = configure,
    .groups_per_cu = groups_per_cu,
    .options = options,
    .takes_chunk_counter = 1,
    .plan_chunks = plan_chunks,
};
