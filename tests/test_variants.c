/* SPDX-License-Identifier: MIT */
/*
 * The attention variants on the device against the CPU reference: softcap,
 * ALiBi (per head and per sequence), sliding windows with both causal
 * alignments and per-sequence lengths, sinks, additive masks of each dtype
 * and broadcast, boolean masks, bf16 storage, d_v != d, and their
 * combinations with GQA, split-KV and the LSE; the custom score_mod and
 * mask_mod snippets bit for bit against the built-in variants they
 * reproduce, and a snippet that does not compile. Every fused kernel that
 * takes a case runs it (a kernel that does not says so with
 * CLATTN_EUNSUPPORTED), and the portable kernel must take every one. The
 * outputs are poisoned (NaN) first. Exits 77 without an OpenCL device.
 *
 * Without --full each kernel takes each case at one split, by turns (the
 * tiled kernel every fourth case); --full (the heavy suite): every case on
 * every kernel at every split.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "clattn/clattn.h"
#include "case_inputs.h"
#include "device_suite.h"

static clattn_ctx *ctx;
static int full;

/* One problem: the shape, the options (variants set by each case) and the
 * host arrays in the storage dtype. */
struct problem {
    clattn_shape s;
    clattn_options o;
    size_t dv;
    void *q, *k, *v;
    uint32_t kv_lens[4];
    float slopes[64], sinks[16];
    void *mask;
    const clattn_options *ref; /* what the reference computes instead of o (a
                                * snippet's built-in equal), or NULL */
};

static size_t esize(const clattn_shape *s)
{
    return clattn_dtype_size(s->dtype);
}

static void problem_init(struct problem *p, size_t b, size_t h, size_t hkv, size_t nq, size_t nk,
                         size_t d, size_t dv, clattn_dtype dt, clattn_causal causal, uint64_t seed)
{
    memset(p, 0, sizeof *p);
    case_shape(&p->s, &p->o, b, h, hkv, nq, nk, d, dv, dt, causal);
    p->dv = dv;
    const size_t e = esize(&p->s), nkv = b * hkv * nk;
    p->q = malloc(clattn_shape_q_elems(&p->s) * e);
    p->k = malloc(nkv * d * e);
    p->v = malloc(nkv * dv * e);
    assert_true(p->q && p->k && p->v);
    clattn_random_fill(p->q, clattn_shape_q_elems(&p->s), dt, seed);
    clattn_random_fill(p->k, nkv * d, dt, seed + 1);
    clattn_random_fill(p->v, nkv * dv, dt, seed + 2);
    for (size_t i = 0; i < 64; i++)
        p->slopes[i] = 0.05f * (float)(i % 7 + 1);
    for (size_t i = 0; i < 16; i++)
        p->sinks[i] = 0.3f * (float)i - 1.0f;
}

static void problem_free(struct problem *p)
{
    free(p->q);
    free(p->k);
    free(p->v);
    free(p->mask);
}

/* The kernel `kernel` (AUTO for the naive path) on `p` at `splits` against
 * the reference; returns 0, or 1 when the kernel does not take the case. */
