/* SPDX-License-Identifier: MIT */
/* The Hopper warpgroup MMA rate (cl/measure/wgmma.cl, an embedded PTX
 * program binary made at build time by cl/ptxgen.py). The binary is built
 * and run in an OpenCL context of its own: a driver that refuses it or a
 * launch that faults is written into the measurement (wgmma_status,
 * wgmma_error) and never fails the call, nor marks the caller's context
 * lost. On NVIDIA a fault may still spoil later work in the same process
 * (../shared/gpu/README.md: every later build fails), which is why this
 * runs last. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/build.h"
#include "device/kernel_source.h"
#include "measure/measure.h"

#define WGMMA_BINARY "measure_wgmma.ptx"
#define WGMMA_GROUP 256          /* two warpgroups (the kernel's reqd size) */
#define WGMMA_GROUPS_PER_CU 2    /* ~90 registers x 256: two groups fit an SM */
#define WGMMA_PER_ROUND 8        /* as in cl/measure/wgmma.cl */
#define WGMMA_FLOP (2.0 * 64 * 128 * 16)

static int run_wgmma(struct bench *b, clattn_ctx *sub, clattn_stat *out)
{
    cl_program prog = NULL;
    cl_kernel k = NULL;
    cl_mem sink = NULL;
    cl_int err;
    int rc = program_build_ptx(sub->context, sub->device, sub->dev.label, WGMMA_BINARY, &prog);
    if (rc)
        return rc;
    k = clCreateKernel(prog, "measure_wgmma", &err);
    if (err != CL_SUCCESS) {
        rc = clattn_fail_cl(err, "clCreateKernel(measure_wgmma)");
        goto release_program;
    }
    const size_t global = (size_t)sub->dev.compute_units * WGMMA_GROUPS_PER_CU * WGMMA_GROUP;
    struct workload w = { k, global, WGMMA_GROUP, 1, 1, 1, 1u << 24, 0, NULL, NULL };
    w.units_per_work = (double)(global / 128) * WGMMA_PER_ROUND * WGMMA_FLOP;
    sink = clCreateBuffer(sub->context, CL_MEM_WRITE_ONLY, global * sizeof(float), NULL, &err);
    if (err != CL_SUCCESS) {
        rc = clattn_fail_cl(err, "clCreateBuffer(measure wgmma)");
        goto release_kernel;
    }
    const cl_uint seed = 0x1234u;
    const struct bench_arg args[] = { BENCH_ARG(0, sink), BENCH_ARG(2, seed) };
    struct bench own = *b;
    own.ctx = sub;
    own.profiling = 1;
    rc = MEASURE_RATE_WITH(&own, &w, "measure_wgmma", args, out);
    clReleaseMemObject(sink);
release_kernel:
    clReleaseKernel(k);
release_program:
    clReleaseProgram(prog);
    return rc;
}

void measure_wgmma(struct bench *b, clattn_measurement *m)
{
    if (b->ctx->dev.nv_cc != 90)
        return;
    const char *text;
    size_t len;
    if (clattn_embedded_binary(WGMMA_BINARY, &text, &len) < 0) {
        clattn_clear_error(); /* a build without the PTX: n/a, not a failure */
        return;
    }
    clattn_ctx *sub = NULL;
    clattn_stat rate = { 0, 0, 0, 0 };
    int rc = ctx_open_sibling(b->ctx, &sub);
    if (rc == 0)
        rc = run_wgmma(b, sub, &rate);
    if (rc == 0) {
        m->flops_wgmma_f16 = rate;
    } else {
        m->wgmma_status = rc;
        snprintf(m->wgmma_error, sizeof m->wgmma_error, "%s%s", clattn_last_error_detail(),
                 sub && sub->lost ? " (the measurement's own context was lost)" : "");
        clattn_clear_error();
    }
    ctx_close_sibling(&sub);
}
