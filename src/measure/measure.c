/* SPDX-License-Identifier: MIT */
/* Measured ceilings (cl/measure/measure.cl): memory bandwidth, FMA rates and launch
 * latency, then the working-set sweep (measure_sweep.c); the saved file is
 * measure_file.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/abi.h"
#include "measure/measure.h"

void clattn_default_measure_options(clattn_measure_options *opts)
{
    if (!abi_init(opts, sizeof *opts))
        return;
    opts->repetitions = 7;
    opts->sweep = 1;
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
    int rc = kernel_get(b->ctx, "measure/measure.cl", "", "measure_empty", &k);
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
        double t0 = measure_now_seconds();
        for (int i = 0; i < batch && err == CL_SUCCESS; i++)
            err = clEnqueueNDRangeKernel(b->ctx->queue, k, 1, NULL, &one, &one, 0, NULL, NULL);
        if (err == CL_SUCCESS && (rc = ctx_finish(b->ctx, "clFinish(measure_empty)")) < 0)
            goto release_buffer;
        double t1 = measure_now_seconds();
        if (err == CL_SUCCESS)
            err = clEnqueueNDRangeKernel(b->ctx->queue, k, 1, NULL, &one, &one, 0, NULL, NULL);
        if (err == CL_SUCCESS && (rc = ctx_finish(b->ctx, "clFinish(measure_empty)")) < 0)
            goto release_buffer;
        if (err != CL_SUCCESS) {
            rc = clattn_fail_cl(err, "clEnqueueNDRangeKernel(measure_empty)");
            goto release_buffer;
        }
        if (r > 0) { /* the first round warms up */
            pipelined[r - 1] = (t1 - t0) / batch;
            roundtrip[r - 1] = measure_now_seconds() - t1;
        }
    }
    m->launch_latency_s = measure_stat_of(pipelined, b->repetitions);
    m->launch_roundtrip_s = measure_stat_of(roundtrip, b->repetitions);
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
    int rc = kernel_get(b->ctx, "measure/measure.cl", options, "measure_fma", &k);
    if (rc == CLATTN_EBUILD && fp16) {
        clattn_clear_error();
        return 0; /* n/a: samples stay 0 */
    }
    if (rc)
        return rc;
    struct workload w = { k, bench_filling_global(b), bench_group_size(b), 1, 1, 1, 1u << 24, 0, NULL, NULL };
    w.units_per_work = (double)w.global * 32 * 2 * lanes;
    sink = clCreateBuffer(b->ctx->context, CL_MEM_WRITE_ONLY,
                          w.global * lanes * (fp16 ? 2 : 4), NULL, &err);
    if (err != CL_SUCCESS) {
        rc = clattn_fail_cl(err, "clCreateBuffer(measure flops)");
        goto release_kernel;
    }
    const float half_value = 0.5f;
    const struct bench_arg args[] = { BENCH_ARG(0, sink), BENCH_ARG(2, half_value),
                                      BENCH_ARG(3, half_value) };
    rc = MEASURE_RATE_WITH(b, &w, "measure_fma", args, out);
    clReleaseMemObject(sink);
release_kernel:
    clReleaseKernel(k);
    return rc;
}

/* Tensor-core rate of mma.sync (fp16 in, fp32 accumulate) on NVIDIA sm_80+,
 * the roof of the tensor-core kernels; other devices leave *out empty. */
