/* SPDX-License-Identifier: MIT */
/*
 * Drives tests/perf/probe_stream.cl on the first GPU: for each variant
 * "METHOD,BN,STAGES,GROUPS" it builds the kernel, checks that the sum of
 * every word it read equals the host's, and times REPS launches (events,
 * median). Then the many-warp reference read. One JSON line per variant:
 * the K + V bytes read and TB/s.
 *
 * usage: probe_stream KERNEL.cl MB REPS METHOD,BN,STAGES,GROUPS[,INTERLEAVE]...
 * (MB: the size of K and of V each; measurement tool, not part of the library)
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = 0;
    fclose(f);
    return s;
}

static uint32_t word(size_t i, uint32_t salt)
{
    uint32_t x = (uint32_t)i * 2654435761u ^ (uint32_t)(i >> 13) ^ salt;
    return x ^ (x >> 15);
}

#define CHECK(x)                                                                        \
    do {                                                                                \
        cl_int e_ = (x);                                                                \
        if (e_ != CL_SUCCESS) {                                                         \
            fprintf(stderr, "probe_stream: %s: %d\n", #x, e_);                          \
            return 1;                                                                   \
        }                                                                               \
    } while (0)

/* Runs `kern` over `global` work-items (work-groups of `local`) REPS times;
 * median seconds in *t; the sum of `out` in *sum. */
static int time_kernel(cl_command_queue q, cl_kernel kern, size_t global, size_t local, int reps,
                       cl_mem out, double *t, uint32_t *sum)
{
    double *ts = calloc((size_t)reps, sizeof *ts);
    uint32_t *o = malloc(global * sizeof *o);
    if (!ts || !o)
        return 1;
    for (int r = -1; r < reps; r++) {
        cl_event ev;
        CHECK(clEnqueueNDRangeKernel(q, kern, 1, NULL, &global, &local, 0, NULL, &ev));
        CHECK(clWaitForEvents(1, &ev));
        cl_ulong a, b;
        CHECK(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof a, &a, NULL));
        CHECK(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof b, &b, NULL));
        clReleaseEvent(ev);
        if (r >= 0)
            ts[r] = 1e-9 * (double)(b - a);
    }
    CHECK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, global * sizeof *o, o, 0, NULL, NULL));
    uint32_t s = 0;
    for (size_t i = 0; i < global; i++)
        s += o[i];
    *sum = s;
    qsort(ts, (size_t)reps, sizeof *ts, cmp_double);
    *t = ts[reps / 2];
    free(ts);
    free(o);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s KERNEL.cl MB REPS METHOD,BN,STAGES,GROUPS...\n", argv[0]);
        return 2;
    }
    char *src = read_text(argv[1]);
    const size_t bytes = (size_t)atol(argv[2]) << 20, words = bytes / 4;
    const int reps = atoi(argv[3]);
    if (!src || !bytes || reps < 1)
        return 2;

    cl_platform_id plats[8];
    cl_uint np = 0;
    CHECK(clGetPlatformIDs(8, plats, &np));
    cl_device_id dev = NULL;
    for (cl_uint i = 0; i < np && !dev; i++)
        if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_GPU, 1, &dev, NULL) != CL_SUCCESS)
            dev = NULL;
    if (!dev) {
        fprintf(stderr, "probe_stream: no GPU\n");
        return 77;
    }
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
    CHECK(err);

    uint32_t *h = malloc(bytes);
    if (!h)
        return 1;
    cl_mem kv[2];
    for (int t = 0; t < 2; t++) {
        for (size_t i = 0; i < words; i++)
            h[i] = word(i, t ? 0x9e3779b9u : 0);
        kv[t] = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, h, &err);
        CHECK(err);
    }
    cl_mem out = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, 1 << 24, NULL, &err);
    CHECK(err);

    for (int a = 4; a < argc + 1; a++) {
        int method, bn, stages, groups, inter = 1;
        const int ref = a == argc;
        if (ref) {
            method = -1, bn = stages = 0, groups = 132 * 8;
        } else if (sscanf(argv[a], "%d,%d,%d,%d,%d", &method, &bn, &stages, &groups, &inter) < 4 ||
                   inter < 1 || groups % inter) {
            fprintf(stderr, "probe_stream: bad variant %s\n", argv[a]);
            return 2;
        }
        char opts[128];
        snprintf(opts, sizeof opts, "-DMETHOD=%d -DBN=%d -DSTAGES=%d -DINTERLEAVE=%d",
                 ref ? 0 : method, ref ? 32 : bn, ref ? 3 : stages, inter);
        cl_program p = clCreateProgramWithSource(ctx, 1, (const char **)&src, NULL, &err);
        CHECK(err);
        if (clBuildProgram(p, 1, &dev, opts, NULL, NULL) != CL_SUCCESS) {
            char log[8192] = "";
            clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
            printf("{\"variant\": \"%s\", \"build\": \"failed\"}\n%s\n", argv[a], log);
            clReleaseProgram(p);
            continue;
        }
        cl_kernel kern = clCreateKernel(p, ref ? "probe_read" : "probe_stream", &err);
        CHECK(err);
        /* Rows each of K and V; a group reads `blocks` tiles of BN rows. */
        const size_t rows = bytes / 256;
        cl_uint n_arg;
        size_t global, local, read_words;
        if (ref) {
            local = 256, global = (size_t)groups * local;
            n_arg = (cl_uint)(bytes / 16);
            read_words = words;
        } else {
            local = 32, global = (size_t)groups * 32;
            n_arg = (cl_uint)(rows / ((size_t)groups * (size_t)bn));
            read_words = (size_t)n_arg * groups * bn * 64;
        }
        CHECK(clSetKernelArg(kern, 0, sizeof(cl_mem), &kv[0]));
        CHECK(clSetKernelArg(kern, 1, sizeof(cl_mem), &kv[1]));
        CHECK(clSetKernelArg(kern, 2, sizeof n_arg, &n_arg));
        CHECK(clSetKernelArg(kern, 3, sizeof(cl_mem), &out));
        double t;
        uint32_t got;
        if (time_kernel(q, kern, global, local, reps, out, &t, &got))
            return 1;
        uint32_t want = 0;
        for (int tt = 0; tt < 2; tt++)
            for (size_t i = 0; i < read_words; i++)
                want += word(i, tt ? 0x9e3779b9u : 0);
        const double moved = 2.0 * 4.0 * (double)read_words;
        printf("{\"variant\": \"%s\", \"method\": %d, \"bn\": %d, \"stages\": %d, "
               "\"groups\": %d, \"interleave\": %d, \"bytes\": %.0f, \"s\": %.7f, \"tbs\": %.3f, \"check\": \"%s\"}\n",
               ref ? "reference" : argv[a], method, bn, stages, groups, inter, moved, t,
               moved / t * 1e-12, got == want ? "ok" : "WRONG");
        fflush(stdout);
        clReleaseKernel(kern);
        clReleaseProgram(p);
    }
    free(h);
    free(src);
    return 0;
}
