/* SPDX-License-Identifier: MIT */
/* The shares of a group call and the gathering of their results (see
 * split.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clattn/model.h"
#include "core/copy_rows.h"
#include "core/error.h"
#include "group/split.h"
#include "spread/pairs.h"
#include "spread/rows.h"

/* Whether l lays out [., heads, n, width] other than contiguously (all
 * zero is contiguous). */
static int layout_given(const clattn_layout *l, size_t heads, size_t n, size_t width)
{
    const int zero = !l->batch_stride && !l->head_stride && !l->token_stride;
    const int dense = l->batch_stride == heads * n * width && l->head_stride == n * width &&
                      l->token_stride == width;
    return l->byte_offset || !(zero || dense);
}

/* Why no scheme splits the call, or NULL. */
static const char *not_split(const clattn_shape *s, const clattn_options *o, size_t n)
{
    if (n < 2)
        return "a group of one device";
    const size_t dv = o->head_dim_v ? o->head_dim_v : s->head_dim;
    if (layout_given(&o->q_layout, s->heads, s->q_len, s->head_dim) ||
        layout_given(&o->k_layout, s->kv_heads, s->kv_len, s->head_dim) ||
        layout_given(&o->v_layout, s->kv_heads, s->kv_len, dv) ||
        layout_given(&o->o_layout, s->heads, s->q_len, dv))
        return "the tensors' layouts are the caller's: the split copies contiguous ones";
    if (o->mask.kind != CLATTN_MASK_NONE || o->score_mod || o->mask_mod)
        return "a mask tensor or snippet names absolute positions";
    if (o->k_type != CLATTN_KV_DTYPE || o->v_type != CLATTN_KV_DTYPE || o->page_size ||
        o->cu_seqlens_q || o->cu_seqlens_k)
        return "a KV cache form (quantized, paged, packed) is not split";
    return NULL;
}

/* Why `scheme` cannot split the call, or NULL. */
static const char *scheme_refuses(enum group_scheme scheme, const clattn_shape *s,
                                  const clattn_options *o)
{
    const int window = o->window_left >= 0 || o->window_right >= 0;
    switch (scheme) {
    case GROUP_KEYS:
        if (s->q_len > 1 && o->causal != CLATTN_CAUSAL_NONE)
            return "by keys, a call of several query rows under a causal mask is not split";
        if (s->q_len == 1 && o->causal == CLATTN_CAUSAL_TOP_LEFT)
            return "one query under a top-left mask sees one key";
        if (window || o->alibi_slopes)
            return "a window or ALiBi is measured from the sequence's end, which one share of "
                   "the keys does not hold";
        return NULL;
    case GROUP_QUERIES:
        if (s->q_len == 1)
            return "by query rows, a call of one query row is not split";
        if (o->causal == CLATTN_CAUSAL_NONE && (window || o->alibi_slopes))
            return "without a causal mask a window or ALiBi aligns to each share's own lengths";
        if (o->causal == CLATTN_CAUSAL_TOP_LEFT &&
            (o->kv_lens || o->q_lens || s->kv_len < s->q_len))
            return "a top-left mask with per-sequence lengths (or Nk < Nq) is not split";
        return NULL;
    case GROUP_RING:
        if (s->q_len == 1)
            return "the ring splits query rows: a call of one query row is not split";
        if (window || o->alibi_slopes)
            return "the ring's key blocks do not keep a window or ALiBi";
        return NULL;
    default:
        return NULL;
    }
}

static size_t clamp_size(int64_t x, size_t hi)
{
    return x < 0 ? 0 : (size_t)x > hi ? hi : (size_t)x;
}

/* A share's tensors are contiguous for its own shape. */
static void share_layouts(clattn_options *o)
{
    const clattn_layout dense = { 0, 0, 0, 0 };
    o->q_layout = o->k_layout = o->v_layout = o->o_layout = dense;
}

