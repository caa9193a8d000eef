/* SPDX-License-Identifier: MIT */
/*
 * clattn_time_attention_cl on the default device: every bad argument
 * refused with its code and a detail; the statistics consistent (median
 * within [min, max], the sample count within the bounds and at the target,
 * per-call times); calls_per_sample and the warm-up honoured, counted by
 * the kernel launches (cli/launches.c sees each on its way to the loader);
 * both clocks; the events
 * clock refused on a queue without profiling. Exits 77 (skipped) when there
 * is no OpenCL device.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "clattn/clattn.h"
#include "launches.h"

/* ------------------------------------------------------------- the setup */

/* A small call with no split-KV (one fused launch or the naive path's
 * few), on buffers filled once. */
struct fixture {
    clattn_ctx *ctx;
    clattn_shape shape;
    clattn_options opts;
    cl_mem b[4];
};

static struct fixture fx;

static int setup(void **state)
{
    (void)state;
    fx.shape = (clattn_shape){ 1, 2, 1, 40, 40, 16, CLATTN_F32 };
    clattn_default_options(&fx.opts);
    fx.opts.path = CLATTN_PATH_FUSED;
    fx.opts.split_kv = 1;
    if (clattn_open(&fx.ctx, NULL) < 0)
        return -1;
    const size_t n = clattn_shape_q_elems(&fx.shape);
    for (int i = 0; i < 4; i++) {
        cl_int err;
        fx.b[i] = clCreateBuffer(clattn_cl_context(fx.ctx), CL_MEM_READ_WRITE, n * sizeof(float),
                                 NULL, &err);
        if (err != CL_SUCCESS || clattn_random_fill_cl(fx.ctx, fx.b[i], n, CLATTN_F32, 1 + i) < 0)
            return -1;
    }
    return clFinish(clattn_cl_queue(fx.ctx)) == CL_SUCCESS ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < 4; i++)
        if (fx.b[i])
            clReleaseMemObject(fx.b[i]);
    clattn_close(&fx.ctx);
    return 0;
}

static int time_it(const clattn_timing_options *t, clattn_timing *out, clattn_run_info *info)
{
    return clattn_time_attention_cl(fx.ctx, &fx.shape, &fx.opts, fx.b[0], fx.b[1], fx.b[2],
                                    fx.b[3], NULL, t, out, info);
}

/* ---------------------------------------------------------------- the tests */

static void expect_refused(const clattn_timing_options *t, int code, const char *why)
{
    clattn_timing out;
    memset(&out, 0xff, sizeof out);
    int rc = time_it(t, &out, NULL);
    if (rc != code)
        fail_msg("%s: returned %d (%s), want %d", why, rc, clattn_error_name(rc), code);
    assert_true(clattn_last_error_detail()[0] != '\0');
    assert_int_equal(out.samples, 0); /* cleared, not left as it was */
}

static void bad_arguments(void **state)
{
    (void)state;
    clattn_timing out;
    const clattn_shape *s = &fx.shape;
    assert_int_equal(clattn_time_attention_cl(NULL, s, NULL, fx.b[0], fx.b[1], fx.b[2], fx.b[3],
                                              NULL, NULL, &out, NULL), CLATTN_EINVAL);
    assert_int_equal(clattn_time_attention_cl(fx.ctx, NULL, NULL, fx.b[0], fx.b[1], fx.b[2],
                                              fx.b[3], NULL, NULL, &out, NULL), CLATTN_EINVAL);
    assert_int_equal(clattn_time_attention_cl(fx.ctx, s, NULL, fx.b[0], fx.b[1], fx.b[2],
                                              fx.b[3], NULL, NULL, NULL, NULL), CLATTN_EINVAL);

    clattn_timing_options t;
    memset(&t, 0, sizeof t); /* not set up: struct_size 0 */
    expect_refused(&t, CLATTN_EINVAL, "struct_size 0");
    const double bad_targets[] = { NAN, INFINITY, -INFINITY, -1e-9 };
    for (size_t i = 0; i < sizeof bad_targets / sizeof bad_targets[0]; i++) {
        clattn_default_timing_options(&t);
        t.target_seconds = bad_targets[i];
        expect_refused(&t, CLATTN_EINVAL, "target_seconds");
    }
    clattn_default_timing_options(&t);
    t.min_samples = 0;
    expect_refused(&t, CLATTN_EINVAL, "min_samples 0");
    clattn_default_timing_options(&t);
    t.min_samples = 5;
    t.max_samples = 4;
    expect_refused(&t, CLATTN_EINVAL, "max_samples below min_samples");
    clattn_default_timing_options(&t);
    t.max_samples = CLATTN_TIMING_MAX_SAMPLES + 1;
    expect_refused(&t, CLATTN_EINVAL, "max_samples above the cap");
    clattn_default_timing_options(&t);
    t.calls_per_sample = 0;
    expect_refused(&t, CLATTN_EINVAL, "calls_per_sample 0");
    clattn_default_timing_options(&t);
    t.clock = (clattn_clock)7;
    expect_refused(&t, CLATTN_EINVAL, "unknown clock");

    /* A call that fails (no Q buffer) ends the timing with its code. */
    clattn_default_timing_options(&t);
    assert_int_equal(clattn_time_attention_cl(fx.ctx, s, &fx.opts, NULL, fx.b[1], fx.b[2],
                                              fx.b[3], NULL, &t, &out, NULL), CLATTN_EINVAL);
    assert_int_equal(out.samples, 0);
}

