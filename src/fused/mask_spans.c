/* SPDX-License-Identifier: MIT */
/* The key spans per row tile of a mask_mod and a mask tensor (mask_spans.h,
 * cl/fused/mask_spans.cl). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context/context.h"
#include "context/kernel_args.h"
#include "context/program.h"
#include "core/error.h"
#include "core/variants.h"
#include "device/cl_error.h"
#include "fused/snippets.h"
#include "fused/mask_spans.h"

/* Work-items of a span's work-group: a turn of the scan takes this many
 * keys. */
#define SPAN_WG 64

static int entry_matches(const struct mask_span_entry *e, const char *snippet, size_t batch,
                         size_t kv_heads, size_t group, size_t n_q, size_t n_k, size_t bm)
{
    return e->spans && e->batch == batch && e->kv_heads == kv_heads && e->group == group &&
           e->n_q == n_q && e->n_k == n_k && e->bm == bm && !strcmp(e->snippet, snippet);
}

static void entry_release(struct mask_span_entry *e)
{
    if (e->spans)
        clReleaseMemObject(e->spans); /* a kernel still queued keeps its own hold */
    free(e->snippet);
    memset(e, 0, sizeof *e);
}

/* Enqueues cl/fused/mask_spans.cl over the tiles into `spans`: the
 * mask_mod's, and the mask tensor's where `tensor`. */
static int compute_spans(clattn_ctx *ctx, const struct attention_call *c, size_t bm,
                         size_t n_rtiles, int tensor, cl_mem spans)
{
    const clattn_shape *s = c->shape;
    const clattn_options *o = c->opts;
    const size_t group = s->heads / s->kv_heads;
    const int kind = !tensor ? 0 : (c->flags & FUSED_F_MASK_BOOL) ? 2 : 1;
    struct mask_strides m = { 0, 0, 0, 0 };
    if (tensor)
        mask_strides_of(s, &o->mask, &m);
    char *prelude, options[160];
    int rc = fused_snippets_prelude(NULL, o->mask_mod, &prelude);
    if (rc < 0)
        return rc;
    snprintf(options, sizeof options,
             "-DGROUP=%zu -DBM=%zu -DWG=%d -DSPAN_MOD=%d -DSPAN_MASK=%d -DMASK_DTYPE=%d", group,
             bm, SPAN_WG, o->mask_mod != NULL, kind, kind == 1 ? (int)o->mask.dtype : 0);
    cl_kernel kern;
    rc = kernel_get_with(ctx, "fused/mask_spans.cl", prelude, options, "mask_spans", &kern);
    free(prelude);
    if (rc < 0)
        return rc;
    struct kernel_args a = { kern, 0, CL_SUCCESS };
    arg_mem(&a, spans);
    arg_u32(&a, s->q_len);
    arg_u32(&a, s->kv_len);
    arg_u32(&a, s->kv_heads);
    arg_u32(&a, n_rtiles);
    arg_mem(&a, tensor ? c->mask : NULL);
    arg_u64(&a, m.offset);
    arg_u64(&a, m.batch);
    arg_u64(&a, m.head);
    arg_u64(&a, m.row);
    cl_int err = a.err;
    size_t local = SPAN_WG, global = s->batch * s->kv_heads * n_rtiles * local;
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(ctx->queue, kern, 1, NULL, &global, &local,
                                     tensor ? c->num_wait : 0, tensor ? c->wait_list : NULL,
                                     NULL);
    clReleaseKernel(kern);
    return err == CL_SUCCESS ? CLATTN_OK : clattn_fail_cl(err, "mask_spans");
}

int mask_spans_get(clattn_ctx *ctx, const struct attention_call *c, const struct fused_plan *plan,
                   cl_mem *out)
{
    *out = NULL;
    if (plan->kernel->binary)
        return CLATTN_OK;
    const int tensor = (c->flags & (FUSED_F_MASK | FUSED_F_MASK_BOOL)) != 0;
    if (!tensor && !(c->flags & FUSED_F_MASK_MOD))
        return CLATTN_OK;
    const clattn_shape *s = c->shape;
    const size_t group = s->heads / s->kv_heads, bm = plan->tiles.bm;
    const size_t bytes = s->batch * s->kv_heads * plan->n_rtiles * 2 * sizeof(cl_uint);
    struct mask_span_cache *cache = &ctx->fused.spans;
    if (tensor) {
        int rc = kept_buffer_get(ctx->context, &cache->per_call, bytes, 0,
                                 "clCreateBuffer(mask spans)", out);
        if (rc >= 0)
            rc = compute_spans(ctx, c, bm, plan->n_rtiles, 1, *out);
        if (rc < 0)
            *out = NULL;
        return rc;
    }
    const char *snippet = c->opts->mask_mod;
    for (int i = 0; i < MASK_SPANS_KEPT; i++) {
        const struct mask_span_entry *e = &cache->entries[i];
        if (entry_matches(e, snippet, s->batch, s->kv_heads, group, s->q_len, s->kv_len, bm)) {
            *out = e->spans;
            return CLATTN_OK;
        }
    }
    struct mask_span_entry *e = &cache->entries[cache->next];
    entry_release(e);
    cl_int err;
    cl_mem spans = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (!spans)
        return clattn_fail_cl(err, "clCreateBuffer(mask_mod spans)");
    int rc = compute_spans(ctx, c, bm, plan->n_rtiles, 0, spans);
    char *copy = rc < 0 ? NULL : strdup(snippet);
    if (rc >= 0 && !copy)
        rc = clattn_fail(CLATTN_ENOMEM, "mask_mod spans: snippet");
    if (rc < 0) {
        clReleaseMemObject(spans);
        return rc;
    }
    *e = (struct mask_span_entry){ copy, s->batch, s->kv_heads, group, s->q_len, s->kv_len,
                                   bm, spans };
    cache->next = (cache->next + 1) % MASK_SPANS_KEPT;
    *out = spans;
    return CLATTN_OK;
}

void mask_span_cache_release(struct mask_span_cache *cache)
{
    for (int i = 0; i < MASK_SPANS_KEPT; i++)
        entry_release(&cache->entries[i]);
    cache->next = 0;
    kept_buffer_release(&cache->per_call);
}
