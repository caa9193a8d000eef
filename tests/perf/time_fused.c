/* Times one attention call shape through the public API on device buffers,
 * for the side-by-side scripts (tools/cpu/, tools/gpu/): an untimed warm-up
 * call (it builds the kernels; correctness is `clattn verify`'s job), then
 * `reps` calls enqueued back to back and timed together with clFinish on a
 * host clock, `batches` times. Back to back, every kernel of a call (a split's
 * combine too) and the gaps between them count, as a CUDA-event timing of a
 * PyTorch call counts them; one figure per batch (seconds per call).
 *
 * usage: time_fused B,H,Hkv,Nq,Nk,d fp32|fp16 none|top-left|bottom-right
 *                   KERNEL|auto|naive REPS [BATCHES [BMxBN[xTM] [SPLITS]]]
 * (tiles and splits 0 or absent: the library's choice)
 * Prints one JSON line: the per-call times of each batch, the process CPU
 * seconds per call (robust to other jobs on a shared CPU), the host seconds
 * per call spent enqueueing, the kernel the library ran, its splits and
 * tiles, and from one more batch's events the last kernel's device time,
 * the gap between calls and the device's time per call. Exit status 1 when
 * a call fails. */
#define CL_TARGET_OPENCL_VERSION 120
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <clattn/clattn.h>

