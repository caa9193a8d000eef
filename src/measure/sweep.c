/* SPDX-License-Identifier: MIT */
/* The working-set sweep: read bandwidth against footprint, and the knee
 * where it falls from the last-level cache to memory. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "measure/ceilings.h"
#include "measure/measure.h"

#define REFINE_POINTS 4 /* extra footprints measured around the knee */

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
    const size_t local = bench_group_size(b);
    size_t global = bench_filling_global(b);
    if (b->is_cpu) {
        uint64_t n = bytes / 64;
        struct runs_state s = { n, global, 0 };
        /* The warm-up reads the whole footprint at least once. */
        double warm = fmin(ceil((double)n / (double)global) + 4, 1u << 24);
        struct workload w = { k, global, local, 4, 4, (cl_uint)warm, 1u << 24,
                              64.0 * global, runs_before_launch, &s };
        const cl_uint n32 = (cl_uint)n;
        const struct bench_arg args[] = { BENCH_ARG(0, buf), BENCH_ARG(2, n32) };
        return MEASURE_RATE_WITH(b, &w, "measure_read_runs", args, out);
    }
    uint64_t n = bytes / 16;
    uint64_t groups_needed = (n / 4 + local - 1) / local;
    if (global > groups_needed * local)
        global = groups_needed * local;
    struct workload w = { k, global, local, 3, 1, 1, 1u << 24, 16.0 * n, NULL, NULL };
    const cl_uint n32 = (cl_uint)n;
    const struct bench_arg args[] = { BENCH_ARG(0, buf), BENCH_ARG(2, n32) };
    return MEASURE_RATE_WITH(b, &w, "measure_read", args, out);
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
    double plateau = measure_stat_of(window, nw).median;
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
    uint64_t limit = min_u64(min_u64(b->ctx->dev.max_alloc, b->ctx->dev.usable_mem / 4), 4 * GiB);
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
        bench_progress(b, stage);
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

uint32_t measure_sweep_steps(const struct bench *b)
{
    uint64_t lo, hi, sizes[CLATTN_SWEEP_MAX];
    plan_sweep(b, &lo, &hi);
    return sweep_footprints(lo, hi, sizes, CLATTN_SWEEP_MAX - REFINE_POINTS) + REFINE_POINTS;
}

int measure_sweep(struct bench *b, clattn_measurement *m)
{
    uint64_t lo, hi, sizes[CLATTN_SWEEP_MAX];
    plan_sweep(b, &lo, &hi);
    uint32_t count = sweep_footprints(lo, hi, sizes, CLATTN_SWEEP_MAX - REFINE_POINTS);
    if (!count)
        return 0;
    cl_kernel k = NULL;
    cl_mem buf = NULL, sink = NULL;
    cl_int err;
    size_t global = bench_filling_global(b);
    int rc = kernel_get(b->ctx, "measure/measure.cl", "",
                               b->is_cpu ? "measure_read_runs" : "measure_read", &k);
    if (rc)
        return rc;
    if ((rc = bench_filled_buffer(b, sizes[count - 1], &buf)))
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
        bench_progress(b, stage);
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