/* The share's O and LSE, and its lengths arrays. */
static int share_outputs(struct group_share *sh, const clattn_shape *s, size_t dv, size_t rows,
                         int host)
{
    const size_t e = clattn_dtype_size(s->dtype);
    if (host) { /* resident tensors (group_plan_resident) write the device's own */
        sh->o = malloc(s->batch * s->heads * rows * dv * e + 1);
        sh->lse = malloc(s->batch * s->heads * rows * sizeof(float) + 1);
    }
    sh->kv_lens = malloc(s->batch * sizeof(uint32_t));
    sh->q_lens = malloc(s->batch * sizeof(uint32_t));
    return (!host || (sh->o && sh->lse)) && sh->kv_lens && sh->q_lens
               ? CLATTN_OK : clattn_fail(CLATTN_ENOMEM, "a share");
}

/* The sum of the first i weights over all n: where share i starts, as a
 * fraction of the whole. */
static double weight_before(const struct group_plan *p, size_t i)
{
    double before = 0, all = 0;
    for (size_t j = 0; j < p->n; j++) {
        before += j < i ? p->weight[j] : 0;
        all += p->weight[j];
    }
    return before / all;
}

/* By keys: device i takes keys [a_i, a_i + S_i), S_i about its weight's
 * fraction of Nk. */
static int plan_keys(struct group_plan *p, const size_t *given, const void *q, const void *k,
                     const void *v)
{
    const clattn_shape *s = &p->shape;
    const clattn_options *o = &p->opts;
    const size_t e = clattn_dtype_size(s->dtype), blocks = s->batch * s->kv_heads;
    size_t at = 0;
    int sinks_placed = 0;
    for (size_t i = 0; i < p->n; i++) {
        struct group_share *sh = &p->share[i];
        const size_t end = given ? at + given[i]
                           : i + 1 == p->n ? s->kv_len
                           : (size_t)(weight_before(p, i + 1) * (double)s->kv_len + 0.5);
        const size_t count = end > at ? end - at : 0;
        sh->begin = at, sh->count = count, sh->empty = count == 0;
        at += count;
        if (sh->empty)
            continue;
        sh->shape = *s;
        sh->shape.kv_len = count;
        sh->opts = *o;
        share_layouts(&sh->opts);
        if (sh->opts.causal == CLATTN_CAUSAL_BOTTOM_RIGHT)
            sh->opts.causal = CLATTN_CAUSAL_NONE; /* one query sees all its keys */
        if (sinks_placed)
            sh->opts.sinks = NULL; /* in the first share's denominator only */
        sinks_placed = 1;
        int rc = share_outputs(sh, s, p->dv, s->q_len, k != NULL);
        if (rc < 0)
            return rc;
        sh->q = q;
        if (k) {
            sh->k = sh->owned[1] = copy_rows(k, blocks, s->kv_len, sh->begin, count,
                                             s->head_dim, e);
            sh->v = sh->owned[2] = copy_rows(v, blocks, s->kv_len, sh->begin, count, p->dv, e);
            if (!sh->owned[1] || !sh->owned[2])
                return clattn_fail(CLATTN_ENOMEM, "device %zu's keys and values", i);
        }
        for (size_t b = 0; b < s->batch; b++) {
            const size_t len = o->kv_lens ? o->kv_lens[b] : s->kv_len;
            sh->kv_lens[b] = (uint32_t)clamp_size((int64_t)len - (int64_t)sh->begin, count);
        }
        sh->opts.kv_lens = sh->kv_lens;
    }
    return CLATTN_OK;
}

/* The keys query row i sees under the call's mask, without per-sequence
 * lengths: the work that row costs. */
static size_t row_keys(const clattn_shape *s, clattn_causal causal, size_t i)
{
    const int64_t nk = (int64_t)s->kv_len;
    if (causal == CLATTN_CAUSAL_NONE)
        return s->kv_len;
    const int64_t off = causal == CLATTN_CAUSAL_BOTTOM_RIGHT ? nk - (int64_t)s->q_len : 0;
    return clamp_size((int64_t)i + off + 1, s->kv_len);
}

