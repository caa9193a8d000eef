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
 *   -DXC=<output columns per P.V register block, <= DV>
 *   -DDTYPE_F16 or -DDTYPE_BF16 (optional: half or bfloat16 storage, float
 *   arithmetic), -DDV=<V's head dimension>, and cl/include/fused_grid.clh's
 *   and fused_score.clh's options; BM = 16 RV.
 *
 * Keys across lanes (-DDR=<rows>, decode: g*Nq <= 8): see below.
 *
 * K and V as the cache keeps them (cl/include/kv_cache.clh's -DK_TYPE,
 * -DV_TYPE, -DPAGED): where either is quantized or paged (KV_GENERIC), each
 * K and V block is read through its accessors, a q8_0 / q4_0 block of 32
 * values at a time, into the private float copy both layouts already keep
 * for converted storage; the plain loads stay as they are otherwise.
 * Packed (varlen) sequences find their rows and keys through
 * fused_grid.clh; a packed sequence's rows past its length are the next
 * one's, and are not written.
 *
 * Both: blocks outside a row's visible keys (causal mask, window) skipped,
 * the ranges applied only where a block crosses an edge; the per-score
 * variants (softcap, ALiBi, an additive or boolean mask) on whole vectors
 * of scores, in natural units as clattn_reference applies them; sinks at
 * the finish; fp32 accumulation; rows finished by
 * cl/include/fused_finish.clh's rules. The softmax here works with a finite initial
 * maximum and an exp2 that saturates, so a NaN or +inf score would vanish:
 * each row keeps a flag of them instead, and such a row outputs NaN.
 */
#include "dtype.clh"
#include "fused_grid.clh"
#include "fused_finish.clh"
#include "fused_score.clh"
#include "exp2_poly.clh"
#include "tanh_poly.clh"
#include "kv_cache.clh"

#define R 16
typedef float16 vec;
typedef int16 ivec;
#define LOG2E 1.44269504088896341f
#define LN2 0.69314718055994531f

/* Storage other than float goes through a float copy of each K and V block
 * (vload_half16 is F16C; bfloat16 is a shift), and so does a cache read
 * through kv_cache.clh (a q8_0 block is 16 bytes to a float16 and one
 * multiply by its scale). */
#if defined(DTYPE_F16) || defined(DTYPE_BF16)
#define CONVERTS 1
#else
#define CONVERTS 0
#endif
#define COPIES (CONVERTS || KV_GENERIC)
#define KVW (D > DV ? D : DV) /* floats of a staged K or V row */

/* The variants applied to each score, and those that may hide a key in a
 * row's range (then a row may see none). */
#define PER_SCORE ((FUSED_FLAGS) & (FUSED_F_SOFTCAP | FUSED_F_ALIBI | FUSED_F_MASK |          \
                                    FUSED_F_MASK_BOOL))
#define HIDES ((FUSED_FLAGS) & (FUSED_F_MASK | FUSED_F_MASK_BOOL))

#define XT (DV % XC) /* output columns in the last, narrower P.V block */

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

/* ... and stored, rounded to nearest even (dtype.clh's STORE, 16 at once). */
static inline void store16(vec v, __global store_t *p)
{
#ifdef DTYPE_F16
    vstore_half16(v, 0, p);
#elif defined(DTYPE_BF16)
    const uint16 u = as_uint16(v);
    const uint16 even = (u + (uint16)(0x7fffu) + ((u >> 16) & (uint16)(1u))) >> 16;
    const uint16 quiet = (u >> 16) | (uint16)(0x40u);
    vstore16(convert_ushort16(select(even, quiet, (u & (uint16)(0x7fffffffu)) >
                                                      (uint16)(0x7f800000u))), 0, p);
#else
    vstore16(v, 0, p);
#endif
}

/* n elements from src to floats at dst, 16 at a time. */
static inline void to_float(__global const store_t *src, float *dst, int n)
{
    int i = 0;
    for (; i + 16 <= n; i += 16)
        vstore16(LOAD_VEC(16, src + i), 0, dst + i);
    for (; i < n; i++)
        dst[i] = LOAD(src, i);
}

