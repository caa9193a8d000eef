/*
 * The byte-arithmetic model of attention (docs/MODEL.md): what each path moves
 * through device memory, how much memory it holds, how much it computes, and
 * which tiles the fused kernel visits under a causal mask, for a batch whose
 * sequences may each have their own length and whose keys may be split into
 * chunks (decoding). Pure functions of the shape and a few device figures;
 * no OpenCL here.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "clattn/device.h"
#include "clattn/model.h"
#include "core/abi.h"
#include "core/error.h"
#include "core/kv_cache.h"
#include "model/memory.h"

/* ------------------------------------------------------ checked arithmetic */

/* Checked uint64 arithmetic: an overflow sets *ovf and the caller reports
 * CLATTN_EOVERFLOW once, so formulas stay readable. */
static uint64_t mul(uint64_t a, uint64_t b, int *ovf)
{
    uint64_t r;
    *ovf |= __builtin_mul_overflow(a, b, &r);
    return r;
}

static uint64_t add(uint64_t a, uint64_t b, int *ovf)
{
    uint64_t r;
    *ovf |= __builtin_add_overflow(a, b, &r);
    return r;
}

/* Above this the block accounting's signed offsets could wrap; no real
 * sequence or tile comes near it. */
#define LEN_MAX ((uint64_t)1 << 61)

/* ------------------------------------------------------------------ shapes */

/* The shape as 64-bit counts, with the element size and V's head
 * dimension (d_v: d unless a variant says). */
struct dims {
    uint64_t b, h, hkv, nq, nk, d, e, dv;
};

/* Per-tensor bytes for all heads: Q, K, S (= P), and V and O of d_v
 * columns (= K and Q where d_v = d). */
struct tensors {
    uint64_t q, kv, s, v, o;
};

static int dims_from_shape(const clattn_shape *s, struct dims *x)
{
    *x = (struct dims){ 0 };
    if (!s)
        return clattn_fail(CLATTN_EINVAL, "model: shape is NULL");
    if (!s->batch || !s->heads || !s->kv_heads || !s->q_len || !s->kv_len || !s->head_dim)
        return clattn_fail(CLATTN_EINVAL,
                           "model: every size must be >= 1 "
                           "(B=%zu H=%zu Hkv=%zu Nq=%zu Nk=%zu d=%zu)",
                           s->batch, s->heads, s->kv_heads, s->q_len, s->kv_len, s->head_dim);
    if (s->heads % s->kv_heads)
        return clattn_fail(CLATTN_EINVAL, "model: H=%zu is not a multiple of Hkv=%zu", s->heads,
                           s->kv_heads);
    x->e = clattn_dtype_size(s->dtype);
    if (!x->e)
        return clattn_fail(CLATTN_EINVAL, "model: unknown dtype %d", (int)s->dtype);
    x->b = s->batch;
    x->h = s->heads;
    x->hkv = s->kv_heads;
    x->nq = s->q_len;
    x->nk = s->kv_len;
    x->d = s->head_dim;
    x->dv = s->head_dim;
    return CLATTN_OK;
}

/* Bytes of each tensor; nonzero when one overflows (no detail recorded, so
 * the length searches can probe sizes that do not exist). */
static int tensor_bytes(const struct dims *x, struct tensors *t)
{
    int ovf = 0;
    uint64_t bh = mul(x->b, x->h, &ovf);
    t->q = mul(mul(mul(bh, x->nq, &ovf), x->d, &ovf), x->e, &ovf);
    t->kv = mul(mul(mul(mul(x->b, x->hkv, &ovf), x->nk, &ovf), x->d, &ovf), x->e, &ovf);
    t->s = mul(mul(mul(bh, x->nq, &ovf), x->nk, &ovf), x->e, &ovf);
    t->o = mul(mul(mul(bh, x->nq, &ovf), x->dv, &ovf), x->e, &ovf);
    t->v = mul(mul(mul(mul(x->b, x->hkv, &ovf), x->nk, &ovf), x->dv, &ovf), x->e, &ovf);
    return ovf;
}

static int overflow_detail(const struct dims *x)
{
    return clattn_fail(CLATTN_EOVERFLOW,
                       "model: B=%llu H=%llu Nq=%llu Nk=%llu d=%llu overflows 64-bit byte counts",
                       (unsigned long long)x->b, (unsigned long long)x->h,
                       (unsigned long long)x->nq, (unsigned long long)x->nk,
                       (unsigned long long)x->d);
}

/* Validates `s` and computes its tensor sizes, recording the detail. */
static int load_shape(const clattn_shape *s, struct dims *x, struct tensors *t)
{
    int rc = dims_from_shape(s, x);
    if (rc < 0)
        return rc;
    if (tensor_bytes(x, t) || x->nq > LEN_MAX || x->nk > LEN_MAX)
        return overflow_detail(x);
    return CLATTN_OK;
}

/* The start of the public function `func` of one shape: clears the error,
 * checks its out-pointer and loads the shape. */
static int begin_shape(const char *func, const clattn_shape *s, const void *out, struct dims *x,
                       struct tensors *t)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG_OF(func, out);
    return load_shape(s, x, t);
}

/* -------------------------------------------------------------- Q1 traffic */

/* Per head the query head works alone: its Q and O, its group's K and V
 * (Q and K of d columns, V and O of d_v). */
static int head_traffic(const struct dims *x, clattn_traffic *out)
{
    int ovf = 0;
    uint64_t lens = add(x->nq, x->nk, &ovf), cols = add(x->d, x->dv, &ovf);
    out->head_score_bytes = mul(mul(x->nq, x->nk, &ovf), x->e, &ovf);
    out->head_endpoint_bytes = mul(mul(lens, cols, &ovf), x->e, &ovf);
    out->head_naive_bytes =
        add(out->head_endpoint_bytes, mul(4, out->head_score_bytes, &ovf), &ovf);
    out->head_fused_bytes = out->head_endpoint_bytes;
    out->head_ratio = (double)out->head_naive_bytes / (double)out->head_fused_bytes;
    out->closed_form = 1.0 + 4.0 * (double)x->nq * (double)x->nk /
                                 (((double)x->nq + (double)x->nk) * (double)(x->d + x->dv));
    return ovf;
}

/* All heads share each K and V head, so those are counted once per KV head. */
static int all_heads_traffic(const struct tensors *t, clattn_traffic *out)
{
    int ovf = 0;
    out->score_bytes = t->s;
    out->endpoint_bytes = add(add(t->q, t->o, &ovf), add(t->kv, t->v, &ovf), &ovf);
    out->naive_bytes = add(out->endpoint_bytes, mul(4, t->s, &ovf), &ovf);
    out->fused_bytes = out->endpoint_bytes;
    out->ratio = (double)out->naive_bytes / (double)out->fused_bytes;
    return ovf;
}

int clattn_model_traffic(const clattn_shape *shape, clattn_traffic *out)
{
    struct dims x = { 0 };
    struct tensors t = { 0 };
    int rc = begin_shape(__func__, shape, out, &x, &t);
    if (rc < 0)
        return rc;
    if (head_traffic(&x, out) || all_heads_traffic(&t, out))
        return overflow_detail(&x);
    return CLATTN_OK;
}

/* ------------------------------------------------------------------ memory */

void clattn_model_default_device(clattn_model_device *dev)
{
    if (!dev)
        return;
    *dev = (clattn_model_device){ 0 };
}

void clattn_model_device_from_ceilings(const clattn_ceilings *c, clattn_dtype dtype,
                                       clattn_model_device *out)
{
    if (!c || !out)
        return;
    clattn_model_default_device(out);
    const int f32 = dtype == CLATTN_F32 || c->flops_f16.source == CLATTN_SRC_NONE;
    out->capacity_bytes = (uint64_t)c->global_mem_bytes.value;
    out->max_alloc_bytes = (uint64_t)c->max_alloc_bytes.value;
    out->cache_bytes = (uint64_t)c->cache_bytes.value;
    out->bandwidth = c->bandwidth.value;
    out->peak_flops = f32 ? c->flops_f32.value : c->flops_f16.value;
    out->launch_latency_s = c->launch_latency_s.value;
}

/* Adds one buffer to the plan; the first of equal sizes stays the largest. */
static void plan_hold(clattn_memory_plan *plan, const char *name, uint64_t bytes, int *ovf)
{
    plan->peak_bytes = add(plan->peak_bytes, bytes, ovf);
    if (!plan->largest_name || bytes > plan->largest_bytes) {
        plan->largest_bytes = bytes;
        plan->largest_name = name;
    }
}