static int run_case(const struct problem *p, clattn_path path, clattn_fused_kernel kernel,
                    uint32_t splits, const char *what)
{
    const clattn_shape *s = &p->s;
    const size_t rows = s->batch * s->heads * s->q_len, n = rows * p->dv, e = esize(s);
    void *out = malloc(n * e);
    float *lse = malloc(rows * sizeof *lse);
    double *ref = malloc(n * sizeof *ref), *ref_lse = malloc(rows * sizeof *ref_lse);
    assert_true(out && lse && ref && ref_lse);
    memset(out, 0xff, n * e); /* NaN: an element left unwritten fails */
    for (size_t i = 0; i < rows; i++)
        lse[i] = NAN;
    clattn_options o = p->o;
    o.path = path;
    o.fused_kernel = kernel;
    o.split_kv = splits;
    clattn_run_info info;
    int rc = clattn_attention_ex(ctx, s, &o, p->q, p->k, p->v, out, lse, &info);
    if (rc == CLATTN_EUNSUPPORTED) {
        free(out), free(lse), free(ref), free(ref_lse);
        return 1;
    }
    if (rc < 0)
        fail_msg("%s [%s]: %s: %s", what, clattn_fused_kernel_name(kernel), clattn_error_name(rc),
                 clattn_last_error_detail());
    assert_int_equal(clattn_reference_ex(s, p->ref ? p->ref : &p->o, p->q, p->k, p->v, ref,
                                         ref_lse), CLATTN_OK);
    double tol_abs, tol_rel;
    clattn_tolerance(s->dtype, &tol_abs, &tol_rel);
    double d2 = 0, r2 = 0, worst = 0;
    for (size_t i = 0; i < n; i++) {
        const double x = s->dtype == CLATTN_F32    ? ((const float *)out)[i]
                         : s->dtype == CLATTN_F16  ? clattn_f16_to_f32(((const uint16_t *)out)[i])
                                                   : clattn_bf16_to_f32(((const uint16_t *)out)[i]);
        if (isnan(x) != isnan(ref[i]))
            fail_msg("%s [%s]: element %zu is %g, the reference %g", what, info.kernel, i, x,
                     ref[i]);
        if (isnan(x))
            continue;
        const double err = fabs(x - ref[i]);
        worst = err > worst ? err : worst;
        d2 += err * err;
        r2 += ref[i] * ref[i];
    }
    const double rel = r2 > 0 ? sqrt(d2 / r2) : sqrt(d2);
    if (worst > tol_abs || rel > tol_rel)
        fail_msg("%s [%s, %u splits]: max error %.3g, rel_l2 %.3g (tolerance %.3g, %.3g)", what,
                 info.kernel, info.splits, worst, rel, tol_abs, tol_rel);
    for (size_t i = 0; i < rows; i++) {
        const double r = ref_lse[i], x = lse[i];
        if (isinf(r) ? x != r : !(fabs(x - r) <= 2e-3 * (1 + fabs(r))))
            fail_msg("%s [%s]: LSE of row %zu is %g, the reference %g", what, info.kernel, i, x, r);
    }
    free(out), free(lse), free(ref), free(ref_lse);
    return 0;
}

/* The case on every fused kernel (the portable kernel must take it) and
 * the naive path, at the library's split and at 3 chunks. */
/* Each case on every kernel at one split, without or with one by turns,
 * case by case (each build of a kernel is seconds on a CPU device); the
 * tiled kernel, a GPU's, on every fourth case; with --full every kernel at
 * three splits. The portable kernel must take every case. */
static void run_everywhere(const struct problem *p, const char *what)
{
    static const uint32_t splits[] = { 0, 3, 1 };
    static size_t turn;
    const size_t n_splits = full ? 3 : 2;
    clattn_kernel_info k;
    turn++;
    for (size_t i = 0; clattn_fused_kernel_info(i, &k) == 0; i++)
        for (size_t j = 0; j < n_splits; j++) {
            if (!full && ((turn + i + j) % 2 || (k.id == CLATTN_FUSED_TILED && turn % 4 != 0)))
                continue;
            if (run_case(p, CLATTN_PATH_FUSED, k.id, splits[j], what) && k.id == CLATTN_FUSED_PORTABLE)
                fail_msg("%s: the portable kernel does not take it: %s", what,
                         clattn_last_error_detail());
        }
    run_case(p, CLATTN_PATH_NAIVE, CLATTN_FUSED_AUTO, 0, what);
}

static const clattn_causal causals[] = { CLATTN_CAUSAL_NONE, CLATTN_CAUSAL_TOP_LEFT,
                                         CLATTN_CAUSAL_BOTTOM_RIGHT };

static void test_softcap(void **state)
{
    (void)state;
    for (int c = 0; c < 3; c++) {
        struct problem p;
        problem_init(&p, 2, 4, 2, 9, 70, 32, 32, c == 1 ? CLATTN_F16 : CLATTN_F32, causals[c],
                     10 + c);
        p.o.softcap = 0.5f; /* scores of up to ~2 (scale 1/sqrt(32), q.k up to 32): capped */
        p.o.scale = 0.4f;
        run_everywhere(&p, "softcap");
        problem_free(&p);
    }
}

static void test_alibi(void **state)
{
    (void)state;
    for (int c = 0; c < 3; c++) {
        struct problem p;
        problem_init(&p, 2, 4, 1, 7, 90, 24, 24, CLATTN_F32, causals[c], 20 + c);
        p.o.alibi_slopes = p.slopes;
        p.o.alibi_per_sequence = c == 2;
        run_everywhere(&p, c == 2 ? "ALiBi per sequence" : "ALiBi");
        problem_free(&p);
    }
}

