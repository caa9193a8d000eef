/* SPDX-License-Identifier: MIT */
/*
 * Special values: NaN and infinities in Q, K and V, and scores beyond the
 * storage dtype's range, on every path and kernel the device runs, against
 * the CPU reference (whose semantics clattn/types.h documents; without
 * --full the kernels AUTO does not pick take one dtype each). An output
 * element passes when it is NaN exactly where the reference's is, and
 * otherwise within the dtype's tolerance of it (infinities equal). Exits 77
 * (skipped) when there is no OpenCL device.
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
#include "device_suite.h"

static clattn_ctx *ctx;

/* One problem's host arrays, in the storage dtype. */
struct problem {
    clattn_shape s;
    clattn_causal causal;
    void *q, *k, *v;
};

static void put(void *base, size_t i, clattn_dtype dt, float x)
{
    if (dt == CLATTN_F16)
        ((uint16_t *)base)[i] = clattn_f32_to_f16(x);
    else
        ((float *)base)[i] = x;
}

static float get(const void *base, size_t i, clattn_dtype dt)
{
    return dt == CLATTN_F16 ? clattn_f16_to_f32(((const uint16_t *)base)[i])
                            : ((const float *)base)[i];
}

/* Random inputs in [-1, 1) for B=1 H=2 Hkv=1 Nq=Nk=n d=16, scaled by `mag`. */
static void problem_init(struct problem *p, clattn_dtype dt, size_t n, clattn_causal causal,
                         float mag)
{
    p->s = (clattn_shape){ 1, 2, 1, n, n, 16, dt };
    p->causal = causal;
    const size_t nq = clattn_shape_q_elems(&p->s), nkv = clattn_shape_kv_elems(&p->s);
    const size_t e = clattn_dtype_size(dt);
    p->q = malloc(nq * e);
    p->k = malloc(nkv * e);
    p->v = malloc(nkv * e);
    assert_non_null(p->q);
    assert_non_null(p->k);
    assert_non_null(p->v);
    clattn_random_fill(p->q, nq, dt, 11);
    clattn_random_fill(p->k, nkv, dt, 12);
    clattn_random_fill(p->v, nkv, dt, 13);
    if (mag != 1.0f) {
        for (size_t i = 0; i < nq; i++)
            put(p->q, i, dt, get(p->q, i, dt) * mag);
        for (size_t i = 0; i < nkv; i++)
            put(p->k, i, dt, get(p->k, i, dt) * mag);
    }
}

static void problem_free(struct problem *p)
{
    free(p->q);
    free(p->k);
    free(p->v);
}

/* Runs `path` (and `kernel` on the fused path) and compares with the
 * reference; returns how many rows of the reference are NaN. */
static size_t run_and_compare(const struct problem *p, clattn_path path,
                              clattn_fused_kernel kernel, const char *what, double tol_abs)
{
    const clattn_shape *s = &p->s;
    const size_t n = clattn_shape_q_elems(s), d = s->head_dim;
    clattn_options o;
    clattn_default_options(&o);
    o.causal = p->causal;
    o.path = path;
    o.fused_kernel = kernel;
    void *out = malloc(n * clattn_dtype_size(s->dtype));
    double *ref = malloc(n * sizeof *ref);
    assert_non_null(out);
    assert_non_null(ref);
    clattn_run_info info;
    int rc = clattn_attention(ctx, s, &o, p->q, p->k, p->v, out, &info);
    if (rc < 0)
        fail_msg("%s: %s: %s", what, clattn_error_name(rc), clattn_last_error_detail());
    assert_int_equal(clattn_reference(s, &o, p->q, p->k, p->v, ref), CLATTN_OK);
    size_t nan_rows = 0;
    for (size_t i = 0; i < n; i++) {
        const double x = get(out, i, s->dtype), r = ref[i];
        nan_rows += i % d == 0 && isnan(r);
        if (isnan(r) != isnan(x))
            fail_msg("%s [%s]: element %zu (row %zu) is %g, the reference %g", what, info.kernel,
                     i, i / d, x, r);
        if (isnan(r))
            continue;
        if (isinf(r) ? x != r : fabs(x - r) > tol_abs * (1 + fabs(r)))
            fail_msg("%s [%s]: element %zu (row %zu) is %g, the reference %g", what, info.kernel,
                     i, i / d, x, r);
    }
    free(out);
    free(ref);
    return nan_rows;
}

/* --full (the heavy suite): every problem on every fused kernel. Without
 * it (the default suite, where each kernel build is seconds on a CPU
 * device) the kernel AUTO picks takes every problem and each other kernel
 * the problems of one storage dtype, fp32 and fp16 by the kernel's place
 * in the table: every kernel still meets every kind of special value. */
