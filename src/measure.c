/* Measured ceilings (cl/measure.cl): memory bandwidth, FMA rates, launch
 * latency and the last-level cache by a working-set sweep; saved per device. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache_file.h"
#include "device_query.h"
#include "internal.h"

#define KiB ((uint64_t)1024)
#define MiB (KiB * KiB)
#define GiB (KiB * MiB)
#define MAX_REPETITIONS 101
#define REFINE_POINTS 4 /* extra footprints measured around the knee */

void clattn_default_measure_options(clattn_measure_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->repetitions = 7;
    opts->sweep = 1;
}

static double now_seconds(void)
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

/* Median and min-max of samples[0..n) (sorts them). */
static clattn_stat stat_of(double *samples, uint32_t n)
{
    clattn_stat s = { 0, 0, 0, n };
    if (!n)
        return s;
    qsort(samples, n, sizeof *samples, cmp_double);
    s.min = samples[0];
    s.max = samples[n - 1];
    s.median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
    return s;
}

/* ------------------------------------------------------------------ timing */

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

static void progress(struct bench *b, const char *stage)
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
    double t0 = now_seconds();
    cl_int err = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL,
                                        b->profiling ? &ev : NULL);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clEnqueueNDRangeKernel(measure)");
    if (!b->profiling) {
        if ((err = clFinish(q)) != CL_SUCCESS)
            return clattn_fail_cl(err, "clFinish(measure)");
        *seconds = now_seconds() - t0;
        return 0;
    }
    cl_ulong start = 0, end = 0;
    err = clWaitForEvents(1, &ev);
    if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL);
    if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL);
    clReleaseEvent(ev);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clGetEventProfilingInfo(measure)");
    *seconds = end > start ? 1e-9 * (double)(end - start) : 1e-9;
    return 0;
}

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

/* Warms up untimed, scales the work so a run lasts about b->run_seconds, then
 * times b->repetitions runs: *rate is units per second. */
static int measure_rate(struct bench *b, const struct workload *w, clattn_stat *rate)
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
    for (uint32_t r = 0; r < b->repetitions; r++) {
        if ((rc = launch_work(b, w, work, &t)))
            return rc;
        samples[r] = w->units_per_work * work / t;
    }
    *rate = stat_of(samples, b->repetitions);
    return 0;
}

/* --------------------------------------------------------------- figures */

static size_t group_size(const struct bench *b)
{
    return b->ctx->max_wg < 256 ? b->ctx->max_wg : 256;
}

/* Work-items that fill the device: several groups per compute unit. */
static size_t filling_global(const struct bench *b)
{
    return (size_t)b->ctx->compute_units * group_size(b) * (b->is_cpu ? 2 : 8);
}

/* Per-launch cost of an empty kernel: `batch` launches queued back to back
 * and one clFinish (what a sequence of kernels pays), and a single launch
 * followed by clFinish (the round trip). Host clock: events would not see
 * the gaps between kernels. */
static int measure_latency(struct bench *b, clattn_measurement *m)
{
    cl_kernel k = NULL;
    cl_mem dummy = NULL;
    double pipelined[MAX_REPETITIONS], roundtrip[MAX_REPETITIONS];
    const int batch = b->is_cpu ? 32 : 200;
    const size_t one = 1;
    cl_int err;
    int rc = clattn_kernel_get(b->ctx, "measure.cl", "", "measure_empty", &k);
    if (rc)
        return rc;
    dummy = clCreateBuffer(b->ctx->context, CL_MEM_READ_WRITE, 64, NULL, &err);
    if (err != CL_SUCCESS) {
        rc = clattn_fail_cl(err, "clCreateBuffer(measure latency)");
        goto release_kernel;
    }
    if ((err = clSetKernelArg(k, 0, sizeof dummy, &dummy)) != CL_SUCCESS) {
        rc = clattn_fail_cl(err, "clSetKernelArg(measure_empty)");
        goto release_buffer;
    }
    for (uint32_t r = 0; r <= b->repetitions; r++) {
        double t0 = now_seconds();
        for (int i = 0; i < batch && err == CL_SUCCESS; i++)
            err = clEnqueueNDRangeKernel(b->ctx->queue, k, 1, NULL, &one, &one, 0, NULL, NULL);
        if (err == CL_SUCCESS)
            err = clFinish(b->ctx->queue);
        double t1 = now_seconds();
        if (err == CL_SUCCESS)
            err = clEnqueueNDRangeKernel(b->ctx->queue, k, 1, NULL, &one, &one, 0, NULL, NULL);
        if (err == CL_SUCCESS)
            err = clFinish(b->ctx->queue);
        if (err != CL_SUCCESS) {
            rc = clattn_fail_cl(err, "clEnqueueNDRangeKernel(measure_empty)");
            goto release_buffer;
        }
        if (r > 0) { /* the first round warms up */
            pipelined[r - 1] = (t1 - t0) / batch;
            roundtrip[r - 1] = now_seconds() - t1;
        }
    }
    m->launch_latency_s = stat_of(pipelined, b->repetitions);
    m->launch_roundtrip_s = stat_of(roundtrip, b->repetitions);
release_buffer:
    clReleaseMemObject(dummy);
release_kernel:
    clReleaseKernel(k);
    return rc;
}

