/* SPDX-License-Identifier: MIT */
/*
 * Fused attention for decoding on NVIDIA tensor cores (compute capability
 * >= 8.0): a few packed query rows (the G = H / Hkv heads of a KV head times
 * the Nq new tokens, at most 16 MT) against a long key range, which is
 * bound by reading K and V once.
 *
 * One warp per work-group owns the packed rows of one (sequence, KV head,
 * key chunk); split-KV (fused_grid.clh, cl/combine.cl) spreads a sequence's
 * keys over the device. What makes it stream: K and V blocks go through a
 * ring of STAGES local buffers filled by cp.async STAGES - 1 blocks ahead,
 * so a warp always has that many blocks' loads in flight while it computes
 * on one (the prefill kernel has one tile of K or V in flight). S = Q K^T and O += P V
 * are mma.sync m16n8k16 tiles (cl/nv_mma_tile.clh), as in prefill.
 *
 * fp16 storage only. Build options: -DD=<64|128|256> -DBN=<keys per block,
 * multiple of 16> -DMT=<1|2: 16-row tiles> -DSTAGES=<2..8>, and
 * fused_grid.clh's.
 */
#if !defined(D) || !defined(BN) || !defined(MT) || !defined(STAGES)
#error "build with -DD -DBN -DMT -DSTAGES (fused/nv_decode.c) and fused_grid.clh's options"
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
#define Q_IN_REGS (MT * D <= 128)

#include "nv_ptx.clh"
#include "fused_grid.clh"
#include "fused_finish.clh"
#include "nv_mma_tile.clh"

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

/* Waits until at most n of this thread's committed cp.async groups are
 * still in flight. */
#define CP_ASYNC_WAIT(n) asm volatile("cp.async.wait_group %0;\n" :: "n"(n) : "memory")

__kernel __attribute__((reqd_work_group_size(32, 1, 1)))
void attention_fused(FUSED_PARAMS(ushort))
{
    __local uint4 q_tile[BM * CHUNKS];
    __local uint4 ring[STAGES][2][TILE]; /* [stage][K, V][key block] */

    const uint lane = get_local_id(0);
    const uint g = lane >> 2, t = lane & 3;
    const struct fused_place at = fused_place_of(n_q, n_k, kv_heads, n_rtiles, splits,
                                                 split_keys, kv_lens, q_lens, BM);
    const uint kv_begin = at.kv_begin, kv_end = at.kv_end;
    __global const ushort *k_head = k + fused_key_index(&at, 0, k_off, k_sb, k_sh, 0);
    __global const ushort *v_head = v + fused_key_index(&at, 0, v_off, v_sb, v_sh, 0);

    /* Group 0: Q; groups 1 .. STAGES - 1: the first blocks. Every step
     * commits one group, empty past the chunk, so that "all but the newest
     * STAGES - 2 groups are done" always means "this step's block is in". */
    nv_load_queries(q_tile, q, &at, q_off, q_sb, q_sh, q_st, lane, BM, 32);
    cp_async_commit();
#pragma unroll
    for (uint st = 0; st < STAGES - 1; st++) {
        const uint j = kv_begin + st * BN;
        if (j < kv_end) {
            ring_load(ring[st][0], k_head, k_st, j, kv_end, lane);
            ring_load(ring[st][1], v_head, v_st, j, kv_end, lane);
        }
        cp_async_commit();
    }

    const uint row0 = at.r0 + g;
    uint row_end[MT][2];
    nv_row_ends(&at, row0, row_end);
    float acc[MT][NT_O][4];
    float m_run[MT][2], l_run[MT][2];
    nv_start_rows(acc, m_run, l_run);

    const uint b_key = (lane & 7) + 8 * (lane >> 4), b_ch = (lane >> 3) & 1;
    const uint v_key = NV_V_KEY(lane), v_ch = NV_V_CH(lane);
    const uint a_row = (lane & 7) + 8 * ((lane >> 3) & 1), a_ch = lane >> 4;
#if Q_IN_REGS
    uint qa[MT][KS_QK][4];
#endif
    uint slot = 0;
    for (uint j0 = kv_begin; j0 < kv_end; j0 += BN) {
        CP_ASYNC_WAIT(STAGES - 2);
        barrier(CLK_LOCAL_MEM_FENCE); /* block j0 (and Q) in; the previous slot's reads done */
#if Q_IN_REGS
        if (j0 == kv_begin) {
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int ks = 0; ks < KS_QK; ks++)
                    LDSM_X4(smem_addr(q_tile + SWZ(a_row + 16 * mt, 2 * ks + a_ch)),
                            qa[mt][ks][0], qa[mt][ks][1], qa[mt][ks][2], qa[mt][ks][3]);
        }
#endif
        /* The block STAGES - 1 ahead goes where the previous one was. */
        const uint ahead = j0 + (STAGES - 1) * BN;
        const uint fill = slot == 0 ? STAGES - 1 : slot - 1;
        if (ahead < kv_end) {
            ring_load(ring[fill][0], k_head, k_st, ahead, kv_end, lane);
            ring_load(ring[fill][1], v_head, v_st, ahead, kv_end, lane);
        }
        cp_async_commit();

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
#pragma unroll
            for (int n2 = 0; n2 < NT_S / 2; n2++) {
                uint b0, b1, b2, b3;
                LDSM_X4(smem_addr(k_tile + SWZ(n2 * 16 + b_key, 2 * ks + b_ch)), b0, b1, b2, b3);
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    MMA_16816(s[mt][2 * n2], qa[mt][QS][0], qa[mt][QS][1], qa[mt][QS][2],
                              qa[mt][QS][3], b0, b1);
                    MMA_16816(s[mt][2 * n2 + 1], qa[mt][QS][0], qa[mt][QS][1], qa[mt][QS][2],
                              qa[mt][QS][3], b2, b3);
                }
            }
        }

        nv_online_softmax(s, m_run, l_run, acc, row_end, &at, kv_end, j0, t, scale_log2);
        nv_accumulate_pv(acc, s, ring[slot][1], v_key, v_ch);
        slot = slot == STAGES - 1 ? 0 : slot + 1;
    }
    cp_async_wait_all(); /* nothing may be in flight when the group exits */

    nv_store_rows(acc, m_run, l_run, row_end, &at, row0, t, o, lse, part_o, part_ml, o_off, o_sb,
                  o_sh, o_st, batch, heads, n_q, scale_log2);
}