/* The plan of `path` without recording a detail; nonzero on overflow. */
static int plan_path(const struct tensors *t, clattn_path path, uint64_t extra,
                     clattn_memory_plan *plan)
{
    int ovf = 0;
    *plan = (clattn_memory_plan){ 0 };
    plan_hold(plan, "Q", t->q, &ovf);
    plan_hold(plan, "K", t->kv, &ovf);
    plan_hold(plan, "V", t->v, &ovf);
    plan_hold(plan, "O", t->o, &ovf);
    if (path == CLATTN_PATH_NAIVE) {
        /* The seed's naive path: softmax writes P while S is still live. */
        plan_hold(plan, "S", t->s, &ovf);
        plan_hold(plan, "P", t->s, &ovf);
    }
    /* The naive path's S and P are buffers above; what else a path holds
     * (CLBlast's temporaries, split-KV partials) the caller passes in. */
    plan->workspace_bytes = extra;
    if (plan->workspace_bytes)
        plan_hold(plan, "workspace", plan->workspace_bytes, &ovf);
    return ovf;
}

int model_memory_variant(const clattn_shape *shape, size_t head_dim_v, uint64_t mask_bytes,
                         clattn_path path, uint64_t extra_workspace_bytes,
                         clattn_memory_plan *out)
{
    struct dims x;
    struct tensors t;
    CLATTN_CHECK_ARG(out);
    CLATTN_CHECK_ARG(path == CLATTN_PATH_NAIVE || path == CLATTN_PATH_FUSED);
    int rc = dims_from_shape(shape, &x);
    if (rc < 0)
        return rc;
    if (head_dim_v)
        x.dv = head_dim_v;
    int ovf = 0;
    if (tensor_bytes(&x, &t) || x.nq > LEN_MAX || x.nk > LEN_MAX)
        return overflow_detail(&x);
    if (plan_path(&t, path, extra_workspace_bytes, out) ||
        (mask_bytes && (plan_hold(out, "mask", mask_bytes, &ovf), ovf)))
        return clattn_fail(CLATTN_EOVERFLOW, "model: %s path's memory overflows 64 bits",
                           path == CLATTN_PATH_NAIVE ? "naive" : "fused");
    return CLATTN_OK;
}

int clattn_model_memory(const clattn_shape *shape, clattn_path path,
                        uint64_t extra_workspace_bytes, clattn_memory_plan *out)
{
    clattn_clear_error();
    return model_memory_variant(shape, 0, 0, path, extra_workspace_bytes, out);
}

const char *clattn_fit_name(clattn_fit fit)
{
    switch (fit) {
    case CLATTN_FIT_OK: return "fits";
    case CLATTN_FIT_OVER_CAPACITY: return "exceeds capacity";
    case CLATTN_FIT_OVER_MAX_ALLOC: return "exceeds max allocation";
    case CLATTN_FIT_UNKNOWN: break;
    }
    return "unknown";
}

static clattn_fit fit_verdict(const clattn_memory_plan *plan, const clattn_model_device *dev)
{
    if (dev->capacity_bytes && plan->peak_bytes > dev->capacity_bytes)
        return CLATTN_FIT_OVER_CAPACITY;
    if (dev->max_alloc_bytes && plan->largest_bytes > dev->max_alloc_bytes)
        return CLATTN_FIT_OVER_MAX_ALLOC;
    return dev->capacity_bytes ? CLATTN_FIT_OK : CLATTN_FIT_UNKNOWN;
}

int clattn_model_fit(const clattn_memory_plan *plan, const clattn_model_device *dev,
                     clattn_fit *out)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(plan);
    CLATTN_CHECK_ARG(dev);
    CLATTN_CHECK_ARG(out);
    *out = fit_verdict(plan, dev);
    return CLATTN_OK;
}

/* ------------------------------------------------------ Q2 length limits */

/* One constraint on N = Nq = Nk: a*N^2 + b*N + c <= budget. */
struct quadratic {
    double a, b, c, budget;
};

/* The real N where the constraint holds with equality (0 if never). */
static double quadratic_root(const struct quadratic *q)
{
    double room = q->budget - q->c;
    if (room < 0)
        return 0;
    if (q->a == 0)
        return q->b > 0 ? room / q->b : INFINITY;
    /* (-b + sqrt(b^2 + 4a*room)) / 2a, rearranged so that no cancellation
     * occurs when b^2 dominates. */
    return 2 * room / (q->b + sqrt(q->b * q->b + 4 * q->a * room));
}

/* The constraints of `limit`, written for N = Nq = Nk; returns their count. */
static int limit_constraints(const struct dims *unit, clattn_len_limit limit, uint64_t extra,
                             const clattn_model_device *dev, struct quadratic q[4])
{
    /* Bytes per N^2 of one head's S, per N^2 of all heads' S, per N of Q and
     * of K (from the shape with Nq = Nk = 1). */
    double e = (double)unit->e, bh = (double)unit->b * (double)unit->h;
    double s_all = e * bh, q1 = e * bh * (double)unit->d;
    double kv1 = e * (double)unit->b * (double)unit->hkv * (double)unit->d;
    double cap = (double)dev->capacity_bytes, ma = (double)dev->max_alloc_bytes;
    double ws = (double)extra;
    int n = 0;

    switch (limit) {
    case CLATTN_LIMIT_HEAD_S_IN_CACHE:
        q[n++] = (struct quadratic){ e, 0, 0, (double)dev->cache_bytes };
        break;
    case CLATTN_LIMIT_SHARED_S_IN_CACHE:
        q[n++] = (struct quadratic){ s_all, 0, 0, (double)dev->cache_bytes };
        break;
    case CLATTN_LIMIT_SCORES_IN_MEMORY:
        q[n++] = (struct quadratic){ 2 * s_all, 0, 0, cap };
        break;
    case CLATTN_LIMIT_NAIVE_FITS:
    case CLATTN_LIMIT_FUSED_FITS: {
        int naive = limit == CLATTN_LIMIT_NAIVE_FITS;
        q[n++] = (struct quadratic){ naive ? 2 * s_all : 0, 2 * (q1 + kv1), ws, cap };
        if (dev->max_alloc_bytes) {
            /* Q is the largest endpoint buffer (Hkv <= H). */
            q[n++] = (struct quadratic){ 0, q1, 0, ma };
            q[n++] = (struct quadratic){ 0, 0, ws, ma };
            if (naive)
                q[n++] = (struct quadratic){ s_all, 0, 0, ma };
        }
        break;
    }
    }
    return n;
}

/* Whether length n meets `limit`, in exact integer arithmetic; a size that
 * overflows 64 bits does not fit. */
static int len_fits(const struct dims *unit, clattn_len_limit limit, uint64_t extra,
                    const clattn_model_device *dev, uint64_t n)
{
    struct dims x = *unit;
    struct tensors t;
    clattn_memory_plan plan;
    int ovf = 0;
    x.nq = x.nk = n;
    if (n == 0)
        return 1;
    if (limit == CLATTN_LIMIT_HEAD_S_IN_CACHE) {
        uint64_t head_s = mul(mul(n, n, &ovf), x.e, &ovf);
        return !ovf && head_s <= dev->cache_bytes;
    }
    if (tensor_bytes(&x, &t))
        return 0;
    if (limit == CLATTN_LIMIT_SHARED_S_IN_CACHE)
        return t.s <= dev->cache_bytes;
    if (limit == CLATTN_LIMIT_SCORES_IN_MEMORY) {
        uint64_t s_and_p = add(t.s, t.s, &ovf);
        return !ovf && s_and_p <= dev->capacity_bytes;
    }
    clattn_path path = limit == CLATTN_LIMIT_NAIVE_FITS ? CLATTN_PATH_NAIVE : CLATTN_PATH_FUSED;
    return !plan_path(&t, path, extra, &plan) && fit_verdict(&plan, dev) == CLATTN_FIT_OK;
}

static int check_limit_figures(clattn_len_limit limit, const clattn_model_device *dev)
{
    int cache_limit =
        limit == CLATTN_LIMIT_HEAD_S_IN_CACHE || limit == CLATTN_LIMIT_SHARED_S_IN_CACHE;
    if ((unsigned)limit > CLATTN_LIMIT_FUSED_FITS)
        return clattn_fail(CLATTN_EINVAL, "model: unknown length limit %d", (int)limit);
    if (cache_limit && !dev->cache_bytes)
        return clattn_fail(CLATTN_EINVAL, "model: the device's cache size is unknown");
    if (!cache_limit && !dev->capacity_bytes)
        return clattn_fail(CLATTN_EINVAL, "model: the device's memory capacity is unknown");
    return CLATTN_OK;
}

