/* Kernel builds: each (file, options) variant is built once per context and
 * kept until the context closes. Each file of cl/ is a whole program. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* Appends the build log to the error detail, so a user sees why. */
static void attach_build_log(clattn_ctx *ctx, cl_program prog)
{
    size_t len = 0;
    if (clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &len) ||
        !len)
        return;
    char *log = malloc(len + 1);
    if (!log)
        return;
    if (!clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, len, log, NULL)) {
        log[len] = '\0';
        clattn_detail_append("\nbuild log:\n");
        clattn_detail_append(log);
    }
    free(log);
}

/* Developer aid: with $CLATTN_BUILD_LOG_DIR set, every build's options and
 * log (e.g. NVIDIA's -cl-nv-verbose register report) go to a file there. */
static void save_build_log(clattn_ctx *ctx, cl_program prog, const char *file,
                           const char *options)
{
    const char *dir = getenv("CLATTN_BUILD_LOG_DIR");
    if (!dir || !*dir)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/build-%ld-%03zu-%s.log", dir, (long)getpid(), ctx->n_programs,
             file);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    size_t len = 0;
    char *log = NULL;
    if (!clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &len) && len &&
        (log = malloc(len + 1)) &&
        !clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, len, log, NULL)) {
        log[len] = '\0';
    }
    fprintf(f, "file: %s\noptions: %s\n%s\n", file, options, log ? log : "");
    free(log);
    fclose(f);
    /* The program binary too: PTX text on NVIDIA, for ptxas / cuobjdump. */
    size_t bin_len = 0;
    unsigned char *bin = NULL;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof bin_len, &bin_len, NULL) ||
        !bin_len || !(bin = malloc(bin_len)))
        return;
    if (!clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL)) {
        snprintf(path, sizeof path, "%s/build-%ld-%03zu-%s.bin", dir, (long)getpid(),
                 ctx->n_programs, file);
        if ((f = fopen(path, "wb"))) {
            fwrite(bin, 1, bin_len, f);
            fclose(f);
        }
    }
    free(bin);
}

static int build(clattn_ctx *ctx, const char *file, const char *options, cl_program *out)
{
    char *body = NULL;
    int rc = clattn_kernel_source(file, &body);
    if (rc < 0)
        return rc;
    const char *src = body;
    cl_int err;
    cl_program prog = clCreateProgramWithSource(ctx->context, 1, &src, NULL, &err);
    free(body);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clCreateProgramWithSource");
    /* $CLATTN_BUILD_OPTIONS adds options to every build (e.g. -cl-nv-verbose). */
    char all_options[1024];
    const char *extra = getenv("CLATTN_BUILD_OPTIONS");
    snprintf(all_options, sizeof all_options, "%s %s", options, extra ? extra : "");
    err = clBuildProgram(prog, 1, &ctx->device, all_options, NULL, NULL);
    save_build_log(ctx, prog, file, all_options);
    if (err != CL_SUCCESS) {
        rc = clattn_fail(CLATTN_EBUILD, "building %s with \"%s\" on %s -> %s (%d)", file,
                         options, ctx->name, clattn_cl_status_name(err), (int)err);
        attach_build_log(ctx, prog);
        clReleaseProgram(prog);
        return rc;
    }
    *out = prog;
    return CLATTN_OK;
}

int clattn_program_get(clattn_ctx *ctx, const char *file, const char *options,
                       cl_program *out)
{
    for (size_t i = 0; i < ctx->n_programs; i++) {
        struct program_entry *e = &ctx->programs[i];
        if (!strcmp(e->file, file) && !strcmp(e->options, options)) {
            *out = e->program;
            return CLATTN_OK;
        }
    }
    if (ctx->n_programs == ctx->cap_programs) {
        size_t cap = ctx->cap_programs ? 2 * ctx->cap_programs : 8;
        struct program_entry *p = realloc(ctx->programs, cap * sizeof *p);
        if (!p)
            return clattn_fail(CLATTN_ENOMEM, "program cache");
        ctx->programs = p;
        ctx->cap_programs = cap;
    }
    cl_program prog = NULL;
    int rc = build(ctx, file, options, &prog);
    if (rc < 0)
        return rc;
    struct program_entry *e = &ctx->programs[ctx->n_programs];
    e->file = dup_str(file);
    e->options = dup_str(options);
    if (!e->file || !e->options) {
        free(e->file);
        free(e->options);
        clReleaseProgram(prog);
        return clattn_fail(CLATTN_ENOMEM, "program cache");
    }
    e->program = prog;
    memset(e->kernels, 0, sizeof e->kernels);
    ctx->n_programs++;
    *out = prog;
    return CLATTN_OK;
}

/* The program entry holding `prog`. */
static struct program_entry *entry_of(clattn_ctx *ctx, cl_program prog)
{
    for (size_t i = 0; i < ctx->n_programs; i++)
        if (ctx->programs[i].program == prog)
            return &ctx->programs[i];
    return NULL;
}

int clattn_kernel_get(clattn_ctx *ctx, const char *file, const char *options,
                      const char *name, cl_kernel *out)
{
    cl_program prog;
    int rc = clattn_program_get(ctx, file, options, &prog);
    if (rc < 0)
        return rc;
    struct program_entry *e = entry_of(ctx, prog);
    size_t slot = CLATTN_KERNELS_PER_PROGRAM;
    for (size_t i = 0; e && i < CLATTN_KERNELS_PER_PROGRAM; i++) {
        if (e->kernels[i].kernel && !strcmp(e->kernels[i].name, name)) {
            clRetainKernel(e->kernels[i].kernel);
            *out = e->kernels[i].kernel;
            return CLATTN_OK;
        }
        if (!e->kernels[i].kernel && slot == CLATTN_KERNELS_PER_PROGRAM)
            slot = i;
    }
    cl_int err;
    *out = clCreateKernel(prog, name, &err);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, name);
    if (e && slot < CLATTN_KERNELS_PER_PROGRAM && strlen(name) < sizeof e->kernels[0].name) {
        strcpy(e->kernels[slot].name, name);
        e->kernels[slot].kernel = *out;
        clRetainKernel(*out); /* the context's reference */
    }
    return CLATTN_OK;
}

void clattn_programs_release(clattn_ctx *ctx)
{
    for (size_t i = 0; i < ctx->n_programs; i++) {
        for (size_t k = 0; k < CLATTN_KERNELS_PER_PROGRAM; k++)
            if (ctx->programs[i].kernels[k].kernel)
                clReleaseKernel(ctx->programs[i].kernels[k].kernel);
        clReleaseProgram(ctx->programs[i].program);
        free(ctx->programs[i].file);
        free(ctx->programs[i].options);
    }
    free(ctx->programs);
    ctx->programs = NULL;
    ctx->n_programs = ctx->cap_programs = 0;
}
