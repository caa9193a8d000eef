/* SPDX-License-Identifier: MIT */
/*
 * clattn_time_attention_cl: repeated attention calls through the library's
 * one timing loop (core/timing.h), each sample read on the host clock or
 * from the queue's profiling events.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "context/context.h"
#include "core/abi.h"
#include "core/timing.h"

/* Fixed size for the life of the API major (clattn/types.h). */
_Static_assert(sizeof(clattn_timing) == 128, "clattn_timing must stay 128 bytes");

/* The struct's size with the fields it was introduced with. */
#define TIMING_OPTIONS_FIRST_SIZE ABI_SIZE_THROUGH(clattn_timing_options, clock)

void clattn_default_timing_options(clattn_timing_options *opts)
{
    if (!abi_init(opts, sizeof *opts))
        return;
    opts->target_seconds = 0.2;
    opts->min_samples = 3;
    opts->max_samples = 1000;
    opts->warmup_calls = 1;
    opts->calls_per_sample = 1;
    opts->clock = CLATTN_CLOCK_HOST;
}

/* The caller's options (NULL: the defaults) into *o, checked. */
static int timing_options(const clattn_timing_options *in, clattn_timing_options *o)
{
    clattn_default_timing_options(o);
    if (in) {
        int rc = abi_read(in, o, sizeof *o, TIMING_OPTIONS_FIRST_SIZE, "timing options",
                          "clattn_default_timing_options");
        if (rc < 0)
            return rc;
    }
    if (!isfinite(o->target_seconds) || o->target_seconds < 0)
        return clattn_fail(CLATTN_EINVAL, "timing options: target_seconds %g is not a finite "
                           "number of seconds >= 0", o->target_seconds);
    if (o->min_samples == 0)
        return clattn_fail(CLATTN_EINVAL, "timing options: min_samples is 0 (at least 1)");
    if (o->max_samples < o->min_samples || o->max_samples > CLATTN_TIMING_MAX_SAMPLES)
        return clattn_fail(CLATTN_EINVAL, "timing options: max_samples %u is outside "
                           "min_samples %u .. %u", o->max_samples, o->min_samples,
                           CLATTN_TIMING_MAX_SAMPLES);
    if (o->calls_per_sample == 0)
        return clattn_fail(CLATTN_EINVAL, "timing options: calls_per_sample is 0 (at least 1)");
    if (o->clock != CLATTN_CLOCK_HOST && o->clock != CLATTN_CLOCK_EVENTS)
        return clattn_fail(CLATTN_EINVAL, "timing options: unknown clock %d", (int)o->clock);
    return CLATTN_OK;
}

/* The events clock reads the queue's profiling timestamps. */
static int check_profiling(const clattn_ctx *ctx)
{
    cl_command_queue_properties props = 0;
    cl_int err = clGetCommandQueueInfo(ctx->queue, CL_QUEUE_PROPERTIES, sizeof props, &props,
                                       NULL);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clGetCommandQueueInfo(timing)");
    if (!(props & CL_QUEUE_PROFILING_ENABLE))
        return clattn_fail(CLATTN_EUNSUPPORTED, "CLATTN_CLOCK_EVENTS needs a queue with "
                           "CL_QUEUE_PROFILING_ENABLE; this context's has none (time with "
                           "CLATTN_CLOCK_HOST, or open the context on a profiling queue)");
    return CLATTN_OK;
}

/* One timing: the calls' arguments, what they reported, and for the
 * events clock the commands a sample is measured between. */
struct timed_calls {
    clattn_ctx *ctx;
    const clattn_shape *shape;
    const clattn_options *opts;
    cl_mem q, k, v, o;
    const clattn_extras *extras;
    uint32_t calls;       /* per sample */
    uint32_t warm_left;   /* warm-up calls still to run */
    clattn_run_info info; /* the last call's */
    double build;         /* the calls' kernel builds */
    cl_event before;      /* events: the last command before the pending sample */
    cl_event pending;     /* events: the last command of the sample enqueued ahead */
};

/* Enqueues n calls; the last one's last command into *last (may be NULL). */
static int enqueue_calls(struct timed_calls *t, uint32_t n, cl_event *last)
{
    int rc = CLATTN_OK;
    for (uint32_t i = 0; i < n && rc >= 0; i++) {
        rc = clattn_attention_ex_cl(t->ctx, t->shape, t->opts, t->q, t->k, t->v, t->o,
                                    t->extras, 0, NULL, i + 1 == n ? last : NULL, &t->info);
        if (rc >= 0)
            t->build += t->info.build_seconds;
    }
    return rc;
}

/* A sample on the host clock: its calls enqueued, then clFinish. A warm-up
 * run is one call. */
static int host_sample(void *user, double *seconds)
{
    struct timed_calls *t = user;
    const uint32_t n = t->warm_left ? 1 : t->calls;
    t->warm_left -= t->warm_left > 0;
    const double t0 = timing_now();
    int rc = enqueue_calls(t, n, NULL);
    if (rc >= 0)
        rc = ctx_finish(t->ctx, "clFinish(timing)");
    *seconds = timing_now() - t0;
    return rc;
}

