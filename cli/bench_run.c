/*
 * clattn bench: one row on the device. The model is consulted first, so a
 * row predicted not to fit is reported without allocating anything; a row
 * that runs gets a poisoned verification run (which also builds its kernels),
 * the check, and then timed samples through the library's timing helper
 * (clattn_time_attention_cl on the host clock: clFinish and a monotonic
 * clock around each sample, never a returned event, since CLBlast's belongs
 * to a helper kernel, not the GEMM), --calls-per-sample calls back to back
 * per sample.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "ceilings_auto.h"
#include "efficiency.h"
#include "cli.h"

#define MIN_SAMPLES 3
#define MAX_SAMPLES 10000

void bench_model_device(const bench_device *dev, clattn_model_device *out)
{
    clattn_model_device_from_ceilings(&dev->ceil, CLATTN_F32, out);
    out->peak_flops = dev->peak.value; /* the bench dtype's, chosen once */
}

/* "S 8 GiB > max alloc 2 GiB", "peak 16.3 GiB > memory 4.19 GiB", or both. */
static void describe_oom(const clattn_memory_plan *plan, const clattn_model_device *md,
                         char *out, size_t cap)
{
    char a[32], b[32], c[32], d[32];
    cli_fmt_bytes(plan->largest_bytes, a, sizeof a);
    cli_fmt_bytes(md->max_alloc_bytes, b, sizeof b);
    cli_fmt_bytes(plan->peak_bytes, c, sizeof c);
    cli_fmt_bytes(md->capacity_bytes, d, sizeof d);
    int over_alloc = md->max_alloc_bytes && plan->largest_bytes > md->max_alloc_bytes;
    int over_cap = md->capacity_bytes && plan->peak_bytes > md->capacity_bytes;
    if (over_alloc && over_cap)
        snprintf(out, cap, "%s %s > max alloc %s; peak %s > memory %s", plan->largest_name, a,
                 b, c, d);
    else if (over_alloc)
        snprintf(out, cap, "%s %s > max alloc %s", plan->largest_name, a, b);
    else
        snprintf(out, cap, "peak %s > memory %s", c, d);
}

/* The options a row runs with; its model and its run see the same ones. */
static void row_options(const bench_row *row, clattn_options *opts)
{
    *opts = *row->opts;
    opts->causal = row->causal;
    opts->path = row->path;
    if (!opts->cu_seqlens_k) /* packed keys have their lengths in the offsets */
        opts->kv_lens = row->kv_lens;
    if (!opts->cu_seqlens_q)
        opts->q_lens = row->q_lens;
}

/* The fused plan as the model takes it: the kernel packs the H / Hkv query
 * heads of a KV head into BLOCK_M rows, the model counts one head's rows;
 * the naive path does not split. */
static void problem_of_plan(const bench_row *row, const clattn_fused_plan *plan,
                            clattn_model_problem *problem)
{
    clattn_model_default_problem(problem);
    problem->shape = row->shape;
    problem->causal = row->causal;
    cli_model_tiles(plan, problem);
    if (row->path != CLATTN_PATH_FUSED)
        problem->splits = 0;
    problem->kv_lens = row->kv_lens;
}

