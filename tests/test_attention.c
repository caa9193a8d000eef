/* SPDX-License-Identifier: MIT */
/*
 * Device tests: the naive and fused paths against the CPU reference on every
 * shape of cli/cases.h, through every entry point (host pointers, caller's
 * buffers with events, a caller's own context). Exits 77 (skipped) when the
 * machine has no OpenCL device.
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

#include "cases.h"
#include "clattn/clattn.h"
#include "device_suite.h"
#include "clattn/device.h"

static clattn_ctx *ctx;

/* --full (the heavy suite): every kernel on every case; without it a
 * sample (the default suite, which must finish on two loaded cores): the
 * kernel AUTO runs on this device a third of the cases, the others a sixth,
 * each sample offset by the kernel's index so that together they meet
 * every case. */
static int full;

static int sampled(size_t kernel, size_t i, int auto_kernel)
{
    return full || (i + kernel) % (auto_kernel ? 3 : 6) == 0;
}

/* Whether kernel `id` is the one AUTO runs for case c here. */
static int auto_runs(const struct test_case *c, clattn_fused_kernel id)
{
    const clattn_shape s = test_case_shape(c);
    clattn_options o;
    clattn_default_options(&o);
    test_case_options(c, &o);
    size_t bm, bn;
    clattn_fused_kernel k = CLATTN_FUSED_AUTO;
    return clattn_fused_tiles(ctx, &s, &o, &bm, &bn, &k) == CLATTN_OK && k == id;
}

static void check_params(const struct test_case *c, clattn_path path, int use_clblast,
                         clattn_fused_kernel kernel, const char *params, uint64_t seed)
{
    clattn_shape s = test_case_shape(c);
    clattn_options o;
    clattn_default_options(&o);
    test_case_options(c, &o);
    o.path = path;
    o.use_clblast = use_clblast;
    o.fused_kernel = kernel;
    o.kernel_params = params;
    clattn_check_result r;
    int rc = clattn_check(ctx, &s, &o, seed, &r);
    if (rc < 0)
        fail_msg("%s: %s", clattn_error_name(rc), clattn_last_error_detail());
    if (!r.passed)
        fail_msg("%s %s B=%zu H=%zu Hkv=%zu Nq=%zu Nk=%zu d=%zu %s causal=%d: max_abs %.3e "
                 "rel_l2 %.3e unwritten %zu", path == CLATTN_PATH_NAIVE ? "naive" : "fused",
                 r.info.kernel, c->b, c->h, c->hkv, c->nq, c->nk, c->d,
                 c->dtype == CLATTN_F16 ? "fp16" : "fp32", (int)c->causal, r.max_abs, r.rel_l2,
                 r.unwritten);
}

static void check_kernel(const struct test_case *c, clattn_path path, int use_clblast,
                         clattn_fused_kernel kernel, uint64_t seed)
{
    check_params(c, path, use_clblast, kernel, NULL, seed);
}

static void check_path(const struct test_case *c, clattn_path path, int use_clblast,
                       uint64_t seed)
{
    check_kernel(c, path, use_clblast, CLATTN_FUSED_AUTO, seed);
}

/* Every fused kernel of the table that runs here, each on every case (a
 * kernel AUTO does not pick on this device is still one a caller can ask
 * for). */