/* FMA rate of 8 independent chains per work-item: fp32, or (fp16) half
 * vectors of twice the width. A device that cannot build half arithmetic
 * leaves *out empty. */
static int measure_flops(struct bench *b, int fp16, clattn_stat *out)
{
    cl_kernel k = NULL;
    cl_mem sink = NULL;
    cl_int err;
    uint32_t lanes = fp16 ? (b->vec_width >= 8 ? 16 : 2 * b->vec_width) : b->vec_width;
    char options[64], type[16];
    if (lanes == 1)
        snprintf(type, sizeof type, "float");
    else
        snprintf(type, sizeof type, "%s%u", fp16 ? "half" : "float", (unsigned)lanes);
    snprintf(options, sizeof options, "%s-DFMA_TYPE=%s", fp16 ? "-DMEASURE_FP16=1 " : "", type);
    int rc = clattn_kernel_get(b->ctx, "measure.cl", options, "measure_fma", &k);
    if (rc == CLATTN_EBUILD && fp16) {
        clattn_clear_error();
        return 0; /* n/a: samples stay 0 */
    }
    if (rc)
        return rc;
    struct workload w = { k, filling_global(b), group_size(b), 1, 1, 1, 1u << 24, 0, NULL, NULL };
    w.units_per_work = (double)w.global * 32 * 2 * lanes;
    sink = clCreateBuffer(b->ctx->context, CL_MEM_WRITE_ONLY,
                          w.global * lanes * (fp16 ? 2 : 4), NULL, &err);
    if (err != CL_SUCCESS) {
        rc = clattn_fail_cl(err, "clCreateBuffer(measure flops)");
        goto release_kernel;
    }
    const float half_value = 0.5f;
    err = clSetKernelArg(k, 0, sizeof sink, &sink);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 2, sizeof half_value, &half_value);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 3, sizeof half_value, &half_value);
    rc = err != CL_SUCCESS ? clattn_fail_cl(err, "clSetKernelArg(measure_fma)")
                           : measure_rate(b, &w, out);
    clReleaseMemObject(sink);
release_kernel:
    clReleaseKernel(k);
    return rc;
}

/* Tensor-core rate of mma.sync (fp16 in, fp32 accumulate) on NVIDIA sm_80+,
 * the roof of the tensor-core kernels; other devices leave *out empty. */
static int measure_tensor(struct bench *b, clattn_stat *out)
{
    if (!b->ctx->is_nvidia || b->ctx->nv_cc < 80)
        return 0;
    cl_kernel k = NULL;
    int rc = clattn_kernel_get(b->ctx, "measure_nv_mma.cl", "", "measure_mma", &k);
    if (rc == CLATTN_EBUILD) {
        clattn_clear_error();
        return 0; /* n/a */
    }
    if (rc)
        return rc;
    /* 32 warps per compute unit keep every tensor core fed. */
    const size_t global = (size_t)b->ctx->compute_units * 1024;
    struct workload w = { k, global, 256, 1, 1, 1, 1u << 24, 0, NULL, NULL };
    w.units_per_work = (double)(global / 32) * 8 * 4096; /* FLOP per iteration */
    cl_int err;
    cl_mem sink = clCreateBuffer(b->ctx->context, CL_MEM_WRITE_ONLY, global * 4, NULL, &err);
    if (err != CL_SUCCESS) {
        clReleaseKernel(k);
        return clattn_fail_cl(err, "clCreateBuffer(measure mma)");
    }
    const cl_uint seed = 0x1234u;
    err = clSetKernelArg(k, 0, sizeof sink, &sink);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 2, sizeof seed, &seed);
    rc = err != CL_SUCCESS ? clattn_fail_cl(err, "clSetKernelArg(measure_mma)")
                           : measure_rate(b, &w, out);
    clReleaseMemObject(sink);
    clReleaseKernel(k);
    return rc;
}

