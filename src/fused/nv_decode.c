/* SPDX-License-Identifier: MIT */
/* The tensor-core decode kernel (cl/fused/nv_decode.cl): NVIDIA sm_80+,
 * fp16, a few packed rows per KV head against many keys. One warp per
 * work-group, BM = 16 x MT packed rows; K and V straight into registers
 * (one 16-row tile of 16-key blocks, d <= 128) or through a ring of STAGES
 * local buffers. AUTO takes it when the packed rows of a KV head fit one
 * group; wider (prefill) shapes read K and V fewer times with nv-mma.
 * Paged and packed caches on every path; quantized ones (q8_0, q4_0,
 * fp8 e4m3) on the register paths, converted into the fp16 operands: by
 * default the staged one (direct=2), whose ring keeps a quantized cache's
 * bytes in flight. */
#include <stdio.h>

#include "core/error.h"
#include "core/kv_type.h"
#include "fused/kernel.h"
#include "fused/nv_mma.h"
#include "../../cl/include/nv_kv_stage_pitch.h" /* the stages' pitch, shared with the kernel */

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

/* Its parameters (clattn_options.kernel_params, clattn tune): the ring,
 * the register path, and how a split's chunks are taken and combined. */
enum { PARAM_STAGES, PARAM_DIRECT, PARAM_MERGE, PARAM_STEAL, PARAM_CHUNK_BLOCKS, PARAM_PREFETCH,
       N_PARAMS };
static const struct param_def param_defs[N_PARAMS] = {
    [PARAM_STAGES] = { "stages", 2, STAGES_MAX, NULL,
                       "K/V blocks in the local ring (by default about 48 KiB of ring; "
                       "direct=2: 20 KiB)" },
    [PARAM_DIRECT] = { "direct", 0, 2, NULL,
                       "1: K and V straight into the mma fragments (16-row tiles of 16-key "
                       "blocks up to d = 128, the default there for fp16), 2: the rows as "
                       "stored through a ring of stages, the fragments read out of it (16x16 "
                       "or 16x32 tiles up to d = 128, the default for a quantized cache), 0: "
                       "through the ring into ldmatrix" },
    [PARAM_MERGE] = { "merge", 0, 1, NULL,
                      "1: a split's last group combines its chunks (up to 32), 0: "
                      "cl/fused/combine.cl does (by default the kernel up to 16 chunks)" },
    [PARAM_STEAL] = { "steal", 0, 1, NULL,
                      "1: a row tile's groups take its chunks in turn (the default), 0: one "
                      "chunk per group" },
    [PARAM_CHUNK_BLOCKS] = { "chunk_blocks", 1, 64, NULL,
                             "key blocks of a chunk taken in turn (by default 64 keys' worth, "
                             "256 for a q8_0 / q4_0 cache, at least the ring depth less one)" },
    [PARAM_PREFETCH] = { "prefetch", 0, 8, NULL,
                         "register path: the key block this far ahead asked of the L2 (by "
                         "default 2 for a q8_0 / q4_0 cache, else 0: none)" },
};

/* What configure derives. */
struct nv_decode_own {
    size_t m_tiles, stages;
    int direct; /* K and V into registers: 1 straight, 2 staged */
};
FUSED_PLAN_OWN_CHECK(struct nv_decode_own);

static size_t ring_stages(const struct fused_plan *plan, size_t bn, size_t d)
{
    if (plan->params[PARAM_STAGES] != PARAM_AUTO)
        return (size_t)plan->params[PARAM_STAGES];
    size_t stages = RING_BYTES / block_bytes(bn, d);
    return stages < 2 ? 2 : stages > STAGES_MAX ? STAGES_MAX : stages;
}

/* Parameter p of the plan, or `otherwise` where the kernel chooses. */
static int param_or(const struct fused_plan *plan, int p, int otherwise)
{
    return plan->params[p] == PARAM_AUTO ? otherwise : plan->params[p];
}