int clattn_model_max_len(const clattn_shape *shape, clattn_len_limit limit,
                         uint64_t extra_workspace_bytes, const clattn_model_device *dev,
                         size_t *n, double *root)
{
    clattn_clear_error();
    struct dims unit;
    struct quadratic q[4];
    CLATTN_CHECK_ARG(dev);
    CLATTN_CHECK_ARG(n);
    int rc = dims_from_shape(shape, &unit);
    if (rc < 0)
        return rc;
    if ((rc = check_limit_figures(limit, dev)) < 0)
        return rc;

    double best = INFINITY;
    int count = limit_constraints(&unit, limit, extra_workspace_bytes, dev, q);
    for (int i = 0; i < count; i++)
        best = fmin(best, quadratic_root(&q[i]));
    /* The root is within rounding of the answer; the exact check settles it. */
    uint64_t len = best >= (double)LEN_MAX ? LEN_MAX : (uint64_t)best;
    while (len > 0 && !len_fits(&unit, limit, extra_workspace_bytes, dev, len))
        len--;
    while (len < LEN_MAX && len_fits(&unit, limit, extra_workspace_bytes, dev, len + 1))
        len++;
    *n = len > SIZE_MAX ? SIZE_MAX : (size_t)len;
    if (root)
        *root = best;
    return CLATTN_OK;
}

/* ------------------------------------------------ Q4 causal block counts */

/* The tiles and the keys each query sees: key j is visible to query i iff
 * i + begin_off <= j <= i + end_off, each bound only where has_* says (a
 * causal mask and a window's right side bound the end, a window's left
 * side the beginning). */
struct tiling {
    uint64_t nq, nk, bm, bn;
    int has_end, has_begin, windowed;
    clattn_causal causal;
    int64_t end_off, begin_off;
};

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

typedef unsigned __int128 u128;
typedef __int128 s128;

/* sum over i in [0, n) of floor((a i + b) / m), a, b >= 0, m >= 1 (the
 * classic reduction by Euclid's algorithm: logarithmic in a and m). */
static u128 floor_sum(u128 n, u128 m, u128 a, u128 b, int *ovf)
{
    u128 sum = 0, t;
    while (n) {
        if (a >= m) {
            *ovf |= __builtin_mul_overflow(n * (n - 1) / 2, a / m, &t) ||
                    __builtin_add_overflow(sum, t, &sum);
            a %= m;
        }
        if (b >= m) {
            *ovf |= __builtin_mul_overflow(n, b / m, &t) || __builtin_add_overflow(sum, t, &sum);
            b %= m;
        }
        const u128 y = a * n + b; /* a < m and n, b below 2^63: no overflow */
        if (y < m)
            break;
        n = y / m;
        b = y % m;
        t = m;
        m = a;
        a = t;
    }
    return sum;
}

/* The smallest i >= 0 with a i + b >= target (a >= 1), as a signed count. */
static s128 first_reaching(s128 a, s128 b, s128 target)
{
    const s128 need = target - b;
    if (need <= 0)
        return 0;
    return (need + a - 1) / a;
}

/* A key-block index per query block, clamp(floor((a i + b) / bn), 0, k)
 * for i in [0, n): its sum, and the first blocks at which it reaches 1
 * and k (n if never). */
struct block_index {
    u128 sum;
    uint64_t first_one, first_top;
};

static void clamped_floor_sum(uint64_t n, uint64_t a, s128 b, uint64_t bn, uint64_t k,
                              struct block_index *out, int *ovf)
{
    s128 zero = first_reaching(a, b, 0), one = first_reaching(a, b, bn),
         top = first_reaching(a, b, (s128)k * bn);
    if (zero > (s128)n)
        zero = n;
    if (one > (s128)n)
        one = n;
    if (top > (s128)n)
        top = n;
    out->first_one = (uint64_t)one;
    out->first_top = (uint64_t)top;
    out->sum = 0;
    if (top > zero) /* the blocks between: a i + b >= 0 there */
        out->sum = floor_sum((u128)(top - zero), bn, a, (u128)(b + (s128)a * zero), ovf);
    u128 rest;
    *ovf |= __builtin_mul_overflow((u128)(n - (uint64_t)top), (u128)k, &rest) ||
            __builtin_add_overflow(out->sum, rest, &out->sum);
}

/* Query block i visits the key blocks [lo_block(i), hi_block(i)): from the
 * block holding its first row's first visible key to the one past its
 * last possible row's last (the kernels bound the walk by the tile's
 * rows, q0 .. q0 + BM - 1 even where Nq cuts the block short, and walk
 * whole key blocks, the last one cut at Nk). */
static int64_t hi_block_b(const struct tiling *g)
{
    return g->end_off + (int64_t)g->bm + (int64_t)g->bn - 1; /* a = BM, of ceil((i+1)BM + end + 1 - 1) */
}

static uint64_t block_keys(const struct tiling *g, uint64_t lo_block, uint64_t hi_block)
{
    return min_u64(hi_block * g->bn, g->nk) - min_u64(lo_block * g->bn, g->nk);
}

static uint64_t hi_block_at(const struct tiling *g, uint64_t i, uint64_t k_blocks)
{
    if (!g->has_end)
        return k_blocks;
    s128 x = (s128)g->bm * (s128)i + hi_block_b(g);
    if (x < (s128)g->bn)
        return 0;
    s128 q = x / (s128)g->bn;
    return q > (s128)k_blocks ? k_blocks : (uint64_t)q;
}

static uint64_t lo_block_at(const struct tiling *g, uint64_t i, uint64_t k_blocks)
{
    if (!g->has_begin)
        return 0;
    s128 x = (s128)g->bm * (s128)i + g->begin_off;
    if (x < (s128)g->bn)
        return 0;
    s128 q = x / (s128)g->bn;
    return q > (s128)k_blocks ? k_blocks : (uint64_t)q;
}

/* Sum over queries of the keys [i + begin, i + end] within [0, Nk): the
 * difference of two clamped ramps, each a run of zeros, consecutive counts,
 * then Nk. */
static u128 ramp_sum(const struct tiling *g, int64_t off)
{
    /* sum over i < Nq of clamp(i + off + 1, 0, Nk) */
    const s128 nq = g->nq, nk = g->nk;
    s128 lo = -(s128)off - 1; /* i > lo: positive */
    s128 first = lo + 1 < 0 ? 0 : lo + 1;
    s128 full = nk - off - 1; /* i >= full: Nk */
    if (full < first)
        full = first;
    if (first > nq)
        first = nq;
    if (full > nq)
        full = nq;
    u128 sum = 0;
    if (full > first) { /* values first + off + 1 .. full + off */
        const s128 v0 = first + off + 1, v1 = full + off;
        sum = (u128)((v0 + v1) * (full - first) / 2);
    }
    return sum + (u128)(nq - full) * (u128)nk;
}

static uint64_t visible_pairs(const struct tiling *g, int *ovf)
{
    u128 end = g->has_end ? ramp_sum(g, g->end_off) : (u128)g->nq * g->nk;
    u128 begin = g->has_begin ? ramp_sum(g, g->begin_off - 1) : 0;
    u128 v = end - begin;
    *ovf |= v > UINT64_MAX;
    return (uint64_t)v;
}

/* Query rows that see no key at all: i + end < 0 (bottom-right with
 * Nq > Nk), or i + begin >= Nk (a window that passes the last key). */
static uint64_t rows_seeing_nothing(const struct tiling *g)
{
    uint64_t n = 0;
    if (g->has_end && g->end_off < 0)
        n += min_u64((uint64_t)-g->end_off, g->nq);
    if (g->has_begin && (s128)g->begin_off + (s128)g->nq > (s128)g->nk) {
        s128 first = (s128)g->nk - g->begin_off; /* the first such row */
        n += first <= 0 ? g->nq : g->nq - (uint64_t)first;
    }
    return min_u64(n, g->nq);
}

/* Blocks, pairs and key rows of every query block, summed in closed form
 * (floor sums: a sliding window over a long sequence visits a different
 * span of key blocks at each query block). */