/* A device buffer of `bytes`, filled so that reads touch real pages. */
static int filled_buffer(struct bench *b, uint64_t bytes, cl_mem *out)
{
    cl_int err;
    *out = clCreateBuffer(b->ctx->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clCreateBuffer(measure)");
    const float pattern = 1.0f / 1024.0f;
    err = clEnqueueFillBuffer(b->ctx->queue, *out, &pattern, sizeof pattern, 0, bytes, 0, NULL,
                              NULL);
    if (err == CL_SUCCESS)
        err = clFinish(b->ctx->queue);
    if (err != CL_SUCCESS) {
        clReleaseMemObject(*out);
        *out = NULL;
        return clattn_fail_cl(err, "clEnqueueFillBuffer(measure)");
    }
    return 0;
}

/* Read + write bandwidth of a float4 copy between two buffers of `bytes`. */
static int measure_bandwidth(struct bench *b, uint64_t bytes, clattn_stat *out)
{
    cl_kernel k = NULL;
    cl_mem src = NULL, dst = NULL;
    int rc = clattn_kernel_get(b->ctx, "measure.cl", "", "measure_copy", &k);
    if (rc)
        return rc;
    if ((rc = filled_buffer(b, bytes, &src)) || (rc = filled_buffer(b, bytes, &dst)))
        goto release;
    struct workload w = { k, filling_global(b), group_size(b), 6, 1, 1, 1u << 16, 0, NULL, NULL };
    cl_uint n = (cl_uint)(bytes / 16);
    cl_uint count = (cl_uint)((n + w.global - 1) / w.global);
    /* GPU: grid-stride (coalesced); CPU: a contiguous run per work-item. */
    cl_uint item_stride = b->is_cpu ? count : 1, step = b->is_cpu ? 1 : (cl_uint)w.global;
    w.units_per_work = 2.0 * 16 * n;
    cl_int err = clSetKernelArg(k, 0, sizeof src, &src);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 1, sizeof dst, &dst);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 2, sizeof n, &n);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 3, sizeof item_stride, &item_stride);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 4, sizeof step, &step);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 5, sizeof count, &count);
    rc = err != CL_SUCCESS ? clattn_fail_cl(err, "clSetKernelArg(measure_copy)")
                           : measure_rate(b, &w, out);
release:
    if (dst)
        clReleaseMemObject(dst);
    if (src)
        clReleaseMemObject(src);
    clReleaseKernel(k);
    return rc;
}

/* measure_read_runs: successive launches continue one walk over the
 * footprint, each from where the previous one stopped, and work-items' runs
 * lie end to end (a group's work-items run one after another on a core). */
struct runs_state {
    uint64_t n, global, first;
};

static int runs_before_launch(void *state, cl_kernel k, cl_uint loads)
{
    struct runs_state *s = state;
    cl_uint first = (cl_uint)s->first;
    cl_int err = clSetKernelArg(k, 3, sizeof loads, &loads);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 5, sizeof first, &first);
    s->first = (s->first + (uint64_t)loads * s->global % s->n) % s->n;
    return err == CL_SUCCESS ? 0 : clattn_fail_cl(err, "clSetKernelArg(measure_read_runs)");
}

/* Read bandwidth with the first `bytes` of `buf` as the working set: on GPUs
 * whole passes of measure_read (fewer work-items for small footprints, so
 * that each has some to read); on CPUs runs of float16 (measure_read_runs). */
