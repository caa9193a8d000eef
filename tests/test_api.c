/* SPDX-License-Identifier: MIT */
/*
 * The API contract of the core, which needs no OpenCL: error codes and
 * messages, shape validation and overflow, defaults, the comparison and the
 * random inputs. Linked with the core library only; what needs a context is
 * in test_context.c.
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

#include "clattn/types.h"

static void test_error_table(void **state)
{
    (void)state;
    assert_string_equal(clattn_error_name(CLATTN_OK), "CLATTN_OK");
    assert_string_equal(clattn_error_name(CLATTN_EWOULDOOM), "CLATTN_EWOULDOOM");
    assert_string_equal(clattn_error_name(12345), "CLATTN_UNKNOWN");
    assert_string_equal(clattn_strerror(12345), "unknown error");
    /* Every code in the table has a distinct, non-empty message. */
    const int codes[] = {
#define X(name, value, msg) CLATTN_##name,
        CLATTN_ERRNO_MAP(X)
#undef X
    };
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        assert_true(codes[i] <= 0);
        assert_true(strlen(clattn_strerror(codes[i])) > 0);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(clattn_strerror(codes[i]), clattn_strerror(codes[j]));
    }
    assert_non_null(clattn_version());
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", CLATTN_VERSION_MAJOR, CLATTN_VERSION_MINOR,
             CLATTN_VERSION_PATCH);
    assert_string_equal(clattn_version(), want);
}

/* The library reports the API of the headers it was built with; the
 * macros take the number apart. */
static void test_api_version(void **state)
{
    (void)state;
    const unsigned v = clattn_api_version();
    assert_int_equal(v, CLATTN_API_VERSION);
    assert_int_equal(CLATTN_API_MAJOR_OF(v), CLATTN_API_VERSION_MAJOR);
    assert_int_equal(CLATTN_API_MINOR_OF(v), CLATTN_API_VERSION_MINOR);
    assert_true(CLATTN_API_VERSION_MAJOR >= 1); /* struct_size everywhere came with 1.0 */
}

static void test_shape_check(void **state)
{
    (void)state;
    clattn_shape ok = { 2, 8, 2, 100, 90, 64, CLATTN_F16 };
    assert_int_equal(clattn_shape_check(&ok), CLATTN_OK);
    assert_int_equal(clattn_shape_q_elems(&ok), 2u * 8 * 100 * 64);
    assert_int_equal(clattn_shape_kv_elems(&ok), 2u * 2 * 90 * 64);
    assert_int_equal(clattn_shape_check(NULL), CLATTN_EINVAL);
    clattn_shape s = ok;
    s.kv_heads = 3; /* 8 % 3 != 0 */
    assert_int_equal(clattn_shape_check(&s), CLATTN_EINVAL);
    assert_non_null(strstr(clattn_last_error_detail(), "multiple"));
    s = ok, s.q_len = 0;
    assert_int_equal(clattn_shape_check(&s), CLATTN_EINVAL);
    s = ok, s.head_dim = CLATTN_HEAD_DIM_MAX + 1;
    assert_int_equal(clattn_shape_check(&s), CLATTN_EUNSUPPORTED);
    s = ok, s.head_dim = CLATTN_HEAD_DIM_MAX; /* DeepSeek's MLA: 576 */
    assert_int_equal(clattn_shape_check(&s), CLATTN_OK);
    s = ok, s.dtype = CLATTN_BF16;
    assert_int_equal(clattn_shape_check(&s), CLATTN_OK);
    assert_int_equal(clattn_dtype_size(CLATTN_BF16), 2);
    s = ok, s.dtype = (clattn_dtype)7;
    assert_int_equal(clattn_shape_check(&s), CLATTN_EINVAL);
    s = ok, s.batch = SIZE_MAX / 2, s.heads = 4, s.kv_heads = 4;
    assert_int_equal(clattn_shape_check(&s), CLATTN_EOVERFLOW);
    s = ok, s.q_len = (size_t)1 << 40, s.kv_len = (size_t)1 << 40;
    assert_int_equal(clattn_shape_check(&s), CLATTN_EOVERFLOW);
    assert_int_equal(clattn_dtype_size(CLATTN_F32), 4);
    assert_int_equal(clattn_dtype_size(CLATTN_F16), 2);
    assert_int_equal(clattn_dtype_size((clattn_dtype)9), 0);
}

