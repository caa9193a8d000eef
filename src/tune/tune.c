/* SPDX-License-Identifier: MIT */
/* Tuned tiles per device (see tune.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "device/cache_file.h"
#include "context/context.h"
#include "tune/tune.h"

#define TUNE_PREFIX "tune-"

static void load_once(clattn_ctx *ctx)
{
    struct tune_state *t = &ctx->tune;
    if (t->loaded)
        return;
    t->loaded = 1;
    char *text = NULL;
    if (cache_path(TUNE_PREFIX, &ctx->dev.identity, t->path, sizeof t->path) < 0)
        t->path[0] = '\0';
    else if (cache_read(t->path, &text) == 0)
        tune_parse_text(text, t); /* out of memory: the entries read so far */
    free(text);
    clattn_clear_error(); /* no file, or none readable: defaults it is */
}

int tune_lookup(clattn_ctx *ctx, const char *kernel, clattn_dtype dtype, size_t head_dim,
                int causal, struct tune_entry *out, const char **file)
{
    load_once(ctx);
    const struct tune_entry *e = tune_find(&ctx->tune, kernel, dtype, head_dim, causal);
    if (!e)
        return 0;
    *out = *e;
    if (file)
        *file = ctx->tune.path;
    return 1;
}

/* What a store adds: tiles or an efficiency. */
struct tune_update {
    const struct tune_entry *entry;
    const struct tune_efficiency *efficiency;
};

/* cache_update's merge: the file as another process may have left it, with
 * this context's new entry on top. */
static int merge_entry(const char *current, void *user, char **out)
{
    const struct tune_update *u = user;
    struct tune_state merged = { 0 };
    char *copy = current ? malloc(strlen(current) + 1) : NULL;
    int rc = CLATTN_OK;
    if (current && !copy) {
        rc = clattn_fail(CLATTN_ENOMEM, "tune file merge");
        goto out;
    }
    if (copy) {
        strcpy(copy, current);
        if ((rc = tune_parse_text(copy, &merged)) < 0)
            goto out;
    }
    if (u->entry && (rc = tune_put(&merged, u->entry)) < 0)
        goto out;
    if (u->efficiency && (rc = tune_put_efficiency(&merged, u->efficiency)) < 0)
        goto out;
    if (!(*out = tune_format_text(&merged)))
        rc = clattn_fail(CLATTN_ENOMEM, "tune file text");
out:
    free(copy);
    tune_state_release(&merged);
    return rc;
}

/* Puts the update into the context's table and merges it into the file. */
static int store(clattn_ctx *ctx, const struct tune_update *u)
{
    load_once(ctx);
    int rc = u->entry ? tune_put(&ctx->tune, u->entry)
                      : tune_put_efficiency(&ctx->tune, u->efficiency);
    if (rc < 0)
        return rc;
    if (!ctx->tune.path[0])
        return clattn_fail(CLATTN_EIO, "no cache directory to save %s in",
                           u->entry ? "tuned tiles" : "efficiencies");
    return cache_update(ctx->tune.path, merge_entry, (void *)u);
}

int tune_store(clattn_ctx *ctx, const struct tune_entry *e)
{
    const struct tune_update u = { e, NULL };
    return store(ctx, &u);
}

int tune_lookup_efficiency(clattn_ctx *ctx, const char *kernel, clattn_dtype dtype,
                           size_t head_dim, clattn_bound bound, struct tune_efficiency *out)
{
    load_once(ctx);
    const struct tune_efficiency *e = tune_find_efficiency(&ctx->tune, kernel, dtype, head_dim,
                                                           bound);
    if (!e)
        return 0;
    *out = *e;
    return 1;
}

int tune_store_efficiency(clattn_ctx *ctx, const struct tune_efficiency *e)
{
    const struct tune_update u = { NULL, e };
    return store(ctx, &u);
}
