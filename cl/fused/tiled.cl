/* SPDX-License-Identifier: MIT */
/*
 * Fused attention built like a register-tiled GEMM, OpenCL C 1.2 and no
 * extension: the portable kernel for GPUs of every vendor (and fp32 on
 * NVIDIA). Two GEMMs per key block with the online softmax between them,
 * each GEMM with its own work-item layout (P passes through local memory
 * anyway, so nothing ties them):
 *
 *   S = Q K^T  (BM x BN): work-item (ys, xs), ys < BM / TMS, xs < TXS, holds
 *              rows ys + i BM/TMS (i < TMS) x keys xs + j TXS (j < TNS)
 *   P = exp2(S - m)     the row maximum agreed through local memory; each
 *              S work-item keeps its share of the row sums
 *   O = O a + P V  (BM x D): work-item (yo, xo), yo < BM / TMO, xo < TXO,
 *              holds rows yo + i BM/TMO (i < TMO) x float4 columns
 *              xo + k TXO (k < OCO)
 *
 * A GEMM micro-tile of r x c values reads r + c floats from local memory
 * for r c FMAs; square tiles of 8 x 8 read one float per 4 FMAs, what a GPU
 * whose local memory delivers 32 floats per clock to 128 FMA lanes needs.
 * Strided ownership keeps the reads of a warp / wavefront on distinct banks
 * or one broadcast address: Q, K and V rows are DP + 4 floats apart, P rows
 * BN + PPAD.
 *
 * Build options (beside fused_grid.clh's):
 *   -DD=<head dim>  -DDP=<D rounded up to a multiple of 4 TXO>
 *   -DBM -DBN -DTMS -DTXS -DTMO   (work-group size NT = BM / TMS x TXS)
 *   -DKV_SHARED=0|1  K and V take turns in one local tile (less local
 *                    memory, V's loads after Q K^T)
 *   -DDTYPE_F16 or -DDTYPE_BF16 (optional: half or bfloat16 storage, float
 *   arithmetic)
 * and fused_score.clh's: the per-score variants apply to each S item's
 * scores in natural units, a window's left side and a mask where a block
 * crosses them; sinks join each row's sum at the finish. V's head dimension
 * is D (the host refuses another).
 *
 * K and V as the cache keeps them (cl/include/kv_cache.clh's -DK_TYPE,
 * -DV_TYPE, -DPAGED): read through its accessors, a float4 at a time, where
 * either is quantized or paged (KV_GENERIC); through plain pointers and
 * vector loads otherwise. Packed (varlen) sequences find their rows and keys
 * through fused_grid.clh; a packed sequence's rows past its length are the
 * next one's, and are not written.
 */
#include "dtype.clh"
#include "fused_grid.clh"
#include "fused_finish.clh"
#include "fused_score.clh"
#include "kv_cache.clh"

#define TYS (BM / TMS)
#define TNS (BN / TXS)
#define NT (TYS * TXS)
#define TYO (BM / TMO)
#define TXO (NT / TYO)
#define D4 (DP / 4)          /* float4 columns of a row */
#define OCO (D4 / TXO)       /* float4 output columns per work-item */
#define RS (D4 + 1)          /* Q, K, V row stride in float4s: DP + 4 floats */
/* P rows: the S work-items of a warp that write one column block sit on
 * TXS consecutive banks, the rows of a warp TXS banks apart. */
#define PPAD (TXS < 32 ? TXS : 4)
#define PS (BN + PPAD)

#if BM % TMS || BN % TXS || BN % 4 || BM % TMO || NT % TYO || D4 % TXO || PPAD % 4
#error "tiled: the layouts must divide the tiles (see src/fused/tiled.c)"
#endif

#define LOG2E 1.44269504088896341f
#define LN2 0.69314718055994531f

