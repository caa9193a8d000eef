/* SPDX-License-Identifier: MIT */
/*
 * Fused attention for decoding on NVIDIA tensor cores (compute capability
 * >= 8.0): a few packed query rows (the G = H / Hkv heads of a KV head times
 * the Nq new tokens, at most 16 MT) against a long key range, which is
 * bound by reading K and V once.
 *
 * One warp per work-group owns the packed rows of one (sequence, KV head)
 * over part of the keys; split-KV (fused_grid.clh) spreads a sequence's
 * keys over `splits` groups. What makes it stream: K and V blocks go
 * through a ring of STAGES local buffers filled by cp.async STAGES - 1
 * blocks ahead, so a warp always has that many blocks' loads in flight
 * while it computes on one (the prefill kernel has one tile of K or V in
 * flight). S = Q K^T and O += P V are mma.sync m16n8k16 tiles
 * (cl/include/nv_mma_tile.clh), as in prefill.
 *
 * With a split (cl/include/nv_chunk_merge.clh): STEAL cuts the keys into chunks of
 * split_keys that the tile's groups take in turn from a counter, so a
 * group that streams faster takes more of them and the groups end
 * together; each group still writes one partial result. The last group to
 * finish combines the tile's partials (MERGE) or leaves them to
 * cl/fused/combine.cl, and puts the counters back for the next call.
 *
 * With DIRECT, K and V skip local memory: each lane loads its own
 * fragments of the next block with 16-byte loads into registers while the
 * warp computes on this one. On the H200 one warp per group streams rows
 * into local memory at 4.33 TB/s at most by any copy (cp.async .ca or .cg,
 * cp.async.bulk per row or per tile, 1 to 8 groups per SM; the ring's own
 * cp.async.ca 4.15-4.25) but into registers at 4.46-4.51, as fast as the
 * many-warp read
 * (tests/perf/probe_stream, docs/PERFORMANCE.md). The loads take the
 * fragments' own order: in Q K^T a lane's 16 bytes of a key row are its B
 * fragments of two k-steps (Q's A fragments are read in the same order of
 * d), and in P V the output columns are permuted so that a lane's 8
 * columns of an 8-column tile group are 16 contiguous bytes of a V row
 * (NV_ACC_COL); two keys' words are paired with byte permutes.
 *
 * With DIRECT=2 (the staged register path) the rows go through a ring of
 * STAGES blocks as the cache stores them (cl/include/nv_kv_stage.clh) and
 * each lane reads its fragments out of the block's stage when the math
 * takes them: the bytes in flight are the ring's, where DIRECT=1 holds
 * one block's fragments, which for a q8_0 or q4_0 cache carry a half or
 * a quarter of fp16's bytes. A lane reads whole runs of its rows (a block's
 * scale once, its bytes as words): in Q K^T lane t takes columns
 * [t D / 4, (t + 1) D / 4) of its keys (STAGED_Q_CHUNK orders Q's the same
 * way), in P V lane g supplies V's columns [g D / 8, (g + 1) D / 8)
 * (NV_ACC_COL).
 *
 * K and V as the cache keeps them (cl/include/kv_cache.clh): pages through
 * a block table on every path, q8_0 / q4_0 / fp8 e4m3 on the register
 * paths, whose loads keep the stored bytes and whose math converts them
 * (cl/include/nv_kv_frag.clh).
 *
 * fp16 or bf16 storage (quantized caches: fp16). Build options: -DD=<64|128|256> -DBN=<keys per block,
 * multiple of 16> -DMT=<1|2: 16-row tiles> -DSTAGES=<2..8> -DMERGE=<0|1:
 * combine the chunks here, else cl/fused/combine.cl does> -DSTEAL=<0|1: the
 * groups of a row tile take its chunks in turn> -DDIRECT=<0|1|2: K and V
 * in registers; 1: MT = 1, D <= 128, STAGES = 2; 2: staged, MT = 1,
 * D <= 128, BN = 16 or 32, with -DKV_COPY> -DPREFETCH=<0..8: on
 * DIRECT=1, the key block that far ahead asked of the L2>, and
 * fused_grid.clh's.
 */
#if !defined(D) || !defined(BN) || !defined(MT) || !defined(STAGES) || !defined(MERGE) || \
    !defined(STEAL)
