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

/* Chunk `ch` of row `row` in a swizzled tile: the 8 rows one ldmatrix reads
 * land in 8 different 16-byte bank groups. */
#define SWZ(row, ch) ((row) * CHUNKS + ((ch) ^ ((row) & 7)))

#include "nv_ptx.clh"
#include "fused_grid.clh"
#include "fused_finish.clh"

/* Copies keys [j0, j0 + BN) of one head's K or V (rows `st` elements
 * apart from `head`) into a swizzled tile; keys past `end` are zero-filled
 * (source size 0) and never read. */
static inline void load_keys(__local uint4 *tile, __global const ushort *head, ulong st, uint j0,
                             uint end, uint tid)
{
    for (uint i = tid; i < BN * CHUNKS; i += NTHREADS) {
        const uint row = i / CHUNKS, ch = i % CHUNKS;
        const uint valid = j0 + row < end;
        __global const ushort *g = head + (valid ? (j0 + row) * st : 0) + ch * 8;
        cp_async16(tile + SWZ(row, ch), g, valid ? 16u : 0u);
    }
}

/* Copies the tile's packed query rows into the swizzled Q tile; rows past
 * the sequence's are zero-filled. */
static inline void load_queries(__local uint4 *tile, __global const ushort *q,
                                const struct fused_place *p, ulong off, ulong sb, ulong sh,
                                ulong st, uint tid)
{
    for (uint i = tid; i < BM * CHUNKS; i += NTHREADS) {
        const uint row = i / CHUNKS, ch = i % CHUNKS;
        const uint valid = p->r0 + row < p->n_rows;
        __global const ushort *g =
            q + (valid ? fused_row_index(p, p->r0 + row, off, sb, sh, st) : 0) + ch * 8;
        cp_async16(tile + SWZ(row, ch), g, valid ? 16u : 0u);
    }
}

/* 2^x on the special-function unit (what exp2 costs on the critical path). */
static inline float fast_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

static inline float quad_max(float x)
{
    float y;
    asm volatile("shfl.sync.bfly.b32 %0, %1, 1, 0x1f, 0xffffffff;\n" : "=f"(y) : "f"(x));
    x = fmax(x, y);
    asm volatile("shfl.sync.bfly.b32 %0, %1, 2, 0x1f, 0xffffffff;\n" : "=f"(y) : "f"(x));
    return fmax(x, y);
}

