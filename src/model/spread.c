/* SPDX-License-Identifier: MIT */
/* The model of one call spread over several devices (clattn/model.h,
 * "several devices"): each scheme's share per device on the roofline, the
 * bytes it moves, the memory it holds, and the longest call that fits. */
#include <stdlib.h>
#include <string.h>

#include "clattn/model.h"
#include "core/error.h"

const char *clattn_spread_name(clattn_spread spread)
{
    switch (spread) {
    case CLATTN_SPREAD_ONE: return "one";
    case CLATTN_SPREAD_KEYS: return "keys";
    case CLATTN_SPREAD_QUERIES: return "queries";
    case CLATTN_SPREAD_RING: return "ring";
    }
    return "unknown";
}

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
    return (a + b - 1) / b;
}

/* Bytes of Q (or O with its LSE) for nq rows, and of K and V for nk keys. */
static uint64_t q_bytes(const clattn_shape *s, uint64_t nq)
{
    return (uint64_t)s->batch * s->heads * nq * s->head_dim * clattn_dtype_size(s->dtype);
}

static uint64_t o_bytes(const clattn_shape *s, uint64_t nq)
{
    return q_bytes(s, nq) + (uint64_t)s->batch * s->heads * nq * 4;
}

static uint64_t kv_bytes(const clattn_shape *s, uint64_t nk)
{
    return 2 * (uint64_t)s->batch * s->kv_heads * nk * s->head_dim * clattn_dtype_size(s->dtype);
}

/* One device's share of the rows and keys under a scheme. */
struct share {
    uint64_t nq, nk;
};

static struct share share_of(clattn_spread sp, const clattn_shape *s, uint64_t n)
{
    switch (sp) {
    case CLATTN_SPREAD_KEYS: return (struct share){ s->q_len, ceil_div(s->kv_len, n) };
    case CLATTN_SPREAD_QUERIES: return (struct share){ ceil_div(s->q_len, n), s->kv_len };
    case CLATTN_SPREAD_RING:
        return (struct share){ ceil_div(s->q_len, n), ceil_div(s->kv_len, n) };
    default: return (struct share){ s->q_len, s->kv_len };
    }
}

/* Sum over t in [a, b] of min(max(t, 0), cap). */
static double clamped_sum(int64_t a, int64_t b, int64_t cap)
{
    if (b < a)
        return 0;
    const int64_t lo = a > 1 ? a : 1, hi = b < cap ? b : cap; /* the t counted as t */
    double sum = hi >= lo ? ((double)lo + (double)hi) * (double)(hi - lo + 1) / 2 : 0;
    const int64_t over = a > cap + 1 ? a : cap + 1; /* the t counted as cap */
    if (b >= over)
        sum += (double)cap * (double)(b - over + 1);
    return sum;
}

/* The share of the call's visible (query, key) pairs in its first
 * `keys` keys: the heaviest device's under a key split. */
static double first_keys_fraction(const clattn_shape *s, clattn_causal causal, uint64_t keys)
{
    if (causal == CLATTN_CAUSAL_NONE)
        return (double)keys / (double)s->kv_len;
    /* Query i sees keys j <= i + off: i + off + 1 of them, clamped. */
    const int64_t off = causal == CLATTN_CAUSAL_BOTTOM_RIGHT
                            ? (int64_t)s->kv_len - (int64_t)s->q_len : 0;
    const int64_t a = off + 1, b = off + (int64_t)s->q_len;
    const double all = clamped_sum(a, b, (int64_t)s->kv_len);
    return all > 0 ? clamped_sum(a, b, (int64_t)keys) / all : 0;
}

/* Device memory of one device's share: its fused plan, and the ring's two
 * blocks in flight. 0 when a size overflows. */
static uint64_t device_bytes(clattn_spread sp, const clattn_shape *s, uint64_t n)
{
    const struct share sh = share_of(sp, s, n);
    clattn_shape part = *s;
    part.q_len = (size_t)sh.nq, part.kv_len = (size_t)sh.nk;
    clattn_memory_plan plan;
    if (clattn_model_memory(&part, CLATTN_PATH_FUSED, 0, &plan) < 0)
        return 0;
    /* A ring step holds its block and the next one coming in. */
    return plan.peak_bytes + (sp == CLATTN_SPREAD_RING ? kv_bytes(s, sh.nk) : 0);
}

/* The largest N whose share fits `dev` (Nk = N for one query row, else
 * Nq = Nk = N): 0 when the capacity is unknown. */
static uint64_t max_len(clattn_spread sp, const clattn_shape *s, uint64_t n,
                        const clattn_model_device *dev)
{
    if (!dev->capacity_bytes)
        return 0;
    uint64_t lo = 0, hi = (uint64_t)1 << 40;
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo + 1) / 2;
        clattn_shape t = *s;
        t.kv_len = (size_t)mid;
        if (s->q_len > 1)
            t.q_len = (size_t)mid;
        const uint64_t bytes = device_bytes(sp, &t, n);
        if (bytes && bytes <= dev->capacity_bytes)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* The fused estimate of `p` with its rows and keys cut to `sh` (the
 * per-sequence lengths cut the same way: the first device's, the
 * fullest), without a causal mask where `unmasked`. */