#error "build with -DD -DBN -DMT -DSTAGES -DMERGE -DSTEAL (fused/nv_decode.c) and fused_grid.clh's options"
#endif
#if D != 64 && D != 128 && D != 256
#error "D must be 64, 128 or 256"
#endif
#if BN % 16 || BN < 16 || BN > 128
#error "BN must be a multiple of 16 from 16 to 128"
#endif
#if MT != 1 && MT != 2
#error "MT must be 1 or 2"
#endif
#if STAGES < 2 || STAGES > 8
#error "STAGES must be 2 to 8"
#endif
#ifndef DIRECT
#define DIRECT 0
#endif
#ifndef PREFETCH
#define PREFETCH 0
#endif
#if DIRECT == 1 && (MT != 1 || D > 128 || STAGES != 2)
#error "DIRECT=1 takes MT = 1, D <= 128 and STAGES = 2 (the next block in registers)"
#endif
#if DIRECT == 2 && (MT != 1 || D > 128 || (BN != 16 && BN != 32))
#error "DIRECT=2 takes MT = 1, D <= 128 and BN = 16 or 32"
#endif
#if defined(K_TYPE) && defined(V_TYPE) && (K_TYPE != 0 || V_TYPE != 0) && \
    (!DIRECT || !defined(DTYPE_F16))
#error "quantized K or V take DIRECT = 1 and fp16 storage"
#endif

#define BM (16 * MT)
#define CHUNKS (D / 8)    /* 16-byte chunks per row of Q, K or V */
#define NT_S (BN / 8)     /* 8-column tiles of S */
#define NT_O (D / 8)      /* 8-column tiles of O */
#define KS_QK (D / 16)    /* k-steps of Q K^T */
#define KS_PV (BN / 16)   /* k-steps of P V */
#define TILE (BN * CHUNKS)
/* The query fragments stay in registers where they fit beside the
 * accumulators (one 16-row tile up to d = 128); else each k-step reads its
 * own from the Q tile, as prefill does. */
#define Q_IN_REGS (MT * D <= 128 && !DIRECT)
#if DIRECT == 1
/* Accumulator column c (0, 1) of 8-column tile n in lane quad t: tile
 * group n / 8 covers 64 columns, tile n % 8 its every 8th. */
#define NV_ACC_COL(n, t, c) (64 * ((n) / 8) + 8 * (2 * (t) + (c)) + (n) % 8)
#define NV_ACC_NEIGHBOURS 1 /* tiles n, n + 1 (n even) hold neighbouring columns */
#elif DIRECT == 2
/* Lane g supplies P V's B operand from V columns [g D / 8, (g + 1) D / 8),
 * one run of a row (staged_frags_v), so tile n's column 2 t + c is that
 * lane's n-th. */
#define NV_ACC_COL(n, t, c) (NT_O * (2 * (t) + (c)) + (n))
#define NV_ACC_NEIGHBOURS 1
#endif
/* A row's running max seldom moves once a decode's first blocks are in:
 * the accumulators are rescaled only when it does in some row of the
 * warp (nv_online_softmax). */
#define NV_LAZY_RESCALE 1
#ifndef TRACE
#define TRACE 0
#endif

#include "nv_ptx.clh"
#include "dtype.clh"
#include "fused_grid.clh"
#include "fused_finish.clh"
#include "fused_score.clh"
#include "nv_mma_tile.clh"
#include "nv_chunk_merge.clh"
#include "kv_cache.clh"
#include "nv_kv_frag.clh"
#if DIRECT == 2
#include "nv_kv_stage.clh"
#define PITCH_K KV_STAGE_PITCH(K_TYPE)
#define PITCH_V KV_STAGE_PITCH(V_TYPE)
#endif

/* -DTRACE=1 (through $CLATTN_BUILD_OPTIONS; measurement only): each
 * group prints, when it ends, the global timer (ns) at its start, when its
 * first block was in, after its walk, after its partials were stored,
 * after its arrival and after the merge, with its SM and the chunks it
 * walked: where a decode call's fixed time goes (tools/gpu/decode_timeline.py
 * reads it). */
#if TRACE
static inline ulong trace_now(void)
{
    ulong t;
    asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t) :: "memory");
    return t;
}
static inline uint trace_sm(void)
{
    uint s;
    asm volatile("mov.u32 %0, %%smid;\n" : "=r"(s));
    return s;
}
#define TRACE_AT(x) x = trace_now()
#else
#define TRACE_AT(x) do { } while (0)
#endif