static int full;

static int runs_problem(const struct problem *p, size_t index, clattn_fused_kernel id)
{
    if (full)
        return 1;
    clattn_options o;
    clattn_default_options(&o);
    o.causal = p->causal;
    size_t bm, bn;
    clattn_fused_kernel picked = CLATTN_FUSED_AUTO;
    if (clattn_fused_tiles(ctx, &p->s, &o, &bm, &bn, &picked) == CLATTN_OK && picked == id)
        return 1;
    return (index + (p->s.dtype == CLATTN_F16)) % 2 == 0;
}

/* The naive path and the fused kernels this device runs for the problem
 * (runs_problem). `naive_tol` widens the naive path's tolerance: in fp16 it
 * holds S in half, an absolute error of |S| 2^-11 in the logits. */
static size_t check_paths(const struct problem *p, const char *what, double naive_tol)
{
    double tol;
    clattn_tolerance(p->s.dtype, &tol, NULL);
    size_t nan_rows = run_and_compare(p, CLATTN_PATH_NAIVE, CLATTN_FUSED_AUTO, what,
                                      naive_tol > tol ? naive_tol : tol);
    clattn_kernel_info k;
    for (size_t i = 0; clattn_fused_kernel_info(i, &k) == 0; i++)
        if (clattn_fused_kernel_usable(ctx, k.id, &p->s, NULL, 0) == 1 && runs_problem(p, i, k.id))
            assert_int_equal(run_and_compare(p, CLATTN_PATH_FUSED, k.id, what, tol), nan_rows);
    return nan_rows;
}

static size_t check_everywhere(const struct problem *p, const char *what)
{
    return check_paths(p, what, 0);
}

static const clattn_dtype dtypes[] = { CLATTN_F32, CLATTN_F16 };

/* A NaN in one query row makes that row NaN, and only that row. */
static void test_nan_query(void **state)
{
    (void)state;
    for (size_t t = 0; t < 2; t++) {
        struct problem p;
        problem_init(&p, dtypes[t], 40, CLATTN_CAUSAL_NONE, 1);
        put(p.q, 5 * 16 + 3, dtypes[t], NAN);
        assert_int_equal(check_everywhere(&p, "NaN in q"), 1);
        problem_free(&p);
    }
}

/* Causal top-left: key 0 is the only key query 0 sees, and every query sees
 * it; a NaN in it reaches every row. A NaN in a key only later queries see
 * leaves the earlier ones alone. */
static void test_nan_key(void **state)
{
    (void)state;
    for (size_t t = 0; t < 2; t++) {
        struct problem p;
        problem_init(&p, dtypes[t], 40, CLATTN_CAUSAL_TOP_LEFT, 1);
        put(p.k, 0 * 16 + 7, dtypes[t], NAN);
        assert_int_equal(check_everywhere(&p, "NaN in the first key"), 80);
        put(p.k, 0 * 16 + 7, dtypes[t], 0.25f);
        put(p.k, 30 * 16 + 2, dtypes[t], NAN);
        assert_int_equal(check_everywhere(&p, "NaN in key 30"), 2 * 10);
        problem_free(&p);
    }
}

/* +inf in a query gives infinite scores of both signs (NaN rows); +inf
 * against a column of K that is negative everywhere makes every score -inf,
 * a softmax that is undefined (NaN). */
static void test_infinite_query(void **state)
{
    (void)state;
    for (size_t t = 0; t < 2; t++) {
        struct problem p;
        problem_init(&p, dtypes[t], 33, CLATTN_CAUSAL_BOTTOM_RIGHT, 1);
        put(p.q, 2 * 16 + 0, dtypes[t], INFINITY);
        assert_int_equal(check_everywhere(&p, "+inf in q"), 1);
        for (size_t j = 0; j < 33; j++)
            put(p.k, j * 16 + 0, dtypes[t], -0.5f);
        assert_int_equal(check_everywhere(&p, "+inf in q, scores all -inf"), 1);
        problem_free(&p);
    }
}

/* An infinite V value of a key every query sees with nonzero weight makes
 * that output column infinite (or NaN where signs meet). */
static void test_infinite_value(void **state)
{
    (void)state;
    for (size_t t = 0; t < 2; t++) {
        struct problem p;
        problem_init(&p, dtypes[t], 24, CLATTN_CAUSAL_NONE, 1);
        put(p.v, 4 * 16 + 9, dtypes[t], INFINITY);
        put(p.v, 6 * 16 + 9, dtypes[t], -INFINITY);
        put(p.v, 8 * 16 + 1, dtypes[t], NAN);
        check_everywhere(&p, "inf, -inf and NaN in V");
        problem_free(&p);
    }
}

