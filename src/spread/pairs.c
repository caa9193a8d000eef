/* SPDX-License-Identifier: MIT */
/* A run of queries against a run of keys as attention calls, merged (see
 * pairs.h). */
#include <stdlib.h>
#include <time.h>

#include "core/copy_rows.h"
#include "spread/pairs.h"
#include "spread/rows.h"

double pair_clock(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Rows [at, at + count) of each of `blocks` blocks of `rows` rows of
 * `width` values, contiguous (the source itself when they are all of it). */
static const void *rows_of(const void *src, size_t blocks, size_t rows, size_t at,
                           size_t count, size_t width, size_t e, void **owned)
{
    *owned = NULL;
    if (at == 0 && count == rows)
        return src;
    return *owned = copy_rows(src, blocks, rows, at, count, width, e);
}

/* One call of Q rows [qat, qat + qlen) against K, V rows [kat, kat + klen)
 * of `blocks` (b, head) blocks starting at sequence b0, merged into the
 * accumulator; `lo` carries the mask and lengths. */
struct call_rows {
    size_t b0, batch;      /* sequences */
    size_t qrows, qat, qlen;
    size_t krows, kat, klen;
};

static int local_call(struct pair_runner *r, const struct call_rows *c, const clattn_options *lo,
                      const void *q, const void *k, const void *v)
{
    const clattn_shape *s = r->shape;
    const clattn_shape ls = { c->batch, s->heads, s->kv_heads, c->qlen, c->klen, s->head_dim,
                              s->dtype };
    const size_t bh = c->batch * s->heads, bk = c->batch * s->kv_heads;
    const char *q0 = (const char *)q + c->b0 * s->heads * c->qrows * s->head_dim * r->e;
    const char *k0 = (const char *)k + c->b0 * s->kv_heads * c->krows * s->head_dim * r->e;
    const char *v0 = (const char *)v + c->b0 * s->kv_heads * c->krows * r->dv * r->e;
    void *owned[3];
    const void *lq = rows_of(q0, bh, c->qrows, c->qat, c->qlen, s->head_dim, r->e, &owned[0]);
    const void *lk = rows_of(k0, bk, c->krows, c->kat, c->klen, s->head_dim, r->e, &owned[1]);
    const void *lv = rows_of(v0, bk, c->krows, c->kat, c->klen, r->dv, r->e, &owned[2]);
    void *o = malloc(bh * c->qlen * r->dv * r->e + 1);
    float *lse = malloc(bh * c->qlen * sizeof *lse + 1);
    int rc = CLATTN_OK;
    if (!lq || !lk || !lv || !o || !lse) {
        rc = clattn_set_error(CLATTN_ENOMEM, "a pair of chunks' tensors");
    } else {
        const double t0 = pair_clock();
        rc = clattn_attention_ex(r->ctx, &ls, lo, lq, lk, lv, o, lse, NULL);
        r->compute_seconds += pair_clock() - t0;
        r->calls++;
        if (rc == CLATTN_OK)
            rows_merge_call(r->acc + c->b0 * s->heads * r->acc_rows * (r->dv + 1), r->dv, bh,
                            r->acc_rows, c->qat, c->qlen, s->dtype, o, lse);
    }
    free(owned[0]), free(owned[1]), free(owned[2]), free(o), free(lse);
    return rc;
}

int pair_run(struct pair_runner *r, const void *q, size_t qrows, const struct chunk *qc,
             const void *k, const void *v, size_t krows, const struct chunk *kc)
{
    const clattn_shape *s = r->shape;
    const size_t B = s->batch;
    uint32_t *lens = r->lens;
    struct pair_call pc = { { { 0, lens, lens + B }, { 0, lens + 2 * B, lens + 3 * B } },
                            lens + 4 * B, lens + 5 * B, lens + 6 * B, 0 };
    shard_pair(s, r->opts, qc, kc, &pc);
    clattn_options lo = *r->opts;
    int rc = CLATTN_OK;
    const struct call_rows all = { 0, B, qrows, qc->at, qc->len, krows, kc->at, kc->len };
    for (int m = 0; m < 2 && rc == CLATTN_OK; m++) {
        if (!pc.part[m].used)
            continue;
        lo.causal = m == 0 ? CLATTN_CAUSAL_BOTTOM_RIGHT : CLATTN_CAUSAL_NONE;
        lo.kv_lens = pc.part[m].kv_lens;
        lo.q_lens = pc.part[m].q_lens;
        rc = local_call(r, &all, &lo, q, k, v);
    }
    lo.causal = CLATTN_CAUSAL_NONE;
    lo.kv_lens = lo.q_lens = NULL;
    for (size_t b = 0; b < B && pc.rests && rc == CLATTN_OK; b++) {
        if (!pc.rest_rows[b])
            continue;
        const struct call_rows one = { b, 1, qrows, qc->at + pc.rest_from[b], pc.rest_rows[b],
                                       krows, kc->at, pc.rest_keys[b] };
        rc = local_call(r, &one, &lo, q, k, v);
    }
    return rc;
}
