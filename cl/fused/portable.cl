/* SPDX-License-Identifier: MIT */
/*
 * Fused attention, portable OpenCL C 1.2: FlashAttention-style tiles with an
 * online softmax. One work-group owns BM packed query rows (fused_grid.clh:
 * the query heads of one key/value head, times their tokens) and walks one
 * chunk of the keys in blocks of BN; the BM x BN score tile lives in local
 * memory only, so S never reaches global memory.
 *
 * Build options (beside fused_grid.clh's and fused_score.clh's):
 *   -DD=<head dim of Q, K>  -DDP=<D rounded up to a multiple of TPR>
 *   -DDV=<head dim of V, O>  -DDVP=<DV rounded up likewise>
 *   -DBM=<rows per group>  -DBN=<keys per block>
 *   -DTPR=<work-items per row>  (work-group size = BM * TPR)
 *   -DDTYPE_F16 or -DDTYPE_BF16 (optional: half or bfloat16 storage, float
 *   arithmetic)
 *
 * Work-item (r, c) = (lid / TPR, lid % TPR) owns row r: the score columns
 * j = c + t*TPR and the output columns x = c + t*TPR. Rows past the
 * sequence's still take part in every barrier and only write zeros.
 */
#include "dtype.clh"
#include "fused_grid.clh"
#include "fused_finish.clh"
#include "fused_score.clh"
#include "kv_cache.clh"

#define WG (BM * TPR)
#define S_PER_ITEM (BN / TPR)
#define O_PER_ITEM (DVP / TPR)
#define KV_COLS (DP > DVP ? DP : DVP)
#define KV_STRIDE (KV_COLS + 1) /* +1: rows of K fall in different local banks */
#define P_STRIDE (BN + 1)
#define LOG2E 1.44269504088896341f

/* Keys [j0, j0 + BN) of one head's K or V (stored as `type`, `cols` columns
 * of which `width` are the tensor's) into the tile; keys past `end` are
 * zeros and never read. */