/* K and V go straight into registers (cl/fused/nv_decode.cl's DIRECT) for
 * one 16-row tile of 16-key blocks up to d = 128: the H200 streams one warp's
 * loads into registers at 4.46-4.51 TB/s, into local memory at 4.33 at most
 * by any copy and 4.15-4.16 by the ring's own, measured side by side by
 * tests/perf/probe_stream (docs/PERFORMANCE.md). The next block's fragments
 * and the accumulators take 255 registers (NVIDIA's compiler, build option
 * -cl-nv-verbose): 8 groups per SM. */
#define DIRECT_BN 16
#define DIRECT_GROUPS_PER_CU 8

static int direct_fits(size_t bm, size_t d)
{
    return bm == 16 && d <= 128;
}

/* The staged register path (DIRECT=2): the cache's rows as stored go
 * through a ring of STAGES blocks (cp.async, plan->kv_copy bytes a piece)
 * and each block's fragments are read out of it when the math takes them,
 * so the bytes in flight are the ring's, not the registers' (DIRECT=1
 * holds a block of fragments: a q8_0 block has half of fp16's bytes in
 * them, a q4_0 block a quarter). The row pitch is cl/include/
 * nv_kv_stage.clh's KV_STAGE_PITCH. */
static int staged_fits(size_t bm, size_t bn, size_t d)
{
    return bm == 16 && d <= 128 && (bn == 16 || bn == 32);
}

/* A staged row of d values of `type` (fp16 or bf16 where stored plain). */
static size_t stage_pitch(int type, size_t d)
{
    uint64_t bytes = 0;
    kv_bytes((clattn_kv_type)type, CLATTN_F16, d, &bytes); /* d <= 128: no overflow */
    return NV_KV_STAGE_PITCH((size_t)bytes);
}

/* About 16 KiB of stages: with Q's tile, eight groups (the registers'
 * bound) fit an SM's local memory easily, each with its ring less one
 * block in flight (q8_0 at d = 128: 2 of 3 stages of 4.5 KiB). On an H200
 * decoding B = 8, H = 32, Hkv = 8, Nk = 16384, d = 128, q8_0 took 0.1444 ms
 * with 3 stages, 0.1460 with 4, 0.1516 with 6 and 0.1728 with 8 (16x16;
 * fewer groups fit and the split shrinks); q4_0 0.1062, 0.1080, 0.1097
 * and 0.1119 (tests/perf/time_fused --params direct=2,stages=N, with the
 * fragments then read in 16-bit loads: 0.1312 at 4 stages now). */
#define STAGED_RING_BYTES (16 * 1024)

/* K or V stored quantized. */
static int kv_quantized(const struct fused_plan *plan)
{
    return plan->k_type != CLATTN_KV_DTYPE || plan->v_type != CLATTN_KV_DTYPE;
}

/* ... in blocks of 32 values with a scale (q8_0, q4_0). */
static int kv_blocks(const struct fused_plan *plan)
{
    return plan->k_type == CLATTN_KV_Q8_0 || plan->k_type == CLATTN_KV_Q4_0 ||
           plan->v_type == CLATTN_KV_Q8_0 || plan->v_type == CLATTN_KV_Q4_0;
}

/* The register path a cache takes by default: the staged one for q8_0 and
 * q4_0 (K or V), whose fragments carry too few bytes to keep the stream
 * in flight, where the rows allow it (plan->kv_copy); the direct one for
 * fp16 and fp8. On an H200 (B = 8, H = 32, Hkv = 8, Nk = 16384, d = 128,
 * ms): q8_0 0.1907 direct, 0.1312 staged; q4_0 0.3460 and 0.0871 (16x32
 * tiles); fp8 0.1265 and 0.1379; fp16 pages of 16 keys 0.2117 and
 * 0.2152, of 256 0.1833 and 0.1950. An fp8 cache in tiles direct=1 does
 * not take goes staged too. */
