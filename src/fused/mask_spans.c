/* SPDX-License-Identifier: MIT */
/* A mask_mod's key spans per row tile (mask_spans.h, cl/fused/mask_spans.cl). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context/context.h"
#include "context/kernel_args.h"
#include "context/program.h"
#include "core/error.h"
#include "device/cl_error.h"
#include "device/kernel_source.h"
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

/* Enqueues cl/fused/mask_spans.cl over the tiles into `spans`. */
static int compute_spans(clattn_ctx *ctx, const struct attention_call *c, size_t bm,
                         size_t n_rtiles, cl_mem spans)
{
    const clattn_shape *s = c->shape;
    const size_t group = s->heads / s->kv_heads;
    char *env, *prelude, options[96];
    int rc = clattn_kernel_source("include/snippet.clh", &env);
    if (rc < 0)
        return rc;
    const size_t n = strlen(env) + strlen(c->opts->mask_mod) + 4;
    prelude = malloc(n);
    if (prelude)
        snprintf(prelude, n, "%s\n%s\n", env, c->opts->mask_mod);
    free(env);
    if (!prelude)
        return clattn_fail(CLATTN_ENOMEM, "mask_mod spans: prelude");
    snprintf(options, sizeof options, "-DGROUP=%zu -DBM=%zu -DWG=%d", group, bm, SPAN_WG);
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
    cl_int err = a.err;
    size_t local = SPAN_WG, global = s->batch * s->kv_heads * n_rtiles * local;
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(ctx->queue, kern, 1, NULL, &global, &local, 0, NULL, NULL);
    clReleaseKernel(kern);
    return err == CL_SUCCESS ? CLATTN_OK : clattn_fail_cl(err, "mask_spans");
}

int mask_spans_get(clattn_ctx *ctx, const struct attention_call *c, const struct fused_plan *plan,
                   cl_mem *out)
{
    *out = NULL;
    if (!(c->flags & FUSED_F_MASK_MOD))
        return CLATTN_OK;
    const clattn_shape *s = c->shape;
    const size_t group = s->heads / s->kv_heads, bm = plan->tiles.bm;
    const char *snippet = c->opts->mask_mod;
    struct mask_span_cache *cache = &ctx->fused.spans;
    for (int i = 0; i < MASK_SPANS_KEPT; i++) {
        const struct mask_span_entry *e = &cache->entries[i];
        if (entry_matches(e, snippet, s->batch, s->kv_heads, group, s->q_len, s->kv_len, bm)) {
            *out = e->spans;
            return CLATTN_OK;
        }
    }
    struct mask_span_entry *e = &cache->entries[cache->next];
    entry_release(e);
    const size_t bytes = s->batch * s->kv_heads * plan->n_rtiles * 2 * sizeof(cl_uint);
    cl_int err;
    cl_mem spans = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (!spans)
        return clattn_fail_cl(err, "clCreateBuffer(mask_mod spans)");
    int rc = compute_spans(ctx, c, bm, plan->n_rtiles, spans);
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
}