static void test_windows(void **state)
{
    (void)state;
    static const int32_t sides[][2] = { { 2, 1 }, { 17, 0 }, { 40, -1 }, { -1, 5 }, { 0, 0 } };
    for (size_t w = 0; w < sizeof sides / sizeof sides[0]; w++) {
        for (int c = 0; c < 3; c++) {
            if (!full && (size_t)c != w % 3)
                continue; /* each window once, the causal alignments by turns */
            struct problem p;
            problem_init(&p, 2, 4, 2, 11, 150, 32, 32, CLATTN_F16, causals[c], 30 + w * 3 + c);
            p.o.window_left = sides[w][0];
            p.o.window_right = sides[w][1];
            p.kv_lens[0] = 150, p.kv_lens[1] = 37;
            p.o.kv_lens = p.kv_lens;
            char what[64];
            snprintf(what, sizeof what, "window (%d, %d), causal %d", sides[w][0], sides[w][1], c);
            run_everywhere(&p, what);
            problem_free(&p);
        }
    }
}

static void test_sinks(void **state)
{
    (void)state;
    struct problem p;
    problem_init(&p, 2, 4, 2, 6, 65, 32, 32, CLATTN_F32, CLATTN_CAUSAL_BOTTOM_RIGHT, 40);
    p.o.sinks = p.sinks;
    p.kv_lens[0] = 0, p.kv_lens[1] = 65; /* a sequence of no keys: zeros, LSE the sink */
    p.o.kv_lens = p.kv_lens;
    run_everywhere(&p, "sinks");
    problem_free(&p);
}

/* Additive masks of fp32, fp16 and bf16, broadcast over heads or batch,
 * -inf entries and rows that see nothing; then a boolean mask. */
static void test_masks(void **state)
{
    (void)state;
    for (int dt = 0; dt < 3; dt++) {
        struct problem p;
        const size_t nq = 8, nk = 77;
        problem_init(&p, 2, 4, 2, nq, nk, 32, 32, CLATTN_F32, causals[dt], 50 + dt);
        const size_t mb = dt == 1 ? 1 : 2, mh = dt == 1 ? 4 : 1, n = mb * mh * nq * nk;
        const clattn_dtype mdt = (clattn_dtype)dt;
        p.mask = malloc(n * 4);
        assert_non_null(p.mask);
        for (size_t i = 0; i < n; i++) {
            const size_t row = i / nk, j = i % nk;
            float x = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
            if ((i * 7919) % 5 == 0 || row % nq == 3) /* row 3 of each (b, h): all hidden */
                x = -INFINITY;
            (void)j;
            if (mdt == CLATTN_F32)
                ((float *)p.mask)[i] = x;
            else if (mdt == CLATTN_F16)
                ((uint16_t *)p.mask)[i] = clattn_f32_to_f16(x);
            else
                ((uint16_t *)p.mask)[i] = clattn_f32_to_bf16(x);
        }
        p.o.mask = (clattn_mask){ CLATTN_MASK_ADD, mdt, mb, mh, { 0, 0, 0, 0 }, p.mask };
        run_everywhere(&p, dt == 0 ? "fp32 mask" : dt == 1 ? "fp16 mask, per head" : "bf16 mask");
        problem_free(&p);
    }
    struct problem p;
    problem_init(&p, 2, 4, 1, 5, 60, 16, 16, CLATTN_F16, CLATTN_CAUSAL_NONE, 60);
    const size_t n = 2 * 4 * 5 * 60;
    p.mask = malloc(n);
    for (size_t i = 0; i < n; i++)
        ((uint8_t *)p.mask)[i] = (uint8_t)((i * 40503u) % 3 != 0);
    p.o.mask = (clattn_mask){ CLATTN_MASK_BOOL, CLATTN_F32, 2, 4, { 0, 0, 0, 0 }, p.mask };
    run_everywhere(&p, "boolean mask");
    problem_free(&p);
}

