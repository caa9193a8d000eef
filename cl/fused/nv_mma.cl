/* SPDX-License-Identifier: MIT */
/*
 * Fused attention on NVIDIA tensor cores (compute capability >= 8.0), from
 * OpenCL C through inline PTX: FlashAttention-2's schedule.
 *
 *   - a work-group of WARPS warps owns BM = 16 * MT * WARPS query rows of
 *     one head; each warp owns MT tiles of 16 rows and keeps their scores,
 *     running max, sum and output accumulator in registers. With MT = 2 each
 *     K or V fragment read from local memory feeds two mma instructions,
 *     halving local-memory traffic per FLOP;
 *   - Q, K and V tiles are copied to local memory with cp.async (16-byte
 *     chunks, XOR-swizzled so ldmatrix reads are free of bank conflicts);
 *     V_j streams in while S = Q K_j^T is computed, K_{j+1} while O += P V_j;
 *   - S and O come from mma.sync.m16n8k16 (fp16 in, fp32 accumulate); the
 *     probabilities P go from the S accumulators straight into A fragments;
 *   - the softmax works in the log2 domain with the scale folded into one
 *     multiply, and causal key blocks past the diagonal are never visited.
 *
 * fp16 storage only. Build options: -DD=<64|128|256> -DBN=<keys per block,
 * multiple of 16> -DWARPS=<warps per group> -DMT=<16-row tiles per warp>
 * -DCAUSAL=0|1.
 * Needs the NVIDIA OpenCL compiler (inline PTX); other devices use fused.cl.
 */
#if !defined(D) || !defined(BN) || !defined(WARPS) || !defined(MT)
#error "build with -DD -DBN -DWARPS -DMT (fused/nv_mma.c) and fused_grid.clh's options"
#endif
#if D != 64 && D != 128 && D != 256
#error "D must be 64, 128 or 256"
#endif
#if BN % 16 || BN < 16 || BN > 256
#error "BN must be a multiple of 16 from 16 to 256"
#endif
#if MT != 1 && MT != 2
#error "MT must be 1 or 2"
#endif
#if WARPS < 1 || 16 * MT * WARPS > 256
#error "BM = 16 MT WARPS must be 16 to 256"
#endif

#define BM (16 * MT * WARPS)
#define NTHREADS (32 * WARPS)
#define CHUNKS (D / 8)    /* 16-byte chunks per row of Q, K or V */
#define NT_S (BN / 8)     /* 8-column tiles of S per warp */
#define NT_O (D / 8)      /* 8-column tiles of O per warp */
#define KS_QK (D / 16)    /* k-steps of Q K^T */
#define KS_PV (BN / 16)   /* k-steps of P V */

#include "nv_ptx.clh"
#include "fused_grid.clh"
#include "fused_finish.clh"
#include "fused_score.clh"
#include "nv_mma_tile.clh"

__kernel __attribute__((reqd_work_group_size(NTHREADS, 1, 1)))
void attention_fused(FUSED_PARAMS(ushort))
{
    __local uint4 q_tile[BM * CHUNKS];
    __local uint4 k_tile[BN * CHUNKS];
    __local uint4 v_tile[BN * CHUNKS];

    const uint tid = get_local_id(0);
    const uint warp = tid / 32, lane = tid % 32;
    const uint g = lane >> 2, t = lane & 3;
    const struct fused_place at = fused_place_of(n_q, n_k, kv_heads, n_rtiles, splits,
                                                 split_keys, kv_lens, q_lens, BM, BN);
    const uint kv_end = at.kv_end;
    __global const ushort *k_head = k + fused_key_index(&at, 0, k_off, k_sb, k_sh, 0);
    __global const ushort *v_head = v + fused_key_index(&at, 0, v_off, v_sb, v_sh, 0);

    nv_load_queries(q_tile, q, &at, q_off, q_sb, q_sh, q_st, tid, BM, NTHREADS);
    if (at.kv_begin < kv_end)
        nv_load_keys(k_tile, k_head, k_st, at.kv_begin, kv_end, tid, BN, NTHREADS);
    cp_async_commit();

    /* Packed rows of this thread within the tile's: tile mt holds rows
     * row0 + 16 mt + g ("lo") and that + 8 ("hi"). */
    const uint row0 = at.r0 + warp * 16 * MT + g;
    const struct fused_variants fv = FUSED_VARIANTS_OF();
    uint row_end[MT][2];
    float acc[MT][NT_O][4];
    float m_run[MT][2], l_run[MT][2];
    nv_start_rows(&at, row0, row_end, acc, m_run, l_run);

    /* ldmatrix row addresses that do not change between blocks. */
    const uint a_row = warp * 16 * MT + (lane & 7) + 8 * ((lane >> 3) & 1), a_ch = lane >> 4;
    const uint b_key = (lane & 7) + 8 * (lane >> 4), b_ch = (lane >> 3) & 1;
    const uint v_key = NV_V_KEY(lane), v_ch = NV_V_CH(lane);

    for (uint j0 = at.kv_begin; j0 < kv_end; j0 += BN) {
        cp_async_wait_all();
        barrier(CLK_LOCAL_MEM_FENCE); /* K_j (and Q) ready; V_{j-1} reads done */
        nv_load_keys(v_tile, v_head, v_st, j0, kv_end, tid, BN, NTHREADS);
        cp_async_commit();

        float s[MT][NT_S][4];
        nv_zero_scores(s);
#pragma unroll
        for (int ks = 0; ks < KS_QK; ks++) {
            uint a[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
                LDSM_X4(smem_addr(q_tile + SWZ(a_row + 16 * mt, 2 * ks + a_ch)), a[mt][0],
                        a[mt][1], a[mt][2], a[mt][3]);
#define Q_FRAG(mt, i) a[mt][i]
            NV_QK_STEP(s, Q_FRAG, k_tile, ks, b_key, b_ch)
#undef Q_FRAG
        }

        nv_online_softmax(s, m_run, l_run, acc, row_end, &at, kv_end, j0, t, scale_log2, row0, &fv);

        cp_async_wait_all();
        barrier(CLK_LOCAL_MEM_FENCE); /* V_j ready; every warp is done with K_j */
        if (j0 + BN < kv_end)
            nv_load_keys(k_tile, k_head, k_st, j0 + BN, kv_end, tid, BN, NTHREADS);
        cp_async_commit();

        nv_accumulate_pv(acc, s, v_tile, v_key, v_ch);
    }
    cp_async_wait_all(); /* nothing may be in flight when the group exits */

    nv_store_rows(acc, m_run, l_run, row_end, &at, row0, t, o, lse, part_o, part_ml, o_off, o_sb,
                  o_sh, o_st, batch, heads, n_q, scale_log2, &fv);
}
