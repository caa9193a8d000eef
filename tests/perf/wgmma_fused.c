/* SPDX-License-Identifier: MIT */
/*
 * Standalone harness for cl/fused_wgmma.cl, the first Hopper wgmma fused
 * attention kernel (issue 13), before it joins the library's kernel table:
 * builds the embedded PTX program binary with clCreateProgramWithBinary on
 * the first compute capability 9.0 device, checks B=1 H=1 N=256 d=128 fp16
 * against the library's double-precision reference, then times
 * B=8 H=32 N=4096 and prints TFLOP/s (4 B H N^2 d / time).
 *
 * The V descriptor's two byte offsets (which field holds the K and which the
 * N distance for an MN-major operand) are an argument of the kernel: the
 * documented reading (128, 1024) is tried first and the swapped one only if
 * it fails, so the run also says which is right. Both stay inside the tile.
 *
 * Exit status: 0 PASS (and timed), 1 FAIL or an OpenCL error, 77 no sm_90
 * device or no PTX in this build. A fault loses the context: run this in
 * a process of its own.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CL/cl.h>

#include "clattn/clattn.h"
#include "device/kernel_source.h" /* the embedded table, compiled into this tool */

#define D 128
#define BM 64
#define CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV 0x4000
#define CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV 0x4001

#define CHECK(call)                                                                    \
    do {                                                                               \
        cl_int err_ = (call);                                                          \
        if (err_ != CL_SUCCESS) {                                                      \
            fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, (int)err_); \
            goto fail;                                                                 \
        }                                                                              \
    } while (0)

struct gpu {
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    cl_program program;
    cl_kernel kernel;
};

static int find_device(cl_device_id *out)
{
    cl_platform_id plats[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS || np == 0)
        return -1;
    for (cl_uint p = 0; p < np && p < 16; p++) {
        cl_device_id devs[16];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_GPU, 16, devs, &nd) != CL_SUCCESS)
            continue;
        for (cl_uint i = 0; i < nd && i < 16; i++) {
            cl_uint major = 0, minor = 0;
            if (clGetDeviceInfo(devs[i], CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, sizeof major,
                                &major, NULL) != CL_SUCCESS ||
                clGetDeviceInfo(devs[i], CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV, sizeof minor,
                                &minor, NULL) != CL_SUCCESS)
                continue;
            if (major == 9 && minor == 0) {
                *out = devs[i];
                return 0;
            }
        }
    }
    return -1;
}

static int build(struct gpu *g)
{
    const char *text = NULL;
    size_t len = 0;
    for (size_t i = 0; i < clattn_embedded_kernel_count; i++)
        if (!strcmp(clattn_embedded_kernels[i].name, "fused_wgmma.ptx")) {
            text = clattn_embedded_kernels[i].source;
            len = clattn_embedded_kernels[i].length;
        }
    if (!text) {
        fprintf(stderr, "fused_wgmma.ptx is not in this build (meson option ptx: clang + "
                        "libclc at build time)\n");
        return 77;
    }
    cl_int err, status = CL_SUCCESS;
    const size_t size = len + 1; /* the PTX text with its NUL */
    const unsigned char *bin = (const unsigned char *)text;
    g->program = clCreateProgramWithBinary(g->context, 1, &g->device, &size, &bin, &status, &err);
    if (err != CL_SUCCESS || status != CL_SUCCESS) {
        fprintf(stderr, "clCreateProgramWithBinary -> %d (binary status %d)\n", (int)err,
                (int)status);
        return 1;
    }
    err = clBuildProgram(g->program, 1, &g->device, "", NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[8192] = "";
        clGetProgramBuildInfo(g->program, g->device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log,
                              NULL);
        fprintf(stderr, "clBuildProgram -> %d\n%s\n", (int)err, log);
        return 1;
    }
    g->kernel = clCreateKernel(g->program, "fused_wgmma", &err);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clCreateKernel(fused_wgmma) -> %d\n", (int)err);
        return 1;
    }
    return 0;
}

