/* SPDX-License-Identifier: MIT */
/*
 * CPU reference: attention in double precision, straight from the
 * definition, with the device paths' semantics (GQA head mapping, both causal
 * alignments, zero output for a query that sees no key, scores held in
 * fp32's range, IEEE propagation of NaN and infinities: see
 * clattn_reference in clattn/types.h). Slow on purpose: its only job is to be
 * obviously right.
 */
#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/options.h"

static double load(const void *base, size_t i, clattn_dtype dtype)
{
    if (dtype == CLATTN_F16)
        return clattn_f16_to_f32(((const uint16_t *)base)[i]);
    return ((const float *)base)[i];
}

/* A score as the fused kernels hold it: an fp32 accumulator whatever the
 * storage dtype (FlashAttention's and cuDNN's semantics), so a score that
 * rounds beyond FLT_MAX is infinite; an fp16 score above 65504 is not. */
static double held_score(double score)
{
    const double limit = 3.4028235677973366e38; /* FLT_MAX, rounded up */
    if (score >= limit)
        return INFINITY;
    if (score <= -limit)
        return -INFINITY;
    return score;
}

/* One query row of one head: softmax over the visible keys [0, last], then
 * P V; returns the row's log-sum-exp. */
static double reference_row(const clattn_shape *s, const void *q, const void *k, const void *v,
                            size_t q_off, size_t kv_off, long last, double scale,
                            double *scores, double *out)
{
    const size_t d = s->head_dim;
    for (size_t x = 0; x < d; x++)
        out[x] = 0.0;
    if (last < 0)
        return -INFINITY;
    double mx = -INFINITY;
    for (long j = 0; j <= last; j++) {
        double dot = 0.0;
        for (size_t x = 0; x < d; x++)
            dot += load(q, q_off + x, s->dtype) * load(k, kv_off + (size_t)j * d + x, s->dtype);
        scores[j] = held_score(dot * scale);
        if (scores[j] > mx)
            mx = scores[j];
    }
    double sum = 0.0;
    for (long j = 0; j <= last; j++) {
        scores[j] = exp(scores[j] - mx);
        sum += scores[j];
    }
    for (long j = 0; j <= last; j++) {
        double p = scores[j] / sum;
        for (size_t x = 0; x < d; x++)
            out[x] += p * load(v, kv_off + (size_t)j * d + x, s->dtype);
    }
    return mx + log(sum);
}

/* The last key query i of sequence b sees, or -1. */
static long last_visible(const clattn_shape *s, const clattn_options *opts, size_t b, size_t i)
{
    const long kv_len = opts->kv_lens ? (long)opts->kv_lens[b] : (long)s->kv_len;
    const long q_len = opts->q_lens ? (long)opts->q_lens[b] : (long)s->q_len;
    if ((long)i >= q_len)
        return -1;
    long last = kv_len - 1;
    const long offset = opts->causal == CLATTN_CAUSAL_BOTTOM_RIGHT ? kv_len - q_len : 0;
    if (opts->causal != CLATTN_CAUSAL_NONE && (long)i + offset < last)
        last = (long)i + offset;
    return last;
}

int clattn_reference_ex(const clattn_shape *s, const clattn_options *opts, const void *q,
                        const void *k, const void *v, double *o, double *lse)
{
    clattn_clear_error();
    clattn_options resolved;
    int rc = options_resolve(opts, &resolved);
    if (rc < 0 || (rc = clattn_shape_check(s)) < 0)
        return rc;
    opts = &resolved;
    CLATTN_CHECK_ARG(q && k && v && o);
    CLATTN_CHECK_ARG((unsigned)opts->causal <= CLATTN_CAUSAL_BOTTOM_RIGHT);
    CLATTN_CHECK_ARG(isfinite(opts->scale) && opts->scale >= 0);
    for (size_t b = 0; b < s->batch; b++) {
        CLATTN_CHECK_ARG(!opts->kv_lens || opts->kv_lens[b] <= s->kv_len);
        CLATTN_CHECK_ARG(!opts->q_lens || opts->q_lens[b] <= s->q_len);
    }
    double *scores = malloc(s->kv_len * sizeof *scores);
    if (!scores)
        return clattn_fail(CLATTN_ENOMEM, "reference scores (%zu doubles)", s->kv_len);
    const double scale = opts->scale > 0 ? opts->scale : 1.0 / sqrt((double)s->head_dim);
    const size_t group = s->heads / s->kv_heads, d = s->head_dim;
    for (size_t b = 0; b < s->batch; b++) {
        for (size_t h = 0; h < s->heads; h++) {
            size_t kv_head = b * s->kv_heads + h / group;
            for (size_t i = 0; i < s->q_len; i++) {
                size_t row = (b * s->heads + h) * s->q_len + i;
                double l = reference_row(s, q, k, v, row * d, kv_head * s->kv_len * d,
                                         last_visible(s, opts, b, i), scale, scores, o + row * d);
                if (lse)
                    lse[row] = l;
            }
        }
    }
    free(scores);
    return CLATTN_OK;
}

int clattn_reference(const clattn_shape *s, const clattn_options *opts, const void *q,
                     const void *k, const void *v, double *o)
{
    return clattn_reference_ex(s, opts, q, k, v, o, NULL);
}