#define LOAD4(p, i) LOAD_VEC(4, (p) + (i))
#ifdef DTYPE_F16
#define STORE4(v, p, i) vstore_half4_rte((v), 0, (p) + (i))
#elif defined(DTYPE_BF16)
#define STORE4(v, p, i)                                                                     \
    do {                                                                                    \
        const float4 v4_ = (v);                                                             \
        STORE(v4_.x, p, (i) + 0), STORE(v4_.y, p, (i) + 1), STORE(v4_.z, p, (i) + 2),       \
            STORE(v4_.w, p, (i) + 3);                                                       \
    } while (0)
#else
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

/* Keys [j0, j0 + BN) of K or V into a local tile, in rounds of KV_CHUNK
 * float4s per work-item: the loads of a round are issued before its stores,
 * so that their latencies overlap, while the registers they take stay few.
 * Keys at or past `end` are zeros: their scores are masked and their
 * weights 0. */
#define KV_PER_ITEM ((BN * D4 + NT - 1) / NT)
#define KV_CHUNK (KV_PER_ITEM < 4 ? KV_PER_ITEM : 4)
#define KV_IN(idx) (BN * D4 % NT == 0 || (idx) < BN * D4)

#if KV_GENERIC
/* Float4 c4 of key j's row of a cache head stored as `type`; zeros past D
 * (a q8_0 / q4_0 / fp8 row holds whole blocks: D % 32 == 0). */
static inline float4 kv_row4(const struct kv_head *h, const int type, uint j, uint c4)
{
    const uint x = 4 * c4;
    const ulong at = kv_row(h, j) + x;
#if D % 4 == 0
    if (x < D)
        return kv_load4(h, type, at);
    return (float4)(0.0f);
#else
    float4 r;
    r.x = x + 0 < D ? kv_load(h, type, at + 0) : 0.0f;
    r.y = x + 1 < D ? kv_load(h, type, at + 1) : 0.0f;
    r.z = x + 2 < D ? kv_load(h, type, at + 2) : 0.0f;
    r.w = x + 3 < D ? kv_load(h, type, at + 3) : 0.0f;
    return r;
#endif
}
#define KV_SRC const struct kv_head *head, const int type
#define KV_ROW4(j, c4) kv_row4(head, type, (j), (c4))
#else
#define KV_SRC __global const store_t *head, ulong st
#define KV_ROW4(j, c4) load_row4(head + (j) * st, (c4), 1.0f)
#endif

