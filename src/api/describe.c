/* SPDX-License-Identifier: MIT */
/* Public queries about the kernels a context would run, the workspace it
 * keeps, and recording tuned tiles. */
#include <stdio.h>
#include <string.h>

#include "api/prepare.h"
#include "core/options.h"
#include "context/context.h"
#include "fused/fused.h"
#include "naive/naive.h"
#include "tune/tune.h"

/* The checks and the plan both queries start from. */
static int query_plan(clattn_ctx *ctx, const clattn_shape *shape, const clattn_options *opts,
                      struct fused_plan *plan)
{
    struct attention_call c = { 0 };
    uint64_t spans[4];
    int rc = ctx_enter(ctx);
    if (rc < 0)
        return rc;
    if ((rc = prepare_call(shape, opts, &c, spans)) == CLATTN_OK)
        rc = fused_plan(ctx, &c, plan);
    return ctx_leave_with(ctx, rc);
}

int clattn_fused_tiles(clattn_ctx *ctx, const clattn_shape *shape, const clattn_options *opts,
                       size_t *block_m, size_t *block_n, clattn_fused_kernel *kernel)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(ctx && shape && block_m && block_n);
    clattn_options resolved;
    struct fused_plan plan;
    int rc = options_resolve(opts, &resolved);
    if (rc < 0 || (rc = query_plan(ctx, shape, &resolved, &plan)) < 0)
        return rc;
    *block_m = plan.tiles.bm;
    *block_n = plan.tiles.bn;
    if (kernel)
        *kernel = plan.kernel->id;
    return CLATTN_OK;
}

int clattn_plan_fused(clattn_ctx *ctx, const clattn_shape *shape, const clattn_options *opts,
                      clattn_fused_plan *out)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(ctx && shape && out);
    clattn_options resolved;
    struct fused_plan plan;
    int rc = options_resolve(opts, &resolved);
    if (rc < 0 || (rc = query_plan(ctx, shape, &resolved, &plan)) < 0)
        return rc;
    memset(out, 0, sizeof *out);
    out->kernel = plan.kernel->id;
    out->block_m = plan.tiles.bm;
    out->block_n = plan.tiles.bn;
    out->rows_per_item = plan.tiles.tm;
    out->work_group_size = plan.local;
    out->splits = (uint32_t)plan.splits;
    out->split_keys = plan.split_keys;
    out->workspace_bytes = fused_plan_workspace(shape, &plan);
    snprintf(out->note, sizeof out->note, "%s", plan.note);
    return CLATTN_OK;
}

int clattn_describe_kernels(clattn_ctx *ctx, const clattn_shape *shape,
                            const clattn_options *opts, char *fused, size_t fused_cap,
                            char *naive, size_t naive_cap)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(ctx && shape);
    CLATTN_CHECK_ARG(fused || !fused_cap);
    CLATTN_CHECK_ARG(naive || !naive_cap);
    clattn_options resolved;
    struct fused_plan plan;
    int rc = options_resolve(opts, &resolved);
    if (rc < 0)
        return rc;
    opts = &resolved;
    /* Each path only when asked: kernel_params belong to one path. */
    if (fused && fused_cap) {
        if ((rc = query_plan(ctx, shape, &resolved, &plan)) < 0)
            return rc;
        snprintf(fused, fused_cap, "fused/%s %zux%zu", plan.kernel->name, plan.tiles.bm,
                 plan.tiles.bn);
    }
    if (naive && naive_cap && (rc = ctx_enter(ctx)) == CLATTN_OK) {
        char names[48];
        if ((rc = naive_gemm_names(ctx, shape, opts, names, sizeof names)) == CLATTN_OK)
            snprintf(naive, naive_cap, "naive/%s", names);
        rc = ctx_leave_with(ctx, rc);
    }
    return rc;
}

int clattn_tune_record_params(clattn_ctx *ctx, clattn_fused_kernel kernel, clattn_dtype dtype,
                              size_t head_dim, int causal, const clattn_tiles *tiles,
                              const char *params)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(ctx);
    const struct fused_kernel *k = fused_kernel_by_id(kernel);
    CLATTN_CHECK_ARG(k != NULL);
    CLATTN_CHECK_ARG(dtype == CLATTN_F32 || dtype == CLATTN_F16);
    CLATTN_CHECK_ARG(head_dim >= 1 && head_dim <= 256);
    CLATTN_CHECK_ARG(tiles);
    CLATTN_CHECK_ARG(tiles->block_m >= 1 && tiles->block_m <= 1024 && tiles->block_n >= 1 &&
                     tiles->block_n <= 1024 && tiles->rows_per_item <= tiles->block_m);
    struct tune_entry e = { .dtype = dtype, .head_dim = head_dim, .causal = causal != 0,
                            .tiles = { tiles->block_m, tiles->block_n, tiles->rows_per_item } };
    snprintf(e.kernel, sizeof e.kernel, "%s", k->name);
    /* The parameters as the kernel reads them: checked, and written back
     * in one spelling. */
    struct fused_plan plan;
    struct param_group groups[2];
    fused_plan_init(&plan, k);
    const size_t n = fused_param_groups(&plan, groups);
    int rc = params_apply(params, groups, n, k->name);
    if (rc < 0)
        return rc;
    if (params_format(groups, n, e.params, sizeof e.params) < 0)
        return clattn_fail(CLATTN_EINVAL, "tuned parameters \"%.60s\" longer than %d bytes",
                           params, TUNE_PARAMS_MAX - 1);
    if ((rc = ctx_enter(ctx)) < 0)
        return rc;
    rc = tune_store(ctx, &e);
    fused_forget_plan(&ctx->fused); /* plans may take the new record */
    return ctx_leave_with(ctx, rc);
}

