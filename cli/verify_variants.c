/* SPDX-License-Identifier: MIT */
/*
 * clattn verify's variant cases: each variant alone and in combination
 * (window + softcap + ALiBi + sinks with GQA, bottom-right alignment,
 * per-sequence lengths, split-KV and the LSE, in fp32, fp16 and bf16), the
 * mask kinds and broadcasts, bf16 storage, d_v != d both ways, and the
 * snippets against the built-in variants they reproduce; the KV cache's
 * forms (q8_0, q4_0, fp8 e4m3 and mixed K/V types, pages of 16 and 256
 * keys through a scattered block table, packed batches with empty
 * sequences, with GQA, lengths, a window, split-KV and the LSE); and the
 * check that runs one of them against the CPU reference (see verify.h).
 * None of the shapes is a multiple of a tile.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "verify.h"

/* Which built-in tensors a case draws. */
enum { ALIBI_HEAD = 1, ALIBI_SEQ = 2 };
enum { SNIPPET_SOFTCAP = 1, SNIPPET_WINDOW = 2 };

struct variant_spec {
    const char *name;
    size_t b, h, hkv, nq, nk, d, dv;
    clattn_dtype dtype;
    clattn_causal causal;
    uint32_t split;
    uint32_t kv_lens[4];
    float scale, softcap;
    int32_t wl, wr;
    int alibi, sinks;
    clattn_mask_kind mask;
    clattn_dtype mask_dtype;
    size_t mb, mh;
    int snippet, lse;
    clattn_kv_type kt, vt;
    size_t page;
    int packed;
    uint32_t q_lens[4];
};

#define F32 CLATTN_F32
#define F16 CLATTN_F16
#define BF16 CLATTN_BF16
#define NONE CLATTN_CAUSAL_NONE
#define TL CLATTN_CAUSAL_TOP_LEFT
#define BR CLATTN_CAUSAL_BOTTOM_RIGHT
#define SHAPE(B, H, HKV, NQ, NK, D, DV, DT, C) \
    .b = B, .h = H, .hkv = HKV, .nq = NQ, .nk = NK, .d = D, .dv = DV, .dtype = DT, .causal = C
#define WINDOW(L, R) .wl = L, .wr = R
#define MASK(KIND, DT, MB, MH) .mask = CLATTN_MASK_##KIND, .mask_dtype = DT, .mb = MB, .mh = MH
#define NO_WINDOW .wl = -1, .wr = -1
#define KV(K, V) .kt = CLATTN_KV_##K, .vt = CLATTN_KV_##V

