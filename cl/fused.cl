/*
 * Fused attention, portable OpenCL C 1.2: FlashAttention-style tiles with an
 * online softmax. One work-group owns BM query rows of one head and walks the
 * key/value blocks of BN rows; the BM x BN score tile lives in local memory
 * only, so S never reaches global memory.
 *
 * Build options (all required unless noted):
 *   -DD=<head dim>  -DDP=<D rounded up to a multiple of TPR>
 *   -DBM=<query rows per group>  -DBN=<key rows per block>
 *   -DTPR=<work-items per query row>  (work-group size = BM * TPR)
 *   -DCAUSAL=0|1    -DDTYPE_F16 (optional: half storage, float arithmetic)
 *
 * Work-item (r, c) = (lid / TPR, lid % TPR) owns query row r: the score
 * columns j = c + t*TPR and the output columns x = c + t*TPR. Rows past Nq
 * still take part in every barrier and only skip the final store.
 */
#include "dtype.clh"
#include "fused_grid.clh"
#include "fused_finish.clh"

#define WG (BM * TPR)
#define S_PER_ITEM (BN / TPR)
#define O_PER_ITEM (DP / TPR)
#define KV_STRIDE (DP + 1) /* +1: rows of K fall in different local banks */
#define P_STRIDE (BN + 1)

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void attention_fused(__global const store_t *q, __global const store_t *k,
                     __global const store_t *v, __global store_t *o,
                     const uint n_q, const uint n_k, const uint heads, const uint group,
                     const uint n_qblocks, const float scale_log2, const int causal_off)
{
    __local float q_tile[BM * DP];
    __local float kv_tile[BN * KV_STRIDE];
    __local float p_tile[BM * P_STRIDE];

    const uint lid = get_local_id(0);
    const uint r = lid / TPR, c = lid % TPR;
    const struct fused_place at = fused_place_of(n_qblocks, heads, group, BM);
    const uint q0 = at.q0;
    const size_t q_base = (size_t)at.bh * n_q * D;
    const size_t kv_base = (size_t)at.kv_head * n_k * D;

    for (uint idx = lid; idx < BM * DP; idx += WG) {
        uint row = idx / DP, x = idx % DP;
        q_tile[idx] = (q0 + row < n_q && x < D) ? LOAD(q, q_base + (size_t)(q0 + row) * D + x) : 0.0f;
    }

    float acc[O_PER_ITEM];
    for (int t = 0; t < O_PER_ITEM; t++)
        acc[t] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    const uint row_i = q0 + r;
    const uint row_end = fused_row_end(row_i, n_k, CAUSAL, causal_off);

    /* Causal: keys past the block's last visible one are never visited. */
    const uint kv_end = fused_kv_end(n_k, q0, BM, CAUSAL, causal_off);
    for (uint j0 = 0; j0 < kv_end; j0 += BN) {
        barrier(CLK_LOCAL_MEM_FENCE); /* previous block's V reads are done */
        for (uint idx = lid; idx < BN * DP; idx += WG) {
            uint row = idx / DP, x = idx % DP;
            kv_tile[row * KV_STRIDE + x] = (j0 + row < n_k && x < D)
                ? LOAD(k, kv_base + (size_t)(j0 + row) * D + x) : 0.0f;
        }
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
        const int seen = fused_visible_keys(row_end, j0, BN);
        for (int t = 0; t < S_PER_ITEM; t++) {
            const int j = (int)(c + t * TPR);
            p_tile[r * P_STRIDE + j] = j < seen ? s[t] * scale_log2 : -INFINITY;
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* scores written; K no longer read */

        for (uint idx = lid; idx < BN * DP; idx += WG) {
            uint row = idx / DP, x = idx % DP;
            kv_tile[row * KV_STRIDE + x] = (j0 + row < n_k && x < D)
                ? LOAD(v, kv_base + (size_t)(j0 + row) * D + x) : 0.0f;
        }
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

    if (row_i < n_q) {
        const int sees_key = row_end > 0;
#ifdef DTYPE_F16
        const float inv = fused_row_scale(l, m, sees_key, FUSED_LIMIT_F16);
#else
        const float inv = fused_row_scale(l, m, sees_key, FUSED_LIMIT_F32);
#endif
        for (int t = 0; t < O_PER_ITEM; t++) {
            uint x = c + t * TPR;
            if (x < D)
                STORE(acc[t] * inv, o, q_base + (size_t)row_i * D + x);
        }
    }
}