/* bf16 storage, and V of another head dimension than Q and K. */
static void test_bf16_and_dv(void **state)
{
    (void)state;
    struct problem p;
    problem_init(&p, 2, 4, 2, 9, 100, 64, 64, CLATTN_BF16, CLATTN_CAUSAL_BOTTOM_RIGHT, 70);
    run_everywhere(&p, "bf16");
    problem_free(&p);
    problem_init(&p, 1, 4, 1, 7, 80, 48, 24, CLATTN_F32, CLATTN_CAUSAL_TOP_LEFT, 71);
    run_everywhere(&p, "d = 48, d_v = 24");
    problem_free(&p);
    problem_init(&p, 1, 2, 1, 3, 40, 24, 40, CLATTN_F16, CLATTN_CAUSAL_NONE, 72);
    run_everywhere(&p, "d = 24, d_v = 40");
    problem_free(&p);
}

/* A window of `left` keys (right side 0), softcap 2, ALiBi, sinks, and
 * the second sequence `kv_len1` keys long: the built-in variants at once. */
static void set_variants_together(struct problem *p, int32_t left, uint32_t kv_len1)
{
    p->o.window_left = left;
    p->o.window_right = 0;
    p->o.softcap = 2.0f;
    p->o.alibi_slopes = p->slopes;
    p->o.sinks = p->sinks;
    p->kv_lens[0] = (uint32_t)p->s.kv_len, p->kv_lens[1] = kv_len1;
    p->o.kv_lens = p->kv_lens;
}

/* Everything at once: window + softcap + ALiBi + sinks + GQA + bottom-right
 * + kv_lens + split-KV + the LSE, in each dtype. */
static void test_combined(void **state)
{
    (void)state;
    for (int dt = 0; dt < 3; dt++) {
        struct problem p;
        problem_init(&p, 2, 8, 2, 6, 300, 32, 32, (clattn_dtype)dt, CLATTN_CAUSAL_BOTTOM_RIGHT,
                     80 + dt);
        set_variants_together(&p, 64, 129);
        run_everywhere(&p, "window + softcap + ALiBi + sinks");
        problem_free(&p);
    }
    /* Decoding: at most 8 packed rows per key/value head (the CPU kernel's
     * keys-across-lanes layout), with every built-in variant at once: a
     * window, softcap, ALiBi, sinks and an fp16 mask over the batch with
     * -inf entries; then a boolean mask. */
    struct problem p;
    problem_init(&p, 2, 8, 2, 2, 300, 64, 64, CLATTN_BF16, CLATTN_CAUSAL_BOTTOM_RIGHT, 90);
    set_variants_together(&p, 100, 77);
    const size_t n = 2 * 2 * 300;
    p.mask = malloc(n * 2);
    assert_non_null(p.mask);
    for (size_t i = 0; i < n; i++)
        ((uint16_t *)p.mask)[i] = clattn_f32_to_f16(
            (i * 7919) % 6 == 0 ? -INFINITY : (float)((i * 2654435761u) % 1000) / 400.0f - 1.2f);
    p.o.mask = (clattn_mask){ CLATTN_MASK_ADD, CLATTN_F16, 2, 1, { 0, 0, 0, 0 }, p.mask };
    run_everywhere(&p, "decode: window + softcap + ALiBi + sinks + mask");
    problem_free(&p);
    problem_init(&p, 1, 4, 4, 1, 200, 32, 32, CLATTN_F32, CLATTN_CAUSAL_NONE, 91);
    p.mask = malloc(4 * 200);
    assert_non_null(p.mask);
    for (size_t i = 0; i < 4 * 200; i++)
        ((uint8_t *)p.mask)[i] = (uint8_t)((i * 40503u) % 4 != 0);
    p.o.mask = (clattn_mask){ CLATTN_MASK_BOOL, CLATTN_F32, 1, 4, { 0, 0, 0, 0 }, p.mask };
    run_everywhere(&p, "decode: boolean mask");
    problem_free(&p);
}

/* The tensor-core kernels' shapes (d = 64, 128, 256; fp16 and bf16), which
 * the cases above, sized for CPU devices, mostly do not reach: each
 * variant alone and together on nv-wgmma and nv-mma, with GQA, two row
 * tiles (140 packed rows), partial key blocks, per-sequence lengths, both
 * alignments, one chunk and three, and the LSE; the 16-bit and boolean
 * masks twice, over 300 keys (rows off 16-byte boundaries: nv-wgmma's
 * loop that reads the bits) and 304 (its mask tile). A device without
 * those kernels (every CPU) skips it. */