int bench_predict_row(clattn_ctx *ctx, const bench_config *cfg, const bench_device *dev,
                      bench_row *row)
{
    clattn_options opts;
    row_options(row, &opts);
    /* The variant as the model counts it, and in the options the plan is
     * asked with (the kernel that takes it may not be the plain call's). */
    clattn_model_variant variant;
    int rc = cli_variant_model("bench", &cfg->args->call, &row->shape, &variant, &opts);
    if (rc)
        return CLATTN_EINVAL;
    const cli_call *call = &cfg->args->call;
    cli_cache_plan_options(&call->cache, &row->shape, row->kv_lens, row->q_lens, &opts);
    clattn_fused_plan plan;
    rc = clattn_plan_fused(ctx, &row->shape, &opts, &plan);
    if (rc < 0)
        return rc;
    row->block_m = plan.block_m;
    row->block_n = plan.block_n;
    row->planned_splits = row->path == CLATTN_PATH_FUSED ? plan.splits : 1;
    clattn_model_problem problem;
    problem_of_plan(row, &plan, &problem);
    clattn_model_device md;
    bench_model_device(dev, &md);
    clattn_prediction pred;
    clattn_model_cache cache;
    cli_cache_model(&call->cache, &row->shape, row->q_lens, &cache);
    rc = clattn_model_predict_cache(&problem, &variant, &cache, &md, &pred, NULL);
    if (rc < 0)
        return rc;
    const int fused = row->path == CLATTN_PATH_FUSED;
    const clattn_path_estimate *est = fused ? &pred.fused : &pred.naive;
    row->est = *est;
    row->mem_predicted = est->memory.peak_bytes;
    row->split_workspace = fused ? pred.batch.split_workspace_bytes : 0;
    const clattn_shape *s = &row->shape;
    const size_t dv = variant.head_dim_v ? variant.head_dim_v : s->head_dim;
    row->useful_flops = 2.0 * (double)(s->head_dim + dv) * (double)s->heads *
                        (double)pred.batch.visible_pairs;
    row->visited_blocks = pred.blocks.visited_blocks;
    row->total_blocks = pred.blocks.total_blocks;
    if (row->causal != CLATTN_CAUSAL_NONE) {
        /* The naive path materialises the whole S whatever the mask, so the
         * model expects no gain there. */
        row->speedup_ideal = fused && pred.batch.visited_blocks
            ? (double)pred.batch.total_blocks / (double)pred.batch.visited_blocks : 1.0;
        row->speedup_roofline = fused ? pred.causal_speedup : (est->time_s > 0 ? 1.0 : 0.0);
    }
    if (est->fit == CLATTN_FIT_OVER_CAPACITY || est->fit == CLATTN_FIT_OVER_MAX_ALLOC) {
        row->predicted_oom = 1;
        describe_oom(&est->memory, &md, row->detail, sizeof row->detail);
    }
    return CLATTN_OK;
}

int bench_inputs_too_big(const bench_device *dev, const clattn_shape *shape, char *detail,
                         size_t cap)
{
    const uint64_t e = clattn_dtype_size(shape->dtype);
    const uint64_t q = clattn_shape_q_elems(shape) * e, kv = clattn_shape_kv_elems(shape) * e;
    const uint64_t max_alloc = (uint64_t)dev->ceil.max_alloc_bytes.value;
    const uint64_t global = (uint64_t)dev->ceil.global_mem_bytes.value;
    char a[32], b[32];
    if (max_alloc && (q > max_alloc || kv > max_alloc)) {
        cli_fmt_bytes(q > kv ? q : kv, a, sizeof a);
        cli_fmt_bytes(max_alloc, b, sizeof b);
        snprintf(detail, cap, "%s %s > max alloc %s", q > kv ? "Q" : "K", a, b);
        return 1;
    }
    if (global && 2 * q + 2 * kv > global) {
        cli_fmt_bytes(2 * q + 2 * kv, a, sizeof a);
        cli_fmt_bytes(global, b, sizeof b);
        snprintf(detail, cap, "Q+K+V+O %s > memory %s", a, b);
        return 1;
    }
    return 0;
}

void bench_inputs_free(bench_inputs *in)
{
    cl_mem *bufs[] = { &in->dcheck, &in->dout, &in->dv, &in->dk, &in->dq,
                       &in->extras.alibi_slopes, &in->extras.sinks, &in->extras.mask };
    cli_variant_free(&in->variant);
    cli_cache_free(&in->cache);
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        if (*bufs[i])
            clReleaseMemObject(*bufs[i]);
        *bufs[i] = NULL;
    }
    free(in->q);
    free(in->k);
    free(in->v);
    in->q = in->k = in->v = NULL;
    bench_check_reset();
}

