/* SPDX-License-Identifier: MIT */
/* The timing harness of the measurements: warm-up, repetitions through the
 * library's one timing loop (core/timing.h), median and spread, and the
 * launch geometry they share. */
#include <math.h>
#include <stdio.h>

#include "core/timing.h"
#include "measure/measure.h"

double measure_now_seconds(void)
{
    return timing_now();
}

/* Median and min-max of samples[0..n) (sorts them). */
clattn_stat measure_stat_of(double *samples, uint32_t n)
{
    const struct timing_stats t = timing_summary(samples, n);
    clattn_stat s = { t.median, t.min, t.max, n };
    return s;
}

void bench_progress(struct bench *b, const char *stage)
{
    if (b->opts->progress)
        b->opts->progress(b->opts->progress_user, stage,
                          b->steps_total ? (double)b->steps_done / b->steps_total : 0.0);
}

/* One launch of k, timed by its profiling event (or clFinish and the host
 * clock when the queue has no profiling). */
static int time_launch(struct bench *b, cl_kernel k, size_t global, size_t local, double *seconds)
{
    cl_command_queue q = b->ctx->queue;
    cl_event ev = NULL;
    double t0 = measure_now_seconds();
    cl_int err = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL,
                                        b->profiling ? &ev : NULL);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clEnqueueNDRangeKernel(measure)");
    if (!b->profiling) {
        if ((err = clFinish(q)) != CL_SUCCESS)
            return ctx_fail_wait(b->ctx, err, "clFinish(measure)");
        *seconds = measure_now_seconds() - t0;
        return 0;
    }
    cl_ulong start = 0, end = 0;
    err = clWaitForEvents(1, &ev);
    if (err != CL_SUCCESS) {
        clReleaseEvent(ev);
        return ctx_fail_wait(b->ctx, err, "clWaitForEvents(measure)");
    }
    err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL);
    if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL);
    clReleaseEvent(ev);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clGetEventProfilingInfo(measure)");
    *seconds = end > start ? 1e-9 * (double)(end - start) : 1e-9;
    return 0;
}

static cl_uint round_work(const struct workload *w, double work)
{
    double q = w->work_quantum;
    double r = ceil(work / q) * q;
    return r < q ? w->work_quantum : r > w->work_max ? w->work_max : (cl_uint)r;
}

static int launch_work(struct bench *b, const struct workload *w, cl_uint work, double *seconds)
{
    cl_int err = clSetKernelArg(w->kernel, w->work_arg, sizeof work, &work);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clSetKernelArg(measure work)");
    int rc = w->before_launch ? w->before_launch(w->state, w->kernel, work) : 0;
    return rc ? rc : time_launch(b, w->kernel, w->global, w->local, seconds);
}

/* One sample of measure_rate: a launch of `work` units. */
struct work_sample {
    struct bench *b;
    const struct workload *w;
    cl_uint work;
};

static int work_sample(void *user, double *seconds)
{
    struct work_sample *s = user;
    return launch_work(s->b, s->w, s->work, seconds);
}

/* Warms up untimed, scales the work so a run lasts about b->run_seconds, then
 * times b->repetitions runs: *rate is units per second. */
int measure_rate(struct bench *b, const struct workload *w, clattn_stat *rate)
{
    double t, samples[MAX_REPETITIONS];
    cl_uint work = round_work(w, w->work_warm);
    int rc = launch_work(b, w, work, &t);
    if (rc)
        return rc;
    work = round_work(w, w->work_quantum);
    for (int i = 0; i < 4; i++) {
        if ((rc = launch_work(b, w, work, &t)))
            return rc;
        if (t >= 0.5 * b->run_seconds || work >= w->work_max)
            break;
        work = round_work(w, work * fmin(b->run_seconds / fmax(t, 1e-7), 1e6));
    }
    struct work_sample ws = { b, w, work };
    const struct timing_plan plan = { .min_samples = b->repetitions,
                                      .max_samples = b->repetitions };
    struct timing_stats times;
    if ((rc = timing_run(&plan, work_sample, &ws, samples, &times)))
        return rc;
    for (uint32_t r = 0; r < times.n; r++)
        samples[r] = w->units_per_work * work / samples[r];
    *rate = measure_stat_of(samples, times.n);
    return 0;
}

int measure_rate_with(struct bench *b, const struct workload *w, const char *kernel,
                      const struct bench_arg *args, size_t n_args, clattn_stat *rate)
{
    for (size_t i = 0; i < n_args; i++) {
        cl_int err = clSetKernelArg(w->kernel, args[i].index, args[i].size, args[i].value);
        if (err != CL_SUCCESS) {
            char call[96];
            snprintf(call, sizeof call, "clSetKernelArg(%s)", kernel);
            return clattn_fail_cl(err, call);
        }
    }
    return measure_rate(b, w, rate);
}

size_t bench_group_size(const struct bench *b)
{
    return b->ctx->dev.max_wg < 256 ? b->ctx->dev.max_wg : 256;
}

/* Work-items that fill the device: several groups per compute unit. */
size_t bench_filling_global(const struct bench *b)
{
    return (size_t)b->ctx->dev.compute_units * bench_group_size(b) * (b->is_cpu ? 2 : 8);
}

/* A device buffer of `bytes`, filled so that reads touch real pages. */
int bench_filled_buffer(struct bench *b, uint64_t bytes, cl_mem *out)
{
    cl_int err;
    *out = clCreateBuffer(b->ctx->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clCreateBuffer(measure)");
    const float pattern = 1.0f / 1024.0f;
    err = clEnqueueFillBuffer(b->ctx->queue, *out, &pattern, sizeof pattern, 0, bytes, 0, NULL,
                              NULL);
    int rc = err == CL_SUCCESS ? ctx_finish(b->ctx, "clFinish(measure fill)")
                               : clattn_fail_cl(err, "clEnqueueFillBuffer(measure)");
    if (rc < 0) {
        clReleaseMemObject(*out);
        *out = NULL;
    }
    return rc;
}