/* Rows of a block one pass of the warp's 32 lanes copies. */
#define RPI (32 / CHUNKS)

/* Copies keys [j0, j0 + BN) of K or V into a ring tile, as nv_load_keys
 * does but through L1 (cp.async.ca: the faster read of the two here), each
 * lane one chunk column with a running address: one 64-bit multiply per
 * block, not one per copy. */
static inline void ring_load(__local uint4 *tile, __global const ushort *head, ulong st, uint j0,
                             uint end, uint lane)
{
    const uint ch = lane % CHUNKS, r = lane / CHUNKS;
    __global const ushort *g = head + (j0 + r) * st + ch * 8;
    const ulong step = RPI * st;
#pragma unroll
    for (uint i = 0; i < BN / RPI; i++) {
        const uint row = r + i * RPI;
        const uint valid = j0 + row < end;
        cp_async16_ca(tile + SWZ(row, ch), valid ? g : head, valid ? 16u : 0u);
        g += step;
    }
}

/* The same for a paged cache: each row's own address through the block
 * table. */
static inline void ring_load_paged(__local uint4 *tile, const struct kv_head *h, uint j0,
                                   uint end, uint lane)
{
    const uint ch = lane % CHUNKS, r = lane / CHUNKS;
    __global const ushort *base = (__global const ushort *)h->base;
#pragma unroll
    for (uint i = 0; i < BN / RPI; i++) {
        const uint row = r + i * RPI;
        const uint valid = j0 + row < end;
        __global const ushort *g = base + kv_row(h, valid ? j0 + row : j0) + ch * 8;
        cp_async16_ca(tile + SWZ(row, ch), g, valid ? 16u : 0u);
    }
}

#if DIRECT
/* The register path's functions take the fragment arrays whole: inlined
 * always, or a compiler that declines (its body grows with a quantized
 * cache's conversions) puts the arrays in local memory. */
#define DJ (D / 32) /* 16-byte loads of a key row per lane in Q K^T */
#define DA (D / 64) /* 64-column groups of O */

#if DIRECT == 1
/* Lane (g, t)'s B fragments of keys [j0, j0 + BN) for Q K^T: of key
 * j0 + 8 nt + g, the 16 bytes at column 32 j + 8 t. Keys at or past `end`
 * are not read (zeros). */
static inline __attribute__((always_inline)) void direct_load_k(k_frag kr[NT_S][DJ], const struct kv_head *h, uint j0,
                                 uint end, uint g, uint t)
{
#pragma unroll
    for (int nt = 0; nt < NT_S; nt++) {
        const uint key = j0 + 8 * nt + g;
#pragma unroll
        for (int j = 0; j < DJ; j++)
            kr[nt][j] = key < end ? K_FRAG_LOAD(h, key, 32 * j + 8 * t) : K_FRAG_ZERO;
    }
}

/* The K and V rows of keys [j, j + BN) asked of the L2 (-DPREFETCH=<n>:
 * the block n ahead of the one loaded into registers), two lanes per key
 * and tensor: the registers hold one block, the L2 brings the next n, so
 * more of the stream is in flight than the registers could hold (a
 * quantized or paged block, fewer bytes or a table read first, needs it
 * most). Keys at or past `end` are not asked for. */
static inline __attribute__((always_inline)) void direct_prefetch(const struct kv_head *kh, const struct kv_head *vh, uint j,
                                   uint end, uint lane)
{
#pragma unroll
    for (uint i = 0; i < (BN + 15) / 16; i++) {
        const uint key = j + 16 * i + lane % 16;
        if (key < end) {
            if (lane < 16)
                nv_prefetch_row(kh, K_TYPE, key, D);
            else
                nv_prefetch_row(vh, V_TYPE, key, D);
        }
    }
}

/* Lane (g, t)'s B fragments of keys [j0, j0 + BN) for P V: of the four
 * keys 16 kk + 2 t + {0, 1, 8, 9} (the k of b0's and b1's halves), the 16
 * bytes at column 64 a + 8 g. */