/* The fused kernels accumulate scores in fp32 whatever the storage dtype:
 * fp16 scores beyond 65504 are ordinary (q = k = 80 everywhere, d = 128:
 * every score 72408, so the softmax is uniform and each row is the mean of
 * V). Every fused kernel returns that finite answer, as the reference does;
 * the naive path, which holds S in fp16 as PyTorch's math backend does,
 * returns NaN rows (documented at clattn_reference). */
static void test_fp16_scores_beyond_half(void **state)
{
    (void)state;
    const clattn_shape s = { 1, 2, 1, 5, 7, 128, CLATTN_F16 };
    const size_t nq = clattn_shape_q_elems(&s), nkv = clattn_shape_kv_elems(&s);
    uint16_t *q = malloc(nq * 2), *k = malloc(nkv * 2), *v = malloc(nkv * 2),
             *out = malloc(nq * 2);
    double *ref = malloc(nq * sizeof *ref);
    assert_true(q && k && v && out && ref);
    for (size_t i = 0; i < nq; i++)
        q[i] = clattn_f32_to_f16(80.0f);
    for (size_t i = 0; i < nkv; i++)
        k[i] = clattn_f32_to_f16(80.0f);
    clattn_random_fill(v, nkv, CLATTN_F16, 31);
    clattn_options o;
    clattn_default_options(&o);
    assert_int_equal(clattn_reference(&s, &o, q, k, v, ref), CLATTN_OK);
    for (size_t i = 0; i < nq; i++) { /* the mean of V's column */
        double mean = 0;
        for (size_t j = 0; j < s.kv_len; j++)
            mean += clattn_f16_to_f32(v[j * s.head_dim + i % s.head_dim]) / (double)s.kv_len;
        assert_true(fabs(ref[i] - mean) < 1e-12);
    }
    clattn_kernel_info kinfo;
    size_t kernels = 0;
    for (size_t n = 0; clattn_fused_kernel_info(n, &kinfo) == 0; n++) {
        if (clattn_fused_kernel_usable(ctx, kinfo.id, &s, NULL, 0) != 1)
            continue;
        o.path = CLATTN_PATH_FUSED;
        o.fused_kernel = kinfo.id;
        memset(out, 0xff, nq * 2);
        clattn_run_info info;
        assert_int_equal(clattn_attention(ctx, &s, &o, q, k, v, out, &info), CLATTN_OK);
        double worst = 0;
        for (size_t i = 0; i < nq; i++) {
            const double x = clattn_f16_to_f32(out[i]);
            if (!isfinite(x))
                fail_msg("%s: element %zu is %g, the reference %g", info.kernel, i, x, ref[i]);
            worst = fabs(x - ref[i]) > worst ? fabs(x - ref[i]) : worst;
        }
        print_message("%s: fp16 scores of 72408, max error %.2e\n", info.kernel, worst);
        assert_true(worst < 2e-3);
        kernels++;
    }
    assert_true(kernels > 0);
    o.path = CLATTN_PATH_NAIVE;
    o.fused_kernel = CLATTN_FUSED_AUTO;
    assert_int_equal(clattn_attention(ctx, &s, &o, q, k, v, out, NULL), CLATTN_OK);
    for (size_t i = 0; i < nq; i++)
        assert_true(isnan(clattn_f16_to_f32(out[i])));
    free(q);
    free(k);
    free(v);
    free(out);
    free(ref);
}

/* Scores beyond fp32's range (inputs near 1e20) make their rows NaN on every
 * path; fp16 scores just below half's range are finite and agree. */
static void test_score_overflow(void **state)
{
    (void)state;
    struct problem p;
    problem_init(&p, CLATTN_F32, 30, CLATTN_CAUSAL_NONE, 1e20f);
    assert_true(check_everywhere(&p, "fp32 scores above FLT_MAX") > 0);
    problem_free(&p);
    /* Scores up to 1600 here: the naive path's half S is off by up to 0.4. */
    problem_init(&p, CLATTN_F16, 30, CLATTN_CAUSAL_TOP_LEFT, 20.0f);
    assert_int_equal(check_paths(&p, "fp16 scores in range", 1.0), 0);
    problem_free(&p);
}

int main(int argc, char **argv)
{
    full = device_suite_full(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nan_query),     cmocka_unit_test(test_nan_key),
        cmocka_unit_test(test_infinite_query), cmocka_unit_test(test_infinite_value),
        cmocka_unit_test(test_score_overflow), cmocka_unit_test(test_fp16_scores_beyond_half),
    };
    return DEVICE_SUITE_MAIN(&ctx, tests);
}