static int measure_tensor(struct bench *b, clattn_stat *out)
{
    if (b->ctx->dev.nv_cc < 80)
        return 0;
    cl_kernel k = NULL;
    int rc = kernel_get(b->ctx, "measure/nv_mma.cl", "", "measure_mma", &k);
    if (rc == CLATTN_EBUILD) {
        clattn_clear_error();
        return 0; /* n/a */
    }
    if (rc)
        return rc;
    /* 32 warps per compute unit keep every tensor core fed. */
    const size_t global = (size_t)b->ctx->dev.compute_units * 1024;
    struct workload w = { k, global, 256, 1, 1, 1, 1u << 24, 0, NULL, NULL };
    w.units_per_work = (double)(global / 32) * 8 * 4096; /* FLOP per iteration */
    cl_int err;
    cl_mem sink = clCreateBuffer(b->ctx->context, CL_MEM_WRITE_ONLY, global * 4, NULL, &err);
    if (err != CL_SUCCESS) {
        clReleaseKernel(k);
        return clattn_fail_cl(err, "clCreateBuffer(measure mma)");
    }
    const cl_uint seed = 0x1234u;
    const struct bench_arg args[] = { BENCH_ARG(0, sink), BENCH_ARG(2, seed) };
    rc = MEASURE_RATE_WITH(b, &w, "measure_mma", args, out);
    clReleaseMemObject(sink);
    clReleaseKernel(k);
    return rc;
}

/* Read + write bandwidth of a float4 copy between two buffers of `bytes`. */
static int measure_bandwidth(struct bench *b, uint64_t bytes, clattn_stat *out)
{
    cl_kernel k = NULL;
    cl_mem src = NULL, dst = NULL;
    int rc = kernel_get(b->ctx, "measure/measure.cl", "", "measure_copy", &k);
    if (rc)
        return rc;
    if ((rc = bench_filled_buffer(b, bytes, &src)) || (rc = bench_filled_buffer(b, bytes, &dst)))
        goto release;
    struct workload w = { k, bench_filling_global(b), bench_group_size(b), 6, 1, 1, 1u << 16, 0, NULL, NULL };
    cl_uint n = (cl_uint)(bytes / 16);
    cl_uint count = (cl_uint)((n + w.global - 1) / w.global);
    /* GPU: grid-stride (coalesced); CPU: a contiguous run per work-item. */
    cl_uint item_stride = b->is_cpu ? count : 1, step = b->is_cpu ? 1 : (cl_uint)w.global;
    w.units_per_work = 2.0 * 16 * n;
    const struct bench_arg args[] = { BENCH_ARG(0, src),  BENCH_ARG(1, dst),
                                      BENCH_ARG(2, n),    BENCH_ARG(3, item_stride),
                                      BENCH_ARG(4, step), BENCH_ARG(5, count) };
    rc = MEASURE_RATE_WITH(b, &w, "measure_copy", args, out);
release:
    if (dst)
        clReleaseMemObject(dst);
    if (src)
        clReleaseMemObject(src);
    clReleaseKernel(k);
    return rc;
}

static uint64_t plan_bandwidth_bytes(const struct bench *b)
{
    uint64_t bytes = b->opts->bandwidth_bytes;
    if (!bytes) {
        bytes = min_u64(1 * GiB, min_u64(b->ctx->dev.max_alloc / 2, b->ctx->dev.usable_mem / 8));
        if (b->opts->quick)
            bytes = min_u64(bytes, 16 * MiB);
    }
    /* The copy indexes float4 with 32-bit integers. */
    bytes = min_u64(min_u64(bytes, b->ctx->dev.max_alloc), 16 * GiB - 64 * KiB);
    return bytes / (64 * KiB) * (64 * KiB);
}

