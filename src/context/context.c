/* SPDX-License-Identifier: MIT */
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
    /* The context holds its own references, released by clattn_close; one
     * it could not take must not be released. */
    if ((err = clRetainContext(context)) != CL_SUCCESS) {
        free(ctx);
        return clattn_fail_cl(err, "clRetainContext");
    }
    ctx->context = context;
    if ((err = clRetainCommandQueue(queue)) != CL_SUCCESS) {
        int rc = clattn_fail_cl(err, "clRetainCommandQueue");
        clattn_close(&ctx);
        return rc;
    }
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
    if (ctx->last)
        clReleaseEvent(ctx->last);
    naive_state_release(&ctx->naive);
    fused_state_release(&ctx->fused);
    tune_state_release(&ctx->tune);
    /* What is left is what a sibling holds: programs, queue, OpenCL context. */
    ctx_close_sibling(pctx);
}

/* An address unique to the calling thread. */
static uintptr_t this_thread(void)
{
    static _Thread_local char marker;
    return (uintptr_t)&marker;
}

int ctx_check_last(clattn_ctx *ctx)
{
    if (!ctx->last)
        return CLATTN_OK;
    cl_int status = CL_COMPLETE;
    cl_int err = clGetEventInfo(ctx->last, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status,
                                &status, NULL);
    if (err == CL_SUCCESS && status >= 0 && status != CL_COMPLETE)
        return CLATTN_OK; /* still running: keep watching it */
    clReleaseEvent(ctx->last);
    ctx->last = NULL;
    if (err != CL_SUCCESS || status < 0) {
        ctx->lost = 1;
        return clattn_fail(CLATTN_EDEVLOST, "the previous call's work failed on the device "
                           "(%s): the context is lost; close it and open a new one",
                           clattn_cl_status_name(err != CL_SUCCESS ? err : status));
    }
    return CLATTN_OK;
}

void ctx_keep_last(clattn_ctx *ctx, cl_event ev)
{
    if (ctx->last)
        clReleaseEvent(ctx->last);
    /* Without a reference of its own the context watches nothing. */
    ctx->last = clRetainEvent(ev) == CL_SUCCESS ? ev : NULL;
}

int ctx_enter(clattn_ctx *ctx)
{
    int rc = ctx_usable(ctx);
    if (rc < 0)
        return rc;
    uintptr_t none = 0, me = this_thread();
    if (!atomic_compare_exchange_strong(&ctx->owner, &none, me) && none != me)
        return clattn_fail(CLATTN_EINVAL, "the context is in use by another thread: a "
                           "clattn_ctx serves one thread at a time (open one per thread)");
    ctx->depth++;
    return CLATTN_OK;
}

void ctx_leave(clattn_ctx *ctx)
{
    if (--ctx->depth == 0)
        atomic_store(&ctx->owner, 0);
}

int ctx_leave_with(clattn_ctx *ctx, int rc)
{
    ctx_note_failure(ctx, rc);
    ctx_leave(ctx);
    return rc;
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
