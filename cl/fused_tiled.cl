/* SPDX-License-Identifier: MIT */
/*
 * Fused attention built like a register-tiled GEMM, OpenCL C 1.2 and no
 * extension: the portable kernel for GPUs of every vendor (and fp32 on
 * NVIDIA). Two GEMMs per key block with the online softmax between them:
 *
 *   S = Q K^T   (BM x BN)    each work-item a TM x TN micro-tile in registers
 *   P = exp2(S - m)          the row maximum agreed through local memory
 *   O = O a + P V (BM x D)   each work-item the same TM rows x OC float4s
 *
 * Work-item (ty, tx), ty < TY = BM / TM, tx < TX: rows ty + i TY (i < TM),
 * score columns tx + j TX (j < TN = BN / TX), output float4 columns
 * tx + k TX (k < OC = DP / (4 TX)). Strided ownership keeps the local reads
 * of a warp / wavefront on distinct banks or one broadcast address: Q, K and
 * V rows are DP + 4 floats apart, P rows BN + 8.
 *
 * Build options (beside fused_grid.clh's):
 *   -DD=<head dim>  -DDP=<D rounded up to a multiple of 4 TX>
 *   -DBM -DBN -DTM -DTX   (work-group size TY * TX)
 *   -DDTYPE_F16 (optional: half storage, float arithmetic)
 */
#include "dtype.clh"
#include "fused_grid.clh"
#include "fused_finish.clh"

#if BM % TM || BN % TX || DP % (4 * TX) || TX % 4
#error "BM must be a multiple of TM, BN and DP / 4 of TX, TX of 4"
#endif

#define TY (BM / TM)
#define TN (BN / TX)
#define NT (TY * TX)
#define D4 (DP / 4)          /* float4 columns of a row */
#define OC (D4 / TX)         /* float4 output columns per work-item */
#define RS (D4 + 1)          /* Q, K, V row stride in float4s: DP + 4 floats */
#define PS (BN + 8)          /* P row stride in floats */

#ifdef DTYPE_F16
#define SCORE_LIMIT FUSED_LIMIT_F16
#define LOAD4(p, i) vload_half4(0, (p) + (i))
#define STORE4(v, p, i) vstore_half4_rte((v), 0, (p) + (i))
#else
#define SCORE_LIMIT FUSED_LIMIT_F32
#define LOAD4(p, i) vload4(0, (p) + (i))
#define STORE4(v, p, i) vstore4((v), 0, (p) + (i))
#endif

/* Element e of v, without taking its address (which would put it in
 * memory). */
static inline float lane(float4 v, uint e)
{
    return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w;
}

/* Float4 c4 of a row that starts at `src`, times `mul`; zeros past D. */
static inline float4 load_row4(__global const store_t *src, uint c4, float mul)
{
    const uint x = 4 * c4;
#if D % 4 == 0
    if (x < D)
        return LOAD4(src, x) * mul;
    return (float4)(0.0f);
#else
    float4 r;
    r.x = x + 0 < D ? LOAD(src, x + 0) * mul : 0.0f;
    r.y = x + 1 < D ? LOAD(src, x + 1) * mul : 0.0f;
    r.z = x + 2 < D ? LOAD(src, x + 2) * mul : 0.0f;
    r.w = x + 3 < D ? LOAD(src, x + 3) * mul : 0.0f;
    return r;
#endif
}

/* Keys [j0, j0 + BN) of one head's K or V into `tile`; keys at or past
 * `end` are zeros (their scores are masked, their weights 0). */
