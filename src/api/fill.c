/* SPDX-License-Identifier: MIT */
/* Device-side random inputs (cl/api/fill.cl): benchmark inputs of gigabytes are
 * drawn where they are used instead of crossing the host link. */
#include "context/context.h"
#include "context/program.h"

static int fill(clattn_ctx *ctx, cl_mem buf, size_t n, clattn_dtype dtype, uint32_t seed)
{
    CLATTN_CHECK_ARG(buf);
    CLATTN_CHECK_ARG(dtype == CLATTN_F32 || dtype == CLATTN_F16 || dtype == CLATTN_BF16);
    size_t bytes = 0;
    if (clGetMemObjectInfo(buf, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) != CL_SUCCESS ||
        n > bytes / clattn_dtype_size(dtype))
        return clattn_fail(CLATTN_EINVAL, "buffer holds fewer than %zu elements", n);
    if (n == 0)
        return CLATTN_OK;
    cl_kernel kern;
    int rc = kernel_get(ctx, "api/fill.cl",
                        dtype == CLATTN_F16 ? "-DDTYPE_F16" : dtype == CLATTN_BF16 ? "-DDTYPE_BF16" : "",
                               "fill_random", &kern);
    if (rc < 0)
        return rc;
    cl_ulong count = n;
    cl_int err = clSetKernelArg(kern, 0, sizeof(cl_mem), &buf);
    err |= clSetKernelArg(kern, 1, sizeof count, &count);
    err |= clSetKernelArg(kern, 2, sizeof seed, &seed);
    /* A grid-stride loop: enough work-items to fill any device. */
    size_t global = 1 << 20;
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(ctx->queue, kern, 1, NULL, &global, NULL, 0, NULL, NULL);
    clReleaseKernel(kern);
    return err == CL_SUCCESS ? CLATTN_OK : clattn_fail_cl(err, "fill_random");
}

int clattn_random_fill_cl(clattn_ctx *ctx, cl_mem buf, size_t n, clattn_dtype dtype,
                          uint32_t seed)
{
    clattn_clear_error();
    int rc = ctx_enter(ctx);
    if (rc < 0)
        return rc;
    rc = fill(ctx, buf, n, dtype, seed);
    return ctx_leave_with(ctx, rc);
}
