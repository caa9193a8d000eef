/* The lifetime of a clattn_ctx: opening on a selected device or on the
 * caller's own context and queue, closing, and the accessors. */
#include <stdlib.h>
#include <string.h>

#include "context/context.h"
#include "device/list.h"

int clattn_open(clattn_ctx **out, const char *selector)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(out);
    *out = NULL;
    if (!selector || !*selector)
        selector = getenv("CLATTN_DEVICE");
    clattn_device_entry dev;
    int rc = device_select(selector, &dev);
    if (rc < 0)
        return rc;
    clattn_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return clattn_fail(CLATTN_ENOMEM, "context");
    ctx->device = dev.device;
    cl_int err;
    ctx->context = clCreateContext(NULL, 1, &dev.device, NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        rc = clattn_fail_cl(err, "clCreateContext");
        goto fail;
    }
    ctx->queue = clCreateCommandQueue(ctx->context, dev.device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (err != CL_SUCCESS) {
        rc = clattn_fail_cl(err, "clCreateCommandQueue");
        goto fail;
    }
    rc = device_facts_read(ctx->device, &ctx->dev);
    if (rc < 0)
        goto fail;
    *out = ctx;
    return CLATTN_OK;
fail:
    clattn_close(&ctx);
    return rc;
}

int clattn_open_cl(clattn_ctx **out, cl_context context, cl_command_queue queue)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(out);
    *out = NULL;
    CLATTN_CHECK_ARG(context);
    CLATTN_CHECK_ARG(queue);
    cl_context qctx;
    cl_command_queue_properties props = 0;
    cl_device_id dev;
    cl_int err = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL);
    err |= clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL);
    err |= clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
    if (err != CL_SUCCESS)
        return clattn_fail(CLATTN_EINVAL, "queue is not a valid OpenCL command queue");
    if (qctx != context)
        return clattn_fail(CLATTN_EINVAL, "queue does not belong to the given context");
    if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
        return clattn_fail(CLATTN_EINVAL, "queue must be in-order (the paths chain their kernels)");
    clattn_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return clattn_fail(CLATTN_ENOMEM, "context");
    clRetainContext(context);
    clRetainCommandQueue(queue);
    ctx->context = context;
    ctx->queue = queue;
    ctx->device = dev;
    int rc = device_facts_read(ctx->device, &ctx->dev);
    if (rc < 0) {
        clattn_close(&ctx);
        return rc;
    }
    *out = ctx;
    return CLATTN_OK;
}

void clattn_close(clattn_ctx **pctx)
{
    if (!pctx || !*pctx)
        return;
    clattn_ctx *ctx = *pctx;
    naive_state_release(&ctx->naive);
    program_cache_release(&ctx->programs);
    if (ctx->queue)
        clReleaseCommandQueue(ctx->queue);
    if (ctx->context)
        clReleaseContext(ctx->context);
    free(ctx);
    *pctx = NULL;
}

cl_context clattn_cl_context(const clattn_ctx *ctx)
{
    return ctx ? ctx->context : NULL;
}

cl_command_queue clattn_cl_queue(const clattn_ctx *ctx)
{
    return ctx ? ctx->queue : NULL;
}

cl_device_id clattn_cl_device(const clattn_ctx *ctx)
{
    return ctx ? ctx->device : NULL;
}

const char *clattn_device_name(const clattn_ctx *ctx)
{
    return ctx ? ctx->dev.label : "";
}