static void count_blocks(const struct tiling *g, clattn_causal_blocks *out, int *ovf)
{
    const uint64_t qb = out->q_blocks, kb = out->k_blocks;
    struct block_index hi = { (u128)qb * kb, 0, 0 }, lo = { 0, qb, qb };
    if (g->has_end)
        clamped_floor_sum(qb, g->bm, hi_block_b(g), g->bn, kb, &hi, ovf);
    if (g->has_begin)
        clamped_floor_sum(qb, g->bm, g->begin_off, g->bn, kb, &lo, ovf);
    /* Key rows: a block index times BN, less what the last block's cut at
     * Nk leaves out for the blocks that reach it. */
    const uint64_t cut = kb * g->bn - g->nk;
    const u128 hi_rows = hi.sum * g->bn - (u128)(qb - hi.first_top) * cut;
    const u128 lo_rows = lo.sum * g->bn - (u128)(qb - lo.first_top) * cut;
    const u128 keys = hi_rows - lo_rows, blocks = hi.sum - lo.sum;
    const uint64_t last = qb - 1, last_rows = g->nq - last * g->bm;
    const uint64_t last_keys = block_keys(g, lo_block_at(g, last, kb), hi_block_at(g, last, kb));
    u128 pairs;
    *ovf |= __builtin_mul_overflow(keys, (u128)g->bm, &pairs);
    pairs -= (u128)(g->bm - last_rows) * last_keys;
    *ovf |= keys > UINT64_MAX || blocks > UINT64_MAX || pairs > UINT64_MAX;
    out->visited_blocks = (uint64_t)blocks;
    out->computed_pairs = (uint64_t)pairs;
    out->kv_rows_streamed = (uint64_t)keys;
    /* The blocks that visit nothing: those before the first that reaches a
     * key, and those whose window starts past Nk. The others' key spans
     * overlap or touch (each starts at or before the previous one ends),
     * so the rows read are one span. */
    const uint64_t first = g->has_end ? hi.first_one : 0;
    const uint64_t end = g->has_begin ? lo.first_top : qb;
    out->empty_q_blocks = first + (qb - (end > first ? end : first));
    out->kv_rows_read = end > first ? block_keys(g, lo_block_at(g, first, kb),
                                                 hi_block_at(g, end - 1, kb))
                                    : 0;
}

static double block_closed_form(const struct tiling *g, uint64_t t)
{
    if (g->windowed)
        return 0.0;
    if (g->causal == CLATTN_CAUSAL_NONE)
        return 1.0;
    if (g->nq != g->nk || g->bm != g->bn)
        return 0.0;
    return ((double)t + 1.0) / (2.0 * (double)t);
}

/* What a problem's variant changes in the model (clattn_model_variant,
 * checked). */
struct variant_in {
    int32_t wl, wr;            /* the window's sides; -1: unbounded */
    uint64_t mask_e;           /* bytes of one mask element; 0: no mask */
    uint64_t mask_b, mask_h;   /* its broadcast dims */
    /* The KV cache (clattn_model_cache, checked); all zero: plain. */
    uint64_t k_row, v_row;     /* bytes of one KV head's key row, value row; 0: the dtype's */
    uint64_t page;             /* keys per page; 0: not paged */
    uint64_t num_pages;        /* 0: B ceil(Nk / page) */
    uint64_t stride;           /* block table entries per sequence; 0: ceil(Nk / page) */
    int packed;                /* Q, K, V, O packed by cu_seqlens */
    const uint32_t *q_lens;    /* B query counts; NULL: Nq for all */
    uint64_t scale_bytes;      /* fp8 scales, K's and V's */
};

static const struct variant_in no_variant = { -1, -1, 0, 1, 1, 0, 0, 0, 0, 0, 0, NULL, 0 };

static int tiling_from(const struct dims *x, clattn_causal causal, const struct variant_in *w,
                       size_t bm, size_t bn, struct tiling *g)
{
    *g = (struct tiling){ 0 };
    if (causal != CLATTN_CAUSAL_NONE && causal != CLATTN_CAUSAL_TOP_LEFT &&
        causal != CLATTN_CAUSAL_BOTTOM_RIGHT)
        return clattn_fail(CLATTN_EINVAL, "model: unknown causal mode %d", (int)causal);
    if (!bm || !bn)
        return clattn_fail(CLATTN_EINVAL, "model: tiles must be >= 1 (BLOCK_M=%zu BLOCK_N=%zu)",
                           bm, bn);
    if (bm > LEN_MAX || bn > LEN_MAX)
        return clattn_fail(CLATTN_EOVERFLOW, "model: tiles %zu x %zu are too large", bm, bn);
    g->nq = x->nq;
    g->nk = x->nk;
    g->bm = bm;
    g->bn = bn;
    g->causal = causal;
    /* Windows and ALiBi align as the causal mask does, bottom-right without
     * one (FlashAttention's alignment). */
    const int64_t align = causal == CLATTN_CAUSAL_TOP_LEFT ? 0 : (int64_t)x->nk - (int64_t)x->nq;
    g->has_end = causal != CLATTN_CAUSAL_NONE || w->wr >= 0;
    g->end_off = causal != CLATTN_CAUSAL_NONE ? align : INT64_MAX;
    if (w->wr >= 0 && align + w->wr < g->end_off)
        g->end_off = align + w->wr;
    g->has_begin = w->wl >= 0;
    g->begin_off = align - (w->wl >= 0 ? w->wl : 0);
    g->windowed = w->wl >= 0 || w->wr >= 0;
    return CLATTN_OK;
}

static int blocks_of(const struct dims *x, clattn_causal causal, const struct variant_in *w,
                     size_t bm, size_t bn, clattn_causal_blocks *out)
{
    struct tiling g;
    int ovf = 0;
    int rc = tiling_from(x, causal, w, bm, bn, &g);
    if (rc < 0)
        return rc;
    *out = (clattn_causal_blocks){ 0 };
    out->q_blocks = ceil_div(g.nq, g.bm);
    out->k_blocks = ceil_div(g.nk, g.bn);
    out->total_blocks = mul(out->q_blocks, out->k_blocks, &ovf);
    out->total_pairs = mul(g.nq, g.nk, &ovf);
    count_blocks(&g, out, &ovf);
    out->visible_pairs = visible_pairs(&g, &ovf);
    out->empty_rows = rows_seeing_nothing(&g);
    if (ovf)
        return overflow_detail(x);
    out->visited_fraction = (double)out->visited_blocks / (double)out->total_blocks;
    out->closed_form = block_closed_form(&g, out->q_blocks);
    out->speedup = out->computed_pairs ? (double)out->total_pairs / (double)out->computed_pairs
                                       : 0.0;
    return CLATTN_OK;
}

int clattn_model_causal_blocks(const clattn_shape *shape, clattn_causal causal,
                               size_t block_m, size_t block_n, clattn_causal_blocks *out)
{
    struct dims x = { 0 };
    struct tensors t = { 0 };
    int rc = begin_shape(__func__, shape, out, &x, &t);
    if (rc < 0)
        return rc;
    return blocks_of(&x, causal, &no_variant, block_m, block_n, out);
}

/* ------------------------------------------------- the batch, decoding */

/* Per-sequence lengths (NULL: none) against the shape's `most`. */
static int check_lens(const uint32_t *lens, uint64_t batch, uint64_t most, const char *name,
                      const char *dim)
{
    for (uint64_t b = 0; lens && b < batch; b++)
        if (lens[b] > most)
            return clattn_fail(CLATTN_EINVAL, "model: %s[%llu] = %u exceeds %s = %llu", name,
                               (unsigned long long)b, lens[b], dim, (unsigned long long)most);
    return CLATTN_OK;
}

/* kv_lens and splits against the shape: a sequence holds at most Nk keys,
 * and a chunk at least one; the cache's per-sequence queries at most Nq. */
static int check_decode(const clattn_model_problem *p, const struct variant_in *w,
                        const struct dims *x)
{
    if (p->splits > x->nk)
        return clattn_fail(CLATTN_EINVAL, "model: splits = %u exceeds Nk = %llu (a chunk "
                           "holds at least one key)", p->splits, (unsigned long long)x->nk);
    int rc = check_lens(p->kv_lens, x->b, x->nk, "kv_lens", "Nk");
    return rc < 0 ? rc : check_lens(w->q_lens, x->b, x->nq, "q_lens", "Nq");
}

/* The fp32 partial rows and (max, sum) pairs of a split: every chunk of
 * every sequence writes its rows (an empty chunk writes a row that saw
 * nothing), and the combine reads them all. */
static uint64_t split_workspace(const struct dims *x, uint32_t splits, int *ovf)
{
    if (splits <= 1)
        return 0;
    uint64_t rows = mul(mul(mul(x->b, x->h, ovf), x->nq, ovf), splits, ovf);
    return mul(mul(rows, add(x->dv, 2, ovf), ovf), 4, ovf);
}