static void test_fused_all_cases(void **state)
{
    (void)state;
    clattn_kernel_info k;
    size_t ran = 0;
    for (size_t j = 0; clattn_fused_kernel_info(j, &k) == 0; j++) {
        const clattn_shape one = { 1, 1, 1, 1, 1, 8, CLATTN_F32 };
        if (clattn_fused_kernel_usable(ctx, k.id, &one, NULL, 0) != 1)
            continue;
        size_t cases = 0, usable = 0;
        for (size_t i = 0; i < N_TEST_CASES; i++) {
            const clattn_shape s = test_case_shape(&test_cases[i]);
            if (clattn_fused_kernel_usable(ctx, k.id, &s, NULL, 0) != 1)
                continue; /* e.g. a head dim the tensor-core kernel does not take */
            usable++;
            if (!sampled(j, i, auto_runs(&test_cases[i], k.id)))
                continue;
            check_kernel(&test_cases[i], CLATTN_PATH_FUSED, 1, k.id, 100 + i);
            cases++;
        }
        if (usable < N_TEST_CASES / 2)
            fail_msg("kernel %s takes only %zu of %zu cases", k.name, usable, N_TEST_CASES);
        assert_true(cases > 0);
        ran++;
    }
    assert_true(ran >= 1);
    for (size_t i = 0; i < N_TEST_CASES; i++)
        if (sampled(1, i, 0))
            check_path(&test_cases[i], CLATTN_PATH_FUSED, 1, 100 + i);
}

static void test_naive_all_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_TEST_CASES; i++)
        if (sampled(2, i, 0))
            check_path(&test_cases[i], CLATTN_PATH_NAIVE, 1, 200 + i);
}

/* fp32 takes CLBlast where it is built in: the built-in GEMM must hold too. */
static void test_naive_builtin_gemm(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_TEST_CASES; i += full ? 3 : 12)
        check_path(&test_cases[i], CLATTN_PATH_NAIVE, 0, 300 + i);
}

/* CLBlast indexes with 32-bit ints: a batch whose buffers would pass its
 * limit goes out in several calls on sub-buffers (the H200 faulted at 2^32
 * scores before). The limit is lowered here (the naive path's
 * clblast_index_limit parameter) so that a small batch splits; the run must
 * name CLBlast and agree with the reference. */
static void test_naive_clblast_split(void **state)
{
    (void)state;
    char names[64];
    /* B*Hkv = 8 GEMMs of S[32 x 32]: 1024 elements each, 2 per call. */
    const struct test_case c = { .b = 2, .h = 8, .hkv = 4, .nq = 16, .nk = 32, .d = 16,
                                 .dtype = CLATTN_F32, .causal = CLATTN_CAUSAL_TOP_LEFT };
    clattn_shape s = test_case_shape(&c);
    clattn_options o;
    clattn_default_options(&o);
    o.kernel_params = "clblast_index_limit=3000";
    assert_int_equal(clattn_describe_kernels(ctx, &s, &o, NULL, 0, names, sizeof names),
                     CLATTN_OK);
    if (strcmp(names, "naive/clblast") == 0)
        check_params(&c, CLATTN_PATH_NAIVE, 1, CLATTN_FUSED_AUTO, o.kernel_params, 401);
    else
        print_message("no CLBlast for fp32 here (%s): the split is not exercised\n", names);
    /* One GEMM larger than the limit is not CLBlast's to run. */
    o.kernel_params = "clblast_index_limit=500";
    assert_int_equal(clattn_describe_kernels(ctx, &s, &o, NULL, 0, names, sizeof names),
                     CLATTN_OK);
    assert_string_not_equal(names, "naive/clblast");
    check_params(&c, CLATTN_PATH_NAIVE, 1, CLATTN_FUSED_AUTO, o.kernel_params, 402);
}

