/* SPDX-License-Identifier: MIT */
/*
 * Standalone harness for cl/fused_wgmma.cl, the Hopper wgmma fused attention
 * kernel (issue 13), before it joins the library's kernel table. One variant
 * per process (a fault loses the context):
 *
 *   wgmma_fused VARIANT [N,N,...]
 *
 * VARIANT is one of cl/meson.build's fused_wgmma_variants, e.g.
 * s2_w2_n64_o0_m1 (STAGES, NWG, BN, OVERLAP, LOADMAP; an optional _p<PRODUCER>
 * adds the producer warpgroup to the launch, a trailing _r<RESCALE> changes
 * nothing in it): the harness builds the
 * embedded fused_wgmma_VARIANT.ptx with clCreateProgramWithBinary on the
 * first compute capability 9.0 device and reads the launch geometry from the
 * name. It checks B=1 H=2 d=128 fp16 against the library's double-precision
 * reference on Nq = Nk = 256 and 1024 without a mask, 256 top-left causal,
 * and Nq != Nk (128 x 384, 384 x 128) under both causal alignments (Nq a
 * multiple of 64 NWG and Nk of BN: the kernel supports no other N), and only
 * if all pass (one summary line; a case's own line only when it fails)
 * times B=8 H=32 at each N (default 4096), no mask and causal (TFLOP/s
 * counted as 4 B H N^2 d, half that when causal).
 *
 * Exit status: 0 PASS (and timed), 1 FAIL or an OpenCL error, 77 no sm_90
 * device or no such PTX in this build.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CL/cl.h>

#include "clattn/clattn.h"
#include "device/kernel_source.h" /* the embedded table, compiled into this tool */