static void test_tensor_core_shapes(void **state)
{
    (void)state;
    static const clattn_fused_kernel kernels[] = { CLATTN_FUSED_NV_WGMMA, CLATTN_FUSED_NV_MMA };
    enum { SOFTCAP, ALIBI, ALIBI_SEQ, WINDOW, SINKS, MASK_F32, MASK_F16, MASK_BF16, MASK_BOOL,
           TOGETHER, PLAIN, TILE_F16, TILE_BF16, TILE_BOOL, CASES };
    static const char *names[CASES] = { "softcap", "ALiBi", "ALiBi per sequence", "window",
                                        "sinks", "fp32 mask", "fp16 mask per head",
                                        "bf16 mask", "boolean mask", "all together", "plain",
                                        "fp16 mask per head, 304 keys", "bf16 mask, 304 keys",
                                        "boolean mask, 304 keys" };
    size_t ran = 0;
    for (int c = 0; c < CASES; c++) {
        const size_t d = c % 3 == 0 ? 128 : c % 3 == 1 ? 64 : 256;
        const clattn_dtype dt = c % 2 ? CLATTN_BF16 : CLATTN_F16;
        const int tile = c >= TILE_F16;
        const int mc = tile ? c - TILE_F16 + MASK_F16 : c; /* the mask case it repeats */
        struct problem p;
        const size_t nq = 70, nk = tile ? 304 : 300;
        problem_init(&p, 2, 4, 2, nq, nk, d, d, dt, causals[c % 3], 100 + (uint64_t)c);
        p.kv_lens[0] = 300, p.kv_lens[1] = c == SINKS ? 0 : 171;
        p.o.kv_lens = c % 4 == 1 || c == SINKS || c == TOGETHER ? p.kv_lens : NULL;
        if (c == SOFTCAP)
            p.o.softcap = 1.5f;
        if (c == ALIBI || c == ALIBI_SEQ) {
            p.o.alibi_slopes = p.slopes;
            p.o.alibi_per_sequence = c == ALIBI_SEQ;
        }
        if (c == WINDOW)
            p.o.window_left = 50, p.o.window_right = 10;
        if (c == SINKS)
            p.o.sinks = p.sinks;
        if (mc >= MASK_F32 && mc <= MASK_BOOL) {
            const size_t mh = mc == MASK_F16 ? 4 : 1, n = 2 * mh * nq * nk;
            const clattn_dtype mdt = mc == MASK_F16 ? CLATTN_F16 : mc == MASK_BF16 ? CLATTN_BF16
                                                                                   : CLATTN_F32;
            p.mask = malloc(n * 4);
            assert_non_null(p.mask);
            for (size_t i = 0; i < n; i++) {
                float x = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
                if ((i * 7919) % 5 == 0 || (i / nk) % nq == 3) /* row 3: all hidden */
                    x = -INFINITY;
                if (mc == MASK_BOOL)
                    ((uint8_t *)p.mask)[i] = x != -INFINITY;
                else if (mdt == CLATTN_F32)
                    ((float *)p.mask)[i] = x;
                else
                    ((uint16_t *)p.mask)[i] = mdt == CLATTN_F16 ? clattn_f32_to_f16(x)
                                                                : clattn_f32_to_bf16(x);
            }
            p.o.mask = (clattn_mask){ mc == MASK_BOOL ? CLATTN_MASK_BOOL : CLATTN_MASK_ADD, mdt,
                                      2, mh, { 0, 0, 0, 0 }, p.mask };
        }
        if (c == TOGETHER)
            set_variants_together(&p, 64, 129);
        for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++)
            for (uint32_t splits = 1; splits <= 3; splits += 2) {
                char what[96];
                snprintf(what, sizeof what, "%s, d = %zu, %s, causal %d", names[c], d,
                         dt == CLATTN_BF16 ? "bf16" : "fp16", c % 3);
                ran += !run_case(&p, CLATTN_PATH_FUSED, kernels[k], splits, what);
            }
        problem_free(&p);
    }
    if (!ran)
        skip(); /* neither kernel runs on this device */
}

