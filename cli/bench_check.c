/*
 * clattn bench: every row's output against the CPU reference.
 *
 * Small problems are compared in full (clattn_reference_ex, which honours
 * the per-sequence lengths). For large ones the reference (double
 * precision, one thread) would take longer than the benchmark, so a few
 * blocks of query rows are checked instead. Query i of sequence b (length
 * L = kv_lens[b], else Nk) sees the keys [0, c_i) with
 *     no mask        c_i = L
 *     top-left       c_i = min(i + 1, L)
 *     bottom-right   c_i = clamp(i + 1 + L - Nq, 0, L)   (aligned to L)
 * A block's rows are cut into runs that one clattn_reference call on a
 * sub-problem of one head reproduces exactly:
 *   - a ramp c, c + 1, ..., c + r - 1 (c >= 1): r queries over the keys
 *     [0, c + r - 1) under the bottom-right mask, whose row t sees
 *     j <= t + (c + r - 1) - r, the c + t keys of the full problem;
 *   - a constant c >= 1 (no mask, or rows past the diagonal): r queries
 *     over [0, c) without a mask;
 *   - zeros (c = 0: a row that sees nothing, an empty sequence): the output
 *     must be exactly zero.
 * Any block splits into such runs (one row alone is always one), so a
 * block's window that no single mask reproduces falls back to shorter runs,
 * down to single rows.
 * With a variant (a window, a mask, ALiBi, sinks, softcap, d_v) no such
 * sub-problem reproduces a row, so a sample is its rows' own reference
 * (clattn_reference_rows over every key of the sequence), and a row that
 * sees no key (reference LSE -inf) must be exact zeros.
 * The reference depends only on the inputs, the mask and the lengths, so it
 * is computed once and shared by the paths of one case and mask.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* B*H*Nq*(keys)*d up to which AUTO compares the whole output: the
 * reference does about 1.5e8 of these per second on one core (f16 loads and
 * all), so up to ~15 s per case and mask, shared by both paths. */
#define FULL_CHECK_WORK 2e9
#define SAMPLES 4
#define SAMPLE_ROWS 16

/* Rows [t0, t0 + rows) of a sample over the keys [0, keys) under `mask`
 * (NONE or BOTTOM_RIGHT); keys == 0: the rows are zeros. */
struct run {
    size_t t0, rows, keys;
    clattn_causal mask;
};

struct sample {
    size_t b, h, i0, rows; /* query rows [i0, i0 + rows) of head (b, h) */
    struct run runs[SAMPLE_ROWS];
    size_t n_runs;
};

/* The cached reference: for `in` (its host inputs), `causal` and `kv_lens`. */
static struct {
    const void *q;               /* identity of the inputs */
    clattn_causal causal;
    const uint32_t *kv_lens;
    int full;
    int variant;                 /* the row's options have a variant */
    double *ref;                 /* full: [B,H,Nq,d_v]; sampled: SAMPLES x rows x d_v */
    double *lse;                 /* with a variant: the rows' reference LSE */
    struct sample samples[SAMPLES];
    size_t n_samples;
} cache;

void bench_check_reset(void)
{
    free(cache.ref);
    free(cache.lse);
    memset(&cache, 0, sizeof cache);
}

static size_t seq_len(const clattn_shape *s, const uint32_t *kv_lens, size_t b)
{
    return kv_lens ? kv_lens[b] : s->kv_len;
}

/* How many keys query i of a sequence of `len` keys sees. */
static size_t visible_keys(clattn_causal causal, size_t i, size_t nq, size_t len)
{
    int64_t end = (int64_t)len;
    if (causal == CLATTN_CAUSAL_TOP_LEFT)
        end = (int64_t)i + 1;
    else if (causal == CLATTN_CAUSAL_BOTTOM_RIGHT)
        end = (int64_t)i + 1 + (int64_t)len - (int64_t)nq;
    if (end < 0)
        return 0;
    return (uint64_t)end < len ? (size_t)end : len;
}

/* Cuts the rows' key counts c[0..rows) into runs (see the top). */
static size_t split_runs(const size_t *c, size_t rows, struct run *out)
{
    size_t n = 0;
    for (size_t t = 0; t < rows;) {
        size_t u = t + 1;
        const int ramp = c[t] > 0 && u < rows && c[u] == c[t] + 1;
        if (ramp)
            while (u < rows && c[u] == c[u - 1] + 1)
                u++;
        else
            while (u < rows && c[u] == c[t])
                u++;
        out[n++] = (struct run){ .t0 = t, .rows = u - t, .keys = c[u - 1],
                                 .mask = ramp ? CLATTN_CAUSAL_BOTTOM_RIGHT : CLATTN_CAUSAL_NONE };
        t = u;
    }
    return n;
}