/* The statistics of one timing, whatever the clock. */
static void check_timing(const clattn_timing_options *t, const clattn_timing *out)
{
    assert_true(out->samples >= t->min_samples && out->samples <= t->max_samples);
    /* Below the target only at the cap. */
    assert_true(out->total_s >= t->target_seconds || out->samples == t->max_samples);
    assert_true(out->min_s > 0);
    assert_true(out->min_s <= out->median_s && out->median_s <= out->max_s);
    assert_int_equal(out->calls_per_sample, t->calls_per_sample);
    /* Per call: a sample's time over its calls; the total is the samples'. */
    assert_true(out->max_s * t->calls_per_sample * out->samples >= out->total_s * (1 - 1e-9));
    assert_true(out->min_s * t->calls_per_sample * out->samples <= out->total_s * (1 + 1e-9));
}

/* Kernel launches of one call, counted on a plain call. */
static unsigned long launches_per_call(void)
{
    clattn_run_info info;
    const unsigned long before = launches_count();
    assert_int_equal(clattn_attention_cl(fx.ctx, &fx.shape, &fx.opts, fx.b[0], fx.b[1], fx.b[2],
                                         fx.b[3], 0, NULL, NULL, &info), CLATTN_OK);
    assert_int_equal(clFinish(clattn_cl_queue(fx.ctx)), CL_SUCCESS);
    assert_true(launches_count() > before);
    return launches_count() - before;
}

static void both_clocks(void **state)
{
    (void)state;
    const unsigned long per_call = launches_per_call();
    const clattn_clock clocks[] = { CLATTN_CLOCK_HOST, CLATTN_CLOCK_EVENTS };
    for (int c = 0; c < 2; c++) {
        clattn_timing_options t;
        clattn_default_timing_options(&t);
        t.clock = clocks[c];
        clattn_timing out;
        clattn_run_info info;
        assert_int_equal(time_it(&t, &out, &info), CLATTN_OK);
        check_timing(&t, &out);
        assert_int_equal(info.path, CLATTN_PATH_FUSED);
        assert_true(info.kernel[0] != '\0');

        /* A fixed count: warm-up and calls per sample honoured. The events
         * clock enqueues one sample ahead of the one it waits for. */
        t.min_samples = t.max_samples = 3;
        t.target_seconds = 0;
        t.warmup_calls = 2;
        t.calls_per_sample = 4;
        const unsigned long before = launches_count();
        assert_int_equal(time_it(&t, &out, NULL), CLATTN_OK);
        check_timing(&t, &out);
        assert_int_equal(out.samples, 3);
        const unsigned long calls = 2 + (3 + (clocks[c] == CLATTN_CLOCK_EVENTS)) * 4;
        assert_int_equal(launches_count() - before, calls * per_call);

        /* The cap ends a timing whose target would take too long; no warm-up. */
        t.min_samples = 1;
        t.max_samples = 2;
        t.target_seconds = 1e6;
        t.warmup_calls = 0;
        t.calls_per_sample = 1;
        assert_int_equal(time_it(&t, &out, NULL), CLATTN_OK);
        check_timing(&t, &out);
        assert_int_equal(out.samples, 2);
    }
    /* NULL: the defaults. */
    clattn_timing out;
    clattn_timing_options t;
    clattn_default_timing_options(&t);
    assert_int_equal(time_it(NULL, &out, NULL), CLATTN_OK);
    check_timing(&t, &out);
}

/* The events clock needs profiling timestamps: a context on a queue of the
 * caller's without them is refused for it, and times on the host clock. */
static void events_need_profiling(void **state)
{
    (void)state;
    cl_int err;
    cl_command_queue plain = clCreateCommandQueue(clattn_cl_context(fx.ctx),
                                                  clattn_cl_device(fx.ctx), 0, &err);
    assert_int_equal(err, CL_SUCCESS);
    clattn_ctx *ctx = NULL;
    assert_int_equal(clattn_open_cl(&ctx, clattn_cl_context(fx.ctx), plain), CLATTN_OK);
    clReleaseCommandQueue(plain);
    clattn_timing_options t;
    clattn_default_timing_options(&t);
    t.clock = CLATTN_CLOCK_EVENTS;
    clattn_timing out;
    assert_int_equal(clattn_time_attention_cl(ctx, &fx.shape, &fx.opts, fx.b[0], fx.b[1],
                                              fx.b[2], fx.b[3], NULL, &t, &out, NULL),
                     CLATTN_EUNSUPPORTED);
    assert_non_null(strstr(clattn_last_error_detail(), "PROFILING"));
    t.clock = CLATTN_CLOCK_HOST;
    assert_int_equal(clattn_time_attention_cl(ctx, &fx.shape, &fx.opts, fx.b[0], fx.b[1],
                                              fx.b[2], fx.b[3], NULL, &t, &out, NULL),
                     CLATTN_OK);
    check_timing(&t, &out);
    clattn_close(&ctx);
}

int main(void)
{
    size_t n = 0;
    if (clattn_list_devices(NULL, 0, &n) != CLATTN_OK || n == 0) {
        fprintf(stderr, "no OpenCL device: skipped\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_arguments),
        cmocka_unit_test(both_clocks),
        cmocka_unit_test(events_need_profiling),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
