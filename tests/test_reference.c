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
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