static int measure_footprint(struct bench *b, cl_kernel k, cl_mem buf, uint64_t bytes,
                             clattn_stat *out)
{
    const size_t local = group_size(b);
    size_t global = filling_global(b);
    cl_int err = clSetKernelArg(k, 0, sizeof buf, &buf);
    if (b->is_cpu) {
        uint64_t n = bytes / 64;
        struct runs_state s = { n, global, 0 };
        /* The warm-up reads the whole footprint at least once. */
        double warm = fmin(ceil((double)n / (double)global) + 4, 1u << 24);
        struct workload w = { k, global, local, 4, 4, (cl_uint)warm, 1u << 24,
                              64.0 * global, runs_before_launch, &s };
        cl_uint n32 = (cl_uint)n;
        if (err == CL_SUCCESS)
            err = clSetKernelArg(k, 2, sizeof n32, &n32);
        return err != CL_SUCCESS ? clattn_fail_cl(err, "clSetKernelArg(measure_read_runs)")
                                 : measure_rate(b, &w, out);
    }
    uint64_t n = bytes / 16;
    uint64_t groups_needed = (n / 4 + local - 1) / local;
    if (global > groups_needed * local)
        global = groups_needed * local;
    struct workload w = { k, global, local, 3, 1, 1, 1u << 24, 16.0 * n, NULL, NULL };
    cl_uint n32 = (cl_uint)n;
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 2, sizeof n32, &n32);
    return err != CL_SUCCESS ? clattn_fail_cl(err, "clSetKernelArg(measure_read)")
                             : measure_rate(b, &w, out);
}

/* Footprints from lo to hi: powers of two and the midpoints 1.5 x between. */
static uint32_t sweep_footprints(uint64_t lo, uint64_t hi, uint64_t *out, uint32_t cap)
{
    uint32_t n = 0;
    uint64_t p = 4 * KiB;
    while (p < lo)
        p *= 2;
    for (; p <= hi && n < cap; p *= 2) {
        out[n++] = p;
        if (p + p / 2 <= hi && n < cap)
            out[n++] = p + p / 2;
    }
    return n;
}

/* The knee of bandwidth against footprint: the floor is the bandwidth at the
 * two largest footprints, the plateau the median bandwidth of the cached
 * points within 16 x below the last one that is clearly (1.5 x the floor)
 * cached, and the knee the footprint where the bandwidth crosses their
 * geometric mean, interpolated on log-log axes. Leaves cache_bytes 0 when
 * there is no fall or the floor was not reached. Returns the index of the
 * point before the crossing, or -1. */
