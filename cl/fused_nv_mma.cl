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
#if !defined(D) || !defined(BN) || !defined(WARPS) || !defined(MT) || !defined(CAUSAL)
#error "build with -DD -DBN -DWARPS -DMT -DCAUSAL (fused/nv_mma.c)"
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

/* Copies rows [r0, r0 + rows) of a [n_rows, D] fp16 matrix into a swizzled
 * tile; rows past n_rows are zero-filled (source size 0). */
static inline void load_tile(__local uint4 *tile, __global const ushort *src, uint r0,
                             uint rows, uint n_rows, uint tid)
{
    for (uint i = tid; i < rows * CHUNKS; i += NTHREADS) {
        uint row = i / CHUNKS, ch = i % CHUNKS;
        uint valid = r0 + row < n_rows;
        __global const ushort *g = src + (size_t)(valid ? r0 + row : 0) * D + ch * 8;
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
void attention_fused(__global const ushort *q, __global const ushort *k,
                     __global const ushort *v, __global ushort *o,
                     const uint n_q, const uint n_k, const uint heads, const uint group,
                     const uint n_qblocks, const float scale_log2, const int causal_off)
{
    __local uint4 q_tile[BM * CHUNKS];
    __local uint4 k_tile[BN * CHUNKS];
    __local uint4 v_tile[BN * CHUNKS];

    const uint tid = get_local_id(0);
    const uint warp = tid / 32, lane = tid % 32;
    const uint g = lane >> 2, t = lane & 3;
    const struct fused_place at = fused_place_of(n_qblocks, heads, group, BM);
    const uint q0 = at.q0, bh = at.bh;
    __global const ushort *q_head = q + (size_t)bh * n_q * D;
    __global const ushort *k_head = k + (size_t)at.kv_head * n_k * D;
    __global const ushort *v_head = v + (size_t)at.kv_head * n_k * D;

    const uint kv_end = fused_kv_end(n_k, q0, BM, CAUSAL, causal_off);
    load_tile(q_tile, q_head, q0, BM, n_q, tid);
    if (kv_end > 0)
        load_tile(k_tile, k_head, 0, BN, n_k, tid);
    cp_async_commit();

    /* Rows of this thread within the head: tile mt holds rows
     * row0 + 16 mt + g ("lo") and that + 8 ("hi"). */
    const uint row0 = q0 + warp * 16 * MT + g;
    /* Where each of this thread's rows stops seeing keys. */
    uint row_end[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
        for (int h = 0; h < 2; h++)
            row_end[mt][h] = fused_row_end(row0 + 16 * mt + 8 * h, n_k, CAUSAL, causal_off);
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

    for (uint j0 = 0; j0 < kv_end; j0 += BN) {
        cp_async_wait_all();
        barrier(CLK_LOCAL_MEM_FENCE); /* K_j (and Q) ready; V_{j-1} reads done */
        load_tile(v_tile, v_head, (uint)j0, BN, n_k, tid);
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
        int need_mask = j0 + BN > n_k;
#if CAUSAL
        need_mask |= (long)j0 + BN - 1 > (long)q0 + causal_off;
#endif
        if (need_mask) {
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int seen = fused_visible_keys(row_end[mt][h], j0, BN);
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
            load_tile(k_tile, k_head, j0 + BN, BN, n_k, tid);
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
     * softmax is undefined. */
    __global uint *o_head = (__global uint *)(o + (size_t)bh * n_q * D);
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const float l = quad_sum(l_run[mt][h]);
            const uint row = row0 + 16 * mt + 8 * h;
            if (row >= n_q)
                continue;
            const int sees_key = row_end[mt][h] > 0;
            const float inv = fused_row_scale(l, m_run[mt][h] * scale_log2, sees_key,
                                              FUSED_LIMIT_F16);
#pragma unroll
            for (int n = 0; n < NT_O; n++)
                o_head[(size_t)row * (D / 2) + (n * 8 + 2 * t) / 2] =
                    pack_half2(acc[mt][n][2 * h] * inv, acc[mt][n][2 * h + 1] * inv);
        }
    }
}
