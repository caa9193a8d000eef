/* SPDX-License-Identifier: MIT */
/* The kernels' efficiencies on a device: the fraction of the model's
 * roofline time each reaches where one roof binds, recorded by clattn tune
 * in the device's tune file (tune/tune.h) and read by bench and predict to
 * turn the roofline into the time to expect. */
#include <stdio.h>

#include "context/context.h"
#include "core/error.h"
#include "tune/tune.h"

/* The key's checks, shared by both entry points. */
static int check_key(const char *kernel, clattn_dtype dtype, size_t head_dim, clattn_bound bound)
{
    CLATTN_CHECK_ARG(kernel);
    if (!tune_efficiency_name_ok(kernel))
        return clattn_fail(CLATTN_EINVAL, "kernel \"%.60s\": a kernel's name as the run names "
                           "it without its tiles (\"fused/cpu\", \"naive/builtin-gemm\"): "
                           "lower-case letters, digits, '-' and one '/'", kernel);
    CLATTN_CHECK_ARG(dtype == CLATTN_F32 || dtype == CLATTN_F16 || dtype == CLATTN_BF16);
    CLATTN_CHECK_ARG(head_dim >= 1 && head_dim <= 576);
    CLATTN_CHECK_ARG(bound == CLATTN_BOUND_MEMORY || bound == CLATTN_BOUND_COMPUTE);
    return CLATTN_OK;
}

int clattn_tune_record_efficiency(clattn_ctx *ctx, const char *kernel, clattn_dtype dtype,
                                  size_t head_dim, clattn_bound bound, double fraction)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(ctx);
    int rc = check_key(kernel, dtype, head_dim, bound);
    if (rc < 0)
        return rc;
    if (!(fraction > 0 && fraction <= 100))
        return clattn_fail(CLATTN_EINVAL, "efficiency %g: a fraction of the roofline time in "
                           "(0, 100]", fraction);
    struct tune_efficiency e = { .dtype = dtype, .head_dim = head_dim, .bound = bound,
                                 .fraction = fraction };
    snprintf(e.kernel, sizeof e.kernel, "%s", kernel);
    if ((rc = ctx_enter(ctx)) < 0)
        return rc;
    rc = tune_store_efficiency(ctx, &e);
    return ctx_leave_with(ctx, rc);
}

int clattn_kernel_efficiency(clattn_ctx *ctx, const char *kernel, clattn_dtype dtype,
                             size_t head_dim, clattn_bound bound, double *fraction)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(ctx && fraction);
    *fraction = 0;
    int rc = check_key(kernel, dtype, head_dim, bound);
    if (rc < 0)
        return rc;
    if ((rc = ctx_enter(ctx)) < 0)
        return rc;
    struct tune_efficiency e;
    const int found = tune_lookup_efficiency(ctx, kernel, dtype, head_dim, bound, &e);
    if (found)
        *fraction = e.fraction;
    rc = ctx_leave_with(ctx, CLATTN_OK);
    return rc < 0 ? rc : found;
}