#define D 128
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
    unsigned stages, nwg, bn, overlap, loadmap, producer; /* from the variant's name */
    char ptx[96];
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
        if (!strcmp(clattn_embedded_kernels[i].name, g->ptx)) {
            text = clattn_embedded_kernels[i].source;
            len = clattn_embedded_kernels[i].length;
        }
    if (!text) {
        fprintf(stderr, "%s is not in this build (cl/meson.build's fused_wgmma_variants; meson "
                        "option ptx: clang + libclc at build time)\n", g->ptx);
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

/* One launch over bh heads of nq queries and nk keys; *seconds from its
 * profiling event. */
static int launch(struct gpu *g, cl_mem q, cl_mem k, cl_mem v, cl_mem o, cl_uint nq, cl_uint nk,
                  size_t bh, cl_uint causal, double *seconds)
{
    const float scale_log2 = (float)(1.0 / sqrt((double)D) * 1.4426950408889634);
    cl_event ev = NULL;
    cl_ulong t0 = 0, t1 = 0;
    /* A producer warpgroup (PRODUCER >= 1) comes on top of the consumers. */
    const size_t threads = 128 * (size_t)(g->nwg + (g->producer ? 1 : 0)), bm = 64 * (size_t)g->nwg;
    const size_t global[2] = { nq / bm * threads, bh }, local[2] = { threads, 1 };
    CHECK(clSetKernelArg(g->kernel, 0, sizeof q, &q));
    CHECK(clSetKernelArg(g->kernel, 1, sizeof k, &k));
    CHECK(clSetKernelArg(g->kernel, 2, sizeof v, &v));
    CHECK(clSetKernelArg(g->kernel, 3, sizeof o, &o));
    CHECK(clSetKernelArg(g->kernel, 4, sizeof nq, &nq));
    CHECK(clSetKernelArg(g->kernel, 5, sizeof nk, &nk));
    CHECK(clSetKernelArg(g->kernel, 6, sizeof scale_log2, &scale_log2));
    CHECK(clSetKernelArg(g->kernel, 7, sizeof causal, &causal));
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

/* Releases the buffers of a check or a timing (NULL: not made). */
static void release_buffers(cl_mem q, cl_mem k, cl_mem v, cl_mem o)
{
    const cl_mem m[4] = { q, k, v, o };
    for (int i = 0; i < 4; i++)
        if (m[i])
            clReleaseMemObject(m[i]);
}

static const char *causal_name[] = { "none", "top-left", "bottom-right" };

/* B=1 H=2 Nq x Nk against the reference. Returns 0 PASS, 1 FAIL, -1 an
 * OpenCL error (the context may be lost). Prints a line only on failure;
 * *worst_abs and *worst_rel take the largest errors seen. */
static int check(struct gpu *g, size_t nq, size_t nk, cl_uint causal, double *worst_abs,
                 double *worst_rel)
{
    const clattn_shape shape = { 1, 2, 2, nq, nk, D, CLATTN_F16 };
    const size_t qe = 2 * nq * D, ke = 2 * nk * D;
    uint16_t *hq = malloc(qe * 2), *hk = malloc(ke * 2), *hv = malloc(ke * 2), *ho = malloc(qe * 2);
    double *ref = malloc(qe * sizeof *ref);
    cl_mem q = NULL, k = NULL, v = NULL, o = NULL;
    int rc = -1;
    if (!hq || !hk || !hv || !ho || !ref) {
        fprintf(stderr, "out of host memory\n");
        goto done;
    }
    clattn_options opts;
    clattn_default_options(&opts);
    opts.causal = (clattn_causal)causal;
    if (clattn_random_fill(hq, qe, CLATTN_F16, 1) || clattn_random_fill(hk, ke, CLATTN_F16, 2) ||
        clattn_random_fill(hv, ke, CLATTN_F16, 3) ||
        clattn_reference(&shape, &opts, hq, hk, hv, ref)) {
        fprintf(stderr, "reference: %s\n", clattn_last_error_detail());
        goto done;
    }
    memset(ho, 0xff, qe * 2); /* NaN: an element the kernel misses shows */
    if (!(q = upload(g, hq, qe * 2)) || !(k = upload(g, hk, ke * 2)) ||
        !(v = upload(g, hv, ke * 2)) || !(o = upload(g, ho, qe * 2)))
        goto done;
    if (launch(g, q, k, v, o, (cl_uint)nq, (cl_uint)nk, 2, causal, NULL))
        goto done;
    cl_int err = clEnqueueReadBuffer(g->queue, o, CL_TRUE, 0, qe * 2, ho, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clEnqueueReadBuffer -> %d\n", (int)err);
        goto done;
    }
    double max_abs = 0, rel_l2 = 0, tol_abs = 0, tol_rel = 0;
    size_t nans = 0;
    clattn_compare(&shape, ho, ref, &max_abs, &rel_l2, &nans);
    clattn_tolerance(CLATTN_F16, &tol_abs, &tol_rel);
    rc = max_abs <= tol_abs && rel_l2 <= tol_rel && nans == 0 ? 0 : 1;
    if (max_abs > *worst_abs || isnan(max_abs))
        *worst_abs = max_abs;
    if (rel_l2 > *worst_rel || isnan(rel_l2))
        *worst_rel = rel_l2;
    if (rc)
        printf("  check B=1 H=2 Nq=%zu Nk=%zu causal=%s: max abs %.3g (tol %.3g), rel L2 %.3g "
           "(tol %.3g), NaN %zu: %s\n",
           nq, nk, causal_name[causal], max_abs, tol_abs, rel_l2, tol_rel, nans,
           rc ? "FAIL" : "PASS");
    if (rc)
        printf("    out[0][0..3] = %.5f %.5f %.5f %.5f, reference %.5f %.5f %.5f %.5f\n",
               clattn_f16_to_f32(ho[0]), clattn_f16_to_f32(ho[1]), clattn_f16_to_f32(ho[2]),
               clattn_f16_to_f32(ho[3]), ref[0], ref[1], ref[2], ref[3]);
done:
    release_buffers(q, k, v, o);
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

/* B=8 H=32 Nq = Nk = n, no mask and top-left causal: median of 10 timed
 * launches after one untimed. */
static int time_large(struct gpu *g, const char *variant, size_t n)
{
    const size_t b = 8, h = 32, elems = b * h * n * D, bytes = elems * 2;
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
    for (cl_uint causal = 0; causal < 2; causal++) {
        double t[10];
        if (launch(g, q, k, v, o, (cl_uint)n, (cl_uint)n, b * h, causal, NULL))
            goto done;
        for (int i = 0; i < 10; i++)
            if (launch(g, q, k, v, o, (cl_uint)n, (cl_uint)n, b * h, causal, &t[i]))
                goto done;
        qsort(t, 10, sizeof t[0], cmp_double);
        const double flop = 4.0 * b * h * (double)n * n * D * (causal ? 0.5 : 1.0);
        /* One head's last row, to see that the output is finite. */
        cl_int err = clEnqueueReadBuffer(g->queue, o, CL_TRUE, (n - 1) * D * 2, D * 2, host, 0,
                                         NULL, NULL);
        if (err != CL_SUCCESS) {
            fprintf(stderr, "clEnqueueReadBuffer -> %d\n", (int)err);
            goto done;
        }
        int finite = 1;
        for (int i = 0; i < D; i++)
            finite &= isfinite(clattn_f16_to_f32(host[i]));
        const double med = (t[4] + t[5]) / 2;
        printf("RESULT %s B=8 H=32 N=%zu d=128 fp16 causal=%u: median %.3f ms (min %.3f, max "
               "%.3f), %.1f TFLOP/s (best %.1f)%s\n",
               variant, n, (unsigned)causal, 1e3 * med, 1e3 * t[0], 1e3 * t[9],
               flop / med / 1e12, flop / t[0] / 1e12, finite ? "" : "; output NOT finite");
        fflush(stdout);
        if (!finite)
            goto done;
    }
    rc = 0;
done:
    release_buffers(q, k, v, o);
    free(host);
    return rc;
}

int main(int argc, char **argv)
{
    struct gpu g = { 0 };
    int rc = 1;
    cl_int err;
    const int fields = argc < 2 ? 0 : sscanf(argv[1], "s%u_w%u_n%u_o%u_m%u_p%u", &g.stages, &g.nwg,
                                             &g.bn, &g.overlap, &g.loadmap, &g.producer);
    if (fields < 5 ||
        g.nwg < 1 || g.nwg > 3 || (g.bn != 64 && g.bn != 128)) {
        fprintf(stderr, "usage: %s s<STAGES>_w<NWG>_n<BN>_o<OVERLAP>_m<LOADMAP>[_p<PRODUCER>] "
                        "[N,N,...]\n",
                argv[0]);
        return 1;
    }
    snprintf(g.ptx, sizeof g.ptx, "fused_wgmma_%s.ptx", argv[1]);
    const char *ns = argc > 2 ? argv[2] : "4096";
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
    printf("variant %s: STAGES=%u NWG=%u (BM=%u, %u work-items) BN=%u OVERLAP=%u LOADMAP=%u "
           "PRODUCER=%u\n",
           argv[1], g.stages, g.nwg, 64 * g.nwg, 128 * (g.nwg + (g.producer ? 1 : 0)), g.bn,
           g.overlap, g.loadmap, g.producer);
    const struct { size_t nq, nk; cl_uint causal; } cases[] = {
        { 256, 256, 0 }, { 1024, 1024, 0 }, { 256, 256, 1 }, { 128, 384, 1 },
        { 128, 384, 2 }, { 384, 128, 1 }, { 384, 128, 2 },
    };
    int fails = 0, run = 0;
    double worst_abs = 0, worst_rel = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].nq % (64 * g.nwg) || cases[i].nk % g.bn) {
            printf("  check Nq=%zu Nk=%zu: not a multiple of the tiles, skipped\n", cases[i].nq,
                   cases[i].nk);
            continue;
        }
        const int c = check(&g, cases[i].nq, cases[i].nk, cases[i].causal, &worst_abs, &worst_rel);
        if (c < 0) {
            printf("FAIL %s (OpenCL error: the context may be lost)\n", argv[1]);
            rc = 1;
            goto done;
        }
        fails += c;
        run++;
    }
    printf("  checks (no mask 256, 1024; causal 256, 128x384, 384x128 both alignments): %d/%d "
           "pass, worst max abs %.3g, rel L2 %.3g\n", run - fails, run, worst_abs, worst_rel);
    if (fails) {
        printf("FAIL %s: %d check(s) failed, not timed\n", argv[1], fails);
        rc = 1;
        goto done;
    }
    printf("PASS %s\n", argv[1]);
    fflush(stdout);
    rc = 0;
    for (const char *p = ns; *p;) {
        char *end;
        const unsigned long n = strtoul(p, &end, 10);
        if (end == p || n == 0 || n % (64 * g.nwg) || n % g.bn) {
            fprintf(stderr, "bad N list '%s' (multiples of %u and %u)\n", ns, 64 * g.nwg, g.bn);
            rc = 1;
            break;
        }
        if ((rc = time_large(&g, argv[1], n)))
            break;
        p = *end == ',' ? end + 1 : end;
    }
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
