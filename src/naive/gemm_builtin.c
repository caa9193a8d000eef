/* The built-in GEMM (cl/gemm.cl): portable OpenCL C, any device, any case. */
#include <stdio.h>

#include "context/context.h"
#include "naive/gemm.h"
#include "context/program.h"

static const char *cannot_run(const struct device_facts *dev, const struct gemm_desc *g)
{
    (void)dev;
    (void)g;
    return NULL;
}

static int enqueue(clattn_ctx *ctx, const struct gemm_desc *g)
{
    char opts[128];
    snprintf(opts, sizeof opts, "-cl-mad-enable -DTRANS_B=%d%s", g->trans_b ? 1 : 0,
             g->dtype == CLATTN_F16 ? " -DDTYPE_F16" : "");
    cl_kernel kern;
    int rc = kernel_get(ctx, "gemm.cl", opts, "gemm_batched", &kern);
    if (rc < 0)
        return rc;
    cl_int err = gemm_set_standard_args(kern, g);
    if (err != CL_SUCCESS) {
        clReleaseKernel(kern);
        return clattn_fail_cl(err, "clSetKernelArg(gemm_batched)");
    }
    /* 64 x 64 tiles of C, 16 x 16 work-items each. */
    size_t local[3] = { 16, 16, 1 };
    size_t global[3] = { (g->n + 63) / 64 * 16, (g->m + 63) / 64 * 16, g->batch };
    err = clEnqueueNDRangeKernel(ctx->queue, kern, 3, NULL, global, local, 0, NULL, NULL);
    clReleaseKernel(kern);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clEnqueueNDRangeKernel(gemm_batched)");
    return CLATTN_OK;
}

const struct gemm_backend gemm_builtin = {
    .name = "builtin-gemm",
    .cannot_run = cannot_run,
    .enqueue = enqueue,
};
