/* SPDX-License-Identifier: MIT */
/* The tune file's text (see tune.h): parsing and formatting, no OpenCL, so
 * that tests/fuzz/fuzz_cache.c can drive it alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/params.h"
#include "tune/tune.h"

#define TUNE_LINE_MAX (TUNE_KERNEL_NAME_MAX + TUNE_PARAMS_MAX + 128) /* 6 numbers, spaces */

/* A name of the file: lower-case letters, digits and '-', with `slashes`
 * '/' between non-empty parts. */
static int name_ok(const char *name, int slashes)
{
    if (!name[0] || name[0] == '/')
        return 0;
    for (const char *c = name; *c; c++) {
        if (*c == '/') {
            if (--slashes < 0 || !c[1] || c[1] == '/')
                return 0;
        } else if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-')) {
            return 0;
        }
    }
    return slashes == 0;
}

int tune_efficiency_name_ok(const char *kernel)
{
    return strlen(kernel) < TUNE_EFFICIENCY_NAME_MAX && name_ok(kernel, 1);
}

/* Room for one more of `count` items of `size` bytes in *items (capacity
 * *cap, doubled as it fills): 0, or CLATTN_ENOMEM naming `what`. */
static int grow(void **items, size_t *cap, size_t count, size_t size, const char *what)
{
    if (count < *cap)
        return CLATTN_OK;
    const size_t n = *cap ? 2 * *cap : 16;
    void *grown = realloc(*items, n * size);
    if (!grown)
        return clattn_fail(CLATTN_ENOMEM, "%s of %zu entries", what, n);
    *items = grown;
    *cap = n;
    return CLATTN_OK;
}

/* One line of the file; 0 if it is not an entry (comments, lines a newer
 * version wrote, garbage). */
static int parse_entry(const char *line, struct tune_entry *e)
{
    char kernel[TUNE_KERNEL_NAME_MAX], params[TUNE_PARAMS_MAX];
    int dtype, causal;
    char tail;
    e->tiles.tm = 0; /* a six-column line (clattn 0.1) has none */
    params[0] = '\0';
    if (line[0] == '#')
        return 0;
    const int fields = sscanf(line, "%23s %d %zu %d %zu %zu %zu %95s %c", kernel, &dtype,
                              &e->head_dim, &causal, &e->tiles.bm, &e->tiles.bn, &e->tiles.tm,
                              params, &tail);
    if ((fields < 6 || fields > 8) || (dtype != 0 && dtype != 1) ||
        (causal != 0 && causal != 1))
        return 0;
    /* A kernel table name. Anything else (a '#' after leading white space,
     * say) would not read back as it was written. */
    if (!name_ok(kernel, 0))
        return 0;
    if (!strcmp(params, "-"))
        params[0] = '\0';
    if (!params_well_formed(params))
        return 0;
    snprintf(e->kernel, sizeof e->kernel, "%s", kernel);
    snprintf(e->params, sizeof e->params, "%s", params);
    e->dtype = dtype ? CLATTN_F16 : CLATTN_F32;
    e->causal = causal;
    return 1;
}

/* An efficiency line; 0 if it is not one. */
static int parse_efficiency(const char *line, struct tune_efficiency *e)
{
    char kernel[TUNE_EFFICIENCY_NAME_MAX], bound[16], tail;
    int dtype;
    if (sscanf(line, "efficiency %39s %d %zu %15s %lf %c", kernel, &dtype, &e->head_dim, bound,
               &e->fraction, &tail) != 5)
        return 0;
    if (dtype < 0 || dtype > 2 || e->head_dim < 1 || e->head_dim > 576 ||
        !(e->fraction > 0 && e->fraction <= 100))
        return 0;
    if (!strcmp(bound, "memory"))
        e->bound = CLATTN_BOUND_MEMORY;
    else if (!strcmp(bound, "compute"))
        e->bound = CLATTN_BOUND_COMPUTE;
    else
        return 0;
    if (!tune_efficiency_name_ok(kernel))
        return 0;
    snprintf(e->kernel, sizeof e->kernel, "%s", kernel);
    e->dtype = dtype == 1 ? CLATTN_F16 : dtype == 2 ? CLATTN_BF16 : CLATTN_F32;
    return 1;
}