/* Blocks of rows spread over batch, heads and positions: the first rows of
 * the first head, the last rows of the last head, and two in between; an
 * empty sequence, where there is one, takes the last block's place, since
 * its zeros are a case of their own. */
static size_t pick_samples(const clattn_shape *s, const uint32_t *kv_lens, clattn_causal causal,
                           struct sample *out)
{
    const size_t r = s->q_len < SAMPLE_ROWS ? s->q_len : SAMPLE_ROWS;
    const size_t span = s->q_len - r;
    size_t where[SAMPLES][3] = {
        { 0, 0, 0 },
        { s->batch - 1, s->heads - 1, span },
        { s->batch / 2, s->heads / 2, span / 2 },
        { (s->batch - 1) / 3, (2 * s->heads) / 3, span / 4 },
    };
    for (size_t b = 0; kv_lens && b < s->batch; b++)
        if (kv_lens[b] == 0) {
            where[SAMPLES - 1][0] = b;
            break;
        }
    for (size_t i = 0; i < SAMPLES; i++) {
        struct sample *x = &out[i];
        *x = (struct sample){ .b = where[i][0], .h = where[i][1], .i0 = where[i][2], .rows = r };
        size_t c[SAMPLE_ROWS];
        const size_t len = seq_len(s, kv_lens, x->b);
        for (size_t t = 0; t < r; t++)
            c[t] = visible_keys(causal, x->i0 + t, s->q_len, len);
        x->n_runs = split_runs(c, r, x->runs);
    }
    return SAMPLES;
}

static size_t q_offset(const clattn_shape *s, const struct sample *x, size_t t)
{
    return ((x->b * s->heads + x->h) * s->q_len + x->i0 + t) * s->head_dim;
}

static size_t kv_offset(const clattn_shape *s, const struct sample *x)
{
    size_t group = s->heads / s->kv_heads;
    return (x->b * s->kv_heads + x->h / group) * s->kv_len * s->head_dim;
}

/* The reference of one sample's runs into ref[rows x d] (zeros where a run
 * sees no key). */
static int sample_reference(const bench_inputs *in, const struct sample *x, double *ref)
{
    const clattn_shape *s = &in->shape;
    const size_t e = clattn_dtype_size(s->dtype), d = s->head_dim;
    clattn_options opts;
    clattn_default_options(&opts);
    for (size_t k = 0; k < x->n_runs; k++) {
        const struct run *u = &x->runs[k];
        double *out = ref + u->t0 * d;
        if (u->keys == 0) {
            memset(out, 0, u->rows * d * sizeof *out);
            continue;
        }
        clattn_shape sub = { .batch = 1, .heads = 1, .kv_heads = 1, .q_len = u->rows,
                             .kv_len = u->keys, .head_dim = d, .dtype = s->dtype };
        opts.causal = u->mask;
        int rc = clattn_reference(&sub, &opts, (const char *)in->q + q_offset(s, x, u->t0) * e,
                                  (const char *)in->k + kv_offset(s, x) * e,
                                  (const char *)in->v + kv_offset(s, x) * e, out);
        if (rc < 0)
            return rc;
    }
    return CLATTN_OK;
}

/* The reference's work: each query row over its sequence's keys. */
static double full_work(const clattn_shape *s, const uint32_t *kv_lens)
{
    double keys = 0;
    for (size_t b = 0; b < s->batch; b++)
        keys += (double)seq_len(s, kv_lens, b);
    return (double)s->heads * (double)s->q_len * keys * (double)s->head_dim;
}

/* The reference's options: the row's, variant included. */
static void reference_options(const bench_inputs *in, const bench_row *row,
                              clattn_options *opts)
{
    *opts = in->cached ? in->ref_opts : *row->opts; /* a cache: its plain form */
    opts->causal = row->causal;
    opts->kv_lens = row->kv_lens;
    opts->q_lens = row->q_lens;
}

/* A variant, a cache's types or per-sequence queries: no sub-problem of
 * plain rows reproduces a row, which is then its own reference. */