/* nv rows of `width` elements, `st` elements apart, to a packed float block. */
static inline void rows_to_float(__global const store_t *src, ulong st, float *dst, int nv,
                                 int width)
{
    for (int j = 0; j < nv; j++)
        to_float(src + j * st, dst + j * width, width);
}

#if KV_GENERIC
/* Keys [j0, j0 + nv) of a cache head stored as `type`, `width` values each,
 * to a packed float block: 32 values at a time (kv_load32: a q8_0 / q4_0 /
 * fp8 row holds whole blocks of 32), a plain row's tail 16 at a time, then
 * one by one. */
static inline void cache_rows_to_float(const struct kv_head *h, const int type, uint j0,
                                       float *dst, int nv, int width)
{
    for (int j = 0; j < nv; j++) {
        const ulong at = kv_row(h, j0 + j);
        float *row = dst + j * width;
        int x = 0;
        for (; x + 32 <= width; x += 32) {
            vec lo, hi;
            kv_load32(h, type, at + x, &lo, &hi);
            vstore16(lo, 0, row + x);
            vstore16(hi, 0, row + x + 16);
        }
        for (; x + 16 <= width; x += 16)
            vstore16(kv_load16(h, type, at + x), 0, row + x);
        for (; x < width; x++)
            row[x] = kv_load(h, type, at + x);
    }
}
#endif

/* Finishes packed row `row` of the place from its accumulator `acc` (DV
 * floats, unnormalised), its sum l and maximum m (log2 domain): O and the
 * LSE (with the head's sink), or with -DSPLIT the chunk's partials; `bad`
 * marks a NaN or +inf score. Rows past the sequence's write zeros (or,
 * split, nothing; packed, no O: those rows are the next sequence's).
 * Without sinks the sink is -inf: the same results as fused_row_scale and
 * fused_row_lse. */
static inline void finish_row(const struct fused_place *at, uint row, float *acc, float l,
                              float m, int bad, int sees_key, __global store_t *o,
                              __global float *lse, __global float *part_o,
                              __global float *part_ml, __global const float *sinks, ulong o_off,
                              ulong o_sb, ulong o_sh, ulong o_st, uint batch, uint heads,
                              uint n_q, uint splits)
{
    const int live = row < at->n_rows;
    if (bad)
        l = NAN;
#if SPLIT
    if (!live)
        return;
    const ulong w = (ulong)at->split * batch * heads * n_q + fused_row_id(at, row, heads, n_q);
    for (int x = 0; x < DV; x++)
        part_o[w * DV + x] = acc[x];
    part_ml[2 * w] = l == 0.0f ? -INFINITY : m;
    part_ml[2 * w + 1] = l;
#else
    const uint head = at->hk * GROUP + row % GROUP;
    const float sink = live && (FUSED_FLAGS & FUSED_F_SINKS) ? sinks[head] * LOG2E : -INFINITY;
    const float inv = live ? fused_row_scale_sink(l, m, sees_key, sink) : 0.0f;
    __global store_t *orow = o + fused_row_index(at, row, o_off, o_sb, o_sh, o_st);
    if (live || !PACKED_Q) {
        int x = 0;
        for (; x + 16 <= DV; x += 16)
            store16(vload16(0, acc + x) * inv, orow + x);
        for (; x < DV; x++)
            STORE(acc[x] * inv, orow, x);
    }
#if LSE_OUT
    lse[fused_row_id(at, row, heads, n_q)] =
        live ? fused_row_lse_sink(l, m, sees_key, inv, sink) : -INFINITY;
#endif
#endif
}

/* 16 consecutive elements of the additive mask from element x, as floats:
 * `n` of them are the mask's (x + n at most its row's end), the rest repeat
 * the last. */
static inline vec mask_load16(__global const uint *mask, ulong x, int n)
{
    if (n >= 16)
        return MASK_LOAD_VEC(16, mask, x);
    float t[16];
    for (int i = 0; i < 16; i++)
        t[i] = fused_mask_value(mask, x + min(i, n - 1));
    return vload16(0, t);
}