/* The element i of an output of `dt` as raw bits (for bit-for-bit tests). */
static uint32_t bits(const void *out, size_t i, clattn_dtype dt)
{
    return dt == CLATTN_F32 ? ((const uint32_t *)out)[i] : ((const uint16_t *)out)[i];
}

/* The built-in variant and a snippet that computes the same, on each
 * kernel that takes snippets: equal bit for bit. */
static void same_as_snippet(const struct problem *p, clattn_options snippet, const char *what)
{
    const clattn_shape *s = &p->s;
    const size_t n = clattn_shape_q_elems(s), e = esize(s);
    void *a = malloc(n * e), *b = malloc(n * e);
    clattn_kernel_info k;
    size_t ran = 0;
    for (size_t i = 0; clattn_fused_kernel_info(i, &k) == 0; i++) {
        clattn_options o = p->o;
        o.path = CLATTN_PATH_FUSED;
        o.fused_kernel = k.id;
        snippet.path = o.path;
        snippet.fused_kernel = k.id;
        memset(a, 0xff, n * e);
        memset(b, 0xfe, n * e);
        int ra = clattn_attention(ctx, s, &o, p->q, p->k, p->v, a, NULL);
        int rb = clattn_attention(ctx, s, &snippet, p->q, p->k, p->v, b, NULL);
        if (rb == CLATTN_EUNSUPPORTED || ra == CLATTN_EUNSUPPORTED)
            continue;
        if (ra < 0 || rb < 0)
            fail_msg("%s [%s]: %s", what, k.name, clattn_last_error_detail());
        for (size_t x = 0; x < n; x++)
            if (bits(a, x, s->dtype) != bits(b, x, s->dtype))
                fail_msg("%s [%s]: element %zu differs (%08x against %08x)", what, k.name, x,
                         bits(a, x, s->dtype), bits(b, x, s->dtype));
        ran++;
    }
    assert_true(ran > 0);
    free(a);
    free(b);
}

