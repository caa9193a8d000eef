/* SPDX-License-Identifier: MIT */
/* Launching the fused kernels (cl/include/fused_grid.clh's argument list) and the
 * split-KV combine (cl/fused/combine.cl). */
#include <stdio.h>

#include "context/context.h"
#include "context/kernel_args.h"
#include "context/program.h"
#include "core/variants.h"
#include "fused/kernel.h"
#include "fused/mask_spans.h"

/* B, Nq, Nk and H, in the order both argument lists take them. */
static void arg_sizes(struct kernel_args *a, const clattn_shape *s)
{
    arg_u32(a, s->batch);
    arg_u32(a, s->q_len);
    arg_u32(a, s->kv_len);
    arg_u32(a, s->heads);
}

/* cl/include/fused_grid.clh's FUSED_VARIANT_PARAMS: the variants'
 * arguments, whatever the call asks (a kernel reads those its bits name). */
static void fused_variant_args(struct kernel_args *a, const struct attention_call *c,
                               cl_mem mask_spans)
{
    const clattn_options *o = c->opts;
    struct mask_strides m = { 0, 0, 0, 0 };
    if (o->mask.kind != CLATTN_MASK_NONE)
        mask_strides_of(c->shape, &o->mask, &m);
    arg_float(a, c->scale);
    arg_float(a, o->softcap);
    arg_i32(a, o->window_left);
    arg_i32(a, o->window_right);
    arg_mem(a, c->alibi_slopes);
    arg_mem(a, c->sinks);
    arg_mem(a, c->mask);
    arg_u64(a, m.offset);
    arg_u64(a, m.batch);
    arg_u64(a, m.head);
    arg_u64(a, m.row);
    arg_mem(a, mask_spans);
}

/* What a build-time binary learns of the mask beyond its pointer and
 * strides: the mask word of cl/include/fused_variant.h. */
static unsigned mask_word(const struct attention_call *c)
{
    const clattn_mask *mk = &c->opts->mask;
    if (!(c->flags & (FUSED_F_MASK | FUSED_F_MASK_BOOL)))
        return 0;
    const unsigned dtype = (c->flags & FUSED_F_MASK) ? (unsigned)mk->dtype : 0u;
    const uint64_t per_chunk = (c->flags & FUSED_F_MASK) ? 16 / clattn_dtype_size(mk->dtype) : 16;
    struct mask_strides m;
    mask_strides_of(c->shape, mk, &m);
    const int rows16 = m.offset % per_chunk == 0 && m.batch % per_chunk == 0 &&
                       m.head % per_chunk == 0 && m.row % per_chunk == 0 &&
                       c->shape->kv_len % per_chunk == 0;
    return dtype | (rows16 ? FUSED_MASK_ROWS16 : 0u);
}

/* The lengths' arguments: kv_lens and q_lens, or the packed offsets in
 * their place (the FUSED_F_PACKED_* bits say which). */
static void arg_lens(struct kernel_args *a, const struct attention_call *c)
{
    arg_mem(a, c->cu_k ? c->cu_k : c->kv_lens);
    arg_mem(a, c->cu_q ? c->cu_q : c->q_lens);
}

/* cl/include/fused_grid.clh's FUSED_CACHE_PARAMS. */
static void fused_cache_args(struct kernel_args *a, const struct attention_call *c)
{
    arg_mem(a, c->block_table);
    arg_u32(a, c->bt_stride);
    arg_u32(a, c->opts->num_pages);
    arg_mem(a, c->k_scale);
    arg_mem(a, c->v_scale);
}