static double cpu_seconds(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec +
           (double)u.ru_stime.tv_sec + 1e-6 * (double)u.ru_stime.tv_usec;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of x[0..n), which it sorts. */
static double median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

static int usage(const char *argv0)
{
    fprintf(stderr, "usage: %s B,H,Hkv,Nq,Nk,d fp32|fp16 none|top-left|bottom-right "
                    "KERNEL|auto|naive REPS [BATCHES [BMxBN[xTM] [SPLITS]]]\n", argv0);
    return 2;
}

static int fail(const char *what, int rc)
{
    fprintf(stderr, "time_fused: %s: %s: %s\n", what, clattn_strerror(rc),
            clattn_last_error_detail());
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 6)
        return usage(argv[0]);
    clattn_shape s = { 0 };
    if (sscanf(argv[1], "%zu,%zu,%zu,%zu,%zu,%zu", &s.batch, &s.heads, &s.kv_heads, &s.q_len,
               &s.kv_len, &s.head_dim) != 6)
        return usage(argv[0]);
    s.dtype = strcmp(argv[2], "fp16") ? CLATTN_F32 : CLATTN_F16;
    clattn_options o;
    clattn_default_options(&o);
    o.causal = !strcmp(argv[3], "top-left")       ? CLATTN_CAUSAL_TOP_LEFT
               : !strcmp(argv[3], "bottom-right") ? CLATTN_CAUSAL_BOTTOM_RIGHT
                                                  : CLATTN_CAUSAL_NONE;
    if (!strcmp(argv[4], "naive"))
        o.path = CLATTN_PATH_NAIVE;
    else {
        o.path = CLATTN_PATH_FUSED;
        int rc = clattn_fused_kernel_find(argv[4], &o.fused_kernel);
        if (rc < 0)
            return fail("kernel", rc);
    }
    const int reps = atoi(argv[5]), batches = argc > 6 ? atoi(argv[6]) : 5;
    if (reps < 1 || batches < 1)
        return usage(argv[0]);
    if (argc > 7 && strcmp(argv[7], "0") &&
        sscanf(argv[7], "%zux%zux%zu", &o.block_m, &o.block_n, &o.rows_per_item) < 2)
        return usage(argv[0]);
    if (argc > 8)
        o.split_kv = (uint32_t)atoi(argv[8]);

    clattn_ctx *ctx;
    int rc = clattn_open(&ctx, NULL);
    if (rc < 0)
        return fail("open", rc);
    cl_context cx = clattn_cl_context(ctx);
    const size_t es = clattn_dtype_size(s.dtype), nq = clattn_shape_q_elems(&s),
                 nk = clattn_shape_kv_elems(&s);
    cl_int err[4];
    cl_mem q = clCreateBuffer(cx, CL_MEM_READ_WRITE, nq * es, NULL, &err[0]);
    cl_mem k = clCreateBuffer(cx, CL_MEM_READ_WRITE, nk * es, NULL, &err[1]);
    cl_mem v = clCreateBuffer(cx, CL_MEM_READ_WRITE, nk * es, NULL, &err[2]);
    cl_mem out = clCreateBuffer(cx, CL_MEM_READ_WRITE, nq * es, NULL, &err[3]);
    for (int i = 0; i < 4; i++)
        if (err[i] != CL_SUCCESS) {
            fprintf(stderr, "time_fused: clCreateBuffer: %d\n", (int)err[i]);
            return 1;
        }
    /* Random inputs: a softmax over zeros is not the work being timed. */
    if ((rc = clattn_random_fill_cl(ctx, q, nq, s.dtype, 1)) < 0 ||
        (rc = clattn_random_fill_cl(ctx, k, nk, s.dtype, 2)) < 0 ||
        (rc = clattn_random_fill_cl(ctx, v, nk, s.dtype, 3)) < 0)
        return fail("random fill", rc);
    cl_command_queue queue = clattn_cl_queue(ctx);
    clattn_run_info info;
    if ((rc = clattn_attention_cl(ctx, &s, &o, q, k, v, out, 0, NULL, NULL, &info)) < 0)
        return fail("warm-up call", rc);
    if (clFinish(queue) != CL_SUCCESS)
        return fail("warm-up call", CLATTN_EDEVLOST);
    clattn_fused_plan plan;
    memset(&plan, 0, sizeof plan);
    if (o.path == CLATTN_PATH_FUSED && (rc = clattn_plan_fused(ctx, &s, &o, &plan)) < 0)
        return fail("plan", rc);
    printf("{\"shape\": \"%s\", \"dtype\": \"%s\", \"causal\": \"%s\", \"kernel\": \"%s\", "
           "\"splits\": %u, \"block_m\": %zu, \"block_n\": %zu, \"rows_per_item\": %zu, "
           "\"times\": [", argv[1], argv[2], argv[3], info.kernel, info.splits, plan.block_m,
           plan.block_n, plan.rows_per_item);
    const double cpu0 = cpu_seconds();
    double enqueued = 0; /* host seconds to enqueue the calls: near the per-call
                          * time, the host, not the device, sets the pace */
    for (int b = 0; b < batches; b++) {
        const double t0 = now();
        for (int r = 0; r < reps; r++)
            if ((rc = clattn_attention_cl(ctx, &s, &o, q, k, v, out, 0, NULL, NULL, &info)) < 0)
                return fail("timed call", rc);
        enqueued += now() - t0;
        if (clFinish(queue) != CL_SUCCESS)
            return fail("timed calls", CLATTN_EDEVLOST);
        printf("%s%.6g", b ? ", " : "", (now() - t0) / reps);
    }
    printf("], \"cpu_per_call\": %.6g, \"enqueue_per_call\": %.6g",
           (cpu_seconds() - cpu0) / ((double)reps * batches), enqueued / ((double)reps * batches));
    /* One more batch with each call's event (its last kernel's): the
     * device's own start and end times, between calls the gap that the
     * host clock above counts but a kernel's duration does not, and from
     * one call's start to the next the device's time per call -- what a
     * CUDA-event timing of each call in a back-to-back loop (PyTorch's
     * torch_cases.py) reads, without the host clock's share of the first
     * launch and the last clFinish. */
    cl_event *ev = calloc((size_t)reps, sizeof *ev);
    double *run = calloc((size_t)reps, sizeof *run), *gap = calloc((size_t)reps, sizeof *gap);
    double *period = calloc((size_t)reps, sizeof *period);
    if (!ev || !run || !gap || !period)
        return fail("timed calls", CLATTN_ENOMEM);
    for (int r = 0; r < reps; r++)
        if ((rc = clattn_attention_cl(ctx, &s, &o, q, k, v, out, 0, NULL, &ev[r], &info)) < 0)
            return fail("timed call", rc);
    if (clFinish(queue) != CL_SUCCESS)
        return fail("timed calls", CLATTN_EDEVLOST);
    cl_ulong prev_start = 0, prev_end = 0;
    int n_gap = 0;
    for (int r = 0; r < reps; r++) {
        cl_ulong start = 0, end = 0;
        clGetEventProfilingInfo(ev[r], CL_PROFILING_COMMAND_START, sizeof start, &start, NULL);
        clGetEventProfilingInfo(ev[r], CL_PROFILING_COMMAND_END, sizeof end, &end, NULL);
        run[r] = 1e-9 * (double)(end - start);
        if (r > 0) {
            period[n_gap] = 1e-9 * ((double)start - (double)prev_start);
            gap[n_gap++] = 1e-9 * ((double)start - (double)prev_end);
        }
        prev_start = start;
        prev_end = end;
        clReleaseEvent(ev[r]);
    }
    printf(", \"last_kernel_s\": %.6g, \"gap_s\": %.6g, \"device_per_call_s\": %.6g}\n",
           median(run, reps), n_gap ? median(gap, n_gap) : 0.0,
           n_gap ? median(period, n_gap) : 0.0);
    free(ev);
    free(period);
    free(run);
    free(gap);
    clReleaseMemObject(q);
    clReleaseMemObject(k);
    clReleaseMemObject(v);
    clReleaseMemObject(out);
    clattn_close(&ctx);
    return 0;
}
