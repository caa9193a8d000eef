/* SPDX-License-Identifier: MIT */
/*
 * Row softmax of the naive path: reads a row of S from global memory and
 * writes P = softmax(row) to a separate buffer (the seed's model: S and P are
 * both materialized). S already holds scale * Q K^T. One work-group per row.
 *
 * Build options: -DWG=<work-group size, a power of two>, -DCAUSAL=0|1,
 *   -DCAUSAL_BR=0|1, -DKV_LENS=0|1, -DQ_LENS=0|1, -DLSE_OUT=0|1,
 *   -DDTYPE_F16 (optional), -DPER_ITEM=<ceil(Nk / WG)> (optional: the row is
 *   held in registers and S read once; without it rows of any length stream
 *   through three passes). Masked keys (causal) get probability 0; a row with
 *   no visible key is all zeros; NaN and infinities propagate as IEEE
 *   arithmetic does (clattn_reference).
 */
#include "dtype.clh"

/* Tree reduction over the work-group; every work-item gets the result. */
static float reduce_max(__local float *buf, float x)
{
    const uint lid = get_local_id(0);
    buf[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint w = WG / 2; w > 0; w >>= 1) {
        if (lid < w)
            buf[lid] = fmax(buf[lid], buf[lid + w]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float r = buf[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

static float reduce_sum(__local float *buf, float x)
{
    const uint lid = get_local_id(0);
    buf[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint w = WG / 2; w > 0; w >>= 1) {
        if (lid < w)
            buf[lid] += buf[lid + w];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float r = buf[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* Keys [0, seen) that row `row` ([B, H, Nq] order) sees: its sequence's
 * keys, under a causal mask those up to its own, none past its q_len. 64-bit,
 * since a row index plus the offset can pass what an int holds. */
static uint visible_keys(size_t row, uint n_q, uint n_k, uint heads, int causal_off,
                         __global const uint *kv_lens, __global const uint *q_lens)
{
    const uint i = (uint)(row % n_q), b = (uint)(row / n_q / heads);
    uint kv_len = n_k, q_len = n_q;
#if KV_LENS
    kv_len = min(kv_lens[b], n_k);
#endif
#if Q_LENS
    q_len = min(q_lens[b], n_q);
#endif
    if (i >= q_len)
        return 0;
    long seen = kv_len;
#if CAUSAL
#if CAUSAL_BR
    causal_off = (int)((long)kv_len - (long)q_len);
#endif
    seen = min(seen, (long)i + causal_off + 1);
#endif
    return seen < 0 ? 0u : (uint)seen;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void softmax_rows(__global const store_t *s, __global store_t *p, const uint n_q,
                  const uint n_k, const uint heads, const int causal_off,
                  __global const uint *kv_lens, __global const uint *q_lens,
                  __global float *lse)
{
    __local float buf[WG];
    const size_t row = get_group_id(0);
    const uint lid = get_local_id(0);
    const size_t base = row * n_k;
    const uint seen = visible_keys(row, n_q, n_k, heads, causal_off, kv_lens, q_lens);
#ifdef PER_ITEM
    /* One read of S: each work-item keeps its PER_ITEM scores (coalesced
     * columns lid, lid + WG, ...) and exponentiates them once. */
    float x[PER_ITEM];
    float mx = -INFINITY;
    for (int t = 0; t < PER_ITEM; t++) {
        uint j = lid + t * WG;
        x[t] = j < seen ? LOAD(s, base + j) : -INFINITY;
        mx = fmax(mx, x[t]);
    }
    mx = reduce_max(buf, mx);
    float sum = 0.0f;
    for (int t = 0; t < PER_ITEM; t++) {
        uint j = lid + t * WG;
        x[t] = j < seen ? exp(x[t] - mx) : 0.0f;
        sum += x[t];
    }
    sum = reduce_sum(buf, sum);
    const float inv = sum == 0.0f ? 0.0f : 1.0f / sum; /* NaN stays NaN */
#if LSE_OUT
    if (lid == 0)
        lse[row] = seen == 0 ? -INFINITY : mx + log(sum);
#endif
    for (int t = 0; t < PER_ITEM; t++) {
        uint j = lid + t * WG;
        if (j < n_k)
            STORE(x[t] * inv, p, base + j);
    }
#else
    float mx = -INFINITY;
    for (uint j = lid; j < seen; j += WG)
        mx = fmax(mx, LOAD(s, base + j));
    mx = reduce_max(buf, mx);
    float sum = 0.0f;
    for (uint j = lid; j < seen; j += WG)
        sum += exp(LOAD(s, base + j) - mx);
    sum = reduce_sum(buf, sum);
    const float inv = sum == 0.0f ? 0.0f : 1.0f / sum; /* NaN stays NaN */
#if LSE_OUT
    if (lid == 0)
        lse[row] = seen == 0 ? -INFINITY : mx + log(sum);
#endif
    for (uint j = lid; j < n_k; j += WG)
        STORE(j < seen ? exp(LOAD(s, base + j) - mx) * inv : 0.0f, p, base + j);
#endif
}
