/* SPDX-License-Identifier: MIT */
/*
 * fault_entry: runs one of clattn's public entry points on a tiny shape, for
 * run_faults.py, which runs it under libcl_fault.so with one OpenCL call
 * failed at a time and judges what the entry point did.
 *
 *     fault_entry SCENARIO        (fault_entry --list prints the scenarios)
 *
 * The program opens a context, calls the scenario's entry point twice and
 * closes the context. The second call is there because it takes other
 * paths (kernels and the naive workspace kept by the first), and because a
 * call that failed must leave the context usable: one failed OpenCL call is
 * no reason for the next attention call to fail. Each phase is marked in
 * the interposer's log ("# open", "# call1", "# call2", "# close"), and each
 * call prints one line:
 *
 *   RESULT <phase> <entry> rc=<int> name=<CLATTN_...> output=<o> event=<e> detail=<text>
 *
 * output: "ok" when the call succeeded and its result is within the
 * tolerances of the CPU reference, "wrong" when it succeeded with another
 * result, "none" when it failed, "left" when it failed yet left a context
 * in its out parameter. event: "returned" when clattn_attention_cl
 * failed yet handed back an event, else "none". detail: the first line of
 * clattn_last_error_detail() ("" when empty).
 *
 * Exit status: 0 when the program ran to its end, whatever the entry points
 * returned (judging them is the driver's part); 3 when the program's own
 * setup failed; 77 when there is no OpenCL device and no fault was asked for.
 */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clattn/clattn.h>

#include "cl_fault.h"

#define EXIT_SETUP 3
#define EXIT_SKIP 77

/* The inputs of every scenario and the reference they are judged by. */
struct problem {
    clattn_shape shape;
    clattn_options opts;
    size_t q_bytes, kv_bytes;
    void *q, *k, *v, *o;
    double *ref;
    /* clattn_attention_cl's caller-owned buffers and queue */
    cl_command_queue queue;
    cl_mem bq, bk, bv, bo;
};

struct outcome {
    int rc;
    const char *output;
    int event_returned;
    char detail[256];
};

struct scenario {
    const char *name;
    const char *entry;
    clattn_dtype dtype;
    clattn_path path;
    int use_clblast;
    void (*run)(clattn_ctx *ctx, struct problem *p, struct outcome *out);
};

static void mark(const char *phase)
{
    /* Present only under LD_PRELOAD=libcl_fault.so. */
    cl_fault_mark_fn fn = (cl_fault_mark_fn)dlsym(RTLD_DEFAULT, CL_FAULT_MARK_SYMBOL);
    if (fn)
        fn(phase);
}

/* Copies the first line of the error detail, right after the call: any
 * later clattn call may replace it. */
static void keep_detail(struct outcome *out)
{
    const char *d = clattn_last_error_detail();
    size_t len = strcspn(d, "\n");
    if (len >= sizeof out->detail)
        len = sizeof out->detail - 1;
    memcpy(out->detail, d, len);
    out->detail[len] = '\0';
}

static const char *judge(const struct problem *p, const void *o)
{
    double max_abs, rel_l2, tol_abs, tol_rel;
    size_t nans;
    if (clattn_compare(&p->shape, o, p->ref, &max_abs, &rel_l2, &nans) < 0)
        return "wrong";
    clattn_tolerance(p->shape.dtype, &tol_abs, &tol_rel);
    return nans == 0 && max_abs <= tol_abs && rel_l2 <= tol_rel ? "ok" : "wrong";
}

/* ------------------------------------------------------------ scenarios */

static void run_host(clattn_ctx *ctx, struct problem *p, struct outcome *out)
{
    memset(p->o, 0xff, p->q_bytes); /* NaN: an element left unwritten shows */
    out->rc = clattn_attention(ctx, &p->shape, &p->opts, p->q, p->k, p->v, p->o, NULL);
    keep_detail(out);
    out->output = out->rc == CLATTN_OK ? judge(p, p->o) : "none";
}

/* The caller's side of an enqueue-only call: a wait list of one marker,
 * an event back, and the queue drained before the buffers are used again
 * (a call that failed may have enqueued part of its work). These OpenCL
 * calls come from this program, which run_faults.py keeps out of the
 * interposer's scope. */