/* Adds one sequence's per-head block counts to the batch's sums. */
static void batch_add(clattn_batch_blocks *sum, const clattn_causal_blocks *cb, uint64_t len,
                      uint64_t times, int *ovf)
{
    sum->total_blocks = add(sum->total_blocks, mul(cb->total_blocks, times, ovf), ovf);
    sum->visited_blocks = add(sum->visited_blocks, mul(cb->visited_blocks, times, ovf), ovf);
    sum->total_pairs = add(sum->total_pairs, mul(cb->total_pairs, times, ovf), ovf);
    sum->computed_pairs = add(sum->computed_pairs, mul(cb->computed_pairs, times, ovf), ovf);
    sum->visible_pairs = add(sum->visible_pairs, mul(cb->visible_pairs, times, ovf), ovf);
    sum->kv_rows_total = add(sum->kv_rows_total, mul(len, times, ovf), ovf);
    sum->kv_rows_read = add(sum->kv_rows_read, mul(cb->kv_rows_read, times, ovf), ovf);
}

/* What the batch's sequences hold beside their blocks, for the cache's
 * bytes: per head, the query rows whose Q is read (a sequence with a query
 * and a key reads its q_b rows), the query rows Q and O hold and the key
 * rows K and V hold as stored, and the block table entries read. */
struct batch_more {
    uint64_t q_rows_read;
    uint64_t q_rows, k_rows;
    uint64_t table_entries;
};

static uint64_t seq_q_len(const struct variant_in *w, const struct dims *x, uint64_t b)
{
    return w->q_lens ? w->q_lens[b] : x->nq;
}

static uint64_t seq_kv_len(const clattn_model_problem *p, const struct dims *x, uint64_t b)
{
    return p->kv_lens ? p->kv_lens[b] : x->nk;
}

/* Pages of `page` keys that `len` keys take (0 when not paged). */
static uint64_t pages_of(uint64_t len, uint64_t page)
{
    return page ? ceil_div(len, page) : 0;
}

/* The rows the tensors hold as stored: packed, the sequences' own lengths
 * summed; paged, the pages of K and V; else B Nq and B Nk. */
static void stored_rows(const clattn_model_problem *p, const struct variant_in *w,
                        const struct dims *x, struct batch_more *m, int *ovf)
{
    m->q_rows = mul(x->b, x->nq, ovf);
    m->k_rows = mul(x->b, x->nk, ovf);
    if (w->packed) {
        m->q_rows = m->k_rows = 0;
        for (uint64_t b = 0; b < x->b; b++) {
            m->q_rows = add(m->q_rows, seq_q_len(w, x, b), ovf);
            m->k_rows = add(m->k_rows, seq_kv_len(p, x, b), ovf);
        }
    } else if (w->page) {
        const uint64_t pages = w->num_pages ? w->num_pages
                                            : mul(x->b, pages_of(x->nk, w->page), ovf);
        m->k_rows = mul(pages, w->page, ovf);
    }
}

/* Each sequence's grid is the shape's with its own query and key counts
 * (and so, under a bottom-right mask, its own diagonal); without kv_lens
 * and q_lens all B are the full grid already counted in `full`. Runs of
 * equal lengths are counted once. A sequence of no key is empty (its rows
 * are zeros); one of no query computes nothing and reads no key. */
static int batch_blocks_of(const clattn_model_problem *p, const struct variant_in *w,
                           const struct dims *x, const clattn_causal_blocks *full,
                           clattn_batch_blocks *out, struct batch_more *more)
{
    int ovf = 0;
    *out = (clattn_batch_blocks){ 0 };
    *more = (struct batch_more){ 0 };
    if (!p->kv_lens && !w->q_lens) {
        batch_add(out, full, x->nk, x->b, &ovf);
        more->q_rows_read = mul(x->b, x->nq, &ovf);
        more->table_entries = mul(x->b, pages_of(x->nk, w->page), &ovf);
    } else {
        clattn_causal_blocks cb = { 0 };
        uint64_t counted_k = UINT64_MAX, counted_q = UINT64_MAX; /* the lengths cb holds */
        for (uint64_t b = 0; b < x->b; b++) {
            const uint64_t len = seq_kv_len(p, x, b), q = seq_q_len(w, x, b);
            if (len == 0) {
                out->empty_sequences++;
                continue;
            }
            if (q == 0)
                continue;
            more->q_rows_read = add(more->q_rows_read, q, &ovf);
            more->table_entries = add(more->table_entries, pages_of(len, w->page), &ovf);
            if (len != counted_k || q != counted_q) {
                struct dims seq = *x;
                seq.nk = len;
                seq.nq = q;
                int rc = blocks_of(&seq, p->causal, w, p->block_m, p->block_n, &cb);
                if (rc < 0)
                    return rc;
                counted_k = len;
                counted_q = q;
            }
            batch_add(out, &cb, len, 1, &ovf);
        }
    }
    stored_rows(p, w, x, more, &ovf);
    out->split_workspace_bytes = split_workspace(x, p->splits, &ovf);
    return ovf ? overflow_detail(x) : CLATTN_OK;
}

/* ------------------------------------------ Q3 intensity and the roofline */

void clattn_model_default_problem(clattn_model_problem *problem)
{
    if (!problem)
        return;
    *problem = (clattn_model_problem){ 0 };
    problem->causal = CLATTN_CAUSAL_NONE;
    problem->block_m = 64;
    problem->block_n = 64;
    problem->splits = 0;
    problem->kv_lens = NULL;
}

const char *clattn_bound_name(clattn_bound bound)
{
    switch (bound) {
    case CLATTN_BOUND_MEMORY: return "memory";
    case CLATTN_BOUND_COMPUTE: return "compute";
    case CLATTN_BOUND_UNKNOWN: break;
    }
    return "unknown";
}

/* Two matmuls per (query, key) pair: Q K^T of 2 d FLOPs and P V of 2 d_v. */
static double pair_flops(const struct dims *x, uint64_t pairs_per_head)
{
    return 2.0 * (double)(x->d + x->dv) * (double)x->b * (double)x->h *
           (double)pairs_per_head;
}

/* time = max(bytes / bandwidth, flops / peak) + launches * latency. */
static void roofline(clattn_path_estimate *p, const clattn_model_device *dev)
{
    p->intensity = (double)p->flops / (double)p->bytes;
    p->memory_time_s = dev->bandwidth > 0 ? (double)p->bytes / dev->bandwidth : 0;
    p->compute_time_s = dev->peak_flops > 0 ? p->flops / dev->peak_flops : 0;
    p->time_s = 0;
    p->bound = CLATTN_BOUND_UNKNOWN;
    if (dev->bandwidth <= 0 || dev->peak_flops <= 0)
        return;
    p->bound = p->compute_time_s > p->memory_time_s ? CLATTN_BOUND_COMPUTE
                                                     : CLATTN_BOUND_MEMORY;
    p->time_s = fmax(p->memory_time_s, p->compute_time_s) +
                p->launches * fmax(dev->launch_latency_s, 0);
}

/* Mask-free intensities at N = Nq = Nk; the batch cancels, and so does d
 * + d_v on the fused path. */
static double naive_intensity_at(const struct dims *x, double n)
{
    double h = (double)x->h, hkv = (double)x->hkv, e = (double)x->e;
    double d = (double)(x->d + x->dv) / 2; /* the mean of d and d_v */
    return 4 * h * n * d / (e * (2 * (h + hkv) * d + 4 * h * n));
}

static double fused_intensity_at(const struct dims *x, double n)
{
    double h = (double)x->h, hkv = (double)x->hkv, e = (double)x->e;
    return 2 * h * n / (e * (h + hkv));
}

/* The smallest N whose intensity reaches `ridge`, starting from the closed
 * form's guess and settled by evaluating the intensity itself. */
static uint64_t first_len_reaching(double (*intensity)(const struct dims *, double),
                                   const struct dims *x, double ridge, double guess)
{
    if (!(guess < (double)LEN_MAX))
        return 0;
    /* Where the curve is flatter than rounding (the naive path just below
     * its limit) the integers cannot be told apart: a few steps suffice. */
    uint64_t n = guess < 1 ? 1 : (uint64_t)ceil(guess);
    for (int step = 0; step < 64 && n > 1 && intensity(x, (double)(n - 1)) >= ridge; step++)
        n--;
    for (int step = 0; step < 64 && intensity(x, (double)n) < ridge; step++)
        n++;
    return n;
}

static void compute_bound_lengths(const struct dims *x, clattn_prediction *out)
{
    double h = (double)x->h, hkv = (double)x->hkv, e = (double)x->e;
    double d = (double)(x->d + x->dv) / 2; /* the mean of d and d_v */
    double r = out->ridge;
    out->naive_intensity_limit = d / e;
    if (r <= 0)
        return;
    /* fused: 2hN / (e(h + hkv)) >= r */
    out->fused_compute_len =
        first_len_reaching(fused_intensity_at, x, r, r * e * (h + hkv) / (2 * h));
    /* naive: 4hNd >= r e (2(h + hkv)d + 4hN), solvable only below the limit d/e */
    if (r * e < d)
        out->naive_compute_len = first_len_reaching(
            naive_intensity_at, x, r, r * e * (h + hkv) * d / (2 * h * (d - r * e)));
}