static inline void load_keys(__local float4 *tile, __global const store_t *head, ulong st,
                             uint j0, uint end, uint lid)
{
    for (uint idx = lid; idx < BN * D4; idx += NT) {
        const uint row = idx / D4, c4 = idx % D4;
        tile[row * RS + c4] = j0 + row < end ? load_row4(head + (j0 + row) * st, c4, 1.0f)
                                             : (float4)(0.0f);
    }
}

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void attention_fused(FUSED_PARAMS(store_t))
{
    __local float4 q_tile[BM * RS];
    __local float4 k_tile[BN * RS];
    __local float4 v_tile[BN * RS];
    __local float p_tile[BM * PS] __attribute__((aligned(16))); /* vload4 reads */
    __local float red[BM * TX];

    const uint lid = get_local_id(0);
    const uint ty = lid / TX, tx = lid % TX;
    const struct fused_place at = fused_place_of(n_q, n_k, kv_heads, n_rtiles, splits,
                                                 split_keys, kv_lens, q_lens, BM);
    __global const store_t *k_head = k + fused_key_index(&at, 0, k_off, k_sb, k_sh, 0);
    __global const store_t *v_head = v + fused_key_index(&at, 0, v_off, v_sb, v_sh, 0);

    /* Q, scaled into the log2 domain once. */
    for (uint idx = lid; idx < BM * D4; idx += NT) {
        const uint row = idx / D4, c4 = idx % D4;
        q_tile[row * RS + c4] =
            at.r0 + row < at.n_rows
                ? load_row4(q + fused_row_index(&at, at.r0 + row, q_off, q_sb, q_sh, q_st), c4,
                            scale_log2)
                : (float4)(0.0f);
    }

    float4 acc[TM][OC];
    float m[TM], l[TM];
    uint row_end[TM];
#pragma unroll
    for (int i = 0; i < TM; i++) {
        const uint row = at.r0 + ty + i * TY;
        row_end[i] = row < at.n_rows ? fused_token_end(row / GROUP, at.kv_len, at.causal_off)
                                     : 0u;
        row_end[i] = min(row_end[i], at.kv_end);
        m[i] = -INFINITY;
        l[i] = 0.0f;
#pragma unroll
        for (int k4 = 0; k4 < OC; k4++)
            acc[i][k4] = (float4)(0.0f);
    }
    /* Keys every row of the tile sees (none when a row is past the
     * sequence): blocks below that need no mask. */
    const uint tile_first = at.r0 + BM <= at.n_rows
        ? min(fused_token_end(at.r0 / GROUP, at.kv_len, at.causal_off), at.kv_end) : 0u;

    for (uint j0 = at.kv_begin; j0 < at.kv_end; j0 += BN) {
        barrier(CLK_LOCAL_MEM_FENCE); /* the previous block's tiles are read */
        load_keys(k_tile, k_head, k_st, j0, at.kv_end, lid);
        load_keys(v_tile, v_head, v_st, j0, at.kv_end, lid);
        barrier(CLK_LOCAL_MEM_FENCE);

        float s[TM][TN];
#pragma unroll
        for (int i = 0; i < TM; i++)
#pragma unroll
            for (int j = 0; j < TN; j++)
                s[i][j] = 0.0f;
        for (int c4 = 0; c4 < D4; c4++) {
            float4 a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; i++)
                a[i] = q_tile[(ty + i * TY) * RS + c4];
#pragma unroll
            for (int j = 0; j < TN; j++)
                b[j] = k_tile[(tx + j * TX) * RS + c4];
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) {
                    s[i][j] = fma(a[i].x, b[j].x, s[i][j]);
                    s[i][j] = fma(a[i].y, b[j].y, s[i][j]);
                    s[i][j] = fma(a[i].z, b[j].z, s[i][j]);
                    s[i][j] = fma(a[i].w, b[j].w, s[i][j]);
                }
        }
        /* Masked and out-of-range keys get -inf, where the block needs it. */
        if (j0 + BN > tile_first) {
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++)
                    if (j0 + tx + j * TX >= row_end[i])
                        s[i][j] = -INFINITY;
        }
        /* The row maximum over the TX work-items that share the row. */
