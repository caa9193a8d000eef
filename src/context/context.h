/* SPDX-License-Identifier: MIT */
/* A clattn_ctx: the OpenCL objects it owns or wraps, the device facts read
 * once at open, and each module's own state, declared in that module's
 * header (the modules' headers never include this one). */
#ifndef CLATTN_SRC_DEVICE_CONTEXT_H
#define CLATTN_SRC_DEVICE_CONTEXT_H

#include <stdatomic.h>
#include <stdint.h>

#include "clattn/clattn.h"
#include "device/cl_error.h"
#include "device/facts.h"
#include "fused/fused.h"
#include "naive/naive.h"
#include "context/program.h"
#include "tune/tune.h"

struct clattn_ctx {
    cl_context context;
    cl_command_queue queue;
    cl_device_id device;
    struct device_facts dev;       /* device/facts.h */
    int lost;                      /* a fault was seen: every later call fails */
    cl_event last;                 /* the previous call's last command, or NULL */
    _Atomic uintptr_t owner;       /* the thread inside a call, 0 when none */
    unsigned depth;                /* that thread's nesting of public calls */
    struct program_cache programs; /* context/program.h */
    struct tune_state tune;        /* tune/tune.h */
    struct fused_state fused;      /* fused/fused.h */
    struct naive_state naive;      /* naive/naive.h */
};

/* Remembers a lost context: once a wait or a build reports a fault, every
 * later call on the context returns CLATTN_EDEVLOST instead of enqueueing
 * work that will never run. Returns `code`. */
static inline int ctx_note_failure(clattn_ctx *ctx, int code)
{
    if (code == CLATTN_EDEVLOST)
        ctx->lost = 1;
    return code;
}

/* A failed wait (clFinish, clWaitForEvents, a blocking transfer). */
static inline int ctx_fail_wait(clattn_ctx *ctx, cl_int err, const char *call)
{
    return ctx_note_failure(ctx, clattn_fail_cl_wait(err, call));
}

/* A new context and profiling queue on `parent`'s device, with its facts
 * and a program cache (kernel_get works) but no path state: where work
 * that might fault runs first (a PTX binary's probe, the wgmma
 * measurement), so that a fault loses that context, not the caller's.
 * Closed with ctx_close_sibling (not clattn_close), which sets *sib NULL. */
int ctx_open_sibling(const clattn_ctx *parent, clattn_ctx **out);
void ctx_close_sibling(clattn_ctx **sib);

/* Waits for everything queued on the context. */
static inline int ctx_finish(clattn_ctx *ctx, const char *what)
{
    cl_int err = clFinish(ctx->queue);
    return err == CL_SUCCESS ? CLATTN_OK : ctx_fail_wait(ctx, err, what);
}

/* The check every entry that uses the device makes first. */
static inline int ctx_usable(const clattn_ctx *ctx)
{
    if (!ctx)
        return clattn_fail(CLATTN_EINVAL, "context is NULL");
    if (ctx->lost)
        return clattn_fail(CLATTN_EDEVLOST, "the context was lost after a device fault; close "
                           "it and open a new one (%s)", ctx->dev.label);
    return CLATTN_OK;
}

/* Looks at the previous call's last command: a negative status means the
 * device faulted since (seen by the caller's own wait, say), and the
 * context is marked lost instead of taking work that would never run. */
int ctx_check_last(clattn_ctx *ctx);
/* Keeps `ev` (retained) as the call's last command. */
void ctx_keep_last(clattn_ctx *ctx, cl_event ev);

/* A context serves one thread at a time: every public entry that uses one
 * marks it as taken by the calling thread for the call (nested calls from
 * the same thread are fine) and refuses a second thread with CLATTN_EINVAL
 * instead of corrupting the program cache or the workspace. */
int ctx_enter(clattn_ctx *ctx);
void ctx_leave(clattn_ctx *ctx);
/* ctx_leave for an entry that returns `rc`: a call that ends in
 * CLATTN_EDEVLOST, wherever inside it the fault showed, loses the context.
 * Returns rc. */
int ctx_leave_with(clattn_ctx *ctx, int rc);

#endif
