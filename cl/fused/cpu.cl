/* SPDX-License-Identifier: MIT */
/*
 * Fused attention shaped for CPUs (PoCL): FlashAttention's online softmax
 * with the tiles of a GEMM micro-kernel, written in explicit float16 vectors
 * (zmm on AVX-512). No local memory, no barriers: work-group size 1, and each
 * work-item's tiles live in private memory (L1/L2). The work-item is the
 * work-group of cl/include/fused_grid.clh's contract (packed rows of one key/value
 * head, a chunk of its keys). Two layouts, one per build:
 *
 * Rows across lanes (default; g*Nq >= 16 rows per key/value head).
 * One work-item owns RV x 16 consecutive packed rows of one key/value head:
 * RV "row vectors" of 16 rows, one row per SIMD lane. Nothing is ever
 * summed horizontally:
 *   S^T[j]   = sum_x K[j][x] * Q^T[x]     K[j][x] broadcast, Q^T[x] a vector
 *   m, l, p  elementwise per lane (per row)
 *   O^T[x]  += sum_j V[j][x] * P^T[j]     V[j][x] broadcast, P^T[j] a vector
 * Q^T (scaled into the log2 domain) and O^T are D vectors per row vector. K
 * and V are the broadcast (memory) operands of the FMAs: read in place
 * (fp32) or from a private fp32 copy of the block, converted once per
 * work-item and shared by its RV row vectors (fp16, vload_half16 = F16C).
 * Q.K^T keeps KB score vectors in registers over the D loop; P.V keeps XC
 * output vectors in registers over the keys of a block.
 *   -DD=<head dim, 1..256>  -DBN=<keys per block>  -DRV=<row vectors per
 *   work-item>  -DKB=<keys per Q.K^T register block, divides BN>
 *   -DXC=<output columns per P.V register block, <= D>
 *   -DDTYPE_F16 (optional: half storage, float arithmetic)
 *   and cl/include/fused_grid.clh's options; BM = 16 RV.
 *
 * Keys across lanes (-DDR=<rows>, decode: g*Nq <= 8): see below.
 *
 * Both: blocks past a row's last visible key skipped, masks applied only
 * where a block crosses it; fp32 accumulation; rows finished by
 * cl/include/fused_finish.clh's rules. The softmax here works with a finite initial
 * maximum and an exp2 that saturates, so a NaN or +inf score would vanish:
 * each row keeps a flag of them instead, and such a row outputs NaN.
 */
#include "fused_grid.clh"
#include "fused_finish.clh"
#include "exp2_poly.clh"

#define R 16
typedef float16 vec;
typedef int16 ivec;

#ifdef DTYPE_F16
typedef half store_t;
#else
typedef float store_t;
#endif

#define XT (D % XC) /* output columns in the last, narrower P.V block */

/* 2^x for x <= 0, elementwise (cl/include/exp2_poly.clh). */
static inline vec exp2_neg(vec x)
{
    return exp2_neg16(x);
}

/* max without fmax's NaN handling (no NaN reaches it): one vmaxps. */
static inline vec vmax(vec a, vec b)
{
    return select(b, a, a > b);
}

#ifdef DTYPE_F16
/* n halves from src to floats at dst, 16 at a time (F16C). */
static inline void to_float(__global const half *src, float *dst, int n)
{
    int i = 0;
    for (; i + 16 <= n; i += 16)
        vstore16(vload_half16(0, src + i), 0, dst + i);
    for (; i < n; i++)
        dst[i] = vload_half(i, src);
}

/* nv rows of D halves, `st` elements apart, to a packed float block. */
static inline void rows_to_float(__global const half *src, ulong st, float *dst, int nv)
{
    for (int j = 0; j < nv; j++)
        to_float(src + j * st, dst + j * D, D);
}
#endif

/* Finishes packed row `row` of the place from its accumulator `acc` (D
 * floats, unnormalised), its sum l and maximum m (log2 domain): O and the
 * LSE, or with -DSPLIT the chunk's partials; `bad` marks a NaN or +inf
 * score. Rows past the sequence's write zeros (or, split, nothing). */
