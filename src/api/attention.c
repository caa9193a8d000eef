/*
 * Public entry points: argument checks, the choice of path, and the refusal
 * of runs the model predicts will not fit, before anything is allocated.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/options.h"
#include "context/context.h"
#include "fused/fused.h"
#include "naive/naive.h"

static int check_call(const clattn_ctx *ctx, const clattn_shape *shape,
                      const clattn_options *opts)
{
    int rc = ctx_usable(ctx);
    if (rc < 0)
        return rc;
    rc = clattn_shape_check(shape);
    if (rc < 0)
        return rc;
    if (shape->q_len > INT32_MAX || shape->kv_len > INT32_MAX)
        return clattn_fail(CLATTN_EUNSUPPORTED, "sequence lengths above 2^31 are not supported");
    if ((unsigned)opts->causal > CLATTN_CAUSAL_BOTTOM_RIGHT)
        return clattn_fail(CLATTN_EINVAL, "unknown causal mode %d", (int)opts->causal);
    if ((unsigned)opts->path > CLATTN_PATH_FUSED)
        return clattn_fail(CLATTN_EINVAL, "unknown path %d", (int)opts->path);
    if (opts->fused_kernel != CLATTN_FUSED_AUTO && !fused_kernel_by_id(opts->fused_kernel))
        return clattn_fail(CLATTN_EINVAL, "unknown fused kernel %d", (int)opts->fused_kernel);
    if (!isfinite(opts->scale) || opts->scale < 0)
        return clattn_fail(CLATTN_EINVAL, "scale must be finite and >= 0 (0: 1/sqrt(d))");
    return CLATTN_OK;
}

/* The model's memory for `path`, checked against the device: the largest
 * buffer against the max allocation, the total against global memory. */