static int locate_knee(clattn_measurement *m)
{
    const clattn_sweep_point *pt = m->sweep;
    uint32_t n = m->n_sweep;
    m->cache_bytes = 0;
    if (n < 4)
        return -1;
    double floor_bw = 0.5 * (pt[n - 1].bandwidth.median + pt[n - 2].bandwidth.median);
    int last_cached = -1;
    for (int i = (int)n - 1; i >= 0 && last_cached < 0; i--)
        if (pt[i].bandwidth.median >= 1.5 * floor_bw)
            last_cached = i;
    if (last_cached < 0)
        return -1;
    double window[CLATTN_SWEEP_MAX];
    uint32_t nw = 0;
    for (int i = last_cached; i >= 0; i--)
        if (pt[i].footprint_bytes * 16 >= pt[last_cached].footprint_bytes
            && pt[i].bandwidth.median >= 1.5 * floor_bw)
            window[nw++] = pt[i].bandwidth.median;
    double plateau = stat_of(window, nw).median;
    double threshold = sqrt(plateau * floor_bw);
    m->sweep_plateau = plateau;
    m->sweep_floor = floor_bw;
    if (pt[n - 1].bandwidth.median >= threshold)
        return -1;
    int i = (int)n - 2;
    while (i >= 0 && pt[i].bandwidth.median < threshold)
        i--;
    if (i < 0)
        return -1;
    double la = log(pt[i].bandwidth.median), lb = log(pt[i + 1].bandwidth.median);
    double f = la > lb ? (la - log(threshold)) / (la - lb) : 0.0;
    double lx = log((double)pt[i].footprint_bytes);
    double knee = exp(lx + f * (log((double)pt[i + 1].footprint_bytes) - lx));
    m->cache_bytes = (uint64_t)(knee + 0.5);
    return i;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static uint64_t plan_bandwidth_bytes(const struct bench *b)
{
    uint64_t bytes = b->opts->bandwidth_bytes;
    if (!bytes) {
        bytes = min_u64(1 * GiB, min_u64(b->ctx->max_alloc / 2, b->ctx->global_mem / 8));
        if (b->opts->quick)
            bytes = min_u64(bytes, 16 * MiB);
    }
    /* The copy indexes float4 with 32-bit integers. */
    bytes = min_u64(min_u64(bytes, b->ctx->max_alloc), 16 * GiB - 64 * KiB);
    return bytes / (64 * KiB) * (64 * KiB);
}

/* Sweep range: to 16 x the cache the device is expected to have, so that
 * the largest footprints show the memory floor (caches that do not evict in
 * LRU order keep serving part of a footprint several times their size). */
static void plan_sweep(const struct bench *b, uint64_t *lo, uint64_t *hi)
{
    clattn_ceilings c;
    double expected = 16.0 * MiB;
    if (device_ceilings_unmeasured(b->ctx->device, &c) == 0 && c.cache_bytes.value > 0)
        expected = c.cache_bytes.value;
    /* NVIDIA reports its L1s; GPUs' last-level caches are tens of MiB. */
    if (!b->is_cpu && expected < 32.0 * MiB)
        expected = 32.0 * MiB;
    *lo = b->opts->sweep_min_bytes ? b->opts->sweep_min_bytes : 256 * KiB;
    *hi = b->opts->sweep_max_bytes ? b->opts->sweep_max_bytes
                                   : b->opts->quick ? 4 * MiB : (uint64_t)(16 * expected);
    uint64_t limit = min_u64(min_u64(b->ctx->max_alloc, b->ctx->global_mem / 4), 4 * GiB);
    *hi = min_u64(*hi, limit);
    if (*lo < 4 * KiB)
        *lo = 4 * KiB;
}

/* Measures REFINE_POINTS footprints spaced geometrically between the two
 * around the crossing (index `i` and i + 1), inserted in order. */
static int refine_knee(struct bench *b, cl_kernel k, cl_mem buf, clattn_measurement *m, int i)
{
    uint64_t a = m->sweep[i].footprint_bytes, z = m->sweep[i + 1].footprint_bytes;
    for (int j = REFINE_POINTS; j >= 1; j--) {
        double f = exp(log((double)a) + j * (log((double)z) - log((double)a)) / (REFINE_POINTS + 1));
        uint64_t bytes = (uint64_t)(f / (64 * KiB)) * (64 * KiB);
        /* Larger points come first: each new one goes just after i. */
        if (bytes <= a || bytes >= m->sweep[i + 1].footprint_bytes
            || m->n_sweep >= CLATTN_SWEEP_MAX)
            continue;
        char stage[64];
        snprintf(stage, sizeof stage, "cache sweep, %.4g MiB (refining)", (double)bytes / MiB);
        progress(b, stage);
        clattn_sweep_point p = { bytes, { 0, 0, 0, 0 } };
        int rc = measure_footprint(b, k, buf, bytes, &p.bandwidth);
        if (rc)
            return rc;
        memmove(&m->sweep[i + 2], &m->sweep[i + 1], (m->n_sweep - i - 1) * sizeof m->sweep[0]);
        m->sweep[i + 1] = p;
        m->n_sweep++;
        b->steps_done++;
    }
    return 0;
}

static int measure_sweep(struct bench *b, clattn_measurement *m)
{
    uint64_t lo, hi, sizes[CLATTN_SWEEP_MAX];
    plan_sweep(b, &lo, &hi);
    uint32_t count = sweep_footprints(lo, hi, sizes, CLATTN_SWEEP_MAX - REFINE_POINTS);
    if (!count)
        return 0;
    cl_kernel k = NULL;
    cl_mem buf = NULL, sink = NULL;
    cl_int err;
    size_t global = filling_global(b);
    int rc = clattn_kernel_get(b->ctx, "measure.cl", "",
                               b->is_cpu ? "measure_read_runs" : "measure_read", &k);
    if (rc)
        return rc;
    if ((rc = filled_buffer(b, sizes[count - 1], &buf)))
        goto release;
    sink = clCreateBuffer(b->ctx->context, CL_MEM_WRITE_ONLY, global * 64, NULL, &err);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 1, sizeof sink, &sink);
    if (err != CL_SUCCESS) {
        rc = clattn_fail_cl(err, "measure sweep");
        goto release;
    }
    for (uint32_t i = 0; i < count; i++) {
        char stage[64];
        snprintf(stage, sizeof stage, "cache sweep, %.4g MiB", (double)sizes[i] / MiB);
        progress(b, stage);
        m->sweep[i].footprint_bytes = sizes[i];
        if ((rc = measure_footprint(b, k, buf, sizes[i], &m->sweep[i].bandwidth)))
            goto release;
        m->n_sweep = i + 1;
        b->steps_done++;
    }
    int crossing = locate_knee(m);
    if (crossing >= 0 && !(rc = refine_knee(b, k, buf, m, crossing)))
        locate_knee(m);
release:
    if (sink)
        clReleaseMemObject(sink);
    if (buf)
        clReleaseMemObject(buf);
    clReleaseKernel(k);
    return rc;
}