int bench_inputs_make(clattn_ctx *ctx, const clattn_shape *shape, size_t head_dim_v,
                      uint64_t seed, bench_inputs *in, char *detail, size_t cap)
{
    memset(in, 0, sizeof *in);
    clattn_default_extras(&in->extras);
    in->variant.mask_keep = 1.0;
    in->shape = *shape;
    in->head_dim_v = head_dim_v ? head_dim_v : shape->head_dim;
    const size_t e = clattn_dtype_size(shape->dtype), dv = in->head_dim_v;
    in->q_bytes = clattn_shape_q_elems(shape) * e;
    in->kv_bytes = clattn_shape_kv_elems(shape) * e;
    in->v_bytes = in->kv_bytes / shape->head_dim * dv;
    in->o_bytes = in->q_bytes / shape->head_dim * dv;
    in->dout_bytes = in->o_bytes;
    in->q = malloc(in->q_bytes);
    in->k = malloc(in->kv_bytes);
    in->v = malloc(in->v_bytes);
    if (!in->q || !in->k || !in->v) {
        snprintf(detail, cap, "no host memory for the inputs");
        return CLATTN_ENOMEM;
    }
    /* Inputs are drawn on the device (gigabytes at the seed's N), then read
     * back once for the CPU reference checks. */
    cl_context cl = clattn_cl_context(ctx);
    cl_command_queue queue = clattn_cl_queue(ctx);
    struct {
        cl_mem *buf;
        const char *name;
        size_t bytes;
        void *host;
        size_t elems;
    } bufs[] = {
        { &in->dq, "Q", in->q_bytes, in->q, clattn_shape_q_elems(shape) },
        { &in->dk, "K", in->kv_bytes, in->k, clattn_shape_kv_elems(shape) },
        { &in->dv, "V", in->v_bytes, in->v, clattn_shape_kv_elems(shape) / shape->head_dim * dv },
        { &in->dout, "O", in->o_bytes, NULL, 0 },
    };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        cl_int err;
        *bufs[i].buf = clCreateBuffer(cl, CL_MEM_READ_WRITE, bufs[i].bytes, NULL, &err);
        if (err == CL_SUCCESS && bufs[i].host) {
            int rc = clattn_random_fill_cl(ctx, *bufs[i].buf, bufs[i].elems, shape->dtype,
                                           (uint32_t)(seed * 3 + i));
            if (rc < 0) {
                snprintf(detail, cap, "filling %s: %s", bufs[i].name, clattn_last_error_detail());
                return rc;
            }
            err = clEnqueueReadBuffer(queue, *bufs[i].buf, CL_TRUE, 0, bufs[i].bytes,
                                      bufs[i].host, 0, NULL, NULL);
        }
        if (err != CL_SUCCESS) {
            snprintf(detail, cap, "creating or filling %s (%zu B): OpenCL error %d",
                     bufs[i].name, bufs[i].bytes, (int)err);
            return err == CL_INVALID_BUFFER_SIZE ? CLATTN_EOOM : cli_cl_status(err);
        }
    }
    return CLATTN_OK;
}

/* A new device buffer of `bytes` holding `host`; NULL on failure, *err set. */
static cl_mem upload_buffer(cl_context cl, const void *host, size_t bytes, cl_int *err)
{
    return clCreateBuffer(cl, CL_MEM_READ_WRITE | (host ? CL_MEM_COPY_HOST_PTR : 0), bytes,
                          (void *)host, err);
}

int bench_inputs_cache(clattn_ctx *ctx, const bench_config *cfg, bench_inputs *in,
                       char *detail, size_t cap)
{
    const cli_call *call = &cfg->args->call;
    in->ref_opts = in->opts;
    if (!cfg->has_cache)
        return CLATTN_OK;
    in->cached = 1;
    int rc = cli_cache_make(&call->cache, &in->shape, in->head_dim_v, in->q, in->k, in->v,
                            call->kv_lens, call->q_lens, &in->cache, &in->ref_opts, &in->opts);
    if (rc < 0) {
        snprintf(detail, cap, "the KV cache: %s", clattn_last_error_detail());
        return rc;
    }
    cli_cache_data *d = &in->cache;
    /* The reference reads K and V quantized, plain: they replace the drawn ones. */
    if (d->k) {
        free(in->k);
        in->k = d->k;
        d->k = NULL;
    }
    if (d->v) {
        free(in->v);
        in->v = d->v;
        d->v = NULL;
    }
    /* The device's form in place of the plain buffers. */
    cl_context cl = clattn_cl_context(ctx);
    cl_int err = CL_SUCCESS;
    struct { cl_mem *buf; const void *host; size_t bytes; size_t *size; } up[] = {
        { &in->dq, d->dq, d->q_bytes, &in->q_bytes },
        { &in->dk, d->dk ? d->dk : in->k, d->kd_bytes, &in->kv_bytes },
        { &in->dv, d->dv ? d->dv : in->v, d->vd_bytes, &in->v_bytes },
        { &in->dout, NULL, d->o_bytes, &in->dout_bytes },
    };
    for (size_t i = 0; i < sizeof up / sizeof up[0] && err == CL_SUCCESS; i++) {
        if (i == 0 && !d->dq)
            continue; /* Q as drawn */
        clReleaseMemObject(*up[i].buf);
        *up[i].buf = upload_buffer(cl, up[i].host, up[i].bytes, &err);
        *up[i].size = up[i].bytes;
    }
    if (err == CL_SUCCESS && d->cu_q)
        in->dcheck = upload_buffer(cl, NULL, in->o_bytes, &err);
    if (err != CL_SUCCESS) {
        snprintf(detail, cap, "uploading the KV cache: OpenCL error %d", (int)err);
        return cli_cl_status(err);
    }
    return CLATTN_OK;
}

