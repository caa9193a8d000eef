/* SPDX-License-Identifier: MIT */
/* Contexts of their own beside a caller's (context.h): only an OpenCL
 * context, a queue, the device facts and a program cache, none of the
 * paths' state, so that closing one touches nothing else. */
#include <stdlib.h>

#include "context/context.h"

int ctx_open_sibling(const clattn_ctx *parent, clattn_ctx **out)
{
    *out = NULL;
    clattn_ctx *sib = calloc(1, sizeof *sib);
    if (!sib)
        return clattn_fail(CLATTN_ENOMEM, "a context of its own");
    sib->device = parent->device;
    sib->dev = parent->dev;
    cl_int err;
    int rc = CLATTN_OK;
    sib->context = clCreateContext(NULL, 1, &sib->device, NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        rc = clattn_fail_cl(err, "clCreateContext(a context of its own)");
        goto fail;
    }
    sib->queue = clCreateCommandQueue(sib->context, sib->device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (err != CL_SUCCESS) {
        rc = clattn_fail_cl(err, "clCreateCommandQueue(a context of its own)");
        goto fail;
    }
    *out = sib;
    return CLATTN_OK;
fail:
    ctx_close_sibling(&sib);
    return rc;
}

void ctx_close_sibling(clattn_ctx **psib)
{
    clattn_ctx *sib = *psib;
    if (!sib)
        return;
    program_cache_release(&sib->programs);
    if (sib->queue)
        clReleaseCommandQueue(sib->queue);
    if (sib->context)
        clReleaseContext(sib->context);
    free(sib);
    *psib = NULL;
}
