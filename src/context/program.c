/* SPDX-License-Identifier: MIT */
/* The context's built programs (see program.h). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device/cl_error.h"
#include "context/context.h"
#include "device/build.h"
#include "context/program.h"

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static struct program_entry *find(struct program_cache *c, const char *file, const char *prelude,
                                  const char *options)
{
    for (size_t i = 0; i < c->count; i++)
        if (!strcmp(c->entries[i].file, file) && !strcmp(c->entries[i].options, options) &&
            !strcmp(c->entries[i].prelude, prelude))
            return &c->entries[i];
    return NULL;
}

/* Room for one more entry. */
static int reserve(struct program_cache *c)
{
    if (c->count < c->cap)
        return CLATTN_OK;
    size_t cap = c->cap ? 2 * c->cap : 8;
    struct program_entry *p = realloc(c->entries, cap * sizeof *p);
    if (!p)
        return clattn_fail(CLATTN_ENOMEM, "program cache");
    c->entries = p;
    c->cap = cap;
    return CLATTN_OK;
}

/* The cache entry for (file, options), built on first use. */
static int entry_get(clattn_ctx *ctx, const char *file, const char *prelude,
                     const char *options, struct program_entry **out)
{
    struct program_cache *c = &ctx->programs;
    if ((*out = find(c, file, prelude, options)))
        return CLATTN_OK;
    int rc = reserve(c);
    if (rc < 0)
        return rc;
    cl_program prog = NULL;
    struct program_origin origin;
    memset(&origin, 0, sizeof origin);
    const double t0 = seconds_now();
    /* A ".ptx" file is a program binary made at build time (cl/ptxgen.py):
     * it has no build options. */
    const size_t len = strlen(file);
    if (len > 4 && !strcmp(file + len - 4, ".ptx"))
        rc = options[0] ? clattn_fail(CLATTN_EINVAL, "%s is a PTX binary: no build options",
                                      file)
                        : program_build_ptx(ctx->context, ctx->device, ctx->dev.label, file,
                                            &prog);
    else
        rc = program_build(ctx->context, ctx->device, ctx->dev.label, file, prelude, options,
                           &prog, &origin);
    c->build_seconds += seconds_now() - t0;
    if (rc < 0)
        return ctx_note_failure(ctx, rc);
    struct program_entry *e = &c->entries[c->count];
    memset(e, 0, sizeof *e);
    e->file = dup_str(file);
    e->prelude = dup_str(prelude);
    e->options = dup_str(options);
    if (!e->file || !e->prelude || !e->options) {
        free(e->file);
        free(e->prelude);
        free(e->options);
        clReleaseProgram(prog);
        return clattn_fail(CLATTN_ENOMEM, "program cache");
    }
    e->program = prog;
    e->origin = origin;
    c->count++;
    *out = e;
    return CLATTN_OK;
}

int program_get(clattn_ctx *ctx, const char *file, const char *options, cl_program *out)
{
    struct program_entry *e;
    int rc = entry_get(ctx, file, "", options, &e);
    if (rc >= 0)
        *out = e->program;
    return rc;
}

int kernel_get(clattn_ctx *ctx, const char *file, const char *options, const char *name,
               cl_kernel *out)
{
    return kernel_get_with(ctx, file, NULL, options, name, out);
}

int kernel_get_with(clattn_ctx *ctx, const char *file, const char *prelude, const char *options,
                    const char *name, cl_kernel *out)
{
    struct program_entry *e;
    int rc = entry_get(ctx, file, prelude ? prelude : "", options, &e);
    if (rc < 0)
        return rc;
    size_t slot = PROGRAM_KERNELS_MAX;
    for (size_t i = 0; i < PROGRAM_KERNELS_MAX; i++) {
        if (e->kernels[i].kernel && !strcmp(e->kernels[i].name, name)) {
            cl_int err = clRetainKernel(e->kernels[i].kernel);
            if (err != CL_SUCCESS)
                return clattn_fail_cl(err, "clRetainKernel");
            *out = e->kernels[i].kernel;
            return CLATTN_OK;
        }
        if (!e->kernels[i].kernel && slot == PROGRAM_KERNELS_MAX)
            slot = i;
    }
    cl_int err;
    *out = clCreateKernel(e->program, name, &err);
    if (err != CL_SUCCESS)
        return ctx_note_failure(ctx, clattn_fail_cl(err, name));
    /* The cache keeps the kernel only with a reference of its own: the
     * caller releases the one it is handed. */
    if (slot < PROGRAM_KERNELS_MAX && strlen(name) < sizeof e->kernels[0].name &&
        clRetainKernel(*out) == CL_SUCCESS) {
        strcpy(e->kernels[slot].name, name);
        e->kernels[slot].kernel = *out;
    }
    return CLATTN_OK;
}

void program_cache_release(struct program_cache *c)
{
    for (size_t i = 0; i < c->count; i++) {
        for (size_t k = 0; k < PROGRAM_KERNELS_MAX; k++)
            if (c->entries[i].kernels[k].kernel)
                clReleaseKernel(c->entries[i].kernels[k].kernel);
        program_keep(c->entries[i].program, c->entries[i].file, &c->entries[i].origin);
        clReleaseProgram(c->entries[i].program);
        free(c->entries[i].file);
        free(c->entries[i].prelude);
        free(c->entries[i].options);
    }
    free(c->entries);
    memset(c, 0, sizeof *c);
}