int bench_inputs_variant(clattn_ctx *ctx, bench_inputs *in, char *detail, size_t cap)
{
    const clattn_shape *s = &in->shape;
    const clattn_options *o = &in->opts;
    const struct {
        cl_mem *buf;
        const void *host;
        size_t bytes;
        const char *name;
    } up[] = {
        { &in->extras.alibi_slopes, o->alibi_slopes,
          (o->alibi_per_sequence ? s->batch : 1) * s->heads * 4, "ALiBi slopes" },
        { &in->extras.sinks, o->sinks, s->heads * 4, "sinks" },
        { &in->extras.mask, o->mask.kind != CLATTN_MASK_NONE ? o->mask.host : NULL,
          in->variant.mask_bytes, "mask" },
    };
    for (size_t i = 0; i < sizeof up / sizeof up[0]; i++) {
        if (!up[i].host || !up[i].bytes)
            continue;
        cl_int err;
        *up[i].buf = upload_buffer(clattn_cl_context(ctx), up[i].host, up[i].bytes, &err);
        if (err != CL_SUCCESS) {
            *up[i].buf = NULL;
            snprintf(detail, cap, "uploading the %s (%zu B): OpenCL error %d", up[i].name,
                     up[i].bytes, (int)err);
            return cli_cl_status(err);
        }
    }
    return CLATTN_OK;
}

/* A packed O, read back and put in its plain form for the check. */
static int unpack_output(clattn_ctx *ctx, bench_inputs *in)
{
    if (!in->dcheck)
        return CLATTN_OK;
    cl_command_queue queue = clattn_cl_queue(ctx);
    void *packed = malloc(in->dout_bytes), *plain = malloc(in->o_bytes);
    cl_int err = packed && plain ? CL_SUCCESS : CL_OUT_OF_HOST_MEMORY;
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(queue, in->dout, CL_TRUE, 0, in->dout_bytes, packed, 0, NULL,
                                  NULL);
    if (err == CL_SUCCESS) {
        cli_cache_unpack_o(&in->cache, &in->shape, in->head_dim_v, packed, plain);
        err = clEnqueueWriteBuffer(queue, in->dcheck, CL_TRUE, 0, in->o_bytes, plain, 0, NULL,
                                   NULL);
    }
    free(packed);
    free(plain);
    return err == CL_SUCCESS ? CLATTN_OK : err == CL_OUT_OF_HOST_MEMORY ? CLATTN_ENOMEM
                                                                        : CLATTN_EDEVLOST;
}

/* The run failed: record why. A lost context ends the whole bench. */
static int record_failure(bench_row *row, int rc)
{
    char why[256], prior[sizeof row->detail];
    snprintf(why, sizeof why, "%s", clattn_last_error_detail());
    snprintf(prior, sizeof prior, "%s", row->detail);
    if (rc == CLATTN_EWOULDOOM) {
        /* The library counts what the model here cannot see (CLBlast's
         * temporary buffers): its verdict stands. */
        row->status = BENCH_OOM;
        row->predicted_oom = 1;
        snprintf(row->detail, sizeof row->detail, "%s", why);
        return 0;
    }
    row->status = row->predicted_oom ? BENCH_OOM_CONFIRMED : BENCH_ERROR;
    if (row->predicted_oom)
        snprintf(row->detail, sizeof row->detail, "predicted %.120s; ran anyway: %s%s%.160s", prior,
                 clattn_error_name(rc), why[0] ? ": " : "", why);
    else
        snprintf(row->detail, sizeof row->detail, "%s%s%s", clattn_error_name(rc),
                 why[0] ? ": " : "", why);
    return rc == CLATTN_EDEVLOST ? CLATTN_EDEVLOST : 0;
}

/* The untimed call the check reads, waited for. */
static int call_once(clattn_ctx *ctx, const clattn_options *opts, const clattn_extras *ex,
                     bench_inputs *in, clattn_run_info *info)
{
    int rc = clattn_attention_ex_cl(ctx, &in->shape, opts, in->dq, in->dk, in->dv, in->dout, ex,
                                    0, NULL, NULL, info);
    cl_int err = clFinish(clattn_cl_queue(ctx));
    if (rc < 0)
        return rc;
    /* A failed clFinish after enqueued work means the queue is broken: on
     * NVIDIA a faulting kernel loses the whole context. */
    return err == CL_SUCCESS ? CLATTN_OK : CLATTN_EDEVLOST;
}

/* Samples until `target` seconds of timed work, at least MIN_SAMPLES; the
 * call before them built the kernels, so there is no warm-up. */