static inline void finish_row(const struct fused_place *at, uint row, float *acc, float l,
                              float m, int bad, int sees_key, __global store_t *o,
                              __global float *lse, __global float *part_o,
                              __global float *part_ml, ulong o_off, ulong o_sb, ulong o_sh,
                              ulong o_st, uint batch, uint heads, uint n_q, uint splits)
{
    const int live = row < at->n_rows;
    if (bad)
        l = NAN;
#if SPLIT
    if (!live)
        return;
    const ulong w = (ulong)at->split * batch * heads * n_q + fused_row_id(at, row, heads, n_q);
    for (int x = 0; x < D; x++)
        part_o[w * D + x] = acc[x];
    part_ml[2 * w] = l == 0.0f ? -INFINITY : m;
    part_ml[2 * w + 1] = l;
#else
    const float inv = live ? fused_row_scale(l, m, sees_key) : 0.0f;
    __global store_t *orow = o + fused_row_index(at, row, o_off, o_sb, o_sh, o_st);
    int x = 0;
#ifdef DTYPE_F16
    for (; x + 16 <= D; x += 16)
        vstore_half16(vload16(0, acc + x) * inv, 0, orow + x);
    for (; x < D; x++)
        vstore_half(acc[x] * inv, x, orow);
#else
    for (; x < D; x++)
        orow[x] = acc[x] * inv;
#endif
#if LSE_OUT
    lse[fused_row_id(at, row, heads, n_q)] =
        live ? fused_row_lse(l, m, sees_key, inv) : -INFINITY;
#endif
#endif
}

#ifdef DR
/*
 * Few rows per key/value head (decode: g * Nq <= 8): keys across lanes, d
 * along vectors. Rows across lanes would leave 16 - g lanes idle; here a
 * work-item owns DR packed rows and each FMA works on 16 elements of d:
 *   s[r][j]  = hsum_x Q[r][x-vector] * K[j][x-vector], 16 keys reduced at
 *              once by a shuffle tree (15 adds, 30 shuffles per 16 keys)
 *   m, l     per row, p[r][16 keys] a vector
 *   O[r][x] += p[r][j] (broadcast) * V[j][x-vector]
 * Every K and V row is read once per work-item. Build options: -DD -DDR=<rows
 * per work-item, 1..8> -DBN=<keys per block, multiple of 16> -DXCH=<output
 * vectors per P.V register block> -DCAUSAL -DDTYPE_F16; launch as above with
 * n_qblocks = ceil(g * Nq / DR).
 */
#define DV ((D + 15) / 16) /* vectors along d */
#if defined(DTYPE_F16) || D % 16
#define STAGED 1 /* K and V blocks go through a zero-padded float copy */
#else
#define STAGED 0
#endif
#define XCT (DV % XCH)

/* r[i] = sum of the lanes of a[i], i < 16: four levels of pairwise folds. */
/* Constant masks: PoCL's LLVM turns each shuffle2 into one vpermt2ps or
 * vshuff64x2 (as fast as clang's __builtin_shufflevector, measured). */