static void clean_line(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r')
            *s = ' ';
}

static int measurement_identity(cl_device_id dev, clattn_measurement *m)
{
    int rc = device_identity(dev, m->device_name, sizeof m->device_name, m->driver_version,
                             sizeof m->driver_version, m->platform_version,
                             sizeof m->platform_version);
    clean_line(m->device_name);
    clean_line(m->driver_version);
    clean_line(m->platform_version);
    return rc;
}

static int run_steps(struct bench *b, clattn_measurement *m)
{
    int rc;
    uint64_t bw_bytes = plan_bandwidth_bytes(b);
    m->bandwidth_buffer_bytes = bw_bytes;
    progress(b, "launch latency");
    if ((rc = measure_latency(b, m)))
        return rc;
    b->steps_done++;
    progress(b, "fp32 FMA rate");
    if ((rc = measure_flops(b, 0, &m->flops_f32)))
        return rc;
    b->steps_done++;
    char stage[64];
    snprintf(stage, sizeof stage, "bandwidth, %.4g MiB copy", (double)bw_bytes / MiB);
    progress(b, stage);
    if (bw_bytes && (rc = measure_bandwidth(b, bw_bytes, &m->bandwidth)))
        return rc;
    b->steps_done++;
    if (b->opts->sweep && (rc = measure_sweep(b, m)))
        return rc;
    /* Last: a build that fails must not disturb the other figures. */
    progress(b, "fp16 FMA rate");
    if ((rc = measure_flops(b, 1, &m->flops_f16)))
        return rc;
    progress(b, "tensor-core rate");
    if ((rc = measure_tensor(b, &m->flops_tensor_f16)))
        return rc;
    b->steps_done++;
    progress(b, "done");
    return 0;
}

int clattn_measure(clattn_ctx *ctx, const clattn_measure_options *opts,
                   clattn_measurement *out)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(ctx != NULL);
    CLATTN_CHECK_ARG(out != NULL);
    clattn_measure_options defaults;
    clattn_default_measure_options(&defaults);
    if (!opts)
        opts = &defaults;
    CLATTN_CHECK_ARG(opts->repetitions >= 1 && opts->repetitions <= MAX_REPETITIONS);
    CLATTN_CHECK_ARG(opts->run_seconds >= 0 && opts->run_seconds <= 10);

    struct bench b = { .ctx = ctx,
                       .repetitions = opts->quick ? 3 : opts->repetitions,
                       .run_seconds = opts->run_seconds,
                       .opts = opts,
                       .steps_total = 4,
                       .started = now_seconds() };
    cl_command_queue_properties qprops = 0;
    cl_device_type type = 0;
    cl_int err = clGetCommandQueueInfo(ctx->queue, CL_QUEUE_PROPERTIES, sizeof qprops, &qprops,
                                       NULL);
    if (err == CL_SUCCESS)
        err = clGetDeviceInfo(ctx->device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clGetCommandQueueInfo(CL_QUEUE_PROPERTIES)");
    b.profiling = (qprops & CL_QUEUE_PROFILING_ENABLE) != 0;
    b.is_cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
    b.vec_width = 1;
    cl_uint native = 1;
    if (b.is_cpu && clGetDeviceInfo(ctx->device, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT,
                                    sizeof native, &native, NULL) == CL_SUCCESS)
        while (b.vec_width < 16 && 2 * b.vec_width <= native)
            b.vec_width *= 2;
    if (b.run_seconds == 0)
        b.run_seconds = b.is_cpu ? (opts->quick ? 5e-3 : 20e-3) : (opts->quick ? 1e-3 : 5e-3);
    if (opts->sweep) {
        uint64_t lo, hi, sizes[CLATTN_SWEEP_MAX];
        plan_sweep(&b, &lo, &hi);
        b.steps_total += sweep_footprints(lo, hi, sizes, CLATTN_SWEEP_MAX - REFINE_POINTS);
        b.steps_total += REFINE_POINTS;
    }

    memset(out, 0, sizeof *out);
    int rc = measurement_identity(ctx->device, out);
    if (rc)
        return rc;
    out->unix_time = (int64_t)time(NULL);
    out->quick = opts->quick != 0;
    if ((rc = run_steps(&b, out)))
        return rc;
    out->seconds = now_seconds() - b.started;
    return 0;
}

/* ------------------------------------------------------------ saved file */

