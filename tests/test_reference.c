/* SPDX-License-Identifier: MIT */
/*
 * The CPU reference against cases computed by hand, and the half-precision
 * conversions against exact bit patterns. Needs no OpenCL device.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "clattn/clattn.h"
#include "clattn/device.h"
#include "core/kv_type.h"

static clattn_options opts_with(clattn_causal causal, float scale)
{
    clattn_options o;
    clattn_default_options(&o);
    o.causal = causal;
    o.scale = scale;
    return o;
}

/* One query, two keys, d = 1: q = 1, k = (0, ln 3), scale 1. Scores 0 and
 * ln 3, so p = (1/4, 3/4) and O = v0/4 + 3 v1/4. */
static void test_two_keys(void **state)
{
    (void)state;
    clattn_shape s = { 1, 1, 1, 1, 2, 1, CLATTN_F32 };
    float q[1] = { 1.0f }, k[2] = { 0.0f, (float)log(3.0) }, v[2] = { 2.0f, -6.0f };
    double o[1];
    clattn_options opts = opts_with(CLATTN_CAUSAL_NONE, 1.0f);
    assert_int_equal(clattn_reference(&s, &opts, q, k, v, o), CLATTN_OK);
    assert_true(fabs(o[0] - (2.0 / 4 - 18.0 / 4)) < 1e-6);
}

/* Default scale is 1/sqrt(d): d = 4, q = k0 = (1,1,1,1), k1 = 0, so the
 * scores are 4/2 = 2 and 0: p = (e^2, 1) / (e^2 + 1). */
static void test_default_scale(void **state)
{
    (void)state;
    clattn_shape s = { 1, 1, 1, 1, 2, 4, CLATTN_F32 };
    float q[4] = { 1, 1, 1, 1 }, k[8] = { 1, 1, 1, 1, 0, 0, 0, 0 };
    float v[8] = { 1, 0, 0, 0, 0, 1, 0, 0 };
    double o[4];
    assert_int_equal(clattn_reference(&s, NULL, q, k, v, o), CLATTN_OK);
    double e2 = exp(2.0);
    assert_true(fabs(o[0] - e2 / (e2 + 1)) < 1e-7);
    assert_true(fabs(o[1] - 1 / (e2 + 1)) < 1e-7);
    assert_true(fabs(o[2]) < 1e-12 && fabs(o[3]) < 1e-12);
}

/* Causal alignments with Nq = 2, Nk = 3 and equal scores (q = 0): each query
 * averages the values it sees. Top-left: query 0 sees key 0, query 1 keys
 * 0-1. Bottom-right (offset 1): query 0 sees keys 0-1, query 1 keys 0-2. */
static void test_causal_alignments(void **state)
{
    (void)state;
    clattn_shape s = { 1, 1, 1, 2, 3, 1, CLATTN_F32 };
    float q[2] = { 0, 0 }, k[3] = { 1, 2, 3 }, v[3] = { 3, 6, 12 };
    double o[2];
    clattn_options tl = opts_with(CLATTN_CAUSAL_TOP_LEFT, 1.0f);
    assert_int_equal(clattn_reference(&s, &tl, q, k, v, o), CLATTN_OK);
    assert_true(fabs(o[0] - 3.0) < 1e-12 && fabs(o[1] - 4.5) < 1e-12);
    clattn_options br = opts_with(CLATTN_CAUSAL_BOTTOM_RIGHT, 1.0f);
    assert_int_equal(clattn_reference(&s, &br, q, k, v, o), CLATTN_OK);
    assert_true(fabs(o[0] - 4.5) < 1e-12 && fabs(o[1] - 7.0) < 1e-12);
}

/* Bottom-right with Nq > Nk: query 0 of 3 over 1 key has offset -2 and sees
 * nothing, so its output is zero, not NaN. */
