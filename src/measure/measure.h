/* SPDX-License-Identifier: MIT */
/* What the measurement files share: the timing harness (bench.c),
 * the rate measurements and entry point (measure.c), the working-set sweep
 * (sweep.c) and the saved file (file.c). */
#ifndef CLATTN_SRC_MEASURE_H
#define CLATTN_SRC_MEASURE_H

#include <stdint.h>

#include "context/context.h"
#include "core/abi.h"
#include "core/error.h"

#define KiB ((uint64_t)1024)
#define MiB (KiB * KiB)
#define GiB (KiB * MiB)
#define MAX_REPETITIONS 101

/* The structs' sizes in API 1.0, the first with struct_size
 * (core/abi.h). */
#define MEASURE_OPTIONS_FIRST_SIZE ABI_SIZE_THROUGH(clattn_measure_options, progress_user)
#define MEASUREMENT_FIRST_SIZE ABI_SIZE_THROUGH(clattn_measurement, seconds)

/* How much of the caller's clattn_measurement `out` may be written
 * (core/abi.h's rules); CLATTN_EINVAL for a NULL or unset one. */
static inline int measurement_out_size(const clattn_measurement *out, size_t *size)
{
    if (!out)
        return clattn_fail(CLATTN_EINVAL, "the measurement to fill is NULL");
    return abi_struct_size(out, MEASUREMENT_FIRST_SIZE, "measurement", "clattn_measurement_init",
                           size);
}

/* One clattn_measure call: the device, how to time it, and its progress. */
struct bench {
    clattn_ctx *ctx;
    int profiling;      /* the queue records profiling events */
    int is_cpu;         /* contiguous runs per work-item, explicit vectors */
    uint32_t vec_width; /* float lanes per FMA chain: native width on CPUs */
    uint32_t repetitions;
    double run_seconds; /* target length of one timed run */
    const clattn_measure_options *opts;
    uint32_t steps_done, steps_total;
    double started;
};

/* A kernel whose uint argument `work_arg` scales its work linearly. */
struct workload {
    cl_kernel kernel;
    size_t global, local;
    cl_uint work_arg;
    cl_uint work_quantum;  /* the count is a multiple of this */
    cl_uint work_warm;     /* the warm-up runs at least this count */
    cl_uint work_max;
    double units_per_work; /* bytes or FLOP per unit of the count */
    /* Optional: sets position arguments before each launch of `work` units. */
    int (*before_launch)(void *state, cl_kernel k, cl_uint work);
    void *state;
};

static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* bench.c */

/* The host's monotonic clock, in seconds. */
double measure_now_seconds(void);

/* Median and min-max of samples[0..n) (sorts them). */
clattn_stat measure_stat_of(double *samples, uint32_t n);

/* Reports `stage` and the fraction of steps done to the caller's callback. */
void bench_progress(struct bench *b, const char *stage);

/* Warms up untimed, scales the work so a run lasts about b->run_seconds, then
 * times b->repetitions runs: *rate is units per second. */
int measure_rate(struct bench *b, const struct workload *w, clattn_stat *rate);

/* One of a kernel's fixed arguments: BENCH_ARG(index, variable). */
struct bench_arg {
    cl_uint index;
    size_t size;
    const void *value;
};
#define BENCH_ARG(index, var) { (index), sizeof(var), &(var) }

/* measure_rate once the kernel's fixed arguments are set; a failure to set
 * one is recorded as clSetKernelArg(<kernel>). MEASURE_RATE_WITH counts the
 * array. */
int measure_rate_with(struct bench *b, const struct workload *w, const char *kernel,
                      const struct bench_arg *args, size_t n_args, clattn_stat *rate);
#define MEASURE_RATE_WITH(b, w, kernel, args, rate) \
    measure_rate_with((b), (w), (kernel), (args), sizeof(args) / sizeof((args)[0]), (rate))

/* Work-items per group, and work-items that fill the device: several groups
 * per compute unit. */
size_t bench_group_size(const struct bench *b);
size_t bench_filling_global(const struct bench *b);

/* A device buffer of `bytes`, filled so that reads touch real pages. */
int bench_filled_buffer(struct bench *b, uint64_t bytes, cl_mem *out);

/* sweep.c */

/* The progress steps measure_sweep will take (at most: refinement may skip). */
uint32_t measure_sweep_steps(const struct bench *b);

/* Read bandwidth against working-set footprint into m->sweep, and the knee
 * (m->cache_bytes, sweep_plateau, sweep_floor). */
int measure_sweep(struct bench *b, clattn_measurement *m);

/* wgmma.c */

/* The wgmma rate into m->flops_wgmma_f16 on compute capability 9.0 when the
 * PTX binary is in the build; a failure goes to m->wgmma_status and
 * m->wgmma_error, never to the caller. */
void measure_wgmma(struct bench *b, clattn_measurement *m);

/* file.c */

/* Copies the identity a saved measurement is keyed by into m's strings. */
void measurement_set_identity(clattn_measurement *m, const struct device_identity *id);

#endif