static int run_steps(struct bench *b, clattn_measurement *m)
{
    int rc;
    uint64_t bw_bytes = plan_bandwidth_bytes(b);
    m->bandwidth_buffer_bytes = bw_bytes;
    bench_progress(b, "launch latency");
    if ((rc = measure_latency(b, m)))
        return rc;
    b->steps_done++;
    bench_progress(b, "fp32 FMA rate");
    if ((rc = measure_flops(b, 0, &m->flops_f32)))
        return rc;
    b->steps_done++;
    char stage[64];
    snprintf(stage, sizeof stage, "bandwidth, %.4g MiB copy", (double)bw_bytes / MiB);
    bench_progress(b, stage);
    if (bw_bytes && (rc = measure_bandwidth(b, bw_bytes, &m->bandwidth)))
        return rc;
    b->steps_done++;
    if (b->opts->sweep && (rc = measure_sweep(b, m)))
        return rc;
    /* Last: a build that fails must not disturb the other figures. */
    bench_progress(b, "fp16 FMA rate");
    /* Half arithmetic is tried where it is expected to build (see
     * clattn_device_props.fp16_builds): elsewhere the compiler's errors
     * would reach the caller's stderr. */
    const struct device_facts *dev = &b->ctx->dev;
    if ((dev->extensions.fp16 || dev->vendor == CLATTN_VENDOR_NVIDIA) &&
        (rc = measure_flops(b, 1, &m->flops_f16)))
        return rc;
    bench_progress(b, "tensor-core rate");
    if ((rc = measure_tensor(b, &m->flops_tensor_f16)))
        return rc;
    bench_progress(b, "warpgroup MMA rate");
    measure_wgmma(b, m);
    b->steps_done++;
    bench_progress(b, "done");
    return 0;
}

static int measure_run(clattn_ctx *ctx, const clattn_measure_options *caller,
                       clattn_measurement *out)
{
    int rc;
    clattn_measure_options resolved, *opts = &resolved;
    clattn_default_measure_options(&resolved);
    if (caller && (rc = abi_read(caller, &resolved, sizeof resolved, MEASURE_OPTIONS_FIRST_SIZE,
                                 "measure options", "clattn_default_measure_options")) < 0)
        return rc;
    CLATTN_CHECK_ARG(opts->repetitions >= 1 && opts->repetitions <= MAX_REPETITIONS);
    CLATTN_CHECK_ARG(opts->run_seconds >= 0 && opts->run_seconds <= 10);

    struct bench b = { .ctx = ctx,
                       .repetitions = opts->quick ? 3 : opts->repetitions,
                       .run_seconds = opts->run_seconds,
                       .opts = opts,
                       .steps_total = 4,
                       .started = measure_now_seconds() };
    cl_command_queue_properties qprops = 0;
    cl_int err = clGetCommandQueueInfo(ctx->queue, CL_QUEUE_PROPERTIES, sizeof qprops, &qprops,
                                       NULL);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clGetCommandQueueInfo(CL_QUEUE_PROPERTIES)");
    b.profiling = (qprops & CL_QUEUE_PROFILING_ENABLE) != 0;
    b.is_cpu = ctx->dev.is_cpu;
    b.vec_width = 1;
    if (b.is_cpu)
        while (b.vec_width < 16 && 2 * b.vec_width <= ctx->dev.native_float_width)
            b.vec_width *= 2;
    if (b.run_seconds == 0)
        b.run_seconds = b.is_cpu ? (opts->quick ? 5e-3 : 20e-3) : (opts->quick ? 1e-3 : 5e-3);
    if (opts->sweep)
        b.steps_total += measure_sweep_steps(&b);

    clattn_measurement_init(out);
    measurement_set_identity(out, &ctx->dev.identity);
    out->unix_time = (int64_t)time(NULL);
    out->quick = opts->quick != 0;
    if ((rc = run_steps(&b, out)))
        return rc;
    out->seconds = measure_now_seconds() - b.started;
    return 0;
}

int clattn_measure(clattn_ctx *ctx, const clattn_measure_options *opts,
                   clattn_measurement *out)
{
    clattn_clear_error();
    size_t out_size;
    int rc = measurement_out_size(out, &out_size);
    if (rc < 0)
        return rc;
    clattn_measurement *m = malloc(sizeof *m);
    if (!m)
        return clattn_fail(CLATTN_ENOMEM, "clattn_measure: %zu bytes", sizeof *m);
    if ((rc = ctx_enter(ctx)) == 0) {
        rc = measure_run(ctx, opts, m);
        rc = ctx_leave_with(ctx, rc);
    }
    if (rc == 0)
        abi_write(out, out_size, m, sizeof *m);
    free(m);
    return rc;
}