static int share_estimate(const clattn_model_problem *p, const clattn_model_device *dev,
                          struct share sh, int unmasked, clattn_path_estimate *out)
{
    clattn_model_problem q = *p;
    q.shape.q_len = (size_t)sh.nq;
    q.shape.kv_len = (size_t)sh.nk;
    q.splits = p->splits > sh.nk ? (uint32_t)sh.nk : p->splits;
    if (unmasked)
        q.causal = CLATTN_CAUSAL_NONE;
    uint32_t *lens = NULL;
    if (p->kv_lens) {
        lens = malloc(p->shape.batch * sizeof *lens);
        if (!lens)
            return clattn_fail(CLATTN_ENOMEM, "model: a share's lengths");
        for (size_t b = 0; b < p->shape.batch; b++)
            lens[b] = p->kv_lens[b] < sh.nk ? p->kv_lens[b] : (uint32_t)sh.nk;
        q.kv_lens = lens;
    }
    clattn_prediction pred;
    const int rc = clattn_model_predict(&q, dev, &pred);
    free(lens);
    if (rc == CLATTN_OK)
        *out = pred.fused;
    return rc;
}

/* max(memory, compute) + launches: the roofline of a kernel whose bytes
 * and FLOPs come from two estimates. */
static double roof(double memory_s, double compute_s, unsigned launches,
                   const clattn_model_device *dev)
{
    if (!dev->bandwidth || !dev->peak_flops)
        return 0;
    return (memory_s > compute_s ? memory_s : compute_s) + launches * dev->launch_latency_s;
}

int clattn_model_predict_spread(const clattn_model_problem *problem,
                                const clattn_model_device *dev, size_t devices,
                                const clattn_model_link *link, clattn_spread_prediction *out)
{
    if (!problem || !dev || !link || !out)
        return clattn_fail(CLATTN_EINVAL, "clattn_model_predict_spread: NULL argument");
    if (devices < 1 || devices > 65536)
        return clattn_fail(CLATTN_EINVAL, "clattn_model_predict_spread: %zu devices (1 to "
                           "65536)", devices);
    memset(out, 0, sizeof *out);
    out->devices = devices;
    const clattn_shape *s = &problem->shape;
    const uint64_t n = devices;
    clattn_prediction whole;
    int rc = clattn_model_predict(problem, dev, &whole);
    if (rc < 0)
        return rc;
    const double host = link->host_bytes_per_s;
    const double peer = link->peer_bytes_per_s > 0 ? link->peer_bytes_per_s : host / 2;
    for (int k = 0; k < CLATTN_SPREADS; k++) {
        const clattn_spread sp = (clattn_spread)k;
        clattn_spread_estimate *e = &out->spread[k];
        e->possible = sp == CLATTN_SPREAD_ONE || sp == CLATTN_SPREAD_KEYS || s->q_len > 1;
        if (!e->possible)
            continue;
        const struct share sh = share_of(sp, s, n);
        e->host_bytes = q_bytes(s, sh.nq) + kv_bytes(s, sh.nk) + o_bytes(s, sh.nq);
        e->device_bytes = device_bytes(sp, s, n);
        e->max_len = max_len(sp, s, n, dev);
        clattn_path_estimate est;
        if (sp == CLATTN_SPREAD_ONE || (sp == CLATTN_SPREAD_KEYS && s->q_len == 1)) {
            if ((rc = share_estimate(problem, dev, sh, 0, &est)) < 0)
                return rc;
            e->compute_s = est.time_s;
        } else if (sp == CLATTN_SPREAD_KEYS) {
            /* The first keys are the ones most queries see under a causal
             * mask: the first device's FLOPs, over its keys' bytes. */
            if ((rc = share_estimate(problem, dev, sh, 1, &est)) < 0)
                return rc;
            e->compute_s = roof(est.memory_time_s, whole.fused.compute_time_s *
                                first_keys_fraction(s, problem->causal, sh.nk),
                                est.launches, dev);
        } else if (sp == CLATTN_SPREAD_QUERIES) {
            /* Its rows' bytes (all of K and V), 1/n of the call's FLOPs. */
            if ((rc = share_estimate(problem, dev, sh, 1, &est)) < 0)
                return rc;
            e->compute_s = roof(est.memory_time_s, whole.fused.compute_time_s / (double)n,
                                est.launches, dev);
        } else {
            /* n steps of 1/n^2 of the FLOPs over a block of Nk / n keys,
             * each step's block sent on under the next step's compute. */
            if ((rc = share_estimate(problem, dev, sh, 1, &est)) < 0)
                return rc;
            const double step = roof(est.memory_time_s,
                                     whole.fused.compute_time_s / (double)(n * n), est.launches,
                                     dev);
            const double send = peer > 0 ? (double)kv_bytes(s, sh.nk) / peer + link->latency_s
                                         : 0;
            e->peer_bytes = (n - 1) * kv_bytes(s, sh.nk);
            e->compute_s = step * (double)n;
            e->transfer_s = (double)(n - 1) * (send > step ? send - step : 0);
            if (n > 1 && peer <= 0)
                e->compute_s = 0; /* the ring's transfers cannot be timed */
        }
        /* Host arrays: each device's inputs in, then its kernel, then its
         * outputs out, the devices' links side by side. */
        const double host_s = host > 0 ? (double)e->host_bytes / host + 3 * link->latency_s : 0;
        e->transfer_s += host_s;
        e->time_s = e->compute_s > 0 ? e->compute_s + e->transfer_s : 0;
    }
    /* The fastest that runs and fits (one device when no time is known). */
    out->best = CLATTN_SPREAD_ONE;
    double best = 0;
    for (int k = 0; k < CLATTN_SPREADS; k++) {
        const clattn_spread_estimate *e = &out->spread[k];
        const int fits = !dev->capacity_bytes || (e->device_bytes &&
                                                  e->device_bytes <= dev->capacity_bytes);
        if (e->possible && fits && e->time_s > 0 && (best == 0 || e->time_s < best))
            best = e->time_s, out->best = (clattn_spread)k;
    }
    return CLATTN_OK;
}