struct tune_efficiency *tune_find_efficiency(struct tune_state *t, const char *kernel,
                                             clattn_dtype dtype, size_t head_dim,
                                             clattn_bound bound)
{
    for (size_t i = 0; i < t->n_effs; i++) {
        struct tune_efficiency *e = &t->effs[i];
        if (!strcmp(e->kernel, kernel) && e->dtype == dtype && e->head_dim == head_dim &&
            e->bound == bound)
            return e;
    }
    return NULL;
}

int tune_put_efficiency(struct tune_state *t, const struct tune_efficiency *e)
{
    struct tune_efficiency *old = tune_find_efficiency(t, e->kernel, e->dtype, e->head_dim,
                                                       e->bound);
    if (!old) {
        void *items = t->effs;
        int rc = grow(&items, &t->cap_effs, t->n_effs, sizeof *t->effs, "efficiency table");
        t->effs = items;
        if (rc < 0)
            return rc;
        old = &t->effs[t->n_effs++];
    }
    *old = *e;
    return CLATTN_OK;
}

struct tune_entry *tune_find(struct tune_state *t, const char *kernel, clattn_dtype dtype,
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

int tune_put(struct tune_state *t, const struct tune_entry *e)
{
    struct tune_entry *old = tune_find(t, e->kernel, e->dtype, e->head_dim, e->causal);
    if (!old) {
        void *items = t->entries;
        int rc = grow(&items, &t->cap, t->count, sizeof *t->entries, "tune table");
        t->entries = items;
        if (rc < 0)
            return rc;
        old = &t->entries[t->count++];
    }
    *old = *e;
    return CLATTN_OK;
}

void tune_state_release(struct tune_state *t)
{
    free(t->entries);
    t->entries = NULL;
    t->count = t->cap = 0;
    free(t->effs);
    t->effs = NULL;
    t->n_effs = t->cap_effs = 0;
    t->loaded = 0;
}

int tune_parse_text(char *text, struct tune_state *t)
{
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        struct tune_entry e;
        struct tune_efficiency f;
        int rc;
        if (parse_entry(line, &e) && (rc = tune_put(t, &e)) < 0)
            return rc;
        if (parse_efficiency(line, &f) && (rc = tune_put_efficiency(t, &f)) < 0)
            return rc;
    }
    return CLATTN_OK;
}

char *tune_format_text(const struct tune_state *t)
{
    size_t cap = 256 + t->count * TUNE_LINE_MAX + t->n_effs * (TUNE_EFFICIENCY_NAME_MAX + 64),
           len;
    char *text = malloc(cap);
    if (!text)
        return NULL;
    len = (size_t)snprintf(text, cap, "# clattn tune: kernel dtype(0=fp32,1=fp16) d causal BM BN "
                                      "TM params\n");
    for (size_t i = 0; i < t->count && len < cap; i++) {
        const struct tune_entry *e = &t->entries[i];
        len += (size_t)snprintf(text + len, cap - len, "%s %d %zu %d %zu %zu %zu %s\n",
                                e->kernel, e->dtype == CLATTN_F16, e->head_dim, e->causal,
                                e->tiles.bm, e->tiles.bn, e->tiles.tm,
                                e->params[0] ? e->params : "-");
    }
    if (t->n_effs && len < cap)
        len += (size_t)snprintf(text + len, cap - len,
                                "# efficiency kernel dtype(0=fp32,1=fp16,2=bf16) d bound "
                                "roofline/measured\n");
    for (size_t i = 0; i < t->n_effs && len < cap; i++) {
        const struct tune_efficiency *e = &t->effs[i];
        len += (size_t)snprintf(text + len, cap - len, "efficiency %s %d %zu %s %.6g\n",
                                e->kernel, e->dtype == CLATTN_F16 ? 1 : e->dtype == CLATTN_BF16 ? 2 : 0,
                                e->head_dim, e->bound == CLATTN_BOUND_MEMORY ? "memory" : "compute",
                                e->fraction);
    }
    return text;
}
