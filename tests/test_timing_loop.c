/* SPDX-License-Identifier: MIT */
/*
 * The timing loop alone (src/core/timing.c), on a fake clock: the warm-up
 * runs untimed, sampling ends at the target once there are enough
 * samples and at the cap whatever the target, a failing run ends the loop
 * with its code, and the statistics are those of the samples taken.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "clattn/types.h"
#include "core/timing.h"

/* A sample source: run i lasts durations[i % n] seconds; run fail_at fails. */
struct fake {
    const double *durations;
    uint32_t n, runs, fail_at;
};

static int fake_sample(void *user, double *seconds)
{
    struct fake *f = user;
    if (f->runs == f->fail_at)
        return CLATTN_ECL;
    *seconds = f->durations[f->runs++ % f->n];
    return CLATTN_OK;
}

static void warmup_and_target(void **state)
{
    (void)state;
    /* The warm-up's 100 s must not count. */
    const double d[] = { 100, 100, 0.3, 0.1, 0.2, 0.4, 0.5 };
    struct fake f = { d, 7, 0, UINT32_MAX };
    const struct timing_plan plan = { .warmup = 2, .min_samples = 1, .max_samples = 50,
                                      .target_seconds = 0.55 };
    double samples[50];
    struct timing_stats st;
    assert_int_equal(timing_run(&plan, fake_sample, &f, samples, &st), CLATTN_OK);
    assert_int_equal(f.runs, 2 + 3);              /* 0.3 + 0.1 + 0.2 reaches 0.55 */
    assert_int_equal(st.n, 3);
    assert_true(st.min == 0.1 && st.max == 0.3 && st.median == 0.2);
    assert_true(st.total > 0.599 && st.total < 0.601);
}

static void bounds(void **state)
{
    (void)state;
    const double d[] = { 1, 2, 3, 4 };
    double samples[8];
    struct timing_stats st;
    /* At least min_samples, however soon the target is met. */
    struct fake f = { d, 4, 0, UINT32_MAX };
    struct timing_plan plan = { .min_samples = 4, .max_samples = 8, .target_seconds = 0 };
    assert_int_equal(timing_run(&plan, fake_sample, &f, samples, &st), CLATTN_OK);
    assert_int_equal(st.n, 4);
    assert_true(st.median == 2.5); /* an even count: the middle two's mean */
    /* At most max_samples, however far the target is. */
    f.runs = 0;
    plan = (struct timing_plan){ .min_samples = 1, .max_samples = 3, .target_seconds = 1e9 };
    assert_int_equal(timing_run(&plan, fake_sample, &f, samples, &st), CLATTN_OK);
    assert_int_equal(st.n, 3);
    assert_true(st.total == 6);
}

static void failure(void **state)
{
    (void)state;
    const double d[] = { 1 };
    double samples[8];
    struct timing_stats st;
    struct fake f = { d, 1, 0, 3 }; /* one warm-up, two samples, then a failure */
    const struct timing_plan plan = { .warmup = 1, .min_samples = 8, .max_samples = 8 };
    assert_int_equal(timing_run(&plan, fake_sample, &f, samples, &st), CLATTN_ECL);
    assert_int_equal(st.n, 2);
    f.runs = 0;
    f.fail_at = 0; /* in the warm-up: no sample */
    assert_int_equal(timing_run(&plan, fake_sample, &f, samples, &st), CLATTN_ECL);
    assert_int_equal(st.n, 0);
    assert_true(st.median == 0 && st.total == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(warmup_and_target),
        cmocka_unit_test(bounds),
        cmocka_unit_test(failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