/* By queries: device i takes rows [a_i, e_i), each share about 1 / n of
 * the visible pairs. */
static int plan_queries(struct group_plan *p, const void *q, const void *k, const void *v)
{
    const clattn_shape *s = &p->shape;
    const clattn_options *o = &p->opts;
    const size_t e = clattn_dtype_size(s->dtype), blocks = s->batch * s->heads;
    double total = 0;
    for (size_t i = 0; i < s->q_len; i++)
        total += (double)row_keys(s, o->causal, i);
    size_t row = 0;
    double done = 0;
    for (size_t d = 0; d < p->n; d++) {
        struct group_share *sh = &p->share[d];
        const double target = total * weight_before(p, d + 1);
        sh->begin = row;
        while (row < s->q_len && (d == p->n - 1 || done + 0.5 * (double)row_keys(s, o->causal,
                                                                                  row) < target))
            done += (double)row_keys(s, o->causal, row++);
        sh->count = row - sh->begin;
        sh->empty = sh->count == 0;
        if (sh->empty)
            continue;
        sh->shape = *s;
        sh->shape.q_len = sh->count;
        sh->opts = *o;
        share_layouts(&sh->opts);
        if (o->causal != CLATTN_CAUSAL_NONE)
            sh->opts.causal = CLATTN_CAUSAL_BOTTOM_RIGHT; /* the offset through kv_lens */
        int rc = share_outputs(sh, s, p->dv, sh->count, q != NULL);
        if (rc < 0)
            return rc;
        if (q) {
            sh->q = sh->owned[0] = copy_rows(q, blocks, s->q_len, sh->begin, sh->count,
                                             s->head_dim, e);
            if (!sh->owned[0])
                return clattn_fail(CLATTN_ENOMEM, "device %zu's queries", d);
        }
        sh->k = k;
        sh->v = v;
        for (size_t b = 0; b < s->batch; b++) {
            const size_t nq = o->q_lens ? o->q_lens[b] : s->q_len;
            const size_t len = o->kv_lens ? o->kv_lens[b] : s->kv_len;
            const size_t mine = clamp_size((int64_t)nq - (int64_t)sh->begin, sh->count);
            sh->q_lens[b] = (uint32_t)mine;
            if (o->causal == CLATTN_CAUSAL_NONE)
                sh->kv_lens[b] = (uint32_t)len;
            else if (o->causal == CLATTN_CAUSAL_BOTTOM_RIGHT)
                sh->kv_lens[b] = (uint32_t)clamp_size(
                    (int64_t)len - (int64_t)nq + (int64_t)(sh->begin + mine), len);
            else /* top-left, uniform lengths: global row a + i' sees keys j <= a + i' */
                sh->kv_lens[b] = (uint32_t)clamp_size((int64_t)(sh->begin + mine), len);
        }
        sh->opts.q_lens = sh->q_lens;
        sh->opts.kv_lens = sh->kv_lens;
    }
    return CLATTN_OK;
}

/* Device memory one share takes on the fused path: its rows against
 * `keys` keys. */
static uint64_t share_bytes(const clattn_shape *s, size_t rows, size_t keys)
{
    clattn_shape part = *s;
    part.q_len = rows, part.kv_len = keys;
    clattn_memory_plan plan;
    return clattn_model_memory(&part, CLATTN_PATH_FUSED, 0, &plan) < 0 ? UINT64_MAX
                                                                       : plan.peak_bytes;
}

/* Whether every share of the plan fits its device with `keys` keys. */
static int shares_fit(const struct group_plan *p, const uint64_t *capacity, size_t keys)
{
    for (size_t i = 0; i < p->n; i++)
        if (!p->share[i].empty && capacity && capacity[i] &&
            share_bytes(&p->shape, p->share[i].count, keys) > capacity[i])
            return 0;
    return 1;
}

/* The key block the ring's step t gives share i: block (i + t) mod n. */
static void ring_block(const struct group_plan *p, size_t i, size_t t, size_t *begin,
                       size_t *len)
{
    const size_t j = (i + t) % p->n, nk = p->shape.kv_len;
    *begin = j * nk / p->n;
    *len = (j + 1) * nk / p->n - *begin;
}

