/*
 * Tuned fused tiles: `clattn tune` measures the candidates and records the
 * fastest per (kernel, dtype, d, causal); the fused path looks them up before
 * falling back to its defaults. One small text file per device, one line per
 * entry: "<kernel> <dtype> <d> <causal> <block_m> <block_n>".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_file.h"
#include "internal.h"

#define TUNE_PREFIX "tune-"

static const char *kernel_name(clattn_fused_kernel k)
{
    return k == CLATTN_FUSED_NV_MMA ? "nv-mma" : "portable";
}

static void load_once(clattn_ctx *ctx)
{
    if (ctx->tune_loaded)
        return;
    ctx->tune_loaded = 1;
    char path[4200], kernel[16];
    if (clattn_cache_path(ctx->device, TUNE_PREFIX, path, sizeof path) < 0) {
        clattn_clear_error(); /* no cache directory: defaults it is */
        return;
    }
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[256];
    while (ctx->n_tuned < CLATTN_MAX_TUNED && fgets(line, sizeof line, f)) {
        struct tune_entry e;
        int dtype, causal;
        if (line[0] == '#' ||
            sscanf(line, "%15s %d %zu %d %zu %zu", kernel, &dtype, &e.head_dim, &causal,
                   &e.block_m, &e.block_n) != 6)
            continue; /* comments, and lines this version does not understand */
        e.kernel = strcmp(kernel, "nv-mma") ? CLATTN_FUSED_PORTABLE : CLATTN_FUSED_NV_MMA;
        e.dtype = dtype ? CLATTN_F16 : CLATTN_F32;
        e.causal = causal != 0;
        if (e.block_m && e.block_n && e.block_m <= 1024 && e.block_n <= 1024)
            ctx->tuned[ctx->n_tuned++] = e;
    }
    fclose(f);
}

static struct tune_entry *find(clattn_ctx *ctx, clattn_fused_kernel kernel, clattn_dtype dtype,
                               size_t head_dim, int causal)
{
    for (size_t i = 0; i < ctx->n_tuned; i++) {
        struct tune_entry *e = &ctx->tuned[i];
        if (e->kernel == kernel && e->dtype == dtype && e->head_dim == head_dim &&
            e->causal == (causal != 0))
            return e;
    }
    return NULL;
}

int clattn_tuned_tiles(clattn_ctx *ctx, clattn_fused_kernel kernel, clattn_dtype dtype,
                       size_t head_dim, int causal, size_t *block_m, size_t *block_n)
{
    load_once(ctx);
    const struct tune_entry *e = find(ctx, kernel, dtype, head_dim, causal);
    if (!e)
        return 0;
    *block_m = e->block_m;
    *block_n = e->block_n;
    return 1;
}

int clattn_tune_record(clattn_ctx *ctx, clattn_fused_kernel kernel, clattn_dtype dtype,
                       size_t head_dim, int causal, size_t block_m, size_t block_n)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(ctx);
    CLATTN_CHECK_ARG(kernel == CLATTN_FUSED_PORTABLE || kernel == CLATTN_FUSED_NV_MMA);
    CLATTN_CHECK_ARG(dtype == CLATTN_F32 || dtype == CLATTN_F16);
    CLATTN_CHECK_ARG(head_dim >= 1 && head_dim <= 256);
    CLATTN_CHECK_ARG(block_m >= 1 && block_m <= 1024 && block_n >= 1 && block_n <= 1024);
    load_once(ctx);
    struct tune_entry *e = find(ctx, kernel, dtype, head_dim, causal);
    if (!e) {
        if (ctx->n_tuned == CLATTN_MAX_TUNED)
            return clattn_fail(CLATTN_ENOMEM, "more than %d tuned entries", CLATTN_MAX_TUNED);
        e = &ctx->tuned[ctx->n_tuned++];
        *e = (struct tune_entry){ kernel, dtype, head_dim, causal != 0, 0, 0 };
    }
    e->block_m = block_m;
    e->block_n = block_n;

    char path[4200], text[CLATTN_MAX_TUNED * 64 + 128];
    int rc = clattn_cache_path(ctx->device, TUNE_PREFIX, path, sizeof path);
    if (rc < 0)
        return rc;
    size_t len = (size_t)snprintf(text, sizeof text,
                                  "# clattn tune: kernel dtype(0=fp32,1=fp16) d causal BM BN\n");
    for (size_t i = 0; i < ctx->n_tuned && len < sizeof text; i++) {
        const struct tune_entry *t = &ctx->tuned[i];
        len += (size_t)snprintf(text + len, sizeof text - len, "%s %d %zu %d %zu %zu\n",
                                kernel_name(t->kernel), t->dtype == CLATTN_F16, t->head_dim,
                                t->causal, t->block_m, t->block_n);
    }
    return clattn_cache_write(path, text);
}
