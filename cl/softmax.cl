/*
 * Row softmax of the naive path: reads a row of S from global memory and
 * writes P = softmax(row) to a separate buffer (the seed's model: S and P are
 * both materialized). S already holds scale * Q K^T. One work-group per row.
 *
 * Build options: -DWG=<work-group size, a power of two>, -DCAUSAL=0|1,
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

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void softmax_rows(__global const store_t *s, __global store_t *p, const uint n_q,
                  const uint n_k, const int causal_off)
{
    __local float buf[WG];
    const size_t row = get_group_id(0);
    const uint lid = get_local_id(0);
    const size_t base = row * n_k;
    /* Keys [0, seen) of this row are visible; 64-bit, since a row index
     * plus the causal offset can pass what an int holds. */
    long seen_l = n_k;
#if CAUSAL
    seen_l = min(seen_l, (long)(row % n_q) + causal_off + 1);
#endif
    const uint seen = seen_l < 0 ? 0u : (uint)seen_l;
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
    for (uint j = lid; j < n_k; j += WG)
        STORE(j < seen ? exp(LOAD(s, base + j) - mx) * inv : 0.0f, p, base + j);
#endif
}