static inline void keys_load(__local float4 *tile, KV_SRC, uint j0, uint end, uint lid)
{
    for (int t0 = 0; t0 < KV_PER_ITEM; t0 += KV_CHUNK) {
        float4 r[KV_CHUNK];
#pragma unroll
        for (int t = 0; t < KV_CHUNK; t++) {
            const uint idx = lid + (t0 + t) * NT, row = idx / D4, c4 = idx % D4;
            r[t] = t0 + t < KV_PER_ITEM && KV_IN(idx) && j0 + row < end
                ? KV_ROW4(j0 + row, c4) : (float4)(0.0f);
        }
#pragma unroll
        for (int t = 0; t < KV_CHUNK; t++) {
            const uint idx = lid + (t0 + t) * NT, row = idx / D4, c4 = idx % D4;
            if (t0 + t < KV_PER_ITEM && KV_IN(idx))
                tile[row * RS + c4] = r[t];
        }
    }
}

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void attention_fused(FUSED_PARAMS(store_t))
{
    __local float4 q_tile[BM * RS];
    __local float4 k_tile[BN * RS];
#if KV_SHARED
#define v_tile k_tile
#else
    __local float4 v_tile[BN * RS];
#endif
    __local float p_tile[BM * PS] __attribute__((aligned(16))); /* vload4 reads */
    __local float red[BM * TXS];   /* per-row partial maxima, then sums */
    __local float alpha_of[BM];    /* each row's rescale of the block */
    __local float m_of[BM];        /* each row's final maximum */

    const uint lid = get_local_id(0);
    const uint ys = lid / TXS, xs = lid % TXS; /* the S layout */
    const uint yo = lid / TXO, xo = lid % TXO; /* the O layout */
    const struct fused_place at = fused_place_of(n_q, n_k, kv_heads, n_rtiles, splits,
                                                 split_keys, kv_lens, q_lens, BM, BN);
#if KV_GENERIC
    const struct kv_head k_cache = kv_head_of(&at, k, k_off, k_sb, k_sh, k_st, block_table,
                                              bt_stride, n_pages, k_scale);
    const struct kv_head v_cache = kv_head_of(&at, v, v_off, v_sb, v_sh, v_st, block_table,
                                              bt_stride, n_pages, v_scale);
#define K_SRC &k_cache, K_TYPE
#define V_SRC &v_cache, V_TYPE
#else
    /* Key 0's row: a packed sequence's first key is k_first rows in. */
    __global const store_t *k_head = k + fused_key_index(&at, 0, k_off, k_sb, k_sh, k_st);
    __global const store_t *v_head = v + fused_key_index(&at, 0, v_off, v_sb, v_sh, v_st);
#define K_SRC k_head, k_st
#define V_SRC v_head, v_st
#endif

    /* Q, scaled into the log2 domain once. */
    for (uint idx = lid; idx < BM * D4; idx += NT) {
        const uint row = idx / D4, c4 = idx % D4;
        q_tile[row * RS + c4] =
            at.r0 + row < at.n_rows
                ? load_row4(q + fused_row_index(&at, at.r0 + row, q_off, q_sb, q_sh, q_st), c4,
                            scale_log2)
                : (float4)(0.0f);
    }

    float m[TMS], l[TMS];  /* S rows: running maximum, this item's share of the sum */
    uint row_end[TMS], row_begin[TMS];
    struct fused_row_variants rv[TMS];
#pragma unroll
    for (int i = 0; i < TMS; i++) {
        const uint row = at.r0 + ys + i * TYS, token = row / GROUP;
        row_end[i] = row < at.n_rows ? fused_token_end(token, at.kv_len, at.causal_off) : 0u;
        row_end[i] = min(row_end[i], at.kv_end);
        row_begin[i] = row < at.n_rows ? fused_token_begin(token, at.begin_off) : 0u;
        rv[i] = fused_row_variants_of(at.b, at.hk * GROUP + row % GROUP, token, at.align_off,
                                      heads, FUSED_FLAGS, alibi, m_off, m_sb, m_sh, m_sr);
        m[i] = -INFINITY;
        l[i] = 0.0f;
    }
    float4 acc[TMO][OCO];
#pragma unroll
    for (int i = 0; i < TMO; i++)
#pragma unroll
        for (int k4 = 0; k4 < OCO; k4++)
            acc[i][k4] = (float4)(0.0f);
    /* Keys every row of the tile sees (none when a row is past the
     * sequence): blocks below that need no mask. */
    const uint tile_first = at.r0 + BM <= at.n_rows
        ? min(fused_token_end(at.r0 / GROUP, at.kv_len, at.causal_off), at.kv_end) : 0u;
    /* ... and the first key its last row sees (a window's left side): the
     * blocks before it cross some row's window. */
    const uint tile_begin_last =
        fused_token_begin((min(at.r0 + BM, max(at.n_rows, 1u)) - 1) / GROUP, at.begin_off);

    for (uint j0 = at.kv_begin; j0 < at.kv_end; j0 += BN) {
        barrier(CLK_LOCAL_MEM_FENCE); /* the previous block's tiles are read */
        keys_load(k_tile, K_SRC, j0, at.kv_end, lid);
#if !KV_SHARED
        keys_load(v_tile, V_SRC, j0, at.kv_end, lid);
#endif
        barrier(CLK_LOCAL_MEM_FENCE);

        float s[TMS][TNS];
#pragma unroll
        for (int i = 0; i < TMS; i++)
#pragma unroll
            for (int j = 0; j < TNS; j++)
                s[i][j] = 0.0f;
        for (int c4 = 0; c4 < D4; c4++) {
            float4 a[TMS];
#pragma unroll
            for (int i = 0; i < TMS; i++)
                a[i] = q_tile[(ys + i * TYS) * RS + c4];
#pragma unroll
            for (int j = 0; j < TNS; j++) {
                const float4 b = k_tile[(xs + j * TXS) * RS + c4];
#pragma unroll
                for (int i = 0; i < TMS; i++) {
                    s[i][j] = fma(a[i].x, b.x, s[i][j]);
                    s[i][j] = fma(a[i].y, b.y, s[i][j]);
                    s[i][j] = fma(a[i].z, b.z, s[i][j]);
                    s[i][j] = fma(a[i].w, b.w, s[i][j]);
                }
            }
        }
        /* The per-score variants, in natural units (Q carries scale log2 e);
         * a hidden key's score -inf. */
        if (FUSED_FLAGS & FUSED_F_PER_SCORE) {
#pragma unroll
            for (int i = 0; i < TMS; i++)
#pragma unroll
                for (int j = 0; j < TNS; j++) {
                    const uint key = j0 + xs + j * TXS;
                    int hidden = 0;
                    if (key < row_end[i]) /* the mask's reads stay in its rows */
                        s[i][j] = fused_variant_score(s[i][j] * LN2, key, &rv[i], FUSED_FLAGS,
                                                      softcap, mask, &hidden) * LOG2E;
                    s[i][j] = hidden ? -INFINITY : s[i][j];
                }
        }
        /* Masked and out-of-range keys get -inf, where the block needs it. */
        if (j0 + BN > tile_first || ((FUSED_FLAGS & FUSED_F_WINDOW) && j0 < tile_begin_last)) {
#pragma unroll
            for (int i = 0; i < TMS; i++)
#pragma unroll
                for (int j = 0; j < TNS; j++) {
                    const uint key = j0 + xs + j * TXS;
                    if (key >= row_end[i] || key < row_begin[i])
                        s[i][j] = -INFINITY;
                }
        }
        /* The row maximum over the TXS items that share the row. */
#pragma unroll
        for (int i = 0; i < TMS; i++) {
            float mx = s[i][0];
#pragma unroll
            for (int j = 1; j < TNS; j++)
                mx = fmax(mx, s[i][j]);
            red[(ys + i * TYS) * TXS + xs] = mx;
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* maxima written; K read by all */
#if KV_SHARED
        keys_load(v_tile, V_SRC, j0, at.kv_end, lid); /* into K's tile */
#endif
#pragma unroll
        for (int i = 0; i < TMS; i++) {
            const uint row = ys + i * TYS;
            float mx = m[i];
            for (int t = 0; t < TXS; t++)
                mx = fmax(mx, red[row * TXS + t]);
            /* A row that has seen no visible key keeps m = -inf: no
             * exp2(-inf - -inf). */
            const float alpha = mx == -INFINITY ? 1.0f : exp2(m[i] - mx);
            float sum = 0.0f;
#pragma unroll
            for (int j = 0; j < TNS; j++) {
                const float p = mx == -INFINITY ? 0.0f : exp2(s[i][j] - mx);
                sum += p;
                p_tile[row * PS + xs + j * TXS] = p;
            }
            l[i] = l[i] * alpha + sum;
            m[i] = mx;
            if (xs == 0)
                alpha_of[row] = alpha;
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* P, the rescales and V complete */

#pragma unroll
        for (int i = 0; i < TMO; i++) {
            const float alpha = alpha_of[yo + i * TYO];
#pragma unroll
            for (int k4 = 0; k4 < OCO; k4++)
                acc[i][k4] *= alpha;
        }
        for (int j4 = 0; j4 < BN / 4; j4++) {
            float4 p[TMO];
#pragma unroll
            for (int i = 0; i < TMO; i++)
                p[i] = vload4(0, p_tile + (yo + i * TYO) * PS + 4 * j4);
#pragma unroll
            for (int jj = 0; jj < 4; jj++) {
#pragma unroll
                for (int k4 = 0; k4 < OCO; k4++) {
                    const float4 vv = v_tile[(4 * j4 + jj) * RS + xo + k4 * TXO];
#pragma unroll
                    for (int i = 0; i < TMO; i++)
                        acc[i][k4] = fma((float4)(lane(p[i], jj)), vv, acc[i][k4]);
                }
            }
        }
    }

    /* The row sums (each S item holds its columns' share) and maxima, to the
     * O layout's items through local memory. */
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int i = 0; i < TMS; i++) {
        red[(ys + i * TYS) * TXS + xs] = l[i];
        if (xs == 0)
            m_of[ys + i * TYS] = m[i];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int i = 0; i < TMO; i++) {
        const uint r = yo + i * TYO, row = at.r0 + r;
        float sum = 0.0f;
        for (int t = 0; t < TXS; t++)
            sum += red[r * TXS + t];
        const float mx = m_of[r];
        if (row >= n_q * GROUP)
            continue; /* a row of the last tile past the tensor */
        const int live = row < at.n_rows;
        const uint end = live ? fused_token_end(row / GROUP, at.kv_len, at.causal_off) : 0u;
        const uint begin = live ? fused_token_begin(row / GROUP, at.begin_off) : 0u;
        /* A row sees a key when its range holds one and, where the variants
         * can hide keys one by one, one was left visible. */
        const int sees_key = end > begin && (!(FUSED_FLAGS & FUSED_F_HIDES) || mx != -INFINITY);
#if SPLIT
        /* The chunk's unnormalised accumulator and (max, sum); cl/fused/combine.cl
         * finishes the row (and writes the zeros of rows past the sequence). */
        if (!live)
            continue;
        const ulong w = (ulong)at.split * batch * heads * n_q + fused_row_id(&at, row, heads, n_q);
#pragma unroll
        for (int k4 = 0; k4 < OCO; k4++) {
            const uint x = 4 * (xo + k4 * TXO);
            if (x + 4 <= D)
                vstore4(acc[i][k4], 0, part_o + w * D + x);
#if D % 4
            else
                for (uint e = 0; x + e < D; e++)
                    part_o[w * D + x + e] = lane(acc[i][k4], e);
#endif
        }
        if (xo == 0) {
            part_ml[2 * w] = mx;
            part_ml[2 * w + 1] = sum;
        }
        (void)sees_key;
#else
        const float sink = live && (FUSED_FLAGS & FUSED_F_SINKS)
                               ? sinks[at.hk * GROUP + row % GROUP] * LOG2E : -INFINITY;
        const float inv = live ? fused_row_scale_sink(sum, mx, sees_key, sink) : 0.0f;
        __global store_t *o_row = o + fused_row_index(&at, row, o_off, o_sb, o_sh, o_st);
        if (live || !PACKED_Q) { /* a packed sequence's next rows are another's */
#pragma unroll
            for (int k4 = 0; k4 < OCO; k4++) {
                const uint x = 4 * (xo + k4 * TXO);
                const float4 out = acc[i][k4] * inv;
                if (x + 4 <= D)
                    STORE4(out, o_row, x);
#if D % 4
                else
                    for (uint e = 0; x + e < D; e++)
                        STORE(lane(out, e), o_row, x + e);
#endif
            }
        }
#if LSE_OUT
        if (xo == 0)
            lse[fused_row_id(&at, row, heads, n_q)] =
                live ? fused_row_lse_sink(sum, mx, sees_key, inv, sink) : -INFINITY;
#endif
#endif
    }
}