/* The host-pointer API returns what the reference computes. */
static void test_host_pointer_api(void **state)
{
    (void)state;
    clattn_shape s = { 2, 4, 2, 23, 29, 24, CLATTN_F32 };
    size_t nq = clattn_shape_q_elems(&s), nkv = clattn_shape_kv_elems(&s);
    float *q = malloc(nq * 4), *k = malloc(nkv * 4), *v = malloc(nkv * 4), *o = malloc(nq * 4);
    double *ref = malloc(nq * sizeof *ref);
    assert_non_null(q && k && v && o && ref);
    clattn_random_fill(q, nq, s.dtype, 5);
    clattn_random_fill(k, nkv, s.dtype, 6);
    clattn_random_fill(v, nkv, s.dtype, 7);
    clattn_options opts;
    clattn_default_options(&opts);
    opts.causal = CLATTN_CAUSAL_BOTTOM_RIGHT;
    opts.scale = 0.3f;
    assert_int_equal(clattn_reference(&s, &opts, q, k, v, ref), CLATTN_OK);
    for (int p = CLATTN_PATH_AUTO; p <= CLATTN_PATH_FUSED; p++) {
        for (size_t i = 0; i < nq; i++)
            o[i] = NAN;
        opts.path = (clattn_path)p;
        clattn_run_info info;
        assert_int_equal(clattn_attention(ctx, &s, &opts, q, k, v, o, &info), CLATTN_OK);
        assert_int_not_equal(info.path, CLATTN_PATH_AUTO);
        double max_abs, rel;
        size_t nans;
        assert_int_equal(clattn_compare(&s, o, ref, &max_abs, &rel, &nans), CLATTN_OK);
        assert_int_equal(nans, 0);
        assert_true(max_abs < 1e-4);
    }
    free(q), free(k), free(v), free(o), free(ref);
}