#pragma unroll
        for (int i = 0; i < TM; i++) {
            float mx = s[i][0];
#pragma unroll
            for (int j = 1; j < TN; j++)
                mx = fmax(mx, s[i][j]);
            red[(ty + i * TY) * TX + tx] = mx;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
        for (int i = 0; i < TM; i++) {
            const uint row = ty + i * TY;
            float mx = m[i];
            for (int t = 0; t < TX; t++)
                mx = fmax(mx, red[row * TX + t]);
            /* A row that has seen no visible key keeps m = -inf: no
             * exp2(-inf - -inf). */
            const float alpha = mx == -INFINITY ? 1.0f : exp2(m[i] - mx);
            float sum = 0.0f;
#pragma unroll
            for (int j = 0; j < TN; j++) {
                const float p = mx == -INFINITY ? 0.0f : exp2(s[i][j] - mx);
                sum += p;
                p_tile[row * PS + tx + j * TX] = p;
            }
            l[i] = l[i] * alpha + sum; /* this work-item's columns only */
            m[i] = mx;
#pragma unroll
            for (int k4 = 0; k4 < OC; k4++)
                acc[i][k4] *= alpha;
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* P complete */

        for (int j4 = 0; j4 < BN / 4; j4++) {
            float4 p[TM];
#pragma unroll
            for (int i = 0; i < TM; i++)
                p[i] = vload4(0, p_tile + (ty + i * TY) * PS + 4 * j4);
#pragma unroll
            for (int jj = 0; jj < 4; jj++) {
                const uint j = 4 * j4 + jj;
                float4 vv[OC];
#pragma unroll
                for (int k4 = 0; k4 < OC; k4++)
                    vv[k4] = v_tile[j * RS + tx + k4 * TX];
#pragma unroll
                for (int i = 0; i < TM; i++) {
                    const float pj = lane(p[i], jj);
#pragma unroll
                    for (int k4 = 0; k4 < OC; k4++)
                        acc[i][k4] = fma((float4)(pj), vv[k4], acc[i][k4]);
                }
            }
        }
    }

    /* The row sums: each work-item holds its columns' share. */
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int i = 0; i < TM; i++)
        red[(ty + i * TY) * TX + tx] = l[i];
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int i = 0; i < TM; i++) {
        const uint r = ty + i * TY, row = at.r0 + r;
        float sum = 0.0f;
        for (int t = 0; t < TX; t++)
            sum += red[r * TX + t];
        if (row >= n_q * GROUP)
            continue; /* a row of the last tile past the tensor */
        const int live = row < at.n_rows;
        const uint end = live ? fused_token_end(row / GROUP, at.kv_len, at.causal_off) : 0u;
#if SPLIT
        /* The chunk's unnormalised accumulator and (max, sum); cl/combine.cl
         * finishes the row (and writes the zeros of rows past the sequence). */
        if (!live)
            continue;
        const ulong w = (ulong)at.split * batch * heads * n_q + fused_row_id(&at, row, heads, n_q);
#pragma unroll
        for (int k4 = 0; k4 < OC; k4++) {
            const uint x = 4 * (tx + k4 * TX);
            if (x + 4 <= D)
                vstore4(acc[i][k4], 0, part_o + w * D + x);
#if D % 4
            else
                for (uint e = 0; x + e < D; e++)
                    part_o[w * D + x + e] = lane(acc[i][k4], e);
#endif
        }
        if (tx == 0) {
            part_ml[2 * w] = m[i];
            part_ml[2 * w + 1] = sum;
        }
#else
        const float inv = live ? fused_row_scale(sum, m[i], end > 0, SCORE_LIMIT) : 0.0f;
        __global store_t *o_row = o + fused_row_index(&at, row, o_off, o_sb, o_sh, o_st);
#pragma unroll
        for (int k4 = 0; k4 < OC; k4++) {
            const uint x = 4 * (tx + k4 * TX);
            const float4 out = acc[i][k4] * inv;
            if (x + 4 <= D)
                STORE4(out, o_row, x);
#if D % 4
            else
                for (uint e = 0; x + e < D; e++)
                    STORE(lane(out, e), o_row, x + e);
#endif
        }
#if LSE_OUT
        if (tx == 0)
            lse[fused_row_id(&at, row, heads, n_q)] =
                live ? fused_row_lse(sum, m[i], end > 0, inv) : -INFINITY;
#endif
#endif
    }
}