static void replace_event(cl_event *slot, cl_event ev)
{
    if (*slot)
        clReleaseEvent(*slot);
    *slot = ev;
}

/* The device's end of command `ev`, in nanoseconds. */
static int end_of(cl_event ev, cl_ulong *ns)
{
    cl_int err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof *ns, ns, NULL);
    return err == CL_SUCCESS ? CLATTN_OK : clattn_fail_cl(err, "clGetEventProfilingInfo(timing)");
}

/* A sample on the device's clock, from the end of the command before it to
 * the end of its last call. The next sample is enqueued before this one is
 * waited for, so the device runs them back to back. A warm-up call is not
 * waited for either; without one, the first sample starts at a marker. */
static int events_sample(void *user, double *seconds)
{
    struct timed_calls *t = user;
    cl_event next = NULL;
    *seconds = 0;
    if (t->warm_left) {
        t->warm_left--;
        int rc = enqueue_calls(t, 1, &next);
        if (rc >= 0)
            replace_event(&t->before, next);
        return rc;
    }
    if (!t->before) {
        cl_int err = clEnqueueMarkerWithWaitList(t->ctx->queue, 0, NULL, &t->before);
        if (err != CL_SUCCESS)
            return clattn_fail_cl(err, "clEnqueueMarkerWithWaitList(timing)");
    }
    int rc = t->pending ? CLATTN_OK : enqueue_calls(t, t->calls, &t->pending);
    if (rc >= 0)
        rc = enqueue_calls(t, t->calls, &next);
    cl_int err = rc >= 0 ? clWaitForEvents(1, &t->pending) : CL_SUCCESS;
    if (err != CL_SUCCESS)
        rc = ctx_fail_wait(t->ctx, err, "clWaitForEvents(timing)");
    cl_ulong start = 0, end = 0;
    if (rc >= 0 && (rc = end_of(t->before, &start)) >= 0 && (rc = end_of(t->pending, &end)) >= 0)
        *seconds = end > start ? 1e-9 * (double)(end - start) : 0;
    replace_event(&t->before, t->pending);
    t->pending = next;
    return rc;
}

/* Every call enqueued has completed when the timing returns. */
static int finish_calls(struct timed_calls *t, int rc)
{
    int done = ctx_finish(t->ctx, "clFinish(timing)");
    replace_event(&t->before, NULL);
    replace_event(&t->pending, NULL);
    return rc < 0 ? rc : done;
}

int clattn_time_attention_cl(clattn_ctx *ctx, const clattn_shape *shape,
                             const clattn_options *opts, cl_mem q, cl_mem k, cl_mem v, cl_mem o,
                             const clattn_extras *extras, const clattn_timing_options *topts,
                             clattn_timing *out, clattn_run_info *info)
{
    clattn_clear_error();
    if (!out)
        return clattn_fail(CLATTN_EINVAL, "clattn_time_attention_cl: out is NULL");
    memset(out, 0, sizeof *out);
    if (info)
        memset(info, 0, sizeof *info);
    if (!shape)
        return clattn_fail(CLATTN_EINVAL, "clattn_time_attention_cl: shape is NULL");
    clattn_timing_options to;
    int rc = timing_options(topts, &to);
    if (rc < 0 || (rc = ctx_enter(ctx)) < 0)
        return rc;
    if (to.clock == CLATTN_CLOCK_EVENTS)
        rc = check_profiling(ctx);
    double *samples = rc >= 0 ? malloc(to.max_samples * sizeof *samples) : NULL;
    if (rc >= 0 && !samples)
        rc = clattn_fail(CLATTN_ENOMEM, "clattn_time_attention_cl: no host memory for %u "
                         "samples", to.max_samples);
    struct timed_calls t = { .ctx = ctx, .shape = shape, .opts = opts, .q = q, .k = k, .v = v,
                             .o = o, .extras = extras, .calls = to.calls_per_sample,
                             .warm_left = to.warmup_calls };
    if (rc >= 0) {
        const struct timing_plan plan = { to.warmup_calls, to.min_samples, to.max_samples,
                                          to.target_seconds };
        struct timing_stats st;
        rc = timing_run(&plan, to.clock == CLATTN_CLOCK_EVENTS ? events_sample : host_sample, &t,
                        samples, &st);
        rc = finish_calls(&t, rc);
        out->median_s = st.median / to.calls_per_sample;
        out->min_s = st.min / to.calls_per_sample;
        out->max_s = st.max / to.calls_per_sample;
        out->total_s = st.total;
        out->samples = st.n;
        out->calls_per_sample = to.calls_per_sample;
        out->build_seconds = t.build;
        if (info)
            *info = t.info;
    }
    free(samples);
    return ctx_leave_with(ctx, rc);
}