static int time_row(clattn_ctx *ctx, const clattn_options *opts, const clattn_extras *ex,
                    bench_inputs *in, const bench_config *cfg, bench_row *row)
{
    clattn_timing_options t;
    clattn_default_timing_options(&t);
    t.target_seconds = cfg->target_seconds;
    t.min_samples = MIN_SAMPLES;
    t.max_samples = MAX_SAMPLES;
    t.warmup_calls = 0;
    t.calls_per_sample = cfg->args->calls_per_sample;
    t.clock = CLATTN_CLOCK_HOST;
    clattn_timing out;
    int rc = clattn_time_attention_cl(ctx, &in->shape, opts, in->dq, in->dk, in->dv, in->dout,
                                      ex, &t, &out, NULL);
    if (rc < 0)
        return rc;
    row->reps = out.samples;
    row->calls_per_sample = out.calls_per_sample;
    row->t_median = out.median_s;
    row->t_min = out.min_s;
    row->t_max = out.max_s;
    return CLATTN_OK;
}

/* Rates from the median; the bandwidth fraction against the ceiling the
 * predictions use (measured where it was measured). */
static void derive_rates(clattn_ctx *ctx, const bench_device *dev, bench_row *row)
{
    const double t = row->t_median;
    row->expected_s = efficiency_expected_time(ctx, row->kernel, row->shape.dtype,
                                               row->shape.head_dim, &row->est, &row->efficiency);
    if (!(t > 0))
        return;
    row->tflops_model = row->est.flops / t * 1e-12;
    row->tflops_useful = row->useful_flops / t * 1e-12;
    row->gbps = (double)row->est.bytes / t * 1e-9;
    const double pred = row->expected_s > 0 ? row->expected_s : row->est.time_s;
    row->ratio = pred > 0 ? t / pred : 0;
    const double bw = dev->ceil.bandwidth.value;
    row->bandwidth_fraction =
        dev->ceil.bandwidth.source != CLATTN_SRC_NONE && bw > 0 ? row->gbps * 1e9 / bw : 0;
}

int bench_run_row(clattn_ctx *ctx, const bench_config *cfg, const bench_device *dev,
                  bench_inputs *in, bench_row *row)
{
    clattn_options opts;
    row_options(row, &opts);
    opts.allow_oom = cfg->args->confirm_oom;
    cl_command_queue queue = clattn_cl_queue(ctx);

    /* All-ones bytes are NaN in fp32 and fp16: an element the run fails to
     * write shows up in the check. */
    const cl_uchar poison = 0xff;
    cl_int err = clEnqueueFillBuffer(queue, in->dout, &poison, 1, 0, in->dout_bytes, 0, NULL,
                                     NULL);
    if (err == CL_SUCCESS)
        err = clFinish(queue);
    if (err != CL_SUCCESS) {
        row->status = BENCH_ERROR;
        snprintf(row->detail, sizeof row->detail, "poisoning O: OpenCL error %d", (int)err);
        return CLATTN_EDEVLOST;
    }
    clattn_run_info info;
    int rc = call_once(ctx, &opts, &in->extras, in, &info);
    if (rc == 0)
        rc = unpack_output(ctx, in);
    if (rc < 0)
        return record_failure(row, rc);
    snprintf(row->kernel, sizeof row->kernel, "%s", info.kernel);
    row->splits = info.splits;
    row->mem_allocated = info.allocated_bytes + (uint64_t)in->q_bytes + in->dout_bytes +
                         in->kv_bytes + in->v_bytes + in->variant.mask_bytes;
    if (info.predicted_peak_bytes)
        row->mem_predicted = info.predicted_peak_bytes;

    rc = bench_check_row(ctx, in, cfg->args->check, row);
    if (rc < 0) {
        row->status = BENCH_ERROR;
        snprintf(row->detail, sizeof row->detail, "check: %s: %s", clattn_error_name(rc),
                 clattn_last_error_detail());
        return rc == CLATTN_EDEVLOST ? rc : 0;
    }
    rc = time_row(ctx, &opts, &in->extras, in, cfg, row);
    if (rc < 0)
        return record_failure(row, rc);
    derive_rates(ctx, dev, row);
    row->status = row->check_ok ? BENCH_OK : BENCH_FAIL;
    if (row->predicted_oom && row->detail[0]) {
        char prior[sizeof row->detail];
        snprintf(prior, sizeof prior, "%s", row->detail);
        snprintf(row->detail, sizeof row->detail, "predicted OOM (%.280s), but it ran", prior);
    }
    return CLATTN_OK;
}

