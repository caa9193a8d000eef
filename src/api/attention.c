/* SPDX-License-Identifier: MIT */
/*
 * Public attention entry points: the checks (api/prepare.c), the choice of
 * path, and the refusal of runs the model predicts will not fit, before
 * anything is allocated.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api/prepare.h"
#include "core/abi.h"
#include "core/options.h"
#include "core/variants.h"
#include "fused/fused.h"
#include "model/memory.h"
#include "naive/naive.h"

/* The model's memory for the call on `path`: V and O of d_v columns, K and
 * V as the cache stores them, the mask's buffer where there is one. */
static int call_memory(const struct attention_call *c, clattn_path path, uint64_t extra,
                       clattn_memory_plan *plan)
{
    uint64_t mask = 0;
    int rc = c->opts->mask.kind != CLATTN_MASK_NONE
                 ? mask_span_bytes(c->shape, &c->opts->mask, &mask) : CLATTN_OK;
    return rc < 0 ? rc : model_memory_options(c->shape, c->opts, mask, path, extra, plan);
}

/* The model's memory for `path` with `extra` workspace bytes, checked
 * against the device: the largest buffer against the max allocation, the
 * total against its memory. */
static int plan_memory(clattn_ctx *ctx, const struct attention_call *c, clattn_path path,
                       uint64_t extra, clattn_memory_plan *plan)
{
    int rc = call_memory(c, path, extra, plan);
    if (rc < 0)
        return rc;
    const char *name = path == CLATTN_PATH_NAIVE ? "naive" : "fused";
    if (plan->largest_bytes > ctx->dev.max_alloc)
        return clattn_fail(CLATTN_EWOULDOOM,
                           "%s path: buffer %s needs %llu B > max single allocation %llu B",
                           name, plan->largest_name, (unsigned long long)plan->largest_bytes,
                           (unsigned long long)ctx->dev.max_alloc);
    if (plan->peak_bytes > ctx->dev.usable_mem)
        return clattn_fail(CLATTN_EWOULDOOM,
                           "%s path: peak memory %llu B (largest buffer %s, %llu B) > device "
                           "memory %llu B", name, (unsigned long long)plan->peak_bytes,
                           plan->largest_name, (unsigned long long)plan->largest_bytes,
                           (unsigned long long)ctx->dev.usable_mem);
    return CLATTN_OK;
}

/* The workspace a path holds beyond Q, K, V, O (and S, P). */
static int path_extra(clattn_ctx *ctx, const struct attention_call *c, clattn_path path,
                      uint64_t *bytes)
{
    return path == CLATTN_PATH_NAIVE ? naive_extra_bytes(ctx, c, bytes)
                                     : fused_workspace_bytes(ctx, c, bytes);
}

/* Picks the path and checks it fits; fills info's path, note and peak. */
static int choose_path(clattn_ctx *ctx, const struct attention_call *c, clattn_run_info *info)
{
    const clattn_options *opts = c->opts;
    clattn_memory_plan plan;
    uint64_t extra = 0;
    int rc;
    info->note[0] = '\0';
    if (opts->path != CLATTN_PATH_AUTO) {
        info->path = opts->path;
        rc = path_extra(ctx, c, opts->path, &extra);
        if (rc >= 0)
            rc = plan_memory(ctx, c, opts->path, extra, &plan);
        if (rc == CLATTN_EWOULDOOM && opts->allow_oom) {
            snprintf(info->note, sizeof info->note, "predicted out of memory; run anyway");
            rc = call_memory(c, opts->path, extra, &plan);
        }
        if (rc < 0)
            return rc;
        info->predicted_peak_bytes = plan.peak_bytes;
        return CLATTN_OK;
    }
    /* AUTO: the fused path moves 1 + N/d times fewer bytes, so it is the
     * choice whenever it can run; the note says whether naive's S and P
     * (the model's plan, without the workspace its GEMMs would add) would
     * fit. */
    info->path = CLATTN_PATH_FUSED;
    rc = plan_memory(ctx, c, CLATTN_PATH_NAIVE, 0, &plan);
    if (rc == CLATTN_EWOULDOOM)
        snprintf(info->note, sizeof info->note, "auto: fused, because naive would not fit (%.100s)",
                 clattn_last_error_detail());
    else
        snprintf(info->note, sizeof info->note, "auto: fused (fewer bytes than naive)");
    clattn_clear_error();
    if ((rc = path_extra(ctx, c, CLATTN_PATH_FUSED, &extra)) < 0 ||
        (rc = plan_memory(ctx, c, CLATTN_PATH_FUSED, extra, &plan)) < 0)
        return rc;
    info->predicted_peak_bytes = plan.peak_bytes;
    return CLATTN_OK;
}

/* What every attention entry does first and last: the caller's options
 * resolved (struct_size), the context entered, the caller's run info (or a
 * scratch one) cleared, and at the end the kernel builds this call paid. */
struct entry {
    clattn_options opts;
    clattn_run_info scratch, *info;
    double built;
};