static inline __attribute__((always_inline)) void direct_load_v(v_frag vr[KS_PV][4][DA], const struct kv_head *h, uint j0,
                                 uint end, uint g, uint t)
{
#pragma unroll
    for (int kk = 0; kk < KS_PV; kk++)
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const uint key = j0 + 16 * kk + 2 * t + (r & 1) + 8 * (r >> 1);
#pragma unroll
            for (int a = 0; a < DA; a++)
                vr[kk][r][a] = key < end ? V_FRAG_LOAD(h, key, 64 * a + 8 * g) : V_FRAG_ZERO;
        }
}

#endif

#if DIRECT == 2
/* The fragments of a staged block (rows zeros past the walk), each lane
 * reading whole runs of its rows. Q K^T sums over d in any order Q and K
 * share: lane t takes columns [t D / 4, (t + 1) D / 4) of its keys (a
 * q8_0 / q4_0 block at d = 128, half of one at 64), k-step (j, h) their
 * 8 j + 4 h + {0..3}, and direct_scores reads Q's chunks in that order
 * (STAGED_Q_CHUNK). P V's columns lane g supplies are its run
 * [g D / 8, (g + 1) D / 8) (NV_ACC_COL). */
#define STAGED_Q_CHUNK(j, t) (DJ * (t) + (j))
static inline __attribute__((always_inline)) void staged_frags_k(k_frag kr[NT_S][DJ],
                                                                 __local const uchar *stage,
                                                                 uint g, uint t)
{
#pragma unroll
    for (int nt = 0; nt < NT_S; nt++)
#pragma unroll
        for (int j = 0; j < DJ; j++)
            kr[nt][j] = kv_stage_run(stage + (8 * nt + g) * PITCH_K, K_TYPE, t * (D / 4), j);
}

static inline __attribute__((always_inline)) void staged_frags_v(v_frag vr[KS_PV][4][DA],
                                                                 __local const uchar *stage,
                                                                 uint g, uint t)
{
#pragma unroll
    for (int kk = 0; kk < KS_PV; kk++)
#pragma unroll
        for (int r = 0; r < 4; r++)
#pragma unroll
            for (int a = 0; a < DA; a++)
                vr[kk][r][a] = kv_stage_run(
                    stage + (16 * kk + 2 * t + (r & 1) + 8 * (r >> 1)) * PITCH_V, V_TYPE,
                    g * (D / 8), a);
}
#endif

#define U4_WORD(u, i) ((i) == 0 ? (u).x : (i) == 1 ? (u).y : (i) == 2 ? (u).z : (u).w)

/* S = Q K^T of the block in kr. k-step (j, h) covers columns 32 j + 8 t +
 * 4 h + {0..3}: halves 4h.. of each lane's 16 bytes, Q's and K's alike. */
static inline __attribute__((always_inline)) void direct_scores(float s[MT][NT_S][4], __local const uint4 *q_tile,
                                 const k_frag kr[NT_S][DJ], uint g, uint t)
{
#pragma unroll
    for (int j = 0; j < DJ; j++) {
        uint4 kx[NT_S];
#pragma unroll
        for (int nt = 0; nt < NT_S; nt++)
            kx[nt] = K_FRAG_HALVES(kr[nt][j]);
#if DIRECT == 2
        const uint qc = STAGED_Q_CHUNK(j, t);
#else
        const uint qc = 4 * j + t;
#endif
        const uint4 q0 = q_tile[SWZ(g, qc)], q1 = q_tile[SWZ(g + 8, qc)];
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const uint a0 = h ? q0.z : q0.x, a2 = h ? q0.w : q0.y;
            const uint a1 = h ? q1.z : q1.x, a3 = h ? q1.w : q1.y;
#pragma unroll
            for (int nt = 0; nt < NT_S; nt++)
                MMA_16816_T(s[0][nt], a0, a1, a2, a3, h ? kx[nt].z : kx[nt].x,
                            h ? kx[nt].w : kx[nt].y);
        }
    }
}

/* acc += P V of the block in vr: b0 pairs keys 2t, 2t + 1 of a column,
 * b1 keys 2t + 8, 2t + 9 (low half the lower key). */
