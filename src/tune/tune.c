/* Tuned tiles per device (see tune.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "device/cache_file.h"
#include "context/context.h"
#include "tune/tune.h"

#define TUNE_PREFIX "tune-"
#define TUNE_LINE_MAX 96

/* One line of the file; 0 if it is not an entry (comments, lines a newer
 * version wrote, garbage). */
static int parse_entry(const char *line, struct tune_entry *e)
{
    char kernel[TUNE_KERNEL_NAME_MAX];
    int dtype, causal;
    char tail;
    if (line[0] == '#' ||
        sscanf(line, "%23s %d %zu %d %zu %zu %c", kernel, &dtype, &e->head_dim, &causal,
               &e->block_m, &e->block_n, &tail) != 6 ||
        (dtype != 0 && dtype != 1) || (causal != 0 && causal != 1))
        return 0;
    snprintf(e->kernel, sizeof e->kernel, "%s", kernel);
    e->dtype = dtype ? CLATTN_F16 : CLATTN_F32;
    e->causal = causal;
    return 1;
}

static struct tune_entry *find(struct tune_state *t, const char *kernel, clattn_dtype dtype,
                               size_t head_dim, int causal)
{
    for (size_t i = 0; i < t->count; i++) {
        struct tune_entry *e = &t->entries[i];
        if (!strcmp(e->kernel, kernel) && e->dtype == dtype && e->head_dim == head_dim &&
            e->causal == (causal != 0))
            return e;
    }
    return NULL;
}

/* Adds or replaces the entry of e's key; 0, or -1 when the table is full. */
static int put(struct tune_state *t, const struct tune_entry *e)
{
    struct tune_entry *old = find(t, e->kernel, e->dtype, e->head_dim, e->causal);
    if (!old) {
        if (t->count == TUNE_ENTRIES_MAX)
            return -1;
        old = &t->entries[t->count++];
    }
    *old = *e;
    return 0;
}

/* Every entry of `text` into `t` (the last line of a key wins). */
static void parse_entries(char *text, struct tune_state *t)
{
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        struct tune_entry e;
        if (parse_entry(line, &e))
            put(t, &e);
    }
}

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
        parse_entries(text, t);
    free(text);
    clattn_clear_error(); /* no file, or none readable: defaults it is */
}

int tune_lookup(clattn_ctx *ctx, const char *kernel, clattn_dtype dtype, size_t head_dim,
                int causal, size_t *block_m, size_t *block_n, const char **file)
{
    load_once(ctx);
    const struct tune_entry *e = find(&ctx->tune, kernel, dtype, head_dim, causal);
    if (!e)
        return 0;
    *block_m = e->block_m;
    *block_n = e->block_n;
    if (file)
        *file = ctx->tune.path;
    return 1;
}

/* The file's text for the entries of `t`. */
static char *format_entries(const struct tune_state *t)
{
    size_t cap = 128 + t->count * TUNE_LINE_MAX, len;
    char *text = malloc(cap);
    if (!text)
        return NULL;
    len = (size_t)snprintf(text, cap, "# clattn tune: kernel dtype(0=fp32,1=fp16) d causal BM BN\n");
    for (size_t i = 0; i < t->count && len < cap; i++) {
        const struct tune_entry *e = &t->entries[i];
        len += (size_t)snprintf(text + len, cap - len, "%s %d %zu %d %zu %zu\n", e->kernel,
                                e->dtype == CLATTN_F16, e->head_dim, e->causal, e->block_m,
                                e->block_n);
    }
    return text;
}

/* cache_update's merge: the file as another process may have left it, with
 * this context's new entry on top. */
static int merge_entry(const char *current, void *user, char **out)
{
    const struct tune_entry *e = user;
    struct tune_state *merged = calloc(1, sizeof *merged);
    char *copy = current ? malloc(strlen(current) + 1) : NULL;
    int rc = CLATTN_OK;
    if (!merged || (current && !copy)) {
        rc = clattn_fail(CLATTN_ENOMEM, "tune file merge");
        goto out;
    }
    if (copy) {
        strcpy(copy, current);
        parse_entries(copy, merged);
    }
    if (put(merged, e) < 0) {
        rc = clattn_fail(CLATTN_ENOMEM, "more than %d tuned entries", TUNE_ENTRIES_MAX);
        goto out;
    }
    if (!(*out = format_entries(merged)))
        rc = clattn_fail(CLATTN_ENOMEM, "tune file text");
out:
    free(copy);
    free(merged);
    return rc;
}

int tune_store(clattn_ctx *ctx, const char *kernel, clattn_dtype dtype, size_t head_dim,
               int causal, size_t block_m, size_t block_n)
{
    load_once(ctx);
    struct tune_entry e = { .dtype = dtype, .head_dim = head_dim, .causal = causal != 0,
                            .block_m = block_m, .block_n = block_n };
    if (snprintf(e.kernel, sizeof e.kernel, "%s", kernel) >= (int)sizeof e.kernel)
        return clattn_fail(CLATTN_EINVAL, "kernel name %s too long", kernel);
    if (put(&ctx->tune, &e) < 0)
        return clattn_fail(CLATTN_ENOMEM, "more than %d tuned entries", TUNE_ENTRIES_MAX);
    if (!ctx->tune.path[0])
        return clattn_fail(CLATTN_EIO, "no cache directory to save tuned tiles in");
    return cache_update(ctx->tune.path, merge_entry, &e);
}