/* The per-score variants on 16 scores in the log2 domain (q.k times
 * scale log2(e)), applied in natural units in clattn_reference's order:
 * softcap, ALiBi's -slope |at - key| (`dist`: at - key per lane), the mask
 * (`madd`, its values; `mbool`, nonzero where the boolean mask shows the
 * key). A hidden key's score becomes -inf. */
static inline vec variant_scores(vec s, float softcap, vec slope, ivec dist, vec madd,
                                 ivec mbool)
{
#if (FUSED_FLAGS) & (FUSED_F_SOFTCAP | FUSED_F_ALIBI | FUSED_F_MASK)
    vec x = s * LN2;
#if SOFTCAP
    x = (vec)(softcap) * tanh16(x / (vec)(softcap));
#endif
#if ALIBI
    x -= slope * fabs(convert_float16(dist));
#endif
#if MASK
    x += madd;
#endif
    s = x * LOG2E;
#endif
#if MASK_BOOL
    s = select((vec)(-INFINITY), s, mbool != (ivec)(0));
#endif
    return s;
}

/* K and V of the place `at` (both layouts): through the cache's accessors
 * (k_cache, v_cache), or key 0's rows and the token strides (kb, vb, kst,
 * vst; a packed sequence's first key is k_first rows in). */
#if KV_GENERIC
#define KV_OF_PLACE(at)                                                                      \
    const struct kv_head k_cache = kv_head_of(&(at), k, k_off, k_sb, k_sh, k_st, block_table, \
                                              bt_stride, n_pages, k_scale);                \
    const struct kv_head v_cache = kv_head_of(&(at), v, v_off, v_sb, v_sh, v_st, block_table, \
                                              bt_stride, n_pages, v_scale)
#else
#define KV_OF_PLACE(at)                                                                      \
    __global const store_t *kb = k + fused_key_index(&(at), 0, k_off, k_sb, k_sh, k_st);   \
    __global const store_t *vb = v + fused_key_index(&(at), 0, v_off, v_sb, v_sh, v_st);   \
    const ulong kst = k_st, vst = v_st
#endif

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
 * vectors per P.V register block> and the options above; launch as above
 * with n_qblocks = ceil(g * Nq / DR).
 */
#define NQV ((D + 15) / 16)  /* vectors along Q's and K's d */
#define NVV ((DV + 15) / 16) /* ... along V's and O's */
#define NKV (NQV > NVV ? NQV : NVV)
#if CONVERTS || D % 16 || DV % 16
#define PADDED 1 /* row_to_vecs goes through a zero-padded float copy */
#else
#define PADDED 0
#endif
/* K and V blocks go through a float copy: padded rows, and a cache read
 * through its accessors (converted once per work-item, then read by each
 * of its DR rows). */
#define STAGED (PADDED || KV_GENERIC)
#define XCT (NVV % XCH)

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

/* A row of `width` elements as `nvec` zero-padded vectors, times s. */
static inline void row_to_vecs(__global const store_t *src, vec *dst, float s, int width,
                               int nvec)
{
#if PADDED
    float t[NKV * 16];
    to_float(src, t, width);
    for (int x = width; x < nvec * 16; x++)
        t[x] = 0.0f;
    for (int i = 0; i < nvec; i++)
        dst[i] = vload16(i, t) * s;
#else
    for (int i = 0; i < nvec; i++)
        dst[i] = vload16(i, src) * s;
#endif
}

#if KV_GENERIC
/* A hint to fetch the cache lines of key j's row (`width` values) of a
 * cache head. Decoding is bound by memory, and a work-item reads K and V
 * in bursts of a block between its FMAs: fetched a block ahead, the rows
 * arrive while the block before them is computed. A q8_0 decoding step
 * (B = 1, H = 8, Hkv = 2, Nk = 32768, d = 128, 2 cores under PoCL,
 * tests/perf/time_fused, medians of 3 interleaved rounds) took 1.95 ms
 * with the hint and 2.80 ms without. OpenCL's prefetch() does nothing
 * under PoCL; clang's builtin is a prefetcht0 on x86-64, and other
 * compilers get no hint. */