static inline __attribute__((always_inline)) void direct_accumulate_pv(float acc[MT][NT_O][4], const float s[MT][NT_S][4],
                                        const v_frag vr[KS_PV][4][DA])
{
#pragma unroll
    for (int kk = 0; kk < KS_PV; kk++) {
        const uint p0 = pack_t2(s[0][2 * kk][0], s[0][2 * kk][1]);
        const uint p1 = pack_t2(s[0][2 * kk][2], s[0][2 * kk][3]);
        const uint p2 = pack_t2(s[0][2 * kk + 1][0], s[0][2 * kk + 1][1]);
        const uint p3 = pack_t2(s[0][2 * kk + 1][2], s[0][2 * kk + 1][3]);
#pragma unroll
        for (int a = 0; a < DA; a++) {
            /* Converted where the math takes them, one column group at a
             * time (four keys' words live, not the block's). */
            const uint4 v0 = V_FRAG_HALVES(vr[kk][0][a]), v1 = V_FRAG_HALVES(vr[kk][1][a]);
            const uint4 v2 = V_FRAG_HALVES(vr[kk][2][a]), v3 = V_FRAG_HALVES(vr[kk][3][a]);
#pragma unroll
            for (int e = 0; e < 8; e++) {
                const uint x0 = U4_WORD(v0, e / 2), x1 = U4_WORD(v1, e / 2);
                const uint x2 = U4_WORD(v2, e / 2), x3 = U4_WORD(v3, e / 2);
                /* The low (high) halves of two keys' words: one byte
                 * permute. */
                const uint b0 = nv_prmt(x0, x1, e & 1 ? 0x7632u : 0x5410u);
                const uint b1 = nv_prmt(x2, x3, e & 1 ? 0x7632u : 0x5410u);
                MMA_16816_T(acc[0][8 * a + e], p0, p1, p2, p3, b0, b1);
            }
        }
    }
}
#endif

/* Waits until at most n of this thread's committed cp.async groups are
 * still in flight. */
#define CP_ASYNC_WAIT(n) asm volatile("cp.async.wait_group %0;\n" :: "n"(n) : "memory")

/* The walk over the group's key blocks: chunks of split_keys keys (CB
 * blocks), the first the group's own split; with STEAL, each next one the
 * row tile's next free chunk (take_chunk), else none. The copies run
 * STAGES - 1 blocks ahead of the math, each side keeping its chunk and
 * block within it. A host that steals makes CB >= STAGES - 1, so that the
 * copies are never more than one chunk ahead of the math. */
struct walk {
    uint chunk, off, entry; /* the chunk, block within it, chunks walked before */
};

/* Key of a walk's block: chunks of split_keys from the tile's first key (0,
 * or the window's start). */
static inline uint walk_key(const struct walk *w, uint split_keys, uint base)
{
    return base + w->chunk * split_keys + w->off * BN;
}

