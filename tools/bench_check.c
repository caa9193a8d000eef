/*
 * clattn bench: every row's output against the CPU reference.
 *
 * Small problems are compared in full. For large ones the reference (double
 * precision, one thread) would take longer than the benchmark, so a few
 * blocks of query rows are checked instead, each against clattn_reference on
 * a sub-problem of one head that gives exactly those rows:
 *   - no mask: the rows [i0, i0 + r) of head (b, h) with all Nk keys;
 *   - causal (top-left, Nq = Nk as the bench runs it): query i sees keys
 *     j <= i. The sub-problem keeps the keys [0, i0 + r) and uses the
 *     bottom-right mask, under which its row t sees j <= t + (i0 + r) - r =
 *     i0 + t: the same keys as row i0 + t of the full problem.
 * The reference depends only on the inputs and the mask, so it is computed
 * once and shared by the paths of one N and mask.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* B*H*Nq*Nk*d up to which the whole output is compared: the reference does
 * about 1.5e8 of these per second on one core (f16 loads and all), so up to
 * ~15 s per N and mask, shared by both paths. */
#define FULL_CHECK_WORK 2e9
#define SAMPLES 4
#define SAMPLE_ROWS 16

struct sample {
    size_t b, h, i0, rows, keys; /* query rows [i0, i0 + rows), keys [0, keys) */
};

/* The cached reference: for `in` (its host inputs) and `causal`. */
static struct {
    const void *q;               /* identity of the inputs */
    clattn_causal causal;
    int full;
    double *ref;                 /* full: [B,H,Nq,d]; sampled: SAMPLES x rows x d */
    struct sample samples[SAMPLES];
    size_t n_samples;
} cache;

void bench_check_reset(void)
{
    free(cache.ref);
    memset(&cache, 0, sizeof cache);
}

/* Blocks of rows spread over batch, heads and positions: the first rows of
 * the first head, the last rows of the last head, and two in between. */
static size_t pick_samples(const clattn_shape *s, clattn_causal causal, struct sample *out)
{
    const size_t r = s->q_len < SAMPLE_ROWS ? s->q_len : SAMPLE_ROWS;
    const size_t span = s->q_len - r;
    const size_t where[SAMPLES][3] = {
        { 0, 0, 0 },
        { s->batch - 1, s->heads - 1, span },
        { s->batch / 2, s->heads / 2, span / 2 },
        { (s->batch - 1) / 3, (2 * s->heads) / 3, span / 4 },
    };
    for (size_t i = 0; i < SAMPLES; i++) {
        out[i] = (struct sample){ .b = where[i][0], .h = where[i][1], .i0 = where[i][2], .rows = r,
                                  .keys = s->kv_len };
        if (causal != CLATTN_CAUSAL_NONE)
            out[i].keys = out[i].i0 + r;
    }
    return SAMPLES;
}

static clattn_shape sample_shape(const clattn_shape *s, const struct sample *x)
{
    return (clattn_shape){ .batch = 1, .heads = 1, .kv_heads = 1, .q_len = x->rows,
                           .kv_len = x->keys, .head_dim = s->head_dim, .dtype = s->dtype };
}

static size_t q_offset(const clattn_shape *s, const struct sample *x)
{
    return ((x->b * s->heads + x->h) * s->q_len + x->i0) * s->head_dim;
}

static size_t kv_offset(const clattn_shape *s, const struct sample *x)
{
    size_t group = s->heads / s->kv_heads;
    return (x->b * s->kv_heads + x->h / group) * s->kv_len * s->head_dim;
}

