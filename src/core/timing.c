/* SPDX-License-Identifier: MIT */
/* The timing loop (see timing.h). */
#include <stdlib.h>
#include <time.h>

#include "clattn/types.h"
#include "core/timing.h"

double timing_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct timing_stats timing_summary(double *samples, uint32_t n)
{
    struct timing_stats s = { 0, 0, 0, 0, n };
    if (!n)
        return s;
    for (uint32_t i = 0; i < n; i++)
        s.total += samples[i];
    qsort(samples, n, sizeof *samples, cmp_double);
    s.min = samples[0];
    s.max = samples[n - 1];
    s.median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
    return s;
}

int timing_run(const struct timing_plan *plan, timing_sample_fn sample, void *user,
               double *samples, struct timing_stats *out)
{
    int rc = CLATTN_OK;
    double ignored, total = 0;
    uint32_t n = 0;
    for (uint32_t i = 0; i < plan->warmup && rc == CLATTN_OK; i++)
        rc = sample(user, &ignored);
    while (rc == CLATTN_OK && n < plan->max_samples &&
           (n < plan->min_samples || total < plan->target_seconds)) {
        rc = sample(user, &samples[n]);
        if (rc == CLATTN_OK)
            total += samples[n++];
    }
    *out = timing_summary(samples, n);
    return rc;
}