static inline void prefetch_row(const struct kv_head *h, const int type, uint j, int width)
{
#if defined(__clang__) && defined(__x86_64__)
    const ulong at = kv_row(h, j);
    __global const uchar *p = kv_addr(h, type, at);
    const int bytes = (int)(kv_addr(h, type, at + width) - p);
    for (int b = 0; b < bytes; b += 64)
        __builtin_prefetch(p + b);
    __builtin_prefetch(p + bytes - 1);
#endif
}

/* Key j's row of a cache head stored as `type`, `width` values, as `nvec`
 * zero-padded vectors (read as cache_rows_to_float reads it), inlined into
 * the key loop (without: 2.03 ms against 1.95 on the step above, within
 * the rounds' spread). */
static inline __attribute__((always_inline))
void cache_row_to_vecs(const struct kv_head *h, const int type, uint j, vec *dst, int width,
                       int nvec)
{
    const ulong at = kv_row(h, j);
    int i = 0;
#pragma unroll
    for (; 16 * i + 32 <= width; i += 2)
        kv_load32(h, type, at + 16 * i, &dst[i], &dst[i + 1]);
    for (; i < nvec; i++) {
        if (16 * i + 16 <= width) {
            dst[i] = kv_load16(h, type, at + 16 * i);
        } else {
            float t[16];
            for (int x = 0; x < 16; x++)
                t[x] = 16 * i + x < width ? kv_load(h, type, at + 16 * i + x) : 0.0f;
            dst[i] = vload16(0, t);
        }
    }
}
#endif

/* The per-score variants on the scores of keys [j, j + 16) of one row
 * (`n` of them real, the rest repeating the last: their mask reads stay
 * in its row). */
