/* Times the naive path stage by stage through the public API: Q K^T, the
 * softmax and P V, each from the profiling events of the kernels it
 * launched. The library enqueues without events, so every launch is seen
 * on its way to the loader with an event of its own (cli/launches.c); the
 * kernels launched before softmax_rows are Q K^T's, those after it P V's
 * (CLBlast's helper kernels included), a repack of O or a marker none of
 * them.
 *
 * usage: time_naive B,H,Hkv,Nq,Nk,d fp32|fp16 none|top-left|bottom-right
 *                   clblast|builtin reps
 * prints one JSON line: per call the seconds of each stage (first kernel
 * start to last kernel end of the stage) and of the whole path (first
 * kernel start to last kernel end), the process's CPU seconds per call, and
 * run_info.kernel. */
#define CL_TARGET_OPENCL_VERSION 120
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <clattn/clattn.h>

#include "launches.h"

/* The stage of each launch of one call, by its kernel's name: 0 Q K^T, 1
 * the softmax, 2 P V, 3 none (O's repack after the softmax). */
static void stages_of(const launch *l, size_t n, int *stage)
{
    int now = 0;
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(l[i].kernel, "softmax_rows"))
            now = 1;
        else if (now == 1)
            now = 2;
        stage[i] = !strcmp(l[i].kernel, "repack") && now == 2 ? 3 : now;
    }
}

static double cpu_seconds(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec +
           (double)u.ru_stime.tv_sec + 1e-6 * (double)u.ru_stime.tv_usec;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s B,H,Hkv,Nq,Nk,d fp32|fp16 none|top-left|bottom-right "
                        "clblast|builtin reps\n", argv[0]);
        return 2;
    }
    clattn_shape s = { 0 };
    if (sscanf(argv[1], "%zu,%zu,%zu,%zu,%zu,%zu", &s.batch, &s.heads, &s.kv_heads, &s.q_len,
               &s.kv_len, &s.head_dim) != 6)
        return 2;
    s.dtype = strcmp(argv[2], "fp16") ? CLATTN_F32 : CLATTN_F16;
    clattn_options o;
    clattn_default_options(&o);
    o.path = CLATTN_PATH_NAIVE;
    o.causal = !strcmp(argv[3], "top-left")       ? CLATTN_CAUSAL_TOP_LEFT
               : !strcmp(argv[3], "bottom-right") ? CLATTN_CAUSAL_BOTTOM_RIGHT
                                                  : CLATTN_CAUSAL_NONE;
    o.use_clblast = !strcmp(argv[4], "clblast");
    int reps = atoi(argv[5]);
    clattn_ctx *ctx;
    if (clattn_open(&ctx, NULL) < 0) {
        fprintf(stderr, "%s\n", clattn_last_error_detail());
        return 1;
    }
    cl_context cx = clattn_cl_context(ctx);
    size_t es = clattn_dtype_size(s.dtype), nq = clattn_shape_q_elems(&s),
           nk = clattn_shape_kv_elems(&s);
    cl_int err;
    cl_mem q = clCreateBuffer(cx, CL_MEM_READ_WRITE, nq * es, NULL, &err);
    cl_mem k = clCreateBuffer(cx, CL_MEM_READ_WRITE, nk * es, NULL, &err);
    cl_mem v = clCreateBuffer(cx, CL_MEM_READ_WRITE, nk * es, NULL, &err);
    cl_mem out = clCreateBuffer(cx, CL_MEM_READ_WRITE, nq * es, NULL, &err);
    clattn_random_fill_cl(ctx, q, nq, s.dtype, 1);
    clattn_random_fill_cl(ctx, k, nk, s.dtype, 2);
    clattn_random_fill_cl(ctx, v, nk, s.dtype, 3);
    clattn_run_info info;
    static const char *const names[3] = { "qk", "softmax", "pv" };
    double *t[4];
    for (int i = 0; i < 4; i++)
        t[i] = calloc((size_t)(reps > 0 ? reps : 1), sizeof(double));
    double cpu0 = 0;
    for (int r = -1; r < reps; r++) {
        if (r == 0)
            cpu0 = cpu_seconds();
        launches_take(NULL, 0);
        launches_record(1);
        cl_event ev;
        int rc = clattn_attention_cl(ctx, &s, &o, q, k, v, out, 0, NULL, &ev, &info);
        launches_record(0);
        if (rc < 0) {
            fprintf(stderr, "%s: %s\n", clattn_strerror(rc), clattn_last_error_detail());
            return 1;
        }
        clWaitForEvents(1, &ev);
        clReleaseEvent(ev);
        launch l[LAUNCHES_MAX];
        int stage[LAUNCHES_MAX];
        size_t n = launches_take(l, LAUNCHES_MAX);
        n = n < LAUNCHES_MAX ? n : LAUNCHES_MAX;
        stages_of(l, n, stage);
        cl_ulong lo[4], hi[4];
        for (int i = 0; i < 4; i++)
            lo[i] = ~(cl_ulong)0, hi[i] = 0;
        for (size_t e = 0; e < n; e++) {
            cl_ulong a = 0, b = 0;
            clGetEventProfilingInfo(l[e].event, CL_PROFILING_COMMAND_START, sizeof a, &a, NULL);
            clGetEventProfilingInfo(l[e].event, CL_PROFILING_COMMAND_END, sizeof b, &b, NULL);
            clReleaseEvent(l[e].event);
            const int st = stage[e];
            if (st == 3)
                continue;
            if (a < lo[st])
                lo[st] = a;
            if (b > hi[st])
                hi[st] = b;
            if (a < lo[3])
                lo[3] = a;
            if (b > hi[3])
                hi[3] = b;
        }
        if (r >= 0)
            for (int i = 0; i < 4; i++)
                t[i][r] = hi[i] > lo[i] ? (double)(hi[i] - lo[i]) * 1e-9 : 0;
    }
    double cpu = (cpu_seconds() - cpu0) / (reps > 0 ? reps : 1);
    printf("{\"shape\": \"%s\", \"dtype\": \"%s\", \"causal\": \"%s\", \"gemm\": \"%s\"", argv[1],
           argv[2], argv[3], argv[4]);
    for (int i = 0; i < 4; i++) {
        printf(", \"%s\": [", i < 3 ? names[i] : "total");
        for (int r = 0; r < reps; r++)
            printf("%s%.6g", r ? ", " : "", t[i][r]);
        printf("]");
    }
    printf(", \"cpu_per_rep\": %.6g, \"kernel\": \"%s\"}\n", cpu, info.kernel);
    clReleaseMemObject(q);
    clReleaseMemObject(k);
    clReleaseMemObject(v);
    clReleaseMemObject(out);
    clattn_close(&ctx);
    return 0;
}
