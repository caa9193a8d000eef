/* SPDX-License-Identifier: MIT */
/*
 * CPU reference: attention in double precision, straight from the
 * definition, with the device paths' semantics (GQA head mapping, both causal
 * alignments, sliding windows, softcap, ALiBi, masks, sinks, d_v != d, zero
 * output for a query that sees no key, scores held in fp32's range, IEEE
 * propagation of NaN and infinities: see clattn_reference in
 * clattn/types.h). Slow on purpose: its only job is to be obviously right.
 */
#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/options.h"
#include "core/kv_cache.h"
#include "core/kv_type.h"
#include "core/variants.h"

static double load(const void *base, size_t i, clattn_dtype dtype)
{
    if (dtype == CLATTN_F16)
        return clattn_f16_to_f32(((const uint16_t *)base)[i]);
    if (dtype == CLATTN_BF16)
        return clattn_bf16_to_f32(((const uint16_t *)base)[i]);
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

/* One query's view of the keys: the window [first, last] (empty when
 * last < first), the alignment offset, and where its variants' values are. */
struct query {
    size_t b, h, i;
    long first, last, off;
    double slope;     /* ALiBi's, or 0 */
    double sink;      /* the head's sink logit, or -inf */
};

/* The mask's value at (b, h, i, j), added to the score (0 for a boolean
 * mask); 1 in *hidden where it hides the key (a false boolean, an additive
 * -inf: the key then weighs nothing, as one outside the window). */
static double mask_value(const clattn_shape *s, const clattn_mask *m, const struct query *q,
                         long j, int *hidden)
{
    const size_t at = mask_element(s, m, q->b, q->h, q->i, (size_t)j);
    if (m->kind == CLATTN_MASK_BOOL) {
        *hidden = !((const uint8_t *)m->host)[at];
        return 0.0;
    }
    const double x = load(m->host, at, m->dtype);
    *hidden = x == -INFINITY;
    return x;
}

/* The score of key j after the variants, in fp32's range; *hidden as
 * mask_value. */
static double score_of(const clattn_shape *s, const clattn_options *o, const struct query *q,
                       double dot, long j, int *hidden)
{
    double x = held_score(dot);
    *hidden = 0;
    if (o->softcap > 0)
        x = o->softcap * tanh(x / o->softcap);
    if (q->slope != 0)
        x -= q->slope * fabs((double)((long)q->i + q->off - j));
    if (o->mask.kind != CLATTN_MASK_NONE) {
        x += mask_value(s, &o->mask, q, j, hidden);
        /* With a mask, a score of -inf hides its key, whether the mask or
         * the data made it so (the kernels cannot tell them apart). */
        *hidden |= x == -INFINITY;
    }
    return x;
}

/* One query row: softmax over the visible keys (and the sink) of the
 * variants' scores, then P V into out[0..d_v); returns the row's LSE.
 * scores and hidden have room for Nk keys. */
static double reference_row(const clattn_shape *s, const clattn_options *o, const void *q,
                            const void *k, const void *v, size_t q_off, size_t kv_head,
                            const struct query *row, double scale, double *scores,
                            unsigned char *hidden, double *out)
{
    const size_t d = s->head_dim, dv = variants_head_dim_v(s, o), hk = s->kv_heads;
    const float k_scale = kv_cache_scale(o, 0, kv_head), v_scale = kv_cache_scale(o, 1, kv_head);
    for (size_t x = 0; x < dv; x++)
        out[x] = 0.0;
    double mx = row->sink;
    long seen = 0;
    for (long j = row->first; j <= row->last; j++) {
        double dot = 0.0;
        int h;
        const uint64_t k_off = kv_cache_row(s, o, 1, row->b, hk, kv_head, (size_t)j, d);
        for (size_t x = 0; x < d; x++)
            dot += load(q, q_off + x, s->dtype) *
                   kv_value(o->k_type, s->dtype, k, k_off + x, k_scale);
        scores[j] = score_of(s, o, row, dot * scale, j, &h);
        hidden[j] = (unsigned char)h;
        if (h)
            continue; /* a hidden key weighs nothing, as one outside the window */
        seen++;
        if (scores[j] > mx)
            mx = scores[j];
    }
    if (!seen)
        return row->sink; /* zeros; the sink alone, or -inf */
    /* IEEE from here: a NaN or +inf score, or every seen score and the sink
     * -inf, makes the row NaN. */
    double sum = row->sink == -INFINITY ? 0.0 : exp(row->sink - mx);
    for (long j = row->first; j <= row->last; j++) {
        scores[j] = hidden[j] ? 0.0 : exp(scores[j] - mx);
        sum += scores[j];
    }
    for (long j = row->first; j <= row->last; j++) {
        if (hidden[j])
            continue; /* its V is never read */
        const double p = scores[j] / sum;
        const uint64_t v_off = kv_cache_row(s, o, 1, row->b, hk, kv_head, (size_t)j, dv);
        for (size_t x = 0; x < dv; x++)
            out[x] += p * kv_value(o->v_type, s->dtype, v, v_off + x, v_scale);
    }
    return mx + log(sum);
}

/* Which keys query i of sequence b sees before masks: [first, last]. */
static void window_of(const clattn_shape *s, const clattn_options *opts, size_t b, size_t i,
                      struct query *q)
{
    struct kv_seq seq;
    kv_cache_seq(s, opts, b, &seq);
    const long kv_len = (long)seq.kv_len, q_len = (long)seq.q_len;
    q->off = opts->causal == CLATTN_CAUSAL_TOP_LEFT ? 0 : kv_len - q_len;
    q->first = 0;
    q->last = (long)i < q_len ? kv_len - 1 : -1;
    const long at = (long)i + q->off;
    if (opts->causal != CLATTN_CAUSAL_NONE && at < q->last)
        q->last = at;
    if (opts->window_right >= 0 && at + opts->window_right < q->last)
        q->last = at + opts->window_right;
    if (opts->window_left >= 0 && at - opts->window_left > q->first)
        q->first = at - opts->window_left;
}

/* The options resolved and checked for the reference of `s`. */
static int reference_prepare(const clattn_shape *s, const clattn_options *opts,
                             clattn_options *resolved)
{
    int rc = options_resolve(opts, resolved);
    if (rc < 0 || (rc = clattn_shape_check(s)) < 0)
        return rc;
    opts = resolved;
    CLATTN_CHECK_ARG((unsigned)opts->causal <= CLATTN_CAUSAL_BOTTOM_RIGHT);
    CLATTN_CHECK_ARG(isfinite(opts->scale) && opts->scale >= 0);
    for (size_t b = 0; b < s->batch; b++) {
        CLATTN_CHECK_ARG(!opts->kv_lens || opts->kv_lens[b] <= s->kv_len);
        CLATTN_CHECK_ARG(!opts->q_lens || opts->q_lens[b] <= s->q_len);
    }
    if ((rc = variants_check(s, opts, 1)) < 0 || (rc = kv_cache_check(s, opts, 1)) < 0)
        return rc;
    if (opts->score_mod || opts->mask_mod)
        return clattn_fail(CLATTN_EUNSUPPORTED, "the CPU reference cannot run OpenCL C "
                           "score_mod / mask_mod snippets");
    return CLATTN_OK;
}

/* The start of the public function `func`: clears the error, resolves and
 * checks the options and checks the tensors. */
static int reference_begin(const char *func, const clattn_shape *s, const clattn_options *opts,
                           const void *q, const void *k, const void *v, const double *o,
                           clattn_options *resolved)
{
    clattn_clear_error();
    int rc = reference_prepare(s, opts, resolved);
    if (rc < 0)
        return rc;
    CLATTN_CHECK_ARG_OF(func, q && k && v && o);
    return CLATTN_OK;
}

/* Rows [i0, i0 + n) of query head h of sequence b into o (n x d_v, and
 * lse[0..n) where non-NULL). */
static int reference_rows(const clattn_shape *s, const clattn_options *opts, const void *q,
                          const void *k, const void *v, size_t b, size_t h, size_t i0, size_t n,
                          double *o, double *lse)
{
    double *scores = malloc(s->kv_len * sizeof *scores);
    unsigned char *hidden = malloc(s->kv_len);
    if (!scores || !hidden) {
        free(scores);
        free(hidden);
        return clattn_fail(CLATTN_ENOMEM, "reference scores (%zu doubles)", s->kv_len);
    }
    const double scale = opts->scale > 0 ? opts->scale : 1.0 / sqrt((double)s->head_dim);
    const size_t group = s->heads / s->kv_heads, d = s->head_dim;
    const size_t dv = variants_head_dim_v(s, opts);
    const size_t kv_head = h / group;
    struct kv_seq seq;
    kv_cache_seq(s, opts, b, &seq);
    for (size_t i = i0; i < i0 + n; i++) {
        /* Rows past a packed sequence's length read no query. */
        const uint64_t q_off = i < seq.q_len ? kv_cache_row(s, opts, 0, b, s->heads, h, i, d) : 0;
        struct query qr = { b, h, i, 0, 0, 0, 0.0, -INFINITY };
        window_of(s, opts, b, i, &qr);
        if (opts->alibi_slopes)
            qr.slope = opts->alibi_slopes[(opts->alibi_per_sequence ? b * s->heads : 0) + h];
        if (opts->sinks && i < seq.q_len) /* a row past q_len is no row: LSE -inf */
            qr.sink = opts->sinks[h];
        const double l = reference_row(s, opts, q, k, v, (size_t)q_off, kv_head, &qr, scale,
                                       scores, hidden, o + (i - i0) * dv);
        if (lse)
            lse[i - i0] = l;
    }
    free(scores);
    free(hidden);
    return CLATTN_OK;
}

int clattn_reference_ex(const clattn_shape *s, const clattn_options *opts, const void *q,
                        const void *k, const void *v, double *o, double *lse)
{
    clattn_options resolved;
    int rc = reference_begin(__func__, s, opts, q, k, v, o, &resolved);
    if (rc < 0)
        return rc;
    const size_t dv = variants_head_dim_v(s, &resolved);
    for (size_t b = 0; b < s->batch && rc == CLATTN_OK; b++)
        for (size_t h = 0; h < s->heads && rc == CLATTN_OK; h++) {
            const size_t row = (b * s->heads + h) * s->q_len;
            rc = reference_rows(s, &resolved, q, k, v, b, h, 0, s->q_len, o + row * dv,
                                lse ? lse + row : NULL);
        }
    return rc;
}

int clattn_reference_rows(const clattn_shape *s, const clattn_options *opts, const void *q,
                          const void *k, const void *v, size_t batch, size_t head,
                          size_t first_row, size_t rows, double *o, double *lse)
{
    clattn_options resolved;
    int rc = reference_begin(__func__, s, opts, q, k, v, o, &resolved);
    if (rc < 0)
        return rc;
    CLATTN_CHECK_ARG(batch < s->batch && head < s->heads);
    CLATTN_CHECK_ARG(first_row <= s->q_len && rows <= s->q_len - first_row);
    return reference_rows(s, &resolved, q, k, v, batch, head, first_row, rows, o, lse);
}

int clattn_reference(const clattn_shape *s, const clattn_options *opts, const void *q,
                     const void *k, const void *v, double *o)
{
    return clattn_reference_ex(s, opts, q, k, v, o, NULL);
}
