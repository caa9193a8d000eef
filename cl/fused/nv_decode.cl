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
 * fp16 storage only. Build options: -DD=<64|128|256> -DBN=<keys per block,
 * multiple of 16> -DMT=<1|2: 16-row tiles> -DSTAGES=<2..8> -DMERGE=<0|1:
 * combine the chunks here, else cl/fused/combine.cl does> -DSTEAL=<0|1: the
 * groups of a row tile take its chunks in turn> -DDIRECT=<0|1: K and V in
 * registers; MT = 1, D <= 128, STAGES = 2>, and fused_grid.clh's.
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
#if DIRECT && (MT != 1 || D > 128 || STAGES != 2)
#error "DIRECT takes MT = 1, D <= 128 and STAGES = 2 (the next block in registers)"
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
#if DIRECT
/* Accumulator column c (0, 1) of 8-column tile n in lane quad t: tile
 * group n / 8 covers 64 columns, tile n % 8 its every 8th. */
#define NV_ACC_COL(n, t, c) (64 * ((n) / 8) + 8 * (2 * (t) + (c)) + (n) % 8)
#define NV_ACC_NEIGHBOURS 1 /* tiles n, n + 1 (n even) hold neighbouring columns */
#endif
#ifndef TRACE
#define TRACE 0
#endif

#include "nv_ptx.clh"
#include "fused_grid.clh"
#include "fused_finish.clh"
#include "fused_score.clh"
#include "nv_mma_tile.clh"
#include "nv_chunk_merge.clh"

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

#if DIRECT
#define DJ (D / 32) /* 16-byte loads of a key row per lane in Q K^T */
#define DA (D / 64) /* 64-column groups of O */

/* Lane (g, t)'s B fragments of keys [j0, j0 + BN) for Q K^T: of key
 * j0 + 8 nt + g, the 16 bytes at column 32 j + 8 t. Keys at or past `end`
 * are not read (zeros). */
static inline void direct_load_k(uint4 kr[NT_S][DJ], __global const ushort *head, ulong st,
                                 uint j0, uint end, uint g, uint t)
{
#pragma unroll
    for (int nt = 0; nt < NT_S; nt++) {
        const uint key = j0 + 8 * nt + g;
        __global const uint4 *row = (__global const uint4 *)(head + (ulong)key * st) + t;
#pragma unroll
        for (int j = 0; j < DJ; j++)
            kr[nt][j] = key < end ? row[4 * j] : (uint4)(0u);
    }
}

/* Lane (g, t)'s B fragments of keys [j0, j0 + BN) for P V: of the four
 * keys 16 kk + 2 t + {0, 1, 8, 9} (the k of b0's and b1's halves), the 16
 * bytes at column 64 a + 8 g. */
static inline void direct_load_v(uint4 vr[KS_PV][4][DA], __global const ushort *head, ulong st,
                                 uint j0, uint end, uint g, uint t)
{
#pragma unroll
    for (int kk = 0; kk < KS_PV; kk++)
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const uint key = j0 + 16 * kk + 2 * t + (r & 1) + 8 * (r >> 1);
            __global const uint4 *row = (__global const uint4 *)(head + (ulong)key * st) + g;
#pragma unroll
            for (int a = 0; a < DA; a++)
                vr[kk][r][a] = key < end ? row[8 * a] : (uint4)(0u);
        }
}

#define U4_WORD(u, i) ((i) == 0 ? (u).x : (i) == 1 ? (u).y : (i) == 2 ? (u).z : (u).w)

/* S = Q K^T of the block in kr. k-step (j, h) covers columns 32 j + 8 t +
 * 4 h + {0..3}: halves 4h.. of each lane's 16 bytes, Q's and K's alike. */
static inline void direct_scores(float s[MT][NT_S][4], __local const uint4 *q_tile,
                                 const uint4 kr[NT_S][DJ], uint g, uint t)
{
#pragma unroll
    for (int j = 0; j < DJ; j++) {
        const uint4 q0 = q_tile[SWZ(g, 4 * j + t)], q1 = q_tile[SWZ(g + 8, 4 * j + t)];
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const uint a0 = h ? q0.z : q0.x, a2 = h ? q0.w : q0.y;
            const uint a1 = h ? q1.z : q1.x, a3 = h ? q1.w : q1.y;
#pragma unroll
            for (int nt = 0; nt < NT_S; nt++)
                MMA_16816_T(s[0][nt], a0, a1, a2, a3, h ? kr[nt][j].z : kr[nt][j].x,
                          h ? kr[nt][j].w : kr[nt][j].y);
        }
    }
}

/* acc += P V of the block in vr: b0 pairs keys 2t, 2t + 1 of a column,
 * b1 keys 2t + 8, 2t + 9 (low half the lower key). */