static void test_snippets(void **state)
{
    (void)state;
    struct problem p;
    problem_init(&p, 1, 4, 2, 10, 90, 32, 32, CLATTN_F32, CLATTN_CAUSAL_NONE, 90);
    p.o.softcap = 1.5f;
    p.o.scale = 0.3f;
    clattn_options snip = p.o;
    snip.softcap = 0;
    snip.score_mod = "float clattn_score_mod(float s, uint b, uint h, uint q, uint k)\n"
                     "{ return 1.5f * clattn_tanh(s * (1.0f / 1.5f)); }";
    same_as_snippet(&p, snip, "softcap as score_mod");
    /* A window as mask_mod: the same keys, walked as the built-in window
     * walks them (the tile's span of visible keys, cl/fused/mask_spans.cl),
     * each score through the variants' one-at-a-time path where the
     * built-in takes a block's whole rows at once, so equal within the
     * tolerance: against the reference on every kernel at 1 and 3 chunks.
     * Without a causal mask the window aligns bottom-right: off = Nk - Nq
     * = 80. */
    p.o.softcap = 0;
    p.o.window_left = 7;
    p.o.window_right = 2;
    struct problem m = p;
    m.ref = &p.o;
    m.o.window_left = m.o.window_right = -1;
    m.o.mask_mod = "bool clattn_mask_mod(uint b, uint h, uint q, uint k)\n"
                   "{ const int at = (int)q + 80; return (int)k >= at - 7 && (int)k <= at + 2; }";
    clattn_kernel_info k;
    for (size_t i = 0; clattn_fused_kernel_info(i, &k) == 0; i++)
        for (uint32_t splits = 1; splits <= 3; splits += 2)
            run_case(&m, CLATTN_PATH_FUSED, k.id, splits, "window as mask_mod");
    /* Keys outside every tile's span are not read: K and V past key 200
     * are NaN, the mask_mod shows keys [3, 64) (a NaN key read and hidden
     * would still put 0 * NaN into P V), on every kernel that takes it, at
     * 1 and 3 chunks, a second call of the shape reusing the kept spans. */
    struct problem nan_tail;
    problem_init(&nan_tail, 2, 4, 2, 33, 400, 32, 32, CLATTN_F32, CLATTN_CAUSAL_NONE, 91);
    for (size_t bh = 0; bh < 2 * 2; bh++)
        for (size_t j = 200; j < 400; j++)
            for (size_t x = 0; x < 32; x++) {
                ((float *)nan_tail.k)[(bh * 400 + j) * 32 + x] = NAN;
                ((float *)nan_tail.v)[(bh * 400 + j) * 32 + x] = NAN;
            }
    nan_tail.o.mask_mod = "bool clattn_mask_mod(uint b, uint h, uint q, uint k)\n"
                          "{ return k >= 3u && k < 64u; }";
    /* The reference takes the same keys as a boolean mask. */
    uint8_t *shown = malloc(33 * 400);
    assert_non_null(shown);
    for (size_t i = 0; i < 33 * 400; i++)
        shown[i] = i % 400 >= 3 && i % 400 < 64;
    clattn_options as_mask = nan_tail.o;
    as_mask.mask_mod = NULL;
    as_mask.mask = (clattn_mask){ CLATTN_MASK_BOOL, CLATTN_F32, 1, 1, { 0, 0, 0, 0 }, shown };
    nan_tail.ref = &as_mask;
    size_t took = 0;
    for (size_t i = 0; clattn_fused_kernel_info(i, &k) == 0; i++)
        for (uint32_t splits = 1; splits <= 3; splits += 2)
            for (int again = 0; again < 2; again++)
                took += !run_case(&nan_tail, CLATTN_PATH_FUSED, k.id, splits,
                                  "keys past a mask_mod's span");
    assert_true(took >= 4); /* the portable and tiled kernels take snippets everywhere */
    /* The same keys shown by a mask tensor, boolean and additive (bf16, -inf
     * hiding): each call finds its spans, on every kernel. */
    uint16_t *added = malloc(33 * 400 * sizeof *added);
    assert_non_null(added);
    for (size_t i = 0; i < 33 * 400; i++)
        added[i] = clattn_f32_to_bf16(shown[i] ? 0.25f * (float)(i % 3) : -INFINITY);
    struct problem by_tensor = nan_tail;
    by_tensor.ref = NULL;
    by_tensor.o = as_mask;
    took = 0;
    for (int form = 0; form < 2; form++) {
        if (form == 1)
            by_tensor.o.mask = (clattn_mask){ CLATTN_MASK_ADD, CLATTN_BF16, 1, 1, { 0, 0, 0, 0 },
                                              added };
        for (size_t i = 0; clattn_fused_kernel_info(i, &k) == 0; i++)
            for (uint32_t splits = 1; splits <= 3; splits += 2)
                took += !run_case(&by_tensor, CLATTN_PATH_FUSED, k.id, splits,
                                  form ? "keys past an additive mask's span"
                                       : "keys past a boolean mask's span");
    }
    assert_true(took >= 12); /* portable, tiled and cpu take masks everywhere */
    free(added);
    free(shown);
    problem_free(&nan_tail);
    /* A snippet the compiler refuses: CLATTN_EBUILD with its log. */
    snip = p.o;
    snip.path = CLATTN_PATH_FUSED;
    snip.fused_kernel = CLATTN_FUSED_PORTABLE;
    snip.score_mod = "float clattn_score_mod(float s, uint b, uint h, uint q, uint k) { return s +; }";
    const size_t n = clattn_shape_q_elems(&p.s);
    float *out = malloc(n * 4);
    assert_int_equal(clattn_attention(ctx, &p.s, &snip, p.q, p.k, p.v, out, NULL), CLATTN_EBUILD);
    assert_non_null(strstr(clattn_last_error_detail(), "build log"));
    free(out);
    problem_free(&p);
}

int main(int argc, char **argv)
{
    full = device_suite_full(argc, argv);
    /* Longest first, so that --part 1/2 and 2/2 take about half each. */
    const struct CMUnitTest all[] = {
        cmocka_unit_test(test_combined), cmocka_unit_test(test_windows),
        cmocka_unit_test(test_masks),    cmocka_unit_test(test_alibi),
        cmocka_unit_test(test_softcap),  cmocka_unit_test(test_snippets),
        cmocka_unit_test(test_bf16_and_dv), cmocka_unit_test(test_sinks),
        cmocka_unit_test(test_tensor_core_shapes),
    };
    return device_suite_main_parts(&ctx, "test_variants", "test_variants [--full] [--part K/N]",
                                   all, sizeof all / sizeof all[0], argc, argv);
}