static int compute_reference(const bench_inputs *in, clattn_causal causal)
{
    const clattn_shape *s = &in->shape;
    const size_t e = clattn_dtype_size(s->dtype);
    bench_check_reset();
    cache.q = in->q;
    cache.causal = causal;
    cache.full = (double)s->batch * (double)s->heads * (double)s->q_len * (double)s->kv_len *
                 (double)s->head_dim <= FULL_CHECK_WORK;
    clattn_options opts;
    clattn_default_options(&opts);
    if (cache.full) {
        opts.causal = causal;
        cache.ref = malloc(clattn_shape_q_elems(s) * sizeof *cache.ref);
        if (!cache.ref)
            return CLATTN_ENOMEM;
        return clattn_reference(s, &opts, in->q, in->k, in->v, cache.ref);
    }
    opts.causal = causal == CLATTN_CAUSAL_NONE ? CLATTN_CAUSAL_NONE
                                               : CLATTN_CAUSAL_BOTTOM_RIGHT;
    cache.n_samples = pick_samples(s, causal, cache.samples);
    const size_t per = cache.samples[0].rows * s->head_dim;
    cache.ref = malloc(cache.n_samples * per * sizeof *cache.ref);
    if (!cache.ref)
        return CLATTN_ENOMEM;
    for (size_t i = 0; i < cache.n_samples; i++) {
        const struct sample *x = &cache.samples[i];
        clattn_shape sub = sample_shape(s, x);
        int rc = clattn_reference(&sub, &opts, (const char *)in->q + q_offset(s, x) * e,
                                  (const char *)in->k + kv_offset(s, x) * e,
                                  (const char *)in->v + kv_offset(s, x) * e, cache.ref + i * per);
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

static int check_full(clattn_ctx *ctx, const bench_inputs *in, bench_row *row)
{
    void *out = malloc(in->q_bytes);
    if (!out)
        return CLATTN_ENOMEM;
    int rc = read_output(ctx, in->dout, 0, in->q_bytes, out);
    if (rc == CLATTN_OK)
        rc = clattn_compare(&in->shape, out, cache.ref, &row->max_abs, &row->rel_l2,
                            &row->nan_count);
    free(out);
    snprintf(row->check_kind, sizeof row->check_kind, "full");
    return rc;
}

/* The samples' errors combine as if they were one array: the squared
 * differences and squared references add up. */
static int check_samples(clattn_ctx *ctx, const bench_inputs *in, bench_row *row)
{
    const clattn_shape *s = &in->shape;
    const size_t e = clattn_dtype_size(s->dtype);
    const size_t rows = cache.samples[0].rows, per = rows * s->head_dim;
    void *out = malloc(per * e);
    if (!out)
        return CLATTN_ENOMEM;
    double worst = 0, diff2 = 0, ref2 = 0;
    size_t nans = 0;
    int rc = CLATTN_OK;
    for (size_t i = 0; i < cache.n_samples && rc == CLATTN_OK; i++) {
        const struct sample *x = &cache.samples[i];
        const double *ref = cache.ref + i * per;
        rc = read_output(ctx, in->dout, q_offset(s, x) * e, per * e, out);
        if (rc < 0)
            break;
        clattn_shape sub = sample_shape(s, x);
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
    }
    free(out);
    row->max_abs = nans ? INFINITY : worst;
    row->rel_l2 = nans ? INFINITY : (ref2 > 0 ? sqrt(diff2 / ref2) : sqrt(diff2));
    row->nan_count = nans;
    snprintf(row->check_kind, sizeof row->check_kind, "%zu samples x %zu rows", cache.n_samples,
             rows);
    return rc;
}

int bench_check_row(clattn_ctx *ctx, bench_inputs *in, bench_row *row)
{
    int rc = CLATTN_OK;
    if (!cache.ref || cache.q != in->q || cache.causal != row->causal) {
        rc = compute_reference(in, row->causal);
        if (rc < 0)
            bench_check_reset(); /* never reuse a half-computed reference */
    }
    if (rc == CLATTN_OK)
        rc = cache.full ? check_full(ctx, in, row) : check_samples(ctx, in, row);
    if (rc < 0)
        return rc;
    clattn_tolerance(in->shape.dtype, &row->tol_abs, &row->tol_rel);
    row->check_ok = row->nan_count == 0 && row->max_abs <= row->tol_abs &&
                    row->rel_l2 <= row->tol_rel;
    return CLATTN_OK;
}