static void test_row_without_keys_is_zero(void **state)
{
    (void)state;
    clattn_shape s = { 1, 1, 1, 3, 1, 2, CLATTN_F32 };
    float q[6] = { 1, 2, 3, 4, 5, 6 }, k[2] = { 1, 1 }, v[2] = { 7, 8 };
    double o[6];
    clattn_options br = opts_with(CLATTN_CAUSAL_BOTTOM_RIGHT, 0.0f);
    assert_int_equal(clattn_reference(&s, &br, q, k, v, o), CLATTN_OK);
    assert_true(o[0] == 0.0 && o[1] == 0.0 && o[2] == 0.0 && o[3] == 0.0);
    assert_true(o[4] == 7.0 && o[5] == 8.0);
}

/* Grouped-query heads: H = 2 over Hkv = 1 read the same K and V; with one
 * key the output of every head is that key's value row. */
static void test_gqa_head_mapping(void **state)
{
    (void)state;
    clattn_shape s = { 2, 2, 1, 1, 1, 1, CLATTN_F32 };
    float q[4] = { 1, 2, 3, 4 }, k[2] = { 1, 1 }, v[2] = { 5, 9 };
    double o[4];
    assert_int_equal(clattn_reference(&s, NULL, q, k, v, o), CLATTN_OK);
    /* batch 0's heads read v = 5, batch 1's read v = 9 */
    assert_true(o[0] == 5.0 && o[1] == 5.0 && o[2] == 9.0 && o[3] == 9.0);
}

/* fp16 inputs are decoded exactly: 0x3c00 = 1, 0xc000 = -2, 0x3800 = 0.5. */
static void test_fp16_inputs(void **state)
{
    (void)state;
    clattn_shape s = { 1, 1, 1, 1, 1, 2, CLATTN_F16 };
    uint16_t q[2] = { 0x3c00, 0x3c00 }, k[2] = { 0x3c00, 0x3c00 }, v[2] = { 0xc000, 0x3800 };
    double o[2];
    assert_int_equal(clattn_reference(&s, NULL, q, k, v, o), CLATTN_OK);
    assert_true(o[0] == -2.0 && o[1] == 0.5);
}