#define FOLD(x, y, ...) (shuffle2((x), (y), (uint16)(__VA_ARGS__)))
static inline vec hsum16(const vec *a)
{
    vec b[8], c[4], e[2];
#pragma unroll
    for (int i = 0; i < 8; i++)
        b[i] = FOLD(a[2 * i], a[2 * i + 1], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
               FOLD(a[2 * i], a[2 * i + 1], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29,
                    30, 31);
#pragma unroll
    for (int i = 0; i < 4; i++)
        c[i] = FOLD(b[2 * i], b[2 * i + 1], 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
               FOLD(b[2 * i], b[2 * i + 1], 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30,
                    31);
#pragma unroll
    for (int i = 0; i < 2; i++)
        e[i] = FOLD(c[2 * i], c[2 * i + 1], 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29) +
               FOLD(c[2 * i], c[2 * i + 1], 2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30,
                    31);
    return FOLD(e[0], e[1], 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30) +
           FOLD(e[0], e[1], 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
}

/* Butterflies: every lane ends up holding the max (sum) of all 16. */
#define SWAP8(x) FOLD(x, x, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7)
#define SWAP4(x) FOLD(x, x, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11)
#define SWAP2(x) FOLD(x, x, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13)
#define SWAP1(x) FOLD(x, x, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14)
static inline vec hmax_all(vec x)
{
    x = vmax(x, SWAP8(x));
    x = vmax(x, SWAP4(x));
    x = vmax(x, SWAP2(x));
    return vmax(x, SWAP1(x));
}
static inline vec hsum_all(vec x)
{
    x += SWAP8(x);
    x += SWAP4(x);
    x += SWAP2(x);
    return x + SWAP1(x);
}

/* n floats of a d-row (store_t) as DV zero-padded vectors, times s. */
static inline void row_to_vecs(__global const store_t *src, vec *dst, float s)
{
#if STAGED
    float t[DV * 16];
    int x = 0;
#ifdef DTYPE_F16
    for (; x + 16 <= D; x += 16)
        vstore16(vload_half16(0, src + x), 0, t + x);
    for (; x < D; x++)
        t[x] = vload_half(x, src);
#else
    for (; x < D; x++)
        t[x] = src[x];
#endif
    for (; x < DV * 16; x++)
        t[x] = 0.0f;
    for (int i = 0; i < DV; i++)
        dst[i] = vload16(i, t) * s;
#else
    for (int i = 0; i < DV; i++)
        dst[i] = vload16(i, src) * s;
#endif
}

#if STAGED
#define KVEC(j, xv) (kvb[j][xv])
#else
#define KVEC(j, xv) vload16((xv), kvrow + (size_t)(j) * kvst)
#endif

/* O[r][xv0 .. xv0+NX) = alpha O + sum_j p[r][j] V[j], DR x NX accumulators. */
#define PV_DEC(NX)                                                             \
    do {                                                                       \
        vec acc[DR][NX];                                                       \
        _Pragma("unroll") for (int r = 0; r < DR; r++)                         \
            _Pragma("unroll") for (int c = 0; c < NX; c++)                     \
                acc[r][c] = ov[r][xv0 + c] * alpha[r];                         \
        for (int j = 0; j < nv; j++) {                                         \
            _Pragma("unroll") for (int c = 0; c < NX; c++) {                   \
                const vec vv = KVEC(j, xv0 + c);                               \
                _Pragma("unroll") for (int r = 0; r < DR; r++)                 \
                    acc[r][c] = fma((vec)(pb[r][j]), vv, acc[r][c]);           \
            }                                                                  \
        }                                                                      \
        _Pragma("unroll") for (int r = 0; r < DR; r++)                         \
            _Pragma("unroll") for (int c = 0; c < NX; c++)                     \
                ov[r][xv0 + c] = acc[r][c];                                    \
    } while (0)

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void attention_fused(FUSED_PARAMS(store_t))
{
    vec qv[DR][DV];        /* Q rows along d, times scale*log2(e), zero padded */
    vec ov[DR][DV];        /* O accumulators */
    vec sb[DR][BN / 16];   /* the block's scores, keys across lanes */
    float pb[DR][BN];      /* the block's P, broadcast by P.V */
    float m[DR], alpha[DR];
    vec lsum[DR];          /* per-lane partial softmax denominators */
    int lim[DR];           /* last key each row sees in the chunk (-1: none) */
    int sees[DR];          /* the row sees a key at all */
    int bad[DR];           /* a NaN or +inf score */
#if STAGED
    vec kvb[BN][DV];       /* the block's K, then V, rows as float vectors */
#endif
    const struct fused_place at = fused_place_of(n_q, n_k, kv_heads, n_rtiles, splits,
                                                 split_keys, kv_lens, q_lens, DR, BN);
    __global const store_t *kb = k + fused_key_index(&at, 0, k_off, k_sb, k_sh, 0);
    __global const store_t *vb = v + fused_key_index(&at, 0, v_off, v_sb, v_sh, 0);
    const ulong kst = k_st, vst = v_st;
    const uint p0 = at.r0;
    const int nr = p0 < at.n_rows ? (int)min((uint)DR, at.n_rows - p0) : 0;
    const ivec iota = (ivec)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);

    int item_end = (int)at.kv_begin;
    for (int r = 0; r < DR; r++) {
        int lr = -1;
        sees[r] = 0;
        if (r < nr) {
            const uint end = fused_token_end((p0 + r) / GROUP, at.kv_len, at.causal_off);
            sees[r] = end > 0;
            lr = (int)min(end, at.kv_end) - 1;
            row_to_vecs(q + fused_row_index(&at, p0 + r, q_off, q_sb, q_sh, q_st), qv[r],
                        scale_log2);
        } else {
            for (int i = 0; i < DV; i++)
                qv[r][i] = (vec)(0.0f);
        }
        lim[r] = max(lr, -1);
        item_end = max(item_end, lim[r] + 1);
        for (int i = 0; i < DV; i++)
            ov[r][i] = (vec)(0.0f);
        m[r] = -1e30f;
        lsum[r] = (vec)(0.0f);
        bad[r] = 0;
    }

    for (int j0 = (int)at.kv_begin; j0 < item_end; j0 += BN) {
        const int nv = min(BN, item_end - j0);
#if STAGED
        for (int j = 0; j < nv; j++)
            row_to_vecs(kb + (size_t)(j0 + j) * kst, kvb[j], 1.0f);
#else
        __global const float *kvrow = kb + (size_t)j0 * kst;
        ulong kvst = kst; /* KVEC's row stride: K's now, V's below */
#endif
        for (int r = 0; r < DR; r++) {
            if (lim[r] < j0) { /* no visible key in this block: p = 0 */
                alpha[r] = 1.0f;
                for (int j = 0; j < nv; j++)
                    pb[r][j] = 0.0f;
                continue;
            }
            vec mb = (vec)(-1e30f);
            for (int g = 0; g * 16 < nv; g++) {
                vec acc[16];
#pragma unroll
                for (int i = 0; i < 16; i++)
                    acc[i] = (vec)(0.0f);
                /* Keys past nv repeat the last one; they are masked. */
                int jr[16];
#pragma unroll
                for (int i = 0; i < 16; i++)
                    jr[i] = min(g * 16 + i, nv - 1);
                for (int xv = 0; xv < DV; xv++) {
                    const vec qx = qv[r][xv];
#pragma unroll
                    for (int i = 0; i < 16; i++)
                        acc[i] = fma(KVEC(jr[i], xv), qx, acc[i]);
                }
                vec s = hsum16(acc);
                s = select((vec)(-INFINITY), s, iota + (j0 + g * 16) <= (ivec)(lim[r]));
                bad[r] |= any(!(s < (vec)(INFINITY)));
                sb[r][g] = s;
                mb = vmax(mb, s);
            }
            const float m_new = fmax(m[r], hmax_all(mb).s0);
            alpha[r] = exp2_neg((vec)(m[r] - m_new)).s0;
            vec ls = (vec)(0.0f);
            for (int g = 0; g * 16 < nv; g++) {
                const vec p = exp2_neg(sb[r][g] - (vec)(m_new));
                ls += p;
                vstore16(p, g, pb[r]);
            }
            lsum[r] = fma(lsum[r], (vec)(alpha[r]), ls);
            m[r] = m_new;
        }
#if STAGED
        for (int j = 0; j < nv; j++)
            row_to_vecs(vb + (size_t)(j0 + j) * vst, kvb[j], 1.0f);
#else
        kvrow = vb + (size_t)j0 * vst;
        kvst = vst;
#endif
        for (int xv0 = 0; xv0 + XCH <= DV; xv0 += XCH)
            PV_DEC(XCH);
#if XCT
        {
            const int xv0 = DV - XCT;
            PV_DEC(XCT);
        }
#endif
    }

    for (int r = 0; r < DR && p0 + r < n_q * GROUP; r++) {
        float t[DV * 16];
        for (int i = 0; i < DV; i++)
            vstore16(ov[r][i], i, t);
        finish_row(&at, p0 + r, t, hsum_all(lsum[r]).s0, m[r], bad[r], sees[r], o, lse, part_o,
                   part_ml, o_off, o_sb, o_sh, o_st, batch, heads, n_q, splits);
    }
}

#else /* !DR: rows across lanes */

/* S^T for KB keys of one row vector: s[i] = sum_x K[row i][x] * Q^T[x], the
 * K rows at KROW(i) (a pointer expression in i). */
#define QK_TILE(KROW)                                                          \
    do {                                                                       \
        _Pragma("unroll") for (int i = 0; i < KB; i++) s[i] = (vec)(0.0f);     \
        for (int x = 0; x < D; x++) {                                          \
            const vec qx = qt[rv][x];                                          \
            _Pragma("unroll") for (int i = 0; i < KB; i++)                     \
                s[i] = fma((vec)((KROW(i))[x]), qx, s[i]);                     \
        }                                                                      \
    } while (0)

/* O^T[x0 .. x0+NX) = alpha O^T + sum_j V[j][x] P^T[j] for the block's nv keys;
 * the NX accumulators stay in registers over the keys. */
#define PV_TILE(NX)                                                            \
    do {                                                                       \
        vec acc[NX];                                                           \
        _Pragma("unroll") for (int i = 0; i < NX; i++)                         \
            acc[i] = ot[rv][x0 + i] * a;                                       \
        for (int j = 0; j < nv; j++) {                                         \
            const vec p = pt[rv][j];                                           \
            _Pragma("unroll") for (int i = 0; i < NX; i++)                     \
                acc[i] = fma((vec)(VROW(j)[x0 + i]), p, acc[i]);               \
        }                                                                      \
        _Pragma("unroll") for (int i = 0; i < NX; i++) ot[rv][x0 + i] = acc[i]; \
    } while (0)

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void attention_fused(FUSED_PARAMS(store_t))
{
    vec qt[RV][D];       /* Q^T: lane r of qt[rv][x] is Q[row r][x] * scale*log2(e) */
    vec ot[RV][D];       /* O^T accumulators */
    vec pt[RV][BN];      /* S^T then P^T of the current block */
    vec m[RV], l[RV], alpha[RV];
    ivec qlim[RV];       /* last visible key per lane */
    ivec bad[RV];        /* per lane: a NaN or +inf score */
    int kv_end[RV], full_end[RV], n_rows[RV];
    int sees[RV][R];     /* the row sees a key at all */
#ifdef DTYPE_F16
    float kf[BN * D];    /* the block's K, then V, converted to float */
#endif

    const struct fused_place at = fused_place_of(n_q, n_k, kv_heads, n_rtiles, splits,
                                                 split_keys, kv_lens, q_lens, R * RV, BN);
    __global const store_t *kb = k + fused_key_index(&at, 0, k_off, k_sb, k_sh, 0);
    __global const store_t *vb = v + fused_key_index(&at, 0, v_off, v_sb, v_sh, 0);
    const ulong kst = k_st, vst = v_st;
    const uint p0 = at.r0;

    int item_end = (int)at.kv_begin;
    for (int rv = 0; rv < RV; rv++) {
        const uint r0 = p0 + rv * R;
        const int nr = r0 < at.n_rows ? (int)min((uint)R, at.n_rows - r0) : 0;
        n_rows[rv] = nr;
        /* Each lane's last visible key; lanes past the sequence take the
         * last row's, so that the mask logic stays uniform. Packed rows are
         * token-major, so the first and last lanes bound the row vector's
         * keys: blocks below full_end need no mask. */
        int qi_l[R];
        for (int r = 0; r < R; r++) {
            const uint row = r0 + min(r, max(nr - 1, 0));
            const uint end = min(fused_token_end(row / GROUP, at.kv_len, at.causal_off), at.kv_end);
            qi_l[r] = (int)end - 1;
            sees[rv][r] = r < nr && fused_token_end(row / GROUP, at.kv_len, at.causal_off) > 0;
        }
        qlim[rv] = vload16(0, qi_l);
        const int end = nr ? qi_l[R - 1] + 1 : 0, full = nr ? qi_l[0] + 1 : 0;
        kv_end[rv] = max(end, (int)at.kv_begin);
        full_end[rv] = max(full, (int)at.kv_begin);
        item_end = max(item_end, kv_end[rv]);

        float *qs = (float *)qt[rv];
        for (int r = 0; r < R; r++) {
            if (r < nr) {
                __global const store_t *qr =
                    q + fused_row_index(&at, r0 + r, q_off, q_sb, q_sh, q_st);
                for (int x = 0; x < D; x++) {
#ifdef DTYPE_F16
                    qs[x * R + r] = vload_half(x, qr) * scale_log2;
#else
                    qs[x * R + r] = qr[x] * scale_log2;
#endif
                }
            } else {
                for (int x = 0; x < D; x++)
                    qs[x * R + r] = 0.0f;
            }
        }
        for (int x = 0; x < D; x++)
            ot[rv][x] = (vec)(0.0f);
        m[rv] = (vec)(-1e30f); /* finite: m - m_new is never inf - inf */
        l[rv] = (vec)(0.0f);
        bad[rv] = (ivec)(0);
    }

    for (int j0 = (int)at.kv_begin; j0 < item_end; j0 += BN) {
        const int nv_item = min(BN, item_end - j0);
#ifdef DTYPE_F16
        rows_to_float(kb + (size_t)j0 * kst, kst, kf, nv_item);
        const float *kblk = kf;
        const ulong kbst = D;
#else
        __global const float *kblk = kb + (size_t)j0 * kst;
        const ulong kbst = kst;
#endif
        for (int rv = 0; rv < RV; rv++) {
            if (j0 >= kv_end[rv])
                continue;
            const int nv = min(BN, kv_end[rv] - j0); /* keys of this block */
            const int masked = j0 + BN > full_end[rv];
            /* S^T = K Q^T, KB keys at a time. A whole tile addresses its KB
             * rows from one base; the last, partial one repeats its last
             * key, masked below. */
            vec m_blk = (vec)(-1e30f);
            for (int jb = 0; jb < nv; jb += KB) {
                vec s[KB];
                if (jb + KB <= nv) {
#define KROW_FULL(i) (kblk + (size_t)(jb + (i)) * kbst)
                    QK_TILE(KROW_FULL);
                } else {
#define KROW_PART(i) (kblk + (size_t)min(jb + (i), nv - 1) * kbst)
                    QK_TILE(KROW_PART);
                }
                if (masked) {
#pragma unroll
                    for (int i = 0; i < KB; i++) {
                        const int j = j0 + jb + i;
                        ivec vis = (ivec)(j) <= qlim[rv];
                        if (j >= kv_end[rv])
                            vis = (ivec)(0);
                        s[i] = select((vec)(-INFINITY), s[i], vis);
                    }
                }
#pragma unroll
                for (int i = 0; i < KB; i++) {
                    bad[rv] |= !(s[i] < (vec)(INFINITY));
                    m_blk = vmax(m_blk, s[i]);
                    pt[rv][jb + i] = s[i];
                }
            }
            /* Online softmax, per lane. */
            const vec m_new = vmax(m[rv], m_blk);
            alpha[rv] = exp2_neg(m[rv] - m_new);
            vec l_blk = (vec)(0.0f);
            for (int j = 0; j < nv; j++) {
                vec p = exp2_neg(pt[rv][j] - m_new);
                l_blk += p;
                pt[rv][j] = p;
            }
            l[rv] = fma(l[rv], alpha[rv], l_blk);
            m[rv] = m_new;
        }

#ifdef DTYPE_F16
        rows_to_float(vb + (size_t)j0 * vst, vst, kf, nv_item);
#define VROW(j) (kf + (size_t)(j) * D)
#else
#define VROW(j) (vb + (size_t)(j0 + (j)) * vst)
#endif
        /* O^T = alpha O^T + V^T P^T, XC output columns at a time. */
        for (int rv = 0; rv < RV; rv++) {
            if (j0 >= kv_end[rv])
                continue;
            const int nv = min(BN, kv_end[rv] - j0);
            const vec a = alpha[rv];
            for (int x0 = 0; x0 + XC <= D; x0 += XC)
                PV_TILE(XC);
#if XT
            {
                const int x0 = D - XT;
                PV_TILE(XT);
            }
#endif
        }
    }

    for (int rv = 0; rv < RV; rv++) {
        float ls[R], ms[R], row[D];
        int bs[R];
        vstore16(l[rv], 0, ls);
        vstore16(m[rv], 0, ms);
        vstore16(bad[rv], 0, bs); /* nonzero where a score was NaN or +inf */
        const float *os = (const float *)ot[rv];
        for (int r = 0; r < R && p0 + rv * R + r < n_q * GROUP; r++) {
            for (int x = 0; x < D; x++)
                row[x] = os[x * R + r];
            finish_row(&at, p0 + rv * R + r, row, ls[r], ms[r], bs[r] != 0,
                       sees[rv][r], o, lse, part_o, part_ml, o_off, o_sb, o_sh, o_st, batch,
                       heads, n_q, splits);
        }
    }
}

#endif /* DR */