/* One launch over bh heads of n rows; *seconds from its profiling event. */
static int launch(struct gpu *g, cl_mem q, cl_mem k, cl_mem v, cl_mem o, cl_uint n, size_t bh,
                  cl_uint v_lbo, cl_uint v_sbo, double *seconds)
{
    const float scale_log2 = (float)(1.0 / sqrt((double)D) * 1.4426950408889634);
    cl_event ev = NULL;
    cl_ulong t0 = 0, t1 = 0;
    const size_t global[2] = { (size_t)(n / BM) * 128, bh }, local[2] = { 128, 1 };
    CHECK(clSetKernelArg(g->kernel, 0, sizeof q, &q));
    CHECK(clSetKernelArg(g->kernel, 1, sizeof k, &k));
    CHECK(clSetKernelArg(g->kernel, 2, sizeof v, &v));
    CHECK(clSetKernelArg(g->kernel, 3, sizeof o, &o));
    CHECK(clSetKernelArg(g->kernel, 4, sizeof n, &n));
    CHECK(clSetKernelArg(g->kernel, 5, sizeof scale_log2, &scale_log2));
    CHECK(clSetKernelArg(g->kernel, 6, sizeof v_lbo, &v_lbo));
    CHECK(clSetKernelArg(g->kernel, 7, sizeof v_sbo, &v_sbo));
    CHECK(clEnqueueNDRangeKernel(g->queue, g->kernel, 2, NULL, global, local, 0, NULL, &ev));
    CHECK(clWaitForEvents(1, &ev));
    CHECK(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL));
    CHECK(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL));
    clReleaseEvent(ev);
    if (seconds)
        *seconds = 1e-9 * (double)(t1 - t0);
    return 0;
fail:
    if (ev)
        clReleaseEvent(ev);
    return 1;
}

static cl_mem upload(struct gpu *g, const void *host, size_t bytes)
{
    cl_int err;
    cl_mem m = clCreateBuffer(g->context, CL_MEM_READ_WRITE | (host ? CL_MEM_COPY_HOST_PTR : 0),
                              bytes, (void *)host, &err);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clCreateBuffer(%zu bytes) -> %d\n", bytes, (int)err);
        return NULL;
    }
    return m;
}

/* B=1 H=1 N=256 against the reference, with one reading of V's descriptor.
 * Returns 0 PASS, 1 FAIL, -1 an OpenCL error (the context may be lost). */