static inline vec row_variant_scores(vec s, int j, int n, const struct fused_row_variants *rv,
                                     float softcap, __global const uint *mask, ivec iota)
{
    ivec dist = (ivec)(0), mbool = (ivec)(0);
    vec madd = (vec)(0.0f);
#if ALIBI
    dist = (ivec)((int)rv->i + rv->align_off - j) - iota;
#endif
#if MASK
    madd = mask_load16(mask, rv->mask_row + j, n);
#endif
#if MASK_BOOL
    int shown[16];
    for (int i = 0; i < 16; i++)
        shown[i] = ((__global const uchar *)mask)[rv->mask_row + j + min(i, n - 1)];
    mbool = vload16(0, shown);
#endif
    return variant_scores(s, softcap, (vec)(rv->slope), dist, madd, mbool);
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
    vec qv[DR][NQV];       /* Q rows along d, times scale*log2(e), zero padded */
    vec ov[DR][NVV];       /* O accumulators */
    vec sb[DR][BN / 16];   /* the block's scores, keys across lanes */
    float pb[DR][BN];      /* the block's P, broadcast by P.V */
    float m[DR], alpha[DR];
    vec lsum[DR];          /* per-lane partial softmax denominators */
    int lim[DR];           /* last key each row sees in the chunk (-1: none) */
    int beg[DR];           /* first key it sees (a window's left side) */
    int sees[DR];          /* the row sees a key at all */
    int seen[DR];          /* ... one the masks left visible (HIDES) */
    int bad[DR];           /* a NaN or +inf score */
#if PER_SCORE
    struct fused_row_variants rvar[DR];
#endif
#if STAGED
    vec kvb[BN][NKV];      /* the block's K, then V, rows as float vectors */
#endif
    const struct fused_place at = fused_place_of(n_q, n_k, kv_heads, n_rtiles, splits,
                                                 split_keys, kv_lens, q_lens, DR, BN);
    KV_OF_PLACE(at);
    const uint p0 = at.r0;
    const int nr = p0 < at.n_rows ? (int)min((uint)DR, at.n_rows - p0) : 0;
    const ivec iota = (ivec)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);

    int item_end = (int)at.kv_begin;
    for (int r = 0; r < DR; r++) {
        int lr = -1;
        sees[r] = 0;
        beg[r] = 0;
        if (r < nr) {
            const uint token = (p0 + r) / GROUP;
            const uint end = fused_token_end(token, at.kv_len, at.causal_off);
            const uint first = fused_token_begin(token, at.begin_off);
            sees[r] = end > first;
            lr = (int)min(end, at.kv_end) - 1;
            beg[r] = (int)min(first, at.kv_end);
            row_to_vecs(q + fused_row_index(&at, p0 + r, q_off, q_sb, q_sh, q_st), qv[r],
                        scale_log2, D, NQV);
#if PER_SCORE
            rvar[r] = fused_row_variants_of(at.b, at.hk * GROUP + (p0 + r) % GROUP, token,
                                            at.align_off, heads, FUSED_FLAGS, alibi, m_off,
                                            m_sb, m_sh, m_sr);
#endif
        } else {
            for (int i = 0; i < NQV; i++)
                qv[r][i] = (vec)(0.0f);
        }
        lim[r] = max(lr, -1);
        item_end = max(item_end, lim[r] + 1);
        for (int i = 0; i < NVV; i++)
            ov[r][i] = (vec)(0.0f);
        m[r] = -1e30f;
        lsum[r] = (vec)(0.0f);
        bad[r] = 0;
        seen[r] = 0;
    }

    for (int j0 = (int)at.kv_begin; j0 < item_end; j0 += BN) {
        const int nv = min(BN, item_end - j0);
#if KV_GENERIC
        /* Whole groups of 16 keys, zeros past nv (masked below): the Q.K^T
         * loop then finds its 16 rows at fixed offsets. */
        for (int j = 0; j < nv; j++) {
            cache_row_to_vecs(&k_cache, K_TYPE, j0 + j, kvb[j], D, NQV);
            prefetch_row(&k_cache, K_TYPE, min(j0 + j + BN, item_end - 1), D);
        }
        for (int j = nv; j % 16; j++)
            for (int i = 0; i < NQV; i++)
                kvb[j][i] = (vec)(0.0f);
#elif STAGED
        for (int j = 0; j < nv; j++)
            row_to_vecs(kb + (size_t)(j0 + j) * kst, kvb[j], 1.0f, D, NQV);
#else
        __global const float *kvrow = kb + (size_t)j0 * kst;
        ulong kvst = kst; /* KVEC's row stride: K's now, V's below */
#endif
        for (int r = 0; r < DR; r++) {
            if (lim[r] < j0 || j0 + nv <= beg[r]) { /* no visible key here: p = 0 */
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
                /* Keys past nv repeat the last one (a staged cache block
                 * has zeros there); they are masked. */
                int jr[16];
#pragma unroll
                for (int i = 0; i < 16; i++)
                    jr[i] = KV_GENERIC ? g * 16 + i : min(g * 16 + i, nv - 1);
                for (int xv = 0; xv < NQV; xv++) {
                    const vec qx = qv[r][xv];
#pragma unroll
                    for (int i = 0; i < 16; i++)
                        acc[i] = fma(KVEC(jr[i], xv), qx, acc[i]);
                }
                vec s = hsum16(acc);
#if PER_SCORE
                s = row_variant_scores(s, j0 + g * 16, nv - g * 16, &rvar[r], softcap, mask,
                                       iota);
#endif
                const ivec key = iota + (j0 + g * 16);
                s = select((vec)(-INFINITY), s, (key <= (ivec)(lim[r])) & (key >= (ivec)(beg[r])));
                bad[r] |= any(!(s < (vec)(INFINITY)));
#if HIDES
                seen[r] |= any(s > (vec)(-INFINITY));
#endif
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
#if KV_GENERIC
        for (int j = 0; j < nv; j++) {
            cache_row_to_vecs(&v_cache, V_TYPE, j0 + j, kvb[j], DV, NVV);
            prefetch_row(&v_cache, V_TYPE, min(j0 + j + BN, item_end - 1), DV);
        }
#elif STAGED
        for (int j = 0; j < nv; j++)
            row_to_vecs(vb + (size_t)(j0 + j) * vst, kvb[j], 1.0f, DV, NVV);
#else
        kvrow = vb + (size_t)j0 * vst;
        kvst = vst;
#endif
        for (int xv0 = 0; xv0 + XCH <= NVV; xv0 += XCH)
            PV_DEC(XCH);
#if XCT
        {
            const int xv0 = NVV - XCT;
            PV_DEC(XCT);
        }
#endif
    }

    for (int r = 0; r < DR && p0 + r < n_q * GROUP; r++) {
        float t[NVV * 16];
        for (int i = 0; i < NVV; i++)
            vstore16(ov[r][i], i, t);
        finish_row(&at, p0 + r, t, hsum_all(lsum[r]).s0, m[r], bad[r],
                   sees[r] && (!HIDES || seen[r]), o, lse, part_o, part_ml, sinks, o_off, o_sb,
                   o_sh, o_st, batch, heads, n_q, splits);
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

/* What the per-score variants need of each lane's row: ALiBi's origin (its
 * token plus the alignment) and slope, and where its mask row starts. */
struct lane_variants {
    ivec at;
    vec slope;
    ulong mask_row[R];
};

/* The additive mask of key j for the 16 rows, one element per lane. */
static inline vec lane_mask(__global const uint *mask, const struct lane_variants *lv, int j)
{
    float t[R];
    for (int r = 0; r < R; r++)
        t[r] = fused_mask_value(mask, lv->mask_row[r] + j);
    return vload16(0, t);
}

/* The 8 x 8 block a (row r in a[r]) transposed into t (column i in t[i]):
 * three rounds of constant shuffles (unpack, 64-bit pairs, 128-bit halves). */
#define SH8(x, y, ...) shuffle2((x), (y), (uint8)(__VA_ARGS__))
static inline void transpose8(const float8 *a, float8 *t)
{
    float8 b[8], c[8];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        b[2 * k] = SH8(a[2 * k], a[2 * k + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        b[2 * k + 1] = SH8(a[2 * k], a[2 * k + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int o = 4 * h; /* rows 0-3, then 4-7 */
        c[o + 0] = SH8(b[o + 0], b[o + 2], 0, 1, 8, 9, 4, 5, 12, 13);
        c[o + 1] = SH8(b[o + 0], b[o + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        c[o + 2] = SH8(b[o + 1], b[o + 3], 0, 1, 8, 9, 4, 5, 12, 13);
        c[o + 3] = SH8(b[o + 1], b[o + 3], 2, 3, 10, 11, 6, 7, 14, 15);
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        t[i] = SH8(c[i], c[4 + i], 0, 1, 2, 3, 8, 9, 10, 11);
        t[4 + i] = SH8(c[i], c[4 + i], 4, 5, 6, 7, 12, 13, 14, 15);
    }
}

/* The additive mask of keys [j, j + 8) for the 16 rows: each row's 8
 * elements read as one vector, the two 8 x 8 blocks transposed, so that
 * madd[i] holds key j + i across the lanes (16 loads and 48 shuffles where
 * lane_mask takes 128 scalar loads). */
static inline void lane_mask8(__global const uint *mask, const struct lane_variants *lv, int j,
                              vec *madd)
{
    float8 a[R], lo[8], hi[8];
#pragma unroll
    for (int r = 0; r < R; r++)
        a[r] = MASK_LOAD_VEC(8, mask, lv->mask_row[r] + j);
    transpose8(a, lo);
    transpose8(a + 8, hi);
#pragma unroll
    for (int i = 0; i < 8; i++)
        madd[i] = (vec)(lo[i], hi[i]);
}

/* The per-score variants on the scores of key j for the 16 rows of a row
 * vector; `madd` the key's additive mask (lane_mask). */
static inline vec lane_variant_scores(vec s, int j, const struct lane_variants *lv,
                                      float softcap, __global const uint *mask, vec madd)
{
    ivec mbool = (ivec)(0);
#if MASK_BOOL
    int shown[R];
    for (int r = 0; r < R; r++)
        shown[r] = ((__global const uchar *)mask)[lv->mask_row[r] + j];
    mbool = vload16(0, shown);
#endif
    return variant_scores(s, softcap, lv->slope, lv->at - (ivec)(j), madd, mbool);
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void attention_fused(FUSED_PARAMS(store_t))
{
    vec qt[RV][D];       /* Q^T: lane r of qt[rv][x] is Q[row r][x] * scale*log2(e) */
    vec ot[RV][DV];      /* O^T accumulators */
    vec pt[RV][BN];      /* S^T then P^T of the current block */
    vec m[RV], l[RV], alpha[RV];
    ivec qlim[RV];       /* last visible key per lane */
    ivec qbeg[RV];       /* first visible key per lane (a window's left side) */
    ivec bad[RV];        /* per lane: a NaN or +inf score */
    ivec seen[RV];       /* per lane: a key the masks left visible (HIDES) */
    int kv_end[RV], full_end[RV], first_begin[RV], last_begin[RV], n_rows[RV];
    int sees[RV][R];     /* the row sees a key at all */
#if PER_SCORE
    struct lane_variants lv[RV];
#endif
#if COPIES
    float kf[BN * KVW];  /* the block's K, then V, converted to float */
#endif

    const struct fused_place at = fused_place_of(n_q, n_k, kv_heads, n_rtiles, splits,
                                                 split_keys, kv_lens, q_lens, R * RV, BN);
    KV_OF_PLACE(at);
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
        int qi_l[R], qb_l[R];
#if PER_SCORE
        int at_l[R];
        float slope_l[R];
#endif
        for (int r = 0; r < R; r++) {
            const uint row = r0 + min(r, max(nr - 1, 0)), token = row / GROUP;
            const uint row_end = fused_token_end(token, at.kv_len, at.causal_off);
            const uint first = fused_token_begin(token, at.begin_off);
            const uint end = min(row_end, at.kv_end);
            qi_l[r] = (int)end - 1;
            qb_l[r] = (int)min(first, end);
            sees[rv][r] = r < nr && row_end > first;
#if PER_SCORE
            const struct fused_row_variants v = fused_row_variants_of(
                at.b, at.hk * GROUP + row % GROUP, token, at.align_off, heads, FUSED_FLAGS,
                alibi, m_off, m_sb, m_sh, m_sr);
            at_l[r] = (int)token + at.align_off;
            slope_l[r] = v.slope;
            lv[rv].mask_row[r] = v.mask_row;
#endif
        }
        qlim[rv] = vload16(0, qi_l);
        qbeg[rv] = vload16(0, qb_l);
#if PER_SCORE
        lv[rv].at = vload16(0, at_l);
        lv[rv].slope = vload16(0, slope_l);
#endif
        const int end = nr ? qi_l[R - 1] + 1 : 0, full = nr ? qi_l[0] + 1 : 0;
        kv_end[rv] = max(end, (int)at.kv_begin);
        full_end[rv] = max(full, (int)at.kv_begin);
        first_begin[rv] = qb_l[0];
        last_begin[rv] = qb_l[R - 1];
        item_end = max(item_end, kv_end[rv]);

        float *qs = (float *)qt[rv];
        for (int r = 0; r < R; r++) {
            if (r < nr) {
                __global const store_t *qr =
                    q + fused_row_index(&at, r0 + r, q_off, q_sb, q_sh, q_st);
                for (int x = 0; x < D; x++)
                    qs[x * R + r] = LOAD(qr, x) * scale_log2;
            } else {
                for (int x = 0; x < D; x++)
                    qs[x * R + r] = 0.0f;
            }
        }
        for (int x = 0; x < DV; x++)
            ot[rv][x] = (vec)(0.0f);
        m[rv] = (vec)(-1e30f); /* finite: m - m_new is never inf - inf */
        l[rv] = (vec)(0.0f);
        bad[rv] = (ivec)(0);
        seen[rv] = (ivec)(0);
    }

    for (int j0 = (int)at.kv_begin; j0 < item_end; j0 += BN) {
        const int nv_item = min(BN, item_end - j0);
#if KV_GENERIC
        cache_rows_to_float(&k_cache, K_TYPE, j0, kf, nv_item, D);
#elif CONVERTS
        rows_to_float(kb + (size_t)j0 * kst, kst, kf, nv_item, D);
#endif
#if COPIES
        const float *kblk = kf;
        const ulong kbst = D;
#else
        __global const float *kblk = kb + (size_t)j0 * kst;
        const ulong kbst = kst;
#endif
        for (int rv = 0; rv < RV; rv++) {
            if (j0 >= kv_end[rv] || j0 + BN <= first_begin[rv])
                continue; /* no lane sees a key of this block */
            const int nv = min(BN, kv_end[rv] - j0); /* keys of this block */
            const int masked = j0 + BN > full_end[rv] || j0 < last_begin[rv];
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
#if PER_SCORE
                /* Keys past nv repeat the last: their mask reads stay in it. */
                vec madd[KB];
#pragma unroll
                for (int i = 0; i < KB; i++)
                    madd[i] = (vec)(0.0f);
#if MASK
#if KB == 8
                if (jb + KB <= nv)
                    lane_mask8(mask, &lv[rv], j0 + jb, madd);
                else
#endif
#pragma unroll
                    for (int i = 0; i < KB; i++)
                        madd[i] = lane_mask(mask, &lv[rv], j0 + min(jb + i, nv - 1));
#endif
#pragma unroll
                for (int i = 0; i < KB; i++)
                    s[i] = lane_variant_scores(s[i], j0 + min(jb + i, nv - 1), &lv[rv], softcap,
                                               mask, madd[i]);
#endif
                if (masked) {
#pragma unroll
                    for (int i = 0; i < KB; i++) {
                        const int j = j0 + jb + i;
                        ivec vis = ((ivec)(j) <= qlim[rv]) & ((ivec)(j) >= qbeg[rv]);
                        if (j >= kv_end[rv])
                            vis = (ivec)(0);
                        s[i] = select((vec)(-INFINITY), s[i], vis);
                    }
                }
#pragma unroll
                for (int i = 0; i < KB; i++) {
#if HIDES
                    seen[rv] |= s[i] > (vec)(-INFINITY);
#endif
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

#if KV_GENERIC
        cache_rows_to_float(&v_cache, V_TYPE, j0, kf, nv_item, DV);
#elif CONVERTS
        rows_to_float(vb + (size_t)j0 * vst, vst, kf, nv_item, DV);
#endif
#if COPIES
#define VROW(j) (kf + (size_t)(j) * DV)
#else
#define VROW(j) (vb + (size_t)(j0 + (j)) * vst)
#endif
        /* O^T = alpha O^T + V^T P^T, XC output columns at a time. */
        for (int rv = 0; rv < RV; rv++) {
            if (j0 >= kv_end[rv] || j0 + BN <= first_begin[rv])
                continue;
            const int nv = min(BN, kv_end[rv] - j0);
            const vec a = alpha[rv];
            for (int x0 = 0; x0 + XC <= DV; x0 += XC)
                PV_TILE(XC);
#if XT
            {
                const int x0 = DV - XT;
                PV_TILE(XT);
            }
#endif
        }
    }

    for (int rv = 0; rv < RV; rv++) {
        float ls[R], ms[R], row[DV];
        int bs[R], vs[R];
        vstore16(l[rv], 0, ls);
        vstore16(m[rv], 0, ms);
        vstore16(bad[rv], 0, bs); /* nonzero where a score was NaN or +inf */
        vstore16(seen[rv], 0, vs);
        const float *os = (const float *)ot[rv];
        for (int r = 0; r < R && p0 + rv * R + r < n_q * GROUP; r++) {
            for (int x = 0; x < DV; x++)
                row[x] = os[x * R + r];
            finish_row(&at, p0 + rv * R + r, row, ls[r], ms[r], bs[r] != 0,
                       sees[rv][r] && (!HIDES || vs[r] != 0), o, lse, part_o, part_ml, sinks,
                       o_off, o_sb, o_sh, o_st, batch, heads, n_q, splits);
        }
    }
}

#endif /* DR */