/* The naive path computes and stores the whole S whatever the mask. */
static int estimate_naive(const clattn_model_problem *p, const struct dims *x,
                          const struct tensors *t, const clattn_prediction *pred,
                          const clattn_model_device *dev, clattn_path_estimate *out)
{
    out->bytes = pred->traffic.naive_bytes;
    out->flops = pair_flops(x, pred->blocks.total_pairs);
    out->launches = 3;
    if (plan_path(t, CLATTN_PATH_NAIVE, p->naive_workspace_bytes, &out->memory))
        return overflow_detail(x);
    out->fit = fit_verdict(&out->memory, dev);
    roofline(out, dev);
    return CLATTN_OK;
}

/* FLOPs of `pairs` (query, key) pairs per query head summed over the batch;
 * without per-sequence lengths pair_flops of one sequence's count, as it
 * always was. */
static double batch_flops(const clattn_model_problem *p, const struct variant_in *w,
                          const struct dims *x, uint64_t batch_pairs, uint64_t sequence_pairs)
{
    if (!p->kv_lens && !w->q_lens)
        return pair_flops(x, sequence_pairs);
    return 2.0 * (double)(x->d + x->dv) * (double)x->h * (double)batch_pairs;
}

/* The mask's traffic: each query head's tiles read the mask's elements of
 * the pairs they compute, `pairs` per query head summed over the batch. A
 * mask broadcast over heads or sequences is read again by each head and
 * sequence it serves (what a cache would spare of those re-reads is not
 * counted: an upper bound); the elements of skipped tiles are never read. */
static uint64_t mask_bytes(const struct dims *x, const struct variant_in *w, uint64_t pairs,
                           int *ovf)
{
    return mul(mul(w->mask_e, x->h, ovf), pairs, ovf);
}

/* Bytes of one KV head's key row and value row: the cache's types, else
 * the dtype's. */
static uint64_t k_row_bytes(const struct dims *x, const struct variant_in *w)
{
    return w->k_row ? w->k_row : x->d * x->e;
}

static uint64_t v_row_bytes(const struct dims *x, const struct variant_in *w)
{
    return w->v_row ? w->v_row : x->dv * x->e;
}

/* The packed batch's two offset arrays, int32 [B + 1] each. */
static uint64_t seqlens_bytes(const struct dims *x, const struct variant_in *w, int *ovf)
{
    return w->packed ? mul(8, add(x->b, 1, ovf), ovf) : 0;
}

/* The fused path's bytes when each sequence reads `kv_rows` key rows per KV
 * head in all: Q of every sequence that has a key and a query, O (whole,
 * an empty sequence writing zeros; packed, its rows alone), K and V in
 * their types, the block table entries, fp8 scales and packed offsets,
 * and the split workspace written once and read once. */
static uint64_t fused_bytes(const struct dims *x, const struct variant_in *w,
                            const clattn_batch_blocks *bb, const struct batch_more *m,
                            uint64_t kv_rows, int *ovf)
{
    const uint64_t kv_row = mul(x->hkv, add(k_row_bytes(x, w), v_row_bytes(x, w), ovf), ovf);
    const uint64_t q_row = mul(mul(x->h, x->d, ovf), x->e, ovf);   /* one query token */
    const uint64_t o_row = mul(mul(x->h, x->dv, ovf), x->e, ovf);
    const uint64_t o_rows = w->packed ? m->q_rows : mul(x->b, x->nq, ovf);
    uint64_t bytes = add(mul(q_row, m->q_rows_read, ovf), mul(o_row, o_rows, ovf), ovf);
    bytes = add(bytes, mul(kv_row, kv_rows, ovf), ovf);
    bytes = add(bytes, mul(4, m->table_entries, ovf), ovf);
    bytes = add(bytes, add(w->scale_bytes, seqlens_bytes(x, w, ovf), ovf), ovf);
    return add(bytes, mul(2, bb->split_workspace_bytes, ovf), ovf);
}

/* The mask's buffer, held by the caller beside Q, K, V and O. */
static uint64_t mask_size(const struct dims *x, const struct variant_in *w, int *ovf)
{
    return mul(mul(mul(mul(w->mask_b, w->mask_h, ovf), x->nq, ovf), x->nk, ovf), w->mask_e,
               ovf);
}

/* The fused path's tensors as stored: Q and O of their rows, K and V of
 * their rows in their types, and the block table's buffer. */
static void fused_tensors(const struct dims *x, const struct variant_in *w,
                          const struct batch_more *m, struct tensors *t, uint64_t *table,
                          int *ovf)
{
    *t = (struct tensors){ 0 };
    t->q = mul(mul(mul(m->q_rows, x->h, ovf), x->d, ovf), x->e, ovf);
    t->o = mul(mul(mul(m->q_rows, x->h, ovf), x->dv, ovf), x->e, ovf);
    t->kv = mul(mul(m->k_rows, x->hkv, ovf), k_row_bytes(x, w), ovf);
    t->v = mul(mul(m->k_rows, x->hkv, ovf), v_row_bytes(x, w), ovf);
    const uint64_t stride = w->stride ? w->stride : pages_of(x->nk, w->page);
    *table = w->page ? mul(mul(x->b, stride, ovf), 4, ovf) : 0;
}

/* The fused path reads Q and writes O in full, reads only the K/V rows some
 * query block visits, and computes every pair of the tiles it visits; a
 * split adds its workspace's traffic and the combine's launch. */
static int estimate_fused(const clattn_model_problem *p, const struct variant_in *w,
                          const struct dims *x, const struct batch_more *m,
                          const clattn_prediction *pred, const clattn_model_device *dev,
                          clattn_path_estimate *out)
{
    int ovf = 0;
    const clattn_batch_blocks *bb = &pred->batch;
    out->bytes = add(fused_bytes(x, w, bb, m, bb->kv_rows_read, &ovf),
                     mask_bytes(x, w, bb->computed_pairs, &ovf), &ovf);
    out->flops = batch_flops(p, w, x, bb->computed_pairs, pred->blocks.computed_pairs);
    out->launches = p->splits > 1 ? 2 : 1;
    uint64_t workspace = add(p->fused_workspace_bytes, bb->split_workspace_bytes, &ovf);
    const uint64_t mask = mask_size(x, w, &ovf);
    struct tensors t;
    uint64_t table;
    fused_tensors(x, w, m, &t, &table, &ovf);
    if (ovf || plan_path(&t, CLATTN_PATH_FUSED, workspace, &out->memory))
        return overflow_detail(x);
    if (mask)
        plan_hold(&out->memory, "mask", mask, &ovf);
    if (table)
        plan_hold(&out->memory, "block table", table, &ovf);
    if (w->scale_bytes)
        plan_hold(&out->memory, "scales", w->scale_bytes, &ovf);
    if (w->packed)
        plan_hold(&out->memory, "cu_seqlens", seqlens_bytes(x, w, &ovf), &ovf);
    if (ovf)
        return overflow_detail(x);
    out->fit = fit_verdict(&out->memory, dev);
    roofline(out, dev);
    return CLATTN_OK;
}

/* Fused time without the mask over fused time with it (1 with no mask):
 * the same sequences and split, every key row read, every pair computed
 * (and every mask element read); a window's keys count as the mask's. */
static double causal_speedup(const clattn_model_problem *p, const struct variant_in *w,
                             const struct dims *x, const struct batch_more *m,
                             const clattn_prediction *pred, const clattn_model_device *dev)
{
    int ovf = 0;
    clattn_path_estimate full = pred->fused;
    full.bytes = add(fused_bytes(x, w, &pred->batch, m, pred->batch.kv_rows_total, &ovf),
                     mask_bytes(x, w, pred->batch.total_pairs, &ovf), &ovf);
    full.flops = batch_flops(p, w, x, pred->batch.total_pairs, pred->blocks.total_pairs);
    if (ovf) /* the unmasked bytes do not fit 64 bits: unknown */
        return 0.0;
    roofline(&full, dev);
    return pred->fused.time_s > 0 ? full.time_s / pred->fused.time_s : 0.0;
}