static void test_half_conversion(void **state)
{
    (void)state;
    assert_int_equal(clattn_f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(clattn_f32_to_f16(-2.0f), 0xc000);
    assert_int_equal(clattn_f32_to_f16(65504.0f), 0x7bff);
    assert_int_equal(clattn_f32_to_f16(65520.0f), 0x7c00);     /* rounds to inf */
    assert_int_equal(clattn_f32_to_f16(0x1p-24f), 0x0001);      /* smallest subnormal */
    assert_int_equal(clattn_f32_to_f16(0x1p-25f), 0x0000);      /* ties to even: 0 */
    assert_int_equal(clattn_f32_to_f16(1.0f + 0x1p-11f), 0x3c00); /* tie, even stays */
    assert_int_equal(clattn_f32_to_f16(1.0f + 0x3p-11f), 0x3c02); /* tie, odd rounds up */
    assert_true(clattn_f32_to_f16(NAN) & 0x200);
    assert_true(clattn_f16_to_f32(0x0001) == 0x1p-24f);
    assert_true(clattn_f16_to_f32(0x7bff) == 65504.0f);
    assert_true(isinf(clattn_f16_to_f32(0xfc00)));
    /* Every finite half survives a round trip. */
    for (uint32_t h = 0; h < 0x10000; h++)
        if ((h & 0x7c00) != 0x7c00)
            assert_int_equal(clattn_f32_to_f16(clattn_f16_to_f32((uint16_t)h)), h);
}

/* bfloat16: exact bit patterns, rounding to nearest even, NaN kept. */
static void test_bf16_conversion(void **state)
{
    (void)state;
    assert_int_equal(clattn_f32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(clattn_f32_to_bf16(-2.0f), 0xc000);
    assert_true(clattn_bf16_to_f32(0x3f80) == 1.0f);
    /* 1 + 2^-8 is half-way between 1 and 1 + 2^-7: to even, 1. */
    assert_int_equal(clattn_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
    assert_int_equal(clattn_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
    assert_int_equal(clattn_f32_to_bf16(3.0e38f), 0x7f62); /* 0x7f61b1e6: the low half passes 0x8000 */
    assert_int_equal(clattn_f32_to_bf16(3.4e38f), 0x7f80); /* rounds past the largest: inf */
    assert_true(isnan(clattn_bf16_to_f32(clattn_f32_to_bf16(NAN))));
    assert_true(isinf(clattn_bf16_to_f32(clattn_f32_to_bf16(INFINITY))));
}

/* Softcap on one query and two keys: scores 0 and 3 become 0 and
 * c tanh(3 / c), c = 2. */
/* fp8 e4m3 against the nearest of the 254 finite codes by search: every
 * code round-trips, ties (the midpoints) go to the even code, a float just
 * either side of a midpoint goes to its own side, and 448 saturates. */
static uint8_t fp8_by_search(float x)
{
    uint8_t best = 0;
    for (int c = 0; c < 0x7f; c++) {
        const float v = kv_fp8_to_float((uint8_t)c), b = kv_fp8_to_float(best);
        const float dv = fabsf(fabsf(x) - v), db = fabsf(fabsf(x) - b);
        if (dv < db || (dv == db && !(c & 1)))
            best = (uint8_t)c;
    }
    return (uint8_t)(signbit(x) ? 0x80 | best : best);
}

static void test_fp8_conversion(void **state)
{
    (void)state;
    for (int c = 0; c < 256; c++)
        if ((c & 0x7f) != 0x7f)
            assert_int_equal(kv_float_to_fp8(kv_fp8_to_float((uint8_t)c)), c);
    for (int c = 0; c < 0x7e; c++) {
        const float lo = kv_fp8_to_float((uint8_t)c), hi = kv_fp8_to_float((uint8_t)(c + 1));
        const float mid = 0.5f * (lo + hi);
        const float probes[] = { mid, nextafterf(mid, 0.0f), nextafterf(mid, INFINITY), -mid };
        for (size_t i = 0; i < 4; i++)
            assert_int_equal(kv_float_to_fp8(probes[i]), fp8_by_search(probes[i]));
    }
    assert_int_equal(kv_float_to_fp8(448.0f), 0x7e);
    assert_int_equal(kv_float_to_fp8(1e6f), 0x7e);
    assert_int_equal(kv_float_to_fp8(-INFINITY), 0xfe);
    assert_int_equal(kv_float_to_fp8(NAN), 0x7f);
    assert_int_equal(kv_float_to_fp8(-0.0f), 0x80);
    assert_int_equal(kv_float_to_fp8(0x1p-10f), 0x00); /* half of 2^-9: to even, zero */
    assert_true(kv_fp8_to_float(0x01) == 0x1p-9f && kv_fp8_to_float(0x7e) == 448.0f);
}

static void test_softcap(void **state)
{
    (void)state;
    clattn_shape s = { 1, 1, 1, 1, 2, 1, CLATTN_F32 };
    float q[1] = { 1.0f }, k[2] = { 0.0f, 3.0f }, v[2] = { 1.0f, 0.0f };
    double o[1], lse[1];
    clattn_options opts = opts_with(CLATTN_CAUSAL_NONE, 1.0f);
    opts.softcap = 2.0f;
    assert_int_equal(clattn_reference_ex(&s, &opts, q, k, v, o, lse), CLATTN_OK);
    const double capped = 2.0 * tanh(1.5);
    assert_true(fabs(o[0] - 1.0 / (1.0 + exp(capped))) < 1e-12);
    assert_true(fabs(lse[0] - log(1.0 + exp(capped))) < 1e-12);
    opts.softcap = -1.0f;
    assert_int_equal(clattn_reference(&s, &opts, q, k, v, o), CLATTN_EINVAL);
    opts.softcap = INFINITY;
    assert_int_equal(clattn_reference(&s, &opts, q, k, v, o), CLATTN_EINVAL);
}

/* Random inputs of a shape with every variant's tensors. */
struct problem {
    clattn_shape s;
    float q[2 * 4 * 6 * 5], k[2 * 2 * 9 * 5], v[2 * 2 * 9 * 5];
};

static void problem_fill(struct problem *p)
{
    p->s = (clattn_shape){ 2, 4, 2, 6, 9, 5, CLATTN_F32 };
    clattn_random_fill(p->q, sizeof p->q / 4, CLATTN_F32, 1);
    clattn_random_fill(p->k, sizeof p->k / 4, CLATTN_F32, 2);
    clattn_random_fill(p->v, sizeof p->v / 4, CLATTN_F32, 3);
}

static void assert_same(const double *a, const double *b, size_t n, double tol)
{
    for (size_t i = 0; i < n; i++)
        if (!(fabs(a[i] - b[i]) <= tol || (isinf(a[i]) && a[i] == b[i])))
            fail_msg("element %zu: %.17g against %.17g", i, a[i], b[i]);
}

/* The reference gives the same rows under `a` as under `b` on p's inputs,
 * within `tol`, and the same LSE where `with_lse`. */
static void assert_same_rows(const struct problem *p, const clattn_options *a,
                             const clattn_options *b, double tol, int with_lse)
{
    double got[2 * 4 * 6 * 5], want[2 * 4 * 6 * 5], lse_got[2 * 4 * 6], lse_want[2 * 4 * 6];
    assert_int_equal(clattn_reference_ex(&p->s, a, p->q, p->k, p->v, got,
                                         with_lse ? lse_got : NULL), CLATTN_OK);
    assert_int_equal(clattn_reference_ex(&p->s, b, p->q, p->k, p->v, want,
                                         with_lse ? lse_want : NULL), CLATTN_OK);
    assert_same(got, want, sizeof got / sizeof got[0], tol);
    if (with_lse)
        assert_same(lse_got, lse_want, sizeof lse_got / sizeof lse_got[0], tol);
}

/* Independent forms of the same function: a sliding window is the boolean
 * mask of its keys, ALiBi the additive mask of its biases (bottom-right:
 * i + Nk - Nq - j), a sink one more key of score `sink` and value 0. Both
 * causal alignments, a ragged kv_lens. */
static void test_variants_against_masks(void **state)
{
    (void)state;
    struct problem p;
    problem_fill(&p);
    const size_t nq = 6, nk = 9;
    uint8_t keep[2 * 4 * 6 * 9];
    float bias[2 * 4 * 6 * 9];
    const uint32_t kv_lens[2] = { 9, 5 };
    for (int causal = 0; causal < 3; causal++) {
        clattn_options win = opts_with((clattn_causal)causal, 0.7f), masked = win;
        win.window_left = 2;
        win.window_right = 1;
        win.kv_lens = masked.kv_lens = kv_lens;
        for (size_t b = 0; b < 2; b++)
            for (size_t h = 0; h < 4; h++)
                for (size_t i = 0; i < nq; i++)
                    for (size_t j = 0; j < nk; j++) {
                        const long off = causal == CLATTN_CAUSAL_TOP_LEFT
                                             ? 0 : (long)kv_lens[b] - (long)nq;
                        const long at = (long)i + off;
                        keep[((b * 4 + h) * nq + i) * nk + j] =
                            (long)j >= at - 2 && (long)j <= at + 1;
                    }
        masked.mask = (clattn_mask){ CLATTN_MASK_BOOL, CLATTN_F32, 2, 4, { 0, 0, 0, 0 }, keep };
        assert_same_rows(&p, &win, &masked, 1e-14, 1);

        /* ALiBi with slopes per (b, h) against its additive mask, broadcast
         * over nothing; then one slope per head against a mask broadcast
         * over the batch (aligned with Nk - Nq, lengths left whole). */
        float slopes[8];
        for (int i = 0; i < 8; i++)
            slopes[i] = 0.1f * (float)(i + 1);
        clattn_options al = opts_with((clattn_causal)causal, 0.7f), add = al;
        al.alibi_slopes = slopes;
        al.alibi_per_sequence = 1;
        for (size_t b = 0; b < 2; b++)
            for (size_t h = 0; h < 4; h++)
                for (size_t i = 0; i < nq; i++)
                    for (size_t j = 0; j < nk; j++) {
                        const long off = causal == CLATTN_CAUSAL_TOP_LEFT ? 0 : (long)(nk - nq);
                        bias[((b * 4 + h) * nq + i) * nk + j] =
                            -slopes[b * 4 + h] * (float)labs((long)i + off - (long)j);
                    }
        add.mask = (clattn_mask){ CLATTN_MASK_ADD, CLATTN_F32, 2, 4, { 0, 0, 0, 0 }, bias };
        assert_same_rows(&p, &al, &add, 1e-6, 1);
        al.alibi_per_sequence = 0;
        add.mask.batch = 1; /* the first batch's biases serve both */
        assert_same_rows(&p, &al, &add, 1e-6, 0);
    }
}

/* A sink is a key every row sees, of score `sink` and value 0: one more
 * key with k = 0 (score 0) and an additive mask of `sink` on it gives the
 * same rows and LSE. A row that sees nothing else outputs zeros, LSE the
 * sink. */
static void test_sinks_as_a_key(void **state)
{
    (void)state;
    const clattn_shape s = { 1, 2, 1, 3, 4, 2, CLATTN_F32 }, s1 = { 1, 2, 1, 3, 5, 2, CLATTN_F32 };
    float q[12], k[8], v[8], k1[10], v1[10], add[2 * 3 * 5];
    clattn_random_fill(q, 12, CLATTN_F32, 5);
    clattn_random_fill(k, 8, CLATTN_F32, 6);
    clattn_random_fill(v, 8, CLATTN_F32, 7);
    for (int j = 0; j < 10; j++) { /* key 4 is the sink */
        k1[j] = j < 8 ? k[j] : 0.0f;
        v1[j] = j < 8 ? v[j] : 0.0f;
    }
    const float sinks[2] = { 0.5f, -1.25f };
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 5; j++)
                add[(h * 3 + i) * 5 + j] = j == 4 ? sinks[h] : 0.0f;
    clattn_options with = opts_with(CLATTN_CAUSAL_NONE, 0.9f), key = with;
    with.sinks = sinks;
    key.mask = (clattn_mask){ CLATTN_MASK_ADD, CLATTN_F32, 1, 2, { 0, 0, 0, 0 }, add };
    double got[12], want[12], lg[6], lw[6];
    assert_int_equal(clattn_reference_ex(&s, &with, q, k, v, got, lg), CLATTN_OK);
    assert_int_equal(clattn_reference_ex(&s1, &key, q, k1, v1, want, lw), CLATTN_OK);
    assert_same(got, want, 12, 1e-14);
    assert_same(lg, lw, 6, 1e-14);
    const uint32_t none[1] = { 0 };
    with.kv_lens = none;
    assert_int_equal(clattn_reference_ex(&s, &with, q, k, v, got, lg), CLATTN_OK);
    for (int i = 0; i < 12; i++)
        assert_true(got[i] == 0.0);
    assert_true(lg[0] == 0.5 && lg[3] == -1.25);
}

/* An additive mask's -inf hides its key (a fully hidden row is zeros, LSE
 * -inf), a large finite value does not; fp16 and bf16 masks read as their
 * values; d_v != d reads V and writes O with d_v columns. */
static void test_mask_kinds_and_dv(void **state)
{
    (void)state;
    const clattn_shape s = { 1, 1, 1, 2, 3, 2, CLATTN_F32 };
    float q[4] = { 1, 0, 0, 1 }, k[6] = { 1, 0, 0, 1, 1, 1 }, v[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
    float add[6] = { -INFINITY, -INFINITY, -INFINITY, 0, 0, -INFINITY };
    clattn_options o = opts_with(CLATTN_CAUSAL_NONE, 1.0f);
    o.head_dim_v = 3;
    o.mask = (clattn_mask){ CLATTN_MASK_ADD, CLATTN_F32, 1, 1, { 0, 0, 0, 0 }, add };
    double out[6], lse[2];
    assert_int_equal(clattn_reference_ex(&s, &o, q, k, v, out, lse), CLATTN_OK);
    for (int x = 0; x < 3; x++)
        assert_true(out[x] == 0.0);
    assert_true(lse[0] == -INFINITY);
    /* Row 1 sees keys 0 and 1 with scores 0 and 1: p = (1, e) / (1 + e). */
    const double e = exp(1.0);
    for (int x = 0; x < 3; x++)
        assert_true(fabs(out[3 + x] - (v[x] + e * v[3 + x]) / (1 + e)) < 1e-12);
    uint16_t h16[6], b16[6];
    for (int i = 0; i < 6; i++) {
        h16[i] = clattn_f32_to_f16(add[i]);
        b16[i] = clattn_f32_to_bf16(add[i]);
    }
    double again[6];
    o.mask.dtype = CLATTN_F16;
    o.mask.host = h16;
    assert_int_equal(clattn_reference_ex(&s, &o, q, k, v, again, NULL), CLATTN_OK);
    assert_same(out, again, 6, 0);
    o.mask.dtype = CLATTN_BF16;
    o.mask.host = b16;
    assert_int_equal(clattn_reference_ex(&s, &o, q, k, v, again, NULL), CLATTN_OK);
    assert_same(out, again, 6, 0);
    /* What the checks refuse. */
    o.mask.dtype = (clattn_dtype)9;
    assert_int_equal(clattn_reference(&s, &o, q, k, v, out), CLATTN_EINVAL);
    o.mask.dtype = CLATTN_F32;
    o.mask.heads = 2; /* 1 or H = 1 */
    assert_int_equal(clattn_reference(&s, &o, q, k, v, out), CLATTN_EINVAL);
    o.mask.heads = 1;
    o.mask.host = NULL;
    assert_int_equal(clattn_reference(&s, &o, q, k, v, out), CLATTN_EINVAL);
    o.mask.kind = CLATTN_MASK_NONE;
    o.window_left = -2;
    assert_int_equal(clattn_reference(&s, &o, q, k, v, out), CLATTN_EINVAL);
    o.window_left = -1;
    o.head_dim_v = 513;
    assert_int_equal(clattn_reference(&s, &o, q, k, v, out), CLATTN_EUNSUPPORTED);
}

/* ggml's slopes: 8 heads with max_bias 8 are 2^-1 .. 2^-8; 12 heads take
 * the 8 of n = 8, then m1 = 2^-0.5 to the odd powers. */
static void test_alibi_slopes(void **state)
{
    (void)state;
    float sl[12];
    assert_int_equal(clattn_alibi_slopes(8.0f, 8, sl), CLATTN_OK);
    for (int h = 0; h < 8; h++)
        assert_true(fabsf(sl[h] - ldexpf(1.0f, -(h + 1))) < 1e-7f);
    assert_int_equal(clattn_alibi_slopes(8.0f, 12, sl), CLATTN_OK);
    for (int h = 8; h < 12; h++)
        assert_true(fabs(sl[h] - pow(2.0, -0.5 * (2 * (h - 8) + 1))) < 1e-7);
    assert_int_equal(clattn_alibi_slopes(0.0f, 8, sl), CLATTN_EINVAL);
    assert_int_equal(clattn_alibi_slopes(8.0f, 0, sl), CLATTN_EINVAL);
    assert_int_equal(clattn_alibi_slopes(8.0f, 8, NULL), CLATTN_EINVAL);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    clattn_shape s = { 1, 1, 1, 1, 1, 1, CLATTN_F32 };
    float x[1] = { 1 };
    double o[1];
    assert_int_equal(clattn_reference(NULL, NULL, x, x, x, o), CLATTN_EINVAL);
    assert_int_equal(clattn_reference(&s, NULL, NULL, x, x, o), CLATTN_EINVAL);
    assert_int_equal(clattn_reference(&s, NULL, x, x, x, NULL), CLATTN_EINVAL);
    s.head_dim = 0;
    assert_int_equal(clattn_reference(&s, NULL, x, x, x, o), CLATTN_EINVAL);
}

/* clattn_reference_rows gives clattn_reference_ex's rows bit for bit, with
 * every variant and the lengths; rows outside the shape are refused. */
static void test_reference_rows(void **state)
{
    (void)state;
    const clattn_shape s = { 2, 4, 2, 9, 40, 16, CLATTN_F32 };
    const size_t dv = 8;
    float q[2 * 4 * 9 * 16], k[2 * 2 * 40 * 16], v[2 * 2 * 40 * 8], slopes[4], sinks[4];
    double all[2 * 4 * 9 * 8], lse[2 * 4 * 9], part[5 * 8], part_lse[5];
    clattn_random_fill(q, sizeof q / 4, CLATTN_F32, 1);
    clattn_random_fill(k, sizeof k / 4, CLATTN_F32, 2);
    clattn_random_fill(v, sizeof v / 4, CLATTN_F32, 3);
    clattn_random_fill(sinks, 4, CLATTN_F32, 4);
    clattn_alibi_slopes(8.0f, 4, slopes);
    const uint32_t lens[2] = { 40, 13 };
    clattn_options o;
    clattn_default_options(&o);
    o.causal = CLATTN_CAUSAL_BOTTOM_RIGHT;
    o.head_dim_v = dv;
    o.window_left = 5;
    o.softcap = 1.5f;
    o.alibi_slopes = slopes;
    o.sinks = sinks;
    o.kv_lens = lens;
    assert_int_equal(clattn_reference_ex(&s, &o, q, k, v, all, lse), CLATTN_OK);
    for (size_t b = 0; b < 2; b++)
        for (size_t h = 0; h < 4; h++) {
            assert_int_equal(clattn_reference_rows(&s, &o, q, k, v, b, h, 3, 5, part, part_lse),
                             CLATTN_OK);
            const size_t row = (b * 4 + h) * 9 + 3;
            assert_memory_equal(part, all + row * dv, 5 * dv * sizeof *part);
            assert_memory_equal(part_lse, lse + row, 5 * sizeof *part_lse);
        }
    assert_int_equal(clattn_reference_rows(&s, &o, q, k, v, 2, 0, 0, 1, part, NULL), CLATTN_EINVAL);
    assert_int_equal(clattn_reference_rows(&s, &o, q, k, v, 0, 4, 0, 1, part, NULL), CLATTN_EINVAL);
    assert_int_equal(clattn_reference_rows(&s, &o, q, k, v, 0, 0, 5, 5, part, NULL), CLATTN_EINVAL);
    assert_int_equal(clattn_reference_rows(&s, &o, q, k, v, 0, 0, 9, 0, part, NULL), CLATTN_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_keys),
        cmocka_unit_test(test_default_scale),
        cmocka_unit_test(test_causal_alignments),
        cmocka_unit_test(test_row_without_keys_is_zero),
        cmocka_unit_test(test_gqa_head_mapping),
        cmocka_unit_test(test_fp16_inputs),
        cmocka_unit_test(test_half_conversion),
        cmocka_unit_test(test_bf16_conversion),
        cmocka_unit_test(test_fp8_conversion),
        cmocka_unit_test(test_softcap),
        cmocka_unit_test(test_variants_against_masks),
        cmocka_unit_test(test_sinks_as_a_key),
        cmocka_unit_test(test_mask_kinds_and_dv),
        cmocka_unit_test(test_alibi_slopes),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_reference_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