static inline float quad_sum(float x)
{
    float y;
    asm volatile("shfl.sync.bfly.b32 %0, %1, 1, 0x1f, 0xffffffff;\n" : "=f"(y) : "f"(x));
    x += y;
    asm volatile("shfl.sync.bfly.b32 %0, %1, 2, 0x1f, 0xffffffff;\n" : "=f"(y) : "f"(x));
    return x + y;
}

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
                                                 split_keys, kv_lens, q_lens, BM);
    const uint kv_end = at.kv_end;
    __global const ushort *k_head = k + fused_key_index(&at, 0, k_off, k_sb, k_sh, 0);
    __global const ushort *v_head = v + fused_key_index(&at, 0, v_off, v_sb, v_sh, 0);

    load_queries(q_tile, q, &at, q_off, q_sb, q_sh, q_st, tid);
    if (at.kv_begin < kv_end)
        load_keys(k_tile, k_head, k_st, at.kv_begin, kv_end, tid);
    cp_async_commit();

    /* Packed rows of this thread within the tile's: tile mt holds rows
     * row0 + 16 mt + g ("lo") and that + 8 ("hi"). */
    const uint row0 = at.r0 + warp * 16 * MT + g;
    /* Where each of this thread's rows stops seeing keys (in this chunk). */
    uint row_end[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
        for (int h = 0; h < 2; h++) {
            const uint row = row0 + 16 * mt + 8 * h;
            row_end[mt][h] = row < at.n_rows
                ? fused_token_end(row / GROUP, at.kv_len, at.causal_off) : 0u;
        }
    float acc[MT][NT_O][4];
    float m_run[MT][2], l_run[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int n = 0; n < NT_O; n++)
            acc[mt][n][0] = acc[mt][n][1] = acc[mt][n][2] = acc[mt][n][3] = 0.0f;
        m_run[mt][0] = m_run[mt][1] = -INFINITY;
        l_run[mt][0] = l_run[mt][1] = 0.0f;
    }

    /* ldmatrix row addresses that do not change between blocks. */
    const uint a_row = warp * 16 * MT + (lane & 7) + 8 * ((lane >> 3) & 1), a_ch = lane >> 4;
    const uint b_key = (lane & 7) + 8 * (lane >> 4), b_ch = (lane >> 3) & 1;
    const uint v_key = (lane & 7) + 8 * ((lane >> 3) & 1), v_ch = lane >> 4;

    for (uint j0 = at.kv_begin; j0 < kv_end; j0 += BN) {
        cp_async_wait_all();
        barrier(CLK_LOCAL_MEM_FENCE); /* K_j (and Q) ready; V_{j-1} reads done */
        load_keys(v_tile, v_head, v_st, j0, kv_end, tid);
        cp_async_commit();

        float s[MT][NT_S][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
#pragma unroll
            for (int n = 0; n < NT_S; n++)
                s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.0f;
        }
#pragma unroll
        for (int ks = 0; ks < KS_QK; ks++) {
            uint a[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
                LDSM_X4(smem_addr(q_tile + SWZ(a_row + 16 * mt, 2 * ks + a_ch)), a[mt][0],
                        a[mt][1], a[mt][2], a[mt][3]);
#pragma unroll
            for (int n2 = 0; n2 < NT_S / 2; n2++) {
                uint b0, b1, b2, b3;
                LDSM_X4(smem_addr(k_tile + SWZ(n2 * 16 + b_key, 2 * ks + b_ch)), b0, b1, b2, b3);
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    MMA_16816(s[mt][2 * n2], a[mt][0], a[mt][1], a[mt][2], a[mt][3], b0, b1);
                    MMA_16816(s[mt][2 * n2 + 1], a[mt][0], a[mt][1], a[mt][2], a[mt][3], b2, b3);
                }
            }
        }

        /* Mask keys past Nk and, on blocks that cross the diagonal, keys
         * after each row's last visible one. Scores stay unscaled: the scale
         * is folded into the exponent below. */
        /* A block past the chunk's end, or (causal) past the first row's
         * last visible key, needs its scores masked. */
        int need_mask = j0 + BN > kv_end;
#if CAUSAL
        need_mask |= j0 + BN > fused_token_end(at.r0 / GROUP, at.kv_len, at.causal_off);
#endif
        if (need_mask) {
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int seen = fused_visible_keys(min(row_end[mt][h], kv_end), j0, BN);
#pragma unroll
                    for (int n = 0; n < NT_S; n++) {
                        const int col = n * 8 + 2 * (int)t;
                        if (col >= seen)
                            s[mt][n][2 * h] = -INFINITY;
                        if (col + 1 >= seen)
                            s[mt][n][2 * h + 1] = -INFINITY;
                    }
                }
            }
        }

