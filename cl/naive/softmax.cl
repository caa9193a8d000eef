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
 *
 * With -DCPU_ROWS=<rows per work-item> (CPU devices) the same function is
 * computed by work-items of their own (work-group size 1, no local memory,
 * no barriers), each owning CPU_ROWS consecutive rows of one head (launch:
 * global (ceil(n_q / CPU_ROWS), B H), local (1, 1)), along each row in
 * float16 vectors: S converted once (vload_half16), exp by a polynomial
 * (exp2_row below), P rounded once (vstore_half16). -DROW_CAP=<a multiple
 * of 16, or 0>: rows up to ROW_CAP scores are kept in a private buffer and S
 * is read once; longer rows (or ROW_CAP=0) stream through three passes.
 */
#include "dtype.clh"
#include "exp2_poly.clh"
#include "group_row.clh"

/* Keys [0, seen) that row `row` ([B, H, Nq] order) sees: its sequence's
 * keys, under a causal mask those up to its own, none past its q_len. 64-bit,
 * since a row index plus the offset can pass what an int holds. */
static uint visible_keys(size_t row, uint n_q, uint n_k, uint heads, int causal_off,
                         __global const uint *kv_lens, __global const uint *q_lens)
{
    const uint i = (uint)(row % n_q), b = (uint)(row / n_q / heads);
    const uint2 len = sequence_lens(b, n_q, n_k, kv_lens, q_lens);
    const uint kv_len = len.x, q_len = len.y;
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

/* A row's 1 / sum (0 for a row that sees no key; a NaN sum stays NaN),
 * its LSE written by work-item 0 when asked for. */
static inline float finish_row(__global float *lse, size_t row, uint seen, float mx, float sum,
                               uint lid)
{
#if LSE_OUT
    if (lid == 0)
        lse[row] = seen == 0 ? -INFINITY : mx + log(sum);
#endif
    return sum == 0.0f ? 0.0f : 1.0f / sum;
}

#ifdef CPU_ROWS
typedef float16 vec;

/* e^x for x <= 0 (x - max of its row), elementwise, as 2^(x log2 e): x log2 e
 * = n + f, n = round(x log2 e) (adding 1.5 * 2^23 rounds; PoCL's rint() is a
 * software routine), 2^f by a degree-6 polynomial on [-1/2, 1/2] (relative
 * error 1.2e-7 in float), 2^n by shifting n + 127 into the exponent. Exactly
 * 0 below 2^-127 (so -inf gives 0); NaN stays NaN (cl/include/exp2_poly.clh's
 * exp2_neg16, with the NaN kept: a NaN or +inf score makes its row NaN). */
static inline vec exp_row(vec x)
{
    const vec p = exp2_neg16(x * (vec)(1.44269504088896341f));
    return select(p, x, isnan(x));
}

#ifdef DTYPE_F16
#define LOAD16(p) vload_half16(0, (p))
#define STORE16(x, p) vstore_half16((x), 0, (p))
#else
#define LOAD16(p) vload16(0, (p))
#define STORE16(x, p) vstore16((x), 0, (p))
#endif

/* Scores j0 .. j0 + 15 of a row, -inf at and past `seen`. */
static inline vec load_scores(__global const store_t *row, uint j0, uint seen)
{
    if (j0 + 16 <= seen)
        return LOAD16(row + j0);
    float t[16];
    for (uint l = 0; l < 16; l++)
        t[l] = j0 + l < seen ? LOAD(row, j0 + l) : -INFINITY;
    return vload16(0, t);
}

/* x (probabilities j0 .. j0 + 15) into the row, none at or past n_k. */
static inline void store_probs(__global store_t *row, uint j0, uint n_k, vec x)
{
    if (j0 + 16 <= n_k) {
        STORE16(x, row + j0);
        return;
    }
    float t[16];
    vstore16(x, 0, t);
    for (uint l = 0; j0 + l < n_k; l++)
        STORE(t[l], row, j0 + l);
}

/* max without fmax's NaN handling: a NaN score reaches the sum instead. */
static inline vec vmax(vec a, vec b)
{
    return select(b, a, a > b);
}

static inline float hmax(vec x)
{
    float8 a = select(x.hi, x.lo, x.lo > x.hi);
    float4 b = select(a.hi, a.lo, a.lo > a.hi);
    float2 c = select(b.hi, b.lo, b.lo > b.hi);
    return c.x > c.y ? c.x : c.y;
}

static inline float hsum(vec x)
{
    float8 a = x.lo + x.hi;
    float4 b = a.lo + a.hi;
    float2 c = b.lo + b.hi;
    return c.x + c.y;
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void softmax_rows(__global const store_t *s, __global store_t *p, const uint n_q,
                  const uint n_k, const uint heads, const int causal_off,
                  __global const uint *kv_lens, __global const uint *q_lens,
                  __global float *lse)
{
#if ROW_CAP
    vec keep[ROW_CAP / 16];
#endif
    /* Dimension 1: the (batch, head); 0: CPU_ROWS of its n_q rows. */
    const uint i0 = get_global_id(0) * CPU_ROWS, i1 = min(i0 + CPU_ROWS, n_q);
    for (size_t row = (size_t)get_global_id(1) * n_q + i0, end = row + (i1 - i0); row < end;
         row++) {
        __global const store_t *srow = s + row * n_k;
        __global store_t *prow = p + row * n_k;
        const uint seen = visible_keys(row, n_q, n_k, heads, causal_off, kv_lens, q_lens);
        const uint nv = (seen + 15) / 16;
        vec mv = (vec)(-INFINITY);
#if ROW_CAP
        const int kept = seen <= ROW_CAP;
#else
        const int kept = 0;
#endif
        for (uint i = 0; i < nv; i++) {
            const vec x = load_scores(srow, 16 * i, seen);
#if ROW_CAP
            if (kept)
                keep[i] = x;
#endif
            mv = vmax(mv, x);
        }
        const float mx = hmax(mv);
        vec sv = (vec)(0.0f);
        for (uint i = 0; i < nv; i++) {
#if ROW_CAP
            if (kept) {
                keep[i] = exp_row(keep[i] - (vec)(mx));
                sv += keep[i];
                continue;
            }
#endif
            sv += exp_row(load_scores(srow, 16 * i, seen) - (vec)(mx));
        }
        const float sum = hsum(sv);
        const float inv = sum == 0.0f ? 0.0f : 1.0f / sum; /* NaN stays NaN */
#if LSE_OUT
        lse[row] = seen == 0 ? -INFINITY : mx + log(sum);
#endif
        for (uint i = 0; i < nv; i++) {
#if ROW_CAP
            if (kept) {
                store_probs(prow, 16 * i, n_k, keep[i] * inv);
                continue;
            }
#endif
            store_probs(prow, 16 * i, n_k,
                        exp_row(load_scores(srow, 16 * i, seen) - (vec)(mx)) * inv);
        }
        /* Keys past the visible ones: probability 0. */
        for (uint j = 16 * nv; j < n_k; j += 16)
            store_probs(prow, j, n_k, (vec)(0.0f));
        (void)kept;
    }
}

#else /* !CPU_ROWS */

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
    mx = group_reduce(mx, 1, buf, lid);
    float sum = 0.0f;
    for (int t = 0; t < PER_ITEM; t++) {
        uint j = lid + t * WG;
        x[t] = j < seen ? exp(x[t] - mx) : 0.0f;
        sum += x[t];
    }
    sum = group_reduce(sum, 0, buf, lid);
    const float inv = finish_row(lse, row, seen, mx, sum, lid);
    for (int t = 0; t < PER_ITEM; t++) {
        uint j = lid + t * WG;
        if (j < n_k)
            STORE(x[t] * inv, p, base + j);
    }
#else
    float mx = -INFINITY;
    for (uint j = lid; j < seen; j += WG)
        mx = fmax(mx, LOAD(s, base + j));
    mx = group_reduce(mx, 1, buf, lid);
    float sum = 0.0f;
    for (uint j = lid; j < seen; j += WG)
        sum += exp(LOAD(s, base + j) - mx);
    sum = group_reduce(sum, 0, buf, lid);
    const float inv = finish_row(lse, row, seen, mx, sum, lid);
    for (uint j = lid; j < n_k; j += WG)
        STORE(j < seen ? exp(LOAD(s, base + j) - mx) * inv : 0.0f, p, base + j);
#endif
}
#endif