static int entry_begin(clattn_ctx *ctx, const clattn_options *opts, clattn_run_info *info,
                       struct entry *e)
{
    clattn_clear_error();
    int rc = options_resolve(opts, &e->opts);
    if (rc < 0 || (rc = ctx_enter(ctx)) < 0)
        return rc;
    e->info = info ? info : &e->scratch;
    memset(e->info, 0, sizeof *e->info);
    e->built = ctx->programs.build_seconds;
    return CLATTN_OK;
}

static int entry_end(clattn_ctx *ctx, const struct entry *e, int rc)
{
    e->info->build_seconds = ctx->programs.build_seconds - e->built;
    return ctx_leave_with(ctx, rc);
}

/* clattn_attention_ex_cl without the entry's bookkeeping: `c` holds the
 * shape, options, buffers and events. `path_chosen`: the host call has
 * already chosen the path into c->info (before allocating its buffers). */
static int attention_enqueue(clattn_ctx *ctx, struct attention_call *c, const uint64_t spans[4],
                             int path_chosen)
{
    if (c->lse) /* known once the buffers are */
        c->flags |= FUSED_F_LSE_OUT;
    int rc = prepare_buffers(ctx, c->shape, c, spans);
    if (rc < 0 || (rc = ctx_check_last(ctx)) < 0)
        return rc;
    CLATTN_CHECK_ARG(c->num_wait == 0 || c->wait_list);
    cl_mem owned[PREPARE_OWNED];
    if ((rc = prepare_lens(ctx, c->shape, c->opts, c, owned)) < 0)
        return rc;
    cl_event last = NULL, *done = c->done;
    c->done = &last;
    struct fused_plan plan = { 0 }; /* the path choice's, for the enqueue */
    if (!path_chosen)
        c->fused_plan = &plan;
    rc = path_chosen ? CLATTN_OK : choose_path(ctx, c, c->info);
    if (rc >= 0)
        rc = c->info->path == CLATTN_PATH_NAIVE ? naive_enqueue(ctx, c) : fused_enqueue(ctx, c);
    c->done = done;
    if (!path_chosen)
        c->fused_plan = NULL;
    for (int i = 0; i < PREPARE_OWNED; i++)
        if (owned[i])
            clReleaseMemObject(owned[i]); /* the queue keeps them while in use */
    if (rc < 0 || !last)
        return rc;
    ctx_keep_last(ctx, last); /* the next call looks at it */
    if (done)
        *done = last;
    else
        clReleaseEvent(last);
    return CLATTN_OK;
}

int clattn_attention_ex_cl(clattn_ctx *ctx, const clattn_shape *shape, const clattn_options *opts,
                           cl_mem q, cl_mem k, cl_mem v, cl_mem o, const clattn_extras *extras,
                           cl_uint num_wait, const cl_event *wait_list, cl_event *done,
                           clattn_run_info *info)
{
    struct entry e;
    int rc = entry_begin(ctx, opts, info, &e);
    if (rc < 0)
        return rc;
    struct attention_call c = { .q = q, .k = k, .v = v, .o = o, .num_wait = num_wait,
                                .wait_list = wait_list, .done = done, .info = e.info };
    if (extras) {
        /* The first version ended after lse; later fields default to NULL. */
        clattn_extras ex = CLATTN_EXTRAS_INIT;
        rc = abi_read(extras, &ex, sizeof ex, ABI_SIZE_THROUGH(clattn_extras, lse), "extras",
                      "CLATTN_EXTRAS_INIT");
        if (rc < 0)
            return entry_end(ctx, &e, rc);
        c.lse = ex.lse;
        c.kv_lens = ex.kv_lens;
        c.q_lens = ex.q_lens;
        c.alibi_slopes = ex.alibi_slopes;
        c.sinks = ex.sinks;
        c.mask = ex.mask;
        c.block_table = ex.block_table;
        c.cu_q = ex.cu_seqlens_q;
        c.cu_k = ex.cu_seqlens_k;
        c.k_scale = ex.k_scale;
        c.v_scale = ex.v_scale;
    }
    uint64_t spans[4];
    rc = prepare_call(shape, &e.opts, &c, spans);
    if (rc >= 0)
        rc = attention_enqueue(ctx, &c, spans, 0);
    return entry_end(ctx, &e, rc);
}

int clattn_attention_plan(clattn_ctx *ctx, const clattn_shape *shape,
                          const clattn_options *opts, clattn_run_info *info)
{
    struct entry e;
    int rc = entry_begin(ctx, opts, info, &e);
    if (rc < 0)
        return rc;
    struct attention_call c = { .info = e.info };
    uint64_t spans[4];
    if ((rc = prepare_call(shape, &e.opts, &c, spans)) >= 0 &&
        (rc = ctx_check_last(ctx)) >= 0)
        rc = choose_path(ctx, &c, e.info);
    return entry_end(ctx, &e, rc);
}