__kernel __attribute__((reqd_work_group_size(32, 1, 1)))
void attention_fused(FUSED_PARAMS(ushort), __global uint *chunk_ctr)
{
    __local uint4 q_tile[BM * CHUNKS];
#if DIRECT == 0
    __local uint4 ring[STAGES][2][TILE]; /* [stage][K, V][key block] */
#elif DIRECT == 2
    /* uint4: 16-byte aligned rows for the copies */
    __local uint4 stage_k[STAGES][BN * PITCH_K / 16], stage_v[STAGES][BN * PITCH_V / 16];
#endif

    const uint lane = get_local_id(0);
    const uint g = lane >> 2, t = lane & 3;
#if TRACE
    ulong t_start, t_first = 0, t_walked, t_stored, t_arrived = 0, t_merged = 0;
#endif
    TRACE_AT(t_start);
    const struct fused_place at = fused_place_of(n_q, n_k, kv_heads, n_rtiles, splits,
                                                 split_keys, kv_lens, q_lens, BM, BN);
    const uint kv_end = at.tile_end;
    const struct kv_head k_cache = kv_head_of(&at, k, k_off, k_sb, k_sh, k_st, block_table,
                                              bt_stride, n_pages, k_scale);
    const struct kv_head v_cache = kv_head_of(&at, v, v_off, v_sb, v_sh, v_st, block_table,
                                              bt_stride, n_pages, v_scale);
#if DIRECT == 0 && !PAGED
    __global const ushort *k_head = k + k_cache.head;
    __global const ushort *v_head = v + v_cache.head;
#endif
#if SPLIT
    __global uint *ctr = chunk_ctr + 2 * ((at.b * kv_heads + at.hk) * n_rtiles + at.r0 / BM);
#endif
    const uint cb = split_keys / BN;
    const uint n_chunks = (kv_end - at.tile_begin + split_keys - 1) / split_keys;
    struct walk math = { at.split, 0, 0 }, copy = { at.split, 0, 0 };
    uint copy_prev = at.split; /* the chunk before copy's */
    /* With STEAL the next chunk is taken as the copies enter this one, and
     * read as they leave it: the atomic's latency hides behind the chunk.
     * (Taken later, at the chunk's last block, the kernel ran 0.3-0.5%
     * slower on an H200 at B = 8, H = 32, Hkv = 8, d = 128, Nk = 16384 and
     * 65536, timed beside this version by tests/perf/time_fused.) */
#if SPLIT && STEAL
    uint pending = 0;
#define NEXT_CHUNK(c) ((c) < n_chunks ? splits + warp_read(pending, 0) : n_chunks)
#define TAKE_AT_ENTRY()                                                      \
    do {                                                                     \
        if (copy.chunk < n_chunks)                                           \
            pending = take_chunk(ctr, lane);                                 \
    } while (0)
#else
#define NEXT_CHUNK(c) n_chunks
#define TAKE_AT_ENTRY() do { } while (0)
#endif
    TAKE_AT_ENTRY();
    /* One block further for the copies; a new chunk when this one ends. */
#define COPY_STEP()                                                          \
    do {                                                                     \
        if (++copy.off == cb) {                                              \
            copy.off = 0;                                                    \
            copy.entry++;                                                    \
            copy_prev = copy.chunk;                                          \
            copy.chunk = NEXT_CHUNK(copy.chunk);                             \
            TAKE_AT_ENTRY();                                                 \
        }                                                                    \
    } while (0)
    /* The copies' block, if it is one: K and V into ring slot `st`. */
#if DIRECT == 2
#define COPY_KV(st, j)                                                       \
    do {                                                                     \
        kv_stage_rows((__local uchar *)stage_k[st], &k_cache, K_TYPE, PITCH_K, BN, j, kv_end, \
                      lane);                                                 \
        kv_stage_rows((__local uchar *)stage_v[st], &v_cache, V_TYPE, PITCH_V, BN, j, kv_end, \
                      lane);                                                 \
    } while (0)
#elif PAGED
#define COPY_KV(st, j)                                                       \
    do {                                                                     \
        ring_load_paged(ring[st][0], &k_cache, j, kv_end, lane);             \
        ring_load_paged(ring[st][1], &v_cache, j, kv_end, lane);             \
    } while (0)
#else
#define COPY_KV(st, j)                                                       \
    do {                                                                     \
        ring_load(ring[st][0], k_head, k_st, j, kv_end, lane);               \
        ring_load(ring[st][1], v_head, v_st, j, kv_end, lane);               \
    } while (0)
#endif
#define COPY_BLOCK(st)                                                       \
    do {                                                                     \
        const uint j_ = walk_key(&copy, split_keys, at.tile_begin);                         \
        if (copy.chunk < n_chunks && j_ < kv_end)                            \
            COPY_KV(st, j_);                                                 \
        cp_async_commit();                                                   \
        COPY_STEP();                                                         \
    } while (0)

    /* The math's next block: when its chunk ends, the copies have entered
     * the next one. */
#define MATH_STEP()                                                          \
    do {                                                                     \
        if (++math.off == cb) {                                              \
            math.off = 0;                                                    \
            math.chunk = copy.entry == math.entry + 1 ? copy.chunk : copy_prev; \
            math.entry++;                                                    \
        }                                                                    \
    } while (0)
#if TRACE
#define TRACE_FIRST(it) do { if ((it) == 0) TRACE_AT(t_first); } while (0)
#else
#define TRACE_FIRST(it) do { } while (0)
#endif
    /* A turn of a ring's walk: the math's block j0 (the loop ends past the
     * walk), then the wait until it (and Q) are in and the previous slot's
     * reads are done. */
#define RING_TURN(j0, it)                                                    \
    const uint j0 = walk_key(&math, split_keys, at.tile_begin);              \
    if (math.chunk >= n_chunks || j0 >= kv_end)                              \
        break;                                                               \
    CP_ASYNC_WAIT(STAGES - 2);                                               \
    barrier(CLK_LOCAL_MEM_FENCE);                                            \
    TRACE_FIRST(it)
#if DIRECT == 1
    /* The copies' block into registers KR, VR (zeros past the walk). */
#define COPY_DIRECT(KR, VR)                                                  \
    do {                                                                     \
        const uint j_ = walk_key(&copy, split_keys, at.tile_begin);                         \
        const uint end_ = copy.chunk < n_chunks ? kv_end : 0u;               \
        direct_load_k(KR, &k_cache, j_, end_, g, t);                         \
        direct_load_v(VR, &v_cache, j_, end_, g, t);                         \
        if (PREFETCH)                                                        \
            direct_prefetch(&k_cache, &v_cache, j_ + PREFETCH * BN, end_, lane); \
        COPY_STEP();                                                         \
    } while (0)
    k_frag ka[NT_S][DJ], kb[NT_S][DJ];
    v_frag va[KS_PV][4][DA], vb[KS_PV][4][DA];
    nv_load_queries(q_tile, q, &at, q_off, q_sb, q_sh, q_st, lane, BM, 32);
    cp_async_commit();
    COPY_DIRECT(ka, va);
    cp_async_wait_all();
    barrier(CLK_LOCAL_MEM_FENCE); /* Q in */
#else
    /* Group 0: Q; groups 1 .. STAGES - 1: the first blocks. Every step
     * commits one group, empty past the walk, so that "all but the newest
     * STAGES - 2 groups are done" always means "this step's block is in". */
    nv_load_queries(q_tile, q, &at, q_off, q_sb, q_sh, q_st, lane, BM, 32);
    cp_async_commit();
#pragma unroll
    for (uint st = 0; st < STAGES - 1; st++)
        COPY_BLOCK(st);
#endif

    const uint row0 = at.r0 + g;
    /* fp8 K's scale multiplies every score: folded into the score scale. */
    const float k_unit = K_UNIT(&k_cache);
    const float s_log2 = scale_log2 * k_unit;
    struct fused_variants fv = FUSED_VARIANTS_OF();
    fv.scale *= k_unit;
    fv.inv_scale = 1.0f / fv.scale;
    uint row_end[MT][2];
    float acc[MT][NT_O][4];
    float m_run[MT][2], l_run[MT][2];
    nv_start_rows(&at, row0, row_end, acc, m_run, l_run);

    /* One block of the walk: the copies' next block into KN, VN, this
     * one's math from KC, VC (registers named at compile time, so the loop
     * runs two blocks per turn). */
#if DIRECT == 1
#define DIRECT_STEP(KC, VC, KN, VN)                                          \
    {                                                                        \
        const uint j0 = walk_key(&math, split_keys, at.tile_begin);                         \
        if (math.chunk >= n_chunks || j0 >= kv_end)                          \
            break;                                                           \
        TRACE_FIRST(it);                                                     \
        COPY_DIRECT(KN, VN);                                                 \
        float s[MT][NT_S][4];                                                \
        nv_zero_scores(s);                                                   \
        direct_scores(s, q_tile, KC, g, t);                                  \
        nv_online_softmax(s, m_run, l_run, acc, row_end, &at, kv_end, j0, t, s_log2, row0, &fv); \
        direct_accumulate_pv(acc, s, VC);                                    \
        MATH_STEP();                                                         \
        it++;                                                                \
    }
    for (uint it = 0;;) {
        DIRECT_STEP(ka, va, kb, vb)
        DIRECT_STEP(kb, vb, ka, va)
    }
#elif DIRECT == 2
    /* The ring's walk, the math's fragments read out of the block's stage. */
    uint slot = 0;
    for (uint it = 0;; it++) {
        RING_TURN(j0, it);
        COPY_BLOCK(slot == 0 ? STAGES - 1 : slot - 1);
        k_frag kr[NT_S][DJ];
        v_frag vr[KS_PV][4][DA];
        staged_frags_k(kr, (__local const uchar *)stage_k[slot], g, t);
        staged_frags_v(vr, (__local const uchar *)stage_v[slot], g, t);
        float s[MT][NT_S][4];
        nv_zero_scores(s);
        direct_scores(s, q_tile, kr, g, t);
        nv_online_softmax(s, m_run, l_run, acc, row_end, &at, kv_end, j0, t, s_log2, row0, &fv);
        direct_accumulate_pv(acc, s, vr);
        slot = slot == STAGES - 1 ? 0 : slot + 1;
        MATH_STEP();
    }
#else
    const uint b_key = (lane & 7) + 8 * (lane >> 4), b_ch = (lane >> 3) & 1;
    const uint v_key = NV_V_KEY(lane), v_ch = NV_V_CH(lane);
    const uint a_row = (lane & 7) + 8 * ((lane >> 3) & 1), a_ch = lane >> 4;
#if Q_IN_REGS
    uint qa[MT][KS_QK][4];
#endif
    uint slot = 0;
    for (uint it = 0;; it++) {
        RING_TURN(j0, it);
#if Q_IN_REGS
        if (it == 0) {
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int ks = 0; ks < KS_QK; ks++)
                    LDSM_X4(smem_addr(q_tile + SWZ(a_row + 16 * mt, 2 * ks + a_ch)),
                            qa[mt][ks][0], qa[mt][ks][1], qa[mt][ks][2], qa[mt][ks][3]);
        }
#endif
        /* The block STAGES - 1 ahead goes where the previous one was. */
        COPY_BLOCK(slot == 0 ? STAGES - 1 : slot - 1);

        __local const uint4 *k_tile = ring[slot][0];
        float s[MT][NT_S][4];
        nv_zero_scores(s);
#pragma unroll
        for (int ks = 0; ks < KS_QK; ks++) {
#if !Q_IN_REGS
            uint qa[MT][1][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
                LDSM_X4(smem_addr(q_tile + SWZ(a_row + 16 * mt, 2 * ks + a_ch)), qa[mt][0][0],
                        qa[mt][0][1], qa[mt][0][2], qa[mt][0][3]);
#define QS 0
#else
#define QS ks
#endif
#define Q_FRAG(mt, i) qa[mt][QS][i]
            NV_QK_STEP(s, Q_FRAG, k_tile, ks, b_key, b_ch)
#undef Q_FRAG
        }

        nv_online_softmax(s, m_run, l_run, acc, row_end, &at, kv_end, j0, t, s_log2, row0, &fv);
        nv_accumulate_pv(acc, s, ring[slot][1], v_key, v_ch);
        slot = slot == STAGES - 1 ? 0 : slot + 1;
        MATH_STEP();
    }
#endif
    cp_async_wait_all(); /* nothing may be in flight when the group exits */
    TRACE_AT(t_walked);
#if V_TYPE == KV_FP8
    /* fp8 V's scale multiplies every output (and partial output). */
#pragma unroll
    for (int n = 0; n < NT_O; n++)
        acc[0][n][0] *= v_cache.scale, acc[0][n][1] *= v_cache.scale,
        acc[0][n][2] *= v_cache.scale, acc[0][n][3] *= v_cache.scale;
#endif

    nv_store_rows(acc, m_run, l_run, row_end, &at, row0, t, o, lse, part_o, part_ml, o_off, o_sb,
                  o_sh, o_st, batch, heads, n_q, s_log2, &fv);
    TRACE_AT(t_stored);
    int is_last = 1;
#if SPLIT
    /* The last group of the tile puts its counters back, and with MERGE
     * combines the chunks. */
    __local uint last;
    is_last = nv_chunk_is_last(ctr, splits, lane, &last);
    TRACE_AT(t_arrived);
    if (is_last && MERGE)
        nv_merge_chunks(&at, lane, o, lse, part_o, part_ml, o_off, o_sb, o_sh, o_st, batch, heads,
                        n_q, splits, sinks);
    TRACE_AT(t_merged);
#endif
#if TRACE
    if (lane == 0)
        printf("T %u %u %u %u %lu %lu %lu %lu %lu %lu\n", (uint)get_group_id(0), trace_sm(),
               math.entry, (uint)is_last, t_start, t_first, t_walked, t_stored,
               t_arrived, t_merged);
#endif
#undef NEXT_CHUNK
#undef TAKE_AT_ENTRY
#undef COPY_STEP
#undef COPY_BLOCK
#undef COPY_KV
#undef MATH_STEP
#undef TRACE_FIRST
#undef RING_TURN
#if DIRECT == 1
#undef COPY_DIRECT
#undef DIRECT_STEP
#endif
}
