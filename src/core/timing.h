/* SPDX-License-Identifier: MIT */
/* The one timing loop: untimed warm-up runs, then samples until they add
 * up to a target duration (at least so many, at most so many), and their
 * median and spread. Pure C: what a sample is (a kernel launch, a burst of attention
 * calls) is the caller's callback, so the measurements (measure/bench.c)
 * and clattn_time_attention_cl (api/timing.c) time the same way. */
#ifndef CLATTN_SRC_CORE_TIMING_H
#define CLATTN_SRC_CORE_TIMING_H

#include <stdint.h>

/* How long to time. */
struct timing_plan {
    uint32_t warmup;       /* runs of the callback before the first sample, untimed */
    uint32_t min_samples;  /* at least this many samples (>= 1) */
    uint32_t max_samples;  /* at most this many (>= min_samples) */
    double target_seconds; /* then end once the samples add up to this */
};

/* The samples' median, least, largest and sum, and how many there were. */
struct timing_stats {
    double median, min, max, total;
    uint32_t n;
};

/* Runs one sample (or, during the warm-up, one untimed run) and stores its
 * seconds; 0, or a negative CLATTN_E* code, which ends the loop. */
typedef int (*timing_sample_fn)(void *user, double *seconds);

/* Runs plan->warmup untimed runs of `sample`, then samples into
 * samples[0..plan->max_samples) until there are plan->min_samples and they
 * add up to plan->target_seconds, or there are plan->max_samples; *out
 * holds their statistics (samples[] is left sorted). Returns 0, or the
 * first failing run's code with *out describing the samples taken before
 * it. The plan is the caller's to check. */
int timing_run(const struct timing_plan *plan, timing_sample_fn sample, void *user,
               double *samples, struct timing_stats *out);

/* The statistics of samples[0..n), which it sorts; all zero for n = 0. */
struct timing_stats timing_summary(double *samples, uint32_t n);

/* The host's monotonic clock, in seconds. */
double timing_now(void);

#endif