static int check_small(struct gpu *g, cl_uint v_lbo, cl_uint v_sbo)
{
    const clattn_shape shape = { 1, 1, 1, 256, 256, D, CLATTN_F16 };
    const size_t elems = 256 * D, bytes = elems * 2;
    uint16_t *hq = malloc(bytes), *hk = malloc(bytes), *hv = malloc(bytes), *ho = malloc(bytes);
    double *ref = malloc(elems * sizeof *ref);
    cl_mem q = NULL, k = NULL, v = NULL, o = NULL;
    int rc = -1;
    if (!hq || !hk || !hv || !ho || !ref) {
        fprintf(stderr, "out of host memory\n");
        goto done;
    }
    clattn_options opts;
    clattn_default_options(&opts);
    if (clattn_random_fill(hq, elems, CLATTN_F16, 1) || clattn_random_fill(hk, elems, CLATTN_F16, 2) ||
        clattn_random_fill(hv, elems, CLATTN_F16, 3) ||
        clattn_reference(&shape, &opts, hq, hk, hv, ref)) {
        fprintf(stderr, "reference: %s\n", clattn_last_error_detail());
        goto done;
    }
    memset(ho, 0xff, bytes); /* NaN: an element the kernel misses shows */
    if (!(q = upload(g, hq, bytes)) || !(k = upload(g, hk, bytes)) || !(v = upload(g, hv, bytes)) ||
        !(o = upload(g, ho, bytes)))
        goto done;
    if (launch(g, q, k, v, o, 256, 1, v_lbo, v_sbo, NULL))
        goto done;
    cl_int err = clEnqueueReadBuffer(g->queue, o, CL_TRUE, 0, bytes, ho, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clEnqueueReadBuffer -> %d\n", (int)err);
        goto done;
    }
    double max_abs = 0, rel_l2 = 0, tol_abs = 0, tol_rel = 0;
    size_t nans = 0;
    clattn_compare(&shape, ho, ref, &max_abs, &rel_l2, &nans);
    clattn_tolerance(CLATTN_F16, &tol_abs, &tol_rel);
    rc = max_abs <= tol_abs && rel_l2 <= tol_rel && nans == 0 ? 0 : 1;
    printf("check B=1 H=1 N=256 d=128 fp16, V descriptor lbo=%u sbo=%u: max abs error %.3g "
           "(tolerance %.3g), rel L2 %.3g (tolerance %.3g), NaN %zu: %s\n",
           (unsigned)v_lbo, (unsigned)v_sbo, max_abs, tol_abs, rel_l2, tol_rel, nans,
           rc ? "FAIL" : "PASS");
    printf("  out[0][0..3] = %.5f %.5f %.5f %.5f, reference %.5f %.5f %.5f %.5f\n",
           clattn_f16_to_f32(ho[0]), clattn_f16_to_f32(ho[1]), clattn_f16_to_f32(ho[2]),
           clattn_f16_to_f32(ho[3]), ref[0], ref[1], ref[2], ref[3]);
done:
    if (q)
        clReleaseMemObject(q);
    if (k)
        clReleaseMemObject(k);
    if (v)
        clReleaseMemObject(v);
    if (o)
        clReleaseMemObject(o);
    free(hq);
    free(hk);
    free(hv);
    free(ho);
    free(ref);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* B=8 H=32 N=4096: median of 10 timed launches after one untimed. */
static int time_large(struct gpu *g, cl_uint v_lbo, cl_uint v_sbo)
{
    const size_t b = 8, h = 32, n = 4096, elems = b * h * n * D, bytes = elems * 2;
    uint16_t *host = malloc(bytes);
    cl_mem q = NULL, k = NULL, v = NULL, o = NULL;
    int rc = 1;
    if (!host) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }
    uint32_t x = 12345u; /* halves in about [-1, 1): timing needs no better */
    for (size_t i = 0; i < elems; i++) {
        x = x * 1664525u + 1013904223u;
        host[i] = (uint16_t)(0x3800u | ((x >> 16) & 0x83ffu));
    }
    if (!(q = upload(g, host, bytes)) || !(k = upload(g, host, bytes)) ||
        !(v = upload(g, host, bytes)) || !(o = upload(g, NULL, bytes)))
        goto done;
    double t[10];
    if (launch(g, q, k, v, o, (cl_uint)n, b * h, v_lbo, v_sbo, NULL))
        goto done;
    for (int i = 0; i < 10; i++)
        if (launch(g, q, k, v, o, (cl_uint)n, b * h, v_lbo, v_sbo, &t[i]))
            goto done;
    qsort(t, 10, sizeof t[0], cmp_double);
    const double flop = 4.0 * b * h * (double)n * n * D;
    /* One head's first row, to see that the output is finite. */
    cl_int err = clEnqueueReadBuffer(g->queue, o, CL_TRUE, 0, D * 2, host, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clEnqueueReadBuffer -> %d\n", (int)err);
        goto done;
    }
    int finite = 1;
    for (int i = 0; i < D; i++)
        finite &= isfinite(clattn_f16_to_f32(host[i]));
    printf("time B=8 H=32 N=4096 d=128 fp16: median %.3f ms (min %.3f, max %.3f), %.1f TFLOP/s "
           "(best %.1f); first row %s\n",
           1e3 * (t[4] + t[5]) / 2, 1e3 * t[0], 1e3 * t[9], flop / ((t[4] + t[5]) / 2) / 1e12,
           flop / t[0] / 1e12, finite ? "finite" : "NOT finite");
    rc = finite ? 0 : 1;
done:
    if (q)
        clReleaseMemObject(q);
    if (k)
        clReleaseMemObject(k);
    if (v)
        clReleaseMemObject(v);
    if (o)
        clReleaseMemObject(o);
    free(host);
    return rc;
}

int main(void)
{
    struct gpu g = { 0 };
    int rc = 1;
    cl_int err;
    if (find_device(&g.device)) {
        fprintf(stderr, "no OpenCL device of compute capability 9.0: skipped\n");
        return 77;
    }
    char name[256] = "";
    clGetDeviceInfo(g.device, CL_DEVICE_NAME, sizeof name, name, NULL);
    printf("device: %s\n", name);
    g.context = clCreateContext(NULL, 1, &g.device, NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clCreateContext -> %d\n", (int)err);
        return 1;
    }
    g.queue = clCreateCommandQueue(g.context, g.device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clCreateCommandQueue -> %d\n", (int)err);
        goto done;
    }
    if ((rc = build(&g)))
        goto done;
    /* The documented reading first (leading = K distance, stride = N). */
    cl_uint lbo = 128, sbo = 1024;
    int c = check_small(&g, lbo, sbo);
    if (c == 1) {
        lbo = 1024;
        sbo = 128;
        c = check_small(&g, lbo, sbo);
    }
    if (c != 0) {
        printf("FAIL\n");
        rc = 1;
        goto done;
    }
    printf("PASS (V descriptor lbo=%u sbo=%u)\n", (unsigned)lbo, (unsigned)sbo);
    rc = time_large(&g, lbo, sbo);
done:
    if (g.kernel)
        clReleaseKernel(g.kernel);
    if (g.program)
        clReleaseProgram(g.program);
    if (g.queue)
        clReleaseCommandQueue(g.queue);
    clReleaseContext(g.context);
    return rc;
}