static void test_defaults(void **state)
{
    (void)state;
    clattn_options o;
    memset(&o, 0x5a, sizeof o);
    clattn_default_options(&o);
    assert_int_equal(o.causal, CLATTN_CAUSAL_NONE);
    assert_true(o.scale == 0.0f);
    assert_int_equal(o.path, CLATTN_PATH_AUTO);
    assert_int_equal(o.allow_oom, 0);
    assert_int_equal(o.use_clblast, 1);
    assert_int_equal(o.struct_size, sizeof o);
    clattn_default_options(NULL); /* must not crash */
    /* The reference reads options by the same rule as the device paths: a
     * struct never set up is refused, naming the function that sets it up. */
    clattn_shape s = { 1, 1, 1, 2, 2, 2, CLATTN_F32 };
    float x[4] = { 0.5f, -0.25f, 1, 0 };
    double out[4];
    o.struct_size = 3;
    assert_int_equal(clattn_reference(&s, &o, x, x, x, out), CLATTN_EINVAL);
    assert_non_null(strstr(clattn_last_error_detail(), "clattn_default_options"));
}

static void test_core_null_arguments(void **state)
{
    (void)state;
    clattn_shape s = { 1, 1, 1, 4, 4, 4, CLATTN_F32 };
    double m, r;
    assert_int_equal(clattn_compare(&s, NULL, NULL, &m, &r, NULL), CLATTN_EINVAL);
    assert_int_equal(clattn_random_fill(NULL, 4, CLATTN_F32, 1), CLATTN_EINVAL);
    assert_int_equal(clattn_random_fill(NULL, 0, CLATTN_F32, 1), CLATTN_OK);
    float x[4];
    assert_int_equal(clattn_random_fill(x, 4, (clattn_dtype)7, 1), CLATTN_EINVAL);
    assert_int_equal(clattn_shape_q_elems(NULL), 0);
    assert_int_equal(clattn_shape_kv_elems(NULL), 0);
    /* An entry clears the detail of an earlier failure. */
    assert_int_equal(clattn_shape_check(NULL), CLATTN_EINVAL);
    assert_true(clattn_last_error_detail()[0] != '\0');
    assert_int_equal(clattn_shape_check(&s), CLATTN_OK);
    assert_string_equal(clattn_last_error_detail(), "");
}

static void test_compare_flags_nan(void **state)
{
    (void)state;
    clattn_shape s = { 1, 1, 1, 2, 2, 2, CLATTN_F32 }; /* O has B*H*Nq*d = 4 elements */;
    float out[4] = { 1, 2, NAN, 4 };
    double ref[4] = { 1, 2, 3, 4 }, m, r;
    size_t nans;
    assert_int_equal(clattn_compare(&s, out, ref, &m, &r, &nans), CLATTN_OK);
    assert_int_equal(nans, 1);
    assert_true(isinf(m) && isinf(r));
    out[2] = 3.5f;
    assert_int_equal(clattn_compare(&s, out, ref, &m, &r, &nans), CLATTN_OK);
    assert_int_equal(nans, 0);
    assert_true(fabs(m - 0.5) < 1e-12);
    assert_true(fabs(r - 0.5 / sqrt(30.0)) < 1e-12);
}

static void test_random_fill(void **state)
{
    (void)state;
    float a[1000], b[1000];
    clattn_random_fill(a, 1000, CLATTN_F32, 42);
    clattn_random_fill(b, 1000, CLATTN_F32, 42);
    assert_memory_equal(a, b, sizeof a);
    double mean = 0;
    for (int i = 0; i < 1000; i++) {
        assert_true(a[i] >= -1.0f && a[i] < 1.0f && a[i] != 0.0f);
        mean += a[i];
    }
    assert_true(fabs(mean / 1000) < 0.1);
    clattn_random_fill(b, 1000, CLATTN_F32, 43);
    assert_memory_not_equal(a, b, sizeof a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_table),
        cmocka_unit_test(test_api_version),
        cmocka_unit_test(test_shape_check),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_compare_flags_nan),
        cmocka_unit_test(test_random_fill),
        cmocka_unit_test(test_core_null_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