static int default_direct(const struct fused_plan *plan, size_t bm, size_t bn, size_t d)
{
    if (plan->params[PARAM_DIRECT] != PARAM_AUTO)
        return plan->params[PARAM_DIRECT];
    const int direct = bn == DIRECT_BN && direct_fits(bm, d);
    if (kv_quantized(plan) && plan->kv_copy && staged_fits(bm, bn, d) &&
        (kv_blocks(plan) || !direct))
        return 2;
    return direct;
}

static size_t max_rows(size_t d)
{
    return d <= 128 ? 32 : 16; /* two 16-row tiles' accumulators fit up to d = 128 */
}

/* The tensor-core tile's conditions, and a quantized cache's: the register
 * path's tile, fp16 operands, and fp8's conversion instruction. */
static const char *cannot_run(const struct device_facts *dev, const struct attention_call *c)
{
    const char *why = nv_mma_cannot_run(dev, c);
    if (why || !(c->flags & FUSED_F_KV_QUANT))
        return why;
    const clattn_shape *s = c->shape;
    if (s->dtype != CLATTN_F16)
        return "converts a quantized cache into fp16 operands: fp16 queries only";
    if (s->head_dim > 128 || s->heads / s->kv_heads * s->q_len > 16)
        return "reads a quantized cache on its register path only: d <= 128 and at most 16 "
               "packed rows per KV head";
    if ((c->opts->k_type == CLATTN_KV_FP8_E4M3 || c->opts->v_type == CLATTN_KV_FP8_E4M3) &&
        dev->nv_cc < 89)
        return "converts fp8 e4m3 with cvt.f16x2.e4m3x2: compute capability 8.9 or newer";
    return NULL;
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

/* A q4_0 cache on the staged path takes blocks of 32 keys: on an H200
 * (H = 32, Hkv = 8, d = 128) 0.0871 ms against 0.0986 with 16 at B = 8,
 * Nk = 16384, 0.2886 against 0.3231 at Nk = 65536, 0.0991 against 0.1054
 * at B = 1, Nk = 131072, 0.1538 against 0.1712 at B = 64, Nk = 4096; q8_0
 * and fp8 ran slower with them (0.1464 against 0.1314 for q8_0 at
 * B = 8, Nk = 16384). */
static void default_tiles(const struct device_facts *dev, const clattn_shape *s, size_t rows,
                          const struct fused_plan *plan, struct fused_tiles *out)
{
    (void)dev;
    const size_t d = s->head_dim;
    out->bm = rows <= 16 || d > 128 ? 16 : 32;
    out->bn = direct_fits(out->bm, d) && plan->params[PARAM_DIRECT] != 0 ? DIRECT_BN : 32;
    if (default_direct(plan, out->bm, out->bn, d) == 2 &&
        (plan->k_type == CLATTN_KV_Q4_0 || plan->v_type == CLATTN_KV_Q4_0))
        out->bn = 32;
    out->tm = 0;
}

static int configure(const struct device_facts *dev, const clattn_shape *s,
                     struct fused_plan *plan)
{
    const size_t bm = plan->tiles.bm, bn = plan->tiles.bn, d = s->head_dim;
    if ((bm != 16 && bm != 32) || (bm == 32 && d > 128) || bn % 16 || bn == 0 || bn > 128)
        return clattn_fail(CLATTN_EINVAL, "decode tiles need BM = 16 (or 32 up to d = 128) and "
                           "BN a multiple of 16 up to 128 (asked %zux%zu for d=%zu)", bm, bn, d);
    const int direct = default_direct(plan, bm, bn, d);
    if (direct == 1 && !(bn == DIRECT_BN && direct_fits(bm, d)))
        return clattn_fail(CLATTN_EUNSUPPORTED, "decode tile %zux%zu: direct=1 takes 16x%d "
                           "tiles up to d = 128 (d=%zu)", bm, bn, DIRECT_BN, d);
    if (direct == 2 && !staged_fits(bm, bn, d))
        return clattn_fail(CLATTN_EUNSUPPORTED, "decode tile %zux%zu: direct=2 takes 16x16 or "
                           "16x32 tiles up to d = 128 (d=%zu)", bm, bn, d);
    if (direct == 2 && !plan->kv_copy)
        return clattn_fail(CLATTN_EUNSUPPORTED, "direct=2 copies K and V rows in pieces of 4, 8 "
                           "or 16 bytes: this cache's rows start on 2-byte boundaries (its "
                           "offset or strides as stored)");
    if (!direct && kv_quantized(plan))
        return clattn_fail(CLATTN_EUNSUPPORTED, "decode tile %zux%zu: a quantized cache takes "
                           "a register path (16x%d tiles up to d = 128, direct=1 or 2)", bm, bn,
                           DIRECT_BN);
    size_t stages = 2, local = local_bytes(bm, bn, d, 0);
    if (direct == 0) {
        stages = ring_stages(plan, bn, d);
        local = local_bytes(bm, bn, d, stages);
    } else if (direct == 2) {
        const size_t stage = bn * (stage_pitch(plan->k_type, d) +
                                   stage_pitch(plan->v_type, plan->head_dim_v));
        stages = (size_t)param_or(plan, PARAM_STAGES, (int)(STAGED_RING_BYTES / stage));
        stages = stages < 2 ? 2 : stages > STAGES_MAX ? STAGES_MAX : stages;
        local += stages * stage;
    }
    if (local > dev->static_local_mem)
        return clattn_fail(CLATTN_EUNSUPPORTED, "decode tile %zux%zu with %zu stages needs %zu B "
                           "of local memory for d=%zu; the device takes %llu B", bm, bn, stages,
                           local, d, (unsigned long long)dev->static_local_mem);
    *FUSED_PLAN_OWN(plan, struct nv_decode_own) = (struct nv_decode_own){ bm / 16, stages, direct };
    plan->local = 32;
    plan->fixed_blocks = stages + 2;
    /* Groups resident per SM: the register path's (its registers bound
     * them), else local memory's (each group reserves 1 KiB more); an SM
     * holds at most 32. */
    size_t ring = (size_t)(dev->static_local_mem + 1024) / (local + 1024);
    ring = ring < 1 ? 1 : ring > 32 ? 32 : ring;
    plan->groups_per_cu = direct == 1 ? DIRECT_GROUPS_PER_CU
                          : direct == 2 && ring > DIRECT_GROUPS_PER_CU ? DIRECT_GROUPS_PER_CU
                                                                       : ring;
    return CLATTN_OK;
}

/* A q8_0 / q4_0 cache's register path asks the L2 for the block two ahead
 * and takes chunks of 256 keys, which it then prefetches through: on an
 * H200 decoding B = 8, H = 32, Hkv = 8, Nk = 16384, d = 128, q8_0 took
 * 0.194 ms against 0.227 without (q4_0 0.348 against 0.408); a plain or
 * paged cache ran faster without (fp16 0.135 against 0.160 with
 * prefetch=2, pages of 256 0.181 against 0.199), fp8 within 1%. */
#define BLOCKS_PREFETCH 2
#define BLOCKS_CHUNK_KEYS 256
static int default_prefetch(const struct fused_plan *plan)
{
    return kv_blocks(plan) ? BLOCKS_PREFETCH : 0;
}

static void options(const clattn_shape *s, const struct fused_plan *plan, char *buf, size_t cap)
{
    const struct nv_decode_own *own = FUSED_PLAN_OWN(plan, const struct nv_decode_own);
    snprintf(buf, cap, "-DCLATTN_NV_TANH=1 -DD=%zu -DBN=%zu -DMT=%zu -DSTAGES=%zu -DMERGE=%d "
             "-DSTEAL=%d -DDIRECT=%d -DPREFETCH=%d -DKV_COPY=%d", s->head_dim, plan->tiles.bn,
             own->m_tiles, own->stages, plan->merges_chunks, plan->steals_chunks, own->direct,
             own->direct == 1 ? param_or(plan, PARAM_PREFETCH, default_prefetch(plan)) : 0,
             own->direct == 2 ? plan->kv_copy : 16);
}

/* Chunks the kernel merges itself by default: one warp, a lane per
 * chunk, MERGE_BATCH chunks' partial O in flight at a time
 * (cl/include/nv_chunk_merge.clh); past this many, cl/fused/combine.cl's row per
 * work-group finishes sooner: on an H200, decoding B = 1, H = 32, Hkv = 8,
 * Nk = 131072, d = 128 (66 chunks) took 0.1629 ms with merge=1 against
 * 0.1499 with merge=0. The kernel merges at most MERGE_SPLITS_LIMIT (a
 * lane of its warp per chunk), whatever its parameter says. */
#define MERGE_SPLITS_DEFAULT 16
#define MERGE_SPLITS_LIMIT 32

/* With a split, the groups of a row tile take its key chunks in turn
 * (faster groups take more), chunks of CB blocks, CHUNK_KEYS keys, at
 * least the ring's STAGES - 1 blocks (the kernel's walk keeps its copies
 * within one chunk of its math). Smaller chunks even out the groups' ends:
 * on an H200 decoding B = 8, H = 32, Hkv = 8, d = 128 through the ring
 * (32-key blocks), chunk_blocks=2 ran 0.6-1.2% faster than 8 and 0.6-4.8%
 * faster than 16 at Nk = 4096, 16384 and 65536. */
#define CHUNK_KEYS 64
static void plan_chunks(struct fused_plan *plan, size_t blocks)
{
    const size_t splits = plan->splits;
    const size_t floor_cb = FUSED_PLAN_OWN(plan, struct nv_decode_own)->stages - 1;
    const size_t keys = kv_blocks(plan) && FUSED_PLAN_OWN(plan, struct nv_decode_own)->direct == 1
                            ? BLOCKS_CHUNK_KEYS : CHUNK_KEYS;
    size_t cb = (size_t)param_or(plan, PARAM_CHUNK_BLOCKS, (int)(keys / plan->tiles.bn));
    cb = cb < floor_cb ? floor_cb : cb;
    plan->steals_chunks = param_or(plan, PARAM_STEAL, 1) && (blocks + cb - 1) / cb > splits;
    if (plan->steals_chunks)
        plan->split_keys = cb * plan->tiles.bn;
    plan->merges_chunks = param_or(plan, PARAM_MERGE, splits <= MERGE_SPLITS_DEFAULT) &&
                          splits <= MERGE_SPLITS_LIMIT;
}

static const clattn_shape probe_shape = { 1, 4, 1, 1, 64, 64, CLATTN_F16 };

const struct fused_kernel fused_nv_decode = {
    .name = "nv-decode",
    .id = CLATTN_FUSED_NV_DECODE,
    .file = "fused/nv_decode.cl",
    .summary = "NVIDIA tensor cores (sm_80+) for decoding: one warp per KV head's packed rows, "
               "K/V into registers (d <= 128) or through a cp.async ring; fp16, d = 64/128/256",
    .variants = FUSED_F_VARIANTS,
    .dtypes = FUSED_DTYPE(CLATTN_F16) | FUSED_DTYPE(CLATTN_BF16), /* mma.sync takes both */
    .cannot_run = cannot_run,
    .not_preferred = not_preferred,
    .probe_shape = &probe_shape,
    FUSED_CANDIDATES(candidates),
    .default_tiles = default_tiles,
    FUSED_PARAMS(param_defs),
    .configure = configure,
    .options = options,
    .takes_chunk_counter = 1,
    .plan_chunks = plan_chunks,
};