static int has_variant(const bench_inputs *in, const bench_row *row)
{
    char what[256];
    cli_variant_describe(&in->shape, row->opts, what, sizeof what);
    return what[0] != '\0' || in->cached || row->q_lens;
}

static int compute_reference(const bench_inputs *in, const bench_row *row, bench_check_mode mode)
{
    const clattn_shape *s = &in->shape;
    const size_t dv = in->head_dim_v, rows_all = s->batch * s->heads * s->q_len;
    bench_check_reset();
    cache.q = in->q;
    cache.causal = row->causal;
    cache.kv_lens = row->kv_lens;
    cache.variant = has_variant(in, row);
    cache.full = mode == BENCH_CHECK_FULL ||
                 (mode == BENCH_CHECK_AUTO && full_work(s, row->kv_lens) <= FULL_CHECK_WORK);
    clattn_options opts;
    reference_options(in, row, &opts);
    if (cache.full) {
        cache.ref = malloc(rows_all * dv * sizeof *cache.ref);
        cache.lse = malloc(rows_all * sizeof *cache.lse);
        if (!cache.ref || !cache.lse)
            return CLATTN_ENOMEM;
        return clattn_reference_ex(s, &opts, in->q, in->k, in->v, cache.ref, cache.lse);
    }
    cache.n_samples = pick_samples(s, row->kv_lens, row->causal, cache.samples);
    const size_t rows = cache.samples[0].rows, per = rows * dv;
    cache.ref = malloc(cache.n_samples * per * sizeof *cache.ref);
    cache.lse = malloc(cache.n_samples * rows * sizeof *cache.lse);
    if (!cache.ref || !cache.lse)
        return CLATTN_ENOMEM;
    for (size_t i = 0; i < cache.n_samples; i++) {
        const struct sample *x = &cache.samples[i];
        int rc = cache.variant
                     ? clattn_reference_rows(s, &opts, in->q, in->k, in->v, x->b, x->h, x->i0,
                                             x->rows, cache.ref + i * per, cache.lse + i * rows)
                     : sample_reference(in, x, cache.ref + i * per);
        if (rc < 0)
            return rc;
    }
    return CLATTN_OK;
}

static int read_output(clattn_ctx *ctx, cl_mem buf, size_t offset, size_t bytes, void *out)
{
    cl_int err = clEnqueueReadBuffer(clattn_cl_queue(ctx), buf, CL_TRUE, offset, bytes, out, 0,
                                     NULL, NULL);
    return err == CL_SUCCESS ? CLATTN_OK : CLATTN_EDEVLOST;
}

/* Elements of one output row that are not exactly 0. A row that sees no key
 * (an empty sequence, a query before the diagonal) must be zeros: the
 * comparison with the reference's zeros allows the tolerance, which a stray
 * small value would pass. */
static size_t stray_in_row(const void *row, size_t d, clattn_dtype dtype)
{
    size_t n = 0;
    for (size_t x = 0; x < d; x++) {
        const uint16_t h = ((const uint16_t *)row)[x];
        float v = dtype == CLATTN_F16    ? clattn_f16_to_f32(h)
                  : dtype == CLATTN_BF16 ? clattn_bf16_to_f32(h)
                                         : ((const float *)row)[x];
        n += v != 0.0f;
    }
    return n;
}

static size_t stray_full(const bench_inputs *in, const bench_row *row, const void *out)
{
    const clattn_shape *s = &in->shape;
    const size_t e = clattn_dtype_size(s->dtype), d = in->head_dim_v;
    size_t n = 0;
    if (cache.variant) { /* the rows whose reference saw no key */
        for (size_t r = 0; r < s->batch * s->heads * s->q_len; r++)
            if (cache.lse[r] == -INFINITY)
                n += stray_in_row((const char *)out + r * d * e, d, s->dtype);
        return n;
    }
    for (size_t b = 0; b < s->batch; b++)
        for (size_t i = 0; i < s->q_len; i++) {
            if (visible_keys(row->causal, i, s->q_len, seq_len(s, row->kv_lens, b)))
                continue;
            for (size_t h = 0; h < s->heads; h++)
                n += stray_in_row((const char *)out + ((b * s->heads + h) * s->q_len + i) * d * e,
                                  d, s->dtype);
        }
    return n;
}

/* The shape O is compared in: d_v columns. */
static clattn_shape o_shape(const bench_inputs *in)
{
    clattn_shape s = in->shape;
    s.head_dim = in->head_dim_v;
    return s;
}