static const struct variant_spec specs[] = {
    { "softcap", SHAPE(2, 4, 2, 9, 70, 32, 32, F32, TL), .scale = 0.4f, .softcap = 0.5f,
      NO_WINDOW },
    { "softcap", SHAPE(1, 2, 1, 33, 65, 64, 64, F16, NONE), .softcap = 1.0f, NO_WINDOW },
    { "ALiBi", SHAPE(2, 8, 2, 7, 90, 24, 24, F32, BR), NO_WINDOW, .alibi = ALIBI_HEAD },
    { "ALiBi per sequence", SHAPE(2, 4, 1, 5, 61, 16, 16, F16, NONE), NO_WINDOW,
      .alibi = ALIBI_SEQ },
    { "window, kv_lens", SHAPE(2, 4, 2, 11, 150, 32, 32, F16, BR), WINDOW(17, 0),
      .kv_lens = { 150, 37 } },
    { "window both sides", SHAPE(1, 2, 2, 40, 40, 32, 32, F32, NONE), WINDOW(2, 1) },
    { "window right only", SHAPE(1, 2, 1, 20, 75, 16, 16, F32, NONE), WINDOW(-1, 5) },
    { "window, top-left", SHAPE(1, 3, 1, 70, 33, 40, 40, F32, TL), WINDOW(9, -1) },
    { "sinks, an empty sequence", SHAPE(2, 4, 2, 6, 65, 32, 32, F32, BR), NO_WINDOW,
      .sinks = 1, .kv_lens = { 0, 65 }, .lse = 1 },
    { "additive mask [B, 1]", SHAPE(2, 4, 2, 8, 77, 32, 32, F32, NONE), NO_WINDOW,
      MASK(ADD, F32, 2, 1) },
    { "additive mask [1, H]", SHAPE(2, 4, 2, 8, 77, 32, 32, F16, TL), NO_WINDOW,
      MASK(ADD, F16, 1, 4) },
    { "additive mask [B, H]", SHAPE(2, 4, 2, 8, 77, 32, 32, BF16, BR), NO_WINDOW,
      MASK(ADD, BF16, 2, 4) },
    { "boolean mask", SHAPE(2, 4, 1, 5, 60, 16, 16, F16, NONE), NO_WINDOW,
      MASK(BOOL, F32, 2, 4) },
    { "bf16 storage", SHAPE(2, 4, 2, 9, 100, 64, 64, BF16, BR), NO_WINDOW },
    { "d_v < d", SHAPE(1, 4, 1, 7, 80, 48, 24, F32, TL), NO_WINDOW },
    { "d_v > d", SHAPE(1, 2, 1, 3, 40, 24, 40, F16, NONE), NO_WINDOW },
    { "d_v != d, window, mask, split, LSE", SHAPE(2, 4, 2, 5, 130, 32, 16, F16, BR),
      WINDOW(20, 0), MASK(BOOL, F32, 2, 1), .split = 2, .lse = 1 },
    { "window + softcap + ALiBi + sinks, kv_lens, split, LSE",
      SHAPE(2, 8, 2, 6, 300, 32, 32, F32, BR), .softcap = 2.0f, WINDOW(64, 0),
      .alibi = ALIBI_HEAD, .sinks = 1, .kv_lens = { 300, 129 }, .split = 3, .lse = 1 },
    { "window + softcap + ALiBi + sinks, kv_lens, split, LSE",
      SHAPE(2, 8, 2, 6, 300, 32, 32, F16, BR), .softcap = 2.0f, WINDOW(64, 0),
      .alibi = ALIBI_HEAD, .sinks = 1, .kv_lens = { 300, 129 }, .split = 3, .lse = 1 },
    { "window + softcap + ALiBi + sinks, kv_lens, split, LSE",
      SHAPE(2, 8, 2, 6, 300, 32, 32, BF16, BR), .softcap = 2.0f, WINDOW(64, 0),
      .alibi = ALIBI_HEAD, .sinks = 1, .kv_lens = { 300, 129 }, .split = 3, .lse = 1 },
    { "softcap as score_mod", SHAPE(1, 4, 2, 10, 90, 32, 32, F32, NONE), .scale = 0.3f,
      NO_WINDOW, .snippet = SNIPPET_SOFTCAP },
    { "window as mask_mod", SHAPE(1, 4, 2, 10, 90, 32, 32, F32, NONE), NO_WINDOW,
      .snippet = SNIPPET_WINDOW },
    /* The KV cache's forms (the naive path gathers pages and quantized K
     * and V into its copies; it refuses packed batches and bf16). */
    { "q8_0 cache, decoding, kv_lens, LSE", SHAPE(3, 8, 2, 1, 300, 64, 64, F16, BR), NO_WINDOW,
      KV(Q8_0, Q8_0), .kv_lens = { 300, 1, 77 }, .lse = 1 },
    { "q4_0 cache", SHAPE(2, 4, 2, 19, 150, 32, 32, F32, BR), NO_WINDOW, KV(Q4_0, Q4_0) },
    { "fp8 cache, split, LSE", SHAPE(2, 4, 1, 3, 200, 64, 64, BF16, NONE), NO_WINDOW,
      KV(FP8_E4M3, FP8_E4M3), .split = 2, .lse = 1 },
    { "K q8_0, V fp8", SHAPE(1, 4, 2, 5, 120, 32, 32, F16, TL), NO_WINDOW,
      KV(Q8_0, FP8_E4M3) },
    { "pages of 16, q8_0, an empty sequence, LSE", SHAPE(3, 4, 2, 2, 200, 32, 32, F16, BR),
      NO_WINDOW, KV(Q8_0, Q8_0), .page = 16, .kv_lens = { 200, 0, 37 }, .lse = 1 },
    { "pages of 256, split", SHAPE(2, 8, 2, 1, 600, 64, 64, F16, NONE), NO_WINDOW,
      KV(DTYPE, DTYPE), .page = 256, .kv_lens = { 600, 300 }, .split = 3 },
    { "packed, an empty sequence, LSE", SHAPE(3, 4, 2, 21, 90, 32, 32, F32, BR), NO_WINDOW,
      KV(DTYPE, DTYPE), .packed = 1, .q_lens = { 21, 0, 5 }, .kv_lens = { 90, 0, 33 },
      .lse = 1 },
    { "packed q4_0, window", SHAPE(2, 6, 3, 9, 70, 32, 32, F16, NONE), WINDOW(9, 4),
      KV(Q4_0, Q4_0), .packed = 1, .q_lens = { 9, 4 }, .kv_lens = { 70, 40 } },
};