static int plan_memory(clattn_ctx *ctx, const clattn_shape *s, const clattn_options *opts,
                       clattn_path path, clattn_memory_plan *plan)
{
    uint64_t extra = 0;
    int rc;
    if (path == CLATTN_PATH_NAIVE) {
        rc = naive_extra_bytes(ctx, s, opts->use_clblast, &extra);
        if (rc < 0)
            return rc;
    }
    rc = clattn_model_memory(s, path, extra, plan);
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

/* Picks the path and checks it fits; fills info's path, note and peak. */
static int choose_path(clattn_ctx *ctx, const clattn_shape *s, const clattn_options *opts,
                       clattn_run_info *info)
{
    clattn_memory_plan plan;
    int rc;
    info->note[0] = '\0';
    if (opts->path != CLATTN_PATH_AUTO) {
        info->path = opts->path;
        rc = plan_memory(ctx, s, opts, opts->path, &plan);
        if (rc == CLATTN_EWOULDOOM && opts->allow_oom) {
            snprintf(info->note, sizeof info->note, "predicted out of memory; run anyway");
            rc = clattn_model_memory(s, opts->path, 0, &plan);
        }
        if (rc < 0)
            return rc;
        info->predicted_peak_bytes = plan.peak_bytes;
        return CLATTN_OK;
    }
    /* AUTO: the fused path moves 1 + N/d times fewer bytes, so it is the
     * choice whenever it can run; the note says whether naive would fit. */
    info->path = CLATTN_PATH_FUSED;
    rc = plan_memory(ctx, s, opts, CLATTN_PATH_NAIVE, &plan);
    if (rc == CLATTN_EWOULDOOM)
        snprintf(info->note, sizeof info->note, "auto: fused, because naive would not fit (%.100s)",
                 clattn_last_error_detail());
    else
        snprintf(info->note, sizeof info->note, "auto: fused (fewer bytes than naive)");
    rc = plan_memory(ctx, s, opts, CLATTN_PATH_FUSED, &plan);
    if (rc < 0)
        return rc;
    info->predicted_peak_bytes = plan.peak_bytes;
    return CLATTN_OK;
}

int clattn_attention_cl(clattn_ctx *ctx, const clattn_shape *shape, const clattn_options *opts,
                        cl_mem q, cl_mem k, cl_mem v, cl_mem o, cl_uint num_wait,
                        const cl_event *wait_list, cl_event *done, clattn_run_info *info)
{
    clattn_clear_error();
    clattn_options defaults;
    clattn_run_info scratch;
    opts = clattn_options_or_default(opts, &defaults);
    int rc = check_call(ctx, shape, opts);
    if (rc < 0)
        return rc;
    CLATTN_CHECK_ARG(q && k && v && o);
    CLATTN_CHECK_ARG(num_wait == 0 || wait_list);
    if (!info)
        info = &scratch;
    memset(info, 0, sizeof *info);
    rc = choose_path(ctx, shape, opts, info);
    if (rc < 0)
        return rc;
    struct attention_call call = {
        .shape = shape, .opts = opts,
        .scale = opts->scale > 0 ? opts->scale : (float)(1.0 / sqrt((double)shape->head_dim)),
        .causal = opts->causal != CLATTN_CAUSAL_NONE,
        .causal_off = opts->causal == CLATTN_CAUSAL_BOTTOM_RIGHT
            ? (int)shape->kv_len - (int)shape->q_len : 0,
        .q = q, .k = k, .v = v, .o = o,
        .num_wait = num_wait, .wait_list = wait_list, .done = done, .info = info,
    };
    return info->path == CLATTN_PATH_NAIVE ? naive_enqueue(ctx, &call)
                                           : fused_enqueue(ctx, &call);
}

int clattn_attention(clattn_ctx *ctx, const clattn_shape *shape, const clattn_options *opts,
                     const void *q, const void *k, const void *v, void *o,
                     clattn_run_info *info)
{
    clattn_clear_error();
    clattn_options defaults;
    opts = clattn_options_or_default(opts, &defaults);
    int rc = check_call(ctx, shape, opts);
    if (rc < 0)
        return rc;
    CLATTN_CHECK_ARG(q && k && v && o);
    const size_t e = clattn_dtype_size(shape->dtype);
    const size_t q_bytes = clattn_shape_q_elems(shape) * e;
    const size_t kv_bytes = clattn_shape_kv_elems(shape) * e;
    cl_mem bq = NULL, bk = NULL, bv = NULL, bo = NULL;
    cl_int err;

    /* Refuse before the first allocation: the inputs count toward the plan. */
    clattn_run_info scratch;
    rc = choose_path(ctx, shape, opts, info ? info : &scratch);
    if (rc < 0)
        return rc;
#define MAKE(buf, flags, bytes, host, label)                                         \
    do {                                                                             \
        buf = clCreateBuffer(ctx->context, (flags), (bytes), (void *)(host), &err);   \
        if (err != CL_SUCCESS) {                                                     \
            rc = clattn_fail_cl(err, "clCreateBuffer(" label ")");                   \
            goto out;                                                                \
        }                                                                            \
    } while (0)
    MAKE(bq, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, q_bytes, q, "Q");
    MAKE(bk, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, kv_bytes, k, "K");
    MAKE(bv, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, kv_bytes, v, "V");
    MAKE(bo, CL_MEM_WRITE_ONLY, q_bytes, NULL, "O");
#undef MAKE
    rc = clattn_attention_cl(ctx, shape, opts, bq, bk, bv, bo, 0, NULL, NULL, info);
    if (rc < 0)
        goto out;
    err = clEnqueueReadBuffer(ctx->queue, bo, CL_TRUE, 0, q_bytes, o, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        rc = clattn_fail_cl(err, "clEnqueueReadBuffer(O)");
out:
    if (rc < 0 && ctx->queue)
        clFinish(ctx->queue); /* nothing may still use the buffers we free */
    if (bo) clReleaseMemObject(bo);
    if (bv) clReleaseMemObject(bv);
    if (bk) clReleaseMemObject(bk);
    if (bq) clReleaseMemObject(bq);
    return rc;
}