int group_plan_make(const clattn_shape *s, const clattn_options *o,
                    const struct group_devices *devices, const void *q, const void *k,
                    const void *v, struct group_plan *p)
{
    memset(p, 0, sizeof *p);
    p->n = devices->n;
    for (size_t i = 0; i < p->n; i++)
        p->weight[i] = devices->weights[i];
    p->shape = *s;
    p->opts = *o;
    p->dv = o->head_dim_v ? o->head_dim_v : s->head_dim;
    const enum group_scheme want = devices->want;
    p->why = want == GROUP_ONE ? "asked for" : not_split(s, o, p->n);
    if (!p->why) {
        p->scheme = want != GROUP_AUTO ? want : s->q_len == 1 ? GROUP_KEYS : GROUP_QUERIES;
        p->why = scheme_refuses(p->scheme, s, o);
    }
    if (p->why) {
        p->scheme = GROUP_ONE;
        if (want != GROUP_AUTO && want != GROUP_ONE)
            return clattn_fail(CLATTN_EUNSUPPORTED, "the group's scheme \"%s\": %s",
                               group_scheme_name(want), p->why);
        return CLATTN_OK;
    }
    int rc = p->scheme == GROUP_KEYS ? plan_keys(p, devices->keys, q, k, v)
                                     : plan_queries(p, q, k, v);
    /* AUTO's ring: where a device cannot hold its rows beside all of K and
     * V but can beside a block. */
    const size_t block = (s->kv_len + p->n - 1) / p->n;
    if (rc == CLATTN_OK && want == GROUP_AUTO && p->scheme == GROUP_QUERIES &&
        !shares_fit(p, devices->capacity, s->kv_len) && shares_fit(p, devices->capacity, block) &&
        !scheme_refuses(GROUP_RING, s, o))
        p->scheme = GROUP_RING;
    if (p->scheme == GROUP_RING)
        for (size_t i = 0; i < p->n; i++) { /* the ring's calls name the caller's lengths */
            p->share[i].opts = *o;
            share_layouts(&p->share[i].opts);
        }
    if (rc < 0)
        group_plan_free(p);
    return rc;
}

/* Share i's rows against every block in turn, merged in fp32. */
static int run_ring(const struct group_plan *p, size_t i, clattn_ctx *ctx)
{
    const clattn_shape *s = &p->shape;
    const struct group_share *sh = &p->share[i];
    const size_t rows = s->batch * s->heads * sh->count, e = clattn_dtype_size(s->dtype);
    float *acc = malloc(rows * (p->dv + 1) * sizeof *acc + 1);
    uint32_t *lens = malloc(7 * s->batch * sizeof *lens);
    size_t *position = malloc(sh->count * sizeof *position + 1);
    int rc = acc && lens && position ? CLATTN_OK
                                     : clattn_fail(CLATTN_ENOMEM, "device %zu's rows", i);
    clattn_options lo = sh->opts;
    lo.sinks = NULL; /* folded in once the rows are whole */
    struct pair_runner run = { ctx, s, &lo, p->dv, e, acc, sh->count, lens, 0, 0 };
    const struct chunk rows_chunk = { sh->begin, sh->count, 0 };
    if (rc == CLATTN_OK)
        rows_clear(acc, rows, p->dv);
    for (size_t t = 0; t < p->n && rc == CLATTN_OK; t++) {
        size_t begin, len;
        ring_block(p, i, t, &begin, &len);
        const struct chunk keys = { begin, len, begin };
        if (len)
            rc = pair_run(&run, sh->q, sh->count, &rows_chunk, sh->k, sh->v, s->kv_len, &keys);
    }
    if (rc == CLATTN_OK && p->opts.sinks) {
        for (size_t x = 0; x < sh->count; x++)
            position[x] = sh->begin + x;
        rows_fold_sinks(acc, p->dv, s->batch, s->heads, sh->count, position, p->opts.sinks,
                        p->opts.q_lens, s->q_len);
    }
    if (rc == CLATTN_OK)
        rows_store(acc, rows, p->dv, s->dtype, sh->o, sh->lse);
    free(acc), free(lens), free(position);
    return rc;
}