static void run_cl(clattn_ctx *ctx, struct problem *p, struct outcome *out)
{
    const cl_uchar poison = 0xff;
    cl_event ready = NULL, done = NULL;
    cl_int err = clEnqueueFillBuffer(p->queue, p->bo, &poison, 1, 0, p->q_bytes, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueMarkerWithWaitList(p->queue, 0, NULL, &ready);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "fault_entry: cannot prepare the call (%d)\n", (int)err);
        exit(EXIT_SETUP);
    }
    out->rc = clattn_attention_cl(ctx, &p->shape, &p->opts, p->bq, p->bk, p->bv, p->bo, 1, &ready,
                                  &done, NULL);
    keep_detail(out);
    out->output = "none";
    if (out->rc == CLATTN_OK) {
        out->output = "wrong";
        if (done && clWaitForEvents(1, &done) == CL_SUCCESS &&
            clEnqueueReadBuffer(p->queue, p->bo, CL_TRUE, 0, p->q_bytes, p->o, 0, NULL, NULL) ==
                CL_SUCCESS)
            out->output = judge(p, p->o);
    } else {
        out->event_returned = done != NULL;
    }
    if (done)
        clReleaseEvent(done);
    clReleaseEvent(ready);
    clFinish(p->queue);
}

static void run_check(clattn_ctx *ctx, struct problem *p, struct outcome *out)
{
    clattn_check_result res;
    out->rc = clattn_check(ctx, &p->shape, &p->opts, 42, &res);
    keep_detail(out);
    out->output = out->rc != CLATTN_OK ? "none" : res.passed ? "ok" : "wrong";
}

static void run_describe(clattn_ctx *ctx, struct problem *p, struct outcome *out)
{
    char fused[96] = "", naive[96] = "";
    out->rc = clattn_describe_kernels(ctx, &p->shape, &p->opts, fused, sizeof fused, naive,
                                      sizeof naive);
    keep_detail(out);
    out->output = out->rc != CLATTN_OK ? "none" : fused[0] && naive[0] ? "ok" : "wrong";
}

/* The second clattn_open runs beside the first, as a second context would. */
static void run_open(clattn_ctx *ctx, struct problem *p, struct outcome *out)
{
    (void)ctx;
    (void)p;
    clattn_ctx *other = NULL;
    out->rc = clattn_open(&other, NULL);
    keep_detail(out);
    out->output = out->rc == CLATTN_OK ? (other ? "ok" : "wrong") : other ? "left" : "none";
    clattn_close(&other);
}

/* A second context over the first one's OpenCL context and queue, which
 * clattn_open_cl retains and clattn_close gives back: the first context
 * must still work after it (call2, and the close). */
static void run_open_cl(clattn_ctx *ctx, struct problem *p, struct outcome *out)
{
    (void)p;
    clattn_ctx *other = NULL;
    out->rc = clattn_open_cl(&other, clattn_cl_context(ctx), clattn_cl_queue(ctx));
    keep_detail(out);
    out->output = out->rc == CLATTN_OK ? (other ? "ok" : "wrong") : other ? "left" : "none";
    clattn_close(&other);
}

static const struct scenario scenarios[] = {
    { "open", "clattn_open", CLATTN_F32, CLATTN_PATH_AUTO, 1, run_open },
    { "open-cl", "clattn_open_cl", CLATTN_F32, CLATTN_PATH_AUTO, 1, run_open_cl },
    { "fused-f32", "clattn_attention", CLATTN_F32, CLATTN_PATH_FUSED, 1, run_host },
    { "fused-f16", "clattn_attention", CLATTN_F16, CLATTN_PATH_FUSED, 1, run_host },
    /* The naive path's GEMMs through CLBlast, then through the library's own
     * kernels (on NVIDIA in fp16 the tensor-core ones). */
    { "naive-f32", "clattn_attention", CLATTN_F32, CLATTN_PATH_NAIVE, 1, run_host },
    { "naive-builtin-f16", "clattn_attention", CLATTN_F16, CLATTN_PATH_NAIVE, 0, run_host },
    { "cl-fused", "clattn_attention_cl", CLATTN_F32, CLATTN_PATH_FUSED, 1, run_cl },
    { "cl-naive", "clattn_attention_cl", CLATTN_F32, CLATTN_PATH_NAIVE, 1, run_cl },
    { "check", "clattn_check", CLATTN_F32, CLATTN_PATH_AUTO, 1, run_check },
    { "describe", "clattn_describe_kernels", CLATTN_F16, CLATTN_PATH_AUTO, 0, run_describe },
};
#define N_SCENARIOS (sizeof scenarios / sizeof scenarios[0])

/* ---------------------------------------------------------------- setup */

/* B=1 H=2 Hkv=1 (grouped-query) N=17 (no tile's multiple) d=8: every
 * kernel runs, in milliseconds. */