int fused_launch(clattn_ctx *ctx, const struct attention_call *c, const struct fused_plan *plan,
                 cl_kernel kern, const cl_mem part[FUSED_PARTS], cl_event *done)
{
    const clattn_shape *s = c->shape;
    cl_mem mask_spans;
    int rc = mask_spans_get(ctx, c, plan, &mask_spans);
    if (rc < 0)
        return rc;
    struct kernel_args a = { kern, 0, CL_SUCCESS };
    const cl_float scale_log2 = c->scale * 1.44269504088896341f; /* exp(x) = exp2(x log2 e) */
    arg_mem(&a, c->q);
    arg_mem(&a, c->k);
    arg_mem(&a, c->v);
    arg_mem(&a, c->o);
    arg_mem(&a, c->lse);
    arg_mem(&a, part[FUSED_PART_O]);
    arg_mem(&a, part[FUSED_PART_ML]);
    arg_lens(&a, c);
    arg_layout(&a, &c->ql);
    arg_layout(&a, &c->kl);
    arg_layout(&a, &c->vl);
    arg_layout(&a, &c->ol);
    arg_sizes(&a, s);
    arg_u32(&a, s->kv_heads);
    arg_u32(&a, plan->n_rtiles);
    arg_u32(&a, plan->splits);
    arg_u32(&a, plan->split_keys);
    arg(&a, sizeof scale_log2, &scale_log2);
    fused_variant_args(&a, c, mask_spans);
    fused_cache_args(&a, c);
    if (plan->kernel->binary) { /* a build-time binary takes its variant here */
        arg_u32(&a, s->heads / s->kv_heads);
        arg_u32(&a, fused_variant_flags(c, plan));
        arg_u32(&a, mask_word(c));
    }
    if (plan->kernel->takes_chunk_counter)
        arg_mem(&a, plan->splits > 1 ? part[FUSED_PART_COUNTERS] : NULL);
    if (a.err != CL_SUCCESS)
        return clattn_fail_cl(a.err, "clSetKernelArg(" FUSED_ENTRY ")");
    size_t local = plan->local;
    size_t global = plan->n_rtiles * plan->splits * s->batch * s->kv_heads * local;
    cl_int err = clEnqueueNDRangeKernel(ctx->queue, kern, 1, NULL, &global, &local, c->num_wait,
                                        c->wait_list, done);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clEnqueueNDRangeKernel(" FUSED_ENTRY ")");
    return CLATTN_OK;
}

/* Work-items per output column of cl/fused/combine.cl (the combine_parts
 * parameter, within the device's work-group size): on a GPU 8, so that a
 * row of many chunks waits for an eighth of the loads in turn -- on an
 * H200 the 66-chunk decode row (B = 1, H = 32, Hkv = 8, Nk = 131072, d =
 * 128) spent 10.7 us in combine.cl with one part, 9.8 with 4 and 8.8 with
 * 8, and the call took 0.1507 ms against 0.1484 with 8; on a CPU one, where
 * a work-group's work-items run in turn anyway (8 parts untimed there). */
static size_t combine_parts(const clattn_ctx *ctx, const struct fused_plan *plan, size_t cols)
{
    const int asked = plan->common[FUSED_COMMON_COMBINE_PARTS];
    size_t parts = ctx->dev.is_cpu ? 1 : 8;
    if (asked != PARAM_AUTO)
        parts = (size_t)asked;
    const size_t max_wg = ctx->dev.max_wg ? ctx->dev.max_wg : 256;
    while (parts > 1 && cols * parts > (max_wg < 1024 ? max_wg : 1024))
        parts /= 2;
    return parts;
}

int fused_combine(clattn_ctx *ctx, const struct attention_call *c, const struct fused_plan *plan,
                  cl_mem part_o, cl_mem part_ml)
{
    const clattn_shape *s = c->shape;
    size_t cols = 32;
    while (cols < c->head_dim_v)
        cols *= 2;
    const size_t parts = combine_parts(ctx, plan, cols), wg = cols * parts;
    char options[512];
    snprintf(options, sizeof options, "-DD=%zu -DWG=%zu -DPARTS=%zu -DCHUNKS_MAX=%d%s",
             c->head_dim_v, wg, parts, FUSED_SPLITS_MAX,
             s->dtype == CLATTN_F16 ? " -DDTYPE_F16" : s->dtype == CLATTN_BF16 ? " -DDTYPE_BF16" : "");
    variant_options(c->flags, options, sizeof options);
    cl_kernel kern;
    int rc = kernel_get(ctx, "fused/combine.cl", options, "attention_combine", &kern);
    if (rc < 0)
        return rc;
    struct kernel_args a = { kern, 0, CL_SUCCESS };
    arg_mem(&a, c->o);
    arg_mem(&a, c->lse);
    arg_mem(&a, part_o);
    arg_mem(&a, part_ml);
    arg_lens(&a, c);
    arg_layout(&a, &c->ol);
    arg_sizes(&a, s);
    arg_u32(&a, plan->splits);
    arg_i32(&a, c->opts->window_left);
    arg_i32(&a, c->opts->window_right);
    arg_mem(&a, c->sinks);
    cl_int err = a.err;
    size_t global = s->batch * s->heads * s->q_len * wg;
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(ctx->queue, kern, 1, NULL, &global, &wg, 0, NULL, c->done);
    clReleaseKernel(kern);
    return err == CL_SUCCESS ? CLATTN_OK : clattn_fail_cl(err, "attention_combine");
}
