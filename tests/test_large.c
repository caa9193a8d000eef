/* SPDX-License-Identifier: MIT */
/*
 * Index range: the naive path with 2^32 score elements (B=8 H=32 N=4096, the
 * shape whose fp32 S GEMM once faulted the H200 through CLBlast's 32-bit
 * indices), and the fused path on the same shape. Sampled rows are compared
 * with the CPU reference. Exits 77 (skipped) when there is no device or the
 * naive path's 32 GiB do not fit it.
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
#include "clattn/device.h"

static clattn_ctx *ctx;
static const clattn_shape shape = { 8, 32, 32, 4096, 4096, 8, CLATTN_F32 };

/* Whether the naive plan fits the device, as the library would decide. */
static int naive_fits(void)
{
    clattn_ceilings c;
    clattn_memory_plan plan;
    if (clattn_device_ceilings(ctx, &c) < 0 ||
        clattn_model_memory(&shape, CLATTN_PATH_NAIVE, 0, &plan) < 0)
        return 0;
    return (double)plan.peak_bytes < 0.9 * c.global_mem_bytes.value &&
           (double)plan.largest_bytes <= c.max_alloc_bytes.value;
}

/* Row `row` of O against the reference computed for that row alone. */
static void check_row(const float *q, const float *k, const float *v, const float *o, size_t row)
{
    const size_t d = shape.head_dim, n = shape.kv_len;
    const size_t head = row / shape.q_len; /* b * H + h; Hkv = H */
    clattn_shape one = { 1, 1, 1, 1, n, d, CLATTN_F32 };
    double ref[8];
    assert_int_equal(clattn_reference(&one, NULL, q + row * d, k + head * n * d,
                                      v + head * n * d, ref), CLATTN_OK);
    for (size_t x = 0; x < d; x++)
        if (!(fabs(o[row * d + x] - ref[x]) <= 1e-4))
            fail_msg("row %zu, column %zu: %g, the reference %g", row, x, o[row * d + x], ref[x]);
}

static void run_path(clattn_path path)
{
    const size_t nq = clattn_shape_q_elems(&shape), nkv = clattn_shape_kv_elems(&shape);
    float *q = malloc(nq * 4), *k = malloc(nkv * 4), *v = malloc(nkv * 4), *o = malloc(nq * 4);
    assert_true(q && k && v && o);
    clattn_random_fill(q, nq, CLATTN_F32, 1);
    clattn_random_fill(k, nkv, CLATTN_F32, 2);
    clattn_random_fill(v, nkv, CLATTN_F32, 3);
    memset(o, 0xff, nq * 4); /* NaN: rows left unwritten fail */
    clattn_options opts;
    clattn_default_options(&opts);
    opts.path = path;
    clattn_run_info info;
    int rc = clattn_attention(ctx, &shape, &opts, q, k, v, o, &info);
    if (rc < 0)
        fail_msg("%s", clattn_last_error_detail());
    print_message("%s: %s\n", path == CLATTN_PATH_NAIVE ? "naive" : "fused", info.kernel);
    /* Rows at both ends of the batch, and some in between. */
    const size_t rows = shape.batch * shape.heads * shape.q_len;
    for (size_t i = 0; i < 64; i++)
        check_row(q, k, v, o, i < 32 ? rows - 1 - i * 7919 % 4096 : (i * 2654435761u) % rows);
    free(q);
    free(k);
    free(v);
    free(o);
}

static void test_naive_2_32_scores(void **state)
{
    (void)state;
    run_path(CLATTN_PATH_NAIVE);
    clattn_release_workspace(ctx);
}

static void test_fused_same_shape(void **state)
{
    (void)state;
    run_path(CLATTN_PATH_FUSED);
}

int main(void)
{
    const int rc = device_suite_open(&ctx);
    if (rc)
        return rc;
    if (!naive_fits()) {
        printf("SKIP: the naive path's 2^32 scores (32 GiB) do not fit %s\n",
               clattn_device_name(ctx));
        clattn_close(&ctx);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_naive_2_32_scores),
        cmocka_unit_test(test_fused_same_shape),
    };
    return DEVICE_SUITE_RUN(&ctx, tests);
}
