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

/* The checks every attention entry makes on the shape and options. */
static int check_call(const clattn_shape *shape, const clattn_options *opts)
{
    int rc = clattn_shape_check(shape);
    if (rc < 0)
        return rc;
    if (shape->q_len > INT32_MAX || shape->kv_len > INT32_MAX)
        return clattn_fail(CLATTN_EUNSUPPORTED, "sequence lengths above 2^31 - 1 are not "
                           "supported (Nq=%zu Nk=%zu)", shape->q_len, shape->kv_len);
    if ((unsigned)opts->causal > CLATTN_CAUSAL_BOTTOM_RIGHT)
        return clattn_fail(CLATTN_EINVAL, "unknown causal mode %d", (int)opts->causal);
    if ((unsigned)opts->path > CLATTN_PATH_FUSED)
        return clattn_fail(CLATTN_EINVAL, "unknown path %d", (int)opts->path);
    if (opts->fused_kernel != CLATTN_FUSED_AUTO && !fused_kernel_by_id(opts->fused_kernel))
        return clattn_fail(CLATTN_EINVAL, "unknown fused kernel %d", (int)opts->fused_kernel);
    /* 0 asks for 1/sqrt(d); anything else must be a normal positive float,
     * so that a scale too small for float (1e-50 rounds to 0) is refused
     * instead of silently becoming the default. */
    if (opts->scale != 0 && !(isnormal(opts->scale) && opts->scale > 0))
        return clattn_fail(CLATTN_EINVAL, "scale %g is not a normal positive float (0 asks for "
                           "1/sqrt(d))", (double)opts->scale);
    return CLATTN_OK;
}

/* A caller's buffer must be a buffer of the context's OpenCL context that
 * holds what the shape reads or writes: the kernels do not check bounds. */