int group_share_run(const struct group_plan *p, size_t i, clattn_ctx *ctx)
{
    const struct group_share *sh = &p->share[i];
    if (p->scheme == GROUP_RING)
        return run_ring(p, i, ctx);
    return clattn_attention_ex(ctx, &sh->shape, &sh->opts, sh->q, sh->k, sh->v, sh->o, sh->lse,
                               NULL);
}

const char *group_scheme_name(enum group_scheme scheme)
{
    switch (scheme) {
    case GROUP_AUTO: return "auto";
    case GROUP_ONE: return "one";
    case GROUP_KEYS: return "keys";
    case GROUP_QUERIES: return "queries";
    case GROUP_RING: return "ring";
    }
    return "?";
}

void group_plan_free(struct group_plan *p)
{
    for (size_t i = 0; i < CLATTN_GROUP_MAX; i++) {
        struct group_share *sh = &p->share[i];
        free(sh->o), free(sh->lse), free(sh->kv_lens), free(sh->q_lens);
        free(sh->owned[0]), free(sh->owned[1]), free(sh->owned[2]);
        sh->o = NULL, sh->lse = NULL, sh->kv_lens = sh->q_lens = NULL;
        sh->owned[0] = sh->owned[1] = sh->owned[2] = NULL;
    }
}

int group_plan_gather(const struct group_plan *p, void *o, float *lse)
{
    const clattn_shape *s = &p->shape;
    const size_t e = clattn_dtype_size(s->dtype), blocks = s->batch * s->heads;
    if (p->scheme == GROUP_KEYS) {
        /* The sum builds in the first share that holds keys (some does: Nk >= 1). */
        size_t first = 0;
        while (p->share[first].empty)
            first++;
        const struct group_share *acc = &p->share[first];
        const size_t rows = blocks * s->q_len;
        for (size_t i = first + 1; i < p->n; i++) {
            const struct group_share *sh = &p->share[i];
            if (sh->empty)
                continue;
            const int rc = clattn_merge(rows, p->dv, s->dtype, acc->o, acc->lse, sh->o, sh->lse,
                                        acc->o, acc->lse);
            if (rc < 0)
                return rc;
        }
        memcpy(o, acc->o, rows * p->dv * e);
        if (lse)
            memcpy(lse, acc->lse, rows * sizeof *lse);
        return CLATTN_OK;
    }
    for (size_t i = 0; i < p->n; i++) {
        const struct group_share *sh = &p->share[i];
        if (sh->empty)
            continue;
        for (size_t bh = 0; bh < blocks; bh++) {
            memcpy((char *)o + (bh * s->q_len + sh->begin) * p->dv * e,
                   (const char *)sh->o + bh * sh->count * p->dv * e, sh->count * p->dv * e);
            if (lse)
                memcpy(lse + bh * s->q_len + sh->begin, sh->lse + bh * sh->count,
                       sh->count * sizeof *lse);
        }
    }
    return CLATTN_OK;
}

void group_plan_info(const struct group_plan *p, clattn_group_info *info)
{
    memset(info, 0, sizeof *info);
    snprintf(info->scheme, sizeof info->scheme, "%s", group_scheme_name(p->scheme));
    if (p->scheme == GROUP_ONE) { /* the first device, the whole call */
        snprintf(info->note, sizeof info->note, "%s", p->why);
        info->devices = 1;
        info->share[0] = p->shape.q_len;
        info->weight[0] = 1;
        return;
    }
    for (size_t i = 0; i < p->n; i++) {
        info->weight[i] = p->weight[i];
        info->begin[i] = p->share[i].begin;
        info->share[i] = p->share[i].count;
        info->devices += !p->share[i].empty;
    }
}