#undef F32
#undef F16
#undef BF16
#undef NONE
#undef TL
#undef BR
#undef SHAPE
#undef WINDOW
#undef MASK
#undef NO_WINDOW
#undef KV

#define N_SPECS (sizeof specs / sizeof specs[0])

/* The snippets and the built-in variants they stand for: softcap 1.5, and
 * a window of 7 keys before and 2 after the diagonal, which without a
 * causal mask aligns bottom-right (off = Nk - Nq = 80). */
static const char softcap_snippet[] =
    "float clattn_score_mod(float s, uint b, uint h, uint q, uint k)\n"
    "{ return 1.5f * tanh(s / 1.5f); }\n";
static const char window_snippet[] =
    "bool clattn_mask_mod(uint b, uint h, uint q, uint k)\n"
    "{ const int at = (int)q + 80; return (int)k >= at - 7 && (int)k <= at + 2; }\n";

size_t verify_variant_count(void)
{
    return N_SPECS;
}

size_t verify_cache_case_count(void)
{
    size_t n = 0;
    for (size_t i = 0; i < N_SPECS; i++)
        n += specs[i].kt != CLATTN_KV_DTYPE || specs[i].vt != CLATTN_KV_DTYPE ||
             specs[i].page || specs[i].packed;
    return n;
}

void verify_variant_free(verify_variant *c)
{
    cli_variant_free(&c->data);
}

static int draw_tensors(const struct variant_spec *v, uint64_t seed, verify_variant *c)
{
    cli_variant_data *d = &c->data;
    const size_t heads = v->h, rows = v->alibi == ALIBI_SEQ ? v->b : 1;
    if (v->alibi) {
        d->slopes = malloc(rows * heads * sizeof *d->slopes);
        if (!d->slopes)
            return CLATTN_ENOMEM;
        if (v->alibi == ALIBI_HEAD)
            clattn_alibi_slopes(8.0f, heads, d->slopes);
        else
            for (size_t i = 0; i < rows * heads; i++) /* (0, 0.5]: every slope its own */
                d->slopes[i] = 0.5f * (float)(i % 7 + 1) / 7.0f;
        c->opts.alibi_slopes = d->slopes;
        c->opts.alibi_per_sequence = v->alibi == ALIBI_SEQ;
    }
    if (v->sinks) {
        d->sinks = malloc(heads * sizeof *d->sinks);
        if (!d->sinks)
            return CLATTN_ENOMEM;
        clattn_random_fill(d->sinks, heads, CLATTN_F32, seed + 11);
        c->opts.sinks = d->sinks;
    }
    if (v->mask != CLATTN_MASK_NONE)
        return cli_variant_random_mask(&c->shape, v->mask, v->mask_dtype, v->mb, v->mh,
                                       seed + 13, d, &c->opts);
    return CLATTN_OK;
}