static inline void load_keys(__local float *tile, const struct kv_head *src, const int type,
                             uint j0, uint end, uint lid, uint cols, uint width)
{
    for (uint idx = lid; idx < BN * cols; idx += WG) {
        const uint row = idx / cols, x = idx % cols;
        tile[row * KV_STRIDE + x] = (j0 + row < end && x < width)
                                        ? kv_load(src, type, kv_row(src, j0 + row) + x) : 0.0f;
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void attention_fused(FUSED_PARAMS(store_t))
{
    __local float q_tile[BM * DP];
    __local float kv_tile[BN * KV_STRIDE];
    __local float p_tile[BM * P_STRIDE];

    const uint lid = get_local_id(0);
    const uint r = lid / TPR, c = lid % TPR;
    const struct fused_place at = fused_place_of(n_q, n_k, kv_heads, n_rtiles, splits,
                                                 split_keys, kv_lens, q_lens, BM, BN);
    const struct kv_head k_head = kv_head_of(&at, k, k_off, k_sb, k_sh, k_st, block_table,
                                             bt_stride, n_pages, k_scale);
    const struct kv_head v_head = kv_head_of(&at, v, v_off, v_sb, v_sh, v_st, block_table,
                                             bt_stride, n_pages, v_scale);

    for (uint idx = lid; idx < BM * DP; idx += WG) {
        const uint row = idx / DP, x = idx % DP;
        q_tile[idx] = (at.r0 + row < at.n_rows && x < D)
            ? LOAD(q, fused_row_index(&at, at.r0 + row, q_off, q_sb, q_sh, q_st) + x) : 0.0f;
    }

    float acc[O_PER_ITEM];
    for (int t = 0; t < O_PER_ITEM; t++)
        acc[t] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    const uint row = at.r0 + r;
    const int live = row < at.n_rows;
    const uint token = row / GROUP, head = at.hk * GROUP + row % GROUP;
    const uint row_end = live ? fused_token_end(token, at.kv_len, at.causal_off) : 0u;
    const uint row_begin = live ? fused_token_begin(token, at.begin_off) : 0u;
    const struct fused_row_variants rv = fused_row_variants_of(
        at.b, head, token, at.align_off, heads, FUSED_FLAGS, alibi, m_off, m_sb, m_sh, m_sr);

    for (uint j0 = at.kv_begin; j0 < at.kv_end; j0 += BN) {
        barrier(CLK_LOCAL_MEM_FENCE); /* previous block's V reads are done */
        load_keys(kv_tile, &k_head, K_TYPE, j0, at.kv_end, lid, DP, D);
        barrier(CLK_LOCAL_MEM_FENCE);

        float s[S_PER_ITEM];
        for (int t = 0; t < S_PER_ITEM; t++)
            s[t] = 0.0f;
        for (int x = 0; x < DP; x++) {
            float qx = q_tile[r * DP + x];
            for (int t = 0; t < S_PER_ITEM; t++)
                s[t] = mad(qx, kv_tile[(c + t * TPR) * KV_STRIDE + x], s[t]);
        }
        /* Scores in the log2 domain; masked or out-of-range keys get -inf. */
        const int seen = fused_visible_keys(min(row_end, at.kv_end), j0, BN);
        const int first = row_begin > j0 ? (int)min(row_begin - j0, (uint)BN) : 0;
        for (int t = 0; t < S_PER_ITEM; t++) {
            const int j = (int)(c + t * TPR);
            float x = -INFINITY;
            if (j >= first && j < seen) {
                if (FUSED_FLAGS & FUSED_F_PER_SCORE) {
                    int hidden = 0;
                    x = fused_variant_score(s[t] * scale, j0 + (uint)j, &rv, FUSED_FLAGS, softcap,
                                            mask, &hidden) * LOG2E;
                    x = hidden ? -INFINITY : x;
                } else {
                    x = s[t] * scale_log2;
                }
            }
            p_tile[r * P_STRIDE + j] = x;
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* scores written; K no longer read */

        load_keys(kv_tile, &v_head, V_TYPE, j0, at.kv_end, lid, DVP, DV);
        float m_blk = -INFINITY;
        for (int j = 0; j < BN; j++)
            m_blk = fmax(m_blk, p_tile[r * P_STRIDE + j]);
        float m_new = fmax(m, m_blk);
        /* A row that has seen no visible key yet keeps m = -inf: guard the
         * rescale so it does not compute exp2(-inf - -inf). */
        float alpha = (m_new == -INFINITY) ? 1.0f : exp2(m - m_new);
        float p_own[S_PER_ITEM];
        for (int t = 0; t < S_PER_ITEM; t++) {
            float sv = p_tile[r * P_STRIDE + c + t * TPR];
            p_own[t] = (m_new == -INFINITY) ? 0.0f : exp2(sv - m_new);
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* every max read before p overwrites s */
        for (int t = 0; t < S_PER_ITEM; t++)
            p_tile[r * P_STRIDE + c + t * TPR] = p_own[t];
        barrier(CLK_LOCAL_MEM_FENCE); /* p and V visible to the whole group */

        float l_blk = 0.0f;
        for (int t = 0; t < O_PER_ITEM; t++)
            acc[t] *= alpha;
        for (int j = 0; j < BN; j++) {
            float p = p_tile[r * P_STRIDE + j];
            l_blk += p;
            for (int t = 0; t < O_PER_ITEM; t++)
                acc[t] = mad(p, kv_tile[j * KV_STRIDE + c + t * TPR], acc[t]);
        }
        l = l * alpha + l_blk;
        m = m_new;
    }

    if (row >= n_q * GROUP)
        return; /* a row of the last tile past the tensor */
    /* A row sees a key when its range holds one and, where the variants can
     * hide keys one by one, one was left visible. */
    const int sees_key = row_end > row_begin &&
                         (!(FUSED_FLAGS & FUSED_F_HIDES) || m != -INFINITY);
#if SPLIT
    /* The chunk's unnormalised accumulator and (max, sum); cl/fused/combine.cl
     * finishes the row (and writes the zeros of rows past the sequence). */
    if (!live)
        return;
    const ulong w = (ulong)at.split * batch * heads * n_q + fused_row_id(&at, row, heads, n_q);
    for (int t = 0; t < O_PER_ITEM; t++) {
        const uint x = c + t * TPR;
        if (x < DV)
            part_o[w * DV + x] = acc[t];
    }
    if (c == 0) {
        part_ml[2 * w] = m;
        part_ml[2 * w + 1] = l;
    }
    (void)sees_key;
#else
    const float sink = live && (FUSED_FLAGS & FUSED_F_SINKS) ? sinks[head] * LOG2E : -INFINITY;
    const float inv = live ? fused_row_scale_sink(l, m, sees_key, sink) : 0.0f;
    const ulong at_o = fused_row_index(&at, row, o_off, o_sb, o_sh, o_st);
    for (int t = 0; t < O_PER_ITEM; t++) {
        const uint x = c + t * TPR;
        if (x < DV && (live || !PACKED_Q)) /* a packed sequence's next rows are another's */
            STORE(acc[t] * inv, o, at_o + x);
    }
#if LSE_OUT
    if (c == 0)
        lse[fused_row_id(&at, row, heads, n_q)] =
            live ? fused_row_lse_sink(l, m, sees_key, inv, sink) : -INFINITY;
#endif
#endif
}