/* Caller's buffers, a wait list that gates the run, and a done event. */
static void test_events_and_caller_context(void **state)
{
    (void)state;
    cl_context cl_ctx = clattn_cl_context(ctx);
    cl_device_id dev = clattn_cl_device(ctx);
    cl_int err;
    cl_command_queue queue = clCreateCommandQueue(cl_ctx, dev, 0, &err);
    assert_int_equal(err, CL_SUCCESS);
    clattn_ctx *mine = NULL;
    assert_int_equal(clattn_open_cl(&mine, cl_ctx, queue), CLATTN_OK);
    clReleaseCommandQueue(queue); /* the clattn context keeps its own reference */

    clattn_shape s = { 1, 2, 2, 40, 40, 16, CLATTN_F32 };
    size_t n = clattn_shape_q_elems(&s);
    float *host = malloc(n * 4), *out = malloc(n * 4);
    double *ref = malloc(n * sizeof *ref);
    clattn_random_fill(host, n, s.dtype, 9);
    assert_int_equal(clattn_reference(&s, NULL, host, host, host, ref), CLATTN_OK);
    cl_mem q = clCreateBuffer(cl_ctx, CL_MEM_READ_WRITE, n * 4, NULL, &err);
    cl_mem o = clCreateBuffer(cl_ctx, CL_MEM_READ_WRITE, n * 4, NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    /* A user event holds the run back until the input is written. */
    cl_event gate = clCreateUserEvent(cl_ctx, &err), done = NULL;
    assert_int_equal(err, CL_SUCCESS);
    for (int p = CLATTN_PATH_NAIVE; p <= CLATTN_PATH_FUSED; p++) {
        clattn_options opts;
        clattn_default_options(&opts);
        opts.path = (clattn_path)p;
        const cl_uchar poison = 0xff;
        assert_int_equal(clEnqueueFillBuffer(clattn_cl_queue(mine), o, &poison, 1, 0, n * 4, 0,
                                             NULL, NULL), CL_SUCCESS);
        assert_int_equal(clattn_attention_cl(mine, &s, &opts, q, q, q, o, 1, &gate, &done, NULL),
                         CLATTN_OK);
        assert_non_null(done);
        if (p == CLATTN_PATH_NAIVE) {
            assert_int_equal(clEnqueueWriteBuffer(clattn_cl_queue(ctx), q, CL_TRUE, 0, n * 4,
                                                  host, 0, NULL, NULL), CL_SUCCESS);
            clSetUserEventStatus(gate, CL_COMPLETE);
        }
        assert_int_equal(clWaitForEvents(1, &done), CL_SUCCESS);
        clReleaseEvent(done);
        assert_int_equal(clEnqueueReadBuffer(clattn_cl_queue(mine), o, CL_TRUE, 0, n * 4, out, 0,
                                             NULL, NULL), CL_SUCCESS);
        double max_abs, rel;
        size_t nans;
        assert_int_equal(clattn_compare(&s, out, ref, &max_abs, &rel, &nans), CLATTN_OK);
        assert_int_equal(nans, 0);
        assert_true(max_abs < 1e-4);
    }
    clReleaseEvent(gate);
    clReleaseMemObject(q);
    clReleaseMemObject(o);
    clattn_close(&mine);
    assert_null(mine);
    free(host), free(out), free(ref);
}

/* A buffer larger than the device's max allocation is refused before any
 * allocation, naming the buffer; allow_oom lets it through to fail cleanly. */
static void test_predicted_oom(void **state)
{
    (void)state;
    /* The limit the library refuses by: the reported one, or what the driver
     * really allows where that differs (NVIDIA). */
    clattn_ceilings c;
    assert_int_equal(clattn_device_ceilings(ctx, &c), CLATTN_OK);
    const double max_alloc = c.max_alloc_bytes.value;
    assert_true(max_alloc > 0);
    /* S alone is B*H*N*N*4 bytes: pick N so it exceeds max_alloc. */
    size_t n = (size_t)sqrt(max_alloc / 4.0) + 2;
    clattn_shape s = { 1, 1, 1, n, n, 16, CLATTN_F32 };
    clattn_options opts;
    clattn_default_options(&opts);
    opts.path = CLATTN_PATH_NAIVE;
    opts.use_clblast = 0; /* so that S, not CLBlast's workspace, is the largest buffer */
    cl_int err;
    cl_mem b[4];
    for (int i = 0; i < 4; i++) {
        b[i] = clCreateBuffer(clattn_cl_context(ctx), CL_MEM_READ_WRITE, n * 16 * 4, NULL, &err);
        assert_int_equal(err, CL_SUCCESS);
    }
    int rc = clattn_attention_cl(ctx, &s, &opts, b[0], b[1], b[2], b[3], 0, NULL, NULL, NULL);
    assert_int_equal(rc, CLATTN_EWOULDOOM);
    assert_non_null(strstr(clattn_last_error_detail(), "buffer S needs"));
    /* Forced anyway, the allocation fails as a clean error... */
    opts.allow_oom = 1;
    rc = clattn_attention_cl(ctx, &s, &opts, b[0], b[1], b[2], b[3], 0, NULL, NULL, NULL);
    assert_int_equal(rc, CLATTN_EOOM);
    /* ...and the context still works, with the workspace given back. */
    clattn_shape small = { 1, 2, 1, 40, 50, 16, CLATTN_F32 };
    clattn_options naive;
    clattn_default_options(&naive);
    naive.path = CLATTN_PATH_NAIVE;
    clattn_check_result r;
    assert_int_equal(clattn_check(ctx, &small, &naive, 17, &r), CLATTN_OK);
    assert_true(r.passed);
    clattn_release_workspace(ctx);
    assert_int_equal(clattn_check(ctx, &small, &naive, 18, &r), CLATTN_OK);
    assert_true(r.passed);
    clattn_release_workspace(NULL); /* NULL-safe */
    /* The fused path holds no N x N buffer and is predicted to fit. */
    clattn_memory_plan plan;
    assert_int_equal(clattn_model_memory(&s, CLATTN_PATH_FUSED, 0, &plan), CLATTN_OK);
    assert_true((double)plan.largest_bytes < max_alloc);
    for (int i = 0; i < 4; i++)
        clReleaseMemObject(b[i]);
}

/* Device-side random inputs cover every element, lie in [-1, 1), are never
 * zero, and differ between seeds. */
static void test_device_random_fill(void **state)
{
    (void)state;
    const size_t n = 100003;
    for (int dt = CLATTN_F32; dt <= CLATTN_F16; dt++) {
        size_t e = clattn_dtype_size((clattn_dtype)dt);
        cl_int err;
        cl_mem b = clCreateBuffer(clattn_cl_context(ctx), CL_MEM_READ_WRITE, n * e, NULL, &err);
        assert_int_equal(err, CL_SUCCESS);
        unsigned char *h = malloc(n * e), *h2 = malloc(n * e);
        const cl_uchar poison = 0xff;
        clEnqueueFillBuffer(clattn_cl_queue(ctx), b, &poison, 1, 0, n * e, 0, NULL, NULL);
        assert_int_equal(clattn_random_fill_cl(ctx, b, n, (clattn_dtype)dt, 7), CLATTN_OK);
        clEnqueueReadBuffer(clattn_cl_queue(ctx), b, CL_TRUE, 0, n * e, h, 0, NULL, NULL);
        assert_int_equal(clattn_random_fill_cl(ctx, b, n, (clattn_dtype)dt, 8), CLATTN_OK);
        clEnqueueReadBuffer(clattn_cl_queue(ctx), b, CL_TRUE, 0, n * e, h2, 0, NULL, NULL);
        double mean = 0;
        for (size_t i = 0; i < n; i++) {
            float x = dt == CLATTN_F16 ? clattn_f16_to_f32(((uint16_t *)h)[i]) : ((float *)h)[i];
            assert_true(x >= -1.0f && x <= 1.0f && x != 0.0f); /* NaN fails too */
            mean += x;
        }
        assert_true(fabs(mean / (double)n) < 0.01);
        assert_memory_not_equal(h, h2, n * e);
        assert_int_equal(clattn_random_fill_cl(ctx, b, n + 1, (clattn_dtype)dt, 7), CLATTN_EINVAL);
        free(h), free(h2);
        clReleaseMemObject(b);
    }
}

/* The Hopper kernel is in the table by name; it refuses fp32 wherever it
 * is; in fp16 it runs exactly on compute capability 9.0 (where only a build
 * without the PTX may refuse it, saying so), and elsewhere says why not. */
static void test_wgmma_listed(void **state)
{
    (void)state;
    clattn_fused_kernel id;
    assert_int_equal(clattn_fused_kernel_find("nv-wgmma", &id), CLATTN_OK);
    assert_int_equal(id, CLATTN_FUSED_NV_WGMMA);
    assert_string_equal(clattn_fused_kernel_name(id), "nv-wgmma");
    char why[200] = "";
    clattn_shape s = { 1, 2, 1, 64, 128, 128, CLATTN_F32 };
    assert_int_equal(clattn_fused_kernel_usable(ctx, id, &s, why, sizeof why), 0);
    assert_true(why[0] != '\0');
    s.dtype = CLATTN_F16;
    why[0] = '\0';
    const int usable = clattn_fused_kernel_usable(ctx, id, &s, why, sizeof why);
    clattn_device_props p;
    assert_int_equal(clattn_device_query(clattn_cl_device(ctx), &p), CLATTN_OK);
    const int hopper = p.nv.present && p.nv.cc_major == 9 && p.nv.cc_minor == 0;
    print_message("nv-wgmma on this device: %s\n", usable == 1 ? "usable" : why);
    if (!hopper) {
        assert_int_equal(usable, 0);
        assert_non_null(strstr(why, "compute capability 9.0"));
    } else if (usable != 1) {
        assert_int_equal(usable, 0);
        assert_non_null(strstr(why, "no PTX kernels"));
    }
}

int main(int argc, char **argv)
{
    full = device_suite_full(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fused_all_cases),
        cmocka_unit_test(test_naive_all_cases),
        cmocka_unit_test(test_naive_builtin_gemm),
        cmocka_unit_test(test_naive_clblast_split),
        cmocka_unit_test(test_host_pointer_api),
        cmocka_unit_test(test_events_and_caller_context),
        cmocka_unit_test(test_predicted_oom),
        cmocka_unit_test(test_device_random_fill),
        cmocka_unit_test(test_wgmma_listed),
    };
    return DEVICE_SUITE_MAIN(&ctx, tests);
}