/* The measurement file of the device m was taken on (cache_file.c). */
static int path_for_identity(const clattn_measurement *m, char *path, size_t cap)
{
    return clattn_cache_path_for("", m->device_name, m->driver_version, m->platform_version, path,
                                 cap);
}

int clattn_measure_path(cl_device_id dev, char *path, size_t cap)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(dev != NULL);
    CLATTN_CHECK_ARG(path != NULL && cap > 0);
    clattn_measurement *m = calloc(1, sizeof *m);
    if (!m)
        return clattn_fail(CLATTN_ENOMEM, "clattn_measure_path");
    int rc = measurement_identity(dev, m);
    if (!rc)
        rc = path_for_identity(m, path, cap);
    free(m);
    return rc;
}

static void write_stat(FILE *f, const char *key, const clattn_stat *s)
{
    fprintf(f, "%s=%.17g %.17g %.17g %u\n", key, s->median, s->min, s->max, s->samples);
}

static void write_measurement(FILE *f, const clattn_measurement *m)
{
    fprintf(f, "# clattn device measurement (clattn devices --measure)\n"
               "# stats: median min max samples; bandwidth in bytes/s\n"
               "format=1\n");
    fprintf(f, "device_name=%s\ndriver_version=%s\nplatform_version=%s\n", m->device_name,
            m->driver_version, m->platform_version);
    fprintf(f, "unix_time=%lld\nquick=%d\nseconds=%.17g\n", (long long)m->unix_time, m->quick,
            m->seconds);
    fprintf(f, "bandwidth_buffer_bytes=%llu\n", (unsigned long long)m->bandwidth_buffer_bytes);
    write_stat(f, "bandwidth", &m->bandwidth);
    write_stat(f, "flops_f32", &m->flops_f32);
    write_stat(f, "flops_f16", &m->flops_f16);
    write_stat(f, "flops_tensor_f16", &m->flops_tensor_f16);
    write_stat(f, "launch_latency_s", &m->launch_latency_s);
    write_stat(f, "launch_roundtrip_s", &m->launch_roundtrip_s);
    fprintf(f, "sweep_plateau=%.17g\nsweep_floor=%.17g\ncache_bytes=%llu\n", m->sweep_plateau,
            m->sweep_floor, (unsigned long long)m->cache_bytes);
    /* One line per point: footprint, then the read bandwidth's stat. */
    for (uint32_t i = 0; i < m->n_sweep && i < CLATTN_SWEEP_MAX; i++) {
        const clattn_stat *s = &m->sweep[i].bandwidth;
        fprintf(f, "sweep=%llu %.17g %.17g %.17g %u\n",
                (unsigned long long)m->sweep[i].footprint_bytes, s->median, s->min, s->max,
                s->samples);
    }
}

int clattn_measure_save(const clattn_measurement *m)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(m != NULL);
    CLATTN_CHECK_ARG(m->device_name[0] != '\0');
    char path[4096 + 64];
    int rc = path_for_identity(m, path, sizeof path);
    if (rc)
        return rc;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return clattn_fail(CLATTN_ENOMEM, "measurement text");
    write_measurement(f, m);
    if (fclose(f) != 0 || !text) {
        free(text);
        return clattn_fail(CLATTN_ENOMEM, "measurement text");
    }
    rc = clattn_cache_write(path, text);
    free(text);
    return rc;
}

static int parse_stat(const char *v, clattn_stat *s)
{
    unsigned samples;
    char tail;
    if (sscanf(v, "%lf %lf %lf %u %c", &s->median, &s->min, &s->max, &samples, &tail) != 4)
        return -1;
    s->samples = samples;
    return 0;
}

static int parse_u64(const char *v, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || end == v || *end != '\0' || v[0] == '-')
        return -1;
    *out = x;
    return 0;
}

static int parse_double(const char *v, double *out)
{
    char *end;
    *out = strtod(v, &end);
    return end == v || *end != '\0' ? -1 : 0;
}

