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

#include "clattn/model.h"
#include "core/error.h"

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

/* The shape as 64-bit counts, with the element size. */
struct dims {
    uint64_t b, h, hkv, nq, nk, d, e;
};

/* Per-tensor bytes for all heads: Q (= O), K (= V), S (= P). */
struct tensors {
    uint64_t q, kv, s;
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

/* -------------------------------------------------------------- Q1 traffic */

/* Per head the query head works alone: its Q and O, its group's K and V. */
static int head_traffic(const struct dims *x, clattn_traffic *out)
{
    int ovf = 0;
    uint64_t lens = add(mul(2, x->nq, &ovf), mul(2, x->nk, &ovf), &ovf);
    out->head_score_bytes = mul(mul(x->nq, x->nk, &ovf), x->e, &ovf);
    out->head_endpoint_bytes = mul(mul(lens, x->d, &ovf), x->e, &ovf);
    out->head_naive_bytes =
        add(out->head_endpoint_bytes, mul(4, out->head_score_bytes, &ovf), &ovf);
    out->head_fused_bytes = out->head_endpoint_bytes;
    out->head_ratio = (double)out->head_naive_bytes / (double)out->head_fused_bytes;
    out->closed_form = 1.0 + 2.0 * (double)x->nq * (double)x->nk /
                                 (((double)x->nq + (double)x->nk) * (double)x->d);
    return ovf;
}

/* All heads share each K and V head, so those are counted once per KV head. */
static int all_heads_traffic(const struct tensors *t, clattn_traffic *out)
{
    int ovf = 0;
    out->score_bytes = t->s;
    out->endpoint_bytes = add(mul(2, t->q, &ovf), mul(2, t->kv, &ovf), &ovf);
    out->naive_bytes = add(out->endpoint_bytes, mul(4, t->s, &ovf), &ovf);
    out->fused_bytes = out->endpoint_bytes;
    out->ratio = (double)out->naive_bytes / (double)out->fused_bytes;
    return ovf;
}

int clattn_model_traffic(const clattn_shape *shape, clattn_traffic *out)
{
    clattn_clear_error();
    struct dims x;
    struct tensors t;
    CLATTN_CHECK_ARG(out);
    int rc = load_shape(shape, &x, &t);
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
    plan_hold(plan, "V", t->kv, &ovf);
    plan_hold(plan, "O", t->q, &ovf);
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

int clattn_model_memory(const clattn_shape *shape, clattn_path path,
                        uint64_t extra_workspace_bytes, clattn_memory_plan *out)
{
    clattn_clear_error();
    struct dims x;
    struct tensors t;
    CLATTN_CHECK_ARG(out);
    CLATTN_CHECK_ARG(path == CLATTN_PATH_NAIVE || path == CLATTN_PATH_FUSED);
    int rc = load_shape(shape, &x, &t);
    if (rc < 0)
        return rc;
    if (plan_path(&t, path, extra_workspace_bytes, out))
        return clattn_fail(CLATTN_EOVERFLOW, "model: %s path's memory overflows 64 bits",
                           path == CLATTN_PATH_NAIVE ? "naive" : "fused");
    return CLATTN_OK;
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

/* The tiles and the mask's diagonal offset. */
struct tiling {
    uint64_t nq, nk, bm, bn;
    clattn_causal causal;
    int64_t off; /* key j is visible to query i iff j <= i + off */
};

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* Key rows covered by the key blocks that query block i visits. The kernel
 * bounds its key loop by the block's last possible row, q0 + BM (even when
 * the block is cut short by Nq), and loads whole key blocks up to Nk. */
static uint64_t visited_key_rows(const struct tiling *g, uint64_t i)
{
    if (g->causal == CLATTN_CAUSAL_NONE)
        return g->nk;
    int64_t end = (int64_t)((i + 1) * g->bm) + g->off;
    if (end <= 0)
        return 0;
    uint64_t limit = min_u64((uint64_t)end, g->nk);
    return min_u64(ceil_div(limit, g->bn) * g->bn, g->nk);
}

/* Query rows that see no key at all: i + off < 0 (bottom-right, Nq > Nk). */
static uint64_t rows_seeing_nothing(const struct tiling *g)
{
    if (g->causal == CLATTN_CAUSAL_NONE || g->off >= 0)
        return 0;
    return min_u64((uint64_t)-g->off, g->nq);
}

/* Sum over queries of visible keys, min(max(i + off + 1, 0), Nk): zero rows,
 * a ramp of consecutive counts, then rows that see every key. */
static uint64_t visible_pairs(const struct tiling *g, int *ovf)
{
    if (g->causal == CLATTN_CAUSAL_NONE)
        return mul(g->nq, g->nk, ovf);
    int64_t first = g->off + 1, last = g->off + (int64_t)g->nq; /* counts before clamping */
    int64_t lo = first > 1 ? first : 1;
    int64_t hi = last < (int64_t)g->nk ? last : (int64_t)g->nk;
    uint64_t sum = 0;
    if (hi >= lo) {
        uint64_t count = (uint64_t)(hi - lo + 1), ends = (uint64_t)(lo + hi);
        /* Of count and lo + hi one is even, so the halving is exact. */
        sum = count % 2 ? mul(count, ends / 2, ovf) : mul(count / 2, ends, ovf);
    }
    int64_t full_from = first > (int64_t)g->nk + 1 ? first : (int64_t)g->nk + 1;
    if (last >= full_from)
        sum = add(sum, mul((uint64_t)(last - full_from + 1), g->nk, ovf), ovf);
    return sum;
}

/* The first query block in [lo, hi) that visits at least `rows` key rows
 * (hi if none), by bisection: visited rows only grow with the block index. */
static uint64_t first_block_visiting(const struct tiling *g, uint64_t lo, uint64_t hi,
                                     uint64_t rows)
{
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (visited_key_rows(g, mid) >= rows)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* Blocks that see nothing form a prefix and blocks that see every key a
 * suffix; only the blocks between (at most Nk / BM + 1) are walked. */
static void count_blocks(const struct tiling *g, clattn_causal_blocks *out, int *ovf)
{
    uint64_t q_blocks = out->q_blocks;
    uint64_t first_seeing = first_block_visiting(g, 0, q_blocks, 1);
    uint64_t first_full = first_block_visiting(g, first_seeing, q_blocks, g->nk);
    out->empty_q_blocks = first_seeing;
    for (uint64_t i = first_seeing; i < first_full; i++) {
        uint64_t keys = visited_key_rows(g, i);
        uint64_t rows = min_u64(g->bm, g->nq - i * g->bm);
        out->visited_blocks = add(out->visited_blocks, ceil_div(keys, g->bn), ovf);
        out->computed_pairs = add(out->computed_pairs, mul(rows, keys, ovf), ovf);
        out->kv_rows_streamed = add(out->kv_rows_streamed, keys, ovf);
    }
    uint64_t full = q_blocks - first_full;
    uint64_t full_rows = full ? g->nq - first_full * g->bm : 0;
    out->visited_blocks = add(out->visited_blocks, mul(full, out->k_blocks, ovf), ovf);
    out->computed_pairs = add(out->computed_pairs, mul(full_rows, g->nk, ovf), ovf);
    out->kv_rows_streamed = add(out->kv_rows_streamed, mul(full, g->nk, ovf), ovf);
    /* The last block visits the most (it is never empty: its bound is at
     * least Nq + off >= 1). */
    out->kv_rows_read = visited_key_rows(g, q_blocks - 1);
}

static double block_closed_form(const struct tiling *g, uint64_t t)
{
    if (g->causal == CLATTN_CAUSAL_NONE)
        return 1.0;
    if (g->nq != g->nk || g->bm != g->bn)
        return 0.0;
    return ((double)t + 1.0) / (2.0 * (double)t);
}

static int tiling_from(const struct dims *x, clattn_causal causal, size_t bm, size_t bn,
                       struct tiling *g)
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
    g->off = causal == CLATTN_CAUSAL_BOTTOM_RIGHT ? (int64_t)x->nk - (int64_t)x->nq : 0;
    return CLATTN_OK;
}

static int blocks_of(const struct dims *x, clattn_causal causal, size_t bm, size_t bn,
                     clattn_causal_blocks *out)
{
    struct tiling g;
    int ovf = 0;
    int rc = tiling_from(x, causal, bm, bn, &g);
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
    out->speedup = (double)out->total_pairs / (double)out->computed_pairs;
    return CLATTN_OK;
}

int clattn_model_causal_blocks(const clattn_shape *shape, clattn_causal causal,
                               size_t block_m, size_t block_n, clattn_causal_blocks *out)
{
    clattn_clear_error();
    struct dims x;
    struct tensors t;
    CLATTN_CHECK_ARG(out);
    int rc = load_shape(shape, &x, &t);
    if (rc < 0)
        return rc;
    return blocks_of(&x, causal, block_m, block_n, out);
}

/* ------------------------------------------------- the batch, decoding */

/* kv_lens and splits against the shape: a sequence holds at most Nk keys,
 * and a chunk at least one. */
static int check_decode(const clattn_model_problem *p, const struct dims *x)
{
    if (p->splits > x->nk)
        return clattn_fail(CLATTN_EINVAL, "model: splits = %u exceeds Nk = %llu (a chunk "
                           "holds at least one key)", p->splits, (unsigned long long)x->nk);
    for (uint64_t b = 0; p->kv_lens && b < x->b; b++)
        if (p->kv_lens[b] > x->nk)
            return clattn_fail(CLATTN_EINVAL, "model: kv_lens[%llu] = %u exceeds Nk = %llu",
                               (unsigned long long)b, p->kv_lens[b],
                               (unsigned long long)x->nk);
    return CLATTN_OK;
}

/* The fp32 partial rows and (max, sum) pairs of a split: every chunk of
 * every sequence writes its rows (an empty chunk writes a row that saw
 * nothing), and the combine reads them all. */
static uint64_t split_workspace(const struct dims *x, uint32_t splits, int *ovf)
{
    if (splits <= 1)
        return 0;
    uint64_t rows = mul(mul(mul(x->b, x->h, ovf), x->nq, ovf), splits, ovf);
    return mul(mul(rows, add(x->d, 2, ovf), ovf), 4, ovf);
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

/* Each sequence's grid is the shape's with its own key count (and so, under
 * a bottom-right mask, its own diagonal); without kv_lens all B are the
 * full-length grid already counted in `full`. Runs of equal lengths are
 * counted once. */
static int batch_blocks_of(const clattn_model_problem *p, const struct dims *x,
                           const clattn_causal_blocks *full, clattn_batch_blocks *out)
{
    int ovf = 0;
    *out = (clattn_batch_blocks){ 0 };
    if (!p->kv_lens) {
        batch_add(out, full, x->nk, x->b, &ovf);
    } else {
        clattn_causal_blocks cb = { 0 };
        uint64_t counted = UINT64_MAX; /* the length cb holds */
        for (uint64_t b = 0; b < x->b; b++) {
            uint64_t len = p->kv_lens[b];
            if (len == 0) {
                out->empty_sequences++;
                continue;
            }
            if (len != counted) {
                struct dims seq = *x;
                seq.nk = len;
                int rc = blocks_of(&seq, p->causal, p->block_m, p->block_n, &cb);
                if (rc < 0)
                    return rc;
                counted = len;
            }
            batch_add(out, &cb, len, 1, &ovf);
        }
    }
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

/* Two matmuls of 2*d FLOPs per (query, key) pair: Q K^T and P V. */
static double pair_flops(const struct dims *x, uint64_t pairs_per_head)
{
    return 4.0 * (double)x->d * (double)x->b * (double)x->h * (double)pairs_per_head;
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

/* Mask-free intensities at N = Nq = Nk; the batch cancels. */
static double naive_intensity_at(const struct dims *x, double n)
{
    double h = (double)x->h, hkv = (double)x->hkv, d = (double)x->d, e = (double)x->e;
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
    double h = (double)x->h, hkv = (double)x->hkv, d = (double)x->d, e = (double)x->e;
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
 * without kv_lens pair_flops of one sequence's count, as it always was. */
static double batch_flops(const clattn_model_problem *p, const struct dims *x,
                          uint64_t batch_pairs, uint64_t sequence_pairs)
{
    if (!p->kv_lens)
        return pair_flops(x, sequence_pairs);
    return 4.0 * (double)x->d * (double)x->h * (double)batch_pairs;
}

/* The fused path's bytes when each sequence reads `kv_rows` key rows per KV
 * head in all: Q of every sequence that has a key, O of every sequence (an
 * empty one writes zeros), K and V, and the split workspace written once and
 * read once. */
static uint64_t fused_bytes(const struct dims *x, const struct tensors *t,
                            const clattn_batch_blocks *bb, uint64_t kv_rows, int *ovf)
{
    uint64_t kv_row = mul(mul(x->hkv, x->d, ovf), x->e, ovf);
    uint64_t q_seq = mul(mul(mul(x->h, x->nq, ovf), x->d, ovf), x->e, ovf);
    uint64_t q_read = mul(q_seq, x->b - bb->empty_sequences, ovf);
    uint64_t kv = mul(kv_row, kv_rows, ovf);
    uint64_t bytes = add(add(q_read, t->q, ovf), mul(2, kv, ovf), ovf);
    return add(bytes, mul(2, bb->split_workspace_bytes, ovf), ovf);
}

/* The fused path reads Q and writes O in full, reads only the K/V rows some
 * query block visits, and computes every pair of the tiles it visits; a
 * split adds its workspace's traffic and the combine's launch. */
static int estimate_fused(const clattn_model_problem *p, const struct dims *x,
                          const struct tensors *t, const clattn_prediction *pred,
                          const clattn_model_device *dev, clattn_path_estimate *out)
{
    int ovf = 0;
    const clattn_batch_blocks *bb = &pred->batch;
    out->bytes = fused_bytes(x, t, bb, bb->kv_rows_read, &ovf);
    out->flops = batch_flops(p, x, bb->computed_pairs, pred->blocks.computed_pairs);
    out->launches = p->splits > 1 ? 2 : 1;
    uint64_t workspace = add(p->fused_workspace_bytes, bb->split_workspace_bytes, &ovf);
    if (ovf || plan_path(t, CLATTN_PATH_FUSED, workspace, &out->memory))
        return overflow_detail(x);
    out->fit = fit_verdict(&out->memory, dev);
    roofline(out, dev);
    return CLATTN_OK;
}

/* Fused time without the mask over fused time with it (1 with no mask):
 * the same sequences and split, every key row read, every pair computed. */
static double causal_speedup(const clattn_model_problem *p, const struct dims *x,
                             const struct tensors *t, const clattn_prediction *pred,
                             const clattn_model_device *dev)
{
    int ovf = 0;
    clattn_path_estimate full = pred->fused;
    full.bytes = fused_bytes(x, t, &pred->batch, pred->batch.kv_rows_total, &ovf);
    full.flops = batch_flops(p, x, pred->batch.total_pairs, pred->blocks.total_pairs);
    if (ovf) /* the unmasked bytes do not fit 64 bits: unknown */
        return 0.0;
    roofline(&full, dev);
    return pred->fused.time_s > 0 ? full.time_s / pred->fused.time_s : 0.0;
}

int clattn_model_predict(const clattn_model_problem *problem, const clattn_model_device *dev,
                         clattn_prediction *out)
{
    clattn_clear_error();
    struct dims x;
    struct tensors t;
    CLATTN_CHECK_ARG(problem);
    CLATTN_CHECK_ARG(dev);
    CLATTN_CHECK_ARG(out);
    *out = (clattn_prediction){ 0 };
    int rc = load_shape(&problem->shape, &x, &t);
    if (rc < 0)
        return rc;
    if (head_traffic(&x, &out->traffic) || all_heads_traffic(&t, &out->traffic))
        return overflow_detail(&x);
    if ((rc = check_decode(problem, &x)) < 0)
        return rc;
    rc = blocks_of(&x, problem->causal, problem->block_m, problem->block_n, &out->blocks);
    if (rc < 0 || (rc = batch_blocks_of(problem, &x, &out->blocks, &out->batch)) < 0)
        return rc;
    if ((rc = estimate_naive(problem, &x, &t, out, dev, &out->naive)) < 0 ||
        (rc = estimate_fused(problem, &x, &t, out, dev, &out->fused)) < 0)
        return rc;
    out->ridge = dev->bandwidth > 0 && dev->peak_flops > 0 ? dev->peak_flops / dev->bandwidth : 0;
    compute_bound_lengths(&x, out);
    out->causal_speedup = causal_speedup(problem, &x, &t, out, dev);
    return CLATTN_OK;
}