int verify_variant_make(size_t i, const clattn_options *base, uint64_t seed, verify_variant *c)
{
    const struct variant_spec *v = &specs[i];
    memset(c, 0, sizeof *c);
    c->data.mask_keep = 1.0;
    c->name = v->name;
    c->shape = (clattn_shape){ v->b, v->h, v->hkv, v->nq, v->nk, v->d, v->dtype };
    c->opts = *base;
    c->opts.causal = v->causal;
    c->opts.split_kv = v->split;
    c->opts.scale = v->scale;
    c->opts.softcap = v->softcap;
    c->opts.window_left = v->wl;
    c->opts.window_right = v->wr;
    c->opts.head_dim_v = v->dv != v->d ? v->dv : 0;
    c->opts.kv_lens = NULL;
    memcpy(c->kv_lens, v->kv_lens, sizeof c->kv_lens);
    memcpy(c->q_lens, v->q_lens, sizeof c->q_lens);
    for (size_t b = 0; b < 4; b++) {
        if (v->kv_lens[b])
            c->opts.kv_lens = c->kv_lens;
        if (v->q_lens[b])
            c->opts.q_lens = c->q_lens;
    }
    c->cache = (cli_cache){ v->kt, v->vt, v->page, v->packed };
    c->lse = v->lse;
    int rc = draw_tensors(v, seed, c);
    c->ref = c->opts;
    if (v->snippet == SNIPPET_SOFTCAP) {
        c->opts.score_mod = softcap_snippet;
        c->ref.softcap = 1.5f;
    } else if (v->snippet == SNIPPET_WINDOW) {
        c->opts.mask_mod = window_snippet;
        c->ref.window_left = 7;
        c->ref.window_right = 2;
    }
    return rc;
}

/* ----------------------------------------------------------------- a run */

struct host_arrays {
    void *q, *k, *v, *o;
    float *lse;
    double *ref, *ref_lse;
};

static void host_free(struct host_arrays *h)
{
    free(h->q), free(h->k), free(h->v), free(h->o), free(h->lse), free(h->ref),
        free(h->ref_lse);
}

/* The call on device buffers of the tool's own, O and the LSE poisoned
 * (all-ones bytes: NaN in every dtype) and read back. */