int clattn_tune_record(clattn_ctx *ctx, clattn_fused_kernel kernel, clattn_dtype dtype,
                       size_t head_dim, int causal, const clattn_tiles *tiles)
{
    return clattn_tune_record_params(ctx, kernel, dtype, head_dim, causal, tiles, NULL);
}

int clattn_kernel_params(clattn_path path, clattn_fused_kernel kernel, clattn_param_info *out,
                         size_t cap, size_t *count)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(count && (out || !cap));
    struct param_group groups[2];
    size_t n;
    struct fused_plan plan;
    if (path == CLATTN_PATH_NAIVE) {
        n = naive_param_groups(NULL, groups);
    } else if (path == CLATTN_PATH_FUSED) {
        const struct fused_kernel *k = fused_kernel_by_id(kernel);
        if (!k)
            return clattn_fail(CLATTN_EINVAL, "unknown fused kernel %d", (int)kernel);
        fused_plan_init(&plan, k);
        n = fused_param_groups(&plan, groups);
    } else {
        return clattn_fail(CLATTN_EINVAL, "path %d: the naive or the fused path", (int)path);
    }
    *count = 0;
    for (size_t g = 0; g < n; g++)
        for (size_t i = 0; i < groups[g].n; i++, (*count)++)
            if (*count < cap)
                params_describe(&groups[g].defs[i], &out[*count]);
    return CLATTN_OK;
}

void clattn_release_workspace(clattn_ctx *ctx)
{
    if (ctx && ctx_enter(ctx) == CLATTN_OK) {
        naive_state_release(&ctx->naive);
        fused_state_release(&ctx->fused);
        ctx_leave(ctx);
    }
}

size_t clattn_fused_kernel_count(void)
{
    return fused_kernel_count;
}

int clattn_fused_kernel_info(size_t index, clattn_kernel_info *out)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(out);
    if (index >= fused_kernel_count)
        return clattn_fail(CLATTN_EINVAL, "kernel index %zu: the table has %zu kernels", index,
                           fused_kernel_count);
    const struct fused_kernel *k = fused_kernels[index];
    memset(out, 0, sizeof *out);
    out->name = k->name;
    out->id = k->id;
    out->summary = k->summary;
    for (size_t i = 0; i < k->n_candidates && i < CLATTN_KERNEL_CANDIDATES_MAX; i++) {
        out->candidates[i].block_m = k->candidates[i].bm;
        out->candidates[i].block_n = k->candidates[i].bn;
        out->candidates[i].rows_per_item = k->candidates[i].tm;
        out->n_candidates++;
    }
    return CLATTN_OK;
}

int clattn_fused_kernel_find(const char *name, clattn_fused_kernel *out)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(name && out);
    if (!strcmp(name, "auto")) {
        *out = CLATTN_FUSED_AUTO;
        return CLATTN_OK;
    }
    const struct fused_kernel *k = fused_kernel_by_name(name);
    if (k) {
        *out = k->id;
        return CLATTN_OK;
    }
    clattn_fail(CLATTN_EINVAL, "unknown kernel '%.64s'; known: auto", name);
    for (size_t i = 0; i < fused_kernel_count; i++) {
        clattn_detail_append(", ");
        clattn_detail_append(fused_kernels[i]->name);
    }
    return CLATTN_EINVAL;
}

const char *clattn_fused_kernel_name(clattn_fused_kernel id)
{
    if (id == CLATTN_FUSED_AUTO)
        return "auto";
    const struct fused_kernel *k = fused_kernel_by_id(id);
    return k ? k->name : "unknown";
}

int clattn_fused_kernel_usable(clattn_ctx *ctx, clattn_fused_kernel id, const clattn_shape *shape,
                               char *why, size_t cap)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(why || !cap);
    int rc = clattn_shape_check(shape);
    if (rc < 0)
        return rc;
    const struct fused_kernel *k = fused_kernel_by_id(id);
    if (!k)
        return clattn_fail(CLATTN_EINVAL, "unknown fused kernel %d", (int)id);
    if ((rc = ctx_enter(ctx)) < 0)
        return rc;
    clattn_options opts;
    clattn_default_options(&opts);
    struct attention_call c = { 0 };
    uint64_t spans[4];
    if ((rc = prepare_call(shape, &opts, &c, spans)) < 0)
        return ctx_leave_with(ctx, rc);
    const char *reason = fused_cannot_plan(ctx, k, &c);
    if (why && cap)
        snprintf(why, cap, "%s", reason ? reason : "");
    ctx_leave(ctx);
    return reason == NULL;
}