static int check_buffer(const clattn_ctx *ctx, cl_mem m, const char *name, size_t need)
{
    size_t size = 0;
    cl_context owner = NULL;
    cl_mem_object_type type = 0;
    cl_int err = clGetMemObjectInfo(m, CL_MEM_TYPE, sizeof type, &type, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof size, &size, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(m, CL_MEM_CONTEXT, sizeof owner, &owner, NULL);
    if (err != CL_SUCCESS || type != CL_MEM_OBJECT_BUFFER)
        return clattn_fail(CLATTN_EINVAL, "%s is not an OpenCL buffer (%s)", name,
                           err != CL_SUCCESS ? clattn_cl_status_name(err) : "not a buffer");
    if (owner != ctx->context)
        return clattn_fail(CLATTN_EINVAL, "buffer %s belongs to another OpenCL context", name);
    if (size < need)
        return clattn_fail(CLATTN_EINVAL, "buffer %s holds %zu bytes; the shape needs %zu", name,
                           size, need);
    return CLATTN_OK;
}

static int check_buffers(const clattn_ctx *ctx, const clattn_shape *s, cl_mem q, cl_mem k,
                         cl_mem v, cl_mem o)
{
    CLATTN_CHECK_ARG(q && k && v && o);
    const size_t e = clattn_dtype_size(s->dtype);
    const size_t q_bytes = clattn_shape_q_elems(s) * e, kv_bytes = clattn_shape_kv_elems(s) * e;
    int rc;
    if ((rc = check_buffer(ctx, q, "Q", q_bytes)) < 0 || (rc = check_buffer(ctx, k, "K", kv_bytes)) < 0 ||
        (rc = check_buffer(ctx, v, "V", kv_bytes)) < 0 || (rc = check_buffer(ctx, o, "O", q_bytes)) < 0)
        return rc;
    /* The kernels read K and V while other work-groups write O. */
    if (o == k || o == v)
        return clattn_fail(CLATTN_EINVAL, "O must not be the buffer of K or V");
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

/* clattn_attention_cl without the entry's bookkeeping. */
static int attention_enqueue(clattn_ctx *ctx, const clattn_shape *shape, const clattn_options *opts,
                             cl_mem q, cl_mem k, cl_mem v, cl_mem o, cl_uint num_wait,
                             const cl_event *wait_list, cl_event *done, clattn_run_info *info)
{
    int rc = check_call(shape, opts);
    if (rc < 0 || (rc = check_buffers(ctx, shape, q, k, v, o)) < 0 ||
        (rc = ctx_check_last(ctx)) < 0)
        return rc;
    CLATTN_CHECK_ARG(num_wait == 0 || wait_list);
    clattn_run_info scratch;
    if (!info)
        info = &scratch;
    memset(info, 0, sizeof *info);
    rc = choose_path(ctx, shape, opts, info);
    if (rc < 0)
        return rc;
    cl_event last = NULL;
    struct attention_call call = {
        .shape = shape, .opts = opts,
        .scale = opts->scale > 0 ? opts->scale : (float)(1.0 / sqrt((double)shape->head_dim)),
        .causal = opts->causal != CLATTN_CAUSAL_NONE,
        .causal_off = opts->causal == CLATTN_CAUSAL_BOTTOM_RIGHT
            ? (int)shape->kv_len - (int)shape->q_len : 0,
        .q = q, .k = k, .v = v, .o = o,
        .num_wait = num_wait, .wait_list = wait_list, .done = &last, .info = info,
    };
    rc = info->path == CLATTN_PATH_NAIVE ? naive_enqueue(ctx, &call) : fused_enqueue(ctx, &call);
    if (rc < 0 || !last)
        return rc;
    ctx_keep_last(ctx, last); /* the next call looks at it */
    if (done)
        *done = last;
    else
        clReleaseEvent(last);
    return CLATTN_OK;
}

int clattn_attention_cl(clattn_ctx *ctx, const clattn_shape *shape, const clattn_options *opts,
                        cl_mem q, cl_mem k, cl_mem v, cl_mem o, cl_uint num_wait,
                        const cl_event *wait_list, cl_event *done, clattn_run_info *info)
{
    clattn_clear_error();
    clattn_options defaults;
    opts = clattn_options_or_default(opts, &defaults);
    int rc = ctx_enter(ctx);
    if (rc < 0)
        return rc;
    rc = attention_enqueue(ctx, shape, opts, q, k, v, o, num_wait, wait_list, done, info);
    return ctx_leave_with(ctx, rc);
}

/* clattn_attention without the entry's bookkeeping. */
static int attention_host(clattn_ctx *ctx, const clattn_shape *shape, const clattn_options *opts,
                          const void *q, const void *k, const void *v, void *o,
                          clattn_run_info *info)
{
    int rc = check_call(shape, opts);
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
    rc = attention_enqueue(ctx, shape, opts, bq, bk, bv, bo, 0, NULL, NULL, info);
    if (rc < 0)
        goto out;
    err = clEnqueueReadBuffer(ctx->queue, bo, CL_TRUE, 0, q_bytes, o, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        rc = ctx_fail_wait(ctx, err, "clEnqueueReadBuffer(O)");
out:
    if (rc < 0 && !ctx->lost)
        clFinish(ctx->queue); /* nothing may still use the buffers we free */
    if (bo) clReleaseMemObject(bo);
    if (bv) clReleaseMemObject(bv);
    if (bk) clReleaseMemObject(bk);
    if (bq) clReleaseMemObject(bq);
    return rc;
}

int clattn_attention(clattn_ctx *ctx, const clattn_shape *shape, const clattn_options *opts,
                     const void *q, const void *k, const void *v, void *o,
                     clattn_run_info *info)
{
    clattn_clear_error();
    clattn_options defaults;
    opts = clattn_options_or_default(opts, &defaults);
    int rc = ctx_enter(ctx);
    if (rc < 0)
        return rc;
    rc = attention_host(ctx, shape, opts, q, k, v, o, info);
    return ctx_leave_with(ctx, rc);
}