/* The cache's own figures of a prediction. */
static int cache_figures(const struct variant_in *w, const struct dims *x,
                         const struct batch_more *m, const clattn_prediction *pred,
                         clattn_cache_estimate *c)
{
    int ovf = 0;
    memset(c, 0, sizeof *c);
    const uint64_t rows = mul(x->hkv, pred->batch.kv_rows_read, &ovf);
    c->k_row_bytes = k_row_bytes(x, w);
    c->v_row_bytes = v_row_bytes(x, w);
    c->k_bytes = mul(rows, c->k_row_bytes, &ovf);
    c->v_bytes = mul(rows, c->v_row_bytes, &ovf);
    c->dtype_kv_bytes = mul(mul(rows, add(x->d, x->dv, &ovf), &ovf), x->e, &ovf);
    c->table_bytes = mul(4, m->table_entries, &ovf);
    c->scale_bytes = w->scale_bytes;
    c->seqlens_bytes = seqlens_bytes(x, w, &ovf);
    c->q_rows = m->q_rows;
    c->kv_rows = m->k_rows;
    struct tensors t;
    fused_tensors(x, w, m, &t, &c->table_buffer_bytes, &ovf);
    c->k_buffer_bytes = t.kv;
    c->v_buffer_bytes = t.v;
    return ovf ? overflow_detail(x) : CLATTN_OK;
}

/* clattn_model_predict for a problem with a variant and a cache, d_v in x;
 * the cache's figures into `cache` where non-NULL. */
static int predict(const clattn_model_problem *problem, const struct variant_in *w,
                   struct dims *x, const clattn_model_device *dev, clattn_prediction *out,
                   clattn_cache_estimate *cache)
{
    struct tensors t;
    struct batch_more more;
    if (tensor_bytes(x, &t) || x->nq > LEN_MAX || x->nk > LEN_MAX)
        return overflow_detail(x);
    if (head_traffic(x, &out->traffic) || all_heads_traffic(&t, &out->traffic))
        return overflow_detail(x);
    int rc = check_decode(problem, w, x);
    if (rc < 0)
        return rc;
    rc = blocks_of(x, problem->causal, w, problem->block_m, problem->block_n, &out->blocks);
    if (rc < 0 || (rc = batch_blocks_of(problem, w, x, &out->blocks, &out->batch, &more)) < 0)
        return rc;
    if ((rc = estimate_naive(problem, x, &t, out, dev, &out->naive)) < 0 ||
        (rc = estimate_fused(problem, w, x, &more, out, dev, &out->fused)) < 0)
        return rc;
    out->ridge = dev->bandwidth > 0 && dev->peak_flops > 0 ? dev->peak_flops / dev->bandwidth : 0;
    compute_bound_lengths(x, out);
    out->causal_speedup = causal_speedup(problem, w, x, &more, out, dev);
    return cache ? cache_figures(w, x, &more, out, cache) : CLATTN_OK;
}

/* The start of every public prediction: the error cleared, the arguments
 * checked on behalf of `func`, `out` (`out_size` bytes) cleared. */
static int enter(const char *func, const clattn_model_problem *problem,
                 const clattn_model_device *dev, void *out, size_t out_size)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG_OF(func, problem);
    CLATTN_CHECK_ARG_OF(func, dev);
    CLATTN_CHECK_ARG_OF(func, out);
    memset(out, 0, out_size);
    return CLATTN_OK;
}

int clattn_model_predict(const clattn_model_problem *problem, const clattn_model_device *dev,
                         clattn_prediction *out)
{
    struct dims x;
    int rc = enter(__func__, problem, dev, out, sizeof *out);
    if (rc < 0 || (rc = dims_from_shape(&problem->shape, &x)) < 0)
        return rc;
    return predict(problem, &no_variant, &x, dev, out, NULL);
}

void clattn_model_default_variant(clattn_model_variant *variant)
{
    if (!abi_init(variant, sizeof *variant))
        return;
    variant->window_left = variant->window_right = -1;
    variant->mask_kind = CLATTN_MASK_NONE;
    variant->mask_dtype = CLATTN_F32;
}

/* The caller's variant checked against the shape, as variant_in. */
static int variant_of(const clattn_model_variant *v, const struct dims *x, struct variant_in *w)
{
    *w = no_variant;
    if (v->window_left < -1 || v->window_right < -1)
        return clattn_fail(CLATTN_EINVAL, "model: window sides must be >= -1 (%d, %d)",
                           (int)v->window_left, (int)v->window_right);
    w->wl = v->window_left;
    w->wr = v->window_right;
    if (v->mask_kind == CLATTN_MASK_NONE)
        return CLATTN_OK;
    if (v->mask_kind != CLATTN_MASK_ADD && v->mask_kind != CLATTN_MASK_BOOL)
        return clattn_fail(CLATTN_EINVAL, "model: unknown mask kind %d", (int)v->mask_kind);
    w->mask_e = v->mask_kind == CLATTN_MASK_BOOL ? 1 : clattn_dtype_size(v->mask_dtype);
    if (!w->mask_e)
        return clattn_fail(CLATTN_EINVAL, "model: unknown mask dtype %d", (int)v->mask_dtype);
    w->mask_b = v->mask_batch ? v->mask_batch : 1;
    w->mask_h = v->mask_heads ? v->mask_heads : 1;
    if ((w->mask_b != 1 && w->mask_b != x->b) || (w->mask_h != 1 && w->mask_h != x->h))
        return clattn_fail(CLATTN_EINVAL, "model: a mask of [%llu, %llu] does not broadcast "
                           "over B = %llu, H = %llu", (unsigned long long)w->mask_b,
                           (unsigned long long)w->mask_h, (unsigned long long)x->b,
                           (unsigned long long)x->h);
    return CLATTN_OK;
}

/* The caller's cache checked against the shape, into w's cache fields. */
static int cache_of(const clattn_model_cache *c, const struct dims *x, struct variant_in *w)
{
    static const char *const names[2] = { "K", "V" };
    const clattn_kv_type types[2] = { c->k_type, c->v_type };
    const uint64_t cols[2] = { x->d, x->dv };
    uint64_t rows[2];
    clattn_dtype dtype = x->e == 4 ? CLATTN_F32 : CLATTN_F16; /* bf16 moves fp16's bytes */
    w->scale_bytes = 0;
    for (int i = 0; i < 2; i++) {
        const size_t per = clattn_kv_block_values(types[i]);
        const size_t bytes = clattn_kv_block_bytes(types[i], dtype);
        if (!per || !bytes)
            return clattn_fail(CLATTN_EINVAL, "model: %s: unknown cache type %d", names[i],
                               (int)types[i]);
        if (cols[i] % per)
            return clattn_fail(CLATTN_EINVAL, "model: %s: %s stores rows in blocks of %zu "
                               "values; the head dimension %llu is not a multiple", names[i],
                               clattn_kv_type_name(types[i], dtype), per,
                               (unsigned long long)cols[i]);
        rows[i] = cols[i] / per * bytes;
        if (types[i] == CLATTN_KV_FP8_E4M3)
            w->scale_bytes += 4 * (c->kv_scale_per_head ? x->hkv : 1);
    }
    w->k_row = rows[0];
    w->v_row = rows[1];
    if (c->packed && c->page_size)
        return clattn_fail(CLATTN_EINVAL, "model: packed keys take no pages (page_size %zu)",
                           c->page_size);
    if (!c->page_size && (c->num_pages || c->block_table_stride))
        return clattn_fail(CLATTN_EINVAL, "model: num_pages or block_table_stride without "
                           "page_size");
    if (c->page_size) {
        const uint64_t need = ceil_div(x->nk, c->page_size);
        if (c->block_table_stride && c->block_table_stride < need)
            return clattn_fail(CLATTN_EINVAL, "model: block_table_stride %zu holds fewer than "
                               "the %llu pages of Nk = %llu keys", c->block_table_stride,
                               (unsigned long long)need, (unsigned long long)x->nk);
    }
    w->page = c->page_size;
    w->num_pages = c->num_pages;
    w->stride = c->block_table_stride;
    w->packed = c->packed != 0;
    w->q_lens = c->q_lens;
    return CLATTN_OK;
}

void clattn_model_default_cache(clattn_model_cache *cache)
{
    abi_init(cache, sizeof *cache);
}

/* The problem's shape, variant and cache checked, into x and w. */
static int load_problem(const clattn_model_problem *problem, const clattn_model_variant *variant,
                        const clattn_model_cache *cache, struct dims *x, struct variant_in *w)
{
    clattn_model_variant v;
    clattn_model_default_variant(&v);
    clattn_model_cache c;
    clattn_model_default_cache(&c);
    int rc = variant ? abi_read(variant, &v, sizeof v, ABI_SIZE_THROUGH(clattn_model_variant,
                                                                        mask_heads),
                                "model variant", "clattn_model_default_variant")
                     : CLATTN_OK;
    if (rc == 0 && cache)
        rc = abi_read(cache, &c, sizeof c, ABI_SIZE_THROUGH(clattn_model_cache, q_lens),
                      "model cache", "clattn_model_default_cache");
    if (rc < 0 || (rc = dims_from_shape(&problem->shape, x)) < 0)
        return rc;
    if (v.head_dim_v > CLATTN_HEAD_DIM_MAX)
        return clattn_fail(CLATTN_EINVAL, "model: head_dim_v = %zu > %d", v.head_dim_v,
                           CLATTN_HEAD_DIM_MAX);
    if (v.head_dim_v)
        x->dv = v.head_dim_v;
    if ((rc = variant_of(&v, x, w)) < 0)
        return rc;
    return cache ? cache_of(&c, x, w) : CLATTN_OK;
}