#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
#pragma unroll
            for (int h = 0; h < 2; h++) { /* h = 0: row lo, 1: row hi */
                float mx = m_run[mt][h];
#pragma unroll
                for (int n = 0; n < NT_S; n++)
                    mx = fmax(mx, fmax(s[mt][n][2 * h], s[mt][n][2 * h + 1]));
                mx = quad_max(mx);
                /* p = 2^(s scale log2(e) - m scale log2(e)): one FMA and one
                 * ex2 per score. A row with no visible key so far keeps
                 * m = -inf; its p are 0 and its rescale factor is 1. */
                const float base = mx == -INFINITY ? 0.0f : mx * scale_log2;
                const float alpha = mx == -INFINITY ? 1.0f
                                                    : fast_exp2((m_run[mt][h] - mx) * scale_log2);
                m_run[mt][h] = mx;
                float sum = 0.0f;
#pragma unroll
                for (int n = 0; n < NT_S; n++) {
                    s[mt][n][2 * h] = fast_exp2(fma(s[mt][n][2 * h], scale_log2, -base));
                    s[mt][n][2 * h + 1] = fast_exp2(fma(s[mt][n][2 * h + 1], scale_log2, -base));
                    sum += s[mt][n][2 * h] + s[mt][n][2 * h + 1];
                }
                /* Per-thread partial sums; the quad adds them up at the end. */
                l_run[mt][h] = l_run[mt][h] * alpha + sum;
#pragma unroll
                for (int n = 0; n < NT_O; n++) {
                    acc[mt][n][2 * h] *= alpha;
                    acc[mt][n][2 * h + 1] *= alpha;
                }
            }
        }

        cp_async_wait_all();
        barrier(CLK_LOCAL_MEM_FENCE); /* V_j ready; every warp is done with K_j */
        if (j0 + BN < kv_end)
            load_keys(k_tile, k_head, k_st, j0 + BN, kv_end, tid);
        cp_async_commit();

#pragma unroll
        for (int kk = 0; kk < KS_PV; kk++) {
            /* The S accumulators of tiles 2kk, 2kk+1 are this k-step's A. */
            uint p[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                p[mt][0] = pack_half2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
                p[mt][1] = pack_half2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
                p[mt][2] = pack_half2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
                p[mt][3] = pack_half2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
            }
#pragma unroll
            for (int n2 = 0; n2 < NT_O / 2; n2++) {
                uint b0, b1, b2, b3;
                LDSM_X4_T(smem_addr(v_tile + SWZ(kk * 16 + v_key, 2 * n2 + v_ch)), b0, b1, b2, b3);
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    MMA_16816(acc[mt][2 * n2], p[mt][0], p[mt][1], p[mt][2], p[mt][3], b0, b1);
                    MMA_16816(acc[mt][2 * n2 + 1], p[mt][0], p[mt][1], p[mt][2], p[mt][3], b2, b3);
                }
            }
        }
    }
    cp_async_wait_all(); /* nothing may be in flight when the group exits */

    /* fused_row_scale: zeros for a query that sees no key, NaN where the
     * softmax is undefined; rows past the sequence's write zeros. */
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const float l = quad_sum(l_run[mt][h]);
            const uint row = row0 + 16 * mt + 8 * h;
            if (row >= n_q * GROUP)
                continue; /* a row of the last tile past the tensor */
            const int live = row < at.n_rows;
            const float m_log2 = m_run[mt][h] * scale_log2;
#if SPLIT
            if (!live)
                continue; /* cl/combine.cl writes it */
            const ulong w = (ulong)at.split * batch * heads * n_q + fused_row_id(&at, row, heads, n_q);
#pragma unroll
            for (int n = 0; n < NT_O; n++) {
                part_o[w * D + n * 8 + 2 * t] = acc[mt][n][2 * h];
                part_o[w * D + n * 8 + 2 * t + 1] = acc[mt][n][2 * h + 1];
            }
            if (t == 0) {
                part_ml[2 * w] = m_log2;
                part_ml[2 * w + 1] = l;
            }
#else
            const int sees_key = row_end[mt][h] > 0;
            const float inv = live ? fused_row_scale(l, m_log2, sees_key, FUSED_LIMIT_F16) : 0.0f;
            __global uint *o_row = (__global uint *)(o + fused_row_index(&at, row, o_off, o_sb,
                                                                         o_sh, o_st));
#pragma unroll
            for (int n = 0; n < NT_O; n++)
                o_row[(n * 8 + 2 * t) / 2] =
                    pack_half2(acc[mt][n][2 * h] * inv, acc[mt][n][2 * h + 1] * inv);
#if LSE_OUT
            if (t == 0)
                lse[fused_row_id(&at, row, heads, n_q)] =
                    live ? fused_row_lse(l, m_log2, sees_key, inv) : -INFINITY;
#endif
#endif
        }
    }
}