static int run_device(clattn_ctx *ctx, const verify_variant *c, const clattn_options *opts,
                      const void *const in[3], const size_t bytes[5], void *o, float *lse,
                      verify_result *r)
{
    cl_context cl = clattn_cl_context(ctx);
    cl_command_queue queue = clattn_cl_queue(ctx);
    cl_mem b[5] = { NULL, NULL, NULL, NULL, NULL };
    cl_int err = CL_SUCCESS;
    int rc = CLATTN_OK;
    for (int i = 0; i < (c->lse ? 5 : 4) && err == CL_SUCCESS; i++)
        b[i] = clCreateBuffer(cl, i < 3 ? CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR
                                        : CL_MEM_READ_WRITE,
                              bytes[i], i < 3 ? (void *)in[i] : NULL, &err);
    const cl_uchar poison = 0xff;
    for (int i = 3; i < (c->lse ? 5 : 4) && err == CL_SUCCESS; i++)
        err = clEnqueueFillBuffer(queue, b[i], &poison, 1, 0, bytes[i], 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clFinish(queue);
    if (err != CL_SUCCESS) {
        rc = cli_cl_status(err);
        goto out;
    }
    clattn_extras ex = CLATTN_EXTRAS_INIT;
    ex.lse = b[4];
    const double t0 = cli_now();
    rc = clattn_attention_ex_cl(ctx, &c->shape, opts, b[0], b[1], b[2], b[3], &ex, 0, NULL,
                                NULL, &r->info);
    if (rc < 0)
        goto out;
    if (clFinish(queue) != CL_SUCCESS) {
        rc = CLATTN_EDEVLOST;
        goto out;
    }
    r->seconds = cli_now() - t0;
    err = clEnqueueReadBuffer(queue, b[3], CL_TRUE, 0, bytes[3], o, 0, NULL, NULL);
    if (err == CL_SUCCESS && c->lse)
        err = clEnqueueReadBuffer(queue, b[4], CL_TRUE, 0, bytes[4], lse, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        rc = CLATTN_EDEVLOST;
out:
    cli_release_buffers(b, 5);
    return rc;
}

/* O against the reference (NaN in O where the reference has none is an
 * element left unwritten), and the LSE: infinite rows equal, finite ones
 * within 2e-3 (1 + |LSE|). */
static int compare(const verify_variant *c, const struct host_arrays *h, size_t dv,
                   verify_result *r)
{
    clattn_shape o_shape = c->shape; /* O as the comparison reads it: d_v columns */
    o_shape.head_dim = dv;
    int rc = clattn_compare(&o_shape, h->o, h->ref, &r->max_abs, &r->rel_l2, &r->unwritten);
    if (rc < 0)
        return rc;
    clattn_tolerance(c->shape.dtype, &r->tol_max_abs, &r->tol_rel_l2);
    r->lse_ok = 1;
    const size_t rows = c->shape.batch * c->shape.heads * c->shape.q_len;
    for (size_t i = 0; c->lse && i < rows; i++) {
        const double want = h->ref_lse[i], got = h->lse[i];
        const double err = isinf(want) ? (got == want ? 0.0 : INFINITY)
                                       : fabs(got - want) / (1.0 + fabs(want));
        if (!(err <= r->lse_max_err)) /* NaN too */
            r->lse_max_err = isnan(err) ? INFINITY : err;
    }
    r->lse_ok = r->lse_max_err <= 2e-3;
    r->passed = r->unwritten == 0 && r->max_abs <= r->tol_max_abs &&
                r->rel_l2 <= r->tol_rel_l2 && r->lse_ok;
    return CLATTN_OK;
}

int verify_variant_run(clattn_ctx *ctx, const verify_variant *c, clattn_path path, uint64_t seed,
                       verify_result *r)
{
    memset(r, 0, sizeof *r);
    const clattn_shape *s = &c->shape;
    const size_t d = s->head_dim, dv = c->opts.head_dim_v ? c->opts.head_dim_v : d;
    const size_t e = clattn_dtype_size(s->dtype), rows = s->batch * s->heads * s->q_len;
    const size_t kv_rows = s->batch * s->kv_heads * s->kv_len;
    const size_t bytes[5] = { rows * d * e, kv_rows * d * e, kv_rows * dv * e, rows * dv * e,
                              rows * sizeof(float) };
    struct host_arrays h = { malloc(bytes[0]), malloc(bytes[1]), malloc(bytes[2]),
                             malloc(bytes[3]), malloc(bytes[4]),
                             malloc(rows * dv * sizeof(double)), malloc(rows * sizeof(double)) };
    int rc = CLATTN_ENOMEM;
    void *o = h.o;
    cli_cache_data cd;
    memset(&cd, 0, sizeof cd);
    if (!h.q || !h.k || !h.v || !h.o || !h.lse || !h.ref || !h.ref_lse)
        goto out;
    clattn_random_fill(h.q, rows * d, s->dtype, seed);
    clattn_random_fill(h.k, kv_rows * d, s->dtype, seed + 1);
    clattn_random_fill(h.v, kv_rows * dv, s->dtype, seed + 2);
    clattn_options opts = c->opts, ref = c->ref;
    opts.path = path;
    const void *in[3] = { h.q, h.k, h.v }, *kr = h.k, *vr = h.v;
    size_t dev_bytes[5] = { bytes[0], bytes[1], bytes[2], bytes[3], bytes[4] };
    if (cli_cache_any(&c->cache)) {
        /* The cache's forms of the drawn inputs: the device's quantized,
         * paged or packed, the reference's the same values plain. */
        rc = cli_cache_make(&c->cache, s, dv, h.q, h.k, h.v, c->opts.kv_lens, c->opts.q_lens,
                            &cd, &ref, &opts);
        if (rc < 0)
            goto out;
        kr = cd.k ? cd.k : h.k;
        vr = cd.v ? cd.v : h.v;
        in[0] = cd.dq ? cd.dq : h.q;
        in[1] = cd.dk ? cd.dk : kr;
        in[2] = cd.dv ? cd.dv : vr;
        dev_bytes[0] = cd.q_bytes;
        dev_bytes[1] = cd.kd_bytes;
        dev_bytes[2] = cd.vd_bytes;
        dev_bytes[3] = cd.o_bytes;
        if (cd.cu_q && !(o = malloc(cd.o_bytes))) {
            rc = CLATTN_ENOMEM;
            goto out;
        }
    }
    rc = run_device(ctx, c, &opts, in, dev_bytes, o, h.lse, r);
    if (rc < 0)
        goto out;
    if (o != h.o) /* packed: the rows back to their sequences */
        cli_cache_unpack_o(&cd, s, dv, o, h.o);
    rc = clattn_reference_ex(s, &ref, h.q, kr, vr, h.ref, h.ref_lse);
    if (rc == 0)
        rc = compare(c, &h, dv, r);
out:
    if (o != h.o)
        free(o);
    cli_cache_free(&cd);
    host_free(&h);
    return rc;
}