int clattn_model_predict_variant(const clattn_model_problem *problem,
                                 const clattn_model_variant *variant,
                                 const clattn_model_device *dev, clattn_prediction *out)
{
    return clattn_model_predict_cache(problem, variant, NULL, dev, out, NULL);
}

int clattn_model_predict_cache(const clattn_model_problem *problem,
                               const clattn_model_variant *variant,
                               const clattn_model_cache *cache, const clattn_model_device *dev,
                               clattn_prediction *out, clattn_cache_estimate *cache_out)
{
    struct dims x;
    struct variant_in w;
    if (cache_out)
        memset(cache_out, 0, sizeof *cache_out);
    int rc = enter(__func__, problem, dev, out, sizeof *out);
    if (rc < 0 || (rc = load_problem(problem, variant, cache, &x, &w)) < 0)
        return rc;
    return predict(problem, &w, &x, dev, out, cache_out);
}

/* ------------------------------------------------- what fits, per token */

_Static_assert(sizeof(clattn_cache_estimate) == 256, "clattn_cache_estimate must stay 256 bytes");
_Static_assert(sizeof(clattn_kv_capacity) == 256, "clattn_kv_capacity must stay 256 bytes");

/* How many pages fit: the memory after the scales over a page of every
 * layer, and no more than one layer's K or V buffer of the largest row
 * may hold under the max allocation. */
static void capacity_pages(const struct dims *x, const struct variant_in *w, uint64_t page,
                           const clattn_model_device *dev, clattn_kv_capacity *out, int *ovf)
{
    out->pages = out->free_bytes > out->scale_bytes
                     ? (out->free_bytes - out->scale_bytes) / out->page_bytes : 0;
    if (!dev->max_alloc_bytes)
        return;
    const uint64_t row = k_row_bytes(x, w) > v_row_bytes(x, w) ? k_row_bytes(x, w)
                                                                : v_row_bytes(x, w);
    const uint64_t buffer_page = mul(mul(x->hkv, page, ovf), row, ovf);
    const uint64_t by_alloc = dev->max_alloc_bytes / buffer_page;
    if (by_alloc < out->pages) {
        out->pages = by_alloc;
        out->alloc_limited = 1;
    }
}

int clattn_model_kv_capacity(const clattn_model_problem *problem,
                             const clattn_model_variant *variant,
                             const clattn_model_cache *cache, size_t layers, uint64_t free_bytes,
                             const clattn_model_device *dev, clattn_kv_capacity *out)
{
    struct dims x;
    struct variant_in w;
    int rc = enter(__func__, problem, dev, out, sizeof *out);
    if (rc < 0)
        return rc;
    if (!layers)
        return clattn_fail(CLATTN_EINVAL, "model: layers must be >= 1");
    if ((rc = load_problem(problem, variant, cache, &x, &w)) < 0)
        return rc;
    clattn_prediction pred;
    memset(&pred, 0, sizeof pred);
    if ((rc = predict(problem, &w, &x, dev, &pred, NULL)) < 0)
        return rc;
    int ovf = 0;
    const uint64_t page = w.page ? w.page : 1, L = layers;
    out->token_bytes = mul(mul(L, x.hkv, &ovf), add(k_row_bytes(&x, &w), v_row_bytes(&x, &w),
                                                    &ovf), &ovf);
    out->page_bytes = mul(out->token_bytes, page, &ovf);
    out->scale_bytes = mul(L, w.scale_bytes, &ovf);
    out->free_bytes = free_bytes ? free_bytes : dev->capacity_bytes;
    out->sequence_pages = ceil_div(x.nk, page);
    for (uint64_t b = 0; b < x.b; b++)
        out->batch_pages = add(out->batch_pages, ceil_div(seq_kv_len(problem, &x, b), page),
                               &ovf);
    out->batch_bytes = add(mul(out->batch_pages, out->page_bytes, &ovf), out->scale_bytes, &ovf);
    if (ovf)
        return overflow_detail(&x);
    out->fit = CLATTN_FIT_UNKNOWN;
    if (out->free_bytes) {
        capacity_pages(&x, &w, page, dev, out, &ovf);
        out->tokens = mul(out->pages, page, &ovf);
        out->sequences = out->pages / out->sequence_pages;
        out->fit = out->batch_pages <= out->pages  ? CLATTN_FIT_OK
                   : out->batch_bytes <= out->free_bytes ? CLATTN_FIT_OVER_MAX_ALLOC
                                                         : CLATTN_FIT_OVER_CAPACITY;
    }
    out->step_bytes = mul(L, pred.fused.bytes, &ovf);
    if (ovf)
        return overflow_detail(&x);
    out->step_flops = (double)L * pred.fused.flops;
    out->layer_time_s = pred.fused.time_s;
    out->step_time_s = (double)L * pred.fused.time_s;
    out->bound = pred.fused.bound;
    uint64_t step_tokens = 0;
    for (uint64_t b = 0; b < x.b; b++)
        step_tokens += seq_kv_len(problem, &x, b) ? seq_q_len(&w, &x, b) : 0;
    out->tokens_per_s = out->step_time_s > 0 ? (double)step_tokens / out->step_time_s : 0;
    return CLATTN_OK;
}

/* ------------------------------------------ the runtime's memory plan */

int model_memory_options(const clattn_shape *shape, const clattn_options *opts,
                         uint64_t mask_bytes, clattn_path path, uint64_t extra_workspace_bytes,
                         clattn_memory_plan *out)
{
    CLATTN_CHECK_ARG(opts);
    if (path == CLATTN_PATH_NAIVE || !kv_cache_any(opts))
        return model_memory_variant(shape, opts->head_dim_v, mask_bytes, path,
                                    extra_workspace_bytes, out);
    CLATTN_CHECK_ARG(out);
    CLATTN_CHECK_ARG(path == CLATTN_PATH_FUSED);
    struct dims x;
    int rc = dims_from_shape(shape, &x);
    if (rc < 0)
        return rc;
    if (opts->head_dim_v)
        x.dv = opts->head_dim_v;
    struct variant_in w = no_variant;
    clattn_model_cache c;
    clattn_model_default_cache(&c);
    c.k_type = opts->k_type;
    c.v_type = opts->v_type;
    c.kv_scale_per_head = opts->kv_scale_per_head;
    if ((rc = cache_of(&c, &x, &w)) < 0)
        return rc;
    /* The tensors as the call stores them (kv_cache_dims: pages, packed
     * totals), each fp8 scale array, the block table and the offsets. */
    struct kv_dims kd;
    kv_cache_dims(shape, opts, &kd);
    int ovf = 0;
    struct batch_more m = { 0 };
    m.q_rows = mul(kd.q_batch, kd.q_tokens, &ovf);
    m.k_rows = mul(kd.k_batch, kd.k_tokens, &ovf);
    struct tensors t;
    uint64_t table;
    fused_tensors(&x, &w, &m, &t, &table, &ovf);
    if (opts->page_size) {
        const uint64_t stride = opts->block_table_stride ? opts->block_table_stride
                                                         : ceil_div(x.nk, opts->page_size);
        table = mul(mul(x.b, stride, &ovf), 4, &ovf);
    }
    if (ovf || plan_path(&t, path, extra_workspace_bytes, out))
        return clattn_fail(CLATTN_EOVERFLOW, "model: fused path's memory overflows 64 bits");
    if (mask_bytes)
        plan_hold(out, "mask", mask_bytes, &ovf);
    if (table)
        plan_hold(out, "block table", table, &ovf);
    if (w.scale_bytes)
        plan_hold(out, "scales", w.scale_bytes, &ovf);
    const uint64_t offsets = 4 * (uint64_t)(x.b + 1);
    if (opts->cu_seqlens_q || opts->total_q)
        plan_hold(out, "cu_seqlens", offsets, &ovf);
    if (opts->cu_seqlens_k || opts->total_k)
        plan_hold(out, "cu_seqlens", offsets, &ovf);
    if (ovf)
        return clattn_fail(CLATTN_EOVERFLOW, "model: fused path's memory overflows 64 bits");
    return CLATTN_OK;
}