int clattn_attention_cl(clattn_ctx *ctx, const clattn_shape *shape, const clattn_options *opts,
                        cl_mem q, cl_mem k, cl_mem v, cl_mem o, cl_uint num_wait,
                        const cl_event *wait_list, cl_event *done, clattn_run_info *info)
{
    return clattn_attention_ex_cl(ctx, shape, opts, q, k, v, o, NULL, num_wait, wait_list, done,
                                  info);
}

/* The device copies of one host call's arrays. */
struct host_buffers {
    cl_mem q, k, v, o, lse;
};

static void release_host_buffers(struct host_buffers *b)
{
    cl_mem *all[] = { &b->q, &b->k, &b->v, &b->o, &b->lse };
    for (size_t i = 0; i < 5; i++)
        if (*all[i])
            clReleaseMemObject(*all[i]);
}

static int make_buffer(clattn_ctx *ctx, cl_mem_flags flags, uint64_t bytes, const void *host,
                       const char *name, cl_mem *out)
{
    cl_int err;
    *out = clCreateBuffer(ctx->context, flags, bytes, (void *)host, &err);
    if (err == CL_SUCCESS)
        return CLATTN_OK;
    char call[48];
    snprintf(call, sizeof call, "clCreateBuffer(%s)", name);
    return clattn_fail_cl(err, call);
}

/* clattn_attention_ex without the entry's bookkeeping. Each array is copied
 * whole over its layout's span; O starts as the caller's own array when its
 * layout has gaps, so that what the kernels do not write comes back as it
 * was. */
static int attention_host(clattn_ctx *ctx, const clattn_shape *shape, const clattn_options *opts,
                          const void *q, const void *k, const void *v, void *o, float *lse,
                          clattn_run_info *info)
{
    struct attention_call c = { .info = info };
    uint64_t spans[4];
    int rc = prepare_call(shape, opts, &c, spans);
    if (rc < 0)
        return rc;
    CLATTN_CHECK_ARG(q && k && v && o);
    const void *const arrays[4] = { q, k, v, o };
    if ((rc = prepare_host_arrays(shape, opts, &c, spans, arrays, lse)) < 0)
        return rc;
    /* Refuse before the first allocation: the inputs count toward the plan. */
    struct fused_plan plan = { 0 }; /* the path choice's, for the enqueue */
    c.fused_plan = &plan;
    rc = choose_path(ctx, &c, info);
    if (rc < 0)
        return rc;
    const cl_mem_flags in = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR;
    const int o_gaps = !layout_is_contiguous(&c.ol, shape->heads, shape->q_len, shape->head_dim);
    const uint64_t lse_bytes = (uint64_t)shape->batch * shape->heads * shape->q_len * 4;
    struct host_buffers b = { NULL, NULL, NULL, NULL, NULL };
    if ((rc = make_buffer(ctx, in, spans[0], q, "Q", &b.q)) < 0 ||
        (rc = make_buffer(ctx, in, spans[1], k, "K", &b.k)) < 0 ||
        (rc = make_buffer(ctx, in, spans[2], v, "V", &b.v)) < 0 ||
        (rc = make_buffer(ctx, o_gaps ? CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR
                                      : CL_MEM_WRITE_ONLY, spans[3], o_gaps ? o : NULL, "O",
                          &b.o)) < 0 ||
        (lse && (rc = make_buffer(ctx, CL_MEM_WRITE_ONLY, lse_bytes, NULL, "LSE", &b.lse)) < 0))
        goto out;
    c.q = b.q, c.k = b.k, c.v = b.v, c.o = b.o, c.lse = b.lse;
    if ((rc = attention_enqueue(ctx, &c, spans, 1)) < 0)
        goto out;
    cl_int err = clEnqueueReadBuffer(ctx->queue, b.o, lse ? CL_FALSE : CL_TRUE, 0, spans[3], o, 0,
                                     NULL, NULL);
    if (err == CL_SUCCESS && lse)
        err = clEnqueueReadBuffer(ctx->queue, b.lse, CL_TRUE, 0, lse_bytes, lse, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        rc = ctx_fail_wait(ctx, err, "clEnqueueReadBuffer(O)");
out:
    if (rc < 0 && !ctx->lost)
        clFinish(ctx->queue); /* nothing may still use the buffers we free */
    release_host_buffers(&b);
    return rc;
}

int clattn_attention_ex(clattn_ctx *ctx, const clattn_shape *shape, const clattn_options *opts,
                        const void *q, const void *k, const void *v, void *o, float *lse,
                        clattn_run_info *info)
{
    struct entry e;
    int rc = entry_begin(ctx, opts, info, &e);
    if (rc < 0)
        return rc;
    return entry_end(ctx, &e, attention_host(ctx, shape, &e.opts, q, k, v, o, lse, e.info));
}

int clattn_attention(clattn_ctx *ctx, const clattn_shape *shape, const clattn_options *opts,
                     const void *q, const void *k, const void *v, void *o,
                     clattn_run_info *info)
{
    return clattn_attention_ex(ctx, shape, opts, q, k, v, o, NULL, info);
}

void clattn_default_extras(clattn_extras *extras)
{
    if (extras)
        *extras = (clattn_extras)CLATTN_EXTRAS_INIT;
}