/* One "key=value" line into *m; unknown keys are skipped (newer files). */
static int parse_line(char *key, const char *v, clattn_measurement *m, int *format)
{
    uint64_t u = 0;
    if (!strcmp(key, "format")) {
        int bad = parse_u64(v, &u);
        *format = bad || u > 1000 ? -1 : (int)u;
        return bad;
    }
    if (!strcmp(key, "device_name"))
        return snprintf(m->device_name, sizeof m->device_name, "%s", v) < 0;
    if (!strcmp(key, "driver_version"))
        return snprintf(m->driver_version, sizeof m->driver_version, "%s", v) < 0;
    if (!strcmp(key, "platform_version"))
        return snprintf(m->platform_version, sizeof m->platform_version, "%s", v) < 0;
    if (!strcmp(key, "unix_time")) {
        int bad = parse_u64(v, &u);
        m->unix_time = (int64_t)u;
        return bad;
    }
    if (!strcmp(key, "quick")) {
        int bad = parse_u64(v, &u);
        m->quick = u != 0;
        return bad;
    }
    if (!strcmp(key, "seconds"))
        return parse_double(v, &m->seconds);
    if (!strcmp(key, "bandwidth_buffer_bytes"))
        return parse_u64(v, &m->bandwidth_buffer_bytes);
    if (!strcmp(key, "bandwidth"))
        return parse_stat(v, &m->bandwidth);
    if (!strcmp(key, "flops_f32"))
        return parse_stat(v, &m->flops_f32);
    if (!strcmp(key, "flops_f16"))
        return parse_stat(v, &m->flops_f16);
    if (!strcmp(key, "flops_tensor_f16"))
        return parse_stat(v, &m->flops_tensor_f16);
    if (!strcmp(key, "launch_latency_s"))
        return parse_stat(v, &m->launch_latency_s);
    if (!strcmp(key, "launch_roundtrip_s"))
        return parse_stat(v, &m->launch_roundtrip_s);
    if (!strcmp(key, "sweep_plateau"))
        return parse_double(v, &m->sweep_plateau);
    if (!strcmp(key, "sweep_floor"))
        return parse_double(v, &m->sweep_floor);
    if (!strcmp(key, "cache_bytes"))
        return parse_u64(v, &m->cache_bytes);
    if (!strcmp(key, "sweep")) {
        unsigned long long footprint;
        int used = 0;
        if (m->n_sweep >= CLATTN_SWEEP_MAX || sscanf(v, "%llu %n", &footprint, &used) != 1)
            return -1;
        clattn_sweep_point *p = &m->sweep[m->n_sweep];
        p->footprint_bytes = footprint;
        if (parse_stat(v + used, &p->bandwidth))
            return -1;
        m->n_sweep++;
    }
    return 0;
}

static int read_measurement(FILE *f, const char *path, clattn_measurement *m)
{
    char line[1024];
    int format = 0, lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t len = strlen(line);
        if (len && line[len - 1] == '\n')
            line[--len] = '\0';
        if (line[0] == '#' || line[0] == '\0')
            continue;
        char *eq = strchr(line, '=');
        if (!eq)
            return clattn_fail(CLATTN_EFORMAT, "%s:%d: expected key=value", path, lineno);
        *eq = '\0';
        if (parse_line(line, eq + 1, m, &format))
            return clattn_fail(CLATTN_EFORMAT, "%s:%d: bad value for %s", path, lineno, line);
    }
    if (ferror(f))
        return clattn_fail(CLATTN_EIO, "read %s: %s", path, strerror(errno));
    if (format != 1)
        return clattn_fail(CLATTN_EFORMAT, "%s: unknown format %d", path, format);
    return 0;
}

int clattn_measure_load(cl_device_id dev, clattn_measurement *out)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(dev != NULL);
    CLATTN_CHECK_ARG(out != NULL);
    char path[4096 + 64];
    clattn_measurement *want = calloc(1, sizeof *want), *m = calloc(1, sizeof *m);
    int rc = CLATTN_ENOMEM;
    if (!want || !m) {
        clattn_fail(rc, "clattn_measure_load");
        goto free_all;
    }
    if ((rc = measurement_identity(dev, want)) || (rc = path_for_identity(want, path, sizeof path)))
        goto free_all;
    FILE *f = fopen(path, "r");
    if (!f) {
        rc = clattn_fail(CLATTN_EIO, "no saved measurement: %s: %s", path, strerror(errno));
        goto free_all;
    }
    rc = read_measurement(f, path, m);
    fclose(f);
    if (rc)
        goto free_all;
    if (strcmp(m->device_name, want->device_name) || strcmp(m->driver_version, want->driver_version)
        || strcmp(m->platform_version, want->platform_version)) {
        rc = clattn_fail(CLATTN_EFORMAT, "%s: measured on another device or driver", path);
        goto free_all;
    }
    *out = *m;
free_all:
    free(m);
    free(want);
    return rc;
}