static int check_full(clattn_ctx *ctx, const bench_inputs *in, bench_row *row)
{
    void *out = malloc(in->o_bytes);
    if (!out)
        return CLATTN_ENOMEM;
    int rc = read_output(ctx, in->dcheck ? in->dcheck : in->dout, 0, in->o_bytes, out);
    const clattn_shape os = o_shape(in);
    if (rc == CLATTN_OK)
        rc = clattn_compare(&os, out, cache.ref, &row->max_abs, &row->rel_l2, &row->nan_count);
    if (rc == CLATTN_OK)
        row->stray_count = stray_full(in, row, out);
    free(out);
    snprintf(row->check_kind, sizeof row->check_kind, "full");
    return rc;
}

/* The samples' errors combine as if they were one array: the squared
 * differences and squared references add up. A sample whose reference is
 * all zeros (rows that see nothing) contributes its squared error alone,
 * so a nonzero output there fails the row. */
static int check_samples(clattn_ctx *ctx, const bench_inputs *in, bench_row *row)
{
    const clattn_shape *s = &in->shape;
    const size_t e = clattn_dtype_size(s->dtype), dv = in->head_dim_v;
    const size_t rows = cache.samples[0].rows, per = rows * dv;
    void *out = malloc(per * e);
    if (!out)
        return CLATTN_ENOMEM;
    double worst = 0, diff2 = 0, ref2 = 0;
    size_t nans = 0, stray = 0;
    int rc = CLATTN_OK;
    for (size_t i = 0; i < cache.n_samples && rc == CLATTN_OK; i++) {
        const struct sample *x = &cache.samples[i];
        const double *ref = cache.ref + i * per;
        rc = read_output(ctx, in->dcheck ? in->dcheck : in->dout,
                         q_offset(s, x, 0) / s->head_dim * dv * e, per * e, out);
        if (rc < 0)
            break;
        clattn_shape sub = { .batch = 1, .heads = 1, .kv_heads = 1, .q_len = rows,
                             .kv_len = 1, .head_dim = dv, .dtype = s->dtype };
        double max_abs, rel, r2 = 0;
        size_t n_nan;
        rc = clattn_compare(&sub, out, ref, &max_abs, &rel, &n_nan);
        if (rc < 0)
            break;
        for (size_t j = 0; j < per; j++)
            r2 += ref[j] * ref[j];
        worst = fmax(worst, max_abs);
        diff2 += r2 > 0 ? rel * rel * r2 : rel * rel;
        ref2 += r2;
        nans += n_nan;
        for (size_t t = 0; cache.variant && t < rows; t++)
            if (cache.lse[i * rows + t] == -INFINITY)
                stray += stray_in_row((const char *)out + t * dv * e, dv, s->dtype);
        for (size_t k = 0; !cache.variant && k < x->n_runs; k++)
            for (size_t t = 0; !x->runs[k].keys && t < x->runs[k].rows; t++)
                stray += stray_in_row((const char *)out + (x->runs[k].t0 + t) * s->head_dim * e,
                                      s->head_dim, s->dtype);
    }
    free(out);
    row->max_abs = nans ? INFINITY : worst;
    row->rel_l2 = nans ? INFINITY : (ref2 > 0 ? sqrt(diff2 / ref2) : sqrt(diff2));
    row->nan_count = nans;
    row->stray_count = stray;
    snprintf(row->check_kind, sizeof row->check_kind, "%zu samples x %zu rows", cache.n_samples,
             rows);
    return rc;
}

int bench_check_row(clattn_ctx *ctx, bench_inputs *in, bench_check_mode mode, bench_row *row)
{
    int rc = CLATTN_OK;
    if (!cache.ref || cache.q != in->q || cache.causal != row->causal ||
        cache.kv_lens != row->kv_lens) {
        rc = compute_reference(in, row, mode);
        if (rc < 0)
            bench_check_reset(); /* never reuse a half-computed reference */
    }
    if (rc == CLATTN_OK)
        rc = cache.full ? check_full(ctx, in, row) : check_samples(ctx, in, row);
    if (rc < 0)
        return rc;
    clattn_tolerance(in->shape.dtype, &row->tol_abs, &row->tol_rel);
    row->check_ok = row->nan_count == 0 && row->stray_count == 0 &&
                    row->max_abs <= row->tol_abs && row->rel_l2 <= row->tol_rel;
    return CLATTN_OK;
}