static void make_problem(const struct scenario *sc, struct problem *p)
{
    memset(p, 0, sizeof *p);
    p->shape = (clattn_shape){ .batch = 1, .heads = 2, .kv_heads = 1, .q_len = 17,
                               .kv_len = 17, .head_dim = 8, .dtype = sc->dtype };
    clattn_default_options(&p->opts);
    p->opts.path = sc->path;
    p->opts.use_clblast = sc->use_clblast;
    const size_t e = clattn_dtype_size(sc->dtype);
    const size_t nq = clattn_shape_q_elems(&p->shape), nkv = clattn_shape_kv_elems(&p->shape);
    p->q_bytes = nq * e;
    p->kv_bytes = nkv * e;
    p->q = malloc(p->q_bytes);
    p->k = malloc(p->kv_bytes);
    p->v = malloc(p->kv_bytes);
    p->o = malloc(p->q_bytes);
    p->ref = malloc(nq * sizeof *p->ref);
    if (!p->q || !p->k || !p->v || !p->o || !p->ref) {
        fprintf(stderr, "fault_entry: out of memory\n");
        exit(EXIT_SETUP);
    }
    clattn_random_fill(p->q, nq, sc->dtype, 1);
    clattn_random_fill(p->k, nkv, sc->dtype, 2);
    clattn_random_fill(p->v, nkv, sc->dtype, 3);
    if (clattn_reference(&p->shape, &p->opts, p->q, p->k, p->v, p->ref) < 0) {
        fprintf(stderr, "fault_entry: reference: %s\n", clattn_last_error_detail());
        exit(EXIT_SETUP);
    }
}

static cl_mem make_buffer(cl_context c, cl_mem_flags flags, size_t bytes, void *host)
{
    cl_int err;
    cl_mem m = clCreateBuffer(c, flags | (host ? CL_MEM_COPY_HOST_PTR : 0), bytes, host, &err);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "fault_entry: clCreateBuffer -> %d\n", (int)err);
        exit(EXIT_SETUP);
    }
    return m;
}

static void make_buffers(clattn_ctx *ctx, struct problem *p)
{
    cl_context c = clattn_cl_context(ctx);
    p->queue = clattn_cl_queue(ctx);
    p->bq = make_buffer(c, CL_MEM_READ_ONLY, p->q_bytes, p->q);
    p->bk = make_buffer(c, CL_MEM_READ_ONLY, p->kv_bytes, p->k);
    p->bv = make_buffer(c, CL_MEM_READ_ONLY, p->kv_bytes, p->v);
    p->bo = make_buffer(c, CL_MEM_READ_WRITE, p->q_bytes, NULL);
}

static void free_problem(struct problem *p)
{
    cl_mem *bufs[] = { &p->bq, &p->bk, &p->bv, &p->bo };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (*bufs[i])
            clReleaseMemObject(*bufs[i]);
    free(p->q);
    free(p->k);
    free(p->v);
    free(p->o);
    free(p->ref);
}

/* -------------------------------------------------------------- driving */

static void report(const char *phase, const char *entry, const struct outcome *out)
{
    printf("RESULT %s %s rc=%d name=%s output=%s event=%s detail=%s\n", phase, entry, out->rc,
           clattn_error_name(out->rc), out->output, out->event_returned ? "returned" : "none",
           out->detail);
    fflush(stdout); /* the line must survive a crash later on */
}

static void call(const char *phase, const struct scenario *sc, clattn_ctx *ctx,
                 struct problem *p)
{
    struct outcome out = { .output = "none" };
    mark(phase);
    sc->run(ctx, p, &out);
    report(phase, sc->entry, &out);
}

static const struct scenario *find_scenario(const char *name)
{
    for (size_t i = 0; i < N_SCENARIOS; i++)
        if (!strcmp(scenarios[i].name, name))
            return &scenarios[i];
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (size_t i = 0; i < N_SCENARIOS; i++)
            printf("%s %s\n", scenarios[i].name, scenarios[i].entry);
        return 0;
    }
    const struct scenario *sc = argc == 2 ? find_scenario(argv[1]) : NULL;
    if (!sc) {
        fprintf(stderr, "usage: fault_entry SCENARIO (fault_entry --list names them)\n");
        return EXIT_SETUP;
    }
    struct problem p;
    make_problem(sc, &p);
    clattn_ctx *ctx = NULL;
    struct outcome opened = { .output = "none" };
    mark("open");
    opened.rc = clattn_open(&ctx, NULL);
    keep_detail(&opened);
    opened.output = opened.rc == CLATTN_OK ? "ok" : "none";
    report("open", "clattn_open", &opened);
    if (opened.rc == CLATTN_ENODEV && !getenv("CL_FAULT")) {
        fprintf(stderr, "no OpenCL device: skipping (%s)\n", opened.detail);
        return EXIT_SKIP;
    }
    if (opened.rc == CLATTN_OK) {
        if (sc->run == run_cl)
            make_buffers(ctx, &p);
        call("call1", sc, ctx, &p);
        call("call2", sc, ctx, &p);
    }
    free_problem(&p);
    mark("close");
    clattn_close(&ctx);
    return 0;
}