static inline void direct_accumulate_pv(float acc[MT][NT_O][4], const float s[MT][NT_S][4],
                                        const uint4 vr[KS_PV][4][DA])
{
#pragma unroll
    for (int kk = 0; kk < KS_PV; kk++) {
        const uint p0 = pack_t2(s[0][2 * kk][0], s[0][2 * kk][1]);
        const uint p1 = pack_t2(s[0][2 * kk][2], s[0][2 * kk][3]);
        const uint p2 = pack_t2(s[0][2 * kk + 1][0], s[0][2 * kk + 1][1]);
        const uint p3 = pack_t2(s[0][2 * kk + 1][2], s[0][2 * kk + 1][3]);
#pragma unroll
        for (int a = 0; a < DA; a++)
#pragma unroll
            for (int e = 0; e < 8; e++) {
                const uint x0 = U4_WORD(vr[kk][0][a], e / 2), x1 = U4_WORD(vr[kk][1][a], e / 2);
                const uint x2 = U4_WORD(vr[kk][2][a], e / 2), x3 = U4_WORD(vr[kk][3][a], e / 2);
                const uint b0 = e & 1 ? (x0 >> 16) | (x1 & 0xffff0000u)
                                      : (x0 & 0xffffu) | (x1 << 16);
                const uint b1 = e & 1 ? (x2 >> 16) | (x3 & 0xffff0000u)
                                      : (x2 & 0xffffu) | (x3 << 16);
                MMA_16816_T(acc[0][8 * a + e], p0, p1, p2, p3, b0, b1);
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
#if !DIRECT
    __local uint4 ring[STAGES][2][TILE]; /* [stage][K, V][key block] */
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
    __global const ushort *k_head = k + fused_key_index(&at, 0, k_off, k_sb, k_sh, 0);
    __global const ushort *v_head = v + fused_key_index(&at, 0, v_off, v_sb, v_sh, 0);
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
#define COPY_BLOCK(st)                                                       \
    do {                                                                     \
        const uint j_ = walk_key(&copy, split_keys, at.tile_begin);                         \
        if (copy.chunk < n_chunks && j_ < kv_end) {                          \
            ring_load(ring[st][0], k_head, k_st, j_, kv_end, lane);          \
            ring_load(ring[st][1], v_head, v_st, j_, kv_end, lane);          \
        }                                                                    \
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
#if DIRECT
    /* The copies' block into registers KR, VR (zeros past the walk). */
#define COPY_DIRECT(KR, VR)                                                  \
    do {                                                                     \
        const uint j_ = walk_key(&copy, split_keys, at.tile_begin);                         \
        const uint end_ = copy.chunk < n_chunks ? kv_end : 0u;               \
        direct_load_k(KR, k_head, k_st, j_, end_, g, t);                     \
        direct_load_v(VR, v_head, v_st, j_, end_, g, t);                     \
        COPY_STEP();                                                         \
    } while (0)
    uint4 ka[NT_S][DJ], kb[NT_S][DJ], va[KS_PV][4][DA], vb[KS_PV][4][DA];
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
    const struct fused_variants fv = FUSED_VARIANTS_OF();
    uint row_end[MT][2];
    float acc[MT][NT_O][4];
    float m_run[MT][2], l_run[MT][2];
    nv_start_rows(&at, row0, row_end, acc, m_run, l_run);

    /* One block of the walk: the copies' next block into KN, VN, this
     * one's math from KC, VC (registers named at compile time, so the loop
     * runs two blocks per turn). */
#if DIRECT
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
        nv_online_softmax(s, m_run, l_run, acc, row_end, &at, kv_end, j0, t, scale_log2, row0, &fv); \
        direct_accumulate_pv(acc, s, VC);                                    \
        MATH_STEP();                                                         \
        it++;                                                                \
    }
    for (uint it = 0;;) {
        DIRECT_STEP(ka, va, kb, vb)
        DIRECT_STEP(kb, vb, ka, va)
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
        const uint j0 = walk_key(&math, split_keys, at.tile_begin);
        if (math.chunk >= n_chunks || j0 >= kv_end)
            break;
        CP_ASYNC_WAIT(STAGES - 2);
        barrier(CLK_LOCAL_MEM_FENCE); /* block j0 (and Q) in; the previous slot's reads done */
        TRACE_FIRST(it);
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

        nv_online_softmax(s, m_run, l_run, acc, row_end, &at, kv_end, j0, t, scale_log2, row0, &fv);
        nv_accumulate_pv(acc, s, ring[slot][1], v_key, v_ch);
        slot = slot == STAGES - 1 ? 0 : slot + 1;
        MATH_STEP();
    }
#endif
    cp_async_wait_all(); /* nothing may be in flight when the group exits */
    TRACE_AT(t_walked);

    nv_store_rows(acc, m_run, l_run, row_end, &at, row0, t, o, lse, part_o, part_ml, o_off, o_sb,
                  o_sh, o_st, batch, heads, n_q, scale_log2, &fv);
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
#undef MATH_STEP
#undef TRACE_FIRST
#if DIRECT
#undef COPY_DIRECT
#undef DIRECT_STEP
#endif
}
