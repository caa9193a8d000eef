/* SPDX-License-Identifier: MIT */
/*
 * Verification: random inputs, poisoned outputs, comparison with the CPU
 * reference. Shared by clattn verify and the tests so that both apply the
 * same tolerances.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "context/context.h"

/* Fixed size for the life of the API major (clattn/types.h). */
_Static_assert(sizeof(clattn_check_result) == 512, "clattn_check_result must stay 512 bytes");

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Device buffers of one check; poisoned output so unwritten elements show. */
static int run_on_device(clattn_ctx *ctx, const clattn_shape *s, const clattn_options *opts,
                         const void *q, const void *k, const void *v, void *o,
                         clattn_check_result *res)
{
    const size_t e = clattn_dtype_size(s->dtype);
    const size_t qb = clattn_shape_q_elems(s) * e, kvb = clattn_shape_kv_elems(s) * e;
    cl_mem b[4] = { NULL, NULL, NULL, NULL };
    const void *host[3] = { q, k, v };
    const size_t bytes[4] = { qb, kvb, kvb, qb };
    cl_int err = CL_SUCCESS;
    int rc = CLATTN_OK;
    for (int i = 0; i < 4 && err == CL_SUCCESS; i++)
        b[i] = clCreateBuffer(ctx->context, i < 3 ? CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR
                                                  : CL_MEM_READ_WRITE,
                              bytes[i], i < 3 ? (void *)host[i] : NULL, &err);
    if (err != CL_SUCCESS) {
        rc = clattn_fail_cl(err, "clCreateBuffer(check)");
        goto out;
    }
    const cl_uchar poison = 0xff; /* all-ones bytes are NaN in fp32 and fp16 */
    err = clEnqueueFillBuffer(ctx->queue, b[3], &poison, 1, 0, qb, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        rc = clattn_fail_cl(err, "poisoning the output");
        goto out;
    }
    if ((rc = ctx_finish(ctx, "poisoning the output")) < 0)
        goto out;
    double t0 = now_seconds();
    rc = clattn_attention_cl(ctx, s, opts, b[0], b[1], b[2], b[3], 0, NULL, NULL, &res->info);
    if (rc < 0)
        goto out;
    if ((rc = ctx_finish(ctx, "running the check")) < 0)
        goto out;
    res->seconds = now_seconds() - t0;
    err = clEnqueueReadBuffer(ctx->queue, b[3], CL_TRUE, 0, qb, o, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        rc = ctx_fail_wait(ctx, err, "reading the check's output");
out:
    for (int i = 0; i < 4; i++)
        if (b[i])
            clReleaseMemObject(b[i]);
    return rc;
}

static int check_run(clattn_ctx *ctx, const clattn_shape *s, const clattn_options *opts,
                     uint64_t seed, clattn_check_result *res)
{
    CLATTN_CHECK_ARG(s && res);
    int rc = clattn_shape_check(s);
    if (rc < 0)
        return rc;
    memset(res, 0, sizeof *res);
    const size_t e = clattn_dtype_size(s->dtype);
    const size_t nq = clattn_shape_q_elems(s), nkv = clattn_shape_kv_elems(s);
    void *q = malloc(nq * e), *k = malloc(nkv * e), *v = malloc(nkv * e), *o = malloc(nq * e);
    double *ref = malloc(nq * sizeof *ref);
    if (!q || !k || !v || !o || !ref) {
        rc = clattn_fail(CLATTN_ENOMEM, "check buffers for %zu outputs", nq);
        goto out;
    }
    clattn_random_fill(q, nq, s->dtype, seed);
    clattn_random_fill(k, nkv, s->dtype, seed + 1);
    clattn_random_fill(v, nkv, s->dtype, seed + 2);
    rc = run_on_device(ctx, s, opts, q, k, v, o, res);
    if (rc < 0)
        goto out;
    rc = clattn_reference(s, opts, q, k, v, ref);
    if (rc < 0)
        goto out;
    rc = clattn_compare(s, o, ref, &res->max_abs, &res->rel_l2, &res->unwritten);
    if (rc < 0)
        goto out;
    clattn_tolerance(s->dtype, &res->tol_max_abs, &res->tol_rel_l2);
    res->passed = res->unwritten == 0 && res->max_abs <= res->tol_max_abs &&
                  res->rel_l2 <= res->tol_rel_l2;
out:
    free(q);
    free(k);
    free(v);
    free(o);
    free(ref);
    return rc;
}

int clattn_check(clattn_ctx *ctx, const clattn_shape *s, const clattn_options *opts,
                 uint64_t seed, clattn_check_result *res)
{
    clattn_clear_error();
    int rc = ctx_enter(ctx);
    if (rc < 0)
        return rc;
    rc = check_run(ctx, s, opts, seed, res);
    return ctx_leave_with(ctx, rc);
}
